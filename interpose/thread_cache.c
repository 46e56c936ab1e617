#define _GNU_SOURCE
#include "thread_cache.h"

#include <stddef.h>
#include <stdlib.h>

/* What precedes the caller's bytes: where the thread keeps its pointer. */
union header {
    void **slot;
    max_align_t align;
};

/* Keys of every cache are made under one lock (pthread_once takes no
 * argument to say which cache). */
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;

static void release(void *block)
{
    union header *h = block;
    *h->slot = NULL;
    free(h);
}

void *thread_cache_get(struct thread_cache *c, void **slot)
{
    pthread_mutex_lock(&setup_lock);
    if (!c->have_key)
        c->have_key = pthread_key_create(&c->key, release) == 0;
    pthread_mutex_unlock(&setup_lock);
    if (!c->have_key)
        return NULL; /* no key: a block could never be freed */
    union header *h = calloc(1, sizeof *h + c->size);
    if (h == NULL)
        return NULL;
    h->slot = slot;
    if (pthread_setspecific(c->key, h) != 0) {
        free(h);
        return NULL;
    }
    return h + 1;
}
