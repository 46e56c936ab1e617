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
    CUcontext ctx = driver_stream_ctx(call->issue.stream, call->issue.per_thread);
    if (ctx == NULL)
        return -1;
    if (ctx == src->ctx)
        return src->route.device;
    if (ctx == dst->ctx)
        return dst->route.device;
    return driver_ctx_device(ctx);
}

/* Whether the pool holding ptr grants device `other` the access a copy
 * engine of that device needs (read for a source, read-write for a
 * destination): the program's own grant. Asked of the driver each time
 * (two calls, against a copy of at least the relay minimum): a grant can
 * change at any time, and the program's answers must stay its own. true
 * for memory of no pool (an ordinary end needs no grant). */
static bool pool_grants(CUdeviceptr ptr, const struct copy_end *end, int other, bool write)
{
    const struct driver_api *api = driver_api();
    if (end->route.kind != MEM_KIND_POOL)
        return true;
    CUmemoryPool pool = NULL;
    CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE;
    void *data = &pool;
    if (api->pointer_get_attributes == NULL || api->mem_pool_get_access == NULL ||
        api->pointer_get_attributes(1, &attr, &data, ptr) != CUDA_SUCCESS || pool == NULL)
        return false;
    CUmemLocation where = {CU_MEM_LOCATION_TYPE_DEVICE, other};
    CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return api->mem_pool_get_access(&flags, pool, &where) == CUDA_SUCCESS &&
           (flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ||
            (!write && flags == CU_MEM_ACCESS_FLAGS_PROT_READ));
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
    in.alias_ok = call->alias.dst != NULL && call->alias.src != NULL;
    in.relay_ok = in.alias_ok && call->relay.ok && cfg->pool_relay != 0;
    bool cross = src->route.known && dst->route.known && src->route.device >= 0 &&
                 dst->route.device >= 0 && src->route.device != dst->route.device;
    if (cross && src->ctx != NULL && dst->ctx != NULL && cfg->mode != P2PSHIM_MODE_OFF) {
        in.exec_device = exec_device(call, src, dst);
        const struct copy_end *from = route_from_dst(&in) ? dst : src;
        const struct copy_end *to = from == src ? dst : src;
        peer_view(from->ctx, from->route.device, to->ctx, to->route.device, &in.link);
    }
    struct route_decision d = route_decide(&in, cfg);
    /* The program's grants are asked only of a copy the relay would take. */
    if (d.action == ROUTE_RELAY &&
        pool_grants(*call->alias.src, src, dst->route.device, false) &&
        pool_grants(*call->alias.dst, dst, src->route.device, true)) {
        in.pool_granted = true;
        d = route_decide(&in, cfg);
    }
    return d;
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
