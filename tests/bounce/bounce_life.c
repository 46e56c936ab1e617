/* Host-bounced copies, lifetimes and limits: realloc (mremap moves the
 * buffer), free and reuse of the block, MADV_DONTNEED, memory that must
 * never be lazy (a shared mapping, an mlocked buffer), pinned and
 * registered memory (eager), eight threads bouncing at once, and the
 * device budget.
 *
 * "bounce_life shim|noshim [CASE...]": the cases named, or all of them.
 * Transcripts as in bounce_paths. The cases of the device's limits and of
 * the process as a whole are in bounce_life_limits.c. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bounce_life.h"

#define PG 4096
#define N (((size_t)1 << 20) + 321)

CUdeviceptr src0, dst1;
unsigned char *pat, *want;

void line(const char *what, const unsigned char *h, size_t n, CUdeviceptr d)
{
    standin_flush_all();
    printf("%s: host=%016llx device=%016llx\n", what, (unsigned long long)bt_fnv(h, n),
           (unsigned long long)bt_fnv((const void *)(uintptr_t)d, n));
}

/* D2H of n pattern bytes of seed from src0 into h (ctx 0 current),
 * after a staging round over the same buffer: the evidence the shim needs
 * to bounce it (without it, the D2H goes the normal way). */
void d2h_only(unsigned char *h, size_t n, unsigned seed)
{
    bt_pattern(pat, n, seed);
    bt_set_dev(src0, pat, n);
    PL_OK(cuMemcpyDtoH_v2(h, src0, n));
}

void d2h(unsigned char *h, size_t n, unsigned seed)
{
    bt_prime(h, src0, dst1, n);
    d2h_only(h, n, seed);
}

/* H2D of h to dst1; the device must hold want afterwards, and so the host. */
void h2d_check(const unsigned char *h, size_t n, const char *what)
{
    PL_OK(cuMemcpyHtoD_v2(dst1, h, n));
    bt_check_dev(dst1, want, n, what);
    bt_check_host(h, want, n, what);
    line(what, h, n, dst1);
}

static void case_realloc(void)
{
    /* Large enough for its own mapping: realloc moves it with mremap. */
    size_t n = (size_t)8 << 20;
    unsigned char *h = malloc(n);
    d2h(h, n, 500);
    memcpy(want, pat, n);
    unsigned char *g = realloc(h, 3 * n);
    PL_EXPECT(g != NULL, "realloc failed");
    h2d_check(g, n, "realloc grown");
    g = realloc(g, n / 2);
    h2d_check(g, n / 2, "realloc shrunk");
    free(g);
}

/* The program resets its devices itself (cudaDeviceReset) while a
 * snapshot of a buffer it has not read yet is held: the shim's buffers,
 * staging memory, streams and events in those contexts go first (the
 * stand-in's STANDIN_LEAK_REPORT line at each reset is compared), the
 * buffer's bytes put in place before. Named only: the devices' memory
 * is gone afterwards. */
static void case_reset(void)
{
    size_t n = N;
    unsigned char *h = malloc(n);
    d2h(h, n, 560);
    memcpy(want, pat, n);
    h2d_check(h, n, "before the reset, served");
    d2h_only(h, n, 561); /* the next round's snapshot, held */
    memcpy(want, pat, n);
    PL_OK(cuDevicePrimaryCtxReset_v2(0));
    PL_OK(cuDevicePrimaryCtxReset_v2(1));
    bt_check_host(h, want, n, "after the reset");
    printf("after the reset: host=%016llx\n", (unsigned long long)bt_fnv(h, n));
    free(h);
}

