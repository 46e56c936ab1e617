#include "stats.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "fork_clear.h"
#include "hot.h"
#include "log.h"
#include "shim.h"

struct pair_counters {
    _Atomic uint64_t copies, upgraded, bytes, upgraded_bytes;
    _Atomic uint64_t by_reason[ROUTE_REASON_COUNT];
};

static struct pair_counters pairs[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES];
static struct pair_counters local_counts;  /* not cross-GPU */
static struct pair_counters far_counts;    /* ordinals past the table */
static _Atomic uint64_t enables_ok, enables_failed;
/* Bit d of used_dst[s]: pairs[s][d] has counted a copy. A forked child
 * (stats_reset) zeroes only those pairs: reading the whole table there
 * (172 KiB, most of it pages never touched) cost every fork() 0.1-0.2 ms
 * in page faults and the scan. */
static _Atomic uint32_t used_dst[P2PSHIM_MAX_DEVICES];
_Static_assert(P2PSHIM_MAX_DEVICES <= 32, "used_dst holds one bit per device");

static struct pair_counters *slot(int src, int dst, enum route_reason reason)
{
    if (route_reason_is_local(reason))
        return &local_counts;
    if (src < 0 || dst < 0 || src >= P2PSHIM_MAX_DEVICES || dst >= P2PSHIM_MAX_DEVICES)
        return &far_counts;
    return &pairs[src][dst];
}

/* *c += n, stopping at UINT64_MAX: a byte count never wraps to a small
 * figure (a sum of accepted copies reaches it only in theory; the
 * counter then says "at least this"). */
P2PSHIM_HOT static void add_saturating(_Atomic uint64_t *c, uint64_t n)
{
    uint64_t old = atomic_load_explicit(c, memory_order_relaxed), sum;
    do {
        sum = old > UINT64_MAX - n ? UINT64_MAX : old + n;
    } while (!atomic_compare_exchange_weak_explicit(c, &old, sum, memory_order_relaxed,
                                                    memory_order_relaxed));
}

