#include "upgrade.h"

#include "driver.h"
#include "nvtx.h"
#include "peer.h"
#include "record.h"
#include "trust.h"

/* The device whose context issues a copy, or -1. Asked for cross-GPU
 * copies only (a driver call or two). */
static int exec_device(const struct copy_call *call, const struct copy_end *src,
                       const struct copy_end *dst)
{
    CUcontext ctx = driver_stream_ctx(call->stream, call->per_thread);
    if (ctx == NULL)
        return -1;
    if (ctx == src->ctx)
        return src->route.device;
    if (ctx == dst->ctx)
        return dst->route.device;
    return driver_ctx_device(ctx);
}

struct route_decision upgrade_decide(const struct copy_call *call, const struct copy_end *src,
                                     const struct copy_end *dst, size_t bytes,
                                     const struct p2pshim_config *cfg)
{
    struct route_input in = {0};
    in.src = src->route;
    in.dst = dst->route;
    in.bytes = bytes;
    in.exec_device = -1;
    in.alias_ok = call->alias_dst != NULL && call->alias_src != NULL;
    in.relay_ok = in.alias_ok && call->relay_ok && cfg->pool_relay != 0;
    bool cross = src->route.known && dst->route.known && src->route.device >= 0 &&
                 dst->route.device >= 0 && src->route.device != dst->route.device;
    if (cross && src->ctx != NULL && dst->ctx != NULL && cfg->mode != P2PSHIM_MODE_OFF) {
        in.exec_device = exec_device(call, src, dst);
        const struct copy_end *from = route_from_dst(&in) ? dst : src;
        const struct copy_end *to = from == src ? dst : src;
        peer_view(from->ctx, from->route.device, to->ctx, to->route.device, &in.link);
    }
    return route_decide(&in, cfg);
}

enum route_reason upgrade_enable(const struct route_decision *d, const struct copy_end *src,
                                 const struct copy_end *dst)
{
    const struct copy_end *from = d->enable_from == src->route.device ? src : dst;
    const struct copy_end *to = from == src ? dst : src;
    bool have_ctx = from->ctx != NULL && to->ctx != NULL;
    if (have_ctx) {
        enum route_reason trusted =
            trust_link(from->ctx, from->route.device, to->ctx, to->route.device);
        if (trusted != ROUTE_UPGRADED)
            return trusted;
    }
    uint64_t t0 = record_now_ns();
    bool ok = have_ctx &&
              peer_shim_enable(from->ctx, from->route.device, to->ctx, to->route.device);
    nvtx_mark("p2pshim: %s peer access %d->%d", ok ? "enabled" : "fallback,",
              from->route.device, to->route.device);
    if (record_enabled())
        record_event(ok ? LOG_EVENT_PEER_ENABLE : LOG_EVENT_PEER_ENABLE_FAILED, from->route.device,
                     to->route.device, record_now_ns() - t0, NULL);
    if (ok)
        return ROUTE_UPGRADED;
    return have_ctx ? ROUTE_ENABLE_FAILED : ROUTE_SHIM_ERROR;
}
