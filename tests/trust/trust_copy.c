/* A program that copies between two GPUs the slow way (no peer access of
 * its own), as the link check's tests run it under the shim: it checks
 * every byte that arrives and prints what the stand-in saw, so that the
 * test can tell whether the shim upgraded the copies and whether the
 * shim did validation work of its own (allocations, events, timing).
 *
 *   trust_copy [ROUNDS [DEVICES]]   (default 3 copies of 1 MiB, device 0
 *                                   to 1; DEVICES 1: within device 0)
 *
 * Output, one line: "trust_copy: wrong_bytes=W peer_enabled=P
 * other_allocs=A events=E elapsed_calls=T" — W bytes of the copies' results
 * that differ from what was sent; P 1 when the stand-in has peer access
 * on between the two contexts at the end; A cuMemAlloc_v2 calls beyond
 * the program's own two; E cuEventCreate calls (the program makes none);
 * T cuEventElapsedTime calls. Exit 0 when the program itself ran, 1 on a
 * driver error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "standin.h"

#define BYTES ((size_t)1 << 20)

#define CHECK(call)                                                                 \
    do {                                                                            \
        CUresult r_ = (call);                                                       \
        if (r_ != CUDA_SUCCESS) {                                                   \
            fprintf(stderr, "trust_copy: %s failed: %d\n", #call, (int)r_);         \
            return 1;                                                               \
        }                                                                           \
    } while (0)

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    int devices = argc > 2 ? atoi(argv[2]) : 2;
    CUcontext ctx[2];
    CUdeviceptr src, dst;
    unsigned char *sent = malloc(BYTES), *got = malloc(BYTES);
    if (sent == NULL || got == NULL)
        return 1;
    CHECK(cuInit(0));
    for (int d = 0; d < 2; d++)
        CHECK(cuDevicePrimaryCtxRetain(&ctx[d], devices > 1 ? d : 0));
    CHECK(cuCtxSetCurrent(ctx[1]));
    CHECK(cuMemAlloc(&dst, BYTES));
    CHECK(cuCtxSetCurrent(ctx[0]));
    CHECK(cuMemAlloc(&src, BYTES));
    size_t wrong = 0;
    for (int round = 0; round < rounds; round++) {
        for (size_t i = 0; i < BYTES; i++)
            sent[i] = (unsigned char)(i * 7 + (size_t)round * 13 + (i >> 11));
        CHECK(cuMemcpyHtoD(src, sent, BYTES));
        CHECK(cuMemsetD8(dst, 0, BYTES));
        CHECK(cuMemcpyDtoD(dst, src, BYTES)); /* device 0 -> device 1, issued on 0 */
        memset(got, 0, BYTES);
        CHECK(cuMemcpyDtoH(got, dst, BYTES));
        for (size_t i = 0; i < BYTES; i++)
            wrong += got[i] != sent[i];
    }
    int peer = ctx[0] != ctx[1] && standin_peer_enabled(ctx[0], ctx[1]);
    peer = peer || (ctx[0] != ctx[1] && standin_peer_enabled(ctx[1], ctx[0]));
    unsigned long long allocs = (unsigned long long)standin_calls("cuMemAlloc_v2");
    printf("trust_copy: wrong_bytes=%zu peer_enabled=%d other_allocs=%llu events=%llu "
           "elapsed_calls=%llu\n",
           wrong, peer, allocs >= 2 ? allocs - 2 : 0,
           (unsigned long long)standin_calls("cuEventCreate"),
           (unsigned long long)standin_calls("cuEventElapsedTime"));
    CHECK(cuMemFree(src));
    CHECK(cuCtxSetCurrent(ctx[1]));
    CHECK(cuMemFree(dst));
    for (int d = 0; d < 2; d++)
        CHECK(cuDevicePrimaryCtxRelease(devices > 1 ? d : 0));
    free(sent);
    free(got);
    return 0;
}
