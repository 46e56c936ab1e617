/* p2pshim run: starting the program and waiting for it (run_child.c). */
#ifndef P2PSHIM_RUN_CHILD_H
#define P2PSHIM_RUN_CHILD_H

#include <sys/types.h>

#include "run_env.h"

/* Runs o->program with the environment of *o (LD_PRELOAD o->preload, for
 * the child only); returns the exit status the launcher should give (the
 * program's, 128+signal, or 126/127 when it could not be started), and
 * its pid in *pid (0 if it never ran). SIGINT, SIGTERM, SIGHUP and SIGQUIT
 * sent to the launcher alone are passed on while it runs. */
int run_child_spawn(const struct run_env *o, pid_t *pid);

#endif
