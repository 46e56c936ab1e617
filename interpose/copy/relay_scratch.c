#include "relay_scratch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "config.h"
#include "driver.h"
#include "log.h"
#include "own_device.h"
#include "shim.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct relay_dev devs[P2PSHIM_MAX_DEVICES];
/* A context in which making dev's buffers failed: not tried again there. */
static CUcontext failed_ctx[P2PSHIM_MAX_DEVICES];
/* Which program stream each lane serves, and the event its work in flight
 * ends with (NULL: none). */
static struct {
    bool owned;
    struct relay_stream st;
    CUevent last;
} lanes[RELAY_LANES];
static _Atomic unsigned long long n_copies, n_bytes, n_fallbacks, n_busy;
static _Atomic size_t held_bytes;

void relay_lock(void)
{
    pthread_mutex_lock(&mu);
}

void relay_unlock(void)
{
    pthread_mutex_unlock(&mu);
}

static bool push(CUcontext ctx)
{
    const struct driver_api *d = driver_api();
    return ctx != NULL && d->ctx_push && d->ctx_pop && d->ctx_push(ctx) == CUDA_SUCCESS;
}

static void pop(void)
{
    CUcontext c;
    driver_api()->ctx_pop(&c);
}

/* Gives back what lane l holds (its context pushed). */
static void release_lane(struct relay_lane *l)
{
    const struct driver_api *d = driver_api();
    for (int k = 0; k < RELAY_SLOTS; k++) {
        if (l->ev_local[k] != NULL && d->event_destroy)
            d->event_destroy(l->ev_local[k]);
        if (l->ev_peer[k] != NULL && d->event_destroy)
            d->event_destroy(l->ev_peer[k]);
    }
    CUstream streams[2] = {l->local, l->peer};
    for (int i = 0; i < 2; i++)
        if (streams[i] != NULL && d->stream_destroy)
            d->stream_destroy(streams[i]);
    if (l->buf != 0 && d->mem_free) {
        own_device_remove(l->buf);
        d->mem_free(l->buf);
        atomic_fetch_sub(&held_bytes, l->slot * RELAY_SLOTS);
    }
    memset(l, 0, sizeof *l);
}

/* Gives back whatever r holds (errors ignored: the context may be gone
 * already, at exit after the runtime's teardown). Its work is waited for
 * first: the program's later work never waits on a destroyed event. */
static void release(struct relay_dev *r)
{
    const struct driver_api *d = driver_api();
    if (r->ctx == NULL)
        return;
    bool pushed = push(r->ctx);
    for (int i = 0; i < RELAY_LANES; i++)
        release_lane(&r->lane[i]);
    if (r->fence != NULL && d->event_destroy)
        d->event_destroy(r->fence);
    if (pushed)
        pop();
    memset(r, 0, sizeof *r);
}

/* Every relay stream's work done: a buffer about to go may be read or
 * written by another device's peer stream. Afterwards no lane has work in
 * flight. */
static void sync_all(void)
{
    const struct driver_api *d = driver_api();
    if (d->stream_synchronize == NULL)
        return;
    for (int i = 0; i < P2PSHIM_MAX_DEVICES; i++)
        for (int j = 0; j < RELAY_LANES; j++) {
            if (devs[i].lane[j].local != NULL)
                d->stream_synchronize(devs[i].lane[j].local);
            if (devs[i].lane[j].peer != NULL)
                d->stream_synchronize(devs[i].lane[j].peer);
        }
    for (int j = 0; j < RELAY_LANES; j++)
        lanes[j].last = NULL;
}

/* ---- the lifecycle row (shim.h) ----------------------------------------- */

static void relay_exit(void)
{
    pthread_mutex_lock(&mu);
    sync_all();
    for (int i = 0; i < P2PSHIM_MAX_DEVICES; i++)
        release(&devs[i]);
    pthread_mutex_unlock(&mu);
}

static void relay_fork_prepare(void)
{
    pthread_mutex_lock(&mu);
}

static void relay_fork_parent(void)
{
    pthread_mutex_unlock(&mu);
}

