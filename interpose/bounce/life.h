/* life.c: lifetimes (bounce.h's host-memory, context and device calls),
 * eviction, fork and exit. */
#ifndef P2PSHIM_BOUNCE_LIFE_H
#define P2PSHIM_BOUNCE_LIFE_H

#include "bounce_int.h"

/* Evicts the least recently used snapshot of dev (filling its lazy pages
 * first). false when dev holds none. */
bool bounce_evict_one(int dev);
/* life.c: the bounce row of the lifecycle table (shim.h), registered by
 * d2h.c at the first predicted bounce. */
void bounce_fork_prepare(void);
void bounce_fork_parent(void);
void bounce_fork_child(void);
void bounce_at_exit(void);

#endif
