/* What the userfaultfd cost probes (wp_cost, shared_release_cost) share:
 * a clock, a median, a random page order and a userfaultfd with the features asked for. */
#ifndef P2PSHIM_UFFD_PROBE_H
#define P2PSHIM_UFFD_PROBE_H

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline double probe_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int probe_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v. */
static inline double probe_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], probe_cmp_double);
    return v[n / 2];
}

/* A non-blocking userfaultfd that has every feature asked for (by the
 * system call, else /dev/userfaultfd), or -1 with errno set. */
static inline int probe_uffd_open(uint64_t features)
{
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
        if (dev >= 0) {
            fd = ioctl(dev, _IO(0xAA, 0x00), O_CLOEXEC | O_NONBLOCK);
            close(dev);
        }
    }
    if (fd < 0)
        return -1;
    struct uffdio_api api = {.api = UFFD_API, .features = features};
    if (ioctl(fd, UFFDIO_API, &api) != 0 || (api.features & features) != features) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The page indices 0..n-1 in a random order of their own (the same each
 * run), or NULL when out of memory. */
static inline size_t *probe_page_order(size_t n)
{
    size_t *order = malloc(n * sizeof *order);
    if (order == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    srand(1);
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = ((size_t)rand() << 16 ^ (size_t)rand()) % (i + 1), x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    return order;
}

#endif
