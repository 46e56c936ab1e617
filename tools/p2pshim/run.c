/* p2pshim run: runs a program with libp2pshim.so preloaded, the options
 * turned into P2PSHIM_* variables, and optionally renders a report of its
 * run log afterwards. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "cli.h"
#include "launcher.h"
#include "outfile.h"
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
    "  --log FILE          P2PSHIM_RUN_LOG: write the run log (JSON Lines) to FILE\n"
    "  --log-dir DIR       one run log per process of the program's tree in DIR,\n"
    "                      named HOST-pidPID-rankRANK.jsonl (rank x: none set)\n"
    "  --report FILE       after the run, render the run logs of the whole process\n"
    "                      tree to FILE (as p2pshim report does): .html a page,\n"
    "                      .json a Chrome trace, anything else the text summary.\n"
    "                      Without --log or --log-dir the logs go to a run folder\n"
    "                      p2pshim-HOST-DATE-TIME/ in the current folder\n"
    "In FILE and DIR, %p is the pid (of the program; of the launcher in DIR),\n"
    "%h the host name, %r the rank (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK,\n"
    "SLURM_PROCID), %q{VAR} the value of VAR, %% a %.\n"
    "With --observe and neither --log, --log-dir nor --report, the report's\n"
    "verdict is printed to stderr at exit (the logs go to a temporary folder).\n"
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
struct run_opts {
    const char *report, *log_dir;
    bool observe;
};

static int parse_options(int argc, char **argv, struct run_env *o, struct run_opts *ro)
{
    const char **report = &ro->report;
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
            ro->observe = true;
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
        } else if ((m = launcher_option_value(argc, argv, &i, "--log-dir", &v)) != 0) {
            if (m < 0)
                return LAUNCHER_EXIT_USAGE;
            if (v[0] == '\0') {
                launcher_error("--log-dir needs a folder name");
                return LAUNCHER_EXIT_USAGE;
            }
            ro->log_dir = v;
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

/* ---- the run folder and the report of the tree ---- */

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

/* The run folder: where the logs of the tree go. */
struct run_dir {
    char path[PATH_MAX];
    bool temporary; /* removed after the verdict */
    bool made;      /* made by this launcher (removed again if left empty) */
};

/* p2pshim-HOST-YYYYmmdd-HHMMSS in the current folder (-2, -3... if taken). */
static bool make_default_dir(struct run_dir *d)
{
    char host[256] = "", when[32];
    gethostname(host, sizeof host - 1);
    for (char *c = host; *c; c++)
        if (*c == '/')
            *c = '_';
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y%m%d-%H%M%S", &tm);
    for (int n = 1; n < 100; n++) {
        char suffix[16] = "";
        if (n > 1)
            snprintf(suffix, sizeof suffix, "-%d", n);
        snprintf(d->path, sizeof d->path, "p2pshim-%s-%s%s", host, when, suffix);
        if (mkdir(d->path, 0777) == 0) {
            d->made = true;
            return true;
        }
        if (errno != EEXIST)
            break;
    }
    launcher_error("cannot make the run folder %s: %s", d->path, strerror(errno));
    return false;
}

/* Makes the run folder for ro (--log-dir, the default one for --report, or
 * a temporary one for the verdict). False after a message. */
static bool make_run_dir(const struct run_opts *ro, struct run_dir *d)
{
    memset(d, 0, sizeof *d);
    if (ro->log_dir != NULL) {
        if (!outfile_expand_for(ro->log_dir, (long)getpid(), d->path, sizeof d->path)) {
            launcher_error("--log-dir %s: name too long", ro->log_dir);
            return false;
        }
        if (mkdir(d->path, 0777) == 0)
            d->made = true;
        else if (errno != EEXIST) { /* a folder shared by ranks: fine */
            launcher_error("cannot make the run folder %s: %s", d->path, strerror(errno));
            return false;
        }
        return true;
    }
    if (ro->report != NULL)
        return make_default_dir(d);
    const char *t = getenv("TMPDIR");
    snprintf(d->path, sizeof d->path, "%s/p2pshim-run.XXXXXX", t && *t ? t : "/tmp");
    if (mkdtemp(d->path) == NULL) {
        launcher_error("cannot make a temporary folder for the run logs: %s: %s", d->path,
                       strerror(errno));
        return false;
    }
    d->temporary = d->made = true;
    return true;
}

