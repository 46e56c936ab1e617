#include "link_life.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "config.h"
#include "driver.h"
#include "log.h"
#include "peer.h"
#include "record.h"
#include "shim.h"

/* Links tracked at once; past that a link is not tracked, so it is never
 * released (the shim keeps it, as it did before idle release existed). */
#define LINKS_MAX 128
/* Streams whose events one link keeps; a further stream with all of them
 * busy makes the link untracked. */
#define LINK_SLOTS 4

struct link_slot {
    CUcontext ctx; /* the event's context (the stream's) */
    CUstream stream;
    bool per_thread;
    CUevent event; /* NULL: free slot */
};

/* One unordered pair of contexts; both directions between them. */
struct link_entry {
    CUcontext a, b; /* a NULL: free entry */
    int dev_a, dev_b;
    uint64_t last_use_ns; /* the idle clock: kept only while idle release is on */
    _Atomic uint64_t last_use_seq; /* the order of last uses: which link is least
                                    * recently used (written without the lock too) */
    bool untracked;
    /* Tracked copies noted and not yet issued (their events not yet
     * recorded): the link is not idle while one is on its way. */
    int issuing;
    struct link_slot slot[LINK_SLOTS];
};

static struct link_entry links[LINKS_MAX];
/* Entries at or past this index are free: scans stop there. */
static int links_used;
static pthread_mutex_t links_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t next_check_ns;
static _Atomic uint64_t use_seq;
/* Bumped (under links_lock) whenever an entry is made or dropped: a
 * thread's memo of its last link is good while it holds. */
static _Atomic uint64_t links_gen;
/* The last link this thread used, while idle release is off: a copy on it
 * then only moves its use sequence, with no lock (every upgraded copy
 * passes here; the lock cost the cross-device call ~60 ns on the H200
 * host's hookbench, and threads copying at once would contend on it). */
static _Thread_local struct {
    CUcontext a, b;
    struct link_entry *e;
    uint64_t gen;
} memo __attribute__((tls_model("initial-exec")));

static struct link_entry *find_entry(CUcontext a, CUcontext b)
{
    for (int i = 0; i < links_used; i++)
        if ((links[i].a == a && links[i].b == b) || (links[i].a == b && links[i].b == a))
            return &links[i];
    return NULL;
}

static struct link_entry *get_entry(CUcontext a, int dev_a, CUcontext b, int dev_b)
{
    struct link_entry *e = find_entry(a, b);
    for (int i = 0; e == NULL && i < LINKS_MAX; i++) {
        if (links[i].a == NULL) {
            e = &links[i];
            e->a = a;
            e->b = b;
            e->dev_a = dev_a;
            e->dev_b = dev_b;
            e->last_use_ns = 0;
            atomic_store(&e->last_use_seq, 0);
            e->untracked = false;
            e->issuing = 0;
            memset(e->slot, 0, sizeof e->slot);
            atomic_fetch_add(&links_gen, 1);
            if (i >= links_used)
                links_used = i + 1;
        }
    }
    return e;
}

static void drop_events(struct link_entry *e)
{
    const struct driver_api *d = driver_api();
    for (int i = 0; i < LINK_SLOTS; i++) {
        if (e->slot[i].event != NULL && d->event_destroy != NULL)
            d->event_destroy(e->slot[i].event);
        e->slot[i].event = NULL;
    }
}

/* Complete: every event recorded on the link has completed (an event the
 * driver no longer knows belongs to a context gone with its work). */
static bool events_complete(const struct link_entry *e)
{
    const struct driver_api *d = driver_api();
    for (int i = 0; i < LINK_SLOTS; i++)
        if (e->slot[i].event != NULL &&
            (d->event_query == NULL || d->event_query(e->slot[i].event) == CUDA_ERROR_NOT_READY))
            return false;
    return true;
}

