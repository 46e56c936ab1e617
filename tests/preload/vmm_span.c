/* Cross-GPU copies of mapped memory over the seam of two mappings:
 * "vmm_span shim|noshim".
 *
 * A pool like ggml's VMM pool on each of devices 0 and 1: one reservation,
 * grown by cuMemCreate + cuMemMap of a new chunk right after the last, each
 * chunk granted to its own device only (cuMemSetAccess), as ggml does. A
 * buffer straddles the seam between the two chunks (two allocations,
 * contiguous addresses), and is copied across GPUs both ways
 * (cuMemcpyPeerAsync, cuMemcpyDtoD). Checked each time: the bytes, the
 * path the stand-in counted (with the shim peer through its alias of the
 * run of mappings, one reservation per run; without it staged), that
 * cuMemGetAccess answers as before and nobody but the program set access.
 * Then: one chunk unmapped (the shim's alias over it goes; a copy over the
 * seam gets the driver's answer) and mapped again with new memory (a copy
 * lands in the new memory, not in a stale alias); the program grants only
 * the first chunk of each pool (still staged without the shim, still
 * aliased with it); then both (left to the driver: peer, no new alias).
 * log.sh checks the exit summary's reasons. */
#include <stdio.h>
#include <string.h>

#include "pl_common.h"

#define N ((size_t)64 << 10)
#define CHUNKS 4

static struct pl_env env;
static int shim;
static unsigned seed = 11;

struct pool {
    int dev;
    CUdeviceptr va;  /* the reservation: CHUNKS chunks */
    size_t chunk;    /* the granularity, at least N */
    int mapped;
};

/* Maps chunk i of p with new memory, granted to the owner only. */
static void pool_map(struct pool *p, int i)
{
    CUmemAllocationProp prop = pl_device_prop(p->dev);
    CUmemGenericAllocationHandle h;
    CUmemAccessDesc own = pl_access_rw(p->dev);
    pl_use(env.ctx[p->dev]);
    PL_OK(cuMemCreate(&h, p->chunk, &prop, 0));
    PL_OK(cuMemMap(p->va + (size_t)i * p->chunk, p->chunk, 0, h, 0));
    PL_OK(cuMemRelease(h));
    PL_OK(cuMemSetAccess(p->va + (size_t)i * p->chunk, p->chunk, &own, 1));
}

static void pool_init(struct pool *p, int dev)
{
    p->dev = dev;
    p->chunk = pl_vmm_round(dev, N);
    p->va = 0;
    pl_use(env.ctx[dev]);
    PL_OK(cuMemAddressReserve(&p->va, CHUNKS * p->chunk, 0, 0, 0));
    for (p->mapped = 0; p->mapped < 2; p->mapped++) /* grows: chunk 1 after chunk 0 */
        pool_map(p, p->mapped);
}

/* The buffer over the seam of chunks 0 and 1. */
static CUdeviceptr seam(const struct pool *p)
{
    return p->va + p->chunk - N / 2;
}

/* cuMemGetAccess for devices 0 and 1 at each mapped chunk of both pools,
 * packed four bits a device, and the grants the stand-in counted there. */
struct access {
    unsigned long long flags[2][2][2];
    uint64_t grants[2][2];
};

static void access_now(const struct pool *pools, struct access *a)
{
    for (int q = 0; q < 2; q++)
        for (int c = 0; c < 2; c++) {
            CUdeviceptr at = pools[q].va + (size_t)c * pools[q].chunk;
            a->grants[q][c] = standin_access_grants(at);
            for (int d = 0; d < 2; d++) {
                CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, d};
                a->flags[q][c][d] = 99;
                PL_OK(cuMemGetAccess(&a->flags[q][c][d], &loc, at));
            }
        }
}

static void access_same(const struct pool *pools, const struct access *before, const char *when)
{
    struct access now;
    access_now(pools, &now);
    PL_EXPECT(memcmp(&now, before, sizeof now) == 0,
              "%s: the program's access lists changed (pool 0 chunk 1 device 1: %llu, "
              "grants %llu)",
              when, now.flags[0][1][1], (unsigned long long)now.grants[0][1]);
}

/* One copy of N bytes from `from`'s seam buffer to `to`'s, issued from
 * from's context (api 0: cuMemcpyPeerAsync on the legacy stream, 1:
 * cuMemcpyDtoD_v2); the bytes checked; 1 when the stand-in counted it
 * peer, 0 staged. */
static int seam_copy(const struct pool *pools, int from, int to, int api, const char *what)
{
    CUdeviceptr src = seam(&pools[from]), dst = seam(&pools[to]);
    struct standin_stats s0, s1;
    pl_fill(env.ctx[from], src, N, ++seed);
    pl_set(env.ctx[to], dst, N, 0);
    pl_use(env.ctx[from]);
    pl_stats(&s0);
    if (api == 0) {
        PL_OK(cuMemcpyPeerAsync(dst, env.ctx[to], src, env.ctx[from], N, NULL));
        PL_OK(cuStreamSynchronize(NULL));
    } else {
        PL_OK(cuMemcpyDtoD_v2(dst, src, N));
    }
    pl_stats(&s1);
    pl_verify(env.ctx[to], dst, N, seed, what);
    PL_EXPECT(s1.peer_copies + s1.staged_copies == s0.peer_copies + s0.staged_copies + 1,
              "%s: not one cross-GPU copy", what);
    return s1.peer_copies > s0.peer_copies;
}

