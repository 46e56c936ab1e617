/* Self-test of the stand-in driver, without any shim: the model itself
 * (memory per device, path accounting, peer-access error codes,
 * cuGetProcAddress selection, resets here; pointer queries, pools and VMM
 * in test_standin_memory.c; CUDA arrays in test_standin_arrays.c; the
 * ordering model, batches, 2D/3D and threads in test_standin_copies.c).
 * Configuration is set with setenv + standin_reload_config. */
#include "test_standin.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int check_failures;

void config(const char *devices, const char *topology, const char *max_peers,
            const char *fail_enable)
{
    const char *names[] = {"STANDIN_DEVICES", "STANDIN_TOPOLOGY", "STANDIN_MAX_PEERS",
                           "STANDIN_FAIL_ENABLE"};
    const char *vals[] = {devices, topology, max_peers, fail_enable};
    for (int i = 0; i < 4; i++) {
        if (vals[i])
            setenv(names[i], vals[i], 1);
        else
            unsetenv(names[i]);
    }
    setenv("STANDIN_ARENA_MB", "64", 1);
    standin_reload_config();
    OK(cuInit(0));
}

CUcontext ctx[8];

void retain_all(int n)
{
    for (int d = 0; d < n; d++)
        OK(cuDevicePrimaryCtxRetain(&ctx[d], d));
}

struct standin_stats stats(void)
{
    struct standin_stats s;
    standin_get_stats(&s);
    return s;
}

int all_bytes(CUdeviceptr p, unsigned char v, size_t n)
{
    unsigned char *h = malloc(n);
    int ok = h && cuMemcpyDtoH_v2(h, p, n) == CUDA_SUCCESS;
    for (size_t i = 0; ok && i < n; i++)
        ok = h[i] == v;
    free(h);
    return ok;
}

CUdeviceptr alloc_on(int d, size_t n, unsigned char fill)
{
    CUdeviceptr p = 0;
    OK(cuCtxSetCurrent(ctx[d]));
    OK(cuMemAlloc_v2(&p, n));
    OK(cuMemsetD8_v2(p, fill, n));
    return p;
}

/* ------------------------------------------------------------------ */

