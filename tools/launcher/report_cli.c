/* p2pshim report's command line (report_main): its options, and the logs
 * its arguments name. Rendering is report_render.c's. */
#define _GNU_SOURCE
#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <glob.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "report.h"
#include "report_internal.h"

static const char usage_text[] =
    "usage: p2pshim report [--format text|json|csv|trace|html] [-o FILE] [--topo FILE]\n"
    "                      [--strict] LOG...\n"
    "\n"
    "Renders p2pshim run logs (P2PSHIM_RUN_LOG; docs/LOG_FORMAT.md) as one report.\n"
    "LOG is a file, a run folder (its *.jsonl and *.jsonl.gz files), a glob\n"
    "pattern (quoted, for the report to expand), or - for standard input; a\n"
    "gzip-compressed log is read as such. Several logs (the processes of a job)\n"
    "make one report: a job total, a row per process, GPUs named by host and\n"
    "UUID. In a folder or among a glob's matches, a file that cannot be read or\n"
    "is no p2pshim run log is left out with a warning naming it.\n"
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
    "  --format csv    for spreadsheets: a header row, then one row per GPU pair\n"
    "                  and path the copies took (peer, staged, other); the\n"
    "                  columns are listed in docs/LAUNCHER.md\n"
    "  --format trace  Chrome trace event JSON (Perfetto, chrome://tracing):\n"
    "                  decisions on a host track per thread, CUPTI records on\n"
    "                  a track per GPU and stream, one time base, flow arrows\n"
    "                  from a decision to what ran\n"
    "  --format html   one self-contained page: summary, traffic heatmap and\n"
    "                  bandwidth against copy size\n"
    "  -o, --output FILE  write FILE (whole, or not at all) instead of stdout;\n"
    "                  without --format its name picks one: .json json,\n"
    "                  .trace.json or .pftrace trace, .html html, .csv csv,\n"
    "                  anything else (.txt) text\n"
    "  --topo FILE     bandwidth table of `p2pshim topo --measure`, used even\n"
    "                  when measured on other GPUs (with a warning); default:\n"
    "                  $P2PSHIM_TOPO_FILE, else $XDG_CACHE_HOME/p2pshim/topo.json,\n"
    "                  else ~/.cache/p2pshim/topo.json (if present), used only\n"
    "                  for the GPUs it was measured on (by UUID)\n"
    "  --strict        a file of a folder or a glob that cannot be read, or is\n"
    "                  no p2pshim run log, fails the report instead\n"
    "  -h, --help      this text\n"
    "\n"
    "Savings are estimated for staged copies (CUPTI saw DTOH+HTOD, or observe\n"
    "mode's would-upgrade): staged time (CUPTI's, else bytes / the table's\n"
    "staged GB/s) minus bytes / peer GB/s (the table's, else the best PTOP\n"
    "GB/s the log shows for the pair). Without those, an estimate from the\n"
    "run's own records, labelled so: staged time at least bytes at the host\n"
    "link's timed rate, the peer side at 20 GB/s per NVLink (the table's or\n"
    "NVML's link type), else PCIe at the host link's rate.\n"
    "\n"
    "A log from a pipe is copied to a temporary file first (a gzip one as it\n"
    "is, compressed); a gzip log is decompressed as it is read. A line that cannot be\n"
    "read (not JSON, longer than 64 MiB) is skipped: the report and one warning\n"
    "say how many and which was the first. A size past the signed 64-bit range\n"
    "reads as that limit (the report says so).\n"
    "Exit status: 0 done; 1 a file could not be read or written, or is no run\n"
    "log (its first line no header this report reads; the message names the\n"
    "line), or --topo FILE is malformed; 2 usage.\n";

const char *report_format_for(const char *path)
{
    static const struct {
        const char *suffix, *format;
    } by_name[] = {
        {".trace.json", "trace"}, {".pftrace", "trace"}, {".json", "json"}, {".html", "html"},
        {".htm", "html"},         {".csv", "csv"},       {".txt", "text"},
    };
    const char *slash = path ? strrchr(path, '/') : NULL;
    const char *base = slash ? slash + 1 : path;
    size_t n = base ? strlen(base) : 0;
    for (size_t i = 0; i < sizeof by_name / sizeof by_name[0]; i++) {
        size_t k = strlen(by_name[i].suffix);
        if (n >= k && strcasecmp(base + n - k, by_name[i].suffix) == 0)
            return by_name[i].format;
    }
    return "text";
}

