/* The bounce module's filling of lazy pages (bounce_int.h, bgpu_fill):
 * the snapshot's bytes come to a pinned staging buffer on a stream of the
 * shim's own (non-blocking: it never waits for the program's work), then
 * into place with UFFDIO_COPY, double-buffered. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>

#include "driver.h"
#include "events.h"
#include "gpu.h"
#include "hooks.h"
#include "lock.h"
#include "own_device.h"
#include "stage.h"
#include "uffd.h"

#define STAGE_BYTES ((size_t)4 << 20) /* one half of a staging buffer */

/* ---- filling lazy pages ------------------------------------------------ */

/* A staging buffer (two halves, pinned when the driver gives one) and the
 * shim's own stream in one context. The handler thread has its own; other
 * threads share one under stage_mu. */
#define STAGE_CTX 8

/* Pinned memory and streams belong to a context and die with it: both are
 * dropped when their context goes (bgpu_ctx_gone). */
struct stage {
    pthread_mutex_t mu;
    char *mem;
    bool pinned;
    CUcontext mem_ctx;
    int mem_dev;
    CUcontext ctx[STAGE_CTX];
    int dev[STAGE_CTX];
    CUstream stream[STAGE_CTX];
};

static struct stage handler_stage = {.mu = PTHREAD_MUTEX_INITIALIZER};
static struct stage caller_stage = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The staging memory, allocated at its first use (a fill): a snapshot
 * taken alongside needs only the stream, and 8 MiB of pinned memory cost
 * about 3 ms on an H200 host, paid by the first snapshot of the process.
 * false when none can be had. */
