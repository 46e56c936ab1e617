/* Internals shared by the bounce module's files (interpose/bounce/; the
 * rest of the shim sees bounce.h only): predict.c (whether a D2H is worth
 * a snapshot, pure), watch.c (the predictor's lock, the evidence of D2Hs
 * left alone, observe mode's candidates), table.c (the snapshots, page
 * states, filling, ending, the faults), copy.c (the D2H), h2d.c (the
 * H2D), pages.c (page-state arithmetic), life.c (lifetimes, counters),
 * gpu.c and stage.c (the driver work: buffers, budget, events, staging),
 * libc.c (the free/realloc wrappers), uffd.c (userfaultfd). */
#ifndef P2PSHIM_BOUNCE_INT_H
#define P2PSHIM_BOUNCE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bounce.h"
#include "predict.h"
#include "shim_cuda.h"

/* Page states, one byte per page of a snapshot's registered range. */
enum {
    PG_MISSING = 0, /* dropped: the bytes live in the snapshot only */
    PG_CLEAN,       /* present, write-protected, equal to the snapshot */
    PG_DIRTY,       /* written since, or never tracked: the host is right */
    PG_BUSY,        /* being filled from the snapshot */
    PG_BUSY_DIRTY,  /* written while being filled: dirty once filled */
};

#define USES_MAX 8

/* A device buffer holding a snapshot; the events of the work reading it
 * that a reuse must wait for (or a free synchronise with). */
struct dbuf {
    CUdeviceptr ptr;
    size_t size;
    int dev;
    CUcontext ctx;
    CUevent uses[USES_MAX];
    int nuses;
};

struct snap {
    struct snap *prev, *next;   /* the table, most recently used first */
    uintptr_t host;             /* the D2H's host range */
    size_t bytes;
    struct dbuf buf;            /* holds [host, host+bytes) */
    bool lazy;
    bool dma;                   /* pinned/registered host memory: the GPU writes it by DMA */
    struct predict_pair keys;   /* its D2H's predictor keys */
    bool judged;                /* its outcome was told to the predictor */
    bool neutral;               /* ended by the shim (eviction, context gone): no outcome */
    uint64_t gen;               /* eager: bounce_work_gen before its D2H was issued */
    size_t filled;              /* lazy: pages materialised from the snapshot */
    bool h2d_seen;              /* an H2D has been served from it */
    bool read_first;            /* most pages were materialised before that H2D */
    bool ready;                 /* set up; before that faults wait, REMOVE is ours */
    bool ending;                /* being ended: no new users; still registered */
    bool gone;                  /* its memory was unmapped or dropped: to be ended */
    bool keep_reg;              /* ended for a D2H over the same pages: stays registered */
    CUevent done;               /* eager: recorded after the snapshot and the D2H */
    uintptr_t reg_lo, reg_hi;   /* registered: the pages [host, host+bytes) covers whole */
    uint8_t *page;              /* state of each page of [reg_lo, reg_hi) */
    uintptr_t next_fault;       /* read-ahead: where a sequential reader goes */
    size_t ahead;               /* read-ahead: chunks filled on the next fault */
    int busy;                   /* threads working outside the lock */
    size_t map_size;            /* the record's own mapping (page array after it) */
};

/* The first index in [i, n) whose page state is in stop (a mask of
 * 1 << state), or n; eight states at a time. */
size_t bounce_scan(const uint8_t *st, size_t i, size_t n, unsigned stop);
#define PG_MASK(state) (1u << (state))

/* Microseconds of CLOCK_MONOTONIC at P2PSHIM_LOG=debug (the phase timings
 * of each bounce), else 0. */
double bounce_now_us(void);

/* The table lock and its condition (busy counts, pages leaving BUSY). */
extern pthread_mutex_t bounce_mu;
extern pthread_cond_t bounce_cv;
extern size_t bounce_page;
extern unsigned bounce_page_shift; /* log2(bounce_page) */

/* Counters (bounce_stats order). */
extern _Atomic uint64_t bst_d2h_lazy, bst_d2h_eager, bst_seen, bst_upgraded,
    bst_upgraded_bytes, bst_lazy_bytes, bst_materialised, bst_faults, bst_evicted,
    bst_fallbacks, bst_candidates, bst_predicted, bst_skipped, bst_useful, bst_wasted,
    bst_seen_plain;

/* ---- watch.c: the predictor behind its lock --------------------------- */

/* A D2H candidate (upgrade mode, at least the bounce minimum, a device
 * source) about to run: remembered (for a later H2D to match) and
 * judged. Counts candidates, predicted and skipped. */
