/* Host-bounced copies, lifetimes and limits: realloc (mremap moves the
 * buffer), free and reuse of the block, MADV_DONTNEED, memory that must
 * never be lazy (a shared mapping, an mlocked buffer), pinned and
 * registered memory (eager), eight threads bouncing at once, and the
 * device budget.
 *
 * "bounce_life shim|noshim [CASE...]": the cases named, or all of them.
 * Transcripts as in bounce_paths. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bt_common.h"

#define PG 4096
#define N (((size_t)1 << 20) + 321)

static CUdeviceptr src0, dst1;
static unsigned char *pat, *want;

static void line(const char *what, const unsigned char *h, size_t n, CUdeviceptr d)
{
    standin_flush_all();
    printf("%s: host=%016llx device=%016llx\n", what, (unsigned long long)bt_fnv(h, n),
           (unsigned long long)bt_fnv((const void *)(uintptr_t)d, n));
}

/* D2H of n pattern bytes of seed from src0 into h (ctx 0 current),
 * after a staging round over the same buffer: the evidence the shim needs
 * to bounce it (without it, the D2H goes the normal way). */
static void d2h_only(unsigned char *h, size_t n, unsigned seed)
{
    bt_pattern(pat, n, seed);
    bt_set_dev(src0, pat, n);
    PL_OK(cuMemcpyDtoH_v2(h, src0, n));
}

static void d2h(unsigned char *h, size_t n, unsigned seed)
{
    bt_prime(h, src0, dst1, n);
    d2h_only(h, n, seed);
}

/* H2D of h to dst1; the device must hold want afterwards, and so the host. */
static void h2d_check(const unsigned char *h, size_t n, const char *what)
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

/* The program's allocation needs the memory the shim's snapshots hold:
 * the shim gives them back (filling their buffers first) and the
 * allocation succeeds, as without the shim. */
/* Allocations of almost all the memory free on device 0 before the
 * bounces, each way a program can take device memory: linear, a 2D array,
 * a 3D array, a mipmapped array (two levels: 1 + 1/4 of the first level's
 * bytes); and two made while device 1 is current: cuMemCreate for device 0
 * (whole 2 MiB granules) and a stream-ordered one on a stream of device 0. */
enum oom_way {
    OOM_LINEAR, OOM_ARRAY, OOM_ARRAY3D, OOM_MIPMAPPED, OOM_VMM_OTHER, OOM_ASYNC_OTHER, OOM_WAYS
};
static const char *const oom_way_name[OOM_WAYS] = {"linear",    "array",     "array3d",
                                                   "mipmapped", "vmm-other", "async-other"};

static CUresult oom_other_device(enum oom_way way, size_t bytes)
{
    CUresult r;
    CUstream s0 = NULL;
    PL_OK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING)); /* on device 0 */
    pl_use(bt_env.ctx[1]);
    if (way == OOM_VMM_OTHER) {
        CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                    .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
        CUmemGenericAllocationHandle h;
        if ((r = cuMemCreate(&h, bytes & ~(((size_t)2 << 20) - 1), &prop, 0)) == CUDA_SUCCESS)
            PL_OK(cuMemRelease(h));
    } else {
        CUdeviceptr p = 0;
        if ((r = cuMemAllocAsync(&p, bytes, s0)) == CUDA_SUCCESS) {
            PL_OK(cuMemFreeAsync(p, s0));
            PL_OK(cuStreamSynchronize(s0));
        }
    }
    CUcontext cur = NULL;
    PL_OK(cuCtxGetCurrent(&cur));
    PL_EXPECT(cur == bt_env.ctx[1], "%s: the current context changed", oom_way_name[way]);
    pl_use(bt_env.ctx[0]);
    PL_OK(cuStreamDestroy_v2(s0));
    return r;
}

