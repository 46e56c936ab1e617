/* Calls the driver refuses, with counts, arrays and extents the driver
 * never reads that far into: a batch of 2^30 copies with no attributes
 * (arrays of two), a 3D batch of 2^30 operations with reserved flags, the
 * attribute list out of its bounds, sizes of SIZE_MAX, extents and pitches
 * whose bytes wrap the address space, bytes past a device allocation.
 *
 * A transcript of their return codes (and failIdx) that refused.sh
 * requires identical without and with the shim; then calls the driver
 * accepts, which the shim must still upgrade: the shim run checks each
 * refused call moved no byte and each good one took the peer path.
 * refused.sh then reads the exit summary and the run log: only the good
 * copies are counted and recorded. With "linear" after shim/noshim, only
 * the linear copies and the good ones (the launcher's report test). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pl_common.h"

#define N ((size_t)16 << 10)
#define HUGE ((size_t)1 << 30)

static struct pl_env env;
static int shim;
static CUstream stream;
static CUdeviceptr a0, b1;

/* A refused call: the driver's answer, no byte moved, no link enabled. */
#define REFUSED(label, call)                                                 \
    do {                                                                     \
        struct standin_stats s0_, s1_;                                       \
        pl_stats(&s0_);                                                      \
        PL_T(&env, label, call);                                             \
        PL_OK(cuStreamSynchronize(stream));                                  \
        pl_stats(&s1_);                                                      \
        PL_EXPECT(s1_.peer_bytes == s0_.peer_bytes &&                        \
                      s1_.staged_bytes == s0_.staged_bytes &&                \
                      s1_.peer_enable_calls == s0_.peer_enable_calls,        \
                  "%s moved bytes or enabled a link", label);                \
    } while (0)

static CUmemcpyAttributes attr_stream(void)
{
    CUmemcpyAttributes a;
    memset(&a, 0, sizeof a);
    a.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    return a;
}

static void refused_batches(void)
{
    CUdeviceptr dsts[2] = {b1, b1 + N / 2}, srcs[2] = {a0, a0 + N / 2};
    size_t sizes[2] = {N / 2, N / 2};
    CUmemcpyAttributes attrs[2] = {attr_stream(), attr_stream()};
    size_t idx[2] = {0, 1}, failidx = 7;
    REFUSED("batch 2^30 no attrs",
            cuMemcpyBatchAsync_v2(dsts, srcs, sizes, HUGE, NULL, NULL, 0, stream));
    REFUSED("batch 2^30 first index 1",
            cuMemcpyBatchAsync_v2(dsts, srcs, sizes, HUGE, attrs, idx + 1, 1, stream));
    REFUSED("batch numAttrs > count", cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 1, attrs, idx, 2,
                                                            stream));
    size_t back[2] = {0, 0};
    REFUSED("batch indices not rising", cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 2, attrs, back,
                                                              2, stream));
    size_t past[2] = {0, 2};
    REFUSED("batch index past count", cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 2, attrs, past, 2,
                                                            stream));
    attrs[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
    REFUSED("batch bad access order", cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 2, attrs, idx, 2,
                                                            stream));
    attrs[1] = attr_stream();
    REFUSED("batch legacy NULL stream", cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 2, attrs, idx,
                                                              2, NULL));
    REFUSED("batch CU_STREAM_LEGACY", cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 2, attrs, idx, 2,
                                                            CU_STREAM_LEGACY));
    size_t wrap[2] = {N / 2, SIZE_MAX};
    REFUSED("batch size SIZE_MAX (12080)",
            cuMemcpyBatchAsync(dsts, srcs, wrap, 2, attrs, idx, 2, &failidx, stream));
    printf("  failIdx=%zu\n", failidx);
    size_t over[2] = {N / 2, N / 2 + 1};
    REFUSED("batch past the allocation", cuMemcpyBatchAsync_v2(dsts, srcs, over, 2, attrs, idx,
                                                               2, stream));
}

