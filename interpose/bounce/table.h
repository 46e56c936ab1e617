/* table.c: the snapshots (all under bounce_mu unless said), filling their
 * pages, ending them, the userfaultfd events. */
#ifndef P2PSHIM_BOUNCE_TABLE_H
#define P2PSHIM_BOUNCE_TABLE_H

#include "bounce_int.h"

/* The table lock and its condition (busy counts, pages leaving BUSY). */
extern pthread_mutex_t bounce_mu;
extern pthread_cond_t bounce_cv;

extern struct snap *bounce_head;
extern _Atomic size_t bounce_count;    /* snapshots listed: the fast-path test */
extern _Atomic bool bounce_disabled;   /* after fork (child) and at exit */
extern _Atomic uint64_t bounce_work_gen; /* GPU work issued (bounce_gpu_work) */

/* The snapshot whose host range (registered pages, when registered)
 * holds addr, or NULL. */
struct snap *bounce_find(uintptr_t addr, bool registered);
/* A snapshot whose tracked pages meet [lo, hi), or NULL. */
struct snap *bounce_find_overlap(uintptr_t lo, uintptr_t hi);
void bounce_link(struct snap *s);      /* at the head (most recent) */
void bounce_unlink(struct snap *s);
void bounce_touch(struct snap *s);     /* moves it to the head */
void bounce_snap_free(struct snap *s); /* its memory (no lock needed) */
/* Tells the predictor s's outcome, once (not after exit or in a child). */
void bounce_judge(struct snap *s, bool useful);

/* Without bounce_mu: */
/* Opens userfaultfd (once); false when unavailable. */
bool bounce_start(void);
/* Fills the missing pages of s (pinned) in [lo, hi) except those wholly
 * inside [ex_lo, ex_hi); outside the handler, also waits for pages others
 * are filling there (the handler never waits for other threads: they may
 * be waiting for it to read an event). */
void bounce_fill(struct snap *s, uintptr_t lo, uintptr_t hi, uintptr_t ex_lo, uintptr_t ex_hi);
/* Ends the snapshots whose memory went away (on_gone only marks them:
 * the handler never waits). Program threads call it on their way in. */
void bounce_reap(void);
/* Ends s (pinned by the caller; the pin is consumed). */
void bounce_end(struct snap *s, bool fill, uintptr_t ex_lo, uintptr_t ex_hi);
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
