/* Item 3: errors pass through unchanged.
 *
 * A transcript of bad calls (NULL, unknown and freed pointers, size 0,
 * invalid and destroyed contexts and streams, invalid flags, enabling to
 * self, devices out of range) with their return codes and the current
 * context around each; compare.sh requires it identical without and with
 * the shim. In the middle, cuDevicePrimaryCtxReset_v2(1): afterwards a new
 * allocation and cross copy is upgraded again (shim run: the driver shows
 * the shim re-enabled the link). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_common.h"

#define N ((size_t)16 << 10)

static struct pl_env env;
static int shim;

static void bytes(const char *label, int dev, CUdeviceptr p)
{
    printf("  bytes %s sum=%016llx\n", label,
           (unsigned long long)pl_checksum(env.ctx[dev], p, N));
}

/* A cross copy 0->1 that must work; the shim run checks its path. */
static void good_copy(const char *label, CUdeviceptr dst, CUdeviceptr src, unsigned seed)
{
    struct standin_stats a, b;
    pl_fill(env.ctx[0], src, N, seed);
    pl_use(env.ctx[0]);
    pl_stats(&a);
    PL_T(&env, label, cuMemcpyDtoD_v2(dst, src, N));
    pl_stats(&b);
    if (shim)
        PL_EXPECT(b.peer_copies == a.peer_copies + 1 && b.staged_copies == a.staged_copies,
                  "%s: not a peer copy under the shim", label);
    pl_verify(env.ctx[1], dst, N, seed, label);
    bytes(label, 1, dst);
}

/* The buffers and bogus handles every step below passes to the driver. */
struct scene {
    CUcontext c0, c1;
    CUdeviceptr a0, b1, unknown;
    CUcontext bogus_ctx;
    CUstream bogus_stream;
};

/* NULL, unknown and freed pointers; size 0 */
static void bad_pointers(const struct scene *s)
{
    CUcontext c0 = s->c0, c1 = s->c1;
    CUdeviceptr a0 = s->a0, b1 = s->b1, unknown = s->unknown;
    PL_T(&env, "memcpy dst NULL", cuMemcpy(0, a0, N));
    PL_T(&env, "memcpy src NULL", cuMemcpy(b1, 0, N));
    PL_T(&env, "dtod unknown src", cuMemcpyDtoD_v2(b1, unknown, N));
    PL_T(&env, "dtod unknown dst", cuMemcpyDtoD_v2(unknown, a0, N));
    PL_T(&env, "peer NULL contexts", cuMemcpyPeer(b1, NULL, a0, NULL, N));
    CUdeviceptr freed = pl_alloc(c1, N);
    pl_free(c1, freed);
    pl_use(c0);
    PL_T(&env, "memcpy to freed", cuMemcpy(freed, a0, N));
    PL_T(&env, "peer from freed", cuMemcpyPeer(b1, c1, freed, c1, N));
    PL_T(&env, "free freed", cuMemFree_v2(freed));
    PL_T(&env, "free unknown", cuMemFree_v2(unknown));
    PL_T(&env, "free NULL", cuMemFree_v2(0));
    PL_T(&env, "memcpy size 0", cuMemcpy(b1, a0, 0));
    PL_T(&env, "peer size 0", cuMemcpyPeer(b1, c1, a0, c0, 0));
    PL_T(&env, "peer async size 0", cuMemcpyPeerAsync(b1, c1, a0, c0, 0, NULL));
    PL_T(&env, "past the end", cuMemcpyDtoD_v2(b1, a0 + N / 2, N));
    bytes("untouched", 1, b1);
}

