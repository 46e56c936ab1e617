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

/* The D2H of [src, src + n) into pageable host memory, made by the shim:
 * on the program's stream (call's flavour) in pieces of the pinned
 * staging buffer, each piece's DMA running while the last one is copied
 * into place, and the whole pages [lo, hi) of an eager snapshot
 * write-protected behind the copy (behind.h); open: [lo, hi) is
 * registered and may be protected (a snapshot taken over), made writable
 * ahead of it. Returns complete, as the driver's pageable D2H does. 1:
 * done, every byte written and [lo, hi) protected; 0: failed, the pages
 * may hold part of the bytes and some of them protection; -1: no pinned
 * staging buffer or no thread for the protection: nothing done. */
/* Whether a D2H of n bytes spans more than one staging piece: a shorter
 * one gains nothing from bgpu_dtoh_staged (no copy to overlap). */
bool bgpu_staged_worth(size_t n);
int bgpu_dtoh_staged(const struct copy_call *call, CUcontext ctx, void *host, CUdeviceptr src,
                     size_t n, uintptr_t lo, uintptr_t hi, bool open);

/* Frees the pinned staging memory and destroys the streams of a context
 * about to go (ctx NULL: those of every context of dev; and dev < 0: of
 * every context, at exit). */
void bgpu_ctx_gone(CUcontext ctx, int dev);

#endif
