/* What report_log.c's passes stand on: the log as a file it can read
 * twice (a plain file as it is; standard input or a pipe copied into a
 * temporary file first; a gzip log read through `gzip -dc` once per
 * pass), a cheap look at a line's type, and the processes of the run
 * being read. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report_internal.h"

/* Copies the rest of f into a fresh temporary file, after the n bytes of
 * head (what was read of it already), and closes f. The copy is at its
 * start. NULL with errno set. */
static FILE *spool(FILE *f, const unsigned char *head, size_t n)
{
    FILE *tmp = tmpfile();
    int saved = tmp ? 0 : errno;
    if (tmp && n && fwrite(head, 1, n, tmp) != n)
        saved = errno;
    char buf[1 << 16];
    size_t got;
    while (tmp && !saved && (got = fread(buf, 1, sizeof buf, f)) > 0)
        if (fwrite(buf, 1, got, tmp) != got)
            saved = errno;
    if (!saved && ferror(f))
        saved = errno ? errno : EIO;
    fclose(f);
    if (tmp && (saved || fflush(tmp) != 0 || fseek(tmp, 0, SEEK_SET) != 0)) {
        saved = saved ? saved : errno;
        fclose(tmp);
        tmp = NULL;
    }
    errno = saved;
    return tmp;
}

/* Starts `gzip -dc` on in->gz from its first byte; in->f reads what it
 * writes. -1 with errno set. */
static int gunzip_start(struct report_input *in)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0)
        return -1;
    fflush(in->gz);
    pid_t pid = fork();
    if (pid == 0) {
        /* No signal blocked (p2pshim run blocks some until it exits). */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* The compressed bytes from their start, whatever was read. */
        if (dup2(fileno(in->gz), 0) < 0 || lseek(0, 0, SEEK_SET) != 0 || dup2(pfd[1], 1) < 0)
            _exit(127);
        execlp("gzip", "gzip", "-dc", (char *)NULL);
        _exit(127);
    }
    int e = errno;
    close(pfd[1]);
    in->f = pid > 0 ? fdopen(pfd[0], "r") : NULL;
    if (!in->f) {
        e = pid > 0 ? errno : e;
        close(pfd[0]);
        if (pid > 0)
            waitpid(pid, NULL, 0);
        errno = e;
        return -1;
    }
    in->gunzip = pid;
    return 0;
}

/* Ends the gzip of the pass just read: false when it failed (a file
 * that is no gzip, or cut short), as far as its status tells. */
static bool gunzip_end(struct report_input *in)
{
    int status = 0;
    bool ok = true;
    fclose(in->f);
    in->f = NULL;
    if (in->gunzip > 0) {
        pid_t r;
        while ((r = waitpid(in->gunzip, &status, 0)) < 0 && errno == EINTR)
            ;
        /* ECHILD: a caller that ignores SIGCHLD reaped it; no status. */
        ok = r < 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    in->gunzip = 0;
    return ok;
}

int report_input_open(struct report_input *in, const char *path)
{
    memset(in, 0, sizeof *in);
    FILE *f = strcmp(path, "-") == 0 ? fdopen(dup(0), "r") : fopen(path, "r");
    if (!f)
        return -1;
    unsigned char head[2];
    size_t n = fread(head, 1, 2, f);
    bool gz = n == 2 && head[0] == 0x1f && head[1] == 0x8b;
    bool seekable = fseek(f, 0, SEEK_SET) == 0;
    if (!seekable)
        f = spool(f, head, n); /* a pipe: what it holds, once */
    if (!f)
        return -1;
    if (!gz) {
        in->f = f;
        return 0;
    }
    /* A gzip log is read through gzip, once per pass: only its compressed
     * form is ever stored, and only a pipe's. */
    in->gz = f;
    if (gunzip_start(in) != 0) {
        int e = errno;
        fclose(f);
        in->gz = NULL;
        errno = e;
        return -1;
    }
    return 0;
}

int report_input_rewind(struct report_input *in)
{
    if (!in->gz)
        return fseek(in->f, 0, SEEK_SET);
    if (!gunzip_end(in)) {
        errno = EILSEQ;
        return -1;
    }
    return gunzip_start(in);
}

bool report_input_close(struct report_input *in, bool read_whole)
{
    bool ok = true;
    if (in->gz) {
        ok = in->f == NULL || gunzip_end(in) || !read_whole;
        fclose(in->gz);
    } else if (in->f) {
        fclose(in->f);
    }
    memset(in, 0, sizeof *in);
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

