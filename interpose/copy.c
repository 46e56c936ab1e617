#include "copy.h"

#include "driver.h"
#include "log.h"
#include "peer.h"
#include "resolve.h"
#include "route.h"
#include "shim.h"
#include "stats.h"

bool shim_begin(void)
{
    if (shim_reentered())
        return false;
    shim_init();
    shim_guard_enter();
    return true;
}

void shim_end(void)
{
    shim_guard_leave();
}

/* One end: its owner, and the context that owns it (the Peer APIs name it;
 * otherwise the allocation's). */
struct end {
    struct route_end route;
    CUcontext ctx;
};

static void resolve_end(CUdeviceptr ptr, CUcontext named_ctx, struct end *e)
{
    struct owner_info info;
    e->ctx = named_ctx;
    e->route.known = resolve_pointer(ptr, &info);
    if (!e->route.known)
        return;
    e->route.kind = info.kind;
    e->route.device = info.device;
    if (e->ctx == NULL)
        e->ctx = info.ctx;
}

static void host_end(struct end *e)
{
    e->route.known = true;
    e->route.kind = MEM_KIND_HOST_PINNED;
    e->route.device = -1;
    e->ctx = NULL;
}

/* The device whose context issues a copy on stream, or -1. Asked for
 * cross-GPU copies only (a driver call or two). */
static int exec_device(CUstream stream, bool per_thread, const struct end *src,
                       const struct end *dst)
{
    CUcontext ctx = driver_stream_ctx(stream, per_thread);
    if (ctx == NULL)
        return -1;
    if (ctx == src->ctx)
        return src->route.device;
    if (ctx == dst->ctx)
        return dst->route.device;
    return driver_ctx_device(ctx);
}

static void decide_and_act(struct end *src, struct end *dst, size_t bytes,
                           CUstream stream, bool per_thread)
{
    const struct p2pshim_config *cfg = shim_config();
    struct route_input in = {0};
    in.src = src->route;
    in.dst = dst->route;
    in.bytes = bytes;
    in.exec_device = -1;
    bool cross = src->route.known && dst->route.known && src->route.device >= 0 &&
                 dst->route.device >= 0 && src->route.device != dst->route.device;
    bool have_ctx = src->ctx != NULL && dst->ctx != NULL;
    struct end *from = src, *to = dst;
    if (cross && have_ctx && cfg->mode != P2PSHIM_MODE_OFF) {
        /* The needed direction starts at the issuing device (route.h). */
        in.exec_device = exec_device(stream, per_thread, src, dst);
        if (in.exec_device == dst->route.device) {
            from = dst;
            to = src;
        }
        peer_view(from->ctx, from->route.device, to->ctx, to->route.device, &in.link);
    }

    struct route_decision d = route_decide(&in, cfg);
    if (d.action == ROUTE_ENABLE_THEN_PASS) {
        if (!have_ctx)
            d.reason = ROUTE_SHIM_ERROR;
        else if (!peer_shim_enable(from->ctx, from->route.device, to->ctx, to->route.device))
            d.reason = ROUTE_ENABLE_FAILED;
    }
    stats_count(src->route.device, dst->route.device, d.reason, bytes);
}

void copy_consider(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                   CUcontext src_ctx, size_t bytes, CUstream stream, bool per_thread)
{
    struct end s = {0}, d = {0};
    if (bytes == 0 || dst == 0 || src == 0)
        return;
    resolve_end(dst, dst_ctx, &d);
    if (!d.route.known && dst_ctx == NULL) {
        stats_count(-1, -1, ROUTE_NOT_CROSS_UNKNOWN, bytes);
        return; /* host memory: no need to look at the source */
    }
    resolve_end(src, src_ctx, &s);
    decide_and_act(&s, &d, bytes, stream, per_thread);
}

/* An end of a 2D/3D copy from its memory type and address fields. */
static void struct_end(CUmemorytype type, CUdeviceptr dev, size_t offset,
                       CUcontext named_ctx, struct end *e)
{
    switch (type) {
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
        if (dev == 0) {
            e->route.known = false;
            e->ctx = NULL;
            return;
        }
        resolve_end(dev + offset, named_ctx, e);
        return;
    case CU_MEMORYTYPE_HOST:
        host_end(e);
        return;
    default: /* arrays and anything unknown: left to the driver */
        e->route.known = false;
        e->ctx = NULL;
        return;
    }
}

