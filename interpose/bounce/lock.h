/* The bounce module's table lock, taken in signal-safe sections (the
 * contract is table.h's): bounce_mu and bounce_cv live in table.c; these
 * inline functions are the only way a program thread takes the lock. For
 * files built with _GNU_SOURCE. */
#ifndef P2PSHIM_BOUNCE_LOCK_H
#define P2PSHIM_BOUNCE_LOCK_H

#include <pthread.h>
#include <signal.h>

#include "shim.h"
#include "sigmask.h"
#include "uffd.h"

extern pthread_mutex_t bounce_mu;
extern pthread_cond_t bounce_cv;

/* Blocks every asynchronous signal, the mask before into *old
 * (core/sigmask.h): a section touches no memory of the program's. */
static inline void bounce_block_signals(sigset_t *old)
{
    shim_block_async_signals(old);
}

/* bounce_mu inside a quiet section (core/shim.h: every asynchronous
 * signal blocked until bounce_unlock; nested in a wrapper's section, no
 * system call). The handler thread blocks them all from its start. */
static inline void bounce_lock(void)
{
    if (!uffd_in_handler())
        shim_quiet_begin(true);
    pthread_mutex_lock(&bounce_mu);
}

static inline void bounce_unlock(void)
{
    pthread_mutex_unlock(&bounce_mu);
    if (!uffd_in_handler())
        shim_quiet_end(true);
}

/* Waits on bounce_cv (lock held through bounce_lock; the mask stays). */
static inline void bounce_wait(void)
{
    pthread_cond_wait(&bounce_cv, &bounce_mu);
}

#endif
