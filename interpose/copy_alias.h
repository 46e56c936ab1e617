/* The copy path's side of mapped memory's aliases (vmm_alias.h): a linear
 * cross-GPU copy with a mapped end is issued by its own wrapper, with its
 * own variant, stream and synchronisation, the mapped ends' addresses
 * replaced by their aliases, which the two devices may reach. */
#ifndef P2PSHIM_COPY_ALIAS_H
#define P2PSHIM_COPY_ALIAS_H

#include "copy.h"
#include "route.h"
#include "upgrade.h"

/* The wrapper's dst and src arguments may be replaced (copy.h). */
static inline struct copy_call *copy_alias_allow(struct copy_call *call, CUdeviceptr *dst,
                                                 CUdeviceptr *src)
{
    call->alias_dst = dst;
    call->alias_src = src;
    return call;
}

/* A mapped end belongs to no context: where the call did not name one, the
 * context issuing the copy stands in when it is on the end's device, else
 * that device's primary context when it is active (NULL otherwise: the
 * copy then passes as it would). */
void copy_alias_fill_ctx(const struct copy_call *call, struct copy_end *src,
                         struct copy_end *dst);

/* Carries out a ROUTE_ALIAS decision d for a copy of bytes: the link
 * enabled when d says so (upgrade_enable: the trust check first), then
 * each mapped end's alias made or widened for the two devices, and the
 * call's addresses replaced. Returns the copy's reason: ROUTE_UPGRADED_ALIAS
 * when the addresses were replaced, else why not (the enable's reason, or
 * ROUTE_ALIAS_FAILED), the addresses left as they were. */
enum route_reason copy_alias_apply(struct copy_call *call, const struct route_decision *d,
                                   const struct copy_end *src, const struct copy_end *dst,
                                   size_t bytes);

#endif
