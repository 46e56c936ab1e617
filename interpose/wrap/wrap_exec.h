/* The exec family's wrappers (wrap_exec.c). */
#ifndef P2PSHIM_WRAP_EXEC_H
#define P2PSHIM_WRAP_EXEC_H

/* What every exec does first: the run log drained and footed (nothing
 * when none is open). For the execs made through syscall() too. */
void exec_flush_records(void);

#endif
