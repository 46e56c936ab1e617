/* Heap probe: the program's malloc heap must be exactly what it is without
 * the shim (the shim's own memory never comes from it). Run by compare.sh
 * as `fp_heap noshim|shim MODE`; the two transcripts must be
 * byte-identical. Modes:
 *   mixed       a fixed, pseudo-random interleaving of malloc/free of
 *               16 B .. 4 MiB with device allocations and frees, pinned
 *               host allocations, registrations, copies in and out and
 *               across devices, and a context created and destroyed:
 *               every malloc result (heap chunks as offsets from the
 *               heap's start, mmapped ones as "mmap"), sbrk growth and
 *               mallinfo2 arena/uordblks after each step.
 *   rounds N    the harm benchmark's fresh_read row: malloc 1 MiB, D2H
 *               into it, read it, free it; a small device allocation
 *               made and freed between rounds. Prints each round's
 *               address (offset from the first) and, with FP_HEAP_FAULTS=1,
 *               its minor faults (not compared: the shim's own pages
 *               fault too, outside the heap).
 * Nothing is printed before the end (stdio's buffer is heap memory): lines
 * are kept in a static buffer and written with write(2). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "pl_common.h"

static char out[1 << 20];
static size_t out_len;
static uintptr_t heap_start;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + out_len, sizeof out - out_len, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof out - out_len)
        out_len += (size_t)n;
}

static void flush_out(void)
{
    for (size_t done = 0; done < out_len;) {
        ssize_t n = write(1, out + done, out_len - done);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
}

/* Where malloc put p: its offset in the brk heap, or "mmap". */
static void say_where(const char *label, const void *p)
{
    uintptr_t a = (uintptr_t)p, top = (uintptr_t)sbrk(0);
    if (p == NULL)
        say("%s NULL\n", label);
    else if (a >= heap_start && a < top)
        say("%s heap+%#lx\n", label, (unsigned long)(a - heap_start));
    else
        say("%s mmap\n", label);
}

static void say_heap(const char *label)
{
    struct mallinfo2 mi = mallinfo2();
    say("%s sbrk+%#lx arena=%zu uordblks=%zu hblks=%zu\n", label,
        (unsigned long)((uintptr_t)sbrk(0) - heap_start), mi.arena, mi.uordblks, mi.hblks);
}

/* A small deterministic generator: both runs take the same steps. */
static uint64_t lcg_state = 12345;
static unsigned next_rand(unsigned n)
{
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(lcg_state >> 33) % n;
}

#define HOST_SLOTS 12
#define DEV_SLOTS 6

struct mixed {
    struct pl_env env;
    char *host[HOST_SLOTS];
    size_t host_size[HOST_SLOTS];
    int registered[HOST_SLOTS];
    CUdeviceptr dev[DEV_SLOTS];
    int dev_ctx[DEV_SLOTS];
    void *pinned;
    char *scratch; /* H2D sources only: never a D2H target (no bounce evidence) */
};

static const size_t sizes[] = {16,         24,        100,        1000,     4096,
                               64 << 10,   (128 << 10) + 1, 1 << 20, (2 << 20) + 17, 4 << 20};

static void step_host(struct mixed *m, int i, char *label)
{
    int s = (int)next_rand(HOST_SLOTS);
    if (m->host[s] != NULL) {
        if (m->registered[s])
            PL_OK(cuMemHostUnregister(m->host[s]));
        m->registered[s] = 0;
        free(m->host[s]);
        m->host[s] = NULL;
        say("%d free slot %d\n", i, s);
        return;
    }
    size_t n = sizes[next_rand(sizeof sizes / sizeof sizes[0])];
    m->host[s] = malloc(n);
    m->host_size[s] = n;
    if (m->host[s] != NULL)
        memset(m->host[s], (int)s, n);
    snprintf(label, 64, "%d malloc %zu slot %d", i, n, s);
    say_where(label, m->host[s]);
}

static void step_device(struct mixed *m, int i)
{
    int s = (int)next_rand(DEV_SLOTS), d = s % m->env.ndev;
    if (m->dev[s] != 0) {
        pl_free(m->env.ctx[d], m->dev[s]);
        m->dev[s] = 0;
        say("%d cuMemFree slot %d\n", i, s);
    } else {
        m->dev[s] = pl_alloc(m->env.ctx[d], (size_t)4 << 20);
        say("%d cuMemAlloc slot %d\n", i, s);
    }
}

/* A copy between a live host slot and a live device slot, or across
 * devices; a registration; pinned memory; a context made and destroyed. */