/* The glob pattern matching the files a P2PSHIM_RUN_LOG template names in
 * any process: %p, %r and %q{VAR} may differ per process. */
static bool glob_of(const char *pattern, char *out, size_t len)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    size_t o = 0;
    for (const char *p = pattern; *p; p++) {
        const char *piece = p;
        size_t n = 1;
        const char *close = p[0] == '%' && p[1] == 'q' && p[2] == '{' ? strchr(p, '}') : NULL;
        if (p[0] == '%' && (p[1] == 'p' || p[1] == 'r'))
            piece = "*", p++;
        else if (close != NULL)
            piece = "*", p = close;
        else if (p[0] == '%' && p[1] == 'h')
            piece = host, n = strlen(host), p++;
        else if (p[0] == '%' && p[1] == '%')
            p++, piece = p;
        if (n >= len - o)
            return false;
        memcpy(out + o, piece, n);
        o += n;
    }
    out[o] = '\0';
    return true;
}

/* The pid and parent pid in a log's first line (its header); false when
 * it has none yet. */
static bool header_pids(const char *path, long *pid, long *ppid)
{
    char line[4096];
    FILE *f = fopen(path, "r");
    bool ok = f != NULL && fgets(line, sizeof line, f) != NULL;
    if (f != NULL)
        fclose(f);
    const char *p = ok ? strstr(line, "\"pid\":") : NULL, *q = ok ? strstr(line, "\"ppid\":") : NULL;
    return p != NULL && q != NULL && sscanf(p, "\"pid\":%ld", pid) == 1 &&
           sscanf(q, "\"ppid\":%ld", ppid) == 1;
}

/* The logs of the process tree of root among paths (a --log-dir folder
 * that other launchers' trees share, one per rank, holds theirs too):
 * root's and its children's, and those whose parent's log is in, until
 * none is added. (A process between them that wrote no log, a shell
 * without exec say, cuts the chain: its children's logs are left out.) */
static int tree_logs(char **paths, int n, pid_t root, char **out)
{
    long pid[n > 0 ? n : 1], ppid[n > 0 ? n : 1];
    bool in[n > 0 ? n : 1], known[n > 0 ? n : 1];
    for (int i = 0; i < n; i++) {
        known[i] = header_pids(paths[i], &pid[i], &ppid[i]);
        in[i] = known[i] && (pid[i] == (long)root || ppid[i] == (long)root);
    }
    for (bool added = true; added;) {
        added = false;
        for (int i = 0; i < n; i++)
            for (int j = 0; known[i] && !in[i] && j < n; j++)
                if (in[j] && (ppid[i] == pid[j] || pid[i] == pid[j]))
                    in[i] = added = true;
    }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (in[i])
            out[m++] = paths[i];
    return m;
}

/* Renders the logs of root's tree that match pattern (a glob) to out
 * (NULL: the verdict on stderr); returns 0 or LAUNCHER_EXIT_REPORT. */
static int render_tree(const char *pattern, pid_t root, bool shared, const char *where,
                       const char *out)
{
    glob_t g;
    char **mine = NULL;
    int n = 0;
    if (glob(pattern, 0, NULL, &g) == 0) {
        mine = calloc(g.gl_pathc + 1, sizeof *mine);
        n = !mine ? 0 : shared ? tree_logs(g.gl_pathv, (int)g.gl_pathc, root, mine)
                               : (int)g.gl_pathc;
        for (int i = 0; mine && !shared && i < n; i++)
            mine[i] = g.gl_pathv[i];
    } else {
        g.gl_pathc = 0;
    }
    if (n == 0) {
        launcher_error("no run log in %s: did the program make any CUDA call?", where);
        if (g.gl_pathc)
            globfree(&g);
        free(mine);
        return LAUNCHER_EXIT_REPORT;
    }
    /* NULL topo: the bandwidth table at its default place, if there is one. */
    int rc = report_render_many((const char *const *)mine, n, out ? out : "/dev/stderr",
                                out ? format_of(out) : "verdict", NULL);
    free(mine);
    globfree(&g);
    if (rc != 0) {
        launcher_error("the report could not be rendered from %s", where);
        return LAUNCHER_EXIT_REPORT;
    }
    if (out != NULL)
        fprintf(stderr, "p2pshim: report written to %s\n", out);
    return 0;
}

