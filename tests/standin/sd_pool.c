/* Stream-ordered pools: pool memory comes from the device's arena (kind
 * SD_MEM_POOL) and carries its pool; a pool's access list says which other
 * devices may reach it. Context peer access does not cover it, as on a
 * GPU. Every successful cuMemPoolSetAccess is counted on its pool
 * (standin_access_grants). */
#include "sd_internal.h"

#include <stdlib.h>

/* ---- pools ---- */

struct CUmemPoolHandle_st *sd_pool_new(int dev, int is_default)
{
    struct CUmemPoolHandle_st *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->dev = dev;
    p->is_default = is_default;
    p->access[dev] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    p->next = sd.pools;
    sd.pools = p;
    return p;
}

void sd_pools_free(void)
{
    while (sd.pools) {
        struct CUmemPoolHandle_st *p = sd.pools;
        sd.pools = p->next;
        free(p);
    }
}

static struct CUmemPoolHandle_st *find_pool(CUmemoryPool h)
{
    for (struct CUmemPoolHandle_st *p = sd.pools; p; p = p->next)
        if (p == h)
            return p;
    return NULL;
}

static CUresult default_pool(CUmemoryPool *pool, CUdevice dev)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *pool = sd.default_pool[dev];
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    SD_BODY(default_pool(pool_out, dev));
}
/* The current pool is always the default one here (no cuDeviceSetMemPool). */
SD_API CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    SD_BODY(default_pool(pool, dev));
}

static CUresult pool_create(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(props->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    struct CUmemPoolHandle_st *p = sd_pool_new(props->location.id, 0);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pool = p;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    SD_BODY(pool_create(pool, poolProps));
}

static CUresult pool_destroy(CUmemoryPool h)
{
    struct CUmemPoolHandle_st *p = find_pool(h);
    if (!p || p->is_default)
        return CUDA_ERROR_INVALID_VALUE;
    sd_flush_all();
    for (size_t i = sd.nallocs; i-- > 0;)
        if (sd.allocs[i].pool == p)
            sd_remove_alloc(&sd.allocs[i]);
    for (struct CUmemPoolHandle_st **pp = &sd.pools; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    free(p);
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
    SD_BODY(pool_destroy(pool));
}

CUresult sd_check_access_desc(const CUmemAccessDesc *d, int owner)
{
    if (d->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        (d->flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d->flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
         d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
        return CUDA_ERROR_INVALID_VALUE;
    int dev = d->location.id;
    if (!sd_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (dev != owner && !sd.cfg.can[dev][owner] && d->flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
        return CUDA_ERROR_INVALID_DEVICE;   /* the pair cannot peer */
    return CUDA_SUCCESS;
}

static CUresult pool_set_access(CUmemoryPool h, const CUmemAccessDesc *map, size_t count)
{
    struct CUmemPoolHandle_st *p = find_pool(h);
    if (!p || (!map && count))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        CUresult r = sd_check_access_desc(&map[i], p->dev);
        if (r != CUDA_SUCCESS)
            return r;
        if (map[i].location.id == p->dev && map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_DEVICE;   /* the owner keeps its access */
    }
    for (size_t i = 0; i < count; i++)
        p->access[map[i].location.id] = map[i].flags;
    p->access_sets++;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map,
                                           size_t count)
{
    SD_BODY(pool_set_access(pool, map, count));
}

static CUresult pool_get_access(CUmemAccess_flags *flags, CUmemoryPool h, CUmemLocation *loc)
{
    struct CUmemPoolHandle_st *p = find_pool(h);
    if (!flags || !p || !loc || loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(loc->id))
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = p->access[loc->id];
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool,
                                           CUmemLocation *location)
{
    SD_BODY(pool_get_access(flags, memPool, location));
}

/* Allocation is immediate (the model keeps no stream-ordered bookkeeping):
 * the memory is usable by anything issued after the call. */
static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t size, struct CUmemPoolHandle_st *p,
                                CUstream h, int pt)
{
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s;
    CUresult r = sd_stream_resolve(h, pt, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        p = sd.default_pool[s->ctx->dev];
    struct sd_alloc a = {0};
    a.arena = p->dev;
    r = sd_alloc_in_arena(a.arena, size, &a.footprint, &a.base);
    if (r != CUDA_SUCCESS)
        return r;
    a.size = size;
    a.kind = SD_MEM_POOL;
    a.dev = p->dev;
    a.ctx = s->ctx;
    a.pool = p;
    if (!sd_insert_alloc(&a)) {
        sd.arena[a.arena].used -= a.footprint;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = a.base;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    SD_BODY(alloc_from_pool(dptr, bytesize, NULL, hStream, 0));
}
SD_API CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    SD_BODY(alloc_from_pool(dptr, bytesize, NULL, hStream, 1));
}

static CUresult alloc_pool_checked(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
                                   CUstream h, int pt)
{
    struct CUmemPoolHandle_st *p = find_pool(pool);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_from_pool(dptr, size, p, h, pt);
}
SD_API CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                                CUmemoryPool pool, CUstream hStream)
{
    SD_BODY(alloc_pool_checked(dptr, bytesize, pool, hStream, 0));
}
SD_API CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                     CUmemoryPool pool, CUstream hStream)
{
    SD_BODY(alloc_pool_checked(dptr, bytesize, pool, hStream, 1));
}

/* Frees at once, after the work queued on the stream (which may still use
 * the memory) has run: stream order, kept simple. */
static CUresult free_async(CUdeviceptr p, CUstream h, int pt)
{
    struct CUstream_st *s;
    CUresult r = sd_stream_resolve(h, pt, &s);
    if (r != CUDA_SUCCESS)
        return r;
    struct sd_alloc *a = sd_lookup(p);
    if (!a || a->base != p || (a->kind != SD_MEM_POOL && a->kind != SD_MEM_DEVICE))
        return CUDA_ERROR_INVALID_VALUE;
    sd_run_until(s, UINT64_MAX);
    sd_remove_alloc(sd_lookup(p));
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    SD_BODY(free_async(dptr, hStream, 0));
}
SD_API CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    SD_BODY(free_async(dptr, hStream, 1));
}
