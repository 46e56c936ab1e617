/* Eager snapshots of pageable memory ended behind the program, on the
 * shim's thread, after the H2D they served (docs/BOUNCE.md): the bytes
 * stay right whatever the program does next, and a buffer uploaded twice
 * per D2H is noticed and keeps its snapshots to the end.
 *
 * "bounce_behind shim|noshim [CASE...]", run with P2PSHIM_BOUNCE=eager:
 *   refill: a 16 MiB malloc buffer (its protection pass split between
 *     the program's thread and the shim's), D2H then H2D, then the CPU rewrites it
 *     whole at once (while its snapshot may still be being ended), then a
 *     D2H straight after the H2D; every byte of host and device checked.
 *     With the shim's log, the summary counts the ends behind
 *     (CMakeLists: bounce.behind.refill.summary).
 *   patch: the CPU writes a byte in 8 pages spread over the buffer
 *     between the copies (both halves of the protection pass), and on
 *     both sides of each quarter's boundary: the H2D takes those pages
 *     from the host, the rest from the snapshot. With BEHIND_MIB=64 the
 *     D2H is made in pieces, each protected while the next is copied
 *     (CMakeLists: bounce.behind.pieces.*).
 *   patch_async: the same with each D2H asynchronous on a stream of the
 *     program's, then the stream synchronized.
 *   patch_pinned: pinned memory and an asynchronous D2H (its protection
 *     pass, made before the copy is queued, split too): relayed rounds
 *     come up from the snapshot, and a byte written in each eighth after
 *     a snapshot reaches the device.
 *   spoilt: every round the CPU rewrites the buffer between its copies:
 *     each snapshot is given up (its fault budget) and ended behind the
 *     program by the H2D passing by (bounce.behind.spoilt.summary counts them).
 *   broadcast: the buffer goes down once and up to two buffers, round
 *     after round: after the first round both H2Ds come from the snapshot
 *     (the stand-in's counters), which they cannot when its first H2D
 *     has ended it.
 * Transcripts compared with and without the shim (compare.sh). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bt_common.h"

#define PG 4096
#define ROUNDS 12

/* The buffers' size: 16 MiB, or BEHIND_MIB MiB (the pieces cases). */
static size_t N = (size_t)16 << 20;

static CUdeviceptr src0, dst1, dst2;
static unsigned char *pat, *want;

static void line(const char *what, const unsigned char *h, CUdeviceptr d)
{
    standin_flush_all();
    printf("%s: host=%016llx device=%016llx\n", what, (unsigned long long)bt_fnv(h, N),
           (unsigned long long)bt_fnv((const void *)(uintptr_t)d, N));
}

/* A malloc buffer of N bytes, zeroed, gone down and up once. */
static unsigned char *primed_buffer(const char *what)
{
    unsigned char *h = malloc(N);
    PL_EXPECT(h != NULL, "%s: no buffer", what);
    if (h == NULL)
        exit(2);
    memset(h, 0, N);
    pl_use(bt_env.ctx[0]);
    bt_prime(h, src0, dst1, N);
    return h;
}

static void case_refill(void)
{
    unsigned char *h = primed_buffer("refill");
    for (unsigned r = 0; r < ROUNDS; r++) {
        char what[64];
        struct standin_stats s0;
        bt_d2h_round(h, src0, bt_env.ctx[0], pat, N, 700 + r, &s0);
        PL_OK(cuMemcpyHtoD_v2(dst1, h, N));
        snprintf(what, sizeof what, "refill, round %u, H2D", r + 1);
        bt_check_dev(dst1, pat, N, what);
        if (r % 2 == 0) {
            /* The CPU at once, as a loader refills its batch. */
            memset(h, (int)(r + 1), N);
            memset(want, (int)(r + 1), N);
            snprintf(what, sizeof what, "refill, round %u, rewritten", r + 1);
            bt_check_host(h, want, N, what);
        } else {
            /* The next D2H at once, over every page. */
            bt_d2h_round(h, src0, bt_env.ctx[0], pat, N, 800 + r, &s0);
            snprintf(what, sizeof what, "refill, round %u, D2H again", r + 1);
            bt_check_host(h, pat, N, what);
            PL_OK(cuMemcpyHtoD_v2(dst1, h, N));
            bt_check_dev(dst1, pat, N, what);
        }
        line(what, h, dst1);
    }
    free(h);
}

