/* Shared by the stand-in self-test's files: check macros and helpers. */
#ifndef TEST_STANDIN_H
#define TEST_STANDIN_H

#define _GNU_SOURCE
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <stddef.h>

#include "standin.h"

/* CHECK and REQUIRE (tests/check.h), counted across the self-test's
 * files in check_failures (defined in test_standin.c). */
#define P2PSHIM_CHECK_SHARED_COUNT
#include "../check.h"

#define EXPECT(call, want)                                                           \
    do {                                                                             \
        CUresult r_ = (call);                                                        \
        if (r_ != (want)) {                                                          \
            const char *n_ = "?";                                                    \
            cuGetErrorName(r_, &n_);                                                 \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d\n", __FILE__,   \
                    __LINE__, #call, (int)r_, n_, (int)(want));                      \
            check_failures++;                                                              \
        }                                                                            \
    } while (0)
#define OK(call) EXPECT(call, CUDA_SUCCESS)

/* Primary contexts of the devices, retained by retain_all. */
extern CUcontext ctx[8];

/* Reconfigures (setenv + standin_reload_config + cuInit); each NULL value
 * unsets its variable. The arena is 64 MiB per device. */
void config(const char *devices, const char *topology, const char *max_peers,
            const char *fail_enable);
void retain_all(int n);
struct standin_stats stats(void);
/* 1 if all n bytes at p read v (through cuMemcpyDtoH_v2). */
int all_bytes(CUdeviceptr p, unsigned char v, size_t n);
/* n bytes on device d, filled with `fill`; leaves ctx[d] current. */
CUdeviceptr alloc_on(int d, size_t n, unsigned char fill);

/* test_standin_copies.c */
void test_ordering(void);
void test_batches_and_2d(void);
void test_threads(void);
/* test_standin_arrays.c */
void test_arrays(void);
/* test_standin_memory.c */
void test_pointer_attributes(void);
void test_pools(void);
void test_vmm(void);
void test_vmm_span(void);

#endif
