/* 2D and 3D copies of mapped memory between devices: "vmm_2d shim|noshim".
 *
 * On each of devices 0 and 1 a reservation of two chunks, the first mapped
 * (cuMemCreate + cuMemMap) and granted to its own device only, as ggml's
 * VMM pool does. A sub-rectangle at an offset (pitches that differ from the
 * width and from each other) is copied across GPUs both ways with
 * cuMemcpy2D_v2, cuMemcpy2DAsync_v2, cuMemcpy2DUnaligned_v2, cuMemcpy3D_v2
 * and cuMemcpy3DPeerAsync (ggml's cudaMemcpy3DPeerAsync, depth 1, unified
 * addresses). Checked each time: every byte of the destination mapping
 * (the rectangle carries the source's bytes, the rest is untouched), the
 * source unchanged, the program's descriptor unchanged, the path the
 * stand-in counted (peer through the shim's alias with the shim, staged
 * without) and that cuMemGetAccess answers as before. Then copies whose
 * rows or second slice run past the source's mapping into the unmapped
 * second chunk, by a byte among them, get the driver's answer (nothing
 * written), as does a pitch below the width, while a last row ending at
 * the mapping's last byte is still aliased; and with both mappings granted to
 * both devices by the program, the driver copies peer itself and the shim
 * makes no alias. log.sh checks the exit summary's reasons. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_common.h"

#define W ((size_t)3000)
#define H ((size_t)40)
#define SPITCH ((size_t)4160)
#define DPITCH ((size_t)5000)
#define SX ((size_t)100)
#define SY ((size_t)3)
#define DX ((size_t)37)
#define DY ((size_t)7)
/* cuMemcpy3D_v2 copies two slices of these heights */
#define SH (SY + H + 1)
#define DH (DY + H + 2)

static struct pl_env env;
static int shim;
static unsigned seed = 23;

struct buf {
    int dev;
    CUdeviceptr va; /* two chunks reserved, the first mapped */
    size_t chunk;
};

static void buf_init(struct buf *b, int dev)
{
    CUmemAllocationProp prop = pl_device_prop(dev);
    b->dev = dev;
    b->chunk = pl_vmm_round(dev, 2 * DH * DPITCH);
    b->va = 0;
    pl_use(env.ctx[dev]);
    PL_OK(cuMemAddressReserve(&b->va, 2 * b->chunk, 0, 0, 0));
    CUmemGenericAllocationHandle h;
    CUmemAccessDesc own = pl_access_rw(dev);
    PL_OK(cuMemCreate(&h, b->chunk, &prop, 0));
    PL_OK(cuMemMap(b->va, b->chunk, 0, h, 0));
    PL_OK(cuMemRelease(h));
    PL_OK(cuMemSetAccess(b->va, b->chunk, &own, 1));
}

/* cuMemGetAccess of devices 0 and 1 on both mappings. */
static void access_now(const struct buf *bufs, unsigned long long flags[2][2])
{
    for (int q = 0; q < 2; q++)
        for (int d = 0; d < 2; d++) {
            CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, d};
            flags[q][d] = 99;
            PL_OK(cuMemGetAccess(&flags[q][d], &loc, bufs[q].va));
        }
}

/* The whole mapping of b read back to the host (malloc'd). */
static unsigned char *read_back(const struct buf *b)
{
    unsigned char *h = malloc(b->chunk);
    PL_EXPECT(h != NULL, "no host memory");
    pl_use(env.ctx[b->dev]);
    PL_OK(cuMemcpyDtoH_v2(h, b->va, b->chunk));
    return h;
}

/* The destination as it must be: its pattern, the box of depth slices the
 * source's. */
static void expect_box(unsigned char *want, unsigned dseed, unsigned sseed, size_t n,
                       size_t depth, size_t src_z)
{
    for (size_t i = 0; i < n; i++)
        want[i] = pl_pattern(dseed, i);
    for (size_t z = 0; z < depth; z++)
        for (size_t y = 0; y < H; y++)
            for (size_t x = 0; x < W; x++)
                want[z * DH * DPITCH + (DY + y) * DPITCH + DX + x] =
                    pl_pattern(sseed, (src_z + z) * SH * SPITCH + (SY + y) * SPITCH + SX + x);
}

static CUresult issue_2d(int api, CUdeviceptr dst, CUdeviceptr src)
{
    CUDA_MEMCPY2D c, keep;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = src;
    c.srcXInBytes = SX;
    c.srcY = SY;
    c.srcPitch = SPITCH;
    c.dstDevice = dst;
    c.dstXInBytes = DX;
    c.dstY = DY;
    c.dstPitch = DPITCH;
    c.WidthInBytes = W;
    c.Height = H;
    keep = c;
    CUresult r = api == 0   ? cuMemcpy2D_v2(&c)
                 : api == 1 ? cuMemcpy2DAsync_v2(&c, NULL)
                            : cuMemcpy2DUnaligned_v2(&c);
    PL_EXPECT(memcmp(&c, &keep, sizeof c) == 0, "api %d: the program's descriptor changed", api);
    return r;
}

