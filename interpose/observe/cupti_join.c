#define _GNU_SOURCE
/* cupti.h first: it declares old driver types itself, which cuda.h under
 * __CUDA_API_VERSION_INTERNAL (shim_cuda.h) would declare again. */
#include <cupti.h>

#include "cupti_join.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"
#include "log.h"
#include "record.h"
#include "shim_hash.h"

/* CUPTI's entry points, found with dlsym: the shim links no CUDA library. */
static struct {
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*enable_domain)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                      CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*timestamp)(uint64_t *);
} api;

static atomic_bool active;
static CUpti_SubscriberHandle subscriber;
/* The decision whose driver call this thread is making (cupti_push); the
 * relayed decision whose copies it is issuing, and which part of it the
 * next driver call is (cupti_relay_*). */
static _Thread_local uint64_t current_decision, current_relay;
static _Thread_local enum cupti_relay_part current_part;
static _Atomic uint64_t mapped, joined, unjoined, merged, relay_dropped;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t join_lock = PTHREAD_MUTEX_INITIALIZER;

/* correlation id -> decision id, from the driver API callback. A relay's
 * part (a driver copy of the shim's, one record) is dropped once joined. */
struct corr_entry {
    uint32_t correlation;
    uint64_t decision;
    enum cupti_relay_part part;
    bool seen; /* a record joined it: on the seen ring */
    UT_hash_handle hh;
};

/* What the map may hold (a long profiled run must not grow by an entry
 * per copy for ever). A call's records come together, so an entry is kept
 * after its first record until CORR_SEEN_KEEP later entries had theirs (a
 * ring of their ids); one no record comes for (a failed call) goes once
 * the map holds CORR_HELD_MAX, oldest first. A later record is unjoined. */
#define CORR_SEEN_KEEP 65536u
#define CORR_HELD_MAX (4u * CORR_SEEN_KEEP)
static uint32_t *seen_ring; /* CORR_SEEN_KEEP ids, from the first join */
static size_t seen_next, seen_count;
static _Atomic uint64_t corr_evicted;

/* One copy record as the activity line wants it. */
struct copy_rec {
    const char *kind;
    uint64_t bytes, start, end;
    int src, dst;
    uint32_t stream;
};

/* A copy record that arrived before its correlation record. */
struct pending {
    uint32_t correlation;
    struct copy_rec rec;
    struct pending *next;
};

/* A relayed program copy: its parts' records merged into one activity
 * line, written once the decision is (closed) and every part's record has
 * been read. */
struct relay_merge {
    uint64_t decision;
    bool closed;
    uint32_t issued, seen; /* parts mapped, their records read */
    bool any_link;
    struct copy_rec rec;   /* kind, src, dst, stream: the link copies';
                            * bytes: theirs summed; start/end: all parts' */
    UT_hash_handle hh;
};

static struct corr_entry *corr_map;
static struct pending *pending_list;
static struct relay_merge *relays;

bool cupti_active(void)
{
    return atomic_load_explicit(&active, memory_order_relaxed);
}

static const char *copy_kind_name(unsigned kind)
{
    static const char *const names[] = {"UNKNOWN", "HTOD", "DTOH", "HTOA", "ATOH", "ATOA",
                                        "ATOD",    "DTOA", "DTOD", "HTOH", "PTOP"};
    return kind < sizeof names / sizeof names[0] ? names[kind] : "OTHER";
}

/* Everything below until the CUPTI callbacks runs under join_lock. */

static void emit(uint64_t decision, const struct copy_rec *r)
{
    record_activity(decision, r->kind, r->bytes, r->start, r->end, r->src, r->dst, r->stream);
}

/* The relay's line once its decision is written and its parts are in
 * (final: whatever came). A relay without a link record has no line. */
static void relay_try_emit(struct relay_merge *m, bool final)
{
    if (!m->closed || (m->seen < m->issued && !final))
        return;
    if (m->any_link) {
        emit(m->decision, &m->rec);
        atomic_fetch_add(&joined, 1);
    }
    HASH_DEL(relays, m);
    shim_free(m, sizeof *m);
}

/* One part's record into its relay: the link copies give the kind, the
 * devices and the bytes; every part widens the span (first start, last
 * end). A relay given up (no merge left) drops its parts: the shim's own
 * traffic, not the program's. */
