/* p2pshim: the launcher's entry point. Dispatches to the subcommands run,
 * topo, report and trust; prints the top-level help and the version. Nothing
 * calls back into this file: what the subcommands share is in cli.c. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "launcher.h"
#include "report.h"
#include "trust_cmd.h"

#ifndef P2PSHIM_VERSION
#error "P2PSHIM_VERSION must be defined by the build"
#endif

static const char usage_text[] =
    "usage: p2pshim COMMAND [ARGS...]\n"
    "       p2pshim --help | --version | --print-library\n"
    "\n"
    "Runs unmodified CUDA programs with libp2pshim.so in front of them, so that\n"
    "their cross-GPU copies ride the peer link (NVLink), and profiles them.\n"
    "\n"
    "commands:\n"
    "  run [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "                 run PROGRAM under the shim (--observe: change nothing,\n"
    "                 record what the shim would do; --report FILE: write a report)\n"
    "  topo [--measure] [--json] [--output FILE]\n"
    "                 devices, peer access, links; --measure: bandwidth per pair\n"
    "  report [ARGS...]\n"
    "                 render a run log (docs/LOG_FORMAT.md) as a report\n"
    "  trust [--show] [--clear] [--check]\n"
    "                 the link verdicts the shim keeps; --check: check every pair now\n"
    "  help [COMMAND] this text, or a command's help\n"
    "\n"
    "`p2pshim COMMAND --help` tells more. --print-library prints the path of the\n"
    "libp2pshim.so that run preloads (for LD_PRELOAD=$(p2pshim --print-library)).\n"
    "\n"
    "exit status: run passes the program's own through (128+N if signal N\n"
    "killed it); otherwise 0 success, 1 failure, 2 usage error, 3 libp2pshim.so\n"
    "not found, 4 report failed, 126 program not executable, 127 program not\n"
    "found.\n";

/* Calls a subcommand with argv starting at its name. */
static int dispatch(int argc, char **argv)
{
    const char *cmd = argv[0];
    if (strcmp(cmd, "run") == 0)
        return run_main(argc, argv);
    if (strcmp(cmd, "topo") == 0)
        return topo_main(argc, argv);
    if (strcmp(cmd, "report") == 0)
        return report_main(argc, argv);
    if (strcmp(cmd, "trust") == 0)
        return trust_main(argc, argv);
    launcher_error("unknown command '%s' (commands: run, topo, report, trust; "
                   "see p2pshim --help)",
                   cmd);
    return LAUNCHER_EXIT_USAGE;
}

enum { OPT_VERSION, OPT_PRINT_LIBRARY, OPT_COMPLETION_TABLE = CLI_HIDDEN };

/* The launcher's own options, before the command. --completion-table is
 * for the bash completion (completion/p2pshim.bash), not for users. */
static const struct cli_option main_options[] = {
    {"version", 'V', false, OPT_VERSION},
    {"print-library", 0, false, OPT_PRINT_LIBRARY},
    {"completion-table", 0, false, OPT_COMPLETION_TABLE},
    {NULL, 0, false, 0},
};

/* The first of the launcher's own options given (cli_parse's callback):
 * it answers, and the command line is not read further. */
static int main_option(void *ctx, int id, const char *value)
{
    (void)value;
    *(int *)ctx = id;
    return CLI_STOP;
}

/* The values of run --set: each variable's name without its "P2PSHIM_"
 * (which run_env_assign adds back), and "=". */
static void print_set_choices(void)
{
    const char *sep = "";
#define SET_CHOICE(name, help) printf("%s%s=", sep, #name + strlen("P2PSHIM_")), sep = " ";
    P2PSHIM_CONFIG_VARS(SET_CHOICE)
#undef SET_CHOICE
}

/* The closed value sets of the options (cli_choices_fn): run's modes (the
 * shim's own names), run --set's names (the shim's table of variables) and
 * the report's formats (report.h; package.completion_table checks that the
 * report takes each). */
static void print_choices(const char *cmd, const char *name)
{
    if (strcmp(cmd, "run") == 0 && strcmp(name, "mode") == 0) {
        for (int i = 0; i < P2PSHIM_MODE_COUNT; i++)
            printf("%s%s", i ? " " : "", p2pshim_mode_names[i]);
    } else if (strcmp(cmd, "run") == 0 && strcmp(name, "set") == 0) {
        print_set_choices();
    } else if (strcmp(cmd, "report") == 0 && strcmp(name, "format") == 0) {
        fputs("text json csv trace html", stdout);
    }
}

/* p2pshim --completion-table: the commands, then the options of the
 * launcher and of each command, from the tables their parsers use (the
 * format is cli_table_mode's):
 *   commands<TAB>run topo report trust help */
static int completion_table(void)
{
    fputs("commands\t", stdout);
    for (int i = 0; cli_commands[i]; i++)
        printf("%s%s", i ? " " : "", cli_commands[i]);
    putchar('\n');
    cli_table_mode(print_choices);
    char *none[] = {NULL};
    int first;
    cli_parse(NULL, 0, none, main_options, true, main_option, NULL, &first);
    for (int i = 0; cli_commands[i]; i++) {
        if (strcmp(cli_commands[i], "help") == 0)
            continue; /* it takes a command's name, no option */
        char name[16];
        snprintf(name, sizeof name, "%s", cli_commands[i]);
        char *sub_argv[] = {name, NULL};
        dispatch(1, sub_argv);
    }
    return fflush(stdout) == 0 ? 0 : LAUNCHER_EXIT_FAILURE;
}

/* p2pshim help [COMMAND]: the command's --help. */
static int help(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stdout);
        return 0;
    }
    char help_opt[] = "--help";
    char *sub_argv[] = {argv[1], help_opt, NULL};
    return dispatch(2, sub_argv);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return LAUNCHER_EXIT_USAGE;
    }
    int which = -1, first = argc;
    int rc = cli_parse(NULL, argc, argv, main_options, true, main_option, &which, &first);
    if (rc == CLI_HELP) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (which == OPT_VERSION) {
        printf("p2pshim %s\n", P2PSHIM_VERSION);
        return 0;
    }
    if (which == OPT_COMPLETION_TABLE)
        return first < argc ? LAUNCHER_EXIT_USAGE : completion_table();
    if (which == OPT_PRINT_LIBRARY) {
        if (first < argc) {
            launcher_error("--print-library takes no argument");
            return LAUNCHER_EXIT_USAGE;
        }
        return run_print_library();
    }
    if (rc != CLI_OK)
        return rc;
    if (first >= argc) {
        fputs(usage_text, stderr);
        return LAUNCHER_EXIT_USAGE;
    }
    if (strcmp(argv[first], "help") == 0)
        return help(argc - first, argv + first);
    return dispatch(argc - first, argv + first);
}
