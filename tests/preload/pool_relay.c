/* Cross-GPU copies of pool memory: "pool_relay shim|noshim". With the
 * shim, every linear copy of at least 1 MiB with a pool end crosses the
 * link through the shim's own buffers (the stand-in counts it peer, its
 * bytes all arrive) while the program's pools keep their access lists
 * (cuMemPoolGetAccess answers as before, no grant is counted on them);
 * without it, the same copies are staged. Each case has work pending on
 * the program's stream before the copy (it writes the source) and after it
 * (it overwrites the source, and reads the destination through an event),
 * so a relay out of the program's stream order shows as wrong bytes. The
 * transcript (the cases' names, the stand-in's leak report lines with
 * STANDIN_LEAK_REPORT=1) is the same with and without the shim: nothing
 * of the relay's is alive at a context's end or at exit.
 * "pool_relay shim|noshim threads": four threads relay at once, each on a
 * stream of its own (ThreadSanitizer runs it). "pool_relay shim|noshim
 * streams": a relay on one stream completes while another stream, whose
 * relay was issued first, is held. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pl_common.h"

/* Not a multiple of the relay's chunk: the last one is partial. */
#define N (((size_t)8 << 20) + 12345)
#define SMALL ((size_t)64 << 10)

static struct pl_env env;
static int shim;
static unsigned seed = 7;
static CUstream s0, s1;

static CUdeviceptr pool_alloc(int dev, size_t n)
{
    CUdeviceptr p = 0;
    pl_use(env.ctx[dev]);
    PL_OK(cuMemAllocAsync(&p, n, NULL));
    PL_OK(cuStreamSynchronize(NULL));
    return p;
}

static void pool_free(int dev, CUdeviceptr p)
{
    pl_use(env.ctx[dev]);
    PL_OK(cuMemFreeAsync(p, NULL));
    PL_OK(cuStreamSynchronize(NULL));
}

/* Device 1's access to device 0's default pool and device 0's to device
 * 1's, as the program reads them: 0 = none (2 bits each). */
static int pool_access(void)
{
    int out = 0;
    for (int dev = 0; dev < 2; dev++) {
        CUmemoryPool pool;
        CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 1 - dev};
        CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_NONE;
        PL_OK(cuDeviceGetDefaultMemPool(&pool, dev));
        PL_OK(cuMemPoolGetAccess(&f, pool, &loc));
        out |= (int)f << (2 * dev);
    }
    return out;
}

enum api { ASYNC_STREAM, ASYNC_PTSZ, PEER_SYNC, DTOD_PTDS, DTOD_ASYNC, PEER_ASYNC };

/* Issues the copy of n bytes through api; stream: the program's stream
 * for the async ones (NULL per-thread for ASYNC_PTSZ). */
static void issue(enum api api, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    switch (api) {
    case ASYNC_STREAM: PL_OK(cuMemcpyAsync(dst, src, n, s)); break;
    case ASYNC_PTSZ: PL_OK(cuMemcpyAsync_ptsz(dst, src, n, NULL)); break;
    case PEER_SYNC: PL_OK(cuMemcpyPeer(dst, env.ctx[1], src, env.ctx[0], n)); break;
    case DTOD_PTDS: PL_OK(cuMemcpyDtoD_v2_ptds(dst, src, n)); break;
    case DTOD_ASYNC: PL_OK(cuMemcpyDtoDAsync_v2(dst, src, n, s)); break;
    case PEER_ASYNC: PL_OK(cuMemcpyPeerAsync(dst, env.ctx[1], src, env.ctx[0], n, s)); break;
    }
}

/* The program's stream of a case: s0 (device 0) or s1 (device 1); the
 * per-thread stream of device 0; the legacy stream of device 0 for the
 * synchronous peer copy, the per-thread one for the synchronous DtoD. */
static CUstream case_stream(enum api api)
{
    return api == DTOD_ASYNC || api == PEER_ASYNC ? s1
           : api == ASYNC_STREAM                  ? s0
           : api == PEER_SYNC                     ? CU_STREAM_LEGACY
                                                  : CU_STREAM_PER_THREAD;
}

static int is_sync(enum api api)
{
    return api == PEER_SYNC || api == DTOD_PTDS;
}

/* One cross copy of n bytes from src (device 0) to dst (device 1) through
 * api, with the program's work around it; stage0: ordinary memory on
 * device 0 holding the pattern, check1: ordinary memory on device 1. */