static void relay_add(const struct corr_entry *c, const struct copy_rec *r)
{
    struct relay_merge *m = NULL;
    HASH_FIND(hh, relays, &c->decision, sizeof c->decision, m);
    if (m == NULL) {
        atomic_fetch_add(&relay_dropped, 1);
        return;
    }
    atomic_fetch_add(&merged, 1);
    m->seen++;
    struct copy_rec *t = &m->rec;
    if (m->seen == 1 || r->start < t->start)
        t->start = r->start;
    if (m->seen == 1 || r->end > t->end)
        t->end = r->end;
    if (c->part == CUPTI_RELAY_LINK) {
        if (!m->any_link) {
            t->kind = r->kind;
            t->src = r->src;
            t->dst = r->dst;
            t->stream = r->stream;
        } else if (strcmp(t->kind, r->kind) != 0) {
            t->kind = "OTHER";
        }
        m->any_link = true;
        t->bytes += r->bytes;
    }
    relay_try_emit(m, false);
}

static void corr_drop(struct corr_entry *c)
{
    HASH_DEL(corr_map, c);
    shim_free(c, sizeof *c);
    atomic_fetch_add_explicit(&corr_evicted, 1, memory_order_relaxed);
}

/* c had its first record: on the ring, the oldest seen entry given back
 * when the ring is full. */
static void corr_seen(struct corr_entry *c)
{
    c->seen = true;
    if (seen_ring == NULL && (seen_ring = shim_alloc(CORR_SEEN_KEEP * sizeof *seen_ring)) == NULL)
        return; /* kept until the map's own cap */
    if (seen_count == CORR_SEEN_KEEP) {
        struct corr_entry *old = NULL;
        uint32_t id = seen_ring[seen_next];
        HASH_FIND(hh, corr_map, &id, sizeof id, old);
        if (old != NULL && old->seen && old != c)
            corr_drop(old);
        seen_count--;
    }
    seen_ring[seen_next] = c->correlation;
    seen_next = (seen_next + 1) % CORR_SEEN_KEEP;
    seen_count++;
}

/* A record whose correlation is mapped (c): its decision's line, or its
 * relay's part. */
static void join(struct corr_entry *c, const struct copy_rec *r)
{
    if (c->part == CUPTI_RELAY_NONE) {
        emit(c->decision, r);
        atomic_fetch_add(&joined, 1);
        if (!c->seen)
            corr_seen(c);
        return;
    }
    relay_add(c, r);
    HASH_DEL(corr_map, c); /* a part's driver copy makes one record */
    shim_free(c, sizeof *c);
}

static void emit_or_hold(uint32_t correlation, const struct copy_rec *r)
{
    struct corr_entry *c = NULL;
    HASH_FIND(hh, corr_map, &correlation, sizeof correlation, c);
    if (c != NULL) {
        join(c, r);
        return;
    }
    struct pending *p = shim_alloc(sizeof *p);
    if (p == NULL)
        return;
    *p = (struct pending){correlation, *r, pending_list};
    pending_list = p;
}

static void add_correlation(uint32_t correlation, uint64_t decision,
                            enum cupti_relay_part part)
{
    struct corr_entry *c = NULL;
    HASH_FIND(hh, corr_map, &correlation, sizeof correlation, c);
    if (c == NULL) {
        c = shim_alloc(sizeof *c);
        if (c == NULL)
            return;
        c->correlation = correlation;
        HASH_ADD(hh, corr_map, correlation, sizeof c->correlation, c);
        while (HASH_COUNT(corr_map) > CORR_HELD_MAX && corr_map != c)
            corr_drop(corr_map); /* the oldest: uthash keeps insertion order */
    }
    c->decision = decision;
    c->part = part;
}

/* Pending copies whose correlation has arrived since. With final set, the
 * rest go out unjoined (decision 0), and relays whose parts never all
 * came go out with what did. */
static void resolve_pending(bool final)
{
    struct pending **pp = &pending_list;
    while (*pp != NULL) {
        struct pending *p = *pp;
        struct corr_entry *c = NULL;
        HASH_FIND(hh, corr_map, &p->correlation, sizeof p->correlation, c);
        if (c == NULL && !final) {
            pp = &p->next;
            continue;
        }
        if (c != NULL) {
            join(c, &p->rec);
        } else {
            emit(0, &p->rec);
            atomic_fetch_add(&unjoined, 1);
        }
        *pp = p->next;
        shim_free(p, sizeof *p);
    }
    struct relay_merge *m, *tmp;
    if (final) {
        HASH_ITER(hh, relays, m, tmp)
            relay_try_emit(m, true);
    }
}

