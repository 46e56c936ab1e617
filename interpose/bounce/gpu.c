/* The bounce module's driver work: snapshot buffers within the budget,
 * events on the program's streams, and filling lazy pages through a
 * pinned staging buffer. Every call goes straight to the driver (driver.h,
 * hook_real), contexts pushed and popped; none is made with bounce_mu
 * held. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "driver.h"
#include "events.h"
#include "gpu.h"
#include "hooks.h"
#include "log.h"
#include "own_device.h"
#include "uffd.h"

#define IDLE_MAX 2                   /* idle buffers kept per device */

static pthread_mutex_t gpu_mu = PTHREAD_MUTEX_INITIALIZER;
static size_t used[P2PSHIM_MAX_DEVICES];   /* live and idle buffer bytes */
static size_t budget[P2PSHIM_MAX_DEVICES]; /* 0: not measured yet */
static struct dbuf idle[P2PSHIM_MAX_DEVICES][IDLE_MAX];
static int nidle[P2PSHIM_MAX_DEVICES];

/* Buffers the handler thread gave back: it must never wait for the
 * program's streams (a host function there may be waiting for it), so
 * another thread frees them, on its next visit here. */
#define DEFERRED_MAX 64
static struct dbuf deferred[DEFERRED_MAX];
static int ndeferred;

/* ---- contexts -------------------------------------------------------- */

bool bgpu_push(CUcontext ctx)
{
    const struct driver_api *d = driver_api();
    return ctx != NULL && d->ctx_push && d->ctx_pop && d->ctx_push(ctx) == CUDA_SUCCESS;
}

void bgpu_pop(void)
{
    CUcontext c;
    driver_api()->ctx_pop(&c);
}

/* ---- budget and buffers ---------------------------------------------- */

size_t bgpu_budget(int dev, CUcontext ctx)
{
    const struct p2pshim_config *cfg = config_get();
    if (cfg->bounce_budget_pct == 0)
        return cfg->bounce_budget;
    pthread_mutex_lock(&gpu_mu);
    size_t b = budget[dev];
    pthread_mutex_unlock(&gpu_mu);
    if (b != 0)
        return b;
    size_t free_b = 0, total = 0;
    const struct driver_api *d = driver_api();
    if (d->mem_get_info && bgpu_push(ctx)) {
        if (d->mem_get_info(&free_b, &total) != CUDA_SUCCESS)
            free_b = 0;
        bgpu_pop();
    }
    b = free_b / 100 * cfg->bounce_budget_pct;
    if (b == 0)
        return 0;
    pthread_mutex_lock(&gpu_mu);
    if (budget[dev] == 0)
        budget[dev] = b;
    b = budget[dev];
    pthread_mutex_unlock(&gpu_mu);
    LOG_DEBUG("bounce: device %d budget %zu bytes", dev, b);
    return b;
}

static void buffer_free(struct dbuf *b)
{
    const struct driver_api *d = driver_api();
    bgpu_sync_uses(b);
    own_device_remove(b->ptr);
    if (d->mem_free && bgpu_push(b->ctx)) {
        d->mem_free(b->ptr);
        bgpu_pop();
    }
    pthread_mutex_lock(&gpu_mu);
    used[b->dev] -= b->size;
    pthread_mutex_unlock(&gpu_mu);
    b->ptr = 0;
}

static size_t drain_deferred(void)
{
    size_t freed = 0;
    if (uffd_in_handler())
        return 0;
    for (;;) {
        struct dbuf b;
        pthread_mutex_lock(&gpu_mu);
        bool any = ndeferred > 0;
        if (any)
            b = deferred[--ndeferred];
        pthread_mutex_unlock(&gpu_mu);
        if (!any)
            return freed;
        freed += b.size;
        buffer_free(&b);
    }
}

