/* What a bounce loop costs the driver, round by round: the shim's device
 * buffers, pinned buffers, streams and events for snapshots are paid when
 * its first snapshot is taken and reused after, not bought per copy, also
 * by a buffer the CPU reads between the copies (eager snapshots from its
 * third round); a loop that never bounces pays nothing at all.
 *
 * Loops, each over ROUNDS rounds of a D2H from device 0 then an H2D of the
 * same bytes to device 1: a reused pageable buffer, a reused pinned buffer
 * (16 MiB: the default pinned minimum), a fresh mmap'ed buffer each round
 * (x.cpu().to() in a loop), and a reused pageable buffer the CPU reads in
 * between. Per round the test counts the stand-in's calls that buy
 * something (allocations, registrations, streams, events).
 *
 * "bounce_cost shim|noshim": one transcript line per round (the bytes'
 * checksums), equal in both runs (compare.sh); under the shim it also
 * checks the counts: nothing bought in round 1 (no evidence yet), nothing
 * after the first snapshot's round, and bytes device to device from round
 * 2 on in the bouncing loops. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bt_common.h"

#define ROUNDS 8
/* Under ThreadSanitizer the first lazy snapshot of the process is judged
 * wasted before its H2D (its pages filled first; bytes right, a missed
 * bounce, seen only at that slowdown and not yet understood): round 2 may
 * go the normal way there; every later round must bounce. */
#if defined(__SANITIZE_THREAD__)
#define TSAN_FIRST_MAY_MISS 1
#else
#define TSAN_FIRST_MAY_MISS 0
#endif

static CUdeviceptr src0, dst1;

/* Driver calls that allocate memory, register it or create streams or
 * events: what "paying" means here. */
static uint64_t bought(void)
{
    static const char *const names[] = {
        "cuMemAlloc_v2",     "cuMemAllocAsync",         "cuMemHostAlloc",
        "cuMemAllocHost_v2", "cuMemHostRegister_v2",    "cuStreamCreate",
        "cuStreamCreateWithPriority", "cuEventCreate",   "cuMemCreate",
    };
    uint64_t n = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        n += standin_calls(names[i]);
    return n;
}

static void line(const char *what, const unsigned char *h, size_t n)
{
    standin_flush_all();
    printf("%s: host=%016llx device=%016llx\n", what, (unsigned long long)bt_fnv(h, n),
           (unsigned long long)bt_fnv((const void *)(uintptr_t)dst1, n));
}

enum loop_kind { PAGEABLE, PINNED, FRESH, READ_BETWEEN };

/* One loop; returns what each round bought (the program's own calls
 * excluded: none of its calls in a round buys anything). */
static void run_loop(enum loop_kind kind, const char *name, size_t n, uint64_t paid[ROUNDS],
                     uint64_t dev_bytes[ROUNDS])
{
    unsigned char *p = malloc(n), *h = NULL;
    void *pinned = NULL;
    /* A source of its own: the predictor keys on the source address too,
     * and an earlier loop's evidence must not carry over. */
    CUdeviceptr src = src0 + (CUdeviceptr)kind * 4096;
    PL_EXPECT(p != NULL, "malloc");
    if (kind == PINNED) {
        pl_use(bt_env.ctx[0]);
        PL_OK(cuMemHostAlloc(&pinned, n, 0));
        h = pinned;
    } else if (kind != FRESH) {
        h = malloc(n);
        PL_EXPECT(h != NULL, "malloc");
    }
    for (int r = 0; r < ROUNDS; r++) {
        unsigned char *f = NULL;
        if (kind == FRESH) {
            f = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            PL_EXPECT(f != MAP_FAILED, "mmap");
            h = f;
        }
        bt_pattern(p, n, 700 + 10 * (int)kind + r);
        bt_set_dev(src, p, n);
        struct standin_stats s0;
        standin_get_stats(&s0);
        uint64_t before = bought();
        pl_use(bt_env.ctx[0]);
        PL_OK(cuMemcpyDtoH_v2(h, src, n));
        if (kind == READ_BETWEEN)
            bt_check_host(h, p, n, name);
        pl_use(bt_env.ctx[1]);
        PL_OK(cuMemcpyHtoD_v2(dst1, h, n));
        pl_use(bt_env.ctx[0]);
        paid[r] = bought() - before;
        struct bt_paths d;
        bt_paths_since(&s0, &d);
        dev_bytes[r] = d.dev_bytes;
        bt_check_dev(dst1, p, n, name);
        char what[64];
        snprintf(what, sizeof what, "%s, round %d", name, r + 1);
        /* A reused pageable buffer read after each H2D would turn eager
         * (a reader): its host bytes are checked after the last round. */
        line(what, h, kind == PAGEABLE ? 0 : n);
        if (f != NULL)
            munmap(f, n); /* unmapped after: the next mmap may reuse it */
    }
    if (kind == PAGEABLE) {
        bt_check_host(h, p, n, name);
        line(name, h, n);
    }
    if (pinned != NULL)
        PL_OK(cuMemFreeHost(pinned));
    else if (kind != FRESH)
        free(h);
    free(p);
}

