/* The bounce module's event pool (events.h). Thread-safe: one mutex,
 * never held across a driver call. */
#include "events.h"

#include "driver.h"

#define EVENT_POOL 32 /* a few buffers' uses and fences per context */

struct pooled {
    CUevent ev; /* NULL: free slot */
    CUcontext ctx;
    int dev;
    bool busy;
};

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pooled pool[EVENT_POOL];

static CUevent take_idle(CUcontext ctx)
{
    CUevent e = NULL;
    pthread_mutex_lock(&pool_mu);
    for (int i = 0; i < EVENT_POOL && e == NULL; i++)
        if (pool[i].ev != NULL && !pool[i].busy && pool[i].ctx == ctx) {
            pool[i].busy = true;
            e = pool[i].ev;
        }
    pthread_mutex_unlock(&pool_mu);
    return e;
}

CUevent bevent_get(CUcontext ctx)
{
    CUevent e = take_idle(ctx);
    if (e != NULL)
        return e;
    const struct driver_api *d = driver_api();
    CUcontext popped;
    if (ctx == NULL || d->event_create == NULL || d->ctx_push == NULL || d->ctx_pop == NULL ||
        d->ctx_push(ctx) != CUDA_SUCCESS)
        return NULL;
    if (d->event_create(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        e = NULL;
    d->ctx_pop(&popped);
    if (e == NULL)
        return NULL;
    int dev = driver_ctx_device(ctx);
    pthread_mutex_lock(&pool_mu);
    for (int i = 0; i < EVENT_POOL; i++)
        if (pool[i].ev == NULL) {
            pool[i] = (struct pooled){e, ctx, dev, true};
            break;
        }
    pthread_mutex_unlock(&pool_mu);
    return e;
}

void bevent_put(CUevent e)
{
    if (e == NULL)
        return;
    bool kept = false;
    pthread_mutex_lock(&pool_mu);
    for (int i = 0; i < EVENT_POOL && !kept; i++)
        if (pool[i].ev == e) {
            pool[i].busy = false;
            kept = true;
        }
    pthread_mutex_unlock(&pool_mu);
    if (!kept)
        driver_api()->event_destroy(e);
}

void bevent_drop(CUcontext ctx, int dev)
{
    CUevent doomed[EVENT_POOL];
    int n = 0;
    pthread_mutex_lock(&pool_mu);
    for (int i = 0; i < EVENT_POOL; i++) {
        struct pooled *p = &pool[i];
        bool match = p->ev != NULL && (ctx != NULL ? p->ctx == ctx : dev < 0 || p->dev == dev);
        if (!match)
            continue;
        if (!p->busy)
            doomed[n++] = p->ev;
        *p = (struct pooled){0};
    }
    pthread_mutex_unlock(&pool_mu);
    for (int i = 0; i < n; i++)
        driver_api()->event_destroy(doomed[i]);
}
