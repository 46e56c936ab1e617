// trust_cost: what the link check (docs/TRUST.md) costs a program, per
// device pair. For every ordered pair it times the first cross-GPU copy
// (the one the shim upgrades: check, enable, copy) and the next one, and
// checks the bytes of both. Run it three times under the shim and compare
// the first copies (trust_cost.sh does):
//   P2PSHIM_TRUST=skip     enable only: the baseline
//   P2PSHIM_TRUST=recheck  the check every time (a fresh verdict)
//   P2PSHIM_TRUST=check    with the verdicts just cached: ~ the baseline
// One JSON line per ordered pair: {"bench":"trust_cost","label":L,
// "src":A,"dst":B,"bytes":N,"first_ms":F,"second_ms":S,"ok":true}.
// With fewer than two GPUs there is no pair: says so and exits 0.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "../bench_check.h"

static double copy_ms(void *dst, int dd, const void *src, int sd, size_t n)
{
    auto t0 = std::chrono::steady_clock::now();
    CHECK_CUDA(cudaMemcpyPeer(dst, dd, src, sd, n));
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

int main(int argc, char **argv)
{
    const char *label = argc > 1 ? argv[1] : "run";
    size_t bytes = (size_t)16 << 20;
    int n = 0;
    CHECK_CUDA(cudaGetDeviceCount(&n));
    if (n < 2) {
        std::printf("trust_cost: %d GPU(s): no pair, nothing to measure\n", n);
        return 0;
    }
    std::vector<void *> buf(n);
    for (int d = 0; d < n; d++) {
        CHECK_CUDA(cudaSetDevice(d));
        CHECK_CUDA(cudaMalloc(&buf[d], bytes));
        CHECK_CUDA(cudaMemset(buf[d], d + 1, bytes));
    }
    std::vector<unsigned char> host(bytes);
    bool all_ok = true;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b)
                continue;
            CHECK_CUDA(cudaSetDevice(a));
            CHECK_CUDA(cudaMemset(buf[a], 0x40 + a * 8 + b, bytes));
            CHECK_CUDA(cudaDeviceSynchronize());
            double first = copy_ms(buf[b], b, buf[a], a, bytes);
            double second = copy_ms(buf[b], b, buf[a], a, bytes);
            CHECK_CUDA(cudaSetDevice(b));
            CHECK_CUDA(cudaMemcpy(host.data(), buf[b], bytes, cudaMemcpyDeviceToHost));
            bool ok = true;
            for (size_t i = 0; i < bytes && ok; i++)
                ok = host[i] == (unsigned char)(0x40 + a * 8 + b);
            all_ok = all_ok && ok;
            std::printf("{\"bench\":\"trust_cost\",\"label\":\"%s\",\"src\":%d,\"dst\":%d,"
                        "\"bytes\":%zu,\"first_ms\":%.3f,\"second_ms\":%.3f,\"ok\":%s}\n",
                        label, a, b, bytes, first, second, ok ? "true" : "false");
        }
    return all_ok ? 0 : 1;
}