/* api 3: cuMemcpy3D_v2, two slices from the source's second; 4: cuMemcpy3DPeerAsync, unified
 * addresses, one slice (as ggml). */
static CUresult issue_3d(int api, int from, int to, CUdeviceptr dst, CUdeviceptr src)
{
    CUDA_MEMCPY3D_PEER p, keep;
    memset(&p, 0, sizeof p);
    p.srcMemoryType = p.dstMemoryType = api == 4 ? CU_MEMORYTYPE_UNIFIED : CU_MEMORYTYPE_DEVICE;
    p.srcDevice = src;
    p.srcXInBytes = SX;
    p.srcY = SY;
    p.srcPitch = SPITCH;
    p.srcHeight = SH;
    p.dstDevice = dst;
    p.dstXInBytes = DX;
    p.dstY = DY;
    p.dstPitch = DPITCH;
    p.dstHeight = DH;
    p.WidthInBytes = W;
    p.Height = H;
    p.Depth = 1;
    p.srcContext = env.ctx[from];
    p.dstContext = env.ctx[to];
    keep = p;
    CUresult r;
    if (api == 4) {
        r = cuMemcpy3DPeerAsync(&p, NULL);
    } else {
        CUDA_MEMCPY3D c, k3;
        memset(&c, 0, sizeof c);
        c.srcXInBytes = p.srcXInBytes, c.srcY = p.srcY, c.srcMemoryType = p.srcMemoryType;
        c.srcDevice = p.srcDevice, c.srcPitch = p.srcPitch, c.srcHeight = p.srcHeight;
        c.dstXInBytes = p.dstXInBytes, c.dstY = p.dstY, c.dstMemoryType = p.dstMemoryType;
        c.dstDevice = p.dstDevice, c.dstPitch = p.dstPitch, c.dstHeight = p.dstHeight;
        c.WidthInBytes = W, c.Height = H, c.Depth = 2, c.srcZ = 1;
        k3 = c;
        r = cuMemcpy3D_v2(&c);
        PL_EXPECT(memcmp(&c, &k3, sizeof c) == 0, "cuMemcpy3D_v2: the descriptor changed");
    }
    PL_EXPECT(memcmp(&p, &keep, sizeof p) == 0, "api %d: the program's descriptor changed", api);
    return r;
}

/* One rectangle from `from` to `to` by api, issued in from's context; the
 * whole destination mapping and the source checked; 1 when the stand-in
 * counted it peer, 0 staged. */
static int rect_copy(const struct buf *bufs, int from, int to, int api, const char *what)
{
    const struct buf *s = &bufs[from], *d = &bufs[to];
    unsigned sseed = ++seed, dseed = ++seed;
    struct standin_stats s0, s1;
    pl_fill(env.ctx[from], s->va, s->chunk, sseed);
    pl_fill(env.ctx[to], d->va, d->chunk, dseed);
    pl_use(env.ctx[from]);
    pl_stats(&s0);
    PL_OK(api < 3 ? issue_2d(api, d->va, s->va) : issue_3d(api, from, to, d->va, s->va));
    PL_OK(cuCtxSynchronize());
    pl_stats(&s1);
    unsigned char *got = read_back(d), *want = malloc(d->chunk);
    PL_EXPECT(want != NULL, "no host memory");
    expect_box(want, dseed, sseed, d->chunk, api == 3 ? 2 : 1, api == 3 ? 1 : 0);
    size_t bad = 0;
    while (bad < d->chunk && got[bad] == want[bad])
        bad++;
    PL_EXPECT(bad == d->chunk, "%s: byte %zu (row %zu, column %zu) is %u, not %u", what, bad,
              bad / DPITCH, bad % DPITCH, bad < d->chunk ? got[bad] : 0,
              bad < d->chunk ? want[bad] : 0);
    free(got);
    free(want);
    pl_verify(env.ctx[from], s->va, s->chunk, sseed, what);
    PL_EXPECT(s1.peer_copies + s1.staged_copies == s0.peer_copies + s0.staged_copies + 1,
              "%s: not one cross-GPU copy", what);
    return s1.peer_copies > s0.peer_copies;
}

/* Every api both ways; want_peer: what each must be counted. */
static void rect_round(const struct buf *bufs, int want_peer, const char *round)
{
    unsigned long long before[2][2], after[2][2];
    access_now(bufs, before);
    for (int api = 0; api < 5; api++)
        for (int from = 0; from < 2; from++) {
            char what[96];
            snprintf(what, sizeof what, "%s: %d->%d api %d", round, from, 1 - from, api);
            int peer = rect_copy(bufs, from, 1 - from, api, what);
            PL_EXPECT(peer == want_peer, "%s: %s", what, peer ? "peer" : "staged");
        }
    access_now(bufs, after);
    PL_EXPECT(memcmp(before, after, sizeof before) == 0,
              "%s: cuMemGetAccess answers differently (buffer 0, device 1: %llu, was %llu)",
              round, after[0][1], before[0][1]);
}

