/* Streams, events and the ordering model.
 *
 * Async operations are queued on their stream and executed only when
 * something flushes them; nothing runs in the background. Every queued
 * operation gets a number from one global issue sequence. An operation
 * may run only after
 *   - the earlier operations of its own stream (FIFO);
 *   - on a legacy default stream: every earlier operation of the blocking
 *     streams (created without CU_STREAM_NON_BLOCKING, and the per-thread
 *     default streams) of the same context;
 *   - on a blocking stream: every earlier operation of the legacy stream of
 *     its context (the two-way implicit synchronisation of the legacy
 *     stream; the per-thread default stream is blocking, as documented);
 *   - for a cuStreamWaitEvent: the operations up to the event's record.
 * sd_run_until honours these by running the dependencies first, so any
 * flush gives an order the real driver could give, and an operation that
 * the program did not order after another may run before it: mixing up the
 * legacy and the per-thread default stream gives wrong bytes, as on a GPU.
 * With STANDIN_EAGER_NONBLOCKING=1, work on non-blocking streams runs at
 * issue (after its dependencies): another order a GPU could give, in which
 * a missing wait on older work of another stream shows.
 */
#include "sd_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- stream objects ---- */

struct CUstream_st *sd_stream_new(struct CUctx_st *c, enum sd_stream_kind k,
                                  unsigned flags, int prio)
{
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->id = ++sd.next_id;
    s->ctx = c;
    s->kind = k;
    s->flags = flags;
    s->priority = prio;
    s->next = sd.streams;
    sd.streams = s;
    return s;
}

static void op_free(struct sd_op *op)
{
    free(op->x.snapshot);
    free(op);
}

void sd_stream_free(struct CUstream_st *s)
{
    for (struct CUstream_st **ps = &sd.streams; *ps; ps = &(*ps)->next)
        if (*ps == s) {
            *ps = s->next;
            break;
        }
    while (s->head) {
        struct sd_op *op = s->head;
        s->head = op->next;
        op_free(op);
        sd.pending--;
    }
    free(s);
}

static struct CUstream_st *stream_by_id(uint64_t id)
{
    for (struct CUstream_st *s = sd.streams; s; s = s->next)
        if (s->id == id)
            return s;
    return NULL;
}

static struct CUstream_st *user_stream(CUstream h)
{
    for (struct CUstream_st *s = sd.streams; s; s = s->next)
        if (s == h)
            return s->kind == SD_STREAM_USER ? s : NULL;
    return NULL;
}

/* The calling thread's per-thread default stream of context c. */
struct CUstream_st *sd_ptds(struct CUctx_st *c, int create)
{
    uint64_t key = sd_thread_key();
    for (struct CUstream_st *s = sd.streams; s; s = s->next)
        if (s->kind == SD_STREAM_PTDS && s->ctx == c && s->thread == key)
            return s;
    if (!create)
        return NULL;
    struct CUstream_st *s = sd_stream_new(c, SD_STREAM_PTDS, 0, 0);
    if (s)
        s->thread = key;
    return s;
}

/* NULL is the legacy stream in the legacy variants and the calling
 * thread's per-thread stream in the _ptds/_ptsz ones; CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD mean themselves in both. Special handles refer to
 * the current context; a created stream carries its own. */
CUresult sd_stream_resolve(CUstream h, int per_thread, struct CUstream_st **out)
{
    if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        struct CUctx_st *c;
        CUresult r = sd_current(&c);
        if (r != CUDA_SUCCESS)
            return r;
        int pt = h == CU_STREAM_PER_THREAD || (h == NULL && per_thread);
        *out = pt ? sd_ptds(c, 1) : c->legacy;
        return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct CUstream_st *s = user_stream(h);
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!s->ctx->alive)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    *out = s;
    return CUDA_SUCCESS;
}