/* Only the leading members of the copy records are read: they are the same
 * in CUDA 12's CUpti_ActivityMemcpy5 / MemcpyPtoP3 and CUDA 13's
 * CUpti_ActivityMemcpy6 / MemcpyPtoP4, so one build reads both. Their
 * correlationId is the driver call's, which the API callback mapped to a
 * decision. */
static void handle(const CUpti_Activity *rec)
{
    if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        const CUpti_ActivityMemcpy6 *m = (const void *)rec;
        struct copy_rec r = {copy_kind_name(m->copyKind), m->bytes, m->start, m->end,
                             (int)m->deviceId, (int)m->deviceId, m->streamId};
        emit_or_hold(m->correlationId, &r);
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY2) {
        const CUpti_ActivityMemcpyPtoP4 *m = (const void *)rec;
        struct copy_rec r = {copy_kind_name(m->copyKind), m->bytes, m->start, m->end,
                             (int)m->srcDeviceId, (int)m->dstDeviceId, m->streamId};
        emit_or_hold(m->correlationId, &r);
    }
}

#define BUFFER_BYTES (8u << 20)

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = shim_alloc(BUFFER_BYTES); /* its own mapping: page-aligned */
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    CUpti_Activity *rec = NULL;
    pthread_mutex_lock(&join_lock);
    while (api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS)
        handle(rec);
    resolve_pending(false);
    pthread_mutex_unlock(&join_lock);
    shim_free(buffer, BUFFER_BYTES); /* every buffer is buffer_requested's */
}

static void *open_cupti(void)
{
    static const char *const names[] = {
        "libcupti.so", "libcupti.so.13", "libcupti.so.12",
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", "/usr/local/cuda/lib64/libcupti.so",
        "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h != NULL)
            return h;
    }
    return NULL;
}

/* Inside each driver call (CUPTI calls back on the calling thread): the
 * call's correlation id, which its copy records will carry, belongs to the
 * decision this thread pushed, or is a part of the relay it is issuing.
 * Nothing else happens here. */
static void CUPTIAPI api_callback(void *userdata, CUpti_CallbackDomain domain,
                                  CUpti_CallbackId cbid, const void *data)
{
    (void)userdata;
    (void)cbid;
    const CUpti_CallbackData *cb = data;
    enum cupti_relay_part part = current_relay != 0 ? current_part : CUPTI_RELAY_NONE;
    uint64_t decision = part != CUPTI_RELAY_NONE ? current_relay : current_decision;
    if (decision == 0 || domain != CUPTI_CB_DOMAIN_DRIVER_API ||
        cb->callbackSite != CUPTI_API_ENTER)
        return;
    pthread_mutex_lock(&join_lock);
    add_correlation(cb->correlationId, decision, part);
    if (part != CUPTI_RELAY_NONE) {
        struct relay_merge *m = NULL;
        HASH_FIND(hh, relays, &decision, sizeof decision, m);
        if (m != NULL)
            m->issued++;
    }
    pthread_mutex_unlock(&join_lock);
    atomic_fetch_add_explicit(&mapped, 1, memory_order_relaxed);
}

/* Said once per process (start_body runs once): what the run log loses
 * without CUPTI, and why, in words rather than CUPTI's code alone. */
static void unavailable(const char *why)
{
    char text[96];
    snprintf(text, sizeof text, "unavailable: %s", why);
    record_set_cupti_state(text);
    LOG_WARN("CUPTI unavailable (%s): the run log has no timings of copies and no "
             "record of the path each took (the copies themselves are still logged)",
             why);
}

/* cuptiSubscribe's refusal in words; the code stays in them. */
static void subscribe_failed(CUptiResult r)
{
    char why[80];
    if (r == CUPTI_ERROR_UNKNOWN)
        snprintf(why, sizeof why, "another profiler may hold it, cuptiSubscribe error %d",
                 (int)r);
    else if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
        snprintf(why, sizeof why, "profiling not permitted to this user, cuptiSubscribe "
                 "error %d", (int)r);
    else
        snprintf(why, sizeof why, "cuptiSubscribe error %d", (int)r);
    unavailable(why);
}