static void one_case(const char *name, enum api api, CUdeviceptr dst, CUdeviceptr src,
                     size_t n, CUdeviceptr stage0, CUdeviceptr check1)
{
    CUstream s = case_stream(api);
    struct standin_stats a, b;
    int dev = s == s1 ? 1 : 0;
    pl_fill(env.ctx[0], stage0, n, ++seed);
    pl_set(env.ctx[1], dst, n, 0x11);
    pl_set(env.ctx[1], check1, n, 0x22);
    pl_use(env.ctx[dev]);
    PL_OK(cuCtxSynchronize());
    pl_stats(&a);
    /* before: the source written on the program's stream, pending */
    PL_OK(cuMemsetD8Async(src, 0x5a, n, s));
    PL_OK(cuMemcpyAsync(src, stage0, n, s));
    issue(api, dst, src, n, s);
    if (is_sync(api))
        PL_EXPECT(standin_pending_ops() == 0, "%s: a synchronous copy returned with %llu "
                  "operations pending", name, (unsigned long long)standin_pending_ops());
    /* after: the source overwritten; the destination read on device 1
     * once the program's stream says the copy is done */
    PL_OK(cuMemsetD8Async(src, 0, n, s));
    CUevent done;
    PL_OK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
    PL_OK(cuEventRecord(done, s));
    PL_OK(cuStreamWaitEvent(s1, done, 0));
    PL_OK(cuMemcpyAsync(check1, dst, n, s1));
    PL_OK(cuMemsetD8Async(dst, 0x33, n, s1));
    PL_OK(cuStreamSynchronize(s1));
    PL_OK(cuEventDestroy_v2(done));
    pl_stats(&b);
    pl_verify(env.ctx[1], check1, n, seed, name);
    uint64_t peer = b.peer_bytes - a.peer_bytes, staged = b.staged_bytes - a.staged_bytes;
    int relayed = shim && n >= ((size_t)1 << 20);
    PL_EXPECT(relayed ? peer == n && staged == 0 : peer == 0 && staged == n,
              "%s: peer %llu staged %llu bytes of %zu", name, (unsigned long long)peer,
              (unsigned long long)staged, n);
    printf("%s: %zu bytes\n", name, n);
}

static void cases(void)
{
    CUdeviceptr p0 = pool_alloc(0, N), p1 = pool_alloc(1, N);
    CUdeviceptr d0 = pl_alloc(env.ctx[0], N), d1 = pl_alloc(env.ctx[1], N);
    CUdeviceptr stage0 = pl_alloc(env.ctx[0], N), check1 = pl_alloc(env.ctx[1], N);
    PL_EXPECT(pool_access() == 0, "the pools grant peers access before any copy");
    one_case("pool->pool stream", ASYNC_STREAM, p1, p0, N, stage0, check1);
    one_case("pool->pool per-thread", ASYNC_PTSZ, p1, p0, N, stage0, check1);
    one_case("pool->device peer sync", PEER_SYNC, d1, p0, N, stage0, check1);
    one_case("device->pool dtod per-thread sync", DTOD_PTDS, p1, d0, N, stage0, check1);
    one_case("device->pool dtod async on device 1", DTOD_ASYNC, p1, d0, N, stage0, check1);
    one_case("pool->pool peer async on device 1", PEER_ASYNC, p1, p0, N, stage0, check1);
    one_case("pool->pool small", ASYNC_STREAM, p1, p0, SMALL, stage0, check1);
    one_case("pool->pool again", ASYNC_STREAM, p1, p0, N, stage0, check1);
    PL_EXPECT(pool_access() == 0, "the pools grant peers access after the copies: %#x",
              pool_access());
    PL_EXPECT(standin_access_grants(p0) == 0 && standin_access_grants(p1) == 0,
              "access grants on the program's pools: %llu %llu",
              (unsigned long long)standin_access_grants(p0),
              (unsigned long long)standin_access_grants(p1));
    pool_free(0, p0);
    pool_free(1, p1);
    pl_free(env.ctx[0], d0);
    pl_free(env.ctx[1], d1);
    pl_free(env.ctx[0], stage0);
    pl_free(env.ctx[1], check1);
}

/* Both pools granted to the other device (prot: read-write, or none to
 * take the grant back), as a program that set up its own peer access
 * does. */
static void grant_pools(CUmemAccess_flags prot)
{
    for (int dev = 0; dev < 2; dev++) {
        CUmemoryPool pool;
        CUmemAccessDesc desc = {{CU_MEM_LOCATION_TYPE_DEVICE, 1 - dev}, prot};
        PL_OK(cuDeviceGetDefaultMemPool(&pool, dev));
        PL_OK(cuMemPoolSetAccess(pool, &desc, 1));
    }
}

