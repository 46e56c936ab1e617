/* Reading a run log: two streaming passes over the file.
 *
 * Pass 1 counts, per decision, the "activity" lines that refer to it (only
 * lines that look like activity or header lines are parsed). Pass 2 parses
 * every line and calls the visitor; a decision that activity lines will
 * join waits in a hash map until its last one has been read. So memory
 * follows the decisions that later lines join, not the log's length, and
 * every copy is seen once, complete. Decision ids restart after an exec
 * (a new header in the same file), so keys are (process image, id). */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
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

struct report_log {
    struct report_info info;
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

const struct report_info *report_log_info(const struct report_log *log)
{
    return &log->info;
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
    log->info.decisions++;
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
    log->info.activity_lines++;
    struct pend *p = NULL;
    struct key k = {segment, a.decision};
    if (a.has_decision)
        HASH_FIND(hh, log->pending, &k, sizeof k, p);
    if (!p) {
        log->info.orphan_activities++;
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
    log->info.events++;
    if (log->v->event)
        log->v->event(log->v->ctx, &e);
}

static void on_footer(struct report_log *log, json_t *o)
{
    struct report_info *in = &log->info;
    int64_t v;
    in->footers++;
    in->cut_short = false;
    if (report_json_i64(o, "records", &v))
        in->f_records += v;
    if (report_json_i64(o, "dropped", &v))
        in->f_dropped += v;
    if (report_json_i64(o, "activities", &v))
        in->f_activities += v;
    if (report_json_i64(o, "unjoined", &v))
        in->f_unjoined += v;
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
    if (!report_json_i64(o, "version", &version) || version != 1)
        return fail(log, lineno, "log format version %lld: this report reads "
                    "version 1", report_json_i64(o, "version", &version)
                    ? (long long)version : -1LL);
    int64_t clock_ns = 0, cupti_ns = 0;
    bool align = report_json_i64(o, "clock_ns", &clock_ns) &&
                 report_json_i64(o, "cupti_ns", &cupti_ns);
    struct report_info *in = &log->info;
    if (segment == 1) {
        in->exe = dup_or_null(report_json_str(o, "exe"));
        in->host = dup_or_null(report_json_str(o, "host"));
        in->mode = dup_or_null(report_json_str(o, "mode"));
        in->cupti = dup_or_null(report_json_str(o, "cupti"));
        in->has_pid = report_json_i64(o, "pid", &in->pid);
        in->has_start = report_json_i64(o, "start_unix_ms", &in->start_unix_ms);
        in->has_align = align;
        in->clock_ns = clock_ns;
        in->cupti_ns = cupti_ns;
    } else {
        flush_pending(log);
    }
    in->segments = segment;
    in->cut_short = true;   /* until its footer */
    if (log->v->header)
        log->v->header(log->v->ctx, in, segment, align, clock_ns, cupti_ns);
    return 0;
}

/* A cheap look for "type":"<type>" before parsing a line in pass 1. */
static bool looks_like(const char *line, size_t len, const char *type)
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
    int64_t segment = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        bool header = looks_like(line, (size_t)len, "header");
        if (!header && !looks_like(line, (size_t)len, "activity"))
            continue;
        json_t *o = json_loadb(line, (size_t)len, 0, NULL);
        const char *type = json_is_object(o) ? type_of(o) : "";
        int64_t id;
        if (strcmp(type, "header") == 0) {
            segment++;
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
        log->info.lines++;
        if (n > MAX_LINE) {
            rc = fail(log, lineno, "line longer than %u bytes", MAX_LINE);
            break;
        }
        json_error_t jerr;
        json_t *o = json_loadb(line, n, 0, &jerr);
        if (!o && torn && segment > 0) {   /* the writer was stopped mid-line */
            log->info.torn_tail = true;
            log->info.lines--;
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
            rc = on_header(log, o, lineno, ++segment);
        else if (strcmp(type, "decision") == 0)
            on_decision(log, o, segment);
        else if (strcmp(type, "activity") == 0)
            on_activity(log, o, segment);
        else if (strcmp(type, "event") == 0)
            on_event(log, o);
        else if (strcmp(type, "footer") == 0)
            on_footer(log, o);
        else
            log->info.unknown_lines++;
        json_decref(o);
    }
    if (rc == 0 && ferror(f))
        rc = fail(log, lineno, "read error: %s", strerror(errno));
    if (rc == 0 && segment == 0)
        rc = fail(log, 0, "empty: no header line");
    free(line);
    if (rc == 0)
        flush_pending(log);
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
    FILE *f = fopen(path, "r");
    if (!f)
        return fail(log, 0, "cannot open: %s", strerror(errno));
    int rc = count_pass(log, f);
    if (rc == 0 && fseek(f, 0, SEEK_SET) != 0)
        rc = fail(log, 0, "cannot read it twice (a pipe?): %s", strerror(errno));
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
    free(log->info.exe);
    free(log->info.host);
    free(log->info.mode);
    free(log->info.cupti);
    free(log);
}
