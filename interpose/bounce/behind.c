/* Ends behind the program: behind.h. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "behind.h"
#include "counters.h"
#include "fill.h"
#include "lock.h"
#include "log.h"
#include "pages.h"
#include "shim.h"
#include "table.h"
#include "thread_start.h"
#include "uffd.h"

/* Queued snapshots (pinned, ending) and the one being ended; bounce_mu's. */
#define QUEUE_MAX 32

/* A protection pass this long or longer is split with the thread: 2,048
 * pages, about 0.2 ms, against some 20 us to hand half over. */
#define PROTECT_SPLIT_MIN ((size_t)8 << 20)
static struct snap *queue[QUEUE_MAX];
static unsigned queued, head;
static bool running;
static pthread_cond_t queue_cv = PTHREAD_COND_INITIALIZER;

/* Ranges whose pages an H2D took again while their snapshot was being
 * ended behind; bounce_mu's. */
#define REPEATS_MAX 16
static struct {
    uintptr_t lo, hi;
} repeats[REPEATS_MAX];
static unsigned repeats_next;

/* Ranges ended behind since their last D2H; bounce_mu's, with their count
 * readable without it. */
#define RECENT_MAX 16
static struct {
    uintptr_t lo, hi;
} recent[RECENT_MAX];
static _Atomic unsigned recent_count;

/* Protection pieces posted for the thread (bounce_behind_protect_post),
 * oldest first; bounce_mu's. */
#define JOBS_MAX 16
static struct {
    uintptr_t lo;
    size_t len;
    struct behind_protect *batch;
} jobs[JOBS_MAX];
static unsigned njobs;

static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static _Atomic bool started;

static void *ender_main(void *arg)
{
    (void)arg;
    bounce_lock();
    for (;;) {
        while (queued == 0 && njobs == 0)
            pthread_cond_wait(&queue_cv, &bounce_mu);
        if (njobs > 0) { /* the program waits for these sooner or later */
            uintptr_t lo = jobs[0].lo;
            size_t len = jobs[0].len;
            struct behind_protect *b = jobs[0].batch;
            memmove(&jobs[0], &jobs[1], --njobs * sizeof jobs[0]);
            bounce_unlock();
            bool ok = uffd_protect(lo, len, true);
            bounce_lock();
            b->ok = b->ok && ok;
            b->pending--;
            pthread_cond_broadcast(&bounce_cv);
            continue;
        }
        struct snap *s = queue[head];
        head = (head + 1) % QUEUE_MAX;
        queued--;
        running = true;
        size_t bytes = s->bytes;
        bounce_unlock();
        double t0 = bounce_now_us();
        bounce_finish(s);
        LOG_DEBUG("bounce: snapshot of %zu bytes ended behind the program in %.0f us", bytes,
                  bounce_now_us() - t0);
        bounce_lock();
        running = false;
        pthread_cond_broadcast(&bounce_cv);
    }
    return NULL;
}

static void start_body(void)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int rc = shim_thread_start(&t, &attr, ender_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        LOG_DEBUG("bounce: no thread to end snapshots behind the program: they end in place");
        return;
    }
    pthread_setname_np(t, "p2pshim-end");
    atomic_store(&started, true);
}

static bool overlaps_repeat(uintptr_t lo, uintptr_t hi)
{
    for (unsigned i = 0; i < REPEATS_MAX; i++)
        if (repeats[i].lo < hi && lo < repeats[i].hi)
            return true;
    return false;
}

bool bounce_behind_wanted(const struct snap *s, uintptr_t h, size_t n)
{
    return !s->lazy && !s->dma && s->ready && !s->ending && !atomic_load(&bounce_disabled) &&
           h <= s->reg_lo && s->reg_hi <= h + n && !overlaps_repeat(s->reg_lo, s->reg_hi);
}

/* [lo, hi) ended behind (lock held): the oldest entry goes when full. */
static void recent_add(uintptr_t lo, uintptr_t hi)
{
    unsigned n = atomic_load_explicit(&recent_count, memory_order_relaxed);
    if (n == RECENT_MAX) {
        for (unsigned i = 1; i < n; i++)
            recent[i - 1] = recent[i];
        n--;
    }
    recent[n].lo = lo;
    recent[n].hi = hi;
    atomic_store_explicit(&recent_count, n + 1, memory_order_relaxed);
}

/* Takes the recent entries meeting [lo, hi) by a whole page out (lock
 * held); repeat: they join the repeats. */
static void recent_take(uintptr_t lo, uintptr_t hi, bool repeat)
{
    unsigned n = atomic_load_explicit(&recent_count, memory_order_relaxed), kept = 0;
    for (unsigned i = 0; i < n; i++) {
        uintptr_t a = recent[i].lo > lo ? recent[i].lo : lo;
        uintptr_t b = recent[i].hi < hi ? recent[i].hi : hi;
        if (b < a + bounce_page) {
            recent[kept++] = recent[i];
            continue;
        }
        if (repeat && !overlaps_repeat(recent[i].lo, recent[i].hi)) {
            repeats[repeats_next].lo = recent[i].lo;
            repeats[repeats_next].hi = recent[i].hi;
            repeats_next = (repeats_next + 1) % REPEATS_MAX;
            LOG_DEBUG("bounce: the %zu bytes at %#lx went to a GPU twice after one D2H: "
                      "their snapshots end in place from now on",
                      (size_t)(recent[i].hi - recent[i].lo), (unsigned long)recent[i].lo);
        }
    }
    atomic_store_explicit(&recent_count, kept, memory_order_relaxed);
}

