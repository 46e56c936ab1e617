/* The life of the shim's links (link_life.h), on three devices.
 *
 *   links limit shim|noshim   (STANDIN_MAX_PEERS=1): the shim holds 0->1
 *     with an async copy of its own queued on it; the program enables
 *     0->2 itself and must get CUDA_SUCCESS, as it would without the shim.
 *     Under the shim: 0->1 was given back only after the queued copy ran
 *     (nothing pending when the enable returns), the copy's bytes are
 *     right, and the next 0->1 copy still rides a link (1->0).
 *   links idle shim   (P2PSHIM_LINK_IDLE_MS=40): a link with a copy still
 *     queued is kept past the idle time; once complete and idle it is
 *     disabled at a later copy and enabled again by the next copy that
 *     needs it; a link the program enabled as well is never disabled. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pl_common.h"

#define N ((size_t)64 << 10)

static struct pl_env env;
static CUdeviceptr buf[3], async_src; /* async_src: on device 0 */
static unsigned seed = 7;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A synchronous copy from -> to in the current context; checks the bytes
 * and, when want_peer, that it rode the link. */
static void copy_sync(int from, int to, int want_peer, const char *what)
{
    struct standin_stats a, b;
    pl_fill(env.ctx[from], buf[from], N, ++seed);
    pl_stats(&a);
    PL_OK(cuMemcpyPeer(buf[to], env.ctx[to], buf[from], env.ctx[from], N));
    pl_stats(&b);
    pl_verify(env.ctx[to], buf[to], N, seed, what);
    if (want_peer)
        PL_EXPECT(b.peer_copies - a.peer_copies == 1, "%s: not a peer copy", what);
}

/* An async copy from device 0 to `to` on stream s, left queued. */
static unsigned copy_async(int to, CUstream s)
{
    pl_fill(env.ctx[0], async_src, N, ++seed);
    PL_OK(cuMemcpyPeerAsync(buf[to], env.ctx[to], async_src, env.ctx[0], N, s));
    PL_EXPECT(standin_pending_ops() > 0, "the async copy ran at once");
    return seed;
}

static void limit(int shim)
{
    CUstream s;
    PL_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    copy_sync(0, 1, shim, "first 0->1");
    if (shim)
        PL_EXPECT(standin_peer_enabled(env.ctx[0], env.ctx[1]), "the shim did not enable 0->1");
    unsigned queued = copy_async(1, s);
    PL_RC(cuCtxEnablePeerAccess(env.ctx[2], 0), CUDA_SUCCESS);
    PL_EXPECT(standin_peer_enabled(env.ctx[0], env.ctx[2]), "0->2 not enabled");
    if (shim) {
        PL_EXPECT(!standin_peer_enabled(env.ctx[0], env.ctx[1]), "0->1 not given back");
        PL_EXPECT(standin_pending_ops() == 0, "0->1 given back under a queued copy");
    }
    PL_OK(cuStreamSynchronize(s));
    pl_verify(env.ctx[1], buf[1], N, queued, "queued 0->1");
    copy_sync(0, 1, shim, "0->1 after the program's enable");
    PL_RC(cuCtxEnablePeerAccess(env.ctx[2], 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    PL_RC(cuCtxDisablePeerAccess(env.ctx[2]), CUDA_SUCCESS);
    PL_OK(cuStreamDestroy_v2(s));
}

static void idle(void)
{
    CUstream s;
    PL_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    /* 1->2: the shim's, then the program's too. */
    pl_use(env.ctx[1]);
    copy_sync(1, 2, 1, "1->2");
    PL_RC(cuCtxEnablePeerAccess(env.ctx[2], 0), CUDA_SUCCESS);
    pl_use(env.ctx[0]);
    copy_sync(0, 2, 1, "0->2");
    copy_sync(0, 1, 1, "0->1");
    PL_EXPECT(standin_peer_enabled(env.ctx[0], env.ctx[1]), "the shim did not enable 0->1");

    unsigned queued = copy_async(1, s);
    sleep_ms(120);
    copy_sync(0, 2, 1, "0->2 while 0->1 has a queued copy");
    PL_EXPECT(standin_peer_enabled(env.ctx[0], env.ctx[1]), "0->1 disabled under a queued copy");
    PL_OK(cuStreamSynchronize(s));
    pl_verify(env.ctx[1], buf[1], N, queued, "queued 0->1");

    sleep_ms(120);
    copy_sync(0, 2, 1, "0->2 after the idle time");
    PL_EXPECT(!standin_peer_enabled(env.ctx[0], env.ctx[1]), "idle 0->1 kept");
    PL_EXPECT(standin_peer_enabled(env.ctx[1], env.ctx[2]), "1->2 (the program's) disabled");
    copy_sync(0, 1, 1, "0->1 after the release");
    PL_EXPECT(standin_peer_enabled(env.ctx[0], env.ctx[1]), "0->1 not enabled again");
    /* The program's view is its own throughout. */
    PL_RC(cuCtxEnablePeerAccess(env.ctx[1], 0), CUDA_SUCCESS);
    PL_RC(cuCtxDisablePeerAccess(env.ctx[1]), CUDA_SUCCESS);
    PL_OK(cuStreamDestroy_v2(s));
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s limit|idle shim|noshim\n", argv[0]);
        return 2;
    }
    int shim = pl_want_shim(argc - 1, argv + 1);
    if (pl_init(&env) < 3) {
        fprintf(stderr, "needs STANDIN_DEVICES=3\n");
        return 2;
    }
    for (int d = 0; d < 3; d++)
        buf[d] = pl_alloc(env.ctx[d], N);
    async_src = pl_alloc(env.ctx[0], N);
    if (strcmp(argv[1], "limit") == 0)
        limit(shim);
    else if (strcmp(argv[1], "idle") == 0 && shim)
        idle();
    else
        return 2;
    return pl_finish(argv[0]);
}