static void case_free(void)
{
    size_t n = N;
    for (int i = 0; i < 3; i++) {
        unsigned char *h = malloc(n);
        d2h(h, n, 510 + i);
        free(h);
        /* Likely the same block: its old snapshot must not come back. */
        unsigned char *g = malloc(n);
        bt_pattern(want, n, 520 + i);
        memcpy(g, want, n);
        char what[48];
        snprintf(what, sizeof what, "free and reuse %d", i);
        h2d_check(g, n, what);
        free(g);
    }
    /* calloc: zeroes, whatever was bounced there before. */
    unsigned char *h = malloc(n);
    d2h(h, n, 530);
    free(h);
    unsigned char *z = calloc(1, n);
    memset(want, 0, n);
    h2d_check(z, n, "calloc after free");
    free(z);
}

static void case_dontneed(void)
{
    size_t n = (size_t)4 << 20;
    unsigned char *h = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    d2h(h, n, 540);
    memcpy(want, pat, n);
    madvise(h + 16 * PG, 64 * PG, MADV_DONTNEED);
    memset(want + 16 * PG, 0, 64 * PG);
    h2d_check(h, n, "MADV_DONTNEED part");
    d2h(h, n, 541);
    madvise(h, n, MADV_DONTNEED);
    memset(want, 0, n);
    h2d_check(h, n, "MADV_DONTNEED all");
    munmap(h, n);
    /* munmap then a new mapping in the same place: fresh zeros. */
    h = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    d2h(h, n, 542);
    munmap(h, n);
    unsigned char *g = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    h2d_check(g, n, "munmap and map again");
    munmap(g, n);
}

/* Memory that is never lazy: bytes right, and through the host. */
static void never_lazy(unsigned char *h, size_t n, const char *what)
{
    bt_prime(h, src0, dst1, n);
    struct standin_stats s0;
    standin_get_stats(&s0);
    d2h_only(h, n, 550);
    memcpy(want, pat, n);
    struct bt_paths p;
    bt_paths_since(&s0, &p);
    PL_EXPECT(p.d2h_bytes == n, "%s: %llu bytes to the host, expected all %zu", what,
              (unsigned long long)p.d2h_bytes, n);
    h2d_check(h, n, what);
}

static long locked_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmLck: %ld", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

static void case_unusual(void)
{
    size_t n = N;
    unsigned char *h = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    never_lazy(h, n, "shared mapping");
    munmap(h, n);
    h = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    /* AddressSanitizer turns mlock into a no-op: check the kernel's word. */
    if (mlock(h, n) == 0 && locked_kib() > 0) {
        never_lazy(h, n, "mlocked buffer");
        munlock(h, n);
    } else {
        printf("mlocked buffer: skipped (mlock refused)\n");
    }
    munmap(h, n);
}

/* 16 staging rounds over h, every round's bytes checked. */
static void refused_loop(unsigned char *h, size_t n, const char *kind, unsigned seed)
{
    bt_prime(h, src0, dst1, n);
    for (int r = 0; r < 16; r++) {
        char what[64];
        snprintf(what, sizeof what, "refused %s, round %d", kind, r + 1);
        d2h_only(h, n, seed + (unsigned)r);
        memcpy(want, pat, n);
        h2d_check(h, n, what);
    }
}

/* Staging loops over memory no snapshot can be set up in: pageable shared
 * memory (never lazy), and registered memory mapped from a file (its eager
 * snapshot needs write-protection, which the kernel gives only anonymous,
 * shared-memory and hugetlbfs mappings; the file lies in the working
 * directory, skipped where that is a tmpfs). Bytes right in every round;
 * the exit summary's fallbacks show whether the failed set-ups back off
 * (CMakeLists: bounce.refused.summary). */
static void case_refused(void)
{
    size_t n = N;
    unsigned char *h = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    PL_EXPECT(h != MAP_FAILED, "mmap");
    refused_loop(h, n, "pageable shared", 600);
    munmap(h, n);
    char path[] = "bounce-refused-XXXXXX";
    int fd = mkstemp(path);
    struct statfs fs;
    if (fd < 0 || fstatfs(fd, &fs) != 0 || fs.f_type == TMPFS_MAGIC ||
        ftruncate(fd, (off_t)n) != 0) {
        printf("refused registered file: skipped (no file off tmpfs)\n");
    } else {
        h = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        PL_EXPECT(h != MAP_FAILED, "mmap of %s", path);
        PL_OK(cuMemHostRegister_v2(h, n, 0));
        refused_loop(h, n, "registered file", 620);
        PL_OK(cuMemHostUnregister(h));
        munmap(h, n);
    }
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
}

