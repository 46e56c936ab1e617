#define _GNU_SOURCE
#include "copy.h"

#include "bounce/bounce.h"
#include "copy_alias.h"
#include "copy_check.h"
#include "cupti_join.h"
#include "link_life.h"
#include "nvtx.h"
#include "pool_relay.h"
#include "record.h"
#include "owner_lookup.h"
#include "route.h"
#include "shim.h"
#include "stats.h"
#include "upgrade.h"

/* ---- around the driver call ------------------------------------------ */

void copy_call_begin(const struct copy_call *call)
{
    if (call->observe.correlation != 0)
        cupti_push(call->observe.correlation);
}

void copy_call_end(const struct copy_call *call)
{
    if (link_life_pending(call))
        link_life_after_issue(call);
    if (call->observe.correlation != 0)
        cupti_pop();
    if (call->observe.nvtx_range)
        nvtx_range_pop();
}

/* ---- one copy ----------------------------------------------------------- */

/* An end of span bytes from its address: its owner, and the context that
 * owns it (named_ctx when the Peer APIs name one, else the allocation's).
 * false: the span runs past the end of a device allocation the shim knows,
 * which the driver refuses (copy_check.h). */
static bool resolve_end(CUdeviceptr ptr, CUcontext named_ctx, size_t span, struct copy_end *e)
{
    struct owner_info info;
    e->ctx = named_ctx;
    e->route.known = resolve_pointer(ptr, &info);
    if (!e->route.known)
        return true;
    e->route.kind = info.kind;
    e->route.device = info.device;
    if (e->ctx == NULL)
        e->ctx = info.ctx;
    return copy_check_info_holds(&info, (uintptr_t)ptr, span);
}

static void host_end(struct copy_end *e)
{
    e->route.known = true;
    e->route.kind = MEM_KIND_HOST_PINNED;
    e->route.device = -1;
    e->ctx = NULL;
}

static uint8_t record_kind_of(const struct route_end *e)
{
    if (!e->known || (unsigned)e->kind >= MEM_KIND_COUNT)
        return RECORD_END_UNKNOWN;
    return (uint8_t)e->kind;
}

/* CUPTI, when wanted, starts before this call's first record or event, so
 * the run log's header (written with the first of them) tells its state. */
static bool want_cupti(const struct p2pshim_config *cfg)
{
    return record_enabled() &&
           (cfg->cupti > 0 || (cfg->cupti < 0 && cfg->mode == P2PSHIM_MODE_OBSERVE));
}

/* Starts CUPTI (once, lazily: a copy is the first moment it is wanted) and
 * writes this copy's decision record. */
static void record_decision(struct copy_call *call, const struct copy_end *src,
                            const struct copy_end *dst, size_t bytes, enum record_action action,
                            enum route_reason reason)
{
    bool cupti_on = want_cupti(config_get()) && cupti_start();
    struct decision_record r;
    r.id = call->observe.record_id != 0 ? call->observe.record_id : record_next_id();
    r.t_ns = call->observe.record_id != 0 ? call->observe.record_t_ns : record_now_ns();
    call->observe.record_id = 0;
    r.bytes = bytes;
    r.stream = (uint64_t)(uintptr_t)call->issue.stream;
    r.tid = shim_thread_id();
    r.api = (uint16_t)call->issue.api;
    r.src_dev = (int8_t)(src->route.known ? src->route.device : -1);
    r.dst_dev = (int8_t)(dst->route.known ? dst->route.device : -1);
    r.src_kind = record_kind_of(&src->route);
    r.dst_kind = record_kind_of(&dst->route);
    r.action = (uint8_t)action;
    r.reason = (uint8_t)reason;
    record_add(&r);
    /* A batch is one driver call: its first element's id correlates. */
    if (call->observe.correlation == 0 && cupti_on)
        call->observe.correlation = r.id;
}

/* A relay: with CUPTI on, its decision's id is taken first, so that the
 * records of the copies the relay issues join it (cupti_join.h). */
static enum route_reason relay(struct copy_call *call, const struct route_decision *d,
                               const struct copy_end *src, const struct copy_end *dst,
                               size_t bytes)
{
    if (record_enabled() && cupti_active()) {
        call->observe.record_id = record_next_id();
        call->observe.record_t_ns = record_now_ns();
        cupti_relay_open(call->observe.record_id);
    }
    return pool_relay_apply(call, d, src, dst, bytes);
}

/* After the copy's decision: a link the shim enabled for a copy that then
 * did not ride it (the alias or the relay failed) was still used now, with
 * nothing of the shim's in flight on it: it is given back like any other
 * (idle release, the peer limit). */