static CUresult oom_alloc_and_free(enum oom_way way, size_t bytes)
{
    CUresult r;
    CUDA_ARRAY3D_DESCRIPTOR d3 = {.Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    if (way == OOM_LINEAR) {
        CUdeviceptr big = 0;
        if ((r = cuMemAlloc_v2(&big, bytes)) == CUDA_SUCCESS)
            PL_OK(cuMemFree_v2(big));
    } else if (way == OOM_ARRAY) {
        CUDA_ARRAY_DESCRIPTOR d = {.Width = 65536, .Height = bytes / 65536,
                                   .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
        CUarray a = NULL;
        if ((r = cuArrayCreate_v2(&a, &d)) == CUDA_SUCCESS)
            PL_OK(cuArrayDestroy(a));
    } else if (way == OOM_ARRAY3D) {
        d3.Width = 4096;
        d3.Height = 16;
        d3.Depth = bytes / 65536;
        CUarray a = NULL;
        if ((r = cuArray3DCreate_v2(&a, &d3)) == CUDA_SUCCESS)
            PL_OK(cuArrayDestroy(a));
    } else if (way == OOM_MIPMAPPED) {
        d3.Width = 65536;
        d3.Height = bytes / (65536 + 16384);
        CUmipmappedArray m = NULL;
        if ((r = cuMipmappedArrayCreate(&m, &d3, 2)) == CUDA_SUCCESS)
            PL_OK(cuMipmappedArrayDestroy(m));
    } else {
        r = oom_other_device(way, bytes);
    }
    return r;
}

static void case_oom(void)
{
    enum { K = 4 };
    size_t n = (size_t)1 << 20, free_b = 0, total = 0;
    unsigned char *h[K];
    for (int way = 0; way < OOM_WAYS; way++) {
        /* What the program may allocate: all that is free before it bounces. */
        standin_flush_all();
        PL_OK(cuMemGetInfo_v2(&free_b, &total));
        for (int i = 0; i < K; i++) {
            h[i] = malloc(n);
            d2h(h[i], n, 800 + (unsigned)(way * K + i));
        }
        CUresult r = oom_alloc_and_free((enum oom_way)way, free_b - 65536);
        PL_EXPECT(r == CUDA_SUCCESS, "the program's %s allocation failed (%d)",
                  oom_way_name[way], (int)r);
        for (int i = 0; i < K; i++) {
            bt_pattern(want, n, 800 + (unsigned)(way * K + i));
            char what[48];
            snprintf(what, sizeof what, "after %s oom %d", oom_way_name[way], i);
            h2d_check(h[i], n, what);
            free(h[i]);
        }
    }
}

/* The default minimums (P2PSHIM_BOUNCE_MIN=auto, bounce.min_auto only): a
 * pageable pair below 1 MiB and a pinned one below 16 MiB go the normal
 * way, as a snapshot would cost more than it saves; from there they are
 * bounced. */
static void case_minimums(void)
{
    static const struct {
        size_t n;
        bool pinned, bounced;
        const char *what;
    } c[] = {
        {(size_t)512 << 10, false, false, "pageable 512 KiB"},
        {(size_t)1 << 20, false, true, "pageable 1 MiB"},
        {(size_t)8 << 20, true, false, "pinned 8 MiB"},
        {(size_t)16 << 20, true, true, "pinned 16 MiB"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        size_t n = c[i].n;
        void *h = NULL;
        if (c[i].pinned)
            PL_OK(cuMemHostAlloc(&h, n, 0));
        else
            h = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        bt_prime(h, src0, dst1, n);
        struct standin_stats s0;
        standin_get_stats(&s0);
        d2h_only(h, n, 900 + (unsigned)i);
        memcpy(want, pat, n);
        pl_use(bt_env.ctx[1]);
        PL_OK(cuMemcpyHtoD_v2(dst1, h, n));
        pl_use(bt_env.ctx[0]);
        struct bt_paths p;
        bt_paths_since(&s0, &p);
        if (bt_shim && !getenv("BT_NO_BOUNCE")) {
            /* Bounced: the H2D from the snapshot (and a pageable D2H left
             * on the device); not: both through the host. */
            bool ok = c[i].bounced ? p.h2d_bytes == 0 && p.d2h_bytes == (c[i].pinned ? n : 0)
                                   : p.h2d_bytes == n && p.d2h_bytes == n;
            PL_EXPECT(ok, "%s: D2H %llu and H2D %llu bytes through the host; expected %s",
                      c[i].what, (unsigned long long)p.d2h_bytes,
                      (unsigned long long)p.h2d_bytes, c[i].bounced ? "bounced" : "not");
        }
        h2d_check(h, n, c[i].what);
        if (c[i].pinned)
            PL_OK(cuMemFreeHost(h));
        else
            munmap(h, n);
    }
}

/* The program moves part of a lazy buffer with mremap: the moved bytes
 * must arrive (the kernel's REMAP event cannot carry part of a snapshot
 * along; the shim fills the pages before the call), and the rest of the
 * buffer still bounces. */
static void case_mremap(void)
{
    size_t n = (size_t)4 << 20, part = (size_t)1 << 20;
    unsigned char *r = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *spot = mmap(NULL, part, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    d2h(r, n, 950);
    memcpy(want, pat, n);
    unsigned char *moved =
        mremap(r + part, part, part, MREMAP_MAYMOVE | MREMAP_FIXED, spot);
    PL_EXPECT(moved == spot, "mremap: %p", (void *)moved);
    if (moved == spot) {
        PL_EXPECT(memcmp(moved, want + part, part) == 0,
                  "the moved part of the buffer lost its bytes");
        line("moved by mremap", moved, part, dst1);
        munmap(moved, part);
    }
    h2d_check(r, part, "before the moved part");
    munmap(r, part);
    munmap(r + 2 * part, n - 2 * part);
}

/* Entries of /proc/self/<dir> (whose link names contain `link`, when
 * given). */
static int proc_count(const char *dir, const char *link)
{
    char path[64], target[128];
    snprintf(path, sizeof path, "/proc/self/%s", dir);
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        if (link != NULL) {
            char p2[sizeof path + sizeof e->d_name + 2];
            snprintf(p2, sizeof p2, "%s/%s", path, e->d_name);
            ssize_t k = readlink(p2, target, sizeof target - 1);
            target[k > 0 ? k : 0] = '\0';
            if (strstr(target, link) == NULL)
                continue;
        }
        n++;
    }
    if (d != NULL)
        closedir(d);
    return n;
}

/* A process that never bounces (bounce.never, alone: nothing may have
 * bounced before): results copied down and used on the host, pageable and
 * pinned, several rounds. The shim takes no snapshot, and holds nothing
 * for bounces: no userfaultfd, no thread of its own, no device memory. */
static void case_never(void)
{
    size_t n = (size_t)1 << 20, free0, free1, total;
    PL_OK(cuMemGetInfo_v2(&free0, &total));
    int threads0 = proc_count("task", NULL);
    unsigned char *h = malloc(n);
    void *hp = NULL;
    PL_OK(cuMemHostAlloc(&hp, n, 0));
    for (int i = 0; i < 4; i++) {
        struct standin_stats s0;
        standin_get_stats(&s0);
        d2h_only(h, n, 990 + (unsigned)i);
        bt_check_host(h, pat, n, "never: pageable, read");
        d2h_only(hp, n, 995 + (unsigned)i);
        bt_check_host(hp, pat, n, "never: pinned, read");
        memset(hp, i, n); /* and written */
        struct bt_paths p;
        bt_paths_since(&s0, &p);
        PL_EXPECT(p.d2h_bytes == 2 * n && p.dev_bytes == 0,
                  "never, round %d: %llu bytes to the host (expected %zu), %llu on the device",
                  i, (unsigned long long)p.d2h_bytes, 2 * n, (unsigned long long)p.dev_bytes);
    }
    PL_OK(cuMemGetInfo_v2(&free1, &total));
    int uffds = proc_count("fd", "userfaultfd");
    int threads = proc_count("task", NULL) - threads0;
    PL_EXPECT(uffds == 0 && threads == 0 && free1 == free0,
              "never: %d userfaultfd(s), %d new thread(s), %zu bytes of device memory held",
              uffds, threads, free0 - free1);
    printf("never: userfaultfd=%d new threads=%d device bytes held=%zu\n", uffds, threads,
           free0 - free1);
    PL_OK(cuMemFreeHost(hp));
    free(h);
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
    {"budget", case_budget},
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
