/* app_enables_peer: a program that copies between GPUs first without peer
 * access, then enables peer access itself with strict error checking (the
 * pattern that broke an early prototype: "peer access is already enabled"),
 * copies, disables it strictly, and copies again.
 *
 * It prints a transcript (return codes, last errors, mismatch counts,
 * checksums) that must be the same with and without the shim; the test
 * compares the two. Nothing in it depends on timing or addresses.
 *
 * Exit: 0 done (the transcript decides), 1 a strict step failed or bytes
 * were wrong, 77 fewer than two GPUs or no peer capability. */
#include "gpu_test.h"
#include "pattern.cuh"

#include <string.h>

#define BYTES (16u << 20)

enum api { API_PEER, API_MEMCPY, API_MEMCPY_ASYNC, API_COUNT };
static const char *const api_name[API_COUNT] = {"cudaMemcpyPeer", "cudaMemcpy",
                                                "cudaMemcpyAsync"};

static void *buf[2];
static int failures;

/* A strict call: anything but cudaSuccess ends the program, and the last
 * error must be clean afterwards. */
static void strict(const char *phase, const char *what, cudaError_t rc)
{
    cudaError_t last = cudaGetLastError();
    printf("%s %s rc=%s last=%s\n", phase, what, cudaGetErrorName(rc),
           cudaGetErrorName(last));
    if (rc != cudaSuccess || last != cudaSuccess) {
        printf("FAIL %s %s: strict checking stops here\n", phase, what);
        exit(1);
    }
}

static void copy_and_check(const char *phase, int api, int s, int d, uint32_t seed)
{
    unsigned long long sum_src = 0, sum_dst = 0;
    p2pk_verify_result v;
    cudaError_t rc;

    GT_CHECK(cudaSetDevice(d));
    GT_CHECK(cudaMemset(buf[d], 0, BYTES));
    GT_CHECK(cudaSetDevice(s));
    GT_CHECK(p2pk_fill(buf[s], BYTES, seed, GT_STREAM));
    GT_CHECK(p2pk_checksum_sync(buf[s], BYTES, &sum_src, GT_STREAM));
    gt_sync_devices(d, s, s);

    switch (api) {
    case API_PEER:
        rc = cudaMemcpyPeer(buf[d], d, buf[s], s, BYTES);
        break;
    case API_MEMCPY:
        rc = cudaMemcpy(buf[d], buf[s], BYTES, cudaMemcpyDefault);
        break;
    default:
        rc = cudaMemcpyAsync(buf[d], buf[s], BYTES, cudaMemcpyDefault, 0);
        if (rc == cudaSuccess)
            rc = cudaStreamSynchronize(0);
        break;
    }
    gt_sync_devices(s, d, d);
    GT_CHECK(p2pk_verify_sync(buf[d], BYTES, seed, &v, GT_STREAM));
    GT_CHECK(p2pk_checksum_sync(buf[d], BYTES, &sum_dst, GT_STREAM));
    printf("%s %-15s %d->%d rc=%s last=%s mismatches=%llu checksum=%016llx %s\n", phase,
           api_name[api], s, d, cudaGetErrorName(rc), cudaGetErrorName(cudaGetLastError()),
           v.mismatches, sum_dst, sum_dst == sum_src ? "same-as-source" : "DIFFERS");
    if (rc != cudaSuccess || v.mismatches != 0 || sum_dst != sum_src)
        failures++;
}

static void copy_round(const char *phase, uint32_t seed)
{
    for (int api = 0; api < API_COUNT; api++)
        for (int s = 0; s < 2; s++)
            copy_and_check(phase, api, s, 1 - s, seed + 10 * api + s);
}

int main(void)
{
    int can01 = 0, can10 = 0;
    p2pk_verify_result v;

    setvbuf(stdout, NULL, _IOLBF, 0);
    gt_require_gpus("app_enables_peer", 2);
    GT_CHECK(cudaDeviceCanAccessPeer(&can01, 0, 1));
    GT_CHECK(cudaDeviceCanAccessPeer(&can10, 1, 0));
    if (!can01 || !can10) {
        printf("app_enables_peer: SKIP: GPUs 0 and 1 cannot peer both ways\n");
        return GT_SKIP;
    }
    printf("app_enables_peer: cudart=%s stream=%s can_access_peer=%d,%d\n", P2PSHIM_CUDART,
           GT_STREAM_MODE, can01, can10);
    for (int d = 0; d < 2; d++) {
        GT_CHECK(cudaSetDevice(d));
        GT_CHECK(cudaMalloc(&buf[d], BYTES));
    }

    copy_round("A(no-peer)", 100);

    GT_CHECK(cudaSetDevice(0));
    strict("B(enable)", "device0 cudaDeviceEnablePeerAccess(1)", cudaDeviceEnablePeerAccess(1, 0));
    GT_CHECK(cudaSetDevice(1));
    strict("B(enable)", "device1 cudaDeviceEnablePeerAccess(0)", cudaDeviceEnablePeerAccess(0, 0));

    copy_round("C(peer)", 200);
    /* The program's own peer access is real: a kernel on device 0 reads
     * device 1's memory directly (it would fault without access). */
    GT_CHECK(cudaSetDevice(1));
    GT_CHECK(p2pk_fill(buf[1], BYTES, 250, GT_STREAM));
    GT_CHECK(cudaDeviceSynchronize());
    GT_CHECK(cudaSetDevice(0));
    GT_CHECK(p2pk_verify_sync(buf[1], BYTES, 250, &v, GT_STREAM));
    printf("C(peer) kernel on device 0 reads device 1 memory: mismatches=%llu\n", v.mismatches);
    if (v.mismatches != 0)
        failures++;

    GT_CHECK(cudaSetDevice(0));
    strict("D(disable)", "device0 cudaDeviceDisablePeerAccess(1)", cudaDeviceDisablePeerAccess(1));
    GT_CHECK(cudaSetDevice(1));
    strict("D(disable)", "device1 cudaDeviceDisablePeerAccess(0)", cudaDeviceDisablePeerAccess(0));

    copy_round("E(disabled)", 300);

    /* Not strict: the answers themselves are the transcript. */
    for (int d = 0; d < 2; d++) {
        cudaError_t rc, peek, last;
        GT_CHECK(cudaSetDevice(d));
        rc = cudaDeviceDisablePeerAccess(1 - d);
        peek = cudaPeekAtLastError();
        last = cudaGetLastError();
        printf("F(probe) device%d cudaDeviceDisablePeerAccess(%d) again rc=%s peek=%s last=%s\n",
               d, 1 - d, cudaGetErrorName(rc), cudaGetErrorName(peek), cudaGetErrorName(last));
    }
    GT_CHECK(cudaSetDevice(0));
    {
        cudaError_t rc = cudaDeviceEnablePeerAccess(1, 0), last;
        cudaError_t rc2 = cudaDeviceEnablePeerAccess(1, 0);
        last = cudaGetLastError();
        printf("F(probe) device0 enable(1) rc=%s then enable(1) again rc=%s last=%s\n",
               cudaGetErrorName(rc), cudaGetErrorName(rc2), cudaGetErrorName(last));
    }
    for (int d = 0; d < 2; d++) {
        GT_CHECK(cudaSetDevice(d));
        GT_CHECK(cudaFree(buf[d]));
    }
    printf("app_enables_peer: %s (%d failure(s))\n", failures ? "FAIL" : "done", failures);
    return failures ? 1 : 0;
}
