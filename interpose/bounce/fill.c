/* The bounce module's page fills and fault budget (fill.h): filling lazy
 * pages from a snapshot, what the fills tell the predictor, and giving a
 * snapshot up once its CPU touches pass BOUNCE_FAULT_BUDGET
 * (bounce_int.h). Every function here runs with bounce_mu taken through
 * bounce_lock (lock.h) and drops it around each fill; the table itself
 * (finding, ending) is table.c's, above this file.
 *
 * Why a budget (docs/BOUNCE.md): a wrong guess used to cost one handler
 * round trip per 4 KiB page the CPU touched (a memset of a bounced 1 GiB
 * buffer 42-48x slower). Now the lazy fill unit doubles with every
 * missing fault of a snapshot, so any order of touches takes
 * O(log(size/chunk)) of them, and past the budget the snapshot is given
 * up in O(1) calls: the whole range unprotected at once, its missing
 * pages filled without protection in staging-sized pieces, every page the
 * host's, then ended by the next program thread that comes by
 * (bounce_reap). */
#define _GNU_SOURCE
#include <stdint.h>

#include "config.h"
#include "counters.h"
#include "fill.h"
#include "lock.h"
#include "log.h"
#include "pages.h"
#include "stage.h"
#include "uffd.h"
#include "watch.h"

_Atomic bool bounce_disabled;
_Atomic int bounce_gone_pending;

/* News for the predictor about s: the handler thread never waits for the
 * predictor's lock (table.h), so it hands the news over (evidence_later). */
void bounce_tell(const struct snap *s, enum evidence_news news)
{
    if (uffd_in_handler())
        evidence_later(&s->keys, news);
    else
        evidence_news(&s->keys, news);
}

void bounce_judge(struct snap *s, bool useful)
{
    if (s->judged || s->neutral || atomic_load(&bounce_disabled))
        return;
    s->judged = true;
    s->useful = useful;
    bounce_tell(s, s->lazy  ? (useful ? NEWS_USEFUL_LAZY : NEWS_WASTED_LAZY)
                   : s->dma ? (useful ? NEWS_USEFUL : NEWS_WASTED_PINNED)
                            : (useful ? NEWS_USEFUL : NEWS_WASTED));
}

void bounce_tell_readers(struct snap *s)
{
    if (s->readers_told || s->neutral || atomic_load(&bounce_disabled) ||
        config_get()->bounce == P2PSHIM_BOUNCE_LAZY)
        return;
    s->readers_told = true;
    bounce_tell(s, NEWS_READERS);
}

/* ---- filling ------------------------------------------------------------ */

/* What s's fills so far tell the predictor: the CPU (or the kernel, or a
 * fork) wanted most of the bytes before any GPU did: wasted; most of them
 * after a useful H2D: the buffer is read after its H2D as well, and an
 * eager snapshot would have cost those reads nothing. */
static void judge_fills(struct snap *s)
{
    /* A new buffer's fill is no loss of itself (fresh): judged when its
     * H2D comes, or wasted when it ends without one. */
    if (!s->h2d_seen && !s->fresh && s->filled * 2 > bounce_npages(s))
        bounce_judge(s, false);
    if (s->h2d_seen && s->judged && s->useful && !s->fresh &&
        s->filled_after * 2 > bounce_npages(s))
        bounce_tell_readers(s);
}

/* Fills the run [run, end) of s's pages, which the caller marked BUSY
 * (lock held; dropped meanwhile): write-protected while s tracks writes,
 * unprotected once it is being given up. read: someone wants the bytes
 * (a CPU touch, a fork, the driver reading them), which the outcome
 * counts; not read: the shim fills them only because s ends before the
 * driver overwrites them (bounce_end), which tells nothing of the
 * program. Returns bgpu_fill's answer. */
