/* The peer link of a bounced H2D: an H2D from a snapshot on device 0 into
 * device 1 is a device-to-device copy, and the shim enables peer access
 * for it as for any copy, in the needed direction (from the issuing
 * device, 1, to the snapshot's, 0), and only then.
 *
 * "bounce_link shim|noshim": one transcript line (the checksums of the
 * bytes), the same in both runs (compare.sh); the shim run checks the
 * link's true state in the stand-in.
 * "bounce_link shim|noshim idle" (P2PSHIM_LINK_IDLE_MS=40, three
 * devices): that link is given back when idle like any other: a burst of
 * bounced pairs enables it; a bounced H2D still queued keeps it past the
 * idle time; once that one is complete and the idle time has passed, a
 * copy 0 -> 2 (which looks for idle links) finds it disabled; the next
 * bounced H2D enables it again. Transcript: each H2D's checksum. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bt_common.h"

#define PG 4096

static void first_link(void)
{
    size_t n = (size_t)512 << 10;
    CUcontext c0 = bt_env.ctx[0], c1 = bt_env.ctx[1];
    CUdeviceptr src0 = pl_alloc(c0, n), stage0 = pl_alloc(c0, n), dst1 = pl_alloc(c1, n);
    unsigned char *h = malloc(n), *p = malloc(n);
    if (h == NULL || p == NULL)
        abort();
    pl_use(c0);
    bt_prime(h, src0, stage0, n); /* evidence, on device 0 alone */
    bt_pattern(p, n, 7);
    bt_set_dev(src0, p, n);
    PL_OK(cuMemcpyDtoH_v2(h, src0, n));
    bool before = standin_peer_enabled(c0, c1) || standin_peer_enabled(c1, c0);
    struct standin_stats s0;
    standin_get_stats(&s0);
    pl_use(c1);
    PL_OK(cuMemcpyHtoD_v2(dst1, h, n));
    pl_use(c0);
    bt_check_dev(dst1, p, n, "bounced H2D");
    if (bt_shim && !getenv("BT_NO_BOUNCE")) {
        struct bt_paths after;
        bt_paths_since(&s0, &after);
        PL_EXPECT(after.dev_bytes >= n - 2 * PG, "the H2D moved %llu bytes device to device",
                  (unsigned long long)after.dev_bytes);
        PL_EXPECT(!before, "peer access was enabled before any cross-device copy");
        PL_EXPECT(standin_peer_enabled(c1, c0) && !standin_peer_enabled(c0, c1),
                  "after the bounced H2D issued on device 1: 1->0 %d, 0->1 %d (want 1, 0)",
                  standin_peer_enabled(c1, c0), standin_peer_enabled(c0, c1));
    }
    standin_flush_all();
    printf("bounced H2D: host=%016llx device=%016llx\n", (unsigned long long)bt_fnv(h, n),
           (unsigned long long)bt_fnv((const void *)(uintptr_t)dst1, n));
    free(h);
    free(p);
}

#define IDLE_N ((size_t)512 << 10)
#define IDLE_WAIT_MS 120 /* three times P2PSHIM_LINK_IDLE_MS */

struct idle_run {
    CUcontext c0, c1;
    CUdeviceptr src0, dst1, other0, other2; /* other*: the 0 -> 2 link */
    unsigned char *h, *want;
    CUstream s1; /* device 1's, non-blocking: its work runs when waited for */
    unsigned seed;
};

static int linked(const struct idle_run *r)
{
    return standin_peer_enabled(r->c0, r->c1) || standin_peer_enabled(r->c1, r->c0);
}

static bool checking(void)
{
    return bt_shim && !getenv("BT_NO_BOUNCE");
}

/* A bounced pair: fresh bytes on device 0, a D2H of them (a snapshot) and
 * an H2D of the host buffer to device 1 on s1, left queued. Returns the
 * device bytes the H2D moved (the stand-in's counters). */