static void start_body(void)
{
    void *h = open_cupti();
    if (h == NULL) {
        unavailable("libcupti not found");
        return;
    }
    dlsym_fn sym = driver_real_dlsym();
#define GET(field, name) *(void **)&api.field = sym(h, name)
    GET(subscribe, "cuptiSubscribe");
    GET(unsubscribe, "cuptiUnsubscribe");
    GET(enable_domain, "cuptiEnableDomain");
    GET(register_callbacks, "cuptiActivityRegisterCallbacks");
    GET(enable, "cuptiActivityEnable");
    GET(flush_all, "cuptiActivityFlushAll");
    GET(next_record, "cuptiActivityGetNextRecord");
    GET(timestamp, "cuptiGetTimestamp");
#undef GET
    if (!api.subscribe || !api.unsubscribe || !api.enable_domain || !api.register_callbacks ||
        !api.enable || !api.flush_all || !api.next_record || !api.timestamp) {
        unavailable("libcupti lacks an entry point");
        return;
    }
    /* Only one subscriber per process before CUDA 13.3: if a tool holds
     * CUPTI (Nsight Systems, compute-sanitizer), leave it alone. The shim's
     * subscription maps each driver call to its decision (api_callback). */
    CUptiResult r = api.subscribe(&subscriber, api_callback, NULL);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        unavailable("held by another tool (Nsight Systems or compute-sanitizer?)");
        return;
    }
    if (r != CUPTI_SUCCESS) {
        subscribe_failed(r);
        return;
    }
    if (api.enable_domain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS ||
        api.register_callbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
        api.enable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS ||
        api.enable(CUPTI_ACTIVITY_KIND_MEMCPY2) != CUPTI_SUCCESS) {
        api.unsubscribe(subscriber);
        unavailable("activity collection could not be enabled");
        return;
    }
    record_set_cupti_state("on");
    atomic_store(&active, true);
    static const struct record_source source = {cupti_timestamp, cupti_flush};
    record_set_source(&source);
    LOG_DEBUG("CUPTI activity collection on");
}

bool cupti_start(void)
{
    pthread_once(&start_once, start_body);
    return cupti_active();
}

void cupti_push(uint64_t id)
{
    current_decision = id;
}

void cupti_pop(void)
{
    current_decision = 0;
}

void cupti_relay_open(uint64_t id)
{
    if (id == 0 || !cupti_active())
        return;
    struct relay_merge *m = shim_alloc(sizeof *m);
    if (m == NULL)
        return; /* its parts are dropped: the decision stays without activity */
    memset(m, 0, sizeof *m);
    m->decision = id;
    pthread_mutex_lock(&join_lock);
    HASH_ADD(hh, relays, decision, sizeof m->decision, m);
    pthread_mutex_unlock(&join_lock);
    current_relay = id;
}

void cupti_relay_part(enum cupti_relay_part part)
{
    current_part = part;
}

void cupti_relay_close(uint64_t id, bool carried)
{
    current_relay = 0;
    current_part = CUPTI_RELAY_NONE;
    if (id == 0 || !cupti_active())
        return;
    pthread_mutex_lock(&join_lock);
    struct relay_merge *m = NULL;
    HASH_FIND(hh, relays, &id, sizeof id, m);
    if (m != NULL) {
        m->closed = true;
        if (!carried) { /* given up: its parts' records are dropped */
            HASH_DEL(relays, m);
            shim_free(m, sizeof *m);
        } else {
            relay_try_emit(m, false);
        }
    }
    pthread_mutex_unlock(&join_lock);
}

uint64_t cupti_timestamp(void)
{
    uint64_t t = 0;
    if (cupti_active())
        api.timestamp(&t);
    return t;
}

void cupti_flush(void)
{
    if (!cupti_active())
        return;
    api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&join_lock);
    resolve_pending(true);
    pthread_mutex_unlock(&join_lock);
    pthread_mutex_lock(&join_lock);
    unsigned held = HASH_COUNT(corr_map);
    pthread_mutex_unlock(&join_lock);
    LOG_DEBUG("CUPTI: %llu driver calls mapped to decisions, %llu activity lines joined, "
              "%llu not; %llu relay records merged into their copies' lines, %llu of "
              "relays given up dropped; %u calls held, %llu given back",
              (unsigned long long)atomic_load(&mapped), (unsigned long long)atomic_load(&joined),
              (unsigned long long)atomic_load(&unjoined), (unsigned long long)atomic_load(&merged),
              (unsigned long long)atomic_load(&relay_dropped), held,
              (unsigned long long)atomic_load(&corr_evicted));
}
