/* error_transcript: a scripted sequence of CUDA calls, many of them wrong on
 * purpose, printing for each its return code and then what
 * cudaPeekAtLastError() and cudaGetLastError() say. The transcript must be
 * the same with and without the shim (the test compares them): the shim
 * owes the program the same answers, the same last errors and the same
 * current device, whatever it did underneath.
 *
 * Nothing printed depends on addresses or timing. Copies that succeed are
 * verified on the destination and print a checksum.
 *
 * Exit: 0 transcript complete (bytes of successful copies right), 1 wrong
 * bytes or a setup call failed, 77 fewer than two GPUs. */
#include "gpu_test.h"
#include "pattern.cuh"

#include <string.h>

#define N (4u << 20)

static int step_no;
static int failures;

static void report(const char *what, cudaError_t rc)
{
    cudaError_t peek = cudaPeekAtLastError();
    cudaError_t last = cudaGetLastError();
    int dev = -1;
    cudaError_t drc = cudaGetDevice(&dev);
    printf("%02d %-58s rc=%s peek=%s last=%s device=%d%s\n", ++step_no, what,
           cudaGetErrorName(rc), cudaGetErrorName(peek), cudaGetErrorName(last), dev,
           drc == cudaSuccess ? "" : " (cudaGetDevice failed)");
    (void)cudaGetLastError();
}

/* Runs a call and reports it; the text of the call is the description. */
#define STEP(call) report(#call, (call))

/* Writes the pattern of seed into src on device s, settled, leaving the
 * current device as it was. */
static void fill(void *src, int s, uint32_t seed)
{
    int cur;
    GT_CHECK(cudaGetDevice(&cur));
    GT_CHECK(cudaSetDevice(s));
    GT_CHECK(p2pk_fill(src, N, seed, GT_STREAM));
    GT_CHECK(cudaDeviceSynchronize());
    GT_CHECK(cudaSetDevice(cur));
}

/* Waits for both devices, then verifies dst on device d against seed and
 * prints the mismatch count and checksum; the current device is kept. */
static void check(const char *what, void *dst, int d, uint32_t seed)
{
    int cur;
    p2pk_verify_result v;
    unsigned long long sum = 0;
    GT_CHECK(cudaGetDevice(&cur));
    GT_CHECK(cudaSetDevice(0));
    GT_CHECK(cudaDeviceSynchronize());
    GT_CHECK(cudaSetDevice(1));
    GT_CHECK(cudaDeviceSynchronize());
    GT_CHECK(cudaSetDevice(d));
    GT_CHECK(p2pk_verify_sync(dst, N, seed, &v, GT_STREAM));
    GT_CHECK(p2pk_checksum_sync(dst, N, &sum, GT_STREAM));
    printf("   %s: mismatches=%llu checksum=%016llx\n", what, v.mismatches, sum);
    if (v.mismatches != 0)
        failures++;
    GT_CHECK(cudaSetDevice(cur));
}

