/* The bounce module's table lock, taken in signal-safe sections (the
 * contract is table.h's): bounce_mu and bounce_cv live in table.c; these
 * inline functions are the only way a program thread takes the lock. For
 * files built with _GNU_SOURCE. */
#ifndef P2PSHIM_BOUNCE_LOCK_H
#define P2PSHIM_BOUNCE_LOCK_H

#include <pthread.h>
#include <signal.h>

#include "sigmask.h"
#include "uffd.h"

extern pthread_mutex_t bounce_mu;
extern pthread_cond_t bounce_cv;
/* The mask a program thread had before bounce_lock, restored by
 * bounce_unlock (per thread: a cond wait lets other threads take the
 * lock meanwhile). */
extern _Thread_local sigset_t bounce_held_mask;

/* Blocks every asynchronous signal, the mask before into *old
 * (core/sigmask.h): a section touches no memory of the program's. */
static inline void bounce_block_signals(sigset_t *old)
{
    shim_block_async_signals(old);
}

/* bounce_mu, with every asynchronous signal blocked until bounce_unlock
 * (the handler thread blocks them all from its start: no system call). */
static inline void bounce_lock(void)
{
    if (uffd_in_handler()) {
        pthread_mutex_lock(&bounce_mu);
        return;
    }
    sigset_t old;
    bounce_block_signals(&old);
    pthread_mutex_lock(&bounce_mu);
    bounce_held_mask = old;
}

static inline void bounce_unlock(void)
{
    if (uffd_in_handler()) {
        pthread_mutex_unlock(&bounce_mu);
        return;
    }
    sigset_t old = bounce_held_mask;
    pthread_mutex_unlock(&bounce_mu);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Waits on bounce_cv (lock held through bounce_lock; the mask stays). */
static inline void bounce_wait(void)
{
    pthread_cond_wait(&bounce_cv, &bounce_mu);
}

#endif
