/* Peer links: the capability matrix (cached), the per-direction state
 * between contexts and who enabled it (the program, the shim, or both),
 * the shim's lazy enabling, failure memory, and the program's virtual view.
 *
 * The program's enable and disable calls get the answers they would get
 * without the shim: a direction only the shim enabled looks disabled to the
 * program (its enable succeeds, its disable says not enabled); a direction
 * the program enabled and then disables stays enabled for the shim when the
 * shim also uses it (disabling under in-flight copies has broken other
 * projects). All enable and disable calls, the program's and the shim's,
 * are serialised by one lock held across the driver call; they are rare.
 * The state the copy path reads has its own short lock. */
#ifndef P2PSHIM_PEER_H
#define P2PSHIM_PEER_H

#include "route.h"
#include "shim_cuda.h"

/* The link between (a_ctx on a_dev) and (b_ctx on b_dev), both ways. */
void peer_view(CUcontext a_ctx, int a_dev, CUcontext b_ctx, int b_dev,
               struct route_link *out);

/* Enables one direction for the shim: from_ctx may then access to_ctx.
 * The current context is restored. If that direction fails, the other is
 * tried (one serves the copy engines both ways). Returns true when a
 * direction between the two is enabled afterwards; on failure the pair is
 * remembered as failed and never retried. */
bool peer_shim_enable(CUcontext from_ctx, int from_dev, CUcontext to_ctx, int to_dev);

/* The program's cuCtxEnablePeerAccess / cuCtxDisablePeerAccess, through
 * the real function given. */
CUresult peer_app_enable(CUcontext peer, unsigned int flags,
                         CUresult (*real)(CUcontext, unsigned int));
CUresult peer_app_disable(CUcontext peer, CUresult (*real)(CUcontext));

/* Drops all state for links from or to a device (a primary context reset
 * destroys them) or a context (destroyed). */
void peer_forget_device(int dev);
void peer_forget_ctx(CUcontext ctx);

#endif
