/* CUDA arrays (cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate):
 * opaque handles whose storage takes space in the current device's arena,
 * so that they count in cuMemGetInfo and can fail for lack of memory as on
 * a GPU. Their arena blocks are records of kind SD_MEM_ARRAY, which no
 * pointer lookup finds (a program never sees an array's address). No copy
 * into or out of arrays is modelled. A context's destruction frees its
 * arrays; their handles are then invalid. */
#include <stdlib.h>

#include "sd_internal.h"

enum { ARR_PLAIN, ARR_MIPMAPPED };

struct sd_arr {
    struct sd_arr *next;
    int what;
    uintptr_t base;
    uint64_t buffer_id; /* the arena record's: a block reused later is not ours */
};
struct CUarray_st {
    struct sd_arr hdr;
};
struct CUmipmappedArray_st {
    struct sd_arr hdr;
};

static struct sd_arr *arrays;

static size_t format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

/* Bytes of one level: 0 for a descriptor the driver refuses. */
static size_t level_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch)
{
    size_t e = format_bytes(f);
    if (e == 0 || w == 0 || (ch != 1 && ch != 2 && ch != 4) || (h == 0 && d != 0))
        return 0;
    size_t n = e * ch;
    size_t dims[3] = {w, h ? h : 1, d ? d : 1};
    for (int i = 0; i < 3; i++) {
        if (dims[i] > SIZE_MAX / n)
            return 0;
        n *= dims[i];
    }
    return n;
}

static CUresult reserve(size_t bytes, int what, struct sd_arr **out)
{
    struct CUctx_st *c;
    CUresult r = sd_current(&c);
    if (r != CUDA_SUCCESS)
        return r;
    struct sd_arr *h = calloc(1, what == ARR_PLAIN ? sizeof(struct CUarray_st)
                                                    : sizeof(struct CUmipmappedArray_st));
    if (h == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sd_alloc a = {0};
    a.arena = c->dev;
    r = sd_alloc_in_arena(a.arena, bytes, &a.footprint, &a.base);
    if (r != CUDA_SUCCESS) {
        free(h);
        return r;
    }
    a.size = bytes;
    a.kind = SD_MEM_ARRAY;
    a.dev = c->dev;
    a.ctx = c;
    struct sd_alloc *rec = sd_insert_alloc(&a);
    if (rec == NULL) {
        sd.arena[a.arena].used -= a.footprint;
        free(h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->what = what;
    h->base = a.base;
    h->buffer_id = rec->buffer_id;
    h->next = arrays;
    arrays = h;
    *out = h;
    return CUDA_SUCCESS;
}

/* The live arena record of a handle we gave out, or NULL. */
static struct sd_alloc *record_of(const struct sd_arr *h, int what)
{
    for (const struct sd_arr *p = arrays; p; p = p->next)
        if (p == h && p->what == what)
            for (size_t i = 0; i < sd.nallocs; i++)
                if (sd.allocs[i].base == h->base && sd.allocs[i].buffer_id == h->buffer_id &&
                    sd.allocs[i].kind == SD_MEM_ARRAY)
                    return &sd.allocs[i];
    return NULL;
}

static void forget(struct sd_arr *h)
{
    for (struct sd_arr **p = &arrays; *p; p = &(*p)->next)
        if (*p == h) {
            *p = h->next;
            free(h);
            return;
        }
}

static CUresult destroy(struct sd_arr *h, int what)
{
    struct sd_alloc *a = record_of(h, what);
    if (a == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    sd_flush_all();
    sd_remove_alloc(record_of(h, what)); /* flushing may have moved the table */
    forget(h);
    return CUDA_SUCCESS;
}

static CUresult array3d_create(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    if (out == NULL || d == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    size_t n = level_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels);
    if (n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct sd_arr *h = NULL;
    CUresult r = reserve(n, ARR_PLAIN, &h);
    if (r == CUDA_SUCCESS)
        *out = (CUarray)h;
    return r;
}
SD_API CUresult CUDAAPI cuArray3DCreate_v2(CUarray *pHandle,
                                           const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    SD_BODY(array3d_create(pHandle, pAllocateArray));
}

/* A 2D (or 1D) array is a 3D one of depth 0. */
static CUresult array_create(CUarray *out, const CUDA_ARRAY_DESCRIPTOR *d)
{
    if (d == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = d->Width, .Height = d->Height,
                                  .Format = d->Format, .NumChannels = d->NumChannels};
    return array3d_create(out, &d3);
}
SD_API CUresult CUDAAPI cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    SD_BODY(array_create(pHandle, pAllocateArray));
}

/* Each level halves every dimension that is not 0 (down to 1); a level
 * count past the last 1x1x1 level is refused. */
static CUresult mipmapped_create(CUmipmappedArray *out, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                 unsigned levels)
{
    if (out == NULL || d == NULL || levels == 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t w = d->Width, h = d->Height, dp = d->Depth, total = 0;
    for (unsigned l = 0; l < levels; l++) {
        size_t n = level_bytes(w, h, dp, d->Format, d->NumChannels);
        if (n == 0 || total + n < total)
            return CUDA_ERROR_INVALID_VALUE;
        total += n;
        if (l + 1 < levels && w == 1 && h <= 1 && dp <= 1)
            return CUDA_ERROR_INVALID_VALUE;
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : h;
        dp = dp > 1 ? dp / 2 : dp;
    }
    struct sd_arr *a = NULL;
    CUresult r = reserve(total, ARR_MIPMAPPED, &a);
    if (r == CUDA_SUCCESS)
        *out = (CUmipmappedArray)a;
    return r;
}
SD_API CUresult CUDAAPI cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                               const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                               unsigned int numMipmapLevels)
{
    SD_BODY(mipmapped_create(pHandle, pMipmappedArrayDesc, numMipmapLevels));
}

SD_API CUresult CUDAAPI cuArrayDestroy(CUarray hArray)
{
    SD_BODY(destroy((struct sd_arr *)hArray, ARR_PLAIN));
}

SD_API CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    SD_BODY(destroy((struct sd_arr *)hMipmappedArray, ARR_MIPMAPPED));
}

void sd_arrays_free(void)
{
    while (arrays) {
        struct sd_arr *h = arrays;
        arrays = h->next;
        free(h);
    }
}
