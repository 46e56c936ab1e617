#define _GNU_SOURCE
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool outfile_expand(const char *pattern, char *out, size_t len)
{
    char pid[24], host[256] = "";
    int pid_len = snprintf(pid, sizeof pid, "%ld", (long)getpid());
    size_t o = 0;
    if (len == 0)
        return false;
    for (const char *p = pattern; *p; p++) {
        const char *piece = p;
        size_t n = 1;
        if (p[0] == '%' && p[1] == 'p') {
            piece = pid, n = (size_t)pid_len, p++;
        } else if (p[0] == '%' && p[1] == 'h') {
            if (host[0] == '\0' && gethostname(host, sizeof host - 1) != 0)
                snprintf(host, sizeof host, "unknown-host");
            piece = host, n = strlen(host), p++;
        } else if (p[0] == '%' && p[1] == '%') {
            p++, piece = p;
        }
        if (n >= len - o) {
            out[0] = '\0';
            return false;
        }
        memcpy(out + o, piece, n);
        o += n;
    }
    out[o] = '\0';
    return true;
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
    struct stat st;
    if (fstat(fd, &st) != 0)
        fd = refuse(fd, NULL, why, why_len);
    else if (!S_ISREG(st.st_mode))
        fd = refuse(fd, "not a regular file", why, why_len);
    else if (st.st_uid != geteuid())
        fd = refuse(fd, "owned by another user", why, why_len);
    else if ((extra_flags & O_TRUNC) && ftruncate(fd, 0) != 0)
        fd = refuse(fd, NULL, why, why_len);
    else
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    errno = saved;
    return fd;
}
