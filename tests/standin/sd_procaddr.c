/* cuGetProcAddress / cuGetProcAddress_v2 over the table of exports, and
 * the error names and strings.
 *
 * Selection, as the driver does it: among the variants of the requested
 * base name whose `since` is not above cudaVersion, the one with the
 * highest `since`; with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the
 * per-thread variant where one qualifies, the legacy one otherwise; flags 0
 * (DEFAULT) behaves as LEGACY_STREAM. The pointer handed back is the
 * exported function itself, the same as dlsym gives. Asking for
 * "cuGetProcAddress" gives cuGetProcAddress_v2 from 12000 on and the
 * 4-argument cuGetProcAddress below, by the same rule. */
#include "sd_internal.h"

#include <string.h>

struct sd_export {
    const char *name;
    const char *base;
    int since;
    int per_thread;
    void *fn;
};

static const struct sd_export exports[] = {
#define SD_EXPORT(name, base, since, pt) {#name, base, since, pt, (void *)&name},
#include "sd_exports.def"
#undef SD_EXPORT
};

static CUresult proc_address(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    if (status)
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    sd_count(SD_COUNT_LOOKUPS, symbol);
    if (flags != CU_GET_PROC_ADDRESS_DEFAULT && flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM &&
        flags != CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        return CUDA_ERROR_INVALID_VALUE;
    int want_pt = flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    const struct sd_export *legacy = NULL, *pt = NULL;
    int known = 0;
    for (size_t i = 0; i < sizeof exports / sizeof exports[0]; i++) {
        const struct sd_export *e = &exports[i];
        if (strcmp(e->base, symbol) != 0)
            continue;
        known = 1;
        if (e->since > version)
            continue;
        const struct sd_export **slot = e->per_thread ? &pt : &legacy;
        if (!*slot || e->since > (*slot)->since)
            *slot = e;
    }
    const struct sd_export *pick = want_pt && pt ? pt : legacy;
    if (!pick) {
        if (status)
            *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = pick->fn;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

/* Callable before cuInit, as the real ones are. */
SD_API CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags)
{
    sd_enter(__func__, 0);
    return sd_leave(proc_address(symbol, pfn, cudaVersion, flags, NULL));
}

SD_API CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                            cuuint64_t flags,
                                            CUdriverProcAddressQueryResult *symbolStatus)
{
    sd_enter(__func__, 0);
    return sd_leave(proc_address(symbol, pfn, cudaVersion, flags, symbolStatus));
}

/* ---- errors ---- */

static const struct {
    CUresult code;
    const char *name;
    const char *text;
} errors[] = {
#define E(c, t) {c, #c, t}
    E(CUDA_SUCCESS, "no error"),
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, "device not ready"),
    E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    E(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access is not supported between these two devices"),
    E(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"),
    E(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled"),
    E(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "cannot set while device is active in this process"),
    E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    E(CUDA_ERROR_TOO_MANY_PEERS, "peer mapping resources exhausted"),
    E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
      "part or all of the requested memory range is already mapped"),
    E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"),
    E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    E(CUDA_ERROR_UNKNOWN, "unknown error"),
#undef E
};

static CUresult error_lookup(CUresult code, const char **p, int text)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == code) {
            *p = text ? errors[i].text : errors[i].name;
            return CUDA_SUCCESS;
        }
    *p = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

const char *sd_error_name(CUresult r)
{
    const char *p;
    return error_lookup(r, &p, 0) == CUDA_SUCCESS ? p : "CUDA_ERROR_?";
}

SD_API CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
    sd_enter(__func__, 0);
    return sd_leave(error_lookup(error, pStr, 0));
}

SD_API CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
    sd_enter(__func__, 0);
    return sd_leave(error_lookup(error, pStr, 1));
}
