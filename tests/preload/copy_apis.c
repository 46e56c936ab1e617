/* Item 1: cross-GPU copies through every hooked copy API, each exact
 * variant, both directions, every byte checked.
 *
 *   copy_apis shim     with the shim: every cross-GPU copy is counted peer
 *                      by the stand-in, none staged; each API makes the
 *                      shim enable its direction itself (fresh contexts for
 *                      every API and direction, so no earlier copy did it)
 *   copy_apis noshim   the same program without the shim: all staged, no
 *                      enable call
 * In both runs host<->device and same-device copies pass through and are
 * counted as such, and never cause an enable. */
#include <stdio.h>
#include <string.h>

#include "pl_copies.h"

#define N ((size_t)64 << 10)

static int shim;

static void cross_copy(const struct pl_copy_api *api, int from, int to, unsigned seed)
{
    char label[128];
    snprintf(label, sizeof label, "%s %d->%d", api->name, from, to);
    CUcontext cs = pl_fresh_ctx(from), cd = pl_fresh_ctx(to);
    CUdeviceptr src = pl_alloc(cs, N), dst = pl_alloc(cd, N);
    pl_fill(cs, src, N, seed);
    pl_set(cd, dst, N, 0);

    struct pl_xfer x = {dst, src, cd, cs, N};
    struct standin_stats a, b;
    CUstream stream = NULL;
    pl_use(cs);
    if (api->user_stream)
        PL_OK(cuStreamCreate(&stream, 0));
    uint64_t calls = standin_calls(api->name);
    pl_stats(&a);
    CUresult r = api->issue(api, &x, stream);
    pl_stats(&b);
    if (r == PL_NOT_SUPPORTED) {
        PL_EXPECT(api->optional, "%s: not exported by the driver", label);
        printf("skip %s: the stand-in does not export it\n", label);
    } else if (r != CUDA_SUCCESS) {
        pl_fail(__FILE__, __LINE__, "%s returned %d", label, (int)r);
    } else {
        if (api->async)
            pl_copy_sync(api, stream);
        PL_EXPECT(standin_calls(api->name) == calls + 1,
                  "%s: the stand-in's %s was called %llu times, expected once", label,
                  api->name, (unsigned long long)(standin_calls(api->name) - calls));
        uint64_t peer = b.peer_copies - a.peer_copies;
        uint64_t staged = b.staged_copies - a.staged_copies;
        uint64_t enables = b.peer_enable_calls - a.peer_enable_calls;
        uint64_t ok = b.peer_enable_ok - a.peer_enable_ok;
        if (shim) {
            PL_EXPECT(peer == (uint64_t)api->elements && staged == 0,
                      "%s: %llu peer, %llu staged; expected %d peer", label,
                      (unsigned long long)peer, (unsigned long long)staged, api->elements);
            PL_EXPECT(enables == 1 && ok == 1,
                      "%s: %llu enable calls (%llu ok); expected this copy to enable once",
                      label, (unsigned long long)enables, (unsigned long long)ok);
            PL_EXPECT(standin_peer_enabled(cs, cd) == 1 && standin_peer_enabled(cd, cs) == 0,
                      "%s: driver peer state src->dst %d, dst->src %d; expected the "
                      "issuing (source) side enabled",
                      label, standin_peer_enabled(cs, cd), standin_peer_enabled(cd, cs));
        } else {
            PL_EXPECT(staged == (uint64_t)api->elements && peer == 0,
                      "%s: %llu staged, %llu peer; expected %d staged", label,
                      (unsigned long long)staged, (unsigned long long)peer, api->elements);
            PL_EXPECT(enables == 0, "%s: %llu enable calls without the shim", label,
                      (unsigned long long)enables);
        }
        pl_verify(cd, dst, N, seed, label);
        pl_verify(cs, src, N, seed, label); /* the source is left alone */
    }
    if (stream)
        PL_OK(cuStreamDestroy_v2(stream));
    pl_free(cs, src);
    pl_free(cd, dst);
    pl_use(NULL);
    PL_OK(cuCtxDestroy_v2(cs));
    PL_OK(cuCtxDestroy_v2(cd));
}

/* A copy that is not cross-GPU: counted in class `field` (an offset into
 * standin_stats), no peer and no staged copy, no enable call. */
#define COUNTER(s, off) (*(const uint64_t *)((const char *)(s) + (off)))

static void expect_local(const char *label, const struct standin_stats *a,
                         const struct standin_stats *b, size_t off, uint64_t want)
{
    uint64_t got = COUNTER(b, off) - COUNTER(a, off);
    PL_EXPECT(got == want, "%s: counted %llu times in its class, expected %llu", label,
              (unsigned long long)got, (unsigned long long)want);
    PL_EXPECT(b->peer_copies == a->peer_copies && b->staged_copies == a->staged_copies,
              "%s: counted as a cross-GPU copy", label);
    PL_EXPECT(b->peer_enable_calls == a->peer_enable_calls, "%s: caused an enable call", label);
}

/* device -> host, every variant: each counted once as a D2H, and the
 * host gets the device's bytes */