static bool stage_mem(struct stage *st, CUcontext ctx)
{
    const struct driver_api *d = driver_api();
    if (st->mem == NULL && bgpu_push(ctx)) {
        void *p = NULL;
        /* Pinned memory has an address in the unified space, which the
         * driver may give out where the program's freed device memory
         * was: registered as the shim's own (own_device.h), so that a copy
         * through such a stale pointer gets the driver's answer for a
         * freed one, not the staging bytes (seen on an H200: a D2H and a
         * device copy from a freed pointer returned success). */
        if (d->mem_host_alloc &&
            d->mem_host_alloc(&p, 2 * STAGE_BYTES, CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS &&
            !own_device_add((CUdeviceptr)(uintptr_t)p, 2 * STAGE_BYTES)) {
            if (d->mem_free_host)
                d->mem_free_host(p); /* no room to hide it: pageable instead */
            p = NULL;
        }
        if (p != NULL) {
            st->mem = p;
            st->pinned = true;
            st->mem_ctx = ctx;
            st->mem_dev = driver_ctx_device(ctx);
        }
        bgpu_pop();
    }
    if (st->mem == NULL) {
        /* Pageable: slower, still right. A mapping of its own, not
         * shim_alloc, whose lock the handler thread must not wait for. */
        void *p = mmap(NULL, 2 * STAGE_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        st->mem = p == MAP_FAILED ? NULL : p;
        st->pinned = false;
    }
    return st->mem != NULL;
}

/* The shim's stream in ctx (one per context: a stream belongs to one).
 * NULL when none can be had. */
static CUstream stage_stream(struct stage *st, CUcontext ctx)
{
    const struct driver_api *d = driver_api();
    int i = 0;
    for (; i < STAGE_CTX && st->ctx[i] != NULL; i++)
        if (st->ctx[i] == ctx)
            return st->stream[i];
    if (i == STAGE_CTX)
        i = STAGE_CTX - 1; /* many contexts: the last slot's stream is leaked */
    CUstream s = NULL;
    if (d->stream_create && bgpu_push(ctx)) {
        if (d->stream_create(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
            s = NULL;
        bgpu_pop();
    }
    if (s != NULL) {
        st->ctx[i] = ctx;
        st->dev[i] = driver_ctx_device(ctx);
        st->stream[i] = s;
    }
    return s;
}

/* Whether a thing of context c on device d goes with (ctx, dev): ctx's
 * own; ctx NULL: every context of dev; both unset (dev < 0): all. */
static bool goes_with(CUcontext c, int d, CUcontext ctx, int dev)
{
    return ctx != NULL ? c == ctx : dev < 0 || d == dev;
}

static void stage_ctx_gone(struct stage *st, CUcontext ctx, int dev)
{
    PFN_cuStreamDestroy_v4000 stream_destroy = driver_api()->stream_destroy;
    /* The handler's stage: taken with signals blocked (table.h's contract). */
    sigset_t old;
    bounce_block_signals(&old);
    pthread_mutex_lock(&st->mu);
    if (st->mem != NULL && st->pinned && goes_with(st->mem_ctx, st->mem_dev, ctx, dev)) {
        const struct driver_api *d = driver_api();
        own_device_remove((CUdeviceptr)(uintptr_t)st->mem);
        if (d->mem_free_host && bgpu_push(st->mem_ctx)) {
            d->mem_free_host(st->mem);
            bgpu_pop();
        }
        st->mem = NULL;
    }
    for (int i = 0; i < STAGE_CTX; i++)
        if (st->ctx[i] != NULL && goes_with(st->ctx[i], st->dev[i], ctx, dev)) {
            /* Destroyed, not left to die with its context: a leak
             * checker lists what a context still holds when it goes,
             * and at exit no context of ours goes at all. Nothing waits:
             * a stream's pending work completes after its destroy. */
            if (stream_destroy != NULL && bgpu_push(st->ctx[i])) {
                stream_destroy(st->stream[i]);
                bgpu_pop();
            }
            st->ctx[i] = NULL;
            st->stream[i] = NULL;
        }
    /* Keep the slots packed: stage_stream stops at the first empty one. */
    int w = 0;
    for (int r = 0; r < STAGE_CTX; r++)
        if (st->ctx[r] != NULL) {
            st->ctx[w] = st->ctx[r];
            st->dev[w] = st->dev[r];
            st->stream[w] = st->stream[r];
            w++;
        }
    for (; w < STAGE_CTX; w++)
        st->ctx[w] = NULL;
    pthread_mutex_unlock(&st->mu);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

CUevent bgpu_snapshot_aside(const struct copy_call *call, struct dbuf *b, CUdeviceptr src,
                            size_t bytes)
{
    const struct driver_api *d = driver_api();
    pfn_cuMemcpyAsync copy = (pfn_cuMemcpyAsync)hook_real(HOOK_cuMemcpyAsync);
    /* The side stream is the shim's own: the legacy flavour. */
    PFN_cuStreamWaitEvent_v3020 wait = DRIVER_FLAVOUR(d, stream_wait_event, false);
    PFN_cuEventRecord_v2000 record = DRIVER_FLAVOUR(d, event_record, false);
    CUevent after = bgpu_record(call), done = NULL;
    if (after == NULL || copy == NULL)
        goto out;
    pthread_mutex_lock(&caller_stage.mu);
    CUstream side = stage_stream(&caller_stage, b->ctx);
    if (side != NULL && bgpu_push(b->ctx)) {
        bool ok = wait(side, after, 0) == CUDA_SUCCESS;
        /* The work still reading the buffer (an H2D from the last snapshot). */
        for (int i = 0; i < b->nuses; i++) {
            ok = ok && wait(side, b->uses[i], 0) == CUDA_SUCCESS;
            if (!ok)
                d->event_synchronize(b->uses[i]);
            bevent_put(b->uses[i]);
        }
        b->nuses = 0;
        if (ok && copy(b->ptr, src, bytes, side) == CUDA_SUCCESS) {
            done = bevent_get(b->ctx);
            if (done != NULL && record(done, side) != CUDA_SUCCESS) {
                bevent_put(done);
                done = NULL;
            }
            if (done == NULL) /* issued but not trackable: done before the buffer goes */
                d->stream_synchronize(side);
        }
        bgpu_pop();
    }
    pthread_mutex_unlock(&caller_stage.mu);
out:
    bgpu_event_release(after);
    return done;
}

void bgpu_ctx_gone(CUcontext ctx, int dev)
{
    stage_ctx_gone(&caller_stage, ctx, dev);
    stage_ctx_gone(&handler_stage, ctx, dev);
}

static int fill_with(struct stage *st, const struct dbuf *b, size_t off, uintptr_t addr,
                     size_t len, bool wp)
{
    bool (*place)(uintptr_t, const void *, size_t) = wp ? uffd_copy : uffd_copy_writable;
    const struct driver_api *d = driver_api();
    pfn_cuMemcpyDtoHAsync_v2 dtoh =
        (pfn_cuMemcpyDtoHAsync_v2)hook_real(HOOK_cuMemcpyDtoHAsync_v2);
    CUstream stream = stage_mem(st, b->ctx) ? stage_stream(st, b->ctx) : NULL;
    if (stream == NULL || dtoh == NULL || !bgpu_push(b->ctx))
        return 0;
    /* Double buffering: the next piece comes over while this one is
     * copied into place. */
    bool ok = true, retry = false;
    size_t done = 0, piece = len < STAGE_BYTES ? len : STAGE_BYTES;
    int half = 0;
    ok = dtoh(st->mem, b->ptr + off, piece, stream) == CUDA_SUCCESS &&
         d->stream_synchronize(stream) == CUDA_SUCCESS;
    while (ok && done < len) {
        size_t next_off = done + piece;
        size_t next = len - next_off < STAGE_BYTES ? len - next_off : STAGE_BYTES;
        char *cur = st->mem + (size_t)half * STAGE_BYTES;
        if (next > 0)
            ok = dtoh(st->mem + (size_t)(1 - half) * STAGE_BYTES, b->ptr + off + next_off,
                      next, stream) == CUDA_SUCCESS;
        if (ok && !place(addr + done, cur, piece)) {
            ok = false;
            retry = errno == EAGAIN;
        }
        if (ok && next > 0)
            ok = d->stream_synchronize(stream) == CUDA_SUCCESS;
        done = next_off;
        piece = next;
        half = 1 - half;
    }
    if (!ok && retry && done + piece < len)
        d->stream_synchronize(stream); /* a piece still coming: let it land */
    bgpu_pop();
    return ok ? 1 : retry ? -1 : 0;
}

int bgpu_fill(const struct dbuf *b, size_t off, uintptr_t addr, size_t len, bool wp)
{
    struct stage *st = uffd_in_handler() ? &handler_stage : &caller_stage;
    pthread_mutex_lock(&st->mu);
    int r = fill_with(st, b, off, addr, len, wp);
    pthread_mutex_unlock(&st->mu);
    return r;
}

