/* Host bounces in observe mode (bounce_watch.h). */
#include "bounce_watch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "log.h"
#include "record.h"

#define WATCH_MAX 64 /* host ranges remembered, oldest replaced first */

static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;
static struct range {
    uintptr_t lo, hi;
    int dev; /* -1: free slot */
} ranges[WATCH_MAX];
static unsigned next_slot;
static _Atomic unsigned live;
static bool initialised;

static _Atomic uint64_t pairs[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES];
static _Atomic uint64_t pair_bytes[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES];

static void init_locked(void)
{
    if (initialised)
        return;
    for (int i = 0; i < WATCH_MAX; i++)
        ranges[i].dev = -1;
    initialised = true;
}

void watch_d2h(const void *host, size_t bytes, int src_dev)
{
    if (host == NULL || bytes == 0 || src_dev < 0 || src_dev >= P2PSHIM_MAX_DEVICES)
        return;
    uintptr_t lo = (uintptr_t)host, hi = lo + bytes;
    pthread_mutex_lock(&watch_mu);
    init_locked();
    for (int i = 0; i < WATCH_MAX; i++)
        if (ranges[i].dev >= 0 && ranges[i].lo < hi && lo < ranges[i].hi) {
            ranges[i].dev = -1; /* overwritten by this copy */
            atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
        }
    struct range *r = &ranges[next_slot++ % WATCH_MAX];
    if (r->dev < 0)
        atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
    *r = (struct range){lo, hi, src_dev};
    pthread_mutex_unlock(&watch_mu);
}

void watch_h2d(const void *host, size_t bytes, int dst_dev)
{
    if (atomic_load_explicit(&live, memory_order_relaxed) == 0 || host == NULL ||
        dst_dev < 0 || dst_dev >= P2PSHIM_MAX_DEVICES)
        return;
    uintptr_t lo = (uintptr_t)host, hi = lo + bytes;
    int src = -1;
    size_t overlap = 0;
    pthread_mutex_lock(&watch_mu);
    for (int i = 0; i < WATCH_MAX && src < 0; i++) {
        const struct range *r = &ranges[i];
        if (r->dev >= 0 && r->lo < hi && lo < r->hi) {
            src = r->dev;
            overlap = (r->hi < hi ? r->hi : hi) - (r->lo > lo ? r->lo : lo);
        }
    }
    pthread_mutex_unlock(&watch_mu);
    if (src < 0)
        return;
    atomic_fetch_add_explicit(&pairs[src][dst_dev], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pair_bytes[src][dst_dev], overlap, memory_order_relaxed);
    if (record_enabled()) {
        char detail[24];
        snprintf(detail, sizeof detail, "%zu", overlap);
        record_event("would-bounce", src, dst_dev, 0, detail);
    }
}

void watch_forget(const void *host)
{
    if (atomic_load_explicit(&live, memory_order_relaxed) == 0)
        return;
    pthread_mutex_lock(&watch_mu);
    for (int i = 0; i < WATCH_MAX; i++)
        if (ranges[i].dev >= 0 && ranges[i].lo == (uintptr_t)host) {
            ranges[i].dev = -1;
            atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
        }
    pthread_mutex_unlock(&watch_mu);
}

void watch_report(void)
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

void watch_reset(void)
{
    /* The child's copy of the lock may be held by a thread that does not
     * exist there: start afresh. */
    pthread_mutex_init(&watch_mu, NULL);
    initialised = false;
    next_slot = 0;
    atomic_store(&live, 0);
    for (int s = 0; s < P2PSHIM_MAX_DEVICES; s++)
        for (int d = 0; d < P2PSHIM_MAX_DEVICES; d++) {
            atomic_store(&pairs[s][d], 0);
            atomic_store(&pair_bytes[s][d], 0);
        }
}