size_t bgpu_idle_free(int dev, CUcontext ctx)
{
    size_t freed = drain_deferred();
    for (int d = 0; d < P2PSHIM_MAX_DEVICES; d++) {
        if (dev >= 0 && d != dev)
            continue;
        for (;;) {
            struct dbuf b;
            bool found = false;
            pthread_mutex_lock(&gpu_mu);
            for (int i = 0; i < nidle[d] && !found; i++) {
                if (ctx != NULL && idle[d][i].ctx != ctx)
                    continue;
                b = idle[d][i];
                memmove(&idle[d][i], &idle[d][i + 1], (size_t)(--nidle[d] - i) * sizeof b);
                found = true;
            }
            pthread_mutex_unlock(&gpu_mu);
            if (!found)
                break;
            freed += b.size;
            buffer_free(&b);
        }
    }
    return freed;
}

bool bgpu_buffer_get(int dev, CUcontext ctx, size_t bytes, bool (*evict)(int dev),
                     struct dbuf *out)
{
    const struct driver_api *d = driver_api();
    size_t limit = bgpu_budget(dev, ctx);
    if (bytes > limit || d->mem_alloc == NULL)
        return false;
    drain_deferred();
    /* An idle buffer of about the right size: a staging loop reuses one. */
    pthread_mutex_lock(&gpu_mu);
    for (int i = 0; i < nidle[dev]; i++) {
        struct dbuf *b = &idle[dev][i];
        if (b->ctx == ctx && b->size >= bytes && b->size / 2 <= bytes) {
            *out = *b;
            memmove(b, b + 1, (size_t)(--nidle[dev] - i) * sizeof *b);
            pthread_mutex_unlock(&gpu_mu);
            return true;
        }
    }
    pthread_mutex_unlock(&gpu_mu);
    for (;;) {
        pthread_mutex_lock(&gpu_mu);
        bool fits = used[dev] + bytes <= limit;
        pthread_mutex_unlock(&gpu_mu);
        if (fits)
            break;
        if (bgpu_idle_free(dev, NULL) == 0 && !evict(dev))
            return false;
    }
    CUdeviceptr p = 0;
    CUresult r = CUDA_ERROR_INVALID_CONTEXT;
    if (bgpu_push(ctx)) {
        r = d->mem_alloc(&p, bytes);
        if (r == CUDA_SUCCESS && !own_device_add(p, bytes)) {
            d->mem_free(p); /* no room to hide it from the program: go without */
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
        bgpu_pop();
    }
    if (r != CUDA_SUCCESS) {
        /* The device is full: give back what we hold there, never more. */
        bgpu_idle_free(dev, NULL);
        LOG_DEBUG("bounce: no snapshot buffer of %zu bytes on device %d (error %d)", bytes,
                  dev, (int)r);
        return false;
    }
    memset(out, 0, sizeof *out);
    out->ptr = p;
    out->size = bytes;
    out->dev = dev;
    out->ctx = ctx;
    pthread_mutex_lock(&gpu_mu);
    used[dev] += bytes;
    pthread_mutex_unlock(&gpu_mu);
    return true;
}

bool bgpu_buffer_is_source(struct dbuf *b, CUdeviceptr src, size_t n)
{
    if (b->ptr == 0 || src >= b->ptr + b->size || b->ptr >= src + n)
        return false;
    LOG_DEBUG("bounce: a D2H from %#llx, inside the shim's new snapshot buffer: a freed "
              "pointer, left to the driver", (unsigned long long)src);
    buffer_free(b);
    return true;
}

void bgpu_buffer_put(struct dbuf *b)
{
    if (b->ptr == 0)
        return;
    size_t limit = bgpu_budget(b->dev, b->ctx);
    pthread_mutex_lock(&gpu_mu);
    if (uffd_in_handler() && ndeferred < DEFERRED_MAX) {
        deferred[ndeferred++] = *b;
        pthread_mutex_unlock(&gpu_mu);
        b->ptr = 0;
        return;
    }
    if (used[b->dev] <= limit) {
        /* Kept; the oldest idle one makes room (a staging loop that moved
         * on to another size must not pay a free and an allocation of its
         * size every copy: measured 0.4 + 0.65 ms at 256 MiB). */
        struct dbuf old = {0};
        if (nidle[b->dev] == IDLE_MAX) {
            old = idle[b->dev][0];
            memmove(&idle[b->dev][0], &idle[b->dev][1], (IDLE_MAX - 1) * sizeof old);
            nidle[b->dev]--;
        }
        idle[b->dev][nidle[b->dev]++] = *b; /* its uses travel with it */
        pthread_mutex_unlock(&gpu_mu);
        b->ptr = 0;
        if (old.ptr != 0)
            buffer_free(&old);
        return;
    }
    pthread_mutex_unlock(&gpu_mu);
    buffer_free(b);
}

/* ---- events ----------------------------------------------------------- */

/* An event recorded on the program's stream, in the call's flavour. */
static CUevent record_on(const struct copy_call *call)
{
    const struct driver_api *d = driver_api();
    CUcontext ctx = driver_stream_ctx(call->issue.stream, call->issue.per_thread);
    CUevent e = bevent_get(ctx);
    PFN_cuEventRecord_v2000 rec = DRIVER_FLAVOUR(d, event_record, call->issue.per_thread);
    if (e == NULL || rec == NULL || rec(e, call->issue.stream) != CUDA_SUCCESS) {
        bevent_put(e);
        return NULL;
    }
    return e;
}

void bgpu_sync_uses(struct dbuf *b)
{
    const struct driver_api *d = driver_api();
    for (int i = 0; i < b->nuses; i++) {
        d->event_synchronize(b->uses[i]);
        bevent_put(b->uses[i]);
    }
    b->nuses = 0;
}

void bgpu_wait_uses(struct dbuf *b, const struct copy_call *call)
{
    const struct driver_api *d = driver_api();
    PFN_cuStreamWaitEvent_v3020 wait = DRIVER_FLAVOUR(d, stream_wait_event, call->issue.per_thread);
    for (int i = 0; i < b->nuses; i++) {
        if (wait == NULL || wait(call->issue.stream, b->uses[i], 0) != CUDA_SUCCESS)
            d->event_synchronize(b->uses[i]);
        bevent_put(b->uses[i]);
    }
    b->nuses = 0;
}

void bgpu_add_use(struct dbuf *b, const struct copy_call *call)
{
    const struct driver_api *d = driver_api();
    CUevent e = record_on(call);
    if (e == NULL) {
        /* Cannot track this use: wait for it now rather than lose it. */
        CUstream s = call->issue.stream;
        if (s == NULL && call->issue.per_thread)
            s = P2PSHIM_STREAM_PER_THREAD;
        if (d->stream_synchronize)
            d->stream_synchronize(s);
        return;
    }
    if (b->nuses == USES_MAX) {
        d->event_synchronize(b->uses[0]);
        bevent_put(b->uses[0]);
        memmove(b->uses, b->uses + 1, (USES_MAX - 1) * sizeof b->uses[0]);
        b->nuses--;
    }
    b->uses[b->nuses++] = e;
}

CUresult bgpu_fence(const struct copy_call *call, bool wait, struct dbuf *b)
{
    const struct driver_api *d = driver_api();
    CUevent e = record_on(call);
    if (e == NULL)
        return CUDA_ERROR_UNKNOWN;
    if (wait) {
        CUresult r = d->event_synchronize(e);
        bevent_put(e);
        return r;
    }
    if (b != NULL && b->nuses < USES_MAX)
        b->uses[b->nuses++] = e;
    else
        bevent_put(e);
    return CUDA_SUCCESS;
}

bool bgpu_capturing(const struct copy_call *call)
{
    const struct driver_api *d = driver_api();
    PFN_cuStreamIsCapturing_v10000 is =
        DRIVER_FLAVOUR(d, stream_is_capturing, call->issue.per_thread);
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (is == NULL)
        return false; /* a driver without capture */
    CUresult r = is(call->issue.stream, &st);
    /* An error (a legacy-stream query while another stream captures, in
     * global mode): the copy is the driver's to refuse, not the shim's. */
    return r != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* ---- copies in the program's flavour ----------------------------------- */

CUresult bgpu_copy(const struct copy_call *call, CUdeviceptr dst, CUdeviceptr src,
                   size_t bytes)
{
    /* Both ends are device memory: the explicit kind, never the unified
     * cuMemcpyAsync, which takes a pointer the driver does not know (a
     * freed source) for pageable host memory and copies whatever that
     * address holds. Device to device, a freed end gets
     * CUDA_ERROR_INVALID_VALUE, the answer the program's own call gets. */
    pfn_cuMemcpyDtoDAsync_v2 f = REAL_FLAVOUR(cuMemcpyDtoDAsync_v2, call->issue.per_thread);
    return f ? f(dst, src, bytes, call->issue.stream) : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult bgpu_dtoh(const struct copy_call *call, bool sync, void *dst, CUdeviceptr src,
                   size_t bytes)
{
    if (sync) {
        pfn_cuMemcpyDtoH_v2 f = REAL_FLAVOUR(cuMemcpyDtoH_v2, call->issue.per_thread);
        return f ? f(dst, src, bytes) : CUDA_ERROR_NOT_INITIALIZED;
    }
    pfn_cuMemcpyDtoHAsync_v2 f = REAL_FLAVOUR(cuMemcpyDtoHAsync_v2, call->issue.per_thread);
    return f ? f(dst, src, bytes, call->issue.stream) : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult bgpu_htod(const struct copy_call *call, bool sync, CUdeviceptr dst, const void *src,
                   size_t bytes)
{
    if (sync) {
        pfn_cuMemcpyHtoD_v2 f = REAL_FLAVOUR(cuMemcpyHtoD_v2, call->issue.per_thread);
        return f ? f(dst, src, bytes) : CUDA_ERROR_NOT_INITIALIZED;
    }
    pfn_cuMemcpyHtoDAsync_v2 f = REAL_FLAVOUR(cuMemcpyHtoDAsync_v2, call->issue.per_thread);
    return f ? f(dst, src, bytes, call->issue.stream) : CUDA_ERROR_NOT_INITIALIZED;
}

CUevent bgpu_record(const struct copy_call *call)
{
    return record_on(call);
}

void bgpu_wait_event(const struct copy_call *call, CUevent ev)
{
    const struct driver_api *d = driver_api();
    PFN_cuStreamWaitEvent_v3020 wait = DRIVER_FLAVOUR(d, stream_wait_event, call->issue.per_thread);
    if (wait == NULL || wait(call->issue.stream, ev, 0) != CUDA_SUCCESS)
        d->event_synchronize(ev);
}

void bgpu_event_release(CUevent ev)
{
    bevent_put(ev);
}

/* ---- devices that read pageable memory themselves ---------------------- */

static pthread_once_t pageable_once = PTHREAD_ONCE_INIT;
static bool pageable_any;

static void pageable_probe(void)
{
    const struct driver_api *d = driver_api();
    int n = 0;
    if (d->device_get_count == NULL || d->device_get_count(&n) != CUDA_SUCCESS)
        n = 0;
    for (int dev = 0; dev < n; dev++) {
        int v = 0;
        if (d->device_get_attribute &&
            d->device_get_attribute(&v, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, dev) ==
                CUDA_SUCCESS &&
            v) {
            pageable_any = true;
            LOG_DEBUG("bounce: device %d reads pageable memory itself (HMM/ATS): "
                      "no lazy host buffers unless P2PSHIM_BOUNCE=lazy", dev);
            break;
        }
    }
}

bool bgpu_pageable_access(void)
{
    pthread_once(&pageable_once, pageable_probe);
    return pageable_any;
}
