/* counters.c: the bounce module's counters (bounce_stats order; the
 * snapshot of them is bounce_get_stats, bounce.h) and its summary line. */
#ifndef P2PSHIM_BOUNCE_COUNTERS_H
#define P2PSHIM_BOUNCE_COUNTERS_H

#include <stdatomic.h>
#include <stdint.h>

extern _Atomic uint64_t bst_d2h_lazy, bst_d2h_eager, bst_seen, bst_upgraded,
    bst_upgraded_bytes, bst_lazy_bytes, bst_materialised, bst_faults, bst_evicted,
    bst_fallbacks, bst_candidates, bst_predicted, bst_skipped, bst_useful, bst_wasted,
    bst_seen_plain, bst_handler_ns, bst_abandoned, bst_faults_max, bst_holders, bst_ended_behind;

/* A snapshot ended after `touches` CPU touches (its fault budget's count):
 * the most any snapshot took. */
void bst_snapshot_done(unsigned touches);

/* The "summary bounce" line (when a candidate was seen); zeroing. */
void bounce_report(void);
void bounce_stats_reset(void);

#endif
