/* rec_probe SCENARIO: copies through the stand-in driver whose decision
 * records check_log.py then reads back from the run log.
 *   paths    one copy of each path: upgraded, same device, host to device,
 *            device to host, pool memory (passed: pool-memory)
 *   fork     a copy, then a forked child making two copies of its own
 *   fork_exit a copy, then a forked child making 600 copies and leaving
 *            with _exit (no exit handlers: only what it wrote as it went)
 *   fork_exit_few  the same with 2 copies in the child (less than any
 *            buffer holds: what it made is written as it goes)
 *   fork_quiet a copy, then a forked child that copies nothing and _exits
 *   exec     a copy, then exec of /bin/true (the log must be footed)
 *   exec_fail a copy, an exec that fails, two more copies
 *   exec_self a copy, then exec of this program with exec_child (a copy)
 *   many     20000 copies from 4 threads (ring and writer under load)
 *   relay    a program copy the shim relays (pool memory, several chunks)
 *            each way: pool 0 -> pool 1 async on a stream, pool 1 ->
 *            device 0 synchronous; then one ordinary cross copy; prints
 *            "relayed=BYTES" (what the program copied in relayed copies)
 *   bounce   a 2 MiB D2H from device 0 into a pageable buffer, then an
 *            H2D from it to device 1 (the shim bounces them)
 * Prints "staged=N peer=N" (the stand-in's counters) so the observe-mode
 * test can check that nothing the program does changed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#include "standin.h"

#define P2PSHIM_CHECK_CU
#include "../check.h"

static CUcontext ctx[2];
static CUdeviceptr a0, b0, a1;
static char host[4096];

static void cross(void)
{
    CHECK_CU(cuCtxSetCurrent(ctx[0]));
    CHECK_CU(cuMemcpyPeer(a1, ctx[1], a0, ctx[0], 4096));
}

static void *many_copies(void *arg)
{
    (void)arg;
    CHECK_CU(cuCtxSetCurrent(ctx[0]));
    for (int i = 0; i < 5000; i++)
        CHECK_CU(cuMemcpyDtoD(b0, a0, 64));
    return NULL;
}

/* Not a multiple of the relay's chunk (P2PSHIM_POOL_RELAY=3M): the last
 * chunk is partial. */
#define RELAY_BYTES (((size_t)8 << 20) + 12345)

static CUdeviceptr pool_on(int dev)
{
    CUdeviceptr p = 0;
    CHECK_CU(cuCtxSetCurrent(ctx[dev]));
    CHECK_CU(cuMemAllocAsync(&p, RELAY_BYTES, NULL));
    CHECK_CU(cuStreamSynchronize(NULL));
    return p;
}

static int relay_copies(void)
{
    CUdeviceptr p0 = pool_on(0), p1 = pool_on(1), d0;
    CUstream s;
    CHECK_CU(cuCtxSetCurrent(ctx[0]));
    CHECK_CU(cuMemAlloc(&d0, RELAY_BYTES));
    CHECK_CU(cuMemsetD8(p0, 0x5A, RELAY_BYTES));
    CHECK_CU(cuMemsetD8(d0, 0, RELAY_BYTES));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemcpyAsync(p1, p0, RELAY_BYTES, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemcpy(d0, p1, RELAY_BYTES));
    for (size_t i = 0; i < RELAY_BYTES; i++)
        if (((unsigned char *)(uintptr_t)d0)[i] != 0x5A) {
            fprintf(stderr, "rec_probe: wrong relayed byte at %zu\n", i);
            return 1;
        }
    cross();
    printf("relayed=%zu\n", 2 * RELAY_BYTES);
    return 0;
}

/* Each scenario below returns 0 when the program goes on to print the
 * stand-in's counters, else the program's exit status. */

/* one copy of each path; the host buffer comes back unchanged */
static int scenario_paths(void)
{
    CHECK_CU(cuMemcpyHtoD(a0, host, 4096));
    cross();
    CHECK_CU(cuMemcpyDtoD(b0, a0, 4096));
    CHECK_CU(cuCtxSetCurrent(ctx[1]));
    CHECK_CU(cuMemcpyDtoH(host, a1, 4096));
    CUdeviceptr pool;
    CHECK_CU(cuCtxSetCurrent(ctx[0]));
    CHECK_CU(cuMemAllocAsync(&pool, 4096, NULL));
    CHECK_CU(cuMemcpyPeerAsync(a1, ctx[1], pool, ctx[0], 4096, NULL));
    CHECK_CU(cuMemFreeAsync(pool, NULL));
    CHECK_CU(cuCtxSynchronize());
    for (int i = 0; i < 4096; i++)
        if (host[i] != 7) {
            fprintf(stderr, "rec_probe: wrong byte at %d\n", i);
            return 1;
        }
    return 0;
}

