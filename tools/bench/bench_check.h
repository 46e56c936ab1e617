/* The benchmarks' check of a CUDA call, one behaviour for all of them: a
 * call that fails ends the program (exit status 1) with one line on stderr
 * that names the file, the line, the call and the error. CHECK_CU for the
 * driver API (after cuda.h), CHECK_CUDA for the runtime (after
 * cuda_runtime.h). */
#ifndef P2PSHIM_BENCH_CHECK_H
#define P2PSHIM_BENCH_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK_CU(call)                                                                \
    do {                                                                              \
        CUresult r_ = (call);                                                         \
        if (r_ != CUDA_SUCCESS) {                                                     \
            fprintf(stderr, "FAIL: %s:%d: %s returned CUresult %d\n", __FILE__,       \
                    __LINE__, #call, (int)r_);                                        \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define CHECK_CUDA(call)                                                              \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                      \
            fprintf(stderr, "FAIL: %s:%d: %s returned %s: %s\n", __FILE__, __LINE__,  \
                    #call, cudaGetErrorName(e_), cudaGetErrorString(e_));             \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#endif
