// direction_probe: which peer-access direction does the copy engine need?
// For a cross-GPU copy in each direction, issued on a stream of the source
// or of the destination device, with peer access enabled only 0->1, only
// 1->0, or not at all, it measures the bandwidth of 64 MiB
// cudaMemcpyPeerAsync copies. The shim enables one direction per pair
// (route.h) because of what this prints. Run WITHOUT the shim.
#include <cstdio>
#include <cuda_runtime.h>
#include "../bench_check.h"

static int set_access(int from, int to, bool on)
{
    CHECK_CUDA(cudaSetDevice(from));
    cudaError_t e = on ? cudaDeviceEnablePeerAccess(to, 0) : cudaDeviceDisablePeerAccess(to);
    if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled &&
        e != cudaErrorPeerAccessNotEnabled) {
        fprintf(stderr, "peer access %d->%d: %s\n", from, to, cudaGetErrorString(e));
        return 1;
    }
    cudaGetLastError();
    return 0;
}

int main()
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 2) {
        printf("direction_probe: needs two GPUs\n");
        return 77;
    }
    const size_t bytes = 64u << 20;
    void *buf[2];
    cudaStream_t stream[2];
    cudaEvent_t start[2], stop[2];
    for (int d = 0; d < 2; d++) {
        CHECK_CUDA(cudaSetDevice(d));
        CHECK_CUDA(cudaMalloc(&buf[d], bytes));
        CHECK_CUDA(cudaMemset(buf[d], d, bytes));
        CHECK_CUDA(cudaStreamCreate(&stream[d]));
        CHECK_CUDA(cudaEventCreate(&start[d]));
        CHECK_CUDA(cudaEventCreate(&stop[d]));
    }
    const char *modes[3] = {"none", "0->1 only", "1->0 only"};
    printf("%-10s %-6s %-13s %10s\n", "copy", "stream", "enabled", "GB/s");
    for (int mode = 0; mode < 3; mode++) {
        if (set_access(0, 1, mode == 1) || set_access(1, 0, mode == 2))
            return 1;
        for (int src = 0; src < 2; src++) {
            int dst = 1 - src;
            for (int on = 0; on < 2; on++) {
                int sd = on == 0 ? src : dst;
                CHECK_CUDA(cudaSetDevice(sd));
                for (int w = 0; w < 3; w++)
                    CHECK_CUDA(cudaMemcpyPeerAsync(buf[dst], dst, buf[src], src, bytes, stream[sd]));
                const int reps = 20;
                CHECK_CUDA(cudaEventRecord(start[sd], stream[sd]));
                for (int r = 0; r < reps; r++)
                    CHECK_CUDA(cudaMemcpyPeerAsync(buf[dst], dst, buf[src], src, bytes, stream[sd]));
                CHECK_CUDA(cudaEventRecord(stop[sd], stream[sd]));
                CHECK_CUDA(cudaEventSynchronize(stop[sd]));
                float ms = 0;
                CHECK_CUDA(cudaEventElapsedTime(&ms, start[sd], stop[sd]));
                printf("%d->%d       %-6s %-13s %10.1f\n", src, dst, sd == src ? "src" : "dst",
                       modes[mode], (double)bytes * reps / (ms * 1e-3) / 1e9);
            }
        }
    }
    return 0;
}
