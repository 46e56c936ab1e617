/* kernels_selftest: the verification kernels are only worth something if
 * they catch wrong bytes. Fills, verifies, corrupts one byte and checks
 * that the verifier names it; checks the pitched verification's padding
 * rule; checks that the GPU checksum equals the host's over the same bytes;
 * checks that the busy kernel really waits. One GPU is enough.
 * Exit: 0 pass, 1 fail, 77 no GPU. */
#include "gpu_test.h"
#include "pattern.cuh"

#include <string.h>

static int failures;

static void expect(int cond, const char *what)
{
    printf("%s %s\n", cond ? "PASS" : "FAIL", what);
    if (!cond)
        failures++;
}

int main(void)
{
    const size_t n = (8u << 20) + 3;   /* odd tail on purpose */
    const size_t bad = 5u << 20;
    const size_t w = 1000, rows = 300;
    size_t pitch;
    uint8_t *d, *p, *host;
    p2pk_verify_result v;
    unsigned long long sum_gpu = 0;
    cudaEvent_t t0, t1;
    float ms = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    gt_require_gpus("kernels_selftest", 1);
    GT_CHECK(cudaSetDevice(0));
    GT_CHECK(cudaMalloc((void **)&d, n));
    host = (uint8_t *)malloc(n);
    if (host == NULL)
        return 1;

    GT_CHECK(p2pk_fill(d, n, 7, GT_STREAM));
    GT_CHECK(p2pk_verify_sync(d, n, 7, &v, GT_STREAM));
    expect(v.mismatches == 0 && v.first_bad == P2PK_NO_BAD, "fill then verify: no mismatch");
    GT_CHECK(p2pk_verify_sync(d, n, 8, &v, GT_STREAM));
    expect(v.mismatches > n / 2, "another seed: almost every byte differs");

    GT_CHECK(cudaMemcpy(host, d, n, cudaMemcpyDeviceToHost));
    {
        size_t wrong = 0;
        for (size_t i = 0; i < n; i++)
            wrong += host[i] != p2pk_pattern_byte(7, i);
        expect(wrong == 0, "device pattern equals the host's p2pk_pattern_byte");
    }
    GT_CHECK(p2pk_checksum_sync(d, n - 3, &sum_gpu, GT_STREAM));
    expect(sum_gpu == p2pk_checksum_host(host, n - 3), "GPU checksum equals host checksum");

    GT_CHECK(cudaMemset(d + bad, host[bad] ^ 0x40, 1));
    GT_CHECK(cudaMemset(d + n - 1, host[n - 1] ^ 0x01, 1));
    GT_CHECK(p2pk_verify_sync(d, n, 7, &v, GT_STREAM));
    printf("     mismatches=%llu first_bad=%llu got=0x%02x expected=0x%02x\n", v.mismatches,
           v.first_bad, v.got, v.expected);
    expect(v.mismatches == 2 && v.first_bad == bad && v.got == (host[bad] ^ 0x40u) &&
               v.expected == host[bad],
           "two corrupted bytes found, the first named with got/expected");
    {
        unsigned long long sum2 = 0;
        GT_CHECK(p2pk_checksum_sync(d, n - 3, &sum2, GT_STREAM));
        expect(sum2 != sum_gpu, "checksum changes with one byte");
    }

    /* Pitched: payload [0, w) per row from source pitch w + 24; padding must
     * equal the pad byte. */
    GT_CHECK(cudaMallocPitch((void **)&p, &pitch, w, rows));
    GT_CHECK(cudaMemset(p, 0xA5, pitch * rows));
    {
        /* Payload bytes that differ from 0xA5 (a few match by chance). */
        unsigned long long payload_bad = 0;
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < w; c++)
                payload_bad += p2pk_pattern_byte(3, r * (w + 24) + c) != 0xA5;
        GT_CHECK(p2pk_verify_2d_sync(p, pitch, w, rows, w + 24, 3, 0xA5, &v, GT_STREAM));
        expect(v.mismatches == payload_bad, "2D: payload counted, padding right");
        GT_CHECK(p2pk_verify_2d_sync(p, pitch, w, rows, w + 24, 3, 0x11, &v, GT_STREAM));
        expect(v.mismatches == payload_bad + (unsigned long long)(pitch - w) * rows,
               "2D: wrong pad byte is counted");
        GT_CHECK(p2pk_verify_2d_sync(p, pitch, w, rows, w + 24, 3, -1, &v, GT_STREAM));
        expect(v.mismatches == payload_bad, "2D: pad -1 ignores padding");
    }

    /* Busy: 50 ms of GPU time, then the fill. */
    GT_CHECK(cudaEventCreate(&t0));
    GT_CHECK(cudaEventCreate(&t1));
    GT_CHECK(cudaEventRecord(t0, GT_STREAM));
    GT_CHECK(p2pk_busy(50000, d, n, 9, GT_STREAM));
    GT_CHECK(cudaEventRecord(t1, GT_STREAM));
    GT_CHECK(cudaEventSynchronize(t1));
    GT_CHECK(cudaEventElapsedTime(&ms, t0, t1));
    printf("     busy(50 ms) took %.2f ms\n", ms);
    expect(ms >= 49.0f && ms < 1000.0f, "busy kernel waits about the time asked");
    GT_CHECK(p2pk_verify_sync(d, n, 9, &v, GT_STREAM));
    expect(v.mismatches == 0, "busy kernel then writes the pattern");

    GT_CHECK(cudaFree(d));
    GT_CHECK(cudaFree(p));
    free(host);
    printf("kernels_selftest: %s\n", failures ? "FAIL" : "pass");
    return failures ? 1 : 0;
}
