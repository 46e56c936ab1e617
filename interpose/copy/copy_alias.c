#include "copy_alias.h"

#include "driver.h"
#include "vmm_alias.h"

/* The primary context of dev when it is active (the program's, or its
 * runtime's), else NULL. The retain is given back at once: the handle
 * stays valid while the context is active, and the shim keeps nothing
 * alive that the program would not. */
static CUcontext active_primary(int dev)
{
    const struct driver_api *d = driver_api();
    unsigned int flags = 0;
    int active = 0;
    CUcontext ctx = NULL;
    if (d->primary_ctx_get_state == NULL || d->primary_ctx_retain == NULL ||
        d->primary_ctx_release == NULL ||
        d->primary_ctx_get_state(dev, &flags, &active) != CUDA_SUCCESS || !active)
        return NULL;
    if (d->primary_ctx_retain(&ctx, dev) != CUDA_SUCCESS)
        return NULL;
    d->primary_ctx_release(dev);
    return ctx;
}

void copy_alias_fill_ctx(const struct copy_call *call, struct copy_end *src,
                         struct copy_end *dst)
{
    bool s_need = src->route.known && src->route.kind == MEM_KIND_VMM && src->ctx == NULL;
    bool d_need = dst->route.known && dst->route.kind == MEM_KIND_VMM && dst->ctx == NULL;
    if (!s_need && !d_need)
        return;
    CUcontext exec = driver_stream_ctx(call->issue.stream, call->issue.per_thread);
    int dev = exec != NULL ? driver_ctx_device(exec) : -1;
    if (s_need)
        src->ctx = src->route.device == dev ? exec : active_primary(src->route.device);
    if (d_need)
        dst->ctx = dst->route.device == dev ? exec : active_primary(dst->route.device);
}

static uint32_t device_bit(int dev)
{
    return dev >= 0 && dev < 32 ? 1u << dev : 0;
}

/* The address the driver gets for one end: its alias when mapped, else
 * itself; 0 when a mapped end has no alias to be had. */
static CUdeviceptr end_address(const struct copy_end *e, CUdeviceptr ptr, size_t bytes,
                               uint32_t devices)
{
    if (e->route.kind != MEM_KIND_VMM)
        return ptr;
    return vmm_alias_translate(ptr, bytes, devices);
}

/* Whether the program's mapping at ptr grants device `other` read-write
 * access itself (as PyTorch's expandable segments do): the driver then
 * copies directly, and an alias would only cost a mapping. Asked each
 * time: one driver call, and a grant can change at any time. */
static bool mapping_grants(CUdeviceptr ptr, int other)
{
    const struct driver_api *api = driver_api();
    CUmemLocation where = {CU_MEM_LOCATION_TYPE_DEVICE, other};
    unsigned long long flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return api->mem_get_access != NULL &&
           api->mem_get_access(&flags, &where, ptr) == CUDA_SUCCESS &&
           flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
}

/* Whether every mapping of the program's that [ptr, ptr+bytes) touches
 * grants `other` itself: a copy over the seam of two mappings, one granted
 * and one not, still needs an alias (the alias grants all of it). */
static bool span_grants(CUdeviceptr ptr, size_t bytes, int other)
{
    CUdeviceptr end = ptr + bytes;
    for (CUdeviceptr p = ptr; p < end;) {
        if (!mapping_grants(p, other))
            return false;
        CUdeviceptr next = vmm_alias_mapping_end(p);
        if (next <= p)
            return next == 0 && p == ptr; /* one mapping the shim never saw */
        p = next;
    }
    return true;
}

/* Where the copy path reads one end: its first byte and the bytes it
 * touches from there (copy.h); false when they wrap around. */
static bool end_span(const CUdeviceptr *field, size_t off, size_t span, size_t bytes,
                     CUdeviceptr *first, size_t *n)
{
    *first = *field + off;
    *n = span != 0 ? span : bytes;
    return *first >= *field && *first + *n > *first;
}

static bool program_granted(const struct copy_end *src, const struct copy_end *dst,
                            CUdeviceptr s, size_t sn, CUdeviceptr t, size_t tn)
{
    /* Both ends mapped: an ordinary end would need context peer access,
     * which the alias path enables and the program may not have. */
    return src->route.kind == MEM_KIND_VMM && dst->route.kind == MEM_KIND_VMM &&
           span_grants(s, sn, dst->route.device) && span_grants(t, tn, src->route.device);
}

