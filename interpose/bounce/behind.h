/* Ends behind the program (behind.c): a pageable eager snapshot that has
 * served an H2D covering all of its pages is ended on a thread of the
 * shim's, right after that H2D, instead of by the program's next D2H over
 * the buffer; so is a pageable snapshot given up past its fault budget,
 * instead of by the next copy that passes by.
 *
 * Why: ending a pageable eager snapshot lifts its write-protection, a pass
 * over the range's page table (1.0-3.6 ms per 64 MiB of 4 KiB pages on an
 * H200 host). The next D2H into the buffer cannot begin before it (the
 * driver writes those pages with the CPU), so ended there, the pass was
 * paid inside the program's D2H, in every round of a loop that bounces.
 * Ended behind, it overlaps whatever the program does after its H2D (GPU
 * work, a checkpoint, the next batch); a D2H that comes sooner waits for
 * the rest only (bounce_end_overlapping waits for snapshots being ended).
 *
 * What it costs: a second H2D from the same buffer before its next D2H (a
 * broadcast to two GPUs, a host copy uploaded twice) comes from the host
 * instead of the snapshot, once: the buffer's pages are then remembered
 * (REPEATS_MAX ranges) and its later snapshots end as before. Any H2D
 * that takes a whole page of such a buffer before a D2H into it counts,
 * whether or not the snapshot could still have served it. CPU writes
 * during the pass wait for it, as they would for the D2H's. One thread,
 * started with the first such end, every signal blocked.
 *
 * The same thread also takes pieces of a large eager snapshot's protection
 * pass (pageable, or pinned with an asynchronous D2H) while the program's
 * thread does the rest or the driver copies the next piece
 * (bounce_behind_protect, bounce_behind_protect_post).
 *
 * Lock: bounce_mu (lock.h) guards the queue; callers say whether they hold it. */
#ifndef P2PSHIM_BOUNCE_BEHIND_H
#define P2PSHIM_BOUNCE_BEHIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bounce_int.h"

/* Whether s, served by an H2D of [h, h + n), is to end behind (lock held):
 * pageable, eager, set up, not ending, every tracked page inside the H2D,
 * its pages not known to be uploaded twice. */
bool bounce_behind_wanted(const struct snap *s, uintptr_t h, size_t n);

/* Ends s behind the program (lock not held; s flagged ending and
 * ended_behind under the lock, pinned by the caller: the pin is
 * consumed). Ends it here when the thread cannot be had. */
void bounce_behind_end(struct snap *s);

/* Ends s, given up (fill.c: every page the host's, unprotected), behind
 * the program (lock not held; s flagged ending under the lock and pinned
 * by the caller: the pin is consumed): its unregistration, a pass over the
 * range's page table, is not paid inside the copy that passes by. */
void bounce_behind_given_up(struct snap *s);

/* An H2D of [h, h + n) (lock not held; one atomic load while no
 * snapshot was ended behind since its buffer's last D2H): one that takes
 * a whole page of such a buffer again marks it uploaded more than once
 * per D2H, and its later snapshots end as before. */
void bounce_behind_h2d(uintptr_t h, size_t n);

/* A D2H into [h, h + n) (lock not held; one atomic load likewise): the
 * buffers it overlaps start a new round. */
void bounce_behind_d2h(uintptr_t h, size_t n);

/* Write-protects [lo, len) (uffd_protect; lock not held), a range of
 * 8 MiB or more in two halves at once, one on the thread: the protection
 * pass of a pageable D2H, and of a pinned asynchronous one (made before
 * its copy is queued), is paid inside the program's call (1.2-2.6 ms per
 * 64 MiB of 4 KiB pages on an H200 host), and two threads working on
 * disjoint page tables take about 0.55-0.6 of one's time (measured on the
 * CPU machine). Returns once the whole range is protected; false when a
 * part was refused. */
bool bounce_behind_protect(uintptr_t lo, size_t len);

/* Pieces of a protection pass done on the thread while the caller goes on
 * (a pageable D2H in pieces, d2h.c: each piece is protected while the
 * driver copies the next). One caller's batch, on its stack; begin, post
 * pieces (done here when the thread cannot be had or has no room), then
 * end, which does here every piece the thread has not begun (it may be
 * ending a snapshot meanwhile) and waits for the rest: the wait is never
 * longer than one piece or one end already under way. end returns false
 * when a piece was refused. Lock not held by any. */
struct behind_protect {
    unsigned pending; /* posted, not yet done: bounce_mu's */
    bool ok;          /* no refusal on the thread: bounce_mu's */
    bool own_ok;      /* none here: the caller's */
    bool posted;      /* a piece went to the thread: the caller's */
};
void bounce_behind_protect_begin(struct behind_protect *b);
void bounce_behind_protect_post(struct behind_protect *b, uintptr_t lo, size_t len);
/* The upper half of [lo, lo + len) posted, the lower half protected here. */
void bounce_behind_protect_halves(struct behind_protect *b, uintptr_t lo, size_t len);
bool bounce_behind_protect_end(struct behind_protect *b);

/* Ends the snapshots whose memory went away and those given up (table.c
 * marks them; the handler never waits), the given-up pageable ones behind
 * the program (bounce_behind_given_up). Program threads call it on their
 * way in (lock not held). */
void bounce_reap(void);

/* Waits until no snapshot is queued or being ended behind (lock not
 * held): before a context goes, at exit, when device memory is wanted. */
void bounce_behind_drain(void);

/* In a fork child (lock held, as bounce_fork_child holds it): the thread
 * is the parent's; nothing is queued here. */
void bounce_behind_fork_child(void);

#endif
