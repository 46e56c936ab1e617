/* Virtual memory management (pools: sd_pool.c).
 *
 * One PROT_NONE region is reserved at set-up; cuMemAddressReserve
 * hands out ranges of it. A cuMemCreate handle is a memfd of its size, and
 * cuMemMap maps that memfd at the reserved address (MAP_SHARED|MAP_FIXED),
 * so mapped memory is ordinary host-addressable memory and copies need no
 * translation; two mappings of one handle share bytes, as on a GPU. Each
 * mapping is an allocation record (SD_MEM_VMM) with its own access list,
 * set by cuMemSetAccess. A copy may run over mappings that lie end to end
 * (as ggml's pool's buffers do over the seam between two allocations); it
 * goes peer only when every mapping it touches lets the other device in. */
#include "sd_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SD_VMM_HINT ((uintptr_t)0x7d8000000000ull)
#define SD_VMM_SIZE ((size_t)16 << 30)

struct sd_res { uintptr_t base; size_t size; };
static char *vmm_base;
static struct sd_res *res;
static size_t nres, cap_res;
/* ---- VMM: reservations ---- */

void sd_vmm_init(void)
{
    vmm_base = sd_map_hinted(SD_VMM_HINT, SD_VMM_SIZE, PROT_NONE);
    if (!vmm_base) {
        fprintf(stderr, "standin: cannot reserve the VMM address region\n");
        abort();
    }
}

static void handle_put(struct sd_vmh *h)
{
    if (!h->released || h->maps > 0)
        return;
    for (struct sd_vmh **ph = &sd.vmhs; *ph; ph = &(*ph)->next)
        if (*ph == h) {
            *ph = h->next;
            break;
        }
    sd.vmm_bytes[h->dev] -= h->size;
    close(h->fd);
    free(h);
}

