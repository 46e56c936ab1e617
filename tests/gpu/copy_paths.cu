/* copy_paths: every cross-GPU copy API, both directions, raced against
 * pending work, checked byte for byte and by the path CUPTI saw.
 *
 *   copy_paths --expect peer|staged [--enable-peer] [--order auto|explicit]
 *              [--busy-us N] [--mib N]
 *
 * The program never enables peer access unless --enable-peer (the control:
 * the program's own peer access, no shim). Each case:
 *   1. the source holds an OLD pattern, the destination 0x5A (settled);
 *   2. on the destination device: a busy kernel, then cudaMemsetAsync(0xA5)
 *      of the whole destination, pending;
 *   3. on the source device: a busy kernel that then writes the NEW pattern
 *      into the source, pending;
 *   4. the copy, issued on the source or the destination device while all
 *      of that is still pending;
 *   5. a verification kernel on the destination device, every byte,
 *      including the pitch padding of 2D/3D copies (must stay 0xA5).
 * A copy that runs early copies the old pattern or is overwritten by the
 * memset; a copy that runs on the wrong stream races the verification.
 *
 * Ordering that CUDA promises, nothing more: work on the issuing device's
 * default stream is ordered by the stream. Work on the other device is
 * ordered by events (--order explicit), except for synchronous copies on the
 * legacy default stream, where CUDA orders a copy between two devices after
 * all work previously issued to either and before all work issued after it
 * (CUDA Programming Guide, peer-to-peer memory copy); --order auto relies on
 * that there, as real programs do. In per-thread builds, cudaMemcpyPeer and
 * cudaMemcpyPeerAsync have no per-thread variant and run on the legacy
 * stream, which orders itself against the per-thread stream: one program
 * then mixes both entry-point flavours, as real ones do.
 *
 * With one GPU the same cases run within device 0 (two buffers of it: the
 * shim must leave same-device copies as they are, in their order), every
 * one expected on the device path (DTOD records only), and the transcript
 * says that the cross-GPU part was skipped.
 *
 * Exit: 0 all cases passed, 1 a failure, 77 without a GPU (or, with two
 * GPUs and --expect peer, a pair that cannot peer). */
#include "cupti_paths.h"
#include "gpu_test.h"
#include "pattern.cuh"

#include <string.h>

#define PAD_BYTE 0xA5
#define PRE_BYTE 0x5A

enum api { API_MEMCPY, API_MEMCPY_ASYNC, API_PEER, API_PEER_ASYNC, API_2D, API_3D_PEER, API_COUNT };
static const char *const api_name[API_COUNT] = {
    "cudaMemcpy", "cudaMemcpyAsync", "cudaMemcpyPeer", "cudaMemcpyPeerAsync",
    "cudaMemcpy2D", "cudaMemcpy3DPeer",
};
/* Copies that return only when issued work is synchronous by contract. */
static const int api_sync[API_COUNT] = {1, 0, 1, 0, 1, 1};

/* One device's buffers: linear, 2D-pitched, 3D-pitched (rows = h * depth). */
struct bufs {
    void *lin;
    void *p2;
    size_t pitch2;
    void *p3;
    size_t pitch3;
};

struct opts {
    int expect_peer;
    int enable_peer;
    int explicit_order;
    unsigned busy_us;
    size_t lin_bytes;
};

/* Shapes: widths that leave padding in every pitched row. */
static const size_t W2 = 4000, H2 = 8192;
static const size_t W3 = 3000, H3 = 128, D3 = 64;

/* The devices of the two roles a case copies between (copy i of a case
 * goes from role s to role d): 0 and 1, or 0 and 0 with one GPU. */
static int dev_id[2] = {0, 1};
#define DEV(role) dev_id[role]

static struct bufs buf[2];
static cudaEvent_t ev_ready[2];   /* pending work of a device is done */
static cudaEvent_t ev_copied[2]; /* the copy is done (per issuing device) */

/* The region a case copies: base, allocation layout and payload. */
struct region {
    void *base;
    size_t pitch, width, rows;
};

static struct region region_of(int api, int dev, const struct opts *o)
{
    struct region r;
    if (api == API_2D) {
        r.base = buf[dev].p2; r.pitch = buf[dev].pitch2; r.width = W2; r.rows = H2;
    } else if (api == API_3D_PEER) {
        r.base = buf[dev].p3; r.pitch = buf[dev].pitch3; r.width = W3; r.rows = H3 * D3;
    } else {
        r.base = buf[dev].lin; r.pitch = r.width = o->lin_bytes; r.rows = 1;
    }
    return r;
}

