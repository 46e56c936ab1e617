/* The bounce module's D2H: whether it takes a snapshot (a candidate,
 * predicted: predict.h) and how (lazy or eager), bounce.h; the H2D served
 * from snapshots is h2d.c's. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "behind.h"
#include "counters.h"
#include "dormant.h"
#include "driver.h"
#include "gpu.h"
#include "holders.h"
#include "hooks.h"
#include "libc.h"
#include "life.h"
#include "log.h"
#include "pages.h"
#include "owner_lookup.h"
#include "shim.h"
#include "shim_sys.h"
#include "stage.h"
#include "table.h"
#include "uffd.h"
#include "watch.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool uffd_ok;

static void once_body(void)
{
    if (!bounce_libc_sizes_known()) {
        /* Said at warning level: the program looks normal, only slower. */
        LOG_WARN("bounce: free() comes from an allocator without its own "
                 "malloc_usable_size; host bounces off");
        return;
    }
    double t0 = bounce_now_us();
    uffd_ok = bounce_start();
    double t1 = bounce_now_us();
    (void)bgpu_pageable_access(); /* asked now: plan() asks under bounce_mu */
    double t2 = bounce_now_us();
    /* The bounce row of the lifecycle table (shim.h): it joins now, its
     * handlers run before the shim's locks are taken and before the
     * teardown of anything that started before this first bounce. Its
     * before_ctx_gone runs whether or not it joined. */
    SHIM_LIFE_ROW(row) = {
        .order = SHIM_ROW_BOUNCE,
        .late = true,
        .name = "bounce",
        .fork_prepare = bounce_fork_prepare,
        .fork_parent = bounce_fork_parent,
        .fork_child = bounce_fork_child,
        .at_exit = bounce_at_exit,
        .before_ctx_gone = bounce_ctx_gone,
    };
    shim_life_start(row.order);
    LOG_DEBUG("bounce: started: userfaultfd and its thread %.0f us, devices asked %.0f us, "
              "handlers %.0f us", t1 - t0, t2 - t1, bounce_now_us() - t2);
}

enum how { HOW_NONE, HOW_LAZY, HOW_EAGER };

static bool none_resident(uintptr_t lo, uintptr_t hi);

/* Whether the whole pages of [host, host + bytes) are a reused buffer's:
 * private anonymous memory (what a lazy snapshot would take; a shared
 * mapping's pages would each take a fault once unprotected) with some of
 * its pages resident (none_resident). */
static bool reused_private(uintptr_t host, size_t bytes)
{
    uintptr_t lo = (host + bounce_page - 1) & ~(uintptr_t)(bounce_page - 1);
    uintptr_t hi = (host + bytes) & ~(uintptr_t)(bounce_page - 1);
    return hi > lo && !none_resident(lo, hi) && uffd_private_anon(lo, hi - lo);
}

/* Under the default minimums, whether [host, host + bytes) is a reused
 * pageable buffer too small for a snapshot (CONFIG_BOUNCE_AUTO_REUSED):
 * some of its pages resident. A new one's pages cost the same either way. */
static bool small_reused(const struct p2pshim_config *cfg, bool dma, uintptr_t host,
                         size_t bytes)
{
    if (dma || cfg->bounce_min != 0 || bytes >= CONFIG_BOUNCE_AUTO_REUSED)
        return false;
    uintptr_t lo = (host + bounce_page - 1) & ~(uintptr_t)(bounce_page - 1);
    uintptr_t hi = (host + bytes) & ~(uintptr_t)(bounce_page - 1);
    return hi <= lo || !none_resident(lo, hi);
}

/* Fills of the snapshots over [h, h + n) that are still running finish
 * before the predictor is asked: a fill's last copy wakes the program
 * thread that waited on it before the handler thread judges the fill, and
 * that judgment (the buffer is read after its H2D: eager next time) must
 * decide this very D2H. Waits only while such a fill runs. */
static void settle_fills(uintptr_t h, size_t n)
{
    if (!bounce_may_overlap(h, h + n))
        return;
    bounce_lock();
    for (;;) {
        bool busy = false;
        for (struct snap *s = bounce_head; s != NULL && !busy; s = s->next)
            busy = s->reg_lo < h + n && h < s->reg_hi && s->busy > 0;
        if (!busy)
            break;
        bounce_wait();
    }
    bounce_unlock();
}