/* Pinned and registered memory: eager only where asked for (P2PSHIM_BOUNCE
 * lazy or eager); the bytes are right either way, a CPU write included. */
static void case_pinned(void)
{
    size_t n = N;
    void *pinned = NULL;
    PL_OK(cuMemHostAlloc(&pinned, n, 0));
    unsigned char *h = pinned;
    d2h(h, n, 560);
    memcpy(want, pat, n);
    h2d_check(h, n, "pinned untouched");
    d2h(h, n, 561);
    memcpy(want, pat, n);
    h[PG * 7 + 3] = 0x42;
    want[PG * 7 + 3] = 0x42;
    h2d_check(h, n, "pinned written");
    /* Again over the same pages (the snapshot handed over: the page
     * written above must be protected again), then the same page written. */
    for (unsigned round = 0; round < 2; round++) {
        d2h(h, n, 564 + round);
        memcpy(want, pat, n);
        if (round == 1) {
            h[PG * 7 + 5] = 0x43;
            want[PG * 7 + 5] = 0x43;
        }
        h2d_check(h, n, round ? "pinned rewritten, written again" : "pinned rewritten");
    }
    PL_OK(cuMemFreeHost(pinned));

    unsigned char *r = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    /* Bounced lazily first, then registered: the driver pins every page. */
    d2h(r, n, 562);
    memcpy(want, pat, n);
    PL_OK(cuMemHostRegister_v2(r, n, 0));
    h2d_check(r, n, "registered after a bounce");
    d2h(r, n, 563);
    memcpy(want, pat, n);
    h2d_check(r, n, "registered");
    PL_OK(cuMemHostUnregister(r));
    munmap(r, n);
}

/* Eight threads, each its own buffer and per-thread default stream. */
struct worker {
    int id;
    CUdeviceptr s, d;
    int bad;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    size_t n = (size_t)256 << 10;
    unsigned char *h = malloc(n), *p = malloc(n);
    PL_OK(cuCtxSetCurrent(bt_env.ctx[w->id % 2]));
    for (int i = 0; i < 8; i++) {
        bt_pattern(p, n, 600 + 16 * (unsigned)w->id + (unsigned)i);
        PL_OK(cuCtxSetCurrent(bt_env.ctx[w->id % 2]));
        PL_OK(cuMemcpyHtoD_v2_ptds(w->s, p, n)); /* the source, through the shim too */
        PL_OK(cuMemcpyDtoH_v2_ptds(h, w->s, n));
        if (i % 3 == 1)
            h[i * 1000] ^= 0xFF, p[i * 1000] ^= 0xFF;
        PL_OK(cuMemcpyHtoDAsync_v2_ptsz(w->d, h, n, NULL));
        PL_OK(cuStreamSynchronize_ptsz(NULL));
        standin_flush_all();
        if (memcmp((void *)(uintptr_t)w->d, p, n) != 0)
            w->bad++;
    }
    free(h);
    free(p);
    return NULL;
}

static void case_threads(void)
{
    struct worker w[8];
    pthread_t t[8];
    for (int i = 0; i < 8; i++) {
        w[i].id = i;
        w[i].s = pl_alloc(bt_env.ctx[i % 2], (size_t)256 << 10);
        w[i].d = pl_alloc(bt_env.ctx[1 - i % 2], (size_t)256 << 10);
        w[i].bad = 0;
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    int bad = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        bad += w[i].bad;
        pl_free(bt_env.ctx[i % 2], w[i].s);
        pl_free(bt_env.ctx[1 - i % 2], w[i].d);
    }
    PL_EXPECT(bad == 0, "eight threads: %d rounds with wrong bytes", bad);
    printf("eight threads: wrong rounds %d\n", bad);
}

