/* Host-bounced copies on real GPUs (issue 4): cudaMemcpy D2H from device
 * 0 into a host buffer, then H2D from it to device 1 (and the reverse),
 * with pending work on both devices that the copies must follow; a staging
 * buffer reused in a loop; unaligned and partial ranges; the CPU reading
 * or writing the buffer in between; write(2) into a pipe; a forked child;
 * realloc and free; pinned and registered memory.
 *
 *   bounce_gpu [--expect bounced|served|plain|any] [--sizes 4K,1M,...] [--probe]
 *
 * Prints a transcript that depends only on the bytes (the device-side
 * checksums of every destination, each also compared with the expected
 * bytes), the same with and without the shim (compare_runs.sh). With
 * --expect, CUPTI checks the path of each untouched pair: "bounced" (at
 * most four partial pages through the host, the rest device to device),
 * "served" (the H2D's bytes device to device but two partial pages; the
 * D2H's either way: the default mode, whose first snapshot of a reused
 * buffer is eager),
 * "plain" (every byte through the host), "any" (no check).
 *
 * --probe-hmm: a kernel reading a just-bounced pageable buffer (HMM).
 * --probe: what pinned and registered memory allow (userfaultfd MISSING
 * and WP registration, mprotect) and whether the devices read pageable
 * memory themselves (HMM/ATS): docs/ARCHITECTURE.md's measured facts.
 * With one GPU every pair runs within device 0 (the same-GPU bounce) and
 * the transcript says that the cross-GPU part was skipped.
 * Exit: 0, 1 on a failure, 77 without a GPU. */
#include "../bounce/bt_pipe.h"
#include "cupti_paths.h"
#include "gpu_test.h"
#include "pattern.cuh"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;
/* Whether pair() reads an untouched pair's host buffer after its H2D.
 * Such a read tells the shim that the buffer is read besides going back
 * to a GPU (its next D2Hs take the eager form, the bytes through the
 * host): the path checks of a loop over one buffer leave it to the loop's
 * last round. */
static int untouched_host_check = 1;
static const char *expect = "any";

/* Whether --expect asks for bounced pairs: "bounced" (lazy: neither copy
 * through the host) or "served" (the H2D from the device; the D2H either
 * way, as the first snapshot of a reused buffer is eager). */
static bool expect_bounce(void)
{
    return strcmp(expect, "bounced") == 0 || strcmp(expect, "served") == 0;
}
static size_t page;
static void *dev_src[2], *dev_dst[2];
static unsigned char *want;
static size_t cap = (size_t)64 << 20;
/* The devices that play GPU 0 and GPU 1: 0 and 1, or with one GPU 0 and 0
 * (the same-GPU bounce: D2H from one buffer of device 0, H2D into another
 * of it). Every "from"/"to" below is such a role. */
static int dev_id[2] = {0, 1};
#define DEV(role) dev_id[role]

#define FAIL(...)                                                                         \
    do {                                                                                  \
        printf("FAIL line %d: ", __LINE__);                                               \
        printf(__VA_ARGS__);                                                              \
        printf("\n");                                                                     \
        failures++;                                                                       \
    } while (0)

static void pattern(unsigned char *out, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        out[i] = p2pk_pattern_byte(seed, i);
}

/* The device's bytes [0, n) must equal want[0, n); prints the checksum. */
static void check_dev(int dev, void *d, size_t n, const char *what)
{
    size_t n4 = n & ~(size_t)3;
    unsigned long long got = 0;
    GT_CHECK(cudaSetDevice(DEV(dev)));
    GT_CHECK(p2pk_checksum_sync(d, n4, &got, GT_STREAM));
    unsigned long long exp = p2pk_checksum_host(want, n4);
    if (got != exp)
        FAIL("%s: device checksum %016llx, expected %016llx", what, got, exp);
    printf("%s: %zu bytes, checksum %016llx\n", what, n, got);
}

static void check_host(const unsigned char *h, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (h[i] != want[i]) {
            FAIL("%s: host byte %zu is 0x%02x, expected 0x%02x", what, i, h[i], want[i]);
            return;
        }
}

/* The path check of one untouched pair (--expect). */
static void window_begin(void)
{
    char err[256];
    if (strcmp(expect, "any") != 0 && cupti_paths_begin(err, sizeof err) != 0)
        FAIL("cupti: %s", err);
}

