#include "pl_copies.h"

#include <string.h>

/* ---- linear ---- */
static CUresult i_memcpy(const struct pl_copy_api *a, const struct pl_xfer *x, CUstream s)
{
    (void)s;
    return a->per_thread ? cuMemcpy_ptds(x->dst, x->src, x->n)
                         : cuMemcpy(x->dst, x->src, x->n);
}

static CUresult i_memcpy_async(const struct pl_copy_api *a, const struct pl_xfer *x,
                               CUstream s)
{
    return a->per_thread ? cuMemcpyAsync_ptsz(x->dst, x->src, x->n, s)
                         : cuMemcpyAsync(x->dst, x->src, x->n, s);
}

static CUresult i_dtod(const struct pl_copy_api *a, const struct pl_xfer *x, CUstream s)
{
    (void)s;
    return a->per_thread ? cuMemcpyDtoD_v2_ptds(x->dst, x->src, x->n)
                         : cuMemcpyDtoD_v2(x->dst, x->src, x->n);
}

static CUresult i_dtod_async(const struct pl_copy_api *a, const struct pl_xfer *x,
                             CUstream s)
{
    return a->per_thread ? cuMemcpyDtoDAsync_v2_ptsz(x->dst, x->src, x->n, s)
                         : cuMemcpyDtoDAsync_v2(x->dst, x->src, x->n, s);
}

static CUresult i_peer(const struct pl_copy_api *a, const struct pl_xfer *x, CUstream s)
{
    (void)s;
    return a->per_thread ? cuMemcpyPeer_ptds(x->dst, x->dctx, x->src, x->sctx, x->n)
                         : cuMemcpyPeer(x->dst, x->dctx, x->src, x->sctx, x->n);
}

static CUresult i_peer_async(const struct pl_copy_api *a, const struct pl_xfer *x,
                             CUstream s)
{
    return a->per_thread ? cuMemcpyPeerAsync_ptsz(x->dst, x->dctx, x->src, x->sctx, x->n, s)
                         : cuMemcpyPeerAsync(x->dst, x->dctx, x->src, x->sctx, x->n, s);
}

/* ---- 2D: rows of PL_ROW bytes ---- */
static void desc_2d(const struct pl_xfer *x, CUDA_MEMCPY2D *c)
{
    memset(c, 0, sizeof *c);
    c->srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c->srcDevice = x->src;
    c->srcPitch = PL_ROW;
    c->dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c->dstDevice = x->dst;
    c->dstPitch = PL_ROW;
    c->WidthInBytes = PL_ROW;
    c->Height = x->n / PL_ROW;
}

static CUresult i_2d(const struct pl_copy_api *a, const struct pl_xfer *x, CUstream s)
{
    CUDA_MEMCPY2D c;
    (void)s;
    desc_2d(x, &c);
    return a->per_thread ? cuMemcpy2D_v2_ptds(&c) : cuMemcpy2D_v2(&c);
}

static CUresult i_2d_unaligned(const struct pl_copy_api *a, const struct pl_xfer *x,
                               CUstream s)
{
    CUDA_MEMCPY2D c;
    (void)s;
    desc_2d(x, &c);
    return a->per_thread ? cuMemcpy2DUnaligned_v2_ptds(&c) : cuMemcpy2DUnaligned_v2(&c);
}

static CUresult i_2d_async(const struct pl_copy_api *a, const struct pl_xfer *x, CUstream s)
{
    CUDA_MEMCPY2D c;
    desc_2d(x, &c);
    return a->per_thread ? cuMemcpy2DAsync_v2_ptsz(&c, s) : cuMemcpy2DAsync_v2(&c, s);
}

/* ---- 3D: PL_ROWS_3D rows of PL_ROW bytes per slice ---- */
static void desc_3d(const struct pl_xfer *x, CUDA_MEMCPY3D *c)
{
    memset(c, 0, sizeof *c);
    c->srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c->srcDevice = x->src;
    c->srcPitch = PL_ROW;
    c->srcHeight = PL_ROWS_3D;
    c->dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c->dstDevice = x->dst;
    c->dstPitch = PL_ROW;
    c->dstHeight = PL_ROWS_3D;
    c->WidthInBytes = PL_ROW;
    c->Height = PL_ROWS_3D;
    c->Depth = x->n / (PL_ROW * PL_ROWS_3D);
}