static int fill_run(struct snap *s, size_t run, size_t end, bool read)
{
    uint8_t *st = s->page;
    bool wp = !s->abandoned;
    uintptr_t a = s->reg_lo + (run << bounce_page_shift);
    size_t len = (end - run) << bounce_page_shift;
    bounce_unlock();
    int r = bgpu_fill(&s->buf, a - s->host, a, len, wp);
    if (r == 0) {
        /* The snapshot cannot be read back: nothing right to give.
         * Zero pages keep the program from hanging; say it loudly. */
        LOG_ERROR("bounce: cannot fill %zu bytes at %#lx from device %d; "
                  "they read as zero", len, (unsigned long)a, s->buf.dev);
        uffd_zero(a, len);
        uffd_wake(a, len);
    }
    if (r > 0)
        atomic_fetch_add(&bst_materialised, len);
    bounce_lock();
    if (r > 0 && wp && s->abandoned) {
        /* Given up while this run was on its way: the host's, like the rest. */
        bounce_unlock();
        uffd_protect(a, len, false);
        bounce_lock();
        wp = false;
    }
    for (size_t p = run; p < end; p++) {
        if (r < 0) /* retried later: pages already there are skipped */
            st[p] = st[p] == PG_BUSY ? PG_MISSING : PG_DIRTY;
        else
            st[p] = (r > 0 && wp && st[p] == PG_BUSY) ? PG_CLEAN : PG_DIRTY;
    }
    if (r > 0 && read) {
        s->filled += end - run;
        if (s->h2d_seen)
            s->filled_after += end - run;
        judge_fills(s);
    }
    pthread_cond_broadcast(&bounce_cv);
    if (r < 0) {
        /* The handler must read an event first: the faulting threads
         * fault again afterwards. */
        bounce_unlock();
        uffd_wake(a, len);
        bounce_lock();
    }
    return r;
}

/* Fills the missing pages of s among [i, end), except [x0, x1), at most
 * *want of them (counted down); read as for fill_run. Lock held. false
 * when a run must be retried (the handler reads an event first). */
static bool fill_span(struct snap *s, size_t i, size_t end, size_t x0, size_t x1, size_t *want,
                      bool read)
{
    uint8_t *st = s->page;
    while (i < end && *want > 0) {
        if (i >= x0 && i < x1) {
            i = x1; /* wholly inside the exclusion */
            continue;
        }
        if (st[i] != PG_MISSING) {
            i = bounce_scan(st, i, end, PG_MASK(PG_MISSING));
            continue;
        }
        size_t run = i, stop = i < x0 && x0 < end ? x0 : end;
        while (i < stop && st[i] == PG_MISSING && *want > 0) {
            st[i++] = PG_BUSY;
            (*want)--;
        }
        if (fill_run(s, run, i, read) < 0)
            return false;
    }
    return true;
}

/* Every missing page of s, from page index `from` to the end then from
 * the start: the first piece lands where the toucher waits. */
static bool fill_all_from(struct snap *s, size_t from)
{
    size_t all = SIZE_MAX;
    return fill_span(s, from, bounce_npages(s), 0, 0, &all, true) &&
           fill_span(s, 0, from, 0, 0, &all, true);
}

/* Gives s up (lock held, s pinned; the budget is spent): every present
 * page unprotected in one call and the host's, the missing ones filled
 * unprotected, the outcome told, s left for a program thread to end.
 * false when it must be resumed later (the handler reads an event first).
 * Costs O(1) calls whatever the size: one protection change, and fills
 * in staging-sized pieces. */
