/* The exported stream functions: create and destroy, synchronize and
 * query, capture, the stream's context. What they queue and flush is the
 * ordering model of sd_stream.c. */
#include "sd_internal.h"

#include <stdint.h>

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
 * here that work runs now, before the stream goes (waiting while a value
 * wait holds it). */
static CUresult stream_destroy(CUstream h)
{
    struct CUstream_st *s = sd_user_stream(h);
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    sd_block_until(s, UINT64_MAX);
    if (sd_user_stream(h) == s)
        sd_stream_free(s);
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
    SD_BODY(stream_destroy(hStream));
}

/* query: cuStreamQuery, which answers not ready while a value wait holds
 * the stream; else cuStreamSynchronize, which waits for it. */
static CUresult stream_sync(CUstream h, int pt, int query)
{
    struct CUstream_st *s;
    CUresult r = sd_stream_resolve(h, pt, &s);
    if (r == CUDA_SUCCESS && s->capturing)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (r == CUDA_SUCCESS && query && !sd_run_until(s, UINT64_MAX))
        return CUDA_ERROR_NOT_READY;
    if (r == CUDA_SUCCESS && !query)
        sd_block_until(s, UINT64_MAX);
    return r;
}

/* A wait in stream order until the 32-bit word at addr (memory the driver
 * knows: device, pinned or registered host memory, 4-byte aligned) meets
 * the condition of flags (GEQ, EQ, AND, NOR; the FLUSH bit accepted). */
static CUresult wait_value32(CUstream h, CUdeviceptr addr, cuuint32_t value, unsigned flags,
                             int pt)
{
    struct CUstream_st *s;
    CUresult r = sd_stream_resolve(h, pt, &s);
    if (r != CUDA_SUCCESS)
        return r;
    unsigned cond = flags & ~(unsigned)CU_STREAM_WAIT_VALUE_FLUSH;
    struct sd_alloc *a;
    if (cond > CU_STREAM_WAIT_VALUE_NOR || (addr & 3) != 0 ||
        sd_known_operand(addr, 4, &a) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    struct sd_op *op = sd_op_new(SD_OP_WAIT_VALUE);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->wv_addr = (const uint32_t *)(uintptr_t)addr;
    op->wv_value = value;
    op->wv_cond = cond;
    sd_enqueue(s, op);
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuStreamWaitValue32_v2(CUstream stream, CUdeviceptr addr,
                                               cuuint32_t value, unsigned int flags)
{
    SD_BODY(wait_value32(stream, addr, value, flags, 0));
}
SD_API CUresult CUDAAPI cuStreamWaitValue32_v2_ptsz(CUstream stream, CUdeviceptr addr,
                                                    cuuint32_t value, unsigned int flags)
{
    SD_BODY(wait_value32(stream, addr, value, flags, 1));
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
    SD_BODY(stream_sync(hStream, 0, 0));
}
SD_API CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream)
{
    SD_BODY(stream_sync(hStream, 1, 0));
}
/* A query flushes too: nothing would ever complete otherwise, and a
 * program polling until CUDA_SUCCESS must get there. */
SD_API CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
    SD_BODY(stream_sync(hStream, 0, 1));
}
SD_API CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream)
{
    SD_BODY(stream_sync(hStream, 1, 1));
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
