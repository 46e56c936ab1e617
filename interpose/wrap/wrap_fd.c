/* The close family: a program that closes descriptors it did not open
 * (closefrom(3) before it execs, a sandbox's close_range, a daemon's
 * dup2 of /dev/null over every number) must not close the shim's
 * (fd_guard.h, docs/SECURITY.md "The shim's descriptors"): the shim's
 * lazy host buffers live on its userfaultfd, its records on its run log.
 *
 * What the program sees is what it would see without the shim, for which
 * the shim's descriptors are not open: close of one is EBADF; close_range
 * and closefrom close everything else; dup2 or dup3 onto one first moves
 * the shim's elsewhere, then does what it was asked; from one, EBADF;
 * fcntl on one is EBADF, and F_DUPFD gives the number it would give had
 * the shim's not been there.
 *
 * The cost to a program whose descriptors are all below the shim's (every
 * program but one with about a thousand open): one load and one compare
 * before libc's call. The real functions are the next definitions after
 * the shim (another interposer's, or libc's); errno is libc's. */
#define _GNU_SOURCE
#include "wrap_fd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bounce.h"
#include "fd_guard.h"
#include "next_symbol.h"
#include "shim.h"
#include "shim_cuda.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

typedef int (*close_fn)(int);
typedef int (*close_range_fn)(unsigned, unsigned, int);
typedef void (*closefrom_fn)(int);
typedef int (*dup2_fn)(int, int);
typedef int (*dup3_fn)(int, int, int);
typedef int (*fcntl_fn)(int, int, ...);
typedef long (*syscall_fn)(long, ...);

static _Atomic(void *) real_close, real_close_range, real_closefrom, real_dup2, real_dup3,
    real_fcntl, real_fcntl64, real_syscall;

#define SHIM_FDS_MAX 8

static int close_real(int fd)
{
    close_fn f = (close_fn)next_symbol_cached(&real_close, "close");
    if (f == NULL) {
        errno = ENOSYS;
        return -1;
    }
    return f(fd);
}

/* libc's close_range, or the system call where libc has none (before
 * glibc 2.34). */
static int range_real(unsigned first, unsigned last, int flags)
{
    close_range_fn f = (close_range_fn)next_symbol_cached(&real_close_range, "close_range");
    if (f != NULL)
        return f(first, last, flags);
    syscall_fn s = (syscall_fn)next_symbol_cached(&real_syscall, "syscall");
    if (s == NULL) {
        errno = ENOSYS;
        return -1;
    }
    return (int)s((long)SYS_close_range, (long)first, (long)last, (long)flags, 0L, 0L, 0L);
}

static int dup_real(int oldfd, int newfd, int flags, bool two)
{
    void *f = two ? next_symbol_cached(&real_dup2, "dup2") : next_symbol_cached(&real_dup3, "dup3");
    if (f == NULL) {
        errno = ENOSYS;
        return -1;
    }
    return two ? ((dup2_fn)f)(oldfd, newfd) : ((dup3_fn)f)(oldfd, newfd, flags);
}

/* Whether fd is a character device. Through the system call itself: a
 * sanitizer's close interceptor runs before this wrapper and has already
 * counted fd as closed, so its fstat interceptor would see a use after
 * close when another thread takes the number meanwhile. */
static bool char_device(int fd)
{
    struct stat st;
    syscall_fn s = (syscall_fn)next_symbol_cached(&real_syscall, "syscall");
    return s != NULL &&
           s((long)SYS_newfstatat, (long)fd, (long)(uintptr_t)"", (long)(uintptr_t)&st,
             (long)AT_EMPTY_PATH, 0L, 0L) == 0 &&
           S_ISCHR(st.st_mode);
}

/* Before the program closes or replaces fd (a range when fd < 0): while
 * a snapshot exists, a descriptor that may be the driver's (a character
 * device: /dev/nvidiactl, /dev/nvidia0, /dev/nvidia-uvm), or any range,
 * has every lazy page filled first, while the driver can still fill it
 * (bounce_before_fds_go). The shim's own closes, and the driver's inside
 * the shim's fault handler, pass. errno kept. */
static void before_fds_go(int fd)
{
    if (!bounce_fds_watched() || shim_reentered())
        return;
    int saved = errno;
    if (fd < 0 || char_device(fd))
        bounce_before_fds_go();
    errno = saved;
}

int fd_close(int fd)
{
    before_fds_go(fd);
    if (shim_fd_maybe(fd) && shim_fd_held(fd)) {
        errno = EBADF;
        return -1;
    }
    return close_real(fd);
}

