/* The entry points of report.h: the command line, the choice of renderer,
 * and writing the output file whole or not at all. */
#define _GNU_SOURCE
#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"
#include "report_internal.h"

static const char usage_text[] =
    "usage: p2pshim report [--format text|trace|html] [-o FILE] [--topo FILE] LOG\n"
    "\n"
    "Renders a p2pshim run log (P2PSHIM_RUN_LOG; docs/LOG_FORMAT.md).\n"
    "\n"
    "  --format text   terminal summary: per device pair the copies, bytes, peer\n"
    "                  and staged counts (by what CUPTI saw, else by decision),\n"
    "                  achieved GB/s, decisions by reason, the time P2P would\n"
    "                  save on staged copies; then a data part, one JSON object\n"
    "                  per line after \"@ \", for scripts\n"
    "  --format trace  Chrome trace event JSON (Perfetto, chrome://tracing):\n"
    "                  decisions on a host track per thread, CUPTI records on\n"
    "                  a track per GPU and stream, one time base, flow arrows\n"
    "                  from a decision to what ran\n"
    "  --format html   one self-contained page: summary, traffic heatmap and\n"
    "                  bandwidth against copy size\n"
    "  -o, --output FILE  write FILE (whole, or not at all) instead of stdout;\n"
    "                  without --format its extension picks one: .html html,\n"
    "                  .json trace, anything else text\n"
    "  --topo FILE     bandwidth table of `p2pshim topo --measure`; default:\n"
    "                  $P2PSHIM_TOPO_FILE, else $XDG_CACHE_HOME/p2pshim/topo.json,\n"
    "                  else ~/.cache/p2pshim/topo.json (if present)\n"
    "  -h, --help      this text\n"
    "\n"
    "Savings are estimated for staged copies (CUPTI saw DTOH+HTOD, or observe\n"
    "mode's would-enable): staged time (CUPTI's, else bytes / the table's\n"
    "staged GB/s) minus bytes / peer GB/s (the table's, else the best PTOP\n"
    "GB/s the log shows for the pair; else no estimate).\n"
    "\n"
    "The log is read twice, so it must be a file, not a pipe.\n"
    "Exit status: 0 done; 1 a file could not be read or written, or the log\n"
    "(or --topo FILE) is malformed (the message names the line); 2 usage.\n";

static const char *format_for(const char *out)
{
    const char *dot = out ? strrchr(out, '.') : NULL;
    if (dot && strchr(dot, '/') == NULL) {
        if (strcmp(dot, ".html") == 0 || strcmp(dot, ".htm") == 0)
            return "html";
        if (strcmp(dot, ".json") == 0)
            return "trace";
    }
    return "text";
}

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "p2pshim report: %s%s%s (see p2pshim report --help)\n", what,
            arg ? ": " : "", arg ? arg : "");
    return REPORT_USAGE;
}

/* "--opt VALUE" or "--opt=VALUE": returns the value and advances *i, or NULL
 * when argv[*i] is not this option. *missing is set when the value is. */
