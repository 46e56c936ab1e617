/* The upgrade of one cross-GPU copy, the one implementation behind every
 * path that may enable peer access for a copy: the copy wrappers
 * (copy.c) and the bounce module's H2D served from snapshots. Read the
 * link in the needed direction (route_from_dst), decide (route_decide),
 * enable (with its run-log event, NVTX mark, counters and failure memory). */
#ifndef P2PSHIM_UPGRADE_H
#define P2PSHIM_UPGRADE_H

#include <stddef.h>

#include "config.h"
#include "copy_call.h"
#include "route.h"
#include "shim_cuda.h"

/* One end of a copy: its owner as the route sees it, and the context that
 * owns it (the Peer APIs name it; otherwise the allocation's; NULL when
 * unknown). */
struct copy_end {
    struct route_end route;
    CUcontext ctx;
};

/* The decision for a copy of bytes from src to dst issued by call. The
 * issuing device and the link are asked for only when the copy is
 * cross-GPU, both contexts are known and the mode is not off. */
struct route_decision upgrade_decide(const struct copy_call *call, const struct copy_end *src,
                                     const struct copy_end *dst, size_t bytes,
                                     const struct p2pshim_config *cfg);

/* Enables the direction of d (a ROUTE_ENABLE_THEN_PASS decision for src
 * and dst): the peer link (peer.h: counted, failures remembered), a
 * "peer-enable" or "peer-enable-failed" run-log event and an NVTX mark.
 * The link is checked first, once per pair (trust.h). Returns the copy's
 * reason afterwards: ROUTE_UPGRADED when a direction serves,
 * ROUTE_LINK_UNTRUSTED or ROUTE_LINK_SLOWER when the link failed its check
 * (nothing enabled), ROUTE_ENABLE_FAILED when none could be enabled,
 * ROUTE_SHIM_ERROR when an end's context is unknown. */
enum route_reason upgrade_enable(const struct route_decision *d, const struct copy_end *src,
                                 const struct copy_end *dst);

#endif
