/* Exported allocation wrappers: they feed the ownership table. The real
 * call always runs with the program's arguments; a record is added only
 * after it succeeded, and removed before a free (so a racing allocation of
 * the same address is never deleted by us; a stale record in between is
 * replaced by that allocation's own). */
#include <string.h>

#include "bounce/bounce.h"
#include "copy.h"
#include "driver.h"
#include "hooks.h"
#include "ownership.h"
#include "resolve.h"
#include "shim.h"

#define REAL_OR_FAIL(name)                                                    \
    pfn_##name real = REAL(name);                                             \
    if (real == NULL)                                                         \
        return CUDA_ERROR_NOT_INITIALIZED

static void record(uintptr_t base, size_t size, enum mem_kind kind, int device,
                   CUcontext ctx)
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
static void record_current(CUdeviceptr ptr, size_t size, enum mem_kind kind)
{
    const struct driver_api *d = driver_api();
    CUcontext ctx = NULL;
    CUdevice dev = -1;
    if (d->ctx_get_current == NULL || d->ctx_get_current(&ctx) != CUDA_SUCCESS ||
        d->ctx_get_device == NULL || d->ctx_get_device(&dev) != CUDA_SUCCESS)
        return; /* unknown: a later lookup asks the driver */
    record((uintptr_t)ptr, size, kind, (int)dev, ctx);
}

/* Stream-ordered allocations: the driver's view when it has one. */
static void record_pool(CUdeviceptr ptr, size_t size, CUstream stream, bool per_thread)
{
    struct owner_info info;
    if (resolve_from_driver(ptr, &info) && info.device >= 0) {
        record((uintptr_t)ptr, size, MEM_KIND_POOL, info.device, info.ctx);
        return;
    }
    CUcontext ctx = driver_stream_ctx(stream, per_thread);
    int dev = driver_ctx_device(ctx);
    if (dev >= 0)
        record((uintptr_t)ptr, size, MEM_KIND_POOL, dev, ctx);
}

/* The program's allocation on `dev` failed for lack of memory: if the shim
 * holds bounce snapshots there, it gives them back and the call is made
 * again, so the shim never makes an allocation fail. */
static bool oom_release_on(CUresult r, int dev)
{
    if (r != CUDA_ERROR_OUT_OF_MEMORY || dev < 0 || !bounce_active() || !shim_begin())
        return false;
    bool freed = bounce_release_device(dev);
    shim_end();
    return freed;
}

/* The same for an allocation on the current context's device. */
static bool oom_release(CUresult r)
{
    const struct driver_api *d = driver_api();
    CUdevice dev = -1;
    if (r != CUDA_ERROR_OUT_OF_MEMORY || d->ctx_get_device == NULL ||
        d->ctx_get_device(&dev) != CUDA_SUCCESS)
        return false;
    return oom_release_on(r, (int)dev);
}

/* The same for a stream-ordered allocation: on the stream's device. */
static bool oom_release_stream(CUresult r, CUstream s, bool per_thread)
{
    if (r != CUDA_ERROR_OUT_OF_MEMORY)
        return false;
    int dev = driver_ctx_device(driver_stream_ctx(s, per_thread));
    return dev >= 0 ? oom_release_on(r, dev) : oom_release(r);
}

P2PSHIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    REAL_OR_FAIL(cuMemAlloc_v2);
    CUresult r = real(dptr, bytesize);
    if (oom_release(r))
        r = real(dptr, bytesize);
    if (r == CUDA_SUCCESS && shim_begin()) {
        record_current(*dptr, bytesize, MEM_KIND_DEVICE);
        shim_end();
    }
    return r;
}

P2PSHIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
                                           size_t WidthInBytes, size_t Height,
                                           unsigned int ElementSizeBytes)
{
    REAL_OR_FAIL(cuMemAllocPitch_v2);
    CUresult r = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (oom_release(r))
        r = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (r == CUDA_SUCCESS && shim_begin()) {
        record_current(*dptr, *pPitch * Height, MEM_KIND_DEVICE);
        shim_end();
    }
    return r;
}

