/* shared_release_cost [MIB] [ROUNDS]: what giving up write-protection of
 * a shared mapping (pinned memory is a shared mapping of /dev/zero) costs
 * a CPU rewrite that meets it, under the two ways the bounce module could
 * release it (docs/BOUNCE.md quotes the figures). No shim, no CUDA: one
 * shared /dev/zero mapping of MIB MiB (default 64), present, then per way
 * and round: register it for write-protection, protect it, and memset it
 * (in order, then in random page order); at the first fault a handler
 * thread releases the range:
 *
 *   plain    no protection: the memset alone
 *   whole    unregister the whole range, change its protection twice
 *            (PROT_EXEC added, then taken away: the kernel's pass makes
 *            the dirty shared pages writable), then wake the writer
 *   pieces   the same piece by piece: the writer's own piece (2 MiB)
 *            first, each next twice the last, from there to the end then
 *            from the start; each piece's writers woken after its pass
 *   unprotect  lift the write-protection of the whole range, which stays
 *            registered (one pass, the writer woken by it): its pages,
 *            dirty from the rounds before, are left read-only all the
 *            same, a kernel fault each on the writer's side
 *
 * Needs userfaultfd (root or /dev/userfaultfd). Prints one line per way
 * and order: median milliseconds of the rewrite, of the release (on the
 * handler thread), the writer's own page faults in the kernel, and the
 * number of mappings the range ended in (1: merged back). Exit 0 when
 * every way worked and every byte was right, 1 otherwise. */
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
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "uffd_probe.h"

#define ROUNDS_MAX 31
#define FIRST_PIECE ((size_t)2 << 20)

static size_t page;
static int uffd = -1;
static char *base;
static size_t len;
static int way; /* 1 whole, 2 pieces, 3 unprotect */
static _Atomic int released, stop;
static double release_ms;

static int do_register(void)
{
    struct uffdio_register r = {.range = {(uintptr_t)base, len}, .mode = UFFDIO_REGISTER_MODE_WP};
    if (ioctl(uffd, UFFDIO_REGISTER, &r) != 0)
        return -1;
    struct uffdio_writeprotect w = {.range = {(uintptr_t)base, len},
                                    .mode = UFFDIO_WRITEPROTECT_MODE_WP};
    return ioctl(uffd, UFFDIO_WRITEPROTECT, &w);
}

/* Unregister [lo, lo + n), change its protection twice, wake its writers. */
static void release(uintptr_t lo, size_t n)
{
    struct uffdio_range r = {.start = lo, .len = n};
    ioctl(uffd, UFFDIO_UNREGISTER, &r);
    mprotect((void *)lo, n, PROT_READ | PROT_WRITE | PROT_EXEC);
    mprotect((void *)lo, n, PROT_READ | PROT_WRITE);
    ioctl(uffd, UFFDIO_WAKE, &r);
}

static void release_pieces(uintptr_t near)
{
    uintptr_t start = (uintptr_t)base, end = start + len;
    uintptr_t at = start + ((near - start) & ~(uintptr_t)(FIRST_PIECE - 1));
    size_t piece = FIRST_PIECE;
    for (int pass = 0; pass < 2; pass++) {
        uintptr_t lo = pass == 0 ? at : start, stop_at = pass == 0 ? end : at;
        while (lo < stop_at) {
            size_t n = stop_at - lo < piece ? stop_at - lo : piece;
            release(lo, n);
            lo += n;
            piece *= 2;
        }
    }
}

static void *handler(void *arg)
{
    (void)arg;
    struct uffd_msg m[16];
    while (!atomic_load(&stop)) {
        struct pollfd p = {uffd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0)
            continue;
        ssize_t n = read(uffd, m, sizeof m);
        for (ssize_t i = 0; i < n / (ssize_t)sizeof m[0]; i++) {
            if (m[i].event != UFFD_EVENT_PAGEFAULT || atomic_load(&released))
                continue;
            uintptr_t a = (uintptr_t)m[i].arg.pagefault.address;
            double t0 = probe_now_ms();
            if (way == 1) {
                release((uintptr_t)base, len);
            } else if (way == 2) {
                release_pieces(a);
            } else {
                struct uffdio_writeprotect w = {.range = {(uintptr_t)base, len}, .mode = 0};
                ioctl(uffd, UFFDIO_WRITEPROTECT, &w);
            }
            release_ms = probe_now_ms() - t0;
            atomic_store(&released, 1);
        }
    }
    return NULL;
}

