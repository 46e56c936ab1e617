/* harmbench: what the shim must not slow down, and the loops where it
 * should win. One process runs one row at a list of sizes and prints one
 * JSON line per size (and one per process: what it holds at its end);
 * harm_run.py runs it without and with the shim, alternating processes.
 *
 *   harmbench --row ROW [--sizes 1M,4M,16M,64M,256M] [--rounds N]
 *             [--pair A,B] [--memory pageable|pinned|fresh] [--touch none|read]
 *             [--label TEXT]
 *
 * Rows that never copy a host buffer back to a GPU (the shim must not slow
 * them down; their bytes are checked on the host, never by a copy back):
 *   fresh_pinned  per repetition: cudaMallocHost a fresh buffer, one D2H
 *                 into it timed with events (as public samples time it),
 *                 cudaFreeHost. ms: median, first_ms: the first repetition.
 *   pinned_write  one cudaMallocHost buffer; each round a D2H, then the CPU
 *                 writes every byte. ms: median round (copy + write).
 *   malloc_read   one malloc buffer; each round a D2H, then the CPU reads
 *                 every byte. ms: median round, first_ms: round 1.
 *   fresh_read    per repetition: malloc, D2H, the CPU reads every byte,
 *                 free (PyTorch's x.cpu() followed by a use of it).
 *   first_page    one malloc buffer; each round a D2H, then the CPU reads
 *                 its first page only.
 *   small         a 4-byte D2H into a host variable, a 4 KiB H2D from a
 *                 malloc buffer, an empty kernel launch: us per call
 *                 (sizes ignored).
 * The bounce loop (where the shim should win): each round a D2H from a
 * buffer on device A into a host buffer (--memory: pageable reused,
 * pinned reused, or fresh: malloc before and free after, PyTorch's
 * x.cpu().cuda() shape), the CPU reading every byte in between with
 * --touch read, then an H2D into a buffer on device B (B may be A: a
 * different buffer). first_ms: round 1; steady_ms: median of rounds 2..N.
 *
 * miss          the misprediction matrix: harm_matrix.cu (its own options).
 *
 * Before each round the source gets a new pattern (a kernel, not timed), so
 * stale bytes are caught. Exit: 0; 1 on a CUDA error or wrong bytes (one
 * line on stderr saying which); 2 bad arguments; 77 device B missing. */
#include "harm_matrix.cuh"
#include "harm_util.cuh"
#include "pattern.cuh"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 16
#define MAX_ROUNDS 101
#define PAGE 4096

typedef struct harm_opts {
    const char *row, *label, *memory, *touch;
    size_t sizes[MAX_SIZES];
    int nsizes, rounds, a, b;
} harm_opts;

static __global__ void empty_kernel(void) {}

static int devs_used(const harm_opts *o, int *devs)
{
    devs[0] = o->a;
    devs[1] = o->b;
    return o->a == o->b ? 1 : 2;
}

/* A new pattern in src[0..n) on device a for round r; returns its seed. */
static uint32_t refill(void *src, size_t n, int round)
{
    uint32_t seed = 0x5eed0000u + (uint32_t)round * 7919u + (uint32_t)(n >> 20);
    CHECK_CUDA(p2pk_fill(src, n, seed, cudaStreamLegacy));
    CHECK_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
    return seed;
}

static void emit_size(const harm_opts *o, const char *row, size_t n, const char *metrics,
                      int ok)
{
    char fields[400 + MAX_ROUNDS * 12];
    snprintf(fields, sizeof fields, "\"bytes\":%zu,\"rounds\":%d,%s", n, o->rounds, metrics);
    harm_emit(row, o->label, fields, ok);
}

/* fresh_pinned: the D2H alone between two events, into a buffer allocated
 * just before (not timed). */