enum route_reason copy_alias_apply(struct copy_call *call, const struct route_decision *d,
                                   const struct copy_end *src, const struct copy_end *dst,
                                   size_t bytes)
{
    CUdeviceptr s0, t0;
    size_t sn, tn;
    if (call->alias.dst == NULL || call->alias.src == NULL)
        return ROUTE_SHIM_ERROR;
    if (!end_span(call->alias.src, call->alias.src_off, call->alias.src_span, bytes, &s0, &sn) ||
        !end_span(call->alias.dst, call->alias.dst_off, call->alias.dst_span, bytes, &t0, &tn))
        return ROUTE_ALIAS_FAILED;
    if (program_granted(src, dst, s0, sn, t0, tn))
        return ROUTE_APP_PEER;
    if (d->need_enable) {
        enum route_reason r = upgrade_enable(d, src, dst);
        if (r != ROUTE_UPGRADED)
            return r;
        call->link.enabled = true;
    }
    /* The issuing device's copy engine reads one end and writes the other:
     * the alias must let both devices of the copy in (vmm_alias.h). */
    uint32_t devices = device_bit(src->route.device) | device_bit(dst->route.device);
    CUdeviceptr s = end_address(src, s0, sn, devices);
    CUdeviceptr t = s != 0 ? end_address(dst, t0, tn, devices) : 0;
    if (s == 0 || t == 0)
        return ROUTE_ALIAS_FAILED;
    *call->alias.src = s - call->alias.src_off;
    *call->alias.dst = t - call->alias.dst_off;
    call->alias.done = true;
    return ROUTE_UPGRADED_ALIAS;
}

/* ---- 2D and 3D descriptors ---- */

/* One end of a 2D/3D copy of w x h x d bytes at (x, y, z) of a layout of
 * pitch and height: its first byte's distance from the address field and
 * the bytes from there to the last row's end. false when the geometry is
 * one the driver refuses (a pitch below the width, a height below the
 * rows) or the sums overflow: the copy then passes as it would. */
static bool struct_extent(size_t x, size_t y, size_t z, size_t pitch, size_t height, size_t w,
                          size_t h, size_t d, size_t *off, size_t *span)
{
    size_t slice, zo, yo, ls, lr;
    if (w == 0 || h == 0 || d == 0 || ((h > 1 || d > 1) && pitch < w) || (d > 1 && height < h))
        return false;
    if (__builtin_mul_overflow(pitch, height, &slice) || __builtin_mul_overflow(z, slice, &zo) ||
        __builtin_mul_overflow(y, pitch, &yo) || __builtin_add_overflow(zo, yo, off) ||
        __builtin_add_overflow(*off, x, off) || __builtin_mul_overflow(d - 1, slice, &ls) ||
        __builtin_mul_overflow(h - 1, pitch, &lr) || __builtin_add_overflow(ls, lr, span) ||
        __builtin_add_overflow(*span, w, span))
        return false;
    return true;
}

/* The descriptors name their fields alike: L is the wrapper's copy. */
#define ALLOW_STRUCT(call, L, z_src, z_dst, h_src, h_dst, depth)                              \
    do {                                                                                     \
        if (!struct_extent((L)->srcXInBytes, (L)->srcY, z_src, (L)->srcPitch, h_src,          \
                           (L)->WidthInBytes, (L)->Height, depth, &(call)->alias.src_off,     \
                           &(call)->alias.src_span) ||                                        \
            !struct_extent((L)->dstXInBytes, (L)->dstY, z_dst, (L)->dstPitch, h_dst,          \
                           (L)->WidthInBytes, (L)->Height, depth, &(call)->alias.dst_off,     \
                           &(call)->alias.dst_span))                                          \
            return call;                                                                      \
        (call)->alias.src = &(L)->srcDevice;                                                  \
        (call)->alias.dst = &(L)->dstDevice;                                                  \
    } while (0)

struct copy_call *copy_alias_allow_2d(struct copy_call *call, const CUDA_MEMCPY2D *c,
                                      CUDA_MEMCPY2D *local)
{
    if (c == NULL)
        return call;
    *local = *c;
    ALLOW_STRUCT(call, local, 0, 0, local->Height, local->Height, 1);
    return call;
}

struct copy_call *copy_alias_allow_3d(struct copy_call *call, const CUDA_MEMCPY3D *c,
                                      CUDA_MEMCPY3D *local)
{
    if (c == NULL)
        return call;
    *local = *c;
    ALLOW_STRUCT(call, local, local->srcZ, local->dstZ, local->srcHeight, local->dstHeight,
                 local->Depth);
    return call;
}

struct copy_call *copy_alias_allow_3d_peer(struct copy_call *call, const CUDA_MEMCPY3D_PEER *c,
                                           CUDA_MEMCPY3D_PEER *local)
{
    if (c == NULL)
        return call;
    *local = *c;
    ALLOW_STRUCT(call, local, local->srcZ, local->dstZ, local->srcHeight, local->dstHeight,
                 local->Depth);
    return call;
}
