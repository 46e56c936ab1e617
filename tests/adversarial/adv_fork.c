/* New processes after a predicted (lazy) D2H: every way of making a child,
 * the child reading the buffer.
 *
 *   fork | _Fork | sys_fork | clone | clone_vfork | clone_vm | vfork
 *       the child digests the buffer (fork() runs the atfork handlers;
 *       _Fork(), syscall(SYS_fork) and clone() do not; clone_vfork is
 *       clone(CLONE_VFORK), the parent waiting; a clone_vm or vfork child
 *       shares the memory)
 *   posix_spawn | vfork_exec
 *       the spawned program's argument is a string inside the buffer: the
 *       kernel reads it from the lazy pages at exec
 *   fork_threads  fork() again and again while another thread copies
 *   madv_dontfork | madv_wipeonfork
 *       the buffer marked so: the child has no such mapping (SIGSEGV), or
 *       reads zeros
 *   spawned ARG   (the program spawned by the two above) digests ARG */
#define _GNU_SOURCE
#include "adv_common.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define N (((size_t)1 << 20) + 321)
#define ARG_AT (2 * ADV_PAGE)
#define ARG_LEN 100000

static struct adv_buf buf;

static void child_reads(void)
{
    adv_digest_raw("child read the buffer", buf.h, N);
    _exit(0);
}

static int clone_child(void *arg)
{
    (void)arg;
    child_reads();
    return 0;
}

static pid_t make_child(const char *how)
{
    if (strcmp(how, "fork") == 0)
        return fork();
    if (strcmp(how, "_Fork") == 0)
        return _Fork();
    if (strcmp(how, "vfork") == 0) {
        pid_t pid = vfork();
        if (pid == 0)
            child_reads();
        return pid;
    }
    if (strncmp(how, "clone", 5) == 0) {
        size_t size = 256 << 10;
        char *stack = malloc(size);
        int flags = strcmp(how, "clone_vfork") == 0 ? CLONE_VFORK
                    : strcmp(how, "clone_vm") == 0  ? CLONE_VM | CLONE_VFORK
                                                    : 0;
        if (stack == NULL)
            return -1;
        /* Never freed: the child runs on it until it exits. */
        return clone(clone_child, stack + size, flags | SIGCHLD, NULL);
    }
#ifdef SYS_fork
    return (pid_t)syscall(SYS_fork);
#else
    return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
}

static int case_child(int argc, char **argv)
{
    (void)argc;
    int status = 0;
    adv_buf_init(&buf, NULL, N, ADV_LAZY);
    adv_bounce(&buf, 41);
    pid_t pid = make_child(argv[0]);
    if (pid == 0)
        child_reads();
    PL_EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid, "%s: %s", argv[0], strerror(errno));
    adv_status("child", status);
    bt_check_host(buf.h, buf.want, N, "the parent, after the child");
    adv_digest("the parent read the buffer", buf.h, N);
    adv_h2d(&buf, "the parent's H2D");
    return 0;
}

/* The buffer's bytes: text, with a string of ARG_LEN letters at ARG_AT. */
static void text_bytes(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)('a' + pl_pattern(43, i) % 26);
    p[ARG_AT + ARG_LEN] = '\0';
}

/* vfork, then execve in the child: the pid, or -1 with errno. */
static __attribute__((noinline)) pid_t vfork_exec(char *const args[])
{
    pid_t pid = vfork();
    if (pid == 0) {
        execve("/proc/self/exe", args, environ);
        _exit(127);
    }
    return pid;
}

static int case_spawn(int argc, char **argv)
{
    (void)argc;
    int status = 0, rc = 0;
    pid_t pid = -1;
    unsigned char *text = malloc(N);
    PL_EXPECT(text != NULL, "malloc");
    adv_buf_init(&buf, NULL, N, ADV_LAZY);
    text_bytes(text, N);
    adv_bounce_bytes(&buf, text);
    char *args[] = {(char *)adv_self, (char *)adv_mode, "spawned", (char *)buf.h + ARG_AT,
                    NULL};
    if (strcmp(argv[0], "posix_spawn") == 0)
        rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ);
    else if ((pid = vfork_exec(args)) < 0)
        rc = errno;
    PL_EXPECT(rc == 0 && pid > 0, "%s: %s", argv[0], strerror(rc));
    PL_EXPECT(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
    adv_status("spawned", status);
    adv_digest("the parent read the buffer", buf.h, N);
    adv_h2d(&buf, "the parent's H2D");
    free(text);
    return 0;
}

