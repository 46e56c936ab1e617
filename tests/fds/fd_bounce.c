/* A program that does things to descriptors it did not open, while the
 * shim holds a host-bounced buffer (lazy, or eager under
 * P2PSHIM_BOUNCE=eager): its bytes, on the CPU and on the GPU, must be
 * those it would get without the shim.
 *
 * "fd_bounce shim|noshim CASE": CASE is how the program treats every
 * descriptor above 2 it did not open (the shim's, with the shim):
 *   closefrom          closefrom(3)
 *   close_range        close_range(3, ~0U, 0)
 *   close_each         close() of every number from 3 to the limit
 *   sys_close_range    syscall(SYS_close_range, 3, ~0U, 0)
 *   sys_close_each     syscall(SYS_close, n) for every number
 *   dup2_devnull       dup2(/dev/null, n) for every other open descriptor
 *   dup3_pipe          dup3(a pipe's read end, n, O_CLOEXEC) for each: a
 *                      handler waiting on the number would sleep on the pipe
 *   sys_dup3           syscall(SYS_dup3, /dev/null, n, 0) for each
 *   dupfd_top          fcntl(F_GETFD), close and F_DUPFD of the 8 highest
 *                      numbers below the limit (printed: they are the same)
 *   threaded_table     a second thread runs from the start; the size of the
 *                      descriptor table (FDSize) before and after the first
 *                      bounce, printed: the shim's descriptors stay inside
 *                      the table (growing one shared by threads waits for
 *                      an RCU grace period, 13-14 ms on an H200 host)
 * The soft RLIMIT_NOFILE is set first: FD_BOUNCE_NOFILE, else 1024 (the
 * shim puts its descriptors below it).
 * Then, for a lazy buffer, the CPU reads it; for an eager one, the CPU
 * rewrites part of it; then an H2D. Then a second bounced round: the shim
 * still works. Transcripts compared (tests/preload/compare.sh). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bt_common.h"

#define PG 4096
#define N (((size_t)1 << 20) + 321)

static CUdeviceptr src0, dst1;
static unsigned char *pat, *want;
static bool eager;

static int fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur > 4096)
        return 4096;
    return (int)rl.rlim_cur;
}

/* The open descriptors above 2, but keep[0] and keep[1], into out; how
 * many. */
static int others(const int keep[2], int *out, int max)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    struct dirent *e;
    if (d == NULL) {
        PL_EXPECT(0, "cannot list /proc/self/fd");
        return 0;
    }
    while ((e = readdir(d)) != NULL && n < max) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd > 2 && fd != keep[0] && fd != keep[1] && fd != dirfd(d))
            out[n++] = fd;
    }
    closedir(d);
    return n;
}

static void dup_over_others(const int keep[2], const char *how)
{
    int from = keep[0], fds[256], n = others(keep, fds, 256);
    for (int i = 0; i < n; i++) {
        int r = strcmp(how, "dup2_devnull") == 0 ? dup2(from, fds[i])
                : strcmp(how, "dup3_pipe") == 0  ? dup3(from, fds[i], O_CLOEXEC)
                                                 : (int)syscall(SYS_dup3, from, fds[i], 0);
        PL_EXPECT(r == fds[i], "%s onto %d: %d (%s)", how, fds[i], r, strerror(errno));
    }
}

/* The 8 lowest numbers above 2 and the 8 highest: what the program sees
 * of them, printed. */
static void dupfd_top(void)
{
    int top = fd_limit(), null = open("/dev/null", O_RDONLY);
    printf("/dev/null opened as %d; F_DUPFD from 3 gives", null);
    for (int n = 3; n < 11; n++) {
        int got = fcntl(null, F_DUPFD, 3);
        printf(" %d (F_GETFD of %d: %d)", got, n, fcntl(n, F_GETFD));
    }
    printf("\n");
    for (int k = 1; k <= 8; k++) {
        int n = top - k;
        errno = 0;
        int getfd = fcntl(n, F_GETFD);
        printf("fd top-%d: F_GETFD %d errno %d", k, getfd, getfd < 0 ? errno : 0);
        errno = 0;
        int got = fcntl(null, k % 2 ? F_DUPFD : F_DUPFD_CLOEXEC, n);
        printf(", F_DUPFD gives top-%d", got < 0 ? -1 : top - got);
        errno = 0;
        int c = close(got);
        printf(", its close %d errno %d\n", c, c < 0 ? errno : 0);
    }
    close(null);
}

