/* Exported peer-state and context wrappers: the program's view of peer
 * access (peer.h) and the state dropped when a context goes away. */
#include "copy.h"
#include "driver.h"
#include "hooks.h"
#include "link_life.h"
#include "peer.h"
#include "shim.h"

/* The current context, or NULL. */
static CUcontext current_ctx(void)
{
    const struct driver_api *d = driver_api();
    CUcontext ctx = NULL;
    if (d->ctx_get_current == NULL || d->ctx_get_current(&ctx) != CUDA_SUCCESS)
        return NULL;
    return ctx;
}

P2PSHIM_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    pfn_cuCtxEnablePeerAccess real = REAL(cuCtxEnablePeerAccess);
    if (real == NULL)
        return CUDA_ERROR_NOT_INITIALIZED;
    SHIM_QUIET_SCOPE(); /* the driver's call: no signal (shim.h) */
    if (!shim_begin())
        return real(peerContext, Flags);
    CUresult r = peer_app_enable(peerContext, Flags, real);
    /* The shim's own links count against the peer limit: the program gets
     * the slot it would have had without them. */
    while (r == CUDA_ERROR_TOO_MANY_PEERS && link_life_make_room(current_ctx(), peerContext))
        r = peer_app_enable(peerContext, Flags, real);
    shim_end();
    return r;
}

P2PSHIM_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
    pfn_cuCtxDisablePeerAccess real = REAL(cuCtxDisablePeerAccess);
    if (real == NULL)
        return CUDA_ERROR_NOT_INITIALIZED;
    SHIM_QUIET_SCOPE(); /* the driver's call: no signal (shim.h) */
    if (!shim_begin())
        return real(peerContext);
    CUresult r = peer_app_disable(peerContext, real);
    shim_end();
    return r;
}

/* A primary context reset destroys its allocations and every peer link to
 * and from it: every module drops what it knows of that device (the
 * lifecycle rows' device_gone, shim.h). */
static void forget_device(int dev)
{
    if (shim_begin()) {
        shim_life_device_gone(dev);
        shim_end();
    }
}

/* Before a context may go, what the modules hold in it (the bounce
 * snapshots, the pool relay's buffers) is given back while the context
 * still works (before_ctx_gone, shim.h). ctx NULL: every context of dev (a
 * primary context's reset or last release). */
static void before_ctx_gone(CUcontext ctx, int dev)
{
    if (shim_begin()) {
        shim_life_before_ctx_gone(ctx, dev);
        shim_end();
    }
}

/* Releasing a primary context's last reference destroys it like a reset. */
static void forget_if_inactive(CUdevice dev)
{
    const struct driver_api *d = driver_api();
    unsigned int flags = 0;
    int active = 1;
    if (d->primary_ctx_get_state != NULL &&
        d->primary_ctx_get_state(dev, &flags, &active) == CUDA_SUCCESS && !active)
        forget_device((int)dev);
}

/* Reset and release, both variants of each: whatever the shim holds in the
 * device's contexts goes first (a release may be the last one: the shim
 * cannot see the count), what it knows of them after success. */
#define WRAP_PRIMARY(name, after)                                             \
    P2PSHIM_EXPORT CUresult name(CUdevice dev)                                \
    {                                                                         \
        pfn_##name real = REAL(name);                                         \
        if (real == NULL)                                                     \
            return CUDA_ERROR_NOT_INITIALIZED;                                \
        SHIM_QUIET_SCOPE(); /* the driver's call: no signal (shim.h) */       \
        before_ctx_gone(NULL, (int)dev);                                      \
        CUresult r = real(dev);                                               \
        if (r == CUDA_SUCCESS)                                                \
            after;                                                            \
        return r;                                                             \
    }

WRAP_PRIMARY(cuDevicePrimaryCtxReset, forget_device((int)dev))
WRAP_PRIMARY(cuDevicePrimaryCtxReset_v2, forget_device((int)dev))
WRAP_PRIMARY(cuDevicePrimaryCtxRelease, forget_if_inactive(dev))
WRAP_PRIMARY(cuDevicePrimaryCtxRelease_v2, forget_if_inactive(dev))

P2PSHIM_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    pfn_cuCtxDestroy_v2 real = REAL(cuCtxDestroy_v2);
    if (real == NULL)
        return CUDA_ERROR_NOT_INITIALIZED;
    SHIM_QUIET_SCOPE(); /* the driver's call: no signal (shim.h) */
    before_ctx_gone(ctx, -1);
    CUresult r = real(ctx);
    if (r == CUDA_SUCCESS && shim_begin()) {
        shim_life_ctx_gone(ctx);
        shim_end();
    }
    return r;
}
