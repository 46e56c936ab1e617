/* The bounce module's table of snapshots, ending them, and the
 * userfaultfd callbacks (table.h). Filling pages and the fault budget are
 * fill.c's, the D2H d2h.c's, the H2D h2d.c's, the lifetimes (frees,
 * contexts, fork, exit) life.c's, the driver work gpu.c's and stage.c's.
 *
 * Locking: bounce_mu guards the list, every snapshot's fields and page
 * states, taken through bounce_lock (lock.h; table.h's contract: no
 * signal handler runs on a thread that holds it). It is never held across
 * a driver call or an ioctl that could wait for the handler; whoever
 * works on a snapshot outside it pins it (busy). A snapshot being ended
 * is flagged `ending` and stays listed, so that a new D2H over the same
 * pages waits until its registration is gone before registering its own. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "counters.h"
#include "dormant.h"
#include "fill.h"
#include "gpu.h"
#include "log.h"
#include "lock.h"
#include "pages.h"
#include "shim.h"
#include "stage.h"
#include "table.h"
#include "uffd.h"
#include "watch.h"

/* Why no signal handler can hang the process on bounce_mu (or on what
 * the fault handler waits for with it): a hang needs a thread that, in a
 * signal handler, faults on a lazy page while that same thread holds
 * something the handler thread needs to resolve the fault. The handler
 * thread needs: bounce_mu, its staging buffer's lock, uffd.c's vetted_mu
 * and batch_mu, the driver, and the end of a snapshot's setup (a fault
 * on pages being set up waits for it). A program thread holds each of
 * these only inside a quiet section (core/shim.h), where no asynchronous
 * signal is delivered: bounce_mu through bounce_lock; the staging and
 * uffd locks through their own quiet sections; the driver through the
 * wrappers (SHIM_QUIET_SCOPE, shim_begin) once shim_quiet_enable ran, in
 * bounce_start, before any snapshot existed; a setup inside the D2H
 * wrapper's section. The handler thread itself takes no signal
 * (shim_thread_start) and never waits for a program thread. What stays
 * open: a driver call the program makes past the shim (an unwrapped
 * function), and a synchronous signal (SIGSEGV, ...) raised in a section,
 * which touches no memory of the program's. */
pthread_mutex_t bounce_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t bounce_cv = PTHREAD_COND_INITIALIZER;
struct snap *bounce_head;
_Atomic size_t bounce_count;
_Atomic uint64_t bounce_work_gen;

static void on_fault(uintptr_t addr, bool wp, bool write);
static void on_gone(uintptr_t start, uintptr_t end, bool unmapped);
static void on_moved(uintptr_t from, uintptr_t to, size_t len);
static const struct uffd_ops ops = {on_fault, on_gone, on_moved};


/* ---- the table ---------------------------------------------------------- */

struct snap *bounce_find(uintptr_t addr, bool registered)
{
    for (struct snap *s = bounce_head; s; s = s->next) {
        uintptr_t lo = registered ? s->reg_lo : s->host;
        uintptr_t hi = registered ? s->reg_hi : s->host + s->bytes;
        if (addr >= lo && addr < hi)
            return s;
    }
    return NULL;
}

/* The span of every listed snapshot's registered pages (lo > hi: none),
 * written under the lock at every change, read without it. */
static _Atomic uintptr_t span_lo = UINTPTR_MAX, span_hi;

static void span_update(void)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (struct snap *s = bounce_head; s; s = s->next) {
        lo = s->reg_lo < lo ? s->reg_lo : lo;
        hi = s->reg_hi > hi ? s->reg_hi : hi;
    }
    atomic_store_explicit(&span_lo, lo, memory_order_relaxed);
    atomic_store_explicit(&span_hi, hi, memory_order_relaxed);
}

bool bounce_may_overlap(uintptr_t lo, uintptr_t hi)
{
    return lo < atomic_load_explicit(&span_hi, memory_order_relaxed) &&
           atomic_load_explicit(&span_lo, memory_order_relaxed) < hi;
}

struct snap *bounce_find_overlap(uintptr_t lo, uintptr_t hi)
{
    for (struct snap *s = bounce_head; s; s = s->next)
        if (s->reg_lo < hi && lo < s->reg_hi)
            return s;
    return NULL;
}

void bounce_link(struct snap *s)
{
    s->prev = NULL;
    s->next = bounce_head;
    if (bounce_head)
        bounce_head->prev = s;
    bounce_head = s;
    atomic_fetch_add(&bounce_count, 1);
    span_update();
}

