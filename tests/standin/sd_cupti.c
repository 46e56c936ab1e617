/* The stand-in CUPTI (libcupti.so, in its own folder: only the tests that
 * put it on LD_LIBRARY_PATH find it), for the CPU-tier tests of the
 * shim's CUPTI join. It serves the entry points the shim uses
 * (cupti_join.c) from the stand-in driver's observer (standin.h):
 *   - with the driver API domain enabled, every driver call gets a fresh
 *     correlation id and an API_ENTER callback on the calling thread;
 *   - with MEMCPY / MEMCPY2 enabled, every copy the driver issues within a
 *     call becomes activity records carrying that call's correlation id,
 *     as CUPTI writes them: a peer copy one MemcpyPtoP record (PTOP,
 *     source and destination devices), a staged one two Memcpy records
 *     (DTOH, HTOD), the others one Memcpy record (DTOD, HTOD, DTOH, HTOH).
 *     start is the clock at issue, end start plus the time model's
 *     duration;
 *   - records collect in buffers the tool hands over (its request
 *     callback) and go back to it (its completion callback) when one is
 *     full and at cuptiActivityFlushAll.
 * One subscriber at a time, as CUPTI before 13.3.
 * STANDIN_CUPTI_SUBSCRIBE_ERROR=N: cuptiSubscribe returns N (a CUptiResult;
 * 999 is CUPTI_ERROR_UNKNOWN, what CUPTI answers while another profiler
 * holds it), for the tests of CUPTI being unavailable. */
#define _GNU_SOURCE
#include <cupti.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "standin.h"

#define API __attribute__((visibility("default")))

/* Records are laid out at a fixed stride (the buffer's layout is CUPTI's
 * own business: the tool reads it through cuptiActivityGetNextRecord). */
union any_record {
    CUpti_Activity head;
    CUpti_ActivityMemcpy6 memcpy;
    CUpti_ActivityMemcpyPtoP4 peer;
};
#define STRIDE ((sizeof(union any_record) + 7) & ~(size_t)7)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static CUpti_CallbackFunc _Atomic subscriber;
static void *subscriber_data;
static atomic_bool driver_domain, memcpy_on, peer_on;
static CUpti_BuffersCallbackRequestFunc request;
static CUpti_BuffersCallbackCompleteFunc complete;
static uint8_t *buffer;
static size_t buffer_size, buffer_used;
static _Atomic uint32_t next_correlation;
static _Thread_local uint32_t current_correlation;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_api_enter(const char *name)
{
    uint32_t id = atomic_fetch_add(&next_correlation, 1) + 1;
    current_correlation = id;
    CUpti_CallbackFunc f = subscriber;
    if (f == NULL || !atomic_load(&driver_domain))
        return;
    CUpti_CallbackData data;
    memset(&data, 0, sizeof data);
    data.callbackSite = CUPTI_API_ENTER;
    data.functionName = name;
    data.correlationId = id;
    f(subscriber_data, CUPTI_CB_DOMAIN_DRIVER_API, 0, &data);
}

/* Under mu. Hands a full buffer back, and gets a fresh one. */
static uint8_t *slot(void)
{
    if (buffer != NULL && buffer_used + STRIDE > buffer_size) {
        complete(NULL, 0, buffer, buffer_size, buffer_used);
        buffer = NULL;
    }
    if (buffer == NULL) {
        size_t max_records = 0;
        request(&buffer, &buffer_size, &max_records);
        buffer_used = 0;
        if (buffer == NULL || buffer_size < STRIDE) {
            buffer = NULL;
            return NULL; /* dropped, as CUPTI drops without a buffer */
        }
    }
    uint8_t *p = buffer + buffer_used;
    buffer_used += STRIDE;
    memset(p, 0, STRIDE);
    return p;
}

