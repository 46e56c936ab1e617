/* Logging: one prefix, a stack buffer, one write(2) per line. */
#define _GNU_SOURCE
#include "log.h"
#include "job.h"
#include "fd_guard.h"
#include "outfile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_BYTES 1024 /* a line with its newline */
#define PREFIX "p2pshim: "
#define IDENTITY_MAX 200      /* "host:pid rRANK " at most */

enum p2pshim_log_level p2pshim_log_threshold = P2PSHIM_LOG_WARN;

/* The log file's descriptor (fd_guard.h), or stderr. */
static _Atomic int log_fd = STDERR_FILENO;
static struct shim_fd log_guard;
static const char *log_file_name = "";
static atomic_flag log_opened = ATOMIC_FLAG_INIT;
static atomic_bool file_given_up;

/* One write per line (O_APPEND keeps lines from several processes whole);
 * a short write or EINTR is finished, any other error drops the line. */
static void write_stderr(const char *buf, size_t len)
{
    while (len > 0) {
        long n = outfile_write(STDERR_FILENO, buf, len); /* never SIGXFSZ */
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        buf += n;
        len -= (size_t)n;
    }
}

static void format_line(char *buf, size_t *len, enum p2pshim_log_level level, const char *fmt,
                        ...) __attribute__((format(printf, 4, 5)));

/* The log file cannot take the line (a full disk, a write error) or is not
 * the shim's any more (the program closed and reused its number through a
 * raw system call): the shim stops writing there, for good (a file is
 * never reopened over what the program has there now), and says so once,
 * on stderr, where its lines go from now on. */
static void give_up_file(enum outfile_status status, int err)
{
    if (atomic_exchange(&file_given_up, true))
        return;
    if (status == OUTFILE_NOT_OURS)
        shim_fd_forget(&log_guard);
    else
        shim_fd_release(&log_guard);
    atomic_store(&log_fd, STDERR_FILENO);
    char buf[LINE_MAX_BYTES], text[128];
    size_t len;
    if (status == OUTFILE_NOT_OURS)
        format_line(buf, &len, P2PSHIM_LOG_WARN,
                    "the log file %s is no longer open where the shim wrote it (its "
                    "descriptor was closed and reused); logging to stderr",
                    log_file_name);
    else
        format_line(buf, &len, P2PSHIM_LOG_WARN, "cannot write the log file %s: %s; "
                    "logging to stderr", log_file_name, strerror_r(err, text, sizeof text));
    if (P2PSHIM_LOG_WARN <= p2pshim_log_threshold)
        write_stderr(buf, len);
}

/* To the log file, while one takes lines: whether it did. */
static bool write_file(char *buf, size_t len)
{
    if (atomic_load(&log_fd) == STDERR_FILENO)
        return false;
    int err = 0;
    size_t left = len;
    enum outfile_status status = outfile_append_lines(&log_guard, buf, &left, 0, 0, &err);
    if (status != OUTFILE_WRITTEN)
        give_up_file(status, err);
    return status == OUTFILE_WRITTEN;
}

/* To the log file while it takes lines, else to stderr (a whole line:
 * write_file leaves buf as it was). */
static void write_all(char *buf, size_t len)
{
    if (!write_file(buf, len))
        write_stderr(buf, len);
}

/* "host:pid " or "host:pid rRANK " into buf (IDENTITY_MAX bytes), as
 * NCCL starts its lines: the lines of many processes in one stream can be
 * told apart. Asked each time: a forked child has its own pid. Returns the
 * length. */
static size_t put_identity(char *buf)
{
    char host[64] = "";
    if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
        snprintf(host, sizeof host, "unknown-host");
    const char *rank = job_rank();
    int n = rank != NULL ? snprintf(buf, IDENTITY_MAX, "%s:%ld r%.32s ", host, (long)getpid(), rank)
                         : snprintf(buf, IDENTITY_MAX, "%s:%ld ", host, (long)getpid());
    return n < 0 ? 0 : (size_t)n < IDENTITY_MAX ? (size_t)n : IDENTITY_MAX - 1;
}

