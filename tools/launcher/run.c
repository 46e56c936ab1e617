/* p2pshim run: runs a program with libp2pshim.so preloaded, the options
 * turned into P2PSHIM_* variables, and optionally renders a report of its
 * run log afterwards (the child: run_child.c; the logs and the report:
 * run_tree.c). */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "cli.h"
#include "launcher.h"
#include "run_child.h"
#include "run_env.h"
#include "run_paths.h"
#include "run_tree.h"

static const char run_usage[] =
    "usage: p2pshim run [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with libp2pshim.so first in LD_PRELOAD (an existing LD_PRELOAD\n"
    "is kept after it), and waits for it. Every signal sent to the launcher\n"
    "(SIGTERM, SIGUSR1, SIGALRM, ...) is passed on to the program, and the\n"
    "launcher waits on for it to end and writes its report; a terminal's keys\n"
    "(Ctrl-C, Ctrl-Z) reach the program directly. Options end at PROGRAM or at\n"
    "--. An option's value may follow it (--log FILE) or be joined to it\n"
    "(--log=FILE).\n"
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
    "                      .json the JSON report, .csv a table, .trace.json or\n"
    "                      .pftrace a Chrome trace, anything else the text summary.\n"
    "                      Without --log or --log-dir the logs go to a run folder\n"
    "                      p2pshim-HOST-DATE-TIME/ in the current folder\n"
    "  --topo FILE         the bandwidth table for the report, even one measured\n"
    "                      on another machine (see p2pshim report --help)\n"
    "  --set NAME=VALUE    any P2PSHIM_* variable (the prefix may be left out),\n"
    "                      e.g. --set LOG=info --set PAIRS=0-1\n"
    "  -h, --help          this text\n"
    "\n"
    "In FILE and DIR, %p is the pid (of the program; of the launcher in DIR),\n"
    "%h the host name, %r the rank (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK,\n"
    "SLURM_PROCID), %q{VAR} the value of VAR, %% a %.\n"
    "With --observe and neither --log, --log-dir nor --report, the report's\n"
    "verdict is printed to stderr at exit (the logs go to a temporary folder).\n"
    "In upgrade mode (the default) one line at exit says the copies upgraded,\n"
    "their bytes and the time saved: a nominal estimate from each GPU pair's\n"
    "link (as NVML or the bandwidth table names it), or, with --set CUPTI=1,\n"
    "one from the copies' CUPTI times.\n"
    "\n"
    "The library is $P2PSHIM_LIBRARY if set, else libp2pshim.so beside the\n"
    "launcher, in " P2PSHIM_LIBDIR_FROM_BINDIR " from it, or in the build tree's\n"
    "interpose/; `p2pshim --print-library` prints which.\n"
    "\n"
    "Before PROGRAM starts, the P2PSHIM_* variables of the environment are checked\n"
    "as the shim reads them, and every file the run writes: the folders they go\n"
    "in are made where missing; a bad value or a path that cannot be written is\n"
    "a usage error.\n"
    "\n"
    "exit status: the program's own (128+N if signal N killed it); 2 usage\n"
    "error, 3 libp2pshim.so not found, 4 report failed (when the program itself\n"
    "exited 0), 126 program not executable, 127 program not found.\n";

enum { OPT_OBSERVE, OPT_MODE, OPT_LOG, OPT_LOG_DIR, OPT_REPORT, OPT_TOPO, OPT_SET };

static const struct cli_option run_options[] = {
    {"observe", 0, false, OPT_OBSERVE}, {"mode", 0, true, OPT_MODE},
    {"log", 0, true, OPT_LOG},          {"log-dir", 0, true, OPT_LOG_DIR},
    {"report", 0, true, OPT_REPORT},    {"topo", 0, true, OPT_TOPO},
    {"set", 0, true, OPT_SET},          {NULL, 0, false, 0},
};

struct run_parse {
    struct run_env *env;
    struct run_opts *ro;
};

/* A file or folder name: never empty. */
static int need_name(const char *opt, const char *v, const char *what)
{
    if (v[0] != '\0')
        return CLI_OK;
    launcher_error("run: --%s needs a %s name", opt, what);
    return LAUNCHER_EXIT_USAGE;
}

