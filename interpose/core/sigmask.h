/* The asynchronous signals, blocked in one call: what a quiet section
 * (shim.h) and the bounce module's locks (bounce/lock.h) block. For files
 * built with _GNU_SOURCE. */
#ifndef P2PSHIM_SIGMASK_H
#define P2PSHIM_SIGMASK_H

#include <pthread.h>
#include <signal.h>

/* Blocks every signal but the synchronous ones (a fault's SIGSEGV or
 * SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS: blocked, the kernel kills the
 * process when it raises one); the mask before goes into *old, for
 * pthread_sigmask(SIG_SETMASK, old, NULL) at the section's end. */
static inline void shim_block_async_signals(sigset_t *old)
{
    sigset_t async;
    sigfillset(&async);
    sigdelset(&async, SIGSEGV);
    sigdelset(&async, SIGBUS);
    sigdelset(&async, SIGFPE);
    sigdelset(&async, SIGILL);
    sigdelset(&async, SIGTRAP);
    sigdelset(&async, SIGSYS);
    pthread_sigmask(SIG_BLOCK, &async, old);
}

#endif