static void note_link(struct copy_call *call, const struct copy_end *src,
                      const struct copy_end *dst, enum route_reason counted)
{
    if (route_reason_is_upgrade(counted)) {
        link_life_note_use(call, src->ctx, src->route.device, dst->ctx, dst->route.device);
        /* The program's stream waits for a relay's last copy: an event
         * recorded there now covers all of it (the wrapper calls nothing
         * after a relay). */
        if (call->relay.done && link_life_pending(call))
            link_life_after_issue(call);
    } else if (call->link.enabled) {
        link_life_note_idle(src->ctx, src->route.device, dst->ctx, dst->route.device);
    }
}

static void decide_and_act(struct copy_call *call, struct copy_end *src,
                           struct copy_end *dst, size_t bytes)
{
    const struct p2pshim_config *cfg = config_get();
    if (want_cupti(cfg))
        cupti_start();
    link_life_tick();
    if (call->alias.dst != NULL)
        copy_alias_fill_ctx(call, src, dst);
    struct route_decision d = upgrade_decide(call, src, dst, bytes, cfg);
    enum record_action action = RECORD_PASS;
    enum route_reason counted = d.reason;
    if (cfg->mode == P2PSHIM_MODE_OBSERVE) {
        /* The run log and the exit summary both say "would upgrade". */
        bool would = d.action != ROUTE_PASS;
        action = would ? RECORD_WOULD_UPGRADE : RECORD_PASS_OBSERVED;
        if (would)
            counted = d.reason = ROUTE_OBSERVED;
    } else if (d.action == ROUTE_ENABLE_THEN_PASS) {
        counted = d.reason = upgrade_enable(&d, src, dst);
        action = d.reason == ROUTE_UPGRADED ? RECORD_ENABLE_THEN_PASS : RECORD_PASS;
    } else if (d.action == ROUTE_ALIAS) {
        counted = d.reason = copy_alias_apply(call, &d, src, dst, bytes);
        action = d.reason == ROUTE_UPGRADED_ALIAS ? RECORD_ALIAS_REISSUE : RECORD_PASS;
    } else if (d.action == ROUTE_RELAY) {
        counted = d.reason = relay(call, &d, src, dst, bytes);
        action = d.reason == ROUTE_UPGRADED_RELAY ? RECORD_RELAY : RECORD_PASS;
    }
    stats_count(src->route.device, dst->route.device, counted, bytes);
    if (cfg->mode == P2PSHIM_MODE_UPGRADE)
        note_link(call, src, dst, counted);
    uint64_t relay_id = call->observe.record_id;
    if (record_enabled())
        record_decision(call, src, dst, bytes, action, d.reason);
    if (relay_id != 0)
        cupti_relay_close(relay_id, call->relay.done);
    if (route_reason_is_upgrade(counted) && !call->observe.nvtx_range && !call->relay.done)
        call->observe.nvtx_range = nvtx_range_push("p2pshim peer copy %d->%d %zu B", src->route.device,
                                           dst->route.device, bytes);
}

/* A host end of a copy the shim passes through: lazy host buffers there
 * are filled first (bounce.h), so the driver never faults on them. */
static void host_touch(const struct copy_end *e, CUdeviceptr ptr, size_t span, bool write,
                       bool every_byte)
{
    if (e->route.known && e->route.kind != MEM_KIND_HOST_PINNED &&
        e->route.kind != MEM_KIND_HOST_REGISTERED)
        return;
    if (!write)
        bounce_host_access((const void *)(uintptr_t)ptr, span, false);
    else if (every_byte)
        bounce_host_access((const void *)(uintptr_t)ptr, span, true);
    else
        bounce_host_keep((const void *)(uintptr_t)ptr, span);
}

void copy_consider(struct copy_call *call, CUdeviceptr dst, CUcontext dst_ctx,
                   CUdeviceptr src, CUcontext src_ctx, size_t bytes)
{
    struct copy_end s = {0}, d = {0};
    /* A call the driver refuses is the driver's alone (copy_check.h). */
    if (bytes == 0 || dst == 0 || src == 0 || !copy_check_span(dst, bytes) ||
        !copy_check_span(src, bytes) || !resolve_end(dst, dst_ctx, bytes, &d))
        return;
    bool bouncing = bounce_active();
    /* Host memory at dst: no need to look at the source, unless bouncing. */
    bool host_dst = !d.route.known && dst_ctx == NULL && !record_enabled();
    if ((!host_dst || bouncing) && !resolve_end(src, src_ctx, bytes, &s))
        return;
    if (bouncing) {
        host_touch(&d, dst, bytes, true, true);
        host_touch(&s, src, bytes, false, true);
    }
    if (host_dst) {
        stats_count(-1, -1, ROUTE_NOT_CROSS_UNKNOWN, bytes);
        return;
    }
    decide_and_act(call, &s, &d, bytes);
}

