/* Small helpers shared by the GPU test programs (CUDA C, host side). */
#ifndef P2PSHIM_TESTS_GPU_TEST_H
#define P2PSHIM_TESTS_GPU_TEST_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

/* CTest's SKIP_RETURN_CODE for every GPU test. */
#define GT_SKIP 77

#ifndef P2PSHIM_CUDART
#define P2PSHIM_CUDART "unknown"   /* set by CMake: static or shared */
#endif

/* The default stream this program was built for, as an explicit handle.
 * Pass it to the kernels library (compiled once, in legacy mode, where a
 * literal 0 would mean the legacy stream whatever the caller's mode). */
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#define GT_STREAM_MODE "per-thread"
#define GT_STREAM cudaStreamPerThread
#else
#define GT_STREAM_MODE "legacy"
#define GT_STREAM cudaStreamLegacy
#endif

static inline void gt_die(const char *file, int line, const char *what, cudaError_t e)
{
    fprintf(stderr, "FAIL %s:%d: %s returned %s (%d): %s\n", file, line, what,
            cudaGetErrorName(e), (int)e, cudaGetErrorString(e));
    exit(1);
}

/* Any error is fatal, with the call's text, file and line. */
#define GT_CHECK(call)                                                        \
    do {                                                                      \
        cudaError_t gt_e_ = (call);                                           \
        if (gt_e_ != cudaSuccess)                                             \
            gt_die(__FILE__, __LINE__, #call, gt_e_);                         \
    } while (0)

/* Exits with GT_SKIP when there is no driver, no GPU, or fewer than need
 * GPUs; any other failure to count devices is a test failure (a broken
 * driver on the GPU machine must not look like a skip). Returns the count. */
static inline int gt_require_gpus(const char *prog, int need)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
        printf("%s: SKIP: no usable CUDA driver or device (%s)\n", prog, cudaGetErrorName(e));
        exit(GT_SKIP);
    }
    if (e != cudaSuccess)
        gt_die(__FILE__, __LINE__, "cudaGetDeviceCount", e);
    if (n < need) {
        printf("%s: SKIP: %d GPU(s), %d needed\n", prog, n, need);
        exit(GT_SKIP);
    }
    return n;
}

/* The device that plays "the other GPU" in a program with a one-GPU part:
 * 1 with two or more GPUs; with one, 0 (both ends on device 0), after a
 * line that names what was left out ("PROG: two-GPU part skipped: 1 GPU
 * (WHAT needs two)"; compare_runs.sh reads it). */
static inline int gt_peer_device(const char *prog, int ndev, const char *two_gpu_part)
{
    if (ndev >= 2)
        return 1;
    printf("%s: two-GPU part skipped: 1 GPU (%s needs two)\n", prog, two_gpu_part);
    return 0;
}

/* Waits for all work on each of the devices, leaving device `back` current. */
static inline void gt_sync_devices(int a, int b, int back)
{
    GT_CHECK(cudaSetDevice(a));
    GT_CHECK(cudaDeviceSynchronize());
    GT_CHECK(cudaSetDevice(b));
    GT_CHECK(cudaDeviceSynchronize());
    GT_CHECK(cudaSetDevice(back));
}

#endif
