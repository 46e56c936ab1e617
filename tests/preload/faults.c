/* Item 8: faults and topologies, with the shim. "faults shim SCENARIO";
 * the STANDIN_* variables come from the test (CMakeLists.txt), and log.sh
 * checks the shim's exit summary (P2PSHIM_LOG=info).
 *
 *   none       STANDIN_TOPOLOGY=none: all staged, no enable call
 *   fail_one   STANDIN_FAIL_ENABLE=0:1: the shim falls back to 1->0, once
 *   fail_both  STANDIN_FAIL_ENABLE=0:1,1:0: both fail, once; never retried
 *   mesh8      8 devices, full: every ordered pair upgraded, one enable for
 *              each (a copy enables the direction from its issuing device)
 *   islands8   8 devices, two islands: across staged, within upgraded
 *   max_peers  3 devices, STANDIN_MAX_PEERS=1: a third pair cannot enable
 *   limit8     8 devices, STANDIN_MAX_PEERS=3: every ordered pair copies; no
 *              context ever holds more than 3 peers, no direction is tried
 *              twice, and every copy's bytes are right (peer or staged)
 *   release    a primary context released to zero and retained again (all
 *              its state, peer links included, gone in the driver, like a
 *              reset): the next cross copy must be upgraded again
 *   memkinds   pool (cuMemAllocAsync) and managed memory: passed through,
 *              never enabled for, bytes right, peer only where the program
 *              granted access itself; mapped (cuMemCreate/cuMemMap) memory:
 *              peer through the shim's aliases, the program's access lists
 *              untouched, nothing held after its unmap */
#include <stdio.h>
#include <string.h>

#include "pl_common.h"

#define N ((size_t)32 << 10)

static struct pl_env env;
static unsigned seed = 1;

/* One cross copy of fresh buffers from device a to b, issued from a's
 * context through API api; returns 1 when the stand-in counted it peer. */
static int xcopy(int a, int b, int api)
{
    CUdeviceptr src = pl_alloc(env.ctx[a], N), dst = pl_alloc(env.ctx[b], N);
    struct standin_stats s0, s1;
    char label[64];
    snprintf(label, sizeof label, "copy %d->%d api %d", a, b, api);
    pl_fill(env.ctx[a], src, N, ++seed);
    pl_set(env.ctx[b], dst, N, 0);
    pl_use(env.ctx[a]);
    pl_stats(&s0);
    if (api == 0)
        PL_OK(cuMemcpyPeer(dst, env.ctx[b], src, env.ctx[a], N));
    else if (api == 1)
        PL_OK(cuMemcpy(dst, src, N));
    else
        PL_OK(cuMemcpyAsync_ptsz(dst, src, N, NULL)), PL_OK(cuStreamSynchronize_ptsz(NULL));
    pl_stats(&s1);
    pl_verify(env.ctx[b], dst, N, seed, label);
    pl_free(env.ctx[a], src);
    pl_free(env.ctx[b], dst);
    PL_EXPECT(s1.peer_copies + s1.staged_copies == s0.peer_copies + s0.staged_copies + 1,
              "%s: not counted as one cross-GPU copy", label);
    return s1.peer_copies > s0.peer_copies;
}

static uint64_t enable_calls(void)
{
    struct standin_stats s;
    pl_stats(&s);
    return s.peer_enable_calls;
}

static int enabled(int a, int b)
{
    return standin_peer_enabled(env.ctx[a], env.ctx[b]);
}

static void two_way(int want_peer, const char *why)
{
    for (int i = 0; i < 40; i++) {
        int a = i % 2, b = 1 - a;
        int peer = xcopy(a, b, i % 3);
        PL_EXPECT(peer == want_peer, "%s: copy %d (%d->%d) %s", why, i, a, b,
                  peer ? "peer" : "staged");
    }
}

static void all_pairs(int islands)
{
    for (int a = 0; a < env.ndev; a++)
        for (int b = 0; b < env.ndev; b++) {
            if (a == b)
                continue;
            int can = !islands || (a < env.ndev / 2) == (b < env.ndev / 2);
            int peer = xcopy(a, b, (a + b) % 3);
            PL_EXPECT(peer == can, "pair %d->%d: %s", a, b, peer ? "peer" : "staged");
        }
}

