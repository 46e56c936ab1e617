/* fill.c: filling lazy pages from their snapshot, the fault budget
 * (BOUNCE_FAULT_BUDGET, bounce_int.h) and what fills tell the predictor.
 * Below table.c: it knows snapshots, not the table. */
#ifndef P2PSHIM_BOUNCE_FILL_H
#define P2PSHIM_BOUNCE_FILL_H

#include "bounce_int.h"
#include "pages.h"
#include "watch.h"

extern _Atomic bool bounce_disabled; /* after fork (child) and at exit: nothing new */

/* Snapshots marked gone (their memory went away, or given up) and not
 * yet ended (behind.c's bounce_reap ends them). */
extern _Atomic int bounce_gone_pending;

/* Pages s tracks. */
static inline size_t bounce_npages(const struct snap *s)
{
    return (s->reg_hi - s->reg_lo) >> bounce_page_shift;
}

/* With bounce_mu (bounce_lock): */
/* News about s for the predictor (from the handler thread: handed over,
 * evidence_later). */
void bounce_tell(const struct snap *s, enum evidence_news news);
/* Tells the predictor s's outcome, once (not after exit or in a child). */
void bounce_judge(struct snap *s, bool useful);
/* Tells the predictor, once, that s's buffer is read by the CPU besides
 * going back to a GPU (before its H2D or after it): its host key turns
 * eager (not when P2PSHIM_BOUNCE=lazy). */
void bounce_tell_readers(struct snap *s);
/* One more CPU touch of s; true when its budget is spent and s must be
 * given up (bounce_give_up, s pinned by the caller). */
bool bounce_touched(struct snap *s);
/* Gives s up (s pinned; the lock is dropped meanwhile): every present
 * page unprotected in one call and the host's, the missing ones filled
 * unprotected (the first piece near `near`), wasted unless it served an
 * H2D already, s marked gone for bounce_reap. Costs
 * O(1) calls whatever the size. false when it must be resumed at the next
 * fault (the handler must read an event first). */
bool bounce_give_up(struct snap *s, uintptr_t near);
/* A missing fault at addr (s pinned; the lock is dropped meanwhile): the
 * next fill unit's worth of missing pages from addr's chunk on, wrapping
 * round, and the unit doubles: k faults fill chunk * (2^k - 1) bytes
 * whatever their order. */
void bounce_fill_growing(struct snap *s, uintptr_t addr);

/* Without bounce_mu: */
/* Fills the missing pages of s (pinned) in [lo, hi) except those wholly
 * inside [ex_lo, ex_hi); outside the handler, also waits for pages others
 * are filling there (the handler never waits for other threads: they may
 * be waiting for it to read an event). With touch, one CPU touch against
 * s's budget (past it, s is given up instead), and the fill counts as a
 * read in s's outcome; without (s ending before the driver overwrites
 * its pages), neither. */
void bounce_fill_range(struct snap *s, uintptr_t lo, uintptr_t hi, uintptr_t ex_lo,
                       uintptr_t ex_hi, bool touch);
/* bounce_fill_range with touch: the driver about to read a range, a fork
 * about to copy the process (life.c). */
void bounce_fill(struct snap *s, uintptr_t lo, uintptr_t hi, uintptr_t ex_lo, uintptr_t ex_hi);

#endif
