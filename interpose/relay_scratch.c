#include "relay_scratch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "config.h"
#include "driver.h"
#include "log.h"
#include "shim.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct relay_dev devs[P2PSHIM_MAX_DEVICES];
/* A context in which making dev's buffers failed: not tried again there. */
static CUcontext failed_ctx[P2PSHIM_MAX_DEVICES];
static _Atomic unsigned long long n_copies, n_bytes, n_fallbacks;
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

/* Gives back whatever r holds (errors ignored: the context may be gone
 * already, at exit after the runtime's teardown). Its work is waited for
 * first: the program's later work never waits on a destroyed event. */
static void release(struct relay_dev *r)
{
    const struct driver_api *d = driver_api();
    if (r->ctx == NULL)
        return;
    bool pushed = push(r->ctx);
    for (int k = 0; k < RELAY_SLOTS; k++) {
        if (r->ev_local[k] != NULL && d->event_destroy)
            d->event_destroy(r->ev_local[k]);
        if (r->ev_peer[k] != NULL && d->event_destroy)
            d->event_destroy(r->ev_peer[k]);
    }
    if (r->fence != NULL && d->event_destroy)
        d->event_destroy(r->fence);
    CUstream streams[2] = {r->local, r->peer};
    for (int i = 0; i < 2; i++)
        if (streams[i] != NULL && d->stream_destroy)
            d->stream_destroy(streams[i]);
    if (r->buf != 0 && d->mem_free) {
        d->mem_free(r->buf);
        atomic_fetch_sub(&held_bytes, r->slot * RELAY_SLOTS);
    }
    if (pushed)
        pop();
    memset(r, 0, sizeof *r);
}

/* Every relay stream's work done: a buffer about to go may be read or
 * written by another device's peer stream. */
static void sync_all(void)
{
    const struct driver_api *d = driver_api();
    if (d->stream_synchronize == NULL)
        return;
    for (int i = 0; i < P2PSHIM_MAX_DEVICES; i++) {
        if (devs[i].local != NULL)
            d->stream_synchronize(devs[i].local);
        if (devs[i].peer != NULL)
            d->stream_synchronize(devs[i].peer);
    }
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
    memset(failed_ctx, 0, sizeof failed_ctx);
    atomic_store(&held_bytes, 0);
    pthread_mutex_init(&mu, NULL);
}

static void relay_report(void)
{
    unsigned long long copies = atomic_load(&n_copies);
    unsigned long long fallbacks = atomic_load(&n_fallbacks);
    if (copies == 0 && fallbacks == 0)
        return;
    LOG_INFO("summary relay copies=%llu bytes=%llu fallbacks=%llu scratch_per_device=%zu",
             copies, atomic_load(&n_bytes), fallbacks, config_get()->pool_relay);
}

static void relay_reset(void)
{
    atomic_store(&n_copies, 0);
    atomic_store(&n_bytes, 0);
    atomic_store(&n_fallbacks, 0);
}

static const struct shim_module relay_row = {
    .name = "pool-relay",
    .fork_prepare = relay_fork_prepare,
    .fork_parent = relay_fork_parent,
    .fork_child = relay_fork_child,
    .at_exit = relay_exit,
    .report = relay_report,
    .reset = relay_reset,
};

/* ---- buffers ------------------------------------------------------------ */

/* Makes r's streams and events in ctx (pushed by the caller). */
static bool make(struct relay_dev *r, CUcontext ctx)
{
    const struct driver_api *d = driver_api();
    if (!d->mem_alloc || !d->stream_create || !d->event_create || !d->mem_free ||
        !d->stream_destroy || !d->event_destroy)
        return false;
    r->ctx = ctx;
    /* Non-blocking: the legacy stream's implicit synchronisation would tie
     * them to the program's other work; the relay orders itself with
     * events. */
    if (d->stream_create(&r->local, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        d->stream_create(&r->peer, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        d->event_create(&r->fence, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        return false;
    for (int k = 0; k < RELAY_SLOTS; k++)
        if (d->event_create(&r->ev_local[k], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
            d->event_create(&r->ev_peer[k], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
            return false;
    return true;
}

/* Makes r's scratch in its context (pushed by the caller). */
static bool make_buf(struct relay_dev *r)
{
    /* 64 KiB-aligned slots, a third of the scratch each. */
    size_t slot = config_get()->pool_relay / RELAY_SLOTS & ~(((size_t)64 << 10) - 1);
    if (slot == 0 || driver_api()->mem_alloc(&r->buf, slot * RELAY_SLOTS) != CUDA_SUCCESS) {
        r->buf = 0;
        return false;
    }
    r->slot = slot;
    atomic_fetch_add(&held_bytes, slot * RELAY_SLOTS);
    LOG_DEBUG("pool relay: %zu bytes of scratch in context %p", slot * RELAY_SLOTS,
              (void *)r->ctx);
    return true;
}

struct relay_dev *relay_dev_get(int dev, CUcontext ctx, bool buf)
{
    if (dev < 0 || dev >= P2PSHIM_MAX_DEVICES || ctx == NULL || failed_ctx[dev] == ctx)
        return NULL;
    struct relay_dev *r = &devs[dev];
    if (r->ctx != NULL && r->ctx != ctx)
        return NULL;
    bool fresh = r->ctx == NULL;
    if (r->ctx != NULL && (!buf || r->buf != 0))
        return r;
    bool ok = push(ctx);
    if (ok) {
        ok = (!fresh || make(r, ctx)) && (!buf || make_buf(r));
        if (!ok && fresh)
            release(r);
        pop();
    }
    if (!ok) {
        failed_ctx[dev] = ctx;
        LOG_DEBUG("pool relay: nothing to relay with on device %d: copies of pool memory "
                  "there stay staged", dev);
        return NULL;
    }
    shim_register(SHIM_ROW_RELAY, &relay_row);
    return r;
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
            memset(devs[i].free_after, 0, sizeof devs[i].free_after);
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
