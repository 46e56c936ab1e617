#define _GNU_SOURCE
#include "thread_cache.h"

#include <stddef.h>

#include "shim_alloc.h"

/* What precedes the caller's bytes: where the thread keeps its pointer,
 * and the block's size (to give it back). */
union header {
    struct {
        void **slot;
        size_t bytes;
    } h;
    max_align_t align;
};

/* Keys of every cache are made under one lock (pthread_once takes no
 * argument to say which cache). */
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;

static void release(void *block)
{
    union header *h = block;
    *h->h.slot = NULL;
    shim_free(h, h->h.bytes);
}

void *thread_cache_get(struct thread_cache *c, void **slot)
{
    pthread_mutex_lock(&setup_lock);
    if (!c->have_key)
        c->have_key = pthread_key_create(&c->key, release) == 0;
    pthread_mutex_unlock(&setup_lock);
    if (!c->have_key)
        return NULL; /* no key: a block could never be freed */
    size_t bytes = sizeof(union header) + c->size;
    union header *h = shim_alloc(bytes);
    if (h == NULL)
        return NULL;
    h->h.slot = slot;
    h->h.bytes = bytes;
    if (pthread_setspecific(c->key, h) != 0) {
        shim_free(h, bytes);
        return NULL;
    }
    return h + 1;
}
