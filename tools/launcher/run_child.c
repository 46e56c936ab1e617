/* p2pshim run: the program as a child process, with the launcher's
 * signals passed on to it (run_child.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "launcher.h"
#include "run_child.h"

static volatile sig_atomic_t child_pid;

/* Signals a terminal sends (Ctrl-C) go to the whole foreground process
 * group: the program has its own copy already (si_code SI_KERNEL), and a
 * second one would count twice in a program that counts them. Those sent
 * to the launcher alone (kill, a batch system) are passed on. */
static void forward_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    if (child_pid > 0 && (info == NULL || info->si_code != SI_KERNEL))
        kill((pid_t)child_pid, sig);
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* Runs o->program with the environment of *o; returns the exit status
 * the launcher should give (the program's, 128+signal, or 126/127 when it
 * could not be started), and its pid in *pid (0 if it never ran). */
int run_child_spawn(const struct run_env *o, pid_t *pid)
{
    *pid = 0;
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        launcher_error("pipe: %s", strerror(errno));
        return LAUNCHER_EXIT_FAILURE;
    }
    sigset_t block, old;
    sigemptyset(&block);
    for (size_t k = 0; k < sizeof forwarded / sizeof forwarded[0]; k++)
        sigaddset(&block, forwarded[k]);
    /* Blocked across fork: a signal before child_pid is known waits. */
    sigprocmask(SIG_BLOCK, &block, &old);
    pid_t c = fork();
    if (c < 0) {
        int e = errno;
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(pfd[0]);
        close(pfd[1]);
        launcher_error("fork: %s", strerror(e));
        return LAUNCHER_EXIT_FAILURE;
    }
    if (c == 0) {
        close(pfd[0]);
        sigprocmask(SIG_SETMASK, &old, NULL);
        /* P2PSHIM_LIBRARY is the launcher's, not the shim's: the shim
         * would warn about a variable it does not know. */
        unsetenv("P2PSHIM_LIBRARY");
        if (setenv("LD_PRELOAD", o->preload, 1) == 0)
            execvp(o->program[0], o->program);
        int e = errno;
        /* The write end closes on a successful exec; an errno in the pipe
         * tells the parent that the program never started. */
        ssize_t w = write(pfd[1], &e, sizeof e);
        (void)w;
        _exit(LAUNCHER_EXIT_NOT_FOUND);
    }
    close(pfd[1]);
    child_pid = c;
    *pid = c;
    struct sigaction sa, saved[sizeof forwarded / sizeof forwarded[0]];
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t k = 0; k < sizeof forwarded / sizeof forwarded[0]; k++)
        sigaction(forwarded[k], &sa, &saved[k]);
    sigprocmask(SIG_SETMASK, &old, NULL);

    int exec_errno = 0;
    ssize_t n;
    do
        n = read(pfd[0], &exec_errno, sizeof exec_errno);
    while (n < 0 && errno == EINTR);
    close(pfd[0]);

    int status = 0;
    while (waitpid(c, &status, 0) < 0 && errno == EINTR)
        ;
    child_pid = 0;
    for (size_t k = 0; k < sizeof forwarded / sizeof forwarded[0]; k++)
        sigaction(forwarded[k], &saved[k], NULL);

    if (n == (ssize_t)sizeof exec_errno) {
        *pid = 0;
        if (exec_errno == ENOENT) {
            launcher_error("%s: program not found", o->program[0]);
            return LAUNCHER_EXIT_NOT_FOUND;
        }
        launcher_error("%s: cannot run: %s", o->program[0], strerror(exec_errno));
        return LAUNCHER_EXIT_NOT_EXECUTABLE;
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        launcher_error("%s was killed by signal %d (%s)", o->program[0], sig, strsignal(sig));
        return 128 + sig;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : LAUNCHER_EXIT_FAILURE;
}

