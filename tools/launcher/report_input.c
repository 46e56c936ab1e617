/* What report_log.c's first pass stands on: the log as a file it can
 * read twice (a plain file as it is; standard input, a pipe or a gzip
 * file copied into a temporary file first, gzip through zlib), a cheap
 * look at a line's type, and the processes of the run being read. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "log_format.h"
#include "report.h"
#include "report_internal.h"

#define CHUNK (1 << 16)

/* Inflates the gzip data in[0..have) and then the rest of f into out.
 * Members one after another read as one stream, and bytes after a member
 * that start no member are ignored, as `gzip -dc` does. 0, or -1 with the
 * reason in why. */
static int inflate_into(z_stream *zs, FILE *f, unsigned char *in, size_t have, FILE *out,
                        char *why, size_t why_len)
{
    unsigned char buf[CHUNK];
    int zr = Z_OK, members = 0;
    bool eof = false, member_start = true;
    zs->next_in = in;
    zs->avail_in = (uInt)have;
    for (;;) {
        if (zs->avail_in == 0 && !eof) {
            size_t n = fread(in, 1, CHUNK, f);
            if (n == 0 && ferror(f)) {
                snprintf(why, why_len, "read error: %s", strerror(errno));
                return -1;
            }
            eof = n == 0;
            zs->next_in = in;
            zs->avail_in = (uInt)n;
        }
        if (zs->avail_in == 0 && eof)
            break;
        if (zr == Z_STREAM_END) { /* another member, or trailing bytes */
            inflateReset(zs);
            member_start = true;
        }
        zs->next_out = buf;
        zs->avail_out = sizeof buf;
        zr = inflate(zs, Z_NO_FLUSH);
        size_t got = sizeof buf - zs->avail_out;
        if (got > 0 && fwrite(buf, 1, got, out) != got) {
            snprintf(why, why_len, "cannot spool: %s", strerror(errno));
            return -1;
        }
        if (zr == Z_DATA_ERROR && member_start && members > 0)
            return 0; /* no member starts here: trailing bytes, ignored */
        if (zr == Z_NEED_DICT || zr == Z_DATA_ERROR || zr == Z_MEM_ERROR) {
            snprintf(why, why_len, "corrupt gzip data: %s", zs->msg ? zs->msg : "bad data");
            return -1;
        }
        member_start = member_start && zs->total_out == 0;
        members += zr == Z_STREAM_END;
    }
    if (zr != Z_STREAM_END) {
        snprintf(why, why_len, "truncated gzip file");
        return -1;
    }
    return 0;
}

/* Copies f, after the nhead bytes at head (read already from a pipe),
 * into out, inflated when gzip says so. 0, or -1 with the reason in why. */
static int spool(FILE *f, const unsigned char *head, size_t nhead, bool gz, FILE *out,
                 char *why, size_t why_len)
{
    unsigned char *in = malloc(CHUNK);
    int rc = 0;
    if (in == NULL) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    memcpy(in, head, nhead);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (gz && inflateInit2(&zs, 15 + 16) != Z_OK) { /* +16: gzip framing only */
        snprintf(why, why_len, "cannot read gzip: out of memory");
        rc = -1;
    } else if (gz) {
        rc = inflate_into(&zs, f, in, nhead, out, why, why_len);
        inflateEnd(&zs);
    } else {
        size_t n = nhead;
        do {
            if (n > 0 && fwrite(in, 1, n, out) != n) {
                snprintf(why, why_len, "cannot spool: %s", strerror(errno));
                rc = -1;
            }
        } while (rc == 0 && (n = fread(in, 1, CHUNK, f)) > 0);
        if (rc == 0 && ferror(f)) {
            snprintf(why, why_len, "read error: %s", strerror(errno));
            rc = -1;
        }
    }
    free(in);
    return rc;
}