/* The program's access to mapped range va, for devices 0 and 1: what
 * cuMemGetAccess answers, packed (the answers are 0..3). */
static unsigned access_of(CUdeviceptr va)
{
    unsigned packed = 0;
    for (int d = 0; d < 2; d++) {
        CUmemLocation loc;
        unsigned long long fl = 99;
        memset(&loc, 0, sizeof loc);
        loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
        loc.id = d;
        PL_OK(cuMemGetAccess(&fl, &loc, va));
        packed |= (unsigned)fl << (4 * d);
    }
    return packed;
}

static size_t free_on(CUcontext c)
{
    size_t fr = 0, total = 0;
    pl_use(c);
    PL_OK(cuMemGetInfo_v2(&fr, &total));
    return fr;
}

/* A mapping of gran bytes on device d (cuMemCreate, reserve, map, and the
 * handle released, as ggml does: the mapping holds it), granted to the
 * nacc devices of acc. */
static CUdeviceptr map_on(int d, size_t gran, const CUmemAccessDesc *acc, int nacc)
{
    CUmemAllocationProp prop = pl_device_prop(d);
    CUmemGenericAllocationHandle h;
    CUdeviceptr va = 0;
    pl_use(env.ctx[d]);
    PL_OK(cuMemCreate(&h, gran, &prop, 0));
    PL_OK(cuMemAddressReserve(&va, gran, 0, 0, 0));
    PL_OK(cuMemMap(va, gran, 0, h, 0));
    PL_OK(cuMemRelease(h));
    PL_OK(cuMemSetAccess(va, gran, acc, (size_t)nacc));
    return va;
}

/* Mapped memory on devices 0 and 1, each granted to its owner only. Round
 * 0: the shim's aliases carry the copies over the link (one enable, 0->1);
 * cuMemGetAccess answers as before and nobody but the program set access.
 * Round 1: the program grants device 1 on va[0] itself. After the program
 * unmaps and releases, the memory is free again: no alias kept it.
 * Returns the enable count afterwards. */
static uint64_t mapped(uint64_t enables)
{
    CUcontext c0 = env.ctx[0], c1 = env.ctx[1];
    CUdeviceptr d1 = pl_alloc(c1, N);
    size_t gran = pl_vmm_round(0, N); /* the mapping size */
    size_t free0 = free_on(c0), free1 = free_on(c1);
    CUdeviceptr va[2] = {0, 0};
    for (int d = 0; d < 2; d++) {
        CUmemAccessDesc acc;
        memset(&acc, 0, sizeof acc);
        acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        acc.location.id = d;
        acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        va[d] = map_on(d, gran, &acc, 1);
    }
    unsigned access0 = access_of(va[0]), access1 = access_of(va[1]);
    PL_EXPECT(access0 == 0x03 && access1 == 0x30, "access before: %#x %#x", access0, access1);
    struct standin_stats s0, s1;
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            CUmemAccessDesc acc[2];
            memset(acc, 0, sizeof acc);
            for (int d = 0; d < 2; d++) {
                acc[d].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
                acc[d].location.id = d;
                acc[d].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            }
            PL_OK(cuMemSetAccess(va[0], gran, acc, 2));
        }
        pl_fill(c0, va[0], N, ++seed);
        pl_set(c1, va[1], N, 0);
        pl_use(c0);
        pl_stats(&s0);
        PL_OK(cuMemcpyDtoD_v2(va[1], va[0], N));
        pl_stats(&s1);
        PL_EXPECT(s1.peer_copies - s0.peer_copies == 1 && s1.staged_copies == s0.staged_copies,
                  "mapped round %d: peer %llu staged %llu", round,
                  (unsigned long long)(s1.peer_copies - s0.peer_copies),
                  (unsigned long long)(s1.staged_copies - s0.staged_copies));
        pl_verify(c1, va[1], N, seed, "mapped -> mapped");
        pl_fill(c1, va[1], N, ++seed);
        pl_use(c1);
        pl_stats(&s0);
        PL_OK(cuMemcpyPeerAsync(va[0], c0, va[1], c1, N, NULL));
        PL_OK(cuStreamSynchronize(NULL));
        pl_stats(&s1);
        PL_EXPECT(s1.peer_copies - s0.peer_copies == 1, "mapped 1->0 round %d: not peer", round);
        pl_verify(c0, va[0], N, seed, "mapped 1 -> mapped 0 (peer API)");
        pl_fill(c0, va[0], N, ++seed);
        pl_use(c0);
        PL_OK(cuMemcpy(d1, va[0], N));
        pl_verify(c1, d1, N, seed, "mapped -> device");
        if (round == 0) {
            PL_EXPECT(access_of(va[0]) == access0 && access_of(va[1]) == access1,
                      "access after the shim's copies: %#x %#x", access_of(va[0]),
                      access_of(va[1]));
            PL_EXPECT(standin_access_grants(va[0]) == 1 && standin_access_grants(va[1]) == 1,
                      "access set by someone else: %llu %llu",
                      (unsigned long long)standin_access_grants(va[0]),
                      (unsigned long long)standin_access_grants(va[1]));
        }
    }
    PL_EXPECT(access_of(va[0]) == 0x33, "the program's own grant: %#x", access_of(va[0]));
    PL_EXPECT(enable_calls() == enables + 1, "mapped memory: %llu enables, want 1",
              (unsigned long long)(enable_calls() - enables));
    for (int d = 0; d < 2; d++) {
        pl_use(env.ctx[d]);
        PL_OK(cuMemUnmap(va[d], gran));
        PL_OK(cuMemAddressFree(va[d], gran));
    }
    PL_EXPECT(free_on(c0) == free0 && free_on(c1) == free1,
              "mapped memory still held after unmap: %zu %zu bytes",
              free0 - free_on(c0), free1 - free_on(c1));
    pl_free(c1, d1);
    return enable_calls();
}

