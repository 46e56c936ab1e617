/* The launcher between the program and the signals a job gets (Slurm's
 * --signal=USR1@N, a terminal's SIGWINCH, an operator's SIGHUP).
 *
 *   signals  a program that makes copies and then waits for six signals
 *       (HUP, USR1, USR2, PIPE, ALRM, WINCH), run directly (without the
 *       shim) or under `p2pshim run --report FILE` (with it), gets each
 *       signal sent to its parent (the launcher, or itself when run
 *       directly), says which it got and exits 0; the launcher exits 0
 *       and writes its report
 *   target READY  (the program) */
#define _GNU_SOURCE
#include "adv_common.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const int sent[] = {SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGWINCH};
#define SENT ((int)(sizeof sent / sizeof sent[0]))

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The program: copies (a run log to report on), then the signals. */
static int case_target(int argc, char **argv)
{
    sigset_t set;
    int got[SENT] = {0}, count = 0;
    char line[256] = "the program got:", tmp[600];
    sigemptyset(&set);
    for (int i = 0; i < SENT; i++)
        sigaddset(&set, sent[i]);
    sigprocmask(SIG_BLOCK, &set, NULL);
    adv_cuda();
    CUdeviceptr a = pl_alloc(bt_env.ctx[0], 4096), b = pl_alloc(bt_env.ctx[1], 4096);
    PL_OK(cuMemcpyPeer(b, bt_env.ctx[1], a, bt_env.ctx[0], 4096));
    snprintf(tmp, sizeof tmp, "%s.tmp", argc > 1 ? argv[1] : "ready");
    FILE *f = fopen(tmp, "w");
    if (f != NULL) {
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
        rename(tmp, argv[1]);
    }
    struct timespec wait = {10, 0};
    while (count < SENT) {
        int sig = sigtimedwait(&set, NULL, &wait);
        if (sig < 0)
            break;
        for (int i = 0; i < SENT; i++)
            if (sent[i] == sig && !got[i]) {
                got[i] = 1;
                count++;
            }
    }
    for (int i = 0; i < SENT; i++)
        if (got[i])
            snprintf(line + strlen(line), sizeof line - strlen(line), " %s",
                     sigabbrev_np(sent[i]));
    adv_say("%s", line);
    return 0;
}

/* The pid the program wrote to ready, within 10 s; -1. */
static pid_t await_ready(const char *ready)
{
    for (int i = 0; i < 1000; i++) {
        FILE *f = fopen(ready, "r");
        int pid = -1;
        if (f != NULL) {
            int ok = fscanf(f, "%d", &pid) == 1;
            fclose(f);
            if (ok)
                return (pid_t)pid;
        }
        sleep_ms(10);
    }
    return -1;
}

/* waitpid within 20 s; else the child is killed. */
static int await_exit(pid_t pid)
{
    int status = 0;
    for (int i = 0; i < 2000; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return status;
        sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return status;
}

static int case_signals(int argc, char **argv)
{
    (void)argc, (void)argv;
    char ready[512], report[512], logs[512];
    snprintf(ready, sizeof ready, "%s", adv_path("ready"));
    snprintf(report, sizeof report, "%s", adv_path("report.txt"));
    snprintf(logs, sizeof logs, "%s", adv_path("logs"));
    setenv("P2PSHIM_TOPO_FILE", adv_path("none.json"), 1);
    const char *launcher = getenv("ADV_LAUNCHER");
    char *direct[] = {(char *)adv_self, (char *)adv_mode, "target", ready, NULL};
    char *run[] = {(char *)launcher, "run",           "--log-dir", logs, "--report",
                   report,           "--",            (char *)adv_self, (char *)adv_mode,
                   "target",         ready,           NULL};
    pid_t pid = -1;
    int rc;
    if (adv_shim)
        rc = launcher ? posix_spawn(&pid, launcher, NULL, NULL, run, adv_plain_env()) : EINVAL;
    else
        rc = posix_spawn(&pid, adv_self, NULL, NULL, direct, environ);
    PL_EXPECT(rc == 0, "spawn: %s", strerror(rc));
    if (rc != 0)
        return 1;
    pid_t program = await_ready(ready);
    PL_EXPECT(program > 0, "the program never said it was ready");
    for (int i = 0; i < SENT; i++) {
        kill(pid, sent[i]);
        sleep_ms(30);
    }
    adv_status("its parent", await_exit(pid));
    if (program > 0)
        kill(program, SIGKILL); /* orphaned, when the launcher died */
    struct stat st;
    adv_say("report: %s", !adv_shim || (stat(report, &st) == 0 && st.st_size > 0)
                              ? "written"
                              : "missing");
    return 0;
}

int main(int argc, char **argv)
{
    static const struct adv_case cases[] = {
        {"signals", case_signals},
        {"target", case_target},
    };
    return adv_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
