/* Exported wrappers of GPU work that may write host memory behind its page
 * tables: kernels and graphs (through any mapped pointer: the shim cannot
 * tell which), memsets and stream memory operations (on pinned memory).
 * The shim's only interest: an eager bounce snapshot over pinned memory
 * vouches for its pages only while no such work was issued after its D2H
 * (bounce.h, bounce_gpu_work); memsets name their range, so only the
 * snapshots they overlap end. Each wrapper then calls the original with
 * its own arguments; with no snapshot alive the cost is one relaxed load. */
#include "bounce/bounce.h"
#include "hooks.h"
#include "own_device.h"
#include "shim.h"

#define WRAP_WORK(name, params, args)                                         \
    P2PSHIM_EXPORT CUresult name params                                       \
    {                                                                         \
        pfn_##name real = REAL(name);                                         \
        if (real == NULL)                                                     \
            return CUDA_ERROR_NOT_INITIALIZED;                                \
        SHIM_QUIET_SCOPE(); /* the driver's call: no signal (shim.h) */       \
        bounce_gpu_work();                                                    \
        return real args;                                                     \
    }

#define LAUNCH_PARAMS                                                         \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, \
     unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params, \
     void **extra)
#define LAUNCH_ARGS (f, gx, gy, gz, bx, by, bz, shmem, s, params, extra)
WRAP_WORK(cuLaunchKernel, LAUNCH_PARAMS, LAUNCH_ARGS)
WRAP_WORK(cuLaunchKernel_ptsz, LAUNCH_PARAMS, LAUNCH_ARGS)

#define LAUNCH_EX_PARAMS (const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
#define LAUNCH_EX_ARGS (config, f, params, extra)
WRAP_WORK(cuLaunchKernelEx, LAUNCH_EX_PARAMS, LAUNCH_EX_ARGS)
WRAP_WORK(cuLaunchKernelEx_ptsz, LAUNCH_EX_PARAMS, LAUNCH_EX_ARGS)

#define COOP_PARAMS                                                           \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, \
     unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params)
#define COOP_ARGS (f, gx, gy, gz, bx, by, bz, shmem, s, params)
WRAP_WORK(cuLaunchCooperativeKernel, COOP_PARAMS, COOP_ARGS)
WRAP_WORK(cuLaunchCooperativeKernel_ptsz, COOP_PARAMS, COOP_ARGS)

WRAP_WORK(cuGraphLaunch, (CUgraphExec g, CUstream s), (g, s))
WRAP_WORK(cuGraphLaunch_ptsz, (CUgraphExec g, CUstream s), (g, s))

#define WV32_PARAMS (CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned int flags)
#define WV64_PARAMS (CUstream s, CUdeviceptr addr, cuuint64_t value, unsigned int flags)
#define WV_ARGS (s, addr, value, flags)
WRAP_WORK(cuStreamWriteValue32, WV32_PARAMS, WV_ARGS)
WRAP_WORK(cuStreamWriteValue32_ptsz, WV32_PARAMS, WV_ARGS)
WRAP_WORK(cuStreamWriteValue32_v2, WV32_PARAMS, WV_ARGS)
WRAP_WORK(cuStreamWriteValue32_v2_ptsz, WV32_PARAMS, WV_ARGS)
WRAP_WORK(cuStreamWriteValue64, WV64_PARAMS, WV_ARGS)
WRAP_WORK(cuStreamWriteValue64_ptsz, WV64_PARAMS, WV_ARGS)
WRAP_WORK(cuStreamWriteValue64_v2, WV64_PARAMS, WV_ARGS)
WRAP_WORK(cuStreamWriteValue64_v2_ptsz, WV64_PARAMS, WV_ARGS)

#define BATCH_PARAMS                                                          \
    (CUstream s, unsigned int count, CUstreamBatchMemOpParams *ops, unsigned int flags)
#define BATCH_ARGS (s, count, ops, flags)
WRAP_WORK(cuStreamBatchMemOp, BATCH_PARAMS, BATCH_ARGS)
WRAP_WORK(cuStreamBatchMemOp_ptsz, BATCH_PARAMS, BATCH_ARGS)
WRAP_WORK(cuStreamBatchMemOp_v2, BATCH_PARAMS, BATCH_ARGS)
WRAP_WORK(cuStreamBatchMemOp_v2_ptsz, BATCH_PARAMS, BATCH_ARGS)

/* Memsets: the snapshots over [dst, dst + span) end (a memset of device
 * memory touches none); one through a stale pointer into the shim's own
 * device memory gets the driver's answer to a freed one (own_device.h). */
#define WRAP_MEMSET(name, params, args, span)                                 \
    P2PSHIM_EXPORT CUresult name params                                       \
    {                                                                         \
        pfn_##name real = REAL(name);                                         \
        if (real == NULL)                                                     \
            return CUDA_ERROR_NOT_INITIALIZED;                                \
        if ((span) != 0 && own_device_overlaps(dst, (span)))                  \
            return CUDA_ERROR_INVALID_VALUE;                                  \
        SHIM_QUIET_SCOPE(); /* the driver's call: no signal (shim.h) */       \
        if (bounce_active() && shim_begin()) {                                \
            bounce_gpu_writes(dst, (span));                                   \
            shim_end();                                                       \
        }                                                                     \
        return real args;                                                     \
    }

#define MEMSETS(bits, type)                                                   \
    WRAP_MEMSET(cuMemsetD##bits##_v2, (CUdeviceptr dst, type v, size_t n), (dst, v, n), \
                n * sizeof(type))                                             \
    WRAP_MEMSET(cuMemsetD##bits##_v2_ptds, (CUdeviceptr dst, type v, size_t n), (dst, v, n), \
                n * sizeof(type))                                             \
    WRAP_MEMSET(cuMemsetD##bits##Async, (CUdeviceptr dst, type v, size_t n, CUstream s), \
                (dst, v, n, s), n * sizeof(type))                             \
    WRAP_MEMSET(cuMemsetD##bits##Async_ptsz, (CUdeviceptr dst, type v, size_t n, CUstream s), \
                (dst, v, n, s), n * sizeof(type))                             \
    WRAP_MEMSET(cuMemsetD2D##bits##_v2,                                       \
                (CUdeviceptr dst, size_t pitch, type v, size_t w, size_t h),  \
                (dst, pitch, v, w, h), h ? (h - 1) * pitch + w * sizeof(type) : 0) \
    WRAP_MEMSET(cuMemsetD2D##bits##_v2_ptds,                                  \
                (CUdeviceptr dst, size_t pitch, type v, size_t w, size_t h),  \
                (dst, pitch, v, w, h), h ? (h - 1) * pitch + w * sizeof(type) : 0) \
    WRAP_MEMSET(cuMemsetD2D##bits##Async,                                     \
                (CUdeviceptr dst, size_t pitch, type v, size_t w, size_t h, CUstream s), \
                (dst, pitch, v, w, h, s), h ? (h - 1) * pitch + w * sizeof(type) : 0) \
    WRAP_MEMSET(cuMemsetD2D##bits##Async_ptsz,                                \
                (CUdeviceptr dst, size_t pitch, type v, size_t w, size_t h, CUstream s), \
                (dst, pitch, v, w, h, s), h ? (h - 1) * pitch + w * sizeof(type) : 0)

MEMSETS(8, unsigned char)
MEMSETS(16, unsigned short)
MEMSETS(32, unsigned int)
