/* Reading a run log: two streaming passes over the file.
 *
 * Pass 1 counts, per decision, the "activity" lines that refer to it (only
 * lines that look like activity or header lines are parsed). Pass 2 parses
 * every line and calls the visitor; a decision that activity lines will
 * join waits in a hash map until its last one has been read. So memory
 * follows the decisions that later lines join, not the log's length, and
 * every copy is seen once, complete. Decision ids restart after an exec
 * (a new header in the same file), so keys are (process image, id).
 *
 * Pass 1 also finds the runs in the file. A version 2 header names its
 * process (the same in every image exec starts) and its parent: a header of
 * a process already in the run, or of a child of one, continues the run;
 * any other starts a new one (the path was reused). Pass 2 reads the last
 * run only. Version 1 headers carry no process: all are one run, as that
 * version's writers meant. Each image's footers count the image so far (an
 * exec that failed leaves one footer before the last), so the figures are
 * the sums of each image's last footer. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uthash.h>

#include "report_internal.h"

#define MAX_LINE (64u << 20)   /* longer lines are not a shim's */

struct key {
    int64_t segment, id;   /* both 64-bit: no padding inside the hash key */
};

struct count {
    struct key k;
    int n;
    UT_hash_handle hh;
};

struct pend {
    struct key k;
    int remaining;
    struct report_decision d;   /* copy form */
    UT_hash_handle hh;
};

/* The last footer of the process image being read. */
struct image_footer {
    bool seen;
    int64_t records, dropped, activities, unjoined;
};

struct report_log {
    struct report_info *info;  /* the file being read: files[nfiles - 1] */
    struct report_info *files;
    int nfiles, capfiles;
    struct image_footer image_footer;
    int64_t run_first_line;    /* the last run's first header */
    int run_first_segment;
    int nnames;
    char *names[REPORT_MAX_NAMES];
    struct count *counts;
    struct pend *pending;
    const struct report_visitor *v;
    const char *path;
    char *err;
    size_t errlen;
};

