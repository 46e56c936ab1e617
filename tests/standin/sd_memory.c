/* Simulated memory: one arena per device and one for managed memory, each
 * a private anonymous mapping, so that a device pointer is a host address
 * the stand-in reads and writes directly and its device is found from the
 * address alone. Pinned and registered host memory is ordinary host memory,
 * tracked. All allocations sit in one array sorted by base address.
 *
 * Device d's arena is placed at 0x7e0000000000 + d * 64 GiB when that is
 * free (easy to recognise in a debugger), anywhere otherwise (sanitizer
 * runtimes reserve parts of the address space; under ThreadSanitizer no
 * hint is tried at all). */
#include "sd_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SD_ARENA_HINT ((uintptr_t)0x7e0000000000ull)
#define SD_ARENA_STRIDE ((uintptr_t)0x1000000000ull)
#define SD_MANAGED_HINT ((uintptr_t)0x7d0000000000ull)

void *sd_map_hinted(uintptr_t hint, size_t size, int prot)
{
    int fl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    void *p = MAP_FAILED;
    if (!SD_TSAN)
        p = mmap((void *)hint, size, prot, fl | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != MAP_FAILED)
        return p;   /* on kernels before 4.17 the flag is a hint: any address */
    p = mmap(NULL, size, prot, fl, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void sd_arenas_map(void)
{
    for (int a = 0; a <= SD_MAX_DEV; a++) {
        if (a < SD_MAX_DEV && a >= sd.cfg.ndev)
            continue;
        uintptr_t hint = a == SD_ARENA_MANAGED ? SD_MANAGED_HINT
                                               : SD_ARENA_HINT + (uintptr_t)a * SD_ARENA_STRIDE;
        void *p = sd_map_hinted(hint, sd.cfg.arena_bytes, PROT_READ | PROT_WRITE);
        if (!p) {
            fprintf(stderr, "standin: cannot map %zu bytes of device memory: %s\n",
                    sd.cfg.arena_bytes, strerror(errno));
            abort();
        }
        sd.arena[a].base = p;
        sd.arena[a].size = sd.cfg.arena_bytes;
        sd.arena[a].used = 0;
    }
}

void sd_arenas_unmap(void)
{
    for (int a = 0; a <= SD_MAX_DEV; a++) {
        if (sd.arena[a].base)
            munmap(sd.arena[a].base, sd.arena[a].size);
        memset(&sd.arena[a], 0, sizeof sd.arena[a]);
    }
}

/* ---- the allocation table ---- */

/* Index of the first allocation with base > p. */
static size_t upper(uintptr_t p)
{
    size_t lo = 0, hi = sd.nallocs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sd.allocs[mid].base <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct sd_alloc *sd_lookup(uintptr_t p)
{
    size_t i = upper(p);
    if (i == 0)
        return NULL;
    struct sd_alloc *a = &sd.allocs[i - 1];
    return p - a->base < a->size && a->kind != SD_MEM_ARRAY ? a : NULL;
}

struct sd_alloc *sd_insert_alloc(const struct sd_alloc *a)
{
    if (sd.nallocs == sd.cap_allocs) {
        size_t ncap = sd.cap_allocs ? 2 * sd.cap_allocs : 256;
        struct sd_alloc *na = realloc(sd.allocs, ncap * sizeof *na);
        if (!na)
            return NULL;
        sd.allocs = na;
        sd.cap_allocs = ncap;
    }
    size_t i = upper(a->base);
    memmove(&sd.allocs[i + 1], &sd.allocs[i], (sd.nallocs - i) * sizeof *sd.allocs);
    sd.allocs[i] = *a;
    sd.allocs[i].buffer_id = ++sd.next_id;
    sd.nallocs++;
    return &sd.allocs[i];
}

char *sd_dma_dst(char *p, size_t n)
{
    struct sd_alloc *a = sd_lookup((uintptr_t)p);
    if (a == NULL || a->kind != SD_MEM_PINNED || a->dma_view == NULL ||
        (uintptr_t)p + n > a->base + a->footprint)
        return p;
    return a->dma_view + ((uintptr_t)p - a->base);
}

/* Drops the record and what backs it (arena space, a host mapping). The
 * caller has flushed pending work that could touch it. */
void sd_remove_alloc(struct sd_alloc *a)
{
    if (a->arena >= 0) {
        sd.arena[a->arena].used -= a->footprint;
        /* Give big blocks' pages back; reused memory reads as zero, which
         * is one of the contents a real driver could give. */
        if (a->footprint >= SD_GRANULE)
            madvise((void *)a->base, a->footprint, MADV_DONTNEED);
    } else if (a->kind == SD_MEM_PINNED) {
        munmap((void *)a->base, a->footprint);
        if (a->dma_view)
            munmap(a->dma_view, a->footprint);
    }
    size_t i = (size_t)(a - sd.allocs);
    memmove(&sd.allocs[i], &sd.allocs[i + 1], (sd.nallocs - i - 1) * sizeof *sd.allocs);
    sd.nallocs--;
}

void sd_free_ctx_allocs(struct CUctx_st *c)
{
    for (size_t i = sd.nallocs; i-- > 0;)
        if (sd.allocs[i].ctx == c && sd.allocs[i].kind != SD_MEM_VMM)
            sd_remove_alloc(&sd.allocs[i]);
}

void sd_free_all_allocs(void)
{
    for (size_t i = sd.nallocs; i-- > 0;)
        if (sd.allocs[i].kind != SD_MEM_VMM)   /* sd_vmm_fini unmaps those */
            sd_remove_alloc(&sd.allocs[i]);
    if (sd.nallocs == 0) {
        free(sd.allocs);
        sd.allocs = NULL;
        sd.cap_allocs = 0;
    }
}

int sd_owned_region(uintptr_t p)
{
    for (int a = 0; a <= SD_MAX_DEV; a++)
        if (sd.arena[a].base && p >= (uintptr_t)sd.arena[a].base &&
            p - (uintptr_t)sd.arena[a].base < sd.arena[a].size)
            return 1;
    return sd_vmm_contains(p);
}

int sd_mem_on_device(const struct sd_alloc *a)
{
    return a && (a->kind == SD_MEM_DEVICE || a->kind == SD_MEM_POOL || a->kind == SD_MEM_VMM);
}

/* First fit in the arena: scans the (sorted) allocations inside it for a
 * gap. 512-byte alignment, 2 MiB for blocks of 2 MiB or more. */
CUresult sd_alloc_in_arena(int arena, size_t size, size_t *footprint, uintptr_t *out)
{
    struct sd_arena *ar = &sd.arena[arena];
    size_t align = size >= SD_GRANULE ? SD_GRANULE : SD_ALIGN;
    if (size > ar->size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t fp = (size + align - 1) & ~(align - 1);
    uintptr_t lo = (uintptr_t)ar->base, end = lo + ar->size;
    uintptr_t cand = (lo + align - 1) & ~(uintptr_t)(align - 1);
    for (size_t i = upper(lo - 1); i < sd.nallocs && sd.allocs[i].base < end; i++) {
        const struct sd_alloc *a = &sd.allocs[i];
        if (a->arena != arena)
            continue;
        if (cand + fp <= a->base)
            break;
        uintptr_t next = a->base + a->footprint;
        if (next > cand)
            cand = (next + align - 1) & ~(uintptr_t)(align - 1);
    }
    if (cand + fp > end || cand + fp < cand)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *footprint = fp;
    *out = cand;
    ar->used += fp;
    return CUDA_SUCCESS;
}

/* An allocation in the current context's device arena (or the managed
 * arena), recorded with the given kind. */
static CUresult alloc_common(CUdeviceptr *dptr, size_t size, enum sd_kind kind,
                             int managed, unsigned flags)
{
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c;
    CUresult r = sd_current(&c);
    if (r != CUDA_SUCCESS)
        return r;
    struct sd_alloc a = {0};
    a.arena = managed ? SD_ARENA_MANAGED : c->dev;
    r = sd_alloc_in_arena(a.arena, size, &a.footprint, &a.base);
    if (r != CUDA_SUCCESS)
        return r;
    a.size = size;
    a.kind = kind;
    a.dev = managed ? -1 : c->dev;
    a.ctx = c;
    a.flags = flags;
    if (!sd_insert_alloc(&a)) {
        sd.arena[a.arena].used -= a.footprint;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = a.base;
    return CUDA_SUCCESS;
}

SD_API CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    SD_BODY(alloc_common(dptr, bytesize, SD_MEM_DEVICE, 0, 0));
}

static CUresult alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t w, size_t h,
                            unsigned elem)
{
    if (!dptr || !pitch || w == 0 || h == 0 || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t p = (w + SD_ALIGN - 1) & ~(SD_ALIGN - 1);
    if (h > SIZE_MAX / p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = alloc_common(dptr, p * h, SD_MEM_DEVICE, 0, 0);
    if (r == CUDA_SUCCESS)
        *pitch = p;
    return r;
}
SD_API CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                           size_t Height, unsigned int ElementSizeBytes)
{
    SD_BODY(alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
}

static CUresult alloc_managed(CUdeviceptr *dptr, size_t size, unsigned flags)
{
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_common(dptr, size, SD_MEM_MANAGED, 1, flags);
}
SD_API CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    SD_BODY(alloc_managed(dptr, bytesize, flags));
}

/* cuMemFree synchronises, as on a GPU; here every queued operation runs
 * first (conservative: nothing queued may touch memory that is gone). */
static CUresult mem_free(CUdeviceptr p)
{
    struct CUctx_st *c;
    CUresult r = sd_current(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (p == 0)
        return CUDA_SUCCESS;   /* freeing NULL is a no-op, as documented */
    struct sd_alloc *a = sd_lookup(p);
    if (!a || a->base != p ||
        (a->kind != SD_MEM_DEVICE && a->kind != SD_MEM_MANAGED && a->kind != SD_MEM_POOL))
        return CUDA_ERROR_INVALID_VALUE;
    sd_flush_all();
    sd_remove_alloc(sd_lookup(p));
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    SD_BODY(mem_free(dptr));
}

static CUresult mem_get_info(size_t *free_b, size_t *total)
{
    if (!free_b || !total)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c;
    CUresult r = sd_current(&c);
    if (r != CUDA_SUCCESS)
        return r;
    size_t used = sd.arena[c->dev].used + sd.vmm_bytes[c->dev];
    *total = sd.arena[c->dev].size;
    *free_b = used < *total ? *total - used : 0;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_b, size_t *total)
{
    SD_BODY(mem_get_info(free_b, total));
}

/* ---- pinned and registered host memory ---- */

static CUresult host_alloc(void **pp, size_t size, unsigned flags)
{
    if (!pp || size == 0 || (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE |
                                                CU_MEMHOSTALLOC_DEVICEMAP |
                                                CU_MEMHOSTALLOC_WRITECOMBINED)))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c;
    CUresult r = sd_current(&c);
    if (r != CUDA_SUCCESS)
        return r;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t fp = (size + page - 1) & ~(page - 1);
    /* A shared mapping, as the real driver's (/dev/zero, shared), mapped
     * twice: the program's view and the DMA view the copies write. */
    int fd = memfd_create("standin-pinned", MFD_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = MAP_FAILED, *view = MAP_FAILED;
    if (ftruncate(fd, (off_t)fp) == 0) {
        p = mmap(NULL, fp, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        view = mmap(NULL, fp, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    if (p == MAP_FAILED || view == MAP_FAILED) {
        if (p != MAP_FAILED)
            munmap(p, fp);
        if (view != MAP_FAILED)
            munmap(view, fp);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct sd_alloc a = {0};
    a.dma_view = view;
    a.base = (uintptr_t)p;
    a.size = size;
    a.footprint = fp;
    a.kind = SD_MEM_PINNED;
    a.dev = -1;
    a.arena = -1;
    a.ctx = c;
    a.flags = flags;
    if (!sd_insert_alloc(&a)) {
        munmap(p, fp);
        munmap(view, fp);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pp = p;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    SD_BODY(host_alloc(pp, bytesize, 0));
}
SD_API CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    SD_BODY(host_alloc(pp, bytesize, Flags));
}

static CUresult host_free(void *p)
{
    struct CUctx_st *c;
    CUresult r = sd_current(&c);
    if (r != CUDA_SUCCESS)
        return r;
    struct sd_alloc *a = sd_lookup((uintptr_t)p);
    if (!p || !a || a->base != (uintptr_t)p || a->kind != SD_MEM_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    sd_flush_all();
    sd_remove_alloc(sd_lookup((uintptr_t)p));
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemFreeHost(void *p)
{
    SD_BODY(host_free(p));
}

static CUresult host_register(void *p, size_t size, unsigned flags)
{
    if (!p || size == 0 || (flags & ~(unsigned)(CU_MEMHOSTREGISTER_PORTABLE |
                                               CU_MEMHOSTREGISTER_DEVICEMAP |
                                               CU_MEMHOSTREGISTER_IOMEMORY |
                                               CU_MEMHOSTREGISTER_READ_ONLY)))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c;
    CUresult r = sd_current(&c);
    if (r != CUDA_SUCCESS)
        return r;
    uintptr_t b = (uintptr_t)p;
    if (b + size < b)
        return CUDA_ERROR_INVALID_VALUE;
    /* Any overlap with memory the driver knows is an error. */
    size_t i = upper(b + size - 1);
    if (i > 0 && sd.allocs[i - 1].base + sd.allocs[i - 1].size > b)
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    struct sd_alloc a = {0};
    a.base = b;
    a.size = size;
    a.kind = SD_MEM_REGISTERED;
    a.dev = -1;
    a.arena = -1;
    a.ctx = c;
    a.flags = flags;
    return sd_insert_alloc(&a) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
SD_API CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    SD_BODY(host_register(p, bytesize, Flags));
}

static CUresult host_unregister(void *p)
{
    struct CUctx_st *c;
    CUresult r = sd_current(&c);
    if (r != CUDA_SUCCESS)
        return r;
    struct sd_alloc *a = sd_lookup((uintptr_t)p);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if (!a || a->base != (uintptr_t)p || a->kind != SD_MEM_REGISTERED)
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    sd_flush_all();
    sd_remove_alloc(sd_lookup((uintptr_t)p));
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    SD_BODY(host_unregister(p));
}

static CUresult host_get_device_pointer(CUdeviceptr *pd, void *p, unsigned flags)
{
    if (!pd || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct sd_alloc *a = sd_lookup((uintptr_t)p);
    if (!a || (a->kind != SD_MEM_PINNED && a->kind != SD_MEM_REGISTERED))
        return CUDA_ERROR_INVALID_VALUE;
    *pd = (CUdeviceptr)(uintptr_t)p;   /* unified addressing: the same */
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p,
                                                     unsigned int Flags)
{
    SD_BODY(host_get_device_pointer(pdptr, p, Flags));
}

static CUresult address_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr p)
{
    struct CUctx_st *c;
    CUresult r = sd_current(&c);
    if (r != CUDA_SUCCESS)
        return r;
    struct sd_alloc *a = sd_lookup(p);
    if (!a)
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = a->base;
    if (psize)
        *psize = a->size;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize,
                                                CUdeviceptr dptr)
{
    SD_BODY(address_range(pbase, psize, dptr));
}
