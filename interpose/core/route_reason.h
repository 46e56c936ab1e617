/* Why a copy went the way it went: log_vocab.def's LOG_REASONS as C
 * names, each with its class. Vocabulary, below every module that names a
 * reason: the router (route.h) gives one, the counters, the run log and
 * the trust file print them. */
#ifndef P2PSHIM_ROUTE_REASON_H
#define P2PSHIM_ROUTE_REASON_H

#include <stdbool.h>

#include "log_vocab.h"

enum route_reason {
#define P2PSHIM_REASON_ENUM(id, name, class) ROUTE_##id,
    LOG_REASONS(P2PSHIM_REASON_ENUM)
#undef P2PSHIM_REASON_ENUM
    ROUTE_REASON_COUNT
};

const char *route_reason_name(enum route_reason reason);
/* The reason's class (LOG_CLASS_OTHER for a value out of range). */
enum log_reason_class route_reason_class(enum route_reason reason);

/* true for reasons under which the copy rides the peer link thanks to the
 * shim (counted as upgraded): class LOG_CLASS_UPGRADE. */
bool route_reason_is_upgrade(enum route_reason reason);
/* true for reasons that are not a cross-GPU copy: class LOG_CLASS_LOCAL. */
bool route_reason_is_local(enum route_reason reason);

#endif
