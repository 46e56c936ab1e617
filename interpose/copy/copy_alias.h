/* The copy path's side of mapped memory's aliases (vmm_alias.h): a linear,
 * 2D or 3D cross-GPU copy with a mapped end is issued by its own wrapper,
 * with its own variant, stream and synchronisation, the mapped ends'
 * addresses replaced by their aliases, which the two devices may reach (a
 * 2D/3D copy's in a copy of its descriptor). */
#ifndef P2PSHIM_COPY_ALIAS_H
#define P2PSHIM_COPY_ALIAS_H

#include "copy.h"
#include "route.h"
#include "upgrade.h"

/* The wrapper's dst and src arguments may be replaced (copy.h). */
static inline struct copy_call *copy_alias_allow(struct copy_call *call, CUdeviceptr *dst,
                                                 CUdeviceptr *src)
{
    call->alias.dst = dst;
    call->alias.src = src;
    return call;
}

/* A 2D/3D copy may be issued with aliases: the program's descriptor c is
 * copied to local (the program's is never changed) and the call's
 * addresses are local's srcDevice and dstDevice, each end's first byte and
 * span (copy.h) read from the geometry; the wrapper passes local to the
 * driver when call->alias.done, c otherwise. Left as it was for a NULL
 * descriptor or a geometry the driver refuses. */
struct copy_call *copy_alias_allow_2d(struct copy_call *call, const CUDA_MEMCPY2D *c,
                                      CUDA_MEMCPY2D *local);
struct copy_call *copy_alias_allow_3d(struct copy_call *call, const CUDA_MEMCPY3D *c,
                                      CUDA_MEMCPY3D *local);
struct copy_call *copy_alias_allow_3d_peer(struct copy_call *call, const CUDA_MEMCPY3D_PEER *c,
                                           CUDA_MEMCPY3D_PEER *local);

/* A mapped end belongs to no context: where the call did not name one, the
 * context issuing the copy stands in when it is on the end's device, else
 * that device's primary context when it is active (NULL otherwise: the
 * copy then passes as it would). */
void copy_alias_fill_ctx(const struct copy_call *call, struct copy_end *src,
                         struct copy_end *dst);

/* Carries out a ROUTE_ALIAS decision d for a copy of bytes: the link
 * enabled when d says so (upgrade_enable: the trust check first), then
 * each mapped end's alias made or widened for the two devices, and the
 * call's addresses replaced (the whole span each end touches must lie in
 * one run of mappings end to end). Returns the copy's reason: ROUTE_UPGRADED_ALIAS
 * when the addresses were replaced, else why not (the enable's reason, or
 * ROUTE_ALIAS_FAILED), the addresses left as they were. */
enum route_reason copy_alias_apply(struct copy_call *call, const struct route_decision *d,
                                   const struct copy_end *src, const struct copy_end *dst,
                                   size_t bytes);

#endif
