/* Self-test of the stand-in, continued: the ordering model, batched, 2D
 * and 3D copies, and concurrent use from two threads. */
#include "test_standin.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ordering model. ARCHITECTURE.md's case: cudaMemset(b) pending on device
 * 1's legacy stream, then a copy into b issued from device 0. The legacy
 * cuMemcpyPeer waits for it; the _ptds one does not, so the memset lands
 * after the copy: the wrong bytes a variant mix-up gives on a GPU. */
void test_ordering(void)
{
    config("2", NULL, NULL, NULL);
    retain_all(2);
    const size_t n = 1 << 16;
    CUdeviceptr a = alloc_on(0, n, 0xa0), b = alloc_on(1, n, 0xb0);

    OK(cuCtxSetCurrent(ctx[1]));
    OK(cuMemsetD8Async(b, 0, n, NULL));            /* legacy stream of device 1 */
    CHECK(standin_pending_ops() == 1);
    OK(cuCtxSetCurrent(ctx[0]));
    OK(cuMemcpyPeer(b, ctx[1], a, ctx[0], n));
    CHECK(standin_pending_ops() == 0);
    CHECK(all_bytes(b, 0xa0, n));                  /* right: memset, then copy */

    OK(cuCtxSetCurrent(ctx[1]));
    OK(cuMemsetD8Async(b, 0, n, NULL));
    OK(cuCtxSetCurrent(ctx[0]));
    OK(cuMemcpyPeer_ptds(b, ctx[1], a, ctx[0], n));
    CHECK(standin_pending_ops() == 1);             /* the memset is still queued */
    OK(cuCtxSetCurrent(ctx[1]));
    OK(cuCtxSynchronize());
    CHECK(all_bytes(b, 0x00, n));                  /* wrong: the copy was overwritten */

    /* A legacy async op waits for earlier work of blocking streams. */
    CUstream blk, nb;
    OK(cuStreamCreate(&blk, 0));
    OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    OK(cuMemsetD8Async(b, 1, n, blk));
    OK(cuMemsetD8Async(b, 2, n, nb));
    OK(cuMemsetD8Async(b, 3, n / 2, NULL));        /* after blk's, unordered with nb's */
    CHECK(standin_pending_ops() == 3);
    OK(cuStreamSynchronize(NULL));                 /* runs blk's, then legacy's */
    CHECK(standin_pending_ops() == 1);
    OK(cuStreamQuery(nb));
    CHECK(standin_pending_ops() == 0);
    CHECK(all_bytes(b, 2, n));

    /* Events order streams: nb waits for blk's record. */
    CUevent ev;
    OK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    OK(cuMemsetD8Async(b, 0x11, n, blk));
    OK(cuEventRecord(ev, blk));
    CHECK(cuEventQuery(ev) == CUDA_ERROR_NOT_READY); /* queued: not reached yet */
    CHECK(standin_pending_ops() == 0);               /* ... and run after the query */
    OK(cuEventQuery(ev));
    OK(cuMemsetD8Async(b, 7, n, blk));
    OK(cuEventRecord(ev, blk));
    OK(cuStreamWaitEvent(nb, ev, 0));
    OK(cuMemcpyDtoDAsync_v2(b, a, n / 4, nb));
    OK(cuStreamSynchronize(nb));                   /* pulls in blk's memset first */
    CHECK(standin_pending_ops() == 0);
    unsigned char h[8];
    OK(cuMemcpyDtoH_v2(h, b, 1));
    OK(cuMemcpyDtoH_v2(h + 1, b + n - 1, 1));
    CHECK(h[0] == 0xa0 && h[1] == 7);
    OK(cuEventSynchronize(ev));
    OK(cuEventQuery(ev));
    OK(cuEventDestroy_v2(ev));

    /* A pageable-host async copy completes before returning. */
    unsigned char *pg = malloc(n);
    OK(cuMemsetD8Async(b, 9, n, nb));
    OK(cuMemcpyDtoHAsync_v2(pg, b, n, nb));
    CHECK(pg[0] == 9 && pg[n - 1] == 9 && standin_pending_ops() == 0);
    free(pg);
    OK(cuStreamDestroy_v2(blk));
    OK(cuStreamDestroy_v2(nb));
}

/* Linear batches: the legacy NULL stream refused, paths counted, a bad
 * operand named by its index, a bad access order; a source read during
 * the call. */
static void linear_batches(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, size_t n, CUstream s)
{
    CUdeviceptr dsts[2] = {b, c}, srcs[2] = {a, a};
    size_t sizes[2] = {n, n}, idx[1] = {0}, fail = 0;
    CUmemcpyAttributes attr = {0};
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    EXPECT(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 2, &attr, idx, 1, NULL),
           CUDA_ERROR_INVALID_VALUE);              /* legacy NULL stream */
    standin_reset_stats();
    OK(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 2, &attr, idx, 1, s));
    struct standin_stats st = stats();
    CHECK(st.staged_copies == 1 && st.same_device_copies == 1);
    OK(cuStreamSynchronize(s));
    CHECK(all_bytes(b, 0x10, n) && all_bytes(c, 0x10, n));
    srcs[1] = 0;
    EXPECT(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, idx, 1, &fail, s),
           CUDA_ERROR_INVALID_VALUE);
    CHECK(fail == 1);
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
    srcs[1] = a;
    EXPECT(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, idx, 1, &fail, s),
           CUDA_ERROR_INVALID_VALUE);
    CHECK(fail == 0);

    /* DURING_API_CALL reads the source during the call. */
    unsigned char src[16];
    memset(src, 0x42, sizeof src);
    CUdeviceptr hsrc = (CUdeviceptr)(uintptr_t)src;
    size_t sz = sizeof src;
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    OK(cuMemsetD8Async(c, 0, n, s));
    OK(cuMemcpyBatchAsync_v2_ptsz(&c, &hsrc, &sz, 1, &attr, idx, 1, s));
    memset(src, 0, sizeof src);
    OK(cuStreamSynchronize(s));
    CHECK(all_bytes(c, 0x42, sizeof src));
}