/* Whether the D2H is a candidate (a device source, host memory of a kind
 * the shim can track, at least the minimum for that kind), then whether
 * the predictor says it bounces, then how. While no key has evidence the
 * D2H is only remembered, and no pointer is looked up. Everything before
 * the prediction is cheap and asks the driver nothing new (owner_lookup.h caches);
 * the userfaultfd start, the HMM question and the fork/exit handlers wait
 * for the first predicted D2H. */
static enum how decide(const void *host, size_t bytes, CUdeviceptr dev,
                       struct owner_info *src, bool *dma)
{
    *dma = false;
    const struct p2pshim_config *cfg = config_get();
    if (!config_bounce_on(cfg) || atomic_load(&bounce_disabled) ||
        bytes < CONFIG_BOUNCE_MIN_FLOOR || bytes < cfg->min_bytes ||
        host == NULL)
        return HOW_NONE;
    /* Smaller than every kind's minimum: no candidate. While no key has
     * evidence, the predictor says no whatever the kind: the D2H is only
     * remembered, and neither pointer is looked up. */
    size_t smallest = config_bounce_min(cfg, false) < config_bounce_min(cfg, true)
                          ? config_bounce_min(cfg, false)
                          : config_bounce_min(cfg, true);
    if (bytes < smallest || evidence_d2h_unarmed((uintptr_t)host, bytes, dev))
        return HOW_NONE;
    if (!resolve_pointer(dev, src) || src->device < 0 ||
        src->device >= P2PSHIM_MAX_DEVICES || src->kind == MEM_KIND_MANAGED ||
        dev < src->base || dev - src->base + bytes > src->size)
        return HOW_NONE;
    struct owner_info h;
    if (resolve_pointer((CUdeviceptr)(uintptr_t)host, &h)) {
        if ((h.kind != MEM_KIND_HOST_PINNED && h.kind != MEM_KIND_HOST_REGISTERED) ||
            (uintptr_t)host - h.base + bytes > h.size ||
            bytes < config_bounce_min(cfg, true))
            return HOW_NONE;
        /* Written by DMA behind the page tables: eager, its snapshot good
         * only until GPU work that could write it is issued (wrap_work.c). */
        *dma = true;
    } else if (bytes < config_bounce_min(cfg, false)) {
        return HOW_NONE;
    }
    settle_fills((uintptr_t)host, bytes);
    enum predict_verdict v = evidence_d2h((uintptr_t)host, bytes, dev, src->device);
    if (!predict_snapshot(v) || small_reused(cfg, *dma, (uintptr_t)host, bytes))
        return HOW_NONE;
    if (!bounce_holders_allow((uintptr_t)host, bytes))
        return HOW_NONE; /* holders.c: something the shim cannot see may hold the pages */
    pthread_once(&once, once_body);
    if (!uffd_ok)
        return HOW_NONE;
    /* Eager for a buffer the CPU reads between its copies (never told to
     * the predictor when lazy was asked for: h2d.c): its pages stay (reads
     * cost nothing), write-protected, the H2D served from the copy. */
    if (*dma || cfg->bounce == P2PSHIM_BOUNCE_EAGER || v == PREDICT_EAGER)
        return HOW_EAGER;
    if (cfg->bounce == P2PSHIM_BOUNCE_LAZY)
        return HOW_LAZY;
    /* A device that reads pageable memory itself (HMM) would fault on a
     * lazy page without the retry userfaultfd needs. */
    if (bgpu_pageable_access())
        return HOW_NONE;
    /* A reused buffer that lazy has not paid for yet (predict.h): its
     * pages stay, since a wrong lazy guess would pay for new ones. */
    if (v == PREDICT_EAGER_IF_RESIDENT && reused_private((uintptr_t)host, bytes))
        return HOW_EAGER;
    return HOW_LAZY;
}

/* A snapshot record, in memory of its own (mmap): the shim writes it
 * under bounce_mu, so it must never share a page with the program's heap,
 * where a write could fault on a lazy or protected page. Only the pages
 * the range covers whole are tracked; partial head and tail pages hold
 * other data and are left alone (the host's). NULL when none are whole. */
