/* p2pbench: cross-GPU copy bandwidth and per-copy time through the runtime
 * API, as an unmodified program sees them, plus the host cost of copies the
 * shim only passes through. Built with static and with shared cudart
 * (p2pbench_static, p2pbench_shared); run without the shim (staged), with
 * it (LD_PRELOAD), and with --enable-peer (the program enables peer access
 * itself: the ceiling). tools/bench/p2pbench/run_bench.py runs all of them.
 *
 *   p2pbench [--pair A,B] [--direction fwd|rev|both] [--enable-peer]
 *            [--sizes 4K,1M,...] [--warmup N] [--min-ms MS] [--reps N]
 *            [--pt-batches N] [--pt-calls N] [--passthrough-only]
 *            [--label TEXT] [--json FILE]
 *
 * Bandwidth: CUDA events around `iters` back-to-back copies, iters chosen so
 * one measurement lasts at least --min-ms; --reps measurements, median
 * reported. Async APIs run on a non-blocking stream of the source device;
 * synchronous ones on its legacy default stream. Every measured destination
 * is verified byte for byte afterwards. Pass-through cost: host time per
 * call of 4 KiB same-device and host-to-device cudaMemcpyAsync, median of 21
 * batches, measured before the first cross-GPU copy and again at the end. Exit: 0, 1 on a CUDA error or wrong bytes, 77 without two GPUs. */
#include "pattern.cuh"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../bench_check.h"

#ifndef P2PSHIM_CUDART
#define P2PSHIM_CUDART "unknown"
#endif

#define MAX_SIZES 32
#define MAX_REPS 64
#define PT_MAX_BATCHES 201
#define PT_BYTES 4096


enum api { API_PEER_ASYNC, API_MEMCPY_ASYNC, API_MEMCPY, API_PEER, API_COUNT };
static const char *const api_name[API_COUNT] = {"cudaMemcpyPeerAsync", "cudaMemcpyAsync",
                                                "cudaMemcpy", "cudaMemcpyPeer"};
static const int api_async[API_COUNT] = {1, 1, 0, 0};

struct opts {
    int dev[2];
    int dirs;   /* bit 0: dev[0]->dev[1], bit 1: the reverse */
    int enable_peer;
    int passthrough_only;
    size_t sizes[MAX_SIZES];
    int nsizes;
    int warmup, reps;
    int pt_batches, pt_calls;   /* pass-through: batches, calls per batch */
    double min_ms;
    const char *label, *json;
};

struct result {
    int api, src, dst, iters, verified;
    size_t bytes;
    double gbps[MAX_REPS], us[MAX_REPS], host_us[MAX_REPS];
};

static void *buf[2];
static cudaStream_t stream[2];
static cudaEvent_t ev_start[2], ev_stop[2];
static struct result *results;
static int nresults;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
    double t[MAX_REPS > PT_MAX_BATCHES ? MAX_REPS : PT_MAX_BATCHES];
    memcpy(t, v, n * sizeof *v);
    qsort(t, n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* Issues `count` copies of `bytes` from device index si to di. The source
 * device is current. */
static void issue(int api, int si, int di, const struct opts *o, size_t bytes, int count)
{
    int s = o->dev[si], d = o->dev[di];
    for (int i = 0; i < count; i++) {
        switch (api) {
        case API_PEER_ASYNC:
            CHECK_CUDA(cudaMemcpyPeerAsync(buf[di], d, buf[si], s, bytes, stream[si]));
            break;
        case API_MEMCPY_ASYNC:
            CHECK_CUDA(cudaMemcpyAsync(buf[di], buf[si], bytes, cudaMemcpyDefault, stream[si]));
            break;
        case API_MEMCPY:
            CHECK_CUDA(cudaMemcpy(buf[di], buf[si], bytes, cudaMemcpyDefault));
            break;
        default:
            CHECK_CUDA(cudaMemcpyPeer(buf[di], d, buf[si], s, bytes));
            break;
        }
    }
}

static void sync_both(const struct opts *o, int back)
{
    CHECK_CUDA(cudaSetDevice(o->dev[0]));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaSetDevice(o->dev[1]));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaSetDevice(o->dev[back]));
}

/* Times `count` copies: GPU ms from events on the timing stream, host ms
 * from issue to completion. */