static void device_to_host_variants(CUdeviceptr d1, const unsigned char *host,
                                    unsigned char *back)
{
    struct standin_stats a, b;
    size_t d2h = offsetof(struct standin_stats, d2h_copies);
    const char *names[4] = {"DtoH", "DtoH_ptds", "DtoHAsync", "DtoHAsync_ptsz"};
    for (int v = 0; v < 4; v++) {
        memset(back, 0, N);
        pl_stats(&a);
        if (v == 0)
            PL_OK(cuMemcpyDtoH_v2(back, d1, N));
        else if (v == 1)
            PL_OK(cuMemcpyDtoH_v2_ptds(back, d1, N));
        else if (v == 2)
            PL_OK(cuMemcpyDtoHAsync_v2(back, d1, N, NULL)), PL_OK(cuStreamSynchronize(NULL));
        else
            PL_OK(cuMemcpyDtoHAsync_v2_ptsz(back, d1, N, NULL)),
                PL_OK(cuStreamSynchronize_ptsz(NULL));
        pl_stats(&b);
        expect_local(names[v], &a, &b, d2h, 1);
        PL_EXPECT(memcmp(back, host, N) == 0, "%s: wrong bytes", names[v]);
    }
}

static void local_copies(void)
{
    CUcontext c0 = pl_fresh_ctx(0), c1 = pl_fresh_ctx(1);
    CUdeviceptr d0 = pl_alloc(c0, N), e0 = pl_alloc(c0, N), d1 = pl_alloc(c1, N);
    unsigned char *host = NULL, *back = NULL;
    struct standin_stats a, b;
    size_t h2d = offsetof(struct standin_stats, h2d_copies);
    size_t same = offsetof(struct standin_stats, same_device_copies);

    pl_use(c0);
    PL_OK(cuMemAllocHost_v2((void **)&host, N));
    PL_OK(cuMemAllocHost_v2((void **)&back, N));
    if (host == NULL || back == NULL)
        return;
    for (size_t i = 0; i < N; i++)
        host[i] = pl_pattern(7, i);

    /* host -> device, every variant */
    pl_stats(&a);
    PL_OK(cuMemcpyHtoD_v2(d0, host, N));
    PL_OK(cuMemcpyHtoD_v2_ptds(d1, host, N));
    PL_OK(cuMemcpyHtoDAsync_v2(e0, host, N, NULL));
    PL_OK(cuStreamSynchronize(NULL));
    pl_stats(&b);
    expect_local("HtoD", &a, &b, h2d, 3);
    PL_EXPECT(standin_calls("cuMemcpyHtoD_v2_ptds") >= 1, "cuMemcpyHtoD_v2_ptds not reached");
    pl_verify(c0, d0, N, 7, "HtoD");
    pl_verify(c1, d1, N, 7, "HtoD_ptds");
    pl_verify(c0, e0, N, 7, "HtoDAsync");

    pl_stats(&a);
    PL_OK(cuMemcpyHtoDAsync_v2_ptsz(d0, host, N, NULL));
    PL_OK(cuStreamSynchronize_ptsz(NULL));
    pl_stats(&b);
    expect_local("HtoDAsync_ptsz", &a, &b, h2d, 1);

    device_to_host_variants(d1, host, back);

    /* unified addressing with a pinned host pointer */
    pl_set(c1, d1, N, 0);
    pl_stats(&a);
    PL_OK(cuMemcpy(d1, (CUdeviceptr)host, N));
    pl_stats(&b);
    expect_local("cuMemcpy host->dev1", &a, &b, h2d, 1);
    pl_verify(c1, d1, N, 7, "cuMemcpy host->dev1");

    /* same device, through the cross-capable APIs */
    pl_fill(c0, d0, N, 11);
    pl_stats(&a);
    PL_OK(cuMemcpy(e0, d0, N));
    PL_OK(cuMemcpyDtoD_v2(e0, d0, N));
    PL_OK(cuMemcpyPeer(e0, c0, d0, c0, N));
    PL_OK(cuMemcpyAsync_ptsz(e0, d0, N, NULL));
    PL_OK(cuStreamSynchronize_ptsz(NULL));
    pl_stats(&b);
    expect_local("same device", &a, &b, same, 4);
    pl_verify(c0, e0, N, 11, "same device");
    PL_EXPECT(standin_peer_enabled(c0, c1) == 0 && standin_peer_enabled(c1, c0) == 0,
              "a local copy enabled peer access");

    PL_OK(cuMemFreeHost(host));
    PL_OK(cuMemFreeHost(back));
    pl_free(c0, d0);
    pl_free(c0, e0);
    pl_free(c1, d1);
    pl_use(NULL);
    PL_OK(cuCtxDestroy_v2(c0));
    PL_OK(cuCtxDestroy_v2(c1));
}

int main(int argc, char **argv)
{
    struct pl_env env;
    shim = pl_want_shim(argc, argv);
    if (pl_init(&env) < 2) {
        fprintf(stderr, "copy_apis: needs 2 devices\n");
        return 1;
    }
    unsigned seed = 100;
    int done = 0;
    for (int i = 0; i < pl_copy_api_count; i++) {
        cross_copy(&pl_copy_apis[i], 0, 1, seed++);
        cross_copy(&pl_copy_apis[i], 1, 0, seed++);
        done++;
    }
    local_copies();

    struct standin_stats s;
    pl_stats(&s);
    if (shim)
        PL_EXPECT(s.staged_copies == 0, "%llu copies staged under the shim",
                  (unsigned long long)s.staged_copies);
    else
        PL_EXPECT(s.peer_copies == 0 && s.peer_enable_calls == 0,
                  "%llu peer copies, %llu enable calls without the shim",
                  (unsigned long long)s.peer_copies, (unsigned long long)s.peer_enable_calls);
    printf("copy_apis (%s): %d APIs, peer %llu, staged %llu\n", shim ? "shim" : "noshim", done,
           (unsigned long long)s.peer_copies, (unsigned long long)s.staged_copies);
    return pl_finish("copy_apis");
}
