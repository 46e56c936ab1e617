/* exec wrappers: an exec replaces the process without running atexit, so
 * the run log is drained (and footed) first. They do nothing else, and
 * nothing at all when no run log is open: a program that never touches
 * CUDA is untouched. If the exec fails the process goes on and the log
 * continues (a later footer supersedes). The execs made through syscall()
 * do the same (wrap_syscall.c); one made with the instruction itself
 * cannot be seen. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include "next_symbol.h"
#include "record.h"
#include "shim_cuda.h"
#include "wrap_exec.h"

#define REAL_LIBC(type, name)                                                 \
    type real_ = (type)next_symbol(name);                                     \
    if (real_ == NULL) {                                                      \
        errno = ENOSYS;                                                       \
        return -1;                                                            \
    }

void exec_flush_records(void)
{
    if (record_enabled())
        record_flush_final();
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

P2PSHIM_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    REAL_LIBC(execve_fn, "execve");
    exec_flush_records();
    return real_(path, argv, envp);
}

P2PSHIM_EXPORT int execv(const char *path, char *const argv[])
{
    REAL_LIBC(execv_fn, "execv");
    exec_flush_records();
    return real_(path, argv);
}

P2PSHIM_EXPORT int execvp(const char *file, char *const argv[])
{
    REAL_LIBC(execv_fn, "execvp");
    exec_flush_records();
    return real_(file, argv);
}

P2PSHIM_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    REAL_LIBC(execve_fn, "execvpe");
    exec_flush_records();
    return real_(file, argv, envp);
}

P2PSHIM_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    REAL_LIBC(fexecve_fn, "fexecve");
    exec_flush_records();
    return real_(fd, argv, envp);
}

/* glibc 2.34's; glibc's fexecve calls it without going through the
 * exported name, so both are wrapped. */
P2PSHIM_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                            int flags)
{
    REAL_LIBC(execveat_fn, "execveat");
    exec_flush_records();
    return real_(dirfd, path, argv, envp, flags);
}

/* The list forms build the argv on the stack, as glibc's own execl does:
 * no static or thread-local array (which every thread of every process
 * would carry), no malloc (an exec may follow vfork or run in a signal
 * handler), no mmap (after vfork it would land in the parent's memory).
 * The only bound is glibc's: more than INT_MAX arguments is E2BIG. */

/* How many arguments follow arg0 before the terminating NULL (none when
 * arg0 itself is NULL). */
static size_t count_rest(const char *arg0, va_list ap)
{
    size_t n = 0;
    if (arg0 == NULL)
        return 0;
    while (va_arg(ap, char *) != NULL)
        n++;
    return n;
}

/* Fills argv (n + 2 pointers) with arg0, the n arguments after it and a
 * NULL, and *envp_out, for execle, with the environment after the NULL. */
static void collect(const char *arg0, va_list ap, size_t n, char **argv, char ***envp_out)
{
    argv[0] = (char *)arg0;
    for (size_t i = 1; i <= n; i++)
        argv[i] = va_arg(ap, char *);
    if (arg0 != NULL)
        (void)va_arg(ap, char *); /* the terminating NULL */
    argv[arg0 != NULL ? n + 1 : 0] = NULL;
    if (envp_out != NULL)
        *envp_out = va_arg(ap, char **);
}

/* Counts, declares the VLA, collects: a macro so that the array lives in
 * the exported function's own frame until the exec. */
#define WITH_ARGV(arg0, envp_out, call)                                       \
    va_list ap;                                                               \
    va_start(ap, arg0);                                                       \
    size_t rest_ = count_rest(arg0, ap);                                      \
    va_end(ap);                                                               \
    if (rest_ >= INT_MAX) {                                                   \
        errno = E2BIG;                                                        \
        return -1;                                                            \
    }                                                                         \
    char *argv[rest_ + 2];                                                    \
    va_start(ap, arg0);                                                       \
    collect(arg0, ap, rest_, argv, envp_out);                                 \
    va_end(ap);                                                               \
    return call

P2PSHIM_EXPORT int execl(const char *path, const char *arg, ...)
{
    WITH_ARGV(arg, NULL, execv(path, argv));
}

P2PSHIM_EXPORT int execlp(const char *file, const char *arg, ...)
{
    WITH_ARGV(arg, NULL, execvp(file, argv));
}

P2PSHIM_EXPORT int execle(const char *path, const char *arg, ...)
{
    char **envp = NULL;
    WITH_ARGV(arg, &envp, execve(path, argv, envp));
}
