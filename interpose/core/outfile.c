#define _GNU_SOURCE
#include "outfile.h"
#include "job.h"
#include "shim_sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Appends n bytes of piece at out + *o; with sanitize, each '/' becomes '_'
 * (a value from the environment names a file, never a folder). False when
 * it does not fit. */
static bool put(char *out, size_t len, size_t *o, const char *piece, size_t n, bool sanitize)
{
    if (n >= len - *o)
        return false;
    for (size_t i = 0; i < n; i++)
        out[*o + i] = sanitize && piece[i] == '/' ? '_' : piece[i];
    *o += n;
    return true;
}

bool outfile_expand_for(const char *pattern, long pid, char *out, size_t len)
{
    char pid_text[24], host[256] = "", var[128];
    int pid_len = snprintf(pid_text, sizeof pid_text, "%ld", pid);
    size_t o = 0;
    if (len == 0)
        return false;
    for (const char *p = pattern; *p; p++) {
        const char *piece = p;
        size_t n = 1;
        bool from_env = false;
        const char *close = p[0] == '%' && p[1] == 'q' && p[2] == '{' ? strchr(p + 3, '}')
                                                                        : NULL;
        if (p[0] == '%' && p[1] == 'p') {
            piece = pid_text, n = (size_t)pid_len, p++;
        } else if (p[0] == '%' && p[1] == 'h') {
            if (host[0] == '\0' && gethostname(host, sizeof host - 1) != 0)
                snprintf(host, sizeof host, "unknown-host");
            piece = host, n = strlen(host), p++, from_env = true;
        } else if (p[0] == '%' && p[1] == 'r') {
            piece = job_rank();
            piece = piece != NULL ? piece : OUTFILE_NO_RANK;
            n = strlen(piece), p++, from_env = true;
        } else if (close != NULL && (size_t)(close - (p + 3)) < sizeof var) {
            size_t vn = (size_t)(close - (p + 3));
            memcpy(var, p + 3, vn);
            var[vn] = '\0';
            piece = getenv(var);
            piece = piece != NULL ? piece : "";
            n = strlen(piece), p = close, from_env = true;
        } else if (p[0] == '%' && p[1] == '%') {
            p++, piece = p;
        }
        if (!put(out, len, &o, piece, n, from_env)) {
            out[0] = '\0';
            return false;
        }
    }
    out[o] = '\0';
    return true;
}

bool outfile_expand(const char *pattern, char *out, size_t len)
{
    return outfile_expand_for(pattern, (long)getpid(), out, len);
}

/* strerror's text for e, thread-safely (GNU strerror_r). */
static void say_errno(int e, char *why, size_t why_len)
{
    char text[128];
    snprintf(why, why_len, "%s", strerror_r(e, text, sizeof text));
}

static int refuse(int fd, const char *reason, char *why, size_t why_len)
{
    if (reason == NULL)
        say_errno(errno, why, why_len);
    else
        snprintf(why, why_len, "%s", reason);
    close(fd);
    return -1;
}

/* The checks after open: a regular file of the effective user (truncated
 * when trunc, only then), O_NONBLOCK cleared; else closed, -1 and why. */
static int accept_opened(int fd, int trunc, char *why, size_t why_len)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return refuse(fd, NULL, why, why_len);
    if (!S_ISREG(st.st_mode))
        return refuse(fd, "not a regular file", why, why_len);
    if (st.st_uid != geteuid())
        return refuse(fd, "owned by another user", why, why_len);
    if (trunc && ftruncate(fd, 0) != 0)
        return refuse(fd, NULL, why, why_len);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

int outfile_open(const char *path, int extra_flags, char *why, size_t why_len)
{
    int saved = errno;
    int flags = O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
    int fd = open(path, flags | (extra_flags & ~O_TRUNC), 0600);
    if (fd < 0) {
        if (errno == ELOOP)
            snprintf(why, why_len, "a symbolic link (not followed)");
        else if (errno == ENXIO)
            snprintf(why, why_len, "not a regular file");
        else
            say_errno(errno, why, why_len);
        errno = saved;
        return -1;
    }
    fd = accept_opened(fd, extra_flags & O_TRUNC, why, why_len);
    errno = saved;
    return fd;
}