/* A host end of a unified copy: memory the driver does not know
 * (pageable) or pinned/registered host memory. */
static bool is_host(CUdeviceptr p, struct owner_info *info)
{
    if (!resolve_pointer(p, info))
        return true;
    return info->kind == MEM_KIND_HOST_PINNED || info->kind == MEM_KIND_HOST_REGISTERED;
}

/* Observe mode: a D2H or H2D of at least CONFIG_BOUNCE_MIN_FLOOR bytes
 * goes to the bounce watch (bounce/bounce.h). dev: the device end. */
static void watch_host_copy(CUdeviceptr dev, const void *host, size_t bytes, bool to_device)
{
    struct owner_info info;
    if (config_get()->mode != P2PSHIM_MODE_OBSERVE || bytes < CONFIG_BOUNCE_MIN_FLOOR ||
        !resolve_pointer(dev, &info) || info.device < 0)
        return;
    if (to_device)
        watch_h2d(host, bytes, info.device);
    else
        watch_d2h(host, bytes, info.device);
}

/* The one host<->device copy path, behind the explicit D2H/H2D wrappers
 * and the unified copies that turn out to be one: the bounce module may
 * replace the copy; in observe mode the watch sees it. */
P2PSHIM_HOT static struct copy_action host_copy(struct copy_call *call,
                                                CUdeviceptr device_ptr, const void *host_ptr,
                                                size_t bytes, bool to_device, bool sync)
{
    struct copy_action act = {false, CUDA_SUCCESS};
    if (bytes != 0 && device_ptr != 0)
        act.replaced = to_device ? bounce_h2d(call, sync, device_ptr, host_ptr, bytes, &act.rc)
                                 : bounce_d2h(call, sync, (void *)host_ptr, device_ptr, bytes,
                                              &act.rc);
    if (bytes != 0 && device_ptr != 0 && host_ptr != NULL)
        watch_host_copy(device_ptr, host_ptr, bytes, to_device);
    return act;
}

/* Counts a host<->device copy and writes its decision record (the bounce
 * action when the shim replaced it). */
P2PSHIM_HOT static void host_copy_note(struct copy_call *call, CUdeviceptr device_ptr,
                                       const void *host_ptr, size_t bytes, bool to_device,
                                       bool replaced)
{
    if (!record_enabled()) {
        stats_count(-1, -1, ROUTE_NOT_CROSS_HOST, bytes);
        return;
    }
    struct copy_end dev = {0}, host = {0};
    if (bytes == 0)
        return;
    /* A device end past its allocation: the driver refuses the copy (the
     * record would say otherwise; without a run log the count is made
     * without looking, on this hot path). */
    if (!resolve_end(device_ptr, NULL, bytes, &dev))
        return;
    resolve_end((CUdeviceptr)(uintptr_t)host_ptr, NULL, bytes, &host);
    if (!host.route.known)
        host.route.device = -1; /* pageable: the record says "unknown" */
    stats_count(-1, -1, ROUTE_NOT_CROSS_HOST, bytes);
    enum record_action action = !replaced   ? RECORD_PASS
                                : to_device ? RECORD_BOUNCE_SERVED
                                            : RECORD_BOUNCE_SNAPSHOT;
    if (to_device)
        record_decision(call, &host, &dev, bytes, action, ROUTE_NOT_CROSS_HOST);
    else
        record_decision(call, &dev, &host, bytes, action, ROUTE_NOT_CROSS_HOST);
}