static void alloc_device(int dev, const struct opts *o)
{
    GT_CHECK(cudaSetDevice(DEV(dev)));
    GT_CHECK(cudaMalloc(&buf[dev].lin, o->lin_bytes));
    GT_CHECK(cudaMallocPitch(&buf[dev].p2, &buf[dev].pitch2, W2, H2));
    GT_CHECK(cudaMallocPitch(&buf[dev].p3, &buf[dev].pitch3, W3, H3 * D3));
    /* Events belong to a device: each device records its own. */
    GT_CHECK(cudaEventCreateWithFlags(&ev_ready[dev], cudaEventDisableTiming));
    GT_CHECK(cudaEventCreateWithFlags(&ev_copied[dev], cudaEventDisableTiming));
}

/* Issues the copy on the current device's default stream. */
static cudaError_t issue_copy(int api, const struct region *dst, int d,
                              const struct region *src, int s)
{
    switch (api) {
    case API_MEMCPY:
        return cudaMemcpy(dst->base, src->base, src->width, cudaMemcpyDefault);
    case API_MEMCPY_ASYNC:
        return cudaMemcpyAsync(dst->base, src->base, src->width, cudaMemcpyDefault, 0);
    case API_PEER:
        return cudaMemcpyPeer(dst->base, DEV(d), src->base, DEV(s), src->width);
    case API_PEER_ASYNC:
        return cudaMemcpyPeerAsync(dst->base, DEV(d), src->base, DEV(s), src->width, 0);
    case API_2D:
        return cudaMemcpy2D(dst->base, dst->pitch, src->base, src->pitch, W2, H2,
                            cudaMemcpyDefault);
    case API_3D_PEER: {
        cudaMemcpy3DPeerParms p;
        memset(&p, 0, sizeof p);
        p.srcPtr = make_cudaPitchedPtr(src->base, src->pitch, W3, H3);
        p.srcDevice = DEV(s);
        p.dstPtr = make_cudaPitchedPtr(dst->base, dst->pitch, W3, H3);
        p.dstDevice = DEV(d);
        p.extent = make_cudaExtent(W3, H3, D3);
        return cudaMemcpy3DPeer(&p);
    }
    }
    return cudaErrorInvalidValue;
}

