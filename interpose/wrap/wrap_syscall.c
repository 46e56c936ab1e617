/* syscall() and _Fork(): the ways a program reaches the kernel past libc's
 * wrappers that the shim can still see.
 *
 * Through syscall(), close, close_range, dup2 and dup3 get the answers of
 * the close family's wrappers (wrap_fd.c: the shim's descriptors stay
 * the shim's); execve and execveat drain the run log first (wrap_exec.c);
 * fork, and clone or clone3 that copy the memory and the descriptor table
 * onto the caller's own stack (what fork is), run the lifecycle table's
 * fork handlers around the call (shim.h), which glibc's fork would have
 * run: a child then reads its lazy host buffers' bytes, not zeros.
 * _Fork (glibc 2.34) runs no fork handlers by definition, the program's
 * and its libraries' included; the shim's own still run, for the same
 * reason. clone(3) without CLONE_VM runs them too, the child's inside
 * the child before the program's function. io_uring_register, vmsplice,
 * open, openat and mincore get wrap_holders.c's treatment. Every other
 * call goes to the kernel unchanged, for the cost of a switch. A system call made with the instruction itself is not seen:
 * docs/SECURITY.md says what that leaves.
 *
 * The real functions are the next definitions after the shim; errno is
 * theirs (the fork handlers keep it). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/types.h>
#include <unistd.h>

#include "next_symbol.h"
#include "shim.h"
#include "shim_cuda.h"
#include "wrap_exec.h"
#include "wrap_fd.h"
#include "wrap_holders.h"

typedef long (*syscall_fn)(long, ...);
typedef pid_t (*fork_fn)(void);

static _Atomic(void *) real_syscall, real_fork;

/* A clone that is a fork: the memory and the descriptors copied, the
 * child on the caller's stack (a child on a stack of its own cannot
 * return into the caller at all, with or without the shim). */
static bool clone_is_fork(unsigned long long flags, unsigned long long stack)
{
    return (flags & (CLONE_VM | CLONE_FILES | CLONE_THREAD)) == 0 && stack == 0;
}

static bool is_fork(long number, const long a[6])
{
#ifdef SYS_fork
    if (number == SYS_fork)
        return true;
#endif
    if (number == SYS_clone)
        return clone_is_fork((unsigned long)a[0], (unsigned long)a[1]);
#ifdef SYS_clone3
    /* The caller's arguments read as the kernel would, never faulting: a
     * bad pointer gets the kernel's EFAULT, not a crash in the shim. */
    struct clone_args ca;
    size_t need = offsetof(struct clone_args, stack_size) + sizeof ca.stack_size;
    struct iovec here = {&ca, need}, there = {(void *)(uintptr_t)a[0], need};
    int saved = errno;
    bool read = number == SYS_clone3 && (size_t)a[1] >= need &&
                process_vm_readv(getpid(), &here, 1, &there, 1, 0) == (ssize_t)need;
    errno = saved;
    if (read)
        return clone_is_fork(ca.flags, ca.stack | ca.stack_size);
#endif
    return false;
}

static long forked(syscall_fn real, long number, const long a[6])
{
    shim_fork_prepare();
    long r = real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
    int saved = errno;
    if (r == 0)
        shim_fork_child();
    else
        shim_fork_parent();
    errno = saved;
    return r;
}

/* Six arguments are read whatever the call takes, as libc's syscall()
 * passes six registers on: the ones the call does not take are unused. */
P2PSHIM_EXPORT long syscall(long number, ...)
{
    long a[6];
    va_list ap;
    va_start(ap, number);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    syscall_fn real = (syscall_fn)next_symbol_cached(&real_syscall, "syscall");
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    switch (number) {
    case SYS_close:
        return fd_close((int)a[0]);
#ifdef SYS_close_range
    case SYS_close_range:
        return fd_close_range((unsigned)a[0], (unsigned)a[1], (int)a[2]);
#endif
#ifdef SYS_dup2
    case SYS_dup2:
        return fd_dup_onto((int)a[0], (int)a[1], 0, true);
#endif
    case SYS_dup3:
        return fd_dup_onto((int)a[0], (int)a[1], (int)a[2], false);
    case SYS_execve:
#ifdef SYS_execveat
    case SYS_execveat:
#endif
        exec_flush_records();
        break;
    case SYS_mincore: {
        long r = real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
        int saved = errno;
        holders_after_mincore(r, a);
        errno = saved;
        return r;
    }
    default:
        if (is_fork(number, a))
            return forked(real, number, a);
        holders_before_syscall(number, a);
        break;
    }
    return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* clone(3) of a child with a copy of the memory (no CLONE_VM): a fork on
 * a stack of the caller's choosing. The child starts in start_child,
 * which runs the child's handlers before the program's function; the
 * record of both lies on this frame, which the child has a copy of. A
 * child sharing the memory (a thread, CLONE_VM) is no fork: unchanged. */
struct clone_start {
    int (*fn)(void *);
    void *arg;
};

static int start_child(void *p)
{
    struct clone_start *c = p;
    shim_fork_child();
    return c->fn(c->arg);
}

typedef int (*clone_fn)(int (*)(void *), void *, int, void *, ...);
static _Atomic(void *) real_clone;

/* The optional arguments (parent_tid, tls, child_tid) are passed on
 * whatever the flags, as libc reads only those they name. */
P2PSHIM_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    pid_t *ptid = va_arg(ap, pid_t *);
    void *tls = va_arg(ap, void *);
    pid_t *ctid = va_arg(ap, pid_t *);
    va_end(ap);
    clone_fn real = (clone_fn)next_symbol_cached(&real_clone, "clone");
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    if ((flags & CLONE_VM) != 0 || fn == NULL)
        return real(fn, stack, flags, arg, ptid, tls, ctid);
    struct clone_start start = {fn, arg};
    shim_fork_prepare();
    int r = real(start_child, stack, flags, &start, ptid, tls, ctid);
    int saved = errno;
    shim_fork_parent();
    errno = saved;
    return r;
}

P2PSHIM_EXPORT pid_t _Fork(void)
{
    fork_fn real = (fork_fn)next_symbol_cached(&real_fork, "_Fork");
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    shim_fork_prepare();
    pid_t r = real();
    int saved = errno;
    if (r == 0)
        shim_fork_child();
    else
        shim_fork_parent();
    errno = saved;
    return r;
}