struct copy_action copy_consider_linear(struct copy_call *call, CUdeviceptr dst,
                                        CUdeviceptr src, size_t bytes, bool sync)
{
    const struct p2pshim_config *cfg = config_get();
    bool observe = cfg->mode == P2PSHIM_MODE_OBSERVE;
    bool bounce = config_bounce_on(cfg);
    if (!copy_check_span(dst, bytes) || !copy_check_span(src, bytes))
        return (struct copy_action){false, CUDA_SUCCESS}; /* refused: the driver's */
    if (own_device_overlaps(dst, bytes) || own_device_overlaps(src, bytes))
        return copy_refused_own();
    if (bytes >= CONFIG_BOUNCE_MIN_FLOOR && dst != 0 && src != 0 && (observe || bounce)) {
        struct owner_info di, si;
        bool dh = is_host(dst, &di), sh = is_host(src, &si);
        bool d2h = dh && !sh && si.device >= 0, h2d = sh && !dh && di.device >= 0;
        /* A device end past its allocation: refused by the driver. */
        if ((d2h && !copy_check_info_holds(&si, src, bytes)) ||
            (h2d && !copy_check_info_holds(&di, dst, bytes)))
            return (struct copy_action){false, CUDA_SUCCESS};
        if (d2h || h2d) {
            CUdeviceptr device_ptr = h2d ? dst : src;
            const void *host_ptr = (const void *)(uintptr_t)(h2d ? src : dst);
            struct copy_action act = host_copy(call, device_ptr, host_ptr, bytes, h2d, sync);
            if (act.replaced) {
                host_copy_note(call, device_ptr, host_ptr, bytes, h2d, true);
                return act;
            }
        }
    }
    copy_consider(call, dst, NULL, src, NULL, bytes);
    return copy_relayed(call);
}

/* An end of a 2D/3D copy from its memory type and address fields, its
 * first byte offset past the address (copy_check.h has checked both). */
static void struct_end(CUmemorytype type, CUdeviceptr dev, size_t offset, size_t span,
                       CUcontext named_ctx, struct copy_end *e)
{
    switch (type) {
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
        resolve_end(dev + offset, named_ctx, span, e);
        return;
    case CU_MEMORYTYPE_HOST:
        host_end(e);
        return;
    default: /* arrays: left to the driver */
        e->route.known = false;
        e->ctx = NULL;
        return;
    }
}

/* The host side of a 2D/3D copy (HOST, or UNIFIED memory the driver
 * does not know): its bounding span from its first byte, touched before
 * the driver runs; whole: the copy covers every byte of it. */
static void struct_host(CUmemorytype type, const void *host, CUdeviceptr dev, size_t offset,
                        size_t span, bool whole, bool write)
{
    if (!bounce_active())
        return;
    uintptr_t p;
    if (type == CU_MEMORYTYPE_HOST) {
        p = (uintptr_t)host;
    } else if (type == CU_MEMORYTYPE_UNIFIED) {
        struct owner_info info;
        if (resolve_pointer(dev, &info) && info.kind != MEM_KIND_HOST_PINNED &&
            info.kind != MEM_KIND_HOST_REGISTERED)
            return;
        p = (uintptr_t)dev;
    } else {
        return;
    }
    struct copy_end e = {0};
    e.route.known = false;
    host_touch(&e, (CUdeviceptr)(p + offset), span, write, whole);
}

/* Rows of width bytes at pitch, layers of rows at layer height: every
 * byte of the span is copied. */
static bool struct_whole(size_t pitch, size_t layer, size_t width, size_t rows, size_t depth)
{
    return (rows == 1 && depth == 1) || (pitch == width && (depth == 1 || layer == rows));
}

void copy_consider_2d(struct copy_call *call, const CUDA_MEMCPY2D *c)
{
    struct copy_end s = {0}, d = {0};
    struct copy_geometry g;
    if (!copy_check_2d(c, &g))
        return;
    struct_end(c->srcMemoryType, c->srcDevice, g.src_off, g.src_span, NULL, &s);
    struct_end(c->dstMemoryType, c->dstDevice, g.dst_off, g.dst_span, NULL, &d);
    struct_host(c->srcMemoryType, c->srcHost, c->srcDevice, g.src_off, g.src_span,
                struct_whole(c->srcPitch, c->Height, c->WidthInBytes, c->Height, 1), false);
    struct_host(c->dstMemoryType, c->dstHost, c->dstDevice, g.dst_off, g.dst_span,
                struct_whole(c->dstPitch, c->Height, c->WidthInBytes, c->Height, 1), true);
    decide_and_act(call, &s, &d, g.bytes);
}

/* CUDA_MEMCPY3D and CUDA_MEMCPY3D_PEER name their fields alike; the peer
 * form adds the two contexts (sctx, dctx: NULL for the plain one). */