/* The source's rows run past its mapping into the unmapped second chunk
 * (its first W * H bytes from the first row's start would fit: the span
 * is the rows' with their pitch): the driver refuses, with the shim as
 * without, and writes nothing; so does a 3D copy whose second slice runs
 * past it. */
static void rows_past(const struct buf *bufs)
{
    size_t span = (H - 1) * SPITCH + W;
    size_t sy = (bufs[0].chunk - (W * H + span) / 2) / SPITCH;
    PL_EXPECT(bufs[0].chunk - sy * SPITCH > W * H && bufs[0].chunk - sy * SPITCH < span,
              "rows past: the geometry does not straddle the mapping's end");
    pl_fill(env.ctx[1], bufs[1].va, bufs[1].chunk, ++seed);
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = bufs[0].va;
    c.srcY = sy;
    c.srcPitch = SPITCH;
    c.dstDevice = bufs[1].va;
    c.dstPitch = DPITCH;
    c.WidthInBytes = W;
    c.Height = H;
    pl_use(env.ctx[0]);
    PL_RC(cuMemcpy2D_v2(&c), CUDA_ERROR_INVALID_VALUE);
    PL_RC(cuMemcpy2DAsync_v2(&c, NULL), CUDA_ERROR_INVALID_VALUE);
    /* two slices from the second: the first inside the mapping, the
     * second past its end */
    CUDA_MEMCPY3D b;
    memset(&b, 0, sizeof b);
    b.srcMemoryType = b.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    b.srcDevice = bufs[0].va;
    b.srcY = (bufs[0].chunk - span - SH * SPITCH / 2) / SPITCH - SH;
    b.srcZ = 1;
    b.srcPitch = SPITCH;
    b.srcHeight = SH;
    b.dstDevice = bufs[1].va;
    b.dstPitch = DPITCH;
    b.dstHeight = DH;
    b.WidthInBytes = W;
    b.Height = H;
    b.Depth = 2;
    size_t first = b.srcZ * SH * SPITCH + b.srcY * SPITCH;
    PL_EXPECT(first + span <= bufs[0].chunk && first + SH * SPITCH + span > bufs[0].chunk,
              "rows past: the second slice does not straddle the mapping's end");
    PL_RC(cuMemcpy3D_v2(&b), CUDA_ERROR_INVALID_VALUE);
    PL_OK(cuCtxSynchronize());
    pl_verify(env.ctx[1], bufs[1].va, bufs[1].chunk, seed, "rows past the mapping");
    /* a pitch below the width: the driver's answer, no alias tried */
    c.srcY = 0;
    c.srcPitch = W - 1;
    PL_RC(cuMemcpy2D_v2(&c), CUDA_ERROR_INVALID_VALUE);
    c.srcPitch = SPITCH;
    /* the last row ending at the mapping's last byte, then one byte past */
    for (size_t past = 0; past < 2; past++) {
        struct standin_stats s0, s1;
        c.srcY = (bufs[0].chunk + past - span) / SPITCH;
        c.srcXInBytes = (bufs[0].chunk + past - span) % SPITCH;
        pl_use(env.ctx[0]);
        pl_stats(&s0);
        PL_RC(cuMemcpy2D_v2(&c), past ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS);
        pl_stats(&s1);
        PL_EXPECT(s1.peer_copies - s0.peer_copies == (uint64_t)(shim && !past),
                  "rows ending %zu byte(s) past the mapping: %llu peer copies", past,
                  (unsigned long long)(s1.peer_copies - s0.peer_copies));
    }
}

int main(int argc, char **argv)
{
    shim = pl_want_shim(argc, argv);
    pl_init(&env);
    PL_EXPECT(env.ndev >= 2, "needs two devices");
    struct buf bufs[2];
    buf_init(&bufs[0], 0);
    buf_init(&bufs[1], 1);

    uint64_t reserves = standin_calls("cuMemAddressReserve");
    rect_round(bufs, shim, "owner-only");
    uint64_t dr = standin_calls("cuMemAddressReserve") - reserves;
    PL_EXPECT(dr == (shim ? 2u : 0u), "owner-only: %llu aliases made (one a mapping)",
              (unsigned long long)dr);

    rows_past(bufs);

    /* the program grants both devices on both mappings: the driver copies
     * peer itself; the shim makes no alias */
    for (int q = 0; q < 2; q++) {
        CUmemAccessDesc acc[2] = {pl_access_rw(0), pl_access_rw(1)};
        pl_use(env.ctx[q]);
        PL_OK(cuMemSetAccess(bufs[q].va, bufs[q].chunk, acc, 2));
    }
    reserves = standin_calls("cuMemAddressReserve");
    rect_round(bufs, 1, "both granted");
    PL_EXPECT(standin_calls("cuMemAddressReserve") == reserves, "both granted: an alias was made");

    for (int q = 0; q < 2; q++) {
        pl_use(env.ctx[q]);
        PL_OK(cuMemUnmap(bufs[q].va, bufs[q].chunk));
        PL_OK(cuMemAddressFree(bufs[q].va, 2 * bufs[q].chunk));
    }
    return pl_finish("vmm_2d");
}