static struct snap *new_snap(uintptr_t host, size_t bytes, CUdeviceptr src, bool lazy,
                             bool dma)
{
    const size_t pg = bounce_page;
    uintptr_t lo = (host + pg - 1) & ~(uintptr_t)(pg - 1);
    uintptr_t hi = (host + bytes) & ~(uintptr_t)(pg - 1);
    if (hi <= lo)
        return NULL;
    size_t npages = (hi - lo) / pg;
    size_t size = (sizeof(struct snap) + npages + pg - 1) & ~(pg - 1);
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return NULL;
    struct snap *s = mem;
    s->map_size = size;
    s->host = host;
    s->bytes = bytes;
    s->lazy = lazy;
    s->dma = dma;
    s->reg_lo = lo;
    s->reg_hi = hi;
    s->keys = predict_pair_of(host, bytes, (uintptr_t)src);
    s->page = (uint8_t *)(s + 1);
    /* Eager pages start clean: a write during setup makes them dirty. */
    memset(s->page, lazy ? PG_DIRTY : PG_CLEAN, npages);
    return s;
}

/* A snapshot whose setup failed: forgotten, its pages left ordinary. */
static void discard(struct snap *s, bool registered)
{
    bounce_lock();
    bounce_unlink(s);
    pthread_cond_broadcast(&bounce_cv);
    bounce_unlock();
    if (registered)
        uffd_unregister(s->reg_lo, s->reg_hi - s->reg_lo);
    bgpu_buffer_put(&s->buf);
    bounce_snap_free(s);
}

static void publish(struct snap *s)
{
    bounce_lock();
    if (s->lazy)
        memset(s->page, PG_MISSING, (s->reg_hi - s->reg_lo) / bounce_page);
    s->ready = true;
    pthread_cond_broadcast(&bounce_cv);
    bounce_unlock();
    /* Threads that touched the range during setup fault again now. */
    uffd_wake(s->reg_lo, s->reg_hi - s->reg_lo);
}

/* Whether [lo, hi) (whole pages) looks new: none of its first, middle and
 * last pages resident. Three mincore calls: a sample, not a census. A
 * buffer reused between rounds has its pages; a new one (a fresh tensor,
 * a new mapping) has none until the D2H writes them. */
static bool none_resident(uintptr_t lo, uintptr_t hi)
{
    uintptr_t at[3] = {lo, lo + (((hi - lo) / 2) & ~(uintptr_t)(bounce_page - 1)),
                       hi - bounce_page};
    for (int i = 0; i < 3; i++) {
        unsigned char v = 0;
        /* Straight to the kernel: not through a wrapper of the program's
         * mincore, which may answer for lazy pages (shim_sys.h). */
        if (shim_sys6(SYS_mincore, (long)at[i], (long)bounce_page, (long)&v, 0, 0, 0) != 0 ||
            (v & 1))
            return false;
    }
    return true;
}

/* Lazy: the snapshot replaces the D2H; full pages are dropped and come
 * back on demand; partial head and tail pages are copied now. */