static void add_memcpy(CUpti_ActivityMemcpyKind kind, uint64_t bytes, int dev, uint64_t start,
                       uint64_t end)
{
    CUpti_ActivityMemcpy6 *m = (void *)slot();
    if (m == NULL)
        return;
    m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m->copyKind = (uint8_t)kind;
    m->bytes = bytes;
    m->start = start;
    m->end = end;
    m->deviceId = (uint32_t)(dev < 0 ? 0 : dev);
    m->streamId = 1;
    m->correlationId = current_correlation;
}

static void on_copy(enum standin_path path, uint64_t bytes, int src_dev, int dst_dev,
                    uint64_t ns)
{
    if (complete == NULL || request == NULL)
        return;
    uint64_t start = now_ns(), end = start + ns;
    pthread_mutex_lock(&mu);
    if (path == STANDIN_PATH_PEER && atomic_load(&peer_on)) {
        CUpti_ActivityMemcpyPtoP4 *m = (void *)slot();
        if (m != NULL) {
            m->kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
            m->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
            m->bytes = bytes;
            m->start = start;
            m->end = end;
            m->deviceId = (uint32_t)src_dev;
            m->srcDeviceId = (uint32_t)src_dev;
            m->dstDeviceId = (uint32_t)dst_dev;
            m->streamId = 1;
            m->correlationId = current_correlation;
        }
    } else if (path != STANDIN_PATH_PEER && atomic_load(&memcpy_on)) {
        if (path == STANDIN_PATH_STAGED) {
            add_memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, bytes, src_dev, start, end);
            add_memcpy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, bytes, dst_dev, start, end);
        } else {
            CUpti_ActivityMemcpyKind k = path == STANDIN_PATH_SAME_DEVICE ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOD
                                         : path == STANDIN_PATH_H2D      ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
                                         : path == STANDIN_PATH_D2H      ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOH
                                                                         : CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
            add_memcpy(k, bytes, dst_dev >= 0 ? dst_dev : src_dev, start, end);
        }
    }
    pthread_mutex_unlock(&mu);
}

static const struct standin_observer observer = {on_api_enter, on_copy};

API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *handle, CUpti_CallbackFunc f,
                               void *userdata)
{
    if (handle == NULL || f == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    const char *forced = getenv("STANDIN_CUPTI_SUBSCRIBE_ERROR");
    if (forced != NULL && forced[0] != '\0')
        return (CUptiResult)strtol(forced, NULL, 10);
    if (subscriber != NULL)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    void (*set)(const struct standin_observer *) =
        (void (*)(const struct standin_observer *))dlsym(RTLD_DEFAULT, "standin_set_observer");
    if (set == NULL)
        return CUPTI_ERROR_NOT_INITIALIZED; /* not the stand-in driver */
    subscriber_data = userdata;
    subscriber = f;
    *handle = (CUpti_SubscriberHandle)&subscriber;
    set(&observer);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle handle)
{
    (void)handle;
    subscriber = NULL;
    atomic_store(&driver_domain, false);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle handle,
                                  CUpti_CallbackDomain domain)
{
    (void)handle;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
        atomic_store(&driver_domain, enable != 0);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                               CUpti_BuffersCallbackCompleteFunc done)
{
    if (req == NULL || done == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&mu);
    request = req;
    complete = done;
    pthread_mutex_unlock(&mu);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
    if (kind == CUPTI_ACTIVITY_KIND_MEMCPY)
        atomic_store(&memcpy_on, true);
    else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY2)
        atomic_store(&peer_on, true);
    else
        return CUPTI_ERROR_NOT_SUPPORTED;
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    pthread_mutex_lock(&mu);
    if (buffer != NULL && complete != NULL) {
        complete(NULL, 0, buffer, buffer_size, buffer_used);
        buffer = NULL;
    }
    pthread_mutex_unlock(&mu);
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **record)
{
    if (buf == NULL || record == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    uint8_t *next = *record == NULL ? buf : (uint8_t *)*record + STRIDE;
    if (next + STRIDE > buf + valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)next;
    return CUPTI_SUCCESS;
}

API CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
    if (timestamp == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *timestamp = now_ns();
    return CUPTI_SUCCESS;
}
