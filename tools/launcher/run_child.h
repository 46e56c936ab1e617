/* p2pshim run: starting the program and waiting for it (run_child.c). */
#ifndef P2PSHIM_RUN_CHILD_H
#define P2PSHIM_RUN_CHILD_H

#include <sys/types.h>

#include "run_env.h"

/* Runs o->program with the environment of *o (LD_PRELOAD o->preload, for
 * the child only); returns the exit status the launcher should give (the
 * program's, 128+signal, or 126/127 when it could not be started), and
 * its pid in *pid (0 if it never ran). Every signal a process can catch
 * that is sent to the launcher is passed on to the program while it runs
 * (run_child.c says which are not: a terminal's, the program's own, the
 * launcher's faults); the launcher stops when a stop signal comes, with
 * the program. Afterwards SIGINT, SIGTERM, SIGHUP, SIGQUIT and the job
 * control signals act on the launcher again; the others stay blocked. */
int run_child_spawn(const struct run_env *o, pid_t *pid);

#endif
