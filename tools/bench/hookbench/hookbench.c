/* hookbench: the shim's own cost per intercepted call, measured on the CPU
 * against the stand-in driver (whose calls cost little and steadily, unlike
 * a real driver's): run it without and with LD_PRELOAD=libp2pshim.so and
 * subtract. For each kind of call it prints the median over batches of the
 * time per call in ns. Not a test: figures for docs/ and for tuning. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "bench_clock.h"
#include "../bench_check.h"

#define BATCHES 31
#define PER_BATCH 2000



static CUdeviceptr a0, b0, a1;
static char host[64];
static void *pinned_1m; /* cuMemHostAlloc'ed */
#define BIG ((size_t)1 << 20)
static CUcontext ctx0, ctx1;

static void run(const char *what, int kind)
{
    double per_call[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        double t0 = bench_now_ns();
        for (int i = 0; i < PER_BATCH; i++) {
            if (kind == 0)
                CHECK_CU(cuMemcpyDtoDAsync_v2(b0, a0, 4, NULL));
            else if (kind == 1)
                CHECK_CU(cuMemcpyHtoDAsync_v2(a0, host, 4, NULL));
            else if (kind == 2)
                CHECK_CU(cuMemcpyAsync(b0, a0, 4, NULL));
            else if (kind == 3)
                CHECK_CU(cuMemcpyPeerAsync(a1, ctx1, a0, ctx0, 4, NULL));
            else if (kind == 4)
                CHECK_CU(cuMemsetD8Async(b0, 1, 4, NULL));
            else if (kind == 5)
                CHECK_CU(cuMemcpyDtoHAsync_v2(host, a0, 4, NULL));
            else
                CHECK_CU(cuMemcpyDtoH_v2(pinned_1m, a0, BIG));
        }
        double t1 = bench_now_ns();
        CHECK_CU(cuStreamSynchronize(NULL)); /* the stand-in queues async work */
        per_call[b] = (t1 - t0) / PER_BATCH;
    }
    qsort(per_call, BATCHES, sizeof per_call[0], bench_cmp_double);
    printf("%-34s %8.1f ns/call (median of %d x %d)\n", what, per_call[BATCHES / 2], BATCHES,
           PER_BATCH);
}

/* free() is hooked (the host-bounce module must see memory given back):
 * malloc and free of a small block, on `threads` threads at once, ns per
 * pair (the wall time of all threads' pairs over their number). */
#define FREE_THREADS_MAX 4

static void *malloc_free_loop(void *arg)
{
    (void)arg;
    for (int i = 0; i < PER_BATCH * 4; i++) {
        void *p = malloc(64);
        __asm__ volatile("" : : "r"(p) : "memory");
        free(p);
    }
    return NULL;
}

static void run_free(const char *what, int threads)
{
    double per_pair[BATCHES];
    pthread_t t[FREE_THREADS_MAX];
    for (int b = 0; b < BATCHES; b++) {
        double t0 = bench_now_ns();
        for (int i = 0; i < threads; i++)
            if (pthread_create(&t[i], NULL, malloc_free_loop, NULL) != 0)
                exit(1);
        for (int i = 0; i < threads; i++)
            pthread_join(t[i], NULL);
        per_pair[b] = (bench_now_ns() - t0) / (PER_BATCH * 4.0 * threads);
    }
    qsort(per_pair, BATCHES, sizeof per_pair[0], bench_cmp_double);
    printf("%-34s %8.1f ns/pair (median of %d batches, %d thread%s)\n", what,
           per_pair[BATCHES / 2], BATCHES, threads, threads > 1 ? "s" : "");
}

int main(void)
{
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx0, 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx1, 1));
    CHECK_CU(cuCtxSetCurrent(ctx1));
    CHECK_CU(cuMemAlloc_v2(&a1, BIG));
    CHECK_CU(cuCtxSetCurrent(ctx0));
    CHECK_CU(cuMemAlloc_v2(&a0, BIG));
    CHECK_CU(cuMemHostAlloc(&pinned_1m, BIG, 0));
    CHECK_CU(cuMemAlloc_v2(&b0, 1 << 20));
    memset(host, 1, sizeof host);
    run("same-device cuMemcpyDtoDAsync 4 B", 0);
    run("cuMemcpyHtoDAsync 4 B", 1);
    run("same-device cuMemcpyAsync 4 B", 2);
    run("cross-device cuMemcpyPeerAsync 4 B", 3);
    /* Hooked since host bounces: a memset (GPU work that may write host
     * memory) and a device-to-host copy (a bounce candidate). */
    run("cuMemsetD8Async 4 B", 4);
    run("cuMemcpyDtoHAsync 4 B", 5);
    /* A bounce candidate's size (the stand-in's copy itself is a memcpy of
     * 1 MiB: compare the two runs' difference, not the figure). */
    run("cuMemcpyDtoH 1 MiB into pinned", 6);
    run_free("malloc+free 64 B", 1);
    run_free("malloc+free 64 B", FREE_THREADS_MAX);
    /* A large D2H into host memory: remembered by the shim as a possible
     * bounce (its bytes may go back to a GPU), which must not make every
     * later free() of the program pay. */
    size_t big = 1 << 20;
    void *h = malloc(big);
    if (h == NULL)
        return 1;
    CHECK_CU(cuMemcpyDtoH_v2(h, a0, big));
    run_free("malloc+free 64 B after a 1 MiB D2H", 1);
    run_free("malloc+free 64 B after a 1 MiB D2H", FREE_THREADS_MAX);
    free(h);
    return 0;
}
