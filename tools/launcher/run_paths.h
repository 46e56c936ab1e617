/* p2pshim run: the files and folders a run will write, checked before
 * the program starts (run_paths.c), so that a profile is never lost to a
 * missing folder after the job has run. */
#ifndef P2PSHIM_RUN_PATHS_H
#define P2PSHIM_RUN_PATHS_H

#include <stdbool.h>

#include "run_env.h"
#include "run_tree.h"

/* Checks every output of the run that e and ro name: the run log
 * (P2PSHIM_RUN_LOG, from --log, --set or the environment), the shim's log
 * file (P2PSHIM_LOG_FILE), the --log-dir folder, the --report file, and
 * the current folder where a default run folder goes. The folders they go
 * in are made where missing, as `mkdir -p` would (for --log-dir, the
 * folders above it: it is made by run_tree_make_dir). Folders whose names
 * hold a per-process pattern (%p, and in a run log %r and %q{VAR}, which
 * differ between the program's processes) cannot be known now: the check
 * stops at the folder above them. Returns false after one line naming the
 * path and the reason:
 *   p2pshim: run: the report /x/out/r.html: /x/out is not a folder */
bool run_paths_check(const struct run_env *e, const struct run_opts *ro);

#endif
