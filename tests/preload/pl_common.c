#define _GNU_SOURCE
#include "pl_common.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Atomic int pl_failures;

void pl_fail(const char *file, int line, const char *fmt, ...)
{
    const char *base = strrchr(file, '/');
    va_list ap;
    fprintf(stderr, "FAIL %s:%d: ", base ? base + 1 : file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    pl_failures++;
}

static const char *rc_name(CUresult r)
{
    static char buf[32];
    snprintf(buf, sizeof buf, "%d", (int)r);
    return buf;
}

int pl_ok(CUresult r, const char *what, const char *file, int line)
{
    if (r == CUDA_SUCCESS)
        return 1;
    pl_fail(file, line, "%s returned %s", what, rc_name(r));
    return 0;
}

int pl_rc(CUresult r, CUresult want, const char *what, const char *file, int line)
{
    if (r == want)
        return 1;
    pl_fail(file, line, "%s returned %d, expected %d", what, (int)r, (int)want);
    return 0;
}

int pl_finish(const char *program)
{
    if (pl_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", program, (int)pl_failures);
        return 1;
    }
    return 0;
}

const char *pl_object_of(const void *fn)
{
    Dl_info info;
    if (fn == NULL || dladdr(fn, &info) == 0 || info.dli_fname == NULL)
        return "?";
    const char *base = strrchr(info.dli_fname, '/');
    return base ? base + 1 : info.dli_fname;
}

const char *pl_symbol_of(const void *fn)
{
    Dl_info info;
    if (fn == NULL || dladdr(fn, &info) == 0 || info.dli_sname == NULL)
        return "?";
    return info.dli_sname;
}

int pl_shim_loaded(void)
{
    return strcmp(pl_object_of((const void *)&cuMemcpyPeer), "libp2pshim.so") == 0;
}

int pl_want_shim(int argc, char **argv)
{
    int want;
    if (argc >= 2 && strcmp(argv[1], "shim") == 0) {
        want = 1;
    } else if (argc >= 2 && strcmp(argv[1], "noshim") == 0) {
        want = 0;
    } else {
        fprintf(stderr, "usage: %s shim|noshim ...\n", argv[0]);
        exit(2);
    }
    if (pl_shim_loaded() != want) {
        fprintf(stderr, "FAIL: run as '%s' but cuMemcpyPeer resolves to %s\n", argv[1],
                pl_object_of((const void *)&cuMemcpyPeer));
        exit(1);
    }
    return want;
}

int pl_init(struct pl_env *env)
{
    memset(env, 0, sizeof *env);
    if (!PL_OK(cuInit(0)) || !PL_OK(cuDeviceGetCount(&env->ndev)))
        exit(pl_finish("pl_init"));
    if (env->ndev > PL_MAX_DEV)
        env->ndev = PL_MAX_DEV;
    for (int d = 0; d < env->ndev; d++)
        if (!PL_OK(cuDevicePrimaryCtxRetain(&env->ctx[d], d)))
            exit(pl_finish("pl_init"));
    pl_use(env->ctx[0]);
    return env->ndev;
}

CUcontext pl_fresh_ctx(int dev)
{
    CUcontext c = NULL, popped = NULL;
    PL_OK(cuCtxCreate_v2(&c, 0, dev));
    PL_OK(cuCtxPopCurrent_v2(&popped));
    PL_EXPECT(popped == c, "cuCtxCreate did not push its context");
    return c;
}

void pl_use(CUcontext ctx)
{
    PL_OK(cuCtxSetCurrent(ctx));
}

CUdeviceptr pl_alloc(CUcontext ctx, size_t n)
{
    CUdeviceptr p = 0;
    CUcontext popped;
    PL_OK(cuCtxPushCurrent_v2(ctx));
    if (!PL_OK(cuMemAlloc_v2(&p, n)))
        p = 0;
    PL_OK(cuCtxPopCurrent_v2(&popped));
    return p;
}

void pl_free(CUcontext ctx, CUdeviceptr p)
{
    CUcontext popped;
    PL_OK(cuCtxPushCurrent_v2(ctx));
    PL_OK(cuMemFree_v2(p));
    PL_OK(cuCtxPopCurrent_v2(&popped));
}

unsigned char pl_pattern(unsigned seed, size_t i)
{
    uint32_t x = (uint32_t)(seed * 2654435761u) ^ (uint32_t)(i * 40503u) ^ (uint32_t)(i >> 8);
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    return (unsigned char)x;
}

static void h2d(CUcontext ctx, CUdeviceptr d, const void *h, size_t n)
{
    CUcontext popped;
    PL_OK(cuCtxPushCurrent_v2(ctx));
    PL_OK(cuMemcpyHtoD_v2(d, h, n));
    PL_OK(cuCtxPopCurrent_v2(&popped));
}

static void d2h(CUcontext ctx, void *h, CUdeviceptr d, size_t n)
{
    CUcontext popped;
    PL_OK(cuCtxPushCurrent_v2(ctx));
    PL_OK(cuMemcpyDtoH_v2(h, d, n));
    PL_OK(cuCtxPopCurrent_v2(&popped));
}

void pl_fill(CUcontext ctx, CUdeviceptr d, size_t n, unsigned seed)
{
    unsigned char *h = malloc(n);
    if (!h)
        abort();
    for (size_t i = 0; i < n; i++)
        h[i] = pl_pattern(seed, i);
    h2d(ctx, d, h, n);
    free(h);
}

void pl_set(CUcontext ctx, CUdeviceptr d, size_t n, unsigned char v)
{
    unsigned char *h = malloc(n);
    if (!h)
        abort();
    memset(h, v, n);
    h2d(ctx, d, h, n);
    free(h);
}

int pl_verify(CUcontext ctx, CUdeviceptr d, size_t n, unsigned seed, const char *what)
{
    unsigned char *h = malloc(n);
    if (!h)
        abort();
    memset(h, 0, n);
    d2h(ctx, h, d, n);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (h[i] != pl_pattern(seed, i))
            bad = i;
    if (bad != n)
        pl_fail(__FILE__, __LINE__, "%s: wrong byte at offset %zu of %zu: 0x%02x, expected 0x%02x",
                what, bad, n, h[bad], pl_pattern(seed, bad));
    free(h);
    return bad == n;
}

uint64_t pl_checksum(CUcontext ctx, CUdeviceptr d, size_t n)
{
    unsigned char *h = malloc(n);
    uint64_t x = 1469598103934665603ull;
    if (!h)
        abort();
    memset(h, 0, n);
    d2h(ctx, h, d, n);
    for (size_t i = 0; i < n; i++)
        x = (x ^ h[i]) * 1099511628211ull;
    free(h);
    return x;
}

const char *pl_ctx_name(const struct pl_env *env, CUcontext c)
{
    static const char *const names[PL_MAX_DEV] = {"ctx0", "ctx1", "ctx2", "ctx3",
                                                   "ctx4", "ctx5", "ctx6", "ctx7"};
    if (c == NULL)
        return "none";
    for (int d = 0; d < env->ndev; d++)
        if (env->ctx[d] == c)
            return names[d];
    return "other";
}

static CUcontext t_before;

void pl_t_begin(void)
{
    t_before = (CUcontext)-1;
    PL_OK(cuCtxGetCurrent(&t_before));
}

CUresult pl_t_end(const struct pl_env *env, const char *label, CUresult r)
{
    CUcontext after = (CUcontext)-1;
    PL_OK(cuCtxGetCurrent(&after));
    printf("%s: rc=%d cur=%s->%s\n", label, (int)r, pl_ctx_name(env, t_before),
           pl_ctx_name(env, after));
    return r;
}

void pl_stats(struct standin_stats *s)
{
    standin_get_stats(s);
}

void *pl_driver_handle(void)
{
    static void *h;
    if (h == NULL)
        h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return h;
}

void *pl_driver_sym(const char *name)
{
    void *h = pl_driver_handle();
    return h ? dlsym(h, name) : NULL;
}

CUmemAccessDesc pl_access_rw(int dev)
{
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = dev;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return d;
}

CUmemAllocationProp pl_device_prop(int dev)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    return prop;
}

size_t pl_vmm_round(int dev, size_t n)
{
    CUmemAllocationProp prop = pl_device_prop(dev);
    size_t g = 0;
    PL_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    return (n + g - 1) / g * g;
}
