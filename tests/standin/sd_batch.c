/* Batched copies: cuMemcpyBatchAsync (12080 signature with failIdx, 13000
 * without) and cuMemcpy3DBatchAsync (the same two), each with its _ptsz
 * variant. Pointer operands only (arrays: CUDA_ERROR_NOT_SUPPORTED).
 *
 * The whole batch is validated before anything is queued; on an error
 * *failIdx (where the signature has it) names the copy at fault, or is
 * SIZE_MAX when no single copy is. Each element is then one queued copy,
 * accounted on its own. Source access order: STREAM and ANY read the
 * source in stream order; DURING_API_CALL reads it during the call (the
 * bytes are snapshotted, so later changes to the source do not show). */
#include "sd_internal.h"

#include <stdlib.h>
#include <string.h>

struct elem {
    struct sd_xfer x;
    struct sd_alloc *da, *sa;
    int during_call;
};

static int order_ok(CUmemcpySrcAccessOrder o)
{
    return o == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
           o == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL ||
           o == CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
}

/* The legacy NULL stream is refused, as documented; NULL in a _ptsz
 * variant is the per-thread stream, which is fine. */
static CUresult batch_stream(CUstream h, int pt, struct CUstream_st **s)
{
    if ((h == NULL && !pt) || h == CU_STREAM_LEGACY)
        return CUDA_ERROR_INVALID_VALUE;
    return sd_stream_resolve(h, pt, s);
}

static char *snapshot(const struct sd_xfer *x)
{
    size_t n = x->width * x->height * x->depth;
    char *b = malloc(n ? n : 1);
    if (!b)
        return NULL;
    char *o = b;
    for (size_t z = 0; z < x->depth; z++)
        for (size_t y = 0; y < x->height; y++, o += x->width)
            memcpy(o, x->src + z * x->sslice + y * x->spitch, x->width);
    return b;
}

/* Queues validated elements on s. */
static CUresult issue_all(struct elem *e, size_t n, struct CUstream_st *s)
{
    int pageable = 0;
    uint64_t last = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].x.width == 0)
            continue;
        struct sd_op *op = sd_op_new(SD_OP_COPY);
        if (!op)
            return CUDA_ERROR_OUT_OF_MEMORY;
        op->x = e[i].x;
        if (e[i].during_call && !(op->x.snapshot = snapshot(&e[i].x))) {
            free(op);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        op->x.corrupt = sd_link_corrupts(&e[i].x, e[i].da, e[i].sa);
        s->sim_ns += sd_account(&e[i].x, e[i].da, e[i].sa);
        sd_enqueue(s, op);
        last = op->seq;
        pageable |= !e[i].da || !e[i].sa;
    }
    if (pageable)
        sd_block_until(s, last);
    return CUDA_SUCCESS;
}

static CUresult fail(size_t *failIdx, size_t idx, CUresult r)
{
    if (failIdx)
        *failIdx = idx;
    return r;
}

static CUresult batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                      CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                      size_t *failIdx, CUstream h, int pt)
{
    struct CUstream_st *s;
    CUresult r = batch_stream(h, pt, &s);
    if (r != CUDA_SUCCESS)
        return fail(failIdx, SIZE_MAX, r);
    if (!dsts || !srcs || !sizes || count == 0 || !attrs || !attrsIdxs || numAttrs == 0 ||
        numAttrs > count || attrsIdxs[0] != 0)
        return fail(failIdx, SIZE_MAX, CUDA_ERROR_INVALID_VALUE);
    for (size_t k = 1; k < numAttrs; k++)
        if (attrsIdxs[k] <= attrsIdxs[k - 1] || attrsIdxs[k] >= count)
            return fail(failIdx, SIZE_MAX, CUDA_ERROR_INVALID_VALUE);
    struct elem *e = calloc(count, sizeof *e);
    if (!e)
        return fail(failIdx, SIZE_MAX, CUDA_ERROR_OUT_OF_MEMORY);
    size_t k = 0;
    for (size_t i = 0; i < count; i++) {
        while (k + 1 < numAttrs && attrsIdxs[k + 1] <= i)
            k++;
        if (!order_ok(attrs[k].srcAccessOrder)) {
            free(e);
            return fail(failIdx, i, CUDA_ERROR_INVALID_VALUE);
        }
        if (sizes[i] == 0)
            continue;
        r = sd_any_operand(dsts[i], sizes[i], &e[i].da);
        if (r == CUDA_SUCCESS)
            r = sd_any_operand(srcs[i], sizes[i], &e[i].sa);
        if (r != CUDA_SUCCESS) {
            free(e);
            return fail(failIdx, i, r);
        }
        struct sd_xfer *x = &e[i].x;
        x->dst = (char *)(uintptr_t)dsts[i];
        x->src = (const char *)(uintptr_t)srcs[i];
        x->width = x->dpitch = x->spitch = x->dslice = x->sslice = sizes[i];
        x->height = x->depth = 1;
        e[i].during_call = attrs[k].srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    }
    r = issue_all(e, count, s);
    free(e);
    return r;
}

