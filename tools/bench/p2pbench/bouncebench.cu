/* bouncebench: host-bounced copies (issue 4) as an unmodified program sees
 * them: cudaMemcpy D2H from device A into a host buffer, optionally the CPU
 * reading every byte of it, then cudaMemcpy H2D to device B; the same
 * host buffer reused for every repetition (a staging loop). Run it without
 * the shim and with it (LD_PRELOAD; pinned memory is bounced only with
 * P2PSHIM_BOUNCE=lazy or eager), side by side: bounce_run.sh does both.
 *
 *   bouncebench [--pair A,B] [--sizes 4K,64K,1M,16M,256M] [--memory pageable,pinned]
 *               [--touch none,read] [--reps N] [--warmup N] [--label TEXT]
 *               [--json FILE] [--direct]
 *
 * --direct: the ceiling, what a program rewritten for it would do: a
 * snapshot of the source on device A (cudaMemcpy device to device) and
 * one peer copy to B with peer access enabled by the program; the host
 * buffer is not used ("read" then reads the snapshot back to the host
 * first, as such a program would have to).
 *
 * One line per (memory, touch, size): the median over --reps of the host
 * wall time of the pair (both copies synchronous, so complete), its
 * "bandwidth" (bytes / time) and the median D2H and H2D parts. The
 * destination is verified after the last repetition (a device checksum
 * against the pattern the source was filled with, read-in-between bytes
 * included). --pair defaults to 0,1, or 0,0 with one GPU (the same-GPU
 * bounce: another buffer of the same device; --direct then copies device
 * to device). Exit: 0, 1 on a CUDA error or wrong bytes, 77 without a GPU
 * or without a device of the pair. */
#include "pattern.cuh"

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../bench_check.h"

#ifndef P2PSHIM_CUDART
#define P2PSHIM_CUDART "unknown"
#endif


#define MAX_SIZES 32
#define MAX_REPS 101

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static size_t parse_size(const char *s)
{
    char *end;
    size_t v = strtoull(s, &end, 10);
    if (*end == 'K' || *end == 'k')
        v <<= 10;
    else if (*end == 'M' || *end == 'm')
        v <<= 20;
    else if (*end == 'G' || *end == 'g')
        v <<= 30;
    return v;
}

static volatile uint64_t sink;

/* The CPU reads every byte (8 at a time), as a program inspecting the data. */
static void read_all(const unsigned char *h, size_t n)
{
    uint64_t s = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, h + i, 8);
        s += w;
    }
    for (; i < n; i++)
        s += h[i];
    sink = s;
}