void bounce_unlink(struct snap *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        bounce_head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    atomic_fetch_sub(&bounce_count, 1);
    span_update();
}

void bounce_touch(struct snap *s)
{
    if (s == bounce_head)
        return;
    bounce_unlink(s);
    bounce_link(s);
}

void bounce_snap_free(struct snap *s)
{
    munmap(s, s->map_size);
}

/* ---- ending ------------------------------------------------------------- */

/* A quiet section (shim.h) on a program thread: ending a snapshot calls
 * the driver and the kernel on pages the handler may be waiting on, and a
 * signal handler there touching a lazy page would wait for this thread.
 * Program threads reach these from free(), outside any wrapper. The
 * handler thread's signals are all blocked already. */
static bool quiet_begin(void)
{
    return !uffd_in_handler() && shim_quiet_begin(true);
}


static void destroy(struct snap *s)
{
    /* Ended (overwritten, freed, ...) before serving an H2D: wasted. */
    bounce_lock();
    bounce_judge(s, false);
    if (s->gone) { /* never reaped: nothing left to reap */
        s->gone = false;
        atomic_fetch_sub(&bounce_gone_pending, 1);
    }
    bounce_unlock();
    bst_snapshot_done(s->faults);
    /* A shared mapping's eager range stays registered, dormant
     * (dormant.h): unregistered, its next write would fault page by page. */
    if (!s->keep_reg && !s->unregistered &&
        !dormant_keep(s->reg_lo, s->reg_hi, s->lazy, &s->keys))
        uffd_unregister(s->reg_lo, s->reg_hi - s->reg_lo);
    bgpu_event_release(s->done);
    bgpu_buffer_put(&s->buf);
    bounce_lock();
    bounce_unlink(s);
    pthread_cond_broadcast(&bounce_cv);
    bounce_unlock();
    bounce_snap_free(s);
}

/* Ends s, pinned by the caller: fills its missing pages first except
 * those wholly inside [ex_lo, ex_hi) (fill), then unregisters it and gives
 * its buffer back, once no one else works on it. */
void bounce_end(struct snap *s, bool fill, uintptr_t ex_lo, uintptr_t ex_hi)
{
    bool quiet = quiet_begin();
    if (fill && s->lazy)
        bounce_fill_range(s, s->reg_lo, s->reg_hi, ex_lo, ex_hi, false);
    bounce_lock();
    if (s->ending) { /* someone else ends it */
        s->busy--;
        pthread_cond_broadcast(&bounce_cv);
        bounce_unlock();
        shim_quiet_end(quiet);
        return;
    }
    s->ending = true;
    bounce_unlock();
    bounce_finish(s);
    shim_quiet_end(quiet);
}

void bounce_finish(struct snap *s)
{
    bool quiet = quiet_begin();
    bounce_lock();
    while (s->busy > 1)
        bounce_wait();
    bounce_unlock();
    destroy(s);
    shim_quiet_end(quiet);
}

/* The snapshot whose tracked pages are exactly those of [host,
 * host+bytes), or NULL (lock held). */
static struct snap *same_pages(uintptr_t host, size_t bytes)
{
    const size_t pg = bounce_page;
    uintptr_t lo = (host + pg - 1) & ~(uintptr_t)(pg - 1);
    uintptr_t hi = (host + bytes) & ~(uintptr_t)(pg - 1);
    if (hi <= lo)
        return NULL;
    struct snap *s = bounce_head;
    while (s && !(s->reg_lo == lo && s->reg_hi == hi))
        s = s->next;
    return s;
}

bool bounce_handover(uintptr_t host, size_t bytes, bool lazy, bool dma)
{
    bounce_lock();
    struct snap *s = same_pages(host, bytes);
    bool ok = s && s->lazy == lazy && s->dma == dma && (lazy || dma) && s->ready &&
              !s->ending && !s->gone;
    if (ok) {
        s->keep_reg = true;
        s->busy++;
    }
    size_t n = ok ? bounce_npages(s) : 0;
    /* Eager: pages written since are protected again (they start clean in
     * the new snapshot; a write racing with this D2H is the program's). */
    for (size_t i = 0; !lazy && i < n;) {
        i = bounce_scan(s->page, i, n, ~PG_MASK(PG_CLEAN));
        if (i == n)
            break;
        size_t run = i;
        i = bounce_scan(s->page, i, n, PG_MASK(PG_CLEAN));
        memset(s->page + run, PG_CLEAN, i - run);
        bounce_unlock();
        uffd_protect(s->reg_lo + (run << bounce_page_shift), (i - run) << bounce_page_shift,
                     true);
        bounce_lock();
    }
    bounce_unlock();
    if (ok)
        bounce_end(s, true, host, host + bytes); /* every page about to be rewritten */
    return ok;
}

