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

#include "log_format.h"
#include "report_internal.h"

#define MAX_LINE (64u << 20)   /* longer lines are not a shim's */

#include "report_log_int.h"

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

/* Words taken from the log for a note, printable ASCII only: they go
 * into a terminal, a page and JSON strings as they are. */
static void ascii_only(char *s)
{
    for (; *s; s++)
        if (*s < 0x20 || *s > 0x7e)
            *s = '?';
}

/* The shim's marker that it could not write the log on (a full disk):
 * an event "log-cut" with its reason in "detail" (LOG_FORMAT.md), or a
 * line {"event":"log-cut","reason":...}. NULL when o is neither; else its
 * reason ("" when it names none). */
static const char *log_cut_reason(json_t *o, const char *type)
{
    const char *why;
    if (strcmp(type, "event") == 0) {
        const char *what = report_json_str(o, "what");
        if (!what || strcmp(what, "log-cut") != 0)
            return NULL;
    } else if (type[0] != '\0' || !(why = report_json_str(o, "event")) ||
               strcmp(why, "log-cut") != 0) {
        return NULL;
    }
    why = report_json_str(o, "detail");
    if (!why)
        why = report_json_str(o, "reason");
    return why ? why : "";
}

static void on_log_cut(struct report_log *log, const char *why, int64_t lineno)
{
    struct report_info *in = log->info;
    if (in->log_cut)
        return;
    in->log_cut = true;
    in->log_cut_line = lineno;
    snprintf(in->log_cut_why, sizeof in->log_cut_why, "%s", why);
    ascii_only(in->log_cut_why);
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
    int64_t t;
    if (report_json_i64(o, "t_ns", &t) && t > log->info->last_footer_ns)
        log->info->last_footer_ns = t;
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

/* Why a header line is none this reader reads (into why), or NULL. */
static const char *header_problem(json_t *o, char *why, size_t len)
{
    const char *format = report_json_str(o, "format");
    int64_t version;
    if (!format || strcmp(format, LOG_FORMAT_NAME) != 0)
        return "not a p2pshim run log header (format is not \"" LOG_FORMAT_NAME "\")";
    if (report_json_i64(o, "version", &version) && version >= LOG_FORMAT_OLDEST &&
        version <= LOG_FORMAT_VERSION)
        return NULL;
    snprintf(why, len, "log format version %lld: this report reads versions %d to %d",
             report_json_i64(o, "version", &version) ? (long long)version : -1LL,
             LOG_FORMAT_OLDEST, LOG_FORMAT_VERSION);
    return why;
}

/* A header that header_problem passed. */
static void on_header(struct report_log *log, json_t *o, int segment)
{
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
        report_join_flush(log);
        end_image(log);
    }
    in->segments = segment - log->run_first_segment + 1;
    in->cut_short = true;   /* until its footer */
    if (log->v->header)
        log->v->header(log->v->ctx, in, segment, align, clock_ns, cupti_ns);
}

static const char *type_of(json_t *o)
{
    const char *t = report_json_str(o, "type");
    return t ? t : "";
}

/* A line of a pass, stripped of its newline and trailing blanks: n bytes
 * at r->line; whole: not longer than the line limit. */
struct pass_line {
    char *text;
    size_t n;
    bool whole, torn;
};

static struct pass_line pass_line(const struct report_reader *r, int64_t len)
{
    struct pass_line l = {r->line, r->kept, (int64_t)r->kept == len, !r->newline};
    while (l.n > 0 && (l.text[l.n - 1] == '\n' || l.text[l.n - 1] == '\r' ||
                       l.text[l.n - 1] == ' ' || l.text[l.n - 1] == '\t'))
        l.n--;
    return l;
}

/* A header both passes count: one main_pass reads (so that the passes
 * number the process images alike). */
static bool readable_header(json_t *o)
{
    char why[128];
    return header_problem(o, why, sizeof why) == NULL;
}

