/* The files the shim writes (P2PSHIM_LOG_FILE, P2PSHIM_RUN_LOG): how their
 * names are expanded and how they are opened (docs/SECURITY.md). */
#ifndef P2PSHIM_OUTFILE_H
#define P2PSHIM_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "fd_guard.h"

/* What %r becomes when no rank variable is set. */
#define OUTFILE_NO_RANK "x"

/* Expands pattern into out (len bytes): %p is pid, %h the host name
 * (gethostname), %r the rank (job_rank, or OUTFILE_NO_RANK), %q{VAR}
 * the value of the environment variable VAR ("" when unset), %% a single %;
 * any other % is kept as written. In the values of %h, %r and %q{VAR} a '/'
 * becomes '_': they name a file, never a folder. Returns false, with out
 * set to "", when the result does not fit: a name is never cut. Allocates
 * nothing (the shim calls it in any process). */
bool outfile_expand_for(const char *pattern, long pid, char *out, size_t len);

/* outfile_expand_for with this process's pid. */
bool outfile_expand(const char *pattern, char *out, size_t len);

/* Opens path for appending, safely for a library loaded into any program:
 * O_NOFOLLOW (a symbolic link as the last component is refused),
 * O_CLOEXEC, O_NONBLOCK while opening (a FIFO without a reader fails at
 * once instead of blocking), created 0600; then refused unless it is a
 * regular file owned by the effective user. extra_flags are added to the
 * open flags, except O_TRUNC, which is applied only after those checks.
 * Returns the descriptor (O_NONBLOCK cleared), or -1 with a short reason
 * in why ("not a regular file", "a symbolic link (not followed)", "owned
 * by another user", or strerror's text). errno is preserved. */
int outfile_open(const char *path, int extra_flags, char *why, size_t why_len);

/* outfile_open's checks for reading an existing file: the same refusals
 * (a symbolic link, not a regular file, another user's), nothing created;
 * "No such file or directory" in why when there is none (errno kept). */
int outfile_open_read(const char *path, char *why, size_t why_len);

/* write(2) of a file the shim writes (its log file, its run log, stderr)
 * that can never kill the program with SIGXFSZ: a write the file size
 * limit (RLIMIT_FSIZE, ulimit -f) would refuse is refused here with
 * EFBIG, nothing written, and the signal a racing write raises anyway is
 * taken back (SIGXFSZ blocked in this thread around the write, then
 * consumed unless the program had one pending already). Without a limit,
 * one getrlimit more than a plain write. Straight to the kernel
 * (shim_sys.h); -1 with errno set. */
long outfile_write(int fd, const void *buf, size_t n);

/* What outfile_append_lines did. */
enum outfile_status {
    OUTFILE_WRITTEN,  /* the whole lines went out */
    OUTFILE_NOT_OURS, /* the descriptor is another file now: nothing written */
    OUTFILE_FAILED,   /* a write failed (*err): the file ends with a whole line */
};

/* Appends the whole lines at the start of buf[0..*len) (through its last
 * newline; all of it when there is none and *len is at least keep_max) to
 * g's descriptor, once it has checked that the descriptor is still the
 * file g opened (one fstat: shim_fd_intact). What is left, a line not yet
 * ended, moves to the front of buf and *len becomes its length. Never
 * leaves part of a line in the file: when a write fails (a full disk:
 * ENOSPC, EDQUOT; the file size limit: EFBIG; EIO, ...) the file is cut
 * back to the last whole line written, or to an earlier line's end where
 * that gives back at least reserve bytes of this call's (room for a last
 * line saying so), and *err is the errno. After a failure or with another file there, *len is 0. A
 * file another process appended to since is not cut. Its system calls go
 * straight to the kernel (shim_sys.h). errno preserved. */
enum outfile_status outfile_append_lines(struct shim_fd *g, char *buf, size_t *len,
                                         size_t keep_max, size_t reserve, int *err);

#endif
