/* Pattern, verification, checksum and busy kernels; see pattern.cuh. */
#include "pattern.cuh"

#include <limits.h>

/* Launch shape: enough blocks to cover an H200 (132 SMs) a few times over;
 * grid-stride loops do the rest. */
#define P2PK_THREADS 256
#define P2PK_MAX_BLOCKS 1056

/* Per-device results (see the header for why they are globals). */
__device__ p2pk_verify_result p2pk_g_verify;
__device__ unsigned long long p2pk_g_checksum;

static __host__ __device__ __forceinline__ unsigned long long p2pk_mix64(unsigned long long z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static __host__ __device__ __forceinline__ unsigned long long p2pk_checksum_term(uint32_t word,
                                                                              uint64_t w)
{
    return p2pk_mix64(((unsigned long long)word << 32) ^ (w * 0x9E3779B97F4A7C15ull));
}

static unsigned int blocks_for(size_t items)
{
    size_t b = (items + P2PK_THREADS - 1) / P2PK_THREADS;
    if (b == 0)
        b = 1;
    return b > P2PK_MAX_BLOCKS ? P2PK_MAX_BLOCKS : (unsigned int)b;
}

static __device__ __forceinline__ unsigned long long globaltimer_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Writes whole words, then the tail bytes (thread 0 of block 0). */
static __device__ void fill_body(uint8_t *buf, size_t n, uint32_t seed)
{
    size_t nwords = n / 4;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    uint32_t *words = (uint32_t *)buf;
    for (size_t w = (size_t)blockIdx.x * blockDim.x + threadIdx.x; w < nwords; w += stride)
        words[w] = p2pk_pattern_word(seed, w);
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (size_t i = nwords * 4; i < n; i++)
            buf[i] = p2pk_pattern_byte(seed, i);
}

static __global__ void fill_kernel(uint8_t *buf, size_t n, uint32_t seed)
{
    fill_body(buf, n, seed);
}

/* Every block spins on its own clock: blocks that start late (more blocks
 * than fit at once) only lengthen the wait, which is what the callers want. */
static __global__ void busy_kernel(unsigned long long ns, uint8_t *buf, size_t n,
                                   uint32_t seed)
{
    if (threadIdx.x == 0) {
        unsigned long long start = globaltimer_ns();
        while (globaltimer_ns() - start < ns) {
        }
    }
    __syncthreads();
    if (buf != NULL)
        fill_body(buf, n, seed);
}

static __global__ void verify_reset_kernel(void)
{
    p2pk_g_verify.mismatches = 0;
    p2pk_g_verify.first_bad = P2PK_NO_BAD;
    p2pk_g_verify.got = 0;
    p2pk_g_verify.expected = 0;
}

static __device__ __forceinline__ int expected_byte(size_t off, size_t pitch, size_t width,
                                                    size_t src_pitch, uint32_t seed,
                                                    int pad_byte)
{
    size_t r = off / pitch, c = off % pitch;
    if (c < width)
        return p2pk_pattern_byte(seed, (uint64_t)r * src_pitch + c);
    return pad_byte;   /* < 0: not checked */
}

static __global__ void verify_kernel(const uint8_t *buf, size_t pitch, size_t width,
                                     size_t rows, size_t src_pitch, uint32_t seed,
                                     int pad_byte)
{
    size_t total = pitch * rows;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long bad = 0, first = P2PK_NO_BAD;
    for (size_t off = (size_t)blockIdx.x * blockDim.x + threadIdx.x; off < total;
         off += stride) {
        int want = expected_byte(off, pitch, width, src_pitch, seed, pad_byte);
        if (want >= 0 && buf[off] != (uint8_t)want) {
            if (bad++ == 0)
                first = off;
        }
    }
    if (bad != 0) {
        atomicAdd(&p2pk_g_verify.mismatches, bad);
        atomicMin(&p2pk_g_verify.first_bad, first);
    }
}

static __global__ void verify_finish_kernel(const uint8_t *buf, size_t pitch, size_t width,
                                            size_t src_pitch, uint32_t seed, int pad_byte)
{
    unsigned long long off = p2pk_g_verify.first_bad;
    if (off != P2PK_NO_BAD) {
        p2pk_g_verify.got = buf[off];
        p2pk_g_verify.expected =
            (unsigned int)expected_byte(off, pitch, width, src_pitch, seed, pad_byte);
    }
}

static __global__ void checksum_reset_kernel(void)
{
    p2pk_g_checksum = 0;
}

static __global__ void checksum_kernel(const uint32_t *words, size_t nwords)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long sum = 0;
    for (size_t w = (size_t)blockIdx.x * blockDim.x + threadIdx.x; w < nwords; w += stride)
        sum += p2pk_checksum_term(words[w], w);
    atomicAdd(&p2pk_g_checksum, sum);   /* wrapping sum: order-independent */
}