static void timed(int api, int si, int di, const struct opts *o, size_t bytes, int count,
                  double *ms, double *host_ms)
{
    cudaStream_t ts = api_async[api] ? stream[si] : (cudaStream_t)0;
    float f = 0;
    double t0;
    sync_both(o, si);
    t0 = now_ns();
    CHECK_CUDA(cudaEventRecord(ev_start[si], ts));
    issue(api, si, di, o, bytes, count);
    CHECK_CUDA(cudaEventRecord(ev_stop[si], ts));
    CHECK_CUDA(cudaEventSynchronize(ev_stop[si]));
    *host_ms = (now_ns() - t0) / 1e6;
    CHECK_CUDA(cudaEventElapsedTime(&f, ev_start[si], ev_stop[si]));
    *ms = f;
}

static void measure(int api, int si, int di, size_t bytes, const struct opts *o,
                    struct result *r)
{
    double ms, host_ms;
    int n = 1;
    p2pk_verify_result v;

    memset(r, 0, sizeof *r);
    r->api = api;
    r->src = o->dev[si];
    r->dst = o->dev[di];
    r->bytes = bytes;
    CHECK_CUDA(cudaSetDevice(o->dev[di]));
    CHECK_CUDA(cudaMemset(buf[di], 0, bytes));
    CHECK_CUDA(cudaSetDevice(o->dev[si]));
    issue(api, si, di, o, bytes, o->warmup);
    /* Calibrate: grow until a batch takes a quarter of the target. */
    for (;;) {
        timed(api, si, di, o, bytes, n, &ms, &host_ms);
        if (ms >= o->min_ms / 4 || n >= (1 << 20))
            break;
        n *= 4;
    }
    r->iters = (int)(n * (o->min_ms / (ms > 1e-3 ? ms : 1e-3))) + 1;
    if (r->iters > (1 << 22))
        r->iters = 1 << 22;
    for (int k = 0; k < o->reps; k++) {
        timed(api, si, di, o, bytes, r->iters, &ms, &host_ms);
        r->gbps[k] = (double)bytes * r->iters / (ms * 1e6);
        r->us[k] = ms * 1e3 / r->iters;
        r->host_us[k] = host_ms * 1e3 / r->iters;
    }
    sync_both(o, di);
    CHECK_CUDA(p2pk_verify_sync(buf[di], bytes, 11 + si, &v, cudaStreamLegacy));
    r->verified = v.mismatches == 0;
    if (!r->verified)
        fprintf(stderr, "p2pbench: %s %d->%d %zu bytes: %llu wrong bytes, first at %llu\n",
                api_name[api], r->src, r->dst, bytes, v.mismatches, v.first_bad);
    CHECK_CUDA(cudaSetDevice(o->dev[si]));
}

/* Host time per call, in ns, per batch, of calls the shim passes through
 * (PT_D2D, PT_H2D) and of calls it does not hook at all (PT_MEMSET,
 * PT_LAUNCH: references). Per-call host cost differs from one process to
 * the next by far more than the shim's budget (measured: 1.4 vs 2.2 us for
 * the same H2D call, bimodal, whatever the CPU pinning or batch size), while
 * it is stable inside a process; so run_bench compares each call's cost
 * minus a reference call's cost in the same process. The kinds interleave
 * batch by batch so that drift hits all of them alike. */
enum { PT_D2D, PT_H2D, PT_MEMSET, PT_LAUNCH, PT_KINDS };
static const char *const pt_name[PT_KINDS] = {"d2d_same_device_async_4k", "h2d_pinned_async_4k",
                                              "ref_memset_async_4k", "ref_empty_kernel_launch"};

static __global__ void empty_kernel(void)
{
}

