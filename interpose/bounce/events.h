/* events.c: the bounce module's events, kept for reuse. A bounce loop
 * records 3-6 events a round on the program's streams (uses of a snapshot
 * buffer, fences); created once per context and reused, they cost the
 * driver nothing per round (tests/bounce/bounce_cost.c counts). */
#ifndef P2PSHIM_BOUNCE_EVENTS_H
#define P2PSHIM_BOUNCE_EVENTS_H

#include "bounce_int.h"

/* An event of ctx (timing disabled), idle in the pool or new; NULL when
 * none can be had. Its owner gives it back with bevent_put. */
CUevent bevent_get(CUcontext ctx);
/* Gives an event back (NULL is fine): kept for reuse, or destroyed when
 * the pool did not make it or is full. A record of it still pending may
 * stay so: a stream wait or a synchronize already issued on it saw the
 * record made before, as the driver defines a reused event. */
void bevent_put(CUevent e);
/* ctx is going away (NULL: every context of dev; NULL and -1: every
 * context): its idle events are destroyed now, while it is alive, and
 * its events in use are forgotten (bevent_put destroys them). */
void bevent_drop(CUcontext ctx, int dev);

#endif
