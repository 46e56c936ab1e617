/* exec wrappers: an exec replaces the process without running atexit, so
 * the run log is drained (and footed) first. They do nothing else, and
 * nothing at all when no run log is open: a program that never touches
 * CUDA is untouched. If the exec fails the process goes on and the log
 * continues (a later footer supersedes). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include "driver.h"
#include "record.h"
#include "shim_cuda.h"

#define REAL_LIBC(type, name)                                                 \
    type real_ = (type)driver_real_dlsym()(RTLD_NEXT, name);                  \
    if (real_ == NULL) {                                                      \
        errno = ENOSYS;                                                       \
        return -1;                                                            \
    }

static void before_exec(void)
{
    if (record_enabled())
        record_flush_final();
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

P2PSHIM_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    REAL_LIBC(execve_fn, "execve");
    before_exec();
    return real_(path, argv, envp);
}

P2PSHIM_EXPORT int execv(const char *path, char *const argv[])
{
    REAL_LIBC(execv_fn, "execv");
    before_exec();
    return real_(path, argv);
}

P2PSHIM_EXPORT int execvp(const char *file, char *const argv[])
{
    REAL_LIBC(execv_fn, "execvp");
    before_exec();
    return real_(file, argv);
}

P2PSHIM_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    REAL_LIBC(execve_fn, "execvpe");
    before_exec();
    return real_(file, argv, envp);
}

P2PSHIM_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    REAL_LIBC(fexecve_fn, "fexecve");
    before_exec();
    return real_(fd, argv, envp);
}

/* The list forms: collected into an argv (at most 4096 arguments, as a
 * sanity bound; past it E2BIG, as the kernel would say). */
#define MAX_ARGS 4096

static int collect(const char *arg0, va_list ap, char **argv, char ***envp_out)
{
    int n = 0;
    argv[n++] = (char *)arg0;
    while (arg0 != NULL) {
        if (n >= MAX_ARGS) {
            errno = E2BIG;
            return -1;
        }
        argv[n] = va_arg(ap, char *);
        if (argv[n++] == NULL)
            break;
    }
    if (envp_out != NULL)
        *envp_out = va_arg(ap, char **);
    return 0;
}

P2PSHIM_EXPORT int execl(const char *path, const char *arg, ...)
{
    static _Thread_local char *argv[MAX_ARGS + 1];
    va_list ap;
    va_start(ap, arg);
    int r = collect(arg, ap, argv, NULL);
    va_end(ap);
    return r < 0 ? -1 : execv(path, argv);
}

P2PSHIM_EXPORT int execlp(const char *file, const char *arg, ...)
{
    static _Thread_local char *argv[MAX_ARGS + 1];
    va_list ap;
    va_start(ap, arg);
    int r = collect(arg, ap, argv, NULL);
    va_end(ap);
    return r < 0 ? -1 : execvp(file, argv);
}

P2PSHIM_EXPORT int execle(const char *path, const char *arg, ...)
{
    static _Thread_local char *argv[MAX_ARGS + 1];
    char **envp = NULL;
    va_list ap;
    va_start(ap, arg);
    int r = collect(arg, ap, argv, &envp);
    va_end(ap);
    return r < 0 ? -1 : execve(path, argv, envp);
}