static int count_pass(struct report_log *log, struct report_reader *r)
{
    int64_t len, segment = 0, lineno = 0;
    struct report_run run = {0};
    while ((len = report_reader_next(r)) >= 0) {
        lineno++;
        struct pass_line l = pass_line(r, len);
        if (!l.whole)
            continue;
        bool header = report_line_looks_like(l.text, l.n, "header");
        if (!header && !report_line_looks_like(l.text, l.n, "activity"))
            continue;
        json_error_t jerr;
        bool clamped = false;
        json_t *o = report_parse_line(l.text, l.n, &clamped, &jerr);
        const char *type = json_is_object(o) ? type_of(o) : "";
        int64_t id;
        if (strcmp(type, "header") == 0 && (segment == 0 || readable_header(o))) {
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
    return ferror(r->f) ? fail(log, 0, "read error: %s", strerror(errno)) : 0;
}

/* A line pass 2 skips: counted; the first one named (report_info). */
static void bad_line(struct report_log *log, int64_t lineno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void bad_line(struct report_log *log, int64_t lineno, const char *fmt, ...)
{
    struct report_info *in = log->info;
    if (in->bad_lines++ > 0)
        return;
    in->first_bad_line = lineno;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(in->first_bad_why, sizeof in->first_bad_why, fmt, ap);
    va_end(ap);
    ascii_only(in->first_bad_why);
}

/* One line of pass 2 that parsed as an object of that type, after the
 * first header. */
static void dispatch(struct report_log *log, json_t *o, const char *type, int64_t lineno,
                     int *segment)
{
    char why[128];
    const char *cut = log_cut_reason(o, type);
    if (cut)
        on_log_cut(log, cut, lineno);
    if (strcmp(type, "header") == 0) {
        const char *problem = header_problem(o, why, sizeof why);
        if (problem)
            bad_line(log, lineno, "%s", problem);
        else
            on_header(log, o, ++*segment);
    } else if (strcmp(type, "decision") == 0) {
        report_join_decision(log, o, *segment);
    } else if (strcmp(type, "activity") == 0) {
        report_join_activity(log, o, *segment);
    } else if (strcmp(type, "event") == 0) {
        on_event(log, o);
    } else if (strcmp(type, "footer") == 0) {
        on_footer(log, o);
    } else if (!cut) {
        log->info->unknown_lines++;
    }
}

/* The first line of the run: a header this reader reads, or the file is
 * not a run log it can read (-1, err set). */
static int first_header(struct report_log *log, json_t *o, const char *type, int64_t lineno,
                        int *segment)
{
    char why[128];
    const char *problem;
    if (!type)
        return fail(log, lineno, "not a JSON object");
    if (strcmp(type, "header") != 0)
        return fail(log, lineno, "the first line is not a p2pshim log header");
    if ((problem = header_problem(o, why, sizeof why)) != NULL)
        return fail(log, lineno, "%s", problem);
    on_header(log, o, *segment = log->run_first_segment);
    return 0;
}

static int main_pass(struct report_log *log, struct report_reader *r)
{
    int64_t len, lineno = 0;
    int segment = 0, rc = 0;
    while (rc == 0 && (len = report_reader_next(r)) >= 0) {
        lineno++;
        struct pass_line l = pass_line(r, len);   /* only the last can be torn */
        if (l.n == 0 && l.whole)
            continue;
        if (lineno < log->run_first_line) {   /* an earlier run */
            log->info->earlier_run_lines++;
            continue;
        }
        log->info->lines++;
        json_error_t jerr;
        bool clamped = false;
        json_t *o = l.whole ? report_parse_line(l.text, l.n, &clamped, &jerr) : NULL;
        if (!o && l.torn && segment > 0) {   /* the writer was stopped mid-line */
            log->info->torn_tail = true;
            log->info->lines--;
            break;
        }
        log->info->saturated |= clamped;
        const char *type = json_is_object(o) ? type_of(o) : NULL;
        if (!l.whole)
            snprintf(jerr.text, sizeof jerr.text, "line longer than %u bytes", MAX_LINE);
        else if (!o)
            snprintf(jerr.text + strlen(jerr.text), sizeof jerr.text - strlen(jerr.text),
                     " (column %d)", jerr.column);
        if (segment == 0 && !o)
            rc = fail(log, lineno, "%s%s", l.whole ? "invalid JSON: " : "", jerr.text);
        else if (segment == 0)
            rc = first_header(log, o, type, lineno, &segment);
        else if (!o)
            bad_line(log, lineno, "%s%s", l.whole ? "invalid JSON: " : "", jerr.text);
        else if (!type)
            bad_line(log, lineno, "not a JSON object");
        else
            dispatch(log, o, type, lineno, &segment);
        json_decref(o);
    }
    if (rc == 0 && ferror(r->f))
        rc = fail(log, lineno, "read error: %s", strerror(errno));
    if (rc == 0 && segment == 0)
        rc = fail(log, 0, "empty: no header line");
    if (rc == 0) {
        report_join_flush(log);
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
    struct report_reader r;
    if (!report_reader_init(&r, f, MAX_LINE)) {
        fclose(f);
        return fail(log, 0, "out of memory");
    }
    int rc = count_pass(log, &r);
    if (log->run_first_segment == 0)
        log->run_first_segment = 1;   /* no header found: pass 2 says so */
    if (rc == 0 && fseek(f, 0, SEEK_SET) != 0)
        rc = fail(log, 0, "cannot read it twice: %s", strerror(errno));
    report_reader_reset(&r, f);
    if (rc == 0)
        rc = main_pass(log, &r);
    fclose(f);
    report_reader_free(&r);
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