/* Runs one case; returns 1 when it passed. */
static int run_case(int api, int s, int d, int issue, uint32_t seed, const struct opts *o)
{
    struct region src = region_of(api, s, o), dst = region_of(api, d, o);
    size_t src_total = src.pitch * src.rows, dst_total = dst.pitch * dst.rows;
    int other = issue == s ? d : s;
    int implicit = !o->explicit_order && api_sync[api] &&
                   strcmp(GT_STREAM_MODE, "legacy") == 0;
    struct cupti_paths_counts c;
    p2pk_verify_result v;
    char err[256], counts[160];
    cudaError_t rc;
    int path_ok, ok, same = DEV(s) == DEV(d);

    /* 1. Settled starting state. */
    GT_CHECK(cudaSetDevice(DEV(s)));
    GT_CHECK(p2pk_fill(src.base, src_total, seed ^ 0x0BADF00Du, GT_STREAM));
    GT_CHECK(cudaSetDevice(DEV(d)));
    GT_CHECK(cudaMemset(dst.base, PRE_BYTE, dst_total));
    gt_sync_devices(DEV(s), DEV(d), DEV(issue));
    if (cupti_paths_begin(err, sizeof err) != 0) {
        printf("FAIL %s %d->%d: CUPTI: %s\n", api_name[api], DEV(s), DEV(d), err);
        return 0;
    }

    /* 2, 3. Pending work on both devices, on their default streams. */
    GT_CHECK(cudaSetDevice(DEV(d)));
    GT_CHECK(p2pk_busy(o->busy_us, NULL, 0, 0, GT_STREAM));
    GT_CHECK(cudaMemsetAsync(dst.base, PAD_BYTE, dst_total, 0));
    GT_CHECK(cudaEventRecord(ev_ready[d], 0));
    GT_CHECK(cudaSetDevice(DEV(s)));
    GT_CHECK(p2pk_busy(o->busy_us, src.base, src_total, seed, GT_STREAM));
    GT_CHECK(cudaEventRecord(ev_ready[s], 0));

    /* 4. The copy. */
    GT_CHECK(cudaSetDevice(DEV(issue)));
    if (!implicit)
        GT_CHECK(cudaStreamWaitEvent(0, ev_ready[other], 0));
    rc = issue_copy(api, &dst, d, &src, s);
    if (rc != cudaSuccess) {
        printf("FAIL %s %d->%d issue=%d: the copy returned %s (%d)\n", api_name[api], DEV(s),
               DEV(d), DEV(issue), cudaGetErrorName(rc), (int)rc);
        return 0;
    }
    GT_CHECK(cudaEventRecord(ev_copied[issue], 0));

    /* 5. Verification on the destination, ordered after the copy. */
    GT_CHECK(cudaSetDevice(DEV(d)));
    if (!implicit && issue != d)
        GT_CHECK(cudaStreamWaitEvent(0, ev_copied[issue], 0));
    GT_CHECK(p2pk_verify_2d_async(dst.base, dst.pitch, src.width, dst.rows, src.pitch,
                                  seed, dst.rows > 1 ? PAD_BYTE : -1, GT_STREAM));
    gt_sync_devices(DEV(s), DEV(d), DEV(issue));
    if (cupti_paths_end(&c, err, sizeof err) != 0) {
        printf("FAIL %s %d->%d: CUPTI: %s\n", api_name[api], DEV(s), DEV(d), err);
        return 0;
    }
    /* The result's read-back is a copy itself: after the window. */
    GT_CHECK(cudaSetDevice(DEV(d)));
    GT_CHECK(p2pk_verify_read_sync(&v, GT_STREAM));

    cupti_paths_format(&c, counts, sizeof counts);
    const char *path = same ? "device" : o->expect_peer ? "peer" : "staged";
    if (same)
        path_ok = c.dtod >= 1 && c.ptop == 0 && c.dtoh == 0 && c.htod == 0;
    else if (o->expect_peer)
        path_ok = c.ptop >= 1 && c.dtoh == 0 && c.htod == 0;
    else
        path_ok = c.ptop == 0 && c.dtoh >= 1 && c.htod >= 1;
    ok = path_ok && v.mismatches == 0;
    printf("%s %-19s %d->%d issue=%d order=%-8s bytes=%zu mismatches=%llu %s path=%s\n",
           ok ? "PASS" : "FAIL", api_name[api], DEV(s), DEV(d), DEV(issue),
           implicit ? "implicit" : "events", src.width * src.rows, v.mismatches, counts,
           path_ok ? path : "WRONG");
    if (v.mismatches != 0)
        printf("     first bad byte at destination offset %llu (row %llu col %llu): "
               "got 0x%02x expected 0x%02x%s\n",
               v.first_bad, v.first_bad / dst.pitch, v.first_bad % dst.pitch, v.got,
               v.expected,
               v.got == PAD_BYTE ? " (the pending memset's byte: copy ran before it?)" : "");
    if (!path_ok)
        printf("     expected %s: %s\n", path,
               same              ? "dtod>=1 and no ptop/dtoh/htod records"
               : o->expect_peer ? "ptop>=1 and no dtoh/htod records"
                                : "dtoh>=1 and htod>=1 and no ptop records");
    return ok;
}

static void usage(void)
{
    fprintf(stderr, "usage: copy_paths --expect peer|staged [--enable-peer] "
                    "[--order auto|explicit] [--busy-us N] [--mib N]\n");
    exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
    int have_expect = 0;
    memset(o, 0, sizeof *o);
    o->busy_us = 20000;   /* well above the shim's first enable (~2.4 ms) */
    o->lin_bytes = 32u << 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--expect") == 0 && v) {
            if (strcmp(v, "peer") == 0)
                o->expect_peer = 1;
            else if (strcmp(v, "staged") != 0)
                usage();
            have_expect = 1;
            i++;
        } else if (strcmp(a, "--enable-peer") == 0) {
            o->enable_peer = 1;
        } else if (strcmp(a, "--order") == 0 && v) {
            if (strcmp(v, "explicit") == 0)
                o->explicit_order = 1;
            else if (strcmp(v, "auto") != 0)
                usage();
            i++;
        } else if (strcmp(a, "--busy-us") == 0 && v) {
            o->busy_us = (unsigned)strtoul(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--mib") == 0 && v) {
            o->lin_bytes = (size_t)strtoul(v, NULL, 10) << 20;
            if (o->lin_bytes == 0)
                usage();
            i++;
        } else {
            usage();
        }
    }
    if (!have_expect)
        usage();
}