static void step_other(struct mixed *m, int i)
{
    int h = (int)next_rand(HOST_SLOTS), s = (int)next_rand(DEV_SLOTS);
    unsigned what = next_rand(6);
    size_t n = m->host[h] ? m->host_size[h] : 0;
    if (n > ((size_t)4 << 20))
        n = (size_t)4 << 20;
    if (what == 0 && m->host[h] && m->dev[s]) {
        PL_OK(cuMemcpyDtoH_v2(m->host[h], m->dev[s], n));
        say("%d d2h %zu\n", i, n);
    } else if (what == 1 && m->dev[s]) {
        PL_OK(cuMemcpyHtoD_v2(m->dev[s], m->scratch, (size_t)1 << 20));
        say("%d h2d\n", i);
    } else if (what == 2 && m->dev[s] && m->dev[(s + 1) % DEV_SLOTS]) {
        PL_OK(cuMemcpy(m->dev[(s + 1) % DEV_SLOTS], m->dev[s], (size_t)1 << 20));
        say("%d d2d\n", i);
    } else if (what == 3 && m->host[h] && !m->registered[h] && n >= 4096) {
        PL_OK(cuMemHostRegister_v2(m->host[h], n, 0));
        m->registered[h] = 1;
        say("%d register slot %d\n", i, h);
    } else if (what == 4) {
        if (m->pinned != NULL) {
            PL_OK(cuMemFreeHost(m->pinned));
            m->pinned = NULL;
        } else {
            PL_OK(cuMemHostAlloc(&m->pinned, (size_t)1 << 20, 0));
        }
        say("%d pinned %s\n", i, m->pinned ? "alloc" : "free");
    } else if (what == 5) {
        CUcontext c = pl_fresh_ctx(s % m->env.ndev);
        CUdeviceptr p = pl_alloc(c, 4096);
        pl_free(c, p);
        PL_OK(cuCtxDestroy_v2(c));
        say("%d context\n", i);
    }
}

static int mixed_mode(void)
{
    static struct mixed m;
    pl_init(&m.env);
    /* The program enables peer access itself (as PyTorch does): the
     * shim records who enabled each direction (its own nodes) and has
     * nothing to enable, so the driver allocates nothing more for it. */
    for (int d = 0; d < m.env.ndev; d++)
        for (int e = 0; e < m.env.ndev; e++)
            if (d != e) {
                pl_use(m.env.ctx[d]);
                PL_OK(cuCtxEnablePeerAccess(m.env.ctx[e], 0));
            }
    pl_use(m.env.ctx[0]);
    m.scratch = malloc((size_t)1 << 20);
    memset(m.scratch, 7, (size_t)1 << 20);
    say_where("scratch", m.scratch);
    say_heap("start");
    char label[64];
    for (int i = 0; i < 400; i++) {
        unsigned k = next_rand(4);
        if (k <= 1)
            step_host(&m, i, label);
        else if (k == 2)
            step_device(&m, i);
        else
            step_other(&m, i);
        say_heap("  heap");
    }
    for (int s = 0; s < DEV_SLOTS; s++)
        if (m.dev[s])
            pl_free(m.env.ctx[s % m.env.ndev], m.dev[s]);
    say_heap("end");
    return 0;
}

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static int rounds_mode(int rounds)
{
    struct pl_env env;
    pl_init(&env);
    const char *bytes_env = getenv("FP_HEAP_BYTES");
    const size_t n = bytes_env ? (size_t)strtoull(bytes_env, NULL, 0) : (size_t)1 << 20;
    CUdeviceptr src = pl_alloc(env.ctx[0], n);
    pl_fill(env.ctx[0], src, n, 3);
    int show_faults = getenv("FP_HEAP_FAULTS") != NULL;
    uintptr_t first = 0;
    long total = 0;
    for (int r = 0; r < rounds; r++) {
        /* harmbench's refill and device sum: a small device buffer, a
         * memset, an 8-byte D2H into the stack, a free. */
        uint64_t got = 0;
        CUdeviceptr small = pl_alloc(env.ctx[0], sizeof got);
        PL_OK(cuMemsetD8Async(small, 1, sizeof got, NULL));
        PL_OK(cuMemcpyDtoHAsync_v2(&got, small, sizeof got, NULL));
        PL_OK(cuStreamSynchronize(NULL));
        pl_free(env.ctx[0], small);
        long f0 = minor_faults();
        char *p = malloc(n);
        PL_OK(cuMemcpyDtoH_v2(p, src, n));
        unsigned sum = 0;
        for (size_t i = 0; i < n; i += 64)
            sum += (unsigned char)p[i];
        uintptr_t at = (uintptr_t)p;
        if (r == 0)
            first = at;
        free(p);
        long f = minor_faults() - f0;
        total += f;
        say("round %d offset %+ld sum %u", r, (long)(at - first), sum);
        if (show_faults)
            say(" faults %ld", f);
        say("\n");
    }
    say_heap("end");
    if (show_faults)
        say("faults total %ld\n", total);
    return 0;
}

int main(int argc, char **argv)
{
    heap_start = (uintptr_t)sbrk(0);
    say_heap("main");
    /* As cudart does before its first driver call: the process's first
     * dlopen makes glibc allocate its own bookkeeping (once), which the
     * shim's later dlopen of the loaded driver would otherwise be first
     * to trigger. */
    void *driver = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
    say("driver %s\n", driver != NULL ? "loaded" : "missing");
    pl_want_shim(argc, argv); /* exits unless the shim is (not) loaded as said */
    int rc = 2;
    if (argc > 2 && strcmp(argv[2], "mixed") == 0)
        rc = mixed_mode();
    else if (argc > 3 && strcmp(argv[2], "rounds") == 0)
        rc = rounds_mode(atoi(argv[3]));
    else
        say("usage: fp_heap shim|noshim mixed | rounds N\n");
    say("failures %d\n", (int)pl_failures);
    flush_out();
    return rc != 0 ? rc : pl_failures != 0;
}