#define CONSIDER_3D(call, c, check, sctx, dctx)                                             \
    do {                                                                                    \
        struct copy_end s_ = {0}, d_ = {0};                                                 \
        struct copy_geometry g_;                                                            \
        if (!check((c), &g_))                                                               \
            return;                                                                         \
        struct_end((c)->srcMemoryType, (c)->srcDevice, g_.src_off, g_.src_span, sctx, &s_); \
        struct_end((c)->dstMemoryType, (c)->dstDevice, g_.dst_off, g_.dst_span, dctx, &d_); \
        struct_host((c)->srcMemoryType, (c)->srcHost, (c)->srcDevice, g_.src_off,           \
                    g_.src_span, struct_whole((c)->srcPitch, (c)->srcHeight,               \
                                              (c)->WidthInBytes, (c)->Height, (c)->Depth), \
                    false);                                                                 \
        struct_host((c)->dstMemoryType, (c)->dstHost, (c)->dstDevice, g_.dst_off,           \
                    g_.dst_span, struct_whole((c)->dstPitch, (c)->dstHeight,               \
                                              (c)->WidthInBytes, (c)->Height, (c)->Depth), \
                    true);                                                                  \
        decide_and_act(call, &s_, &d_, g_.bytes);                                           \
    } while (0)

void copy_consider_3d(struct copy_call *call, const CUDA_MEMCPY3D *c)
{
    CONSIDER_3D(call, c, copy_check_3d, NULL, NULL);
}

void copy_consider_3d_peer(struct copy_call *call, const CUDA_MEMCPY3D_PEER *c)
{
    CONSIDER_3D(call, c, copy_check_3d_peer, c->srcContext, c->dstContext);
}

/* A batch is considered only once the whole of it is one the driver
 * accepts: it queues nothing of a batch it refuses, and the shim reads no
 * element past the first one it would refuse (copy_check.h). */
void copy_consider_batch(struct copy_call *call, const struct copy_batch *b)
{
    if (!copy_check_batch(b))
        return;
    for (size_t i = 0; i < b->count; i++)
        copy_consider(call, b->dsts[i], NULL, b->srcs[i], NULL, b->sizes[i]);
}

static void operand_end(const CUmemcpy3DOperand *op, size_t span, struct copy_end *e)
{
    if (op->type == CU_MEMCPY_OPERAND_TYPE_POINTER) {
        resolve_end(op->op.ptr.ptr, NULL, span, e);
        return;
    }
    e->route.known = false;
    e->ctx = NULL;
}

/* A pointer operand's rows and layers are its whole span. */
static bool operand_whole(const CUmemcpy3DOperand *o, const CUextent3D *e)
{
    size_t row = o->op.ptr.rowLength ? o->op.ptr.rowLength : e->width;
    size_t layer = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : e->height;
    return struct_whole(row, layer, e->width, e->height, e->depth);
}

void copy_consider_3d_batch(struct copy_call *call, size_t count,
                            const CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags)
{
    if (!copy_check_3d_batch(count, ops, flags, call->issue.stream, call->issue.per_thread))
        return;
    for (size_t i = 0; i < count; i++) {
        struct copy_end s = {0}, d = {0};
        const CUDA_MEMCPY3D_BATCH_OP *op = &ops[i];
        size_t ss = copy_check_operand_span(&op->src, &op->extent);
        size_t ds = copy_check_operand_span(&op->dst, &op->extent);
        operand_end(&op->src, ss, &s);
        operand_end(&op->dst, ds, &d);
        if (bounce_active()) {
            if (op->src.type == CU_MEMCPY_OPERAND_TYPE_POINTER)
                host_touch(&s, op->src.op.ptr.ptr, ss, false, true);
            if (op->dst.type == CU_MEMCPY_OPERAND_TYPE_POINTER)
                host_touch(&d, op->dst.op.ptr.ptr, ds, true, operand_whole(&op->dst, &op->extent));
        }
        decide_and_act(call, &s, &d, copy_check_op_bytes(op));
    }
}

P2PSHIM_HOT struct copy_action copy_consider_host(struct copy_call *call, CUdeviceptr device_ptr,
                                      const void *host_ptr, size_t bytes, bool to_device,
                                      bool sync)
{
    if (!copy_check_span(device_ptr, bytes) || !copy_check_span((uintptr_t)host_ptr, bytes))
        return (struct copy_action){false, CUDA_SUCCESS}; /* refused: the driver's */
    if (own_device_overlaps(device_ptr, bytes))
        return copy_refused_own();
    unsigned adds = own_device_adds();
    struct copy_action act = host_copy(call, device_ptr, host_ptr, bytes, to_device, sync);
    /* The shim's work on the way (a snapshot ended, its first fill's
     * staging memory allocated) may have been given the address of
     * device memory the program freed: checked again, when the shim took
     * memory meanwhile, before the driver sees such a pointer. */
    if (!act.replaced && own_device_adds() != adds && own_device_overlaps(device_ptr, bytes))
        return copy_refused_own();
    host_copy_note(call, device_ptr, host_ptr, bytes, to_device, act.replaced);
    return act;
}