/* CUPTI must see a plain host-to-device copy, or its counts mean nothing. */
static int cupti_self_check(void)
{
    struct cupti_paths_counts c;
    char err[256];
    void *host;
    GT_CHECK(cudaSetDevice(0));
    GT_CHECK(cudaMallocHost(&host, 4096));
    memset(host, 1, 4096);
    if (cupti_paths_begin(err, sizeof err) != 0) {
        printf("FAIL CUPTI self-check: %s\n", err);
        return 0;
    }
    GT_CHECK(cudaMemcpy(buf[0].lin, host, 4096, cudaMemcpyHostToDevice));
    GT_CHECK(cudaDeviceSynchronize());
    if (cupti_paths_end(&c, err, sizeof err) != 0) {
        printf("FAIL CUPTI self-check: %s\n", err);
        return 0;
    }
    GT_CHECK(cudaFreeHost(host));
    if (c.htod != 1 || c.records != 1) {
        printf("FAIL CUPTI self-check: one HTOD copy gave records=%lu htod=%lu\n", c.records,
               c.htod);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    struct opts o;
    char err[256];
    int can01 = 0, can10 = 0, passed = 0, total = 0;
    uint32_t seed = 1000;
    cudaError_t rc;

    parse(argc, argv, &o);
    setvbuf(stdout, NULL, _IOLBF, 0);
    int ndev = gt_require_gpus("copy_paths", 1);
    if (ndev >= 2) {
        GT_CHECK(cudaDeviceCanAccessPeer(&can01, 0, 1));
        GT_CHECK(cudaDeviceCanAccessPeer(&can10, 1, 0));
    }
    printf("copy_paths: cudart=%s stream=%s expect=%s%s can_access_peer 0->1=%d 1->0=%d\n",
           P2PSHIM_CUDART, GT_STREAM_MODE, o.expect_peer ? "peer" : "staged",
           o.enable_peer ? " (program enables peer access)" : "", can01, can10);
    dev_id[1] = gt_peer_device("copy_paths", ndev, "copying between GPU 0 and GPU 1");
    if (ndev >= 2 && o.expect_peer && !(can01 && can10)) {
        printf("copy_paths: SKIP: GPUs 0 and 1 cannot peer both ways\n");
        return GT_SKIP;
    }
    if (cupti_paths_init(err, sizeof err) != 0) {
        printf("FAIL copy_paths: CUPTI cannot subscribe: %s\n", err);
        return 1;
    }
    alloc_device(0, &o);
    alloc_device(1, &o);
    if (o.enable_peer && ndev < 2)
        printf("copy_paths: --enable-peer: no second GPU to enable peer access to\n");
    if (o.enable_peer && ndev >= 2) {
        GT_CHECK(cudaSetDevice(0));
        GT_CHECK(cudaDeviceEnablePeerAccess(1, 0));
        GT_CHECK(cudaSetDevice(1));
        GT_CHECK(cudaDeviceEnablePeerAccess(0, 0));
    }
    if (!cupti_self_check())
        return 1;

    for (int api = 0; api < API_COUNT; api++)
        for (int dir = 0; dir < 2; dir++)
            for (int on_dst = 0; on_dst < 2; on_dst++) {
                int s = dir, d = 1 - dir;
                total++;
                passed += run_case(api, s, d, on_dst ? d : s, seed++, &o);
            }

    /* The program's view of peer access is its own: it never enabled 0->1
     * (unless --enable-peer), whatever the shim did underneath. */
    if (ndev >= 2) {
        GT_CHECK(cudaSetDevice(0));
        rc = cudaDeviceDisablePeerAccess(1);
        (void)cudaGetLastError();
        cudaError_t want = o.enable_peer ? cudaSuccess : cudaErrorPeerAccessNotEnabled;
        total++;
        if (rc == want)
            passed++;
        printf("%s cudaDeviceDisablePeerAccess(1) on device 0 returned %s (want %s)\n",
               rc == want ? "PASS" : "FAIL", cudaGetErrorName(rc), cudaGetErrorName(want));
    }
    cupti_paths_shutdown();
    printf("copy_paths: %d/%d passed (cudart=%s stream=%s expect=%s)\n", passed, total,
           P2PSHIM_CUDART, GT_STREAM_MODE, o.expect_peer ? "peer" : "staged");
    return passed == total ? 0 : 1;
}
