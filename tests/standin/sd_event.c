/* Events and cuStreamWaitEvent: a record is an operation in its stream's
 * queue (sd_stream.c), a wait an operation that runs the recorded stream up
 * to it first; synchronize and query run the work up to the record. */
#include "sd_internal.h"

#include <stdint.h>
#include <stdlib.h>

static struct CUevent_st *find_event(CUevent e)
{
    for (struct CUevent_st *x = sd.events; x; x = x->next)
        if (x == e)
            return x;
    return NULL;
}

/* 1 while the event's record operation is still queued. */
static int event_pending(struct CUevent_st *e, struct CUstream_st **s)
{
    if (!e->recorded)
        return 0;
    *s = sd_stream_by_id(e->stream_id);
    return *s && (*s)->head && (*s)->head->seq <= e->seq;
}

static CUresult stream_wait_event(CUstream h, CUevent ev, unsigned int flags, int pt)
{
    if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s;
    CUresult r = sd_stream_resolve(h, pt, &s);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUevent_st *e = find_event(ev);
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUstream_st *t;
    if (!event_pending(e, &t))
        return CUDA_SUCCESS;       /* nothing to wait for */
    struct sd_op *op = sd_op_new(SD_OP_WAIT);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->wait_stream = e->stream_id;
    op->wait_seq = e->seq;
    sd_enqueue(s, op);
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    SD_BODY(stream_wait_event(hStream, hEvent, Flags, 0));
}
SD_API CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent,
                                               unsigned int Flags)
{
    SD_BODY(stream_wait_event(hStream, hEvent, Flags, 1));
}

/* ---- events ---- */

static CUresult event_create(CUevent *ph, unsigned int flags)
{
    if (!ph || (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                    CU_EVENT_INTERPROCESS)))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c;
    CUresult r = sd_current(&c);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUevent_st *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->ctx = c;
    e->flags = flags;
    e->next = sd.events;
    sd.events = e;
    *ph = e;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    SD_BODY(event_create(phEvent, Flags));
}

static CUresult event_record(CUevent ev, CUstream h, int pt)
{
    struct CUevent_st *e = find_event(ev);
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUstream_st *s;
    CUresult r = sd_stream_resolve(h, pt, &s);
    if (r != CUDA_SUCCESS)
        return r;
    struct sd_op *op = sd_op_new(SD_OP_RECORD);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sd_enqueue(s, op);
    e->recorded = 1;
    e->stream_id = s->id;
    e->seq = op->seq;
    e->sim_ns = s->sim_ns;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
    SD_BODY(event_record(hEvent, hStream, 0));
}
SD_API CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    SD_BODY(event_record(hEvent, hStream, 1));
}

/* Synchronize and query both run the work up to the record. */
static CUresult event_sync(CUevent ev)
{
    struct CUevent_st *e = find_event(ev);
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUstream_st *s;
    if (event_pending(e, &s))
        sd_block_until(s, e->seq);
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
    SD_BODY(event_sync(hEvent));
}
/* A query of work still queued answers not ready, as a GPU that has not
 * reached it yet would, and then runs that work (the stand-in runs queued
 * work only when something looks at it: a loop polling an event ends). */
static CUresult event_query(CUevent ev)
{
    struct CUevent_st *e = find_event(ev);
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUstream_st *s;
    if (!event_pending(e, &s))
        return CUDA_SUCCESS;
    sd_run_until(s, e->seq);
    return CUDA_ERROR_NOT_READY;
}
SD_API CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
    SD_BODY(event_query(hEvent));
}

/* The time model's milliseconds between two completed records (sd_account):
 * the driver's errors for an event never recorded, one made without timing
 * (invalid handle) and one whose work is still queued (not ready). */
static CUresult event_elapsed(float *ms, CUevent start, CUevent end)
{
    struct CUevent_st *a = find_event(start), *b = find_event(end);
    struct CUstream_st *s;
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    if (!a || !b || !a->recorded || !b->recorded ||
        ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_HANDLE;
    if (event_pending(a, &s) || event_pending(b, &s))
        return CUDA_ERROR_NOT_READY;
    *ms = (float)((double)((int64_t)b->sim_ns - (int64_t)a->sim_ns) / 1e6);
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    SD_BODY(event_elapsed(pMilliseconds, hStart, hEnd));
}

static CUresult event_destroy(CUevent ev)
{
    for (struct CUevent_st **pe = &sd.events; *pe; pe = &(*pe)->next)
        if (*pe == ev) {
            struct CUevent_st *e = *pe;
            *pe = e->next;
            free(e);
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_HANDLE;
}
SD_API CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent)
{
    SD_BODY(event_destroy(hEvent));
}
