/* A small program for the runs under profilers and sanitizers
 * (under_tool.sh): a kernel writes a pattern, then H2D, D2H and same-GPU
 * D2D copies (synchronous and on a stream), a same-GPU bounce (D2H into a
 * host buffer, H2D from it to another buffer of the same GPU), a copy
 * through a driver entry point fetched with cudaGetDriverEntryPointByVersion,
 * and,
 * with two GPUs, cross-GPU copies (cudaMemcpyPeer, a unified D2D and a
 * cross-GPU bounce); with one GPU those are skipped and say so. Everything
 * is freed before exit. Prints one checksum per copy: the transcript must
 * be the same with and without the shim and the tool. */
#include <cuda.h>
#include <stdint.h>
#include <string.h>

#include "gpu_test.h"

#define N ((size_t)4 << 20)

__global__ void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned char)(i * 131 + seed + (i >> 12));
}

static uint64_t fnv(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Reads dev buffer d of device dev back and prints its checksum. */
static void show(const char *what, int dev, const void *d, unsigned char *host)
{
    GT_CHECK(cudaSetDevice(dev));
    memset(host, 0, N);
    GT_CHECK(cudaMemcpy(host, d, N, cudaMemcpyDeviceToHost));
    printf("%-28s %016llx\n", what, (unsigned long long)fnv(host, N));
}

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("no GPU: skipped\n");
        return GT_SKIP;
    }
    unsigned char *host, *bounce;
    unsigned char *a, *b, *c;
    cudaStream_t s;
    GT_CHECK(cudaSetDevice(0));
    GT_CHECK(cudaMallocHost((void **)&host, N));
    bounce = (unsigned char *)malloc(N);
    if (bounce == NULL)
        return 1;
    GT_CHECK(cudaMalloc((void **)&a, N));
    GT_CHECK(cudaMalloc((void **)&b, N));
    GT_CHECK(cudaMalloc((void **)&c, N));
    GT_CHECK(cudaStreamCreate(&s));

    fill<<<64, 256>>>(a, N, 7);
    GT_CHECK(cudaGetLastError());
    GT_CHECK(cudaDeviceSynchronize());
    show("kernel", 0, a, host);
    GT_CHECK(cudaMemcpy(b, a, N, cudaMemcpyDeviceToDevice));
    show("d2d same-gpu", 0, b, host);
    GT_CHECK(cudaMemcpyAsync(c, b, N, cudaMemcpyDeviceToDevice, s));
    GT_CHECK(cudaStreamSynchronize(s));
    show("d2d async same-gpu", 0, c, host);
    for (size_t i = 0; i < N; i++)
        host[i] = (unsigned char)(i * 7 + 3);
    GT_CHECK(cudaMemcpy(b, host, N, cudaMemcpyHostToDevice));
    show("h2d", 0, b, host);
    /* same-GPU bounce: through pageable host memory, untouched between */
    GT_CHECK(cudaMemcpy(bounce, a, N, cudaMemcpyDeviceToHost));
    GT_CHECK(cudaMemcpy(c, bounce, N, cudaMemcpyHostToDevice));
    show("bounce same-gpu", 0, c, host);

    /* a driver entry point, as CUTLASS and CCCL fetch it (ends in cuGetProcAddress) */
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q;
    GT_CHECK(cudaGetDriverEntryPointByVersion("cuMemcpyDtoH", &fn, 12000, cudaEnableDefault, &q));
    CUresult (*dtoh)(void *, CUdeviceptr, size_t) = (CUresult(*)(void *, CUdeviceptr, size_t))fn;
    memset(host, 0, N);
    if (dtoh == NULL || dtoh(host, (CUdeviceptr)a, N) != CUDA_SUCCESS)
        return 1;
    printf("%-28s %016llx\n", "entry point cuMemcpyDtoH", (unsigned long long)fnv(host, N));

    if (ndev < 2) {
        printf("cross-gpu copies: skipped (1 GPU)\n");
    } else {
        unsigned char *r, *r2;
        GT_CHECK(cudaSetDevice(1));
        GT_CHECK(cudaMalloc((void **)&r, N));
        GT_CHECK(cudaMalloc((void **)&r2, N));
        GT_CHECK(cudaMemcpyPeer(r, 1, a, 0, N));
        show("peer 0->1", 1, r, host);
        GT_CHECK(cudaMemcpy(r2, a, N, cudaMemcpyDeviceToDevice));
        show("unified d2d 0->1", 1, r2, host);
        GT_CHECK(cudaSetDevice(0));
        GT_CHECK(cudaMemcpy(bounce, c, N, cudaMemcpyDeviceToHost));
        GT_CHECK(cudaSetDevice(1));
        GT_CHECK(cudaMemcpy(r, bounce, N, cudaMemcpyHostToDevice));
        show("bounce 0->1", 1, r, host);
        GT_CHECK(cudaFree(r));
        GT_CHECK(cudaFree(r2));
    }
    GT_CHECK(cudaSetDevice(0));
    GT_CHECK(cudaStreamDestroy(s));
    GT_CHECK(cudaFree(a));
    GT_CHECK(cudaFree(b));
    GT_CHECK(cudaFree(c));
    GT_CHECK(cudaFreeHost(host));
    free(bounce);
    printf("done\n");
    return 0;
}
