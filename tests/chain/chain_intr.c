/* A second LD_PRELOAD interposer, made the way HAMi-core's libvgpu is: it
 * overrides dlsym (glibc's found with dlvsym(RTLD_NEXT, "dlsym",
 * "GLIBC_2.2.5")) so that a lookup of a name it hooks, on any handle, gets
 * its own exported wrapper; its cuGetProcAddress[_v2] asks the resolver it
 * found on the driver's handle, answers "cuGetProcAddress" with itself and
 * substitutes its wrappers for the copy variants it hooks. Unlike
 * HAMi-core, each wrapper calls what the resolver answered for its
 * variant (the driver's export until then), so a profiler's function
 * handed out by the driver stays in the chain. Each wrapper counts its
 * calls; chain_intr_calls(name) reads the counts. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "chain_variants.h"

#define EXPORT __attribute__((visibility("default")))

typedef void *(*dlsym_fn)(void *, const char *);

static _Atomic(void *) next[CHAIN_NVARIANTS];
static _Atomic unsigned long long calls[CHAIN_NVARIANTS], resolver_calls;

static dlsym_fn real_dlsym(void)
{
    static _Atomic(dlsym_fn) fn;
    if (!fn)
        fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    return fn;
}

static void *driver_fn(const char *name)
{
    static _Atomic(void *) driver;
    if (!driver)
        driver = dlopen("libcuda.so.1", RTLD_LAZY);
    return driver ? real_dlsym()(driver, name) : NULL;
}

static void *next_of(enum chain_variant v, const char *name)
{
    void *fn = next[v];
    if (!fn) {
        fn = driver_fn(name);
        next[v] = fn;
    }
    return fn;
}

#define X(name, base, pt, params, args)                                       \
    EXPORT CUresult name params                                               \
    {                                                                         \
        calls[CHAIN_##name]++;                                                \
        CUresult(*fn) params = (CUresult(*) params)next_of(CHAIN_##name, #name); \
        return fn ? fn args : CUDA_ERROR_NOT_INITIALIZED;                     \
    }
CHAIN_VARIANTS(X)
#undef X

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult *status);
EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);

/* The resolver's answer for symbol replaced by our wrapper, when we hook
 * its variant (chosen by the flags, as both variants share a base). */
static void substitute(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    if (!symbol || !pfn || !*pfn)
        return;
    if (strcmp(symbol, "cuGetProcAddress") == 0) {
        *pfn = version >= 12000 ? (void *)&cuGetProcAddress_v2 : (void *)&cuGetProcAddress;
        return;
    }
    int pt = flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
#define X(name, base, per_thread, params, args)                               \
    if (strcmp(symbol, base) == 0 && per_thread == pt) {                      \
        next[CHAIN_##name] = *pfn;                                            \
        *pfn = (void *)&name;                                                 \
        return;                                                               \
    }
    CHAIN_VARIANTS(X)
#undef X
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    resolver_calls++;
    chain_gpa5 real = (chain_gpa5)driver_fn("cuGetProcAddress_v2");
    CUresult r = real ? real(symbol, pfn, version, flags, status) : CUDA_ERROR_NOT_INITIALIZED;
    if (r == CUDA_SUCCESS)
        substitute(symbol, pfn, version, flags);
    return r;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    resolver_calls++;
    chain_gpa4 real = (chain_gpa4)driver_fn("cuGetProcAddress");
    CUresult r = real ? real(symbol, pfn, version, flags) : CUDA_ERROR_NOT_INITIALIZED;
    if (r == CUDA_SUCCESS)
        substitute(symbol, pfn, version, flags);
    return r;
}

EXPORT unsigned long long chain_intr_calls(const char *name)
{
#define X(n, base, pt, params, args)                                          \
    if (strcmp(name, #n) == 0)                                                \
        return calls[CHAIN_##n];
    CHAIN_VARIANTS(X)
#undef X
    return strcmp(name, "cuGetProcAddress") == 0 ? resolver_calls : 0;
}

/* Names we hook come back as ours, on any handle but RTLD_NEXT. */
EXPORT void *dlsym(void *handle, const char *symbol)
{
    if (handle != RTLD_NEXT) {
        if (strcmp(symbol, "cuGetProcAddress_v2") == 0)
            return (void *)&cuGetProcAddress_v2;
        if (strcmp(symbol, "cuGetProcAddress") == 0)
            return (void *)&cuGetProcAddress;
#define X(name, base, pt, params, args)                                       \
        if (strcmp(symbol, #name) == 0)                                       \
            return (void *)&name;
        CHAIN_VARIANTS(X)
#undef X
    }
    return real_dlsym()(handle, symbol);
}
