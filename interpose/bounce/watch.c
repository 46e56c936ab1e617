/* The predictor behind its lock, and observe mode's candidates (bounce.h,
 * bounce_int.h). One table serves both: D2Hs remembered, H2Ds matched
 * against them. Thread-safe; one relaxed load per H2D while nothing is
 * remembered. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "counters.h"
#include "fork_clear.h"
#include "log.h"
#include "record.h"
#include "shim.h"
#include "watch.h"

static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;
static struct predict_table table; /* zeroed: empty */
static _Atomic unsigned live;      /* table.live_d2h, readable without the lock */
static _Atomic unsigned armed;     /* table.armed, likewise */

/* The lock-free mirrors, after a change (lock held). */
static void mirror(void)
{
    atomic_store_explicit(&live, table.live_d2h, memory_order_relaxed);
    atomic_store_explicit(&armed, table.armed, memory_order_relaxed);
}

/* News from the handler thread that found watch_mu taken (evidence_later):
 * one producer, consumers under watch_mu. */
#define LATER_MAX 32
static struct later {
    struct predict_pair keys;
    enum evidence_news news;
} later[LATER_MAX];
static _Atomic unsigned later_head, later_tail; /* head: the handler's; tail: under the lock */

static _Atomic uint64_t pairs[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES];
static _Atomic uint64_t pair_bytes[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES];

static void watch_report(void);
static void watch_reset(void);
static void lock_table(void);

static void summary(void)
{
    bounce_report();
    watch_report();
}

static void summary_reset(void)
{
    bounce_stats_reset();
    watch_reset();
}

/* The shim's start (its row's at_start): the predictor's table and the
 * counters a first candidate writes are touched now, in the CUDA process
 * only, so that its first large D2H does not pay their first page
 * faults. Zero stays zero. */
static void warm(void)
{
    const struct p2pshim_config *cfg = config_get();
    if (!config_bounce_on(cfg))
        return;
    pthread_mutex_lock(&watch_mu);
    memset(&table, 0, sizeof table);
    pthread_mutex_unlock(&watch_mu);
    atomic_fetch_add_explicit(&bst_candidates, 0, memory_order_relaxed);
}

/* Start-up rows: the warm row runs at the shim's start, in CUDA
 * processes only; the summary row's report prints only once a candidate
 * was seen. Joining the summary at the first candidate instead cost that
 * D2H a pthread_once, whose first pass ends in a futex wake system call
 * (glibc): 1-2 us on this project's CPU machine, several on the H200
 * machine's (firstcopy_run.py). */
SHIM_LIFE_ROW(warm_row) = {.order = SHIM_ROW_BOUNCE_WARM, .name = "bounce-warm", .at_start = warm};
SHIM_LIFE_ROW(summary_row) = {
    .order = SHIM_ROW_BOUNCE_SUMMARY,
    .name = "bounce-summary",
    .report = summary,
    .reset = summary_reset,
};

enum predict_verdict evidence_d2h(uintptr_t host, size_t bytes, CUdeviceptr src, int dev)
{
    struct predict_pair p = predict_pair_of(host, bytes, (uintptr_t)src);
    lock_table();
    enum predict_verdict v = predict_query(&table, &p);
    predict_remember(&table, host, bytes, (uintptr_t)src, dev);
    mirror();
    pthread_mutex_unlock(&watch_mu);
    atomic_fetch_add_explicit(&bst_candidates, 1, memory_order_relaxed);
    if (predict_snapshot(v))
        atomic_fetch_add_explicit(&bst_predicted, 1, memory_order_relaxed);
    else if (v == PREDICT_SKIPPED)
        atomic_fetch_add_explicit(&bst_skipped, 1, memory_order_relaxed);
    return v;
}

