/* Copies and memsets: validation with the real driver's error codes, path
 * accounting (sd_account.c), and issue in the ordering model.
 *
 * Every copy becomes one sd_xfer (a strided 3D block of bytes) issued in
 * one of two ways:
 *   synchronous: queued on the current context's legacy stream (legacy
 *     variants) or the calling thread's per-thread stream (_ptds), then
 *     flushed with what that variant waits for (sd_sync_run);
 *   async: queued on its stream. When one side is pageable host memory the
 *     stream is flushed through the copy at once, as the real driver does
 *     (a pageable copy returns only after the data left or reached the
 *     pageable buffer), which also keeps a program's free() of that buffer
 *     safe.
 * Accounting happens at issue: the path is chosen when the copy is issued,
 * with the peer state of that moment. */
#include "sd_internal.h"

#include <stdlib.h>
#include <string.h>

/* The context whose streams a synchronous copy touching `a` waits for:
 * the owner of device-resident memory (a mapping has none: its device's
 * primary context stands in). Host memory brings none. */
static struct CUctx_st *owner_ctx(const struct sd_alloc *a)
{
    if (!sd_mem_on_device(a))
        return NULL;
    return a->ctx ? a->ctx : sd.primary[a->dev];
}

static struct sd_xfer linear(uintptr_t dst, uintptr_t src, size_t n)
{
    struct sd_xfer x = {0};
    x.dst = (char *)dst;
    x.src = (const char *)src;
    x.width = n;
    x.height = x.depth = 1;
    x.dpitch = x.spitch = x.dslice = x.sslice = n;
    return x;
}

/* Issues a validated copy. s != NULL: async on s. s == NULL: synchronous
 * on the current context cur, the per-thread variant when pt; extra holds
 * contexts named by the call (cuMemcpyPeer). The allocations da/sa (NULL:
 * pageable) are only read before anything is freed. */
static CUresult issue(const struct sd_xfer *x, const struct sd_alloc *da,
                      const struct sd_alloc *sa, struct CUstream_st *s, struct CUctx_st *cur,
                      int pt, struct CUctx_st **extra, size_t nextra)
{
    struct sd_op *op = sd_op_new(SD_OP_COPY);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->x = *x;
    op->x.corrupt = sd_link_corrupts(x, da, sa);
    uint64_t ns = sd_account(x, da, sa);
    if (s) {
        s->sim_ns += ns;
        sd_enqueue(s, op);
        if (!da || !sa)
            sd_block_until(s, op->seq);
        return CUDA_SUCCESS;
    }
    struct CUctx_st *touch[4] = {owner_ctx(da), owner_ctx(sa), NULL, NULL};
    for (size_t i = 0; i < nextra && i < 2; i++)
        touch[2 + i] = extra[i];
    sd_sync_run(cur, touch, 4, pt, op);
    return CUDA_SUCCESS;
}

/* Common front of every call: the stream (async) or the current context
 * (sync), checked before the operands, as the driver does. */
static CUresult front(CUstream h, int async, int pt, struct CUstream_st **s,
                      struct CUctx_st **cur)
{
    *s = NULL;
    if (async)
        return sd_stream_resolve(h, pt, s);
    return sd_current(cur);
}

/* ---- linear copies ---- */

enum lin_kind { LIN_ANY, LIN_DTOD, LIN_HTOD, LIN_DTOH };

static CUresult copy_linear(uintptr_t dst, uintptr_t src, size_t n, enum lin_kind k, int async,
                            CUstream h, int pt, struct CUctx_st **extra, size_t nextra)
{
    struct CUstream_st *s;
    struct CUctx_st *cur = NULL;
    CUresult r = front(h, async, pt, &s, &cur);
    if (r != CUDA_SUCCESS)
        return r;
    for (size_t i = 0; i < nextra; i++)
        if (!sd_ctx_live(extra[i]))
            return CUDA_ERROR_INVALID_CONTEXT;
    if (n == 0)
        return CUDA_SUCCESS;
    struct sd_alloc *da = NULL, *sa = NULL;
    r = (k == LIN_DTOD || k == LIN_HTOD) ? sd_known_operand(dst, n, &da) : sd_any_operand(dst, n, &da);
    if (r == CUDA_SUCCESS)
        r = (k == LIN_DTOD || k == LIN_DTOH) ? sd_known_operand(src, n, &sa)
                                             : sd_any_operand(src, n, &sa);
    if (r != CUDA_SUCCESS)
        return r;
    struct sd_xfer x = linear(dst, src, n);
    return issue(&x, da, sa, s, cur, pt, extra, nextra);
}