/* After the run: the report of the tree (--report) or the verdict. */
static int report_after(const struct run_env *o, const struct run_opts *ro,
                        const struct run_dir *d, pid_t pid)
{
    char glob_pat[PATH_MAX + 64], out[PATH_MAX];
    const char *where = d->path[0] ? d->path : run_env_get(o, "P2PSHIM_RUN_LOG");
    if (d->path[0])
        snprintf(glob_pat, sizeof glob_pat, "%s/*.jsonl", d->path);
    else if (!glob_of(run_env_get(o, "P2PSHIM_RUN_LOG"), glob_pat, sizeof glob_pat))
        return LAUNCHER_EXIT_REPORT;
    if (ro->report == NULL) {
        /* The verdict: quiet when no process made a CUDA copy. */
        glob_t g;
        if (glob(glob_pat, 0, NULL, &g) != 0)
            return 0;
        globfree(&g);
        return render_tree(glob_pat, pid, ro->log_dir != NULL, where, NULL) == 0 ? 0 : LAUNCHER_EXIT_REPORT;
    }
    if (!outfile_expand_for(ro->report, (long)pid, out, sizeof out)) {
        launcher_error("--report %s: name too long", ro->report);
        return LAUNCHER_EXIT_REPORT;
    }
    return render_tree(glob_pat, pid, ro->log_dir != NULL, where, out);
}

/* The run after the options: library, preload, run logs, program, report. */
static int run_with(struct run_env *o, const struct run_opts *ro)
{
    char lib[PATH_MAX];
    if (!run_env_find_library(lib, sizeof lib))
        return LAUNCHER_EXIT_NO_LIBRARY;
    if (!run_env_build_preload(o, lib, getenv("LD_PRELOAD")))
        return LAUNCHER_EXIT_FAILURE;

    bool has_log = run_env_get(o, "P2PSHIM_RUN_LOG") != NULL;
    bool verdict = ro->observe && ro->report == NULL && !has_log && ro->log_dir == NULL;
    bool report = ro->report != NULL || verdict;
    struct run_dir d;
    memset(&d, 0, sizeof d);
    if ((ro->log_dir != NULL || (report && !has_log)) && !make_run_dir(ro, &d))
        return LAUNCHER_EXIT_REPORT;
    if (d.path[0]) {
        char pattern[PATH_MAX + 32];
        snprintf(pattern, sizeof pattern, "%s/%%h-pid%%p-rank%%r.jsonl", d.path);
        if (!run_env_set(o, "P2PSHIM_RUN_LOG", pattern)) {
            if (d.made)
                rmdir(d.path);
            return LAUNCHER_EXIT_FAILURE;
        }
        /* The absolute form: the program's chdir cannot move it. */
        const char *abs = run_env_get(o, "P2PSHIM_RUN_LOG");
        snprintf(d.path, sizeof d.path, "%.*s", (int)(strrchr(abs, '/') - abs), abs);
    }
    /* The P2PSHIM_* variables go into the launcher's own environment too:
     * the report reads P2PSHIM_TOPO_FILE as the program does. LD_PRELOAD
     * goes to the child only. */
    if (!run_env_export(o)) {
        if (d.made)
            remove_dir(d.path);
        return LAUNCHER_EXIT_FAILURE;
    }
    fflush(NULL);

    pid_t pid;
    int status = spawn_and_wait(o, &pid);
    if (report && pid > 0) {
        int r = report_after(o, ro, &d, pid);
        if (r != 0 && status == 0)
            status = r;
    }
    if (d.temporary)
        remove_dir(d.path);
    else if (d.made)
        rmdir(d.path); /* only if no process wrote a log */
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
    struct run_opts ro = {0};
    run_env_init(&o);
    int rc = parse_options(argc, argv, &o, &ro);
    if (rc == 0)
        rc = run_with(&o, &ro);
    else if (rc < 0)
        rc = 0; /* --help */
    run_env_free(&o);
    return rc;
}