static void window_end(size_t n, const char *what)
{
    if (strcmp(expect, "any") == 0)
        return;
    gt_sync_devices(DEV(0), DEV(1), DEV(0));
    struct cupti_paths_counts c;
    char err[256];
    if (cupti_paths_end(&c, err, sizeof err) != 0) {
        FAIL("cupti: %s", err);
        return;
    }
    unsigned long long host = c.htod_bytes + c.dtoh_bytes, dev = c.ptop_bytes + c.dtod_bytes;
    if (strcmp(expect, "bounced") == 0 && n >= ((size_t)64 << 10) &&
        (host > 4 * page || dev + 2 * page < n))
        FAIL("%s: not bounced on the device: %llu bytes through the host, %llu device to "
             "device", what, host, dev);
    if (strcmp(expect, "served") == 0 && n >= ((size_t)64 << 10) &&
        (c.htod_bytes > 2 * page || dev + 2 * page < n))
        FAIL("%s: the H2D not served on the device: %llu bytes from the host, %llu device "
             "to device", what, (unsigned long long)c.htod_bytes, dev);
    if (strcmp(expect, "plain") == 0 && host != 2 * (unsigned long long)n)
        FAIL("%s: %llu bytes through the host, expected %zu", what, host, 2 * n);
}

/* Evidence for the shim, which bounces only a D2H whose buffer (or
 * source) was seen going back to a GPU: one staging round of the same
 * buffer and source, unchecked, in both runs. */
static void prime(unsigned char *h, const void *src, void *dst, size_t n, int from, int to)
{
    GT_CHECK(cudaSetDevice(DEV(from)));
    GT_CHECK(cudaMemcpy(h, src, n, cudaMemcpyDeviceToHost));
    GT_CHECK(cudaSetDevice(DEV(to)));
    GT_CHECK(cudaMemcpy(dst, h, n, cudaMemcpyHostToDevice));
}

/* One pair: D2H from dev `from` (pending work first), H2D to `to`. mode:
 * 0 untouched, 1 read in between, 2 one byte written per 64 KiB. */
static void pair(unsigned char *h, size_t n, int from, int to, int mode, int async,
                 uint32_t seed)
{
    char what[128];
    snprintf(what, sizeof what, "%s %zu B %d->%d %s%s", async ? "async" : "sync", n, from, to,
             mode == 0 ? "untouched" : mode == 1 ? "read" : "written",
             ((uintptr_t)h % page) ? " unaligned" : "");
    cudaStream_t s = GT_STREAM;
    prime(h, dev_src[from], dev_dst[to], n, from, to);
    GT_CHECK(cudaSetDevice(DEV(from)));
    GT_CHECK(p2pk_fill(dev_src[from], cap, seed, s));
    /* Pending on the source: a busy kernel, then the first half's bytes. */
    GT_CHECK(p2pk_busy(3000, dev_src[from], n / 2, seed + 1, s));
    pattern(want, n, seed);
    unsigned char *half = (unsigned char *)malloc(n / 2 + 1);
    pattern(half, n / 2, seed + 1);
    memcpy(want, half, n / 2);
    free(half);
    if (mode == 0)
        window_begin();
    if (async) {
        cudaStream_t cs;
        GT_CHECK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
        cudaEvent_t ev;
        GT_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
        GT_CHECK(cudaEventRecord(ev, s));
        GT_CHECK(cudaStreamWaitEvent(cs, ev, 0));
        GT_CHECK(cudaMemcpyAsync(h, dev_src[from], n, cudaMemcpyDeviceToHost, cs));
        GT_CHECK(cudaStreamSynchronize(cs));
        GT_CHECK(cudaEventDestroy(ev));
        GT_CHECK(cudaStreamDestroy(cs));
    } else {
        GT_CHECK(cudaMemcpy(h, dev_src[from], n, cudaMemcpyDeviceToHost));
    }
    if (mode == 1)
        check_host(h, n, what);
    if (mode == 2)
        for (size_t i = 7; i < n; i += 65536)
            h[i] = want[i] = (unsigned char)(i * 31 + 1);
    /* Pending on the destination: the H2D must land after it. */
    GT_CHECK(cudaSetDevice(DEV(to)));
    GT_CHECK(p2pk_busy(3000, dev_dst[to], n & ~(size_t)3, seed + 2, s));
    if (async) {
        GT_CHECK(cudaMemcpyAsync(dev_dst[to], h, n, cudaMemcpyHostToDevice, s));
        GT_CHECK(cudaStreamSynchronize(s));
    } else {
        GT_CHECK(cudaMemcpy(dev_dst[to], h, n, cudaMemcpyHostToDevice));
    }
    if (mode == 0)
        window_end(n, what);
    check_dev(to, dev_dst[to], n, what);
    if (mode != 0 || untouched_host_check)
        check_host(h, n, what);
}