cudaError_t p2pk_fill(void *buf, size_t n, uint32_t seed, cudaStream_t s)
{
    if (buf == NULL || ((uintptr_t)buf & 3) != 0)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    fill_kernel<<<blocks_for(n / 4), P2PK_THREADS, 0, s>>>((uint8_t *)buf, n, seed);
    return cudaGetLastError();
}

cudaError_t p2pk_busy(unsigned int usec, void *buf, size_t n, uint32_t seed,
                      cudaStream_t s)
{
    if (buf != NULL && ((uintptr_t)buf & 3) != 0)
        return cudaErrorInvalidValue;
    /* At least a couple of blocks per SM so the device is visibly occupied;
     * the fill then reuses the same grid. */
    busy_kernel<<<264, P2PK_THREADS, 0, s>>>((unsigned long long)usec * 1000ull,
                                             (uint8_t *)buf, buf ? n : 0, seed);
    return cudaGetLastError();
}

cudaError_t p2pk_verify_2d_async(const void *buf, size_t pitch, size_t width, size_t rows,
                                 size_t src_pitch, uint32_t seed, int pad_byte,
                                 cudaStream_t s)
{
    cudaError_t rc;
    if (buf == NULL || width > pitch || pad_byte > 255 || (rows > 1 && src_pitch < width))
        return cudaErrorInvalidValue;
    verify_reset_kernel<<<1, 1, 0, s>>>();
    if ((rc = cudaGetLastError()) != cudaSuccess)
        return rc;
    verify_kernel<<<blocks_for(pitch * rows), P2PK_THREADS, 0, s>>>(
        (const uint8_t *)buf, pitch, width, rows, src_pitch, seed, pad_byte);
    if ((rc = cudaGetLastError()) != cudaSuccess)
        return rc;
    verify_finish_kernel<<<1, 1, 0, s>>>((const uint8_t *)buf, pitch, width, src_pitch,
                                         seed, pad_byte);
    return cudaGetLastError();
}

cudaError_t p2pk_verify_read_sync(p2pk_verify_result *out, cudaStream_t s)
{
    cudaError_t rc;
    if (out == NULL)
        return cudaErrorInvalidValue;
    rc = cudaMemcpyFromSymbolAsync(out, p2pk_g_verify, sizeof *out, 0,
                                   cudaMemcpyDeviceToHost, s);
    if (rc != cudaSuccess)
        return rc;
    return cudaStreamSynchronize(s);
}

cudaError_t p2pk_verify_2d_sync(const void *buf, size_t pitch, size_t width, size_t rows,
                                size_t src_pitch, uint32_t seed, int pad_byte,
                                p2pk_verify_result *out, cudaStream_t s)
{
    cudaError_t rc;
    if (out == NULL)
        return cudaErrorInvalidValue;
    rc = p2pk_verify_2d_async(buf, pitch, width, rows, src_pitch, seed, pad_byte, s);
    if (rc != cudaSuccess)
        return rc;
    return p2pk_verify_read_sync(out, s);
}

cudaError_t p2pk_verify_sync(const void *buf, size_t n, uint32_t seed,
                             p2pk_verify_result *out, cudaStream_t s)
{
    if (n == 0) {
        if (out == NULL)
            return cudaErrorInvalidValue;
        out->mismatches = 0;
        out->first_bad = P2PK_NO_BAD;
        out->got = out->expected = 0;
        return cudaSuccess;
    }
    return p2pk_verify_2d_sync(buf, n, n, 1, n, seed, -1, out, s);
}

cudaError_t p2pk_checksum_sync(const void *buf, size_t n, unsigned long long *out,
                               cudaStream_t s)
{
    cudaError_t rc;
    if (buf == NULL || out == NULL || ((uintptr_t)buf & 3) != 0 || (n & 3) != 0)
        return cudaErrorInvalidValue;
    checksum_reset_kernel<<<1, 1, 0, s>>>();
    if ((rc = cudaGetLastError()) != cudaSuccess)
        return rc;
    if (n != 0) {
        checksum_kernel<<<blocks_for(n / 4), P2PK_THREADS, 0, s>>>((const uint32_t *)buf,
                                                                   n / 4);
        if ((rc = cudaGetLastError()) != cudaSuccess)
            return rc;
    }
    rc = cudaMemcpyFromSymbolAsync(out, p2pk_g_checksum, sizeof *out, 0,
                                   cudaMemcpyDeviceToHost, s);
    if (rc != cudaSuccess)
        return rc;
    return cudaStreamSynchronize(s);
}

unsigned long long p2pk_checksum_host(const void *buf, size_t n)
{
    const uint8_t *b = (const uint8_t *)buf;
    unsigned long long sum = 0;
    for (size_t w = 0; w < n / 4; w++) {
        uint32_t word = (uint32_t)b[4 * w] | (uint32_t)b[4 * w + 1] << 8 |
                        (uint32_t)b[4 * w + 2] << 16 | (uint32_t)b[4 * w + 3] << 24;
        sum += p2pk_checksum_term(word, w);
    }
    return sum;
}
