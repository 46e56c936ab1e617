/* Cross-GPU copies of mapped (VMM) and pool memory, the way ggml and
 * CuPy/RMM make them, two GPUs, byte for byte:
 *   vmm   cuMemCreate + cuMemAddressReserve + cuMemMap on each device, the
 *         handle released after mapping, access granted to the owner only
 *         (as ggml's VMM pool does); cudaMemcpyPeerAsync 0->1 and 1->0,
 *         then cudaMemcpyAsync (cudaMemcpyDefault) 0->1, then the left
 *         half of every row 0->1 and 1->0 as ggml's row split gathers
 *         (cudaMemcpy3DPeerAsync) and with cudaMemcpy2DAsync; then a pool
 *         grown as ggml's is (a second allocation mapped right after the
 *         first in one reservation) and buffers that straddle the seam
 *         copied 0->1 and 1->0 (cudaMemcpyPeerAsync).
 *   pool  cudaMemPoolCreate on each device (private pools, as RMM's
 *         cuda_async_memory_resource and CuPy's MemoryAsyncPool), then
 *         cudaMallocFromPoolAsync and cudaMemcpyPeerAsync 0->1, 1->0,
 *         pool to ordinary device memory and back; then the same 0->1
 *         after the program grants the pools to each other itself, and
 *         a granted pool to ordinary device memory and back (under the
 *         shim a direct peer copy, not a relay).
 * Each copy is checked byte for byte and timed (GB/s printed). What the
 * program can observe of access is read before and after every copy
 * (cuMemGetAccess on the mappings, cudaMemPoolGetAccess on the pools) and
 * must not change. Usage: vmm_pool_copy [--mib N] [--expect-peer-vmm]
 * [--expect-peer-pool] (--expect-peer-vmm: every VMM copy must be accepted
 * and run above 100 GB/s, which the staged path, about 37 GB/s on H200
 * NVLink, never reaches; --expect-peer-pool: so must every pool copy made
 * before the program's own grant, which the shim relays). Without the shim a cudaMemcpyAsync the driver refuses is
 * printed as a note (what the driver answers is worth knowing).
 * Exits 77 with fewer than two GPUs. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <string.h>

#include "gpu_test.h"

/* The driver functions, fetched through cudart (no link to libcuda, so the
 * program loads, and skips, where there is no driver). */
#define DRIVER_FUNCS(X)                                                       \
    X(cuGetErrorName, 6000) X(cuMemGetAllocationGranularity, 10020)           \
    X(cuMemCreate, 10020) X(cuMemAddressReserve, 10020) X(cuMemMap, 10020)    \
    X(cuMemRelease, 10020) X(cuMemSetAccess, 10020) X(cuMemUnmap, 10020)      \
    X(cuMemAddressFree, 10020) X(cuMemGetAccess, 10020)
#define DECLARE(name, v) static PFN_##name##_v##v p_##name;
DRIVER_FUNCS(DECLARE)
#undef DECLARE

