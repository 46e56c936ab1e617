/* The copy path: describe a copy's ends, resolve their owners, read the
 * link, decide (route.h), enable when that is the decision, count. The
 * wrapper then calls the original function with its original arguments,
 * so the copy keeps its stream, its ordering and its completion exactly:
 * the shim changes only whether the driver may use the peer link.
 *
 * Arguments are never trusted: anything malformed (NULL descriptors, size
 * 0, unknown pointers) is left for the driver to answer as it would. */
#ifndef P2PSHIM_COPY_H
#define P2PSHIM_COPY_H

#include <stdbool.h>
#include <stddef.h>

#include "shim_cuda.h"

/* Enters the shim for one hooked call: false when this thread is already
 * inside it (then the wrapper only passes through). */
bool shim_begin(void);
void shim_end(void);

/* A linear copy between two unified addresses. dst_ctx/src_ctx: the
 * contexts named by the Peer APIs, else NULL. per_thread: the caller is a
 * _ptds/_ptsz variant (how stream NULL is read). */
void copy_consider(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                   CUcontext src_ctx, size_t bytes, CUstream stream, bool per_thread);

void copy_consider_2d(const CUDA_MEMCPY2D *c, CUstream stream, bool per_thread);
void copy_consider_3d(const CUDA_MEMCPY3D *c, CUstream stream, bool per_thread);
void copy_consider_3d_peer(const CUDA_MEMCPY3D_PEER *c, CUstream stream, bool per_thread);
void copy_consider_batch(const CUdeviceptr *dsts, const CUdeviceptr *srcs,
                         const size_t *sizes, size_t count, CUstream stream,
                         bool per_thread);
void copy_consider_3d_batch(size_t count, const CUDA_MEMCPY3D_BATCH_OP *ops,
                            CUstream stream, bool per_thread);

/* A host<->device copy: passed through, counted as local traffic. */
void copy_count_host(size_t bytes);

#endif