/* The bytes patch_round writes in round r: one in each eighth of the
 * buffer, and one on each side of every quarter's boundary (the pieces a
 * large pageable D2H is made in, each protected while the next is
 * copied, meet there). */
static void patch_round(unsigned char *h, unsigned r)
{
    for (size_t k = 0; k < 8; k++) {
        size_t at = k * (N / 8) + PG * (r + 1) + r;
        h[at] ^= 0xa5;
        want[at] ^= 0xa5;
    }
    for (size_t q = 1; q < 4; q++) {
        size_t at = q * (N / 4) - (r % 2 == 0 ? 1 : PG);
        h[at] ^= 0x3c;
        want[at] ^= 0x3c;
        h[at + PG] ^= 0xc3;
        want[at + PG] ^= 0xc3;
    }
}

/* async: each D2H on a stream of the program's (cuMemcpyDtoHAsync, then
 * the stream synchronized), as PyTorch's .cpu() makes it. */
static void patch_loop(const char *name, bool async)
{
    unsigned char *h = primed_buffer(name);
    CUstream stream = NULL;
    if (async)
        PL_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    for (unsigned r = 0; r < ROUNDS; r++) {
        char what[64];
        struct standin_stats s0;
        if (async) {
            bt_pattern(pat, N, 1300 + r);
            bt_set_dev(src0, pat, N);
            PL_OK(cuMemcpyDtoHAsync_v2(h, src0, N, stream));
            PL_OK(cuStreamSynchronize(stream));
        } else {
            bt_d2h_round(h, src0, bt_env.ctx[0], pat, N, 1100 + r, &s0);
        }
        memcpy(want, pat, N);
        patch_round(h, r);
        PL_OK(cuMemcpyHtoD_v2(dst1, h, N));
        snprintf(what, sizeof what, "%s, round %u", name, r + 1);
        bt_check_dev(dst1, want, N, what);
        bt_check_host(h, want, N, what);
        line(what, h, dst1);
    }
    if (async)
        PL_OK(cuStreamDestroy_v2(stream));
    free(h);
}

static void case_patch(void)
{
    patch_loop("patch", false);
}

static void case_patch_async(void)
{
    patch_loop("patch_async", true);
}

/* Pinned memory and an asynchronous D2H, whose protection pass is made
 * (split likewise) before its copy is queued. A pinned snapshot with a
 * written page is not served in part, so most rounds only relay the
 * buffer (their H2D from the snapshot: the stand-in's counters), and in
 * rounds 1 and 11 the CPU writes a byte in each eighth of it (both
 * halves of the pass) after a D2H that took a snapshot: every write must
 * reach the device. Round 1's D2H makes the range's protection pass
 * (later ones find it still protected: dormant pinned ranges). */
