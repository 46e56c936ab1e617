/* Exported copy wrappers, one per exact driver variant (hooks.def). Each:
 * resolve the real function (never call NULL), consider the copy (maybe
 * enabling peer access), then call the original with its own arguments;
 * host<->device copies may instead return the answer of the shim's
 * replacement (bounce.h). */
#include "copy.h"
#include "copy_alias.h"
#include "copy_check.h"
#include "hooks.h"
#include "link_life.h"
#include "pool_relay.h"
#include "shim.h"

#define SYNC true
#define ASYNC false

/* `act` sees `call` (the variant, its stream and per-thread flag) and
 * yields a struct copy_action: call the original, or return the answer of
 * the shim's replacement (bounce.h), which kept the variant's stream,
 * flavour (legacy or per-thread) and synchronisation. */
#define WRAP_ACT(name, params, args, stream_expr, act)                        \
    WRAP_ACT_ATTR(, name, params, args, stream_expr, act)
#define WRAP_ACT_ATTR(attr, name, params, args, stream_expr, act)             \
    P2PSHIM_EXPORT attr CUresult name params                                  \
    {                                                                         \
        pfn_##name real = REAL(name);                                         \
        if (real == NULL)                                                     \
            return CUDA_ERROR_NOT_INITIALIZED;                                \
        struct copy_call call_ = {                                            \
            .issue = {.api = HOOK_##name, .stream = (stream_expr),            \
                      .per_thread = HOOK_PER_THREAD_##name},                  \
            .relay = {.rc = CUDA_SUCCESS}};                                   \
        struct copy_call *call = &call_;                                      \
        if (!shim_begin())                                                    \
            return real args;                                                 \
        bool quiet_ = shim_quiet_begin(false); /* the driver's call too */    \
        struct copy_action act_ = act;                                        \
        shim_end();                                                           \
        CUresult r_ = act_.rc;                                                \
        if (!act_.replaced) {                                                 \
            bool plain_ = call_.observe.correlation == 0 && !call_.observe.nvtx_range &&      \
                          !link_life_pending(call);                           \
            if (!plain_)                                                      \
                copy_call_begin(call);                                        \
            r_ = real args;                                                   \
            if (!plain_)                                                      \
                copy_call_end(call);                                          \
        }                                                                     \
        shim_quiet_end(quiet_);                                               \
        return r_;                                                            \
    }
/* A copy the shim only considers (maybe enabling peer access), never
 * replaces. */
#define WRAP_STREAM(name, params, args, stream_expr, consider)                \
    WRAP_ACT(name, params, args, stream_expr,                                 \
             ((consider), (struct copy_action){false, CUDA_SUCCESS}))
#define WRAP(name, params, args, consider) WRAP_STREAM(name, params, args, NULL, consider)

/* ---- linear copies in the unified address space ---- */
/* Linear copies may be issued with the aliases of mapped ends: the copy
 * path may replace dst and src (copy_alias.h) before `real args` reads
 * them; or carried by the shim's pool relay (pool_relay.h), whose answer
 * the wrapper then returns. */
#define CONSIDER_LINEAR(dctx, sctx, sync)                                     \
    (own_device_overlaps(dst, n) || own_device_overlaps(src, n)                \
         ? copy_refused_own()                                                  \
         : (copy_consider(copy_relay_allow(call, &dst, &src, sync), dst, dctx, src, sctx, n), \
            copy_relayed(call)))
#define WRAP_LINEAR_SYNC(name)                                                \
    WRAP_ACT(name, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n), NULL, \
             CONSIDER_LINEAR(NULL, NULL, SYNC))
#define WRAP_LINEAR_ASYNC(name)                                               \
    WRAP_ACT(name, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s),  \
             (dst, src, n, s), s, CONSIDER_LINEAR(NULL, NULL, ASYNC))

WRAP_LINEAR_SYNC(cuMemcpyDtoD_v2)
WRAP_LINEAR_SYNC(cuMemcpyDtoD_v2_ptds)
WRAP_LINEAR_ASYNC(cuMemcpyDtoDAsync_v2)
WRAP_LINEAR_ASYNC(cuMemcpyDtoDAsync_v2_ptsz)

