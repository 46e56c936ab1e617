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

/* The link between from_ctx (on from_dev) and to_ctx (on to_dev), seen
 * from the direction from -> to (route.h: the needed direction). */
void peer_view(CUcontext from_ctx, int from_dev, CUcontext to_ctx, int to_dev,
               struct route_link *out);

/* Enables from_ctx -> to_ctx for the shim, the current context restored.
 * If that direction fails and no direction between the two is enabled, the
 * opposite one is tried once. Failures are remembered per direction and
 * never retried. Returns true when a direction is enabled afterwards. */
bool peer_shim_enable(CUcontext from_ctx, int from_dev, CUcontext to_ctx, int to_dev);

/* Gives back the shim's direction from_ctx -> to_ctx (disabled with
 * from_ctx pushed, the current context restored) when the shim alone holds
 * it: never a direction the program enabled. The caller has made sure no
 * copy of the shim's on it is in flight (link_life.h). Returns true when
 * the direction was the shim's alone and is now disabled. */
bool peer_shim_release(CUcontext from_ctx, CUcontext to_ctx);
/* A check of a link around the shim's first enable of it (trust.h):
 * staged(arg) runs while no direction between the two contexts is
 * enabled, linked(arg) right after from -> to is; each returns false to
 * refuse the link. */
struct peer_check {
    bool (*staged)(void *arg);
    bool (*linked)(void *arg);
    void *arg;
};

enum peer_check_result {
    PEER_CHECK_ENABLED,  /* checked and enabled for the shim, as peer_shim_enable */
    PEER_CHECK_REFUSED,  /* a check said no: left as it was, nothing remembered */
    PEER_CHECK_NOT_RUN,  /* a direction between the two is already enabled or
                          * failed, or the enable failed: peer_shim_enable decides */
};

/* peer_shim_enable's first enable between two contexts, with check run
 * around it under the enable lock, so that the program's own enable or
 * disable cannot come in between. A refused direction this call enabled is
 * disabled again before the lock is let go: no copy has used it. */
enum peer_check_result peer_shim_enable_checked(CUcontext from_ctx, int from_dev,
                                                CUcontext to_ctx, int to_dev,
                                                const struct peer_check *check);

/* The program's cuCtxEnablePeerAccess / cuCtxDisablePeerAccess, through
 * the real function given. */
CUresult peer_app_enable(CUcontext peer, unsigned int flags,
                         CUresult (*real)(CUcontext, unsigned int));
CUresult peer_app_disable(CUcontext peer, CUresult (*real)(CUcontext));

/* Drops all state for links from or to a device (a primary context reset
 * destroys them) or a context (destroyed). */
void peer_forget_device(int dev);
void peer_forget_ctx(CUcontext ctx);

/* pthread_atfork handlers (as ownership_fork_*). */
/* Makes this thread's view cache now (the shim's start), not at its
 * first copy. */
void peer_warm_thread(void);
void peer_fork_prepare(void);
void peer_fork_release(void);

#endif