/* Only a partial page in common with [plo, phi): that page is the
 * host's now. Lock held; false when nothing changed. */
static bool release_shared(struct snap *shared, uintptr_t plo, uintptr_t phi)
{
    uintptr_t a = shared->reg_lo > plo ? shared->reg_lo : plo;
    uintptr_t b = shared->reg_hi < phi ? shared->reg_hi : phi;
    bool changed = false;
    size_t i0, i1;
    bounce_index_range(shared, a, b, false, &i0, &i1);
    for (size_t i = i0; i < i1; i++) {
        if (shared->page[i] == PG_CLEAN) {
            shared->page[i] = PG_DIRTY;
            changed = true;
        }
    }
    bounce_unlock();
    if (changed)
        uffd_protect(a, b - a, false);
    bounce_lock();
    return changed;
}

void bounce_end_overlapping(uintptr_t lo, uintptr_t hi, bool keep, bool setup)
{
    const size_t pg = bounce_page;
    uintptr_t plo = lo & ~(uintptr_t)(pg - 1);
    uintptr_t phi = (hi + pg - 1) & ~(uintptr_t)(pg - 1);
    bool quiet = quiet_begin();
    bounce_lock();
    for (;;) {
        struct snap *s = NULL, *shared = NULL;
        bool wait = false;
        for (struct snap *t = bounce_head; t && !s; t = t->next) {
            if (t->reg_lo >= phi || plo >= t->reg_hi)
                continue;
            bool bytes = t->host < hi && lo < t->host + t->bytes;
            if (t->ending || !t->ready) {
                /* A D2H waits for a neighbour's setup or end (their pages
                 * are registered); others leave it to its owner. */
                wait = wait || setup;
                continue;
            }
            if (bytes || setup)
                s = t;
            else
                shared = t;
        }
        if (s == NULL && shared != NULL) {
            if (!release_shared(shared, plo, phi))
                break; /* nothing else there to do */
            continue;
        }
        if (s == NULL) {
            if (!wait)
                break;
            bounce_wait();
            continue;
        }
        s->busy++;
        bounce_unlock();
        bounce_end(s, true, keep ? 0 : lo, keep ? 0 : hi);
        bounce_lock();
    }
    bounce_unlock();
    shim_quiet_end(quiet);
}

/* ---- userfaultfd callbacks (the handler thread) ------------------------- */

/* A write to a write-protected page: the page is the host's from now on. */
static void on_write(uint8_t *st, uintptr_t addr)
{
    if (st && *st == PG_BUSY)
        *st = PG_BUSY_DIRTY;
    else if (st && *st != PG_BUSY_DIRTY)
        *st = PG_DIRTY;
    bounce_unlock();
    if (!uffd_protect(addr, bounce_page, false))
        uffd_wake(addr, bounce_page); /* an event first: the write faults again */
}

static void fault_body(uintptr_t addr, bool wp)
{
    const size_t pg = bounce_page;
    bounce_lock();
    struct snap *s = bounce_find(addr, true);
    if (s != NULL && !s->ready && !wp) {
        bounce_unlock();
        return; /* its setup wakes the range when done */
    }
    /* A write is let through at once, set up or not: the writer may be
     * the setup itself (a copy the driver makes with the CPU). */
    uint8_t *st = s && !s->ending ? bounce_page_state(s, addr) : NULL;
    /* A touch of the snapshot's: a write it tracks, or a page only it
     * holds (not a dropped page, which is the kernel's zero page). */
    if (st != NULL && (wp || *st == PG_MISSING) && bounce_touched(s)) {
        s->busy++;
        if (!bounce_give_up(s, addr))
            uffd_wake(addr, pg); /* resumed at its next fault */
        s->busy--;
        pthread_cond_broadcast(&bounce_cv);
        bounce_unlock();
        return;
    }
    if (wp) {
        /* Outside every snapshot, in a dormant range: woken whole, once. */
        if (st == NULL && s == NULL && dormant_fault(addr)) {
            bounce_unlock();
            return;
        }
        on_write(st, addr);
        return;
    }
    if (st == NULL || *st != PG_MISSING) {
        bool busy = st && (*st == PG_BUSY || *st == PG_BUSY_DIRTY);
        bounce_unlock();
        if (!busy) {
            /* Not ours to fill (a page dropped since, a range grown by
             * mremap): what the kernel would give, a zero page. */
            uffd_zero(addr, pg);
            uffd_wake(addr, pg);
        }
        return; /* busy: the filler's copy wakes it */
    }
    s->busy++;
    bounce_fill_growing(s, addr);
    s->busy--;
    pthread_cond_broadcast(&bounce_cv);
    bounce_unlock();
}

