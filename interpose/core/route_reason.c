#include "route_reason.h"

static const char *const reason_names[ROUTE_REASON_COUNT] = {
#define P2PSHIM_REASON_NAME(id, name, class) name,
    LOG_REASONS(P2PSHIM_REASON_NAME)
#undef P2PSHIM_REASON_NAME
};

static const unsigned char reason_classes[ROUTE_REASON_COUNT] = {
#define P2PSHIM_REASON_CLASS(id, name, class) LOG_CLASS_##class,
    LOG_REASONS(P2PSHIM_REASON_CLASS)
#undef P2PSHIM_REASON_CLASS
};

const char *route_reason_name(enum route_reason reason)
{
    if ((unsigned)reason >= ROUTE_REASON_COUNT)
        return "?";
    return reason_names[reason];
}

enum log_reason_class route_reason_class(enum route_reason reason)
{
    if ((unsigned)reason >= ROUTE_REASON_COUNT)
        return LOG_CLASS_OTHER;
    return (enum log_reason_class)reason_classes[reason];
}

bool route_reason_is_upgrade(enum route_reason reason)
{
    return route_reason_class(reason) == LOG_CLASS_UPGRADE;
}

bool route_reason_is_local(enum route_reason reason)
{
    return route_reason_class(reason) == LOG_CLASS_LOCAL;
}