int main(int argc, char **argv)
{
    int a = 0, b = -1, reps = 9, warmup = 2;
    size_t sizes[MAX_SIZES] = {4 << 10, 64 << 10, 1 << 20, 16 << 20, (size_t)256 << 20};
    int nsizes = 5;
    int mem_pageable = 1, mem_pinned = 1, touch_none = 1, touch_read = 1;
    const char *label = "", *json = NULL;
    int direct = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (strcmp(argv[i], "--pair") == 0 && sscanf(v, "%d,%d", &a, &b) == 2) {
            i++;
        } else if (strcmp(argv[i], "--sizes") == 0) {
            char *copy = strdup(v);
            nsizes = 0;
            for (char *t = strtok(copy, ","); t && nsizes < MAX_SIZES; t = strtok(NULL, ","))
                sizes[nsizes++] = parse_size(t);
            free(copy);
            i++;
        } else if (strcmp(argv[i], "--memory") == 0) {
            mem_pageable = strstr(v, "pageable") != NULL;
            mem_pinned = strstr(v, "pinned") != NULL;
            i++;
        } else if (strcmp(argv[i], "--touch") == 0) {
            touch_none = strstr(v, "none") != NULL;
            touch_read = strstr(v, "read") != NULL;
            i++;
        } else if (strcmp(argv[i], "--reps") == 0) {
            reps = atoi(v);
            i++;
        } else if (strcmp(argv[i], "--warmup") == 0) {
            warmup = atoi(v);
            i++;
        } else if (strcmp(argv[i], "--label") == 0) {
            label = v;
            i++;
        } else if (strcmp(argv[i], "--direct") == 0) {
            direct = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = v;
            i++;
        } else {
            fprintf(stderr, "usage: bouncebench [--pair A,B] [--sizes LIST] [--memory "
                            "pageable,pinned] [--touch none,read] [--reps N] [--warmup N] "
                            "[--label TEXT] [--json FILE]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > MAX_REPS)
        reps = 9;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("bouncebench: SKIP: no GPU\n");
        return 77;
    }
    if (b < 0)
        b = ndev >= 2 ? 1 : 0;
    if (a < 0 || b < 0 || a >= ndev || b >= ndev) {
        printf("bouncebench: SKIP: pair %d,%d: %d GPU(s)\n", a, b, ndev);
        return 77;
    }
    size_t cap = 0;
    for (int i = 0; i < nsizes; i++)
        cap = sizes[i] > cap ? sizes[i] : cap;
    void *src, *dst;
    CHECK_CUDA(cudaSetDevice(b));
    CHECK_CUDA(cudaMalloc(&dst, cap));
    CHECK_CUDA(cudaSetDevice(a));
    CHECK_CUDA(cudaMalloc(&src, cap));
    const uint32_t seed = 4242;
    CHECK_CUDA(p2pk_fill(src, cap, seed, cudaStreamLegacy));
    CHECK_CUDA(cudaDeviceSynchronize());
    void *snap = NULL;
    if (direct)
        CHECK_CUDA(cudaMalloc(&snap, cap));
    if (direct && a != b) {
        CHECK_CUDA(cudaDeviceEnablePeerAccess(b, 0));
        CHECK_CUDA(cudaSetDevice(b));
        CHECK_CUDA(cudaDeviceEnablePeerAccess(a, 0));
        CHECK_CUDA(cudaSetDevice(a));
    }
    FILE *jf = json ? fopen(json, "a") : NULL;
    int bad = 0;
    printf("bouncebench %s (%s cudart) %d->%d, %d reps\n", label, P2PSHIM_CUDART, a, b, reps);
    printf("%-8s %-5s %12s %10s %10s %10s %9s\n", "memory", "touch", "bytes", "pair_ms",
           "d2h_ms", "h2d_ms", "GB/s");
    for (int m = 0; m < 2; m++) {
        if ((m == 0 && !mem_pageable) || (m == 1 && !mem_pinned))
            continue;
        unsigned char *h;
        if (m == 0)
            h = (unsigned char *)malloc(cap);
        else
            CHECK_CUDA(cudaMallocHost((void **)&h, cap));
        for (int t = 0; t < 2; t++) {
            if ((t == 0 && !touch_none) || (t == 1 && !touch_read))
                continue;
            for (int si = 0; si < nsizes; si++) {
                size_t n = sizes[si];
                double pair[MAX_REPS], d2h[MAX_REPS], h2d[MAX_REPS];
                for (int r = -warmup; r < reps; r++) {
                    CHECK_CUDA(cudaSetDevice(a));
                    double t0 = now_ms();
                    if (direct) {
                        CHECK_CUDA(cudaMemcpy(snap, src, n, cudaMemcpyDeviceToDevice));
                        CHECK_CUDA(cudaDeviceSynchronize()); /* D2D returns before completion */
                    } else
                        CHECK_CUDA(cudaMemcpy(h, src, n, cudaMemcpyDeviceToHost));
                    double t1 = now_ms();
                    if (t && direct)
                        CHECK_CUDA(cudaMemcpy(h, snap, n, cudaMemcpyDeviceToHost));
                    if (t)
                        read_all(h, n);
                    CHECK_CUDA(cudaSetDevice(b));
                    double t2 = now_ms();
                    if (direct) {
                        CHECK_CUDA(cudaMemcpyPeer(dst, b, snap, a, n));
                        CHECK_CUDA(cudaDeviceSynchronize());
                    } else
                        CHECK_CUDA(cudaMemcpy(dst, h, n, cudaMemcpyHostToDevice));
                    double t3 = now_ms();
                    if (r >= 0) {
                        pair[r] = t3 - t0;
                        d2h[r] = t1 - t0;
                        h2d[r] = t3 - t2;
                    }
                }
                /* The destination must hold the source's bytes. */
                unsigned long long got = 0, want = 0;
                CHECK_CUDA(cudaSetDevice(a));
                CHECK_CUDA(p2pk_checksum_sync(src, n & ~(size_t)3, &want, cudaStreamLegacy));
                CHECK_CUDA(cudaSetDevice(b));
                CHECK_CUDA(p2pk_checksum_sync(dst, n & ~(size_t)3, &got, cudaStreamLegacy));
                if (got != want) {
                    fprintf(stderr, "bouncebench: WRONG BYTES %s %s %zu\n",
                            m ? "pinned" : "pageable", t ? "read" : "none", n);
                    bad = 1;
                }
                double pm = median(pair, reps), dm = median(d2h, reps), hm = median(h2d, reps);
                printf("%-8s %-5s %12zu %10.3f %10.3f %10.3f %9.2f\n", m ? "pinned" : "pageable",
                       t ? "read" : "none", n, pm, dm, hm, n / pm / 1e6);
                if (jf)
                    fprintf(jf,
                            "{\"bench\":\"bounce\",\"label\":\"%s\",\"cudart\":\"%s\",\"pair\":"
                            "[%d,%d],\"memory\":\"%s\",\"touch\":\"%s\",\"bytes\":%zu,"
                            "\"pair_ms\":%.4f,\"d2h_ms\":%.4f,\"h2d_ms\":%.4f,\"ok\":%s}\n",
                            label, P2PSHIM_CUDART, a, b, m ? "pinned" : "pageable",
                            t ? "read" : "none", n, pm, dm, hm, got == want ? "true" : "false");
            }
        }
        if (m == 0)
            free(h);
        else
            CHECK_CUDA(cudaFreeHost(h));
    }
    if (jf)
        fclose(jf);
    return bad;
}