static const char *opt_value(int argc, char **argv, int *i, const char *lng,
                             const char *shrt, bool *missing)
{
    const char *a = argv[*i];
    size_t n = strlen(lng);
    if (strncmp(a, lng, n) == 0 && a[n] == '=')
        return a + n + 1;
    if (strcmp(a, lng) != 0 && !(shrt && strcmp(a, shrt) == 0))
        return NULL;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

int report_main(int argc, char **argv)
{
    const char *format = NULL, *out = NULL, *topo = NULL, *log = NULL;
    bool options = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        bool missing = false;
        if (options && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            fputs(usage_text, stdout);
            return REPORT_OK;
        }
        if (options && strcmp(a, "--") == 0) {
            options = false;
        } else if (options && (v = opt_value(argc, argv, &i, "--format", NULL,
                                             &missing))) {
            format = v;
        } else if (options && (v = opt_value(argc, argv, &i, "--output", "-o",
                                             &missing))) {
            out = v;
        } else if (options && (v = opt_value(argc, argv, &i, "--topo", NULL,
                                             &missing))) {
            topo = v;
        } else if (missing) {
            return usage_error("option needs a value", a);
        } else if (options && a[0] == '-' && a[1] != '\0') {
            return usage_error("unknown option", a);
        } else if (log) {
            return usage_error("one log at a time; extra argument", a);
        } else {
            log = a;
        }
    }
    if (!log)
        return usage_error("no LOG given", NULL);
    if (!format)
        format = format_for(out);
    return report_render(log, out, format, topo);
}

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
    if (!out_path) {
        o->f = stdout;
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
        fprintf(stderr, "p2pshim report: %s: cannot write: %s\n", out_path,
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
    if (o->f != stdout && fclose(o->f) != 0)
        rc = -1;
    if (ok && rc != 0)
        fprintf(stderr, "p2pshim report: %s: write error: %s\n",
                out_path ? out_path : "(stdout)", strerror(errno));
    if (o->tmp) {
        if (ok && rc == 0 && rename(o->tmp, out_path) != 0) {
            fprintf(stderr, "p2pshim report: %s: cannot rename into place: %s\n",
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
        fprintf(stderr, "p2pshim report: %s\n", err);
        return -1;
    }
    if (rc < 0)
        fprintf(stderr, "p2pshim report: warning: %s (ignored)\n", err);
    return 0;
}

static int render(const char *log_path, const char *out_path, bool trace,
                  bool html, const char *topo_path);

int report_render(const char *log_path, const char *out_path,
                  const char *format, const char *topo_path)
{
    bool trace = format && strcmp(format, "trace") == 0;
    bool html = format && strcmp(format, "html") == 0;
    if (!trace && !html && !(format && strcmp(format, "text") == 0)) {
        fprintf(stderr, "p2pshim report: unknown format %s (text, trace or html)\n",
                format ? format : "(none)");
        return REPORT_USAGE;
    }
    /* Numbers go into SVG, JSON and columns: '.' whatever the caller's
     * locale (the launcher may have called setlocale). */
    locale_t c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    locale_t caller = c_numeric ? uselocale(c_numeric) : (locale_t)0;
    int rc = render(log_path, out_path, trace, html, topo_path);
    if (c_numeric) {
        uselocale(caller);
        freelocale(c_numeric);
    }
    return rc;
}

static int render(const char *log_path, const char *out_path, bool trace,
                  bool html, const char *topo_path)
{
    struct report_topo topo = {0};
    if (!trace && load_topo(topo_path, &topo) != 0)
        return REPORT_FAILED;
    struct output o;
    if (open_output(out_path, &o) != 0) {
        report_topo_free(&topo);
        return REPORT_FAILED;
    }

    char err[1024] = "out of memory";
    struct report_log *log = report_log_new();
    struct report_summary s;
    struct report_visitor v;
    struct report_trace *tr = NULL;
    int rc = log ? 0 : -1;
    if (rc == 0 && trace) {
        tr = report_trace_new(o.f, &v);
        rc = tr ? 0 : -1;
    } else if (rc == 0) {
        report_summary_init(&s, &topo, log, &v);
    }
    if (rc == 0)
        rc = report_log_read(log, log_path, &v, err, sizeof err);
    if (rc == 0 && trace) {
        rc = report_trace_finish(tr, log_path, log);
        snprintf(err, sizeof err, "%s: cannot write the trace", log_path);
    } else if (rc == 0) {
        report_summary_finish(&s);
        rc = html ? report_html_write(o.f, log_path, &s)
                  : report_text_write(o.f, log_path, &s);
        snprintf(err, sizeof err, "%s: cannot write the report", log_path);
    }
    if (rc != 0)
        fprintf(stderr, "p2pshim report: %s\n", err);
    int orc = close_output(out_path, &o, rc == 0);
    if (tr)
        report_trace_free(tr);
    if (log && !trace)
        report_summary_free(&s);
    report_log_free(log);
    report_topo_free(&topo);
    return rc == 0 && orc == 0 ? REPORT_OK : REPORT_FAILED;
}