void copy_consider_2d(const CUDA_MEMCPY2D *c, CUstream stream, bool per_thread)
{
    struct end s = {0}, d = {0};
    if (c == NULL || c->WidthInBytes == 0 || c->Height == 0)
        return;
    struct_end(c->srcMemoryType, c->srcDevice, c->srcY * c->srcPitch + c->srcXInBytes,
               NULL, &s);
    struct_end(c->dstMemoryType, c->dstDevice, c->dstY * c->dstPitch + c->dstXInBytes,
               NULL, &d);
    decide_and_act(&s, &d, c->WidthInBytes * c->Height, stream, per_thread);
}

static size_t offset_3d(size_t x, size_t y, size_t z, size_t pitch, size_t height)
{
    return z * height * pitch + y * pitch + x;
}

void copy_consider_3d(const CUDA_MEMCPY3D *c, CUstream stream, bool per_thread)
{
    struct end s = {0}, d = {0};
    if (c == NULL || c->WidthInBytes == 0 || c->Height == 0 || c->Depth == 0)
        return;
    struct_end(c->srcMemoryType, c->srcDevice,
               offset_3d(c->srcXInBytes, c->srcY, c->srcZ, c->srcPitch, c->srcHeight),
               NULL, &s);
    struct_end(c->dstMemoryType, c->dstDevice,
               offset_3d(c->dstXInBytes, c->dstY, c->dstZ, c->dstPitch, c->dstHeight),
               NULL, &d);
    decide_and_act(&s, &d, c->WidthInBytes * c->Height * c->Depth, stream, per_thread);
}

void copy_consider_3d_peer(const CUDA_MEMCPY3D_PEER *c, CUstream stream, bool per_thread)
{
    struct end s = {0}, d = {0};
    if (c == NULL || c->WidthInBytes == 0 || c->Height == 0 || c->Depth == 0)
        return;
    struct_end(c->srcMemoryType, c->srcDevice,
               offset_3d(c->srcXInBytes, c->srcY, c->srcZ, c->srcPitch, c->srcHeight),
               c->srcContext, &s);
    struct_end(c->dstMemoryType, c->dstDevice,
               offset_3d(c->dstXInBytes, c->dstY, c->dstZ, c->dstPitch, c->dstHeight),
               c->dstContext, &d);
    decide_and_act(&s, &d, c->WidthInBytes * c->Height * c->Depth, stream, per_thread);
}

void copy_consider_batch(const CUdeviceptr *dsts, const CUdeviceptr *srcs,
                         const size_t *sizes, size_t count, CUstream stream,
                         bool per_thread)
{
    if (dsts == NULL || srcs == NULL || sizes == NULL)
        return;
    for (size_t i = 0; i < count; i++)
        copy_consider(dsts[i], NULL, srcs[i], NULL, sizes[i], stream, per_thread);
}

static void operand_end(const CUmemcpy3DOperand *op, struct end *e)
{
    if (op->type == CU_MEMCPY_OPERAND_TYPE_POINTER && op->op.ptr.ptr != 0) {
        resolve_end(op->op.ptr.ptr, NULL, e);
        return;
    }
    e->route.known = false;
    e->ctx = NULL;
}

void copy_consider_3d_batch(size_t count, const CUDA_MEMCPY3D_BATCH_OP *ops,
                            CUstream stream, bool per_thread)
{
    if (ops == NULL)
        return;
    for (size_t i = 0; i < count; i++) {
        struct end s = {0}, d = {0};
        const CUDA_MEMCPY3D_BATCH_OP *op = &ops[i];
        size_t bytes = op->extent.width * op->extent.height * op->extent.depth;
        if (bytes == 0)
            continue;
        operand_end(&op->src, &s);
        operand_end(&op->dst, &d);
        decide_and_act(&s, &d, bytes, stream, per_thread);
    }
}

void copy_count_host(size_t bytes)
{
    stats_count(-1, -1, ROUTE_NOT_CROSS_HOST, bytes);
}
