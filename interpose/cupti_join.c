#define _GNU_SOURCE
/* cupti.h first: it declares old driver types itself, which cuda.h under
 * __CUDA_API_VERSION_INTERNAL (shim_cuda.h) would declare again. */
#include <cupti.h>

#include "cupti_join.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

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
/* The decision whose driver call this thread is making (cupti_push). */
static _Thread_local uint64_t current_decision;
static _Atomic uint64_t mapped, joined, unjoined;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t join_lock = PTHREAD_MUTEX_INITIALIZER;

/* correlation id -> decision id, from the driver API callback. */
struct corr_entry {
    uint32_t correlation;
    uint64_t decision;
    UT_hash_handle hh;
};

/* A copy record that arrived before its correlation record. */
struct pending {
    uint32_t correlation;
    const char *kind;
    uint64_t bytes, start, end;
    int src, dst;
    uint32_t stream;
    struct pending *next;
};

static struct corr_entry *corr_map;
static struct pending *pending_list;

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

/* Lookups and the pending list are only touched under join_lock. */
static void emit_or_hold(uint32_t correlation, const char *kind, uint64_t bytes,
                         uint64_t start, uint64_t end, int src, int dst, uint32_t stream)
{
    struct corr_entry *c = NULL;
    HASH_FIND(hh, corr_map, &correlation, sizeof correlation, c);
    if (c != NULL) {
        record_activity(c->decision, kind, bytes, start, end, src, dst, stream);
        atomic_fetch_add(&joined, 1);
        return;
    }
    struct pending *p = shim_alloc(sizeof *p);
    if (p == NULL)
        return;
    *p = (struct pending){correlation, kind, bytes, start, end, src, dst, stream, pending_list};
    pending_list = p;
}

static void add_correlation(uint32_t correlation, uint64_t decision)
{
    struct corr_entry *c = NULL;
    HASH_FIND(hh, corr_map, &correlation, sizeof correlation, c);
    if (c == NULL) {
        c = shim_alloc(sizeof *c);
        if (c == NULL)
            return;
        c->correlation = correlation;
        HASH_ADD(hh, corr_map, correlation, sizeof c->correlation, c);
    }
    c->decision = decision;
}

/* Pending copies whose correlation has arrived since. With final set, the
 * rest go out unjoined (decision 0). */
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
        record_activity(c ? c->decision : 0, p->kind, p->bytes, p->start, p->end, p->src,
                        p->dst, p->stream);
        atomic_fetch_add(c ? &joined : &unjoined, 1);
        *pp = p->next;
        shim_free(p, sizeof *p);
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
        emit_or_hold(m->correlationId, copy_kind_name(m->copyKind), m->bytes, m->start,
                     m->end, (int)m->deviceId, (int)m->deviceId, m->streamId);
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY2) {
        const CUpti_ActivityMemcpyPtoP4 *m = (const void *)rec;
        emit_or_hold(m->correlationId, copy_kind_name(m->copyKind), m->bytes, m->start,
                     m->end, (int)m->srcDeviceId, (int)m->dstDeviceId, m->streamId);
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
 * decision this thread pushed. Nothing else happens here. */
static void CUPTIAPI api_callback(void *userdata, CUpti_CallbackDomain domain,
                                  CUpti_CallbackId cbid, const void *data)
{
    (void)userdata;
    (void)cbid;
    const CUpti_CallbackData *cb = data;
    uint64_t decision = current_decision;
    if (decision == 0 || domain != CUPTI_CB_DOMAIN_DRIVER_API ||
        cb->callbackSite != CUPTI_API_ENTER)
        return;
    pthread_mutex_lock(&join_lock);
    add_correlation(cb->correlationId, decision);
    pthread_mutex_unlock(&join_lock);
    atomic_fetch_add_explicit(&mapped, 1, memory_order_relaxed);
}

static void unavailable(const char *why)
{
    char text[96];
    snprintf(text, sizeof text, "unavailable: %s", why);
    record_set_cupti_state(text);
    LOG_WARN("CUPTI %s; going on with NVTX only", why);
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
        char why[48];
        snprintf(why, sizeof why, "cuptiSubscribe error %d", (int)r);
        unavailable(why);
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
    LOG_DEBUG("CUPTI: %llu driver calls mapped to decisions, %llu copy records joined, "
              "%llu not", (unsigned long long)atomic_load(&mapped),
              (unsigned long long)atomic_load(&joined), (unsigned long long)atomic_load(&unjoined));
}
