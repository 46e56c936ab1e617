/* Pointer queries: cuPointerGetAttribute and cuPointerGetAttributes.
 *
 * Memory types follow the real driver: device, pool and mapped memory are
 * CU_MEMORYTYPE_DEVICE; pinned and registered host memory
 * CU_MEMORYTYPE_HOST; managed memory reads CU_MEMORYTYPE_DEVICE with
 * IS_MANAGED = 1 (cudart derives cudaMemoryTypeManaged from IS_MANAGED).
 * Boolean attributes are written as unsigned int, as the driver writes
 * them. */
#include "sd_internal.h"

#include <string.h>

/* attr_known's other attributes, the flags and capabilities of known
 * memory a: sync memops off, legacy IPC for plain device memory only, a
 * mapping's access flags for the current device, no P2P tokens; an
 * unknown attribute is CUDA_ERROR_INVALID_VALUE. */
static CUresult attr_flags(CUpointer_attribute attr, void *data, const struct sd_alloc *a)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *(unsigned int *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(unsigned int *)data = a->kind == SD_MEM_DEVICE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(unsigned int *)data = 1;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *(unsigned long long *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
        *(unsigned int *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: {
        struct CUctx_st *c = sd_current_raw();
        unsigned f = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
        if (a->kind == SD_MEM_VMM && c)
            f = a->access[c->dev] == CU_MEM_ACCESS_FLAGS_PROT_NONE
                    ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE
                    : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
        *(unsigned int *)data = f;
        return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
        return CUDA_ERROR_NOT_SUPPORTED;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* Writes one attribute of known memory a holding ptr. strict: the rules
 * of cuPointerGetAttribute (no host pointer for device memory is an
 * error); otherwise cuPointerGetAttributes's (NULL instead). */
static CUresult attr_known(CUpointer_attribute attr, void *data, CUdeviceptr ptr,
                           const struct sd_alloc *a, int strict)
{
    int host = a->kind == SD_MEM_PINNED || a->kind == SD_MEM_REGISTERED;
    int mapped_host = host || a->kind == SD_MEM_MANAGED;
    int dev = a->dev >= 0 ? a->dev : (a->ctx ? a->ctx->dev : -1);
    uintptr_t rbase = a->base;
    size_t rsize = a->size;
    if (a->kind == SD_MEM_VMM)
        rbase = sd_vmm_range(ptr, &rsize);
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = a->ctx;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        if (strict && !sd_current_raw())
            return CUDA_ERROR_INVALID_CONTEXT;
        *(CUdeviceptr *)data = ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (!mapped_host) {
            *(void **)data = NULL;
            return strict ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
        }
        *(void **)data = (void *)(uintptr_t)ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        *(unsigned long long *)data = a->buffer_id;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned int *)data = a->kind == SD_MEM_MANAGED;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = dev;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = rbase;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = rsize;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(CUmemoryPool *)data = a->pool;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        *(size_t *)data = a->size;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        *(CUdeviceptr *)data = a->base;
        return CUDA_SUCCESS;
    default:
        return attr_flags(attr, data, a);
    }
}

/* The documented defaults for memory the driver does not know. */
static CUresult attr_default(CUpointer_attribute attr, void *data)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = NULL; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: *(CUdeviceptr *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: *(void **)data = NULL; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = -2; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: *(size_t *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: *(unsigned long long *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *(CUmemoryPool *)data = NULL; break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE: *(unsigned int *)data = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult get_attribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr)
{
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    struct sd_alloc *a = sd_lookup(ptr);
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    return attr_known(attr, data, ptr, a, 1);
}
SD_API CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                              CUdeviceptr ptr)
{
    SD_BODY(get_attribute(data, attribute, ptr));
}

static CUresult get_attributes(unsigned int n, CUpointer_attribute *attrs, void **data,
                               CUdeviceptr ptr)
{
    if (n == 0 || !attrs || !data)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < n; i++)
        if (!data[i])
            return CUDA_ERROR_INVALID_VALUE;
    struct sd_alloc *a = sd_lookup(ptr);
    for (unsigned i = 0; i < n; i++) {
        CUresult r = a ? attr_known(attrs[i], data[i], ptr, a, 0) : attr_default(attrs[i], data[i]);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}
SD_API CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                               CUpointer_attribute *attributes, void **data,
                                               CUdeviceptr ptr)
{
    SD_BODY(get_attributes(numAttributes, attributes, data, ptr));
}