P2PSHIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
                                          unsigned int flags)
{
    REAL_OR_FAIL(cuMemAllocManaged);
    CUresult r = real(dptr, bytesize, flags);
    if (oom_release(r))
        r = real(dptr, bytesize, flags);
    if (r == CUDA_SUCCESS && shim_begin()) {
        record_current(*dptr, bytesize, MEM_KIND_MANAGED);
        shim_end();
    }
    return r;
}

/* Host memory the driver stops pinning (or frees): the snapshots over it
 * end first. */
static void host_gone(void *p)
{
    struct owner_info info;
    if (p != NULL && bounce_active() && shim_begin()) {
        if (ownership_lookup((uintptr_t)p, &info))
            bounce_host_release(p, info.size - ((uintptr_t)p - info.base));
        shim_end();
    }
}

static void forget(uintptr_t base)
{
    if (base != 0 && shim_begin()) {
        ownership_remove(base, NULL);
        shim_end();
    }
}

P2PSHIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    REAL_OR_FAIL(cuMemFree_v2);
    forget((uintptr_t)dptr);
    return real(dptr);
}

#define WRAP_ALLOC_ASYNC(name, pt)                                            \
    P2PSHIM_EXPORT CUresult name(CUdeviceptr *dptr, size_t bytesize, CUstream s) \
    {                                                                         \
        REAL_OR_FAIL(name);                                                   \
        CUresult r = real(dptr, bytesize, s);                                 \
        if (oom_release_stream(r, s, pt))                                     \
            r = real(dptr, bytesize, s);                                      \
        if (r == CUDA_SUCCESS && shim_begin()) {                              \
            record_pool(*dptr, bytesize, s, pt);                              \
            shim_end();                                                       \
        }                                                                     \
        return r;                                                             \
    }
WRAP_ALLOC_ASYNC(cuMemAllocAsync, false)
WRAP_ALLOC_ASYNC(cuMemAllocAsync_ptsz, true)

#define WRAP_ALLOC_POOL(name, pt)                                             \
    P2PSHIM_EXPORT CUresult name(CUdeviceptr *dptr, size_t bytesize,          \
                                 CUmemoryPool pool, CUstream s)               \
    {                                                                         \
        REAL_OR_FAIL(name);                                                   \
        CUresult r = real(dptr, bytesize, pool, s);                           \
        if (oom_release_stream(r, s, pt))                                     \
            r = real(dptr, bytesize, pool, s);                                \
        if (r == CUDA_SUCCESS && shim_begin()) {                              \
            record_pool(*dptr, bytesize, s, pt);                              \
            shim_end();                                                       \
        }                                                                     \
        return r;                                                             \
    }
WRAP_ALLOC_POOL(cuMemAllocFromPoolAsync, false)
WRAP_ALLOC_POOL(cuMemAllocFromPoolAsync_ptsz, true)

#define WRAP_FREE_ASYNC(name)                                                 \
    P2PSHIM_EXPORT CUresult name(CUdeviceptr dptr, CUstream s)                \
    {                                                                         \
        REAL_OR_FAIL(name);                                                   \
        forget((uintptr_t)dptr);                                              \
        return real(dptr, s);                                                 \
    }
WRAP_FREE_ASYNC(cuMemFreeAsync)
WRAP_FREE_ASYNC(cuMemFreeAsync_ptsz)

/* ---- host memory the driver pins ---- */
P2PSHIM_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    REAL_OR_FAIL(cuMemAllocHost_v2);
    CUresult r = real(pp, bytesize);
    if (r == CUDA_SUCCESS && shim_begin()) {
        record((uintptr_t)*pp, bytesize, MEM_KIND_HOST_PINNED, -1, NULL);
        shim_end();
    }
    return r;
}