static void rewrite(const size_t *order, unsigned char v)
{
    if (order == NULL) {
        memset(base, v, len);
        return;
    }
    for (size_t i = 0; i < len / page; i++)
        memset(base + order[i] * page, v, page);
}

static long thread_faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_minflt + u.ru_majflt;
}

/* The lines of /proc/self/maps inside the range. */
static int mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int count = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo < (uintptr_t)base + len &&
            hi > (uintptr_t)base)
            count++;
    }
    if (f)
        fclose(f);
    return count;
}

static int run(int w, const size_t *order, int rounds)
{
    static const char *const names[] = {"plain", "whole", "pieces", "unprotect"};
    double wr[ROUNDS_MAX], rl[ROUNDS_MAX], fl[ROUNDS_MAX];
    pthread_t t;
    way = w;
    if (w != 0) {
        uffd = probe_uffd_open(UFFD_FEATURE_PAGEFAULT_FLAG_WP);
        if (uffd < 0) {
            printf("%-6s %-6s refused: %s\n", names[w], order ? "random" : "order",
                   strerror(errno));
            return 1;
        }
        atomic_store(&stop, 0);
        pthread_create(&t, NULL, handler, NULL);
    }
    for (int r = 0; r < rounds; r++) {
        atomic_store(&released, 0);
        release_ms = 0;
        if (w != 0 && do_register() != 0) {
            printf("%-6s: register/protect refused: %s\n", names[w], strerror(errno));
            return 1;
        }
        long f0 = thread_faults();
        double t0 = probe_now_ms();
        rewrite(order, (unsigned char)(r + 1));
        double t1 = probe_now_ms();
        fl[r] = (double)(thread_faults() - f0);
        while (w != 0 && !atomic_load(&released))
            usleep(100);
        wr[r] = t1 - t0;
        rl[r] = release_ms;
        for (size_t i = 0; i < len; i += page)
            if ((unsigned char)base[i] != (unsigned char)(r + 1)) {
                printf("%s: byte %zu wrong\n", names[w], i);
                return 1;
            }
    }
    int maps = mappings();
    if (w != 0) {
        struct uffdio_range all = {.start = (uintptr_t)base, .len = len};
        ioctl(uffd, UFFDIO_UNREGISTER, &all); /* unprotect leaves it registered */
        atomic_store(&stop, 1);
        pthread_join(t, NULL);
        close(uffd);
    }
    printf("%-9s %-6s rewrite %8.2f ms  release %6.2f ms  writer faults %7.0f  mappings %d\n",
           names[w], order ? "random" : "order", probe_median(wr, rounds), probe_median(rl, rounds),
           probe_median(fl, rounds), maps);
    return 0;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    int rounds = argc > 2 ? atoi(argv[2]) : 9;
    rounds = rounds < 1 ? 1 : rounds > ROUNDS_MAX ? ROUNDS_MAX : rounds;
    page = (size_t)sysconf(_SC_PAGESIZE);
    len = mib << 20;
    int zero = open("/dev/zero", O_RDWR | O_CLOEXEC);
    base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, zero, 0);
    if (base == MAP_FAILED)
        return perror("mmap"), 2;
    close(zero);
    memset(base, 0, len);
    size_t *order = probe_page_order(len / page);
    if (order == NULL)
        return perror("malloc"), 2;
    printf("%zu MiB shared /dev/zero, %d round(s), medians\n", mib, rounds);
    int bad = 0;
    for (int rep = 0; rep < 2; rep++) /* twice: the A/A spread */
        for (int w = 0; w < 4; w++) {
            bad |= run(w, NULL, rounds);
            bad |= run(w, order, rounds);
        }
    free(order);
    return bad;
}