P2PSHIM_HOT bool evidence_d2h_unarmed(uintptr_t host, size_t bytes, CUdeviceptr src)
{
    if (atomic_load_explicit(&armed, memory_order_relaxed) != 0)
        return false;
    pthread_mutex_lock(&watch_mu);
    bool unarmed = table.armed == 0;
    if (unarmed) {
        /* Source device unknown here (-1): only observe mode's pair
         * counters read it, and observe mode remembers through watch_d2h. */
        predict_remember(&table, host, bytes, (uintptr_t)src, -1);
        mirror();
    }
    pthread_mutex_unlock(&watch_mu);
    if (unarmed)
        atomic_fetch_add_explicit(&bst_candidates, 1, memory_order_relaxed);
    return unarmed;
}

bool evidence_h2d_inside(const void *host, size_t bytes, uintptr_t *lo, size_t *len)
{
    if (atomic_load_explicit(&live, memory_order_relaxed) == 0 || host == NULL)
        return false;
    pthread_mutex_lock(&watch_mu);
    bool inside = predict_h2d_inside(&table, (uintptr_t)host, bytes, lo, len);
    pthread_mutex_unlock(&watch_mu);
    return inside;
}

void evidence_h2d(const void *host, size_t bytes)
{
    if (atomic_load_explicit(&live, memory_order_relaxed) == 0 || host == NULL)
        return;
    size_t overlap;
    bool seen, now_armed;
    lock_table();
    (void)predict_h2d(&table, (uintptr_t)host, bytes, &overlap, &seen, &now_armed);
    mirror();
    pthread_mutex_unlock(&watch_mu);
    if (seen)
        atomic_fetch_add_explicit(&bst_seen_plain, 1, memory_order_relaxed);
}

/* The news applied (lock held). */
static void apply(const struct predict_pair *keys, enum evidence_news news)
{
    if (news == NEWS_FORGET) {
        predict_forget(&table, keys->host.addr);
        return;
    }
    if (news == NEWS_READERS) {
        predict_readers(&table, keys);
        LOG_DEBUG("bounce: the CPU reads the buffer at %#lx besides its copies: eager "
                  "snapshots", (unsigned long)keys->host.addr);
        return;
    }
    if (news == NEWS_COSTLY) {
        predict_outcome(&table, keys, false, false);
        unsigned skip = predict_backoff_at_least(&table, keys, PREDICT_COSTLY_BACKOFF);
        LOG_DEBUG("bounce: the CPU rewrote the pinned buffer at %#lx after its H2D: its keys "
                  "skip %u D2H(s)", (unsigned long)keys->host.addr, skip);
        return;
    }
    bool useful = news == NEWS_USEFUL || news == NEWS_USEFUL_LAZY;
    bool lazy = news == NEWS_USEFUL_LAZY || news == NEWS_WASTED_LAZY;
    unsigned backoff = predict_outcome(&table, keys, useful, lazy);
    if (news == NEWS_WASTED_PINNED)
        backoff = predict_backoff_at_least(&table, keys, PREDICT_COSTLY_BACKOFF);
    atomic_fetch_add_explicit(useful ? &bst_useful : &bst_wasted, 1, memory_order_relaxed);
    if (!useful)
        LOG_DEBUG("bounce: snapshot of %zu bytes at %#lx wasted; its keys skip %u D2H(s)",
                  keys->host.bytes, (unsigned long)keys->host.addr, backoff);
}

/* The handler's queued news, oldest first (lock held). */
static void drain_later(void)
{
    unsigned tail = atomic_load_explicit(&later_tail, memory_order_relaxed);
    unsigned head = atomic_load_explicit(&later_head, memory_order_acquire);
    for (; tail != head; tail++)
        apply(&later[tail % LATER_MAX].keys, later[tail % LATER_MAX].news);
    atomic_store_explicit(&later_tail, tail, memory_order_release);
}

static void lock_table(void)
{
    pthread_mutex_lock(&watch_mu);
    if (atomic_load_explicit(&later_head, memory_order_relaxed) !=
        atomic_load_explicit(&later_tail, memory_order_relaxed))
        drain_later();
}

void evidence_news(const struct predict_pair *keys, enum evidence_news news)
{
    lock_table();
    apply(keys, news);
    mirror();
    pthread_mutex_unlock(&watch_mu);
}