static bool lazy_d2h(const struct copy_call *call, bool sync, uintptr_t h, CUdeviceptr dev,
                     size_t n, int sdev, CUcontext ctx, bool handed)
{
    double t0 = bounce_now_us();
    struct snap *s = new_snap(h, n, dev, true, false);
    if (s == NULL)
        return false;
    uintptr_t dlo = s->reg_lo, dhi = s->reg_hi;
    if ((!handed && !uffd_private_anon(s->reg_lo, s->reg_hi - s->reg_lo)) ||
        !bgpu_buffer_get(sdev, ctx, n, bounce_evict_one, &s->buf) ||
        bgpu_buffer_is_source(&s->buf, dev, n)) {
        if (handed)
            uffd_unregister(s->reg_lo, s->reg_hi - s->reg_lo);
        bounce_snap_free(s);
        return false;
    }
    bounce_lock();
    bounce_link(s);
    bounce_unlock();
    /* Registered before the pages are dropped, so no thread can fault a
     * zero page in between; the REMOVE event this raises is ours. A
     * locked or special mapping refuses MADV_DONTNEED: then the original
     * call rewrites every byte. */
    if (!handed && !uffd_register(s->reg_lo, s->reg_hi - s->reg_lo, true)) {
        discard(s, false);
        return false;
    }
    /* Handed over: the pages missing are those the last snapshot of this
     * very buffer dropped and nobody read since, not a new buffer's; a
     * fill of them buys pages the program had (docs/BOUNCE.md, "A new
     * buffer's fill is no loss"). */
    s->fresh = !handed && none_resident(dlo, dhi);
    if (madvise((void *)dlo, dhi - dlo, MADV_DONTNEED) != 0) {
        discard(s, true);
        return false;
    }
    /* madvise returned once its REMOVE event was read: wait until it is
     * processed too, while the snapshot is not ready and the event is
     * recognised as ours. */
    uffd_barrier();
    double t1 = bounce_now_us();
    bgpu_wait_uses(&s->buf, call);
    CUresult r = bgpu_copy(call, s->buf.ptr, dev, n);
    double t2 = bounce_now_us();
    if (r == CUDA_SUCCESS && h < dlo)
        r = bgpu_dtoh(call, sync, (void *)h, s->buf.ptr, dlo - h);
    if (r == CUDA_SUCCESS && h + n > dhi)
        r = bgpu_dtoh(call, sync, (void *)dhi, s->buf.ptr + (dhi - h), h + n - dhi);
    /* A pageable D2H, async or not, returns complete: so does this one,
     * and the source may be overwritten by unordered work right after. */
    double t3 = bounce_now_us();
    if (r == CUDA_SUCCESS)
        r = bgpu_fence(call, true, NULL);
    double t4 = bounce_now_us();
    if (r != CUDA_SUCCESS) {
        bgpu_fence(call, false, &s->buf);
        discard(s, true);
        return false;
    }
    publish(s);
    LOG_DEBUG("bounce: lazy D2H of %zu bytes: set-up and drop %.0f us, snapshot issued %.0f us, "
              "partial pages %.0f us, wait %.0f us, publish %.0f us%s", n, t1 - t0, t2 - t1,
              t3 - t2, t4 - t3, bounce_now_us() - t4, handed ? " (handed over)" : "");
    atomic_fetch_add(&bst_d2h_lazy, 1);
    atomic_fetch_add(&bst_lazy_bytes, dhi - dlo);
    return true;
}

/* The eager snapshot's set-up: the record, its buffer on the source's
 * GPU, linked, its range registered for write-protection (handed-over
 * pages are registered already). NULL when any of it cannot be had, with
 * handed-over pages unregistered. */
static struct snap *eager_snap_new(uintptr_t h, CUdeviceptr dev, size_t n, int sdev,
                                   CUcontext ctx, bool dma, bool handed)
{
    struct snap *s = new_snap(h, n, dev, false, dma);
    if (s == NULL) {
        if (handed)
            uffd_unregister((h + bounce_page - 1) & ~(uintptr_t)(bounce_page - 1),
                            ((h + n) & ~(uintptr_t)(bounce_page - 1)) -
                                ((h + bounce_page - 1) & ~(uintptr_t)(bounce_page - 1)));
        return NULL;
    }
    s->gen = atomic_load_explicit(&bounce_work_gen, memory_order_relaxed);
    uintptr_t rlo = s->reg_lo;
    size_t rlen = s->reg_hi - s->reg_lo;
    double t0 = bounce_now_us();
    if (!bgpu_buffer_get(sdev, ctx, n, bounce_evict_one, &s->buf) ||
        bgpu_buffer_is_source(&s->buf, dev, n)) {
        if (handed)
            uffd_unregister(rlo, rlen);
        bounce_snap_free(s);
        return NULL;
    }
    double t1 = bounce_now_us();
    bool was_dormant = !handed && dormant_claim(rlo, rlo + rlen);
    double t2 = bounce_now_us();
    bounce_lock();
    bounce_link(s);
    bounce_unlock();
    if (!handed && !uffd_register(rlo, rlen, false)) {
        LOG_DEBUG("bounce: host memory at %#lx refuses write-protection: no eager snapshot",
                  (unsigned long)h);
        struct predict_pair keys = s->keys;
        discard(s, false); /* frees s */
        if (was_dormant)
            (void)dormant_keep(rlo, rlo + rlen, false, &keys);
        return NULL;
    }
    LOG_DEBUG("bounce: eager set-up of %zu bytes: device buffer %.0f us, dormant %.0f us%s, "
              "register %.0f us", n, t1 - t0, t2 - t1, was_dormant ? " (was dormant)" : "",
              bounce_now_us() - t2);
    return s;
}

/* A pageable D2H of this many bytes or more is made in pieces of at least
 * PIECE_MIN, at most PIECES_MAX of them: each piece's protection pass goes
 * to the shim's thread while the driver copies the next (behind.h), so
 * that only the last piece's pass is paid after the copy (0.9-1.6 ms per
 * 64 MiB on an H100 host, in a round of about 23 ms, before). Each piece
 * is one more call of the driver's (a few tens of microseconds beside a
 * 16 MiB piece's 1.2 ms). */
