#define _GNU_SOURCE
#include "driver.h"
#include "elf_next.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static _Atomic(dlsym_fn) real_dlsym, next_dlsym;
static _Atomic(dlvsym_fn) next_dlvsym;

__attribute__((no_sanitize("address", "undefined", "thread")))
dlvsym_fn driver_next_dlvsym(void)
{
    dlvsym_fn fn = atomic_load_explicit(&next_dlvsym, memory_order_acquire);
    if (fn != NULL)
        return fn;
    fn = (dlvsym_fn)elf_next_definition("dlvsym");
    atomic_store_explicit(&next_dlvsym, fn, memory_order_release);
    return fn;
}
static _Atomic(void *) driver_handle;

__attribute__((no_sanitize("address", "undefined", "thread")))
dlsym_fn driver_real_dlsym(void)
{
    dlsym_fn fn = atomic_load_explicit(&real_dlsym, memory_order_acquire);
    if (fn != NULL)
        return fn;
    /* dlsym moved into libc at 2.34; older glibc has only its first
     * version (2.2.5 on x86-64, 2.17 on AArch64). Called through the
     * pointer: "dlvsym" by name is the shim's own. */
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    dlvsym_fn vsym = driver_next_dlvsym();
    if (vsym == NULL)
        return NULL;
    for (size_t i = 0; fn == NULL && i < sizeof versions / sizeof versions[0]; i++)
        fn = (dlsym_fn)vsym(RTLD_NEXT, "dlsym", versions[i]);
    atomic_store_explicit(&real_dlsym, fn, memory_order_release);
    return fn;
}

__attribute__((no_sanitize("address", "undefined", "thread")))
dlsym_fn driver_next_dlsym(void)
{
    dlsym_fn fn = atomic_load_explicit(&next_dlsym, memory_order_acquire);
    if (fn != NULL)
        return fn;
    /* glibc's versioned lookup passes over unversioned definitions: ask
     * it, unversioned, for the next one after the shim. */
    dlsym_fn glibc = driver_real_dlsym();
    fn = glibc != NULL ? (dlsym_fn)glibc(RTLD_NEXT, "dlsym") : NULL;
    if (fn == NULL)
        fn = glibc;
    atomic_store_explicit(&next_dlsym, fn, memory_order_release);
    return fn;
}

/* Is path a CUDA driver library (libcuda.so, libcuda.so.1, libcuda.so.<version>,
 * under any folder)? Another tool's library is not. */
static bool is_driver_file(const char *path)
{
    const char *base = strrchr(path, '/');
    return strncmp(base != NULL ? base + 1 : path, "libcuda.so", 10) == 0;
}

void driver_note_pointer(void *fn)
{
    Dl_info info;
    if (atomic_load_explicit(&driver_handle, memory_order_acquire) != NULL)
        return;
    if (fn == NULL || dladdr(fn, &info) == 0 || info.dli_fname == NULL ||
        !is_driver_file(info.dli_fname))
        return;
    void *h = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
    void *expected = NULL;
    if (h != NULL &&
        !atomic_compare_exchange_strong(&driver_handle, &expected, h))
        dlclose(h);
}

static void *get_driver_handle(void)
{
    void *h = atomic_load_explicit(&driver_handle, memory_order_acquire);
    if (h != NULL)
        return h;
    h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
    if (h == NULL)
        return NULL;
    void *expected = NULL;
    if (!atomic_compare_exchange_strong(&driver_handle, &expected, h)) {
        dlclose(h);
        h = expected;
    }
    return h;
}

void *driver_symbol(const char *name)
{
    void *h = get_driver_handle();
    dlsym_fn real = driver_real_dlsym();
    if (h == NULL || real == NULL)
        return NULL;
    return real(h, name);
}

static struct driver_api api;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;
static atomic_bool api_ready;

/* Each member's PFN type against cuda.h's declaration of its symbol (the
 * _ptsz variants against the legacy one: cuda.h declares those only by
 * macro), so a wrong version in driver.def fails to compile. */
#define SAME_TYPE(pfn, symbol)                                                  \
    _Static_assert(__builtin_types_compatible_p(pfn, __typeof__(&symbol)),       \
                   #pfn " is not the type of " #symbol);
#define P2PSHIM_DRIVER(field, symbol, pfn) SAME_TYPE(pfn, symbol)
#define P2PSHIM_DRIVER_FLAVOURED(field, symbol, pfn, symbol_ptsz, pfn_ptsz)    \
    SAME_TYPE(pfn, symbol) SAME_TYPE(pfn_ptsz, symbol)
#include "driver.def"
#undef P2PSHIM_DRIVER
#undef P2PSHIM_DRIVER_FLAVOURED

static void resolve_api(void)
{
#define P2PSHIM_DRIVER(field, symbol, pfn) api.field = driver_symbol(#symbol);
#define P2PSHIM_DRIVER_FLAVOURED(field, symbol, pfn, symbol_ptsz, pfn_ptsz)    \
    api.field[0] = driver_symbol(#symbol);                                      \
    api.field[1] = driver_symbol(#symbol_ptsz);
#include "driver.def"
#undef P2PSHIM_DRIVER
#undef P2PSHIM_DRIVER_FLAVOURED
    atomic_store_explicit(&api_ready, api.ctx_get_current != NULL,
                          memory_order_release);
}

const struct driver_api *driver_api(void)
{
    /* A driver may be loaded after our first look: retry until found. */
    if (!atomic_load_explicit(&api_ready, memory_order_acquire)) {
        if (get_driver_handle() == NULL)
            return &api;
        pthread_once(&api_once, resolve_api);
    }
    return &api;
}

int driver_ctx_device(CUcontext ctx)
{
    const struct driver_api *d = driver_api();
    CUdevice dev = -1;
    CUcontext popped = NULL;
    if (ctx == NULL || !d->ctx_push || !d->ctx_pop || !d->ctx_get_device)
        return -1;
    if (d->ctx_push(ctx) != CUDA_SUCCESS)
        return -1;
    if (d->ctx_get_device(&dev) != CUDA_SUCCESS)
        dev = -1;
    d->ctx_pop(&popped);
    return (int)dev;
}

CUcontext driver_stream_ctx(CUstream stream, bool per_thread)
{
    const struct driver_api *d = driver_api();
    CUcontext ctx = NULL;
    if (stream == NULL || stream == P2PSHIM_STREAM_LEGACY ||
        stream == P2PSHIM_STREAM_PER_THREAD) {
        if (d->ctx_get_current == NULL || d->ctx_get_current(&ctx) != CUDA_SUCCESS)
            return NULL;
        return ctx;
    }
    PFN_cuStreamGetCtx_v9020 get = DRIVER_FLAVOUR(d, stream_get_ctx, per_thread);
    if (get == NULL)
        get = DRIVER_FLAVOUR(d, stream_get_ctx, false); /* a driver without _ptsz */
    if (get == NULL || get(stream, &ctx) != CUDA_SUCCESS)
        return NULL;
    return ctx;
}
