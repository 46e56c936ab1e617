/* Links the shim can trust (docs/TRUST.md): before the shim first enables
 * peer access between two devices, it checks the link once — NVML's P2P
 * status where NVML is there, a data check through the link both ways,
 * peer against staged speed — and keeps the verdict for the process and,
 * keyed by the devices, driver, IOMMU state and boot, in a cache file.
 * A link that fails is never enabled by the shim: its copies go the
 * driver's staged way, with reason "link-untrusted" or "link-slower". */
#ifndef P2PSHIM_TRUST_H
#define P2PSHIM_TRUST_H

#include "route.h"
#include "shim_cuda.h"

/* Called by the one enable path (upgrade.c) before enabling from -> to.
 * Returns ROUTE_UPGRADED when the link may be used (checked now and then
 * enabled for the shim, as peer.h's peer_shim_enable would; trusted
 * before; or P2PSHIM_TRUST=skip), else ROUTE_LINK_UNTRUSTED or
 * ROUTE_LINK_SLOWER. The first call for a pair does the check, holding a
 * lock of its own (other pairs' first copies wait; later calls read one
 * atomic). */
enum route_reason trust_link(CUcontext from_ctx, int from_dev, CUcontext to_ctx, int to_dev);

#endif
