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
 * 4-argument cuGetProcAddress below, by the same rule.
 *
 * A tool named by CUDA_INJECTION64_PATH is loaded at the first cuInit, as
 * the driver loads profilers, and its InitializeInjection() called; it may
 * then put its own functions in place of exports (standin_inject): from
 * then on cuGetProcAddress hands out the tool's function for that variant,
 * as the driver hands out a profiler's. dlsym still gives the export. */
#include "sd_internal.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How cuGetProcAddress finds a variant (hooks.def's convention). */
struct sd_values {
    const char *base;
    int since;
    int per_thread;
};

struct sd_export {
    const char *name;
    const struct sd_values *v;
    void *fn;
};

/* The values of the shim's hooked variants, from the shim's own list. */
enum sd_hooked {
#define P2PSHIM_HOOK(name, base, since, per_thread, params, args) SDH_##name,
#include "hooks.def"
#undef P2PSHIM_HOOK
    SDH_COUNT
};
static const struct sd_values hooked_values[SDH_COUNT] = {
#define P2PSHIM_HOOK(name, base, since, per_thread, params, args) {base, since, per_thread},
#include "hooks.def"
#undef P2PSHIM_HOOK
};

/* A hooked variant written as a hand-valued SD_EXPORT row redeclares its
 * SDH_ enumerator here: it cannot compile, so it cannot drift. */
enum sd_hand_valued {
#define SD_EXPORT(name, base, since, pt) SDH_##name,
#define SD_HOOKED(name)
#include "sd_exports.def"
#undef SD_EXPORT
#undef SD_HOOKED
};

static const struct sd_export exports[] = {
#define SD_EXPORT(name, base, since, pt)                                          \
    {#name, &(const struct sd_values){base, since, pt}, (void *)&name},
#define SD_HOOKED(name) {#name, &hooked_values[SDH_##name], (void *)&name},
#include "sd_exports.def"
#undef SD_EXPORT
#undef SD_HOOKED
};

/* ---- injected tools ---- */

#define SD_MAX_INJECTED 64
static struct {
    const struct sd_export *export;
    _Atomic(void *) fn;
} injected[SD_MAX_INJECTED];
static atomic_int injected_count;
static pthread_mutex_t inject_mu = PTHREAD_MUTEX_INITIALIZER;

static const struct sd_export *export_named(const char *name)
{
    for (size_t i = 0; name && i < sizeof exports / sizeof exports[0]; i++)
        if (strcmp(exports[i].name, name) == 0)
            return &exports[i];
    return NULL;
}

SD_API int standin_inject(const char *exact_name, void *replacement, void **original)
{
    const struct sd_export *e = export_named(exact_name);
    if (!e || !replacement)
        return -1;
    if (original)
        *original = e->fn;
    pthread_mutex_lock(&inject_mu);
    int n = atomic_load(&injected_count), i = 0;
    while (i < n && injected[i].export != e)
        i++;
    if (i == SD_MAX_INJECTED) {
        pthread_mutex_unlock(&inject_mu);
        return -1;
    }
    injected[i].export = e;
    atomic_store(&injected[i].fn, replacement);
    if (i == n)
        atomic_store(&injected_count, n + 1);
    pthread_mutex_unlock(&inject_mu);
    return 0;
}

/* What cuGetProcAddress hands out for export e: a tool's function if one
 * took its place, else the export itself. */
static void *handed_out(const struct sd_export *e)
{
    int n = atomic_load(&injected_count);
    for (int i = 0; i < n; i++)
        if (injected[i].export == e)
            return atomic_load(&injected[i].fn);
    return e->fn;
}

static void load_injection(void)
{
    const char *path = getenv("CUDA_INJECTION64_PATH");
    if (!path || !*path)
        return;
    void *tool = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    int (*init)(void) = tool ? (int (*)(void))dlsym(tool, "InitializeInjection") : NULL;
    if (!init) {
        fprintf(stderr, "standin: CUDA_INJECTION64_PATH=%s: %s\n", path,
                tool ? "no InitializeInjection" : dlerror());
        return;
    }
    init();
}

void sd_load_injection(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, load_injection);
}

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
        if (strcmp(e->v->base, symbol) != 0)
            continue;
        known = 1;
        if (e->v->since > version)
            continue;
        const struct sd_export **slot = e->v->per_thread ? &pt : &legacy;
        if (!*slot || e->v->since > (*slot)->v->since)
            *slot = e;
    }
    const struct sd_export *pick = want_pt && pt ? pt : legacy;
    if (!pick) {
        if (status)
            *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = handed_out(pick);
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
