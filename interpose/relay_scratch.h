/* The pool relay's buffers (pool_relay.h): per device, one block of
 * scratch device memory cut into RELAY_SLOTS slots, two streams of the
 * shim's own and the events that order the slots' uses. Nothing is held
 * before the first relayed copy that needs a device; what is held is
 * reused by every later one, and given back when its context goes
 * (relay_ctx_gone) and at exit (the SHIM_ROW_RELAY row of shim.h). */
#ifndef P2PSHIM_RELAY_SCRATCH_H
#define P2PSHIM_RELAY_SCRATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "shim_cuda.h"

/* Three slots: a chunk copied in, one crossing the link, one copied out. */
#define RELAY_SLOTS 3

/* One device's relay state; valid under relay_lock. */
struct relay_dev {
    CUcontext ctx;        /* the context holding it all; NULL: nothing held */
    CUdeviceptr buf;      /* RELAY_SLOTS slots of slot bytes */
    size_t slot;
    CUstream local;       /* copies between the program's memory and a slot */
    CUstream peer;        /* copies across the link, issued by this device */
    CUevent fence;        /* the program's stream, before the relay */
    CUevent ev_local[RELAY_SLOTS]; /* the last local copy of slot k */
    CUevent ev_peer[RELAY_SLOTS];  /* peer copies issued here, per chunk k */
    /* Slot k may be written again once this event is done (an event of
     * this device or of the device whose peer stream read it); NULL: free. */
    CUevent free_after[RELAY_SLOTS];
};

/* The one lock of the relay: held while a relayed copy is issued (never
 * while it runs), and while buffers are made or given back. */
void relay_lock(void);
void relay_unlock(void);

/* Under the lock: dev's state in context ctx, its streams and events made
 * on first use and, when buf, its scratch (RELAY_SLOTS slots of a third of
 * P2PSHIM_POOL_RELAY each): a device whose end of the copies is ordinary
 * device memory holds no scratch. NULL when there is none to be had: no
 * memory, a driver call refused (remembered: not retried until the
 * context goes), or dev's state lives in another context. */
struct relay_dev *relay_dev_get(int dev, CUcontext ctx, bool buf);

/* The address of slot k of r. */
static inline CUdeviceptr relay_slot(const struct relay_dev *r, int k)
{
    return r->buf + (CUdeviceptr)k * r->slot;
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
