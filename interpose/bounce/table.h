/* table.c: the snapshots (all under bounce_mu unless said), filling their
 * pages, ending them, the userfaultfd events. */
#ifndef P2PSHIM_BOUNCE_TABLE_H
#define P2PSHIM_BOUNCE_TABLE_H

#include "bounce_int.h"
#include "fill.h"
#include "lock.h"

/* The table lock, bounce_mu, and its condition bounce_cv (busy counts,
 * pages leaving BUSY): lock.h.
 *
 * Lock contract (a signal handler that reads a lazy buffer must not hang
 * the process): the userfaultfd handler thread takes bounce_mu to resolve
 * a fault, so no program thread may hold it while a signal handler can
 * run on that thread: the handler's fault would wait for the handler
 * thread, which would wait for the lock the interrupted thread holds.
 * Program threads therefore take bounce_mu only through bounce_lock(),
 * which blocks every asynchronous signal until the matching
 * bounce_unlock() (pthread_sigmask; a signal that arrives meanwhile is
 * delivered then, not lost). Synchronous signals (SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL, SIGTRAP, SIGSYS) stay open: a section touches no
 * memory of the program's. A wait on bounce_cv inside such a section
 * (bounce_wait) keeps the mask. The handler thread, whose signals are all
 * blocked from its start, takes the lock plainly. Only bounce paths take
 * it, so only programs that bounce pay the two system calls. The other
 * locks the handler takes obey the same rule: its staging buffer's
 * (stage.c: program threads take it only with signals blocked), and
 * never the predictor's (watch.h: evidence_later). A program thread
 * inside the driver holds the driver's own locks, which the handler's
 * fills need: from bounce_start on, every wrapper's driver call is a
 * quiet section (core/shim.h); table.c argues the whole at bounce_mu's
 * definition. */
extern struct snap *bounce_head;
extern _Atomic size_t bounce_count;    /* snapshots listed: the fast-path test */
extern _Atomic uint64_t bounce_work_gen; /* GPU work issued (bounce_gpu_work) */

/* The snapshot whose host range (registered pages, when registered)
 * holds addr, or NULL. */
struct snap *bounce_find(uintptr_t addr, bool registered);
/* Without the lock: false when no snapshot's tracked pages can meet
 * [lo, hi) (the span of them all does not), so that a program's free of
 * memory far from any snapshot takes no lock and blocks no signal. The
 * program orders its free after the D2H into that memory returned, and
 * with it after the snapshot's link. */
bool bounce_may_overlap(uintptr_t lo, uintptr_t hi);
/* A snapshot whose tracked pages meet [lo, hi), or NULL. */
struct snap *bounce_find_overlap(uintptr_t lo, uintptr_t hi);
void bounce_link(struct snap *s);      /* at the head (most recent) */
void bounce_unlink(struct snap *s);
void bounce_touch(struct snap *s);     /* moves it to the head */
void bounce_snap_free(struct snap *s); /* its memory (no lock needed) */

/* The next snapshot marked gone (on_gone only marks them: the handler
 * never waits), pinned for the caller to end, or NULL. *given_up: it is
 * a given-up pageable one, already flagged ending, which has nothing left
 * to fill (bounce_finish ends it); otherwise bounce_end does. */
struct snap *bounce_take_gone(bool *given_up);

/* Without bounce_mu: */
/* Opens userfaultfd (once); false when unavailable. */
bool bounce_start(void);
/* Ends s (pinned by the caller; the pin is consumed). */
void bounce_end(struct snap *s, bool fill, uintptr_t ex_lo, uintptr_t ex_hi);
/* The rest of an end: s, flagged ending by the caller and pinned by it
 * (the pin is consumed), is unregistered and given back once no one else
 * works on it. Any thread but the handler's. */
void bounce_finish(struct snap *s);
/* Ends the snapshots whose bytes overlap [lo, hi), filling their missing
 * pages (all of them with keep, else those not wholly inside [lo, hi),
 * which are about to be overwritten or are gone). A snapshot that only
 * shares a partial page loses that page (dirty, unprotected). setup (a
 * new D2H, about to register these pages): every snapshot on those pages
 * ends, and those being set up or ended are waited for; otherwise they
 * are left to their owner (never wait for oneself: the driver frees
 * memory inside a D2H being set up). */
void bounce_end_overlapping(uintptr_t lo, uintptr_t hi, bool keep, bool setup);
/* A D2H over exactly the pages of a snapshot of the same kind (a staging
 * buffer reused; eager: over pinned memory only): that snapshot ends, its
 * registration handed over (no new registration, no new look at
 * /proc/self/maps; eager: every page write-protected again, so the new
 * one starts clean). true when handed. */
bool bounce_handover(uintptr_t host, size_t bytes, bool lazy, bool dma);

#endif
