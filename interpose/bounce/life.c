/* The bounce module's lifetimes (bounce.h): host memory read, written,
 * pinned or given back by paths the shim does not replace; contexts that
 * go; the program's allocations that need the memory; fork and exit;
 * GPU work that may write host memory. The table itself is table.c's. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>

#include "behind.h"
#include "counters.h"
#include "dormant.h"
#include "events.h"
#include "gpu.h"
#include "hot.h"
#include "life.h"
#include "log.h"
#include "pages.h"
#include "shim.h"
#include "stage.h"
#include "table.h"
#include "uffd.h"

void bounce_gpu_work(void)
{
    if (atomic_load_explicit(&bounce_count, memory_order_relaxed) != 0)
        atomic_fetch_add_explicit(&bounce_work_gen, 1, memory_order_relaxed);
}

void bounce_gpu_writes(CUdeviceptr dst, size_t bytes)
{
    bounce_host_access((const void *)(uintptr_t)dst, bytes, true);
}

static bool any_snapshot(void)
{
    return atomic_load_explicit(&bounce_count, memory_order_relaxed) != 0;
}

bool bounce_active(void)
{
    return any_snapshot();
}

/* Whether a snapshot's tracked pages meet [lo, hi). A stale snapshot (an
 * UNMAP read but not yet processed) can only make this true: callers wait
 * for the handler (uffd_barrier) after a yes, never before, so that a
 * thread inside the driver (free, reached from the driver itself) never
 * waits for a handler that may be waiting for the driver. */
static bool overlaps(uintptr_t lo, uintptr_t hi)
{
    if (!bounce_may_overlap(lo, hi))
        return false; /* lock-free: no snapshot near */
    bounce_lock();
    bool yes = bounce_find_overlap(lo, hi) != NULL;
    bounce_unlock();
    return yes;
}

P2PSHIM_HOT void bounce_host_access(const void *host, size_t bytes, bool write)
{
    if (!any_snapshot() || bytes == 0)
        return;
    uintptr_t lo = (uintptr_t)host, hi = lo + bytes;
    if (!overlaps(lo, hi))
        return;
    uffd_barrier();
    if (write) {
        /* Every page filled first, those the write covers too: the
         * driver may still refuse the call (a freed source, a bad
         * value), and then the host must hold what it held. */
        bounce_end_overlapping(lo, hi, true, false);
        return;
    }
    bounce_lock();
    for (struct snap *s = bounce_head; s; s = s->next) {
        if (!s->lazy || s->ending || !s->ready || s->reg_lo >= hi || lo >= s->reg_hi)
            continue;
        s->busy++;
        bounce_unlock();
        bounce_fill(s, lo & ~(uintptr_t)(bounce_page - 1), hi, 0, 0);
        bounce_lock();
        s->busy--;
        pthread_cond_broadcast(&bounce_cv);
    }
    bounce_unlock();
}

void bounce_host_keep(const void *host, size_t bytes)
{
    if (!any_snapshot() || bytes == 0 || !overlaps((uintptr_t)host, (uintptr_t)host + bytes))
        return;
    uffd_barrier();
    bounce_end_overlapping((uintptr_t)host, (uintptr_t)host + bytes, true, false);
}

void bounce_host_release(const void *host, size_t bytes)
{
    if (host != NULL && bytes != 0) {
        /* Memory the driver frees (bytes given: alloc_policy.c): no
         * registration of it may outlive this call (dormant.h), nor that
         * of a snapshot's end below, kept dormant. */
        uintptr_t lo = (uintptr_t)host;
        if (any_snapshot() && !atomic_load(&bounce_disabled))
            bounce_end_overlapping(lo, lo + bytes, false, false);
        dormant_release(lo & ~(uintptr_t)(bounce_page - 1), lo + bytes);
        return;
    }
    if (!any_snapshot() || host == NULL || atomic_load(&bounce_disabled))
        return;
    uintptr_t lo = (uintptr_t)host;
    if (bytes == 0) {
        /* free(): the block's size from the allocator that made it (the
         * wrapper serves the program's own free, so this is its twin). */
        bytes = malloc_usable_size((void *)host);
        if (bytes == 0 || !bounce_may_overlap(lo, lo + bytes))
            return;
        bounce_lock();
        bool ours = bounce_find_overlap(lo, lo + bytes) != NULL;
        bounce_unlock();
        if (!ours)
            return;
    }
    bounce_end_overlapping(lo, lo + bytes, false, false);
}

