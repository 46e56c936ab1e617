/* Kernels shared by the GPU tests and the benchmark: a position- and
 * seed-dependent byte pattern, its verification on the GPU, a checksum, and
 * a "busy" kernel that holds a stream for a while before it writes.
 *
 * Every function launches on the CURRENT device, on the stream given, and
 * returns the launch's error (or cudaErrorInvalidValue for bad arguments);
 * the *_sync forms also wait for the stream and report the kernel's error.
 * Nothing here calls cudaMemcpy* between devices or enables peer access, so
 * the path a test observes is the path of its own copies.
 *
 * Results come back through __device__ variables read with
 * cudaMemcpyFromSymbolAsync (one small device-to-host copy per call): they
 * are per device and survive cudaDeviceReset (the module is loaded again).
 * Hence at most one verify and one checksum may be in flight per device at a
 * time; the *_sync forms respect that by construction. */
#ifndef P2PSHIM_KERNELS_PATTERN_CUH
#define P2PSHIM_KERNELS_PATTERN_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

/* The pattern word for word index w (bytes 4w..4w+3, little-endian): a
 * splitmix64 finaliser of (w, seed), so neighbouring words, neighbouring
 * seeds and shifted copies all differ. */
static __host__ __device__ __forceinline__ uint32_t p2pk_pattern_word(uint32_t seed,
                                                                     uint64_t w)
{
    uint64_t z = w * 0x9E3779B97F4A7C15ull + ((uint64_t)seed << 32 | 0x5bd1e995u) +
                 (uint64_t)seed * 0xD6E8FEB86659FD93ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (uint32_t)(z ^ (z >> 32));
}

/* The pattern byte at offset i. */
static __host__ __device__ __forceinline__ uint8_t p2pk_pattern_byte(uint32_t seed,
                                                                    uint64_t i)
{
    return (uint8_t)(p2pk_pattern_word(seed, i >> 2) >> (8 * (unsigned)(i & 3)));
}

/* What a verification found. first_bad is an offset into the verified
 * buffer (destination layout), P2PK_NO_BAD when everything matched; got and
 * expected are the bytes at first_bad. */
#define P2PK_NO_BAD 0xFFFFFFFFFFFFFFFFull
typedef struct p2pk_verify_result {
    unsigned long long mismatches;
    unsigned long long first_bad;
    unsigned int got;
    unsigned int expected;
} p2pk_verify_result;

/* Writes the pattern of seed into buf[0..n). buf must be 4-byte aligned
 * (cudaMalloc memory is). */
cudaError_t p2pk_fill(void *buf, size_t n, uint32_t seed, cudaStream_t s);

/* Keeps the stream (and some SMs) busy for at least usec microseconds of
 * GPU time, measured with %globaltimer, then writes the pattern of seed into
 * buf[0..n) if buf is not NULL. Used to leave work pending on a device while
 * the host issues a copy that must be ordered after it. */
cudaError_t p2pk_busy(unsigned int usec, void *buf, size_t n, uint32_t seed,
                      cudaStream_t s);

/* Verifies a (possibly pitched) destination: rows rows of pitch bytes at
 * buf. In each row r, bytes [0, width) must equal the pattern byte at source
 * offset r * src_pitch + c; bytes [width, pitch) must equal pad_byte when
 * pad_byte >= 0 (the destination's fill before the copy) and are ignored
 * when pad_byte < 0. A linear buffer is rows = 1, pitch = width =
 * src_pitch = n.
 *
 * _async only launches kernels (no copy of any kind, so it may sit inside a
 * CUPTI window); p2pk_verify_read_sync then fetches the result with one
 * small device-to-host copy on the same stream and waits for the stream.
 * _sync does both. *out is valid on cudaSuccess. */
cudaError_t p2pk_verify_2d_async(const void *buf, size_t pitch, size_t width,
                                 size_t rows, size_t src_pitch, uint32_t seed,
                                 int pad_byte, cudaStream_t s);
cudaError_t p2pk_verify_read_sync(p2pk_verify_result *out, cudaStream_t s);
cudaError_t p2pk_verify_2d_sync(const void *buf, size_t pitch, size_t width,
                                size_t rows, size_t src_pitch, uint32_t seed,
                                int pad_byte, p2pk_verify_result *out,
                                cudaStream_t s);

/* The linear case of p2pk_verify_2d_sync. */
cudaError_t p2pk_verify_sync(const void *buf, size_t n, uint32_t seed,
                             p2pk_verify_result *out, cudaStream_t s);

/* An order-independent 64-bit checksum of buf[0..n): the sum over 32-bit
 * words of a hash of (word, index). n must be a multiple of 4 and buf 4-byte
 * aligned. Equal bytes give equal sums on any device and in any run. */
cudaError_t p2pk_checksum_sync(const void *buf, size_t n, unsigned long long *out,
                               cudaStream_t s);

/* The same checksum computed on the host over host bytes (for comparisons
 * and for the tests of this file). */
unsigned long long p2pk_checksum_host(const void *buf, size_t n);

#endif
