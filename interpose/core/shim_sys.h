/* System calls the shim makes on its own descriptors, straight to the
 * kernel: no function in front of libc's sees them, neither the shim's own
 * close family (wrap_fd.c, which would answer for the program) nor a
 * sanitizer's runtime (ThreadSanitizer takes a descriptor for an object
 * the program's threads share: the shim's are not the program's). The
 * answer is libc's convention: -1 with errno set. x86-64 and AArch64 by
 * the instruction; elsewhere through syscall(). No dependencies. */
#ifndef P2PSHIM_SHIM_SYS_H
#define P2PSHIM_SHIM_SYS_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline long shim_sys6(long nr, long a, long b, long c, long d, long e, long f)
{
    long r;
#if defined(__x86_64__)
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    register long x5 __asm__("x5") = f;
    __asm__ volatile("svc #0"
                     : "+r"(x0)
                     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                     : "memory");
    r = x0;
#else
    return syscall(nr, a, b, c, d, e, f);
#endif
    if (r < 0 && r > -4096) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

static inline int shim_sys_close(int fd)
{
    return (int)shim_sys6(SYS_close, fd, 0, 0, 0, 0, 0);
}

static inline int shim_sys_dupfd_cloexec(int fd, int from)
{
    return (int)shim_sys6(SYS_fcntl, fd, F_DUPFD_CLOEXEC, from, 0, 0, 0);
}

static inline long shim_sys_read(int fd, void *buf, size_t n)
{
    return shim_sys6(SYS_read, fd, (long)buf, (long)n, 0, 0, 0);
}

static inline long shim_sys_write(int fd, const void *buf, size_t n)
{
    return shim_sys6(SYS_write, fd, (long)buf, (long)n, 0, 0, 0);
}

/* The kernel's struct stat is glibc's on the 64-bit architectures. */
static inline int shim_sys_fstat(int fd, struct stat *st)
{
#ifdef SYS_fstat
    return (int)shim_sys6(SYS_fstat, fd, (long)st, 0, 0, 0, 0);
#else
    return (int)shim_sys6(SYS_newfstatat, fd, (long)"", (long)st, AT_EMPTY_PATH, 0, 0);
#endif
}

static inline off_t shim_sys_lseek(int fd, off_t off, int whence)
{
    return (off_t)shim_sys6(SYS_lseek, fd, (long)off, whence, 0, 0, 0);
}

static inline int shim_sys_ftruncate(int fd, off_t len)
{
    return (int)shim_sys6(SYS_ftruncate, fd, (long)len, 0, 0, 0, 0);
}

/* epoll_wait, as epoll_pwait with no signal mask (every architecture
 * has that one). */
static inline int shim_sys_epoll_wait(int epfd, void *events, int max, int timeout)
{
    return (int)shim_sys6(SYS_epoll_pwait, epfd, (long)events, max, timeout, 0, 8);
}

#endif
