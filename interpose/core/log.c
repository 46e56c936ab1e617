/* Logging: one prefix, a stack buffer, one write(2) per line. */
#define _GNU_SOURCE
#include "log.h"
#include "job.h"
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

static int log_fd = STDERR_FILENO;
static atomic_flag log_opened = ATOMIC_FLAG_INIT;

/* One write per line (O_APPEND keeps lines from several processes whole);
 * a short write or EINTR is finished, any other error drops the line. */
static void write_all(const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(log_fd, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        buf += n;
        len -= (size_t)n;
    }
}

/* Ends the line in buf (LINE_MAX_BYTES long; used is what vsnprintf
 * wanted, more than fits if it was cut) with a newline in place of the NUL,
 * so that a line with its newline is at most LINE_MAX_BYTES, and writes it. */
static void finish(char *buf, int used)
{
    size_t len = used < 0 ? 0 : (size_t)used;
    if (len > LINE_MAX_BYTES - 1)
        len = LINE_MAX_BYTES - 1;
    buf[len++] = '\n';
    write_all(buf, len);
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

void log_write(enum p2pshim_log_level level, const char *fmt, ...)
{
    if (level > p2pshim_log_threshold)
        return;
    int saved = errno;
    char buf[LINE_MAX_BYTES];
    const char *word = level == P2PSHIM_LOG_ERROR  ? PREFIX "error: "
                       : level == P2PSHIM_LOG_WARN ? PREFIX "warning: "
                                                   : PREFIX;
    size_t ilen = put_identity(buf);
    size_t wlen = strlen(word);
    memcpy(buf + ilen, word, wlen);
    wlen += ilen;
    va_list ap;
    va_start(ap, fmt);
    /* A cut line keeps 1023 bytes; finish puts the newline over the NUL. */
    int n = vsnprintf(buf + wlen, sizeof buf - wlen, fmt, ap);
    va_end(ap);
    if (n >= 0)
        finish(buf, (int)wlen + n);
    errno = saved;
}

void log_line(const char *line)
{
    int saved = errno;
    char buf[LINE_MAX_BYTES];
    size_t ilen = put_identity(buf);
    int n = snprintf(buf + ilen, sizeof buf - ilen, PREFIX "%s", line);
    if (n >= 0)
        finish(buf, (int)ilen + n);
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
        if (fd >= 0) {
            log_fd = fd;
        } else {
            log_write(P2PSHIM_LOG_WARN,
                      "cannot open log file \"%s\": %s; logging to stderr",
                      cfg->log_file, why);
        }
    }
    errno = saved;
}