/* ---- the other readers: write(2), a child ---- */

static void kernel_readers(size_t n)
{
    unsigned char *h = (unsigned char *)malloc(n), *out = (unsigned char *)malloc(n);
    GT_CHECK(cudaSetDevice(DEV(0)));
    GT_CHECK(p2pk_fill(dev_src[0], n, 77, GT_STREAM));
    pattern(want, n, 77);
    GT_CHECK(cudaMemcpy(h, dev_src[0], n, cudaMemcpyDeviceToHost));
    if (bt_pipe_through(h, out, n) != n)
        FAIL("write(2) from the bounced buffer: %s", strerror(errno));
    check_host(out, n, "write(2) into a pipe");
    printf("write(2) into a pipe: %zu bytes\n", n);

    GT_CHECK(p2pk_fill(dev_src[0], n, 78, GT_STREAM));
    pattern(want, n, 78);
    GT_CHECK(cudaMemcpy(h, dev_src[0], n, cudaMemcpyDeviceToHost));
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(memcmp(h, want, n) == 0 ? 0 : 1);
    int status = -1;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        FAIL("a forked child saw other bytes (status %d)", status);
    GT_CHECK(cudaMemcpy(dev_dst[1], h, n, cudaMemcpyHostToDevice));
    check_dev(1, dev_dst[1], n, "after fork");
    free(h);
    free(out);
}

static void lifetimes(size_t n)
{
    unsigned char *h = (unsigned char *)malloc(n);
    GT_CHECK(cudaSetDevice(DEV(0)));
    GT_CHECK(p2pk_fill(dev_src[0], n, 90, GT_STREAM));
    pattern(want, n, 90);
    GT_CHECK(cudaMemcpy(h, dev_src[0], n, cudaMemcpyDeviceToHost));
    h = (unsigned char *)realloc(h, 2 * n); /* mremap moves it */
    GT_CHECK(cudaMemcpy(dev_dst[1], h, n, cudaMemcpyHostToDevice));
    check_dev(1, dev_dst[1], n, "after realloc");
    GT_CHECK(cudaSetDevice(DEV(0)));
    GT_CHECK(cudaMemcpy(h, dev_src[0], n, cudaMemcpyDeviceToHost));
    free(h);
    unsigned char *g = (unsigned char *)calloc(1, n); /* fresh zeros */
    memset(want, 0, n);
    GT_CHECK(cudaMemcpy(dev_dst[1], g, n, cudaMemcpyHostToDevice));
    check_dev(1, dev_dst[1], n, "calloc after free");
    free(g);
}

/* Pinned and registered memory is bounced eagerly: the D2H runs as usual,
 * the H2D comes from the snapshot while no GPU work that could write the
 * buffer behind its page tables (a kernel, a memset) was issued in
 * between. pair() launches kernels in between, so its path is not
 * checked here (the bytes are); eager_pair() checks the path of a pair
 * with nothing in between, kernel_writes() that a kernel writing the
 * pinned buffer through its mapped address is seen. */
