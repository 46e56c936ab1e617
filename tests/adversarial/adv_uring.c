/* io_uring fixed buffers over a bounced buffer: the ring holds the pages
 * it registered (pinned), whatever the page tables say later. Raw system
 * calls, no liburing. Exit 77 when the kernel refuses io_uring.
 *
 *   write_fixed lazy|eager|pinned
 *       the buffer registered, then a predicted D2H into it, then
 *       IORING_OP_WRITE_FIXED of it to a file: the file holds the D2H's
 *       bytes
 *   read_fixed lazy|eager|pinned [HOW]
 *       the same, then IORING_OP_READ_FIXED of a file into it: the CPU
 *       reads the file's bytes, and the H2D carries them to the device.
 *       HOW is how and when the buffer is registered:
 *         before      IORING_REGISTER_BUFFERS through syscall(), before
 *                     the D2H (the default)
 *         after       the same, after the D2H (the snapshot exists)
 *         buffers2    IORING_REGISTER_BUFFERS2, before the D2H
 *         raw         IORING_REGISTER_BUFFERS by the system call
 *                     instruction (no wrapper can see it), before
 *         reregister  registered, unregistered, a D2H, registered again */
#define _GNU_SOURCE
#include "adv_common.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define N ((size_t)1 << 20)

struct ring {
    int fd;
    unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
};

static void *map_ring(int fd, size_t len, off_t what)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, what);
    return p == MAP_FAILED ? NULL : p;
}

/* A ring of 4 entries; 0, or the errno of the refusal. */
static int ring_open(struct ring *r)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    r->fd = (int)syscall(__NR_io_uring_setup, 4, &p);
    if (r->fd < 0)
        return errno;
    char *sq = map_ring(r->fd, p.sq_off.array + p.sq_entries * sizeof(unsigned),
                        IORING_OFF_SQ_RING);
    char *cq = map_ring(r->fd, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe),
                        IORING_OFF_CQ_RING);
    r->sqes = map_ring(r->fd, p.sq_entries * sizeof(struct io_uring_sqe), IORING_OFF_SQES);
    if (sq == NULL || cq == NULL || r->sqes == NULL)
        return errno;
    r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
    r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    r->sq_array = (unsigned *)(sq + p.sq_off.array);
    r->cq_head = (unsigned *)(cq + p.cq_off.head);
    r->cq_tail = (unsigned *)(cq + p.cq_off.tail);
    r->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    return 0;
}

