#include "hot.h"
#include "copy_check.h"

#include "owner_lookup.h"

P2PSHIM_HOT bool copy_check_info_holds(const struct owner_info *info, uintptr_t p, size_t n)
{
    /* Only device memory from cuMemAlloc is one allocation whose end the
     * driver holds every copy to; a range the driver did not say comes
     * back as one byte (owner_lookup.c), which says nothing of the end. */
    if (info->kind != MEM_KIND_DEVICE || (info->from_driver && info->size <= 1) ||
        p < info->base || p - info->base >= info->size)
        return true;
    return n <= info->size - (p - info->base);
}

P2PSHIM_HOT bool copy_check_holds(CUdeviceptr p, size_t n)
{
    struct owner_info info;
    if (n == 0 || !resolve_pointer(p, &info))
        return true;
    return copy_check_info_holds(&info, (uintptr_t)p, n);
}

/* ---- 2D and 3D descriptors ---------------------------------------------- */

/* One side of a CUDA_MEMCPY2D/3D(_PEER), as the descriptors name it. */
struct side {
    CUmemorytype type;
    const void *host;
    CUdeviceptr dev;
    size_t x, y, z, pitch, height, lod;
};

/* A side of w x h x d bytes: its first byte past its address field and
 * its span (0 and 0 for an array, whose bounds the driver checks). false:
 * the driver refuses it: a LOD other than 0, no address to copy at, a
 * pitch below the width where there is more than one row, a layer height
 * below the height where there is more than one layer (cuda.h asks more,
 * room for the x and y offsets too; the shim refuses only what the driver
 * surely does), sums that wrap the address space. */
static bool side_geometry(const struct side *s, size_t w, size_t h, size_t d, size_t *off,
                          size_t *span)
{
    *off = *span = 0;
    uintptr_t base;
    if (s->lod != 0)
        return false;
    switch (s->type) {
    case CU_MEMORYTYPE_ARRAY:
        return true;
    case CU_MEMORYTYPE_HOST:
        base = (uintptr_t)s->host;
        break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
        base = (uintptr_t)s->dev;
        break;
    default:
        return false;
    }
    size_t slice, zo, yo, ls, lr;
    if (base == 0 || ((h > 1 || d > 1) && s->pitch < w) || (d > 1 && s->height < h))
        return false;
    if (__builtin_mul_overflow(s->pitch, s->height, &slice) ||
        __builtin_mul_overflow(s->z, slice, &zo) || __builtin_mul_overflow(s->y, s->pitch, &yo) ||
        __builtin_add_overflow(zo, yo, off) || __builtin_add_overflow(*off, s->x, off) ||
        __builtin_mul_overflow(d - 1, slice, &ls) || __builtin_mul_overflow(h - 1, s->pitch, &lr) ||
        __builtin_add_overflow(ls, lr, span) || __builtin_add_overflow(*span, w, span))
        return false;
    if (!copy_check_span(base, *off) || !copy_check_span(base + *off, *span))
        return false;
    return s->type == CU_MEMORYTYPE_HOST || copy_check_holds(base + *off, *span);
}

static bool geometry(const struct side *src, const struct side *dst, size_t w, size_t h,
                     size_t d, struct copy_geometry *g)
{
    if (w == 0 || h == 0 || d == 0 || __builtin_mul_overflow(w, h, &g->bytes) ||
        __builtin_mul_overflow(g->bytes, d, &g->bytes))
        return false;
    return side_geometry(src, w, h, d, &g->src_off, &g->src_span) &&
           side_geometry(dst, w, h, d, &g->dst_off, &g->dst_span);
}

