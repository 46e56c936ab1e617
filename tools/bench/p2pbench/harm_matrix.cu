/* harmbench --row miss: the misprediction matrix (tools/bench/p2pbench/harm_matrix.py
 * runs it without and with the shim).
 *
 *   harmbench --row miss --memory pinned|registered|malloc|mmap|thp
 *             [--sizes 64K,1M,64M] [--actions none,memset,...|all]
 *             [--where between|after] [--evidence N] [--alt K]
 *             [--tmpdir DIR] [--label TEXT]
 *   harmbench --row miss --self-test   the actions and checks on the host
 *
 * Per size and action (a cell), a host buffer of that memory kind and a
 * source and a destination on device 0, all of the cell's own and all kept
 * to the end of the process, so that no cell meets another's addresses
 * (and with them the shim's history):
 *   1. evidence: N plain rounds (D2H from the source into the buffer, H2D
 *      from the buffer into the destination), from which the shim learns
 *      that the buffer bounces (default 2);
 *   2. the mispredicted round: the D2H, which the shim now predicts, the
 *      action (between the D2H and the H2D, or after the H2D: --where), the
 *      H2D;
 *   3. the alternating loop: K pairs of a useful round (as in 1) and a
 *      spoilt round (as in 2) (default: 4, 3 from 1 GiB).
 * Before each round the source gets a new pattern (a kernel, not timed).
 * After each H2D the destination is checked on the GPU against what the
 * program meant it to hold (the source's bytes, or the bytes the action
 * wrote over them); what an action read or copied elsewhere (its sum, the
 * file, the copy, the forked child's own check) against the source.
 * Actions (harm_matrix.cuh): none, memset, random, pagebyte, word, read,
 * write, pwrite, writev, memcpy, fork, thread.
 *
 * One JSON line per cell, row miss.MEMORY.ACTION.WHERE: miss_ms (the
 * mispredicted round), alt_ms (the alternating loop's steady state: the
 * median over its pairs of useful + spoilt), evidence_ms, useful_ms,
 * spoilt_ms (medians), miss_action_ms and alt_action_ms (the action alone),
 * miss_faults and alt_faults (the process's page faults in a spoilt round,
 * getrusage), miss_cpu_ms and alt_cpu_ms (CPU time of the process's other
 * threads in a spoilt round: the shim's fault handler, the driver's
 * threads; not the action's own writer thread), round_ms (every round in
 * order); thp: huge_kb (the buffer's AnonHugePages at the end). Then one
 * process line (harm_util.cuh). Exit: 0; 1 wrong bytes or a CUDA error;
 * 2 bad arguments. */
#include "harm_matrix.cuh"
#include "harm_util.cuh"
#include "pattern.cuh"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define MISS_MAX_SIZES 8
#define MISS_MAX_ROUNDS 64

typedef struct miss_opts {
    int kind, after, evidence, alt, nsizes;
    int actions[MA_COUNT], nactions;
    size_t sizes[MISS_MAX_SIZES];
    const char *label, *tmpdir;
} miss_opts;

/* One cell's buffers and its running state. */
typedef struct miss_cell {
    const miss_opts *o;
    size_t n, page;
    miss_host h;
    void *src, *dst;
    miss_work w;
    uint32_t round;
    int ok;
    char what[96];
    /* Of the last spoilt round: */
    double action_ms, cpu_ms;
    long faults;
} miss_cell;

/* Page faults of the process, CPU time of all its threads and of this one. */
typedef struct miss_usage {
    long faults;
    double all_ms, this_ms;
} miss_usage;

static double tv_ms(struct timeval a, struct timeval b)
{
    return (a.tv_sec + b.tv_sec) * 1e3 + (a.tv_usec + b.tv_usec) / 1e3;
}

static miss_usage usage_now(void)
{
    struct rusage all, me;
    getrusage(RUSAGE_SELF, &all);
    getrusage(RUSAGE_THREAD, &me);
    miss_usage u = {all.ru_minflt + all.ru_majflt, tv_ms(all.ru_utime, all.ru_stime),
                    tv_ms(me.ru_utime, me.ru_stime)};
    return u;
}

