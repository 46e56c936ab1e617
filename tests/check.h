/* One check for every test program.
 *
 * CHECK(cond) reports the file, line and condition of a check that fails
 * and counts it; the program goes on (a test reports every failure) and
 * ends with `return check_report();`, non-zero after any failure.
 * CHECK_MSG(cond, fmt, ...) says more; CHECK_STR(got, want) compares two
 * strings and shows both. REQUIRE(cond) ends the program at once: for a
 * check whose failure makes the rest meaningless or unsafe.
 * CHECK_CU(call) and CHECK_CUDA(call) require a driver or runtime call to
 * succeed (define P2PSHIM_CHECK_CU or P2PSHIM_CHECK_CUDA after including
 * the matching CUDA header, before this one). */
#ifndef P2PSHIM_TESTS_CHECK_H
#define P2PSHIM_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A program of several files defines P2PSHIM_CHECK_SHARED_COUNT before
 * including this in each, and `int check_failures;` in one of them, so
 * that every file's checks count in one place. */
#ifdef P2PSHIM_CHECK_SHARED_COUNT
extern int check_failures;
#else
static int check_failures;
#endif

static inline int check_report(void)
{
    if (check_failures != 0)
        fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures != 0;
}

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);           \
            check_failures++;                                                         \
        }                                                                             \
    } while (0)

#define CHECK_MSG(cond, ...)                                                          \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                             \
            fprintf(stderr, "\n");                                                    \
            check_failures++;                                                         \
        }                                                                             \
    } while (0)

/* CHECK_STR(got, want): two strings equal; says both when not. */
#define CHECK_STR(got, want)                                                 \
    do {                                                                     \
        const char *g_ = (got), *w_ = (want);                                \
        if (strcmp(g_, w_) != 0) {                                           \
            fprintf(stderr, "%s:%d: got \"%s\", want \"%s\"\n", __FILE__,    \
                    __LINE__, g_, w_);                                       \
            check_failures++;                                                    \
        }                                                                    \
    } while (0)

#define REQUIRE(cond)                                                                 \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);           \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#ifdef P2PSHIM_CHECK_CU
#define CHECK_CU(call)                                                                \
    do {                                                                              \
        CUresult r_ = (call);                                                         \
        if (r_ != CUDA_SUCCESS) {                                                     \
            fprintf(stderr, "FAIL %s:%d: %s returned %d\n", __FILE__, __LINE__, #call, \
                    (int)r_);                                                         \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)
#endif

#ifdef P2PSHIM_CHECK_CUDA
#define CHECK_CUDA(call)                                                              \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call,        \
                    cudaGetErrorString(e_));                                          \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)
#endif

#endif
