/* Idle release (P2PSHIM_LINK_IDLE_MS=40) of the link between devices 0
 * and 1, whichever way the shim carried the copies over it:
 *   "links_paths ordinary shim"  device memory: an upgraded copy;
 *   "links_paths alias shim"     mapped memory (cuMemCreate/cuMemMap, each
 *                                granted to its owner only): the shim's
 *                                aliases;
 *   "links_paths relay shim"     pool memory (cuMemAllocAsync): the shim's
 *                                pool relay.
 * And "links_paths relay_failed shim": pool memory with devices 0 and 1
 * full, so that the relay finds no room for its buffers after the shim
 * enabled the link for it (reason relay-failed; the driver stages the
 * copy): the link, used by no copy, is still released once idle.
 * Each: a burst of copies 0 -> 1 on the program's stream (right bytes, the
 * link enabled); a copy left queued keeps the link past the idle time;
 * once it is complete and the idle time has passed, a copy on another link
 * (0 -> 2, which looks for idle links) finds 0-1 disabled (the driver's
 * own state, and a cuCtxDisablePeerAccess counted); the next copy 0 -> 1
 * enables it again and its bytes are right. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pl_common.h"

/* At least the relay's minimum (1 MiB); not a multiple of its chunk. */
#define N (((size_t)2 << 20) + 4321)
#define BURST 3
#define IDLE_WAIT_MS 120 /* three times P2PSHIM_LINK_IDLE_MS */

static struct pl_env env;
static unsigned seed = 11;
static CUdeviceptr src0, dst1, other0, other2; /* other*: the 0 -> 2 link */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int linked(void)
{
    return standin_peer_enabled(env.ctx[0], env.ctx[1]) ||
           standin_peer_enabled(env.ctx[1], env.ctx[0]);
}

/* Mapped memory of n bytes (rounded up to the granularity) on dev, granted
 * to dev alone. */
static CUdeviceptr map_on(int dev, size_t n)
{
    CUmemAllocationProp prop = pl_device_prop(dev);
    size_t size = pl_vmm_round(dev, n);
    CUmemGenericAllocationHandle h;
    CUdeviceptr va = 0;
    CUmemAccessDesc acc = pl_access_rw(dev);
    pl_use(env.ctx[dev]);
    PL_OK(cuMemCreate(&h, size, &prop, 0));
    PL_OK(cuMemAddressReserve(&va, size, 0, 0, 0));
    PL_OK(cuMemMap(va, size, 0, h, 0));
    PL_OK(cuMemRelease(h));
    PL_OK(cuMemSetAccess(va, size, &acc, 1));
    return va;
}

static CUdeviceptr pool_on(int dev, size_t n)
{
    CUdeviceptr p = 0;
    pl_use(env.ctx[dev]);
    PL_OK(cuMemAllocAsync(&p, n, NULL));
    PL_OK(cuStreamSynchronize(NULL));
    return p;
}

/* A copy 0 -> 1 of fresh bytes on s (device 0's, non-blocking: the
 * stand-in runs its work only when something waits for it). */
static unsigned copy_01(CUstream s)
{
    pl_fill(env.ctx[0], src0, N, ++seed);
    pl_use(env.ctx[0]);
    PL_OK(cuMemcpyAsync(dst1, src0, N, s));
    return seed;
}

/* A synchronous copy 0 -> 2 through the shim: it looks for idle links. */
static void copy_02(const char *what)
{
    pl_fill(env.ctx[0], other0, N, ++seed);
    pl_use(env.ctx[0]);
    PL_OK(cuMemcpyPeer(other2, env.ctx[2], other0, env.ctx[0], N));
    pl_verify(env.ctx[2], other2, N, seed, what);
}

static uint64_t disables_ok(void)
{
    struct standin_stats st;
    pl_stats(&st);
    return st.peer_disable_ok;
}

/* Fills dev's memory (1 MiB pieces) until the driver refuses; *n of them
 * in held. */
#define HELD_MAX 1024
static CUdeviceptr held[HELD_MAX];
static int nheld;

static void exhaust(int dev)
{
    pl_use(env.ctx[dev]);
    while (nheld < HELD_MAX && cuMemAlloc_v2(&held[nheld], (size_t)1 << 20) == CUDA_SUCCESS)
        nheld++;
}

/* A copy 0 -> 1 the relay gives up on (no room for its buffers) after
 * the shim enabled the link for it: the driver stages it (right bytes);
 * once idle, the link is given back as any link of the shim's. */