/* One fixed-buffer operation, waited for: its result (bytes or -errno). */
static int ring_fixed(struct ring *r, int op, int fd, void *addr, size_t len)
{
    unsigned tail = *r->sq_tail, idx = tail & *r->sq_mask;
    struct io_uring_sqe *sqe = &r->sqes[idx];
    memset(sqe, 0, sizeof *sqe);
    sqe->opcode = (unsigned char)op;
    sqe->fd = fd;
    sqe->addr = (uintptr_t)addr;
    sqe->len = (unsigned)len;
    sqe->off = 0;
    sqe->buf_index = 0;
    r->sq_array[idx] = idx;
    atomic_store_explicit((_Atomic unsigned *)r->sq_tail, tail + 1, memory_order_release);
    if (syscall(__NR_io_uring_enter, r->fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
        return -errno;
    unsigned head = *r->cq_head;
    while (head == atomic_load_explicit((_Atomic unsigned *)r->cq_tail, memory_order_acquire))
        ;
    int res = r->cqes[head & *r->cq_mask].res;
    atomic_store_explicit((_Atomic unsigned *)r->cq_head, head + 1, memory_order_release);
    return res;
}

enum how { BEFORE, AFTER, BUFFERS2, RAW, REREGISTER };

static enum how how_of(const char *arg)
{
    static const char *const names[] = {"before", "after", "buffers2", "raw", "reregister"};
    for (int i = 0; arg != NULL && i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(arg, names[i]) == 0)
            return (enum how)i;
    return BEFORE;
}

/* io_uring_register by the instruction itself, past every wrapper (as
 * liburing makes it). */
static long register_raw(int fd, unsigned op, const void *arg, unsigned nr)
{
#if defined(__x86_64__)
    long r;
    register long r10 __asm__("r10") = (long)nr;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"((long)__NR_io_uring_register), "D"((long)fd), "S"((long)op),
                       "d"((long)arg), "r"(r10)
                     : "rcx", "r11", "memory");
    if (r < 0 && r > -4096) {
        errno = (int)-r;
        return -1;
    }
    return r;
#else
    (void)fd, (void)op, (void)arg, (void)nr;
    errno = ENOSYS;
    return -1;
#endif
}

/* [h, h+n) registered as the ring's fixed buffer 0, the way how says;
 * 0, or the errno of the refusal. */
static int ring_register(struct ring *r, void *h, size_t n, enum how how)
{
    struct iovec iov = {h, n};
    long rc;
    if (how == BUFFERS2) {
        struct io_uring_rsrc_register reg;
        memset(&reg, 0, sizeof reg);
        reg.nr = 1;
        reg.data = (uintptr_t)&iov;
        rc = syscall(__NR_io_uring_register, r->fd, IORING_REGISTER_BUFFERS2, &reg, sizeof reg);
    } else if (how == RAW) {
        rc = register_raw(r->fd, IORING_REGISTER_BUFFERS, &iov, 1);
    } else {
        rc = syscall(__NR_io_uring_register, r->fd, IORING_REGISTER_BUFFERS, &iov, 1);
    }
    return rc < 0 ? errno : 0;
}

static int refused(int err)
{
    fprintf(stderr, "io_uring refused by this kernel: %s\n", strerror(err));
    return ADV_SKIP;
}

/* The ring with [h, h+n) registered as its fixed buffer 0 where how
 * registers it before the D2H (reregister: registered and unregistered
 * again); 77 when the kernel refuses. */
static int ring_with_buffer(struct ring *r, void *h, size_t n, enum how how)
{
    int err = ring_open(r);
    if (err == 0 && how != AFTER)
        err = ring_register(r, h, n, how == REREGISTER ? BEFORE : how);
    if (err == 0 && how == REREGISTER &&
        syscall(__NR_io_uring_register, r->fd, IORING_UNREGISTER_BUFFERS, NULL, 0) < 0)
        err = errno;
    return err != 0 ? refused(err) : 0;
}

/* The registration how makes after the D2H. */
static int ring_after(struct ring *r, void *h, size_t n, enum how how)
{
    int err = how == AFTER || how == REREGISTER ? ring_register(r, h, n, BEFORE) : 0;
    return err != 0 ? refused(err) : 0;
}

static int case_write_fixed(int argc, char **argv)
{
    struct adv_buf b;
    struct ring r;
    adv_buf_init(&b, NULL, N, adv_mem_of(argc > 1 ? argv[1] : NULL));
    if (ring_with_buffer(&r, b.h, N, BEFORE) != 0)
        return ADV_SKIP;
    adv_buf_prime(&b);
    adv_bounce(&b, 71);
    const char *path = adv_path("written");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int res = ring_fixed(&r, IORING_OP_WRITE_FIXED, fd, b.h, N);
    close(fd);
    adv_say("WRITE_FIXED: %d", res);
    adv_file_digest("the file written from the buffer", path);
    adv_digest("read back", b.h, N);
    adv_h2d(&b, "H2D");
    return 0;
}

static int case_read_fixed(int argc, char **argv)
{
    struct adv_buf b;
    struct ring r;
    enum how how = how_of(argc > 2 ? argv[2] : NULL);
    adv_buf_init(&b, NULL, N, adv_mem_of(argc > 1 ? argv[1] : NULL));
    if (ring_with_buffer(&r, b.h, N, how) != 0)
        return ADV_SKIP;
    const char *path = adv_path("to_read");
    unsigned char *bytes = malloc(N);
    bt_pattern(bytes, N, 72);
    adv_write_file(path, bytes, N);
    adv_buf_prime(&b);
    adv_bounce(&b, 73);
    if (ring_after(&r, b.h, N, how) != 0)
        return ADV_SKIP;
    int fd = open(path, O_RDONLY);
    int res = ring_fixed(&r, IORING_OP_READ_FIXED, fd, b.h, N);
    close(fd);
    adv_say("READ_FIXED: %d", res);
    memcpy(b.want, bytes, N);
    bt_check_host(b.h, b.want, N, "READ_FIXED");
    adv_digest("read back", b.h, N);
    adv_h2d(&b, "H2D");
    free(bytes);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct adv_case cases[] = {
        {"write_fixed", case_write_fixed},
        {"read_fixed", case_read_fixed},
    };
    return adv_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
