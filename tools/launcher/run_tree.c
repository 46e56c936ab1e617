/* p2pshim run: the run folder, and the report of the logs of the
 * program's process tree after the run (run_tree.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "launcher.h"
#include "outfile.h"
#include "report.h"
#include "run_tree.h"

/* Removes the files of a folder the launcher made, then the folder. */
void run_tree_remove_dir(const char *dir)
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
bool run_tree_make_dir(const struct run_opts *ro, struct run_dir *d)
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

bool run_tree_quiet_logs(const struct run_opts *ro, bool has_log)
{
    return (ro->observe || ro->exit_line) && ro->report == NULL && !has_log &&
           ro->log_dir == NULL;
}

/* Renders the logs of root's tree that match pattern (a glob) to out in
 * format (NULL: the report's format by out's name; out NULL: stderr);
 * returns 0 or LAUNCHER_EXIT_REPORT. */
static int render_tree(const char *pattern, pid_t root, const struct run_opts *ro,
                       const char *where, const char *out, const char *format)
{
    bool shared = ro->log_dir != NULL;
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
    /* A file of the folder that is no readable log: a warning, not the end.
     * NULL topo: the bandwidth table at its default place, if there is one
     * and it was measured on the GPUs of the logs. */
    n = report_keep_usable(mine, n, false);
    int rc = n <= 0 ? REPORT_FAILED
                    : report_render_many((const char *const *)mine, n,
                                         out ? out : "/dev/stderr",
                                         format ? format : report_format_for(out), ro->topo);
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
int run_tree_report(const struct run_env *o, const struct run_opts *ro,
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
        return render_tree(glob_pat, pid, ro, where, NULL, "verdict") == 0 ? 0
                                                                           : LAUNCHER_EXIT_REPORT;
    }
    if (!outfile_expand_for(ro->report, (long)pid, out, sizeof out)) {
        launcher_error("--report %s: name too long", ro->report);
        return LAUNCHER_EXIT_REPORT;
    }
    return render_tree(glob_pat, pid, ro, where, out, NULL);
}

int run_tree_exit_line(const struct run_env *o, const struct run_opts *ro,
                       const struct run_dir *d, pid_t pid)
{
    char glob_pat[PATH_MAX + 64];
    const char *where = d->path[0] ? d->path : run_env_get(o, "P2PSHIM_RUN_LOG");
    if (d->path[0])
        snprintf(glob_pat, sizeof glob_pat, "%s/*.jsonl", d->path);
    else if (!glob_of(run_env_get(o, "P2PSHIM_RUN_LOG"), glob_pat, sizeof glob_pat))
        return LAUNCHER_EXIT_REPORT;
    glob_t g;
    if (glob(glob_pat, 0, NULL, &g) != 0)
        return 0;
    globfree(&g);
    return render_tree(glob_pat, pid, ro, where, NULL, "exit-line") == 0 ? 0
                                                                         : LAUNCHER_EXIT_REPORT;
}

