/* holders.c: holders of a page the shim cannot see (bounce.h's
 * bounce_holder_range and bounce_holder_process; docs/SECURITY.md,
 * "Holders of a page"): the ranges and the process marked so, the
 * question every predicted D2H asks, mincore's answer. */
#ifndef P2PSHIM_BOUNCE_HOLDERS_H
#define P2PSHIM_BOUNCE_HOLDERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether a snapshot of [host, host+bytes) may be taken: false (and the
 * holders counter grows) when the process or a range over it is marked,
 * when a tracer is attached or when pages of the process are pinned
 * (/proc/self/status: TracerPid, VmPin). Asked only for a predicted D2H. */
bool bounce_holders_allow(uintptr_t host, size_t bytes);

#endif
