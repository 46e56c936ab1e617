/* A child made without glibc's fork, which runs no fork handlers, reads a
 * host buffer the shim holds lazily: it must read the bytes the D2H put
 * there, as without the shim.
 *
 * "fd_fork shim|noshim CASE", CASE one of
 *   _Fork       glibc 2.34's _Fork()
 *   sys_fork    syscall(SYS_fork) (x86-64)
 *   sys_clone   syscall(SYS_clone, SIGCHLD, 0, ...)
 *   sys_clone3  syscall(SYS_clone3, {.exit_signal = SIGCHLD}, size)
 * (and first, a clone3 whose arguments are not there: EFAULT, as from the
 * kernel). The child hashes the buffer and says through a pipe whether it holds the
 * D2H's bytes; then the parent reads it too and sends it back to a GPU.
 * Transcripts compared (tests/preload/compare.sh). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bt_common.h"

#define PG 4096
#define N (((size_t)1 << 20) + 321)

static pid_t make_child(const char *how)
{
    if (strcmp(how, "_Fork") == 0)
        return _Fork();
#ifdef SYS_fork
    if (strcmp(how, "sys_fork") == 0)
        return (pid_t)syscall(SYS_fork);
#endif
    if (strcmp(how, "sys_clone") == 0)
        return (pid_t)syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
    if (strcmp(how, "sys_clone3") == 0) {
        struct clone_args ca;
        memset(&ca, 0, sizeof ca);
        ca.exit_signal = SIGCHLD;
        return (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
    }
    fprintf(stderr, "fd_fork: unknown or unsupported case %s\n", how);
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: fd_fork shim|noshim CASE\n");
        return 2;
    }
    alarm(90);
    bt_init(argc, argv);
    CUdeviceptr src0 = pl_alloc(bt_env.ctx[0], N), dst1 = pl_alloc(bt_env.ctx[1], N);
    unsigned char *pat = malloc(N), *h = malloc(N);
    if (!pat || !h)
        return 2;
    struct standin_stats before;
    pl_use(bt_env.ctx[0]);
    bt_prime(h, src0, dst1, N);
    bt_d2h_round(h, src0, bt_env.ctx[0], pat, N, 7, &before);
    bt_expect_bounced(&before, 2 * PG, N - 2 * PG, N, "the D2H before the child");
    uint64_t want = bt_fnv(pat, N);
    errno = 0;
    long bad = syscall(SYS_clone3, (void *)16, (size_t)88);
    printf("clone3 of a bad address: %ld, errno %d\n", bad, errno);
    int p[2];
    if (pipe(p) != 0)
        return 2;
    fflush(stdout);
    pid_t pid = make_child(argv[2]);
    if (pid == 0) {
        char ok = bt_fnv(h, N) == want ? 'y' : 'n';
        ssize_t w = write(p[1], &ok, 1);
        _exit(w == 1 ? 0 : 3);
    }
    PL_EXPECT(pid > 0, "%s: %s", argv[2], strerror(errno));
    char ok = '?';
    PL_EXPECT(read(p[0], &ok, 1) == 1, "no answer from the child");
    int status = 0;
    PL_EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the child's status %#x", status);
    PL_EXPECT(ok == 'y', "%s: the child read other bytes than the D2H's", argv[2]);
    printf("%s: the child read the D2H's bytes: %c\n", argv[2], ok);
    bt_check_host(h, pat, N, "the parent, after the child");
    pl_use(bt_env.ctx[1]);
    PL_OK(cuMemcpyHtoD_v2(dst1, h, N));
    bt_check_dev(dst1, pat, N, "the H2D after the child");
    printf("parent: host=%016llx device=%016llx\n", (unsigned long long)bt_fnv(h, N),
           (unsigned long long)bt_fnv((const void *)(uintptr_t)dst1, N));
    free(h);
    free(pat);
    return pl_finish("fd_fork");
}
