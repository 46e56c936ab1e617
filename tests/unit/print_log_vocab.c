/* Prints the run log's vocabulary as the shim expands it, one name a line
 * ("action NAME", "end-kind NAME", "reason NAME CLASS", "event NAME"), for
 * log_vocab_doc.py to check docs/LOG_FORMAT.md against. Reasons and end
 * kinds come through route.c's and ownership.c's tables. */
#include <stdio.h>

#include "log_vocab.h"
#include "ownership.h"
#include "route.h"

static const char *const class_names[LOG_CLASS_COUNT] = {
#define P2PSHIM_CLASS_NAME(id, name) name,
    LOG_REASON_CLASSES(P2PSHIM_CLASS_NAME)
#undef P2PSHIM_CLASS_NAME
};

int main(void)
{
#define P2PSHIM_PRINT_ACTION(id, name) printf("action %s\n", name);
    LOG_ACTIONS(P2PSHIM_PRINT_ACTION)
#undef P2PSHIM_PRINT_ACTION
    for (int k = 0; k <= MEM_KIND_COUNT; k++) /* MEM_KIND_COUNT: "unknown" */
        printf("end-kind %s\n", mem_kind_name((enum mem_kind)k));
    for (int r = 0; r < ROUTE_REASON_COUNT; r++)
        printf("reason %s %s\n", route_reason_name((enum route_reason)r),
               class_names[route_reason_class((enum route_reason)r)]);
#define P2PSHIM_PRINT_EVENT(id, name) printf("event %s\n", name);
    LOG_EVENTS(P2PSHIM_PRINT_EVENT)
#undef P2PSHIM_PRINT_EVENT
    return 0;
}