static void end_matching(CUcontext ctx, int dev, bool fill)
{
    bounce_lock();
    for (;;) {
        struct snap *s = bounce_head;
        for (; s; s = s->next)
            if (s->ready && !s->ending &&
                ((ctx && s->buf.ctx == ctx) || (!ctx && (dev < 0 || s->buf.dev == dev))))
                break;
        if (s == NULL)
            break;
        s->busy++;
        s->neutral = true; /* the context's end or memory pressure, not a misprediction */
        bounce_unlock();
        bounce_end(s, fill, 0, 0);
        bounce_lock();
    }
    bounce_unlock();
}

void bounce_ctx_gone(CUcontext ctx, int dev)
{
    if (any_snapshot()) {
        uffd_barrier();
        end_matching(ctx, dev, true);
    }
    bounce_behind_drain(); /* their buffers go back while the context works */
    bgpu_idle_free(ctx ? -1 : dev, ctx);
    bgpu_ctx_gone(ctx, dev);
    bevent_drop(ctx, dev);
}

bool bounce_release_device(int dev)
{
    if (dev < 0 || dev >= P2PSHIM_MAX_DEVICES)
        return false;
    size_t before = atomic_load(&bounce_count);
    uffd_barrier();
    end_matching(NULL, dev, true);
    bounce_behind_drain();
    size_t freed = bgpu_idle_free(dev, NULL);
    return freed > 0 || atomic_load(&bounce_count) < before;
}

bool bounce_evict_one(int dev)
{
    bounce_lock();
    struct snap *victim = NULL;
    for (struct snap *s = bounce_head; s; s = s->next)
        if (s->buf.dev == dev && s->ready && !s->ending)
            victim = s; /* the last one: least recently used */
    if (victim) {
        victim->busy++;
        victim->neutral = true; /* the budget's choice, not the program's */
    }
    bounce_unlock();
    if (victim == NULL)
        return false;
    bounce_end(victim, true, 0, 0);
    atomic_fetch_add(&bst_evicted, 1);
    return true;
}

/* Every missing page of every lazy snapshot filled from its device copy
 * (each fill counts as a CPU touch of that snapshot). */
static void fill_every_lazy(void)
{
    uffd_barrier();
    bounce_lock();
    for (struct snap *s = bounce_head; s; s = s->next) {
        if (!s->lazy || s->ending || !s->ready)
            continue;
        s->busy++;
        bounce_unlock();
        bounce_fill(s, s->reg_lo, s->reg_hi, 0, 0);
        bounce_lock();
        s->busy--;
        pthread_cond_broadcast(&bounce_cv);
    }
    bounce_unlock();
}

bool bounce_fds_watched(void)
{
    return any_snapshot() && !atomic_load(&bounce_disabled) && !uffd_in_handler();
}

/* In a quiet section (core/shim.h): the fills call the driver from the
 * program's thread, and a signal handler of the program's that touched a
 * lazy page meanwhile would wait for the fault handler, which would wait
 * for the driver this thread is inside. */
void bounce_before_fds_go(void)
{
    if (!bounce_fds_watched())
        return;
    bool quiet = shim_quiet_begin(true);
    fill_every_lazy();
    shim_quiet_end(quiet);
}

/* Before fork: a child gets no registrations, so its lazy pages would read
 * as zero. Fill them all, and hold the lock across fork. */
void bounce_fork_prepare(void)
{
    if (any_snapshot())
        fill_every_lazy();
    bounce_lock();
}

void bounce_fork_parent(void)
{
    bounce_unlock();
}

/* The child: no handler thread, no registrations, a device context it may
 * not use. Forget everything (the buffers are the parent's) and stay off. */
void bounce_fork_child(void)
{
    atomic_store(&bounce_disabled, true);
    while (bounce_head) {
        struct snap *s = bounce_head;
        bounce_unlink(s);
        bounce_snap_free(s);
    }
    bounce_behind_fork_child();
    uffd_after_fork_child();
    bounce_unlock();
}

/* At exit, before the runtime tears the contexts down (atexit runs in
 * reverse order, and ours is registered at the first predicted bounce,
 * after cudart registered its own at its start): every snapshot ends, its
 * lazy pages filled first (later readers, destructors and other exit
 * handlers, see the bytes) and its registration dropped; then its device
 * buffer, the idle ones, their events, the pinned staging memory and the
 * shim's streams are given back while their contexts still work. No new
 * snapshot is taken afterwards. A context the program reset or destroyed
 * earlier took its share along then (bounce_ctx_gone). */
void bounce_at_exit(void)
{
    atomic_store(&bounce_disabled, true);
    bounce_ctx_gone(NULL, -1);
}