enum predict_verdict evidence_d2h(uintptr_t host, size_t bytes, CUdeviceptr src, int dev);
/* A large D2H while no key has evidence (the predictor would say no):
 * remembered with its source pointer only, before either pointer is
 * looked up, and counted as a candidate; true when so handled. False
 * when some key has evidence: the caller makes its full checks and asks
 * evidence_d2h. The D2Hs of programs that never bounce stop here, with
 * no lookup, allocation or system call. */
bool evidence_d2h_unarmed(uintptr_t host, size_t bytes, CUdeviceptr src);
/* An H2D not served from a snapshot (upgrade mode): a seen bounce when it
 * lies inside a remembered D2H (counted as seen_plain). One relaxed load
 * while nothing is remembered. */
void evidence_h2d(const void *host, size_t bytes);
/* A snapshot's outcome (s->judged set by the caller). */
void evidence_outcome(const struct predict_pair *keys, bool useful);
/* free(host): remembered D2Hs starting there are forgotten. */
void watch_forget(const void *host);
/* life.c: the "summary bounce" line (when a candidate was seen); zeroing. */
void bounce_report(void);
void bounce_stats_reset(void);

/* ---- bounce_gpu.c, bounce_stage.c: driver work; none takes bounce_mu ---- */

/* Pushes ctx (false when it cannot be); bgpu_pop pops it. */
bool bgpu_push(CUcontext ctx);
void bgpu_pop(void);

/* A buffer of at least bytes on dev (ctx), within the budget: an idle one
 * of the right size, or a new one after evicting least recently used
 * snapshots of dev. false: none to be had. */
bool bgpu_buffer_get(int dev, CUcontext ctx, size_t bytes, struct dbuf *out);
/* Gives a buffer back: kept idle for reuse (within the budget) or freed. */
void bgpu_buffer_put(struct dbuf *b);
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

/* The program's own H2D variant (call->per_thread, sync) for a piece. */
CUresult bgpu_htod(const struct copy_call *call, bool sync, CUdeviceptr dst, const void *src,
                   size_t bytes);
/* An event recorded on the program's stream (NULL on failure); a wait for
 * one on the program's stream; letting one go (NULL is fine). */
CUevent bgpu_record(const struct copy_call *call);
void bgpu_wait_event(const struct copy_call *call, CUevent ev);
void bgpu_event_release(CUevent ev);

/* Fills [addr, addr+len) (page aligned, pages marked BUSY by the caller)
 * from b at offset off: D2H on a shim stream into staging, then
 * uffd_copy. 1: done; 0: the driver or the kernel failed; -1 (handler
 * only): an event must be read first, some pages may be filled. */
int bgpu_fill(const struct dbuf *b, size_t off, uintptr_t addr, size_t len);

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

/* The budget of dev in bytes (from the configuration; a percentage of
 * free memory is measured once per device). */
size_t bgpu_budget(int dev, CUcontext ctx);

/* Whether lazy snapshots are allowed for sources on devices that can
 * read pageable memory themselves (HMM/ATS): asked of every device once. */
bool bgpu_pageable_access(void);

/* ---- bounce.c: the table (all under bounce_mu unless said) ---- */

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
uint8_t *bounce_page_state(struct snap *s, uintptr_t addr);
/* Page indices of s for the tracked pages in [lo, hi) (clamped; partial
 * pages at either end excluded when whole, included otherwise). */
size_t bounce_index(const struct snap *s, uintptr_t addr);
void bounce_index_range(const struct snap *s, uintptr_t lo, uintptr_t hi, bool whole,
                        size_t *i0, size_t *i1);
void bounce_snap_free(struct snap *s); /* its memory (no lock needed) */
/* Tells the predictor s's outcome, once (not after exit or in a child). */
void bounce_judge(struct snap *s, bool useful);

/* Without bounce_mu: */
/* Opens userfaultfd (once); false when unavailable. */
bool bounce_start(void);
/* bounce_libc.c: the allocator answering malloc_usable_size is the one
 * the free wrapper forwards to (else no bounces: see there). */
bool bounce_libc_sizes_known(void);
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

/* Evicts the least recently used snapshot of dev (filling its lazy pages
 * first). false when dev holds none. */
bool bounce_evict_one(int dev);
/* life.c: the bounce row of the lifecycle table (shim.h), registered by
 * copy.c at the first predicted bounce. */
void bounce_fork_prepare(void);
void bounce_fork_parent(void);
void bounce_fork_child(void);
void bounce_at_exit(void);

#endif
