/* The entry points of report.h: the command line, the choice of renderer,
 * and writing the output file whole or not at all. */
#define _GNU_SOURCE
#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <glob.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"
#include "report_internal.h"

static const char usage_text[] =
    "usage: p2pshim report [--format text|json|trace|html] [-o FILE] [--topo FILE] LOG...\n"
    "\n"
    "Renders p2pshim run logs (P2PSHIM_RUN_LOG; docs/LOG_FORMAT.md) as one report.\n"
    "LOG is a file, a run folder (its *.jsonl and *.jsonl.gz files), a glob\n"
    "pattern (quoted, for the report to expand), or - for standard input; a\n"
    "gzip-compressed log is read as such. Several logs (the processes of a job)\n"
    "make one report: a job total, a row per process, GPUs named by host and\n"
    "UUID.\n"
    "\n"
    "  --format text   terminal summary: per device pair the copies, bytes, peer\n"
    "                  and staged counts (by what CUPTI saw, else by decision),\n"
    "                  achieved GB/s, decisions by reason, the time P2P would\n"
    "                  save on staged copies; then a data part, one JSON object\n"
    "                  per line after \"@ \", for scripts\n"
    "  --format json   the report as one JSON document for programs: verdict,\n"
    "                  job totals, a row per process, GPUs by UUID, pairs, a\n"
    "                  traffic matrix per host, bounce candidates; its schema\n"
    "                  is docs/report-schema.json (versioned: schema_version)\n"
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
    "mode's would-upgrade): staged time (CUPTI's, else bytes / the table's\n"
    "staged GB/s) minus bytes / peer GB/s (the table's, else the best PTOP\n"
    "GB/s the log shows for the pair; else no estimate).\n"
    "\n"
    "A log from a pipe or in gzip form is copied to a temporary file first.\n"
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

/* The logs an argument names: a folder's *.jsonl and *.jsonl.gz files,
 * a glob pattern's matches, or the argument itself. Sorted within one
 * argument. Returns false (after a message) when it names none. */
static bool add_logs(const char *arg, struct report_inputs *in)
{
    struct stat st;
    glob_t g;
    int rc;
    if (strcmp(arg, "-") == 0 || (stat(arg, &st) == 0 && !S_ISDIR(st.st_mode)))
        return report_inputs_add(in, arg);
    if (stat(arg, &st) == 0) {
        char *pat[2] = {NULL, NULL};
        bool ok = asprintf(&pat[0], "%s/*.jsonl", arg) > 0 &&
                  asprintf(&pat[1], "%s/*.jsonl.gz", arg) > 0;
        int first = ok ? glob(pat[0], 0, NULL, &g) : GLOB_NOSPACE;
        rc = first;
        if (ok && (first == 0 || first == GLOB_NOMATCH)) {
            rc = glob(pat[1], first == 0 ? GLOB_APPEND : 0, NULL, &g);
            if (rc == GLOB_NOMATCH && first == 0)
                rc = 0;
        }
        free(pat[0]);
        free(pat[1]);
        if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
            if (rc == 0)
                globfree(&g);
            fprintf(stderr, "p2pshim report: %s: no run log (*.jsonl) in this folder\n", arg);
            return false;
        }
    } else {
        rc = glob(arg, 0, NULL, &g);
        if (rc == GLOB_NOMATCH) {
            fprintf(stderr, "p2pshim report: %s: no such file\n", arg);
            return false;
        }
    }
    bool ok = rc == 0;
    for (size_t i = 0; ok && i < g.gl_pathc; i++)
        ok = report_inputs_add(in, g.gl_pathv[i]);
    if (rc == 0 || rc == GLOB_NOMATCH)
        globfree(&g);
    if (!ok)
        fprintf(stderr, "p2pshim report: %s: out of memory\n", arg);
    return ok;
}

bool report_inputs_add(struct report_inputs *in, const char *path)
{
    if (in->n == in->cap) {
        int cap = in->cap ? 2 * in->cap : 8;
        char **p = realloc(in->paths, (size_t)cap * sizeof *p);
        if (!p)
            return false;
        in->paths = p;
        in->cap = cap;
    }
    if (!(in->paths[in->n] = strdup(path)))
        return false;
    in->n++;
    return true;
}

void report_inputs_free(struct report_inputs *in)
{
    for (int i = 0; i < in->n; i++)
        free(in->paths[i]);
    free(in->paths);
    memset(in, 0, sizeof *in);
}

int report_main(int argc, char **argv)
{
    const char *format = NULL, *out = NULL, *topo = NULL;
    struct report_inputs logs = {0};
    int rc = REPORT_OK;
    bool options = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        bool missing = false;
        if (options && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            fputs(usage_text, stdout);
            report_inputs_free(&logs);
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
            rc = usage_error("option needs a value", a);
        } else if (options && a[0] == '-' && a[1] != '\0') {
            rc = usage_error("unknown option", a);
        } else if (!add_logs(a, &logs)) {
            rc = REPORT_FAILED;
        }
        if (rc != REPORT_OK)
            break;
    }
    if (rc == REPORT_OK && logs.n == 0)
        rc = usage_error("no LOG given", NULL);
    if (rc == REPORT_OK)
        rc = report_render_many((const char *const *)logs.paths, logs.n, out,
                                format ? format : format_for(out), topo);
    report_inputs_free(&logs);
    return rc;
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
    if (o->f != stdout && o->f != stderr && fclose(o->f) != 0)
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

static int render(const char *const *logs, int nlogs, const char *out_path, bool trace,
                  bool html, const char *topo_path);
/* Format "verdict": the verdict alone, lines prefixed "p2pshim: " (what
 * `p2pshim run --observe` prints at exit). */
static bool verdict_only;
/* Format "json": the report as one JSON document (report_json.c). */
static bool json_doc;

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
    verdict_only = format && strcmp(format, "verdict") == 0;
    if (!trace && !html && !json_doc && !verdict_only &&
        !(format && strcmp(format, "text") == 0)) {
        fprintf(stderr, "p2pshim report: unknown format %s (text, json, trace or html)\n",
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
    struct report_log *log = report_log_new();
    struct report_summary s;
    struct report_visitor v;
    struct report_trace *tr = NULL;
    int rc = log ? 0 : -1;
    int64_t base = INT64_MAX;
    if (rc == 0 && trace)
        rc = trace_base(logs, nlogs, &base, err, sizeof err);
    if (rc == 0 && trace) {
        tr = report_trace_new(o.f, &v, base == INT64_MAX ? 0 : base);
        rc = tr ? 0 : -1;
    } else if (rc == 0) {
        report_summary_init(&s, &topo, log, &v);
    }
    for (int i = 0; rc == 0 && i < nlogs; i++)
        rc = report_log_read(log, logs[i], &v, err, sizeof err);
    if (rc == 0 && trace) {
        rc = report_trace_finish(tr, log_path, log);
        snprintf(err, sizeof err, "%s: cannot write the trace", log_path);
    } else if (rc == 0) {
        report_summary_finish(&s);
        rc = html           ? report_html_write(o.f, log_path, &s)
             : json_doc     ? report_json_write(o.f, log_path, &s)
             : verdict_only ? report_verdict_write(o.f, "p2pshim: ", &s)
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