P2PSHIM_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    REAL_OR_FAIL(cuMemHostAlloc);
    CUresult r = real(pp, bytesize, Flags);
    if (r == CUDA_SUCCESS && shim_begin()) {
        record((uintptr_t)*pp, bytesize, MEM_KIND_HOST_PINNED, -1, NULL);
        shim_end();
    }
    return r;
}

P2PSHIM_EXPORT CUresult cuMemFreeHost(void *p)
{
    REAL_OR_FAIL(cuMemFreeHost);
    host_gone(p);
    forget((uintptr_t)p);
    return real(p);
}

P2PSHIM_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    REAL_OR_FAIL(cuMemHostRegister_v2);
    /* Pinning reads every page in the driver: lazy ones are filled first,
     * and a snapshot cannot follow memory a GPU may then write unseen. */
    if (p != NULL && bounce_active() && shim_begin()) {
        bounce_host_keep(p, bytesize);
        shim_end();
    }
    CUresult r = real(p, bytesize, Flags);
    if (r == CUDA_SUCCESS && shim_begin()) {
        record((uintptr_t)p, bytesize, MEM_KIND_HOST_REGISTERED, -1, NULL);
        shim_end();
    }
    return r;
}

P2PSHIM_EXPORT CUresult cuMemHostUnregister(void *p)
{
    REAL_OR_FAIL(cuMemHostUnregister);
    host_gone(p);
    forget((uintptr_t)p);
    return real(p);
}

/* ---- virtual memory management ---- */
P2PSHIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                    const CUmemAllocationProp *prop,
                                    unsigned long long flags)
{
    REAL_OR_FAIL(cuMemCreate);
    CUresult r = real(handle, size, prop, flags);
    bool on_device = prop != NULL && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    if (oom_release_on(r, on_device ? prop->location.id : -1))
        r = real(handle, size, prop, flags);
    if (r == CUDA_SUCCESS && on_device && shim_begin()) {
        ownership_handle_add((uint64_t)*handle, prop->location.id);
        shim_end();
    }
    return r;
}

P2PSHIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    REAL_OR_FAIL(cuMemRelease);
    CUresult r = real(handle);
    if (r == CUDA_SUCCESS && shim_begin()) {
        ownership_handle_remove((uint64_t)handle);
        shim_end();
    }
    return r;
}

P2PSHIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                 CUmemGenericAllocationHandle handle,
                                 unsigned long long flags)
{
    REAL_OR_FAIL(cuMemMap);
    CUresult r = real(ptr, size, offset, handle, flags);
    int device;
    if (r == CUDA_SUCCESS && shim_begin()) {
        if (ownership_handle_lookup((uint64_t)handle, &device))
            record((uintptr_t)ptr, size, MEM_KIND_VMM, device, NULL);
        shim_end();
    }
    return r;
}

P2PSHIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    REAL_OR_FAIL(cuMemUnmap);
    if (shim_begin()) {
        ownership_remove_range((uintptr_t)ptr, size);
        shim_end();
    }
    return real(ptr, size);
}

/* Arrays take device memory too: the same retry, nothing recorded (no
 * copy the shim handles has an array end). */
P2PSHIM_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle,
                                         const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    REAL_OR_FAIL(cuArrayCreate_v2);
    CUresult r = real(pHandle, pAllocateArray);
    return oom_release(r) ? real(pHandle, pAllocateArray) : r;
}

P2PSHIM_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle,
                                           const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    REAL_OR_FAIL(cuArray3DCreate_v2);
    CUresult r = real(pHandle, pAllocateArray);
    return oom_release(r) ? real(pHandle, pAllocateArray) : r;
}

P2PSHIM_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                               const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                               unsigned int numMipmapLevels)
{
    REAL_OR_FAIL(cuMipmappedArrayCreate);
    CUresult r = real(pHandle, pMipmappedArrayDesc, numMipmapLevels);
    return oom_release(r) ? real(pHandle, pMipmappedArrayDesc, numMipmapLevels) : r;
}
