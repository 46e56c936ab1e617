/* The write-protection made beside a staged copy (behind.h). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>

#include "behind.h"
#include "lock.h"
#include "log.h"
#include "thread_start.h"
#include "uffd.h"

/* How far the thread lifts a range taken over in one call: a staging
 * piece (stage.c), so that the writer never waits long for the first. */
#define AHEAD_BYTES ((uintptr_t)4 << 20)

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* any change, both ways */
    bool started, active, open, failed, busy;
    uintptr_t lo, hi;
    uintptr_t open_hi;  /* [lo, open_hi) writable (open series) */
    uintptr_t given_hi; /* [lo, given_hi) written by the writer */
    uintptr_t prot_hi;  /* [lo, prot_hi) protected again */
} bh = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* One step of work (lock held): the next piece ahead, else what was
 * written since the last protection. false: nothing to do. */
static bool step(void)
{
    if (!bh.active || bh.failed)
        return false;
    uintptr_t a, b;
    bool on;
    if (bh.open && bh.open_hi < bh.hi) {
        a = bh.open_hi;
        b = bh.hi - a > AHEAD_BYTES ? a + AHEAD_BYTES : bh.hi;
        on = false;
    } else if (bh.prot_hi < bh.given_hi) {
        a = bh.prot_hi;
        b = bh.given_hi;
        on = true;
    } else {
        return false;
    }
    bh.busy = true;
    pthread_mutex_unlock(&bh.mu);
    bool ok = uffd_protect(a, b - a, on);
    pthread_mutex_lock(&bh.mu);
    bh.busy = false;
    if (!ok)
        bh.failed = true;
    else if (on)
        bh.prot_hi = b;
    else
        bh.open_hi = b;
    pthread_cond_broadcast(&bh.cv);
    return true;
}

static void *worker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&bh.mu);
    for (;;)
        if (!step())
            pthread_cond_wait(&bh.cv, &bh.mu);
    return NULL;
}

/* The writer's sections: every asynchronous signal blocked, so that a
 * signal handler on the writer's thread never waits for a lock the
 * interrupted code holds. */
static void writer_lock(sigset_t *old)
{
    bounce_block_signals(old);
    pthread_mutex_lock(&bh.mu);
}

static void writer_unlock(const sigset_t *old)
{
    pthread_mutex_unlock(&bh.mu);
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

bool bounce_behind_begin(uintptr_t lo, uintptr_t hi, bool open)
{
    sigset_t old;
    writer_lock(&old);
    if (!bh.started) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_t t;
        int rc = shim_thread_start(&t, &attr, worker_main, NULL);
        pthread_attr_destroy(&attr);
        if (rc == 0) {
            pthread_setname_np(t, "p2pshim-wp");
            bh.started = true;
        } else {
            LOG_DEBUG("bounce: no thread for the protection beside a copy: made after it");
        }
    }
    bool ok = bh.started && !bh.active;
    if (ok) {
        bh.active = true;
        bh.open = open;
        bh.failed = false;
        bh.lo = lo;
        bh.hi = hi;
        bh.open_hi = open ? lo : hi;
        bh.given_hi = bh.prot_hi = lo;
        pthread_cond_broadcast(&bh.cv);
    }
    writer_unlock(&old);
    return ok;
}

bool bounce_behind_ahead(uintptr_t at)
{
    sigset_t old;
    writer_lock(&old);
    if (at > bh.hi)
        at = bh.hi;
    while (bh.open_hi < at && !bh.failed)
        pthread_cond_wait(&bh.cv, &bh.mu);
    bool ok = !bh.failed;
    writer_unlock(&old);
    return ok;
}

void bounce_behind_wrote(uintptr_t at)
{
    sigset_t old;
    writer_lock(&old);
    if (at > bh.hi)
        at = bh.hi;
    if (at > bh.given_hi) {
        bh.given_hi = at;
        pthread_cond_broadcast(&bh.cv);
    }
    writer_unlock(&old);
}

bool bounce_behind_end(void)
{
    sigset_t old;
    writer_lock(&old);
    while (bh.busy || (!bh.failed && (bh.prot_hi < bh.given_hi || bh.open_hi < bh.hi)))
        pthread_cond_wait(&bh.cv, &bh.mu);
    bool ok = !bh.failed;
    bh.active = false;
    writer_unlock(&old);
    return ok;
}

void bounce_behind_after_fork_child(void)
{
    pthread_mutex_init(&bh.mu, NULL);
    pthread_cond_init(&bh.cv, NULL);
    bh.started = bh.active = bh.busy = false;
}
