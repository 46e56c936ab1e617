/* p2pshim run: the outputs of a run, checked (and their folders made)
 * before the program starts (run_paths.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "outfile.h"
#include "run_paths.h"

/* The patterns of a name that differ between the processes expanding it:
 * the pid, and the rank and variables (%r, %q{VAR}) that a job's
 * processes set each their own. */
enum { PER_PID = 1, PER_RANK = 2 };

/* One output: what it is (for the message), its name as given, which of
 * its patterns are per process, how it is written. */
struct run_output {
    const char *what, *pattern;
    int per;
    bool folder;   /* the name is a folder to make (--log-dir) */
    bool renamed;  /* written beside itself and renamed (a report) */
};

/* Whether pattern[i] starts a pattern that is per process for o. */
static bool per_process_at(const struct run_output *o, const char *p)
{
    return p[0] == '%' && ((p[1] == 'p' && (o->per & PER_PID)) ||
                           ((p[1] == 'r' || p[1] == 'q') && (o->per & PER_RANK)));
}

/* The length of the part of pattern[0..n) before the first folder whose
 * name holds a per-process pattern (all of it when none does). */
static size_t fixed_length(const struct run_output *o, size_t n)
{
    size_t start = 0; /* of the current name */
    for (size_t i = 0; i < n; i++) {
        if (o->pattern[i] == '/')
            start = i;
        else if (o->pattern[i] == '%' && o->pattern[i + 1] == '%')
            i++;
        else if (per_process_at(o, o->pattern + i))
            return start;
    }
    return n;
}

/* The folder o's file goes in, as far as it is the same for every process
 * (expanded; "." or "/" when nothing of it is), and whether the file's own
 * name is too (then *file is the whole name, expanded). */
static bool split(const struct run_output *o, char *dir, char *file, bool *file_known)
{
    const char *slash = strrchr(o->pattern, '/');
    size_t n = slash != NULL ? (size_t)(slash - o->pattern) : 0;
    size_t fixed = fixed_length(o, n);
    char head[PATH_MAX];
    if (fixed >= sizeof head)
        return false;
    memcpy(head, o->pattern, fixed);
    head[fixed] = '\0';
    if (fixed == 0)
        snprintf(head, sizeof head, "%s", o->pattern[0] == '/' ? "/" : ".");
    *file_known = fixed == n && fixed_length(o, strlen(o->pattern)) == strlen(o->pattern);
    long pid = (long)getpid(); /* a --log-dir's %p: the launcher's */
    return outfile_expand_for(head, pid, dir, PATH_MAX) &&
           (!*file_known || outfile_expand_for(o->pattern, pid, file, PATH_MAX));
}

/* Makes dir and the folders above it where missing, as `mkdir -p`.
 * Returns 0, or the error with the folder that failed in bad: ENOTDIR
 * when a name on the way is a file, else mkdir's or stat's errno. */
static int make_folders(const char *dir, char *bad, size_t len)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char end = *p;
        struct stat st;
        *p = '\0';
        int err = 0;
        if (stat(path, &st) == 0)
            err = S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
        else if (errno != ENOENT || (mkdir(path, 0777) != 0 && errno != EEXIST))
            err = errno;
        if (err != 0) {
            snprintf(bad, len, "%s", path);
            return err;
        }
        *p = end;
        if (end == '\0')
            return 0;
    }
}

/* Checks one output, making its folders; false after its one line. */
static bool check_one(const struct run_output *o)
{
    char dir[PATH_MAX], file[PATH_MAX], bad[PATH_MAX];
    bool file_known = false;
    if (!split(o, dir, file, &file_known)) {
        launcher_error("run: %s %s: name too long", o->what, o->pattern);
        return false;
    }
    int err = make_folders(dir, bad, sizeof bad);
    if (err == ENOTDIR) {
        launcher_error("run: %s %s: %s is not a folder", o->what, o->pattern, bad);
        return false;
    }
    if (err != 0) {
        launcher_error("run: %s %s: cannot make the folder %s: %s", o->what, o->pattern, bad,
                       strerror(err));
        return false;
    }
    struct stat st;
    bool exists = file_known && stat(file, &st) == 0;
    const char *target = dir; /* what must be writable */
    if (exists && o->folder != (bool)S_ISDIR(st.st_mode)) {
        launcher_error("run: %s %s: %s %s", o->what, o->pattern, file,
                       o->folder ? "is not a folder" : "is a folder");
        return false;
    }
    /* A folder, a log (appended to) and a device are written in place; a
     * report beside itself, then renamed over the old one. */
    if (exists && (o->folder || !o->renamed || !S_ISREG(st.st_mode)))
        target = file;
    bool is_dir = target == dir || o->folder;
    if (access(target, is_dir ? W_OK | X_OK : W_OK) != 0) {
        launcher_error("run: %s %s: cannot write %s %s: %s", o->what, o->pattern,
                       is_dir ? "in" : "to", target, strerror(errno));
        return false;
    }
    return true;
}

/* The current folder, where --report without --log makes the run folder. */
static bool check_current_folder(void)
{
    if (access(".", W_OK | X_OK) == 0)
        return true;
    int err = errno;
    char cwd[PATH_MAX];
    launcher_error("run: --report: cannot make the run folder in the current folder %s: %s "
                   "(--log or --log-dir names another place)",
                   getcwd(cwd, sizeof cwd) != NULL ? cwd : ".", strerror(err));
    return false;
}

/* A variable's value for the program: the option's, else the inherited
 * one; NULL when unset or empty (the same as unset). */
static const char *value_of(const struct run_env *e, const char *name)
{
    const char *v = run_env_get(e, name);
    if (v == NULL)
        v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

bool run_paths_check(const struct run_env *e, const struct run_opts *ro)
{
    const char *opt_log = run_env_get(e, "P2PSHIM_RUN_LOG");
    bool verdict = run_tree_quiet_logs(ro, opt_log != NULL);
    /* As run_with decides: a run folder takes the logs, else the variable. */
    bool run_folder = ro->log_dir != NULL || ((ro->report != NULL || verdict) && opt_log == NULL);
    const char *run_log = run_folder ? NULL : value_of(e, "P2PSHIM_RUN_LOG");
    const char *log_file = value_of(e, "P2PSHIM_LOG_FILE");
    bool ok = true;
    if (ro->log_dir != NULL)
        ok = check_one(&(struct run_output){"the run folder", ro->log_dir, 0, true, false});
    else if (run_folder && ro->report != NULL)
        ok = check_current_folder();
    if (ok && run_log != NULL)
        ok = check_one(&(struct run_output){"the run log", run_log, PER_PID | PER_RANK, false, false});
    if (ok && log_file != NULL)
        ok = check_one(&(struct run_output){"the log file", log_file, PER_PID | PER_RANK, false,
                                        false});
    if (ok && ro->report != NULL)
        ok = check_one(&(struct run_output){"the report", ro->report, PER_PID, false, true});
    return ok;
}
