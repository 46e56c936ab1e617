/* NVTX annotations of the shim's own work (peer enables, upgraded copies)
 * in the "p2pshim" domain, for a profiler's timeline.
 *
 * They cost nothing when no tool is attached (no injection library named
 * in NVTX_INJECTION64_PATH): then no message is even formatted. */
#ifndef P2PSHIM_NVTX_H
#define P2PSHIM_NVTX_H

#include <stdbool.h>

/* true when a tool is attached (checked once per process). */
bool nvtx_on(void);

/* A mark with a printf-style message; nothing without a tool. */
void nvtx_mark(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Opens a range with a printf-style message. Returns true when one was
 * opened (a tool is attached): the caller then closes it with
 * nvtx_range_pop, in the same thread. */
bool nvtx_range_push(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void nvtx_range_pop(void);

#endif