/* One round: a new pattern in the source, the D2H, the action when spoil
 * (before or after the H2D), the H2D, every step complete; then the
 * checks. Returns the round's host ms. */
static double miss_round(miss_cell *c, int spoil)
{
    uint32_t seed = 0x3155u + 7919u * ++c->round + (uint32_t)(c->n >> 12);
    unsigned char v = (unsigned char)(0x80 | (c->round & 0x7f));
    CHECK_CUDA(p2pk_fill(c->src, c->n, seed, cudaStreamLegacy));
    uint64_t want = spoil ? harm_device_sum(c->src, c->n) : 0, read_sum = 0;
    CHECK_CUDA(cudaDeviceSynchronize());
    miss_usage u0 = usage_now();
    double t0 = harm_now_ms(), a0 = 0, a1 = 0;
    CHECK_CUDA(cudaMemcpy(c->h.p, c->src, c->n, cudaMemcpyDeviceToHost));
    if (spoil && !c->o->after) {
        a0 = harm_now_ms();
        read_sum = miss_act(&c->w, &c->h, v, want);
        a1 = harm_now_ms();
    }
    CHECK_CUDA(cudaMemcpy(c->dst, c->h.p, c->n, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaDeviceSynchronize());
    if (spoil && c->o->after) {
        a0 = harm_now_ms();
        read_sum = miss_act(&c->w, &c->h, v, want);
        a1 = harm_now_ms();
    }
    double t = harm_now_ms() - t0;
    miss_usage u1 = usage_now();
    if (spoil) {
        c->action_ms = a1 - a0;
        c->faults = u1.faults - u0.faults;
        c->cpu_ms = (u1.all_ms - u0.all_ms) - (u1.this_ms - u0.this_ms) - c->w.helper_cpu_ms;
        c->ok &= miss_check_action(&c->w, c->n, read_sum, want, c->what);
    }
    miss_expect e = {seed, MP_NONE, v, 0, 0};
    if (spoil && !c->o->after)
        e = miss_expect_after(c->w.action, c->n, c->page, seed, v);
    c->ok &= miss_check_device(c->dst, c->n, c->page, &e, c->what);
    return t;
}

static double median_of(const double *v, int n)
{
    return harm_median(v, n);
}

/* The cell's figures as JSON members into m (len bytes). */
static void miss_format(const miss_cell *c, const double *t, int nt, const double *ev,
                        double miss, const double *pairs, const double *useful,
                        const double *spoilt, const double *act, const double *flt,
                        const double *cpu, const double *first, char *m, size_t len)
{
    int k = c->o->alt, at;
    at = snprintf(m, len,
                  "\"memory\":\"%s\",\"action\":\"%s\",\"where\":\"%s\",\"evidence\":%d,"
                  "\"alt\":%d,\"miss_ms\":%.4f,\"alt_ms\":%.4f,\"evidence_ms\":%.4f,"
                  "\"useful_ms\":%.4f,\"spoilt_ms\":%.4f,\"miss_action_ms\":%.4f,"
                  "\"alt_action_ms\":%.4f,\"miss_faults\":%.0f,\"alt_faults\":%.1f,"
                  "\"miss_cpu_ms\":%.3f,\"alt_cpu_ms\":%.3f",
                  miss_kind_names[c->o->kind], miss_action_names[c->w.action],
                  c->o->after ? "after" : "between", c->o->evidence, k, miss,
                  median_of(pairs, k), median_of(ev, c->o->evidence), median_of(useful, k),
                  median_of(spoilt, k), first[0], median_of(act, k), first[1],
                  median_of(flt, k), first[2], median_of(cpu, k));
    if (c->w.action == MA_FORK)
        at += snprintf(m + at, len - (size_t)at, ",\"child_signals\":%d", c->w.child_signals);
    if (c->o->kind == MK_THP)
        at += snprintf(m + at, len - (size_t)at, ",\"huge_kb\":%ld,\"thp_note\":\"%s\"",
                       miss_host_huge_kb(&c->h), c->h.note);
    at += snprintf(m + at, len - (size_t)at, ",\"round_ms\":[");
    for (int i = 0; i < nt; i++)
        at += snprintf(m + at, len - (size_t)at, "%s%.3f", i ? "," : "", t[i]);
    snprintf(m + at, len - (size_t)at, "]");
}

/* Runs one cell (its buffers stay in *c for the caller to free at the
 * end) and prints its line. Returns 1 when every byte was right. */
static int miss_cell_run(miss_cell *c)
{
    const miss_opts *o = c->o;
    double t[MISS_MAX_ROUNDS], ev[MISS_MAX_ROUNDS], pairs[MISS_MAX_ROUNDS];
    double useful[MISS_MAX_ROUNDS], spoilt[MISS_MAX_ROUNDS], act[MISS_MAX_ROUNDS];
    double flt[MISS_MAX_ROUNDS], cpu[MISS_MAX_ROUNDS], first[3];
    int nt = 0;
    for (int e = 0; e < o->evidence; e++)
        t[nt++] = ev[e] = miss_round(c, 0);
    double miss = t[nt++] = miss_round(c, 1);
    first[0] = c->action_ms, first[1] = (double)c->faults, first[2] = c->cpu_ms;
    for (int k = 0; k < o->alt; k++) {
        useful[k] = t[nt++] = miss_round(c, 0);
        spoilt[k] = t[nt++] = miss_round(c, 1);
        pairs[k] = useful[k] + spoilt[k];
        act[k] = c->action_ms, flt[k] = (double)c->faults, cpu[k] = c->cpu_ms;
    }
    char m[1200 + MISS_MAX_ROUNDS * 12], fields[1300 + MISS_MAX_ROUNDS * 12];
    miss_format(c, t, nt, ev, miss, pairs, useful, spoilt, act, flt, cpu, first, m, sizeof m);
    snprintf(fields, sizeof fields, "\"bytes\":%zu,\"rounds\":%d,%s", c->n, nt, m);
    char row[96];
    snprintf(row, sizeof row, "miss.%s.%s.%s", miss_kind_names[o->kind],
             miss_action_names[c->w.action], o->after ? "after" : "between");
    harm_emit(row, o->label, fields, c->ok);
    return c->ok;
}

/* The usage line: on stdout with status 0 (--help), else on stderr. */
static void miss_print_usage(int status)
{
    fprintf(status ? stderr : stdout, "usage: harmbench --row miss --memory pinned|registered|malloc|mmap|thp "
                    "[--sizes 64K,1M,64M] [--actions none,memset,random,pagebyte,word,read,"
                    "write,pwrite,writev,memcpy,fork,thread|all] [--where between|after] "
                    "[--evidence N] [--alt K] [--tmpdir DIR] [--label TEXT]\n"
                    "       harmbench --row miss --self-test\n");
    exit(status);
}

static void miss_usage_exit(void)
{
    miss_print_usage(2);
}

static int name_index(const char *v, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (strcmp(v, names[i]) == 0)
            return i;
    return -1;
}

static void parse_list(miss_opts *o, const char *k, const char *v, size_t page)
{
    char *copy = strdup(v);
    for (char *t = strtok(copy, ","); t; t = strtok(NULL, ",")) {
        if (strcmp(k, "--sizes") == 0) {
            size_t n = harm_parse_size(t);
            if (o->nsizes == MISS_MAX_SIZES || n == 0 || n % page != 0)
                miss_usage_exit(); /* whole pages: the actions write per page */
            o->sizes[o->nsizes++] = n;
        } else if (strcmp(t, "all") == 0) {
            for (int a = 0; a < MA_COUNT; a++)
                o->actions[o->nactions++] = a;
        } else {
            int a = name_index(t, miss_action_names, MA_COUNT);
            if (a < 0 || o->nactions == MA_COUNT)
                miss_usage_exit();
            o->actions[o->nactions++] = a;
        }
    }
    free(copy);
}

static void miss_parse(int argc, char **argv, miss_opts *o)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    memset(o, 0, sizeof *o);
    o->kind = -1, o->evidence = 2, o->label = "";
    o->tmpdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--row") == 0 && strcmp(v, "miss") == 0)
            continue;
        else if (strcmp(k, "--memory") == 0)
            o->kind = name_index(v, miss_kind_names, MK_COUNT);
        else if (strcmp(k, "--sizes") == 0 || strcmp(k, "--actions") == 0)
            parse_list(o, k, v, page);
        else if (strcmp(k, "--where") == 0 && (!strcmp(v, "between") || !strcmp(v, "after")))
            o->after = strcmp(v, "after") == 0;
        else if (strcmp(k, "--evidence") == 0)
            o->evidence = atoi(v);
        else if (strcmp(k, "--alt") == 0)
            o->alt = atoi(v);
        else if (strcmp(k, "--tmpdir") == 0)
            o->tmpdir = v;
        else if (strcmp(k, "--label") == 0 && strpbrk(v, "\"\\") == NULL)
            o->label = v;
        else
            miss_usage_exit();
    }
    if (argc % 2 == 0 || o->kind < 0 || o->evidence < 1 || o->alt < 0 ||
        1 + o->evidence + 2 * (o->alt ? o->alt : 4) > MISS_MAX_ROUNDS)
        miss_usage_exit();
    if (o->nsizes == 0)
        parse_list(o, "--sizes", "64K,1M,64M", page);
    if (o->nactions == 0)
        parse_list(o, "--actions", "all", page);
}