static uint64_t pair(struct idle_run *r)
{
    struct standin_stats s0;
    struct bt_paths moved;
    bt_pattern(r->want, IDLE_N, ++r->seed);
    bt_set_dev(r->src0, r->want, IDLE_N);
    pl_use(r->c0);
    PL_OK(cuMemcpyDtoH_v2(r->h, r->src0, IDLE_N));
    standin_get_stats(&s0);
    pl_use(r->c1);
    PL_OK(cuMemcpyHtoDAsync_v2(r->dst1, r->h, IDLE_N, r->s1));
    bt_paths_since(&s0, &moved);
    return moved.dev_bytes;
}

/* The queued H2D run and checked; its checksum in the transcript. */
static void finish(struct idle_run *r, const char *what)
{
    pl_use(r->c1);
    PL_OK(cuStreamSynchronize(r->s1));
    bt_check_dev(r->dst1, r->want, IDLE_N, what);
    printf("%s: device=%016llx\n", what,
           (unsigned long long)bt_fnv((const void *)(uintptr_t)r->dst1, IDLE_N));
}

/* A copy 0 -> 2 through the shim: it looks for idle links. */
static void copy_02(struct idle_run *r)
{
    pl_use(r->c0);
    PL_OK(cuMemcpyPeer(r->other2, bt_env.ctx[2], r->other0, r->c0, IDLE_N));
}

static uint64_t disables_ok(void)
{
    struct standin_stats st;
    standin_get_stats(&st);
    return st.peer_disable_ok;
}

static void idle(void)
{
    struct idle_run r = {bt_env.ctx[0], bt_env.ctx[1], 0, 0, 0, 0, NULL, NULL, NULL, 30};
    r.src0 = pl_alloc(r.c0, IDLE_N);
    r.dst1 = pl_alloc(r.c1, IDLE_N);
    r.other0 = pl_alloc(r.c0, IDLE_N);
    r.other2 = pl_alloc(bt_env.ctx[2], IDLE_N);
    CUdeviceptr stage0 = pl_alloc(r.c0, IDLE_N);
    r.h = malloc(IDLE_N);
    r.want = malloc(IDLE_N);
    if (r.h == NULL || r.want == NULL)
        abort();
    pl_use(r.c1);
    PL_OK(cuStreamCreate(&r.s1, CU_STREAM_NON_BLOCKING));
    pl_use(r.c0);
    bt_prime(r.h, r.src0, stage0, IDLE_N); /* evidence, on device 0 alone */
    for (int i = 0; i < 3; i++) {
        uint64_t moved = pair(&r);
        if (checking())
            PL_EXPECT(moved >= IDLE_N - 2 * PG, "burst: the H2D moved %llu bytes device to "
                      "device", (unsigned long long)moved);
        finish(&r, "burst");
    }
    bool check = checking();
    PL_EXPECT(!check || linked(&r), "the bounced H2Ds left no link 0-1");

    pair(&r);
    /* Without the shim an H2D from pageable memory runs at once. */
    PL_EXPECT(!check || standin_pending_ops() > 0, "the queued H2D ran at once");
    usleep(IDLE_WAIT_MS * 1000);
    copy_02(&r);
    PL_EXPECT(!check || linked(&r), "link 0-1 disabled under a queued bounced H2D");
    finish(&r, "queued");

    uint64_t disabled = disables_ok();
    usleep(IDLE_WAIT_MS * 1000);
    copy_02(&r);
    PL_EXPECT(!check || !linked(&r), "idle link 0-1 kept");
    PL_EXPECT(!check || disables_ok() > disabled, "no cuCtxDisablePeerAccess succeeded");

    uint64_t moved = pair(&r);
    PL_EXPECT(!check || (linked(&r) && moved >= IDLE_N - 2 * PG),
              "after the release: link %d, %llu bytes device to device", linked(&r),
              (unsigned long long)moved);
    finish(&r, "after the release");
    PL_OK(cuStreamDestroy_v2(r.s1));
    free(r.h);
    free(r.want);
}

int main(int argc, char **argv)
{
    bt_init(argc, argv);
    if (argc > 2 && strcmp(argv[2], "idle") == 0) {
        if (bt_env.ndev < 3) {
            fprintf(stderr, "bounce_link idle needs STANDIN_DEVICES=3\n");
            return 2;
        }
        idle();
    } else {
        first_link();
    }
    return pl_finish("bounce_link");
}
