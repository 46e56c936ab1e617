/* p2pshim run: the program as a child process, with the launcher's
 * signals passed on to it (run_child.h).
 *
 * While the program runs, the launcher blocks every signal it passes on
 * and takes them one at a time with sigwaitinfo, with the program's
 * SIGCHLD among them: no handler runs inside the launcher, so no signal
 * finds it half-way through anything, and none can kill it before the
 * program ends and its report is written. The program is in the
 * launcher's process group, as it would be without the launcher in a
 * shell's job: a terminal's signals reach it directly. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "launcher.h"
#include "run_child.h"

/* The signals passed on: every one a process can catch, but SIGCHLD (the
 * launcher's own), the C library's internal ones (sigaddset refuses them)
 * and those that report a fault of the launcher's own code, which must
 * stay deliverable to it (a debugger, a sanitizer, the core dump). */
static void forwarded_set(sigset_t *set)
{
    static const int own[] = {SIGKILL, SIGSTOP, SIGCHLD, SIGSEGV, SIGBUS,
                              SIGILL,  SIGFPE,  SIGTRAP, SIGSYS};
    sigemptyset(set);
    for (int sig = 1; sig <= SIGRTMAX; sig++) {
        bool skip = false;
        for (size_t k = 0; k < sizeof own / sizeof own[0]; k++)
            skip = skip || own[k] == sig;
        if (!skip)
            sigaddset(set, sig);
    }
}

/* Is the program stopped (job control)? Unknown reads as yes. */
static bool child_stopped(pid_t child)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)child);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return true;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return true;
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* the name may hold anything */
    return !paren || paren[1] != ' ' || paren[2] == 'T' || paren[2] == 't';
}

/* Stops the launcher as sig's default action would (or not, where the
 * kernel discards it: a process group no shell controls any more), once
 * it has been passed on: a shell waiting for its job sees it stop. */
static void stop_self(int sig)
{
    struct sigaction dfl, old;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, &old);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    raise(sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL); /* stops here until SIGCONT */
    sigprocmask(SIG_BLOCK, &one, NULL);
    sigaction(sig, &old, NULL);
}

/* One signal that came to the launcher while the program runs. Passed on
 * when someone sent it to the launcher, as the program would have been
 * sent it without the launcher: not when the kernel sent it to the whole
 * process group (a terminal's Ctrl-C, Ctrl-Z, resize or hangup: the
 * program has its own copy already), nor when the program sent it (to its
 * group, or to its parent), nor when the launcher's own doing caused it
 * (a write to a closed pipe). A kernel timer's SIGALRM is passed on: an
 * alarm survives exec, and the program's exec would have kept it. SIGCONT
 * only to a stopped program (a shell's fg reaches it by itself); a value
 * queued with the signal goes with it. */
static void pass_on(pid_t child, const siginfo_t *si)
{
    int sig = si->si_signo;
    bool pass = si->si_code > 0 ? sig == SIGALRM
                                : si->si_pid != getpid() && si->si_pid != child;
    if (pass && sig == SIGCONT)
        pass = child_stopped(child);
    if (pass && si->si_code == SI_QUEUE)
        sigqueue(child, sig, si->si_value);
    else if (pass)
        kill(child, sig);
    if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
        stop_self(sig);
}

/* Passes signals on until the program has ended; its wait status. */
static int wait_passing_signals(pid_t child, const sigset_t *forwarded)
{
    sigset_t wait_for = *forwarded;
    sigaddset(&wait_for, SIGCHLD);
    for (;;) {
        int status = 0;
        pid_t r = waitpid(child, &status, WNOHANG);
        if (r == child || (r < 0 && errno != EINTR))
            return r == child ? status : -1;
        siginfo_t si;
        if (sigwaitinfo(&wait_for, &si) < 0)
            continue; /* EINTR: a stop and SIGCONT */
        if (si.si_signo != SIGCHLD)
            pass_on(child, &si);
    }
}

/* The child: the signal state the launcher was given, then the program.
 * An errno in the pipe tells the parent that the program never started
 * (the write end closes on a successful exec). */
static void exec_child(const struct run_env *o, int errfd, const sigset_t *old_mask,
                       const struct sigaction *old_chld)
{
    sigaction(SIGCHLD, old_chld, NULL);
    sigprocmask(SIG_SETMASK, old_mask, NULL);
    /* P2PSHIM_LIBRARY is the launcher's, not the shim's: the shim would
     * warn about a variable it does not know. */
    unsetenv("P2PSHIM_LIBRARY");
    if (setenv("LD_PRELOAD", o->preload, 1) == 0)
        execvp(o->program[0], o->program);
    int e = errno;
    ssize_t w = write(errfd, &e, sizeof e);
    (void)w;
    _exit(LAUNCHER_EXIT_NOT_FOUND);
}

/* After the program: the signals that stop a launcher (and a report that
 * takes long) take their course again; the others stay blocked until the
 * launcher exits, so that a late one (a batch system's warning before
 * its time limit) cannot cost the report. */
static void after_child(const sigset_t *old_mask)
{
    static const int stopping[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP,
                                   SIGTTIN, SIGTTOU, SIGCONT, SIGWINCH};
    sigset_t set;
    sigemptyset(&set);
    for (size_t k = 0; k < sizeof stopping / sizeof stopping[0]; k++)
        if (!sigismember(old_mask, stopping[k]))
            sigaddset(&set, stopping[k]);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

static int exit_status(const struct run_env *o, int status)
{
    if (status == -1)
        return LAUNCHER_EXIT_FAILURE;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        launcher_error("%s was killed by signal %d (%s)", o->program[0], sig, strsignal(sig));
        return 128 + sig;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : LAUNCHER_EXIT_FAILURE;
}

int run_child_spawn(const struct run_env *o, pid_t *pid)
{
    *pid = 0;
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        launcher_error("pipe: %s", strerror(errno));
        return LAUNCHER_EXIT_FAILURE;
    }
    sigset_t forwarded, block, old;
    forwarded_set(&forwarded);
    block = forwarded;
    sigaddset(&block, SIGCHLD);
    /* Blocked from before fork: a signal before the loop waits for it.
     * SIGCHLD at its default, so that the program can be waited for even
     * when the launcher's parent left it ignored (the child gets the
     * launcher's own back). */
    struct sigaction dfl, old_chld;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigprocmask(SIG_BLOCK, &block, &old);
    sigaction(SIGCHLD, &dfl, &old_chld);
    pid_t c = fork();
    if (c == 0) {
        close(pfd[0]);
        exec_child(o, pfd[1], &old, &old_chld);
    }
    int fork_errno = errno;
    close(pfd[1]);
    int exec_errno = 0;
    ssize_t n = c < 0 ? 0 : -1;
    while (n < 0 && (n = read(pfd[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR)
        ;
    close(pfd[0]);
    int status = c > 0 ? wait_passing_signals(c, &forwarded) : -1;
    after_child(&old);
    if (c < 0) {
        launcher_error("fork: %s", strerror(fork_errno));
        return LAUNCHER_EXIT_FAILURE;
    }
    *pid = c;
    if (n == (ssize_t)sizeof exec_errno) {
        *pid = 0;
        if (exec_errno == ENOENT) {
            launcher_error("%s: program not found", o->program[0]);
            return LAUNCHER_EXIT_NOT_FOUND;
        }
        launcher_error("%s: cannot run: %s", o->program[0], strerror(exec_errno));
        return LAUNCHER_EXIT_NOT_EXECUTABLE;
    }
    return exit_status(o, status);
}