int main(void)
{
    void *a0 = NULL, *a1 = NULL, *freed = NULL, *stale1 = NULL;
    int can = -1, dev = -1;

    setvbuf(stdout, NULL, _IOLBF, 0);
    gt_require_gpus("error_transcript", 2);
    printf("error_transcript: cudart=%s stream=%s\n", P2PSHIM_CUDART, GT_STREAM_MODE);
    GT_CHECK(cudaSetDevice(1));
    GT_CHECK(cudaMalloc(&a1, N));
    GT_CHECK(cudaSetDevice(0));
    GT_CHECK(cudaMalloc(&a0, N));

    /* Null pointers. */
    STEP(cudaMemcpy(NULL, a0, N, cudaMemcpyDefault));
    STEP(cudaMemcpy(a1, NULL, N, cudaMemcpyDefault));
    STEP(cudaMemcpyAsync(NULL, a0, N, cudaMemcpyDefault, 0));
    STEP(cudaMemcpyPeer(NULL, 1, a0, 0, N));
    STEP(cudaMemcpyPeerAsync(a1, 1, NULL, 0, N, 0));
    /* Size 0. */
    STEP(cudaMemcpy(a1, a0, 0, cudaMemcpyDefault));
    STEP(cudaMemcpyAsync(a1, a0, 0, cudaMemcpyDefault, 0));
    STEP(cudaMemcpyPeer(a1, 1, a0, 0, 0));
    STEP(cudaMemcpy(NULL, NULL, 0, cudaMemcpyDefault));
    /* Invalid device ordinals. */
    STEP(cudaSetDevice(99));
    STEP(cudaGetDevice(&dev));
    printf("   current device after cudaSetDevice(99): %d\n", dev);
    STEP(cudaMemcpyPeer(a1, 99, a0, 0, N));
    STEP(cudaMemcpyPeer(a1, 1, a0, 99, N));
    STEP(cudaMemcpyPeerAsync(a1, 99, a0, 0, N, 0));
    STEP(cudaDeviceCanAccessPeer(&can, 0, 99));
    STEP(cudaDeviceEnablePeerAccess(99, 0));
    /* Peer access, as the program sees it. */
    STEP(cudaDeviceCanAccessPeer(&can, 0, 1));
    printf("   can access peer 0->1: %d\n", can);
    STEP(cudaDeviceEnablePeerAccess(1, 1));   /* invalid flags */
    STEP(cudaDeviceEnablePeerAccess(0, 0));   /* itself */
    STEP(cudaDeviceDisablePeerAccess(1));     /* never enabled */
    fill(a0, 0, 1);
    STEP(cudaMemcpy(a1, a0, N, cudaMemcpyDefault));   /* cross-GPU, not enabled */
    check("copy 0->1 before any enable", a1, 1, 1);
    STEP(cudaDeviceDisablePeerAccess(1));     /* still never enabled by us */
    STEP(cudaDeviceEnablePeerAccess(1, 0));
    STEP(cudaDeviceEnablePeerAccess(1, 0));   /* twice */
    fill(a0, 0, 2);
    STEP(cudaMemcpyPeer(a1, 1, a0, 0, N));
    check("copy 0->1 with peer access", a1, 1, 2);
    STEP(cudaDeviceDisablePeerAccess(1));
    STEP(cudaDeviceDisablePeerAccess(1));     /* twice */
    STEP(cudaSetDevice(1));
    STEP(cudaDeviceDisablePeerAccess(0));     /* never enabled */
    fill(a1, 1, 3);
    STEP(cudaMemcpyAsync(a0, a1, N, cudaMemcpyDefault, 0));   /* 1->0, not enabled */
    check("copy 1->0 before enabling 1->0", a0, 0, 3);
    STEP(cudaDeviceEnablePeerAccess(0, 0));   /* program owns 1->0 at the reset */
    /* A freed pointer (explicit kind: with cudaMemcpyDefault an unknown
     * pointer is taken for host memory). */
    STEP(cudaSetDevice(0));
    GT_CHECK(cudaMalloc(&freed, N));
    GT_CHECK(cudaFree(freed));
    STEP(cudaMemcpy(a1, freed, N, cudaMemcpyDeviceToDevice));
    STEP(cudaMemcpy(freed, a1, N, cudaMemcpyDeviceToDevice));
    STEP(cudaMemcpyPeer(a1, 1, freed, 0, N));
    /* Reset device 1 in the middle: its context, allocations and peer
     * mappings go; device 0's survive. */
    stale1 = a1;
    STEP(cudaSetDevice(1));
    STEP(cudaDeviceReset());
    STEP(cudaSetDevice(0));
    STEP(cudaMemcpy(stale1, a0, N, cudaMemcpyDeviceToDevice));
    STEP(cudaMemcpyPeer(stale1, 1, a0, 0, N));
    STEP(cudaSetDevice(1));
    STEP(cudaMalloc(&a1, N));
    STEP(cudaSetDevice(0));
    fill(a0, 0, 4);
    STEP(cudaMemcpy(a1, a0, N, cudaMemcpyDefault));
    check("copy 0->1 after the reset", a1, 1, 4);
    STEP(cudaDeviceDisablePeerAccess(1));
    STEP(cudaDeviceEnablePeerAccess(1, 0));   /* again, after the reset */
    STEP(cudaDeviceEnablePeerAccess(1, 0));
    STEP(cudaSetDevice(1));
    STEP(cudaDeviceDisablePeerAccess(0));     /* the old context had it */
    STEP(cudaDeviceEnablePeerAccess(0, 0));
    fill(a1, 1, 5);
    STEP(cudaMemcpyPeerAsync(a0, 0, a1, 1, N, 0));
    check("copy 1->0 after the reset, peer enabled", a0, 0, 5);
    STEP(cudaDeviceDisablePeerAccess(0));
    STEP(cudaSetDevice(0));
    STEP(cudaDeviceDisablePeerAccess(1));
    fill(a0, 0, 6);
    STEP(cudaMemcpy(a1, a0, N, cudaMemcpyDefault));
    check("copy 0->1 after disabling again", a1, 1, 6);
    STEP(cudaFree(a0));
    STEP(cudaSetDevice(1));
    STEP(cudaFree(a1));
    printf("error_transcript: %s (%d step(s), %d verification failure(s))\n",
           failures ? "FAIL" : "done", step_no, failures);
    return failures ? 1 : 0;
}
