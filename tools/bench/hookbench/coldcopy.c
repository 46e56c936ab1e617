/* coldcopy: a device-to-host copy made with cold caches, as a program makes
 * it right after allocating its host buffer (cudaMallocHost pins pages:
 * heavy kernel work that leaves the CPU caches holding other data). What
 * the shim adds there is the host time of the lines of code and data it
 * touches, each a cache miss; coldlines.sh counts those lines with a cache
 * simulator, and this program's own timing shows what they cost on the
 * stand-in driver.
 *
 *   coldcopy [--bytes N] [--reps R] [--host pinned|pageable] [--to-device]
 *            [--warm]
 *
 * Each repetition: a fresh host buffer (cuMemHostAlloc, or malloc), its
 * pages touched, then (unless --warm) a buffer of EVICT_BYTES read through
 * so that the caches hold nothing of the shim's or the driver's, then one
 * cuMemcpyDtoH_v2 of N bytes (cuMemcpyHtoD_v2 with --to-device, as a
 * bandwidth test times an upload; the call, alone, in cold_copy), then the
 * buffer freed; two copies before the first repetition, not counted, do
 * what is done once per process. Prints the median and quartiles of the
 * call's time in ns.
 * Exit 1 on a driver error, 2 on bad arguments. Not a test: figures. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "bench_clock.h"

#define EVICT_BYTES ((size_t)64 << 20)
#define MAX_REPS 10001


/* The measured call, in a function of its own so that a cache simulator
 * can collect inside it alone (callgrind --toggle-collect=cold_copy). */
__attribute__((noinline)) static CUresult cold_copy(void *host, CUdeviceptr dev, size_t n,
                                                    int to_device)
{
    return to_device ? cuMemcpyHtoD_v2(dev, host, n) : cuMemcpyDtoH_v2(host, dev, n);
}

static void evict(volatile const uint8_t *buf)
{
    unsigned sum = 0;
    for (size_t i = 0; i < EVICT_BYTES; i += 64)
        sum += buf[i];
    __asm__ volatile("" : : "r"(sum));
}

int main(int argc, char **argv)
{
    size_t n = (size_t)1 << 20;
    int reps = 101, pinned = 1, warm = 0, to_device = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--host") == 0 && i + 1 < argc)
            pinned = strcmp(argv[++i], "pinned") == 0;
        else if (strcmp(argv[i], "--warm") == 0)
            warm = 1;
        else if (strcmp(argv[i], "--to-device") == 0)
            to_device = 1;
        else {
            fprintf(stderr, "usage: coldcopy [--bytes N] [--reps R] "
                            "[--host pinned|pageable] [--to-device] [--warm]\n");
            return 2;
        }
    }
    if (n == 0 || reps < 1 || reps > MAX_REPS)
        return 2;
    CUcontext ctx;
    CUdeviceptr dev;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cuMemAlloc_v2(&dev, n) != CUDA_SUCCESS ||
        cuMemsetD8_v2(dev, 7, n) != CUDA_SUCCESS)
        return 1;
    uint8_t *junk = malloc(EVICT_BYTES);
    static double t[MAX_REPS];
    if (junk == NULL)
        return 1;
    memset(junk, 1, EVICT_BYTES);
    /* The process's first copies resolve what the shim and the driver
     * resolve once: made before, through another function, not counted. */
    for (int r = 0; r < 2; r++)
        if (cuMemcpyDtoH_v2(junk, dev, n < EVICT_BYTES ? n : EVICT_BYTES) != CUDA_SUCCESS)
            return 1;
    memset(junk, 1, EVICT_BYTES);
    for (int r = 0; r < reps; r++) {
        void *host = NULL;
        if (pinned ? cuMemHostAlloc(&host, n, 0) != CUDA_SUCCESS : (host = malloc(n)) == NULL)
            return 1;
        /* An upload's bytes change every repetition, so a copy that did
         * not happen cannot pass for one that did. */
        uint8_t want = to_device ? (uint8_t)(11 + r % 200) : 7;
        memset(host, to_device ? want : 0, n);
        if (!warm)
            evict(junk);
        double t0 = bench_now_ns();
        CUresult rc = cold_copy(host, dev, n, to_device);
        t[r] = bench_now_ns() - t0;
        uint8_t last = 0;
        if (rc != CUDA_SUCCESS ||
            (to_device ? cuMemcpyDtoH_v2(&last, dev + n - 1, 1) : (last = ((uint8_t *)host)[n - 1],
                                                                    CUDA_SUCCESS)) != CUDA_SUCCESS ||
            last != want)
            return 1;
        if (pinned)
            cuMemFreeHost(host);
        else
            free(host);
    }
    qsort(t, (size_t)reps, sizeof t[0], bench_cmp_double);
    printf("coldcopy %s %zu B %s %s: median %.0f ns, quartiles %.0f-%.0f (%d reps)\n",
           to_device ? "H2D" : "D2H", n, pinned ? "pinned" : "pageable", warm ? "warm" : "cold",
           t[reps / 2], t[reps / 4],
           t[3 * reps / 4], reps);
    free(junk);
    return 0;
}
