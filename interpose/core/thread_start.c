#define _GNU_SOURCE
#include "thread_start.h"

#include <signal.h>
#include <stdbool.h>

struct handshake {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool running;
    void *(*fn)(void *);
    void *arg;
};

static void *trampoline(void *p)
{
    struct handshake *h = p;
    void *(*fn)(void *) = h->fn;
    void *arg = h->arg;
    pthread_mutex_lock(&h->mu);
    h->running = true;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    /* h lives in the creator's frame: not touched past this point. */
    return fn(arg);
}

int shim_thread_start(pthread_t *thread, const pthread_attr_t *attr,
                      void *(*fn)(void *), void *arg)
{
    struct handshake h = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, fn, arg};
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(thread, attr, trampoline, &h);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) {
        pthread_mutex_lock(&h.mu);
        while (!h.running)
            pthread_cond_wait(&h.cv, &h.mu);
        pthread_mutex_unlock(&h.mu);
    }
    pthread_cond_destroy(&h.cv);
    pthread_mutex_destroy(&h.mu);
    return rc;
}
