/* p2pshim run: where the run logs go and the report of them after the
 * run (run_tree.c). */
#ifndef P2PSHIM_RUN_TREE_H
#define P2PSHIM_RUN_TREE_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "run_env.h"

/* The options of run that are not variables of the shim. */
struct run_opts {
    const char *report, *log_dir, *topo;
    bool observe;
    /* Upgrade mode (the default): one line at exit on what the shim
     * upgraded and the time saved (run_tree_exit_line). */
    bool exit_line;
};

/* Whether the run's logs go to a temporary folder, removed after the
 * exit output: --observe's verdict or upgrade mode's exit line, with no
 * --log, --log-dir or --report to keep them. */
bool run_tree_quiet_logs(const struct run_opts *ro, bool has_log);

/* The run folder: where the logs of the tree go. */
struct run_dir {
    char path[PATH_MAX];
    bool temporary; /* removed after the verdict */
    bool made;      /* made by this launcher (removed again if left empty) */
};

/* Makes the run folder for ro: --log-dir (DIR's %p is the launcher's
 * pid; a folder that exists already is shared), p2pshim-HOST-DATE-TIME/
 * in the current folder for --report, else a temporary one for the
 * verdict. False after a message. */
bool run_tree_make_dir(const struct run_opts *ro, struct run_dir *d);

/* Removes the files of a folder the launcher made, then the folder. */
void run_tree_remove_dir(const char *dir);

/* After the run: the report of the logs of pid's tree (--report, its
 * format from the file's extension) or, without --report, the verdict on
 * stderr. Returns 0 or LAUNCHER_EXIT_REPORT. */
int run_tree_report(const struct run_env *o, const struct run_opts *ro,
                    const struct run_dir *d, pid_t pid);

/* Upgrade mode's exit line on stderr, from the same logs: quiet when no
 * process wrote one (a program without CUDA). Returns 0, or
 * LAUNCHER_EXIT_REPORT after a message when the logs could not be read
 * (run_with leaves the program's status alone then). */
int run_tree_exit_line(const struct run_env *o, const struct run_opts *ro,
                       const struct run_dir *d, pid_t pid);

#endif