static void passthrough(const struct opts *o, double ns[PT_KINDS][PT_MAX_BATCHES])
{
    void *a, *b, *host;
    cudaStream_t st = stream[0];
    CHECK_CUDA(cudaSetDevice(o->dev[0]));
    CHECK_CUDA(cudaMalloc(&a, PT_BYTES));
    CHECK_CUDA(cudaMalloc(&b, PT_BYTES));
    CHECK_CUDA(cudaMallocHost(&host, PT_BYTES));
    memset(host, 0, PT_BYTES);
    for (int k = -1; k < o->pt_batches; k++) {   /* batch -1: warm-up */
        for (int kind = 0; kind < PT_KINDS; kind++) {
            double t0;
            CHECK_CUDA(cudaStreamSynchronize(st));
            t0 = now_ns();
            for (int i = 0; i < o->pt_calls; i++) {
                switch (kind) {
                case PT_D2D:
                    CHECK_CUDA(cudaMemcpyAsync(b, a, PT_BYTES, cudaMemcpyDefault, st));
                    break;
                case PT_H2D:
                    CHECK_CUDA(cudaMemcpyAsync(a, host, PT_BYTES, cudaMemcpyHostToDevice, st));
                    break;
                case PT_MEMSET:
                    CHECK_CUDA(cudaMemsetAsync(b, 0, PT_BYTES, st));
                    break;
                default:
                    empty_kernel<<<1, 1, 0, st>>>();
                    break;
                }
            }
            if (k >= 0)
                ns[kind][k] = (now_ns() - t0) / o->pt_calls;
        }
    }
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(st));
    CHECK_CUDA(cudaFree(a));
    CHECK_CUDA(cudaFree(b));
    CHECK_CUDA(cudaFreeHost(host));
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K' || *end == 'k')
        v *= 1024;
    else if (*end == 'M' || *end == 'm')
        v *= 1024 * 1024;
    else if (*end == 'G' || *end == 'g')
        v *= 1024.0 * 1024 * 1024;
    return v < 4 ? 0 : (size_t)v;
}

static void usage(void)
{
    fprintf(stderr, "usage: p2pbench [--pair A,B] [--direction fwd|rev|both] [--enable-peer]\n"
                    "                [--sizes 4K,1M,...] [--warmup N] [--min-ms MS] [--reps N]\n"
                    "                [--pt-batches N] [--pt-calls N] [--passthrough-only]\n"
                    "                [--label TEXT] [--json FILE]\n");
    exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
    static const size_t defaults[] = {4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20,
                                      4 << 20, 16 << 20, 64 << 20, 256 << 20};
    memset(o, 0, sizeof *o);
    o->dev[1] = 1;
    o->dirs = 1;
    o->warmup = 3;
    o->reps = 5;
    o->min_ms = 20;
    o->pt_batches = 21;
    o->pt_calls = 16;
    o->label = "";
    o->nsizes = (int)(sizeof defaults / sizeof defaults[0]);
    memcpy(o->sizes, defaults, sizeof defaults);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--enable-peer") == 0 || strcmp(a, "--passthrough-only") == 0) {
            *(a[2] == 'e' ? &o->enable_peer : &o->passthrough_only) = 1;
            continue;
        }
        if (v == NULL)
            usage();
        i++;
        if (strcmp(a, "--pair") == 0) {
            if (sscanf(v, "%d,%d", &o->dev[0], &o->dev[1]) != 2 || o->dev[0] == o->dev[1])
                usage();
        } else if (strcmp(a, "--direction") == 0) {
            o->dirs = !strcmp(v, "fwd") ? 1 : !strcmp(v, "rev") ? 2 : !strcmp(v, "both") ? 3 : 0;
            if (!o->dirs)
                usage();
        } else if (strcmp(a, "--sizes") == 0) {
            char tmp[512], *tok, *save = NULL;
            snprintf(tmp, sizeof tmp, "%s", v);
            o->nsizes = 0;
            for (tok = strtok_r(tmp, ",", &save); tok && o->nsizes < MAX_SIZES;
                 tok = strtok_r(NULL, ",", &save))
                if ((o->sizes[o->nsizes++] = parse_size(tok)) == 0)
                    usage();
        } else if (strcmp(a, "--warmup") == 0) {
            o->warmup = atoi(v);
        } else if (strcmp(a, "--min-ms") == 0) {
            o->min_ms = atof(v);
        } else if (strcmp(a, "--reps") == 0) {
            o->reps = atoi(v);
        } else if (strcmp(a, "--pt-batches") == 0) {
            o->pt_batches = atoi(v);
        } else if (strcmp(a, "--pt-calls") == 0) {
            o->pt_calls = atoi(v);
        } else if (strcmp(a, "--label") == 0) {
            o->label = v;
        } else if (strcmp(a, "--json") == 0) {
            o->json = v;
        } else {
            usage();
        }
    }
    if (o->reps < 1 || o->reps > MAX_REPS || o->warmup < 0 || o->min_ms <= 0 || !o->nsizes ||
        o->pt_batches < 1 || o->pt_batches > PT_MAX_BATCHES || o->pt_calls < 1)
        usage();
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void json_array(FILE *f, const double *v, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%.6g", i ? ", " : "", v[i]);
    fputc(']', f);
}

