/* What report_log.c's first pass stands on: the log as a file it can
 * read twice (a plain file as it is; standard input, a pipe or a gzip
 * file copied into a temporary file first), a cheap look at a line's
 * type, and the processes of the run being read. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report_internal.h"

/* Copies f into a fresh temporary file (pass 1 and pass 2 read it twice)
 * and closes f; with gunzip, through `gzip -dc`. NULL with errno set. */
static FILE *spool(FILE *f, bool gunzip)
{
    FILE *tmp = tmpfile();
    int saved = 0;
    if (tmp && gunzip) {
        /* gzip reads f's descriptor and writes tmp's. */
        pid_t pid = fork();
        if (pid == 0) {
            dup2(fileno(f), 0);
            dup2(fileno(tmp), 1);
            execlp("gzip", "gzip", "-dc", (char *)NULL);
            _exit(127);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            saved = EILSEQ;
    } else if (tmp) {
        char buf[1 << 16];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
            if (fwrite(buf, 1, n, tmp) != n)
                saved = errno;
        if (ferror(f))
            saved = errno;
    } else {
        saved = errno;
    }
    fclose(f);
    if (tmp && (saved || fflush(tmp) != 0 || fseek(tmp, 0, SEEK_SET) != 0)) {
        fclose(tmp);
        tmp = NULL;
    }
    errno = saved ? saved : errno;
    return tmp;
}

/* The log as a file that can be read twice: a plain file as it is; "-"
 * (standard input), a pipe or a gzip file (by its magic bytes) spooled into
 * a temporary file. */
FILE *report_input_open(const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? fdopen(dup(0), "r") : fopen(path, "r");
    if (!f)
        return NULL;
    int c0 = getc(f), c1 = c0 == EOF ? EOF : getc(f);
    bool gz = c0 == 0x1f && c1 == 0x8b;
    bool seekable = fseek(f, 0, SEEK_SET) == 0;
    if (!gz && seekable)
        return f;
    if (seekable || !gz) {
        /* A pipe: the two bytes read are lost to it; spool what follows. */
        FILE *rest = seekable ? f : NULL;
        if (!seekable) {
            FILE *tmp = tmpfile();
            if (!tmp) {
                fclose(f);
                return NULL;
            }
            if (c0 != EOF)
                fputc(c0, tmp);
            if (c1 != EOF)
                fputc(c1, tmp);
            FILE *spooled = spool(f, false);
            if (!spooled) {
                fclose(tmp);
                return NULL;
            }
            char buf[1 << 16];
            size_t n;
            while ((n = fread(buf, 1, sizeof buf, spooled)) > 0)
                fwrite(buf, 1, n, tmp);
            fclose(spooled);
            if (fflush(tmp) != 0 || fseek(tmp, 0, SEEK_SET) != 0) {
                fclose(tmp);
                return NULL;
            }
            rest = tmp;
        }
        return gz ? spool(rest, true) : rest;
    }
    return spool(f, true);
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

