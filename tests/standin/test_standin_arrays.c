/* The stand-in's CUDA arrays: descriptors checked, storage counted in
 * cuMemGetInfo and bounded by the arena, handles invalid once destroyed
 * (or once their context is), and no pointer lookup finding their storage. */
#include <stdio.h>

#include "test_standin.h"

static size_t free_now(void)
{
    size_t f = 0, t = 0;
    OK(cuMemGetInfo_v2(&f, &t));
    return f;
}

void test_arrays(void)
{
    config("2", NULL, NULL, NULL);
    retain_all(2);
    OK(cuCtxSetCurrent(ctx[0]));
    size_t before = free_now();
    CUDA_ARRAY_DESCRIPTOR d = {.Width = 1024, .Height = 1024,
                               .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    CUarray a = NULL, b = NULL;
    OK(cuArrayCreate_v2(&a, &d));
    CHECK(before - free_now() >= (size_t)16 << 20);          /* 1024 x 1024 x 16 bytes */
    EXPECT(cuArrayCreate_v2(NULL, &d), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuArrayCreate_v2(&b, NULL), CUDA_ERROR_INVALID_VALUE);
    d.NumChannels = 3;
    EXPECT(cuArrayCreate_v2(&b, &d), CUDA_ERROR_INVALID_VALUE);
    d.NumChannels = 1;
    d.Width = 0;
    EXPECT(cuArrayCreate_v2(&b, &d), CUDA_ERROR_INVALID_VALUE);
    d.Width = 1 << 20;
    d.Height = 1 << 10;                                       /* 4 GiB: more than the arena */
    EXPECT(cuArrayCreate_v2(&b, &d), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuArrayDestroy(a));
    CHECK(free_now() == before);
    EXPECT(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);     /* twice */
    EXPECT(cuArrayDestroy((CUarray)&d), CUDA_ERROR_INVALID_HANDLE); /* foreign */

    /* 3D: Height 0 with a Depth is refused; storage is not a device pointer. */
    CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 256, .Height = 0, .Depth = 4,
                                  .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    EXPECT(cuArray3DCreate_v2(&a, &d3), CUDA_ERROR_INVALID_VALUE);
    d3.Height = 256;
    OK(cuArray3DCreate_v2(&a, &d3));
    CUdeviceptr p = alloc_on(0, 64, 0);
    unsigned type = 0;
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    OK(cuMemFree_v2(p));
    CHECK(free_now() < before);
    OK(cuArrayDestroy(a));

    /* Mipmapped: levels 64x64, 32x32, ... 1x1 (7); an eighth is refused. */
    CUDA_ARRAY3D_DESCRIPTOR m = {.Width = 64, .Height = 64,
                                 .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    CUmipmappedArray mm = NULL;
    EXPECT(cuMipmappedArrayCreate(&mm, &m, 8), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMipmappedArrayCreate(&mm, &m, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cuMipmappedArrayCreate(&mm, &m, 7));
    EXPECT(cuArrayDestroy((CUarray)mm), CUDA_ERROR_INVALID_HANDLE); /* the wrong kind */
    OK(cuMipmappedArrayDestroy(mm));
    CHECK(free_now() == before);

    /* A context's destruction frees its arrays: the handle is then invalid. */
    CUcontext own;
    OK(cuCtxCreate_v2(&own, 0, 1));
    OK(cuArrayCreate_v2(&a, &(CUDA_ARRAY_DESCRIPTOR){.Width = 4096, .Height = 4,
                                                     .Format = CU_AD_FORMAT_HALF,
                                                     .NumChannels = 2}));
    OK(cuCtxDestroy_v2(own));
    OK(cuCtxSetCurrent(ctx[1]));
    EXPECT(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
}
