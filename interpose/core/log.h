/* Logging: levels, one prefix ("HOST:PID p2pshim: ", with " rRANK" after
 * the pid when a launcher set one: job.h), lines formatted into a stack
 * buffer and written with write(2) so that logging never allocates and
 * never goes back through a hooked function. */
#ifndef P2PSHIM_LOG_H
#define P2PSHIM_LOG_H

#include "config.h"

/* Current threshold; messages above it are dropped before formatting. */
extern enum p2pshim_log_level p2pshim_log_threshold;

/* Opens the destination named by cfg (stderr when log_file is empty; the
 * file is opened for appending by outfile_open: no symbolic link, FIFO or
 * device, no file of another user, created 0600; if it cannot be opened,
 * one warning goes to stderr, at cfg's threshold, and stderr is used) and
 * sets the threshold. The file's descriptor is one of the shim's
 * (fd_guard.h): before each line the shim checks that it is still that
 * file; when it is not, or a write fails (a full disk), lines go to stderr
 * from then on, with one warning there saying why. Only the first call does anything: later
 * ones return at once. config_get() makes that first call. errno is
 * preserved. */
void log_open(const struct p2pshim_config *cfg);

/* Formats and writes one line: "<id>p2pshim: <level word>: <message>\n"
 * for error and warn ("<id>p2pshim: error: ...", "<id>p2pshim: warning:
 * ..."), "<id>p2pshim: <message>\n" for info and debug, where <id> is
 * "host:pid " or "host:pid rRANK " (log_prefix). Lines are cut at 1 KiB,
 * newline included, and written with one write(2). A level above the
 * threshold is dropped here too. errno is preserved. */
void log_write(enum p2pshim_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A warning a person must see even when the log goes to a file (the run
 * log or the log file stopped): written to stderr, and to the log file
 * too while one takes lines. Dropped when warnings are (the threshold).
 * errno is preserved. */
void log_warn_stderr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes an already formatted line without a level word (used for the
 * exit summary and the config dump), whatever the threshold; the prefix and
 * the newline are added, and the line is cut at 1 KiB. errno is preserved. */
void log_line(const char *line);

/* Writes the line prefix of this process, "host:pid p2pshim: " or
 * "host:pid rRANK p2pshim: ", into buf (NUL-terminated, cut to len);
 * returns its length. */
size_t log_prefix(char *buf, size_t len);

/* Before log_open, warnings are written to stderr. */
#define P2PSHIM_LOG_AT(level, ...)                                           \
    do {                                                                     \
        if ((level) <= p2pshim_log_threshold)                                \
            log_write((level), __VA_ARGS__);                                 \
    } while (0)

#define LOG_ERROR(...) P2PSHIM_LOG_AT(P2PSHIM_LOG_ERROR, __VA_ARGS__)
#define LOG_WARN(...) P2PSHIM_LOG_AT(P2PSHIM_LOG_WARN, __VA_ARGS__)
#define LOG_INFO(...) P2PSHIM_LOG_AT(P2PSHIM_LOG_INFO, __VA_ARGS__)
#define LOG_DEBUG(...) P2PSHIM_LOG_AT(P2PSHIM_LOG_DEBUG, __VA_ARGS__)

#endif