/* Mapped memory on devices 0 and 1 that the program granted to both
 * devices itself, before any copy (as PyTorch's expandable segments do):
 * the driver copies it directly, and the shim makes no alias for it (no
 * address reserved, nothing mapped but the program's own). */
static void mapped_granted(void)
{
    size_t gran = pl_vmm_round(0, N); /* the mapping size */
    CUmemAccessDesc acc[2];
    memset(acc, 0, sizeof acc);
    for (int d = 0; d < 2; d++) {
        acc[d].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        acc[d].location.id = d;
        acc[d].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    }
    CUdeviceptr va[2] = {map_on(0, gran, acc, 2), map_on(1, gran, acc, 2)};
    pl_fill(env.ctx[0], va[0], N, ++seed);
    uint64_t reserves = standin_calls("cuMemAddressReserve"), maps = standin_calls("cuMemMap");
    struct standin_stats s0, s1;
    pl_use(env.ctx[0]);
    pl_stats(&s0);
    PL_OK(cuMemcpyDtoD_v2(va[1], va[0], N));
    pl_stats(&s1);
    pl_verify(env.ctx[1], va[1], N, seed, "granted mapped -> mapped");
    PL_EXPECT(s1.peer_copies - s0.peer_copies == 1 && s1.staged_copies == s0.staged_copies,
              "granted mapped memory: not one peer copy");
    PL_EXPECT(standin_calls("cuMemAddressReserve") == reserves &&
                  standin_calls("cuMemMap") == maps,
              "granted mapped memory got an alias: %llu reserves, %llu maps",
              (unsigned long long)(standin_calls("cuMemAddressReserve") - reserves),
              (unsigned long long)(standin_calls("cuMemMap") - maps));
    for (int d = 0; d < 2; d++) {
        pl_use(env.ctx[d]);
        PL_OK(cuMemUnmap(va[d], gran));
        PL_OK(cuMemAddressFree(va[d], gran));
    }
}

