#include "pool_relay.h"

#include "cupti_join.h"
#include "driver.h"
#include "log.h"
#include "relay_scratch.h"
#include "owner_lookup.h"
#include "shim.h"

/* One relayed copy while it is issued (under relay_lock). */
struct relay_plan {
    const struct copy_call *call;
    CUdeviceptr dst, src;
    size_t bytes;
    int lane;                /* the program stream's lane (relay_scratch.h) */
    struct relay_lane *s, *d; /* the lane on the pool ends' devices (NULL: an
                              * ordinary end) */
    struct relay_lane *x;    /* issues the peer copies: a pool end's device */
    struct relay_dev *home;  /* the device of the program's stream */
    CUevent last;            /* the relay's last event so far */
};

static CUresult wait_on(CUstream s, CUevent e)
{
    return e == NULL ? CUDA_SUCCESS : DRIVER_FLAVOUR(driver_api(), stream_wait_event, false)(s, e, 0);
}

static CUresult rec(CUevent e, CUstream s)
{
    return DRIVER_FLAVOUR(driver_api(), event_record, false)(e, s);
}

/* One driver copy of the relay, which the profile sees as the part of the
 * program's copy it is (cupti_join.h). */
static CUresult cp(CUdeviceptr to, CUdeviceptr from, size_t n, CUstream s,
                   enum cupti_relay_part part)
{
    cupti_relay_part(part);
    CUresult r = driver_api()->memcpy_async(to, from, n, s);
    cupti_relay_part(CUPTI_RELAY_NONE);
    return r;
}

/* Chunk [off, off+len) through slot k of each pool end's device. */
static CUresult chunk(struct relay_plan *p, size_t off, size_t len, int k)
{
    struct relay_lane *s = p->s, *d = p->d, *x = p->x;
    CUdeviceptr from = p->src + off, to = p->dst + off;
    CUresult r = CUDA_SUCCESS;
    if (s != NULL) { /* into the source's slot, once the slot's last reader is done */
        r = wait_on(s->local, s->free_after[k]);
        if (r == CUDA_SUCCESS)
            r = cp(relay_slot(s, k), from, len, s->local, CUPTI_RELAY_LOCAL);
        if (r == CUDA_SUCCESS)
            r = rec(s->ev_local[k], s->local);
        if (r == CUDA_SUCCESS)
            r = wait_on(x->peer, s->ev_local[k]);
        from = relay_slot(s, k);
    }
    if (d != NULL && r == CUDA_SUCCESS) {
        r = wait_on(x->peer, d->free_after[k]);
        to = relay_slot(d, k);
    }
    if (r == CUDA_SUCCESS) /* across the link */
        r = cp(to, from, len, x->peer, CUPTI_RELAY_LINK);
    if (r == CUDA_SUCCESS)
        r = rec(x->ev_peer[k], x->peer);
    if (r != CUDA_SUCCESS)
        return r;
    p->last = x->ev_peer[k];
    if (s != NULL)
        s->free_after[k] = x->ev_peer[k];
    if (d == NULL)
        return CUDA_SUCCESS;
    r = wait_on(d->local, x->ev_peer[k]); /* out of the destination's slot */
    if (r == CUDA_SUCCESS)
        r = cp(p->dst + off, to, len, d->local, CUPTI_RELAY_LOCAL);
    if (r == CUDA_SUCCESS)
        r = rec(d->ev_local[k], d->local);
    if (r == CUDA_SUCCESS) {
        d->free_after[k] = d->ev_local[k];
        p->last = d->ev_local[k];
    }
    return r;
}

/* The program's stream, in the call's flavour, fences the relay: its
 * earlier work before the relay's first copies, those that read the
 * program's source (a copy out into a pool destination comes after a
 * peer copy, which comes after them). */
static CUresult fence_in(struct relay_plan *p)
{
    const struct driver_api *api = driver_api();
    PFN_cuEventRecord_v2000 record = DRIVER_FLAVOUR(api, event_record, p->call->issue.per_thread);
    if (record == NULL || api->memcpy_async == NULL || api->event_synchronize == NULL ||
        DRIVER_FLAVOUR(api, stream_wait_event, false) == NULL ||
        DRIVER_FLAVOUR(api, event_record, false) == NULL)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = record(p->home->fence, p->call->issue.stream);
    if (r == CUDA_SUCCESS)
        r = p->s != NULL ? wait_on(p->s->local, p->home->fence)
                         : wait_on(p->x->peer, p->home->fence);
    return r;
}

/* The program's later work on its stream after the relay's last copy. A
 * synchronous variant instead waits for that copy once the lock is let go
 * (pool_relay_apply): its caller's later work is issued after it returns. */
static void fence_out(struct relay_plan *p)
{
    const struct driver_api *api = driver_api();
    PFN_cuStreamWaitEvent_v3020 wait =
        DRIVER_FLAVOUR(api, stream_wait_event, p->call->issue.per_thread);
    if (!p->call->issue.sync && (wait == NULL || wait(p->call->issue.stream, p->last, 0) != CUDA_SUCCESS))
        api->event_synchronize(p->last);
}

/* A relay given up midway: everything it issued is waited for, so that
 * the original call (which rewrites every byte) runs after it. */
