/* Host-bounced copies at the limits (bounce_life's cases): the program's
 * allocations need the memory the shim's snapshots hold, the default
 * minimums, mremap of part of a lazy buffer, and a process that never
 * bounces (no handler thread, no userfaultfd). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bounce_life.h"

/* The program's allocation needs the memory the shim's snapshots hold:
 * the shim gives them back (filling their buffers first) and the
 * allocation succeeds, as without the shim. */
/* Allocations of almost all the memory free on device 0 before the
 * bounces, each way a program can take device memory: linear, a 2D array,
 * a 3D array, a mipmapped array (two levels: 1 + 1/4 of the first level's
 * bytes); and two made while device 1 is current: cuMemCreate for device 0
 * (whole 2 MiB granules) and a stream-ordered one on a stream of device 0. */
enum oom_way {
    OOM_LINEAR, OOM_ARRAY, OOM_ARRAY3D, OOM_MIPMAPPED, OOM_VMM_OTHER, OOM_ASYNC_OTHER, OOM_WAYS
};
static const char *const oom_way_name[OOM_WAYS] = {"linear",    "array",     "array3d",
                                                   "mipmapped", "vmm-other", "async-other"};

static CUresult oom_other_device(enum oom_way way, size_t bytes)
{
    CUresult r;
    CUstream s0 = NULL;
    PL_OK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING)); /* on device 0 */
    pl_use(bt_env.ctx[1]);
    if (way == OOM_VMM_OTHER) {
        CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                    .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
        CUmemGenericAllocationHandle h;
        if ((r = cuMemCreate(&h, bytes & ~(((size_t)2 << 20) - 1), &prop, 0)) == CUDA_SUCCESS)
            PL_OK(cuMemRelease(h));
    } else {
        CUdeviceptr p = 0;
        if ((r = cuMemAllocAsync(&p, bytes, s0)) == CUDA_SUCCESS) {
            PL_OK(cuMemFreeAsync(p, s0));
            PL_OK(cuStreamSynchronize(s0));
        }
    }
    CUcontext cur = NULL;
    PL_OK(cuCtxGetCurrent(&cur));
    PL_EXPECT(cur == bt_env.ctx[1], "%s: the current context changed", oom_way_name[way]);
    pl_use(bt_env.ctx[0]);
    PL_OK(cuStreamDestroy_v2(s0));
    return r;
}