static int fail(struct report_log *log, int64_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct report_log *log, int64_t line, const char *fmt, ...)
{
    int n = line > 0 ? snprintf(log->err, log->errlen, "%s:%lld: ", log->path,
                                (long long)line)
                     : snprintf(log->err, log->errlen, "%s: ", log->path);
    if (n < 0 || (size_t)n >= log->errlen)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(log->err + n, log->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* Slot 0 stands for an absent name, slot 1 for names past the cap. */
static const char *intern(struct report_log *log, const char *s)
{
    if (!s)
        return log->names[0];
    for (int i = 0; i < log->nnames; i++)
        if (strcmp(log->names[i], s) == 0)
            return log->names[i];
    if (log->nnames == REPORT_MAX_NAMES)
        return log->names[1];
    char *dup = strdup(s);
    if (!dup)
        return log->names[1];
    log->names[log->nnames++] = dup;
    return dup;
}

int report_log_names(const struct report_log *log, const char ***names)
{
    *names = (const char **)log->names;
    return log->nnames;
}

int report_log_name_index(const struct report_log *log, const char *name)
{
    for (int i = 0; i < log->nnames; i++)
        if (log->names[i] == name || strcmp(log->names[i], name) == 0)
            return i;
    return 1;
}

static const struct report_info empty_info;

int report_log_file_count(const struct report_log *log)
{
    return log->nfiles;
}

const struct report_info *report_log_file(const struct report_log *log, int i)
{
    return &log->files[i];
}

const struct report_info *report_log_info(const struct report_log *log)
{
    return log->nfiles ? &log->files[0] : &empty_info;
}

/* ---- the copy form and the waiting decisions ---- */

static void emit_copy(struct report_log *log, struct report_decision *c)
{
    if (!c->has_bytes && c->act.bytes >= 0) {
        c->bytes = c->act.bytes;
        c->has_bytes = true;
    }
    if (log->v->copy)
        log->v->copy(log->v->ctx, c);
}

static void flush_pending(struct report_log *log)
{
    struct pend *p, *tmp;
    HASH_ITER(hh, log->pending, p, tmp) {   /* insertion order */
        HASH_DEL(log->pending, p);
        emit_copy(log, &p->d);
        free(p);
    }
}

static void on_decision(struct report_log *log, json_t *o, int segment)
{
    struct report_decision d;
    report_parse_decision(o, &d);
    d.segment = segment;
    log->info->decisions++;
    if (log->v->decision)
        log->v->decision(log->v->ctx, &d);
    d.action = intern(log, d.action);
    d.reason = intern(log, d.reason);
    d.api = d.stream = d.src_kind = d.dst_kind = NULL;

    struct key k = {segment, d.id};
    struct count *c = NULL;
    if (d.has_id)
        HASH_FIND(hh, log->counts, &k, sizeof k, c);
    struct pend *old = NULL;
    if (d.has_id)
        HASH_FIND(hh, log->pending, &k, sizeof k, old);
    if (old) {   /* a repeated id: the first one is complete now */
        HASH_DEL(log->pending, old);
        emit_copy(log, &old->d);
        free(old);
    }
    struct pend *p = c ? malloc(sizeof *p) : NULL;
    if (!p) {   /* nothing will join it (or no memory: it goes unjoined) */
        emit_copy(log, &d);
        return;
    }
    p->k = k;
    p->remaining = c->n;
    p->d = d;
    HASH_DEL(log->counts, c);
    free(c);
    HASH_ADD(hh, log->pending, k, sizeof p->k, p);
}

static void on_activity(struct report_log *log, json_t *o, int segment)
{
    struct report_activity a;
    report_parse_activity(o, &a);
    a.segment = segment;
    log->info->activity_lines++;
    struct pend *p = NULL;
    struct key k = {segment, a.decision};
    if (a.has_decision)
        HASH_FIND(hh, log->pending, &k, sizeof k, p);
    if (!p) {
        log->info->orphan_activities++;
        if (log->v->activity)
            log->v->activity(log->v->ctx, &a, NULL);
        return;
    }
    report_span_add(&p->d.act, a.kinds, a.has_span, a.start_ns, a.end_ns,
             a.has_bytes ? a.bytes : -1);
    if (log->v->activity)
        log->v->activity(log->v->ctx, &a, &p->d);
    if (--p->remaining <= 0) {
        HASH_DEL(log->pending, p);
        emit_copy(log, &p->d);
        free(p);
    }
}

static void on_event(struct report_log *log, json_t *o)
{
    struct report_event e;
    report_parse_event(o, &e);
    log->info->events++;
    if (log->v->event)
        log->v->event(log->v->ctx, &e);
}

static void on_footer(struct report_log *log, json_t *o)
{
    struct image_footer *f = &log->image_footer;
    log->info->cut_short = false;
    f->seen = true;
    if (!report_json_i64(o, "records", &f->records))
        f->records = 0;
    if (!report_json_i64(o, "dropped", &f->dropped))
        f->dropped = 0;
    if (!report_json_i64(o, "activities", &f->activities))
        f->activities = 0;
    if (!report_json_i64(o, "unjoined", &f->unjoined))
        f->unjoined = 0;
}

/* The image read so far ends: its last footer joins the figures. */
static void end_image(struct report_log *log)
{
    struct report_info *in = log->info;
    struct image_footer *f = &log->image_footer;
    if (f->seen) {
        bool *sat = &in->saturated;
        in->footers++;
        in->f_records = report_add(in->f_records, f->records, sat);
        in->f_dropped = report_add(in->f_dropped, f->dropped, sat);
        in->f_activities = report_add(in->f_activities, f->activities, sat);
        in->f_unjoined = report_add(in->f_unjoined, f->unjoined, sat);
    }
    memset(f, 0, sizeof *f);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int on_header(struct report_log *log, json_t *o, int64_t lineno,
                     int segment)
{
    const char *format = report_json_str(o, "format");
    int64_t version;
    if (!format || strcmp(format, "p2pshim-log") != 0)
        return fail(log, lineno, "not a p2pshim run log header (format is not "
                                 "\"p2pshim-log\")");
    if (!report_json_i64(o, "version", &version) || version < 1 || version > 2)
        return fail(log, lineno, "log format version %lld: this report reads "
                    "versions 1 and 2", report_json_i64(o, "version", &version)
                    ? (long long)version : -1LL);
    int64_t clock_ns = 0, cupti_ns = 0;
    bool align = report_json_i64(o, "clock_ns", &clock_ns) &&
                 report_json_i64(o, "cupti_ns", &cupti_ns);
    struct report_info *in = log->info;
    if (segment == log->run_first_segment) {
        in->exe = dup_or_null(report_json_str(o, "exe"));
        in->host = dup_or_null(report_json_str(o, "host"));
        in->mode = dup_or_null(report_json_str(o, "mode"));
        in->cupti = dup_or_null(report_json_str(o, "cupti"));
        in->has_pid = report_json_i64(o, "pid", &in->pid);
        report_parse_job(o, in);
        in->has_start = report_json_i64(o, "start_unix_ms", &in->start_unix_ms);
        in->has_align = align;
        in->clock_ns = clock_ns;
        in->cupti_ns = cupti_ns;
    } else {
        flush_pending(log);
        end_image(log);
    }
    in->segments = segment - log->run_first_segment + 1;
    in->cut_short = true;   /* until its footer */
    if (log->v->header)
        log->v->header(log->v->ctx, in, segment, align, clock_ns, cupti_ns);
    return 0;
}

static const char *type_of(json_t *o)
{
    const char *t = report_json_str(o, "type");
    return t ? t : "";
}

static int count_pass(struct report_log *log, FILE *f)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int64_t segment = 0, lineno = 0;
    struct report_run run = {0};
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        bool header = report_line_looks_like(line, (size_t)len, "header");
        if (!header && !report_line_looks_like(line, (size_t)len, "activity"))
            continue;
        json_t *o = json_loadb(line, (size_t)len, 0, NULL);
        const char *type = json_is_object(o) ? type_of(o) : "";
        int64_t id;
        if (strcmp(type, "header") == 0) {
            segment++;
            if (!report_run_continues(&run, o) || segment == 1) {
                report_run_restart(&run);
                log->info->runs++;
                log->run_first_line = lineno;
                log->run_first_segment = (int)segment;
            }
        } else if (strcmp(type, "activity") == 0 &&
                   report_json_i64(o, "decision", &id)) {
            struct key k = {segment, id};
            struct count *c;
            HASH_FIND(hh, log->counts, &k, sizeof k, c);
            if (!c && (c = calloc(1, sizeof *c)) != NULL) {
                c->k = k;
                HASH_ADD(hh, log->counts, k, sizeof c->k, c);
            }
            if (c)
                c->n++;
        }
        json_decref(o);
    }
    log->info->processes = run.n > 1 ? run.n : 1;
    report_run_clear(&run);
    free(line);
    return ferror(f) ? fail(log, 0, "read error: %s", strerror(errno)) : 0;
}

static int main_pass(struct report_log *log, FILE *f)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int64_t lineno = 0;
    int segment = 0, rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        bool torn = len == 0 || line[len - 1] != '\n';   /* only the last */
        size_t n = (size_t)len;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' ||
                         line[n - 1] == ' ' || line[n - 1] == '\t'))
            n--;
        if (n == 0)
            continue;
        if (lineno < log->run_first_line) {   /* an earlier run */
            log->info->earlier_run_lines++;
            continue;
        }
        log->info->lines++;
        if (n > MAX_LINE) {
            rc = fail(log, lineno, "line longer than %u bytes", MAX_LINE);
            break;
        }
        json_error_t jerr;
        json_t *o = json_loadb(line, n, 0, &jerr);
        if (!o && torn && segment > 0) {   /* the writer was stopped mid-line */
            log->info->torn_tail = true;
            log->info->lines--;
            break;
        }
        if (!o) {
            rc = fail(log, lineno, "invalid JSON: %s (column %d)", jerr.text,
                      jerr.column);
            break;
        }
        const char *type = json_is_object(o) ? type_of(o) : NULL;
        if (!type)
            rc = fail(log, lineno, "not a JSON object");
        else if (segment == 0 && strcmp(type, "header") != 0)
            rc = fail(log, lineno, "the first line is not a p2pshim log header");
        else if (strcmp(type, "header") == 0)
            rc = on_header(log, o, lineno, segment = segment ? segment + 1
                                                             : log->run_first_segment);
        else if (strcmp(type, "decision") == 0)
            on_decision(log, o, segment);
        else if (strcmp(type, "activity") == 0)
            on_activity(log, o, segment);
        else if (strcmp(type, "event") == 0)
            on_event(log, o);
        else if (strcmp(type, "footer") == 0)
            on_footer(log, o);
        else
            log->info->unknown_lines++;
        json_decref(o);
    }
    if (rc == 0 && ferror(f))
        rc = fail(log, lineno, "read error: %s", strerror(errno));
    if (rc == 0 && segment == 0)
        rc = fail(log, 0, "empty: no header line");
    free(line);
    if (rc == 0) {
        flush_pending(log);
        end_image(log);
    }
    return rc;
}

