#define _GNU_SOURCE
#include "bt_common.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

struct pl_env bt_env;
int bt_shim;

/* userfaultfd refused, as in a container: the syscall says ENOSYS and
 * /dev/userfaultfd's USERFAULTFD_IOC_NEW says EPERM. */
static void deny_userfaultfd(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, USERFAULTFD_IOC_NEW, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("seccomp");
        exit(2);
    }
    PL_EXPECT(syscall(SYS_userfaultfd, 0) < 0 && errno == ENOSYS,
              "the seccomp filter lets userfaultfd through");
}

/* cudart registers its exit handler (which tears the contexts down) at its
 * start, before its first driver call: so does this one, which lists what
 * is alive at that moment. Whatever the shim made must be gone by then:
 * the line is the same with and without it. */
static void report_at_exit(void)
{
    standin_leak_report("the program's first exit handler");
}

void bt_init(int argc, char **argv)
{
    if (getenv("BT_DENY_UFFD"))
        deny_userfaultfd();
    bt_shim = pl_want_shim(argc, argv);
    if (!getenv("BT_NO_LEAK_REPORT"))
        atexit(report_at_exit);
    pl_init(&bt_env);
    if (bt_env.ndev < 2) {
        fprintf(stderr, "bounce tests need two devices\n");
        exit(2);
    }
}

void bt_pattern(unsigned char *out, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        out[i] = pl_pattern(seed, i);
}

void bt_set_dev(CUdeviceptr d, const unsigned char *bytes, size_t n)
{
    standin_flush_all();
    memcpy((void *)(uintptr_t)d, bytes, n);
}

static int compare(const unsigned char *got, const unsigned char *want, size_t n,
                   const char *what, const char *where)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            pl_fail(__FILE__, __LINE__, "%s: %s byte %zu of %zu is 0x%02x, expected 0x%02x",
                    what, where, i, n, got[i], want[i]);
            return 0;
        }
    return 1;
}

int bt_check_dev(CUdeviceptr d, const unsigned char *want, size_t n, const char *what)
{
    standin_flush_all();
    return compare((const unsigned char *)(uintptr_t)d, want, n, what, "device");
}

int bt_check_host(const unsigned char *h, const unsigned char *want, size_t n, const char *what)
{
    return compare(h, want, n, what, "host");
}

uint64_t bt_fnv(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t x = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        x = (x ^ b[i]) * 1099511628211ull;
    return x;
}

void bt_paths_since(const struct standin_stats *a, struct bt_paths *out)
{
    struct standin_stats b;
    standin_get_stats(&b);
    out->h2d_bytes = b.h2d_bytes - a->h2d_bytes;
    out->d2h_bytes = b.d2h_bytes - a->d2h_bytes;
    out->dev_copies = (b.peer_copies - a->peer_copies) + (b.staged_copies - a->staged_copies) +
                      (b.same_device_copies - a->same_device_copies);
    out->dev_bytes = (b.peer_bytes - a->peer_bytes) + (b.staged_bytes - a->staged_bytes) +
                     (b.same_device_bytes - a->same_device_bytes);
}

bool bt_forced_lazy(void)
{
    const char *mode = getenv("P2PSHIM_BOUNCE");
    return mode != NULL && strcmp(mode, "lazy") == 0;
}

void bt_expect_bounced(const struct standin_stats *before, size_t host_max, size_t dev_min,
                       size_t plain, const char *what)
{
    struct bt_paths p;
    bt_paths_since(before, &p);
    if (bt_shim && !getenv("BT_NO_BOUNCE")) {
        PL_EXPECT(p.h2d_bytes + p.d2h_bytes <= host_max && p.dev_bytes >= dev_min,
                  "%s: not bounced on the device: %llu bytes through the host (max %zu), "
                  "%llu device to device (min %zu)",
                  what, (unsigned long long)(p.h2d_bytes + p.d2h_bytes), host_max,
                  (unsigned long long)p.dev_bytes, dev_min);
    } else {
        PL_EXPECT(p.h2d_bytes + p.d2h_bytes == plain && p.dev_bytes == 0,
                  "%s: without the shim %llu bytes through the host, expected %zu", what,
                  (unsigned long long)(p.h2d_bytes + p.d2h_bytes), plain);
    }
}

/* ---- flavours ---- */