int fd_close_range(unsigned first, unsigned last, int flags)
{
    int held[SHIM_FDS_MAX];
    size_t n = 0;
    /* CLOSE_RANGE_CLOEXEC closes nothing (the shim's are close-on-exec
     * already); a range the kernel refuses is refused as a whole. */
    if (!(flags & CLOSE_RANGE_CLOEXEC) && first <= last)
        before_fds_go(-1);
    if (!(flags & CLOSE_RANGE_CLOEXEC) && first <= last && shim_fd_maybe_in(first, last))
        n = shim_fd_held_in(first, last, held, SHIM_FDS_MAX);
    if (n == 0)
        return range_real(first, last, flags);
    unsigned lo = first;
    for (size_t i = 0; i < n; i++) {
        if ((unsigned)held[i] > lo && range_real(lo, (unsigned)held[i] - 1, flags) != 0)
            return -1;
        lo = (unsigned)held[i] + 1;
    }
    return lo <= last ? range_real(lo, last, flags) : 0;
}

/* The fast paths below: a number under every one of the shim's (one load
 * and one compare) goes straight to the real function, once resolved. */
#define REAL_NOW(slot) atomic_load_explicit(&(slot), memory_order_acquire)

P2PSHIM_EXPORT int close(int fd)
{
    close_fn f = (close_fn)REAL_NOW(real_close);
    if (f != NULL && !shim_fd_maybe(fd) && !bounce_active())
        return f(fd);
    return fd_close(fd);
}

P2PSHIM_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
    return fd_close_range(first, last, flags);
}

/* closefrom without close_range (a kernel before 5.9, as glibc's own
 * fallback): every descriptor /proc/self/fd lists from lo up, but the
 * shim's. When nothing can be listed, glibc's closefrom, which the
 * shim cannot steer (its descriptors then close too). */
static void close_listed(unsigned lo)
{
    int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    syscall_fn s = (syscall_fn)next_symbol_cached(&real_syscall, "syscall");
    if (dir < 0 || s == NULL) {
        closefrom_fn f = (closefrom_fn)next_symbol_cached(&real_closefrom, "closefrom");
        if (dir >= 0)
            close_real(dir);
        if (f != NULL)
            f((int)lo);
        return;
    }
    char buf[4096] __attribute__((aligned(8)));
    long got;
    while ((got = s((long)SYS_getdents64, (long)dir, (long)(uintptr_t)buf, (long)sizeof buf, 0L,
                    0L, 0L)) > 0) {
        for (long off = 0; off < got;) {
            const struct dirent64 *d = (const struct dirent64 *)(buf + off);
            off += d->d_reclen;
            char *end;
            long fd = strtol(d->d_name, &end, 10);
            if (*end == '\0' && end != d->d_name && fd >= (long)lo && fd != dir &&
                fd <= INT32_MAX)
                fd_close((int)fd);
        }
    }
    close_real(dir);
}

P2PSHIM_EXPORT void closefrom(int lowfd)
{
    unsigned lo = lowfd < 0 ? 0 : (unsigned)lowfd;
    if (!shim_fd_maybe_in(lo, ~0U)) {
        closefrom_fn f = (closefrom_fn)next_symbol_cached(&real_closefrom, "closefrom");
        if (f != NULL) {
            before_fds_go(-1); /* fd_close_range does it on the other path */
            f(lowfd);
            return;
        }
    }
    int saved = errno;
    if (fd_close_range(lo, ~0U, 0) != 0)
        close_listed(lo);
    errno = saved;
}

static int fcntl_real(int fd, int cmd, void *arg)
{
    fcntl_fn f = (fcntl_fn)next_symbol_cached(&real_fcntl, "fcntl");
    if (f == NULL) {
        errno = ENOSYS;
        return -1;
    }
    return f(fd, cmd, arg);
}

/* dup2/dup3 onto a number of the shim's. A call that will fail on oldfd
 * moves nothing; one that fails after the move leaves newfd closed, as it
 * was for the program. */
static int dup_over_ours(int oldfd, int newfd, int flags, bool two)
{
    int saved = errno;
    if (fcntl_real(oldfd, F_GETFD, NULL) < 0)
        return -1;
    int moved = shim_fd_vacate(newfd);
    if (moved < 0)
        return -1;
    errno = saved;
    int r = dup_real(oldfd, newfd, flags, two);
    if (r < 0 && moved == 0) {
        int e = errno;
        close_real(newfd); /* the shim's old number: its file lives on elsewhere */
        errno = e;
    }
    return r;
}