struct report_log *report_log_new(void)
{
    struct report_log *log = calloc(1, sizeof *log);
    if (!log)
        return NULL;
    log->names[0] = strdup("(absent)");
    log->names[1] = strdup("(other)");
    log->nnames = 2;
    if (!log->names[0] || !log->names[1]) {
        report_log_free(log);
        return NULL;
    }
    return log;
}

int report_log_read(struct report_log *log, const char *path,
                    const struct report_visitor *v, char *err, size_t errlen)
{
    log->v = v;
    log->path = path;
    log->err = err;
    log->errlen = errlen;
    if (log->nfiles == log->capfiles) {
        int cap = log->capfiles ? 2 * log->capfiles : 4;
        struct report_info *files = realloc(log->files, (size_t)cap * sizeof *files);
        if (!files)
            return fail(log, 0, "out of memory");
        log->files = files;
        log->capfiles = cap;
    }
    log->info = &log->files[log->nfiles++];
    memset(log->info, 0, sizeof *log->info);
    memset(&log->image_footer, 0, sizeof log->image_footer);
    log->run_first_line = 0;
    log->run_first_segment = 0;
    char why[256];
    FILE *f = report_input_open(path, why, sizeof why);
    if (!f)
        return fail(log, 0, "%s", why);
    int rc = count_pass(log, f);
    if (log->run_first_segment == 0)
        log->run_first_segment = 1;   /* no header found: pass 2 says so */
    if (rc == 0 && fseek(f, 0, SEEK_SET) != 0)
        rc = fail(log, 0, "cannot read it twice: %s", strerror(errno));
    if (rc == 0)
        rc = main_pass(log, f);
    fclose(f);
    return rc;
}

void report_log_free(struct report_log *log)
{
    if (!log)
        return;
    struct count *c, *ct;
    HASH_ITER(hh, log->counts, c, ct) {
        HASH_DEL(log->counts, c);
        free(c);
    }
    struct pend *p, *pt;
    HASH_ITER(hh, log->pending, p, pt) {
        HASH_DEL(log->pending, p);
        free(p);
    }
    for (int i = 0; i < log->nnames; i++)
        free(log->names[i]);
    for (int i = 0; i < log->nfiles; i++)
        report_info_free(&log->files[i]);
    free(log->files);
    free(log);
}
