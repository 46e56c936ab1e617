/* The rendering of report.h's entry points: the bandwidth table, the
 * log passes, the renderer, and the output file written whole or not at
 * all. */
#define _GNU_SOURCE
#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "report.h"
#include "report_internal.h"

/* The output: a temporary file beside out_path, renamed over it at the end
 * (a special file such as /dev/stdout is written in place). */
struct output {
    FILE *f;
    char *tmp;
};

static int open_output(const char *out_path, struct output *o)
{
    struct stat st;
    o->tmp = NULL;
    if (!out_path || strcmp(out_path, "/dev/stderr") == 0) {
        o->f = out_path ? stderr : stdout;
        return 0;
    }
    if (stat(out_path, &st) == 0 && !S_ISREG(st.st_mode)) {
        o->f = fopen(out_path, "w");
    } else if (asprintf(&o->tmp, "%s.XXXXXX", out_path) < 0) {
        o->tmp = NULL;
        o->f = NULL;
    } else {
        int fd = mkstemp(o->tmp);
        mode_t mask = umask(0);
        umask(mask);
        if (fd >= 0 && fchmod(fd, 0666 & ~mask) == 0)
            o->f = fdopen(fd, "w");
        else
            o->f = NULL;
        if (!o->f && fd >= 0) {
            close(fd);
            unlink(o->tmp);
        }
    }
    if (!o->f) {
        launcher_error("report: %s: cannot write: %s", out_path,
                strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    return 0;
}

static int close_output(const char *out_path, struct output *o, bool ok)
{
    int rc = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
        rc = -1;
    if (o->f != stdout && o->f != stderr && fclose(o->f) != 0)
        rc = -1;
    if (ok && rc != 0)
        launcher_error("report: %s: write error: %s",
                out_path ? out_path : "(stdout)", strerror(errno));
    if (o->tmp) {
        if (ok && rc == 0 && rename(o->tmp, out_path) != 0) {
            launcher_error("report: %s: cannot rename into place: %s",
                    out_path, strerror(errno));
            rc = -1;
        }
        if (!ok || rc != 0)
            unlink(o->tmp);
        free(o->tmp);
    }
    return rc;
}

static int load_topo(const char *topo_path, struct report_topo *topo)
{
    char err[512];
    char *path = topo_path ? strdup(topo_path) : report_topo_default_path();
    int rc = path ? report_topo_load(path, topo, err, sizeof err) : 1;
    if (rc == 1 && topo_path) {
        snprintf(err, sizeof err, "%s: no such file", topo_path);
        rc = -1;
    }
    free(path);
    if (rc < 0 && topo_path) {
        launcher_error("report: %s", err);
        return -1;
    }
    if (rc < 0)
        launcher_error("report: warning: %s (ignored)", err);
    return 0;
}

static int render(const char *const *logs, int nlogs, const char *out_path, bool trace,
                  bool html, const char *topo_path);
/* Format "verdict": the verdict alone, lines prefixed "p2pshim: " (what
 * `p2pshim run --observe` prints at exit). */
static bool verdict_only;
/* Format "exit-line": the one line of `p2pshim run` in upgrade mode. */
static bool exit_line;
/* Format "json": the report as one JSON document (report_json.c). */
static bool json_doc;
/* Format "csv": a row per GPU pair and path (report_csv.c). */
static bool csv_doc;

int report_render(const char *log_path, const char *out_path,
                  const char *format, const char *topo_path)
{
    return report_render_many(&log_path, 1, out_path, format, topo_path);
}

int report_render_many(const char *const *logs, int nlogs, const char *out_path,
                       const char *format, const char *topo_path)
{
    bool trace = format && strcmp(format, "trace") == 0;
    bool html = format && strcmp(format, "html") == 0;
    json_doc = format && strcmp(format, "json") == 0;
    csv_doc = format && strcmp(format, "csv") == 0;
    verdict_only = format && strcmp(format, "verdict") == 0;
    exit_line = format && strcmp(format, "exit-line") == 0;
    if (!trace && !html && !json_doc && !csv_doc && !verdict_only && !exit_line &&
        !(format && strcmp(format, "text") == 0)) {
        launcher_error("report: unknown format %s (text, json, csv, trace or html)",
                format ? format : "(none)");
        return REPORT_USAGE;
    }
    /* Numbers go into SVG, JSON and columns: '.' whatever the caller's
     * locale (the launcher may have called setlocale). */
    locale_t c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    locale_t caller = c_numeric ? uselocale(c_numeric) : (locale_t)0;
    int rc = render(logs, nlogs, out_path, trace, html, topo_path);
    if (c_numeric) {
        uselocale(caller);
        freelocale(c_numeric);
    }
    return rc;
}

/* The earliest time of the logs, for the trace's zero. */
static int trace_base(const char *const *logs, int nlogs, int64_t *base, char *err,
                      size_t errlen)
{
    struct report_log *log = report_log_new();
    struct report_visitor v;
    int rc = log ? 0 : -1;
    report_trace_base_visitor(&v, base);
    for (int i = 0; rc == 0 && i < nlogs; i++)
        rc = report_log_read(log, logs[i], &v, err, errlen);
    report_log_free(log);
    return rc;
}

/* The bandwidth table against the logs: one warning line when it is
 * foreign; a refused one shows as no table. */
static void warn_topo(struct report_summary *s, struct report_topo *topo)
{
    if (!s->topo_note[0] || !topo->path)
        return;
    if (s->topo_refused)
        launcher_error("report: warning: bandwidth table %s not used: %s (--topo FILE "
                       "uses it anyway)", topo->path, s->topo_note);
    else
        launcher_error("report: warning: bandwidth table %s is foreign: %s; used as "
                       "--topo asks", topo->path, s->topo_note);
    if (s->topo_refused)
        topo->loaded = false;
}

/* One warning line per log with lines the reader skipped (the report
 * says so too); log read logs[0..nlogs) in order, one file each. */
static void warn_bad_lines(const struct report_log *log, const char *const *logs, int nlogs)
{
    for (int i = 0; log && i < report_log_file_count(log) && i < nlogs; i++) {
        const struct report_info *in = report_log_file(log, i);
        if (in->bad_lines)
            launcher_error("report: warning: %s: %lld unreadable line(s) skipped (the first: "
                           "line %lld: %s)", logs[i],
                           (long long)in->bad_lines, (long long)in->first_bad_line,
                           in->first_bad_why);
    }
}

static bool reads_stdin(const char *const *logs, int nlogs)
{
    for (int i = 0; i < nlogs; i++)
        if (strcmp(logs[i], "-") == 0)
            return true;
    return false;
}

/* The summary of the logs into *s (from *log, which the caller frees
 * with it). A table found foreign only after a figure came from it (a
 * later log's GPUs) costs a second pass without it; standard input cannot
 * be read again, so there the figures priced before stay. */
static int summarize(const char *const *logs, int nlogs, struct report_topo *topo,
                     struct report_log **log, struct report_summary *s, char *err,
                     size_t errlen)
{
    struct report_visitor v;
    char note[sizeof s->topo_note] = "";
    for (int pass = 0;; pass++) {
        if ((*log = report_log_new()) == NULL)
            return -1;
        report_summary_init(s, topo, *log, &v);
        int rc = 0;
        for (int i = 0; rc == 0 && i < nlogs; i++)
            rc = report_log_read(*log, logs[i], &v, err, errlen);
        if (rc != 0)
            return rc;
        report_summary_finish(s);
        if (pass > 0) {
            memcpy(s->topo_note, note, sizeof note);
            s->topo_refused = true;
        }
        if (pass > 0 || !s->topo_refused || !s->topo_priced || reads_stdin(logs, nlogs))
            break;
        memcpy(note, s->topo_note, sizeof note);
        report_summary_free(s);
        report_log_free(*log);
        topo->loaded = false; /* the second pass: nothing from it */
    }
    warn_topo(s, topo);
    return 0;
}

static int render(const char *const *logs, int nlogs, const char *out_path, bool trace,
                  bool html, const char *topo_path)
{
    const char *log_path = logs[0];
    struct report_topo topo = {0};
    if (!trace && load_topo(topo_path, &topo) != 0)
        return REPORT_FAILED;
    struct output o;
    if (open_output(out_path, &o) != 0) {
        report_topo_free(&topo);
        return REPORT_FAILED;
    }

    char err[1024] = "out of memory";
    struct report_log *log = NULL;
    struct report_summary s;
    struct report_visitor v;
    struct report_trace *tr = NULL;
    int rc = 0;
    int64_t base = INT64_MAX;
    topo.forced = topo_path != NULL;
    if (trace) {
        rc = trace_base(logs, nlogs, &base, err, sizeof err);
        log = rc == 0 ? report_log_new() : NULL;
        tr = log ? report_trace_new(o.f, &v, base == INT64_MAX ? 0 : base) : NULL;
        rc = rc != 0 ? rc : tr ? 0 : -1;
        for (int i = 0; rc == 0 && i < nlogs; i++)
            rc = report_log_read(log, logs[i], &v, err, sizeof err);
    } else {
        rc = summarize(logs, nlogs, &topo, &log, &s, err, sizeof err);
    }
    if (rc == 0 && trace) {
        rc = report_trace_finish(tr, log_path, log);
        snprintf(err, sizeof err, "%s: cannot write the trace", log_path);
    } else if (rc == 0) {
        rc = html           ? report_html_write(o.f, log_path, &s)
             : json_doc     ? report_json_write(o.f, log_path, &s)
             : csv_doc      ? report_csv_write(o.f, &s)
             : verdict_only ? report_verdict_write(o.f, "p2pshim: ", &s)
             : exit_line    ? report_exit_line_write(o.f, &s)
                            : report_text_write(o.f, log_path, &s);
        snprintf(err, sizeof err, "%s: cannot write the report", log_path);
    }
    if (rc != 0)
        launcher_error("report: %s", err);
    else
        warn_bad_lines(log, logs, nlogs);
    int orc = close_output(out_path, &o, rc == 0);
    if (tr)
        report_trace_free(tr);
    if (log && !trace)
        report_summary_free(&s);
    report_log_free(log);
    report_topo_free(&topo);
    return rc == 0 && orc == 0 ? REPORT_OK : REPORT_FAILED;
}