/* The program granted its pools itself: the driver copies them directly,
 * and the shim leaves the copy to it (a relay would add two local copies
 * per chunk: same-device copies on the stand-in's counters). */
static void granted(void)
{
    CUdeviceptr p0 = pool_alloc(0, N), p1 = pool_alloc(1, N), stage0 = pl_alloc(env.ctx[0], N);
    grant_pools(CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    pl_fill(env.ctx[0], stage0, N, ++seed);
    pl_use(env.ctx[0]);
    PL_OK(cuMemcpyDtoD_v2(p0, stage0, N));
    struct standin_stats a, b;
    pl_stats(&a);
    PL_OK(cuMemcpyAsync(p1, p0, N, s0));
    PL_OK(cuStreamSynchronize(s0));
    pl_stats(&b);
    pl_verify(env.ctx[1], p1, N, seed, "granted pools");
    uint64_t peer = b.peer_bytes - a.peer_bytes, local = b.same_device_copies - a.same_device_copies;
    PL_EXPECT(peer == N && b.staged_bytes == a.staged_bytes && local == 0,
              "granted pools: peer %llu of %zu bytes, %llu same-device copies (a relay)",
              (unsigned long long)peer, (size_t)N, (unsigned long long)local);
    printf("granted pools: %zu bytes\n", (size_t)N);
    grant_pools(CU_MEM_ACCESS_FLAGS_PROT_NONE);
    pool_free(0, p0);
    pool_free(1, p1);
    pl_free(env.ctx[0], stage0);
}

/* One copy of N bytes from src to dst on stream s, the source first
 * filled from stage (ordinary memory on the source's device); relayed: the
 * shim must relay it (the relay's local copies show as same-device
 * copies), else it must leave it to a direct peer copy. Without the shim
 * the stand-in stages what no grant reaches. */
static void mixed_copy(const char *name, CUdeviceptr dst, int ddev, CUdeviceptr src, int sdev,
                       CUdeviceptr stage, CUstream s, int relayed)
{
    struct standin_stats a, b;
    pl_fill(env.ctx[sdev], stage, N, ++seed);
    pl_use(env.ctx[sdev]);
    PL_OK(cuMemcpyDtoD_v2(src, stage, N));
    pl_set(env.ctx[ddev], dst, N, 0x44);
    pl_stats(&a);
    PL_OK(cuMemcpyAsync(dst, src, N, s));
    PL_OK(cuStreamSynchronize(s));
    pl_stats(&b);
    pl_verify(env.ctx[ddev], dst, N, seed, name);
    uint64_t peer = b.peer_bytes - a.peer_bytes, staged = b.staged_bytes - a.staged_bytes;
    uint64_t local = b.same_device_copies - a.same_device_copies;
    if (!shim)
        relayed = 0;
    PL_EXPECT(relayed ? peer == N && staged == 0 && local > 0
                      : peer + staged == N && local == 0 && (shim ? staged == 0 : 1),
              "%s: peer %llu staged %llu bytes of %zu, %llu same-device copies", name,
              (unsigned long long)peer, (unsigned long long)staged, (size_t)N,
              (unsigned long long)local);
    printf("%s: %zu bytes\n", name, (size_t)N);
}

static void set_pool_access(int dev, CUmemAccess_flags prot)
{
    CUmemoryPool pool;
    CUmemAccessDesc desc = {{CU_MEM_LOCATION_TYPE_DEVICE, 1 - dev}, prot};
    PL_OK(cuDeviceGetDefaultMemPool(&pool, dev));
    PL_OK(cuMemPoolSetAccess(pool, &desc, 1));
}

/* A pool end and an ordinary one. The copy engine of the issuing device
 * reads the source and writes the destination: with the pool granted to
 * the other device (read for a source, read-write for a destination) and
 * context peer access from the issuing device, which the shim enables as
 * for any copy, the driver copies directly, issued on either device;
 * without the grant, or with a read grant on a destination, the shim
 * relays. */
static void granted_mixed(void)
{
    CUdeviceptr p0 = pool_alloc(0, N), p1 = pool_alloc(1, N);
    CUdeviceptr d0 = pl_alloc(env.ctx[0], N), d1 = pl_alloc(env.ctx[1], N);
    CUdeviceptr stage0 = pl_alloc(env.ctx[0], N), stage1 = pl_alloc(env.ctx[1], N);
    mixed_copy("ungranted pool->device", d1, 1, p0, 0, stage0, s0, 1);
    set_pool_access(0, CU_MEM_ACCESS_FLAGS_PROT_READ);
    mixed_copy("read-granted pool->device on device 0", d1, 1, p0, 0, stage0, s0, 0);
    mixed_copy("read-granted pool->device on device 1", d1, 1, p0, 0, stage0, s1, 0);
    set_pool_access(1, CU_MEM_ACCESS_FLAGS_PROT_READ);
    mixed_copy("device->read-granted pool", p1, 1, d0, 0, stage0, s0, 1);
    set_pool_access(1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    mixed_copy("device->granted pool on device 0", p1, 1, d0, 0, stage0, s0, 0);
    mixed_copy("device->granted pool on device 1", p1, 1, d0, 0, stage0, s1, 0);
    mixed_copy("granted pool->device back", d0, 0, p1, 1, stage1, s1, 0);
    set_pool_access(0, CU_MEM_ACCESS_FLAGS_PROT_NONE);
    set_pool_access(1, CU_MEM_ACCESS_FLAGS_PROT_NONE);
    mixed_copy("grant taken back: pool->device", d1, 1, p0, 0, stage0, s0, 1);
    pool_free(0, p0);
    pool_free(1, p1);
    pl_free(env.ctx[0], d0);
    pl_free(env.ctx[1], d1);
    pl_free(env.ctx[0], stage0);
    pl_free(env.ctx[1], stage1);
}

#define THREADS 4
#define ROUNDS 3

/* One thread: its own stream and pools, ROUNDS relayed copies 0 -> 1. */
static void *worker(void *arg)
{
    unsigned tseed = 1000 + 10 * (unsigned)(uintptr_t)arg;
    CUstream s;
    pl_use(env.ctx[0]);
    PL_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p0 = 0, p1 = 0;
    PL_OK(cuMemAllocAsync(&p0, N, s));
    pl_use(env.ctx[1]);
    PL_OK(cuMemAllocAsync(&p1, N, NULL));
    PL_OK(cuStreamSynchronize(NULL));
    for (int r = 0; r < ROUNDS; r++) {
        pl_fill(env.ctx[0], p0, N, tseed + (unsigned)r);
        pl_use(env.ctx[0]);
        PL_OK(cuMemcpyAsync(p1, p0, N, s));
        PL_OK(cuStreamSynchronize(s));
        pl_verify(env.ctx[1], p1, N, tseed + (unsigned)r, "threads: pool->pool");
    }
    pl_use(env.ctx[0]);
    PL_OK(cuMemFreeAsync(p0, s));
    PL_OK(cuStreamSynchronize(s));
    PL_OK(cuStreamDestroy_v2(s));
    pl_use(env.ctx[1]);
    PL_OK(cuMemFreeAsync(p1, NULL));
    PL_OK(cuStreamSynchronize(NULL));
    return NULL;
}

static int threads(void)
{
    struct standin_stats a, b;
    pthread_t th[THREADS];
    pl_stats(&a);
    for (uintptr_t t = 0; t < THREADS; t++)
        PL_EXPECT(pthread_create(&th[t], NULL, worker, (void *)t) == 0, "pthread_create");
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    pl_stats(&b);
    uint64_t want = (uint64_t)THREADS * ROUNDS * N;
    uint64_t peer = b.peer_bytes - a.peer_bytes, staged = b.staged_bytes - a.staged_bytes;
    PL_EXPECT(shim ? peer == want && staged == 0 : peer == 0 && staged == want,
              "threads: peer %llu staged %llu bytes", (unsigned long long)peer,
              (unsigned long long)staged);
    printf("threads: %d x %d copies\n", THREADS, ROUNDS);
    return pl_finish("pool_relay threads");
}

/* Polls stream s (cuStreamQuery) for up to two seconds: 1 once its work
 * is done, 0 when it still is not (a test fails, never hangs). */
static int done_within(CUstream s)
{
    for (int i = 0; i < 2000; i++) {
        CUresult r = cuStreamQuery(s);
        if (r == CUDA_SUCCESS)
            return 1;
        PL_EXPECT(r == CUDA_ERROR_NOT_READY, "cuStreamQuery: %d", (int)r);
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return 0;
}

/* Two program streams on device 0, each relaying a copy 0 -> 1. Stream A
 * is held (cuStreamWaitValue32 on a word of pinned memory) before its
 * copy; the copy on stream B must finish while A is still held, relayed
 * (peer bytes, no staging): B's relay may not wait for A's. Then A is let
 * go and its copy arrives too. */
static int streams(void)
{
    CUstream a, b;
    CUdeviceptr a0 = pool_alloc(0, N), a1 = pool_alloc(1, N);
    CUdeviceptr b0 = pool_alloc(0, N), b1 = pool_alloc(1, N);
    pl_fill(env.ctx[0], a0, N, 71);
    pl_fill(env.ctx[0], b0, N, 72);
    pl_use(env.ctx[0]);
    PL_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    PL_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    uint32_t *gate = NULL;
    PL_OK(cuMemAllocHost_v2((void **)&gate, sizeof *gate));
    __atomic_store_n(gate, 0, __ATOMIC_RELEASE);
    struct standin_stats s0, s1;
    pl_stats(&s0);
    PL_OK(cuStreamWaitValue32_v2(a, (CUdeviceptr)(uintptr_t)gate, 1, CU_STREAM_WAIT_VALUE_GEQ));
    PL_OK(cuMemcpyAsync(a1, a0, N, a));
    PL_OK(cuMemcpyAsync(b1, b0, N, b));
    int b_done = done_within(b);
    PL_EXPECT(b_done, "streams: the copy on stream B waits for held stream A");
    PL_EXPECT(cuStreamQuery(a) == CUDA_ERROR_NOT_READY, "streams: stream A ran while held");
    pl_stats(&s1);
    uint64_t peer = s1.peer_bytes - s0.peer_bytes, staged = s1.staged_bytes - s0.staged_bytes;
    /* Both copies count at issue, A's too. */
    PL_EXPECT(!b_done || (shim ? peer == 2 * N && staged == 0 : peer == 0 && staged == 2 * N),
              "streams: the two copies: peer %llu staged %llu bytes of %zu",
              (unsigned long long)peer, (unsigned long long)staged, 2 * (size_t)N);
    if (b_done)
        pl_verify(env.ctx[1], b1, N, 72, "streams: stream B");
    __atomic_store_n(gate, 1, __ATOMIC_RELEASE);
    pl_use(env.ctx[0]);
    PL_OK(cuStreamSynchronize(a));
    PL_OK(cuStreamSynchronize(b));
    pl_verify(env.ctx[1], a1, N, 71, "streams: stream A");
    printf("streams: B done while A held\n");
    PL_OK(cuMemFreeHost(gate));
    PL_OK(cuStreamDestroy_v2(a));
    PL_OK(cuStreamDestroy_v2(b));
    pool_free(0, a0);
    pool_free(0, b0);
    pool_free(1, a1);
    pool_free(1, b1);
    return pl_finish("pool_relay streams");
}

int main(int argc, char **argv)
{
    shim = pl_want_shim(argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    pl_init(&env);
    if (argc > 2 && strcmp(argv[2], "threads") == 0)
        return threads();
    if (argc > 2 && strcmp(argv[2], "streams") == 0)
        return streams();
    pl_use(env.ctx[0]);
    PL_OK(cuStreamCreate(&s0, 0));
    pl_use(env.ctx[1]);
    PL_OK(cuStreamCreate(&s1, 0));
    cases();
    granted();
    granted_mixed();
    PL_OK(cuStreamDestroy_v2(s1));
    pl_use(env.ctx[0]);
    PL_OK(cuStreamDestroy_v2(s0));
    /* A reset of device 1: nothing of the relay's may be alive there (the
     * leak report's line compares with the run without the shim); the
     * copies after it work again. */
    PL_OK(cuDevicePrimaryCtxReset_v2(1));
    PL_OK(cuDevicePrimaryCtxRetain(&env.ctx[1], 1));
    pl_use(env.ctx[1]);
    PL_OK(cuStreamCreate(&s1, 0));
    pl_use(env.ctx[0]);
    PL_OK(cuStreamCreate(&s0, 0));
    CUdeviceptr p0 = pool_alloc(0, N), p1 = pool_alloc(1, N), stage0 = pl_alloc(env.ctx[0], N);
    CUdeviceptr check1 = pl_alloc(env.ctx[1], N);
    one_case("pool->pool after a reset", ASYNC_STREAM, p1, p0, N, stage0, check1);
    pool_free(0, p0);
    pool_free(1, p1);
    pl_free(env.ctx[0], stage0);
    pl_free(env.ctx[1], check1);
    PL_OK(cuStreamDestroy_v2(s1));
    PL_OK(cuStreamDestroy_v2(s0));
    return pl_finish("pool_relay");
}
