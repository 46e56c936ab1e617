/* stage.c: the shim's own streams and pinned staging memory: filling lazy
 * pages, snapshots taken alongside the program's stream. None takes
 * bounce_mu. */
#ifndef P2PSHIM_BOUNCE_STAGE_H
#define P2PSHIM_BOUNCE_STAGE_H

#include "bounce_int.h"

/* Fills [addr, addr+len) (page aligned, pages marked BUSY by the caller)
 * from b at offset off: D2H on a shim stream into staging, then
 * uffd_copy (wp: write-protected; else writable at once) in pieces of the
 * staging buffer's size. 1: done; 0: the driver or the kernel failed; -1
 * (handler only): an event must be read first, some pages may be filled.
 * The handler thread has a staging buffer of its own; program threads
 * take it only with signals blocked (table.h's contract). */
int bgpu_fill(const struct dbuf *b, size_t off, uintptr_t addr, size_t len, bool wp);

/* The snapshot of [src, src+bytes) into b on the shim's own stream in
 * b's context, ordered after the work issued so far on the program's
 * stream and after b's uses (forgotten): it runs alongside whatever the
 * program's stream does next. Returns the event of its completion, or
 * NULL when it could not be issued or tracked (nothing is in flight
 * then). */
CUevent bgpu_snapshot_aside(const struct copy_call *call, struct dbuf *b, CUdeviceptr src,
                            size_t bytes);

/* Frees the pinned staging memory and destroys the streams of a context
 * about to go (ctx NULL: those of every context of dev; and dev < 0: of
 * every context, at exit). */
void bgpu_ctx_gone(CUcontext ctx, int dev);

#endif
