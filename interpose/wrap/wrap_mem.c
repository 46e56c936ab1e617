/* Exported allocation wrappers: the real call with the program's
 * arguments, then the allocation policy (alloc_policy.h): a retry after an
 * out-of-memory answer, the ownership table kept. */
#include "alloc_policy.h"
#include "bounce/bounce.h"
#include "copy.h"
#include "driver.h"
#include "hooks.h"
#include "own_device.h"
#include "ownership.h"
#include "owner_lookup.h"
#include "shim.h"
#include "vmm_alias.h"

#define REAL_OR_FAIL(name)                                                    \
    pfn_##name real = REAL(name);                                             \
    if (real == NULL)                                                         \
        return CUDA_ERROR_NOT_INITIALIZED;                                    \
    SHIM_QUIET_SCOPE() /* the driver's call: no signal (shim.h) */

P2PSHIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    REAL_OR_FAIL(cuMemAlloc_v2);
    CUresult r = real(dptr, bytesize);
    if (alloc_oom_release(r))
        r = real(dptr, bytesize);
    if (r == CUDA_SUCCESS && shim_begin()) {
        alloc_track_current(*dptr, bytesize, MEM_KIND_DEVICE);
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
    if (alloc_oom_release(r))
        r = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (r == CUDA_SUCCESS && shim_begin()) {
        alloc_track_current(*dptr, *pPitch * Height, MEM_KIND_DEVICE);
        shim_end();
    }
    return r;
}

P2PSHIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
                                          unsigned int flags)
{
    REAL_OR_FAIL(cuMemAllocManaged);
    CUresult r = real(dptr, bytesize, flags);
    if (alloc_oom_release(r))
        r = real(dptr, bytesize, flags);
    if (r == CUDA_SUCCESS && shim_begin()) {
        alloc_track_current(*dptr, bytesize, MEM_KIND_MANAGED);
        shim_end();
    }
    return r;
}

/* A free of a stale pointer that now lies in the shim's own device memory
 * gets the driver's answer to a freed one (own_device.h), and frees
 * nothing of the shim's. */
P2PSHIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    REAL_OR_FAIL(cuMemFree_v2);
    if (own_device_overlaps(dptr, 1))
        return CUDA_ERROR_INVALID_VALUE;
    alloc_forget((uintptr_t)dptr);
    return real(dptr);
}

#define WRAP_ALLOC_ASYNC(name)                                                \
    P2PSHIM_EXPORT CUresult name(CUdeviceptr *dptr, size_t bytesize, CUstream s) \
    {                                                                         \
        REAL_OR_FAIL(name);                                                   \
        const bool pt = HOOK_PER_THREAD_##name;                               \
        CUresult r = real(dptr, bytesize, s);                                 \
        if (alloc_oom_release_stream(r, s, pt))                               \
            r = real(dptr, bytesize, s);                                      \
        if (r == CUDA_SUCCESS && shim_begin()) {                              \
            alloc_track_pool(*dptr, bytesize, s, pt);                         \
            shim_end();                                                       \
        }                                                                     \
        return r;                                                             \
    }
WRAP_ALLOC_ASYNC(cuMemAllocAsync)
WRAP_ALLOC_ASYNC(cuMemAllocAsync_ptsz)

#define WRAP_ALLOC_POOL(name)                                                 \
    P2PSHIM_EXPORT CUresult name(CUdeviceptr *dptr, size_t bytesize,          \
                                 CUmemoryPool pool, CUstream s)               \
    {                                                                         \
        REAL_OR_FAIL(name);                                                   \
        const bool pt = HOOK_PER_THREAD_##name;                               \
        CUresult r = real(dptr, bytesize, pool, s);                           \
        if (alloc_oom_release_stream(r, s, pt))                               \
            r = real(dptr, bytesize, pool, s);                                \
        if (r == CUDA_SUCCESS && shim_begin()) {                              \
            alloc_track_pool(*dptr, bytesize, s, pt);                         \
            shim_end();                                                       \
        }                                                                     \
        return r;                                                             \
    }
