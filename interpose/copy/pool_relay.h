/* Cross-GPU copies of pool memory (cuMemAllocAsync, cuMemAllocFromPoolAsync)
 * carried over the peer link through buffers of the shim's own
 * (docs/POOLS.md). Context peer access does not reach pool memory, and
 * the shim never grants access on the program's pool; ordinary device
 * memory of the shim's is reached. So a linear copy with a pool end is
 * replaced by, per chunk: a local copy of the pool source into a slot on
 * its device, a peer copy to a slot on the destination's device (or
 * straight to the destination when it is ordinary device memory), and a
 * local copy out of that slot into the pool destination. The chunks run
 * pipelined on the shim's streams (relay_scratch.h), fenced with events
 * against the program's stream: they start after the program's earlier
 * work there, and its later work waits for all of them; a synchronous
 * variant returns once they are done. */
#ifndef P2PSHIM_POOL_RELAY_H
#define P2PSHIM_POOL_RELAY_H

#include <stdbool.h>

#include "copy.h"
#include "route.h"
#include "upgrade.h"

/* The wrapper of a linear copy lets the shim replace it (the addresses
 * also for aliases, copy_alias.h); sync: a synchronous variant. */
static inline struct copy_call *copy_relay_allow(struct copy_call *call, CUdeviceptr *dst,
                                                 CUdeviceptr *src, bool sync)
{
    call->alias.dst = dst;
    call->alias.src = src;
    call->relay.ok = true;
    call->issue.sync = sync;
    return call;
}

/* What the wrapper does after the copy path: return the relay's answer,
 * or call the original. */
static inline struct copy_action copy_relayed(const struct copy_call *call)
{
    struct copy_action a = {call->relay.done, call->relay.rc};
    return a;
}

/* Carries out a ROUTE_RELAY decision d for the call's copy of bytes
 * (*call->alias.src to *call->alias.dst): the link enabled when d says so
 * (upgrade_enable: the trust check first), then the relay issued.
 * Returns the copy's reason: ROUTE_UPGRADED_RELAY when the relay took the
 * copy (call->relay.done set, call->relay.rc the program's answer); else why
 * not, and the original call goes to the driver as it would: the enable's
 * reason, ROUTE_POOL for a stream being captured into a graph, or
 * ROUTE_RELAY_FAILED (no buffers, a range past its allocation, the
 * program's stream in a third context, or a driver call refused; when
 * that happened midway, the relay's work is waited for first and the
 * original call writes every byte again). */
enum route_reason pool_relay_apply(struct copy_call *call, const struct route_decision *d,
                                   const struct copy_end *src, const struct copy_end *dst,
                                   size_t bytes);

#endif
