/* The copy variants both test doubles wrap (chain_tool.c, chain_intr.c)
 * and the sequence calls (chain_seq.c), with their cuGetProcAddress base
 * name and whether they are the per-thread-stream variant:
 *   X(name, base, per_thread, params, args) */
#ifndef CHAIN_VARIANTS_H
#define CHAIN_VARIANTS_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#define CHAIN_VARIANTS(X)                                                     \
    X(cuMemcpyHtoD_v2, "cuMemcpyHtoD", 0, (CUdeviceptr d, const void *h, size_t n), (d, h, n)) \
    X(cuMemcpyDtoH_v2, "cuMemcpyDtoH", 0, (void *h, CUdeviceptr d, size_t n), (h, d, n)) \
    X(cuMemcpyPeer, "cuMemcpyPeer", 0,                                        \
      (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n), (d, dc, s, sc, n)) \
    X(cuMemcpyPeer_ptds, "cuMemcpyPeer", 1,                                   \
      (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n), (d, dc, s, sc, n)) \
    X(cuMemcpyAsync_ptsz, "cuMemcpyAsync", 1,                                 \
      (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st))   \
    X(cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync", 0,                           \
      (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st))

enum chain_variant {
#define X(name, base, pt, params, args) CHAIN_##name,
    CHAIN_VARIANTS(X)
#undef X
    CHAIN_NVARIANTS
};

typedef CUresult (*chain_gpa5)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
typedef CUresult (*chain_gpa4)(const char *, void **, int, cuuint64_t);

/* Each double exports its counter: calls of its wrapper of the exact
 * variant name, or of its resolver for "cuGetProcAddress" (both forms). */
typedef unsigned long long (*chain_calls_fn)(const char *name);

#endif