static void eager_pair(unsigned char *h, size_t n, uint32_t seed, const char *what)
{
    prime(h, dev_src[0], dev_dst[1], n, 0, 1);
    GT_CHECK(cudaSetDevice(DEV(0)));
    GT_CHECK(p2pk_fill(dev_src[0], n, seed, GT_STREAM));
    /* Pending on the source when the D2H is issued: the snapshot, taken on
     * a stream of the shim's, must come after it. */
    GT_CHECK(p2pk_busy(3000, dev_src[0], n / 2, seed + 1, GT_STREAM));
    pattern(want, n, seed);
    unsigned char *half = (unsigned char *)malloc(n / 2 + 1);
    pattern(half, n / 2, seed + 1);
    memcpy(want, half, n / 2);
    free(half);
    const char *saved = expect;
    if (strcmp(expect, "any") != 0)
        window_begin();
    GT_CHECK(cudaMemcpy(h, dev_src[0], n, cudaMemcpyDeviceToHost));
    GT_CHECK(cudaSetDevice(DEV(1)));
    GT_CHECK(cudaMemcpy(dev_dst[1], h, n, cudaMemcpyHostToDevice));
    if (strcmp(expect, "any") != 0) {
        gt_sync_devices(DEV(0), DEV(1), DEV(0));
        struct cupti_paths_counts c;
        char err[256];
        if (cupti_paths_end(&c, err, sizeof err) != 0)
            FAIL("cupti: %s", err);
        else if (expect_bounce() &&
                 (c.dtoh_bytes != n || c.htod_bytes != 0 || c.ptop_bytes + c.dtod_bytes < n))
            FAIL("%s: D2H %llu, H2D %llu bytes through the host, %llu device to device; "
                 "expected the D2H only", what, (unsigned long long)c.dtoh_bytes,
                 (unsigned long long)c.htod_bytes,
                 (unsigned long long)(c.ptop_bytes + c.dtod_bytes));
        else if (strcmp(expect, "plain") == 0 && c.dtoh_bytes + c.htod_bytes != 2 * n)
            FAIL("%s: %llu bytes through the host, expected %zu", what,
                 (unsigned long long)(c.dtoh_bytes + c.htod_bytes), 2 * n);
    }
    expect = saved;
    check_dev(1, dev_dst[1], n, what);
    check_host(h, n, what);
}

/* A kernel writes the pinned buffer through its mapped address after the
 * D2H: the H2D must deliver the kernel's bytes, not the snapshot's. */
static void kernel_writes(unsigned char *h, size_t n)
{
    GT_CHECK(cudaSetDevice(DEV(0)));
    GT_CHECK(p2pk_fill(dev_src[0], n, 120, GT_STREAM));
    GT_CHECK(cudaMemcpy(h, dev_src[0], n, cudaMemcpyDeviceToHost));
    GT_CHECK(cudaSetDevice(DEV(1)));
    GT_CHECK(p2pk_fill(h, n, 121, GT_STREAM)); /* device 1 writes the host buffer */
    GT_CHECK(cudaDeviceSynchronize());
    pattern(want, n, 121);
    GT_CHECK(cudaMemcpy(dev_dst[1], h, n, cudaMemcpyHostToDevice));
    check_dev(1, dev_dst[1], n, "pinned written by a kernel");
    check_host(h, n, "pinned written by a kernel");
}

static void pinned(size_t n)
{
    const char *saved = expect;
    if (expect_bounce())
        expect = "any";
    unsigned char *p;
    GT_CHECK(cudaMallocHost((void **)&p, n));
    for (int mode = 0; mode < 3; mode++)
        pair(p, n, 0, 1, mode, 1, 100 + (uint32_t)mode);
    expect = saved;
    /* A buffer of its own: p's written pair wasted its snapshot, and the
     * shim's predictor backs off from p for the next D2Hs. */
    unsigned char *q;
    GT_CHECK(cudaMallocHost((void **)&q, n));
    for (uint32_t r = 0; r < 3; r++)
        eager_pair(q, n, 130 + r, r ? "pinned again, nothing in between" :
                                      "pinned, nothing in between");
    GT_CHECK(cudaFreeHost(q));
    kernel_writes(p, n);
    GT_CHECK(cudaFreeHost(p));
    if (expect_bounce())
        expect = "any";
    unsigned char *r = (unsigned char *)malloc(n);
    GT_CHECK(cudaHostRegister(r, n, cudaHostRegisterDefault));
    for (int mode = 0; mode < 3; mode++)
        pair(r, n, 1, 0, mode, 0, 110 + (uint32_t)mode);
    GT_CHECK(cudaHostUnregister(r));
    free(r);
    expect = saved;
}

/* ---- --probe ---- */

static void maps_line(const void *p, const char *what)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)p >= lo && (uintptr_t)p < hi)
            printf("probe %s: maps %s", what, line);
    }
    if (f)
        fclose(f);
}

