/* p2pdemo: copies a buffer from GPU 0 to GPU 1 the way an ordinary program
 * does (cuMemcpyPeer, no peer access enabled), times it and checks the
 * bytes. It reaches the driver as cudart does — dlopen("libcuda.so.1") and
 * cuGetProcAddress — so under LD_PRELOAD=libp2pshim.so the copy is the
 * shim's to upgrade. On the stand-in driver (no GPU) it also prints the
 * stand-in's path counters: the times are then meaningless, the path is
 * not. Exit status: 0 ok, 1 wrong bytes or a CUDA error, 77 fewer than two
 * devices. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include "../bench_check.h"

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

static gpa_fn get_proc;

static void *fetch(const char *name, int version)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    if (get_proc(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) !=
            CUDA_SUCCESS || fn == NULL) {
        fprintf(stderr, "p2pdemo: the driver has no %s\n", name);
        exit(1);
    }
    return fn;
}


static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct standin_counts {
    uint64_t peer_copies, peer_bytes, staged_copies, staged_bytes, rest[20];
};

int main(int argc, char **argv)
{
    size_t bytes = (argc > 1 ? strtoull(argv[1], NULL, 0) : 64) << 20;
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "p2pdemo: no CUDA driver: %s\n", dlerror());
        return 77;
    }
    get_proc = (gpa_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (get_proc == NULL) {
        fprintf(stderr, "p2pdemo: the driver has no cuGetProcAddress_v2\n");
        return 1;
    }
    CUresult (*init)(unsigned) = fetch("cuInit", 2000);
    CUresult (*count)(int *) = fetch("cuDeviceGetCount", 2000);
    CUresult (*retain)(CUcontext *, CUdevice) = fetch("cuDevicePrimaryCtxRetain", 7000);
    CUresult (*set_current)(CUcontext) = fetch("cuCtxSetCurrent", 4000);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t) = fetch("cuMemAlloc", 3020);
    CUresult (*htod)(CUdeviceptr, const void *, size_t) = fetch("cuMemcpyHtoD", 3020);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t) = fetch("cuMemcpyDtoH", 3020);
    CUresult (*peer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t) =
        fetch("cuMemcpyPeer", 4000);
    CUresult (*sync)(void) = fetch("cuCtxSynchronize", 2000);

    int n = 0;
    CHECK_CU(init(0));
    CHECK_CU(count(&n));
    if (n < 2) {
        fprintf(stderr, "p2pdemo: %d device(s); two are needed\n", n);
        return 77;
    }
    CUcontext ctx0, ctx1;
    CUdeviceptr src, dst;
    CHECK_CU(retain(&ctx0, 0));
    CHECK_CU(retain(&ctx1, 1));
    CHECK_CU(set_current(ctx1));
    CHECK_CU(mem_alloc(&dst, bytes));
    CHECK_CU(set_current(ctx0));
    CHECK_CU(mem_alloc(&src, bytes));

    uint32_t *host = malloc(bytes);
    if (host == NULL)
        return 1;
    for (size_t i = 0; i < bytes / 4; i++)
        host[i] = (uint32_t)(i * 2654435761u);
    CHECK_CU(htod(src, host, bytes));
    CHECK_CU(peer(dst, ctx1, src, ctx0, bytes)); /* warm-up */
    double t0 = now_s();
    for (int i = 0; i < reps; i++)
        CHECK_CU(peer(dst, ctx1, src, ctx0, bytes));
    CHECK_CU(sync());
    double dt = now_s() - t0;
    memset(host, 0, bytes);
    CHECK_CU(set_current(ctx1));
    CHECK_CU(dtoh(host, dst, bytes));
    size_t bad = 0;
    for (size_t i = 0; i < bytes / 4; i++)
        bad += host[i] != (uint32_t)(i * 2654435761u);
    printf("p2pdemo: %d x %zu MiB GPU0->GPU1 with cuMemcpyPeer: %.1f GB/s, %s\n", reps,
           bytes >> 20, (double)bytes * reps / dt / 1e9,
           bad ? "WRONG BYTES" : "bytes verified");

    void (*standin_stats)(struct standin_counts *) =
        (void (*)(struct standin_counts *))dlsym(lib, "standin_get_stats");
    if (standin_stats != NULL) {
        struct standin_counts c;
        standin_stats(&c);
        printf("p2pdemo: simulated devices (stand-in driver, no GPU): "
               "%llu copies went peer-to-peer, %llu were staged through the host\n",
               (unsigned long long)c.peer_copies, (unsigned long long)c.staged_copies);
    }
    free(host);
    return bad ? 1 : 0;
}
