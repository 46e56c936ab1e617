/* The shim's links on real GPUs (docs/LINKS.md), two GPUs, run under the
 * shim with P2PSHIM_LINK_IDLE_MS=50 P2PSHIM_MIN_BYTES=1M P2PSHIM_LOG=info:
 *   1. a 256 MiB cudaMemcpyPeerAsync 0->1 (the shim enables the link),
 *      bytes checked; its bandwidth printed;
 *   2. cudaMalloc/cudaFree of 4 MiB on device 1, 200 times, link up;
 *   3. 200 ms idle, then a 4 KiB cross copy (below P2PSHIM_MIN_BYTES: not
 *      upgraded, but the check for idle links runs): the link is given
 *      back (the log says "gave back peer access");
 *   4. the same allocation loop, link down; both figures printed;
 *   5. the program enables 0->1 itself: success, as without the shim;
 *      a copy again, bytes checked.
 * Exits 77 with fewer than two GPUs. */
#include <chrono>
#include <thread>
#include <vector>

#include "gpu_test.h"

static double now_ms()
{
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

static double alloc_loop_us(int dev)
{
    GT_CHECK(cudaSetDevice(dev));
    void *p = nullptr;
    double t0 = now_ms();
    for (int i = 0; i < 200; i++) {
        GT_CHECK(cudaMalloc(&p, (size_t)4 << 20));
        GT_CHECK(cudaFree(p));
    }
    return (now_ms() - t0) * 1000.0 / 200;
}

static void check_bytes(const unsigned char *d, size_t n, unsigned seed, const char *what)
{
    std::vector<unsigned char> h(n);
    GT_CHECK(cudaMemcpy(h.data(), d, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
        if (h[i] != (unsigned char)(i * 31 + seed)) {
            fprintf(stderr, "FAIL %s: byte %zu is %u\n", what, i, h[i]);
            exit(1);
        }
}

static void fill(unsigned char *d, size_t n, unsigned seed)
{
    std::vector<unsigned char> h(n);
    for (size_t i = 0; i < n; i++)
        h[i] = (unsigned char)(i * 31 + seed);
    GT_CHECK(cudaMemcpy(d, h.data(), n, cudaMemcpyHostToDevice));
}

int main()
{
    gt_require_gpus("links_idle", 2);
    const size_t big = (size_t)256 << 20, small = 4096;
    unsigned char *a, *b;
    GT_CHECK(cudaSetDevice(1));
    GT_CHECK(cudaMalloc(&b, big));
    GT_CHECK(cudaSetDevice(0));
    GT_CHECK(cudaMalloc(&a, big));
    cudaStream_t s;
    GT_CHECK(cudaStreamCreate(&s));

    fill(a, big, 3);
    double t0 = now_ms();
    GT_CHECK(cudaMemcpyPeerAsync(b, 1, a, 0, big, s));
    GT_CHECK(cudaStreamSynchronize(s));
    double ms = now_ms() - t0;
    check_bytes(b, big, 3, "256 MiB 0->1");
    printf("links_idle: 256 MiB 0->1 %.1f GB/s\n", big / ms / 1e6);

    double up = alloc_loop_us(1);
    GT_CHECK(cudaSetDevice(0));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    GT_CHECK(cudaMemcpyPeer(b, 1, a, 0, small)); /* the idle check runs here */
    double down = alloc_loop_us(1);
    printf("links_idle: cudaMalloc+cudaFree 4 MiB on device 1: %.1f us link up, "
           "%.1f us after idle release\n", up, down);

    GT_CHECK(cudaSetDevice(0));
    GT_CHECK(cudaDeviceEnablePeerAccess(1, 0));
    fill(a, big, 9);
    GT_CHECK(cudaMemcpyPeerAsync(b, 1, a, 0, big, s));
    GT_CHECK(cudaStreamSynchronize(s));
    check_bytes(b, big, 9, "256 MiB 0->1 on the program's link");
    GT_CHECK(cudaDeviceDisablePeerAccess(1));
    printf("links_idle: PASS\n");
    return 0;
}
