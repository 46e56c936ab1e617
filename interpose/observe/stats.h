/* Counters for the exit summary: per ordered device pair, the cross-GPU
 * copies seen, upgraded and passed through by reason, and their bytes;
 * copies that are not cross-GPU in one total by reason. Lock-free. */
#ifndef P2PSHIM_STATS_H
#define P2PSHIM_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "route_reason.h"

/* The shim's start: touches the counters a same-device or host copy
 * writes (lifecycle at_start). */
void stats_warm(void);
/* Counts one copy (or batch element) the driver was not seen to refuse
 * (copy_check.h). src/dst are ordinals (ignored for reasons that are not
 * cross-GPU). Byte counts and the summary's totals stop at UINT64_MAX
 * rather than wrap. */
void stats_count(int src_dev, int dst_dev, enum route_reason reason, size_t bytes);

/* Counts one event of the shim's own: a peer enable done or failed. */
void stats_count_enable(int from_dev, int to_dev, int ok);

struct stats_pair {
    uint64_t copies, upgraded, passed, bytes, upgraded_bytes;
    uint64_t by_reason[ROUTE_REASON_COUNT];
};

/* A snapshot of one pair (tests). */
void stats_get_pair(int src_dev, int dst_dev, struct stats_pair *out);

/* At info level, one line per pair that saw traffic:
 *   summary pair=0->1 copies=N upgraded=N passed=N bytes=N upgraded_bytes=N
 *           reasons=name:N,...
 * then "summary total ..." and "summary local ..." (copies that were not
 * cross-GPU, by reason). The stats row of the lifecycle table (shim.h):
 * other modules' summary lines follow. */
void stats_report(void);

/* Zeroes every counter: a forked child reports its own traffic only. */
void stats_reset(void);

#endif