static CUDA_MEMCPY3D_BATCH_OP op_linear(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    CUDA_MEMCPY3D_BATCH_OP op;
    memset(&op, 0, sizeof op);
    op.src.type = op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op.src.op.ptr.ptr = src;
    op.dst.op.ptr.ptr = dst;
    op.extent.width = n;
    op.extent.height = op.extent.depth = 1;
    op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    return op;
}

static void refused_3d_batches(void)
{
    CUDA_MEMCPY3D_BATCH_OP ops[2] = {op_linear(b1, a0, N / 2),
                                     op_linear(b1 + N / 2, a0 + N / 2, N / 2)};
    size_t failidx = 7;
    REFUSED("3D batch 2^30 flags 1", cuMemcpy3DBatchAsync_v2(HUGE, ops, 1, stream));
    REFUSED("3D batch 2^30 NULL stream", cuMemcpy3DBatchAsync_v2(HUGE, ops, 0, NULL));
    REFUSED("3D batch 2^30 flags 1 (12080)",
            cuMemcpy3DBatchAsync(HUGE, ops, &failidx, 1, stream));
    printf("  failIdx=%zu\n", failidx);
    ops[1].flags = 0x80;
    REFUSED("3D batch op flags", cuMemcpy3DBatchAsync_v2(2, ops, 0, stream));
    ops[1].flags = 0;
    ops[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
    REFUSED("3D batch op access order", cuMemcpy3DBatchAsync_v2(2, ops, 0, stream));
    ops[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    ops[1].dst.type = (CUmemcpy3DOperandType)7;
    REFUSED("3D batch operand type", cuMemcpy3DBatchAsync_v2(2, ops, 0, stream));
    ops[1].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    ops[1].extent.height = 2;
    ops[1].src.op.ptr.rowLength = N / 4;
    REFUSED("3D batch row below width", cuMemcpy3DBatchAsync_v2(2, ops, 0, stream));
    ops[1].src.op.ptr.rowLength = 0;
    ops[1].extent.width = (size_t)1 << 33;
    ops[1].extent.height = (size_t)1 << 32;
    REFUSED("3D batch extent wraps", cuMemcpy3DBatchAsync_v2(2, ops, 0, stream));
    ops[1].extent.width = N / 2 + 1;
    ops[1].extent.height = 1;
    REFUSED("3D batch past the allocation", cuMemcpy3DBatchAsync_v2(2, ops, 0, stream));
}

static void refused_linear(void)
{
    static unsigned char host[N];
    REFUSED("dtod SIZE_MAX", cuMemcpyDtoD_v2(b1, a0, SIZE_MAX));
    REFUSED("dtod async SIZE_MAX", cuMemcpyDtoDAsync_v2(b1, a0, SIZE_MAX, stream));
    REFUSED("memcpy SIZE_MAX", cuMemcpy(b1, a0, SIZE_MAX));
    REFUSED("peer SIZE_MAX", cuMemcpyPeer(b1, env.ctx[1], a0, env.ctx[0], SIZE_MAX));
    REFUSED("dtod 2^63", cuMemcpyDtoD_v2(b1, a0, (size_t)1 << 63));
    REFUSED("dtod past the end by one", cuMemcpyDtoD_v2(b1, a0, N + 1));
    REFUSED("dtoh past the end by one", cuMemcpyDtoH_v2(host, a0, N + 1));
    REFUSED("memcpy to host past the end by one",
            cuMemcpy((CUdeviceptr)(uintptr_t)host, a0 + 1, N));
    REFUSED("htod SIZE_MAX", cuMemcpyHtoD_v2(b1, host, SIZE_MAX));
    REFUSED("dtoh SIZE_MAX", cuMemcpyDtoH_v2(host, a0, SIZE_MAX));
    static unsigned char other[N];
    REFUSED("memcpy host to host SIZE_MAX",
            cuMemcpy((CUdeviceptr)(uintptr_t)other, (CUdeviceptr)(uintptr_t)host, SIZE_MAX));
    REFUSED("memcpy host to host wraps",
            cuMemcpyAsync((CUdeviceptr)(uintptr_t)other, (CUdeviceptr)(uintptr_t)host,
                          UINTPTR_MAX - (uintptr_t)host + 2, stream));
}

static void refused_structs(void)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = a0;
    c.dstDevice = b1;
    c.srcPitch = c.dstPitch = 256;
    c.WidthInBytes = 256;
    c.Height = SIZE_MAX;
    REFUSED("2D height SIZE_MAX", cuMemcpy2D_v2(&c));
    c.Height = 4;
    c.srcY = SIZE_MAX / 128;
    REFUSED("2D offset wraps", cuMemcpy2D_v2(&c));
    c.srcY = 0;
    c.srcPitch = SIZE_MAX;
    REFUSED("2D pitch SIZE_MAX", cuMemcpy2DAsync_v2(&c, stream));
    c.srcPitch = 256;
    c.Height = N / 256 + 1;
    REFUSED("2D past the allocation", cuMemcpy2D_v2(&c));
    CUDA_MEMCPY3D d;
    memset(&d, 0, sizeof d);
    d.srcMemoryType = d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    d.srcDevice = a0;
    d.dstDevice = b1;
    d.srcPitch = d.dstPitch = 256;
    d.srcHeight = d.dstHeight = 4;
    d.WidthInBytes = 256;
    d.Height = 4;
    d.Depth = SIZE_MAX / 512;
    REFUSED("3D depth wraps", cuMemcpy3D_v2(&d));
    d.Depth = 1;
    d.srcLOD = 1;
    REFUSED("3D LOD 1", cuMemcpy3D_v2(&d));
    d.srcLOD = 0;
    d.dstMemoryType = (CUmemorytype)77;
    REFUSED("3D bad memory type", cuMemcpy3DAsync_v2(&d, stream));
}

/* Calls the driver accepts after all that: the shim upgrades them. */
static void good_calls(void)
{
    struct standin_stats s0, s1;
    pl_fill(env.ctx[0], a0, N, 11);
    pl_set(env.ctx[1], b1, N, 0);
    pl_use(env.ctx[0]);
    pl_stats(&s0);
    PL_T(&env, "good dtod", cuMemcpyDtoD_v2(b1, a0, N / 2));
    CUdeviceptr dsts[1] = {b1 + N / 2}, srcs[1] = {a0 + N / 2};
    size_t sizes[1] = {N / 4}, idx[1] = {0};
    CUmemcpyAttributes attrs[1] = {attr_stream()};
    PL_T(&env, "good batch", cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 1, attrs, idx, 1, stream));
    CUDA_MEMCPY3D_BATCH_OP ops[1] = {op_linear(b1 + 3 * N / 4, a0 + 3 * N / 4, N / 4)};
    PL_T(&env, "good 3D batch, per-thread NULL stream",
         cuMemcpy3DBatchAsync_v2_ptsz(1, ops, 0, NULL));
    PL_OK(cuStreamSynchronize(stream));
    PL_OK(cuStreamSynchronize_ptsz(NULL));
    pl_stats(&s1);
    if (shim)
        PL_EXPECT(s1.peer_copies - s0.peer_copies == 3 && s1.staged_copies == s0.staged_copies,
                  "good calls: %llu peer copies, %llu staged under the shim",
                  (unsigned long long)(s1.peer_copies - s0.peer_copies),
                  (unsigned long long)(s1.staged_copies - s0.staged_copies));
    pl_verify(env.ctx[1], b1, N, 11, "good calls");
}

int main(int argc, char **argv)
{
    shim = pl_want_shim(argc, argv);
    if (pl_init(&env) < 2)
        return 1;
    a0 = pl_alloc(env.ctx[0], N);
    b1 = pl_alloc(env.ctx[1], N);
    pl_use(env.ctx[0]);
    PL_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    int all = argc < 3 || strcmp(argv[2], "linear") != 0;
    if (all) {
        refused_batches();
        refused_3d_batches();
    }
    refused_linear();
    if (all)
        refused_structs();
    good_calls();
    PL_OK(cuStreamDestroy_v2(stream));
    pl_free(env.ctx[0], a0);
    pl_free(env.ctx[1], b1);
    return pl_finish("refused");
}
