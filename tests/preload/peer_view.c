/* Item 2: the program's view of peer access stays its own.
 *
 * A transcript (return codes, the current context around each call, the
 * bytes' checksums) that compare.sh requires to be identical without and
 * with the shim. In the shim run the program also asserts the true driver
 * state (standin_peer_enabled) and that every cross-GPU copy rode the peer
 * path; without the shim, that a copy is peer exactly when the program's
 * own access makes it so. Three devices (STANDIN_DEVICES=3). */
#include <stdio.h>

#include "pl_common.h"

#define N ((size_t)32 << 10)

static struct pl_env env;
static int shim;
static CUdeviceptr buf[3];
static unsigned seed = 1;

/* Copies N bytes from device `from` to device `to` with the current
 * context as it is; app_peer: the program's own access covers the pair. */
static void copy(const char *label, int from, int to, int app_peer)
{
    struct standin_stats a, b;
    char line[96];
    pl_fill(env.ctx[from], buf[from], N, ++seed);
    pl_stats(&a);
    snprintf(line, sizeof line, "copy %s %d->%d", label, from, to);
    CUresult r = PL_T(&env, line, cuMemcpyPeer(buf[to], env.ctx[to], buf[from],
                                              env.ctx[from], N));
    pl_stats(&b);
    PL_EXPECT(r == CUDA_SUCCESS, "%s: rc %d", line, (int)r);
    int peer = b.peer_copies - a.peer_copies == 1, staged = b.staged_copies - a.staged_copies == 1;
    if (shim)
        PL_EXPECT(peer && !staged, "%s: not a peer copy under the shim", line);
    else
        PL_EXPECT(peer == app_peer && staged == !app_peer,
                  "%s: peer %d staged %d, expected the program's own view (%d)", line, peer,
                  staged, app_peer);
    printf("  bytes %s sum=%016llx ok=%d\n", label,
           (unsigned long long)pl_checksum(env.ctx[to], buf[to], N),
           pl_verify(env.ctx[to], buf[to], N, seed, line));
}

static void enable(const char *label, int cur, int peer)
{
    char line[96];
    snprintf(line, sizeof line, "enable %s %d->%d", label, cur, peer);
    pl_use(env.ctx[cur]);
    PL_T(&env, line, cuCtxEnablePeerAccess(env.ctx[peer], 0));
}

static void disable(const char *label, int cur, int peer)
{
    char line[96];
    snprintf(line, sizeof line, "disable %s %d->%d", label, cur, peer);
    pl_use(env.ctx[cur]);
    PL_T(&env, line, cuCtxDisablePeerAccess(env.ctx[peer]));
}

/* The true driver state, shim run only: from->to enabled or not. */
static void driver_state(int from, int to, int want)
{
    if (shim)
        PL_EXPECT(standin_peer_enabled(env.ctx[from], env.ctx[to]) == want,
                  "driver state %d->%d is %d, expected %d", from, to,
                  standin_peer_enabled(env.ctx[from], env.ctx[to]), want);
}

/* The shim enables 0->1 for a copy; the program's own enable and
 * disable, twice each, get the answers they would without it. */
static void shim_link_then_app_enable(void)
{
    /* The shim enables 0->1 for this copy (issued from ctx0). */
    pl_use(env.ctx[0]);
    copy("first", 0, 1, 0);
    driver_state(0, 1, 1);
    driver_state(1, 0, 0);

    /* The program's own enable and disable, twice each: its answers. */
    enable("app-first", 0, 1);
    enable("app-second", 0, 1);
    copy("app-enabled", 0, 1, 1);
    disable("app-first", 0, 1);
    disable("app-second", 0, 1);
    driver_state(0, 1, 1);              /* the shim keeps its link */
    pl_use(env.ctx[0]);
    copy("after-app-disable", 0, 1, 0);
    copy("reverse", 1, 0, 0);
}

/* A direction only the shim enabled (0->2): the program sees none. */
static void shim_only_direction_unseen(void)
{
    pl_use(env.ctx[0]);
    copy("shim-only", 0, 2, 0);
    driver_state(0, 2, 1);
    disable("shim-only", 0, 2);
    disable("never", 2, 0);
    driver_state(0, 2, 1);
    enable("reverse-of-shim", 2, 0);
    enable("reverse-of-shim-again", 2, 0);
    driver_state(2, 0, 1);
    enable("over-shim", 0, 2);
    enable("over-shim-again", 0, 2);
    pl_use(env.ctx[2]);
    copy("both-enabled", 2, 0, 1);
    disable("over-shim", 0, 2);
    disable("reverse-of-shim", 2, 0);
    disable("over-shim-again", 0, 2);
    disable("reverse-of-shim-again", 2, 0);
    driver_state(2, 0, 0);
    driver_state(0, 2, 1);
    pl_use(env.ctx[2]);
    copy("after-all-disabled", 2, 0, 0);
}

/* The program enables first (1->2); the shim has nothing to do; the
 * program's disable is real, and the shim enables again when needed. */
static void app_link_first(void)
{
    enable("app-before-shim", 1, 2);
    pl_use(env.ctx[1]);
    copy("app-only", 1, 2, 1);
    disable("app-before-shim", 1, 2);
    driver_state(1, 2, 0);
    pl_use(env.ctx[1]);
    copy("after-app-gone", 1, 2, 0);
    driver_state(1, 2, 1);
    enable("app-again", 1, 2);
    enable("app-again-twice", 1, 2);
    disable("app-again", 1, 2);
    disable("app-again-twice", 1, 2);
    driver_state(1, 2, 1);
}

int main(int argc, char **argv)
{
    shim = pl_want_shim(argc, argv);
    if (pl_init(&env) < 3) {
        fprintf(stderr, "peer_view: needs STANDIN_DEVICES=3\n");
        return 1;
    }
    for (int d = 0; d < 3; d++)
        buf[d] = pl_alloc(env.ctx[d], N);

    shim_link_then_app_enable();
    shim_only_direction_unseen();
    app_link_first();

    /* Errors of the enable path itself. */
    enable("self", 0, 0);
    pl_use(env.ctx[0]);
    PL_T(&env, "enable flags=1", cuCtxEnablePeerAccess(env.ctx[1], 1));
    PL_T(&env, "enable NULL", cuCtxEnablePeerAccess(NULL, 0));
    PL_T(&env, "disable NULL", cuCtxDisablePeerAccess(NULL));
    pl_use(NULL);
    PL_T(&env, "enable no-current", cuCtxEnablePeerAccess(env.ctx[1], 0));
    PL_T(&env, "disable no-current", cuCtxDisablePeerAccess(env.ctx[1]));

    /* The program's view through a pushed context: still its own. */
    PL_T(&env, "push ctx0", cuCtxPushCurrent_v2(env.ctx[0]));
    PL_T(&env, "enable pushed 0->1", cuCtxEnablePeerAccess(env.ctx[1], 0));
    PL_T(&env, "disable pushed 0->1", cuCtxDisablePeerAccess(env.ctx[1]));
    CUcontext popped = NULL;
    PL_T(&env, "pop", cuCtxPopCurrent_v2(&popped));
    printf("popped %s\n", pl_ctx_name(&env, popped));

    for (int d = 0; d < 3; d++)
        pl_free(env.ctx[d], buf[d]);
    return pl_finish("peer_view");
}