/* structs: NULL, zero extents, nonsense memory types */
static void bad_structs(const struct scene *s)
{
    CUdeviceptr a0 = s->a0, b1 = s->b1;
    PL_T(&env, "2D NULL", cuMemcpy2D_v2(NULL));
    PL_T(&env, "3D NULL", cuMemcpy3D_v2(NULL));
    PL_T(&env, "3D peer NULL", cuMemcpy3DPeer(NULL));
    PL_T(&env, "2D async NULL", cuMemcpy2DAsync_v2(NULL, NULL));
    CUDA_MEMCPY2D c2;
    memset(&c2, 0, sizeof c2);
    c2.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c2.srcDevice = a0;
    c2.srcPitch = 256;
    c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c2.dstDevice = b1;
    c2.dstPitch = 256;
    c2.WidthInBytes = 0;
    c2.Height = 4;
    PL_T(&env, "2D width 0", cuMemcpy2D_v2(&c2));
    c2.WidthInBytes = 512; /* wider than the pitch */
    PL_T(&env, "2D width > pitch", cuMemcpy2D_v2(&c2));
    c2.WidthInBytes = 256;
    c2.dstMemoryType = (CUmemorytype)77;
    PL_T(&env, "2D bad memory type", cuMemcpy2D_v2(&c2));
    size_t zero = 0;
    CUdeviceptr d1[1] = {b1}, s0[1] = {a0};
    size_t sz[1] = {N};
    CUmemcpyAttributes attr;
    memset(&attr, 0, sizeof attr);
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    PL_T(&env, "batch count 0", cuMemcpyBatchAsync_v2(d1, s0, sz, 0, &attr, &zero, 1, NULL));
    PL_T(&env, "batch NULL arrays", cuMemcpyBatchAsync_v2(NULL, NULL, NULL, 1, &attr, &zero, 1,
                                                          NULL));
    PL_T(&env, "batch no attrs", cuMemcpyBatchAsync_v2(d1, s0, sz, 1, NULL, NULL, 0, NULL));
    PL_T(&env, "3D batch NULL", cuMemcpy3DBatchAsync_v2(1, NULL, 0, NULL));
    bytes("after structs", 1, b1);
}

/* invalid and destroyed contexts and streams */
static void bad_contexts_and_streams(const struct scene *s)
{
    CUcontext c0 = s->c0, c1 = s->c1, bogus_ctx = s->bogus_ctx;
    CUdeviceptr a0 = s->a0, b1 = s->b1;
    CUstream bogus_stream = s->bogus_stream;
    PL_T(&env, "peer bogus dst ctx", cuMemcpyPeer(b1, bogus_ctx, a0, c0, N));
    PL_T(&env, "peer bogus src ctx", cuMemcpyPeer(b1, c1, a0, bogus_ctx, N));
    CUcontext dead = NULL, popped = NULL;
    PL_T(&env, "create ctx", cuCtxCreate_v2(&dead, 0, 1));
    PL_T(&env, "pop created", cuCtxPopCurrent_v2(&popped));
    PL_T(&env, "destroy created", cuCtxDestroy_v2(dead));
    PL_T(&env, "destroy again", cuCtxDestroy_v2(dead));
    PL_T(&env, "destroy primary", cuCtxDestroy_v2(c0));
    PL_T(&env, "destroy NULL", cuCtxDestroy_v2(NULL));
    PL_T(&env, "peer destroyed ctx", cuMemcpyPeer(b1, dead, a0, c0, N));
    PL_T(&env, "enable to destroyed", cuCtxEnablePeerAccess(dead, 0));
    PL_T(&env, "enable bogus", cuCtxEnablePeerAccess(bogus_ctx, 0));
    PL_T(&env, "disable bogus", cuCtxDisablePeerAccess(bogus_ctx));
    PL_T(&env, "async bogus stream", cuMemcpyAsync(b1, a0, N, bogus_stream));
    PL_T(&env, "peer async bogus stream", cuMemcpyPeerAsync(b1, c1, a0, c0, N, bogus_stream));
    CUstream gone = NULL;
    PL_T(&env, "stream create", cuStreamCreate(&gone, 0));
    PL_T(&env, "stream destroy", cuStreamDestroy_v2(gone));
    PL_T(&env, "async destroyed stream", cuMemcpyAsync_ptsz(b1, a0, N, gone));
    PL_T(&env, "stream bad flags", cuStreamCreate(&gone, 0x40));
}

/* flags, self, devices out of range; then no current context */
static void bad_flags_devices_and_no_context(const struct scene *s)
{
    CUcontext c0 = s->c0, c1 = s->c1;
    CUdeviceptr a0 = s->a0, b1 = s->b1;
    PL_T(&env, "enable flags=3", cuCtxEnablePeerAccess(c1, 3));
    PL_T(&env, "enable self", cuCtxEnablePeerAccess(c0, 0));
    PL_T(&env, "disable self", cuCtxDisablePeerAccess(c0));
    PL_T(&env, "reset dev 99", cuDevicePrimaryCtxReset_v2(99));
    PL_T(&env, "reset dev -1", cuDevicePrimaryCtxReset(-1));
    int can = -7;
    PL_T(&env, "can access 0->9", cuDeviceCanAccessPeer(&can, 0, 9));
    PL_T(&env, "can access 0->0", cuDeviceCanAccessPeer(&can, 0, 0));
    printf("  can=%d\n", can);
    CUcontext out_ctx = NULL;
    PL_T(&env, "retain dev 5", cuDevicePrimaryCtxRetain(&out_ctx, 5));

    /* no current context */
    pl_use(NULL);
    PL_T(&env, "no ctx: enable", cuCtxEnablePeerAccess(c1, 0));
    PL_T(&env, "no ctx: disable", cuCtxDisablePeerAccess(c1));
    PL_T(&env, "no ctx: memcpy", cuMemcpy(b1, a0, N));
    PL_T(&env, "no ctx: async", cuMemcpyAsync(b1, a0, N, NULL));
    bytes("after errors", 1, b1);
}