void evidence_later(const struct predict_pair *keys, enum evidence_news news)
{
    if (pthread_mutex_trylock(&watch_mu) == 0) {
        drain_later();
        apply(keys, news);
        mirror();
        pthread_mutex_unlock(&watch_mu);
        return;
    }
    unsigned head = atomic_load_explicit(&later_head, memory_order_relaxed);
    if (head - atomic_load_explicit(&later_tail, memory_order_acquire) >= LATER_MAX)
        return; /* full: dropped */
    later[head % LATER_MAX] = (struct later){*keys, news};
    atomic_store_explicit(&later_head, head + 1, memory_order_release);
}

void evidence_fallback(const struct predict_pair *keys)
{
    lock_table();
    unsigned backoff = predict_outcome(&table, keys, false, false);
    mirror();
    pthread_mutex_unlock(&watch_mu);
    atomic_fetch_add_explicit(&bst_fallbacks, 1, memory_order_relaxed);
    LOG_DEBUG("bounce: no snapshot could be set up for %zu bytes at %#lx; its keys skip %u "
              "D2H(s)", keys->host.bytes, (unsigned long)keys->host.addr, backoff);
}

void watch_d2h(const void *host, size_t bytes, int src_dev)
{
    if (host == NULL || bytes == 0 || src_dev < 0 || src_dev >= P2PSHIM_MAX_DEVICES)
        return;
    pthread_mutex_lock(&watch_mu);
    predict_remember(&table, (uintptr_t)host, bytes, 0, src_dev);
    mirror();
    pthread_mutex_unlock(&watch_mu);
}

void watch_h2d(const void *host, size_t bytes, int dst_dev)
{
    if (atomic_load_explicit(&live, memory_order_relaxed) == 0 || host == NULL ||
        dst_dev < 0 || dst_dev >= P2PSHIM_MAX_DEVICES)
        return;
    size_t overlap;
    bool seen, now_armed;
    pthread_mutex_lock(&watch_mu);
    int src = predict_h2d(&table, (uintptr_t)host, bytes, &overlap, &seen, &now_armed);
    mirror();
    pthread_mutex_unlock(&watch_mu);
    if (src < 0)
        return;
    atomic_fetch_add_explicit(&pairs[src][dst_dev], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pair_bytes[src][dst_dev], overlap, memory_order_relaxed);
    if (record_enabled()) {
        char detail[24];
        snprintf(detail, sizeof detail, "%zu", overlap);
        record_event(LOG_EVENT_WOULD_BOUNCE, src, dst_dev, 0, detail);
    }
}

void watch_forget(const void *host)
{
    if (!predict_may_forget(&table, (uintptr_t)host))
        return;
    pthread_mutex_lock(&watch_mu);
    predict_forget(&table, (uintptr_t)host);
    mirror();
    pthread_mutex_unlock(&watch_mu);
}

static void watch_report(void)
{
    for (int s = 0; s < P2PSHIM_MAX_DEVICES; s++)
        for (int d = 0; d < P2PSHIM_MAX_DEVICES; d++) {
            uint64_t n = atomic_load_explicit(&pairs[s][d], memory_order_relaxed);
            if (n != 0)
                LOG_INFO("summary bounce-candidates pair=%d->%d pairs=%llu bytes=%llu", s, d,
                         (unsigned long long)n,
                         (unsigned long long)atomic_load_explicit(&pair_bytes[s][d],
                                                                  memory_order_relaxed));
        }
}

/* After fork (the child starts empty). */
static void watch_reset(void)
{
    /* The child's copy of the lock may be held by a thread that does not
     * exist there: start afresh. */
    pthread_mutex_init(&watch_mu, NULL);
    /* An empty table is all zero (predict_init); written only where set
     * (fork_clear.h). */
    shim_zero_if_set(&table, sizeof table);
    atomic_store(&later_head, 0);
    atomic_store(&later_tail, 0);
    atomic_store(&live, 0);
    atomic_store(&armed, 0);
    shim_zero_if_set(pairs, sizeof pairs);
    shim_zero_if_set(pair_bytes, sizeof pair_bytes);
}