/* More bounced buffers than the budget holds (run with a small one):
 * evicted snapshots are filled into their buffers first. */
static void case_budget(void)
{
    enum { K = 6 };
    size_t n = (size_t)512 << 10;
    unsigned char *h[K];
    for (int i = 0; i < K; i++) {
        h[i] = malloc(n);
        d2h(h[i], n, 700 + (unsigned)i);
    }
    for (int i = 0; i < K; i++) {
        bt_pattern(want, n, 700 + (unsigned)i);
        char what[32];
        snprintf(what, sizeof what, "budget buffer %d", i);
        h2d_check(h[i], n, what);
        free(h[i]);
    }
}

/* A device buffer the program freed, then a bounced D2H (whose snapshot
 * the shim keeps in device memory of its own, perhaps at the freed
 * address: the driver reuses it), then copies from the freed pointer: the
 * driver refuses them without the shim, and must with it; the host keeps
 * the round's bytes. */
static void case_stale_source(void)
{
    size_t n = N;
    unsigned char *h = malloc(n), *other = malloc(n);
    PL_EXPECT(h != NULL && other != NULL, "malloc");
    memset(other, 0x5a, n);
    for (unsigned r = 0; r < 3; r++) {
        CUdeviceptr stale = pl_alloc(bt_env.ctx[0], n);
        pl_free(bt_env.ctx[0], stale);
        d2h(h, n, 720 + r);
        memcpy(want, pat, n);
        CUresult d2h_rc = cuMemcpyDtoH_v2(other, stale, n);
        CUresult d2d_rc = cuMemcpyDtoD_v2(dst1, stale, n);
        CUresult set_rc = cuMemsetD8_v2(stale, 0, n);
        printf("stale source, round %u: D2H %d, device copy %d, memset %d\n", r + 1,
               (int)d2h_rc, (int)d2d_rc, (int)set_rc);
        PL_EXPECT(d2h_rc == CUDA_ERROR_INVALID_VALUE && d2d_rc == CUDA_ERROR_INVALID_VALUE &&
                      set_rc == CUDA_ERROR_INVALID_VALUE,
                  "stale source, round %u: D2H %d, device copy %d, memset %d (the driver "
                  "refuses each)", r + 1, (int)d2h_rc, (int)d2d_rc, (int)set_rc);
        h2d_check(h, n, "stale source, the bounced round");
    }
    printf("stale source, the other buffer: %016llx\n", (unsigned long long)bt_fnv(other, n));
    free(h);
    free(other);
}

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    {"never", case_never},
    {"reset", case_reset},
    {"mremap", case_mremap},
    {"minimums", case_minimums},
    {"oom", case_oom},
    {"realloc", case_realloc}, {"free", case_free},       {"dontneed", case_dontneed},
    {"unusual", case_unusual}, {"pinned", case_pinned},   {"threads", case_threads},
    {"budget", case_budget},   {"refused", case_refused},
    {"stale_source", case_stale_source},
};

int main(int argc, char **argv)
{
    bt_init(argc, argv);
    size_t big = (size_t)32 << 20;
    src0 = pl_alloc(bt_env.ctx[0], big);
    dst1 = pl_alloc(bt_env.ctx[1], big);
    pat = malloc(big);
    want = malloc(big);
    pl_use(bt_env.ctx[0]);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        /* "minimums" holds only under the default minimums, "never" only
         * first in a process: when named. */
        bool run = argc <= 2 && strcmp(cases[c].name, "minimums") != 0 &&
                   strcmp(cases[c].name, "never") != 0 && strcmp(cases[c].name, "reset") != 0;
        for (int a = 2; a < argc; a++)
            run = run || strcmp(argv[a], cases[c].name) == 0;
        if (run)
            cases[c].fn();
    }
    return pl_finish("bounce_life");
}
