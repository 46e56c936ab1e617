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
 *
 * This file: stream objects, queued operations and their execution. The
 * exported stream functions are in sd_stream_api.c, events and
 * cuStreamWaitEvent in sd_event.c.
 */
#include "sd_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

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

struct CUstream_st *sd_stream_by_id(uint64_t id)
{
    for (struct CUstream_st *s = sd.streams; s; s = s->next)
        if (s->id == id)
            return s;
    return NULL;
}

struct CUstream_st *sd_user_stream(CUstream h)
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
    struct CUstream_st *s = sd_user_stream(h);
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

/* A value wait's condition (cuStreamWaitValue32's flags; the word read
 * atomically: the program writes it from another thread). */
static int wait_value_holds(const struct sd_op *op)
{
    uint32_t v = __atomic_load_n(op->wv_addr, __ATOMIC_ACQUIRE);
    switch (op->wv_cond) {
    case CU_STREAM_WAIT_VALUE_EQ: return v == op->wv_value;
    case CU_STREAM_WAIT_VALUE_AND: return (v & op->wv_value) != 0;
    case CU_STREAM_WAIT_VALUE_NOR: return ~(v | op->wv_value) != 0;
    default: return (int32_t)(v - op->wv_value) >= 0;
    }
}

/* The dependencies of op, the head of s, run first; 0 when one is held. */
static int run_deps(struct CUstream_st *s, const struct sd_op *op)
{
    if (s->kind == SD_STREAM_LEGACY) {
        for (struct CUstream_st *b = sd.streams; b; b = b->next)
            if (b->ctx == s->ctx && blocking(b) && !sd_run_until(b, op->seq - 1))
                return 0;
    } else if (blocking(s) && !sd_run_until(s->ctx->legacy, op->seq - 1)) {
        return 0;
    }
    if (op->kind == SD_OP_WAIT) {
        struct CUstream_st *t = sd_stream_by_id(op->wait_stream);
        if (t && !sd_run_until(t, op->wait_seq))
            return 0;
    }
    return op->kind != SD_OP_WAIT_VALUE || op->captured || wait_value_holds(op);
}

/* The recursion ends: a dependency always has a smaller seq, and what a
 * recursive call reaches in s itself is already done. */
int sd_run_until(struct CUstream_st *s, uint64_t limit)
{
    while (s->head && s->head->seq <= limit) {
        struct sd_op *op = s->head;
        if (!run_deps(s, op))
            return 0;
        s->head = op->next;
        if (!s->head)
            s->tail = NULL;
        sd.pending--;
        exec_op(op);
        op_free(op);
    }
    return 1;
}

void sd_block_until(struct CUstream_st *s, uint64_t limit)
{
    uint64_t id = s->id;
    while (!sd_run_until(s, limit)) {
        pthread_mutex_unlock(&sd_mu);
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        pthread_mutex_lock(&sd_mu);
        s = sd_stream_by_id(id);
        if (s == NULL)
            return;
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
        if (!sd_run_until(best, best->head->seq))
            for (size_t i = 0; i < n; i++)
                if (set[i] == best)
                    set[i] = NULL;
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
    sd_block_until(home, seq);   /* op itself, if nothing above ran it */
}
