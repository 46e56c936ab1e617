/* The bounce module's table of snapshots, page states, filling, ending
 * and the userfaultfd callbacks (bounce.h). The copies are in
 * d2h.c and h2d.c, the lifetimes (frees, contexts, fork, exit, counters) in
 * life.c, the driver work in gpu.c and stage.c.
 *
 * Locking: bounce_mu guards the list, every snapshot's fields and page
 * states. It is never held across a driver call or an ioctl that could
 * wait for the handler; whoever works on a snapshot outside it pins it
 * (busy). A snapshot being ended is flagged `ending` and stays listed, so
 * that a new D2H over the same pages waits until its registration is gone
 * before registering its own. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "counters.h"
#include "gpu.h"
#include "log.h"
#include "pages.h"
#include "stage.h"
#include "table.h"
#include "uffd.h"
#include "watch.h"

pthread_mutex_t bounce_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t bounce_cv = PTHREAD_COND_INITIALIZER;
struct snap *bounce_head;
_Atomic size_t bounce_count;
_Atomic bool bounce_disabled;
_Atomic uint64_t bounce_work_gen;

#define READ_AHEAD_MAX 8 /* chunks filled by one fault of a sequential reader */

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
}

void bounce_touch(struct snap *s)
{
    if (s == bounce_head)
        return;
    bounce_unlink(s);
    bounce_link(s);
}

void bounce_judge(struct snap *s, bool useful)
{
    if (s->judged || s->neutral || atomic_load(&bounce_disabled))
        return;
    s->judged = true;
    evidence_outcome(&s->keys, useful);
}

void bounce_snap_free(struct snap *s)
{
    munmap(s, s->map_size);
}

/* ---- filling ------------------------------------------------------------ */

/* Fills the missing pages of s in [lo, hi), except those wholly inside
 * [ex_lo, ex_hi), and waits for pages others are filling there. s pinned,
 * lock not held. */
void bounce_fill(struct snap *s, uintptr_t lo, uintptr_t hi, uintptr_t ex_lo, uintptr_t ex_hi)
{
    size_t i0, i1, x0 = 0, x1 = 0;
    bounce_index_range(s, lo, hi, false, &i0, &i1);
    if (ex_hi > ex_lo)
        bounce_index_range(s, ex_lo, ex_hi, true, &x0, &x1);
    uint8_t *st = s->page;
    pthread_mutex_lock(&bounce_mu);
    size_t i = i0;
    while (i < i1) {
        if (i >= x0 && i < x1) {
            i = x1; /* wholly inside the exclusion */
            continue;
        }
        if (st[i] != PG_MISSING) {
            i = bounce_scan(st, i, i1, PG_MASK(PG_MISSING));
            continue;
        }
        size_t run = i, stop = i < x0 && x1 > x0 && x0 < i1 ? x0 : i1;
        while (i < stop && st[i] == PG_MISSING)
            st[i++] = PG_BUSY;
        pthread_mutex_unlock(&bounce_mu);
        uintptr_t a = s->reg_lo + (run << bounce_page_shift);
        size_t len = (i - run) << bounce_page_shift;
        int r = bgpu_fill(&s->buf, a - s->host, a, len);
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
        pthread_mutex_lock(&bounce_mu);
        if (r > 0)
            s->filled += i - run;
        /* The CPU (or the kernel, or a fork) wanted most of the bytes
         * before any GPU did: the snapshot was not worth it. */
        if (!s->h2d_seen && s->filled * 2 > (s->reg_hi - s->reg_lo) >> bounce_page_shift)
            bounce_judge(s, false);
        for (size_t p = run; p < i; p++) {
            if (r < 0) /* retried later: pages already there are skipped */
                st[p] = st[p] == PG_BUSY ? PG_MISSING : PG_DIRTY;
            else
                st[p] = (r > 0 && st[p] == PG_BUSY) ? PG_CLEAN : PG_DIRTY;
        }
        pthread_cond_broadcast(&bounce_cv);
        if (r < 0) {
            /* The handler must read an event first: the faulting threads
             * fault again afterwards. */
            pthread_mutex_unlock(&bounce_mu);
            uffd_wake(a, len);
            return;
        }
    }
    if (uffd_in_handler()) {
        pthread_mutex_unlock(&bounce_mu);
        return;
    }
    /* Pages another thread is filling: done when it is. */
    for (i = i0; i < i1;) {
        i = bounce_scan(st, i, i1, PG_MASK(PG_BUSY) | PG_MASK(PG_BUSY_DIRTY));
        if (i < i1)
            pthread_cond_wait(&bounce_cv, &bounce_mu);
    }
    pthread_mutex_unlock(&bounce_mu);
}

