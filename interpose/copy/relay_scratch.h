/* The pool relay's buffers (pool_relay.h), in lanes. A lane is, on each
 * device that takes part, a block of scratch device memory cut into
 * RELAY_SLOTS slots, two streams of the shim's own and the events that
 * order the slots' uses. A program stream relays through one lane at a
 * time, and a lane serves one program stream at a time: it passes to
 * another only once the work it holds is done. So a relayed copy waits
 * only for its own stream's earlier relays, never for another stream's:
 * two program streams never get a dependency the program did not ask for.
 * Nothing is held before the first relayed copy that needs a lane on a
 * device; what is held is reused by every later one, and given back when
 * its context goes (relay_ctx_gone) and at exit (the SHIM_ROW_RELAY row
 * of shim.h). */
#ifndef P2PSHIM_RELAY_SCRATCH_H
#define P2PSHIM_RELAY_SCRATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim_cuda.h"

/* Three slots: a chunk copied in, one crossing the link, one copied out. */
#define RELAY_SLOTS 3
/* Program streams relaying at once; each lane holds a RELAY_LANES-th of
 * the scratch a device may have (P2PSHIM_POOL_RELAY). */
#define RELAY_LANES 4

/* One device's part of a lane; valid under relay_lock. */
struct relay_lane {
    CUdeviceptr buf;      /* RELAY_SLOTS slots of slot bytes; 0: none yet */
    size_t slot;
    CUstream local;       /* copies between the program's memory and a slot */
    CUstream peer;        /* copies across the link, issued by this device */
    CUevent ev_local[RELAY_SLOTS]; /* the last local copy of slot k */
    CUevent ev_peer[RELAY_SLOTS];  /* peer copies issued here, per chunk k */
    /* Slot k may be written again once this event is done (an event of
     * this device or of the device whose peer stream read it); NULL: free. */
    CUevent free_after[RELAY_SLOTS];
};

/* One device's relay state; valid under relay_lock. */
struct relay_dev {
    CUcontext ctx;        /* the context holding it all; NULL: nothing held */
    CUevent fence;        /* the program's stream, before a relay */
    struct relay_lane lane[RELAY_LANES]; /* local NULL: not made yet */
};

/* A program stream as the relay tells streams apart: its handle, its
 * context, and for a per-thread default stream the thread. */
struct relay_stream {
    CUstream handle;
    CUcontext ctx;
    uint32_t thread;      /* 0 unless a per-thread default stream */
};

/* The one lock of the relay: held while a relayed copy is issued (never
 * while it runs), and while buffers are made or given back. */
void relay_lock(void);
void relay_unlock(void);

/* Under the lock: the lane for a relay on program stream st: the one it
 * already holds, else one that holds nothing, else one whose work is all
 * done (it passes to st). -1 when every lane holds another stream's work
 * still in flight: the copy is left to the driver rather than made to
 * wait for that stream. */
int relay_lane_pick(const struct relay_stream *st);

/* Under the lock: lane `lane`'s work now ends with event last (NULL:
 * nothing in flight, e.g. after a relay given up and waited for). */
void relay_lane_issued(int lane, CUevent last);

/* Under the lock: dev's state in context ctx, its fence made on first use.
 * NULL when there is none to be had: no memory, a driver call refused
 * (remembered: not retried until the context goes), or dev's state lives
 * in another context. */
struct relay_dev *relay_dev_get(int dev, CUcontext ctx);

/* Under the lock: lane `lane` of r (device dev), its streams and events
 * made on first use and, when buf, its scratch (RELAY_SLOTS slots of a
 * RELAY_LANES-th of a third of P2PSHIM_POOL_RELAY each): a device whose
 * end of the copies is ordinary device memory holds no scratch. NULL as
 * for relay_dev_get. */
struct relay_lane *relay_lane_get(struct relay_dev *r, int dev, int lane, bool buf);

/* The address of slot k of l. */
static inline CUdeviceptr relay_slot(const struct relay_lane *l, int k)
{
    return l->buf + (CUdeviceptr)k * l->slot;
}

/* Counters for the exit summary: a relayed copy of bytes, and a relay that
 * gave up midway (its copy done again by the original call). */
void relay_count(size_t bytes, bool fell_back);

/* Before a context goes (cuCtxDestroy: ctx; a primary reset or last
 * release: ctx NULL and dev): the relay's work in flight is waited for
 * and every buffer held in that context is given back. */
void relay_ctx_gone(CUcontext ctx, int dev);

/* Scratch bytes held now, all devices (tests and the summary). */
size_t relay_scratch_bytes(void);

#endif