/* ---- explicit contexts ---- */
#define WRAP_PEER_SYNC(name)                                                  \
    WRAP_ACT(name,                                                            \
             (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, \
              size_t n),                                                      \
             (dst, dctx, src, sctx, n), NULL, CONSIDER_LINEAR(dctx, sctx, SYNC))
#define WRAP_PEER_ASYNC(name)                                                 \
    WRAP_ACT(name,                                                            \
             (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, \
              size_t n, CUstream s),                                          \
             (dst, dctx, src, sctx, n, s), s, CONSIDER_LINEAR(dctx, sctx, ASYNC))

WRAP_PEER_SYNC(cuMemcpyPeer)
WRAP_PEER_SYNC(cuMemcpyPeer_ptds)
WRAP_PEER_ASYNC(cuMemcpyPeerAsync)
WRAP_PEER_ASYNC(cuMemcpyPeerAsync_ptsz)

/* ---- described by a struct ---- */
/* 2D and 3D copies may be issued with the aliases of mapped ends: the copy
 * path works on the wrapper's copy of the program's descriptor, `local`
 * (a compound literal of the wrapper's body, alive until it returns), and
 * the wrapper passes local to the driver when the path replaced its
 * addresses (copy_alias.h); the program's descriptor is never written. */
#define STRUCT_CONSIDER(kind, type)                                           \
    static const type *consider_##kind(struct copy_call *call, const type *c, type *local) \
    {                                                                         \
        copy_consider_##kind(copy_alias_allow_##kind(call, c, local), c);     \
        return call->alias.done ? local : c;                                     \
    }
STRUCT_CONSIDER(2d, CUDA_MEMCPY2D)
STRUCT_CONSIDER(3d, CUDA_MEMCPY3D)
STRUCT_CONSIDER(3d_peer, CUDA_MEMCPY3D_PEER)

