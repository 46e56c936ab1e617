/* A profiler double, loaded the way the driver loads CUDA_INJECTION64_PATH
 * tools (the stand-in driver dlopens it at cuInit and calls
 * InitializeInjection). Like such tools it puts its own functions in place
 * of the driver's entries (standin_inject): from then on cuGetProcAddress
 * hands out its copy wrappers and, for "cuGetProcAddress" itself, its own
 * resolver. Each wrapper counts its calls and calls the driver's function
 * it replaced. chain_tool_calls(name) reads the counts. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "chain_variants.h"

#define EXPORT __attribute__((visibility("default")))

static void *orig[CHAIN_NVARIANTS];
static _Atomic unsigned long long calls[CHAIN_NVARIANTS], resolver_calls;
static void *orig_gpa5, *orig_gpa4;

#define X(name, base, pt, params, args)                                       \
    static CUresult tool_##name params                                        \
    {                                                                         \
        calls[CHAIN_##name]++;                                                \
        return ((CUresult(*) params)orig[CHAIN_##name]) args;                 \
    }
CHAIN_VARIANTS(X)
#undef X

static CUresult tool_gpa5(const char *symbol, void **pfn, int version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *status)
{
    resolver_calls++;
    return ((chain_gpa5)orig_gpa5)(symbol, pfn, version, flags, status);
}

static CUresult tool_gpa4(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    resolver_calls++;
    return ((chain_gpa4)orig_gpa4)(symbol, pfn, version, flags);
}

EXPORT unsigned long long chain_tool_calls(const char *name)
{
#define X(n, base, pt, params, args)                                          \
    if (strcmp(name, #n) == 0)                                                \
        return calls[CHAIN_##n];
    CHAIN_VARIANTS(X)
#undef X
    return strcmp(name, "cuGetProcAddress") == 0 ? resolver_calls : 0;
}

EXPORT int InitializeInjection(void)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
    int (*inject)(const char *, void *, void **) =
        driver ? (int (*)(const char *, void *, void **))dlsym(driver, "standin_inject") : NULL;
    if (!inject)
        return 0;
    int bad = 0;
#define X(name, base, pt, params, args)                                       \
    bad |= inject(#name, (void *)&tool_##name, &orig[CHAIN_##name]);
    CHAIN_VARIANTS(X)
#undef X
    bad |= inject("cuGetProcAddress_v2", (void *)&tool_gpa5, &orig_gpa5);
    bad |= inject("cuGetProcAddress", (void *)&tool_gpa4, &orig_gpa4);
    return bad ? 0 : 1;
}
