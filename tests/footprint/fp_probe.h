/* The footprint probe (tests/footprint): what the shim costs a process. */
#ifndef FP_PROBE_H
#define FP_PROBE_H

/* Every argument after argv[0] of the execs in fp_exec_calls.c. */
#define FP_EXEC_ARG "fp-exec-arg"
#define FP_EXEC_ARGS 100000

/* execl/execlp/execle of self with FP_EXEC_ARGS arguments; return only
 * when the exec failed (-1, errno set). */
int fp_execl(const char *self);
int fp_execlp(const char *self);
int fp_execle(const char *self, char *const envp[]);

#endif