bool bounce_give_up(struct snap *s, uintptr_t near)
{
    const size_t n = bounce_npages(s);
    for (size_t i = 0; i < n; i++) { /* a BUSY page's filler unprotects it */
        if (s->page[i] == PG_CLEAN)
            s->page[i] = PG_DIRTY;
        else if (s->page[i] == PG_BUSY)
            s->page[i] = PG_BUSY_DIRTY;
    }
    bounce_unlock();
    const size_t len = s->reg_hi - s->reg_lo;
    bool shared = false, unregistered = false;
    double t0 = bounce_now_us();
    bool ok = s->lazy ? uffd_protect(s->reg_lo, len, false)
                      : uffd_unprotect_writable(s->reg_lo, len, near, &shared, &unregistered);
    double t1 = bounce_now_us();
    bounce_lock();
    if (!ok || (s->lazy && !fill_all_from(s, bounce_index(s, near))))
        return false;
    s->given_up = true;
    s->unregistered = unregistered;
    /* Not yet served: wasted. Served already: it stays useful (its H2D
     * came from the GPU, and giving up cost O(1)); a lazy one whose rest
     * was filled for the CPU after its H2D tells the predictor so
     * (judge_fills: eager next time, the touches then cost no fill). */
    bounce_judge(s, false);
    /* Served, then rewritten: on a shared mapping (pinned memory) the
     * rewrite cost a pass over the range's page table above (a fault per
     * page where the mprotect was refused), as much as the H2D the
     * snapshot saved: the keys back off all the same,
     * so that a loop refilling its pinned buffer after each H2D (a loader's
     * batch) stops paying it every round. */
    if (shared && s->judged && s->useful && !s->neutral && !atomic_load(&bounce_disabled))
        bounce_tell(s, NEWS_COSTLY);
    if (!s->gone) {
        s->gone = true;
        atomic_fetch_add(&bounce_gone_pending, 1);
    }
    LOG_DEBUG("bounce: snapshot of %zu bytes at %#lx given up after %u CPU touches "
              "(unprotect %.0f us%s)", s->bytes, (unsigned long)s->host, s->faults, t1 - t0,
              shared ? ", shared" : "");
    return true;
}

/* One more CPU touch of s (lock held); true when the budget is spent
 * and s must be given up (by the caller, s pinned). */
bool bounce_touched(struct snap *s)
{
    s->faults++;
    if (!s->abandoned && s->ready && !s->ending && s->faults > BOUNCE_FAULT_BUDGET) {
        s->abandoned = true;
        atomic_fetch_add(&bst_abandoned, 1);
    }
    return s->abandoned && !s->given_up && s->ready && !s->ending;
}

/* bounce_fill's body: touch counts the call against the budget. */
void bounce_fill_range(struct snap *s, uintptr_t lo, uintptr_t hi, uintptr_t ex_lo,
                       uintptr_t ex_hi, bool touch)
{
    size_t i0, i1, x0 = 0, x1 = 0, all = SIZE_MAX;
    bounce_index_range(s, lo, hi, false, &i0, &i1);
    if (ex_hi > ex_lo)
        bounce_index_range(s, ex_lo, ex_hi, true, &x0, &x1);
    uint8_t *st = s->page;
    bounce_lock();
    bool any = bounce_scan(st, i0, i1, PG_MASK(PG_MISSING)) < i1;
    if (any && touch && bounce_touched(s)) {
        if (!bounce_give_up(s, s->reg_lo + (i0 << bounce_page_shift))) {
            bounce_unlock();
            return;
        }
    } else if (!fill_span(s, i0, i1, x0, x1, &all, touch)) {
        bounce_unlock();
        return;
    }
    if (uffd_in_handler()) {
        bounce_unlock();
        return;
    }
    /* Pages another thread is filling: done when it is. */
    for (size_t i = i0; i < i1;) {
        i = bounce_scan(st, i, i1, PG_MASK(PG_BUSY) | PG_MASK(PG_BUSY_DIRTY));
        if (i < i1)
            bounce_wait();
    }
    bounce_unlock();
}

void bounce_fill(struct snap *s, uintptr_t lo, uintptr_t hi, uintptr_t ex_lo, uintptr_t ex_hi)
{
    bounce_fill_range(s, lo, hi, ex_lo, ex_hi, true);
}

/* A missing fault at addr of s (lock held, s pinned): the next fill_unit
 * bytes of missing pages from addr's chunk on, wrapping round to the
 * start, and the unit doubles. Whatever the order of the touches
 * (sequential, strided, random), k faults fill chunk * (2^k - 1) bytes:
 * a snapshot takes at most log2(size / chunk) + 1 of them. */
void bounce_fill_growing(struct snap *s, uintptr_t addr)
{
    size_t chunk = config_get()->bounce_chunk;
    if (s->fill_unit < chunk)
        s->fill_unit = chunk;
    size_t want = s->fill_unit >> bounce_page_shift;
    if (s->fill_unit <= s->reg_hi - s->reg_lo)
        s->fill_unit *= 2;
    size_t from = bounce_index(s, addr - (addr - s->reg_lo) % chunk);
    if (fill_span(s, from, bounce_npages(s), 0, 0, &want, true))
        fill_span(s, 0, from, 0, 0, &want, true);
}
