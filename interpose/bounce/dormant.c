/* Dormant ranges (dormant.h). A small fixed table: a program has a few
 * pinned staging buffers, not hundreds; past DORMANT_MAX the oldest is
 * unregistered, as every range was before (correct bytes; its next write
 * faults page by page in the kernel). */
#define _GNU_SOURCE
#include "dormant.h"

#include <sys/mman.h>

#include "fill.h"
#include "lock.h"
#include "uffd.h"
#include "watch.h"

#define DORMANT_MAX 32

struct dormant {
    uintptr_t lo, hi; /* hi == 0: free */
    uint64_t stamp;
    struct predict_pair keys;
    /* The handler is lifting its protection (dormant_fault, lock dropped):
     * program threads wait before they claim or replace it, else a new
     * snapshot could protect the range again under the handler's populate,
     * whose write faults would then wait for the handler itself. */
    bool waking;
};

/* Mapped at the first dormant range, not static: 3 KiB in the shim's .bss
 * would push the hot copy path's globals apart, each copy then reading
 * more cold cache lines (footprint.cold_lines). Until then no entries
 * (nranges 0). */
static struct dormant *ranges;
static int nranges;
static uint64_t clock_now;

/* The table made (lock held); false when it cannot be mapped. */
static bool table_made(void)
{
    if (ranges == NULL) {
        void *p = mmap(NULL, sizeof(struct dormant) * DORMANT_MAX, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return false;
        ranges = p;
        nranges = DORMANT_MAX;
    }
    return true;
}

void dormant_forget(uintptr_t lo, uintptr_t hi)
{
    for (int i = 0; i < nranges; i++)
        if (ranges[i].hi != 0 && ranges[i].lo < hi && lo < ranges[i].hi)
            ranges[i].hi = 0;
}

/* Program threads only (lock held): until no entry over [lo, hi) is
 * being woken by the handler. */
static void wait_wakes(uintptr_t lo, uintptr_t hi)
{
    for (int i = 0; i < nranges; i++)
        if (ranges[i].waking && ranges[i].lo < hi && lo < ranges[i].hi) {
            bounce_wait();
            i = -1; /* the table may have changed meanwhile */
        }
}

/* The first entry overlapping [lo, hi) into *out, taken out of the table
 * (lock held); false when none is left. */
static bool take_overlapping(uintptr_t lo, uintptr_t hi, struct dormant *out)
{
    for (int i = 0; i < nranges; i++) {
        if (ranges[i].hi == 0 || ranges[i].lo >= hi || lo >= ranges[i].hi)
            continue;
        *out = ranges[i];
        ranges[i].hi = 0;
        return true;
    }
    return false;
}

void dormant_release(uintptr_t lo, uintptr_t hi)
{
    if (hi <= lo)
        return;
    bounce_lock();
    wait_wakes(lo, hi);
    struct dormant d;
    while (take_overlapping(lo, hi, &d)) {
        bounce_unlock();
        uffd_unregister(d.lo, d.hi - d.lo);
        bounce_lock();
    }
    bounce_unlock();
}

bool dormant_keep(uintptr_t lo, uintptr_t hi, bool lazy, const struct predict_pair *keys)
{
    /* A private anonymous page is made writable when its protection is
     * lifted, and a lazy range has missing pages: both unregister. */
    if (lazy || hi <= lo || uffd_private_anon(lo, hi - lo))
        return false;
    struct dormant evicted = {0};
    bounce_lock();
    if (!table_made()) {
        bounce_unlock();
        return false;
    }
    wait_wakes(lo, hi);
    dormant_forget(lo, hi);
    /* A free slot, else the oldest; never one the handler is waking. */
    struct dormant *slot = NULL;
    for (int i = 0; i < nranges && (slot == NULL || slot->hi != 0); i++)
        if (!ranges[i].waking &&
            (slot == NULL || ranges[i].hi == 0 || ranges[i].stamp < slot->stamp))
            slot = &ranges[i];
    if (slot == NULL) { /* the handler wakes one at a time: cannot be */
        bounce_unlock();
        return false;
    }
    if (slot->hi != 0)
        evicted = *slot;
    *slot = (struct dormant){lo, hi, ++clock_now, *keys, false};
    bounce_unlock();
    if (evicted.hi != 0)
        uffd_unregister(evicted.lo, evicted.hi - evicted.lo);
    return true;
}

/* Lifts d's protection, every page writable, its writers woken (lock
 * dropped meanwhile). Failing both (an event to read first), the writers
 * are woken to fault again, then as writes outside every range. */
static void wake(struct dormant d, uintptr_t near)
{
    bounce_unlock();
    if (!uffd_unprotect_writable(d.lo, d.hi - d.lo, near, NULL, NULL) &&
        !uffd_protect(d.lo, d.hi - d.lo, false))
        uffd_wake(d.lo, d.hi - d.lo);
    bounce_lock();
}

bool dormant_claim(uintptr_t lo, uintptr_t hi)
{
    bool exact = false;
    bounce_lock();
    wait_wakes(lo, hi);
    struct dormant d;
    while (take_overlapping(lo, hi, &d)) {
        if (d.lo == lo && d.hi == hi)
            exact = true;
        else
            wake(d, d.lo);
    }
    bounce_unlock();
    return exact;
}

bool dormant_fault(uintptr_t addr)
{
    for (int i = 0; i < nranges; i++) {
        struct dormant d = ranges[i];
        if (d.hi == 0 || addr < d.lo || addr >= d.hi)
            continue;
        ranges[i].waking = true;
        wake(d, addr);
        ranges[i].waking = false;
        ranges[i].hi = 0;
        pthread_cond_broadcast(&bounce_cv);
        if (!atomic_load(&bounce_disabled))
            evidence_later(&d.keys, NEWS_COSTLY); /* the handler never waits (watch.h) */
        return true;
    }
    return false;
}