/* fork, fork_exit, fork_exit_few, fork_quiet: the child exits 0 */
static int scenario_fork(const char *sc)
{
    bool quick = strcmp(sc, "fork") != 0;
    int copies = strcmp(sc, "fork_exit") == 0 ? 600
                 : strcmp(sc, "fork_quiet") == 0 ? 0 : 2;
    cross();
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        /* The stand-in keeps working in the child (a real driver would
         * not): the child's records go to its own log. */
        for (int i = 0; i < copies; i++)
            cross();
        if (quick)
            _exit(0);
        exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 1;
    printf("child=%d\n", (int)pid);
    return 0;
}

/* exec, exec_fail, exec_self, exec_child */
static int scenario_exec(const char *sc)
{
    if (strcmp(sc, "exec") == 0) {
        cross();
        struct standin_stats s;
        standin_get_stats(&s);
        printf("staged=%llu peer=%llu\n", (unsigned long long)s.staged_copies,
               (unsigned long long)s.peer_copies);
        fflush(stdout);
        execl("/bin/true", "true", (char *)NULL);
        return 1;
    } else if (strcmp(sc, "exec_fail") == 0) {
        cross();
        execl("/nonexistent/rec_probe_target", "x", (char *)NULL);
        cross();
        cross();
    } else if (strcmp(sc, "exec_self") == 0) {
        cross();
        fflush(stdout);
        execl("/proc/self/exe", "rec_probe", "exec_child", (char *)NULL);
        return 1;
    } else { /* exec_child */
        cross();
    }
    return 0;
}

/* a D2H then H2D the shim bounces; the destination gets the bytes */
static int scenario_bounce(void)
{
    size_t n = (size_t)2 << 20;
    CUdeviceptr src, dst;
    CHECK_CU(cuCtxSetCurrent(ctx[0]));
    CHECK_CU(cuMemAlloc(&src, n));
    CHECK_CU(cuMemsetD8(src, 0x3C, n));
    CHECK_CU(cuCtxSetCurrent(ctx[1]));
    CHECK_CU(cuMemAlloc(&dst, n));
    unsigned char *h = malloc(n);
    /* The shim bounces on evidence: a staging round first, the one
     * checked second (observe mode: one round, one candidate). */
    const char *mode = getenv("P2PSHIM_MODE");
    int rounds = mode && strcmp(mode, "observe") == 0 ? 1 : 2;
    for (int r = 0; r < rounds; r++) {
        CHECK_CU(cuCtxSetCurrent(ctx[0]));
        CHECK_CU(cuMemcpyDtoH(h, src, n));
        CHECK_CU(cuCtxSetCurrent(ctx[1]));
        CHECK_CU(cuMemcpyHtoD(dst, h, n));
    }
    CHECK_CU(cuCtxSynchronize());
    for (size_t i = 0; i < n; i++)
        if (((unsigned char *)(uintptr_t)dst)[i] != 0x3C) {
            fprintf(stderr, "rec_probe: wrong byte at %zu\n", i);
            return 1;
        }
    free(h);
    return 0;
}

/* lots (one thread) and many (4 threads) */
static int scenario_lots_or_many(const char *sc)
{
    if (strcmp(sc, "lots") == 0) {
        /* More copies than the CUPTI join keeps calls for (65536 seen). */
        CHECK_CU(cuCtxSetCurrent(ctx[0]));
        for (int i = 0; i < 80000; i++)
            CHECK_CU(cuMemcpyDtoD(b0, a0, 64));
    } else {
        pthread_t th[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&th[i], NULL, many_copies, NULL);
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *sc = argc > 1 ? argv[1] : "paths";
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx[0], 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx[1], 1));
    CHECK_CU(cuCtxSetCurrent(ctx[1]));
    CHECK_CU(cuMemAlloc(&a1, 1 << 16));
    CHECK_CU(cuCtxSetCurrent(ctx[0]));
    CHECK_CU(cuMemAlloc(&a0, 1 << 16));
    CHECK_CU(cuMemAlloc(&b0, 1 << 16));
    memset(host, 7, sizeof host);

    int rc;
    if (strcmp(sc, "paths") == 0) {
        rc = scenario_paths();
    } else if (strncmp(sc, "fork", 4) == 0) {
        rc = scenario_fork(sc);
    } else if (strcmp(sc, "exec") == 0 || strcmp(sc, "exec_fail") == 0 ||
               strcmp(sc, "exec_self") == 0 || strcmp(sc, "exec_child") == 0) {
        rc = scenario_exec(sc);
    } else if (strcmp(sc, "bounce") == 0) {
        rc = scenario_bounce();
    } else if (strcmp(sc, "relay") == 0) {
        rc = relay_copies() != 0 ? 1 : 0;
    } else if (strcmp(sc, "lots") == 0 || strcmp(sc, "many") == 0) {
        rc = scenario_lots_or_many(sc);
    } else {
        fprintf(stderr, "rec_probe: unknown scenario %s\n", sc);
        return 2;
    }
    if (rc)
        return rc;
    struct standin_stats s;
    standin_get_stats(&s);
    printf("staged=%llu peer=%llu\n", (unsigned long long)s.staged_copies,
           (unsigned long long)s.peer_copies);
    return 0;
}