#define WRAP_STRUCT_SYNC(name, type, kind)                                    \
    WRAP(name, (const type *c), (c), (c = consider_##kind(call, c, &(type){0})))
#define WRAP_STRUCT_ASYNC(name, type, kind)                                   \
    WRAP_STREAM(name, (const type *c, CUstream s), (c, s), s,                 \
                (c = consider_##kind(call, c, &(type){0})))

WRAP_STRUCT_SYNC(cuMemcpy2D_v2, CUDA_MEMCPY2D, 2d)
WRAP_STRUCT_SYNC(cuMemcpy2D_v2_ptds, CUDA_MEMCPY2D, 2d)
WRAP_STRUCT_SYNC(cuMemcpy2DUnaligned_v2, CUDA_MEMCPY2D, 2d)
WRAP_STRUCT_SYNC(cuMemcpy2DUnaligned_v2_ptds, CUDA_MEMCPY2D, 2d)
WRAP_STRUCT_ASYNC(cuMemcpy2DAsync_v2, CUDA_MEMCPY2D, 2d)
WRAP_STRUCT_ASYNC(cuMemcpy2DAsync_v2_ptsz, CUDA_MEMCPY2D, 2d)
WRAP_STRUCT_SYNC(cuMemcpy3D_v2, CUDA_MEMCPY3D, 3d)
WRAP_STRUCT_SYNC(cuMemcpy3D_v2_ptds, CUDA_MEMCPY3D, 3d)
WRAP_STRUCT_ASYNC(cuMemcpy3DAsync_v2, CUDA_MEMCPY3D, 3d)
WRAP_STRUCT_ASYNC(cuMemcpy3DAsync_v2_ptsz, CUDA_MEMCPY3D, 3d)
WRAP_STRUCT_SYNC(cuMemcpy3DPeer, CUDA_MEMCPY3D_PEER, 3d_peer)
WRAP_STRUCT_SYNC(cuMemcpy3DPeer_ptds, CUDA_MEMCPY3D_PEER, 3d_peer)
WRAP_STRUCT_ASYNC(cuMemcpy3DPeerAsync, CUDA_MEMCPY3D_PEER, 3d_peer)
WRAP_STRUCT_ASYNC(cuMemcpy3DPeerAsync_ptsz, CUDA_MEMCPY3D_PEER, 3d_peer)

/* ---- batches: the 12080 signature carries failIdx, 13000's does not ---- */
#define CONSIDER_BATCH                                                        \
    copy_consider_batch(call, &(struct copy_batch){dsts, srcs, sizes, count, attrs, \
                                                   attrsIdxs, numAttrs, s,    \
                                                   call->issue.per_thread})
#define WRAP_BATCH_12080(name)                                                \
    WRAP_STREAM(name,                                                         \
         (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,  \
          CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,      \
          size_t *failIdx, CUstream s),                                       \
         (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, s),  \
         s, CONSIDER_BATCH)
#define WRAP_BATCH_13000(name)                                                \
    WRAP_STREAM(name,                                                         \
         (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,  \
          CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,      \
          CUstream s),                                                        \
         (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, s),           \
         s, CONSIDER_BATCH)

WRAP_BATCH_12080(cuMemcpyBatchAsync)
WRAP_BATCH_12080(cuMemcpyBatchAsync_ptsz)
WRAP_BATCH_13000(cuMemcpyBatchAsync_v2)
WRAP_BATCH_13000(cuMemcpyBatchAsync_v2_ptsz)

#define WRAP_3DBATCH_12080(name)                                              \
    WRAP_STREAM(name,                                                         \
                (size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *failIdx,      \
                 unsigned long long flags, CUstream s),                       \
                (n, ops, failIdx, flags, s), s, copy_consider_3d_batch(call, n, ops, flags))
#define WRAP_3DBATCH_13000(name)                                              \
    WRAP_STREAM(name,                                                         \
                (size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags, \
                 CUstream s),                                                 \
                (n, ops, flags, s), s, copy_consider_3d_batch(call, n, ops, flags))

WRAP_3DBATCH_12080(cuMemcpy3DBatchAsync)
WRAP_3DBATCH_12080(cuMemcpy3DBatchAsync_ptsz)
WRAP_3DBATCH_13000(cuMemcpy3DBatchAsync_v2)
WRAP_3DBATCH_13000(cuMemcpy3DBatchAsync_v2_ptsz)

/* ---- host <-> device: the shim may run a replacement (bounce.h) ---- */
#define HTOD(name)                                                            \
    WRAP_ACT_ATTR(P2PSHIM_HOT, name, (CUdeviceptr d, const void *h, size_t n),  \
                  (d, h, n), NULL, copy_consider_host(call, d, h, n, true, SYNC))
#define DTOH(name)                                                            \
    WRAP_ACT_ATTR(P2PSHIM_HOT, name, (void *h, CUdeviceptr d, size_t n),        \
                  (h, d, n), NULL, copy_consider_host(call, d, h, n, false, SYNC))
#define HTOD_ASYNC(name)                                                      \
    WRAP_ACT_ATTR(P2PSHIM_HOT, name,                                          \
                  (CUdeviceptr d, const void *h, size_t n, CUstream s), (d, h, n, s), s, \
                  copy_consider_host(call, d, h, n, true, ASYNC))
#define DTOH_ASYNC(name)                                                      \
    WRAP_ACT_ATTR(P2PSHIM_HOT, name, (void *h, CUdeviceptr d, size_t n, CUstream s), \
                  (h, d, n, s), s, copy_consider_host(call, d, h, n, false, ASYNC))

/* Unified copies: one of them may be a host bounce too. */
#define UNIFIED(name)                                                         \
    WRAP_ACT(name, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n), NULL, \
              copy_consider_linear(copy_relay_allow(call, &dst, &src, SYNC), dst, src, n, SYNC))
#define UNIFIED_ASYNC(name)                                                   \
    WRAP_ACT(name, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s),  \
              (dst, src, n, s), s,                                            \
              copy_consider_linear(copy_relay_allow(call, &dst, &src, ASYNC), dst, src, n, ASYNC))

UNIFIED(cuMemcpy)
UNIFIED(cuMemcpy_ptds)
UNIFIED_ASYNC(cuMemcpyAsync)
UNIFIED_ASYNC(cuMemcpyAsync_ptsz)

HTOD(cuMemcpyHtoD_v2)
HTOD(cuMemcpyHtoD_v2_ptds)
DTOH(cuMemcpyDtoH_v2)
DTOH(cuMemcpyDtoH_v2_ptds)
HTOD_ASYNC(cuMemcpyHtoDAsync_v2)
HTOD_ASYNC(cuMemcpyHtoDAsync_v2_ptsz)
DTOH_ASYNC(cuMemcpyDtoHAsync_v2)
DTOH_ASYNC(cuMemcpyDtoHAsync_v2_ptsz)