static double probe_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static long faults_now(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt + u.ru_majflt;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
/* What a rewrite of n write-protected bytes costs in page faults once the
 * protection is lifted, plain, after MADV_POPULATE_WRITE, and after the
 * range's unregistration and MADV_POPULATE_WRITE (the ways the shim may
 * give a spoilt snapshot up). fd has [p, p+n) registered for WP. */
static void probe_unprotect(int fd, void *p, size_t n, const char *what)
{
    const char *ways[3] = {"unprotect", "unprotect+populate", "unregister+populate"};
    for (int way = 0; way < 3; way++) {
        struct uffdio_range u = {(uintptr_t)p, n};
        struct uffdio_register r = {{(uintptr_t)p, n}, UFFDIO_REGISTER_MODE_WP, 0};
        if (ioctl(fd, UFFDIO_REGISTER, &r) != 0) {
            printf("probe %s: %s: register: %s\n", what, ways[way], strerror(errno));
            continue;
        }
        memset(p, way + 1, n);
        struct uffdio_writeprotect w = {{(uintptr_t)p, n}, UFFDIO_WRITEPROTECT_MODE_WP};
        int rc = ioctl(fd, UFFDIO_WRITEPROTECT, &w);
        w.mode = way > 0 ? UFFDIO_WRITEPROTECT_MODE_DONTWAKE : 0;
        rc = rc == 0 ? ioctl(fd, UFFDIO_WRITEPROTECT, &w) : rc;
        if (way == 2)
            rc = rc == 0 ? ioctl(fd, UFFDIO_UNREGISTER, &u) : rc;
        long f0 = faults_now();
        double t0 = probe_now_ms();
        int pop = way > 0 ? madvise(p, n, MADV_POPULATE_WRITE) : 0;
        int pop_errno = errno;
        double t1 = probe_now_ms();
        long f1 = faults_now();
        memset(p, 7 + way, n);
        double t2 = probe_now_ms();
        long f2 = faults_now();
        printf("probe %s: %s: ioctl %s, populate %s (%ld faults, %.2f ms), rewrite of %zu "
               "pages: %ld faults, %.2f ms\n", what, ways[way], rc == 0 ? "ok" : strerror(errno),
               pop == 0 ? "ok" : strerror(pop_errno), f1 - f0, t1 - t0, n / 4096, f2 - f1,
               t2 - t1);
        if (way < 2)
            ioctl(fd, UFFDIO_UNREGISTER, &u);
    }
}

/* Cheaper ways to make a write-protected shared range writable again
 * than MADV_POPULATE_WRITE's fault per page, each timed with the rewrite
 * after it: an mprotect that adds PROT_EXEC and one that takes it back
 * (the kernel's mprotect makes dirty shared PTEs writable in its pass), a
 * protection-key change to a fresh key and back (the same pass with no
 * permission added), and asynchronous write-protection (Linux 6.7:
 * UFFD_FEATURE_WP_ASYNC resolves write faults in the kernel, and
 * PAGEMAP_SCAN says which pages were written). Figures only. */
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_UNPOPULATED (1ULL << 13)
#define UFFD_FEATURE_WP_ASYNC (1ULL << 15)
#endif
struct probe_scan_arg {
    uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted,
        category_mask, category_anyof_mask, return_mask;
};
struct probe_page_region {
    uint64_t start, end, categories;
};
#define PROBE_PAGEMAP_SCAN _IOWR('f', 16, struct probe_scan_arg)
#define PROBE_PAGE_IS_WRITTEN (1ULL << 1)
#define PROBE_SCAN_WP_MATCHING (1ULL << 0)
#define PROBE_SCAN_CHECK_WPASYNC (1ULL << 1)

/* Pages of [p, p+n) written since their protection (and, with reprotect,
 * protected again in the same call); -1 with errno on failure. */
static long probe_scan_written(void *p, size_t n, bool reprotect, double *ms)
{
    static struct probe_page_region vec[4096];
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct probe_scan_arg a = {};
    a.size = sizeof a;
    a.flags = PROBE_SCAN_CHECK_WPASYNC | (reprotect ? PROBE_SCAN_WP_MATCHING : 0);
    a.start = (uintptr_t)p;
    a.end = (uintptr_t)p + n;
    a.vec = (uintptr_t)vec;
    a.vec_len = 4096;
    a.category_mask = PROBE_PAGE_IS_WRITTEN;
    a.return_mask = PROBE_PAGE_IS_WRITTEN;
    double t0 = probe_now_ms();
    long regions = ioctl(fd, PROBE_PAGEMAP_SCAN, &a);
    *ms = probe_now_ms() - t0;
    int e = errno;
    close(fd);
    errno = e;
    if (regions < 0)
        return -1;
    long pages = 0;
    for (long i = 0; i < regions; i++)
        pages += (long)((vec[i].end - vec[i].start) / 4096);
    return pages;
}

static void probe_rewrite(void *p, size_t n, const char *what, const char *way, double pass_ms,
                          int pass_rc, int pass_errno)
{
    long f1 = faults_now();
    double t1 = probe_now_ms();
    memset(p, 0x5a, n);
    double t2 = probe_now_ms();
    printf("probe %s: %s: pass %s (%.2f ms), rewrite of %zu pages: %ld faults, %.2f ms\n", what,
           way, pass_rc == 0 ? "ok" : strerror(pass_errno), pass_ms, n / 4096,
           faults_now() - f1, t2 - t1);
}

static void probe_cheap_writable(void *p, size_t n, const char *what)
{
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    struct uffdio_api api = {UFFD_API, UFFD_FEATURE_PAGEFAULT_FLAG_WP, 0};
    if (fd < 0 || ioctl(fd, UFFDIO_API, &api) != 0)
        return;
    const char *ways[3] = {"unprotect+exec toggle", "unregister+exec toggle",
                           "unprotect+pkey toggle"};
    for (int way = 0; way < 3; way++) {
        struct uffdio_range u = {(uintptr_t)p, n};
        struct uffdio_register r = {{(uintptr_t)p, n}, UFFDIO_REGISTER_MODE_WP, 0};
        if (ioctl(fd, UFFDIO_REGISTER, &r) != 0)
            break;
        memset(p, way + 1, n);
        struct uffdio_writeprotect w = {{(uintptr_t)p, n}, UFFDIO_WRITEPROTECT_MODE_WP};
        ioctl(fd, UFFDIO_WRITEPROTECT, &w);
        w.mode = 0;
        ioctl(fd, UFFDIO_WRITEPROTECT, &w);
        if (way == 1)
            ioctl(fd, UFFDIO_UNREGISTER, &u);
        double t0 = probe_now_ms();
        int rc;
        if (way < 2) {
            rc = mprotect(p, n, PROT_READ | PROT_WRITE | PROT_EXEC);
            rc = rc == 0 ? mprotect(p, n, PROT_READ | PROT_WRITE) : rc;
        } else {
            int key = (int)syscall(SYS_pkey_alloc, 0, 0);
            rc = key < 0 ? -1 : (int)syscall(SYS_pkey_mprotect, p, n, PROT_READ | PROT_WRITE, key);
            rc = rc == 0 ? (int)syscall(SYS_pkey_mprotect, p, n, PROT_READ | PROT_WRITE, 0) : rc;
            if (key >= 0)
                syscall(SYS_pkey_free, key);
        }
        int e = errno;
        probe_rewrite(p, n, what, ways[way], probe_now_ms() - t0, rc, e);
        if (way != 1)
            ioctl(fd, UFFDIO_UNREGISTER, &u);
    }
    close(fd);

    fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    struct uffdio_api async = {UFFD_API, UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED, 0};
    if (fd < 0 || ioctl(fd, UFFDIO_API, &async) != 0) {
        printf("probe %s: wp-async: unavailable: %s\n", what, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    struct uffdio_register r = {{(uintptr_t)p, n}, UFFDIO_REGISTER_MODE_WP, 0};
    if (ioctl(fd, UFFDIO_REGISTER, &r) != 0) {
        printf("probe %s: wp-async: register: %s\n", what, strerror(errno));
        close(fd);
        return;
    }
    memset(p, 3, n);
    struct uffdio_writeprotect w = {{(uintptr_t)p, n}, UFFDIO_WRITEPROTECT_MODE_WP};
    double t0 = probe_now_ms();
    int rc = ioctl(fd, UFFDIO_WRITEPROTECT, &w);
    int e = errno;
    probe_rewrite(p, n, what, "wp-async protect, full rewrite", probe_now_ms() - t0, rc, e);
    double scan_ms = 0;
    long written = probe_scan_written(p, n, true, &scan_ms);
    printf("probe %s: wp-async: scan and reprotect: %ld of %zu pages written (%s), %.2f ms\n",
           what, written, n / 4096, written < 0 ? strerror(errno) : "ok", scan_ms);
    long f0 = faults_now();
    for (size_t off = 0; off < n; off += n / 8)
        ((volatile char *)p)[off] = 9;
    long f1 = faults_now();
    written = probe_scan_written(p, n, false, &scan_ms);
    printf("probe %s: wp-async: 8 single-byte writes: %ld faults, scan: %ld pages written, "
           "%.2f ms\n", what, f1 - f0, written, scan_ms);
    struct uffdio_range u = {(uintptr_t)p, n};
    ioctl(fd, UFFDIO_UNREGISTER, &u);
    close(fd);
}

static void probe_memory(void *p, size_t n, const char *what)
{
    maps_line(p, what);
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    struct uffdio_api api = {UFFD_API, UFFD_FEATURE_PAGEFAULT_FLAG_WP, 0};
    if (fd < 0 || ioctl(fd, UFFDIO_API, &api) != 0) {
        printf("probe %s: userfaultfd unavailable: %s\n", what, strerror(errno));
    } else {
        uint64_t modes[3] = {UFFDIO_REGISTER_MODE_WP, UFFDIO_REGISTER_MODE_MISSING,
                             UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP};
        const char *names[3] = {"WP", "MISSING", "MISSING|WP"};
        for (int i = 0; i < 3; i++) {
            struct uffdio_register r = {{(uintptr_t)p, n}, modes[i], 0};
            int rc = ioctl(fd, UFFDIO_REGISTER, &r);
            printf("probe %s: userfaultfd register %s: %s\n", what, names[i],
                   rc == 0 ? "ok" : strerror(errno));
            if (rc == 0 && i == 0) {
                struct uffdio_writeprotect w = {{(uintptr_t)p, n}, UFFDIO_WRITEPROTECT_MODE_WP};
                int wr = ioctl(fd, UFFDIO_WRITEPROTECT, &w);
                printf("probe %s: write-protect: %s\n", what, wr == 0 ? "ok" : strerror(errno));
                w.mode = 0;
                ioctl(fd, UFFDIO_WRITEPROTECT, &w);
                struct uffdio_range u = {(uintptr_t)p, n};
                ioctl(fd, UFFDIO_UNREGISTER, &u);
                probe_unprotect(fd, p, n, what);
                probe_cheap_writable(p, n, what);
                continue;
            }
            if (rc == 0) {
                struct uffdio_range u = {(uintptr_t)p, n};
                ioctl(fd, UFFDIO_UNREGISTER, &u);
            }
        }
        close(fd);
    }
    int mp = mprotect(p, n, PROT_READ);
    printf("probe %s: mprotect(PROT_READ): %s\n", what, mp == 0 ? "ok" : strerror(errno));
    if (mp == 0)
        mprotect(p, n, PROT_READ | PROT_WRITE);
    int md = madvise(p, n, MADV_DONTNEED);
    printf("probe %s: madvise(MADV_DONTNEED): %s (not undone: the bytes are gone)\n", what,
           md == 0 ? "ok" : strerror(errno));
}

static void probe(void)
{
    int ndev = 0;
    GT_CHECK(cudaGetDeviceCount(&ndev));
    for (int d = 0; d < ndev; d++) {
        int pma = -1, host_pt = -1;
        cudaDeviceGetAttribute(&pma, cudaDevAttrPageableMemoryAccess, d);
        cudaDeviceGetAttribute(&host_pt, cudaDevAttrPageableMemoryAccessUsesHostPageTables, d);
        printf("probe device %d: pageable memory access %d, through host page tables %d\n", d,
               pma, host_pt);
    }
    size_t n = (size_t)4 << 20;
    void *p;
    GT_CHECK(cudaMallocHost(&p, n));
    probe_memory(p, n, "cudaMallocHost");
    GT_CHECK(cudaFreeHost(p));
    GT_CHECK(cudaHostAlloc(&p, n, cudaHostAllocMapped | cudaHostAllocPortable));
    probe_memory(p, n, "cudaHostAlloc(mapped)");
    GT_CHECK(cudaFreeHost(p));
    p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(p, 1, n);
    GT_CHECK(cudaHostRegister(p, n, cudaHostRegisterDefault));
    probe_memory(p, n, "cudaHostRegister");
    GT_CHECK(cudaHostUnregister(p));
    munmap(p, n);
}

/* --probe-hmm: a kernel reads a pageable buffer that a D2H just filled,
 * through its host address (HMM/ATS). Under the shim with lazy bounces
 * this is the case a lazy page must survive; prints what the GPU saw. */
static int probe_hmm(void)
{
    int pma = 0;
    GT_CHECK(cudaDeviceGetAttribute(&pma, cudaDevAttrPageableMemoryAccess, 0));
    if (!pma) {
        printf("probe-hmm: device 0 cannot read pageable memory: nothing to check\n");
        return 0;
    }
    size_t n = (size_t)64 << 20;
    unsigned char *h = (unsigned char *)malloc(n), *exp = (unsigned char *)malloc(n);
    void *src;
    GT_CHECK(cudaSetDevice(0));
    GT_CHECK(cudaMalloc(&src, n));
    GT_CHECK(p2pk_fill(src, n, 77, GT_STREAM));
    pattern(exp, n, 77);
    GT_CHECK(cudaMemcpy(h, src, n, cudaMemcpyDeviceToHost));
    unsigned long long got = 0;
    cudaError_t e = p2pk_checksum_sync(h, n, &got, GT_STREAM);
    unsigned long long want_sum = p2pk_checksum_host(exp, n);
    printf("probe-hmm: kernel read of the D2H's pageable buffer: %s, checksum %s\n",
           cudaGetErrorName(e), e == cudaSuccess && got == want_sum ? "right" : "WRONG");
    return e == cudaSuccess && got == want_sum ? 0 : 1;
}

static size_t parse_size(const char *s)
{
    char *end;
    size_t v = strtoull(s, &end, 10);
    if (*end == 'K')
        v <<= 10;
    else if (*end == 'M')
        v <<= 20;
    return v;
}

int main(int argc, char **argv)
{
    size_t sizes[16] = {4096, (64 << 10) + 1, (1 << 20) + 333, (size_t)64 << 20};
    int nsizes = 4, do_probe = 0, do_probe_hmm = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc) {
            expect = argv[++i];
        } else if (strcmp(argv[i], "--probe") == 0) {
            do_probe = 1;
        } else if (strcmp(argv[i], "--probe-hmm") == 0) {
            do_probe_hmm = 1;
        } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            nsizes = 0;
            for (char *t = strtok(argv[++i], ","); t && nsizes < 16; t = strtok(NULL, ","))
                sizes[nsizes++] = parse_size(t);
        }
    }
    for (int i = 0; i < nsizes; i++)
        cap = sizes[i] > cap ? sizes[i] : cap;
    int ndev = gt_require_gpus("bounce_gpu", 1);
    page = (size_t)sysconf(_SC_PAGESIZE);
    if (do_probe) {
        probe();
        return 0;
    }
    if (do_probe_hmm)
        return probe_hmm();
    printf("bounce_gpu (%s cudart, %s stream)\n", P2PSHIM_CUDART, GT_STREAM_MODE);
    dev_id[1] = gt_peer_device("bounce_gpu", ndev, "bounces from one GPU to another");
    if (strcmp(expect, "any") != 0) {
        char err[256];
        if (cupti_paths_init(err, sizeof err) != 0) {
            printf("FAIL: cupti: %s\n", err);
            return 1;
        }
    }
    for (int d = 0; d < 2; d++) {
        GT_CHECK(cudaSetDevice(DEV(d)));
        GT_CHECK(cudaMalloc(&dev_src[d], cap));
        GT_CHECK(cudaMalloc(&dev_dst[d], cap));
    }
    want = (unsigned char *)malloc(cap + 64);
    /* Untouched pairs get a buffer of their own: one the CPU reads or
     * writes between the copies wastes its snapshot and backs off (the
     * shim's predictor), which moves the D2H's bytes through the host. */
    unsigned char *stage = (unsigned char *)malloc(cap + 64);
    unsigned char *touched = (unsigned char *)malloc(cap + 64);
    untouched_host_check = !expect_bounce();
    for (int i = 0; i < nsizes; i++) {
        size_t n = sizes[i];
        for (int async = 0; async < 2; async++)
            for (int mode = 0; mode < 3; mode++) {
                unsigned char *b = mode == 0 ? stage : touched;
                pair(b, n, 0, 1, mode, async, 10 * (uint32_t)i + (uint32_t)mode);
                pair(b + 3, n - 3, 1, 0, mode, async, 10 * (uint32_t)i + 5);
            }
    }
    /* One staging buffer, eight rounds, both directions. */
    for (int r = 0; r < 8; r++) {
        untouched_host_check = r == 7 || !expect_bounce();
        pair(stage, (size_t)64 << 20, r % 2, 1 - r % 2, 0, r % 3 == 0, 200 + (uint32_t)r);
    }
    untouched_host_check = 1;
    kernel_readers((size_t)64 << 20);
    lifetimes((size_t)64 << 20);
    pinned((size_t)64 << 20);
    if (strcmp(expect, "any") != 0)
        cupti_paths_shutdown();
    printf("bounce_gpu: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