FILE *report_input_open(const char *path, char *why, size_t why_len)
{
    FILE *f = strcmp(path, "-") == 0 ? fdopen(dup(0), "r") : fopen(path, "r");
    if (!f) {
        snprintf(why, why_len, "cannot open: %s", strerror(errno));
        return NULL;
    }
    unsigned char head[2];
    size_t nhead = fread(head, 1, sizeof head, f);
    if (nhead < sizeof head && ferror(f)) {
        snprintf(why, why_len, "cannot read: %s", strerror(errno));
        fclose(f);
        return NULL;
    }
    bool gz = nhead == 2 && head[0] == 0x1f && head[1] == 0x8b;
    bool seekable = fseek(f, 0, SEEK_SET) == 0;
    if (!gz && seekable)
        return f;
    /* A pipe: the bytes read are lost to it, and go first. */
    FILE *tmp = tmpfile();
    int rc = tmp ? spool(f, head, seekable ? 0 : nhead, gz, tmp, why, why_len) : -1;
    if (!tmp)
        snprintf(why, why_len, "cannot make a temporary file: %s", strerror(errno));
    fclose(f);
    if (rc == 0 && (fflush(tmp) != 0 || fseek(tmp, 0, SEEK_SET) != 0)) {
        snprintf(why, why_len, "cannot spool: %s", strerror(errno));
        rc = -1;
    }
    if (rc != 0 && tmp) {
        fclose(tmp);
        tmp = NULL;
    }
    return tmp;
}

bool report_log_usable(const char *path, char *why, size_t why_len)
{
    /* Not opened unless a file: a FIFO in a folder would block the report. */
    struct stat st;
    if (strcmp(path, "-") != 0 && stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(why, why_len, "%s", S_ISDIR(st.st_mode) ? "a folder" : "not a regular file");
        return false;
    }
    FILE *f = report_input_open(path, why, why_len);
    if (!f)
        return false;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    json_t *o = n > 0 ? json_loadb(line, (size_t)n, 0, NULL) : NULL;
    const char *type = o ? report_json_str(o, "type") : NULL;
    const char *format = o ? report_json_str(o, "format") : NULL;
    int64_t version = 0;
    bool header = type && strcmp(type, "header") == 0 && format &&
                  strcmp(format, LOG_FORMAT_NAME) == 0;
    bool ok = header && report_json_i64(o, "version", &version) &&
              version >= LOG_FORMAT_OLDEST && version <= LOG_FORMAT_VERSION;
    if (n <= 0)
        snprintf(why, why_len, "empty: no header line");
    else if (!header)
        snprintf(why, why_len, "not a p2pshim run log (its first line is no log header)");
    else if (!ok)
        snprintf(why, why_len, "log format version %lld: this report reads versions %d to %d",
                 (long long)version, LOG_FORMAT_OLDEST, LOG_FORMAT_VERSION);
    json_decref(o);
    free(line);
    fclose(f);
    return ok;
}

/* A cheap look for "type":"<type>" before parsing a line in pass 1. */
bool report_line_looks_like(const char *line, size_t len, const char *type)
{
    const char *end = line + len, *p = line;
    size_t tl = strlen(type);
    while ((p = memmem(p, (size_t)(end - p), "\"type\"", 6)) != NULL) {
        p += 6;
        const char *q = p;
        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
        if (q >= end || *q++ != ':')
            continue;
        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
        if ((size_t)(end - q) >= tl + 2 && *q == '"' &&
            memcmp(q + 1, type, tl) == 0 && q[tl + 1] == '"')
            return true;
    }
    return false;
}

/* Pass 1's view of one header: does it continue the run (see the top)? */
bool report_run_continues(struct report_run *r, json_t *header)
{
    const char *process = report_json_str(header, "process");
    int64_t pid = -1, ppid = -1;
    report_json_i64(header, "pid", &pid);
    report_json_i64(header, "ppid", &ppid);
    if (!process || !process[0] || r->n == REPORT_MAX_RUN_PROCESSES)
        return true;   /* version 1, or no /proc: as version 1 */
    bool same = false, child = false;
    for (int i = 0; i < r->n; i++) {
        same = same || strcmp(r->process[i], process) == 0;
        child = child || r->pid[i] == ppid;
    }
    if (same)
        return true;
    char *dup = strdup(process);
    if (dup) {
        r->pid[r->n] = pid;
        r->process[r->n++] = dup;
    }
    return child;
}

void report_run_clear(struct report_run *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->process[i]);
    r->n = 0;
}

/* A new run: only the process just added (the last) is in it. */
void report_run_restart(struct report_run *r)
{
    if (r->n == 0)
        return;
    for (int i = 0; i < r->n - 1; i++)
        free(r->process[i]);
    r->process[0] = r->process[r->n - 1];
    r->pid[0] = r->pid[r->n - 1];
    r->n = 1;
}