int harm_miss_main(int argc, char **argv)
{
    miss_opts o;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--self-test") == 0)
            return miss_selftest(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            miss_print_usage(0);
    miss_parse(argc, argv, &o);
    int ndev = 0;
    CHECK_CUDA(cudaGetDeviceCount(&ndev));
    CHECK_CUDA(cudaSetDevice(0));
    int ncells = o.nsizes * o.nactions, ok = 1;
    miss_cell *cells = (miss_cell *)calloc((size_t)ncells, sizeof *cells);
    if (cells == NULL)
        harm_die("calloc of %d cells failed", ncells);
    int alt_auto = o.alt == 0;
    for (int i = 0; i < ncells; i++) {
        miss_cell *c = &cells[i];
        size_t n = o.sizes[i / o.nactions];
        c->o = &o, c->n = n, c->ok = 1, c->page = (size_t)sysconf(_SC_PAGESIZE);
        if (alt_auto)
            o.alt = n >= ((size_t)1 << 30) ? 3 : 4;
        miss_host_alloc(&c->h, o.kind, n);
        CHECK_CUDA(cudaMalloc(&c->src, n));
        CHECK_CUDA(cudaMalloc(&c->dst, n));
        miss_work_init(&c->w, o.actions[i % o.nactions], n, o.tmpdir);
        snprintf(c->what, sizeof c->what, "miss %s %s %s %zu B", miss_kind_names[o.kind],
                 miss_action_names[c->w.action], o.after ? "after" : "between", n);
        ok &= miss_cell_run(c);
        miss_work_free(&c->w);
    }
    for (int i = 0; i < ncells; i++) {
        miss_host_free(&cells[i].h);
        CHECK_CUDA(cudaFree(cells[i].src));
        CHECK_CUDA(cudaFree(cells[i].dst));
    }
    free(cells);
    char row[64];
    int devs[1] = {0};
    snprintf(row, sizeof row, "miss.%s.%s", miss_kind_names[o.kind],
             o.after ? "after" : "between");
    harm_emit_held(row, o.label, devs, 1, ok);
    if (!ok)
        fprintf(stderr, "harmbench: FAIL: wrong bytes in row miss (lines above)\n");
    return ok ? 0 : 1;
}