size_t log_prefix(char *buf, size_t len)
{
    char id[IDENTITY_MAX];
    size_t n = put_identity(id);
    int w = snprintf(buf, len, "%.*s" PREFIX, (int)n, id);
    return w < 0 ? 0 : (size_t)w;
}

/* Ends the line in buf (LINE_MAX_BYTES long; used is what vsnprintf
 * wanted, more than fits if it was cut) with a newline in place of the NUL,
 * so that a line with its newline is at most LINE_MAX_BYTES; returns its
 * length. */
static size_t finish(char *buf, int used)
{
    size_t len = used < 0 ? 0 : (size_t)used;
    if (len > LINE_MAX_BYTES - 1)
        len = LINE_MAX_BYTES - 1;
    buf[len++] = '\n';
    return len;
}

/* The whole line of a message at level into buf (LINE_MAX_BYTES); its
 * length, 0 when it cannot be formatted. */
static size_t vformat(char *buf, enum p2pshim_log_level level, const char *fmt, va_list ap)
{
    const char *word = level == P2PSHIM_LOG_ERROR  ? PREFIX "error: "
                       : level == P2PSHIM_LOG_WARN ? PREFIX "warning: "
                                                   : PREFIX;
    size_t ilen = put_identity(buf);
    size_t wlen = strlen(word);
    memcpy(buf + ilen, word, wlen);
    wlen += ilen;
    /* A cut line keeps 1023 bytes; finish puts the newline over the NUL. */
    int n = vsnprintf(buf + wlen, LINE_MAX_BYTES - wlen, fmt, ap);
    return n >= 0 ? finish(buf, (int)wlen + n) : 0;
}

static void format_line(char *buf, size_t *len, enum p2pshim_log_level level, const char *fmt,
                        ...)
{
    va_list ap;
    va_start(ap, fmt);
    *len = vformat(buf, level, fmt, ap);
    va_end(ap);
}

void log_write(enum p2pshim_log_level level, const char *fmt, ...)
{
    if (level > p2pshim_log_threshold)
        return;
    int saved = errno;
    char buf[LINE_MAX_BYTES];
    va_list ap;
    va_start(ap, fmt);
    size_t len = vformat(buf, level, fmt, ap);
    va_end(ap);
    if (len > 0)
        write_all(buf, len);
    errno = saved;
}

void log_warn_stderr(const char *fmt, ...)
{
    if (P2PSHIM_LOG_WARN > p2pshim_log_threshold)
        return;
    int saved = errno;
    char buf[LINE_MAX_BYTES];
    va_list ap;
    va_start(ap, fmt);
    size_t len = vformat(buf, P2PSHIM_LOG_WARN, fmt, ap);
    va_end(ap);
    if (len > 0) {
        write_file(buf, len);
        write_stderr(buf, len);
    }
    errno = saved;
}

void log_line(const char *line)
{
    int saved = errno;
    char buf[LINE_MAX_BYTES];
    size_t ilen = put_identity(buf);
    int n = snprintf(buf + ilen, sizeof buf - ilen, PREFIX "%s", line);
    if (n >= 0)
        write_all(buf, finish(buf, (int)ilen + n));
    errno = saved;
}

void log_open(const struct p2pshim_config *cfg)
{
    if (atomic_flag_test_and_set(&log_opened))
        return;
    int saved = errno;
    p2pshim_log_threshold = cfg->log_level;
    if (cfg->log_file[0] != '\0') {
        char why[128];
        int fd = outfile_open(cfg->log_file, 0, why, sizeof why);
        if (fd >= 0 && shim_fd_adopt(&log_guard, &log_fd, fd, "the log file") < 0)
            snprintf(why, sizeof why, "no descriptor above 2 is free"), fd = -1;
        if (fd >= 0) {
            log_file_name = cfg->log_file;
        } else {
            log_write(P2PSHIM_LOG_WARN,
                      "cannot open log file \"%s\": %s; logging to stderr",
                      cfg->log_file, why);
        }
    }
    errno = saved;
}