void link_life_note_use(struct copy_call *call, CUcontext a, int dev_a, CUcontext b, int dev_b)
{
    if (a == NULL || b == NULL || a == b)
        return;
    bool track = call != NULL && config_get()->link_idle_ms > 0;
    if (!track && memo.e != NULL && memo.a == a && memo.b == b &&
        memo.gen == atomic_load_explicit(&links_gen, memory_order_acquire)) {
        atomic_store_explicit(&memo.e->last_use_seq,
                              atomic_fetch_add_explicit(&use_seq, 1, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        return;
    }
    pthread_mutex_lock(&links_lock);
    struct link_entry *e = get_entry(a, dev_a, b, dev_b);
    if (e != NULL) {
        /* The clock only when idle release needs it. */
        if (track)
            e->last_use_ns = record_now_ns();
        atomic_store(&e->last_use_seq, atomic_fetch_add(&use_seq, 1) + 1);
        if (!track) {
            e->untracked = true;
            memo.a = a;
            memo.b = b;
            memo.e = e;
            memo.gen = atomic_load(&links_gen);
        } else if (call->link.a == NULL) {
            call->link.a = a;
            call->link.b = b;
            e->issuing++;
        } else if (find_entry(call->link.a, call->link.b) != e) {
            /* One event per call: a second link of the same call (a batch
             * across pairs) has nothing to cover it. */
            e->untracked = true;
        }
    }
    pthread_mutex_unlock(&links_lock);
}

void link_life_note_idle(CUcontext a, int dev_a, CUcontext b, int dev_b)
{
    if (a == NULL || b == NULL || a == b)
        return;
    pthread_mutex_lock(&links_lock);
    struct link_entry *e = get_entry(a, dev_a, b, dev_b);
    if (e != NULL) {
        e->last_use_ns = record_now_ns();
        atomic_store(&e->last_use_seq, atomic_fetch_add(&use_seq, 1) + 1);
    }
    pthread_mutex_unlock(&links_lock);
}

bool link_life_pending(const struct copy_call *call)
{
    return call->link.a != NULL;
}

/* The slot for a copy on stream in ctx: the stream's own, a free one, or
 * one whose event has completed. NULL when every slot is busy. */
static struct link_slot *slot_for(struct link_entry *e, CUcontext ctx, CUstream stream,
                                  bool per_thread)
{
    const struct driver_api *d = driver_api();
    struct link_slot *free_slot = NULL, *done = NULL;
    for (int i = 0; i < LINK_SLOTS; i++) {
        struct link_slot *s = &e->slot[i];
        if (s->event != NULL && s->ctx == ctx && s->stream == stream &&
            s->per_thread == per_thread)
            return s;
        if (s->event == NULL && free_slot == NULL)
            free_slot = s;
        else if (s->event != NULL && done == NULL && d->event_query != NULL &&
                 d->event_query(s->event) != CUDA_ERROR_NOT_READY)
            done = s;
    }
    if (free_slot != NULL)
        return free_slot;
    if (done != NULL && done->ctx != ctx && d->event_destroy != NULL) {
        d->event_destroy(done->event);
        done->event = NULL;
    }
    return done;
}

/* An event in ctx, made with ctx pushed (the current context restored). */
static CUevent new_event(CUcontext ctx)
{
    const struct driver_api *d = driver_api();
    CUevent ev = NULL;
    CUcontext popped = NULL;
    if (d->event_create == NULL || d->ctx_push == NULL || d->ctx_pop == NULL ||
        d->ctx_push(ctx) != CUDA_SUCCESS)
        return NULL;
    if (d->event_create(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        ev = NULL;
    d->ctx_pop(&popped);
    return ev;
}

void link_life_after_issue(const struct copy_call *call)
{
    const struct driver_api *d = driver_api();
    CUcontext ctx = driver_stream_ctx(call->issue.stream, call->issue.per_thread);
    pthread_mutex_lock(&links_lock);
    struct link_entry *e = find_entry(call->link.a, call->link.b);
    if (e != NULL && e->issuing > 0)
        e->issuing--;
    struct link_slot *s = e != NULL && ctx != NULL
                              ? slot_for(e, ctx, call->issue.stream, call->issue.per_thread)
                              : NULL;
    if (s != NULL && s->event == NULL)
        s->event = new_event(ctx);
    CUresult r = CUDA_ERROR_NOT_INITIALIZED;
    if (s != NULL && s->event != NULL && DRIVER_FLAVOUR(d, event_record, call->issue.per_thread))
        r = DRIVER_FLAVOUR(d, event_record, call->issue.per_thread)(s->event, call->issue.stream);
    if (s != NULL && r == CUDA_SUCCESS) {
        s->ctx = ctx;
        s->stream = call->issue.stream;
        s->per_thread = call->issue.per_thread;
    } else if (e != NULL) {
        e->untracked = true; /* a copy nothing covers: kept */
    }
    pthread_mutex_unlock(&links_lock);
}

/* Both directions of e, the shim's alone, disabled; e dropped. links_lock
 * held; the caller checked that nothing is in flight. why: the run log's
 * detail word. */
static bool give_back(struct link_entry *e, const char *why)
{
    uint64_t t0 = record_now_ns();
    bool ab = peer_shim_release(e->a, e->b);
    uint64_t t1 = record_now_ns();
    bool ba = peer_shim_release(e->b, e->a);
    uint64_t t2 = record_now_ns();
    if (ab || ba)
        LOG_INFO("gave back peer access between devices %d and %d (%s)", e->dev_a, e->dev_b,
                 why);
    if (ab && record_enabled())
        record_event(LOG_EVENT_PEER_RELEASE, e->dev_a, e->dev_b, t1 - t0, why);
    if (ba && record_enabled())
        record_event(LOG_EVENT_PEER_RELEASE, e->dev_b, e->dev_a, t2 - t1, why);
    drop_events(e);
    e->a = e->b = NULL;
    atomic_fetch_add(&links_gen, 1);
    return ab || ba;
}

void link_life_tick(void)
{
    size_t idle_ms = config_get()->link_idle_ms;
    if (idle_ms == 0)
        return;
    uint64_t now = record_now_ns(), due = atomic_load_explicit(&next_check_ns, memory_order_relaxed);
    uint64_t idle_ns = (uint64_t)idle_ms * 1000000u;
    if (now < due || !atomic_compare_exchange_strong(&next_check_ns, &due, now + idle_ns / 4))
        return;
    pthread_mutex_lock(&links_lock);
    for (int i = 0; i < links_used; i++) {
        struct link_entry *e = &links[i];
        if (e->a != NULL && !e->untracked && e->issuing == 0 &&
            now - e->last_use_ns >= idle_ns && events_complete(e))
            give_back(e, "idle");
    }
    pthread_mutex_unlock(&links_lock);
}

static void wait_events(const struct link_entry *e)
{
    const struct driver_api *d = driver_api();
    for (int i = 0; i < LINK_SLOTS; i++)
        if (e->slot[i].event != NULL && d->event_synchronize != NULL)
            d->event_synchronize(e->slot[i].event);
}

/* Waits for everything in ctx (pushed, the current context restored). */
static void synchronize_ctx(CUcontext ctx)
{
    const struct driver_api *d = driver_api();
    CUcontext popped = NULL;
    if (d->ctx_synchronize == NULL || d->ctx_push == NULL || d->ctx_pop == NULL ||
        d->ctx_push(ctx) != CUDA_SUCCESS)
        return;
    d->ctx_synchronize();
    d->ctx_pop(&popped);
}

bool link_life_make_room(CUcontext cur, CUcontext peer)
{
    bool done = false;
    pthread_mutex_lock(&links_lock);
    bool tried[LINKS_MAX] = {false};
    while (!done) {
        struct link_entry *lru = NULL;
        for (int i = 0; i < links_used; i++) {
            struct link_entry *e = &links[i];
            bool touches = e->a != NULL && (e->a == cur || e->b == cur || e->a == peer ||
                                            e->b == peer);
            if (touches && !tried[i] && (lru == NULL || atomic_load(&e->last_use_seq) < atomic_load(&lru->last_use_seq)))
                lru = e;
        }
        if (lru == NULL)
            break;
        tried[lru - links] = true;
        /* Never disabled under a copy of the shim's: wait for them (the
         * program's enable takes longer, and succeeds). */
        if (lru->untracked) {
            synchronize_ctx(lru->a);
            synchronize_ctx(lru->b);
        } else {
            wait_events(lru);
        }
        done = give_back(lru, "peer-limit");
    }
    pthread_mutex_unlock(&links_lock);
    return done;
}

static void forget_if(CUcontext ctx, int dev)
{
    pthread_mutex_lock(&links_lock);
    for (int i = 0; i < links_used; i++) {
        struct link_entry *e = &links[i];
        if (e->a != NULL && (e->a == ctx || e->b == ctx ||
                             (dev >= 0 && (e->dev_a == dev || e->dev_b == dev)))) {
            /* Events of a context gone are gone with it: not destroyed. */
            memset(e->slot, 0, sizeof e->slot);
            e->a = e->b = NULL;
            atomic_fetch_add(&links_gen, 1);
        }
    }
    pthread_mutex_unlock(&links_lock);
}

void link_life_forget_device(int dev)
{
    if (dev >= 0)
        forget_if(NULL, dev);
}

void link_life_forget_ctx(CUcontext ctx)
{
    if (ctx != NULL)
        forget_if(ctx, -1);
}

void link_life_fork_prepare(void)
{
    pthread_mutex_lock(&links_lock);
}

void link_life_fork_parent(void)
{
    pthread_mutex_unlock(&links_lock);
}

void link_life_fork_child(void)
{
    memset(links, 0, sizeof links);
    links_used = 0;
    atomic_fetch_add(&links_gen, 1);
    pthread_mutex_unlock(&links_lock);
}

/* Its lock before peer.c's; its links forgotten before peer.c forgets the
 * pairs (shim.h). */
SHIM_LIFE_ROW(links_row) = {
    .order = SHIM_ROW_LINKS,
    .name = "links",
    .fork_prepare = link_life_fork_prepare,
    .fork_parent = link_life_fork_parent,
    .fork_child = link_life_fork_child,
    .ctx_gone = link_life_forget_ctx,
    .device_gone = link_life_forget_device,
};
