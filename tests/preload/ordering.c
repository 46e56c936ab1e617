/* Item 6: ordering against pending work.
 *
 * For every copy API (each exact variant): memsets queued and not yet run
 * on the source (first half) and on the destination (all of it), on the
 * stream kind the API must order after, then the cross-GPU copy, then the
 * bytes. The stand-in runs queued work only when something must wait for
 * it, so a copy that runs on the wrong stream, or before the work it must
 * follow, leaves wrong bytes: the destination memset after the copy, or
 * the source's old bytes.
 *
 *   sync legacy:    pending on the legacy streams; on blocking user streams
 *   sync per-thread: pending on the per-thread streams
 *   async:          the source's work on the copy's own stream (or, for a
 *                   blocking user stream, on the legacy stream it waits
 *                   for); the destination's in the other context, ordered
 *                   by an event, as a correct program does
 * Fresh contexts each time: the shim enables peer access right there, in
 * front of the pending work. Run with and without the shim. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_copies.h"

#define N ((size_t)64 << 10)
#define VS 0x5C
#define VD 0xD3

static int shim;

enum kind { K_LEGACY, K_BLOCKING, K_PER_THREAD };
static const char *const kind_name[] = {"legacy", "blocking", "per-thread"};

static CUresult memset_on(enum kind k, CUdeviceptr p, unsigned char v, size_t n, CUstream s)
{
    return k == K_PER_THREAD ? cuMemsetD8Async_ptsz(p, v, n, s) : cuMemsetD8Async(p, v, n, s);
}

/* The destination after the copy: the source's memset in the first half,
 * the source's own pattern after it (read back in the destination's
 * context once its pending work ran). */
static void expect_ordered_bytes(const char *label, CUcontext cd, CUdeviceptr dst,
                                 unsigned seed)
{
    unsigned char *h = malloc(N);
    if (!h)
        abort();
    memset(h, 0, N);
    CUcontext popped;
    PL_OK(cuCtxPushCurrent_v2(cd));
    PL_OK(cuCtxSynchronize());
    PL_OK(cuMemcpyDtoH_v2(h, dst, N));
    PL_OK(cuCtxPopCurrent_v2(&popped));
    size_t bad = N;
    for (size_t i = 0; i < N && bad == N; i++) {
        unsigned char want = i < N / 2 ? VS : pl_pattern(seed, i);
        if (h[i] != want)
            bad = i;
    }
    PL_EXPECT(bad == N, "%s: byte %zu is 0x%02x, expected 0x%02x (%s)", label, bad,
              bad < N ? h[bad] : 0,
              bad < N / 2 ? VS : bad < N ? pl_pattern(seed, bad) : 0,
              bad < N && h[bad] == VD ? "the destination's memset ran after the copy"
              : bad < N / 2           ? "the copy ran before the source's memset"
                                      : "wrong bytes");
    free(h);
}

static void run(const struct pl_copy_api *api, enum kind k, int from, int to, unsigned seed)
{
    char label[128];
    snprintf(label, sizeof label, "%s %s %d->%d", api->name, kind_name[k], from, to);
    CUcontext cs = pl_fresh_ctx(from), cd = pl_fresh_ctx(to);
    CUdeviceptr src = pl_alloc(cs, N), dst = pl_alloc(cd, N);
    CUstream ss = NULL, ds = NULL, copy_stream = NULL;
    CUevent ev = NULL;
    pl_fill(cs, src, N, seed);
    pl_set(cd, dst, N, 0);

    /* the destination's pending work, in its own context */
    pl_use(cd);
    if (k == K_BLOCKING)
        PL_OK(cuStreamCreate(&ds, 0));
    PL_OK(memset_on(k, dst, VD, N, ds));
    if (api->async) {
        PL_OK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
        PL_OK(k == K_PER_THREAD ? cuEventRecord_ptsz(ev, ds) : cuEventRecord(ev, ds));
    }
    /* the source's, in the issuing context */
    pl_use(cs);
    if (k == K_BLOCKING)
        PL_OK(cuStreamCreate(&ss, 0));
    if (api->async && k == K_BLOCKING) {
        /* legacy work first; the blocking stream the copy runs on waits */
        PL_OK(memset_on(K_LEGACY, src, VS, N / 2, NULL));
        copy_stream = ss;
    } else {
        PL_OK(memset_on(k, src, VS, N / 2, ss));
        copy_stream = ss;
    }
    if (api->async)
        PL_OK(k == K_PER_THREAD ? cuStreamWaitEvent_ptsz(copy_stream, ev, 0)
                                : cuStreamWaitEvent(copy_stream, ev, 0));
    PL_EXPECT(standin_pending_ops() > 0, "%s: nothing pending before the copy", label);

    struct standin_stats a, b;
    struct pl_xfer x = {dst, src, cd, cs, N};
    pl_stats(&a);
    CUresult r = api->issue(api, &x, copy_stream);
    pl_stats(&b);
    if (r == PL_NOT_SUPPORTED) {
        printf("skip %s\n", label);
    } else if (PL_OK(r)) {
        if (shim)
            PL_EXPECT(b.peer_copies - a.peer_copies == (uint64_t)api->elements &&
                          b.staged_copies == a.staged_copies,
                      "%s: not peer under the shim", label);
        else
            PL_EXPECT(b.peer_copies == a.peer_copies, "%s: peer without the shim", label);
        if (api->async)
            PL_OK(cuCtxSynchronize());
        expect_ordered_bytes(label, cd, dst, seed);
    }
    pl_use(NULL);
    if (ev)
        PL_OK(cuEventDestroy_v2(ev));
    pl_use(cs);
    if (ss)
        PL_OK(cuStreamDestroy_v2(ss));
    pl_use(cd);
    if (ds)
        PL_OK(cuStreamDestroy_v2(ds));
    pl_use(NULL);
    pl_free(cs, src);
    pl_free(cd, dst);
    PL_OK(cuCtxDestroy_v2(cs));
    PL_OK(cuCtxDestroy_v2(cd));
}

int main(int argc, char **argv)
{
    struct pl_env env;
    shim = pl_want_shim(argc, argv);
    if (pl_init(&env) < 2)
        return 1;
    unsigned seed = 500;
    int runs = 0;
    for (int i = 0; i < pl_copy_api_count; i++) {
        const struct pl_copy_api *api = &pl_copy_apis[i];
        for (int dir = 0; dir < 2; dir++) {
            int from = dir, to = 1 - dir;
            if (api->per_thread) {
                run(api, K_PER_THREAD, from, to, seed++);
                runs++;
            } else {
                if (!api->user_stream) {
                    run(api, K_LEGACY, from, to, seed++);
                    runs++;
                }
                run(api, K_BLOCKING, from, to, seed++);
                runs++;
            }
        }
    }
    printf("ordering (%s): %d runs\n", shim ? "shim" : "noshim", runs);
    return pl_finish("ordering");
}