int outfile_open_read(const char *path, char *why, size_t why_len)
{
    int saved = errno;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ELOOP)
            snprintf(why, why_len, "a symbolic link (not followed)");
        else
            say_errno(errno, why, why_len);
        errno = saved;
        return -1;
    }
    fd = accept_opened(fd, 0, why, why_len);
    errno = saved;
    return fd;
}

/* After a failed write: buf[0..written) went out (the file's end is where
 * the descriptor's offset is, O_APPEND); the file is cut back to a line's
 * end (outfile_append_lines). */
static void cut_back(int fd, const char *buf, size_t written, size_t reserve)
{
    struct stat st;
    off_t end = shim_sys_lseek(fd, 0, SEEK_CUR);
    if (end < (off_t)written || shim_sys_fstat(fd, &st) != 0 || st.st_size != end)
        return; /* another writer's lines follow ours: not ours to cut */
    size_t b = written;
    while (b > 0 && buf[b - 1] != '\n')
        b--;
    size_t c = b;
    while (c > 0 && written - c < reserve) {
        c--;
        while (c > 0 && buf[c - 1] != '\n')
            c--;
    }
    if (written - c >= reserve)
        b = c;
    if (b < written && shim_sys_ftruncate(fd, end - (off_t)(written - b)) != 0)
        return;
}

/* Whether a write to fd now would pass the limit: the kernel refuses a
 * write to a regular file that starts at or past it (and signals). */
static bool past_limit(int fd, rlim_t limit)
{
    struct stat st;
    if (shim_sys_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    long fl = shim_sys6(SYS_fcntl, fd, F_GETFL, 0, 0, 0, 0);
    off_t pos = fl >= 0 && (fl & O_APPEND) ? st.st_size : shim_sys_lseek(fd, 0, SEEK_CUR);
    return pos >= 0 && (rlim_t)pos >= limit;
}

long outfile_write(int fd, const void *buf, size_t n)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_FSIZE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
        return shim_sys_write(fd, buf, n);
    if (past_limit(fd, lim.rlim_cur)) {
        errno = EFBIG;
        return -1;
    }
    sigset_t xfsz, old, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, &old);
    bool had = sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ);
    long w = shim_sys_write(fd, buf, n);
    int err = errno;
    if (w < 0 && err == EFBIG && !had) {
        const struct timespec now = {0, 0};
        while (sigtimedwait(&xfsz, NULL, &now) == SIGXFSZ)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = err;
    return w;
}

enum outfile_status outfile_append_lines(struct shim_fd *g, char *buf, size_t *len,
                                         size_t keep_max, size_t reserve, int *err)
{
    int saved = errno;
    size_t n = *len, whole = n;
    while (whole > 0 && buf[whole - 1] != '\n')
        whole--;
    if (whole == 0 && n >= keep_max)
        whole = n; /* one line longer than the caller keeps: it cannot stay whole */
    enum outfile_status status = OUTFILE_WRITTEN;
    int fd = shim_fd_use(g);
    if (!shim_fd_intact(g, fd)) {
        status = OUTFILE_NOT_OURS;
    } else {
        size_t off = 0;
        while (off < whole) {
            ssize_t w = outfile_write(fd, buf + off, whole - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                *err = w < 0 ? errno : EIO;
                cut_back(fd, buf, off, reserve);
                status = OUTFILE_FAILED;
                break;
            }
            off += (size_t)w;
        }
    }
    shim_fd_unuse(g);
    if (status == OUTFILE_WRITTEN) {
        memmove(buf, buf + whole, n - whole);
        *len = n - whole;
    } else {
        *len = 0;
    }
    errno = saved;
    return status;
}