/* One option of run (cli_parse's callback). */
static int run_option(void *ctx, int id, const char *v)
{
    struct run_parse *p = ctx;
    bool ok = true;
    switch (id) {
    case OPT_OBSERVE:
        ok = run_env_set(p->env, "P2PSHIM_MODE", p2pshim_mode_names[P2PSHIM_MODE_OBSERVE]);
        p->ro->observe = true;
        break;
    case OPT_MODE:
        ok = run_env_set(p->env, "P2PSHIM_MODE", v);
        break;
    case OPT_LOG:
        if (need_name("log", v, "file") != CLI_OK)
            return LAUNCHER_EXIT_USAGE;
        ok = run_env_set(p->env, "P2PSHIM_RUN_LOG", v);
        break;
    case OPT_LOG_DIR:
        p->ro->log_dir = v;
        return need_name("log-dir", v, "folder");
    case OPT_REPORT:
        p->ro->report = v;
        return need_name("report", v, "file");
    case OPT_TOPO:
        p->ro->topo = v;
        return need_name("topo", v, "file");
    case OPT_SET:
        ok = run_env_assign(p->env, v);
        break;
    }
    return ok ? CLI_OK : LAUNCHER_EXIT_USAGE;
}

/* Parses the run options into *o and *ro; returns 0, CLI_HELP or an exit
 * status. Options end at PROGRAM (or --): the rest is the program's. */
static int parse_options(int argc, char **argv, struct run_env *o, struct run_opts *ro)
{
    struct run_parse p = {o, ro};
    int first;
    int rc = cli_parse("run", argc, argv, run_options, true, run_option, &p, &first);
    if (rc != CLI_OK)
        return rc;
    if (first >= argc) {
        launcher_error("run: no program given (usage: p2pshim run [OPTIONS] [--] PROGRAM "
                       "[ARGS...])");
        return LAUNCHER_EXIT_USAGE;
    }
    o->program = argv + first;
    return 0;
}
/* The run after the options: library, preload, run logs, program, report. */
static int run_with(struct run_env *o, const struct run_opts *ro)
{
    char lib[PATH_MAX];
    if (!run_env_find_library(lib, sizeof lib))
        return LAUNCHER_EXIT_NO_LIBRARY;
    if (!run_env_build_preload(o, lib, getenv("LD_PRELOAD")))
        return LAUNCHER_EXIT_FAILURE;
    /* Refused before the job, never after it: a bad inherited value, an
     * output that cannot be written. */
    if (!run_env_check_inherited(o, environ) || !run_paths_check(o, ro))
        return LAUNCHER_EXIT_USAGE;

    bool has_log = run_env_get(o, "P2PSHIM_RUN_LOG") != NULL;
    bool verdict = ro->observe && run_tree_quiet_logs(ro, has_log);
    bool report = ro->report != NULL || verdict;
    bool logs = report || ro->exit_line;
    struct run_dir d;
    memset(&d, 0, sizeof d);
    if ((ro->log_dir != NULL || (logs && !has_log)) && !run_tree_make_dir(ro, &d))
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
            run_tree_remove_dir(d.path);
        return LAUNCHER_EXIT_FAILURE;
    }
    fflush(NULL);

    pid_t pid;
    int status = run_child_spawn(o, &pid);
    if (report && pid > 0) {
        int r = run_tree_report(o, ro, &d, pid);
        if (r != 0 && status == 0)
            status = r;
    }
    /* The exit line informs: a log it cannot read is said, not the run's status. */
    if (ro->exit_line && pid > 0)
        (void)run_tree_exit_line(o, ro, &d, pid);
    if (d.temporary)
        run_tree_remove_dir(d.path);
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
    if (rc == 0) {
        /* The mode the shim will run in: the options', else the
         * environment's, else its default (upgrade). */
        const char *mode = run_env_get(&o, "P2PSHIM_MODE");
        mode = mode ? mode : getenv("P2PSHIM_MODE");
        ro.exit_line = !mode || !mode[0] ||
                       strcmp(mode, p2pshim_mode_names[P2PSHIM_MODE_UPGRADE]) == 0;
        /* A run log the environment names is where the exit line reads
         * the run from (no temporary folder replaces it). */
        const char *log = getenv("P2PSHIM_RUN_LOG");
        if (ro.exit_line && log && log[0] && !run_env_get(&o, "P2PSHIM_RUN_LOG") &&
            !ro.report && !ro.log_dir && !run_env_set(&o, "P2PSHIM_RUN_LOG", log))
            rc = LAUNCHER_EXIT_USAGE;
    }
    if (rc == 0) {
        rc = run_with(&o, &ro);
    } else if (rc == CLI_HELP) {
        fputs(run_usage, stdout);
        rc = 0;
    }
    run_env_free(&o);
    return rc;
}
