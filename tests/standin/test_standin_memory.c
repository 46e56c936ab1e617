/* Self-test of the stand-in, continued: the memory the driver knows
 * beyond plain device allocations (pointer queries on device, managed,
 * pinned and registered memory; pool memory and its access; VMM mappings
 * and theirs). */
#include "test_standin.h"

#include <stdint.h>
#include <stdlib.h>

void test_pointer_attributes(void)
{
    config("2", NULL, NULL, NULL);
    retain_all(2);
    OK(cuCtxSetCurrent(ctx[1]));
    CUdeviceptr d, m;
    void *h;
    OK(cuMemAlloc_v2(&d, 4096));
    OK(cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL));
    OK(cuMemAllocHost_v2(&h, 4096));
    CUcontext c = NULL;
    unsigned int type = 0, managed = 9, mapped = 0;
    int ord = -1;
    CUdeviceptr start = 0;
    size_t size = 0;
    void *hp = (void *)1;
    CUmemoryPool pool = (CUmemoryPool)(uintptr_t)1;
    OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, d + 100));
    CHECK(c == ctx[1]);
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
    CHECK(type == CU_MEMORYTYPE_DEVICE);
    OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, d));
    CHECK(managed == 0);
    OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 100));
    OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 100));
    CHECK(start == d && size == 4096);
    OK(cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, d));
    CHECK(mapped == 1);
    EXPECT(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, d), CUDA_ERROR_INVALID_VALUE);
    OK(cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, d));
    CHECK(pool == NULL);
    OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m));
    CHECK(managed == 1);
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)h));
    CHECK(type == CU_MEMORYTYPE_HOST);
    OK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, (CUdeviceptr)(uintptr_t)h));
    CHECK(hp == h);
    CHECK(standin_device_of((CUdeviceptr)(uintptr_t)h) == -1 && standin_device_of(m) == -1);

    char *plain = malloc(256);
    CUdeviceptr pp = (CUdeviceptr)(uintptr_t)plain;
    EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pp), CUDA_ERROR_INVALID_VALUE);
    CUpointer_attribute at[] = {CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                CU_POINTER_ATTRIBUTE_IS_MANAGED};
    c = ctx[0];
    type = 7;
    size = 7;
    managed = 7;
    void *data[] = {&c, &type, &ord, &size, &managed};
    OK(cuPointerGetAttributes(5, at, data, pp));
    CHECK(c == NULL && type == 0 && ord == -2 && size == 0 && managed == 0);
    OK(cuPointerGetAttributes(5, at, data, d + 1));
    CHECK(c == ctx[1] && type == CU_MEMORYTYPE_DEVICE && ord == 1 && size == 4096);

    OK(cuMemHostRegister_v2(plain, 256, 0));
    EXPECT(cuMemHostRegister_v2(plain + 8, 16, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pp + 8));
    CHECK(type == CU_MEMORYTYPE_HOST);
    OK(cuMemHostUnregister(plain));
    EXPECT(cuMemHostUnregister(plain), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    free(plain);
    OK(cuMemFreeHost(h));
    EXPECT(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree_v2(m));
    OK(cuMemFree_v2(d));
}

/* Pool memory: ctx peer access does not cover it; pool access does. With
 * only 1 -> 0 enabled, device 1 maps device 0's ordinary memory but not its
 * pool memory, so a pool(0) -> device(1) copy is staged. */