static void write_json(const struct opts *o, const int can[2],
                       double pt[2][PT_KINDS][PT_MAX_BATCHES])
{
    static const char *const envs[] = {"LD_PRELOAD", "P2PSHIM_MODE", "P2PSHIM_LOG",
                                       "P2PSHIM_MIN_BYTES", "P2PSHIM_PAIRS"};
    static const char *const pt_phase[2] = {"before_cross_gpu", "after_cross_gpu"};
    int rt = 0, drv = 0;
    FILE *f = fopen(o->json, "w");
    if (f == NULL) {
        perror(o->json);
        exit(1);
    }
    CHECK_CUDA(cudaRuntimeGetVersion(&rt));
    CHECK_CUDA(cudaDriverGetVersion(&drv));
    fprintf(f, "{\n  \"tool\": \"p2pbench\", \"schema\": 1,\n  \"label\": ");
    json_str(f, o->label);
    fprintf(f, ",\n  \"cudart\": \"%s\", \"runtime_version\": %d, \"driver_version\": %d,\n",
            P2PSHIM_CUDART, rt, drv);
    fprintf(f, "  \"enable_peer\": %s,\n  \"env\": {", o->enable_peer ? "true" : "false");
    for (size_t i = 0; i < sizeof envs / sizeof envs[0]; i++) {
        fprintf(f, "%s\"%s\": ", i ? ", " : "", envs[i]);
        if (getenv(envs[i]))
            json_str(f, getenv(envs[i]));
        else
            fputs("null", f);
    }
    fprintf(f, "},\n  \"settings\": {\"warmup\": %d, \"min_ms\": %g, \"reps\": %d},\n",
            o->warmup, o->min_ms, o->reps);
    fprintf(f, "  \"pair\": [%d, %d], \"can_access_peer\": {\"%d->%d\": %d, \"%d->%d\": %d},\n",
            o->dev[0], o->dev[1], o->dev[0], o->dev[1], can[0], o->dev[1], o->dev[0], can[1]);
    fprintf(f, "  \"devices\": [");
    for (int i = 0; i < 2; i++) {
        struct cudaDeviceProp p;
        CHECK_CUDA(cudaGetDeviceProperties(&p, o->dev[i]));
        fprintf(f, "%s\n    {\"index\": %d, \"name\": ", i ? "," : "", o->dev[i]);
        json_str(f, p.name);
        fprintf(f, ", \"cc\": \"%d.%d\", \"sms\": %d, \"memory_bytes\": %zu, "
                   "\"pci\": \"%04x:%02x:%02x\"}",
                p.major, p.minor, p.multiProcessorCount, p.totalGlobalMem, p.pciDomainID,
                p.pciBusID, p.pciDeviceID);
    }
    fprintf(f, "\n  ],\n  \"copies\": [");
    for (int i = 0; i < nresults; i++) {
        const struct result *r = &results[i];
        fprintf(f, "%s\n    {\"api\": \"%s\", \"src\": %d, \"dst\": %d, \"bytes\": %zu, "
                   "\"iters\": %d, \"verified\": %s,\n     \"gbps_median\": %.6g, "
                   "\"us_per_copy_median\": %.6g, \"host_us_per_copy_median\": %.6g,\n"
                   "     \"gbps_all\": ",
                i ? "," : "", api_name[r->api], r->src, r->dst, r->bytes, r->iters,
                r->verified ? "true" : "false", median(r->gbps, o->reps),
                median(r->us, o->reps), median(r->host_us, o->reps));
        json_array(f, r->gbps, o->reps);
        fprintf(f, ", \"us_all\": ");
        json_array(f, r->us, o->reps);
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"passthrough\": [");
    for (int ph = 0; ph < (o->passthrough_only ? 1 : 2); ph++)
        for (int k = 0; k < PT_KINDS; k++) {
            fprintf(f, "%s\n    {\"name\": \"%s\", \"phase\": \"%s\", \"bytes\": %d, "
                       "\"batches\": %d, \"calls_per_batch\": %d, \"ns_per_call_median\": "
                       "%.6g, \"ns_all\": ",
                    ph || k ? "," : "", pt_name[k], pt_phase[ph], PT_BYTES, o->pt_batches,
                    o->pt_calls, median(pt[ph][k], o->pt_batches));
            json_array(f, pt[ph][k], o->pt_batches);
            fputc('}', f);
        }
    fprintf(f, "\n  ]\n}\n");
    if (fclose(f) != 0) {
        perror(o->json);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    struct opts o;
    int n = 0, can[2] = {0, 0}, bad = 0;
    size_t max = 0;
    double pt[2][PT_KINDS][PT_MAX_BATCHES];   /* [before, after cross-GPU copies][kind] */
    cudaError_t e;

    parse(argc, argv, &o);
    setvbuf(stdout, NULL, _IOLBF, 0);
    e = cudaGetDeviceCount(&n);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || (e == cudaSuccess && n < 2)) {
        printf("p2pbench: SKIP: needs two GPUs (%s, %d found)\n", cudaGetErrorName(e), n);
        return 77;
    }
    CHECK_CUDA(e);
    if (o.dev[0] < 0 || o.dev[1] < 0 || o.dev[0] >= n || o.dev[1] >= n)
        usage();
    for (int i = 0; i < o.nsizes; i++)
        max = o.sizes[i] > max ? o.sizes[i] : max;
    if (o.passthrough_only)
        max = PT_BYTES;
    CHECK_CUDA(cudaDeviceCanAccessPeer(&can[0], o.dev[0], o.dev[1]));
    CHECK_CUDA(cudaDeviceCanAccessPeer(&can[1], o.dev[1], o.dev[0]));
    for (int i = 0; i < 2; i++) {
        CHECK_CUDA(cudaSetDevice(o.dev[i]));
        CHECK_CUDA(cudaMalloc(&buf[i], max));
        CHECK_CUDA(cudaStreamCreateWithFlags(&stream[i], cudaStreamNonBlocking));
        CHECK_CUDA(cudaEventCreate(&ev_start[i]));
        CHECK_CUDA(cudaEventCreate(&ev_stop[i]));
        if (o.enable_peer)
            CHECK_CUDA(cudaDeviceEnablePeerAccess(o.dev[1 - i], 0));
    }
    printf("p2pbench: cudart=%s label=%s enable_peer=%d LD_PRELOAD=%s pair=%d,%d "
           "can_access_peer=%d,%d\n",
           P2PSHIM_CUDART, o.label, o.enable_peer, getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "",
           o.dev[0], o.dev[1], can[0], can[1]);
    /* Pass-through cost before any cross-GPU copy: the shim's own cost on a
     * call it leaves alone, with the driver in the same state as without
     * it. Measured again at the end, when the shim has enabled peer access
     * (the driver's own calls may cost more then: that is reported, not
     * blamed on the shim's hot path). */
    passthrough(&o, pt[0]);
    results = (struct result *)calloc(2 * API_COUNT * o.nsizes, sizeof *results);
    if (results == NULL)
        return 1;
    printf("%-20s %-5s %10s %10s %10s %12s %8s\n", "api", "dir", "bytes", "GB/s", "us/copy",
           "host-us/copy", "iters");
    for (int dir = 0; dir < 2 && !o.passthrough_only; dir++) {
        int si = dir, di = 1 - dir;
        if (!(o.dirs & (1 << dir)))
            continue;
        for (int i = 0; i < 2; i++) {   /* the source holds its own pattern */
            CHECK_CUDA(cudaSetDevice(o.dev[i]));
            CHECK_CUDA(p2pk_fill(buf[i], max, 11 + i, cudaStreamLegacy));
        }
        for (int api = 0; api < API_COUNT; api++)
            for (int k = 0; k < o.nsizes; k++) {
                struct result *r = &results[nresults++];
                measure(api, si, di, o.sizes[k], &o, r);
                bad += !r->verified;
                printf("%-20s %d->%d %10zu %10.2f %10.3f %12.3f %8d%s\n", api_name[api], r->src,
                       r->dst, r->bytes, median(r->gbps, o.reps), median(r->us, o.reps),
                       median(r->host_us, o.reps), r->iters, r->verified ? "" : "  WRONG BYTES");
            }
    }
    if (!o.passthrough_only)
        passthrough(&o, pt[1]);
    for (int ph = 0; ph < (o.passthrough_only ? 1 : 2); ph++)
        printf("pass-through host ns/call %s cross-GPU copies (median of %d x %d): "
               "d2d=%.1f h2d=%.1f ref_memset=%.1f ref_launch=%.1f\n", ph ? "after" : "before",
               o.pt_batches, o.pt_calls, median(pt[ph][PT_D2D], o.pt_batches),
               median(pt[ph][PT_H2D], o.pt_batches), median(pt[ph][PT_MEMSET], o.pt_batches),
               median(pt[ph][PT_LAUNCH], o.pt_batches));
    if (o.json)
        write_json(&o, can, pt);
    if (bad)
        fprintf(stderr, "p2pbench: %d measurement(s) left wrong bytes\n", bad);
    return bad ? 1 : 0;
}