/* FDSize of /proc/self/status: the descriptor table's size. */
static long table_size(void)
{
    char line[256];
    long size = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "FDSize:", 7) == 0)
            size = strtol(line + 7, NULL, 10);
    if (f != NULL)
        fclose(f);
    return size;
}

static void *idle_thread(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static void act(const char *how)
{
    int top = fd_limit();
    if (strcmp(how, "closefrom") == 0) {
        closefrom(3);
    } else if (strcmp(how, "close_range") == 0) {
        PL_EXPECT(close_range(3, ~0U, 0) == 0, "close_range: %s", strerror(errno));
    } else if (strcmp(how, "sys_close_range") == 0) {
        PL_EXPECT(syscall(SYS_close_range, 3, ~0U, 0) == 0, "close_range: %s", strerror(errno));
    } else if (strcmp(how, "close_each") == 0 || strcmp(how, "sys_close_each") == 0) {
        for (int fd = 3; fd < top; fd++)
            (void)(how[0] == 's' ? syscall(SYS_close, fd) : close(fd));
    } else if (strcmp(how, "dup2_devnull") == 0 || strcmp(how, "sys_dup3") == 0) {
        int null[2] = {open("/dev/null", O_RDWR), -1};
        dup_over_others(null, how);
        close(null[0]);
    } else if (strcmp(how, "dup3_pipe") == 0) {
        int p[2];
        PL_EXPECT(pipe(p) == 0, "pipe");
        dup_over_others(p, how); /* the write end stays open: no EOF, no data */
    } else if (strcmp(how, "dupfd_top") == 0) {
        dupfd_top();
    } else if (strcmp(how, "threaded_table") == 0) {
        printf("descriptor table after the first bounce: %ld\n", table_size());
    } else {
        fprintf(stderr, "fd_bounce: unknown case %s\n", how);
        exit(2);
    }
    printf("%s done\n", how);
}

/* One bounced D2H into h (primed first), the stand-in's counters
 * checked: lazy, the bytes stay on the device; eager, they come down and
 * a device copy is kept. */
static void bounced_d2h(unsigned char *h, unsigned seed, const char *what)
{
    struct standin_stats before;
    pl_use(bt_env.ctx[0]);
    bt_prime(h, src0, dst1, N);
    bt_d2h_round(h, src0, bt_env.ctx[0], pat, N, seed, &before);
    memcpy(want, pat, N);
    if (eager)
        bt_expect_bounced(&before, N, N / 2, N, what);
    else
        bt_expect_bounced(&before, 2 * PG, N - 2 * PG, N, what);
}

/* After the program's act: the CPU reads the lazy buffer, or rewrites
 * part of the eager one; then the H2D, whose bytes must be the host's. */
static void use_after(unsigned char *h, const char *what)
{
    if (eager) {
        bt_pattern(want + N / 4, N / 2, 901);
        memcpy(h + N / 4, want + N / 4, N / 2);
    } else {
        bt_check_host(h, want, N, what);
    }
    pl_use(bt_env.ctx[1]);
    PL_OK(cuMemcpyHtoD_v2(dst1, h, N));
    bt_check_dev(dst1, want, N, what);
    printf("%s: host=%016llx device=%016llx\n", what, (unsigned long long)bt_fnv(h, N),
           (unsigned long long)bt_fnv((const void *)(uintptr_t)dst1, N));
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: fd_bounce shim|noshim CASE\n");
        return 2;
    }
    alarm(90); /* a handler asleep on the wrong file would hang the program */
    struct rlimit rl;
    const char *nofile = getenv("FD_BOUNCE_NOFILE");
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = nofile != NULL ? strtoul(nofile, NULL, 10) : 1024;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            return 2;
    }
    bt_init(argc, argv);
    const char *mode = getenv("P2PSHIM_BOUNCE");
    eager = mode != NULL && strcmp(mode, "eager") == 0;
    src0 = pl_alloc(bt_env.ctx[0], N);
    dst1 = pl_alloc(bt_env.ctx[1], N);
    pat = malloc(N);
    want = malloc(N);
    unsigned char *h = malloc(N);
    if (!pat || !want || !h)
        return 2;
    if (strcmp(argv[2], "threaded_table") == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle_thread, NULL) != 0)
            return 2;
        printf("descriptor table before the first bounce: %ld\n", table_size());
    }
    bounced_d2h(h, 1, "first round");
    act(argv[2]);
    use_after(h, "first round, after the program's descriptors work");
    bounced_d2h(h, 2, "second round");
    use_after(h, "second round");
    free(h);
    return pl_finish("fd_bounce");
}
