#define _GNU_SOURCE
#include "peer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "driver.h"
#include "log.h"
#include "shim.h"
#include "shim_hash.h"
#include "stats.h"
#include "thread_cache.h"

struct link_key {
    CUcontext from, to;
};

struct link_state {
    struct link_key key;
    int from_dev, to_dev;
    bool app;          /* the program enabled it and has not disabled it */
    bool shim;         /* the shim enabled it (or found it enabled) */
    CUresult failure;  /* the shim's enable failed with this; 0 = none */
    UT_hash_handle hh;
};

static struct link_state *links;
/* Bumped (under state_lock) by every change of any link: a thread's cached
 * view is good while the generation it was read at is current. */
static _Atomic uint64_t generation = 1;
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t enable_lock = PTHREAD_MUTEX_INITIALIZER;

/* 0 unknown, 1 can access, 2 cannot. */
static _Atomic signed char capability[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES];

static struct link_state *find_link(CUcontext from, CUcontext to)
{
    struct link_key key;
    struct link_state *s = NULL;
    memset(&key, 0, sizeof key);
    key.from = from;
    key.to = to;
    HASH_FIND(hh, links, &key, sizeof key, s);
    return s;
}

/* Finds or creates; NULL only when out of memory. state_lock held. */
static struct link_state *get_link(CUcontext from, int from_dev, CUcontext to, int to_dev)
{
    struct link_state *s = find_link(from, to);
    if (s != NULL) {
        if (s->from_dev < 0)
            s->from_dev = from_dev;
        if (s->to_dev < 0)
            s->to_dev = to_dev;
        return s;
    }
    s = shim_alloc(sizeof *s);
    if (s == NULL)
        return NULL;
    s->key.from = from;
    s->key.to = to;
    s->from_dev = from_dev;
    s->to_dev = to_dev;
    HASH_ADD(hh, links, key, sizeof s->key, s);
    return s;
}

static bool can_access(int dev, int peer)
{
    if (dev < 0 || peer < 0 || dev >= P2PSHIM_MAX_DEVICES || peer >= P2PSHIM_MAX_DEVICES)
        return false;
    signed char known = atomic_load_explicit(&capability[dev][peer], memory_order_relaxed);
    if (known != 0)
        return known == 1;
    const struct driver_api *d = driver_api();
    int can = 0;
    if (d->can_access_peer == NULL || d->can_access_peer(&can, dev, peer) != CUDA_SUCCESS)
        return false; /* not cached: the driver may not be ready yet */
    atomic_store_explicit(&capability[dev][peer], can ? 1 : 2, memory_order_relaxed);
    return can != 0;
}

static void read_view(CUcontext from_ctx, int from_dev, CUcontext to_ctx, int to_dev,
                      struct route_link *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&state_lock);
    const struct link_state *fwd = find_link(from_ctx, to_ctx);
    const struct link_state *rev = find_link(to_ctx, from_ctx);
    out->app_enabled = (fwd && fwd->app) || (rev && rev->app);
    out->shim_enabled = fwd && fwd->shim;
    out->shim_any = out->shim_enabled || (rev && rev->shim);
    out->failed = fwd && fwd->failure;
    pthread_mutex_unlock(&state_lock);
    out->can_access = can_access(from_dev, to_dev) || can_access(to_dev, from_dev);
}

/* The copy path asks for the same few links over and over: each thread
 * keeps its last answers, valid while the generation is unchanged. The
 * capability part is cached only once known (can_access caches it). */
#define VIEW_CACHE 4
struct cached_view {
    CUcontext from, to;
    uint64_t generation;
    struct route_link view;
};
struct view_cache {
    struct cached_view e[VIEW_CACHE];
    unsigned next;
};
/* Allocated by the threads that copy (thread_cache.h), not in every
 * thread's static TLS. */
static _Thread_local struct view_cache *view_cache;
static struct thread_cache view_caches = THREAD_CACHE_INIT(sizeof(struct view_cache));

void peer_warm_thread(void)
{
    if (view_cache == NULL)
        view_cache = thread_cache_get(&view_caches, (void **)&view_cache);
}

