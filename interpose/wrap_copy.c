/* Exported copy wrappers, one per exact driver variant (hooks.def). Each:
 * resolve the real function (never call NULL), consider the copy (maybe
 * enabling peer access), then call the original with its own arguments;
 * host<->device copies may instead return the answer of the shim's
 * replacement (bounce.h). */
#include "copy.h"
#include "hooks.h"
#include "shim.h"

#define PT true  /* per-thread variant */
#define LG false /* legacy-stream variant */

/* `act` sees `call` (the variant, its stream and per-thread flag) and
 * yields a struct copy_action: call the original, or return the answer of
 * the shim's replacement (bounce.h), which kept the variant's stream,
 * flavour (legacy or per-thread) and synchronisation. */
#define WRAP_ACT(name, params, args, stream_expr, pt, act)                    \
    P2PSHIM_EXPORT CUresult name params                                       \
    {                                                                         \
        pfn_##name real = REAL(name);                                         \
        if (real == NULL)                                                     \
            return CUDA_ERROR_NOT_INITIALIZED;                                \
        struct copy_call call_ = {HOOK_##name, (stream_expr), (pt), 0, false}; \
        struct copy_call *call = &call_;                                      \
        if (!shim_begin())                                                    \
            return real args;                                                 \
        struct copy_action act_ = act;                                        \
        shim_end();                                                           \
        if (act_.replaced)                                                    \
            return act_.rc;                                                   \
        if (call_.correlation == 0 && !call_.nvtx_range)                      \
            return real args;                                                 \
        copy_call_begin(call);                                                \
        CUresult r_ = real args;                                              \
        copy_call_end(call);                                                  \
        return r_;                                                            \
    }
/* A copy the shim only considers (maybe enabling peer access), never
 * replaces. */
#define WRAP_STREAM(name, params, args, stream_expr, pt, consider)            \
    WRAP_ACT(name, params, args, stream_expr, pt,                             \
             ((consider), (struct copy_action){false, CUDA_SUCCESS}))
#define WRAP(name, params, args, consider, pt) WRAP_STREAM(name, params, args, NULL, pt, consider)

/* ---- linear copies in the unified address space ---- */
#define WRAP_LINEAR_SYNC(name, pt)                                            \
    WRAP(name, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n),   \
         copy_consider(call, dst, NULL, src, NULL, n), pt)
#define WRAP_LINEAR_ASYNC(name, pt)                                           \
    WRAP_STREAM(name, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s), \
                (dst, src, n, s), s, pt, copy_consider(call, dst, NULL, src, NULL, n))

WRAP_LINEAR_SYNC(cuMemcpyDtoD_v2, LG)
WRAP_LINEAR_SYNC(cuMemcpyDtoD_v2_ptds, PT)
WRAP_LINEAR_ASYNC(cuMemcpyDtoDAsync_v2, LG)
WRAP_LINEAR_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, PT)

/* ---- explicit contexts ---- */
#define WRAP_PEER_SYNC(name, pt)                                              \
    WRAP(name,                                                                \
         (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,   \
          size_t n),                                                          \
         (dst, dctx, src, sctx, n), copy_consider(call, dst, dctx, src, sctx, n), pt)
#define WRAP_PEER_ASYNC(name, pt)                                             \
    WRAP_STREAM(name,                                                         \
                (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, \
                 size_t n, CUstream s),                                       \
                (dst, dctx, src, sctx, n, s), s, pt,                          \
                copy_consider(call, dst, dctx, src, sctx, n))

WRAP_PEER_SYNC(cuMemcpyPeer, LG)
WRAP_PEER_SYNC(cuMemcpyPeer_ptds, PT)
WRAP_PEER_ASYNC(cuMemcpyPeerAsync, LG)
WRAP_PEER_ASYNC(cuMemcpyPeerAsync_ptsz, PT)

/* ---- described by a struct ---- */
#define WRAP_STRUCT_SYNC(name, type, fn, pt)                                  \
    WRAP(name, (const type *c), (c), fn(call, c), pt)
#define WRAP_STRUCT_ASYNC(name, type, fn, pt)                                 \
    WRAP_STREAM(name, (const type *c, CUstream s), (c, s), s, pt, fn(call, c))

WRAP_STRUCT_SYNC(cuMemcpy2D_v2, CUDA_MEMCPY2D, copy_consider_2d, LG)
WRAP_STRUCT_SYNC(cuMemcpy2D_v2_ptds, CUDA_MEMCPY2D, copy_consider_2d, PT)
WRAP_STRUCT_SYNC(cuMemcpy2DUnaligned_v2, CUDA_MEMCPY2D, copy_consider_2d, LG)
WRAP_STRUCT_SYNC(cuMemcpy2DUnaligned_v2_ptds, CUDA_MEMCPY2D, copy_consider_2d, PT)
WRAP_STRUCT_ASYNC(cuMemcpy2DAsync_v2, CUDA_MEMCPY2D, copy_consider_2d, LG)
WRAP_STRUCT_ASYNC(cuMemcpy2DAsync_v2_ptsz, CUDA_MEMCPY2D, copy_consider_2d, PT)
WRAP_STRUCT_SYNC(cuMemcpy3D_v2, CUDA_MEMCPY3D, copy_consider_3d, LG)
WRAP_STRUCT_SYNC(cuMemcpy3D_v2_ptds, CUDA_MEMCPY3D, copy_consider_3d, PT)
WRAP_STRUCT_ASYNC(cuMemcpy3DAsync_v2, CUDA_MEMCPY3D, copy_consider_3d, LG)
WRAP_STRUCT_ASYNC(cuMemcpy3DAsync_v2_ptsz, CUDA_MEMCPY3D, copy_consider_3d, PT)
WRAP_STRUCT_SYNC(cuMemcpy3DPeer, CUDA_MEMCPY3D_PEER, copy_consider_3d_peer, LG)
WRAP_STRUCT_SYNC(cuMemcpy3DPeer_ptds, CUDA_MEMCPY3D_PEER, copy_consider_3d_peer, PT)
WRAP_STRUCT_ASYNC(cuMemcpy3DPeerAsync, CUDA_MEMCPY3D_PEER, copy_consider_3d_peer, LG)
WRAP_STRUCT_ASYNC(cuMemcpy3DPeerAsync_ptsz, CUDA_MEMCPY3D_PEER, copy_consider_3d_peer, PT)