void sd_streams_drop_ctx(struct CUctx_st *c)
{
    for (struct CUstream_st **ps = &sd.streams; *ps;) {
        struct CUstream_st *s = *ps;
        if (s->ctx == c && s->kind != SD_STREAM_LEGACY) {
            sd_stream_free(s);   /* unlinks *ps */
        } else {
            ps = &s->next;
        }
    }
}

/* ---- operations ---- */

struct sd_op *sd_op_new(enum sd_op_kind k)
{
    struct sd_op *op = calloc(1, sizeof *op);
    if (op)
        op->kind = k;
    return op;
}

void sd_enqueue(struct CUstream_st *s, struct sd_op *op)
{
    op->captured = s->capturing;
    op->seq = ++sd.seq;
    op->next = NULL;
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    sd.pending++;
}

void sd_run_nonblocking(void)
{
    for (struct CUstream_st *s = sd.streams; s; s = s->next)
        if (s->kind == SD_STREAM_USER && (s->flags & CU_STREAM_NON_BLOCKING) && s->tail)
            sd_run_until(s, s->tail->seq);
}

static void exec_copy(const struct sd_xfer *x)
{
    const char *src = x->snapshot ? x->snapshot : x->src;
    size_t spitch = x->snapshot ? x->width : x->spitch;
    size_t sslice = x->snapshot ? x->width * x->height : x->sslice;
    size_t span = x->depth && x->height
                      ? (x->depth - 1) * x->dslice + (x->height - 1) * x->dpitch + x->width
                      : 0;
    char *dst = sd_dma_dst(x->dst, span);
    for (size_t z = 0; z < x->depth; z++)
        for (size_t y = 0; y < x->height; y++)
            memmove(dst + z * x->dslice + y * x->dpitch,
                    src + z * sslice + y * spitch, x->width);
    /* A bad link: every 1000th byte of each row lands with its low bit
     * flipped (a real one may drop, zero or repeat data; any wrong byte
     * is what a check must catch). */
    for (size_t z = 0; x->corrupt && z < x->depth; z++)
        for (size_t y = 0; y < x->height; y++)
            for (size_t i = 0; i < x->width; i += 1000)
                dst[z * x->dslice + y * x->dpitch + i] ^= 1;
}

static void exec_memset(const struct sd_op *op)
{
    size_t span = op->mheight ? (op->mheight - 1) * op->mpitch + op->mwidth * (size_t)op->melem
                              : 0;
    char *dst = sd_dma_dst(op->mdst, span);
    for (size_t y = 0; y < op->mheight; y++) {
        char *row = dst + y * op->mpitch;
        if (op->melem == 1) {
            memset(row, (int)(op->mvalue & 0xff), op->mwidth);
        } else if (op->melem == 2) {
            uint16_t v = (uint16_t)op->mvalue;
            for (size_t i = 0; i < op->mwidth; i++)
                memcpy(row + 2 * i, &v, 2);
        } else {
            uint32_t v = op->mvalue;
            for (size_t i = 0; i < op->mwidth; i++)
                memcpy(row + 4 * i, &v, 4);
        }
    }
}

static void exec_op(struct sd_op *op)
{
    if (op->captured)
        return; /* recorded into a graph, which the stand-in never launches */
    if (op->kind == SD_OP_COPY)
        exec_copy(&op->x);
    else if (op->kind == SD_OP_MEMSET)
        exec_memset(op);
    sd.stats.ops_executed++;
}

static int blocking(const struct CUstream_st *s)
{
    return s->kind == SD_STREAM_PTDS ||
           (s->kind == SD_STREAM_USER && !(s->flags & CU_STREAM_NON_BLOCKING));
}

/* Runs the operations of s with seq <= limit, each after its
 * dependencies. The recursion ends: a dependency always has a smaller
 * seq, and what a recursive call reaches in s itself is already done. */