void peer_view(CUcontext from_ctx, int from_dev, CUcontext to_ctx, int to_dev,
               struct route_link *out)
{
    uint64_t gen = atomic_load_explicit(&generation, memory_order_acquire);
    struct view_cache *vc = view_cache;
    if (vc == NULL)
        vc = view_cache = thread_cache_get(&view_caches, (void **)&view_cache);
    for (int i = 0; vc != NULL && i < VIEW_CACHE; i++) {
        const struct cached_view *c = &vc->e[i];
        if (c->generation == gen && c->from == from_ctx && c->to == to_ctx) {
            *out = c->view;
            return;
        }
    }
    read_view(from_ctx, from_dev, to_ctx, to_dev, out);
    if (!out->can_access && from_dev >= 0 && to_dev >= 0 && from_dev < P2PSHIM_MAX_DEVICES &&
        to_dev < P2PSHIM_MAX_DEVICES &&
        atomic_load_explicit(&capability[from_dev][to_dev], memory_order_relaxed) == 0)
        return; /* capability not known yet: do not cache a guess */
    if (vc == NULL)
        return; /* no memory for a cache */
    struct cached_view *c = &vc->e[vc->next++ % VIEW_CACHE];
    c->from = from_ctx;
    c->to = to_ctx;
    c->generation = gen;
    c->view = *out;
}

/* One real enable of from -> to with from pushed. */
static CUresult enable_direction(CUcontext from, CUcontext to)
{
    const struct driver_api *d = driver_api();
    CUcontext popped = NULL;
    if (d->ctx_push == NULL || d->ctx_pop == NULL || d->ctx_enable_peer == NULL)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = d->ctx_push(from);
    if (r != CUDA_SUCCESS)
        return r;
    r = d->ctx_enable_peer(to, 0);
    d->ctx_pop(&popped);
    return r;
}

static bool mark_enabled(CUcontext from, int from_dev, CUcontext to, int to_dev)
{
    pthread_mutex_lock(&state_lock);
    struct link_state *s = get_link(from, from_dev, to, to_dev);
    if (s != NULL)
        s->shim = true;
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&state_lock);
    return s != NULL;
}

static void mark_failed(CUcontext from, int from_dev, CUcontext to, int to_dev, CUresult r)
{
    pthread_mutex_lock(&state_lock);
    struct link_state *s = get_link(from, from_dev, to, to_dev);
    if (s != NULL)
        s->failure = r;
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&state_lock);
}

bool peer_shim_enable(CUcontext from_ctx, int from_dev, CUcontext to_ctx, int to_dev)
{
    bool ok = false;
    pthread_mutex_lock(&enable_lock);
    struct route_link now;
    read_view(from_ctx, from_dev, to_ctx, to_dev, &now);
    if (now.app_enabled || now.shim_enabled || now.failed) {
        pthread_mutex_unlock(&enable_lock);
        return now.app_enabled || now.shim_enabled || now.shim_any;
    }
    CUresult r = enable_direction(from_ctx, to_ctx);
    /* Already enabled means enabled by a path we did not see; it serves. */
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
        ok = mark_enabled(from_ctx, from_dev, to_ctx, to_dev);
        LOG_INFO("enabled peer access %d->%d for cross-GPU copies", from_dev, to_dev);
    } else {
        mark_failed(from_ctx, from_dev, to_ctx, to_dev, r);
        ok = now.shim_any;
        if (!ok) {
            /* The opposite direction serves the copy engines too (a little
             * slower for copies issued here): try it once. */
            CUresult r2 = CUDA_SUCCESS;
            struct route_link back;
            read_view(to_ctx, to_dev, from_ctx, from_dev, &back);
            if (!back.failed)
                r2 = enable_direction(to_ctx, from_ctx);
            if (!back.failed &&
                (r2 == CUDA_SUCCESS || r2 == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)) {
                ok = mark_enabled(to_ctx, to_dev, from_ctx, from_dev);
                LOG_INFO("enabled peer access %d->%d for cross-GPU copies (%d->%d: error %d)",
                         to_dev, from_dev, from_dev, to_dev, (int)r);
            } else {
                if (!back.failed)
                    mark_failed(to_ctx, to_dev, from_ctx, from_dev, r2);
                LOG_INFO("cannot enable peer access between devices %d and %d (error %d);"
                         " their copies pass through", from_dev, to_dev, (int)r);
            }
        }
    }
    stats_count_enable(from_dev, to_dev, ok);
    pthread_mutex_unlock(&enable_lock);
    return ok;
}