/* Pool, mapped and managed memory: never a reason for an enable. */
static void memkinds(void)
{
    CUcontext c0 = env.ctx[0], c1 = env.ctx[1];
    CUdeviceptr p0 = 0, p1 = 0, d1 = pl_alloc(c1, N);
    uint64_t enables = enable_calls();
    struct standin_stats s0, s1;

    pl_use(c0);
    PL_OK(cuMemAllocAsync(&p0, N, NULL));
    PL_OK(cuStreamSynchronize(NULL));
    pl_use(c1);
    PL_OK(cuMemAllocAsync_ptsz(&p1, N, NULL));
    PL_OK(cuStreamSynchronize_ptsz(NULL));
    for (int round = 0; round < 2; round++) {
        if (round == 1) { /* the program grants device 1 access to pool 0 */
            CUmemoryPool pool0;
            CUmemAccessDesc d;
            memset(&d, 0, sizeof d);
            d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            d.location.id = 1;
            d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            PL_OK(cuDeviceGetDefaultMemPool(&pool0, 0));
            PL_OK(cuMemPoolSetAccess(pool0, &d, 1));
        }
        pl_fill(c0, p0, N, ++seed);
        pl_use(c0);
        pl_stats(&s0);
        PL_OK(cuMemcpyAsync(p1, p0, N, NULL));
        PL_OK(cuStreamSynchronize(NULL));
        pl_stats(&s1);
        PL_EXPECT(s1.peer_copies - s0.peer_copies == (uint64_t)round,
                  "pool round %d: peer %llu", round,
                  (unsigned long long)(s1.peer_copies - s0.peer_copies));
        pl_verify(c1, p1, N, seed, "pool -> pool");
        pl_fill(c0, p0, N, ++seed);
        pl_use(c0);
        PL_OK(cuMemcpyPeer(d1, c1, p0, c0, N));
        pl_verify(c1, d1, N, seed, "pool -> device");
    }
    PL_EXPECT(enable_calls() == enables, "pool memory caused an enable call");

    /* mapped memory on both devices: upgraded through the shim's aliases,
     * the program's own access lists untouched */
    enables = mapped(enables);
    mapped_granted();
    PL_EXPECT(enable_calls() == enables, "granted mapped memory caused an enable call");

    /* managed memory to device 1 */
    CUdeviceptr m = 0;
    pl_use(c0);
    PL_OK(cuMemAllocManaged(&m, N, CU_MEM_ATTACH_GLOBAL));
    pl_fill(c0, m, N, ++seed);
    PL_OK(cuMemcpy(d1, m, N));
    pl_verify(c1, d1, N, seed, "managed -> device");
    PL_EXPECT(enable_calls() == enables, "managed memory caused an enable call");

    pl_use(c0);
    PL_OK(cuMemFreeAsync(p0, NULL));
    PL_OK(cuMemFree_v2(m));
    pl_use(c1);
    PL_OK(cuMemFreeAsync(p1, NULL));
    PL_OK(cuStreamSynchronize(NULL));
    pl_free(c1, d1);
    /* and an ordinary copy is still upgraded */
    PL_EXPECT(xcopy(0, 1, 0) == 1, "an ordinary copy after them was not upgraded");
}

/* limit8: 8 devices, at most 3 peers each: no device holds more, no
 * direction is tried twice, and the enabled directions serve copies. */
static void peer_limit_held_8_devices(void)
{
    PL_EXPECT(env.ndev == 8, "needs STANDIN_DEVICES=8");
    int peers = 0;
    for (int a = 0; a < env.ndev; a++)
        for (int b = 0; b < env.ndev; b++)
            if (a != b)
                peers += xcopy(a, b, (a + b) % 3);
    for (int a = 0; a < env.ndev; a++) {
        int out = 0;
        for (int b = 0; b < env.ndev; b++)
            out += a != b && enabled(a, b);
        PL_EXPECT(out <= 3, "device %d holds %d peers, past the limit of 3", a, out);
    }
    PL_EXPECT(enable_calls() <= 56, "%llu enable calls: a direction was tried twice",
              (unsigned long long)enable_calls());
    /* 8 contexts x 3 peers = 24 directions at most, each serving a pair
     * both ways: at least as many peer copies as enabled directions. */
    PL_EXPECT(peers >= 24, "only %d of 56 copies went peer", peers);
    printf("limit8: %d of 56 copies peer, %llu enable calls\n", peers,
           (unsigned long long)enable_calls());
}

/* release: a primary context released to zero takes its links with it;
 * once retained again, copies are upgraded again. */