static uint64_t sum_saturating(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void stats_warm(void)
{
    /* Adding 0 writes the page: its first fault happens now, not in the
     * process's first copy. */
    atomic_fetch_add_explicit(&local_counts.copies, 0, memory_order_relaxed);
}

P2PSHIM_HOT void stats_count(int src_dev, int dst_dev, enum route_reason reason, size_t bytes)
{
    struct pair_counters *c = slot(src_dev, dst_dev, reason);
    if ((unsigned)reason >= ROUTE_REASON_COUNT)
        return;
    if (c != &local_counts && c != &far_counts) {
        uint32_t bit = (uint32_t)1 << dst_dev;
        if (!(atomic_load_explicit(&used_dst[src_dev], memory_order_relaxed) & bit))
            atomic_fetch_or_explicit(&used_dst[src_dev], bit, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&c->copies, 1, memory_order_relaxed);
    add_saturating(&c->bytes, bytes);
    atomic_fetch_add_explicit(&c->by_reason[reason], 1, memory_order_relaxed);
    if (route_reason_is_upgrade(reason)) {
        atomic_fetch_add_explicit(&c->upgraded, 1, memory_order_relaxed);
        add_saturating(&c->upgraded_bytes, bytes);
    }
}

void stats_count_enable(int from_dev, int to_dev, int ok)
{
    (void)from_dev;
    (void)to_dev;
    atomic_fetch_add_explicit(ok ? &enables_ok : &enables_failed, 1,
                              memory_order_relaxed);
}

static void snapshot(struct pair_counters *c, struct stats_pair *out)
{
    out->copies = atomic_load_explicit(&c->copies, memory_order_relaxed);
    out->upgraded = atomic_load_explicit(&c->upgraded, memory_order_relaxed);
    out->passed = out->copies - out->upgraded;
    out->bytes = atomic_load_explicit(&c->bytes, memory_order_relaxed);
    out->upgraded_bytes = atomic_load_explicit(&c->upgraded_bytes, memory_order_relaxed);
    for (int r = 0; r < ROUTE_REASON_COUNT; r++)
        out->by_reason[r] = atomic_load_explicit(&c->by_reason[r], memory_order_relaxed);
}

void stats_get_pair(int src_dev, int dst_dev, struct stats_pair *out)
{
    snapshot(slot(src_dev, dst_dev, ROUTE_UPGRADED), out);
}

/* Appends "name:N" for every non-upgrade reason with a count. */
static void format_reasons(const struct stats_pair *p, char *buf, size_t len, int local)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int r = 0; r < ROUTE_REASON_COUNT && used < len; r++) {
        if (p->by_reason[r] == 0 || route_reason_is_upgrade((enum route_reason)r) ||
            route_reason_is_local((enum route_reason)r) != (local != 0))
            continue;
        int n = snprintf(buf + used, len - used, "%s%s:%llu", used ? "," : "",
                         route_reason_name((enum route_reason)r),
                         (unsigned long long)p->by_reason[r]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

static void report_pair(const char *label, const struct stats_pair *p)
{
    char reasons[512];
    format_reasons(p, reasons, sizeof reasons, 0);
    LOG_INFO("summary %s copies=%llu upgraded=%llu passed=%llu bytes=%llu "
             "upgraded_bytes=%llu reasons=%s",
             label, (unsigned long long)p->copies, (unsigned long long)p->upgraded,
             (unsigned long long)p->passed, (unsigned long long)p->bytes,
             (unsigned long long)p->upgraded_bytes, reasons[0] ? reasons : "-");
}

void stats_reset(void)
{
    struct pair_counters *all[] = {&local_counts, &far_counts};
    for (int s = 0; s < P2PSHIM_MAX_DEVICES; s++) {
        uint32_t used = atomic_load_explicit(&used_dst[s], memory_order_relaxed);
        if (used != 0)
            atomic_store_explicit(&used_dst[s], 0, memory_order_relaxed);
        for (int d = 0; used != 0 && d < P2PSHIM_MAX_DEVICES; d++)
            if (used & ((uint32_t)1 << d))
                memset(&pairs[s][d], 0, sizeof pairs[s][d]);
    }
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        shim_zero_if_set(all[i], sizeof *all[i]);
    atomic_store(&enables_ok, 0);
    atomic_store(&enables_failed, 0);
}

void stats_report(void)
{
    struct stats_pair total = {0}, p;
    char label[64];
    for (int s = 0; s < P2PSHIM_MAX_DEVICES; s++) {
        for (int d = 0; d < P2PSHIM_MAX_DEVICES; d++) {
            snapshot(&pairs[s][d], &p);
            if (p.copies == 0)
                continue;
            snprintf(label, sizeof label, "pair=%d->%d", s, d);
            report_pair(label, &p);
            total.copies = sum_saturating(total.copies, p.copies);
            total.upgraded = sum_saturating(total.upgraded, p.upgraded);
            total.passed = sum_saturating(total.passed, p.passed);
            total.bytes = sum_saturating(total.bytes, p.bytes);
            total.upgraded_bytes = sum_saturating(total.upgraded_bytes, p.upgraded_bytes);
            for (int r = 0; r < ROUTE_REASON_COUNT; r++)
                total.by_reason[r] = sum_saturating(total.by_reason[r], p.by_reason[r]);
        }
    }
    snapshot(&far_counts, &p);
    if (p.copies)
        report_pair("pair=far", &p);
    report_pair("total", &total);
    snapshot(&local_counts, &p);
    char reasons[256];
    format_reasons(&p, reasons, sizeof reasons, 1);
    LOG_INFO("summary local copies=%llu bytes=%llu reasons=%s peer_enables=%llu "
             "peer_enable_failures=%llu",
             (unsigned long long)p.copies, (unsigned long long)p.bytes,
             reasons[0] ? reasons : "-",
             (unsigned long long)atomic_load(&enables_ok),
             (unsigned long long)atomic_load(&enables_failed));
}

SHIM_LIFE_ROW(stats_row) = {
    .order = SHIM_ROW_STATS,
    .name = "stats",
    .at_start = stats_warm,
    .report = stats_report,
    .reset = stats_reset,
};