static void test_before_init(void)
{
    int n = 0, v = 0;
    EXPECT(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    OK(cuDriverGetVersion(&v));
    CHECK(v == 13000);
    void *fn = NULL;
    OK(cuGetProcAddress_v2("cuMemcpy", &fn, 4000, 0, NULL));
    CHECK(fn == (void *)&cuMemcpy);
}

static void test_devices_and_memory(void)
{
    config("4", NULL, NULL, NULL);
    int n = 0, v = -1;
    char name[64];
    CUdevice dev;
    OK(cuDeviceGetCount(&n));
    CHECK(n == 4);
    EXPECT(cuDeviceGet(&dev, 4), CUDA_ERROR_INVALID_DEVICE);
    OK(cuDeviceGet(&dev, 3));
    OK(cuDeviceGetName(name, sizeof name, 2));
    CHECK(strcmp(name, "Stand-in GPU 2") == 0);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
    CHECK(v == 1);
    OK(cuDeviceCanAccessPeer(&v, 1, 1));
    CHECK(v == 0);
    OK(cuDeviceCanAccessPeer(&v, 1, 3));
    CHECK(v == 1);
    OK(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1));
    CHECK(v == 1);
    OK(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, 0, 1));
    CHECK(v == 0);
    size_t total = 0;
    OK(cuDeviceTotalMem_v2(&total, 0));
    CHECK(total == (size_t)64 << 20);

    CUdeviceptr p = 0;
    EXPECT(cuMemAlloc_v2(&p, 16), CUDA_ERROR_INVALID_CONTEXT);   /* nothing current */
    retain_all(4);
    CUdeviceptr q[4];
    for (int d = 0; d < 4; d++) {
        OK(cuCtxSetCurrent(ctx[d]));
        OK(cuMemAlloc_v2(&q[d], 1000));
        CHECK(q[d] % 512 == 0);
        CHECK(standin_device_of(q[d]) == d);
        CHECK(standin_device_of(q[d] + 999) == d);
        int ord = -1;
        OK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, q[d] + 10));
        CHECK(ord == d);
        CUdevice cd;
        OK(cuCtxGetDevice(&cd));
        CHECK(cd == d);
    }
    for (int d = 1; d < 4; d++)
        CHECK(q[d] >= q[d - 1] + 1000 || q[d] + 1000 <= q[d - 1]);
    CUdeviceptr big;
    OK(cuMemAlloc_v2(&big, (size_t)4 << 20));
    CHECK(big % ((size_t)2 << 20) == 0);
    size_t fr, tot;
    OK(cuMemGetInfo_v2(&fr, &tot));
    CHECK(tot == (size_t)64 << 20 && fr < tot);
    EXPECT(cuMemAlloc_v2(&p, (size_t)65 << 20), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT(cuMemAlloc_v2(&p, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemFree_v2(big));
    EXPECT(cuMemFree_v2(big), CUDA_ERROR_INVALID_VALUE);          /* twice */
    EXPECT(cuMemFree_v2(q[3] + 8), CUDA_ERROR_INVALID_VALUE);     /* interior */
    CUdeviceptr base;
    size_t size;
    OK(cuMemGetAddressRange_v2(&base, &size, q[3] + 8));
    CHECK(base == q[3] && size == 1000);
    size_t pitch;
    OK(cuMemAllocPitch_v2(&p, &pitch, 100, 10, 4));
    CHECK(pitch >= 100 && pitch % 512 == 0);
    OK(cuMemFree_v2(p));
    for (int d = 0; d < 4; d++)
        OK(cuMemFree_v2(q[d]));
}

/* Cross-device copies: staged without peer access, peer with either
 * direction enabled; bytes right either way. */
static void test_paths(void)
{
    config("2", NULL, NULL, NULL);
    retain_all(2);
    const size_t n = 4096;
    CUdeviceptr a = alloc_on(0, n, 0xab), b = alloc_on(1, n, 0x00);
    standin_reset_stats();
    OK(cuCtxSetCurrent(ctx[0]));
    OK(cuMemcpyPeer(b, ctx[1], a, ctx[0], n));
    CHECK(all_bytes(b, 0xab, n));
    struct standin_stats s = stats();
    CHECK(s.staged_copies == 1 && s.staged_bytes == n && s.peer_copies == 0);
    CHECK(s.d2h_copies == 1);   /* the check's own DtoH */

    OK(cuCtxEnablePeerAccess(ctx[1], 0));          /* 0 -> 1 */
    CHECK(standin_peer_enabled(ctx[0], ctx[1]) && !standin_peer_enabled(ctx[1], ctx[0]));
    OK(cuMemsetD8_v2(a, 0x11, n));
    OK(cuMemcpyDtoD_v2(b, a, n));
    CHECK(all_bytes(b, 0x11, n));
    OK(cuMemcpy(a, b, n));                         /* other direction: also peer */
    s = stats();
    CHECK(s.peer_copies == 2 && s.peer_bytes == 2 * n && s.staged_copies == 1);
    OK(cuCtxDisablePeerAccess(ctx[1]));
    OK(cuCtxSetCurrent(ctx[1]));
    OK(cuCtxEnablePeerAccess(ctx[0], 0));          /* only 1 -> 0 */
    OK(cuCtxSetCurrent(ctx[0]));
    OK(cuMemcpyPeerAsync(b, ctx[1], a, ctx[0], n, NULL));
    OK(cuCtxSynchronize());
    s = stats();
    CHECK(s.peer_copies == 3 && s.staged_copies == 1);
    CHECK(standin_calls("cuMemcpyPeerAsync") == 1 && standin_calls("cuMemcpyPeer") == 1);
    CHECK(standin_calls("cuMemcpyPeer_ptds") == 0);

    /* Same device, host <-> device, host <-> host. */
    CUdeviceptr a2 = alloc_on(0, n, 0);
    unsigned char host[64] = {0}, host2[64];
    standin_reset_stats();
    OK(cuMemcpy(a2, a, n));
    OK(cuMemcpy(a2, (CUdeviceptr)(uintptr_t)host, sizeof host));
    OK(cuMemcpy((CUdeviceptr)(uintptr_t)host2, (CUdeviceptr)(uintptr_t)host, sizeof host));
    s = stats();
    CHECK(s.same_device_copies == 1 && s.h2d_copies == 1 && s.h2h_copies == 1);
    CHECK(standin_calls("cuMemcpy") == 3);

    /* Bad operands. */
    EXPECT(cuMemcpyDtoD_v2(b, 0, n), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemcpyDtoD_v2(b, (CUdeviceptr)(uintptr_t)host, 16), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemcpyDtoD_v2(b, a, n + 1), CUDA_ERROR_INVALID_VALUE);
    OK(cuMemcpyDtoD_v2(b, 0, 0));                  /* size 0: nothing to do */
    EXPECT(cuMemcpyAsync(b, a, n, (CUstream)(uintptr_t)0x1234), CUDA_ERROR_INVALID_HANDLE);
    EXPECT(cuMemcpyPeer(b, (CUcontext)(uintptr_t)0x99, a, ctx[0], n), CUDA_ERROR_INVALID_CONTEXT);
    OK(cuCtxSetCurrent(NULL));
    EXPECT(cuMemcpyDtoD_v2(b, a, n), CUDA_ERROR_INVALID_CONTEXT);
}

static void test_peer_errors(void)
{
    config("4", "islands", NULL, NULL);
    retain_all(4);
    CUcontext bogus = (CUcontext)(uintptr_t)0x5678;
    standin_reset_stats();
    OK(cuCtxSetCurrent(NULL));
    EXPECT(cuCtxEnablePeerAccess(ctx[1], 0), CUDA_ERROR_INVALID_CONTEXT);   /* none current */
    OK(cuCtxSetCurrent(ctx[0]));
    EXPECT(cuCtxEnablePeerAccess(ctx[1], 1), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuCtxEnablePeerAccess(bogus, 0), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(cuCtxEnablePeerAccess(ctx[0], 0), CUDA_ERROR_INVALID_DEVICE);
    CUcontext other;
    OK(cuCtxCreate_v2(&other, 0, 0));              /* pushed: now current */
    OK(cuCtxPopCurrent_v2(NULL));
    EXPECT(cuCtxEnablePeerAccess(other, 0), CUDA_ERROR_INVALID_DEVICE);     /* same device */
    int can = -1;
    OK(cuDeviceCanAccessPeer(&can, 0, 2));
    CHECK(can == 0);
    EXPECT(cuCtxEnablePeerAccess(ctx[2], 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
    OK(cuCtxEnablePeerAccess(ctx[1], 0));
    EXPECT(cuCtxEnablePeerAccess(ctx[1], 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    CHECK((int)CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED == 704);
    OK(cuCtxDisablePeerAccess(ctx[1]));
    EXPECT(cuCtxDisablePeerAccess(ctx[1]), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    CHECK((int)CUDA_ERROR_PEER_ACCESS_NOT_ENABLED == 705);
    EXPECT(cuCtxDisablePeerAccess(bogus), CUDA_ERROR_INVALID_CONTEXT);
    OK(cuCtxDestroy_v2(other));
    EXPECT(cuCtxEnablePeerAccess(other, 0), CUDA_ERROR_INVALID_CONTEXT);    /* destroyed */
    struct standin_stats s = stats();
    CHECK(s.peer_enable_calls == 9 && s.peer_enable_ok == 1);
    CHECK(s.peer_disable_calls == 3 && s.peer_disable_ok == 1);

    /* The peer limit, and an injected failure. */
    config("4", "full", "2", "0:3");
    retain_all(4);
    OK(cuCtxSetCurrent(ctx[0]));
    OK(cuDeviceCanAccessPeer(&can, 0, 3));
    CHECK(can == 1);
    EXPECT(cuCtxEnablePeerAccess(ctx[3], 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
    CHECK(!standin_peer_enabled(ctx[0], ctx[3]));
    OK(cuCtxEnablePeerAccess(ctx[1], 0));
    OK(cuCtxEnablePeerAccess(ctx[2], 0));
    OK(cuCtxSetCurrent(ctx[3]));
    OK(cuCtxEnablePeerAccess(ctx[0], 0));          /* 3 -> 0 is not injected */
    OK(cuCtxSetCurrent(ctx[0]));
    OK(cuCtxDisablePeerAccess(ctx[2]));
    OK(cuCtxEnablePeerAccess(ctx[2], 0));
    config("4", "matrix:0100,1000,0001,0010", "1", NULL);
    retain_all(4);
    OK(cuCtxSetCurrent(ctx[2]));
    OK(cuDeviceCanAccessPeer(&can, 2, 3));
    CHECK(can == 1);
    OK(cuDeviceCanAccessPeer(&can, 2, 1));
    CHECK(can == 0);
    OK(cuCtxEnablePeerAccess(ctx[3], 0));
    CUcontext c3b;
    OK(cuCtxCreate_v2(&c3b, 0, 3));
    OK(cuCtxSetCurrent(ctx[2]));
    EXPECT(cuCtxEnablePeerAccess(c3b, 0), CUDA_ERROR_TOO_MANY_PEERS);
    OK(cuCtxDestroy_v2(c3b));
}

struct pa_case {
    const char *sym;
    int version;
    cuuint64_t flags;
    void *want;   /* NULL: not found */
    CUdriverProcAddressQueryResult status;
};

static void test_proc_address(void)
{
    const CUdriverProcAddressQueryResult OKS = CU_GET_PROC_ADDRESS_SUCCESS,
                                         VNS = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
                                         NF = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const struct pa_case cases[] = {
        {"cuMemcpy", 4000, 0, (void *)&cuMemcpy, OKS},
        {"cuMemcpy", 7000, 1, (void *)&cuMemcpy, OKS},
        {"cuMemcpy", 7000, 2, (void *)&cuMemcpy_ptds, OKS},
        {"cuMemcpy", 4000, 2, (void *)&cuMemcpy, OKS},       /* no ptds yet */
        {"cuMemcpy", 3020, 0, NULL, VNS},
        {"cuMemcpyDtoD", 3020, 0, (void *)&cuMemcpyDtoD_v2, OKS},
        {"cuMemcpyDtoD", 7000, 2, (void *)&cuMemcpyDtoD_v2_ptds, OKS},
        {"cuMemcpyDtoD", 13000, 0, (void *)&cuMemcpyDtoD_v2, OKS},
        {"cuMemcpyPeerAsync", 12000, 2, (void *)&cuMemcpyPeerAsync_ptsz, OKS},
        {"cuMemsetD8", 7000, 2, (void *)&cuMemsetD8_v2_ptds, OKS},
        {"cuMemAlloc", 3020, 2, (void *)&cuMemAlloc_v2, OKS},
        {"cuMemcpyBatchAsync", 12000, 0, NULL, VNS},
        {"cuMemcpyBatchAsync", 12080, 0, (void *)&cuMemcpyBatchAsync, OKS},
        {"cuMemcpyBatchAsync", 12080, 2, (void *)&cuMemcpyBatchAsync_ptsz, OKS},
        {"cuMemcpyBatchAsync", 13000, 0, (void *)&cuMemcpyBatchAsync_v2, OKS},
        {"cuMemcpyBatchAsync", 13000, 1, (void *)&cuMemcpyBatchAsync_v2, OKS},
        {"cuMemcpyBatchAsync", 13000, 2, (void *)&cuMemcpyBatchAsync_v2_ptsz, OKS},
        {"cuMemcpy3DBatchAsync", 13000, 2, (void *)&cuMemcpy3DBatchAsync_v2_ptsz, OKS},
        {"cuDevicePrimaryCtxReset", 7000, 0, (void *)&cuDevicePrimaryCtxReset, OKS},
        {"cuDevicePrimaryCtxReset", 12000, 0, (void *)&cuDevicePrimaryCtxReset_v2, OKS},
        {"cuGetProcAddress", 11030, 0, (void *)&cuGetProcAddress, OKS},
        {"cuGetProcAddress", 12000, 0, (void *)&cuGetProcAddress_v2, OKS},
        {"cuGetProcAddress", 13000, 2, (void *)&cuGetProcAddress_v2, OKS},
        {"cuNoSuchFunction", 13000, 0, NULL, NF},
        {"cuMemcpyDtoD_v2", 13000, 0, NULL, NF},             /* exact names are not bases */
    };
    standin_reset_stats();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct pa_case *c = &cases[i];
        void *fn = (void *)1;
        CUdriverProcAddressQueryResult st = 77;
        CUresult r = cuGetProcAddress_v2(c->sym, &fn, c->version, c->flags, &st);
        if (r != (c->want ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND) || fn != c->want || st != c->status) {
            fprintf(stderr, "cuGetProcAddress_v2(%s, %d, %llu): r=%d fn=%p st=%d\n", c->sym,
                    c->version, (unsigned long long)c->flags, (int)r, fn, (int)st);
            check_failures++;
        }
        fn = (void *)1;
        r = cuGetProcAddress(c->sym, &fn, c->version, c->flags);   /* 4-argument form */
        CHECK(fn == c->want);
        CHECK(r == (c->want ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND));
    }
    void *fn;
    OK(cuGetProcAddress_v2("cuMemcpy", &fn, 13000, 0, NULL));       /* status may be NULL */
    EXPECT(cuGetProcAddress_v2("cuMemcpy", &fn, 13000, 4, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuGetProcAddress_v2(NULL, &fn, 13000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK(standin_lookups("cuMemcpy") == 2 * 5 + 2);
    CHECK(standin_lookups("cuMemcpyBatchAsync") == 12);
    CHECK(standin_calls("cuGetProcAddress") == 25);

    /* A pointer from the table is the function: calls count under its name. */
    config("2", NULL, NULL, NULL);
    retain_all(2);
    CUresult (*dtod)(CUdeviceptr, CUdeviceptr, size_t);
    OK(cuGetProcAddress_v2("cuMemcpyDtoD", (void **)&dtod, 7000, 2, NULL));
    CUdeviceptr a = alloc_on(0, 64, 1), b = alloc_on(0, 64, 2);
    OK(dtod(b, a, 64));
    CHECK(standin_calls("cuMemcpyDtoD_v2_ptds") == 1 && standin_calls("cuMemcpyDtoD_v2") == 0);
}

/* A primary-context reset destroys allocations and peer links; the
 * handle stays. */
static void test_reset(void)
{
    config("2", NULL, NULL, NULL);
    retain_all(2);
    CUdeviceptr b = alloc_on(1, 64, 0);
    OK(cuCtxEnablePeerAccess(ctx[0], 0));
    OK(cuCtxSetCurrent(ctx[0]));
    OK(cuCtxEnablePeerAccess(ctx[1], 0));
    OK(cuDevicePrimaryCtxReset_v2(1));
    CHECK(!standin_peer_enabled(ctx[0], ctx[1]) && !standin_peer_enabled(ctx[1], ctx[0]));
    unsigned type;
    EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, b), CUDA_ERROR_INVALID_VALUE);
    CUcontext again;
    OK(cuDevicePrimaryCtxRetain(&again, 1));
    CHECK(again == ctx[1]);
    OK(cuCtxEnablePeerAccess(ctx[1], 0));          /* enable works again */
    OK(cuDevicePrimaryCtxRelease_v2(1));
    OK(cuDevicePrimaryCtxRelease_v2(1));
    EXPECT(cuDevicePrimaryCtxRelease_v2(1), CUDA_ERROR_INVALID_CONTEXT);
    CHECK(!standin_peer_enabled(ctx[0], ctx[1]));
    OK(cuCtxSetCurrent(ctx[1]));
    CUdeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 64), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    OK(cuDevicePrimaryCtxRetain(&again, 1));
    OK(cuMemAlloc_v2(&p, 64));
    OK(cuMemFree_v2(p));
}

int main(void)
{
    test_before_init();
    test_devices_and_memory();
    test_paths();
    test_peer_errors();
    test_pointer_attributes();
    test_pools();
    test_vmm();
    test_vmm_span();
    test_arrays();
    test_proc_address();
    test_ordering();
    test_batches_and_2d();
    test_reset();
    test_threads();
    if (check_failures) {
        fprintf(stderr, "test_standin: %d failure(s)\n", check_failures);
        return 1;
    }
    printf("test_standin: all checks passed\n");
    return 0;
}