static void links_back_after_release(void)
{
    PL_EXPECT(xcopy(0, 1, 0) == 1, "first 0->1 not upgraded");
    PL_EXPECT(enabled(0, 1), "0->1 not enabled");
    /* pl_init retained every primary context once: release to zero */
    pl_use(NULL);
    PL_OK(cuDevicePrimaryCtxRelease_v2(1));
    PL_EXPECT(!enabled(0, 1) && !enabled(1, 0), "a link survived the release");
    CUcontext again = NULL;
    PL_OK(cuDevicePrimaryCtxRetain(&again, 1));
    env.ctx[1] = again;
    for (int i = 0; i < 4; i++)
        PL_EXPECT(xcopy(i % 2, 1 - i % 2, i % 3) == 1,
                  "copy %d after release and retain not upgraded", i);
    PL_EXPECT(enabled(0, 1) || enabled(1, 0), "no link after release and retain");
}

int main(int argc, char **argv)
{
    pl_want_shim(argc, argv);
    const char *sc = argc > 2 ? argv[2] : "";
    pl_init(&env);
    if (strcmp(sc, "none") == 0) {
        two_way(0, "topology none");
        PL_EXPECT(enable_calls() == 0, "%llu enable calls without capability",
                  (unsigned long long)enable_calls());
    } else if (strcmp(sc, "fail_one") == 0) {
        two_way(1, "0->1 fails, 1->0 serves");
        PL_EXPECT(enable_calls() == 2, "%llu enable calls, expected 2 (0->1 failed, 1->0)",
                  (unsigned long long)enable_calls());
        PL_EXPECT(enabled(1, 0) && !enabled(0, 1), "driver state 0->1 %d, 1->0 %d",
                  enabled(0, 1), enabled(1, 0));
    } else if (strcmp(sc, "fail_both") == 0) {
        two_way(0, "both directions fail");
        PL_EXPECT(enable_calls() == 2, "%llu enable calls over 40 copies, expected 2",
                  (unsigned long long)enable_calls());
    } else if (strcmp(sc, "mesh8") == 0 || strcmp(sc, "islands8") == 0) {
        int islands = sc[0] == 'i';
        PL_EXPECT(env.ndev == 8, "needs STANDIN_DEVICES=8");
        all_pairs(islands);
        struct standin_stats s;
        pl_stats(&s);
        uint64_t want = islands ? 24 : 56; /* ordered pairs that can peer */
        PL_EXPECT(s.peer_enable_calls == want && s.peer_enable_ok == want,
                  "%llu enable calls (%llu ok), expected %llu",
                  (unsigned long long)s.peer_enable_calls, (unsigned long long)s.peer_enable_ok,
                  (unsigned long long)want);
    } else if (strcmp(sc, "limit8") == 0) {
        peer_limit_held_8_devices();
    } else if (strcmp(sc, "max_peers") == 0) {
        PL_EXPECT(env.ndev == 3, "needs STANDIN_DEVICES=3");
        PL_EXPECT(xcopy(0, 1, 0) == 1, "0->1 not upgraded");
        PL_EXPECT(xcopy(2, 1, 1) == 1, "2->1 not upgraded");
        PL_EXPECT(xcopy(1, 0, 2) == 1, "1->0 not upgraded");
        PL_EXPECT(enabled(1, 0), "1->0 (issued from 1, whose one peer is free) not enabled");
        for (int i = 0; i < 10; i++) {
            PL_EXPECT(xcopy(0, 2, i % 3) == 0, "0->2 peer past the peer limit");
            PL_EXPECT(xcopy(2, 0, i % 3) == 0, "2->0 peer past the peer limit");
        }
        /* 0->1, 2->1, 1->0, then 0->2 and 2->0 refused once each */
        PL_EXPECT(enable_calls() == 5, "%llu enable calls, expected 5 (never retried)",
                  (unsigned long long)enable_calls());
    } else if (strcmp(sc, "release") == 0) {
        links_back_after_release();
    } else if (strcmp(sc, "memkinds") == 0) {
        memkinds();
    } else {
        fprintf(stderr, "faults: unknown scenario '%s'\n", sc);
        return 2;
    }
    return pl_finish(sc);
}
