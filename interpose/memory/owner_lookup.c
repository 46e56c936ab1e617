#include "owner_lookup.h"

#include "driver.h"

bool resolve_from_driver(CUdeviceptr ptr, struct owner_info *out)
{
    const struct driver_api *d = driver_api();
    if (d->pointer_get_attributes == NULL || ptr == 0)
        return false;
    unsigned int mem_type = 0;
    int ordinal = -2;
    CUcontext ctx = NULL;
    CUdeviceptr start = 0;
    size_t size = 0;
    int managed = 0;
    CUmemoryPool pool = NULL;
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_CONTEXT,       CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,    CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
    };
    void *data[] = {&mem_type, &ordinal, &ctx, &start, &size, &managed, &pool};
    if (d->pointer_get_attributes(sizeof attrs / sizeof attrs[0], attrs, data, ptr) !=
        CUDA_SUCCESS)
        return false;
    struct owner_info info = {0};
    if (managed) {
        info.kind = MEM_KIND_MANAGED;
    } else if (mem_type == CU_MEMORYTYPE_DEVICE) {
        /* Mapped (cuMemMap) memory belongs to no context. */
        info.kind = pool != NULL  ? MEM_KIND_POOL
                    : ctx == NULL ? MEM_KIND_VMM
                                  : MEM_KIND_DEVICE;
    } else if (mem_type == CU_MEMORYTYPE_HOST) {
        info.kind = MEM_KIND_HOST_REGISTERED;
        ordinal = -1;
    } else {
        return false;
    }
    info.device = ordinal < 0 ? -1 : ordinal;
    info.ctx = ctx;
    info.base = (uintptr_t)start;
    info.size = size;
    info.from_driver = true;
    if (info.size == 0 || ptr < start || ptr - start >= size) {
        /* No usable range: describe just this byte, so it is not cached
         * as more than we know. */
        info.base = (uintptr_t)ptr;
        info.size = 1;
    }
    *out = info;
    return true;
}

bool resolve_pointer(CUdeviceptr ptr, struct owner_info *out)
{
    if (ownership_lookup((uintptr_t)ptr, out))
        return true;
    if (!resolve_from_driver(ptr, out))
        return false;
    ownership_add(out);
    return true;
}
