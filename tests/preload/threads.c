/* Item 7: eight threads at once, over four devices (STANDIN_DEVICES=4).
 *
 * Each thread allocates, fills, copies across GPUs through several APIs
 * (legacy and per-thread, sync and async), checks every byte, and frees,
 * over and over, on device pairs that overlap with other threads'. With
 * the shim: no copy staged, and each direction enabled at most once, with
 * no failed or duplicate enable. Without: all staged.
 * Labelled "threads": CI runs it under ThreadSanitizer. */
#include <pthread.h>
#include <stdio.h>

#include "pl_common.h"

#define THREADS 8
#define ITERS 24
#define N ((size_t)16 << 10)

static struct pl_env env;
static int shim;

static CUresult copy_with(int api, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                          CUcontext sctx)
{
    CUresult r;
    switch (api) {
    case 0: return cuMemcpyPeer(dst, dctx, src, sctx, N);
    case 1: return cuMemcpy(dst, src, N);
    case 2: return cuMemcpyDtoD_v2_ptds(dst, src, N);
    case 3:
        r = cuMemcpyAsync_ptsz(dst, src, N, NULL);
        return r ? r : cuStreamSynchronize_ptsz(NULL);
    case 4:
        r = cuMemcpyPeerAsync(dst, dctx, src, sctx, N, NULL);
        return r ? r : cuStreamSynchronize(NULL);
    default: return cuMemcpy_ptds(dst, src, N);
    }
}

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    for (int it = 0; it < ITERS; it++) {
        int from = (t + it) % env.ndev;
        int to = (from + 1 + (t + it / 3) % (env.ndev - 1)) % env.ndev;
        unsigned seed = (unsigned)(t * 1000 + it);
        CUcontext cs = env.ctx[from], cd = env.ctx[to];
        pl_use(cs);
        CUdeviceptr src = pl_alloc(cs, N), dst = pl_alloc(cd, N);
        /* a short-lived neighbour, to churn the ownership table */
        CUdeviceptr spare = pl_alloc(cd, N / 2);
        pl_fill(cs, src, N, seed);
        pl_set(cd, dst, N, 0);
        pl_free(cd, spare);
        pl_use(it % 2 ? cd : cs);   /* issue from either end */
        char label[64];
        snprintf(label, sizeof label, "thread %d iter %d api %d %d->%d", t, it, (t + it) % 6,
                 from, to);
        PL_OK(copy_with((t + it) % 6, dst, cd, src, cs));
        pl_verify(cd, dst, N, seed, label);
        pl_free(cs, src);
        pl_free(cd, dst);
    }
    pl_use(NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    shim = pl_want_shim(argc, argv);
    if (pl_init(&env) < 4) {
        fprintf(stderr, "threads: needs STANDIN_DEVICES=4\n");
        return 1;
    }
    pl_use(NULL);
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)t) != 0)
            return 1;
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);

    struct standin_stats s;
    pl_stats(&s);
    uint64_t cross = s.peer_copies + s.staged_copies;
    PL_EXPECT(cross == THREADS * ITERS, "%llu cross-GPU copies counted, expected %d",
              (unsigned long long)cross, THREADS * ITERS);
    if (shim) {
        PL_EXPECT(s.staged_copies == 0, "%llu copies staged under the shim",
                  (unsigned long long)s.staged_copies);
        PL_EXPECT(s.peer_enable_calls == s.peer_enable_ok,
                  "%llu enable calls, %llu succeeded: the shim enabled a link twice",
                  (unsigned long long)s.peer_enable_calls, (unsigned long long)s.peer_enable_ok);
        /* Each direction is enabled at most once, however many threads
         * race to it. */
        int directions = 0;
        for (int a = 0; a < env.ndev; a++)
            for (int b = 0; b < env.ndev; b++)
                directions += a != b && standin_peer_enabled(env.ctx[a], env.ctx[b]);
        PL_EXPECT(s.peer_enable_ok == (uint64_t)directions,
                  "%llu enables for %d enabled directions", (unsigned long long)s.peer_enable_ok,
                  directions);
    } else {
        PL_EXPECT(s.peer_copies == 0 && s.peer_enable_calls == 0,
                  "peer copies or enables without the shim");
    }
    printf("threads (%s): %llu cross copies, %llu peer, %llu enables\n",
           shim ? "shim" : "noshim", (unsigned long long)cross,
           (unsigned long long)s.peer_copies, (unsigned long long)s.peer_enable_ok);
    return pl_finish("threads");
}
