/* The calls that make a holder of a page the shim cannot see
 * (bounce.h's bounce_holder_range; docs/SECURITY.md "Holders of a page"),
 * seen before they take effect so that no lazy page is missing and no
 * page write-protected when the holder takes it:
 *   io_uring_register of fixed buffers (IORING_REGISTER_BUFFERS,
 *     _BUFFERS2, _BUFFERS_UPDATE) and of a provided-buffer ring in the
 *     program's memory (IORING_REGISTER_PBUF_RING): the ring pins them;
 *     through syscall() only (glibc has no wrapper; liburing makes the
 *     call with the instruction, seen at the next D2H by VmPin: holders.c);
 *   vmsplice into a pipe (a descriptor open for writing): the pipe keeps
 *     references to the pages until its reader drains it;
 *   open and openat of /proc/self/mem (also thread-self, the process's
 *     own pid, its tasks'), /dev/infiniband/ and /dev/vfio/: every page
 *     of the process may be read or written past userfaultfd.
 * mincore answers for lazy pages as without the shim (bounce.h).
 *
 * The cost to a program that makes none of these calls: none; to an open,
 * a look at the first bytes of its path. The real functions are the next
 * definitions after the shim; errno is theirs. */
/* The wrappers define open and its fortified twins: the header's inline
 * versions must not. */
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE
#include "wrap_holders.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bounce/bounce.h"
#include "next_symbol.h"
#include "shim.h"
#include "shim_cuda.h"
#include "shim_sys.h"

/* Copies n bytes of the program's memory at src, as the kernel would read
 * them: a bad pointer is false (the call then gets the kernel's EFAULT),
 * never a crash in the shim. errno kept. */
static bool read_program(void *dst, const void *src, size_t n)
{
    struct iovec here = {dst, n}, there = {(void *)src, n};
    int saved = errno;
    bool ok = process_vm_readv(getpid(), &here, 1, &there, 1, 0) == (ssize_t)n;
    errno = saved;
    return ok;
}

/* Marked at once (no start of the shim); snapshots there end only while
 * any exists. */
static void hold(const void *p, size_t n)
{
    if (p == NULL || n == 0)
        return;
    bounce_holder_mark_range(p, n);
    if (bounce_active() && shim_begin()) {
        bounce_holder_range(p, n);
        shim_end();
    }
}

/* Each of the nr iovecs at vec (program memory). */
static void hold_iovecs(const struct iovec *vec, size_t nr)
{
    struct iovec part[32];
    for (size_t i = 0; i < nr; i += 32) {
        size_t k = nr - i < 32 ? nr - i : 32;
        if (!read_program(part, vec + i, k * sizeof part[0]))
            return;
        for (size_t j = 0; j < k; j++)
            hold(part[j].iov_base, part[j].iov_len);
    }
}

/* The kernel's ABI, spelt out where older headers lack it: the opcode's
 * flag for a registered ring descriptor, and IORING_REGISTER_PBUF_RING's
 * argument with its flags (IOU_PBUF_RING_MMAP: the kernel's memory). */
#define URING_OP_FLAG_REGISTERED_RING (1U << 31)
#define URING_PBUF_RING_MMAP 1U
struct uring_buf_reg {
    uint64_t ring_addr;
    uint32_t ring_entries;
    uint16_t bgid, flags;
    uint64_t resv[3];
};

static void uring_register(unsigned op, const void *arg, unsigned nr)
{
    op &= ~URING_OP_FLAG_REGISTERED_RING;
    if (op == IORING_REGISTER_BUFFERS) {
        hold_iovecs(arg, nr);
    } else if (op == IORING_REGISTER_BUFFERS2 && nr >= sizeof(struct io_uring_rsrc_register)) {
        struct io_uring_rsrc_register r;
        if (read_program(&r, arg, sizeof r))
            hold_iovecs((const struct iovec *)(uintptr_t)r.data, r.nr);
    } else if (op == IORING_REGISTER_BUFFERS_UPDATE &&
               nr >= sizeof(struct io_uring_rsrc_update2)) {
        struct io_uring_rsrc_update2 u;
        if (read_program(&u, arg, sizeof u))
            hold_iovecs((const struct iovec *)(uintptr_t)u.data, u.nr);
    } else if (op == IORING_REGISTER_PBUF_RING) {
        struct uring_buf_reg b;
        if (read_program(&b, arg, sizeof b) && !(b.flags & URING_PBUF_RING_MMAP))
            hold((const void *)(uintptr_t)b.ring_addr,
                 (size_t)b.ring_entries * sizeof(struct io_uring_buf));
    }
}

/* vmsplice into a pipe takes the pages; out of one it copies (a read). */
static void splice_from(int fd, const struct iovec *iov, size_t nr)
{
    int fl = (int)shim_sys6(SYS_fcntl, fd, F_GETFL, 0, 0, 0, 0);
    if (fl >= 0 && (fl & O_ACCMODE) != O_RDONLY)
        hold_iovecs(iov, nr);
}

/* s starts with a decimal number equal to want: the rest after it. */
static const char *number_is(const char *s, long want)
{
    long v = 0;
    const char *p = s;
    while (*p >= '0' && *p <= '9' && v < (1L << 40))
        v = v * 10 + (*p++ - '0');
    return p != s && v == want ? p : NULL;
}

/* A path through which any page of the process may be read or written
 * behind userfaultfd: its own /proc mem file, an RDMA or VFIO device.
 * Absolute paths only; a name relative to a directory descriptor is not
 * resolved (docs/SECURITY.md). */
