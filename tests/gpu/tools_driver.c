/* The driver-API program for the runs under profilers and sanitizers
 * (under_tool.sh): linked with libcuda, no runtime. H2D, same-GPU D2D
 * (synchronous and async), D2H, and with two GPUs cuMemcpyPeer and a
 * unified cross-GPU cuMemcpyDtoD; frees everything and releases its
 * contexts. Prints one checksum per copy. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P2PSHIM_CHECK_CU
#include "check.h"

#define N ((size_t)4 << 20)

static uint64_t fnv(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void show(const char *what, CUcontext ctx, CUdeviceptr d, unsigned char *host)
{
    CHECK_CU(cuCtxSetCurrent(ctx));
    memset(host, 0, N);
    CHECK_CU(cuMemcpyDtoH(host, d, N));
    printf("%-22s %016llx\n", what, (unsigned long long)fnv(host, N));
}

int main(void)
{
    int ndev = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&ndev) != CUDA_SUCCESS || ndev < 1) {
        printf("no GPU: skipped\n");
        return 77;
    }
    CUcontext c0, c1 = NULL;
    CUdeviceptr a, b, r = 0;
    CUstream s;
    unsigned char *host = malloc(N);
    if (host == NULL)
        return 1;
    for (size_t i = 0; i < N; i++)
        host[i] = (unsigned char)(i * 13 + (i >> 10));
    CHECK_CU(cuDevicePrimaryCtxRetain(&c0, 0));
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuMemAlloc(&a, N));
    CHECK_CU(cuMemAlloc(&b, N));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemcpyHtoD(a, host, N));
    show("h2d", c0, a, host);
    CHECK_CU(cuMemcpyDtoD(b, a, N));
    show("d2d same-gpu", c0, b, host);
    CHECK_CU(cuMemsetD8(b, 0, N));
    /* s is non-blocking: nothing orders it after the legacy stream's
     * memset but this. */
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemcpyDtoDAsync(b, a, N, s));
    CHECK_CU(cuStreamSynchronize(s));
    show("d2d async same-gpu", c0, b, host);
    if (ndev < 2) {
        printf("cross-gpu copies: skipped (1 GPU)\n");
    } else {
        CHECK_CU(cuDevicePrimaryCtxRetain(&c1, 1));
        CHECK_CU(cuCtxSetCurrent(c1));
        CHECK_CU(cuMemAlloc(&r, N));
        CHECK_CU(cuMemcpyPeer(r, c1, a, c0, N));
        show("peer 0->1", c1, r, host);
        CHECK_CU(cuMemsetD8(r, 0, N));
        CHECK_CU(cuMemcpyDtoD(r, b, N));
        show("unified d2d 0->1", c1, r, host);
        CHECK_CU(cuMemFree(r));
        CHECK_CU(cuDevicePrimaryCtxRelease(1));
    }
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
    free(host);
    printf("done\n");
    return 0;
}