static CUresult i_3d(const struct pl_copy_api *a, const struct pl_xfer *x, CUstream s)
{
    CUDA_MEMCPY3D c;
    (void)s;
    desc_3d(x, &c);
    return a->per_thread ? cuMemcpy3D_v2_ptds(&c) : cuMemcpy3D_v2(&c);
}

static CUresult i_3d_async(const struct pl_copy_api *a, const struct pl_xfer *x, CUstream s)
{
    CUDA_MEMCPY3D c;
    desc_3d(x, &c);
    return a->per_thread ? cuMemcpy3DAsync_v2_ptsz(&c, s) : cuMemcpy3DAsync_v2(&c, s);
}

static void desc_3d_peer(const struct pl_xfer *x, CUDA_MEMCPY3D_PEER *c)
{
    memset(c, 0, sizeof *c);
    c->srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c->srcDevice = x->src;
    c->srcContext = x->sctx;
    c->srcPitch = PL_ROW;
    c->srcHeight = PL_ROWS_3D;
    c->dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c->dstDevice = x->dst;
    c->dstContext = x->dctx;
    c->dstPitch = PL_ROW;
    c->dstHeight = PL_ROWS_3D;
    c->WidthInBytes = PL_ROW;
    c->Height = PL_ROWS_3D;
    c->Depth = x->n / (PL_ROW * PL_ROWS_3D);
}

static CUresult i_3d_peer(const struct pl_copy_api *a, const struct pl_xfer *x, CUstream s)
{
    CUDA_MEMCPY3D_PEER c;
    (void)s;
    desc_3d_peer(x, &c);
    return a->per_thread ? cuMemcpy3DPeer_ptds(&c) : cuMemcpy3DPeer(&c);
}

static CUresult i_3d_peer_async(const struct pl_copy_api *a, const struct pl_xfer *x,
                                CUstream s)
{
    CUDA_MEMCPY3D_PEER c;
    desc_3d_peer(x, &c);
    return a->per_thread ? cuMemcpy3DPeerAsync_ptsz(&c, s) : cuMemcpy3DPeerAsync(&c, s);
}

/* ---- batches: two halves, one attribute ---- */
typedef CUresult (*batch12080_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
                                  CUmemcpyAttributes *, size_t *, size_t, size_t *,
                                  CUstream);
typedef CUresult (*batch13000_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
                                  CUmemcpyAttributes *, size_t *, size_t, CUstream);
typedef CUresult (*batch3d12080_fn)(size_t, CUDA_MEMCPY3D_BATCH_OP *, size_t *,
                                    unsigned long long, CUstream);
typedef CUresult (*batch3d13000_fn)(size_t, CUDA_MEMCPY3D_BATCH_OP *, unsigned long long,
                                    CUstream);

struct halves {
    CUdeviceptr dsts[2], srcs[2];
    size_t sizes[2];
    CUmemcpyAttributes attr;
    size_t attr_idx[1];
};

static void split(const struct pl_xfer *x, struct halves *h)
{
    memset(h, 0, sizeof *h);
    size_t half = x->n / 2;
    h->dsts[0] = x->dst;
    h->srcs[0] = x->src;
    h->dsts[1] = x->dst + half;
    h->srcs[1] = x->src + half;
    h->sizes[0] = h->sizes[1] = half;
    h->attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    h->attr_idx[0] = 0;
}

static CUresult i_batch_12080(const struct pl_copy_api *a, const struct pl_xfer *x,
                              CUstream s)
{
    batch12080_fn fn = (batch12080_fn)pl_driver_sym(a->name);
    struct halves h;
    size_t fail_idx = 12345;
    if (fn == NULL)
        return PL_NOT_SUPPORTED;
    split(x, &h);
    CUresult r = fn(h.dsts, h.srcs, h.sizes, 2, &h.attr, h.attr_idx, 1, &fail_idx, s);
    PL_EXPECT(r != CUDA_SUCCESS || fail_idx == (size_t)-1 || fail_idx == 12345,
              "%s: failIdx %zu after success", a->name, fail_idx);
    return r;
}