void bounce_behind_h2d(uintptr_t h, size_t n)
{
    if (atomic_load_explicit(&recent_count, memory_order_relaxed) == 0 || n == 0)
        return;
    bounce_lock();
    recent_take(h, h + n, true);
    bounce_unlock();
}

void bounce_behind_d2h(uintptr_t h, size_t n)
{
    if (atomic_load_explicit(&recent_count, memory_order_relaxed) == 0 || n == 0)
        return;
    bounce_lock();
    recent_take(h, h + n, false);
    bounce_unlock();
}

/* Queues s for the thread (lock not held); false when it cannot be had
 * or the queue is full. */
static bool queue_for_thread(struct snap *s)
{
    pthread_once(&start_once, start_body);
    if (!atomic_load(&started))
        return false;
    bounce_lock();
    bool room = queued < QUEUE_MAX;
    if (room) {
        queue[(head + queued) % QUEUE_MAX] = s;
        queued++;
        pthread_cond_signal(&queue_cv);
    }
    bounce_unlock();
    if (room)
        atomic_fetch_add(&bst_ended_behind, 1);
    return room;
}

void bounce_behind_end(struct snap *s)
{
    bounce_lock();
    recent_add(s->reg_lo, s->reg_hi);
    bounce_unlock();
    if (!queue_for_thread(s))
        bounce_finish(s);
}

void bounce_behind_given_up(struct snap *s)
{
    if (!queue_for_thread(s))
        bounce_finish(s);
}

void bounce_reap(void)
{
    if (atomic_load_explicit(&bounce_gone_pending, memory_order_relaxed) == 0 || uffd_in_handler())
        return;
    bool quiet = shim_quiet_begin(true);
    bounce_lock();
    bool given_up;
    struct snap *s;
    while ((s = bounce_take_gone(&given_up)) != NULL) {
        bounce_unlock();
        if (given_up)
            bounce_behind_given_up(s);
        else
            bounce_end(s, false, 0, 0);
        bounce_lock();
    }
    bounce_unlock();
    shim_quiet_end(quiet);
}

void bounce_behind_protect_begin(struct behind_protect *b)
{
    b->pending = 0;
    b->ok = b->own_ok = true;
    b->posted = false;
    pthread_once(&start_once, start_body);
}

void bounce_behind_protect_post(struct behind_protect *b, uintptr_t lo, size_t len)
{
    if (len == 0)
        return;
    bool posted = false;
    if (atomic_load(&started)) {
        bounce_lock();
        posted = njobs < JOBS_MAX;
        if (posted) {
            jobs[njobs].lo = lo;
            jobs[njobs].len = len;
            jobs[njobs].batch = b;
            njobs++;
            b->pending++;
            pthread_cond_signal(&queue_cv);
        }
        bounce_unlock();
    }
    if (posted)
        b->posted = true;
    else if (!uffd_protect(lo, len, true))
        b->own_ok = false;
}

bool bounce_behind_protect_end(struct behind_protect *b)
{
    if (!b->posted)
        return b->own_ok;
    for (;;) {
        bounce_lock();
        unsigned i = 0;
        while (i < njobs && jobs[i].batch != b)
            i++;
        if (i == njobs) {
            while (b->pending > 0)
                bounce_wait();
            bool ok = b->ok;
            bounce_unlock();
            return ok && b->own_ok;
        }
        /* Not begun by the thread (busy ending a snapshot): done here. */
        uintptr_t lo = jobs[i].lo;
        size_t len = jobs[i].len;
        memmove(&jobs[i], &jobs[i + 1], (njobs - i - 1) * sizeof jobs[0]);
        njobs--;
        b->pending--;
        bounce_unlock();
        if (!uffd_protect(lo, len, true))
            b->own_ok = false;
    }
}

void bounce_behind_protect_halves(struct behind_protect *b, uintptr_t lo, size_t len)
{
    size_t first = (len / 2) & ~(bounce_page - 1);
    bounce_behind_protect_post(b, lo + first, len - first);
    if (first > 0 && !uffd_protect(lo, first, true))
        b->own_ok = false;
}

bool bounce_behind_protect(uintptr_t lo, size_t len)
{
    if (len < PROTECT_SPLIT_MIN)
        return uffd_protect(lo, len, true);
    struct behind_protect b;
    bounce_behind_protect_begin(&b);
    bounce_behind_protect_halves(&b, lo, len);
    return bounce_behind_protect_end(&b);
}

void bounce_behind_drain(void)
{
    if (!atomic_load(&started))
        return;
    bounce_lock();
    while (queued > 0 || running)
        bounce_wait();
    bounce_unlock();
}

void bounce_behind_fork_child(void)
{
    queued = 0;
    head = 0;
    running = false;
    njobs = 0;
    atomic_store(&started, false);
    atomic_store(&recent_count, 0);
}