/* A child has no CUDA of its parent's: the parent's buffers are forgotten,
 * not freed. */
static void relay_fork_child(void)
{
    memset(devs, 0, sizeof devs);
    memset(lanes, 0, sizeof lanes);
    memset(failed_ctx, 0, sizeof failed_ctx);
    atomic_store(&held_bytes, 0);
    pthread_mutex_init(&mu, NULL);
}

static void relay_report(void)
{
    unsigned long long copies = atomic_load(&n_copies);
    unsigned long long fallbacks = atomic_load(&n_fallbacks), busy = atomic_load(&n_busy);
    if (copies == 0 && fallbacks == 0 && busy == 0)
        return;
    LOG_INFO("summary relay copies=%llu bytes=%llu fallbacks=%llu scratch_per_device=%zu "
             "lanes_busy=%llu",
             copies, atomic_load(&n_bytes), fallbacks, config_get()->pool_relay, busy);
}

static void relay_reset(void)
{
    atomic_store(&n_copies, 0);
    atomic_store(&n_bytes, 0);
    atomic_store(&n_fallbacks, 0);
    atomic_store(&n_busy, 0);
}

/* A late row; its before_ctx_gone runs whether or not it joined. */
SHIM_LIFE_ROW(relay_row) = {
    .order = SHIM_ROW_RELAY,
    .late = true,
    .name = "pool-relay",
    .fork_prepare = relay_fork_prepare,
    .fork_parent = relay_fork_parent,
    .fork_child = relay_fork_child,
    .at_exit = relay_exit,
    .report = relay_report,
    .reset = relay_reset,
    .before_ctx_gone = relay_ctx_gone,
};

/* ---- lanes --------------------------------------------------------------- */

static bool same_stream(const struct relay_stream *a, const struct relay_stream *b)
{
    return a->handle == b->handle && a->ctx == b->ctx && a->thread == b->thread;
}

/* Whether lane i has no work in flight: asked of the driver, which may
 * answer not ready for work it has not reached yet. */
static bool lane_idle(int i)
{
    const struct driver_api *d = driver_api();
    return lanes[i].last == NULL ||
           (d->event_query != NULL && d->event_query(lanes[i].last) == CUDA_SUCCESS);
}

int relay_lane_pick(const struct relay_stream *st)
{
    int pick = -1;
    for (int i = 0; i < RELAY_LANES && pick < 0; i++)
        if (lanes[i].owned && same_stream(&lanes[i].st, st))
            pick = i;
    for (int i = 0; i < RELAY_LANES && pick < 0; i++)
        if (!lanes[i].owned)
            pick = i;
    for (int i = 0; i < RELAY_LANES && pick < 0; i++)
        if (lane_idle(i))
            pick = i;
    if (pick < 0) {
        atomic_fetch_add(&n_busy, 1);
        return -1;
    }
    if (!lanes[pick].owned || !same_stream(&lanes[pick].st, st))
        lanes[pick].last = NULL; /* done: the new stream waits for nothing */
    lanes[pick].owned = true;
    lanes[pick].st = *st;
    return pick;
}

void relay_lane_issued(int lane, CUevent last)
{
    if (lane >= 0 && lane < RELAY_LANES)
        lanes[lane].last = last;
}

/* ---- buffers ------------------------------------------------------------ */