static CUresult oom_alloc_and_free(enum oom_way way, size_t bytes)
{
    CUresult r;
    CUDA_ARRAY3D_DESCRIPTOR d3 = {.Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    if (way == OOM_LINEAR) {
        CUdeviceptr big = 0;
        if ((r = cuMemAlloc_v2(&big, bytes)) == CUDA_SUCCESS)
            PL_OK(cuMemFree_v2(big));
    } else if (way == OOM_ARRAY) {
        CUDA_ARRAY_DESCRIPTOR d = {.Width = 65536, .Height = bytes / 65536,
                                   .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
        CUarray a = NULL;
        if ((r = cuArrayCreate_v2(&a, &d)) == CUDA_SUCCESS)
            PL_OK(cuArrayDestroy(a));
    } else if (way == OOM_ARRAY3D) {
        d3.Width = 4096;
        d3.Height = 16;
        d3.Depth = bytes / 65536;
        CUarray a = NULL;
        if ((r = cuArray3DCreate_v2(&a, &d3)) == CUDA_SUCCESS)
            PL_OK(cuArrayDestroy(a));
    } else if (way == OOM_MIPMAPPED) {
        d3.Width = 65536;
        d3.Height = bytes / (65536 + 16384);
        CUmipmappedArray m = NULL;
        if ((r = cuMipmappedArrayCreate(&m, &d3, 2)) == CUDA_SUCCESS)
            PL_OK(cuMipmappedArrayDestroy(m));
    } else {
        r = oom_other_device(way, bytes);
    }
    return r;
}

void case_oom(void)
{
    enum { K = 4 };
    size_t n = (size_t)1 << 20, free_b = 0, total = 0;
    unsigned char *h[K];
    for (int way = 0; way < OOM_WAYS; way++) {
        /* What the program may allocate: all that is free before it bounces. */
        standin_flush_all();
        PL_OK(cuMemGetInfo_v2(&free_b, &total));
        for (int i = 0; i < K; i++) {
            h[i] = malloc(n);
            d2h(h[i], n, 800 + (unsigned)(way * K + i));
        }
        CUresult r = oom_alloc_and_free((enum oom_way)way, free_b - 65536);
        PL_EXPECT(r == CUDA_SUCCESS, "the program's %s allocation failed (%d)",
                  oom_way_name[way], (int)r);
        for (int i = 0; i < K; i++) {
            bt_pattern(want, n, 800 + (unsigned)(way * K + i));
            char what[48];
            snprintf(what, sizeof what, "after %s oom %d", oom_way_name[way], i);
            h2d_check(h[i], n, what);
            free(h[i]);
        }
    }
}

/* The default minimums (P2PSHIM_BOUNCE_MIN=auto, bounce.min_auto only): a
 * pageable pair below 1 MiB, a reused pageable one below 4 MiB and a
 * pinned one below 16 MiB go the normal way, as a snapshot would cost more
 * than it saves (a wrong guess more than the round); from there they are
 * bounced. A new buffer (its pages never touched) of 1 MiB bounces: the
 * source has the evidence, and its pages cost the same either way. */
void case_minimums(void)
{
    static const struct {
        size_t n;
        bool pinned, fresh, bounced;
        const char *what;
    } c[] = {
        {(size_t)512 << 10, false, false, false, "pageable 512 KiB"},
        {(size_t)1 << 20, false, false, false, "pageable 1 MiB, reused"},
        {(size_t)1 << 20, false, true, true, "pageable 1 MiB, new"},
        {(size_t)4 << 20, false, false, true, "pageable 4 MiB, reused"},
        {(size_t)8 << 20, true, false, false, "pinned 8 MiB"},
        {(size_t)16 << 20, true, false, true, "pinned 16 MiB"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        size_t n = c[i].n;
        void *h = NULL, *primed = NULL;
        if (c[i].pinned)
            PL_OK(cuMemHostAlloc(&h, n, 0));
        else
            h = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (c[i].fresh) {
            /* The evidence from another buffer: h's pages stay untouched. */
            primed = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            bt_prime(primed, src0, dst1, n);
        } else {
            bt_prime(h, src0, dst1, n);
        }
        struct standin_stats s0;
        standin_get_stats(&s0);
        d2h_only(h, n, 900 + (unsigned)i);
        memcpy(want, pat, n);
        pl_use(bt_env.ctx[1]);
        PL_OK(cuMemcpyHtoD_v2(dst1, h, n));
        pl_use(bt_env.ctx[0]);
        struct bt_paths p;
        bt_paths_since(&s0, &p);
        if (bt_shim && !getenv("BT_NO_BOUNCE")) {
            /* Bounced: the H2D from the snapshot (and, lazy, a pageable
             * D2H left on the device: the first snapshot of a reused
             * buffer is eager unless lazy is forced, a new one's lazy);
             * not: both through the host. */
            bool eager = c[i].pinned || (!c[i].fresh && !bt_forced_lazy());
            bool ok = c[i].bounced ? p.h2d_bytes == 0 && p.d2h_bytes == (eager ? n : 0)
                                   : p.h2d_bytes == n && p.d2h_bytes == n;
            PL_EXPECT(ok, "%s: D2H %llu and H2D %llu bytes through the host; expected %s",
                      c[i].what, (unsigned long long)p.d2h_bytes,
                      (unsigned long long)p.h2d_bytes, c[i].bounced ? "bounced" : "not");
        }
        h2d_check(h, n, c[i].what);
        if (c[i].pinned)
            PL_OK(cuMemFreeHost(h));
        else
            munmap(h, n);
        if (primed != NULL)
            munmap(primed, n);
    }
}

/* The program moves part of a lazy buffer with mremap: the moved bytes
 * must arrive (the kernel's REMAP event cannot carry part of a snapshot
 * along; the shim fills the pages before the call), and the rest of the
 * buffer still bounces. */
void case_mremap(void)
{
    size_t n = (size_t)4 << 20, part = (size_t)1 << 20;
    unsigned char *r = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *spot = mmap(NULL, part, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    d2h(r, n, 950);
    memcpy(want, pat, n);
    unsigned char *moved =
        mremap(r + part, part, part, MREMAP_MAYMOVE | MREMAP_FIXED, spot);
    PL_EXPECT(moved == spot, "mremap: %p", (void *)moved);
    if (moved == spot) {
        PL_EXPECT(memcmp(moved, want + part, part) == 0,
                  "the moved part of the buffer lost its bytes");
        line("moved by mremap", moved, part, dst1);
        munmap(moved, part);
    }
    h2d_check(r, part, "before the moved part");
    munmap(r, part);
    munmap(r + 2 * part, n - 2 * part);
}

/* Entries of /proc/self/<dir> (whose link names contain `link`, when
 * given). */
static int proc_count(const char *dir, const char *link)
{
    char path[64], target[128];
    snprintf(path, sizeof path, "/proc/self/%s", dir);
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        if (link != NULL) {
            char p2[sizeof path + sizeof e->d_name + 2];
            snprintf(p2, sizeof p2, "%s/%s", path, e->d_name);
            ssize_t k = readlink(p2, target, sizeof target - 1);
            target[k > 0 ? k : 0] = '\0';
            if (strstr(target, link) == NULL)
                continue;
        }
        n++;
    }
    if (d != NULL)
        closedir(d);
    return n;
}

/* A process that never bounces (bounce.never, alone: nothing may have
 * bounced before): results copied down and used on the host, pageable and
 * pinned, several rounds. The shim takes no snapshot, and holds nothing
 * for bounces: no userfaultfd, no thread of its own, no device memory. */
void case_never(void)
{
    size_t n = (size_t)1 << 20, free0, free1, total;
    PL_OK(cuMemGetInfo_v2(&free0, &total));
    int threads0 = proc_count("task", NULL);
    unsigned char *h = malloc(n);
    void *hp = NULL;
    PL_OK(cuMemHostAlloc(&hp, n, 0));
    for (int i = 0; i < 4; i++) {
        struct standin_stats s0;
        standin_get_stats(&s0);
        d2h_only(h, n, 990 + (unsigned)i);
        bt_check_host(h, pat, n, "never: pageable, read");
        d2h_only(hp, n, 995 + (unsigned)i);
        bt_check_host(hp, pat, n, "never: pinned, read");
        memset(hp, i, n); /* and written */
        struct bt_paths p;
        bt_paths_since(&s0, &p);
        PL_EXPECT(p.d2h_bytes == 2 * n && p.dev_bytes == 0,
                  "never, round %d: %llu bytes to the host (expected %zu), %llu on the device",
                  i, (unsigned long long)p.d2h_bytes, 2 * n, (unsigned long long)p.dev_bytes);
    }
    PL_OK(cuMemGetInfo_v2(&free1, &total));
    int uffds = proc_count("fd", "userfaultfd");
    int threads = proc_count("task", NULL) - threads0;
    PL_EXPECT(uffds == 0 && threads == 0 && free1 == free0,
              "never: %d userfaultfd(s), %d new thread(s), %zu bytes of device memory held",
              uffds, threads, free0 - free1);
    printf("never: userfaultfd=%d new threads=%d device bytes held=%zu\n", uffds, threads,
           free0 - free1);
    PL_OK(cuMemFreeHost(hp));
    free(h);
}
