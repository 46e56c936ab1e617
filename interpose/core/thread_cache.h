/* Per-thread caches that only threads doing CUDA work need: allocated on a
 * thread's first use instead of sitting in the static TLS of every thread
 * of every process the shim is loaded into (that block is carved out of
 * each thread's stack; docs/FOOTPRINT.md).
 *
 * Usage: one `static struct thread_cache c = THREAD_CACHE_INIT(size);`
 * per kind of cache and a `static _Thread_local T *slot`; where the slot
 * is NULL, `slot = thread_cache_get(&c, (void **)&slot)`. */
#ifndef P2PSHIM_THREAD_CACHE_H
#define P2PSHIM_THREAD_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct thread_cache {
    size_t size;
    pthread_key_t key;  /* made on first use; frees a thread's block */
    bool have_key;
};

#define THREAD_CACHE_INIT(bytes) {(bytes), 0, false}

/* A zeroed block of c->size bytes for this thread, allocated now; NULL
 * when there is no memory (the caller then works without a cache). When
 * the thread ends the block is freed and *slot (this thread's pointer to
 * it) set back to NULL, so a call made later in the thread's exit (another
 * library's destructor) allocates again instead of using freed memory. */
void *thread_cache_get(struct thread_cache *c, void **slot);

#endif
