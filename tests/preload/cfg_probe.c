/* Item 9: configuration through the environment. "cfg_probe shim CASE",
 * run by config.sh with the P2PSHIM_* variables of CASE; this program
 * asserts the paths (stand-in counters), config.sh the log. Prints
 * "pid=N" and "host_copies=N" (the stand-in's host<->device copies, which
 * the shim's summary counts as local). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pl_common.h"

#define BIG ((size_t)64 << 10)
#define SMALL ((size_t)4 << 10)

static struct pl_env env;
static CUdeviceptr buf[2];
static unsigned seed = 1;
/* Host copies the program made (a fill and a read-back per copy): the
 * stand-in's own h2d/d2h counters also see the shim's bounce snapshots. */
static unsigned long long host_copies;

/* A copy of n bytes from device a to b, issued from a's context; checks
 * the path the stand-in saw and the enable calls it caused. */
static void copy(int a, int b, size_t n, int want_peer, int want_enables)
{
    struct standin_stats s0, s1;
    char label[64];
    snprintf(label, sizeof label, "copy %d->%d of %zu", a, b, n);
    pl_fill(env.ctx[a], buf[a], n, ++seed);
    host_copies += 2;
    pl_use(env.ctx[a]);
    pl_stats(&s0);
    PL_OK(cuMemcpyPeer(buf[b], env.ctx[b], buf[a], env.ctx[a], n));
    pl_stats(&s1);
    pl_verify(env.ctx[b], buf[b], n, seed, label);
    int peer = s1.peer_copies > s0.peer_copies;
    int enables = (int)(s1.peer_enable_calls - s0.peer_enable_calls);
    PL_EXPECT(peer == want_peer, "%s: %s, expected %s", label, peer ? "peer" : "staged",
              want_peer ? "peer" : "staged");
    PL_EXPECT(enables == want_enables, "%s: %d enable calls, expected %d", label, enables,
              want_enables);
}

/* Three 0->1 and two 1->0 copies of 64 KiB, all upgraded: one enable per
 * issuing direction (0->1, then 1->0: the direction that starts at the
 * issuing device runs at full speed). */
static void standard(void)
{
    copy(0, 1, BIG, 1, 1);
    copy(0, 1, BIG, 1, 0);
    copy(1, 0, BIG, 1, 1);
    copy(0, 1, BIG, 1, 0);
    copy(1, 0, BIG, 1, 0);
}

int main(int argc, char **argv)
{
    pl_want_shim(argc, argv);
    const char *c = argc > 2 ? argv[2] : "";
    pl_init(&env);
    buf[0] = pl_alloc(env.ctx[0], BIG);
    buf[1] = pl_alloc(env.ctx[1], BIG);
    if (strcmp(c, "mode_off") == 0 || strcmp(c, "bad_mode") == 0) {
        /* A mode that does not parse is off: the least change. */
        for (int i = 0; i < 3; i++)
            copy(0, 1, BIG, 0, 0);
    } else if (strcmp(c, "pairs") == 0) {
        copy(0, 1, BIG, 0, 0); /* excluded: not the cause of an enable */
        copy(1, 0, BIG, 1, 1); /* allowed: enables 1->0 */
        PL_EXPECT(standin_peer_enabled(env.ctx[1], env.ctx[0]) &&
                      !standin_peer_enabled(env.ctx[0], env.ctx[1]),
                  "expected only 1->0 enabled");
        copy(0, 1, BIG, 1, 0); /* the link exists: it serves both ways */
    } else if (strcmp(c, "min_bytes") == 0) {
        copy(0, 1, SMALL, 0, 0);
        copy(0, 1, BIG, 1, 1);
        copy(0, 1, SMALL, 1, 0);
    } else if (strcmp(c, "bad_min_bytes") == 0) {
        copy(0, 1, SMALL, 1, 1); /* the default (0) kept */
    } else if (strcmp(c, "summary") == 0 || strcmp(c, "log_file") == 0 ||
               strcmp(c, "unknown_var") == 0 ||
               strcmp(c, "tool_vars") == 0 || strcmp(c, "files") == 0) {
        standard();
    } else {
        fprintf(stderr, "cfg_probe: unknown case '%s'\n", c);
        return 2;
    }
    pl_free(env.ctx[0], buf[0]);
    pl_free(env.ctx[1], buf[1]);
    printf("pid=%ld\n", (long)getpid());
    printf("host_copies=%llu\n", host_copies);
    return pl_finish(c);
}