/* ---- ending ------------------------------------------------------------- */

static void destroy(struct snap *s)
{
    /* Ended (overwritten, freed, ...) before serving an H2D: wasted. */
    pthread_mutex_lock(&bounce_mu);
    bounce_judge(s, false);
    pthread_mutex_unlock(&bounce_mu);
    if (!s->keep_reg)
        uffd_unregister(s->reg_lo, s->reg_hi - s->reg_lo);
    bgpu_event_release(s->done);
    bgpu_buffer_put(&s->buf);
    pthread_mutex_lock(&bounce_mu);
    bounce_unlink(s);
    pthread_cond_broadcast(&bounce_cv);
    pthread_mutex_unlock(&bounce_mu);
    bounce_snap_free(s);
}

/* Ends s, pinned by the caller: fills its missing pages first except
 * those wholly inside [ex_lo, ex_hi) (fill), then unregisters it and gives
 * its buffer back, once no one else works on it. */
void bounce_end(struct snap *s, bool fill, uintptr_t ex_lo, uintptr_t ex_hi)
{
    if (fill && s->lazy)
        bounce_fill(s, s->reg_lo, s->reg_hi, ex_lo, ex_hi);
    pthread_mutex_lock(&bounce_mu);
    if (s->ending) { /* someone else ends it */
        s->busy--;
        pthread_cond_broadcast(&bounce_cv);
        pthread_mutex_unlock(&bounce_mu);
        return;
    }
    s->ending = true;
    while (s->busy > 1)
        pthread_cond_wait(&bounce_cv, &bounce_mu);
    pthread_mutex_unlock(&bounce_mu);
    destroy(s);
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
    pthread_mutex_lock(&bounce_mu);
    struct snap *s = same_pages(host, bytes);
    bool ok = s && s->lazy == lazy && s->dma == dma && (lazy || dma) && s->ready &&
              !s->ending && !s->gone;
    if (ok) {
        s->keep_reg = true;
        s->busy++;
    }
    size_t n = ok ? (s->reg_hi - s->reg_lo) >> bounce_page_shift : 0;
    /* Eager: pages written since are protected again (they start clean in
     * the new snapshot; a write racing with this D2H is the program's). */
    for (size_t i = 0; !lazy && i < n;) {
        i = bounce_scan(s->page, i, n, ~PG_MASK(PG_CLEAN));
        if (i == n)
            break;
        size_t run = i;
        i = bounce_scan(s->page, i, n, PG_MASK(PG_CLEAN));
        memset(s->page + run, PG_CLEAN, i - run);
        pthread_mutex_unlock(&bounce_mu);
        uffd_protect(s->reg_lo + (run << bounce_page_shift), (i - run) << bounce_page_shift,
                     true);
        pthread_mutex_lock(&bounce_mu);
    }
    pthread_mutex_unlock(&bounce_mu);
    if (ok)
        bounce_end(s, true, host, host + bytes); /* every page about to be rewritten */
    return ok;
}

void bounce_end_overlapping(uintptr_t lo, uintptr_t hi, bool keep, bool setup)
{
    const size_t pg = bounce_page;
    uintptr_t plo = lo & ~(uintptr_t)(pg - 1);
    uintptr_t phi = (hi + pg - 1) & ~(uintptr_t)(pg - 1);
    pthread_mutex_lock(&bounce_mu);
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
            /* Only a partial page in common: that page is the host's now. */
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
            pthread_mutex_unlock(&bounce_mu);
            if (changed)
                uffd_protect(a, b - a, false);
            pthread_mutex_lock(&bounce_mu);
            if (!changed)
                break; /* nothing else there to do */
            continue;
        }
        if (s == NULL) {
            if (!wait)
                break;
            pthread_cond_wait(&bounce_cv, &bounce_mu);
            continue;
        }
        s->busy++;
        pthread_mutex_unlock(&bounce_mu);
        bounce_end(s, true, keep ? 0 : lo, keep ? 0 : hi);
        pthread_mutex_lock(&bounce_mu);
    }
    pthread_mutex_unlock(&bounce_mu);
}

/* ---- userfaultfd callbacks (the handler thread) ------------------------- */