#define PIECE_MIN ((size_t)16 << 20)
#define PIECES_MAX 8

/* The pageable D2H of [h, h + n) from src in pieces, the tracked pages
 * [rlo, rhi) protected piece by piece behind it (see PIECE_MIN); an
 * asynchronous one waits for each piece before its pages are protected.
 * *protected_ok: every page protected. Returns the driver's answer; on a
 * failure the pieces after it are not copied (the caller discards the
 * snapshot, and the program's own call answers). */
static CUresult dtoh_in_pieces(const struct copy_call *call, bool sync, uintptr_t h,
                               CUdeviceptr src, size_t n, uintptr_t rlo, uintptr_t rhi,
                               bool *protected_ok)
{
    size_t count = n / PIECE_MIN > PIECES_MAX ? PIECES_MAX : n / PIECE_MIN;
    size_t piece = n / count;
    struct behind_protect b;
    bounce_behind_protect_begin(&b);
    CUresult rc = CUDA_SUCCESS;
    uintptr_t at = h;
    for (size_t i = 0; i < count && rc == CUDA_SUCCESS; i++) {
        /* Inner bounds on page boundaries: each page is written by one
         * piece only, and protected once that piece has landed. */
        uintptr_t end =
            i + 1 == count ? h + n : (h + (i + 1) * piece) & ~(uintptr_t)(bounce_page - 1);
        rc = bgpu_dtoh(call, sync, (void *)at, src + (at - h), end - at);
        if (rc == CUDA_SUCCESS && !sync)
            rc = bgpu_fence(call, true, NULL);
        uintptr_t plo = at > rlo ? at : rlo, phi = end < rhi ? end : rhi;
        if (rc == CUDA_SUCCESS && phi > plo) {
            if (i + 1 < count)
                bounce_behind_protect_post(&b, plo, phi - plo);
            else /* the last: half on the thread, half here */
                bounce_behind_protect_halves(&b, plo, phi - plo);
        }
        at = end;
    }
    *protected_ok = bounce_behind_protect_end(&b);
    return rc;
}

/* Eager: the D2H runs as usual and a snapshot is kept; the range is
 * write-protected so that CPU writes mark pages dirty. Pinned memory (dma)
 * is written by DMA, which ignores the protection: an async copy is
 * protected before it is issued (a CPU write after it lands is seen),
 * handed-over pages are protected already. Pageable memory is written by
 * the driver with the CPU: protected once the copy is complete (a
 * pageable D2H returns complete). */
