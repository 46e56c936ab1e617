/* Helpers of harmbench (see harmbench.cu): checked CUDA calls, clocks,
 * byte checks that never copy a host buffer back to a GPU, the JSON line
 * printer, and what the process holds at its end (free device memory,
 * userfaultfd registrations). */
#ifndef P2PSHIM_HARM_UTIL_CUH
#define P2PSHIM_HARM_UTIL_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

/* Every CUDA call of harmbench goes through CHECK_CUDA. */
#include "../bench_check.h"

/* Prints "harmbench: FAIL: <message>" on stderr and exits 1. */
void harm_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

double harm_now_ms(void);

/* A byte count with an optional K, M or G suffix (KiB, MiB, GiB); 0 when
 * malformed. */
size_t harm_parse_size(const char *s);

/* The median of v[0..n) (sorts v); 0 for n == 0. */
double harm_median(const double *values, int n); /* of a copy: values keep their order */

/* The wrapping sum of buf as little-endian 64-bit words, plus its tail
 * bytes one by one: what a program reading every byte would compute. */
uint64_t harm_host_sum(const void *buf, size_t n);

/* The same sum of device memory on the current device (a kernel, then an
 * 8-byte device-to-host copy of the result). */
uint64_t harm_device_sum(const void *dev, size_t n);

/* Checks host bytes h[0..n) against the pattern of seed (pattern.cuh):
 * the first and last page byte for byte and the whole buffer by its sum
 * (host_sum: that sum, already computed by the caller's read; want_sum: the
 * source's device sum). Reports a mismatch on stderr and returns 0. */
int harm_check_host(const unsigned char *h, size_t n, uint32_t seed, uint64_t host_sum,
                    uint64_t want_sum, const char *what);

/* Checks device memory dst[0..n) (on the current device) against the
 * pattern of seed with a kernel; reports a mismatch and returns 0. */
int harm_check_device(const void *dst, size_t n, uint32_t seed, const char *what);

/* A JSON line on stdout: {"bench":"harm","row":ROW,"cudart":...,"label":...,
 * then the extra fields (already formatted: "\"bytes\":1,\"ms\":2"), "ok"}. */
void harm_emit(const char *row, const char *label, const char *fields, int ok);

/* What the process holds at its end: free device memory on each device in
 * devs (cudaMemGetInfo) and the userfaultfd registrations of its address
 * space (mappings whose VmFlags carry "um" or "uw" in /proc/self/smaps,
 * and userfaultfd descriptors). Emitted as the process line of ROW. */
void harm_emit_held(const char *row, const char *label, const int *devs, int ndevs, int ok);

#endif
