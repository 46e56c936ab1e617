/* p2pshim run: runs a program with libp2pshim.so preloaded, the options
 * turned into P2PSHIM_* variables, and optionally renders a report of its
 * run log afterwards. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "launcher.h"
#include "report.h"
#include "run_env.h"

static const char run_usage[] =
    "usage: p2pshim run [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with libp2pshim.so first in LD_PRELOAD (an existing LD_PRELOAD\n"
    "is kept after it), and waits for it. SIGINT, SIGTERM, SIGHUP and SIGQUIT\n"
    "sent to the launcher are passed on to the program (a terminal's Ctrl-C\n"
    "reaches it directly). Options end at PROGRAM or at --.\n"
    "\n"
    "options (later ones win where they set the same variable):\n"
    "  --observe           P2PSHIM_MODE=observe: change nothing, record what the\n"
    "                      shim would do (with CUPTI timings where available)\n"
    "  --mode MODE         P2PSHIM_MODE: upgrade (default), observe or off\n"
    "  --log FILE          P2PSHIM_RUN_LOG: write the run log (JSON Lines) to FILE;\n"
    "                      %p is the program's pid\n"
    "  --report FILE       after the run, render the run log to FILE (as\n"
    "                      p2pshim report does): .html a page, .json a Chrome\n"
    "                      trace, anything else the text summary. Without --log\n"
    "                      a temporary run log is used, and removed\n"
    "  --set NAME=VALUE    any P2PSHIM_* variable (the prefix may be left out),\n"
    "                      e.g. --set LOG=info --set PAIRS=0-1\n"
    "  -h, --help          this text\n"
    "\n"
    "The library is $P2PSHIM_LIBRARY if set, else libp2pshim.so beside the\n"
    "launcher, in " P2PSHIM_LIBDIR_FROM_BINDIR " from it, or in the build tree's\n"
    "interpose/; `p2pshim --print-library` prints which.\n"
    "\n"
    "exit status: the program's own (128+N if signal N killed it); 2 usage\n"
    "error, 3 libp2pshim.so not found, 4 report failed (when the program itself\n"
    "exited 0), 126 program not executable, 127 program not found.\n";

/* The report's format from the output file's extension, by the rule of
 * `p2pshim report -o FILE` (report.h): .html/.htm html, .json trace,
 * anything else text. */
static const char *format_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot == NULL || strchr(dot, '/') != NULL)
        return "text";
    if (strcasecmp(dot, ".html") == 0 || strcasecmp(dot, ".htm") == 0)
        return "html";
    if (strcasecmp(dot, ".json") == 0)
        return "trace";
    return "text";
}

/* Whether v names a mode of the shim's list, written as the usage writes
 * it (lower case). */
static bool is_mode_name(const char *v)
{
    for (int i = 0; i < P2PSHIM_MODE_COUNT; i++)
        if (strcmp(v, p2pshim_mode_names[i]) == 0)
            return true;
    return false;
}

/* Parses the run options into *o; returns 0 or an exit status. */
static int parse_options(int argc, char **argv, struct run_env *o, const char **report)
{
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int m;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0')
            break; /* PROGRAM: the rest is the program's */
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(run_usage, stdout);
            return -1;
        }
        if (strcmp(a, "--observe") == 0) {
            const char *observe = p2pshim_mode_names[P2PSHIM_MODE_OBSERVE];
            if (!run_env_set(o, "P2PSHIM_MODE", observe))
                return LAUNCHER_EXIT_USAGE;
        } else if ((m = launcher_option_value(argc, argv, &i, "--mode", &v)) != 0) {
            if (m < 0)
                return LAUNCHER_EXIT_USAGE;
            if (!is_mode_name(v)) {
                char modes[64];
                config_name_list(p2pshim_mode_names, P2PSHIM_MODE_COUNT, modes,
                                 sizeof modes);
                launcher_error("--mode %s: not a mode (%s)", v, modes);
                return LAUNCHER_EXIT_USAGE;
            }
            if (!run_env_set(o, "P2PSHIM_MODE", v))
                return LAUNCHER_EXIT_USAGE;
        } else if ((m = launcher_option_value(argc, argv, &i, "--log", &v)) != 0) {
            if (m < 0)
                return LAUNCHER_EXIT_USAGE;
            if (v[0] == '\0') {
                launcher_error("--log needs a file name");
                return LAUNCHER_EXIT_USAGE;
            }
            if (!run_env_set(o, "P2PSHIM_RUN_LOG", v))
                return LAUNCHER_EXIT_USAGE;
        } else if ((m = launcher_option_value(argc, argv, &i, "--report", &v)) != 0) {
            if (m < 0)
                return LAUNCHER_EXIT_USAGE;
            if (v[0] == '\0') {
                launcher_error("--report needs a file name");
                return LAUNCHER_EXIT_USAGE;
            }
            *report = v;
        } else if ((m = launcher_option_value(argc, argv, &i, "--set", &v)) != 0) {
            if (m < 0 || !run_env_assign(o, v))
                return LAUNCHER_EXIT_USAGE;
        } else {
            launcher_error("run: unknown option '%s' (see p2pshim run --help)", a);
            return LAUNCHER_EXIT_USAGE;
        }
    }
    if (i >= argc) {
        launcher_error("run: no program given (usage: p2pshim run [OPTIONS] [--] PROGRAM "
                       "[ARGS...])");
        return LAUNCHER_EXIT_USAGE;
    }
    o->program = argv + i;
    return 0;
}