static bool eager_d2h(const struct copy_call *call, bool sync, uintptr_t h, CUdeviceptr dev,
                      size_t n, int sdev, CUcontext ctx, bool dma, bool handed, CUresult *rc)
{
    double t0 = bounce_now_us();
    struct snap *s = eager_snap_new(h, dev, n, sdev, ctx, dma, handed);
    if (s == NULL)
        return false;
    uintptr_t rlo = s->reg_lo;
    size_t rlen = s->reg_hi - s->reg_lo;
    double t1 = bounce_now_us();
    /* Pinned: the snapshot is taken on the shim's stream while the D2H
     * runs from the source itself (both after the same work, so equal in
     * any program without a race on the source); the program's stream then
     * waits for it, and a sync variant returns once both are done.
     * Otherwise (or when that cannot be had) the snapshot comes first on
     * the program's stream and the D2H copies it. */
    CUevent aside = dma ? bgpu_snapshot_aside(call, &s->buf, dev, n) : NULL;
    if (aside == NULL) {
        bgpu_wait_uses(&s->buf, call);
        if (bgpu_copy(call, s->buf.ptr, dev, n) != CUDA_SUCCESS) {
            discard(s, true);
            return false;
        }
    }
    /* A sync pinned D2H is issued async and protected while its DMA runs
     * (the DMA ignores the protection), then waited for: the protection's
     * pass over the page table costs the program nothing beside the copy.
     * A CPU write landing in between races with the program's own copy,
     * as it did when the protection came after. */
    bool overlap = dma && sync && !handed;
    bool before = dma && !sync && !handed, after = !handed && !before && !overlap;
    if (before && !bounce_behind_protect(rlo, rlen)) {
        if (aside)
            driver_api()->event_synchronize(aside);
        bgpu_event_release(aside);
        bgpu_fence(call, false, &s->buf);
        discard(s, true);
        return false;
    }
    double t2 = bounce_now_us();
    bool pieces = after && n >= 2 * PIECE_MIN, pieces_ok = true;
    if (pieces) {
        *rc = dtoh_in_pieces(call, sync, h, s->buf.ptr, n, rlo, rlo + rlen, &pieces_ok);
        after = false; /* protected already */
    } else {
        *rc = bgpu_dtoh(call, sync && !overlap, (void *)h, aside ? dev : s->buf.ptr, n);
    }
    bool overlap_ok =
        *rc != CUDA_SUCCESS || (pieces ? pieces_ok : !overlap || uffd_protect(rlo, rlen, true));
    if (aside != NULL) {
        bgpu_wait_event(call, aside);
        if ((sync && !overlap) || *rc != CUDA_SUCCESS)
            driver_api()->event_synchronize(aside);
        bgpu_event_release(aside);
    }
    if (*rc == CUDA_SUCCESS && (!dma || overlap))
        *rc = bgpu_fence(call, true, NULL);
    double t3 = bounce_now_us();
    if (*rc == CUDA_SUCCESS && (after ? !bounce_behind_protect(rlo, rlen) : !overlap_ok))
        *rc = CUDA_ERROR_UNKNOWN; /* untracked: the copy stands, no snapshot */
    if (*rc != CUDA_SUCCESS) {
        bgpu_fence(call, false, &s->buf);
        discard(s, true);
        return false; /* the original call gives the program its answer */
    }
    double t4 = bounce_now_us();
    s->done = bgpu_record(call);
    bgpu_fence(call, false, &s->buf);
    publish(s);
    LOG_DEBUG("bounce: eager D2H of %zu bytes (%s): set-up %.0f us, snapshot issued %.0f us, "
              "D2H %.0f us%s, protect %.0f us, publish %.0f us%s", n, dma ? "pinned" : "pageable",
              t1 - t0, t2 - t1, t3 - t2,
              overlap ? " (protected meanwhile)" : pieces ? " (in pieces, protected behind)" : "",
              t4 - t3, bounce_now_us() - t4, handed ? " (handed over)" : "");
    atomic_fetch_add(&bst_d2h_eager, 1);
    return true;
}

P2PSHIM_HOT bool bounce_d2h(const struct copy_call *call, bool sync, void *host, CUdeviceptr dev,
                size_t bytes, CUresult *rc)
{
    struct owner_info src;
    bool dma;
    bounce_behind_d2h((uintptr_t)host, bytes);
    enum how how = decide(host, bytes, dev, &src, &dma);
    CUcontext ctx = src.ctx;
    if (how != HOW_NONE && ctx == NULL) {
        /* Pool or mapped memory: the issuing context, if it is the device's. */
        CUcontext sc = driver_stream_ctx(call->issue.stream, call->issue.per_thread);
        if (driver_ctx_device(sc) == src.device)
            ctx = sc;
        else
            how = HOW_NONE;
    }
    if (how != HOW_NONE && bgpu_capturing(call))
        how = HOW_NONE; /* captured into a graph: it runs later, if ever */
    if (how == HOW_NONE) {
        /* The driver writes the range: no snapshot may claim it after. */
        bounce_host_access(host, bytes, true);
        return false;
    }
    uintptr_t h = (uintptr_t)host;
    double t0 = bounce_now_us();
    uffd_barrier();
    bounce_reap();
    bool lazy = how == HOW_LAZY;
    bool handed = (lazy || dma) && bounce_handover(h, bytes, lazy, dma);
    bounce_end_overlapping(h, h + bytes, false, true);
    LOG_DEBUG("bounce: D2H of %zu bytes: the last snapshot there ended in %.0f us", bytes,
              bounce_now_us() - t0);
    *rc = CUDA_SUCCESS;
    bool done = lazy ? lazy_d2h(call, sync, h, dev, bytes, src.device, ctx, handed)
                     : eager_d2h(call, sync, h, dev, bytes, src.device, ctx, dma, handed, rc);
    if (!done) {
        struct predict_pair keys = predict_pair_of(h, bytes, (uintptr_t)dev);
        evidence_fallback(&keys);
    }
    return done;
}
