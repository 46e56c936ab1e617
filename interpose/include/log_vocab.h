/* The run log's vocabulary as C names (log_vocab.def lists it): the reason
 * classes and the event names, for the shim and the launcher's report. The
 * enums of actions, end kinds and reasons live with their users
 * (record.h, ownership.h, route.h), expanded from the same lists. */
#ifndef P2PSHIM_LOG_VOCAB_H
#define P2PSHIM_LOG_VOCAB_H

#include "log_vocab.def"

enum log_reason_class {
#define P2PSHIM_CLASS_ENUM(id, name) LOG_CLASS_##id,
    LOG_REASON_CLASSES(P2PSHIM_CLASS_ENUM)
#undef P2PSHIM_CLASS_ENUM
    LOG_CLASS_COUNT
};

enum log_event {
#define P2PSHIM_EVENT_ENUM(id, name) LOG_EVENT_##id,
    LOG_EVENTS(P2PSHIM_EVENT_ENUM)
#undef P2PSHIM_EVENT_ENUM
    LOG_EVENT_COUNT
};

#endif