static void run_failed(void)
{
    exhaust(0);
    exhaust(1);
    CUstream s;
    pl_use(env.ctx[0]);
    PL_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    struct standin_stats a, b;
    pl_stats(&a);
    unsigned want = copy_01(s);
    PL_OK(cuStreamSynchronize(s));
    pl_stats(&b);
    pl_verify(env.ctx[1], dst1, N, want, "the copy the relay gave up");
    PL_EXPECT(b.staged_bytes - a.staged_bytes == N && b.peer_bytes == a.peer_bytes,
              "relay_failed: the copy was not left to the driver: staged %llu peer %llu",
              (unsigned long long)(b.staged_bytes - a.staged_bytes),
              (unsigned long long)(b.peer_bytes - a.peer_bytes));
    PL_EXPECT(linked() && b.peer_enable_ok > a.peer_enable_ok,
              "relay_failed: the shim enabled no link 0-1 for the copy");
    uint64_t disabled = disables_ok();
    sleep_ms(IDLE_WAIT_MS);
    copy_02("0->2 after the idle time");
    PL_EXPECT(!linked(), "relay_failed: the idle link 0-1 was kept");
    PL_EXPECT(disables_ok() > disabled, "relay_failed: no cuCtxDisablePeerAccess succeeded");
    PL_OK(cuStreamDestroy_v2(s));
    while (nheld > 0)
        PL_OK(cuMemFree_v2(held[--nheld]));
}

static void run(const char *path)
{
    CUstream s;
    pl_use(env.ctx[0]);
    PL_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    struct standin_stats a, b;
    pl_stats(&a);
    for (int i = 0; i < BURST; i++) {
        unsigned want = copy_01(s);
        PL_OK(cuStreamSynchronize(s));
        pl_verify(env.ctx[1], dst1, N, want, "burst");
    }
    pl_stats(&b);
    PL_EXPECT(b.peer_bytes - a.peer_bytes >= (uint64_t)BURST * N && b.staged_bytes == a.staged_bytes,
              "%s: burst not over the link: peer %llu staged %llu bytes", path,
              (unsigned long long)(b.peer_bytes - a.peer_bytes),
              (unsigned long long)(b.staged_bytes - a.staged_bytes));
    PL_EXPECT(linked(), "%s: the burst left no link 0-1", path);

    unsigned queued = copy_01(s);
    PL_EXPECT(standin_pending_ops() > 0, "%s: the queued copy ran at once", path);
    sleep_ms(IDLE_WAIT_MS);
    copy_02("0->2 while 0->1 is queued");
    PL_EXPECT(linked(), "%s: link 0-1 disabled under a queued copy", path);
    PL_OK(cuStreamSynchronize(s));
    pl_verify(env.ctx[1], dst1, N, queued, "the queued copy");

    uint64_t disabled = disables_ok();
    sleep_ms(IDLE_WAIT_MS);
    copy_02("0->2 after the idle time");
    PL_EXPECT(!linked(), "%s: idle link 0-1 kept", path);
    PL_EXPECT(disables_ok() > disabled, "%s: no cuCtxDisablePeerAccess succeeded", path);

    pl_stats(&a);
    unsigned again = copy_01(s);
    PL_OK(cuStreamSynchronize(s));
    pl_stats(&b);
    pl_verify(env.ctx[1], dst1, N, again, "the copy after the release");
    PL_EXPECT(linked(), "%s: link 0-1 not enabled again", path);
    PL_EXPECT(b.peer_enable_ok > a.peer_enable_ok && b.peer_bytes - a.peer_bytes >= N,
              "%s: after the release: %llu enables, %llu peer bytes", path,
              (unsigned long long)(b.peer_enable_ok - a.peer_enable_ok),
              (unsigned long long)(b.peer_bytes - a.peer_bytes));
    PL_OK(cuStreamDestroy_v2(s));
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s ordinary|alias|relay|relay_failed shim\n", argv[0]);
        return 2;
    }
    if (!pl_want_shim(argc - 1, argv + 1))
        return 2; /* the checks are the shim's links */
    if (pl_init(&env) < 3) {
        fprintf(stderr, "needs STANDIN_DEVICES=3\n");
        return 2;
    }
    const char *path = argv[1];
    if (strcmp(path, "ordinary") == 0) {
        src0 = pl_alloc(env.ctx[0], N);
        dst1 = pl_alloc(env.ctx[1], N);
    } else if (strcmp(path, "alias") == 0) {
        src0 = map_on(0, N);
        dst1 = map_on(1, N);
    } else if (strcmp(path, "relay") == 0 || strcmp(path, "relay_failed") == 0) {
        src0 = pool_on(0, N);
        dst1 = pool_on(1, N);
    } else {
        return 2;
    }
    other0 = pl_alloc(env.ctx[0], N);
    other2 = pl_alloc(env.ctx[2], N);
    if (strcmp(path, "relay_failed") == 0)
        run_failed();
    else
        run(path);
    return pl_finish(argv[0]);
}