static CUresult d2h_sync(const struct bt_flavour *f, void *h, CUdeviceptr d, size_t n)
{
    (void)f;
    return cuMemcpyDtoH_v2(h, d, n);
}
static CUresult h2d_sync(const struct bt_flavour *f, CUdeviceptr d, const void *h, size_t n)
{
    (void)f;
    return cuMemcpyHtoD_v2(d, h, n);
}
static CUresult set_legacy(const struct bt_flavour *f, CUdeviceptr d, unsigned char v, size_t n)
{
    (void)f;
    return cuMemsetD8Async(d, v, n, NULL);
}
static CUresult sync_legacy(const struct bt_flavour *f)
{
    (void)f;
    return cuStreamSynchronize(NULL);
}
static CUresult d2h_ptds(const struct bt_flavour *f, void *h, CUdeviceptr d, size_t n)
{
    (void)f;
    return cuMemcpyDtoH_v2_ptds(h, d, n);
}
static CUresult h2d_ptds(const struct bt_flavour *f, CUdeviceptr d, const void *h, size_t n)
{
    (void)f;
    return cuMemcpyHtoD_v2_ptds(d, h, n);
}
static CUresult set_pt(const struct bt_flavour *f, CUdeviceptr d, unsigned char v, size_t n)
{
    (void)f;
    return cuMemsetD8Async_ptsz(d, v, n, NULL);
}
static CUresult sync_pt(const struct bt_flavour *f)
{
    (void)f;
    return cuStreamSynchronize_ptsz(NULL);
}
static CUresult d2h_async(const struct bt_flavour *f, void *h, CUdeviceptr d, size_t n)
{
    return cuMemcpyDtoHAsync_v2(h, d, n, f->stream);
}
static CUresult h2d_async(const struct bt_flavour *f, CUdeviceptr d, const void *h, size_t n)
{
    return cuMemcpyHtoDAsync_v2(d, h, n, f->stream);
}
static CUresult set_async(const struct bt_flavour *f, CUdeviceptr d, unsigned char v, size_t n)
{
    return cuMemsetD8Async(d, v, n, f->stream);
}
static CUresult sync_async(const struct bt_flavour *f)
{
    return cuStreamSynchronize(f->stream);
}
static CUresult d2h_ptsz(const struct bt_flavour *f, void *h, CUdeviceptr d, size_t n)
{
    (void)f;
    return cuMemcpyDtoHAsync_v2_ptsz(h, d, n, NULL);
}
static CUresult h2d_ptsz(const struct bt_flavour *f, CUdeviceptr d, const void *h, size_t n)
{
    (void)f;
    return cuMemcpyHtoDAsync_v2_ptsz(d, h, n, NULL);
}

static CUresult d2h_unified(const struct bt_flavour *f, void *h, CUdeviceptr d, size_t n)
{
    (void)f;
    return cuMemcpy((CUdeviceptr)(uintptr_t)h, d, n);
}
static CUresult h2d_unified(const struct bt_flavour *f, CUdeviceptr d, const void *h, size_t n)
{
    (void)f;
    return cuMemcpy(d, (CUdeviceptr)(uintptr_t)h, n);
}
static CUresult d2h_unified_async(const struct bt_flavour *f, void *h, CUdeviceptr d, size_t n)
{
    return cuMemcpyAsync((CUdeviceptr)(uintptr_t)h, d, n, f->stream);
}
static CUresult h2d_unified_async(const struct bt_flavour *f, CUdeviceptr d, const void *h,
                                  size_t n)
{
    return cuMemcpyAsync(d, (CUdeviceptr)(uintptr_t)h, n, f->stream);
}

struct bt_flavour *bt_flavours(CUcontext ctx)
{
    static const struct bt_flavour proto[BT_FLAVOURS] = {
        {"sync", d2h_sync, h2d_sync, set_legacy, sync_legacy, NULL},
        {"sync-ptds", d2h_ptds, h2d_ptds, set_pt, sync_pt, NULL},
        {"async", d2h_async, h2d_async, set_async, sync_async, NULL},
        {"async-ptsz", d2h_ptsz, h2d_ptsz, set_pt, sync_pt, NULL},
        {"unified", d2h_unified, h2d_unified, set_legacy, sync_legacy, NULL},
        {"unified-async", d2h_unified_async, h2d_unified_async, set_async, sync_async, NULL},
        {"async-nonblocking", d2h_async, h2d_async, set_async, sync_async, NULL},
    };
    struct bt_flavour *f = malloc(sizeof proto);
    CUcontext popped;
    if (f == NULL)
        abort();
    memcpy(f, proto, sizeof proto);
    PL_OK(cuCtxPushCurrent_v2(ctx));
    PL_OK(cuStreamCreate(&f[2].stream, 0)); /* blocking: ordered with legacy */
    f[5].stream = f[2].stream;
    /* Not ordered with the legacy stream: work the shim issues on another
     * stream than the program's is not ordered after it either. */
    PL_OK(cuStreamCreate(&f[6].stream, CU_STREAM_NON_BLOCKING));
    PL_OK(cuCtxPopCurrent_v2(&popped));
    return f;
}

void bt_prime(void *h, CUdeviceptr src, CUdeviceptr dst, size_t n)
{
    PL_OK(cuMemcpyDtoH_v2(h, src, n));
    PL_OK(cuMemcpyHtoD_v2(dst, h, n));
}

void bt_d2h_round(void *h, CUdeviceptr src, CUcontext ctx, unsigned char *p, size_t n,
                  unsigned seed, struct standin_stats *before)
{
    bt_pattern(p, n, seed);
    bt_set_dev(src, p, n);
    standin_get_stats(before);
    pl_use(ctx);
    PL_OK(cuMemcpyDtoH_v2(h, src, n));
}