void sd_run_until(struct CUstream_st *s, uint64_t limit)
{
    while (s->head && s->head->seq <= limit) {
        struct sd_op *op = s->head;
        if (s->kind == SD_STREAM_LEGACY) {
            for (struct CUstream_st *b = sd.streams; b; b = b->next)
                if (b->ctx == s->ctx && blocking(b))
                    sd_run_until(b, op->seq - 1);
        } else if (blocking(s)) {
            sd_run_until(s->ctx->legacy, op->seq - 1);
        }
        if (op->kind == SD_OP_WAIT) {
            struct CUstream_st *t = stream_by_id(op->wait_stream);
            if (t)
                sd_run_until(t, op->wait_seq);
        }
        s->head = op->next;
        if (!s->head)
            s->tail = NULL;
        sd.pending--;
        exec_op(op);
        op_free(op);
    }
}

/* Runs everything queued on the given streams, in issue order (duplicates
 * and NULLs in the set are harmless). */
void sd_flush_set(struct CUstream_st **set, size_t n)
{
    for (;;) {
        struct CUstream_st *best = NULL;
        for (size_t i = 0; i < n; i++)
            if (set[i] && set[i]->head && (!best || set[i]->head->seq < best->head->seq))
                best = set[i];
        if (!best)
            return;
        sd_run_until(best, best->head->seq);
    }
}

/* Flushes, in issue order, the streams of the given contexts (every
 * context when ctxs is NULL): all of them, or (all == 0) the legacy and
 * the blocking ones, which is what the legacy stream synchronises with. */
static void flush_matching(struct CUctx_st **ctxs, size_t nctx, int all)
{
    size_t n = 0, cap = 16;
    struct CUstream_st **set = malloc(cap * sizeof *set);
    if (!set)
        return;
    for (struct CUstream_st *s = sd.streams; s; s = s->next) {
        int want = ctxs == NULL;
        for (size_t i = 0; i < nctx && !want; i++)
            want = s->ctx == ctxs[i];
        if (!want || !s->head)
            continue;
        if (!all && !(s->kind == SD_STREAM_LEGACY || blocking(s)))
            continue;
        if (n == cap) {
            struct CUstream_st **ns = realloc(set, 2 * cap * sizeof *ns);
            if (!ns)
                break;
            set = ns;
            cap *= 2;
        }
        set[n++] = s;
    }
    sd_flush_set(set, n);
    free(set);
}

void sd_flush_ctx(struct CUctx_st *c, int include_nonblocking)
{
    flush_matching(&c, 1, include_nonblocking);
}

void sd_flush_all(void)
{
    flush_matching(NULL, 0, 1);
}

void sd_sync_run(struct CUctx_st *cur, struct CUctx_st **touch, size_t ntouch,
                 int per_thread, struct sd_op *op)
{
    struct CUstream_st *home = per_thread ? sd_ptds(cur, 1) : cur->legacy;
    if (!home) {           /* out of memory: run it unordered */
        exec_op(op);
        op_free(op);
        return;
    }
    sd_enqueue(home, op);
    uint64_t seq = op->seq;   /* op is freed once it has run */
    struct CUctx_st *ctxs[8];
    size_t n = 0;
    ctxs[n++] = cur;
    for (size_t i = 0; i < ntouch && n < 8; i++)
        if (touch[i] && touch[i]->alive)
            ctxs[n++] = touch[i];
    if (per_thread) {
        /* Only this thread's per-thread streams (their legacy
         * dependencies come along through sd_run_until). */
        struct CUstream_st *set[8];
        for (size_t i = 0; i < n; i++)
            set[i] = sd_ptds(ctxs[i], 0);
        sd_flush_set(set, n);
    } else {
        flush_matching(ctxs, n, 0);
    }
    sd_run_until(home, seq);   /* op itself, if nothing above ran it */
}

/* ---- exported stream functions ---- */