/* Both ways and both APIs; want_peer: what each must be counted. */
static void seam_round(const struct pool *pools, int want_peer, const char *round)
{
    static const int plan[3][3] = {{0, 1, 0}, {1, 0, 0}, {0, 1, 1}};
    for (int i = 0; i < 3; i++) {
        char what[96];
        snprintf(what, sizeof what, "%s: %d->%d api %d", round, plan[i][0], plan[i][1],
                 plan[i][2]);
        int peer = seam_copy(pools, plan[i][0], plan[i][1], plan[i][2], what);
        PL_EXPECT(peer == want_peer, "%s: %s", what, peer ? "peer" : "staged");
    }
}

static uint64_t calls(const char *name)
{
    return standin_calls(name);
}

/* Pool 0's chunk 1 unmapped: the shim's alias over it goes (its two
 * pieces unmapped, its range freed); a copy over the seam gets the
 * driver's answer; a copy inside chunk 0 is still upgraded. Then chunk 1
 * is mapped again with new memory, and copies over the seam land there. */
static void unmap_and_regrow(struct pool *pools)
{
    uint64_t unmaps = calls("cuMemUnmap"), frees = calls("cuMemAddressFree");
    pl_use(env.ctx[0]);
    PL_OK(cuMemUnmap(pools[0].va + pools[0].chunk, pools[0].chunk));
    uint64_t du = calls("cuMemUnmap") - unmaps, df = calls("cuMemAddressFree") - frees;
    PL_EXPECT(du == (shim ? 3u : 1u) && df == (shim ? 1u : 0u),
              "unmap of a chunk under an alias: %llu unmaps, %llu range frees",
              (unsigned long long)du, (unsigned long long)df);
    CUdeviceptr src = seam(&pools[0]), dst = seam(&pools[1]);
    pl_use(env.ctx[0]);
    PL_RC(cuMemcpyPeerAsync(dst, env.ctx[1], src, env.ctx[0], N, NULL),
          CUDA_ERROR_INVALID_VALUE);
    PL_RC(cuMemcpyDtoD_v2(dst, src, N), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr inside = pools[0].va + pools[0].chunk - N;
    struct standin_stats s0, s1;
    pl_fill(env.ctx[0], inside, N, ++seed);
    pl_use(env.ctx[0]);
    pl_stats(&s0);
    PL_OK(cuMemcpyDtoD_v2(dst, inside, N));
    pl_stats(&s1);
    pl_verify(env.ctx[1], dst, N, seed, "inside chunk 0 after the unmap");
    PL_EXPECT(s1.peer_copies - s0.peer_copies == (uint64_t)shim,
              "inside chunk 0 after the unmap: peer %llu",
              (unsigned long long)(s1.peer_copies - s0.peer_copies));
    pool_map(&pools[0], 1);
    seam_round(pools, shim, "chunk mapped again");
}

int main(int argc, char **argv)
{
    shim = pl_want_shim(argc, argv);
    pl_init(&env);
    PL_EXPECT(env.ndev >= 2, "needs two devices");
    struct pool pools[2];
    pool_init(&pools[0], 0);
    pool_init(&pools[1], 1);
    struct access before;
    access_now(pools, &before);
    PL_EXPECT(before.flags[0][1][1] == CU_MEM_ACCESS_FLAGS_PROT_NONE &&
                  before.flags[1][0][0] == CU_MEM_ACCESS_FLAGS_PROT_NONE,
              "a chunk granted to the other device before any copy");

    /* owner-only chunks: with the shim, one alias per pool's run of two */
    uint64_t reserves = calls("cuMemAddressReserve"), maps = calls("cuMemMap");
    seam_round(pools, shim, "owner-only");
    uint64_t dr = calls("cuMemAddressReserve") - reserves, dm = calls("cuMemMap") - maps;
    PL_EXPECT(dr == (shim ? 2u : 0u) && dm == (shim ? 4u : 0u),
              "owner-only: %llu reserves, %llu maps (one alias of two pieces a pool)",
              (unsigned long long)dr, (unsigned long long)dm);
    access_same(pools, &before, "owner-only");

    unmap_and_regrow(pools);

    /* the program grants the other device on chunk 0 only: the driver
     * cannot copy the whole range peer; the shim's alias still can */
    for (int q = 0; q < 2; q++) {
        CUmemAccessDesc acc[2] = {pl_access_rw(0), pl_access_rw(1)};
        pl_use(env.ctx[q]);
        PL_OK(cuMemSetAccess(pools[q].va, pools[q].chunk, acc, 2));
    }
    access_now(pools, &before);
    seam_round(pools, shim, "chunk 0 granted");
    access_same(pools, &before, "chunk 0 granted");

    /* both chunks granted: the driver copies peer itself, no new alias */
    for (int q = 0; q < 2; q++) {
        CUmemAccessDesc acc[2] = {pl_access_rw(0), pl_access_rw(1)};
        pl_use(env.ctx[q]);
        PL_OK(cuMemSetAccess(pools[q].va + pools[q].chunk, pools[q].chunk, acc, 2));
    }
    access_now(pools, &before);
    reserves = calls("cuMemAddressReserve");
    seam_round(pools, 1, "both granted");
    PL_EXPECT(calls("cuMemAddressReserve") == reserves, "both granted: an alias was made");
    access_same(pools, &before, "both granted");

    for (int q = 0; q < 2; q++) {
        pl_use(env.ctx[q]);
        PL_OK(cuMemUnmap(pools[q].va, 2 * pools[q].chunk));
        PL_OK(cuMemAddressFree(pools[q].va, CHUNKS * pools[q].chunk));
    }
    return pl_finish("vmm_span");
}