static void load_driver_funcs(void)
{
    cudaDriverEntryPointQueryResult q;
#define LOAD(name, v)                                                         \
    GT_CHECK(cudaGetDriverEntryPointByVersion(#name, (void **)&p_##name, v,   \
                                              cudaEnableDefault, &q));        \
    if (q != cudaDriverEntryPointSuccess || p_##name == NULL) {               \
        fprintf(stderr, "FAIL: driver entry point %s not found\n", #name);    \
        exit(1);                                                              \
    }
    DRIVER_FUNCS(LOAD)
#undef LOAD
}
#define cuGetErrorName p_cuGetErrorName
#define cuMemGetAllocationGranularity p_cuMemGetAllocationGranularity
#define cuMemCreate p_cuMemCreate
#define cuMemAddressReserve p_cuMemAddressReserve
#define cuMemMap p_cuMemMap
#define cuMemRelease p_cuMemRelease
#define cuMemSetAccess p_cuMemSetAccess
#define cuMemUnmap p_cuMemUnmap
#define cuMemAddressFree p_cuMemAddressFree
#define cuMemGetAccess p_cuMemGetAccess

#define CU_CHECK(call)                                                        \
    do {                                                                      \
        CUresult r_ = (call);                                                 \
        if (r_ != CUDA_SUCCESS) {                                             \
            const char *n_ = "?";                                             \
            cuGetErrorName(r_, &n_);                                          \
            fprintf(stderr, "FAIL %s:%d: %s returned %s\n", __FILE__, __LINE__, #call, n_); \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static int failures;

struct vmm_buf {
    CUdeviceptr va;
    size_t size;
};

/* bytes rounded up to dev's recommended granularity. */
static size_t vmm_round(int dev, size_t bytes)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t gran = 0;
    CU_CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    return (bytes + gran - 1) / gran * gran;
}

static struct vmm_buf vmm_alloc(int dev, size_t bytes)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    struct vmm_buf b;
    b.size = vmm_round(dev, bytes);
    CUmemGenericAllocationHandle h;
    CU_CHECK(cuMemCreate(&h, b.size, &prop, 0));
    CU_CHECK(cuMemAddressReserve(&b.va, b.size, 0, 0, 0));
    CU_CHECK(cuMemMap(b.va, b.size, 0, h, 0));
    CU_CHECK(cuMemRelease(h));
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU_CHECK(cuMemSetAccess(b.va, b.size, &acc, 1));
    return b;
}

static void vmm_free(struct vmm_buf b)
{
    CU_CHECK(cuMemUnmap(b.va, b.size));
    CU_CHECK(cuMemAddressFree(b.va, b.size));
}

/* cuMemGetAccess of va for devices 0 and 1, packed. */
static unsigned vmm_access(CUdeviceptr va)
{
    unsigned packed = 0;
    for (int d = 0; d < 2; d++) {
        CUmemLocation loc;
        memset(&loc, 0, sizeof loc);
        loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
        loc.id = d;
        unsigned long long fl = 0;
        CU_CHECK(cuMemGetAccess(&fl, &loc, va));
        packed |= (unsigned)fl << (4 * d);
    }
    return packed;
}

static unsigned pool_access(cudaMemPool_t pool)
{
    unsigned packed = 0;
    for (int d = 0; d < 2; d++) {
        cudaMemLocation loc;
        memset(&loc, 0, sizeof loc);
        loc.type = cudaMemLocationTypeDevice;
        loc.id = d;
        cudaMemAccessFlags fl = cudaMemAccessFlagsProtNone;
        GT_CHECK(cudaMemPoolGetAccess(&fl, pool, &loc));
        packed |= (unsigned)fl << (4 * d);
    }
    return packed;
}

/* Fills dev's n bytes at p with a pattern of seed (through the host). */
static void fill(void *p, size_t n, unsigned seed, unsigned char *host)
{
    for (size_t i = 0; i < n; i++)
        host[i] = (unsigned char)(i * 131u + seed * 7u + (i >> 12));
    GT_CHECK(cudaMemcpy(p, host, n, cudaMemcpyHostToDevice));
}

#define ROW_PITCH ((size_t)64 << 10) /* of the 2D copies (enum api) */

/* half: a 2D copy's destination, the right half of each row zero. */
static void verify(const char *what, const void *p, size_t n, unsigned seed, unsigned char *host,
                   bool half = false)
{
    GT_CHECK(cudaMemcpy(host, p, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
        if (host[i] != (half && i % ROW_PITCH >= ROW_PITCH / 2
                            ? 0
                            : (unsigned char)(i * 131u + seed * 7u + (i >> 12)))) {
            printf("FAIL %s: byte %zu is %u\n", what, i, host[i]);
            failures++;
            return;
        }
}

/* PEER_2D and ASYNC_2D: the left half of every row of ROW_PITCH bytes, as
 * ggml's row split gathers between GPUs (ggml_cuda_Memcpy2DPeerAsync:
 * cudaMemcpy3DPeerAsync of depth 1; cudaMemcpy2DAsync elsewhere). */
enum api { PEER, DEFAULT, PEER_2D, ASYNC_2D };

static cudaError_t issue(void *dst, int ddev, const void *src, int sdev, size_t n, enum api api,
                         cudaStream_t s)
{
    size_t w = ROW_PITCH / 2, rows = n / ROW_PITCH;
    cudaMemcpy3DPeerParms p;
    memset(&p, 0, sizeof p);
    p.dstDevice = ddev;
    p.dstPtr = make_cudaPitchedPtr(dst, ROW_PITCH, ROW_PITCH, rows);
    p.srcDevice = sdev;
    p.srcPtr = make_cudaPitchedPtr((void *)src, ROW_PITCH, ROW_PITCH, rows);
    p.extent = make_cudaExtent(w, rows, 1);
    return api == PEER      ? cudaMemcpyPeerAsync(dst, ddev, src, sdev, n, s)
           : api == DEFAULT ? cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s)
           : api == PEER_2D ? cudaMemcpy3DPeerAsync(&p, s)
                            : cudaMemcpy2DAsync(dst, ROW_PITCH, src, ROW_PITCH, w, rows,
                                                cudaMemcpyDeviceToDevice, s);
}

/* One timed copy of n bytes (a 2D one moves half of them), issued on a
 * stream of device sdev; GB/s of the bytes moved, -1 when refused. */
static double timed_copy(void *dst, int ddev, const void *src, int sdev, size_t n, enum api api)
{
    cudaStream_t s;
    cudaEvent_t e0, e1;
    GT_CHECK(cudaSetDevice(sdev));
    GT_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    GT_CHECK(cudaEventCreate(&e0));
    GT_CHECK(cudaEventCreate(&e1));
    GT_CHECK(cudaEventRecord(e0, s));
    if (api == PEER) {
        GT_CHECK(issue(dst, ddev, src, sdev, n, api, s));
    } else {
        /* Without a grant the driver may refuse a non-Peer copy of mapped
         * memory (ggml says so of cudaMemcpy2DAsync): said, not fatal (the
         * stand-in models what is seen here). */
        cudaError_t e = issue(dst, ddev, src, sdev, n, api, s);
        if (e != cudaSuccess) {
            printf("note: api %d between devices returned %s (%d)\n", (int)api,
                   cudaGetErrorName(e), (int)e);
            cudaGetLastError();
            GT_CHECK(cudaStreamSynchronize(s));
            GT_CHECK(cudaStreamDestroy(s));
            return -1;
        }
    }
    GT_CHECK(cudaEventRecord(e1, s));
    GT_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    GT_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    GT_CHECK(cudaEventDestroy(e0));
    GT_CHECK(cudaEventDestroy(e1));
    GT_CHECK(cudaStreamDestroy(s));
    return (double)(api >= PEER_2D ? n / 2 : n) / (ms * 1e6);
}

static void vmm_case(size_t n, bool expect_peer, unsigned char *host)
{
    struct vmm_buf b0 = vmm_alloc(0, n), b1 = vmm_alloc(1, n);
    unsigned a0 = vmm_access(b0.va), a1 = vmm_access(b1.va);
    void *p0 = (void *)(uintptr_t)b0.va, *p1 = (void *)(uintptr_t)b1.va;
    const struct { void *dst; int ddev; void *src; int sdev; enum api api; const char *what; } c[] = {
        {p1, 1, p0, 0, PEER, "vmm 0->1 cudaMemcpyPeerAsync"},
        {p0, 0, p1, 1, PEER, "vmm 1->0 cudaMemcpyPeerAsync"},
        {p1, 1, p0, 0, DEFAULT, "vmm 0->1 cudaMemcpyAsync"},
        {p1, 1, p0, 0, PEER_2D, "vmm 0->1 cudaMemcpy3DPeerAsync 2D"},
        {p0, 0, p1, 1, PEER_2D, "vmm 1->0 cudaMemcpy3DPeerAsync 2D"},
        {p1, 1, p0, 0, ASYNC_2D, "vmm 0->1 cudaMemcpy2DAsync"},
        {p0, 0, p1, 1, ASYNC_2D, "vmm 1->0 cudaMemcpy2DAsync"},
    };
    for (unsigned i = 0; i < sizeof c / sizeof c[0]; i++) {
        unsigned seed = 10 + i;
        fill(c[i].src, n, seed, host);
        GT_CHECK(cudaSetDevice(c[i].ddev));
        GT_CHECK(cudaMemset(c[i].dst, 0, n));
        GT_CHECK(cudaDeviceSynchronize());
        cudaGetLastError();
        double gbps = timed_copy(c[i].dst, c[i].ddev, c[i].src, c[i].sdev, n, c[i].api);
        if (gbps < 0 && expect_peer) {
            printf("FAIL %s: refused under the shim\n", c[i].what);
            failures++;
        }
        if (gbps >= 0)
            verify(c[i].what, c[i].dst, n, seed, host, c[i].api >= PEER_2D);
        printf("%s: %zu MiB %.1f GB/s\n", c[i].what, n >> 20, gbps);
        if (expect_peer && gbps >= 0 && gbps < 100) {
            printf("FAIL %s: %.1f GB/s, not a peer copy\n", c[i].what, gbps);
            failures++;
        }
        if (vmm_access(b0.va) != a0 || vmm_access(b1.va) != a1) {
            printf("FAIL %s: cuMemGetAccess changed: %#x %#x, was %#x %#x\n", c[i].what,
                   vmm_access(b0.va), vmm_access(b1.va), a0, a1);
            failures++;
        }
    }
    vmm_free(b0);
    vmm_free(b1);
}

/* Grants the other device read and write access to pool[d], as a program
 * that wants its pool copies to ride the link does itself. */
static void grant(cudaMemPool_t pool, int other)
{
    cudaMemAccessDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.location.type = cudaMemLocationTypeDevice;
    desc.location.id = other;
    desc.flags = cudaMemAccessFlagsProtReadWrite;
    GT_CHECK(cudaMemPoolSetAccess(pool, &desc, 1));
}

/* One pool copy, timed after a warm-up round (the shim's first relay of a
 * pair checks the link and makes its buffers), checked byte for byte. */
static double pool_copy(const char *what, void *dst, int ddev, void *src, int sdev, size_t n,
                        enum api api, unsigned seed, bool expect_peer, unsigned char *host)
{
    fill(src, n, seed, host);
    (void)timed_copy(dst, ddev, src, sdev, n, api);
    double gbps = timed_copy(dst, ddev, src, sdev, n, api);
    verify(what, dst, n, seed, host);
    printf("%s: %zu MiB %.1f GB/s\n", what, n >> 20, gbps);
    if (expect_peer && gbps < 100) {
        printf("FAIL %s: %.1f GB/s, not over the link\n", what, gbps);
        failures++;
    }
    return gbps;
}


/* A pool like ggml's VMM pool on device dev: one reservation of two
 * chunks, grown by a second allocation mapped right after the first, each
 * chunk granted to its owner only. */
struct vmm_span {
    CUdeviceptr va;
    size_t chunk;
};

static void vmm_map_chunk(int dev, CUdeviceptr at, size_t size)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    CUmemGenericAllocationHandle h;
    CU_CHECK(cuMemCreate(&h, size, &prop, 0));
    CU_CHECK(cuMemMap(at, size, 0, h, 0));
    CU_CHECK(cuMemRelease(h));
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU_CHECK(cuMemSetAccess(at, size, &acc, 1));
}

static struct vmm_span vmm_span_alloc(int dev, size_t n)
{
    struct vmm_span sp;
    sp.chunk = vmm_round(dev, n);
    CU_CHECK(cuMemAddressReserve(&sp.va, 2 * sp.chunk, 0, 0, 0));
    vmm_map_chunk(dev, sp.va, sp.chunk);
    vmm_map_chunk(dev, sp.va + sp.chunk, sp.chunk);
    return sp;
}

/* Copies of n bytes that straddle the seam of the two chunks (ggml's bump
 * allocator hands such buffers out), 0->1 and 1->0 with
 * cudaMemcpyPeerAsync: bytes, speed, both chunks' access unchanged. Then
 * device 0's second chunk is unmapped and the copy over the seam tried
 * again: the driver's answer is printed (the same with and without the
 * shim). */
static void vmm_straddle_case(size_t n, bool expect_peer, unsigned char *host)
{
    struct vmm_span sp[2] = {vmm_span_alloc(0, n), vmm_span_alloc(1, n)};
    void *buf[2];
    unsigned acc[2][2];
    for (int d = 0; d < 2; d++) {
        buf[d] = (void *)(uintptr_t)(sp[d].va + sp[d].chunk - n / 2);
        for (int c = 0; c < 2; c++)
            acc[d][c] = vmm_access(sp[d].va + c * sp[d].chunk);
    }
    for (int from = 0; from < 2; from++) {
        int to = 1 - from;
        char what[64];
        snprintf(what, sizeof what, "vmm straddling %d->%d cudaMemcpyPeerAsync", from, to);
        fill(buf[from], n, 20 + from, host);
        GT_CHECK(cudaSetDevice(to));
        GT_CHECK(cudaMemset(buf[to], 0, n));
        GT_CHECK(cudaDeviceSynchronize());
        double gbps = timed_copy(buf[to], to, buf[from], from, n, PEER);
        verify(what, buf[to], n, 20 + from, host);
        printf("%s: %zu MiB %.1f GB/s\n", what, n >> 20, gbps);
        if (expect_peer && gbps < 100) {
            printf("FAIL %s: %.1f GB/s, not a peer copy\n", what, gbps);
            failures++;
        }
        for (int d = 0; d < 2; d++)
            for (int c = 0; c < 2; c++)
                if (vmm_access(sp[d].va + c * sp[d].chunk) != acc[d][c]) {
                    printf("FAIL %s: cuMemGetAccess changed on device %d chunk %d\n", what, d, c);
                    failures++;
                }
    }
    GT_CHECK(cudaSetDevice(0));
    CU_CHECK(cuMemUnmap(sp[0].va + sp[0].chunk, sp[0].chunk));
    cudaError_t e = cudaMemcpyPeerAsync(buf[1], 1, buf[0], 0, n, GT_STREAM);
    cudaError_t w = cudaStreamSynchronize(GT_STREAM);
    printf("note: a copy over an unmapped seam returned %s, then %s\n", cudaGetErrorName(e),
           cudaGetErrorName(w));
    cudaGetLastError();
    CU_CHECK(cuMemUnmap(sp[0].va, sp[0].chunk));
    CU_CHECK(cuMemAddressFree(sp[0].va, 2 * sp[0].chunk));
    CU_CHECK(cuMemUnmap(sp[1].va, 2 * sp[1].chunk));
    CU_CHECK(cuMemAddressFree(sp[1].va, 2 * sp[1].chunk));
}
/* expect_peer: the copies before the program's own grant must run above
 * 100 GB/s (the shim relays them through its own buffers). */
static void pool_case(size_t n, bool expect_peer, unsigned char *host)
{
    cudaMemPool_t pool[2];
    void *p[2], *d1 = NULL;
    for (int d = 0; d < 2; d++) {
        cudaMemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = d;
        GT_CHECK(cudaSetDevice(d));
        GT_CHECK(cudaMemPoolCreate(&pool[d], &props));
        GT_CHECK(cudaMallocFromPoolAsync(&p[d], n, pool[d], GT_STREAM));
        GT_CHECK(cudaStreamSynchronize(GT_STREAM));
    }
    GT_CHECK(cudaMalloc(&d1, n)); /* ordinary memory on device 1 */
    unsigned a0 = pool_access(pool[0]), a1 = pool_access(pool[1]);
    pool_copy("pool 0->1 cudaMemcpyPeerAsync", p[1], 1, p[0], 0, n, PEER, 21, expect_peer, host);
    pool_copy("pool 1->0 cudaMemcpyPeerAsync", p[0], 0, p[1], 1, n, PEER, 22, expect_peer, host);
    pool_copy("pool 0->device 1 cudaMemcpyPeerAsync", d1, 1, p[0], 0, n, PEER, 23, expect_peer,
              host);
    pool_copy("device 1->pool 0 cudaMemcpyPeerAsync", p[0], 0, d1, 1, n, PEER, 24, expect_peer,
              host);
    if (pool_access(pool[0]) != a0 || pool_access(pool[1]) != a1) {
        printf("FAIL pool: cudaMemPoolGetAccess changed\n");
        failures++;
    }
    /* What the program gets by granting access itself, for comparison. */
    grant(pool[0], 1);
    grant(pool[1], 0);
    pool_copy("pool 0->1 granted by the program", p[1], 1, p[0], 0, n, PEER, 25, false, host);
    /* A granted pool end with an ordinary one: under the shim a direct
     * peer copy (the shim's link enabled from the issuing device), no
     * relay; it must run over the link too. */
    pool_copy("pool 0->device 1 granted by the program", d1, 1, p[0], 0, n, PEER, 26,
              expect_peer, host);
    pool_copy("device 1->pool 0 granted by the program", p[0], 0, d1, 1, n, PEER, 27,
              expect_peer, host);
    GT_CHECK(cudaFree(d1));
    for (int d = 0; d < 2; d++) {
        GT_CHECK(cudaSetDevice(d));
        GT_CHECK(cudaFreeAsync(p[d], GT_STREAM));
        GT_CHECK(cudaStreamSynchronize(GT_STREAM));
        GT_CHECK(cudaMemPoolDestroy(pool[d]));
    }
}

int main(int argc, char **argv)
{
    size_t mib = 256;
    bool expect_peer = false, expect_peer_pool = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
            mib = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--expect-peer-vmm") == 0)
            expect_peer = true;
        else if (strcmp(argv[i], "--expect-peer-pool") == 0)
            expect_peer_pool = true;
    }
    gt_require_gpus("vmm_pool_copy", 2);
    load_driver_funcs();
    int can01 = 0, can10 = 0;
    GT_CHECK(cudaDeviceCanAccessPeer(&can01, 0, 1));
    GT_CHECK(cudaDeviceCanAccessPeer(&can10, 1, 0));
    if (!can01 || !can10) {
        printf("vmm_pool_copy: SKIP: devices 0 and 1 cannot peer\n");
        return GT_SKIP;
    }
    for (int d = 0; d < 2; d++) {
        GT_CHECK(cudaSetDevice(d));
        GT_CHECK(cudaFree(0)); /* the primary contexts, as any cudart program */
    }
    size_t n = mib << 20;
    unsigned char *host = NULL;
    GT_CHECK(cudaMallocHost((void **)&host, n));
    vmm_case(n, expect_peer, host);
    vmm_straddle_case(n, expect_peer, host);
    pool_case(n, expect_peer_pool, host);
    GT_CHECK(cudaFreeHost(host));
    printf("vmm_pool_copy (%s cudart, %s stream): %s\n", P2PSHIM_CUDART, GT_STREAM_MODE,
           failures ? "FAIL" : "ok");
    return failures ? 1 : 0;
}