WRAP_ALLOC_POOL(cuMemAllocFromPoolAsync)
WRAP_ALLOC_POOL(cuMemAllocFromPoolAsync_ptsz)

#define WRAP_FREE_ASYNC(name)                                                 \
    P2PSHIM_EXPORT CUresult name(CUdeviceptr dptr, CUstream s)                \
    {                                                                         \
        REAL_OR_FAIL(name);                                                   \
        alloc_forget((uintptr_t)dptr);                                        \
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
        alloc_track((uintptr_t)*pp, bytesize, MEM_KIND_HOST_PINNED, -1, NULL);
        shim_end();
    }
    return r;
}

P2PSHIM_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    REAL_OR_FAIL(cuMemHostAlloc);
    CUresult r = real(pp, bytesize, Flags);
    if (r == CUDA_SUCCESS && shim_begin()) {
        alloc_track((uintptr_t)*pp, bytesize, MEM_KIND_HOST_PINNED, -1, NULL);
        shim_end();
    }
    return r;
}

P2PSHIM_EXPORT CUresult cuMemFreeHost(void *p)
{
    REAL_OR_FAIL(cuMemFreeHost);
    alloc_host_gone(p);
    alloc_forget((uintptr_t)p);
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
        alloc_track((uintptr_t)p, bytesize, MEM_KIND_HOST_REGISTERED, -1, NULL);
        shim_end();
    }
    return r;
}

P2PSHIM_EXPORT CUresult cuMemHostUnregister(void *p)
{
    REAL_OR_FAIL(cuMemHostUnregister);
    alloc_host_gone(p);
    alloc_forget((uintptr_t)p);
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
    if (alloc_oom_release_on(r, on_device ? prop->location.id : -1))
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
        if (ownership_handle_lookup((uint64_t)handle, &device)) {
            alloc_track((uintptr_t)ptr, size, MEM_KIND_VMM, device, NULL);
            vmm_alias_note_map((uintptr_t)ptr, size, offset, device);
        }
        shim_end();
    }
    return r;
}

/* The shim's aliases of the range go once the driver has unmapped it (a
 * refused unmap leaves the program's mapping, and so the alias, alive). */
P2PSHIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    REAL_OR_FAIL(cuMemUnmap);
    if (shim_begin()) {
        ownership_remove_range((uintptr_t)ptr, size);
        shim_end();
    }
    CUresult r = real(ptr, size);
    if (r == CUDA_SUCCESS && shim_begin()) {
        vmm_alias_note_unmap((uintptr_t)ptr, size);
        shim_end();
    }
    return r;
}

/* Freeing a reservation ends whatever is still mapped in it. */
P2PSHIM_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    REAL_OR_FAIL(cuMemAddressFree);
    CUresult r = real(ptr, size);
    if (r == CUDA_SUCCESS && shim_begin()) {
        ownership_remove_range((uintptr_t)ptr, size);
        vmm_alias_note_unmap((uintptr_t)ptr, size);
        shim_end();
    }
    return r;
}

/* Arrays take device memory too: the same retry, nothing recorded (no
 * copy the shim handles has an array end). */
P2PSHIM_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle,
                                         const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    REAL_OR_FAIL(cuArrayCreate_v2);
    CUresult r = real(pHandle, pAllocateArray);
    return alloc_oom_release(r) ? real(pHandle, pAllocateArray) : r;
}

P2PSHIM_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle,
                                           const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    REAL_OR_FAIL(cuArray3DCreate_v2);
    CUresult r = real(pHandle, pAllocateArray);
    return alloc_oom_release(r) ? real(pHandle, pAllocateArray) : r;
}

P2PSHIM_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                               const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                               unsigned int numMipmapLevels)
{
    REAL_OR_FAIL(cuMipmappedArrayCreate);
    CUresult r = real(pHandle, pMipmappedArrayDesc, numMipmapLevels);
    return alloc_oom_release(r) ? real(pHandle, pMipmappedArrayDesc, numMipmapLevels) : r;
}