static int row_fresh_pinned(const harm_opts *o, void *src, size_t n)
{
    double t[MAX_ROUNDS];
    int ok = 1;
    cudaEvent_t e0, e1;
    CHECK_CUDA(cudaEventCreate(&e0));
    CHECK_CUDA(cudaEventCreate(&e1));
    for (int r = 0; r < o->rounds; r++) {
        uint32_t seed = refill(src, n, r);
        uint64_t want = harm_device_sum(src, n);
        unsigned char *h;
        float ms;
        CHECK_CUDA(cudaMallocHost((void **)&h, n));
        CHECK_CUDA(cudaEventRecord(e0, 0));
        CHECK_CUDA(cudaMemcpy(h, src, n, cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaEventRecord(e1, 0));
        CHECK_CUDA(cudaEventSynchronize(e1));
        CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
        t[r] = ms;
        ok &= harm_check_host(h, n, seed, harm_host_sum(h, n), want, "fresh_pinned");
        CHECK_CUDA(cudaFreeHost(h));
    }
    CHECK_CUDA(cudaEventDestroy(e0));
    CHECK_CUDA(cudaEventDestroy(e1));
    char m[160];
    double first = t[0];
    snprintf(m, sizeof m, "\"ms\":%.4f,\"first_ms\":%.4f", harm_median(t, o->rounds), first);
    emit_size(o, "fresh_pinned", n, m, ok);
    return ok;
}

/* pinned_write: a reused pinned buffer; the CPU writes it after each D2H.
 * The bytes are checked after one more D2H that follows the last write. */
static int row_pinned_write(const harm_opts *o, void *src, size_t n)
{
    double t[MAX_ROUNDS];
    unsigned char *h;
    CHECK_CUDA(cudaMallocHost((void **)&h, n));
    for (int r = 0; r < o->rounds; r++) {
        refill(src, n, r);
        double t0 = harm_now_ms();
        CHECK_CUDA(cudaMemcpy(h, src, n, cudaMemcpyDeviceToHost));
        memset(h, 0x40 | r, n);
        t[r] = harm_now_ms() - t0;
    }
    uint32_t seed = refill(src, n, o->rounds);
    uint64_t want = harm_device_sum(src, n);
    CHECK_CUDA(cudaMemcpy(h, src, n, cudaMemcpyDeviceToHost));
    int ok = harm_check_host(h, n, seed, harm_host_sum(h, n), want, "pinned_write");
    CHECK_CUDA(cudaFreeHost(h));
    char m[80];
    snprintf(m, sizeof m, "\"ms\":%.4f", harm_median(t, o->rounds));
    emit_size(o, "pinned_write", n, m, ok);
    return ok;
}

/* malloc_read and first_page: a reused malloc buffer; after each D2H the
 * CPU reads all of it, or its first page (checked each round; the whole
 * buffer once more at the end). */
static int row_malloc(const harm_opts *o, void *src, size_t n, int first_page_only)
{
    const char *row = first_page_only ? "first_page" : "malloc_read";
    double t[MAX_ROUNDS];
    int ok = 1;
    size_t head = n < PAGE ? n : PAGE;
    unsigned char *h = (unsigned char *)malloc(n);
    if (h == NULL)
        harm_die("malloc(%zu) failed", n);
    for (int r = 0; r < o->rounds; r++) {
        uint32_t seed = refill(src, n, r);
        uint64_t want = harm_device_sum(src, first_page_only ? head : n);
        double t0 = harm_now_ms();
        CHECK_CUDA(cudaMemcpy(h, src, n, cudaMemcpyDeviceToHost));
        uint64_t got = harm_host_sum(h, first_page_only ? head : n);
        t[r] = harm_now_ms() - t0;
        ok &= harm_check_host(h, first_page_only ? head : n, seed, got, want, row);
        if (first_page_only && r == o->rounds - 1)
            ok &= harm_check_host(h, n, seed, harm_host_sum(h, n), harm_device_sum(src, n),
                                  row);
    }
    free(h);
    char m[120];
    double first = t[0];
    snprintf(m, sizeof m, "\"ms\":%.4f,\"first_ms\":%.4f", harm_median(t, o->rounds), first);
    emit_size(o, row, n, m, ok);
    return ok;
}

/* fresh_read: malloc, D2H, read every byte, free; all timed. */
static int row_fresh_read(const harm_opts *o, void *src, size_t n)
{
    double t[MAX_ROUNDS];
    int ok = 1;
    for (int r = 0; r < o->rounds; r++) {
        uint32_t seed = refill(src, n, r);
        uint64_t want = harm_device_sum(src, n);
        double t0 = harm_now_ms();
        unsigned char *h = (unsigned char *)malloc(n);
        if (h == NULL)
            harm_die("malloc(%zu) failed", n);
        CHECK_CUDA(cudaMemcpy(h, src, n, cudaMemcpyDeviceToHost));
        uint64_t got = harm_host_sum(h, n);
        double t1 = harm_now_ms();
        ok &= harm_check_host(h, n, seed, got, want, "fresh_read");
        double t2 = harm_now_ms();
        free(h);
        t[r] = (t1 - t0) + (harm_now_ms() - t2);
    }
    char m[80];
    snprintf(m, sizeof m, "\"ms\":%.4f", harm_median(t, o->rounds));
    emit_size(o, "fresh_read", n, m, ok);
    return ok;
}

/* Per-call microseconds of op(arg), median over 15 batches of `calls`. */
static double per_call_us(int calls, void (*op)(void *), void *arg)
{
    double v[15];
    for (int b = 0; b < 15; b++) {
        double t0 = harm_now_ms();
        for (int c = 0; c < calls; c++)
            op(arg);
        v[b] = (harm_now_ms() - t0) * 1e3 / calls;
    }
    return harm_median(v, 15);
}

typedef struct small_copy {
    void *dst;
    const void *src;
    size_t n;
    cudaMemcpyKind kind;
} small_copy;

static void op_copy(void *arg)
{
    small_copy *c = (small_copy *)arg;
    CHECK_CUDA(cudaMemcpy(c->dst, c->src, c->n, c->kind));
}

static void op_launch(void *arg)
{
    (void)arg;
    empty_kernel<<<1, 1>>>();
}

static int row_small(const harm_opts *o, void *src)
{
    char m[80];
    int ok = 1;
    uint32_t seed = refill(src, PAGE, 0), word = 0;
    double us;
    /* A warm-up of each op, so no first-call cost lands in a batch. */
    small_copy d2h = {&word, src, 4, cudaMemcpyDeviceToHost};
    op_copy(&d2h);
    us = per_call_us(200, op_copy, &d2h);
    if (word != p2pk_pattern_word(seed, 0)) {
        fprintf(stderr, "harmbench: WRONG BYTES d2h_4B: %08x, the source %08x\n", word,
                p2pk_pattern_word(seed, 0));
        ok = 0;
    }
    snprintf(m, sizeof m, "\"us\":%.4f", us);
    emit_size(o, "d2h_4B", 4, m, word == p2pk_pattern_word(seed, 0));

    unsigned char *h = (unsigned char *)malloc(PAGE);
    void *dst;
    if (h == NULL)
        harm_die("malloc(%d) failed", PAGE);
    for (size_t i = 0; i < PAGE; i++)
        h[i] = p2pk_pattern_byte(seed + 1, i);
    CHECK_CUDA(cudaMalloc(&dst, PAGE));
    small_copy h2d = {dst, h, PAGE, cudaMemcpyHostToDevice};
    op_copy(&h2d);
    us = per_call_us(200, op_copy, &h2d);
    int h2d_ok = harm_check_device(dst, PAGE, seed + 1, "h2d_4K");
    ok &= h2d_ok;
    snprintf(m, sizeof m, "\"us\":%.4f", us);
    emit_size(o, "h2d_4K", PAGE, m, h2d_ok);
    CHECK_CUDA(cudaFree(dst));
    free(h);

    empty_kernel<<<1, 1>>>();
    CHECK_CUDA(cudaDeviceSynchronize());
    us = per_call_us(500, op_launch, NULL);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    snprintf(m, sizeof m, "\"us\":%.4f", us);
    emit_size(o, "launch", 0, m, 1);
    return ok;
}

/* One round of the bounce loop: D2H (a then host), optional read, H2D
 * (host then b), all complete when it returns. Returns the host ms. */
static double bounce_round(const harm_opts *o, void *src, void *dst, unsigned char *reused,
                           size_t n, uint64_t *read_sum)
{
    int fresh = strcmp(o->memory, "fresh") == 0;
    double t0 = harm_now_ms();
    unsigned char *h = fresh ? (unsigned char *)malloc(n) : reused;
    if (h == NULL)
        harm_die("malloc(%zu) failed", n);
    CHECK_CUDA(cudaSetDevice(o->a));
    CHECK_CUDA(cudaMemcpy(h, src, n, cudaMemcpyDeviceToHost));
    if (strcmp(o->touch, "read") == 0)
        *read_sum = harm_host_sum(h, n);
    CHECK_CUDA(cudaSetDevice(o->b));
    CHECK_CUDA(cudaMemcpy(dst, h, n, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaDeviceSynchronize());
    if (fresh)
        free(h);
    return harm_now_ms() - t0;
}

/* The bounce loop's row name: bounce.MEMORY.untouched|read.same|cross. */
static const char *bounce_row(const harm_opts *o)
{
    static char row[96];
    snprintf(row, sizeof row, "bounce.%s.%s.%s", o->memory,
             strcmp(o->touch, "read") == 0 ? "read" : "untouched",
             o->a == o->b ? "same" : "cross");
    return row;
}

static int row_bounce(const harm_opts *o, void *src, size_t n)
{
    double t[MAX_ROUNDS];
    int ok = 1, pinned = strcmp(o->memory, "pinned") == 0;
    int pageable = strcmp(o->memory, "pageable") == 0, read = strcmp(o->touch, "read") == 0;
    const char *row = bounce_row(o);
    unsigned char *h = NULL;
    void *dst;
    CHECK_CUDA(cudaSetDevice(o->b));
    CHECK_CUDA(cudaMalloc(&dst, n));
    if (pinned)
        CHECK_CUDA(cudaMallocHost((void **)&h, n));
    else if (pageable && (h = (unsigned char *)malloc(n)) == NULL)
        harm_die("malloc(%zu) failed", n);
    for (int r = 0; r < o->rounds; r++) {
        CHECK_CUDA(cudaSetDevice(o->a));
        uint32_t seed = refill(src, n, r);
        uint64_t want = read ? harm_device_sum(src, n) : 0, got = 0;
        t[r] = bounce_round(o, src, dst, h, n, &got);
        if (read && got != want) {
            fprintf(stderr, "harmbench: WRONG BYTES %s round %d: the CPU read sum %016llx, "
                            "the source's %016llx\n", row, r + 1, (unsigned long long)got,
                    (unsigned long long)want);
            ok = 0;
        }
        CHECK_CUDA(cudaSetDevice(o->b));
        ok &= harm_check_device(dst, n, seed, row);
    }
    if (pinned)
        CHECK_CUDA(cudaFreeHost(h));
    else
        free(h);
    CHECK_CUDA(cudaSetDevice(o->b));
    CHECK_CUDA(cudaFree(dst));
    CHECK_CUDA(cudaSetDevice(o->a));
    /* steady_ms is the median of rounds 2..N (the steady state); mean_ms
     * their mean, which a back-off probe's extra cost moves and a user's
     * total time is made of; round_ms every round. */
    char m[160 + MAX_ROUNDS * 12];
    double first = t[0], mean = first;
    if (o->rounds > 1) {
        mean = 0;
        for (int r = 1; r < o->rounds; r++)
            mean += t[r] / (o->rounds - 1);
    }
    int len = snprintf(m, sizeof m, "\"pair\":[%d,%d],\"memory\":\"%s\",\"touch\":\"%s\","
                       "\"first_ms\":%.4f,\"steady_ms\":%.4f,\"mean_ms\":%.4f,\"round_ms\":[",
                       o->a, o->b, o->memory, o->touch, first,
                       o->rounds > 1 ? harm_median(t + 1, o->rounds - 1) : first, mean);
    for (int r = 0; r < o->rounds; r++)
        len += snprintf(m + len, sizeof m - (size_t)len, "%s%.3f", r ? "," : "", t[r]);
    snprintf(m + len, sizeof m - (size_t)len, "]");
    emit_size(o, row, n, m, ok);
    return ok;
}

static void usage(void)
{
    fprintf(stderr, "usage: harmbench --row fresh_pinned|pinned_write|malloc_read|fresh_read|"
                    "first_page|small|bounce|miss|devices [--sizes 1M,4M,...] [--rounds N] "
                    "[--pair A,B] [--memory pageable|pinned|fresh] [--touch none|read] "
                    "[--label TEXT]\n");
    exit(2);
}

static int default_rounds(const char *row)
{
    if (strcmp(row, "pinned_write") == 0)
        return 10;
    if (strcmp(row, "fresh_pinned") == 0 || strcmp(row, "fresh_read") == 0)
        return 3;
    /* A bounce loop reaches its steady state only after the back-off has
     * had its say: a loop that reads its buffer wastes snapshots in
     * rounds 2, 4 and 7 and skips 8-11, so 5 rounds made two of the four
     * "steady" rounds back-off probes, and their median half a probe. */
    if (strcmp(row, "bounce") == 0)
        return 11;
    return 5; /* malloc_read, first_page */
}

static void parse_args(int argc, char **argv, harm_opts *o)
{
    static const size_t def[] = {1 << 20, 4 << 20, 16 << 20, 64 << 20, (size_t)256 << 20};
    memset(o, 0, sizeof *o);
    o->row = "";
    o->label = "";
    o->memory = "pageable";
    o->touch = "none";
    o->nsizes = 5;
    memcpy(o->sizes, def, sizeof def);
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            usage();
        i++;
        if (strcmp(k, "--row") == 0)
            o->row = v;
        else if (strcmp(k, "--label") == 0 && strpbrk(v, "\"\\") == NULL)
            o->label = v;
        else if (strcmp(k, "--rounds") == 0)
            o->rounds = atoi(v);
        else if (strcmp(k, "--pair") == 0 && sscanf(v, "%d,%d", &o->a, &o->b) == 2)
            continue;
        else if (strcmp(k, "--memory") == 0 &&
                 (!strcmp(v, "pageable") || !strcmp(v, "pinned") || !strcmp(v, "fresh")))
            o->memory = v;
        else if (strcmp(k, "--touch") == 0 && (!strcmp(v, "none") || !strcmp(v, "read")))
            o->touch = v;
        else if (strcmp(k, "--sizes") == 0) {
            char *copy = strdup(v);
            o->nsizes = 0;
            for (char *t = strtok(copy, ","); t; t = strtok(NULL, ",")) {
                size_t n = harm_parse_size(t);
                if (o->nsizes == MAX_SIZES || n == 0 || n % 8 != 0)
                    usage(); /* sizes: multiples of 8 bytes (the sums read words) */
                o->sizes[o->nsizes++] = n;
            }
            free(copy);
        } else
            usage();
    }
    if (o->rounds == 0)
        o->rounds = default_rounds(o->row);
    if (o->rounds < 1 || o->rounds > MAX_ROUNDS || o->nsizes == 0 || o->a < 0 || o->b < 0)
        usage();
}

int main(int argc, char **argv)
{
    harm_opts o;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--row") == 0 && strcmp(argv[i + 1], "miss") == 0)
            return harm_miss_main(argc, argv); /* its own options: harm_matrix.cu */
    parse_args(argc, argv, &o);
    int ndev = 0;
    CHECK_CUDA(cudaGetDeviceCount(&ndev));
    if (strcmp(o.row, "devices") == 0) {
        char bus[32] = "";
        if (ndev > 0 && cudaDeviceGetPCIBusId(bus, sizeof bus, 0) != cudaSuccess)
            bus[0] = '\0';
        printf("{\"bench\":\"harm\",\"row\":\"devices\",\"count\":%d,\"bus0\":\"%s\"}\n",
               ndev, bus);
        return 0;
    }
    if (o.a >= ndev || o.b >= ndev) {
        printf("harmbench: SKIP: device %d not present (%d devices)\n",
               o.a > o.b ? o.a : o.b, ndev);
        return 77;
    }
    int bounce = strcmp(o.row, "bounce") == 0;
    if (!bounce && o.a != o.b)
        usage(); /* the rows that never bounce use one device */
    size_t cap = PAGE;
    for (int i = 0; i < o.nsizes; i++)
        cap = o.sizes[i] > cap ? o.sizes[i] : cap;
    void *src;
    CHECK_CUDA(cudaSetDevice(o.a));
    CHECK_CUDA(cudaMalloc(&src, cap));
    int ok = 1;
    if (strcmp(o.row, "small") == 0)
        ok = row_small(&o, src);
    for (int i = 0; i < o.nsizes && strcmp(o.row, "small") != 0; i++) {
        size_t n = o.sizes[i];
        if (strcmp(o.row, "fresh_pinned") == 0)
            ok &= row_fresh_pinned(&o, src, n);
        else if (strcmp(o.row, "pinned_write") == 0)
            ok &= row_pinned_write(&o, src, n);
        else if (strcmp(o.row, "malloc_read") == 0 || strcmp(o.row, "first_page") == 0)
            ok &= row_malloc(&o, src, n, strcmp(o.row, "first_page") == 0);
        else if (strcmp(o.row, "fresh_read") == 0)
            ok &= row_fresh_read(&o, src, n);
        else if (bounce)
            ok &= row_bounce(&o, src, n);
        else
            usage();
    }
    CHECK_CUDA(cudaSetDevice(o.a));
    CHECK_CUDA(cudaFree(src));
    int devs[2];
    harm_emit_held(bounce ? bounce_row(&o) : o.row, o.label, devs, devs_used(&o, devs), ok);
    if (!ok)
        fprintf(stderr, "harmbench: FAIL: wrong bytes in row %s (lines above)\n", o.row);
    return ok ? 0 : 1;
}
