#include "alloc_policy.h"

#include <string.h>

#include "bounce/bounce.h"
#include "copy.h"
#include "driver.h"
#include "owner_lookup.h"
#include "shim.h"

void alloc_track(uintptr_t base, size_t size, enum mem_kind kind, int device, CUcontext ctx)
{
    struct owner_info info;
    memset(&info, 0, sizeof info);
    info.base = base;
    info.size = size;
    info.kind = kind;
    info.device = device;
    info.ctx = ctx;
    ownership_add(&info);
}

/* Device memory just allocated in the current context. */
void alloc_track_current(CUdeviceptr ptr, size_t size, enum mem_kind kind)
{
    const struct driver_api *d = driver_api();
    CUcontext ctx = NULL;
    CUdevice dev = -1;
    if (d->ctx_get_current == NULL || d->ctx_get_current(&ctx) != CUDA_SUCCESS ||
        d->ctx_get_device == NULL || d->ctx_get_device(&dev) != CUDA_SUCCESS)
        return; /* unknown: a later lookup asks the driver */
    alloc_track((uintptr_t)ptr, size, kind, (int)dev, ctx);
}

/* Stream-ordered allocations: the driver's view when it has one. */
void alloc_track_pool(CUdeviceptr ptr, size_t size, CUstream stream, bool per_thread)
{
    struct owner_info info;
    if (resolve_from_driver(ptr, &info) && info.device >= 0) {
        alloc_track((uintptr_t)ptr, size, MEM_KIND_POOL, info.device, info.ctx);
        return;
    }
    CUcontext ctx = driver_stream_ctx(stream, per_thread);
    int dev = driver_ctx_device(ctx);
    if (dev >= 0)
        alloc_track((uintptr_t)ptr, size, MEM_KIND_POOL, dev, ctx);
}

/* The program's allocation on `dev` failed for lack of memory: if the shim
 * holds bounce snapshots there, it gives them back and the call is made
 * again, so the shim never makes an allocation fail. */
bool alloc_oom_release_on(CUresult r, int dev)
{
    if (r != CUDA_ERROR_OUT_OF_MEMORY || dev < 0 || !bounce_active() || !shim_begin())
        return false;
    bool freed = bounce_release_device(dev);
    shim_end();
    return freed;
}

/* The same for an allocation on the current context's device. */
bool alloc_oom_release(CUresult r)
{
    const struct driver_api *d = driver_api();
    CUdevice dev = -1;
    if (r != CUDA_ERROR_OUT_OF_MEMORY || d->ctx_get_device == NULL ||
        d->ctx_get_device(&dev) != CUDA_SUCCESS)
        return false;
    return alloc_oom_release_on(r, (int)dev);
}

/* The same for a stream-ordered allocation: on the stream's device. */
bool alloc_oom_release_stream(CUresult r, CUstream s, bool per_thread)
{
    if (r != CUDA_ERROR_OUT_OF_MEMORY)
        return false;
    int dev = driver_ctx_device(driver_stream_ctx(s, per_thread));
    return dev >= 0 ? alloc_oom_release_on(r, dev) : alloc_oom_release(r);
}

/* Host memory the driver stops pinning (or frees): the snapshots over it
 * end first. */
void alloc_host_gone(void *p)
{
    struct owner_info info;
    if (p != NULL && bounce_active() && shim_begin()) {
        if (ownership_lookup((uintptr_t)p, &info))
            bounce_host_release(p, info.size - ((uintptr_t)p - info.base));
        shim_end();
    }
}

void alloc_forget(uintptr_t base)
{
    if (base != 0 && shim_begin()) {
        ownership_remove(base, NULL);
        shim_end();
    }
}
