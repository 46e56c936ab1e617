// xfer: an ordinary multi-GPU program, as p2pshim's users run it: it never
// enables peer access and moves buffers between GPU 0 and GPU 1 with
// cudaMemcpyPeerAsync, cudaMemcpy and cudaMemcpyPeer at a few sizes, then
// checks every byte. With --hold-cupti it first takes CUPTI for itself, as
// Nsight Systems would (a second subscriber). No CUPTI otherwise: the
// run-log tests read the shim's own CUPTI records. With one GPU it exits 77,
// unless --allow-one-gpu: then the same copies go between two buffers of
// device 0 (the run-log tests' one-GPU part).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <cupti.h>

#include "pattern.cuh"

#define P2PSHIM_CHECK_CUDA
#include "../check.h"

static void CUPTIAPI ignore(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *)
{
}

int main(int argc, char **argv)
{
    bool hold = false, one_ok = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--hold-cupti") == 0) {
            hold = true;
        } else if (strcmp(argv[i], "--allow-one-gpu") == 0) {
            one_ok = true;
        } else {
            fprintf(stderr, "usage: xfer [--hold-cupti] [--allow-one-gpu]\n");
            return 2;
        }
    }
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < (one_ok ? 1 : 2)) {
        printf("xfer: needs %s\n", one_ok ? "a GPU" : "two GPUs");
        return 77;
    }
    const int peer = n >= 2 ? 1 : 0;
    if (peer == 0)
        printf("xfer: two-GPU part skipped: 1 GPU (copies between GPU 0 and GPU 1 need two)\n");
    /* Before the first copy: the shim starts CUPTI lazily, at its first. */
    CUpti_SubscriberHandle sub;
    if (hold && cuptiSubscribe(&sub, ignore, NULL) != CUPTI_SUCCESS) {
        fprintf(stderr, "xfer: could not take CUPTI\n");
        return 1;
    }
    const size_t sizes[] = {64u << 10, 4u << 20, 64u << 20};
    const size_t max = 64u << 20;
    void *a, *b;
    CHECK_CUDA(cudaSetDevice(peer));
    CHECK_CUDA(cudaMalloc(&b, max));
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaMalloc(&a, max));
    unsigned long long bad = 0, total = 0;
    for (size_t s : sizes) {
        for (int api = 0; api < 3; api++) {
            CHECK_CUDA(p2pk_fill(a, s, 100 + api, cudaStreamLegacy));
            CHECK_CUDA(cudaDeviceSynchronize());
            if (api == 0) {
                CHECK_CUDA(cudaMemcpyPeerAsync(b, peer, a, 0, s, 0));
                CHECK_CUDA(cudaStreamSynchronize(0));
            } else if (api == 1) {
                CHECK_CUDA(cudaMemcpy(b, a, s, cudaMemcpyDefault));
            } else {
                CHECK_CUDA(cudaMemcpyPeer(b, peer, a, 0, s));
            }
            p2pk_verify_result v;
            CHECK_CUDA(cudaSetDevice(peer));
            CHECK_CUDA(p2pk_verify_sync(b, s, 100 + api, &v, cudaStreamLegacy));
            CHECK_CUDA(cudaSetDevice(0));
            bad += v.mismatches;
            total += s;
        }
    }
    printf("xfer: %llu bytes %s, %llu wrong\n", total, peer ? "across" : "within device 0",
           bad);
    if (hold)
        cuptiUnsubscribe(sub);
    return bad ? 1 : 0;
}
