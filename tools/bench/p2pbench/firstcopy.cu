/* firstcopy: where a process's first large device-to-host copy spends its
 * time. The program's first copies of the fresh_pinned harm row, measured
 * per repetition: the host time of the cudaMemcpy call alone, the GPU time
 * between two events around it (as public samples time it), and the minor
 * page faults taken during the call. firstcopy_run.py runs it without the
 * shim and with it (and with parts of the shim turned off) in alternating
 * processes, so that a one-off cost on the first copy can be attributed.
 *
 *   firstcopy [--bytes N] [--reps R]
 * Prints one line per repetition: "rep R host_us H event_us E faults F".
 * Exit: 0; 1 on a CUDA error or wrong bytes; 2 bad arguments. */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include "../bench_check.h"

static long minor_faults(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_minflt;
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    size_t n = (size_t)1 << 20;
    int reps = 4;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: firstcopy [--bytes N] [--reps R]\n");
            return 2;
        }
    }
    if (n < 8 || reps < 1) {
        fprintf(stderr, "firstcopy: --bytes >= 8 and --reps >= 1\n");
        return 2;
    }
    unsigned char *src, small[8];
    CHECK_CUDA(cudaMalloc((void **)&src, n));
    cudaEvent_t e0, e1;
    CHECK_CUDA(cudaEventCreate(&e0));
    CHECK_CUDA(cudaEventCreate(&e1));
    for (int r = 0; r < reps; r++) {
        unsigned char fill = (unsigned char)(0x5a + r);
        CHECK_CUDA(cudaMemset(src, fill, n));
        CHECK_CUDA(cudaMemcpy(small, src, sizeof small, cudaMemcpyDeviceToHost)); /* as harmbench's sum */
        unsigned char *h;
        CHECK_CUDA(cudaMallocHost((void **)&h, n));
        CHECK_CUDA(cudaEventRecord(e0, 0));
        long f0 = minor_faults();
        double t0 = now_us();
        CHECK_CUDA(cudaMemcpy(h, src, n, cudaMemcpyDeviceToHost));
        double t1 = now_us();
        long f1 = minor_faults();
        CHECK_CUDA(cudaEventRecord(e1, 0));
        CHECK_CUDA(cudaEventSynchronize(e1));
        float ms;
        CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
        for (size_t i = 0; i < n; i += 4093)
            if (h[i] != fill) {
                fprintf(stderr, "firstcopy: wrong byte at %zu\n", i);
                return 1;
            }
        printf("rep %d host_us %.2f event_us %.2f faults %ld\n", r, t1 - t0, ms * 1e3, f1 - f0);
        CHECK_CUDA(cudaFreeHost(h));
    }
    CHECK_CUDA(cudaFree(src));
    return 0;
}