static void drain(struct relay_plan *p)
{
    const struct driver_api *api = driver_api();
    if (api->stream_synchronize == NULL)
        return;
    if (p->s != NULL)
        api->stream_synchronize(p->s->local);
    api->stream_synchronize(p->x->peer);
    if (p->d != NULL)
        api->stream_synchronize(p->d->local);
}

static CUresult issue(struct relay_plan *p)
{
    size_t slot = p->x->slot;
    if (p->s != NULL && p->d != NULL && p->d->slot < slot)
        slot = p->d->slot;
    CUresult r = fence_in(p);
    if (r != CUDA_SUCCESS)
        return r; /* nothing of the program's touched */
    size_t off = 0;
    for (int i = 0; off < p->bytes && r == CUDA_SUCCESS; i++) {
        size_t len = p->bytes - off < slot ? p->bytes - off : slot;
        r = chunk(p, off, len, i % RELAY_SLOTS);
        off += len;
    }
    if (r != CUDA_SUCCESS) {
        drain(p);
        return r;
    }
    fence_out(p);
    return CUDA_SUCCESS;
}

/* [ptr, ptr+bytes) inside one allocation of the program's: a range the
 * driver would refuse is left to it, never half relayed. */
static bool inside(CUdeviceptr ptr, size_t bytes)
{
    struct owner_info info;
    return resolve_pointer(ptr, &info) && ptr >= info.base &&
           bytes <= info.size - (ptr - info.base);
}

static bool capturing(const struct copy_call *call)
{
    PFN_cuStreamIsCapturing_v10000 f =
        DRIVER_FLAVOUR(driver_api(), stream_is_capturing, call->issue.per_thread);
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    return f == NULL || f(call->issue.stream, &st) != CUDA_SUCCESS ||
           st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* The program's stream as the lanes tell streams apart. */
static struct relay_stream stream_of(const struct copy_call *call, CUcontext exec)
{
    bool per_thread = call->issue.stream == CU_STREAM_PER_THREAD ||
                      (call->issue.stream == NULL && call->issue.per_thread);
    struct relay_stream st = {call->issue.stream, exec, per_thread ? shim_thread_id() : 0};
    return st;
}

/* The plan's devices and lanes; false when one cannot be had. */
static bool plan_devices(struct relay_plan *p, const struct copy_end *src,
                         const struct copy_end *dst)
{
    bool s_pool = src->route.kind == MEM_KIND_POOL, d_pool = dst->route.kind == MEM_KIND_POOL;
    CUcontext exec = driver_stream_ctx(p->call->issue.stream, p->call->issue.per_thread);
    bool home_s = exec != NULL && exec == src->ctx, home_d = exec != NULL && exec == dst->ctx;
    struct relay_dev *sd = NULL, *dd = NULL;
    if (s_pool || home_s)
        sd = relay_dev_get(src->route.device, src->ctx);
    if (d_pool || home_d)
        dd = relay_dev_get(dst->route.device, dst->ctx);
    p->home = home_s ? sd : home_d ? dd : NULL;
    if (p->home == NULL || (s_pool && sd == NULL) || (d_pool && dd == NULL))
        return false;
    struct relay_stream st = stream_of(p->call, exec);
    p->lane = relay_lane_pick(&st);
    if (p->lane < 0)
        return false;
    p->s = s_pool ? relay_lane_get(sd, src->route.device, p->lane, true) : NULL;
    p->d = d_pool ? relay_lane_get(dd, dst->route.device, p->lane, true) : NULL;
    p->x = s_pool ? p->s : p->d;
    return p->x != NULL && (!s_pool || p->s != NULL) && (!d_pool || p->d != NULL);
}

enum route_reason pool_relay_apply(struct copy_call *call, const struct route_decision *d,
                                   const struct copy_end *src, const struct copy_end *dst,
                                   size_t bytes)
{
    if (call->alias.dst == NULL || call->alias.src == NULL || !call->relay.ok)
        return ROUTE_SHIM_ERROR;
    if (capturing(call))
        return ROUTE_POOL;
    struct relay_plan p = {call, *call->alias.dst, *call->alias.src, bytes, -1, NULL,
                           NULL, NULL, NULL, NULL};
    if (!inside(p.src, bytes) || !inside(p.dst, bytes))
        return ROUTE_RELAY_FAILED;
    if (d->need_enable) {
        enum route_reason r = upgrade_enable(d, src, dst);
        if (r != ROUTE_UPGRADED)
            return r;
        call->link.enabled = true;
    }
    relay_lock();
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    bool planned = plan_devices(&p, src, dst);
    if (planned)
        r = issue(&p);
    if (planned) /* a relay given up was waited for: nothing in flight */
        relay_lane_issued(p.lane, r == CUDA_SUCCESS ? p.last : NULL);
    relay_unlock();
    /* Outside the lock: other threads' relays are issued meanwhile (a
     * later record of the same event only makes the wait longer). */
    if (r == CUDA_SUCCESS && call->issue.sync)
        driver_api()->event_synchronize(p.last);
    if (r != CUDA_SUCCESS) {
        if (planned)
            relay_count(bytes, true);
        LOG_DEBUG("pool relay: copy %d->%d of %zu bytes left to the driver (%d)",
                  src->route.device, dst->route.device, bytes, (int)r);
        return ROUTE_RELAY_FAILED;
    }
    relay_count(bytes, false);
    call->relay.done = true;
    call->relay.rc = CUDA_SUCCESS;
    return ROUTE_UPGRADED_RELAY;
}
