/* Path accounting, the point of the stand-in: the class a copy counts in
 * (peer, staged, same device, to or from the host), its duration in the
 * time model, whether it crosses a STANDIN_LINK_CORRUPT link; and the
 * operand checks of copies and memsets, with the real driver's error codes.
 * The path is chosen when a copy is issued (sd_copy.c, sd_batch.c), with
 * the peer state of that moment. */
#include "sd_internal.h"

/* ---- path accounting ---- */

/* Whether [p, p+n) of memory `a` (of another device) is reachable from
 * device dev without staging: pool and mapped memory by their access
 * lists (every mapping the range touches), ordinary memory by context
 * peer access from dev to the owning context. A run of mappings only
 * partly granted is staged: the copy engine could not reach all of it. */
static int reachable_from(const struct sd_alloc *a, uintptr_t p, size_t n, int dev)
{
    if (a->kind == SD_MEM_POOL)
        return a->pool->access[dev] != CU_MEM_ACCESS_FLAGS_PROT_NONE;
    if (a->kind == SD_MEM_VMM)
        return sd_vmm_span_reachable(p, n, dev);
    return sd_dev_has_peer_to(dev, a->ctx);
}

/* The bytes the copy's each side covers, first to last. */
static size_t footprint(size_t w, size_t h, size_t d, size_t pitch, size_t slice)
{
    return (d - 1) * slice + (h - 1) * pitch + w;
}

/* One direction is enough for the copy engines (measured: ARCHITECTURE.md). */
static int peer_path(const struct sd_xfer *x, const struct sd_alloc *dst,
                     const struct sd_alloc *src)
{
    if (dst->kind == SD_MEM_DEVICE && src->kind == SD_MEM_DEVICE)
        return sd_peer_either(dst->ctx, src->ctx);
    size_t dn = footprint(x->width, x->height, x->depth, x->dpitch, x->dslice);
    size_t sn = footprint(x->width, x->height, x->depth, x->spitch, x->sslice);
    return reachable_from(dst, (uintptr_t)x->dst, dn, src->dev) ||
           reachable_from(src, (uintptr_t)x->src, sn, dst->dev);
}

static uint64_t duration_ns(size_t bytes, unsigned gb_per_s)
{
    return 2000 + bytes / gb_per_s;
}

static uint64_t account(const struct sd_xfer *x, const struct sd_alloc *dst,
                        const struct sd_alloc *src, enum standin_path *path)
{
    size_t bytes = x->width * x->height * x->depth;
    struct standin_stats *st = &sd.stats;
    int dd = sd_mem_on_device(dst), sdv = sd_mem_on_device(src);
    if (dd && sdv) {
        if (dst->dev == src->dev) {
            *path = STANDIN_PATH_SAME_DEVICE;
            st->same_device_copies++;
            st->same_device_bytes += bytes;
            return duration_ns(bytes, 1000);
        }
        if (peer_path(x, dst, src)) {
            *path = STANDIN_PATH_PEER;
            st->peer_copies++;
            st->peer_bytes += bytes;
            return duration_ns(bytes, sd.cfg.slow[src->dev][dst->dev] ? 5 : 400);
        }
        *path = STANDIN_PATH_STAGED;
        st->staged_copies++;
        st->staged_bytes += bytes;
        return duration_ns(bytes, 40);
    }
    if (dd) {
        *path = STANDIN_PATH_H2D;
        st->h2d_copies++;
        st->h2d_bytes += bytes;
    } else if (sdv) {
        *path = STANDIN_PATH_D2H;
        st->d2h_copies++;
        st->d2h_bytes += bytes;
    } else {
        *path = STANDIN_PATH_H2H;
        st->h2h_copies++;
        st->h2h_bytes += bytes;
    }
    return duration_ns(bytes, 25);
}

uint64_t sd_account(const struct sd_xfer *x, const struct sd_alloc *dst,
                    const struct sd_alloc *src)
{
    enum standin_path path;
    uint64_t ns = account(x, dst, src, &path);
    sd_observe_copy(path, x->width * x->height * x->depth,
                    sd_mem_on_device(src) ? src->dev : -1, sd_mem_on_device(dst) ? dst->dev : -1,
                    ns);
    return ns;
}

int sd_link_corrupts(const struct sd_xfer *x, const struct sd_alloc *dst,
                     const struct sd_alloc *src)
{
    return sd_mem_on_device(dst) && sd_mem_on_device(src) && dst->dev != src->dev &&
           sd.cfg.corrupt[src->dev][dst->dev] && peer_path(x, dst, src);
}

/* ---- operands ---- */

/* An operand that must be memory the driver knows (a device pointer
 * parameter): [p, p+span) inside one allocation. */
/* [p, p+span) inside a, or over the mappings end to end from a. */
static int holds(const struct sd_alloc *a, uintptr_t p, size_t span)
{
    if (span <= a->size - (p - a->base))
        return 1;
    return a->kind == SD_MEM_VMM && sd_vmm_span_mapped(a, p, span);
}

/* An operand that must be memory the driver knows (a device pointer
 * parameter). */
CUresult sd_known_operand(uintptr_t p, size_t span, struct sd_alloc **out)
{
    if (p == 0)
        return CUDA_ERROR_INVALID_VALUE;
    *out = sd_lookup(p);
    return *out && holds(*out, p, span) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* An operand that may also be pageable host memory (unified addressing):
 * *out is NULL for that. An address inside the stand-in's own regions
 * that no allocation holds is a bad device pointer. */
CUresult sd_any_operand(uintptr_t p, size_t span, struct sd_alloc **out)
{
    /* A range that wraps the address space is no memory at all. */
    if (p == 0 || span > UINTPTR_MAX - p)
        return CUDA_ERROR_INVALID_VALUE;
    struct sd_alloc *a = sd_lookup(p);
    if (!a) {
        *out = NULL;
        return sd_owned_region(p) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    }
    *out = a;
    return holds(a, p, span) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