SD_API CUresult CUDAAPI cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                           size_t count, CUmemcpyAttributes *attrs,
                                           size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                                           CUstream hStream)
{
    SD_BODY(batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, 0));
}
SD_API CUresult CUDAAPI cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs,
                                                size_t *sizes, size_t count,
                                                CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                                size_t numAttrs, size_t *failIdx,
                                                CUstream hStream)
{
    SD_BODY(batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, 1));
}
SD_API CUresult CUDAAPI cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs,
                                              size_t *sizes, size_t count,
                                              CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                              size_t numAttrs, CUstream hStream)
{
    SD_BODY(batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, hStream, 0));
}
SD_API CUresult CUDAAPI cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs,
                                                   size_t *sizes, size_t count,
                                                   CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                                   size_t numAttrs, CUstream hStream)
{
    SD_BODY(batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, hStream, 1));
}

/* One pointer operand of a 3D batch copy: first byte, allocation, and
 * pitches (row length and layer height 0 mean tightly packed). */
static CUresult operand3d(const CUmemcpy3DOperand *o, const CUextent3D *ext, uintptr_t *addr,
                          size_t *pitch, size_t *slice, struct sd_alloc **a)
{
    if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER)
        return CUDA_ERROR_INVALID_VALUE;
    size_t row = o->op.ptr.rowLength ? o->op.ptr.rowLength : ext->width;
    size_t layer = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : ext->height;
    size_t ls, lr, span;
    if (row < ext->width || layer < ext->height || __builtin_mul_overflow(row, layer, slice) ||
        __builtin_mul_overflow(ext->depth - 1, *slice, &ls) ||
        __builtin_mul_overflow(ext->height - 1, row, &lr) || __builtin_add_overflow(ls, lr, &span) ||
        __builtin_add_overflow(span, ext->width, &span))
        return CUDA_ERROR_INVALID_VALUE;
    *addr = o->op.ptr.ptr;
    *pitch = row;
    return sd_any_operand(*addr, span, a);
}

static CUresult batch3d(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *failIdx,
                        unsigned long long flags, CUstream h, int pt)
{
    struct CUstream_st *s;
    CUresult r = batch_stream(h, pt, &s);
    if (r != CUDA_SUCCESS)
        return fail(failIdx, SIZE_MAX, r);
    if (flags != 0 || numOps == 0 || !ops)
        return fail(failIdx, SIZE_MAX, CUDA_ERROR_INVALID_VALUE);
    struct elem *e = calloc(numOps, sizeof *e);
    if (!e)
        return fail(failIdx, SIZE_MAX, CUDA_ERROR_OUT_OF_MEMORY);
    for (size_t i = 0; i < numOps; i++) {
        const CUDA_MEMCPY3D_BATCH_OP *op = &ops[i];
        const CUextent3D *ext = &op->extent;
        uintptr_t sa, da;
        size_t sp, ss, dp, ds;
        r = CUDA_SUCCESS;
        if (ext->width == 0 || ext->height == 0 || ext->depth == 0 ||
            !order_ok(op->srcAccessOrder) ||
            (op->flags & ~(unsigned)CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE))
            r = CUDA_ERROR_INVALID_VALUE;
        if (r == CUDA_SUCCESS)
            r = operand3d(&op->src, ext, &sa, &sp, &ss, &e[i].sa);
        if (r == CUDA_SUCCESS)
            r = operand3d(&op->dst, ext, &da, &dp, &ds, &e[i].da);
        if (r != CUDA_SUCCESS) {
            free(e);
            return fail(failIdx, i, r);
        }
        struct sd_xfer *x = &e[i].x;
        x->dst = (char *)da;
        x->src = (const char *)sa;
        x->width = ext->width;
        x->height = ext->height;
        x->depth = ext->depth;
        x->dpitch = dp;
        x->dslice = ds;
        x->spitch = sp;
        x->sslice = ss;
        e[i].during_call = op->srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    }
    r = issue_all(e, numOps, s);
    free(e);
    return r;
}

SD_API CUresult CUDAAPI cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
                                             size_t *failIdx, unsigned long long flags,
                                             CUstream hStream)
{
    SD_BODY(batch3d(numOps, opList, failIdx, flags, hStream, 0));
}
SD_API CUresult CUDAAPI cuMemcpy3DBatchAsync_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
                                                  size_t *failIdx, unsigned long long flags,
                                                  CUstream hStream)
{
    SD_BODY(batch3d(numOps, opList, failIdx, flags, hStream, 1));
}
SD_API CUresult CUDAAPI cuMemcpy3DBatchAsync_v2(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
                                                unsigned long long flags, CUstream hStream)
{
    SD_BODY(batch3d(numOps, opList, NULL, flags, hStream, 0));
}
SD_API CUresult CUDAAPI cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps,
                                                     CUDA_MEMCPY3D_BATCH_OP *opList,
                                                     unsigned long long flags, CUstream hStream)
{
    SD_BODY(batch3d(numOps, opList, NULL, flags, hStream, 1));
}
