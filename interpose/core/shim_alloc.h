/* The shim's own memory: every block the shim allocates for itself comes
 * from here, never from the program's heap. A node that glibc's malloc
 * placed in the chunk the program had just freed would change where the
 * program's next blocks land, whether its heap grows and trims, and so how
 * many pages it faults: a program the shim cannot help must keep the heap
 * it has without the shim, byte for byte (docs/FOOTPRINT.md).
 *
 * Small blocks (up to SHIM_ALLOC_SMALL_MAX bytes) come from size classes
 * carved out of mappings of the shim's own; larger ones are mappings of
 * their own. Nothing here calls malloc, brk or sbrk.
 *
 * Thread-safe (one lock, held for a few instructions, never across a
 * call out of this file). Not async-signal-safe: no caller runs in a
 * signal handler (the exec wrappers, which may, allocate nothing). Across
 * fork the lock is held (shim_alloc_fork_*, from the shim's fork
 * handlers), so the child inherits consistent free lists; the blocks
 * themselves are ordinary private pages, copied on write like the rest of
 * the process. */
#ifndef P2PSHIM_SHIM_ALLOC_H
#define P2PSHIM_SHIM_ALLOC_H

#include <stddef.h>

#define SHIM_ALLOC_SMALL_MAX ((size_t)4096)

/* A zeroed block of size bytes, or NULL (size 0, or no memory). Aligned
 * to 16 bytes, and to 64 when size is a multiple of 64 (a cache line
 * of its own). */
void *shim_alloc(size_t size);

/* Gives back a block of shim_alloc; size is the size it was asked with
 * (NULL is ignored). */
void shim_free(void *p, size_t size);

/* A block of new_size holding the first min(old_size, new_size) bytes of
 * p (NULL p: a new block), the rest zeroed; p is given back on success
 * and left alone on failure (NULL). */
void *shim_realloc(void *p, size_t old_size, size_t new_size);

/* Bytes handed out and not yet given back (as asked, not as rounded):
 * for tests and the exit summary. */
size_t shim_alloc_live_bytes(void);

/* fork: prepare takes the lock (after every lock under which the shim
 * allocates), parent and child release it. */
void shim_alloc_fork_prepare(void);
void shim_alloc_fork_release(void);

#endif