/* Makes lane l's streams and events in the current context. */
static bool make_lane(struct relay_lane *l)
{
    const struct driver_api *d = driver_api();
    /* Non-blocking: the legacy stream's implicit synchronisation would tie
     * them to the program's other work; the relay orders itself with
     * events. */
    if (d->stream_create(&l->local, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        d->stream_create(&l->peer, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        return false;
    for (int k = 0; k < RELAY_SLOTS; k++)
        if (d->event_create(&l->ev_local[k], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
            d->event_create(&l->ev_peer[k], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
            return false;
    return true;
}

/* Makes lane l's scratch in the current context of r. */
static bool make_buf(struct relay_dev *r, struct relay_lane *l)
{
    /* 64 KiB-aligned slots, a third of the lane's share each. */
    size_t slot = config_get()->pool_relay / (RELAY_SLOTS * RELAY_LANES) &
                  ~(((size_t)64 << 10) - 1);
    if (slot == 0 || driver_api()->mem_alloc(&l->buf, slot * RELAY_SLOTS) != CUDA_SUCCESS) {
        l->buf = 0;
        return false;
    }
    if (!own_device_add(l->buf, slot * RELAY_SLOTS)) {
        driver_api()->mem_free(l->buf);
        l->buf = 0;
        return false;
    }
    l->slot = slot;
    atomic_fetch_add(&held_bytes, slot * RELAY_SLOTS);
    LOG_DEBUG("pool relay: %zu bytes of scratch for a lane in context %p", slot * RELAY_SLOTS,
              (void *)r->ctx);
    return true;
}

static bool have_api(void)
{
    const struct driver_api *d = driver_api();
    return d->mem_alloc && d->stream_create && d->event_create && d->mem_free &&
           d->stream_destroy && d->event_destroy;
}

/* Remembers that dev has nothing to relay with in ctx. */
static void refuse(int dev, CUcontext ctx)
{
    failed_ctx[dev] = ctx;
    LOG_DEBUG("pool relay: nothing to relay with on device %d: copies of pool memory "
              "there stay staged", dev);
}

struct relay_dev *relay_dev_get(int dev, CUcontext ctx)
{
    if (dev < 0 || dev >= P2PSHIM_MAX_DEVICES || ctx == NULL || failed_ctx[dev] == ctx)
        return NULL;
    struct relay_dev *r = &devs[dev];
    if (r->ctx != NULL)
        return r->ctx == ctx ? r : NULL;
    bool ok = have_api() && push(ctx);
    if (ok) {
        r->ctx = ctx;
        ok = driver_api()->event_create(&r->fence, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS;
        if (!ok)
            release(r);
        pop();
    }
    if (!ok) {
        refuse(dev, ctx);
        return NULL;
    }
    shim_life_start(SHIM_ROW_RELAY);
    return r;
}

struct relay_lane *relay_lane_get(struct relay_dev *r, int dev, int lane, bool buf)
{
    struct relay_lane *l = &r->lane[lane];
    if (l->local != NULL && (!buf || l->buf != 0))
        return l;
    if (!push(r->ctx)) {
        refuse(dev, r->ctx);
        return NULL;
    }
    bool fresh = l->local == NULL;
    bool ok = (!fresh || make_lane(l)) && (!buf || make_buf(r, l));
    if (!ok && fresh)
        release_lane(l);
    pop();
    if (!ok) {
        refuse(dev, r->ctx);
        return NULL;
    }
    return l;
}

void relay_count(size_t bytes, bool fell_back)
{
    if (fell_back) {
        atomic_fetch_add(&n_fallbacks, 1);
        return;
    }
    atomic_fetch_add(&n_copies, 1);
    atomic_fetch_add(&n_bytes, bytes);
}

void relay_ctx_gone(CUcontext ctx, int dev)
{
    pthread_mutex_lock(&mu);
    bool any = false;
    for (int i = 0; i < P2PSHIM_MAX_DEVICES; i++)
        any = any || (devs[i].ctx != NULL && (ctx != NULL ? devs[i].ctx == ctx : i == dev));
    if (any) {
        /* After this every slot is free, and no slot may name an event
         * of the buffers about to go. */
        sync_all();
        for (int i = 0; i < P2PSHIM_MAX_DEVICES; i++)
            for (int j = 0; j < RELAY_LANES; j++)
                memset(devs[i].lane[j].free_after, 0, sizeof devs[i].lane[j].free_after);
    }
    for (int i = 0; i < P2PSHIM_MAX_DEVICES; i++) {
        if (ctx != NULL ? devs[i].ctx == ctx : i == dev)
            release(&devs[i]);
        if (ctx != NULL ? failed_ctx[i] == ctx : i == dev)
            failed_ctx[i] = NULL;
    }
    pthread_mutex_unlock(&mu);
}

size_t relay_scratch_bytes(void)
{
    return atomic_load(&held_bytes);
}