/* ---- the child and its signals ---- */

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
static int spawn_and_wait(const struct run_env *o, pid_t *pid)
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

/* ---- the temporary run log ---- */

/* Removes the files of a folder the launcher made, then the folder. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d != NULL) {
        struct dirent *e;
        char path[PATH_MAX];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
                unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Renders the run log of process pid (pattern: the P2PSHIM_RUN_LOG value)
 * to out; returns 0 or LAUNCHER_EXIT_REPORT. */
static int render(const char *pattern, pid_t pid, const char *out)
{
    char log[PATH_MAX];
    if (!run_env_expand_pid(pattern, pid, log, sizeof log)) {
        launcher_error("run log name too long: %s", pattern);
        return LAUNCHER_EXIT_REPORT;
    }
    if (access(log, R_OK) != 0) {
        launcher_error("no run log at %s (%s): did the program make any CUDA call?", log,
                       strerror(errno));
        return LAUNCHER_EXIT_REPORT;
    }
    /* NULL: the bandwidth table at its default place, if there is one. */
    if (report_render(log, out, format_of(out), NULL) != 0) {
        launcher_error("the report could not be rendered from %s", log);
        return LAUNCHER_EXIT_REPORT;
    }
    fprintf(stderr, "p2pshim: report written to %s\n", out);
    return 0;
}

/* The run after the options: library, preload, run log, program, report. */
static int run_with(struct run_env *o, const char *report)
{
    char lib[PATH_MAX];
    if (!run_env_find_library(lib, sizeof lib))
        return LAUNCHER_EXIT_NO_LIBRARY;
    if (!run_env_build_preload(o, lib, getenv("LD_PRELOAD")))
        return LAUNCHER_EXIT_FAILURE;

    char tmpdir[PATH_MAX] = "";
    if (report != NULL && run_env_get(o, "P2PSHIM_RUN_LOG") == NULL) {
        const char *t = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/p2pshim-run.XXXXXX", t && *t ? t : "/tmp");
        if (mkdtemp(tmpdir) == NULL) {
            launcher_error("cannot make a temporary folder for the run log: %s: %s", tmpdir,
                           strerror(errno));
            return LAUNCHER_EXIT_REPORT;
        }
        char pattern[PATH_MAX + 32];
        snprintf(pattern, sizeof pattern, "%s/run-%%p.jsonl", tmpdir);
        if (!run_env_set(o, "P2PSHIM_RUN_LOG", pattern)) {
            remove_dir(tmpdir);
            return LAUNCHER_EXIT_FAILURE;
        }
    }
    /* The P2PSHIM_* variables go into the launcher's own environment too:
     * the report reads P2PSHIM_TOPO_FILE as the program does. LD_PRELOAD
     * goes to the child only. */
    if (!run_env_export(o)) {
        if (tmpdir[0])
            remove_dir(tmpdir);
        return LAUNCHER_EXIT_FAILURE;
    }
    fflush(NULL);

    pid_t pid;
    int status = spawn_and_wait(o, &pid);
    if (report != NULL && pid > 0) {
        int r = render(run_env_get(o, "P2PSHIM_RUN_LOG"), pid, report);
        /* A log that failed to render is kept for a look (rmdir fails
         * on a folder that has one). */
        if (r != 0 && tmpdir[0]) {
            if (rmdir(tmpdir) != 0)
                fprintf(stderr, "p2pshim: the run log is kept in %s\n", tmpdir);
            tmpdir[0] = '\0';
        }
        if (r != 0 && status == 0)
            status = r;
    }
    if (tmpdir[0])
        remove_dir(tmpdir);
    return status;
}

int run_print_library(void)
{
    char lib[PATH_MAX];
    if (!run_env_find_library(lib, sizeof lib))
        return LAUNCHER_EXIT_NO_LIBRARY;
    printf("%s\n", lib);
    return 0;
}

int run_main(int argc, char **argv)
{
    struct run_env o;
    const char *report = NULL;
    run_env_init(&o);
    int rc = parse_options(argc, argv, &o, &report);
    if (rc == 0)
        rc = run_with(&o, report);
    else if (rc < 0)
        rc = 0; /* --help */
    run_env_free(&o);
    return rc;
}