#define U(p) ((uintptr_t)(p))

SD_API CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    SD_BODY(copy_linear(dst, src, n, LIN_ANY, 0, NULL, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    SD_BODY(copy_linear(dst, src, n, LIN_ANY, 0, NULL, 1, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{
    SD_BODY(copy_linear(dst, src, n, LIN_ANY, 1, h, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h)
{
    SD_BODY(copy_linear(dst, src, n, LIN_ANY, 1, h, 1, NULL, 0));
}

static CUresult copy_peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                          size_t n, int async, CUstream h, int pt)
{
    struct CUctx_st *extra[2] = {dctx, sctx};
    return copy_linear(dst, src, n, LIN_DTOD, async, h, pt, extra, 2);
}
SD_API CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                                     CUcontext sctx, size_t n)
{
    SD_BODY(copy_peer(dst, dctx, src, sctx, n, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                                          CUcontext sctx, size_t n)
{
    SD_BODY(copy_peer(dst, dctx, src, sctx, n, 0, NULL, 1));
}
SD_API CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                                          CUcontext sctx, size_t n, CUstream h)
{
    SD_BODY(copy_peer(dst, dctx, src, sctx, n, 1, h, 0));
}
SD_API CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                                               CUcontext sctx, size_t n, CUstream h)
{
    SD_BODY(copy_peer(dst, dctx, src, sctx, n, 1, h, 1));
}

SD_API CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    SD_BODY(copy_linear(dst, src, n, LIN_DTOD, 0, NULL, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    SD_BODY(copy_linear(dst, src, n, LIN_DTOD, 0, NULL, 1, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n,
                                             CUstream h)
{
    SD_BODY(copy_linear(dst, src, n, LIN_DTOD, 1, h, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n,
                                                  CUstream h)
{
    SD_BODY(copy_linear(dst, src, n, LIN_DTOD, 1, h, 1, NULL, 0));
}

SD_API CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    SD_BODY(copy_linear(dst, U(src), n, LIN_HTOD, 0, NULL, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{
    SD_BODY(copy_linear(dst, U(src), n, LIN_HTOD, 0, NULL, 1, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    SD_BODY(copy_linear(U(dst), src, n, LIN_DTOH, 0, NULL, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{
    SD_BODY(copy_linear(U(dst), src, n, LIN_DTOH, 0, NULL, 1, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n,
                                             CUstream h)
{
    SD_BODY(copy_linear(dst, U(src), n, LIN_HTOD, 1, h, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n,
                                                  CUstream h)
{
    SD_BODY(copy_linear(dst, U(src), n, LIN_HTOD, 1, h, 1, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream h)
{
    SD_BODY(copy_linear(U(dst), src, n, LIN_DTOH, 1, h, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n,
                                                  CUstream h)
{
    SD_BODY(copy_linear(U(dst), src, n, LIN_DTOH, 1, h, 1, NULL, 0));
}

/* ---- 2D and 3D copies ---- */

/* One side of a CUDA_MEMCPY2D/3D(_PEER), normalised. */
struct side3 {
    size_t x, y, z, pitch, height;
    CUmemorytype type;
    const void *host;
    CUdeviceptr dev;
    CUarray array;
    size_t lod;
};

/* Resolves a side into its first byte and allocation. Arrays are not
 * modelled (CUDA_ERROR_NOT_SUPPORTED). */
static CUresult resolve_side(const struct side3 *sd3, size_t w, size_t h, size_t d,
                             uintptr_t *addr, struct sd_alloc **a)
{
    if (sd3->type == CU_MEMORYTYPE_ARRAY)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (sd3->lod != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((h > 1 || d > 1) && sd3->pitch < w)
        return CUDA_ERROR_INVALID_VALUE;
    if (d > 1 && sd3->height < h)
        return CUDA_ERROR_INVALID_VALUE;
    /* Sums that wrap the address space name no memory. */
    size_t slice, zo, yo, first, ls, lr, span;
    if (__builtin_mul_overflow(sd3->pitch, sd3->height, &slice) ||
        __builtin_mul_overflow(sd3->z, slice, &zo) ||
        __builtin_mul_overflow(sd3->y, sd3->pitch, &yo) || __builtin_add_overflow(zo, yo, &first) ||
        __builtin_add_overflow(first, sd3->x, &first) ||
        __builtin_mul_overflow(d - 1, slice, &ls) || __builtin_mul_overflow(h - 1, sd3->pitch, &lr) ||
        __builtin_add_overflow(ls, lr, &span) || __builtin_add_overflow(span, w, &span))
        return CUDA_ERROR_INVALID_VALUE;
    switch (sd3->type) {
    case CU_MEMORYTYPE_HOST:
        if (!sd3->host || first > UINTPTR_MAX - U(sd3->host))
            return CUDA_ERROR_INVALID_VALUE;
        *addr = U(sd3->host) + first;
        return sd_any_operand(*addr, span, a);
    case CU_MEMORYTYPE_DEVICE:
        if (!sd3->dev || first > UINTPTR_MAX - sd3->dev)
            return CUDA_ERROR_INVALID_VALUE;
        *addr = sd3->dev + first;
        return sd_known_operand(*addr, span, a);
    case CU_MEMORYTYPE_UNIFIED:
        if (!sd3->dev || first > UINTPTR_MAX - sd3->dev)
            return CUDA_ERROR_INVALID_VALUE;
        *addr = sd3->dev + first;
        return sd_any_operand(*addr, span, a);
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult copy_3d(const struct side3 *src, const struct side3 *dst, size_t w, size_t h,
                        size_t d, CUcontext sctx, CUcontext dctx, int peer, int async,
                        CUstream hs, int pt)
{
    struct CUstream_st *s;
    struct CUctx_st *cur = NULL;
    CUresult r = front(hs, async, pt, &s, &cur);
    if (r != CUDA_SUCCESS)
        return r;
    if (peer && (!sd_ctx_live(sctx) || !sd_ctx_live(dctx)))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (w == 0 || h == 0 || d == 0)
        return CUDA_SUCCESS;
    uintptr_t sa_addr, da_addr;
    struct sd_alloc *sa, *da;
    r = resolve_side(src, w, h, d, &sa_addr, &sa);
    if (r == CUDA_SUCCESS)
        r = resolve_side(dst, w, h, d, &da_addr, &da);
    if (r != CUDA_SUCCESS)
        return r;
    struct sd_xfer x = {0};
    x.dst = (char *)da_addr;
    x.src = (const char *)sa_addr;
    x.width = w;
    x.height = h;
    x.depth = d;
    x.dpitch = dst->pitch;
    x.dslice = dst->pitch * dst->height;
    x.spitch = src->pitch;
    x.sslice = src->pitch * src->height;
    struct CUctx_st *extra[2] = {dctx, sctx};
    return issue(&x, da, sa, s, cur, pt, extra, peer ? 2 : 0);
}

#define SIDE2(P, s)                                                                      \
    {P->s##XInBytes, P->s##Y, 0, P->s##Pitch, P->Height, P->s##MemoryType, P->s##Host,   \
     P->s##Device, P->s##Array, 0}
#define SIDE3(P, s)                                                                      \
    {P->s##XInBytes, P->s##Y, P->s##Z, P->s##Pitch, P->s##Height, P->s##MemoryType,      \
     P->s##Host, P->s##Device, P->s##Array, P->s##LOD}

static CUresult copy_2d(const CUDA_MEMCPY2D *p, int async, CUstream h, int pt)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    struct side3 src = SIDE2(p, src), dst = SIDE2(p, dst);
    return copy_3d(&src, &dst, p->WidthInBytes, p->Height, 1, NULL, NULL, 0, async, h, pt);
}
SD_API CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D *p)
{
    SD_BODY(copy_2d(p, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *p)
{
    SD_BODY(copy_2d(p, 0, NULL, 1));
}
SD_API CUresult CUDAAPI cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *p)
{
    SD_BODY(copy_2d(p, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *p)
{
    SD_BODY(copy_2d(p, 0, NULL, 1));
}
SD_API CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream h)
{
    SD_BODY(copy_2d(p, 1, h, 0));
}
SD_API CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *p, CUstream h)
{
    SD_BODY(copy_2d(p, 1, h, 1));
}

static CUresult copy_3d_desc(const CUDA_MEMCPY3D *p, int async, CUstream h, int pt)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    struct side3 src = SIDE3(p, src), dst = SIDE3(p, dst);
    return copy_3d(&src, &dst, p->WidthInBytes, p->Height, p->Depth, NULL, NULL, 0, async, h, pt);
}
SD_API CUresult CUDAAPI cuMemcpy3D_v2(const CUDA_MEMCPY3D *p)
{
    SD_BODY(copy_3d_desc(p, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *p)
{
    SD_BODY(copy_3d_desc(p, 0, NULL, 1));
}
SD_API CUresult CUDAAPI cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p, CUstream h)
{
    SD_BODY(copy_3d_desc(p, 1, h, 0));
}
SD_API CUresult CUDAAPI cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *p, CUstream h)
{
    SD_BODY(copy_3d_desc(p, 1, h, 1));
}

static CUresult copy_3d_peer(const CUDA_MEMCPY3D_PEER *p, int async, CUstream h, int pt)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    struct side3 src = SIDE3(p, src), dst = SIDE3(p, dst);
    return copy_3d(&src, &dst, p->WidthInBytes, p->Height, p->Depth, p->srcContext,
                   p->dstContext, 1, async, h, pt);
}
SD_API CUresult CUDAAPI cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *p)
{
    SD_BODY(copy_3d_peer(p, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *p)
{
    SD_BODY(copy_3d_peer(p, 0, NULL, 1));
}
SD_API CUresult CUDAAPI cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *p, CUstream h)
{
    SD_BODY(copy_3d_peer(p, 1, h, 0));
}
SD_API CUresult CUDAAPI cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *p, CUstream h)
{
    SD_BODY(copy_3d_peer(p, 1, h, 1));
}

/* ---- memsets ---- */

static CUresult memset_any(CUdeviceptr dst, size_t pitch, unsigned value, int elem, size_t width,
                           size_t height, int async, CUstream h, int pt)
{
    struct CUstream_st *s;
    struct CUctx_st *cur = NULL;
    CUresult r = front(h, async, pt, &s, &cur);
    if (r != CUDA_SUCCESS)
        return r;
    if (width == 0 || height == 0)
        return CUDA_SUCCESS;
    if (dst % (uintptr_t)elem || (height > 1 && (pitch < width * (size_t)elem || pitch % (size_t)elem)))
        return CUDA_ERROR_INVALID_VALUE;
    struct sd_alloc *a;
    r = sd_known_operand(dst, (height - 1) * pitch + width * (size_t)elem, &a);
    if (r != CUDA_SUCCESS)
        return r;
    struct sd_op *op = sd_op_new(SD_OP_MEMSET);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->mdst = (char *)dst;
    op->mpitch = pitch;
    op->mwidth = width;
    op->mheight = height;
    op->mvalue = value;
    op->melem = elem;
    if (s) {
        sd_enqueue(s, op);
    } else {
        struct CUctx_st *touch[1] = {owner_ctx(a)};
        sd_sync_run(cur, touch, 1, pt, op);
    }
    return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n)
{
    SD_BODY(memset_any(d, n, v, 1, n, 1, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n)
{
    SD_BODY(memset_any(d, n, v, 1, n, 1, 0, NULL, 1));
}
SD_API CUresult CUDAAPI cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n)
{
    SD_BODY(memset_any(d, 2 * n, v, 2, n, 1, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n)
{
    SD_BODY(memset_any(d, 2 * n, v, 2, n, 1, 0, NULL, 1));
}
SD_API CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n)
{
    SD_BODY(memset_any(d, 4 * n, v, 4, n, 1, 0, NULL, 0));
}
SD_API CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n)
{
    SD_BODY(memset_any(d, 4 * n, v, 4, n, 1, 0, NULL, 1));
}
SD_API CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream h)
{
    SD_BODY(memset_any(d, n, v, 1, n, 1, 1, h, 0));
}
SD_API CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n,
                                             CUstream h)
{
    SD_BODY(memset_any(d, n, v, 1, n, 1, 1, h, 1));
}
SD_API CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream h)
{
    SD_BODY(memset_any(d, 2 * n, v, 2, n, 1, 1, h, 0));
}
SD_API CUresult CUDAAPI cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n,
                                              CUstream h)
{
    SD_BODY(memset_any(d, 2 * n, v, 2, n, 1, 1, h, 1));
}
SD_API CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream h)
{
    SD_BODY(memset_any(d, 4 * n, v, 4, n, 1, 1, h, 0));
}
SD_API CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n,
                                              CUstream h)
{
    SD_BODY(memset_any(d, 4 * n, v, 4, n, 1, 1, h, 1));
}