#define SIDE2(c, s)                                                                          \
    {(c)->s##MemoryType, (c)->s##Host, (c)->s##Device, (c)->s##XInBytes, (c)->s##Y, 0,        \
     (c)->s##Pitch, (c)->Height, 0}
#define SIDE3(c, s)                                                                          \
    {(c)->s##MemoryType, (c)->s##Host, (c)->s##Device, (c)->s##XInBytes, (c)->s##Y,          \
     (c)->s##Z, (c)->s##Pitch, (c)->s##Height, (c)->s##LOD}

bool copy_check_2d(const CUDA_MEMCPY2D *c, struct copy_geometry *g)
{
    if (c == NULL)
        return false;
    struct side src = SIDE2(c, src), dst = SIDE2(c, dst);
    return geometry(&src, &dst, c->WidthInBytes, c->Height, 1, g);
}

bool copy_check_3d(const CUDA_MEMCPY3D *c, struct copy_geometry *g)
{
    if (c == NULL)
        return false;
    struct side src = SIDE3(c, src), dst = SIDE3(c, dst);
    return geometry(&src, &dst, c->WidthInBytes, c->Height, c->Depth, g);
}

bool copy_check_3d_peer(const CUDA_MEMCPY3D_PEER *c, struct copy_geometry *g)
{
    if (c == NULL)
        return false;
    struct side src = SIDE3(c, src), dst = SIDE3(c, dst);
    return geometry(&src, &dst, c->WidthInBytes, c->Height, c->Depth, g);
}

/* ---- batches ------------------------------------------------------------- */

static bool order_ok(CUmemcpySrcAccessOrder o)
{
    return o == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
           o == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL || o == CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
}

/* A batch refuses the legacy stream (NULL in a legacy variant, or named). */
static bool batch_stream_ok(CUstream s, bool per_thread)
{
    return !(s == NULL && !per_thread) && s != P2PSHIM_STREAM_LEGACY;
}

static bool linear_end_ok(CUdeviceptr p, size_t n)
{
    return p != 0 && copy_check_span((uintptr_t)p, n) && copy_check_holds(p, n);
}

bool copy_check_batch(const struct copy_batch *b)
{
    if (!batch_stream_ok(b->stream, b->per_thread) || b->dsts == NULL || b->srcs == NULL ||
        b->sizes == NULL || b->count == 0 || b->attrs == NULL || b->attrs_idxs == NULL ||
        b->num_attrs == 0 || b->num_attrs > b->count || b->attrs_idxs[0] != 0)
        return false;
    for (size_t k = 0; k < b->num_attrs; k++) {
        if (k > 0 && (b->attrs_idxs[k] <= b->attrs_idxs[k - 1] || b->attrs_idxs[k] >= b->count))
            return false;
        if (!order_ok(b->attrs[k].srcAccessOrder))
            return false;
    }
    for (size_t i = 0; i < b->count; i++)
        if (b->sizes[i] != 0 &&
            (!linear_end_ok(b->dsts[i], b->sizes[i]) || !linear_end_ok(b->srcs[i], b->sizes[i])))
            return false;
    return true;
}

/* A pointer operand's span from its first byte: rows of rowLength (0:
 * the width), layers of layerHeight (0: the height). false when the
 * driver refuses it or the sums wrap. */
static bool operand_span(const CUmemcpy3DOperand *o, const CUextent3D *e, size_t *span)
{
    size_t row = o->op.ptr.rowLength ? o->op.ptr.rowLength : e->width;
    size_t layer = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : e->height;
    size_t slice, ls, lr;
    if (row < e->width || layer < e->height || __builtin_mul_overflow(row, layer, &slice) ||
        __builtin_mul_overflow(e->depth - 1, slice, &ls) ||
        __builtin_mul_overflow(e->height - 1, row, &lr) || __builtin_add_overflow(ls, lr, span) ||
        __builtin_add_overflow(*span, e->width, span))
        return false;
    return true;
}

static bool operand_ok(const CUmemcpy3DOperand *o, const CUextent3D *e)
{
    size_t span;
    if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY)
        return true;
    return o->type == CU_MEMCPY_OPERAND_TYPE_POINTER && operand_span(o, e, &span) &&
           linear_end_ok(o->op.ptr.ptr, span);
}

bool copy_check_3d_batch(size_t count, const CUDA_MEMCPY3D_BATCH_OP *ops,
                         unsigned long long flags, CUstream stream, bool per_thread)
{
    if (!batch_stream_ok(stream, per_thread) || flags != 0 || count == 0 || ops == NULL)
        return false;
    for (size_t i = 0; i < count; i++) {
        const CUDA_MEMCPY3D_BATCH_OP *op = &ops[i];
        const CUextent3D *e = &op->extent;
        size_t bytes;
        if (e->width == 0 || e->height == 0 || e->depth == 0 ||
            __builtin_mul_overflow(e->width, e->height, &bytes) ||
            __builtin_mul_overflow(bytes, e->depth, &bytes) || !order_ok(op->srcAccessOrder) ||
            (op->flags & ~(unsigned)CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE) != 0 ||
            !operand_ok(&op->src, e) || !operand_ok(&op->dst, e))
            return false;
    }
    return true;
}

size_t copy_check_op_bytes(const CUDA_MEMCPY3D_BATCH_OP *op)
{
    return op->extent.width * op->extent.height * op->extent.depth;
}

size_t copy_check_operand_span(const CUmemcpy3DOperand *o, const CUextent3D *e)
{
    size_t span = 0;
    if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER || !operand_span(o, e, &span))
        return 0;
    return span;
}