static CUresult i_batch_13000(const struct pl_copy_api *a, const struct pl_xfer *x,
                              CUstream s)
{
    batch13000_fn fn = (batch13000_fn)pl_driver_sym(a->name);
    struct halves h;
    if (fn == NULL)
        return PL_NOT_SUPPORTED;
    split(x, &h);
    return fn(h.dsts, h.srcs, h.sizes, 2, &h.attr, h.attr_idx, 1, s);
}

static void batch_ops(const struct pl_xfer *x, CUDA_MEMCPY3D_BATCH_OP ops[2])
{
    size_t half = x->n / 2;
    memset(ops, 0, 2 * sizeof ops[0]);
    for (int i = 0; i < 2; i++) {
        ops[i].src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
        ops[i].src.op.ptr.ptr = x->src + (size_t)i * half;
        ops[i].src.op.ptr.rowLength = half;
        ops[i].src.op.ptr.layerHeight = 1;
        ops[i].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
        ops[i].dst.op.ptr.ptr = x->dst + (size_t)i * half;
        ops[i].dst.op.ptr.rowLength = half;
        ops[i].dst.op.ptr.layerHeight = 1;
        ops[i].extent.width = half;
        ops[i].extent.height = 1;
        ops[i].extent.depth = 1;
        ops[i].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    }
}

static CUresult i_3dbatch_12080(const struct pl_copy_api *a, const struct pl_xfer *x,
                                CUstream s)
{
    batch3d12080_fn fn = (batch3d12080_fn)pl_driver_sym(a->name);
    CUDA_MEMCPY3D_BATCH_OP ops[2];
    size_t fail_idx = 0;
    if (fn == NULL)
        return PL_NOT_SUPPORTED;
    batch_ops(x, ops);
    return fn(2, ops, &fail_idx, 0, s);
}

static CUresult i_3dbatch_13000(const struct pl_copy_api *a, const struct pl_xfer *x,
                                CUstream s)
{
    batch3d13000_fn fn = (batch3d13000_fn)pl_driver_sym(a->name);
    CUDA_MEMCPY3D_BATCH_OP ops[2];
    if (fn == NULL)
        return PL_NOT_SUPPORTED;
    batch_ops(x, ops);
    return fn(2, ops, 0, s);
}

#define SYNC(name, fn) {name, 0, 0, 1, 0, 0, fn}, {name "_ptds", 1, 0, 1, 0, 0, fn}
#define ASYNC(name, fn) {name, 0, 1, 1, 0, 0, fn}, {name "_ptsz", 1, 1, 1, 0, 0, fn}
#define BATCH(name, fn) {name, 0, 1, 2, 1, 1, fn}, {name "_ptsz", 1, 1, 2, 1, 0, fn}

const struct pl_copy_api pl_copy_apis[] = {
    SYNC("cuMemcpy", i_memcpy),
    ASYNC("cuMemcpyAsync", i_memcpy_async),
    SYNC("cuMemcpyPeer", i_peer),
    ASYNC("cuMemcpyPeerAsync", i_peer_async),
    SYNC("cuMemcpyDtoD_v2", i_dtod),
    ASYNC("cuMemcpyDtoDAsync_v2", i_dtod_async),
    SYNC("cuMemcpy2D_v2", i_2d),
    SYNC("cuMemcpy2DUnaligned_v2", i_2d_unaligned),
    ASYNC("cuMemcpy2DAsync_v2", i_2d_async),
    SYNC("cuMemcpy3D_v2", i_3d),
    ASYNC("cuMemcpy3DAsync_v2", i_3d_async),
    SYNC("cuMemcpy3DPeer", i_3d_peer),
    ASYNC("cuMemcpy3DPeerAsync", i_3d_peer_async),
    BATCH("cuMemcpyBatchAsync", i_batch_12080),
    BATCH("cuMemcpyBatchAsync_v2", i_batch_13000),
    BATCH("cuMemcpy3DBatchAsync", i_3dbatch_12080),
    BATCH("cuMemcpy3DBatchAsync_v2", i_3dbatch_13000),
};
const int pl_copy_api_count = (int)(sizeof pl_copy_apis / sizeof pl_copy_apis[0]);

void pl_copy_sync(const struct pl_copy_api *api, CUstream stream)
{
    if (api->per_thread)
        PL_OK(cuStreamSynchronize_ptsz(stream));
    else
        PL_OK(cuStreamSynchronize(stream));
}
