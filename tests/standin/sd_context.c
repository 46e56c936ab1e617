/* Contexts (primary and created, the calling thread's stack) and peer
 * access: the exported driver functions. Error codes follow the real
 * driver's documented behaviour. */
#include "sd_internal.h"

/* ---- primary contexts ---- */

static CUresult primary_retain(CUcontext *pctx, CUdevice dev)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    struct CUctx_st *c = sd.primary[dev];
    c->refcount++;
    c->alive = 1;
    *pctx = c;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    SD_BODY(primary_retain(pctx, dev));
}

/* At refcount zero the primary context is destroyed: its allocations,
 * streams, events and peer links go; the handle stays ours. */
static CUresult primary_release(CUdevice dev)
{
    if (!sd_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    struct CUctx_st *c = sd.primary[dev];
    if (c->refcount == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (--c->refcount == 0) {
        sd_ctx_clear(c);
        c->alive = 0;
    }
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    SD_BODY(primary_release(dev));
}
SD_API CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    SD_BODY(primary_release(dev));
}

/* A reset destroys all state of the primary context (allocations, streams,
 * events, peer access to and from it) but not the retain count: a program
 * that keeps its retained handle current goes on using it. */
static CUresult primary_reset(CUdevice dev)
{
    if (!sd_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    sd_ctx_clear(sd.primary[dev]);
    sd.primary[dev]->flags = 0;
    /* The device's pools go back to their initial access (owner only). */
    for (struct CUmemPoolHandle_st *p = sd.pools; p; p = p->next)
        if (p->dev == dev)
            for (int d = 0; d < SD_MAX_DEV; d++)
                p->access[d] = d == dev ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                        : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
    SD_BODY(primary_reset(dev));
}
SD_API CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    SD_BODY(primary_reset(dev));
}

static CUresult primary_state(CUdevice dev, unsigned int *flags, int *active)
{
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = sd.primary[dev]->flags;
    *active = sd.primary[dev]->alive;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    SD_BODY(primary_state(dev, flags, active));
}

static CUresult primary_set_flags(CUdevice dev, unsigned int flags)
{
    if (!sd_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    sd.primary[dev]->flags = flags;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    SD_BODY(primary_set_flags(dev, flags));
}

/* ---- non-primary contexts ---- */

/* Creates a context and pushes it on the calling thread's stack. */
static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    struct CUctx_st *c = sd_ctx_new(dev, 0);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->alive = 1;
    c->flags = flags;
    if (!sd_tls_push(c)) {
        c->alive = 0;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pctx = c;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    SD_BODY(ctx_create(pctx, flags, dev));
}
/* What cuCtxCreate means in CUDA 13 headers; the parameters (execution
 * affinity, CIG) have no meaning here and are ignored. */
SD_API CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params,
                                       unsigned int flags, CUdevice dev)
{
    (void)params;
    SD_BODY(ctx_create(pctx, flags, dev));
}

static int listed(struct CUctx_st *c)
{
    for (struct CUctx_st *x = sd.ctxs; x; x = x->next_all)
        if (x == c)
            return 1;
    return 0;
}

static CUresult ctx_destroy(struct CUctx_st *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    if (!listed(c) || !c->alive || c->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    sd_ctx_clear(c);
    c->alive = 0;
    if (sd_current_raw() == c)
        sd_tls_pop();
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    SD_BODY(ctx_destroy(ctx));
}

/* A handle that may be made current: a live context, or a primary one
 * (its handle is valid for the device's lifetime). */
static int settable(struct CUctx_st *c)
{
    return listed(c) && (c->alive || c->primary);
}

static CUresult ctx_get_current(CUcontext *pctx)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = sd_current_raw();
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    SD_BODY(ctx_get_current(pctx));
}

static CUresult ctx_set_current(struct CUctx_st *c)
{
    if (c && !settable(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    sd_tls_set_top(c);
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    SD_BODY(ctx_set_current(ctx));
}

static CUresult ctx_push(struct CUctx_st *c)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    if (!settable(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    return sd_tls_push(c) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
SD_API CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
    SD_BODY(ctx_push(ctx));
}

static CUresult ctx_pop(CUcontext *pctx)
{
    struct CUctx_st *c = sd_tls_pop();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (pctx)
        *pctx = c;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
    SD_BODY(ctx_pop(pctx));
}

static CUresult ctx_get_device(CUdevice *device)
{
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c;
    CUresult r = sd_current(&c);
    if (r == CUDA_SUCCESS)
        *device = c->dev;
    return r;
}
SD_API CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    SD_BODY(ctx_get_device(device));
}

/* Waits for all work of the current context: every stream, non-blocking
 * ones included. */
static CUresult ctx_synchronize(void)
{
    struct CUctx_st *c;
    CUresult r = sd_current(&c);
    while (r == CUDA_SUCCESS) {
        sd_flush_ctx(c, 1);
        struct CUstream_st *held = NULL;   /* a value wait holds it */
        for (struct CUstream_st *s = sd.streams; s && !held; s = s->next)
            if (s->ctx == c && s->head)
                held = s;
        if (!held)
            break;
        sd_block_until(held, UINT64_MAX);
    }
    return r;
}
SD_API CUresult CUDAAPI cuCtxSynchronize(void)
{
    SD_BODY(ctx_synchronize());
}

/* ---- peer access, from the current context to peerContext ---- */

static CUresult peer_enable(struct CUctx_st *peer, unsigned int flags)
{
    sd.stats.peer_enable_calls++;
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *cur;
    CUresult r = sd_current(&cur);
    if (r != CUDA_SUCCESS)
        return r;
    if (!sd_ctx_live(peer))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (peer->dev == cur->dev)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!sd.cfg.can[cur->dev][peer->dev])
        return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    if (sd_peer_has(cur, peer))
        return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    if (sd.cfg.fail[cur->dev][peer->dev])
        return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    if (cur->npeers >= sd.cfg.max_peers)
        return CUDA_ERROR_TOO_MANY_PEERS;
    if (!sd_peer_add(cur, peer))
        return CUDA_ERROR_OUT_OF_MEMORY;
    sd.stats.peer_enable_ok++;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    SD_BODY(peer_enable(peerContext, Flags));
}

static CUresult peer_disable(struct CUctx_st *peer)
{
    sd.stats.peer_disable_calls++;
    struct CUctx_st *cur;
    CUresult r = sd_current(&cur);
    if (r != CUDA_SUCCESS)
        return r;
    if (!sd_ctx_live(peer))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!sd_peer_has(cur, peer))
        return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    sd_peer_remove(cur, peer);
    sd.stats.peer_disable_ok++;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peerContext)
{
    SD_BODY(peer_disable(peerContext));
}