bool peer_shim_release(CUcontext from_ctx, CUcontext to_ctx)
{
    const struct driver_api *d = driver_api();
    bool released = false;
    pthread_mutex_lock(&enable_lock);
    pthread_mutex_lock(&state_lock);
    struct link_state *s = find_link(from_ctx, to_ctx);
    bool shim_only = s != NULL && s->shim && !s->app;
    pthread_mutex_unlock(&state_lock);
    if (shim_only && d->ctx_push != NULL && d->ctx_pop != NULL && d->ctx_disable_peer != NULL &&
        d->ctx_push(from_ctx) == CUDA_SUCCESS) {
        CUcontext popped = NULL;
        CUresult r = d->ctx_disable_peer(to_ctx);
        d->ctx_pop(&popped);
        /* Not enabled: gone by a path we did not see; ours no longer. */
        released = r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
        if (released) {
            pthread_mutex_lock(&state_lock);
            s = find_link(from_ctx, to_ctx);
            if (s != NULL)
                s->shim = false;
            atomic_fetch_add(&generation, 1);
            pthread_mutex_unlock(&state_lock);
        }
    }
    pthread_mutex_unlock(&enable_lock);
    return released;
}

/* One real disable of from -> to with from pushed. */
static void disable_direction(CUcontext from, CUcontext to)
{
    const struct driver_api *d = driver_api();
    CUcontext popped = NULL;
    if (d->ctx_push == NULL || d->ctx_pop == NULL || d->ctx_disable_peer == NULL ||
        d->ctx_push(from) != CUDA_SUCCESS)
        return;
    d->ctx_disable_peer(to);
    d->ctx_pop(&popped);
}

enum peer_check_result peer_shim_enable_checked(CUcontext from_ctx, int from_dev,
                                                CUcontext to_ctx, int to_dev,
                                                const struct peer_check *check)
{
    struct route_link now;
    pthread_mutex_lock(&enable_lock);
    read_view(from_ctx, from_dev, to_ctx, to_dev, &now);
    if (now.app_enabled || now.shim_any || now.failed) {
        pthread_mutex_unlock(&enable_lock);
        return PEER_CHECK_NOT_RUN;
    }
    if (!check->staged(check->arg)) {
        pthread_mutex_unlock(&enable_lock);
        return PEER_CHECK_REFUSED;
    }
    CUresult r = enable_direction(from_ctx, to_ctx);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
        pthread_mutex_unlock(&enable_lock);
        return PEER_CHECK_NOT_RUN;
    }
    enum peer_check_result out = PEER_CHECK_REFUSED;
    if (check->linked(check->arg)) {
        out = PEER_CHECK_ENABLED;
        bool ok = mark_enabled(from_ctx, from_dev, to_ctx, to_dev);
        LOG_INFO("enabled peer access %d->%d for cross-GPU copies", from_dev, to_dev);
        stats_count_enable(from_dev, to_dev, ok);
    } else if (r == CUDA_SUCCESS) {
        disable_direction(from_ctx, to_ctx);
    }
    pthread_mutex_unlock(&enable_lock);
    return out;
}

/* The current context and its device, or false when there is none. */
static bool current_ctx(CUcontext *ctx, int *dev)
{
    const struct driver_api *d = driver_api();
    CUdevice cu_dev = -1;
    if (d->ctx_get_current == NULL || d->ctx_get_current(ctx) != CUDA_SUCCESS || *ctx == NULL)
        return false;
    if (d->ctx_get_device == NULL || d->ctx_get_device(&cu_dev) != CUDA_SUCCESS)
        cu_dev = -1;
    *dev = (int)cu_dev;
    return true;
}