static int case_spawned(int argc, char **argv)
{
    const char *arg = argc > 1 ? argv[1] : "";
    adv_say("spawned: an argument of %zu bytes", strlen(arg));
    adv_digest("spawned: its argument", arg, strlen(arg));
    return 0;
}

struct copier {
    CUdeviceptr a, b;
    unsigned char *host;
    atomic_int stop;
    atomic_long rounds;
};

/* Async copies and synchronisations: inside the driver, which allocates
 * and frees as it queues and runs them. */
static void *copier_main(void *arg)
{
    struct copier *c = arg;
    CUstream s;
    pl_use(bt_env.ctx[0]);
    PL_OK(cuStreamCreate(&s, 0));
    while (!atomic_load(&c->stop)) {
        for (int i = 0; i < 32; i++)
            PL_OK(cuMemcpyDtoDAsync_v2(c->b, c->a, 4096, s));
        PL_OK(cuMemcpyHtoDAsync_v2(c->a, c->host, 4096, s));
        PL_OK(cuStreamSynchronize(s));
        atomic_fetch_add(&c->rounds, 1);
    }
    PL_OK(cuStreamDestroy_v2(s));
    return NULL;
}

static int case_fork_threads(int argc, char **argv)
{
    (void)argc, (void)argv;
    static unsigned char host[4096];
    struct copier c = {.host = host};
    pthread_t t;
    adv_buf_init(&buf, NULL, N, ADV_LAZY);
    c.a = pl_alloc(bt_env.ctx[0], 1 << 20);
    c.b = pl_alloc(bt_env.ctx[0], 1 << 20);
    PL_EXPECT(pthread_create(&t, NULL, copier_main, &c) == 0, "pthread_create");
    while (atomic_load(&c.rounds) == 0)
        sched_yield();
    /* One snapshot held (no H2D ends it) across every fork. */
    adv_bounce(&buf, 50);
    for (int i = 0; i < 24; i++) {
        int status = 0;
        pid_t pid = fork();
        if (pid == 0)
            child_reads();
        PL_EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid, "fork: %s", strerror(errno));
        adv_status("child", status);
    }
    adv_digest("the parent read the buffer", buf.h, N);
    atomic_store(&c.stop, 1);
    pthread_join(t, NULL);
    adv_say("the copier ran: %s", atomic_load(&c.rounds) > 0 ? "yes" : "no");
    adv_h2d(&buf, "the parent's H2D");
    return 0;
}

static int case_madvise_fork(int argc, char **argv)
{
    (void)argc;
    int status = 0;
    int dontfork = strcmp(argv[0], "madv_dontfork") == 0;
    adv_buf_init(&buf, NULL, N, ADV_LAZY);
    adv_bounce(&buf, 45);
    PL_EXPECT(madvise(buf.h, N, dontfork ? MADV_DONTFORK : MADV_WIPEONFORK) == 0, "madvise: %s",
              strerror(errno));
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        child_reads();
    PL_EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid, "fork: %s", strerror(errno));
    adv_status("child", status);
    bt_check_host(buf.h, buf.want, N, "the parent, after the child");
    adv_digest("the parent read the buffer", buf.h, N);
    adv_h2d(&buf, "the parent's H2D");
    return 0;
}

int main(int argc, char **argv)
{
    static const struct adv_case cases[] = {
        {"fork", case_child},
        {"_Fork", case_child},
        {"sys_fork", case_child},
        {"clone", case_child},
        {"clone_vfork", case_child},
        {"clone_vm", case_child},
        {"vfork", case_child},
        {"posix_spawn", case_spawn},
        {"vfork_exec", case_spawn},
        {"spawned", case_spawned},
        {"fork_threads", case_fork_threads},
        {"madv_dontfork", case_madvise_fork},
        {"madv_wipeonfork", case_madvise_fork},
    };
    return adv_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
