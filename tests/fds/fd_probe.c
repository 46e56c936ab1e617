/* fd_probe SCENARIO ...: a program whose copies the shim records
 * (P2PSHIM_RUN_LOG) and logs (P2PSHIM_LOG_FILE), while it does things to
 * descriptors and files that check_fds.py then looks at.
 *   close_all HOW FILE  3 copies; every descriptor above 2 closed (HOW:
 *                       close, closefrom, close_range, sys_close, raw: the
 *                       system call instruction itself, then FILE put at
 *                       every number with it too); FILE opened and
 *                       written; 3 more copies; exit with FILE open
 *   exec HOW            50 copies, then /bin/true started by HOW: execveat,
 *                       fexecve, sys_execve, sys_execveat (syscall())
 *   many N              N copies (a full disk or a file size limit: with
 *                       FD_PROBE_FSIZE=BYTES it sets RLIMIT_FSIZE first and
 *                       ignores SIGXFSZ, as a program that checks write's
 *                       errors does) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cuda.h>

#define P2PSHIM_CHECK_CU
#include "../check.h"

extern char **environ;

static CUdeviceptr a0, b0;

static void copies(int n)
{
    for (int i = 0; i < n; i++)
        CHECK_CU(cuMemcpyDtoD(b0, a0, 4096));
}

/* A system call the shim cannot see: the instruction, not libc. */
static long raw3(long nr, long a, long b, long c)
{
#if defined(__x86_64__)
    long r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(nr), "D"(a), "S"(b), "d"(c)
                     : "rcx", "r11", "memory");
    return r;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
    return x0;
#else
    (void)nr, (void)a, (void)b, (void)c;
    exit(77);
#endif
}

static int fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur > 4096)
        return 4096;
    return (int)rl.rlim_cur;
}

static int close_all(const char *how, const char *file)
{
    int top = fd_limit();
    copies(3);
    if (strcmp(how, "closefrom") == 0)
        closefrom(3);
    else if (strcmp(how, "close_range") == 0)
        REQUIRE(close_range(3, ~0U, 0) == 0);
    for (int fd = 3; fd < top; fd++) {
        if (strcmp(how, "close") == 0)
            close(fd);
        else if (strcmp(how, "sys_close") == 0)
            syscall(SYS_close, fd);
        else if (strcmp(how, "raw") == 0)
            raw3(SYS_close, fd, 0, 0);
    }
    int own = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(own >= 0);
    if (strcmp(how, "raw") == 0)
        for (int fd = own + 1; fd < top; fd++)
            raw3(SYS_dup3, own, fd, 0);
    static const char line[] = "the program's own line\n";
    for (int i = 0; i < 100; i++)
        REQUIRE(write(own, line, sizeof line - 1) == (ssize_t)(sizeof line - 1));
    copies(3);
    printf("wrote %zu bytes\n", 100 * (sizeof line - 1));
    return 0;
}

static int exec_by(const char *how)
{
    char *argv[] = {"true", NULL};
    copies(50);
    fflush(stdout);
    if (strcmp(how, "execveat") == 0) {
        execveat(AT_FDCWD, "/bin/true", argv, environ, 0);
    } else if (strcmp(how, "fexecve") == 0) {
        int fd = open("/bin/true", O_RDONLY);
        REQUIRE(fd >= 0);
        fexecve(fd, argv, environ);
    } else if (strcmp(how, "sys_execve") == 0) {
        syscall(SYS_execve, "/bin/true", argv, environ);
    } else if (strcmp(how, "sys_execveat") == 0) {
        syscall(SYS_execveat, AT_FDCWD, "/bin/true", argv, environ, 0);
    } else {
        fprintf(stderr, "fd_probe: unknown exec %s\n", how);
        return 2;
    }
    fprintf(stderr, "fd_probe: %s failed: %s\n", how, strerror(errno));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: fd_probe close_all HOW FILE | exec HOW | many N\n");
        return 2;
    }
    alarm(90);
    const char *fsize = getenv("FD_PROBE_FSIZE");
    if (fsize != NULL) {
        struct rlimit rl = {strtoul(fsize, NULL, 10), RLIM_INFINITY};
        signal(SIGXFSZ, SIG_IGN);
        REQUIRE(setrlimit(RLIMIT_FSIZE, &rl) == 0);
    }
    CUcontext ctx;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuMemAlloc(&a0, 4096));
    CHECK_CU(cuMemAlloc(&b0, 4096));
    int rc = 2;
    if (strcmp(argv[1], "close_all") == 0 && argc > 3)
        rc = close_all(argv[2], argv[3]);
    else if (strcmp(argv[1], "exec") == 0)
        rc = exec_by(argv[2]);
    else if (strcmp(argv[1], "many") == 0)
        copies(atoi(argv[2])), rc = 0;
    printf("done\n");
    return rc != 0 ? rc : check_report();
}