int fd_dup_onto(int oldfd, int newfd, int flags, bool two)
{
    bool refused = !two && (oldfd == newfd || (flags & ~O_CLOEXEC) != 0); /* EINVAL */
    if (!refused && oldfd != newfd)
        before_fds_go(newfd);
    if (!refused && (shim_fd_maybe(oldfd) || shim_fd_maybe(newfd))) {
        if (shim_fd_maybe(oldfd) && shim_fd_held(oldfd)) {
            errno = EBADF;
            return -1;
        }
        if (oldfd != newfd && shim_fd_maybe(newfd) && shim_fd_held(newfd))
            return dup_over_ours(oldfd, newfd, flags, two);
    }
    return dup_real(oldfd, newfd, flags, two);
}

P2PSHIM_EXPORT int dup2(int oldfd, int newfd)
{
    dup2_fn f = (dup2_fn)REAL_NOW(real_dup2);
    if (f != NULL && !shim_fd_maybe(oldfd) && !shim_fd_maybe(newfd) && !bounce_active())
        return f(oldfd, newfd);
    return fd_dup_onto(oldfd, newfd, 0, true);
}

P2PSHIM_EXPORT int dup3(int oldfd, int newfd, int flags)
{
    dup3_fn f = (dup3_fn)REAL_NOW(real_dup3);
    if (f != NULL && !shim_fd_maybe(oldfd) && !shim_fd_maybe(newfd) && !bounce_active())
        return f(oldfd, newfd, flags);
    return fd_dup_onto(oldfd, newfd, flags, false);
}

/* F_DUPFD that got a number above one of the shim's at or above `from`
 * (or none, EMFILE): without the shim, the lowest such was free and would
 * have been the answer. It is made free and given. */
static int dupfd_past_ours(fcntl_fn f, int fd, int cmd, int from, int got)
{
    int saved = errno, held[SHIM_FDS_MAX];
    unsigned hi = got >= 0 ? (unsigned)got - 1 : ~0U;
    if (from < 0 || shim_fd_held_in((unsigned)from, hi, held, SHIM_FDS_MAX) == 0 ||
        shim_fd_vacate(held[0]) != 0) {
        errno = saved;
        return got;
    }
    int want = held[0];
    if (got < 0) {
        close_real(want); /* the shim's old number: its file lives on elsewhere */
        errno = saved;
        return f(fd, cmd, from);
    }
    int r = dup_real(got, want, cmd == F_DUPFD_CLOEXEC ? O_CLOEXEC : 0, false);
    if (r < 0) {
        close_real(want);
        errno = saved;
        return got;
    }
    close_real(got);
    errno = saved;
    return want;
}

static int fcntl_slow(_Atomic(void *) *slot, const char *name, int fd, int cmd, void *arg)
{
    fcntl_fn f = (fcntl_fn)next_symbol_cached(slot, name);
    if (f == NULL) {
        errno = ENOSYS;
        return -1;
    }
    bool dup = cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC;
    if (!dup && !shim_fd_maybe(fd))
        return f(fd, cmd, arg);
    if (shim_fd_maybe(fd) && shim_fd_held(fd)) {
        errno = EBADF;
        return -1;
    }
    if (!dup)
        return f(fd, cmd, arg);
    int got = f(fd, cmd, arg);
    if (got >= 0 ? !shim_fd_maybe(got) : errno != EMFILE)
        return got;
    return dupfd_past_ours(f, fd, cmd, (int)(intptr_t)arg, got);
}

/* The third argument, whatever the command: an int or a pointer, passed
 * on as glibc's own fcntl reads it. */
#define FCNTL_WRAPPER(name, slot)                                                                  \
    P2PSHIM_EXPORT int name(int fd, int cmd, ...)                                                  \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, cmd);                                                                         \
        void *arg = va_arg(ap, void *);                                                            \
        va_end(ap);                                                                                \
        fcntl_fn f = (fcntl_fn)REAL_NOW(slot);                                                     \
        if (f != NULL && !shim_fd_maybe(fd) && cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC)          \
            return f(fd, cmd, arg);                                                                \
        return fcntl_slow(&slot, #name, fd, cmd, arg);                                             \
    }

FCNTL_WRAPPER(fcntl, real_fcntl)
FCNTL_WRAPPER(fcntl64, real_fcntl64)