/* A 3D batch between devices; an array operand is not modelled. */
static void batch_3d(CUdeviceptr a, CUdeviceptr b, size_t n, CUstream s)
{
    size_t fail = 0;
    CUDA_MEMCPY3D_BATCH_OP op = {0};
    op.src.type = op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op.src.op.ptr.ptr = a;
    op.dst.op.ptr.ptr = b;
    op.extent.width = 32;
    op.extent.height = 4;
    op.extent.depth = 2;
    op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    OK(cuMemsetD8_v2(b, 0, n));
    OK(cuMemcpy3DBatchAsync_v2(1, &op, 0, s));
    OK(cuStreamSynchronize(s));
    CHECK(all_bytes(b, 0x10, 256));
    op.dst.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
    EXPECT(cuMemcpy3DBatchAsync(1, &op, &fail, 0, s), CUDA_ERROR_NOT_SUPPORTED);
    CHECK(fail == 0);
}

/* 2D: rows of 100 bytes between pitched allocations on two devices (staged),
 * then a 3D peer copy between them once 1 -> 0 is enabled. Starts with
 * ctx[0] current. */
static void copies_2d_3d(void)
{
    CUdeviceptr p0, p1;
    size_t pitch0, pitch1;
    OK(cuMemAllocPitch_v2(&p0, &pitch0, 100, 8, 4));
    OK(cuMemsetD8_v2(p0, 0x33, pitch0 * 8));
    OK(cuCtxSetCurrent(ctx[1]));
    OK(cuMemAllocPitch_v2(&p1, &pitch1, 100, 8, 4));
    OK(cuMemsetD8_v2(p1, 0, pitch1 * 8));
    CUDA_MEMCPY2D m = {0};
    m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    m.srcDevice = p0;
    m.srcPitch = pitch0;
    m.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    m.dstDevice = p1;
    m.dstPitch = pitch1;
    m.WidthInBytes = 100;
    m.Height = 8;
    standin_reset_stats();
    OK(cuMemcpy2D_v2(&m));
    struct standin_stats st = stats();
    CHECK(st.staged_copies == 1 && st.staged_bytes == 800);
    CHECK(all_bytes(p1 + 7 * pitch1, 0x33, 100) && all_bytes(p1 + 100, 0, 8));
    m.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    EXPECT(cuMemcpy2D_v2(&m), CUDA_ERROR_NOT_SUPPORTED);

    CUDA_MEMCPY3D_PEER p = {0};
    p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p.srcDevice = p0;
    p.srcPitch = pitch0;
    p.srcHeight = 4;
    p.srcContext = ctx[0];
    p.dstDevice = p1;
    p.dstPitch = pitch1;
    p.dstHeight = 4;
    p.dstContext = ctx[1];
    p.WidthInBytes = 50;
    p.Height = 4;
    p.Depth = 2;
    OK(cuCtxEnablePeerAccess(ctx[0], 0));
    OK(cuMemcpy3DPeer_ptds(&p));
    st = stats();
    CHECK(st.peer_copies == 1 && st.peer_bytes == 400);
    p.srcContext = (CUcontext)(uintptr_t)8;
    EXPECT(cuMemcpy3DPeer(&p), CUDA_ERROR_INVALID_CONTEXT);
}

void test_batches_and_2d(void)
{
    config("2", NULL, NULL, NULL);
    retain_all(2);
    const size_t n = 1024;
    CUdeviceptr a = alloc_on(0, n, 0x10), b = alloc_on(1, n, 0), c = alloc_on(0, n, 0);
    OK(cuCtxSetCurrent(ctx[0]));
    CUstream s;
    OK(cuStreamCreate(&s, 0));
    linear_batches(a, b, c, n, s);
    batch_3d(a, b, n, s);
    copies_2d_3d();
    OK(cuStreamDestroy_v2(s));
}

/* Two threads at once, each on its own device, per-thread streams. */
static void *worker(void *arg)
{
    int d = (int)(intptr_t)arg;
    cuCtxSetCurrent(ctx[d]);
    for (int i = 0; i < 50; i++) {
        CUdeviceptr p, q;
        if (cuMemAlloc_v2(&p, 4096) != CUDA_SUCCESS || cuMemAlloc_v2(&q, 4096) != CUDA_SUCCESS)
            return (void *)1;
        cuMemsetD8Async_ptsz(p, (unsigned char)i, 4096, NULL);
        cuMemcpyAsync_ptsz(q, p, 4096, CU_STREAM_PER_THREAD);
        cuStreamSynchronize_ptsz(NULL);
        unsigned char h = 0;
        cuMemcpyDtoH_v2_ptds(&h, q + 100, 1);
        if (h != (unsigned char)i)
            return (void *)1;
        cuMemFree_v2(p);
        cuMemFree_v2(q);
    }
    return NULL;
}

void test_threads(void)
{
    config("2", NULL, NULL, NULL);
    retain_all(2);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < 2; i++) {
        void *r = (void *)1;
        pthread_join(t[i], &r);
        CHECK(r == NULL);
    }
}