int report_keep_usable(char **paths, int n, bool strict)
{
    int kept = 0;
    for (int i = 0; i < n; i++) {
        char why[512];
        if (report_log_usable(paths[i], why, sizeof why)) {
            paths[kept++] = paths[i];
        } else if (strict) {
            launcher_error("report: %s: %s", paths[i], why);
            return -1;
        } else {
            launcher_error("report: warning: skipping %s: %s", paths[i], why);
        }
    }
    return kept;
}

/* Adds the matches of g that report_keep_usable keeps; false after a
 * message when strict refused one, or none is left. */
static bool add_usable(const char *arg, glob_t *g, struct report_inputs *in, bool strict)
{
    char **paths = calloc(g->gl_pathc + 1, sizeof *paths);
    if (paths == NULL) {
        launcher_error("report: %s: out of memory", arg);
        return false;
    }
    memcpy(paths, g->gl_pathv, g->gl_pathc * sizeof *paths);
    int n = report_keep_usable(paths, (int)g->gl_pathc, strict);
    bool ok = n > 0;
    for (int i = 0; ok && i < n; i++)
        if (!(ok = report_inputs_add(in, paths[i])))
            launcher_error("report: %s: out of memory", arg);
    if (n == 0)
        launcher_error("report: %s: no run log the report can read", arg);
    free(paths);
    return ok;
}

/* The logs an argument names: a folder's *.jsonl and *.jsonl.gz files,
 * a glob pattern's matches, or the argument itself. Sorted within one
 * argument; of a folder or a glob, the usable ones (report_keep_usable).
 * Returns false (after a message) when it names none. */
static bool add_logs(const char *arg, struct report_inputs *in, bool strict)
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
            launcher_error("report: %s: no run log (*.jsonl) in this folder", arg);
            return false;
        }
    } else {
        rc = glob(arg, 0, NULL, &g);
        if (rc == GLOB_NOMATCH) {
            launcher_error("report: %s: no such file", arg);
            return false;
        }
    }
    bool ok = rc == 0 && add_usable(arg, &g, in, strict);
    if (rc != 0)
        launcher_error("report: %s: out of memory", arg);
    if (rc == 0 || rc == GLOB_NOMATCH)
        globfree(&g);
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

enum { OPT_FORMAT, OPT_OUTPUT, OPT_TOPO, OPT_STRICT };

static const struct cli_option report_options[] = {
    {"format", 0, true, OPT_FORMAT},
    {"output", 'o', true, OPT_OUTPUT},
    {"topo", 0, true, OPT_TOPO},
    {"strict", 0, false, OPT_STRICT},
    {NULL, 0, false, 0},
};

struct report_opts {
    const char *format, *out, *topo;
    bool strict;
};

/* One option of report (cli_parse's callback). */
static int report_option(void *ctx, int id, const char *v)
{
    struct report_opts *o = ctx;
    static const char *const what[] = {"--format", "--output", "--topo"};
    if (id == OPT_STRICT) {
        o->strict = true;
        return CLI_OK;
    }
    if (v[0] == '\0') {
        launcher_error("report: %s needs a value (see p2pshim report --help)", what[id]);
        return REPORT_USAGE;
    }
    if (id == OPT_FORMAT)
        o->format = v;
    else if (id == OPT_OUTPUT)
        o->out = v;
    else
        o->topo = v;
    return CLI_OK;
}

int report_main(int argc, char **argv)
{
    struct report_opts o = {NULL, NULL, NULL, false};
    struct report_inputs logs = {0};
    int first;
    int rc = cli_parse("report", argc, argv, report_options, false, report_option, &o, &first);
    if (rc == CLI_HELP) {
        fputs(usage_text, stdout);
        return REPORT_OK;
    }
    if (rc != CLI_OK)
        return REPORT_USAGE;
    for (int i = first; rc == REPORT_OK && i < argc; i++)
        if (!add_logs(argv[i], &logs, o.strict))
            rc = REPORT_FAILED;
    if (rc == REPORT_OK && logs.n == 0) {
        launcher_error("report: no LOG given (see p2pshim report --help)");
        rc = REPORT_USAGE;
    }
    if (rc == REPORT_OK)
        rc = report_render_many((const char *const *)logs.paths, logs.n, o.out,
                                o.format ? o.format : o.out ? report_format_for(o.out) : "text",
                                o.topo);
    report_inputs_free(&logs);
    return rc;
}