static CUresult stream_create(CUstream *ph, unsigned int flags, int prio)
{
    if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c;
    CUresult r = sd_current(&c);
    if (r != CUDA_SUCCESS)
        return r;
    /* Priorities are clamped to the range reported, [-5, 0], as the real
     * driver clamps them. */
    if (prio > 0)
        prio = 0;
    if (prio < -5)
        prio = -5;
    struct CUstream_st *s = sd_stream_new(c, SD_STREAM_USER, flags, prio);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ph = s;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    SD_BODY(stream_create(phStream, Flags, 0));
}
SD_API CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                                   int priority)
{
    SD_BODY(stream_create(phStream, flags, priority));
}

/* The real cuStreamDestroy returns at once and lets queued work finish;
 * here that work runs now, before the stream goes. */
static CUresult stream_destroy(CUstream h)
{
    struct CUstream_st *s = user_stream(h);
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    sd_run_until(s, UINT64_MAX);
    sd_stream_free(s);
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
    SD_BODY(stream_destroy(hStream));
}

static CUresult stream_sync(CUstream h, int pt)
{
    struct CUstream_st *s;
    CUresult r = sd_stream_resolve(h, pt, &s);
    if (r == CUDA_SUCCESS && s->capturing)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (r == CUDA_SUCCESS)
        sd_run_until(s, UINT64_MAX);
    return r;
}

/* ---- stream capture (a model: what a capturing stream is given is
 * recorded, not run; the graph is never launched) ---- */

static CUresult begin_capture(CUstream h, int pt)
{
    struct CUstream_st *s;
    CUresult r = sd_stream_resolve(h, pt, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (s->kind == SD_STREAM_LEGACY)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (s->capturing)
        return CUDA_ERROR_ILLEGAL_STATE;
    sd_run_until(s, UINT64_MAX); /* what came before is not part of the graph */
    s->capturing = 1;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    (void)mode;
    SD_BODY(begin_capture(hStream, 0));
}

static CUresult end_capture(CUstream h, CUgraph *graph)
{
    struct CUstream_st *s;
    CUresult r = sd_stream_resolve(h, 0, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!graph)
        return CUDA_ERROR_INVALID_VALUE;
    if (!s->capturing)
        return CUDA_ERROR_ILLEGAL_STATE;
    s->capturing = 0;
    static int token;
    *graph = (CUgraph)(void *)&token;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    SD_BODY(end_capture(hStream, phGraph));
}

static CUresult is_capturing(CUstream h, CUstreamCaptureStatus *st, int pt)
{
    struct CUstream_st *s;
    CUresult r = sd_stream_resolve(h, pt, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    *st = s->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream,
                                            CUstreamCaptureStatus *captureStatus)
{
    SD_BODY(is_capturing(hStream, captureStatus, 0));
}
SD_API CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream hStream,
                                                 CUstreamCaptureStatus *captureStatus)
{
    SD_BODY(is_capturing(hStream, captureStatus, 1));
}
SD_API CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
    SD_BODY(stream_sync(hStream, 0));
}
SD_API CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream)
{
    SD_BODY(stream_sync(hStream, 1));
}
/* A query flushes too: nothing would ever complete otherwise, and a
 * program polling until CUDA_SUCCESS must get there. */
SD_API CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
    SD_BODY(stream_sync(hStream, 0));
}
SD_API CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream)
{
    SD_BODY(stream_sync(hStream, 1));
}

static CUresult stream_get_ctx(CUstream h, CUcontext *pctx, int pt)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s;
    CUresult r = sd_stream_resolve(h, pt, &s);
    if (r == CUDA_SUCCESS)
        *pctx = s->ctx;
    return r;
}
SD_API CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    SD_BODY(stream_get_ctx(hStream, pctx, 0));
}
SD_API CUresult CUDAAPI cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx)
{
    SD_BODY(stream_get_ctx(hStream, pctx, 1));
}

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
    *s = stream_by_id(e->stream_id);
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
        sd_run_until(s, e->seq);
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
