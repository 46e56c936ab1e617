/* The p2pshim launcher: what its subcommands share.
 *
 * Exit statuses of the launcher itself (a program run by `p2pshim run`
 * passes its own through, 128+N when killed by signal N):
 *   0 success, 1 failure of a subcommand (no driver, a CUDA error),
 *   2 usage, 3 libp2pshim.so not found, 4 report failed,
 *   126 program not executable, 127 program not found. */
#ifndef P2PSHIM_LAUNCHER_H
#define P2PSHIM_LAUNCHER_H

#include <stddef.h>

enum {
    LAUNCHER_EXIT_FAILURE = 1,
    LAUNCHER_EXIT_USAGE = 2,
    LAUNCHER_EXIT_NO_LIBRARY = 3,
    LAUNCHER_EXIT_REPORT = 4,
    LAUNCHER_EXIT_NOT_EXECUTABLE = 126,
    LAUNCHER_EXIT_NOT_FOUND = 127,
};

/* Subcommands: argv[0] is the subcommand's name; the return value is the
 * process's exit status. */
int run_main(int argc, char **argv);
/* p2pshim --print-library: prints the path of the library run would
 * preload (the same search, the same message and exit status 3 when there
 * is none). */
int run_print_library(void);
int topo_main(int argc, char **argv);

#endif
