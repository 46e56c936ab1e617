/* CUPTI activity counting for the GPU tests; see cupti_paths.h. */
#define _POSIX_C_SOURCE 200809L

#include "cupti_paths.h"

#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Big enough that a window's few records never fill more than one buffer. */
#define CP_BUFFER_BYTES (1u << 20)
#define CP_ALIGN 8

static pthread_mutex_t cp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cupti_paths_counts cp_counts;   /* guarded by cp_lock */
static unsigned long long cp_dropped;        /* guarded by cp_lock */
static unsigned long cp_bad_records;         /* guarded by cp_lock */
static int cp_ready;

static void cp_reason(char *err, size_t len, const char *what, CUptiResult r)
{
    const char *s = NULL;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || s == NULL)
        s = "unknown CUPTI error";
    snprintf(err, len, "%s failed: %s (%d)", what, s, (int)r);
}

static void CUPTIAPI cp_buffer_requested(uint8_t **buffer, size_t *size,
                                         size_t *max_records)
{
    *buffer = aligned_alloc(CP_ALIGN, CP_BUFFER_BYTES);
    *size = *buffer ? CP_BUFFER_BYTES : 0;
    *max_records = 0;   /* as many as fit */
}

static void cp_count(unsigned copy_kind, unsigned long long bytes)
{
    struct cupti_paths_counts *c = &cp_counts;
    c->records++;
    switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
        c->ptop++;
        c->ptop_bytes += bytes;
        break;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
        c->dtoh++;
        c->dtoh_bytes += bytes;
        break;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
        c->htod++;
        c->htod_bytes += bytes;
        break;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
        c->dtod++;
        c->dtod_bytes += bytes;
        break;
    default:
        c->other++;
        break;
    }
}

/* May run on a CUPTI thread or inside cuptiActivityFlushAll. */
static void CUPTIAPI cp_buffer_completed(CUcontext ctx, uint32_t stream_id,
                                         uint8_t *buffer, size_t size, size_t valid)
{
    CUpti_Activity *rec = NULL;
    size_t dropped = 0;
    pthread_mutex_lock(&cp_lock);
    for (;;) {
        CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &rec);
        if (r != CUPTI_SUCCESS) {
            if (r != CUPTI_ERROR_MAX_LIMIT_REACHED)
                cp_bad_records++;
            break;
        }
        if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
            cp_count(m->copyKind, m->bytes);
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY2) {
            const CUpti_ActivityMemcpyPtoP4 *m = (const CUpti_ActivityMemcpyPtoP4 *)rec;
            cp_count(m->copyKind, m->bytes);
        }
    }
    if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS)
        cp_dropped += dropped;
    pthread_mutex_unlock(&cp_lock);
    (void)size;
    free(buffer);
}

int cupti_paths_init(char *err, size_t err_len)
{
    CUptiResult r;
    if (cp_ready)
        return 0;
    r = cuptiActivityRegisterCallbacks(cp_buffer_requested, cp_buffer_completed);
    if (r != CUPTI_SUCCESS) {
        cp_reason(err, err_len, "cuptiActivityRegisterCallbacks", r);
        return -1;
    }
    /* MEMCPY2 records only come with MEMCPY enabled too (ARCHITECTURE.md). */
    r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    if (r != CUPTI_SUCCESS) {
        cp_reason(err, err_len, "cuptiActivityEnable(MEMCPY)", r);
        return -1;
    }
    r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2);
    if (r != CUPTI_SUCCESS) {
        cp_reason(err, err_len, "cuptiActivityEnable(MEMCPY2)", r);
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
        return -1;
    }
    cp_ready = 1;
    return 0;
}

/* Every record so far delivered: 0, or -1 with err set. */
static int flush_ready(char *err, size_t err_len)
{
    if (!cp_ready) {
        snprintf(err, err_len, "CUPTI not initialised");
        return -1;
    }
    CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != CUPTI_SUCCESS) {
        cp_reason(err, err_len, "cuptiActivityFlushAll", r);
        return -1;
    }
    return 0;
}

int cupti_paths_begin(char *err, size_t err_len)
{
    if (flush_ready(err, err_len) != 0)
        return -1;
    pthread_mutex_lock(&cp_lock);
    memset(&cp_counts, 0, sizeof cp_counts);
    cp_dropped = 0;
    cp_bad_records = 0;
    pthread_mutex_unlock(&cp_lock);
    return 0;
}

int cupti_paths_end(struct cupti_paths_counts *out, char *err, size_t err_len)
{
    int rc = 0;
    if (flush_ready(err, err_len) != 0)
        return -1;
    pthread_mutex_lock(&cp_lock);
    *out = cp_counts;
    if (cp_dropped != 0) {
        snprintf(err, err_len, "CUPTI dropped %llu activity records", cp_dropped);
        rc = -1;
    } else if (cp_bad_records != 0) {
        snprintf(err, err_len, "CUPTI could not parse %lu activity buffers",
                 cp_bad_records);
        rc = -1;
    }
    pthread_mutex_unlock(&cp_lock);
    return rc;
}

void cupti_paths_format(const struct cupti_paths_counts *c, char *buf, size_t len)
{
    snprintf(buf, len, "ptop=%lu dtoh=%lu htod=%lu dtod=%lu other=%lu", c->ptop, c->dtoh,
             c->htod, c->dtod, c->other);
}

void cupti_paths_shutdown(void)
{
    if (!cp_ready)
        return;
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY2);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
    cp_ready = 0;
}