static void on_fault(uintptr_t addr, bool wp, bool write)
{
    (void)write;
    const size_t pg = bounce_page;
    atomic_fetch_add(&bst_faults, 1);
    pthread_mutex_lock(&bounce_mu);
    struct snap *s = bounce_find(addr, true);
    if (s != NULL && !s->ready && !wp) {
        pthread_mutex_unlock(&bounce_mu);
        return; /* its setup wakes the range when done */
    }
    /* A write is let through at once, set up or not: the writer may be
     * the setup itself (a copy the driver makes with the CPU). */
    uint8_t *st = s && !s->ending ? bounce_page_state(s, addr) : NULL;
    if (wp) {
        if (st && *st == PG_BUSY)
            *st = PG_BUSY_DIRTY;
        else if (st && *st != PG_BUSY_DIRTY)
            *st = PG_DIRTY;
        pthread_mutex_unlock(&bounce_mu);
        if (!uffd_protect(addr, pg, false))
            uffd_wake(addr, pg); /* an event first: the write faults again */
        return;
    }
    if (st == NULL || *st != PG_MISSING) {
        bool busy = st && (*st == PG_BUSY || *st == PG_BUSY_DIRTY);
        pthread_mutex_unlock(&bounce_mu);
        if (!busy) {
            /* Not ours to fill (a page dropped since, a range grown by
             * mremap): what the kernel would give, a zero page. */
            uffd_zero(addr, pg);
            uffd_wake(addr, pg);
        }
        return; /* busy: the filler's copy wakes it */
    }
    /* Read-ahead: a reader that keeps going forward gets more each time. */
    size_t chunk = config_get()->bounce_chunk;
    if (addr == s->next_fault)
        s->ahead = s->ahead ? s->ahead * 2 : 1;
    else
        s->ahead = 1;
    if (s->ahead > READ_AHEAD_MAX)
        s->ahead = READ_AHEAD_MAX;
    uintptr_t lo = addr - (addr - s->reg_lo) % chunk;
    uintptr_t hi = lo + chunk * s->ahead;
    if (hi > s->reg_hi || hi < lo)
        hi = s->reg_hi;
    s->next_fault = hi;
    s->busy++;
    pthread_mutex_unlock(&bounce_mu);
    bounce_fill(s, lo, hi, 0, 0);
    pthread_mutex_lock(&bounce_mu);
    s->busy--;
    pthread_cond_broadcast(&bounce_cv);
    pthread_mutex_unlock(&bounce_mu);
}

/* The pages in [start, end) hold what the kernel says now (zeros, or no
 * memory): they leave their snapshots. A snapshot left with nothing is
 * marked gone, for a program thread to end (bounce_reap): the handler
 * never waits for the threads working on it. */
static _Atomic int gone_pending;

static void on_gone(uintptr_t start, uintptr_t end, bool unmapped)
{
    (void)unmapped;
    pthread_mutex_lock(&bounce_mu);
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
            atomic_fetch_add(&gone_pending, 1);
        }
    }
    pthread_mutex_unlock(&bounce_mu);
}

void bounce_reap(void)
{
    if (atomic_load_explicit(&gone_pending, memory_order_relaxed) == 0 || uffd_in_handler())
        return;
    pthread_mutex_lock(&bounce_mu);
    for (;;) {
        struct snap *s = bounce_head;
        while (s && !(s->gone && !s->ending))
            s = s->next;
        if (s == NULL)
            break;
        atomic_fetch_sub(&gone_pending, 1);
        s->gone = false;
        s->busy++;
        pthread_mutex_unlock(&bounce_mu);
        bounce_end(s, false, 0, 0);
        pthread_mutex_lock(&bounce_mu);
    }
    pthread_mutex_unlock(&bounce_mu);
}

static void on_moved(uintptr_t from, uintptr_t to, size_t len)
{
    pthread_mutex_lock(&bounce_mu);
    for (struct snap *s = bounce_head; s; s = s->next) {
        if (s->reg_lo >= from + len || from >= s->reg_hi)
            continue;
        if (from <= s->reg_lo && s->reg_hi <= from + len) {
            uintptr_t d = to - from; /* wraps for a move down: still right */
            s->host += d;
            s->reg_lo += d;
            s->reg_hi += d;
            s->next_fault = 0;
            continue;
        }
        /* Part of a snapshot moved away: its pages there cannot be
         * followed. Not from realloc (it moves whole mappings) nor from the
         * program's mremap (libc.c fills the pages first): only from
         * a raw system call. */
        LOG_WARN("bounce: mremap moved part of a lazy host buffer (%#lx); "
                 "its pages there read as zero", (unsigned long)s->reg_lo);
        size_t i0, i1;
        bounce_index_range(s, from, from + len, false, &i0, &i1);
        memset(s->page + i0, PG_DIRTY, i1 - i0);
    }
    pthread_mutex_unlock(&bounce_mu);
}

/* ---- lifetimes ---------------------------------------------------------- */

bool bounce_start(void)
{
    bounce_page = (size_t)sysconf(_SC_PAGESIZE);
    bounce_page_shift = (unsigned)__builtin_ctzl(bounce_page);
    return uffd_open(&ops);
}