static void expect_paid_once(const char *name, const uint64_t paid[ROUNDS],
                             const uint64_t dev_bytes[ROUNDS], bool bounces, size_t n)
{
    if (!bt_shim)
        return;
    PL_EXPECT(paid[0] == 0, "%s: round 1 (no evidence yet) bought %llu driver objects", name,
              (unsigned long long)paid[0]);
    /* The first snapshot's round may buy; every round after it buys
     * nothing. */
    int first = -1;
    for (int r = 0; r < ROUNDS; r++)
        if (first < 0 && paid[r] != 0)
            first = r;
    for (int r = first < 0 ? 0 : first + 1; r < ROUNDS; r++)
        PL_EXPECT(paid[r] == 0, "%s: round %d bought %llu driver objects (first paid in round %d)",
                  name, r + 1, (unsigned long long)paid[r], first + 1);
    for (int r = 1; r < ROUNDS; r++) {
        if (bounces)
            PL_EXPECT(dev_bytes[r] >= n / 2 || (r == 1 && TSAN_FIRST_MAY_MISS),
                      "%s: round %d moved %llu bytes device to device", name, r + 1,
                      (unsigned long long)dev_bytes[r]);
        else
            PL_EXPECT(dev_bytes[r] == 0 && (r < 2 || paid[r] == 0),
                      "%s: round %d moved %llu bytes device to device", name, r + 1,
                      (unsigned long long)dev_bytes[r]);
    }
}

/* A staging loop through pinned memory below the pinned minimum never
 * bounces and must give no evidence: a later D2H from the same source
 * into pageable memory then goes the normal way. Under the default
 * minimums only (with P2PSHIM_BOUNCE_MIN set, pinned and pageable share
 * one minimum). */
static void small_pinned(void)
{
    size_t n = (size_t)1 << 20;
    CUdeviceptr src = src0 + 4 * 4096;
    unsigned char *p = malloc(n), *h = malloc(n);
    void *pinned = NULL;
    PL_EXPECT(p != NULL && h != NULL, "malloc");
    pl_use(bt_env.ctx[0]);
    PL_OK(cuMemHostAlloc(&pinned, n, 0));
    for (int r = 0; r < 3; r++) {
        bt_pattern(p, n, 800 + r);
        bt_set_dev(src, p, n);
        pl_use(bt_env.ctx[0]);
        PL_OK(cuMemcpyDtoH_v2(pinned, src, n));
        pl_use(bt_env.ctx[1]);
        PL_OK(cuMemcpyHtoD_v2(dst1, pinned, n));
        pl_use(bt_env.ctx[0]);
        bt_check_dev(dst1, p, n, "small pinned loop");
    }
    bt_pattern(p, n, 810);
    bt_set_dev(src, p, n);
    struct standin_stats s0;
    standin_get_stats(&s0);
    PL_OK(cuMemcpyDtoH_v2(h, src, n));
    struct bt_paths d;
    bt_paths_since(&s0, &d);
    PL_EXPECT(!bt_shim || getenv("P2PSHIM_BOUNCE_MIN") != NULL || d.d2h_bytes == n,
              "small pinned loop: a later pageable D2H from its source took a snapshot "
              "(%llu of %zu bytes to the host)", (unsigned long long)d.d2h_bytes, n);
    bt_check_host(h, p, n, "after the small pinned loop");
    line("after the small pinned loop", h, n);
    PL_OK(cuMemFreeHost(pinned));
    free(h);
    free(p);
}

int main(int argc, char **argv)
{
    bt_init(argc, argv);
    size_t big = (size_t)16 << 20;
    src0 = pl_alloc(bt_env.ctx[0], big + 5 * 4096);
    dst1 = pl_alloc(bt_env.ctx[1], big);
    uint64_t paid[ROUNDS], dev[ROUNDS];
    bool bounce = getenv("BT_NO_BOUNCE") == NULL;
    size_t pageable = (size_t)4 << 20, pinned = big; /* the reused pageable minimum */

    small_pinned(); /* first: while no key has evidence yet */
    run_loop(PAGEABLE, "pageable loop", pageable, paid, dev);
    expect_paid_once("pageable loop", paid, dev, bounce, pageable);
    run_loop(PINNED, "pinned loop", pinned, paid, dev);
    expect_paid_once("pinned loop", paid, dev, bounce, pinned);
    /* A size no other loop uses: keys are (address, size), and an mmap may
     * return an earlier loop's freed buffer, whose host key keeps its
     * evidence where the shim does not see that free (a sanitizer's). */
    size_t fresh = pageable + 3 * 4096;
    run_loop(FRESH, "fresh buffer loop", fresh, paid, dev);
    expect_paid_once("fresh buffer loop", paid, dev, bounce, fresh);
    /* The CPU reads the buffer between the copies: its lazy snapshot is
     * read back once, then it turns eager (bounce_paths' policy checks the
     * modes): every round from 2 on still serves its H2D device to device,
     * and buys nothing after the first snapshot's round. */
    run_loop(READ_BETWEEN, "read between", pageable + 4096, paid, dev);
    expect_paid_once("read between", paid, dev, bounce, pageable + 4096);
    return pl_finish("bounce_cost");
}
