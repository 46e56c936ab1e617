/* The copy path: describe a copy's ends, resolve their owners, read the
 * link, decide (route.h), enable when that is the decision, count, record.
 * The wrapper then calls the original function with its original
 * arguments, so the copy keeps its stream, its ordering and its completion
 * exactly: the shim changes only whether the driver may use the peer link.
 *
 * Arguments are never trusted: anything malformed (NULL descriptors, size
 * 0, unknown pointers) is left for the driver to answer as it would, and a
 * call the driver refuses (copy_check.h) is neither enabled for, counted
 * nor recorded. */
#ifndef P2PSHIM_COPY_H
#define P2PSHIM_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "copy_call.h"
#include "own_device.h"
#include "shim_cuda.h"

/* One hooked call: struct copy_call (copy_call.h). What the wrapper must
 * do around the driver call: copy_call_begin/_end. */

/* What a wrapper does after considering a host<->device copy: call the
 * original, or return the answer of the shim's replacement, which ran
 * with the original's synchronisation (a sync variant complete on return,
 * an async one ordered in its stream, each in its own legacy or
 * per-thread flavour). */
struct copy_action {
    bool replaced;
    CUresult rc; /* when replaced: the program's answer */
};

/* The answer to a call through a pointer into the shim's own device
 * memory (own_device.h): the driver's to a freed pointer, without calling
 * it, counting or recording the call. */
static inline struct copy_action copy_refused_own(void)
{
    return (struct copy_action){true, CUDA_ERROR_INVALID_VALUE};
}

/* A linear copy between two unified addresses. dst_ctx/src_ctx: the
 * contexts named by the Peer APIs, else NULL. */
void copy_consider(struct copy_call *call, CUdeviceptr dst, CUcontext dst_ctx,
                   CUdeviceptr src, CUcontext src_ctx, size_t bytes);
void copy_consider_2d(struct copy_call *call, const CUDA_MEMCPY2D *c);
void copy_consider_3d(struct copy_call *call, const CUDA_MEMCPY3D *c);
void copy_consider_3d_peer(struct copy_call *call, const CUDA_MEMCPY3D_PEER *c);
/* Batches: considered only when the driver would accept the whole call
 * (copy_check.h), each element then as one copy. */
struct copy_batch;
void copy_consider_batch(struct copy_call *call, const struct copy_batch *b);
void copy_consider_3d_batch(struct copy_call *call, size_t count,
                            const CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags);

/* A host<->device copy: counted and recorded; a D2H may become a device
 * snapshot and an H2D a copy from one (bounce.h). to_device: host-to-
 * device. sync: a synchronous variant. */
struct copy_action copy_consider_host(struct copy_call *call, CUdeviceptr device_ptr,
                                      const void *host_ptr, size_t bytes, bool to_device,
                                      bool sync);

/* cuMemcpy / cuMemcpyAsync (unified addresses): a device-to-host or
 * host-to-device copy among them may be bounced like the explicit ones
 * (cudart and PyTorch reach cuMemcpyAsync for cudaMemcpyDefault); every
 * other copy is copy_consider's. */
struct copy_action copy_consider_linear(struct copy_call *call, CUdeviceptr dst,
                                        CUdeviceptr src, size_t bytes, bool sync);

/* Around the driver call: CUPTI correlation and the NVTX range. */
void copy_call_begin(const struct copy_call *call);
void copy_call_end(const struct copy_call *call);

#endif