static void case_patch_pinned(void)
{
    void *p = NULL;
    PL_OK(cuMemAllocHost_v2(&p, N));
    unsigned char *h = p;
    if (h == NULL)
        exit(2);
    memset(h, 0, N);
    pl_use(bt_env.ctx[0]);
    CUstream stream;
    PL_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    bt_prime(h, src0, dst1, N);
    unsigned written_after_snapshot = 0;
    for (unsigned r = 0; r < ROUNDS; r++) {
        char what[64];
        struct standin_stats s0, s1;
        bt_pattern(pat, N, 1200 + r);
        bt_set_dev(src0, pat, N);
        standin_get_stats(&s0);
        PL_OK(cuMemcpyDtoHAsync_v2(h, src0, N, stream));
        PL_OK(cuStreamSynchronize(stream));
        standin_get_stats(&s1);
        bool snapshot = s1.same_device_bytes - s0.same_device_bytes >= N;
        memcpy(want, pat, N);
        bool write = r == 0 || r == 10;
        for (size_t k = 0; write && k < 8; k++) {
            size_t at = k * (N / 8) + PG * (r + 3) + r;
            h[at] ^= 0x5a;
            want[at] ^= 0x5a;
        }
        written_after_snapshot += write && snapshot;
        standin_get_stats(&s1);
        PL_OK(cuMemcpyHtoD_v2(dst1, h, N));
        snprintf(what, sizeof what, "patch_pinned, round %u", r + 1);
        if (snapshot && !write)
            bt_expect_bounced(&s1, 0, N, N, what);
        bt_check_dev(dst1, want, N, what);
        bt_check_host(h, want, N, what);
        line(what, h, dst1);
    }
    if (bt_shim && !getenv("BT_NO_BOUNCE"))
        PL_EXPECT(written_after_snapshot >= 1,
                  "patch_pinned: no written round followed a snapshot (%u)",
                  written_after_snapshot);
    PL_OK(cuStreamDestroy_v2(stream));
    PL_OK(cuMemFreeHost(h));
}

static void case_spoilt(void)
{
    unsigned char *h = primed_buffer("spoilt");
    for (unsigned r = 0; r < 2 * ROUNDS; r++) {
        char what[64];
        struct standin_stats s0;
        bt_d2h_round(h, src0, bt_env.ctx[0], pat, N, 1000 + r, &s0);
        snprintf(what, sizeof what, "spoilt, round %u", r + 1);
        bt_check_host(h, pat, N, what);
        uint64_t flip = 0x0101010101010101ull * (r + 1);
        for (size_t i = 0; i < N; i += sizeof flip) {
            uint64_t w;
            memcpy(&w, pat + i, sizeof w);
            w ^= flip;
            memcpy(want + i, &w, sizeof w);
        }
        memcpy(h, want, N);
        PL_OK(cuMemcpyHtoD_v2(dst1, h, N));
        bt_check_dev(dst1, want, N, what);
        bt_check_host(h, want, N, what);
        line(what, h, dst1);
    }
    free(h);
}

static void case_broadcast(void)
{
    unsigned char *h = primed_buffer("broadcast");
    for (unsigned r = 0; r < ROUNDS; r++) {
        char what[64];
        struct standin_stats s0;
        bt_d2h_round(h, src0, bt_env.ctx[0], pat, N, 900 + r, &s0);
        PL_OK(cuMemcpyHtoD_v2(dst1, h, N));
        PL_OK(cuMemcpyHtoD_v2(dst2, h, N));
        snprintf(what, sizeof what, "broadcast, round %u", r + 1);
        /* The first round learns that the buffer goes up twice. */
        if (r > 0)
            bt_expect_bounced(&s0, N + 4 * PG, 2 * N - 4 * PG, 3 * N, what);
        bt_check_dev(dst1, pat, N, what);
        bt_check_dev(dst2, pat, N, what);
        bt_check_host(h, pat, N, what);
        line(what, h, dst2);
    }
    free(h);
}

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    {"refill", case_refill},          {"patch", case_patch},   {"patch_async", case_patch_async},
    {"patch_pinned", case_patch_pinned}, {"spoilt", case_spoilt}, {"broadcast", case_broadcast},
};

int main(int argc, char **argv)
{
    bt_init(argc, argv);
    const char *mib = getenv("BEHIND_MIB");
    if (mib != NULL && atoi(mib) >= 1)
        N = (size_t)atoi(mib) << 20;
    src0 = pl_alloc(bt_env.ctx[0], N);
    dst1 = pl_alloc(bt_env.ctx[1], N);
    dst2 = pl_alloc(bt_env.ctx[1], N);
    pat = malloc(N);
    want = malloc(N);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        bool run = argc <= 2;
        for (int a = 2; a < argc; a++)
            run = run || strcmp(argv[a], cases[c].name) == 0;
        if (run)
            cases[c].fn();
    }
    return pl_finish("bounce_behind");
}