/* Reset device 1 in the middle: the old buffer is gone, and so is every
 * link to it; a new allocation's cross copy is upgraded again. Returns the
 * new buffer on device 1. */
static CUdeviceptr reset_device_1_relinks(const struct scene *s)
{
    CUcontext c0 = s->c0, c1 = s->c1;
    CUdeviceptr a0 = s->a0, b1 = s->b1;
    PL_T(&env, "reset dev 1", cuDevicePrimaryCtxReset_v2(1));
    PL_EXPECT(!standin_peer_enabled(c0, c1) && !standin_peer_enabled(c1, c0),
              "a link survived the reset");
    pl_use(c0);
    PL_T(&env, "copy to reset buffer", cuMemcpyDtoD_v2(b1, a0, N));
    PL_T(&env, "free reset buffer", cuMemFree_v2(b1));
    struct standin_stats a, b;
    pl_stats(&a);
    CUdeviceptr nb1 = pl_alloc(c1, N);
    pl_set(c1, nb1, N, 0);
    good_copy("good after reset", nb1, a0, 3);
    pl_stats(&b);
    if (shim) {
        PL_EXPECT(standin_peer_enabled(c0, c1) == 1,
                  "after the reset the shim did not enable 0->1 again");
        PL_EXPECT(b.peer_enable_ok == a.peer_enable_ok + 1,
                  "after the reset: %llu successful enables, expected 1",
                  (unsigned long long)(b.peer_enable_ok - a.peer_enable_ok));
    }
    pl_use(c0);
    PL_T(&env, "app enable 0->1 after reset", cuCtxEnablePeerAccess(c1, 0));
    PL_T(&env, "app enable 0->1 again", cuCtxEnablePeerAccess(c1, 0));
    PL_T(&env, "app disable 0->1", cuCtxDisablePeerAccess(c1));
    PL_T(&env, "app disable 0->1 again", cuCtxDisablePeerAccess(c1));
    good_copy("good at the end", nb1, a0, 4);
    return nb1;
}

/* A reset of device 0 too, then everything again from scratch. */
static void reset_device_0_relinks(const struct scene *s, CUdeviceptr nb1)
{
    CUcontext c0 = s->c0, c1 = s->c1;
    PL_T(&env, "reset dev 0 (legacy)", cuDevicePrimaryCtxReset(0));
    CUdeviceptr na0 = pl_alloc(c0, N);
    good_copy("good after second reset", nb1, na0, 5);
    if (shim)
        PL_EXPECT(standin_peer_enabled(c0, c1) == 1, "after reset 0 the shim did not re-enable");
    pl_free(c0, na0);
    pl_free(c1, nb1);
    pl_use(c0);
    PL_T(&env, "free buffer of reset dev 0", cuMemFree_v2(s->a0));
}

int main(int argc, char **argv)
{
    shim = pl_want_shim(argc, argv);
    if (pl_init(&env) < 2)
        return 1;
    int on_stack = 0;
    struct scene s = {
        .c0 = env.ctx[0],
        .c1 = env.ctx[1],
        .unknown = (CUdeviceptr)0x7ff00dead000ull,
        .bogus_ctx = (CUcontext)(void *)&on_stack,
        .bogus_stream = (CUstream)(void *)&on_stack,
    };
    s.a0 = pl_alloc(s.c0, N);
    s.b1 = pl_alloc(s.c1, N);
    pl_fill(s.c0, s.a0, N, 1);
    pl_set(s.c1, s.b1, N, 0);
    pl_use(s.c0);

    bad_pointers(&s);
    bad_structs(&s);
    bad_contexts_and_streams(&s);
    bad_flags_devices_and_no_context(&s);

    /* a good copy (the shim enables 0->1), and the program's own enable */
    good_copy("good before reset", s.b1, s.a0, 2);
    if (shim)
        PL_EXPECT(standin_peer_enabled(s.c0, s.c1), "the shim did not enable 0->1");
    PL_T(&env, "app enable 0->1", cuCtxEnablePeerAccess(s.c1, 0));

    CUdeviceptr nb1 = reset_device_1_relinks(&s);
    reset_device_0_relinks(&s, nb1);
    return pl_finish("errors");
}
