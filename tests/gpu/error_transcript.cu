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
 * The steps within device 0 (same-device and host copies, the bounce the
 * shim may take, a reset under a bounced buffer) run on any machine; the
 * cross-GPU steps with two GPUs, else the transcript says they were
 * skipped.
 *
 * Exit: 0 transcript complete (bytes of successful copies right), 1 wrong
 * bytes or a setup call failed, 77 without a GPU. */
#include "gpu_test.h"
#include "pattern.cuh"

#include <string.h>

#define N (4u << 20)

static int step_no;
static int failures;
static int ndev;

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
    for (int i = 0; i < ndev && i < 2; i++) {
        GT_CHECK(cudaSetDevice(i));
        GT_CHECK(cudaDeviceSynchronize());
    }
    GT_CHECK(cudaSetDevice(d));
    GT_CHECK(p2pk_verify_sync(dst, N, seed, &v, GT_STREAM));
    GT_CHECK(p2pk_checksum_sync(dst, N, &sum, GT_STREAM));
    printf("   %s: mismatches=%llu checksum=%016llx\n", what, v.mismatches, sum);
    if (v.mismatches != 0)
        failures++;
    GT_CHECK(cudaSetDevice(cur));
}

/* The host bytes' checksum, for the transcript (never judged: the two
 * runs' transcripts are compared). */
static void host_line(const char *what, const unsigned char *h)
{
    printf("   %s: checksum %016llx\n", what, p2pk_checksum_host(h, N));
}

/* Within device 0: same-device copies, host copies the shim may bounce
 * (after evidence: a D2H and an H2D of the same buffer), wrong on purpose
 * among right ones, then a reset of the device under a bounced buffer. */
static void one_gpu_steps(void)
{
    void *b0 = NULL, *c0 = NULL, *freed = NULL, *stale = NULL, *hp = NULL;
    unsigned char *h = (unsigned char *)malloc(N);
    int can = -1;
    GT_CHECK(cudaSetDevice(0));
    GT_CHECK(cudaMalloc(&b0, N));
    GT_CHECK(cudaMalloc(&c0, N));
    GT_CHECK(cudaMallocHost(&hp, N));
    STEP(cudaMemcpyPeer(c0, 0, NULL, 0, N));
    STEP(cudaMemcpyPeer(c0, 0, b0, 0, 0));
    STEP(cudaMemcpyPeerAsync(c0, 0, b0, 99, N, 0));
    STEP(cudaDeviceCanAccessPeer(&can, 0, 0));
    printf("   can access peer 0->0: %d\n", can);
    STEP(cudaDeviceDisablePeerAccess(0));     /* itself */
    fill(b0, 0, 11);
    STEP(cudaMemcpyPeer(c0, 0, b0, 0, N));
    check("same-device cudaMemcpyPeer", c0, 0, 11);
    fill(b0, 0, 12);
    STEP(cudaMemcpy(h, b0, N, cudaMemcpyDeviceToHost));
    STEP(cudaMemcpy(c0, h, N, cudaMemcpyHostToDevice));
    check("a round trip through pageable memory", c0, 0, 12);
    fill(b0, 0, 13);
    STEP(cudaMemcpy(h, b0, N, cudaMemcpyDeviceToHost));   /* predicted: a bounce */
    STEP(cudaMemcpy(c0, h, N, cudaMemcpyHostToDevice));
    check("the round trip again", c0, 0, 13);
    GT_CHECK(cudaMalloc(&freed, N));
    GT_CHECK(cudaFree(freed));
    STEP(cudaMemcpy(h, freed, N, cudaMemcpyDeviceToHost));   /* a freed source */
    STEP(cudaMemcpy(h, b0, 0, cudaMemcpyDeviceToHost));
    STEP(cudaMemcpy2D(h, 1024, b0, 1024, 1025, N / 1024, cudaMemcpyDeviceToHost));
    host_line("the host buffer after the failed copies", h);
    fill(b0, 0, 14);
    STEP(cudaMemcpy(hp, b0, N, cudaMemcpyDeviceToHost));
    STEP(cudaMemcpy(c0, hp, N, cudaMemcpyHostToDevice));
    STEP(cudaMemcpy(hp, b0, N, cudaMemcpyDeviceToHost));   /* pinned: an eager bounce */
    STEP(cudaMemcpy(c0, hp, N, cudaMemcpyHostToDevice));
    check("a round trip through pinned memory", c0, 0, 14);
    STEP(cudaMemcpy(c0, freed, N, cudaMemcpyDeviceToDevice));
    STEP(cudaFreeHost(hp));
    /* A reset while the host buffer holds a D2H's bytes (under the shim,
     * perhaps only in a snapshot on the device): they must survive. */
    STEP(cudaMemcpy(h, b0, N, cudaMemcpyDeviceToHost));
    stale = c0;
    STEP(cudaDeviceReset());
    host_line("the host buffer after the reset", h);
    STEP(cudaMemcpy(stale, h, N, cudaMemcpyHostToDevice));
    STEP(cudaMalloc(&c0, N));
    STEP(cudaMalloc(&b0, N));
    fill(b0, 0, 15);
    STEP(cudaMemcpy(h, b0, N, cudaMemcpyDeviceToHost));
    STEP(cudaMemcpy(c0, h, N, cudaMemcpyHostToDevice));
    check("a round trip after the reset", c0, 0, 15);
    STEP(cudaFree(b0));
    STEP(cudaFree(c0));
    free(h);
}

/* Between devices 0 and 1. */
static void two_gpu_steps(void)
{
    void *a0 = NULL, *a1 = NULL, *freed = NULL, *stale1 = NULL;
    int can = -1, dev = -1;

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
    STEP(cudaSetDevice(0));
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    ndev = gt_require_gpus("error_transcript", 1);
    printf("error_transcript: cudart=%s stream=%s\n", P2PSHIM_CUDART, GT_STREAM_MODE);
    if (gt_peer_device("error_transcript", ndev, "the cross-GPU steps") == 1)
        two_gpu_steps();
    one_gpu_steps();
    printf("error_transcript: %s (%d step(s), %d verification failure(s))\n",
           failures ? "FAIL" : "done", step_no, failures);
    return failures ? 1 : 0;
}