static void on_fault(uintptr_t addr, bool wp, bool write)
{
    (void)write;
    uint64_t t0 = bounce_clock_ns();
    atomic_fetch_add(&bst_faults, 1);
    fault_body(addr, wp);
    atomic_fetch_add(&bst_handler_ns, bounce_clock_ns() - t0);
}

/* The pages in [start, end) hold what the kernel says now (zeros, or no
 * memory): they leave their snapshots. A snapshot left with nothing is
 * marked gone, for a program thread to end (bounce_reap): the handler
 * never waits for the threads working on it. */
static void on_gone(uintptr_t start, uintptr_t end, bool unmapped)
{
    bounce_lock();
    if (unmapped)
        dormant_forget(start, end);
    for (struct snap *s = bounce_head; s; s = s->next) {
        /* A REMOVE during setup is the setup's own MADV_DONTNEED. */
        if (s->reg_lo >= end || start >= s->reg_hi || s->ending || !s->ready)
            continue;
        size_t i0, i1;
        bounce_index_range(s, start, end, false, &i0, &i1);
        for (size_t i = i0; i < i1; i++)
            if (s->page[i] != PG_BUSY_DIRTY)
                s->page[i] = s->page[i] == PG_BUSY ? PG_BUSY_DIRTY : PG_DIRTY;
        if (start <= s->reg_lo && s->reg_hi <= end && !s->gone) {
            s->gone = true;
            atomic_fetch_add(&bounce_gone_pending, 1);
        }
        /* Unmapped: what the predictor learnt of this buffer (read by the
         * CPU, say) is not a later buffer's at the same address. */
        if (unmapped && start <= s->host && s->host + s->bytes <= end && !s->neutral &&
            !atomic_load(&bounce_disabled))
            bounce_tell(s, NEWS_FORGET);
    }
    bounce_unlock();
}

struct snap *bounce_take_gone(bool *given_up)
{
    struct snap *s = bounce_head;
    while (s && !(s->gone && !s->ending))
        s = s->next;
    if (s == NULL)
        return NULL;
    atomic_fetch_sub(&bounce_gone_pending, 1);
    s->gone = false;
    s->busy++;
    *given_up = s->given_up && !s->dma;
    if (*given_up)
        s->ending = true;
    return s;
}

static void on_moved(uintptr_t from, uintptr_t to, size_t len)
{
    bounce_lock();
    dormant_forget(from, from + len);
    for (struct snap *s = bounce_head; s; s = s->next) {
        if (s->reg_lo >= from + len || from >= s->reg_hi)
            continue;
        if (from <= s->reg_lo && s->reg_hi <= from + len) {
            uintptr_t d = to - from; /* wraps for a move down: still right */
            s->host += d;
            s->reg_lo += d;
            s->reg_hi += d;
            continue;
        }
        /* Part of a snapshot moved away: its pages there cannot be
         * followed. Not from realloc (it moves whole mappings) nor from the
         * program's mremap (libc.c fills the pages first): only from a raw
         * system call. */
        LOG_WARN("bounce: mremap moved part of a lazy host buffer (%#lx); "
                 "its pages there read as zero", (unsigned long)s->reg_lo);
        size_t i0, i1;
        bounce_index_range(s, from, from + len, false, &i0, &i1);
        memset(s->page + i0, PG_DIRTY, i1 - i0);
    }
    span_update();
    bounce_unlock();
}

/* ---- lifetimes ---------------------------------------------------------- */

bool bounce_start(void)
{
    bounce_page = (size_t)sysconf(_SC_PAGESIZE);
    bounce_page_shift = (unsigned)__builtin_ctzl(bounce_page);
    /* Before the first snapshot: from now on a program thread inside the
     * driver or the shim takes no asynchronous signal (shim.h). */
    shim_quiet_enable();
    return uffd_open(&ops);
}