CUresult peer_app_enable(CUcontext peer, unsigned int flags,
                         CUresult (*real)(CUcontext, unsigned int))
{
    CUcontext cur = NULL;
    int cur_dev = -1;
    pthread_mutex_lock(&enable_lock);
    CUresult r = real(peer, flags);
    if ((r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) &&
        current_ctx(&cur, &cur_dev)) {
        int peer_dev = driver_ctx_device(peer);
        pthread_mutex_lock(&state_lock);
        struct link_state *s = find_link(cur, peer);
        if (r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED && s != NULL && s->shim && !s->app)
            r = CUDA_SUCCESS; /* enabled by the shim only: the program's first */
        if (r == CUDA_SUCCESS) {
            if (s == NULL)
                s = get_link(cur, cur_dev, peer, peer_dev);
            if (s != NULL)
                s->app = true;
        }
        atomic_fetch_add(&generation, 1);
        pthread_mutex_unlock(&state_lock);
    }
    pthread_mutex_unlock(&enable_lock);
    return r;
}

CUresult peer_app_disable(CUcontext peer, CUresult (*real)(CUcontext))
{
    CUcontext cur = NULL;
    int cur_dev = -1;
    CUresult r;
    pthread_mutex_lock(&enable_lock);
    if (current_ctx(&cur, &cur_dev)) {
        pthread_mutex_lock(&state_lock);
        struct link_state *s = find_link(cur, peer);
        bool shim = s != NULL && s->shim, app = s != NULL && s->app;
        if (shim) {
            /* The shim keeps the link; the program sees its own answer. */
            r = app ? CUDA_SUCCESS : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
            s->app = false;
            atomic_fetch_add(&generation, 1);
            pthread_mutex_unlock(&state_lock);
            pthread_mutex_unlock(&enable_lock);
            return r;
        }
        pthread_mutex_unlock(&state_lock);
    }
    r = real(peer);
    if (r == CUDA_SUCCESS && cur != NULL) {
        pthread_mutex_lock(&state_lock);
        struct link_state *s = find_link(cur, peer);
        if (s != NULL)
            s->app = false;
        atomic_fetch_add(&generation, 1);
        pthread_mutex_unlock(&state_lock);
    }
    pthread_mutex_unlock(&enable_lock);
    return r;
}

static void forget_if(bool (*match)(const struct link_state *, const void *), const void *arg)
{
    struct link_state *s, *tmp;
    pthread_mutex_lock(&enable_lock);
    pthread_mutex_lock(&state_lock);
    HASH_ITER(hh, links, s, tmp) {
        if (match(s, arg)) {
            HASH_DEL(links, s);
            shim_free(s, sizeof *s);
        }
    }
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&state_lock);
    pthread_mutex_unlock(&enable_lock);
}

static bool match_device(const struct link_state *s, const void *arg)
{
    int dev = *(const int *)arg;
    return s->from_dev == dev || s->to_dev == dev;
}

static bool match_ctx(const struct link_state *s, const void *arg)
{
    CUcontext ctx = *(const CUcontext *)arg;
    return s->key.from == ctx || s->key.to == ctx;
}

void peer_forget_device(int dev)
{
    forget_if(match_device, &dev);
}

void peer_forget_ctx(CUcontext ctx)
{
    forget_if(match_ctx, &ctx);
}

void peer_fork_prepare(void)
{
    pthread_mutex_lock(&enable_lock);
    pthread_mutex_lock(&state_lock);
}

void peer_fork_release(void)
{
    pthread_mutex_unlock(&state_lock);
    pthread_mutex_unlock(&enable_lock);
}

SHIM_LIFE_ROW(peer_row) = {
    .order = SHIM_ROW_PEER,
    .name = "peer",
    .at_start = peer_warm_thread,
    .fork_prepare = peer_fork_prepare,
    .fork_parent = peer_fork_release,
    .fork_child = peer_fork_release,
    .ctx_gone = peer_forget_ctx,
    .device_gone = peer_forget_device,
};