/* Puts PROT_NONE back over a mapping and drops its record. */
static void unmap_record(struct sd_alloc *a)
{
    struct sd_vmh *h = a->vmh;
    mmap((void *)a->base, a->size, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    sd_remove_alloc(a);
    h->maps--;
    handle_put(h);
}

void sd_vmm_fini(void)
{
    for (size_t i = sd.nallocs; i-- > 0;)
        if (sd.allocs[i].kind == SD_MEM_VMM)
            unmap_record(&sd.allocs[i]);
    while (sd.vmhs) {
        struct sd_vmh *h = sd.vmhs;
        h->released = 1;
        h->maps = 0;
        handle_put(h);
    }
    if (vmm_base)
        munmap(vmm_base, SD_VMM_SIZE);
    vmm_base = NULL;
    free(res);
    res = NULL;
    nres = cap_res = 0;
}

static struct sd_res *find_res(uintptr_t p, size_t n)
{
    for (size_t i = 0; i < nres; i++)
        if (p >= res[i].base && p - res[i].base < res[i].size && n <= res[i].size - (p - res[i].base))
            return &res[i];
    return NULL;
}

static int res_free_at(uintptr_t b, size_t n)
{
    uintptr_t lo = (uintptr_t)vmm_base;
    if (b < lo || b + n > lo + SD_VMM_SIZE || b + n < b)
        return 0;
    for (size_t i = 0; i < nres; i++)
        if (b < res[i].base + res[i].size && res[i].base < b + n)
            return 0;
    return 1;
}

static CUresult address_reserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
                                unsigned long long flags)
{
    if (!ptr || size == 0 || size % SD_GRANULE || flags != 0 || (align & (align - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    if (align < SD_GRANULE)
        align = SD_GRANULE;
    uintptr_t b = 0;
    if (addr && addr % align == 0 && res_free_at(addr, size))
        b = addr;   /* the hint, when it can be had */
    for (uintptr_t c = ((uintptr_t)vmm_base + align - 1) & ~(uintptr_t)(align - 1);
         !b && c + size <= (uintptr_t)vmm_base + SD_VMM_SIZE; c += align)
        if (res_free_at(c, size))
            b = c;
    if (!b)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (nres == cap_res) {
        size_t ncap = cap_res ? 2 * cap_res : 16;
        struct sd_res *nr = realloc(res, ncap * sizeof *nr);
        if (!nr)
            return CUDA_ERROR_OUT_OF_MEMORY;
        res = nr;
        cap_res = ncap;
    }
    res[nres].base = b;
    res[nres].size = size;
    nres++;
    *ptr = b;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                            CUdeviceptr addr, unsigned long long flags)
{
    SD_BODY(address_reserve(ptr, size, alignment, addr, flags));
}

/* Any mapping still in the range is unmapped first. */
static CUresult address_free(CUdeviceptr ptr, size_t size)
{
    for (size_t i = 0; i < nres; i++) {
        if (res[i].base != ptr || res[i].size != size)
            continue;
        sd_flush_all();
        for (size_t k = sd.nallocs; k-- > 0;)
            if (sd.allocs[k].kind == SD_MEM_VMM && sd.allocs[k].base >= ptr &&
                sd.allocs[k].base < ptr + size)
                unmap_record(&sd.allocs[k]);
        res[i] = res[--nres];
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}
SD_API CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    SD_BODY(address_free(ptr, size));
}

/* ---- VMM: handles and mappings ---- */

static CUresult granularity(size_t *g, const CUmemAllocationProp *prop,
                            CUmemAllocationGranularity_flags option)
{
    (void)option;
    if (!g || !prop || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(prop->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    *g = SD_GRANULE;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity_out,
                                                      const CUmemAllocationProp *prop,
                                                      CUmemAllocationGranularity_flags option)
{
    SD_BODY(granularity(granularity_out, prop, option));
}

static CUresult mem_create(CUmemGenericAllocationHandle *out, size_t size,
                           const CUmemAllocationProp *prop, unsigned long long flags)
{
    if (!out || !prop || flags != 0 || size == 0 || size % SD_GRANULE ||
        prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = prop->location.id;
    if (!sd_valid_dev(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (sd.arena[dev].used + sd.vmm_bytes[dev] + size > sd.arena[dev].size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sd_vmh *h = calloc(1, sizeof *h);
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    h->fd = memfd_create("standin-vmm", MFD_CLOEXEC);
    if (h->fd < 0 || ftruncate(h->fd, (off_t)size) != 0) {
        if (h->fd >= 0)
            close(h->fd);
        free(h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->dev = dev;
    h->size = size;
    h->refs = 1;
    h->next = sd.vmhs;
    sd.vmhs = h;
    sd.vmm_bytes[dev] += size;
    *out = (CUmemGenericAllocationHandle)(uintptr_t)h;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                    const CUmemAllocationProp *prop, unsigned long long flags)
{
    SD_BODY(mem_create(handle, size, prop, flags));
}

static struct sd_vmh *find_vmh(CUmemGenericAllocationHandle hv)
{
    for (struct sd_vmh *h = sd.vmhs; h; h = h->next)
        if ((CUmemGenericAllocationHandle)(uintptr_t)h == hv && !h->released)
            return h;
    return NULL;
}

/* The memory lives on while mapped, as documented. Each reference (the
 * create, each retain) is released once. */
static CUresult mem_release(CUmemGenericAllocationHandle hv)
{
    struct sd_vmh *h = find_vmh(hv);
    if (!h)
        return CUDA_ERROR_INVALID_VALUE;
    if (--h->refs > 0)
        return CUDA_SUCCESS;
    h->released = 1;
    handle_put(h);
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    SD_BODY(mem_release(handle));
}

/* The handle of the allocation mapped at addr, one reference more (valid
 * again even when the program had released its own: the mapping held the
 * allocation). addr must lie in a mapping. */
static CUresult retain_handle(CUmemGenericAllocationHandle *out, void *addr)
{
    if (!out || !addr)
        return CUDA_ERROR_INVALID_VALUE;
    struct sd_alloc *a = sd_lookup((uintptr_t)addr);
    if (!a || a->kind != SD_MEM_VMM)
        return CUDA_ERROR_INVALID_VALUE;
    struct sd_vmh *h = a->vmh;
    h->refs++;
    h->released = 0;
    *out = (CUmemGenericAllocationHandle)(uintptr_t)h;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle,
                                                    void *addr)
{
    SD_BODY(retain_handle(handle, addr));
}

static CUresult mem_map(CUdeviceptr ptr, size_t size, size_t offset,
                        CUmemGenericAllocationHandle hv, unsigned long long flags)
{
    struct sd_vmh *h = find_vmh(hv);
    if (!h || flags != 0 || size == 0 || ptr % SD_GRANULE || size % SD_GRANULE ||
        offset % SD_GRANULE || offset > h->size || size > h->size - offset)
        return CUDA_ERROR_INVALID_VALUE;
    if (!find_res(ptr, size))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sd.nallocs; i++)
        if (sd.allocs[i].base < ptr + size && ptr < sd.allocs[i].base + sd.allocs[i].size)
            return CUDA_ERROR_INVALID_VALUE;   /* already mapped there */
    void *p = mmap((void *)ptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, h->fd,
                   (off_t)offset);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sd_alloc a = {0};
    a.base = ptr;
    a.size = size;
    a.kind = SD_MEM_VMM;
    a.dev = h->dev;
    a.arena = -1;
    a.vmh = h;
    if (!sd_insert_alloc(&a)) {
        mmap(p, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->maps++;
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                 CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    SD_BODY(mem_map(ptr, size, offset, handle, flags));
}

/* The range must cover whole mappings. Queued work runs first. */
static CUresult mem_unmap(CUdeviceptr ptr, size_t size)
{
    if (size == 0 || ptr + size < ptr)
        return CUDA_ERROR_INVALID_VALUE;
    size_t covered = 0;
    for (size_t i = 0; i < sd.nallocs; i++) {
        const struct sd_alloc *a = &sd.allocs[i];
        if (a->base < ptr + size && ptr < a->base + a->size) {
            if (a->kind != SD_MEM_VMM || a->base < ptr || a->base + a->size > ptr + size)
                return CUDA_ERROR_INVALID_VALUE;
            covered += a->size;
        }
    }
    if (covered == 0)
        return CUDA_ERROR_INVALID_VALUE;
    sd_flush_all();
    for (size_t k = sd.nallocs; k-- > 0;)
        if (sd.allocs[k].kind == SD_MEM_VMM && sd.allocs[k].base >= ptr &&
            sd.allocs[k].base < ptr + size)
            unmap_record(&sd.allocs[k]);
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    SD_BODY(mem_unmap(ptr, size));
}

/* Every byte of the range must be mapped. */
static CUresult set_access(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                           size_t count)
{
    if (size == 0 || !desc || count == 0 || ptr + size < ptr)
        return CUDA_ERROR_INVALID_VALUE;
    for (uintptr_t p = ptr; p < ptr + size;) {
        struct sd_alloc *a = sd_lookup(p);
        if (!a || a->kind != SD_MEM_VMM)
            return CUDA_ERROR_INVALID_VALUE;
        for (size_t i = 0; i < count; i++) {
            CUresult r = sd_check_access_desc(&desc[i], a->dev);
            if (r != CUDA_SUCCESS)
                return r;
        }
        p = a->base + a->size;
    }
    for (uintptr_t p = ptr; p < ptr + size;) {
        struct sd_alloc *a = sd_lookup(p);
        for (size_t i = 0; i < count; i++)
            a->access[desc[i].location.id] = desc[i].flags;
        a->access_sets++;
        p = a->base + a->size;
    }
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                       size_t count)
{
    SD_BODY(set_access(ptr, size, desc, count));
}

static CUresult get_access(unsigned long long *flags, const CUmemLocation *loc, CUdeviceptr ptr)
{
    if (!flags || !loc || loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sd_valid_dev(loc->id))
        return CUDA_ERROR_INVALID_DEVICE;
    struct sd_alloc *a = sd_lookup(ptr);
    if (!a || a->kind != SD_MEM_VMM)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = a->access[loc->id];
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                                       CUdeviceptr ptr)
{
    SD_BODY(get_access(flags, location, ptr));
}

/* The reservation holding ptr, for pointer attributes (0 when none). */
uintptr_t sd_vmm_range(uintptr_t ptr, size_t *size)
{
    struct sd_res *r = find_res(ptr, 1);
    if (!r)
        return 0;
    *size = r->size;
    return r->base;
}

int sd_vmm_span_mapped(const struct sd_alloc *a, uintptr_t p, size_t n)
{
    uintptr_t end = p + n;
    if (end < p)
        return 0;
    while (a->base + a->size < end) {
        const struct sd_alloc *b = sd_lookup(a->base + a->size);
        if (!b || b->kind != SD_MEM_VMM)
            return 0;
        a = b;
    }
    return 1;
}

int sd_vmm_span_reachable(uintptr_t p, size_t n, int dev)
{
    for (uintptr_t q = p; q < p + n;) {
        const struct sd_alloc *a = sd_lookup(q);
        if (!a || a->kind != SD_MEM_VMM || a->access[dev] == CU_MEM_ACCESS_FLAGS_PROT_NONE)
            return 0;
        q = a->base + a->size;
    }
    return 1;
}

int sd_vmm_contains(uintptr_t p)
{
    return vmm_base && p >= (uintptr_t)vmm_base && p - (uintptr_t)vmm_base < SD_VMM_SIZE;
}