void test_pools(void)
{
    config("2", NULL, NULL, NULL);
    retain_all(2);
    const size_t n = 8192;
    CUdeviceptr b = alloc_on(1, n, 0);
    OK(cuCtxEnablePeerAccess(ctx[0], 0));          /* 1 -> 0, ctx level */
    OK(cuCtxSetCurrent(ctx[0]));
    CUstream s;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    OK(cuMemAllocAsync(&p, n, s));
    CHECK(standin_device_of(p) == 0);
    CUmemoryPool pool, got = NULL;
    OK(cuDeviceGetDefaultMemPool(&pool, 0));
    OK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
    CHECK(got == pool);
    OK(cuMemsetD8Async(p, 0x5a, n, s));
    standin_reset_stats();
    OK(cuMemcpyAsync(b, p, n, s));
    struct standin_stats st = stats();
    CHECK(st.staged_copies == 1 && st.peer_copies == 0);
    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
    CUmemAccess_flags fl = 99;
    OK(cuMemPoolGetAccess(&fl, pool, &loc));
    CHECK(fl == CU_MEM_ACCESS_FLAGS_PROT_NONE);
    CUmemAccessDesc desc = {{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    OK(cuMemPoolSetAccess(pool, &desc, 1));
    OK(cuMemPoolGetAccess(&fl, pool, &loc));
    CHECK(fl == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    OK(cuMemcpyAsync(b, p, n, s));
    st = stats();
    CHECK(st.peer_copies == 1 && st.staged_copies == 1);
    OK(cuStreamSynchronize(s));
    CHECK(all_bytes(b, 0x5a, n));
    OK(cuMemFreeAsync(p, s));
    EXPECT(cuMemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE);
    OK(cuStreamDestroy_v2(s));
    EXPECT(cuStreamDestroy_v2(s), CUDA_ERROR_INVALID_HANDLE);
}

/* VMM: mapped memory of device 1 is peer-reachable from device 0 only
 * once cuMemSetAccess grants device 0. */
void test_vmm(void)
{
    config("2", NULL, NULL, NULL);
    retain_all(2);
    const size_t g = (size_t)2 << 20;
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 1;
    size_t gran = 0;
    OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK(gran == g);
    CUdeviceptr va;
    CUmemGenericAllocationHandle hdl;
    OK(cuMemAddressReserve(&va, 2 * g, 0, 0, 0));
    OK(cuMemCreate(&hdl, g, &prop, 0));
    EXPECT(cuMemCreate(&hdl, g + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemMap(va, g, 0, hdl, 0));
    OK(cuMemMap(va + g, g, 0, hdl, 0));            /* the same pages twice */
    OK(cuMemRelease(hdl));                         /* lives on while mapped */
    CUmemAccessDesc d1 = {{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    OK(cuMemSetAccess(va, 2 * g, &d1, 1));
    CHECK(standin_device_of(va) == 1 && standin_device_of(va + g + 5) == 1);
    CUdeviceptr a = alloc_on(0, 4096, 0x77);
    standin_reset_stats();
    OK(cuMemcpyDtoD_v2(va, a, 4096));
    struct standin_stats s = stats();
    CHECK(s.staged_copies == 1);
    CUmemAccessDesc d0 = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    OK(cuMemSetAccess(va, g, &d0, 1));
    unsigned long long fl = 0;
    CUmemLocation l0 = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    OK(cuMemGetAccess(&fl, &l0, va));
    CHECK(fl == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    OK(cuMemcpyDtoD_v2(va + 100, a, 4096));
    s = stats();
    CHECK(s.peer_copies == 1 && s.staged_copies == 1);
    CHECK(all_bytes(va + g, 0x77, 4096));          /* seen through the second mapping */
    size_t rsize = 0;
    OK(cuPointerGetAttribute(&rsize, CU_POINTER_ATTRIBUTE_RANGE_SIZE, va + g));
    CHECK(rsize == 2 * g);
    OK(cuMemUnmap(va, g));
    EXPECT(cuMemcpyDtoD_v2(va, a, 16), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemUnmap(va + g, g));
    OK(cuMemAddressFree(va, 2 * g));
}

/* VMM: a copy over two mappings of device 1 that lie end to end (two
 * allocations, as a ggml pool that grew) is one copy; peer only once both
 * mappings grant device 0; refused over a hole, as over an unmapped seam. */
void test_vmm_span(void)
{
    config("2", NULL, NULL, NULL);
    retain_all(2);
    const size_t g = (size_t)2 << 20, n = 8192;
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 1;
    CUdeviceptr va;
    CUmemGenericAllocationHandle h[2];
    OK(cuMemAddressReserve(&va, 3 * g, 0, 0, 0));
    for (int i = 0; i < 2; i++) {
        OK(cuMemCreate(&h[i], g, &prop, 0));
        OK(cuMemMap(va + (size_t)i * g, g, 0, h[i], 0));
        OK(cuMemRelease(h[i]));
    }
    CUmemAccessDesc d1 = {{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    OK(cuMemSetAccess(va, 2 * g, &d1, 1));
    CUdeviceptr a = alloc_on(0, n, 0x3c), seam = va + g - n / 2;
    CUmemAccessDesc d0 = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    for (int granted = 0; granted <= 2; granted++) {
        if (granted > 0)
            OK(cuMemSetAccess(va + (size_t)(granted - 1) * g, g, &d0, 1));
        standin_reset_stats();
        OK(cuMemcpyDtoD_v2(seam, a, n));
        struct standin_stats s = stats();
        CHECK(s.peer_copies == (granted == 2) && s.staged_copies == (granted < 2));
    }
    CHECK(all_bytes(seam, 0x3c, n));
    EXPECT(cuMemcpyDtoD_v2(va + 2 * g - n / 2, a, n), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemUnmap(va + g, g));
    EXPECT(cuMemcpyDtoD_v2(seam, a, n), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemcpyDtoD_v2(va + g - n, a, n));
    OK(cuMemUnmap(va, g));
    OK(cuMemAddressFree(va, 3 * g));
}
