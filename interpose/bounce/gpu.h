/* gpu.c: the bounce module's driver work on buffers and events: snapshot
 * buffers within the budget, events on the program's streams, the
 * program's stream flavour. None takes bounce_mu. */
#ifndef P2PSHIM_BOUNCE_GPU_H
#define P2PSHIM_BOUNCE_GPU_H

#include "bounce_int.h"

/* Pushes ctx (false when it cannot be); bgpu_pop pops it. */
bool bgpu_push(CUcontext ctx);
void bgpu_pop(void);

/* A buffer of at least bytes on dev (ctx), within the budget: an idle one
 * of the right size, or a new one after evicting least recently used
 * snapshots of dev with evict (the layer above's: false when dev holds
 * none). false: none to be had. */
bool bgpu_buffer_get(int dev, CUcontext ctx, size_t bytes, bool (*evict)(int dev),
                     struct dbuf *out);
/* Gives a buffer back: kept idle for reuse (within the budget) or freed. */
void bgpu_buffer_put(struct dbuf *b);
/* Whether the D2H source [src, src + n) meets b: a stale pointer of the
 * program's (freed a moment ago) whose address the driver has just given
 * the shim for b. Then b is freed at once, not kept idle, so that the
 * program's call, left to the driver, gets the driver's answer to a freed
 * pointer (own_device.h). */
bool bgpu_buffer_is_source(struct dbuf *b, CUdeviceptr src, size_t n);
/* Frees every idle buffer of dev (-1: all); returns the bytes freed. */
size_t bgpu_idle_free(int dev, CUcontext ctx);

/* Makes the program's stream (call's flavour) wait for every use of b,
 * then forgets them. */
void bgpu_wait_uses(struct dbuf *b, const struct copy_call *call);
/* Records a new use of b on the program's stream. */
void bgpu_add_use(struct dbuf *b, const struct copy_call *call);
/* Blocks until every use of b is complete; forgets them. */
void bgpu_sync_uses(struct dbuf *b);

/* Whether the program's stream (call's flavour) is being captured into a
 * graph: then nothing the shim issues there would run now, and the copy
 * is left alone. */
bool bgpu_capturing(const struct copy_call *call);

/* The program's stream flavour: an async copy, an event record, a wait. */
CUresult bgpu_copy(const struct copy_call *call, CUdeviceptr dst, CUdeviceptr src,
                   size_t bytes);
CUresult bgpu_dtoh(const struct copy_call *call, bool sync, void *dst, CUdeviceptr src,
                   size_t bytes);
/* Records an event on call's stream and, wait, blocks until it is done
 * (sync completion); else stores it as a use of b (when b). */
CUresult bgpu_fence(const struct copy_call *call, bool wait, struct dbuf *b);

/* The program's own H2D variant (call->issue.per_thread, sync) for a piece. */
CUresult bgpu_htod(const struct copy_call *call, bool sync, CUdeviceptr dst, const void *src,
                   size_t bytes);
/* An event recorded on the program's stream (NULL on failure); a wait for
 * one on the program's stream; letting one go (NULL is fine). */
CUevent bgpu_record(const struct copy_call *call);
void bgpu_wait_event(const struct copy_call *call, CUevent ev);
void bgpu_event_release(CUevent ev);

/* The budget of dev in bytes (from the configuration; a percentage of
 * free memory is measured once per device). */
size_t bgpu_budget(int dev, CUcontext ctx);

/* Whether lazy snapshots are allowed for sources on devices that can
 * read pageable memory themselves (HMM/ATS): asked of every device once. */
bool bgpu_pageable_access(void);

#endif
