/* A loop that alternates a useful round (D2H into a host buffer, then H2D
 * from it) with a spoilt one (the CPU rewrites the buffer between the
 * copies), the worst pattern for the shim's predictor: whatever the shim
 * guessed, a rewrite of the buffer must never cost a fault per page, in a
 * round that has a snapshot as in one that has none.
 *
 * "bounce_alt shim|noshim MIB": pinned (cuMemHostAlloc) and malloc
 * buffers of MIB MiB (16 by default), evidence first, then 12 pairs. Per
 * spoilt round the program thread's page faults during its memset are
 * counted (getrusage); with the shim they must stay under a small
 * constant (the fault budget and the fills' pieces), never one per page.
 * Then a pinned buffer refilled by the CPU after each H2D (refill_after).
 * Every byte of the host buffer and of the H2D's destination is checked
 * in both runs, and the transcripts compared (compare.sh). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bt_common.h"

#define PG 4096
#define PAIRS 12
/* The budget (16), the doubling fills, and room for the scheduler. */
#define FAULTS_MAX 64

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define FAULTS_COUNTED 0 /* shadow memory faults too */
#else
#define FAULTS_COUNTED 1
#endif

static long my_faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_minflt + u.ru_majflt;
}

static void one_kind(int pinned, size_t n, CUdeviceptr src, CUdeviceptr dst)
{
    const char *kind = pinned ? "pinned" : "malloc";
    unsigned char *h = NULL, *want = malloc(n);
    if (pinned) {
        void *p = NULL;
        PL_OK(cuMemHostAlloc(&p, n, 0));
        h = p;
    } else {
        h = malloc(n);
    }
    PL_EXPECT(h != NULL && want != NULL, "%s: no buffer", kind);
    if (h == NULL || want == NULL)
        exit(2);
    memset(h, 0, n);
    pl_use(bt_env.ctx[0]);
    bt_prime(h, src, dst, n);
    long worst = 0;
    int worst_round = -1;
    for (int r = 0; r < 2 * PAIRS; r++) {
        int spoil = r % 2;
        char what[64];
        snprintf(what, sizeof what, "%s round %d (%s)", kind, r, spoil ? "spoilt" : "useful");
        bt_pattern(want, n, 900 + (unsigned)r);
        bt_set_dev(src, want, n);
        PL_OK(cuMemcpyDtoH_v2(h, src, n));
        if (spoil) {
            long f0 = my_faults();
            memset(h, 0x40 + r, n);
            long faults = my_faults() - f0;
            memset(want, 0x40 + r, n);
            fprintf(stderr, "%s: the rewrite took %ld page faults\n", what, faults);
            if (faults > worst) {
                worst = faults;
                worst_round = r;
            }
        }
        PL_OK(cuMemcpyHtoD_v2(dst, h, n));
        bt_check_dev(dst, want, n, what);
        bt_check_host(h, want, n, what);
        printf("%s: device=%016llx\n", what,
               (unsigned long long)bt_fnv((const void *)(uintptr_t)dst, n));
    }
    fprintf(stderr, "%s: %zu bytes, the most page faults of one rewrite: %ld (round %d)\n",
            kind, n, worst, worst_round);
    PL_EXPECT(!bt_shim || !FAULTS_COUNTED || worst <= FAULTS_MAX,
              "%s: a rewrite took %ld page faults (round %d; at most %d): one per page", kind,
              worst, worst_round, FAULTS_MAX);
    if (pinned)
        PL_OK(cuMemFreeHost(h));
    else
        free(h);
    free(want);
}

/* A pinned buffer refilled by the CPU after each H2D, as a loader
 * refills its pinned batch: each snapshot serves its H2D, then the refill
 * lifts its protection, a kernel fault per page (more than the H2D saved).
 * The keys must back off: of 16 rounds, at most 6 served from a snapshot
 * (its evidence, then skips of 1, 2, 4, 8), not every round. */
static void refill_after(size_t n, CUdeviceptr src, CUdeviceptr dst)
{
    void *p = NULL;
    unsigned char *want = malloc(n);
    PL_OK(cuMemHostAlloc(&p, n, 0));
    unsigned char *h = p;
    if (h == NULL || want == NULL)
        exit(2);
    memset(h, 0, n);
    pl_use(bt_env.ctx[0]);
    bt_prime(h, src, dst, n);
    int served = 0;
    for (int r = 0; r < 16; r++) {
        char what[64];
        snprintf(what, sizeof what, "pinned refill round %d", r);
        struct standin_stats s0;
        bt_d2h_round(h, src, bt_env.ctx[0], want, n, 950 + (unsigned)r, &s0);
        PL_OK(cuMemcpyHtoD_v2(dst, h, n));
        struct bt_paths d;
        bt_paths_since(&s0, &d);
        if (d.h2d_bytes == 0)
            served++;
        bt_check_dev(dst, want, n, what);
        memset(h, 0x20 + r, n); /* the refill */
        memset(want, 0x20 + r, n);
        bt_check_host(h, want, n, what);
        printf("%s: device=%016llx\n", what,
               (unsigned long long)bt_fnv((const void *)(uintptr_t)dst, n));
    }
    fprintf(stderr, "pinned refill: %d of 16 rounds served from a snapshot\n", served);
    PL_EXPECT(!bt_shim || (served >= 1 && served <= 6),
              "pinned refill: %d of 16 rounds served from a snapshot (1 to 6: the refills "
              "after the H2D must back the buffer off)", served);
    PL_OK(cuMemFreeHost(h));
    free(want);
}

int main(int argc, char **argv)
{
    bt_init(argc, argv);
    size_t n = (argc > 2 ? strtoul(argv[2], NULL, 10) : 16) << 20;
    CUdeviceptr src = pl_alloc(bt_env.ctx[0], n), dst = pl_alloc(bt_env.ctx[1], n);
    /* First: the predictor has no history of its buffer's address yet
     * (the pinned loop's buffer, freed, may be mapped there again). */
    refill_after(n, src, dst);
    one_kind(1, n, src, dst);
    one_kind(0, n, src, dst);
    return pl_finish("bounce_alt");
}