/* ---- batches: the 12080 signature carries failIdx, 13000's does not ---- */
#define WRAP_BATCH_12080(name, pt)                                            \
    WRAP_STREAM(name,                                                                \
         (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,  \
          CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,      \
          size_t *failIdx, CUstream s),                                       \
         (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, s),  \
         s, pt, copy_consider_batch(call, dsts, srcs, sizes, count))
#define WRAP_BATCH_13000(name, pt)                                            \
    WRAP_STREAM(name,                                                                \
         (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,  \
          CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,      \
          CUstream s),                                                        \
         (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, s),           \
         s, pt, copy_consider_batch(call, dsts, srcs, sizes, count))

WRAP_BATCH_12080(cuMemcpyBatchAsync, LG)
WRAP_BATCH_12080(cuMemcpyBatchAsync_ptsz, PT)
WRAP_BATCH_13000(cuMemcpyBatchAsync_v2, LG)
WRAP_BATCH_13000(cuMemcpyBatchAsync_v2_ptsz, PT)

#define WRAP_3DBATCH_12080(name, pt)                                          \
    WRAP_STREAM(name,                                                         \
                (size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *failIdx,      \
                 unsigned long long flags, CUstream s),                       \
                (n, ops, failIdx, flags, s), s, pt, copy_consider_3d_batch(call, n, ops))
#define WRAP_3DBATCH_13000(name, pt)                                          \
    WRAP_STREAM(name,                                                         \
                (size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags, \
                 CUstream s),                                                 \
                (n, ops, flags, s), s, pt, copy_consider_3d_batch(call, n, ops))

WRAP_3DBATCH_12080(cuMemcpy3DBatchAsync, LG)
WRAP_3DBATCH_12080(cuMemcpy3DBatchAsync_ptsz, PT)
WRAP_3DBATCH_13000(cuMemcpy3DBatchAsync_v2, LG)
WRAP_3DBATCH_13000(cuMemcpy3DBatchAsync_v2_ptsz, PT)

/* ---- host <-> device: the shim may run a replacement (bounce.h) ---- */
#define SYNC true
#define ASYNC false
#define HTOD(name, pt)                                                        \
    WRAP_ACT(name, (CUdeviceptr d, const void *h, size_t n), (d, h, n), NULL, pt, \
              copy_consider_host(call, d, h, n, true, SYNC))
#define DTOH(name, pt)                                                        \
    WRAP_ACT(name, (void *h, CUdeviceptr d, size_t n), (h, d, n), NULL, pt,  \
              copy_consider_host(call, d, h, n, false, SYNC))
#define HTOD_ASYNC(name, pt)                                                  \
    WRAP_ACT(name, (CUdeviceptr d, const void *h, size_t n, CUstream s),     \
              (d, h, n, s), s, pt, copy_consider_host(call, d, h, n, true, ASYNC))
#define DTOH_ASYNC(name, pt)                                                  \
    WRAP_ACT(name, (void *h, CUdeviceptr d, size_t n, CUstream s),           \
              (h, d, n, s), s, pt, copy_consider_host(call, d, h, n, false, ASYNC))

/* Unified copies: one of them may be a host bounce too. */
#define UNIFIED(name, pt)                                                     \
    WRAP_ACT(name, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n), NULL, pt, \
              copy_consider_linear(call, dst, src, n, SYNC))
#define UNIFIED_ASYNC(name, pt)                                               \
    WRAP_ACT(name, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s), \
              (dst, src, n, s), s, pt, copy_consider_linear(call, dst, src, n, ASYNC))

UNIFIED(cuMemcpy, LG)
UNIFIED(cuMemcpy_ptds, PT)
UNIFIED_ASYNC(cuMemcpyAsync, LG)
UNIFIED_ASYNC(cuMemcpyAsync_ptsz, PT)

HTOD(cuMemcpyHtoD_v2, LG)
HTOD(cuMemcpyHtoD_v2_ptds, PT)
DTOH(cuMemcpyDtoH_v2, LG)
DTOH(cuMemcpyDtoH_v2_ptds, PT)
HTOD_ASYNC(cuMemcpyHtoDAsync_v2, LG)
HTOD_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, PT)
DTOH_ASYNC(cuMemcpyDtoHAsync_v2, LG)
DTOH_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, PT)
