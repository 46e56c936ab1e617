/* The bounce module's counters (counters.h; read by bounce_get_stats,
 * bounce.h) and its summary line. Lock-free; the bottom of the module:
 * it calls nothing of the module's. */
#include <stdatomic.h>
#include <stdint.h>

#include "bounce.h"
#include "counters.h"
#include "log.h"

_Atomic uint64_t bst_d2h_lazy, bst_d2h_eager, bst_seen, bst_upgraded, bst_upgraded_bytes,
    bst_lazy_bytes, bst_materialised, bst_faults, bst_evicted, bst_fallbacks, bst_candidates,
    bst_predicted, bst_skipped, bst_useful, bst_wasted, bst_seen_plain, bst_handler_ns,
    bst_abandoned, bst_faults_max, bst_holders, bst_ended_behind;

/* Every counter, in bounce_stats order. */
static _Atomic uint64_t *const counters[] = {
    &bst_d2h_lazy, &bst_d2h_eager, &bst_seen, &bst_upgraded, &bst_upgraded_bytes,
    &bst_lazy_bytes, &bst_materialised, &bst_faults, &bst_evicted, &bst_fallbacks,
    &bst_candidates, &bst_predicted, &bst_skipped, &bst_useful, &bst_wasted, &bst_seen_plain,
    &bst_handler_ns, &bst_abandoned, &bst_faults_max, &bst_holders, &bst_ended_behind};

void bst_snapshot_done(unsigned touches)
{
    uint64_t seen = atomic_load_explicit(&bst_faults_max, memory_order_relaxed);
    while (touches > seen &&
           !atomic_compare_exchange_weak_explicit(&bst_faults_max, &seen, touches,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

void bounce_get_stats(struct bounce_stats *o)
{
    uint64_t *out[] = {&o->d2h_lazy, &o->d2h_eager, &o->seen, &o->upgraded,
                       &o->upgraded_bytes, &o->lazy_bytes, &o->materialised_bytes, &o->faults,
                       &o->evicted, &o->fallbacks, &o->candidates, &o->predicted,
                       &o->skipped, &o->useful, &o->wasted, &o->seen_plain, &o->handler_ns,
                       &o->abandoned, &o->faults_max, &o->holders, &o->ended_behind};
    _Static_assert(sizeof out / sizeof out[0] == sizeof counters / sizeof counters[0],
                   "one field per counter");
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        *out[i] = atomic_load(counters[i]);
}

void bounce_stats_reset(void)
{
    /* Written only where set: a forked child copies each page it writes. */
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
        if (atomic_load_explicit(counters[i], memory_order_relaxed) != 0)
            atomic_store(counters[i], 0);
}

/* The line appears once a D2H was a candidate (or a snapshot was asked
 * for): a program that never copies large results down sees none. */
void bounce_report(void)
{
    struct bounce_stats b;
    bounce_get_stats(&b);
    if (b.candidates + b.d2h_lazy + b.d2h_eager + b.seen + b.fallbacks == 0)
        return;
    uint64_t kept = b.lazy_bytes > b.materialised_bytes ? b.lazy_bytes - b.materialised_bytes : 0;
    uint64_t snaps = b.d2h_lazy + b.d2h_eager, per = snaps ? snaps : 1;
    unsigned long long handler_us = (unsigned long long)(b.handler_ns / 1000);
    LOG_INFO("summary bounce candidates=%llu predicted=%llu skipped=%llu snapshots=%llu "
             "lazy=%llu eager=%llu seen=%llu upgraded=%llu useful=%llu wasted=%llu "
             "seen_plain=%llu materialised_bytes=%llu faults=%llu evicted=%llu fallbacks=%llu "
             "bytes_not_through_host=%llu handler_us=%llu abandoned=%llu "
             "faults_per_snap=%llu.%llu faults_max_snap=%llu handler_us_per_snap=%llu "
             "filled_bytes_per_snap=%llu holders=%llu ended_behind=%llu",
             (unsigned long long)b.candidates, (unsigned long long)b.predicted,
             (unsigned long long)b.skipped, (unsigned long long)snaps,
             (unsigned long long)b.d2h_lazy, (unsigned long long)b.d2h_eager,
             (unsigned long long)b.seen, (unsigned long long)b.upgraded,
             (unsigned long long)b.useful, (unsigned long long)b.wasted,
             (unsigned long long)b.seen_plain, (unsigned long long)b.materialised_bytes,
             (unsigned long long)b.faults, (unsigned long long)b.evicted,
             (unsigned long long)b.fallbacks, (unsigned long long)(kept + b.upgraded_bytes),
             handler_us, (unsigned long long)b.abandoned,
             (unsigned long long)(b.faults / per), (unsigned long long)(b.faults * 10 / per % 10),
             (unsigned long long)b.faults_max, handler_us / per,
             (unsigned long long)(b.materialised_bytes / per), (unsigned long long)b.holders,
             (unsigned long long)b.ended_behind);
}