static bool path_holds_all(const char *path)
{
    if (path == NULL || path[0] != '/')
        return false;
    if (strncmp(path, "/dev/infiniband/", 16) == 0 || strncmp(path, "/dev/vfio/", 10) == 0)
        return true;
    if (strncmp(path, "/proc/", 6) != 0)
        return false;
    const char *p = path + 6, *q;
    if (strncmp(p, "self/", 5) == 0)
        p += 5;
    else if (strncmp(p, "thread-self/", 12) == 0)
        p += 12;
    else if ((q = number_is(p, getpid())) != NULL && *q == '/')
        p = q + 1;
    else
        return false;
    if (strncmp(p, "task/", 5) == 0) {
        q = p + 5;
        while (*q >= '0' && *q <= '9')
            q++;
        if (q == p + 5 || *q != '/')
            return false;
        p = q + 1;
    }
    return strcmp(p, "mem") == 0;
}

static void opening(const char *path)
{
    if (!path_holds_all(path))
        return;
    bounce_holder_mark_process();
    if (bounce_active() && shim_begin()) {
        bounce_holder_process();
        shim_end();
    }
}

void holders_before_syscall(long number, const long a[6])
{
    switch (number) {
#ifdef SYS_io_uring_register
    case SYS_io_uring_register:
        uring_register((unsigned)a[1], (const void *)a[2], (unsigned)a[3]);
        break;
#endif
    case SYS_vmsplice:
        splice_from((int)a[0], (const struct iovec *)a[1], (size_t)a[2]);
        break;
#ifdef SYS_open
    case SYS_open:
        opening((const char *)a[0]);
        break;
#endif
    case SYS_openat:
#ifdef SYS_openat2
    case SYS_openat2:
#endif
        opening((const char *)a[1]);
        break;
    default:
        break;
    }
}

void holders_after_mincore(long r, const long a[6])
{
    if (r == 0 && bounce_active() && shim_begin()) {
        bounce_mincore_resident((const void *)a[0], (size_t)a[1], (unsigned char *)a[2]);
        shim_end();
    }
}

typedef ssize_t (*vmsplice_fn)(int, const struct iovec *, size_t, unsigned);
typedef int (*mincore_fn)(void *, size_t, unsigned char *);
typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*open2_fn)(const char *, int);
typedef int (*openat2_fn)(int, const char *, int);

static _Atomic(void *) real_vmsplice, real_mincore, real_open, real_open64, real_openat,
    real_openat64, real___open_2, real___open64_2, real___openat_2, real___openat64_2;

#define REAL_OR_ENOSYS(type, slot, name)                                      \
    type real = (type)next_symbol_cached(&slot, name);                        \
    if (real == NULL) {                                                       \
        errno = ENOSYS;                                                       \
        return -1;                                                            \
    }

P2PSHIM_EXPORT ssize_t vmsplice(int fd, const struct iovec *iov, size_t nr, unsigned flags)
{
    REAL_OR_ENOSYS(vmsplice_fn, real_vmsplice, "vmsplice");
    splice_from(fd, iov, nr);
    return real(fd, iov, nr, flags);
}

P2PSHIM_EXPORT int mincore(void *addr, size_t len, unsigned char *vec)
{
    REAL_OR_ENOSYS(mincore_fn, real_mincore, "mincore");
    int r = real(addr, len, vec);
    int saved = errno;
    const long a[6] = {(long)addr, (long)len, (long)vec};
    holders_after_mincore(r, a);
    errno = saved;
    return r;
}

/* The mode, read into `mode` where the flags say it was passed, as libc
 * reads it. */
#define OPEN_MODE(flags)                                                      \
    mode_t mode = 0;                                                          \
    if (__OPEN_NEEDS_MODE(flags)) {                                           \
        va_list ap;                                                           \
        va_start(ap, flags);                                                  \
        mode = va_arg(ap, mode_t);                                            \
        va_end(ap);                                                           \
    }
#define WRAP_OPEN(name)                                                       \
    P2PSHIM_EXPORT int name(const char *path, int flags, ...)                 \
    {                                                                         \
        REAL_OR_ENOSYS(open_fn, real_##name, #name);                          \
        OPEN_MODE(flags);                                                     \
        opening(path);                                                        \
        return real(path, flags, mode);                                       \
    }
#define WRAP_OPENAT(name)                                                     \
    P2PSHIM_EXPORT int name(int dirfd, const char *path, int flags, ...)      \
    {                                                                         \
        REAL_OR_ENOSYS(openat_fn, real_##name, #name);                        \
        OPEN_MODE(flags);                                                     \
        opening(path);                                                        \
        return real(dirfd, path, flags, mode);                                \
    }
/* The fortified entry points (_FORTIFY_SOURCE with flags not known at
 * compile time). */
#define WRAP_OPEN_2(name)                                                     \
    P2PSHIM_EXPORT int name(const char *path, int flags)                      \
    {                                                                         \
        REAL_OR_ENOSYS(open2_fn, real_##name, #name);                         \
        opening(path);                                                        \
        return real(path, flags);                                             \
    }
#define WRAP_OPENAT_2(name)                                                   \
    P2PSHIM_EXPORT int name(int dirfd, const char *path, int flags)           \
    {                                                                         \
        REAL_OR_ENOSYS(openat2_fn, real_##name, #name);                       \
        opening(path);                                                        \
        return real(dirfd, path, flags);                                      \
    }
WRAP_OPEN(open)
WRAP_OPEN(open64)
WRAP_OPENAT(openat)
WRAP_OPENAT(openat64)
WRAP_OPEN_2(__open_2)
WRAP_OPEN_2(__open64_2)
WRAP_OPENAT_2(__openat_2)
WRAP_OPENAT_2(__openat64_2)
