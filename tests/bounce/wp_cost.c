/* wp_cost [MIB] [ROUNDS]: what a full CPU rewrite of write-protected
 * memory costs under each way of tracking writes that the bounce module
 * could use (docs/BOUNCE.md quotes its figures). No shim, no CUDA: one
 * private anonymous mapping of MIB MiB (default 1024), present, then per
 * way and round: write-protect it all, memset it (in order, then in random
 * page order), and for the asynchronous way ask the kernel which pages
 * were written.
 *
 *   plain      no protection: the memset alone
 *   per-page   userfaultfd WP, a handler thread unprotecting the faulting
 *              page (the shim before the fault budget)
 *   budget     the same, but after BUDGET faults the handler unprotects
 *              the whole range in one call (the shim now)
 *   async      UFFD_FEATURE_WP_ASYNC (Linux >= 6.7): the kernel resolves
 *              each write fault itself; PAGEMAP_SCAN then lists the
 *              written pages
 *
 * Needs userfaultfd (root or /dev/userfaultfd). Prints one line per way
 * and order: median milliseconds of the rewrite, of the protection and of
 * the scan, and faults seen by the handler. Exit 0 when every way
 * worked, 1 when one was refused (async on an older kernel: said). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "uffd_probe.h"

#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef PAGEMAP_SCAN
struct page_region {
    uint64_t start, end, categories;
};
struct pm_scan_arg {
    uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
    uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_WRITTEN (1 << 1)
#endif

#define BUDGET 16
#define ROUNDS_MAX 15

static size_t page;
static int uffd = -1;
static char *base;
static size_t len;
static int budget; /* 0: per page */
static _Atomic long faults;
static _Atomic int stop;

static int protect(uintptr_t lo, size_t n, int on)
{
    struct uffdio_writeprotect w = {.range = {lo, n}, .mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0};
    return ioctl(uffd, UFFDIO_WRITEPROTECT, &w);
}

static void *handler(void *arg)
{
    (void)arg;
    struct uffd_msg m[16];
    while (!atomic_load(&stop)) {
        struct pollfd p = {uffd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = read(uffd, m, sizeof m);
        for (ssize_t i = 0; i < n / (ssize_t)sizeof m[0]; i++) {
            if (m[i].event != UFFD_EVENT_PAGEFAULT)
                continue;
            uintptr_t a = (uintptr_t)m[i].arg.pagefault.address & ~(uintptr_t)(page - 1);
            long k = atomic_fetch_add(&faults, 1) + 1;
            if (budget != 0 && k >= budget)
                protect((uintptr_t)base, len, 0); /* the whole range at once */
            else
                protect(a, page, 0);
        }
    }
    return NULL;
}

static int open_uffd(uint64_t features)
{
    int fd = probe_uffd_open(features);
    if (fd < 0)
        return -1;
    struct uffdio_register r = {.range = {(uintptr_t)base, len}, .mode = UFFDIO_REGISTER_MODE_WP};
    if (ioctl(fd, UFFDIO_REGISTER, &r) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Every page once, in order or in a random order of its own. */
static void rewrite(const size_t *order, unsigned char v)
{
    size_t n = len / page;
    if (order == NULL) {
        memset(base, v, len);
        return;
    }
    for (size_t i = 0; i < n; i++)
        memset(base + order[i] * page, v, page);
}

/* The pages written since the protection, by PAGEMAP_SCAN. */
static long scan_written(int pm)
{
    static struct page_region vec[4096];
    long pages = 0;
    uint64_t at = (uintptr_t)base, end = (uintptr_t)base + len;
    while (at < end) {
        struct pm_scan_arg a = {
            .size = sizeof a,
            .start = at,
            .end = end,
            .vec = (uintptr_t)vec,
            .vec_len = sizeof vec / sizeof vec[0],
            .category_mask = PAGE_IS_WRITTEN,
            .return_mask = PAGE_IS_WRITTEN,
        };
        long r = ioctl(pm, PAGEMAP_SCAN, &a);
        if (r < 0)
            return -1;
        for (long i = 0; i < r; i++)
            pages += (long)((vec[i].end - vec[i].start) / page);
        if (a.walk_end <= at)
            return -1;
        at = a.walk_end;
    }
    return pages;
}

/* One way, one order, rounds times. way: 0 plain, 1 per-page, 2 budget,
 * 3 async. */
static int run(int way, const size_t *order, int rounds)
{
    static const char *const names[] = {"plain", "per-page", "budget", "async"};
    double wr[ROUNDS_MAX], pr[ROUNDS_MAX], sc[ROUNDS_MAX];
    long nf = 0, written = 0;
    pthread_t t;
    int pm = -1;
    if (way != 0) {
        uffd = open_uffd(way == 3 ? UFFD_FEATURE_WP_ASYNC : UFFD_FEATURE_PAGEFAULT_FLAG_WP);
        if (uffd < 0) {
            printf("%-8s %-6s refused: %s\n", names[way], order ? "random" : "order",
                   strerror(errno));
            return 1;
        }
        budget = way == 2 ? BUDGET : 0;
        atomic_store(&stop, 0);
        if (way != 3)
            pthread_create(&t, NULL, handler, NULL);
        else
            pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    }
    for (int r = 0; r < rounds; r++) {
        atomic_store(&faults, 0);
        double t0 = probe_now_ms();
        if (way != 0)
            protect((uintptr_t)base, len, 1);
        double t1 = probe_now_ms();
        rewrite(order, (unsigned char)(r + 1));
        double t2 = probe_now_ms();
        if (way == 3)
            written = scan_written(pm);
        double t3 = probe_now_ms();
        pr[r] = t1 - t0;
        wr[r] = t2 - t1;
        sc[r] = t3 - t2;
        nf = atomic_load(&faults);
        for (size_t i = 0; i < len; i += page)
            if ((unsigned char)base[i] != (unsigned char)(r + 1)) {
                printf("%s: byte %zu wrong\n", names[way], i);
                return 1;
            }
    }
    if (way != 0) {
        atomic_store(&stop, 1);
        if (way != 3)
            pthread_join(t, NULL);
        else
            close(pm);
        close(uffd);
    }
    printf("%-8s %-6s rewrite %9.1f ms  protect %6.2f ms  scan %6.2f ms  faults %7ld\n", names[way],
           order ? "random" : "order", probe_median(wr, rounds), probe_median(pr, rounds),
           probe_median(sc, rounds), nf);
    if (way == 3)
        printf("%-8s %-6s pages written by the scan: %ld of %zu\n", names[way],
               order ? "random" : "order", written, len / page);
    return 0;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 1024;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    rounds = rounds < 1 ? 1 : rounds > ROUNDS_MAX ? ROUNDS_MAX : rounds;
    page = (size_t)sysconf(_SC_PAGESIZE);
    len = mib << 20;
    base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return perror("mmap"), 2;
    madvise(base, len, MADV_NOHUGEPAGE); /* 4 KiB pages, as a snapshot's */
    memset(base, 0, len);
    size_t *order = probe_page_order(len / page);
    if (order == NULL)
        return perror("malloc"), 2;
    printf("%zu MiB, %d round(s), medians\n", mib, rounds);
    int bad = 0;
    for (int way = 0; way < 4; way++) {
        bad |= run(way, NULL, way == 1 ? 1 : rounds); /* per-page: seconds a round */
        bad |= run(way, order, way == 1 ? 1 : rounds);
    }
    free(order);
    return bad;
}
