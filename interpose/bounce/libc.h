/* libc.c: the free/realloc wrappers' side of the bounce module. */
#ifndef P2PSHIM_BOUNCE_LIBC_H
#define P2PSHIM_BOUNCE_LIBC_H

#include <stdbool.h>

/* The allocator answering malloc_usable_size is the one the free wrapper
 * forwards to (else no bounces: see there). */
bool bounce_libc_sizes_known(void);

#endif
