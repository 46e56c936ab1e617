/* p2pshim report's command line (report_main): its options, and the logs
 * its arguments name. Rendering is report_render.c's. */
#define _GNU_SOURCE
#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <glob.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
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
    "  --topo FILE     bandwidth table of `p2pshim topo --measure`, used even\n"
    "                  when measured on other GPUs (with a warning); default:\n"
    "                  $P2PSHIM_TOPO_FILE, else $XDG_CACHE_HOME/p2pshim/topo.json,\n"
    "                  else ~/.cache/p2pshim/topo.json (if present), used only\n"
    "                  for the GPUs it was measured on (by UUID)\n"
    "  -h, --help      this text\n"
    "\n"
    "Savings are estimated for staged copies (CUPTI saw DTOH+HTOD, or observe\n"
    "mode's would-upgrade): staged time (CUPTI's, else bytes / the table's\n"
    "staged GB/s) minus bytes / peer GB/s (the table's, else the best PTOP\n"
    "GB/s the log shows for the pair; else no estimate).\n"
    "\n"
    "A log from a pipe is copied to a temporary file first (a gzip one as it\n"
    "is, compressed); a gzip log is read through gzip -dc. A line that cannot be\n"
    "read (not JSON, longer than 64 MiB) is skipped: the report and one warning\n"
    "say how many and which was the first. A size past the signed 64-bit range\n"
    "reads as that limit (the report says so).\n"
    "Exit status: 0 done; 1 a file could not be read or written, or is no run\n"
    "log (its first line no header this report reads; the message names the\n"
    "line), or --topo FILE is malformed; 2 usage.\n";

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
    bool ok = rc == 0;
    for (size_t i = 0; ok && i < g.gl_pathc; i++)
        ok = report_inputs_add(in, g.gl_pathv[i]);
    if (rc == 0 || rc == GLOB_NOMATCH)
        globfree(&g);
    if (!ok)
        launcher_error("report: %s: out of memory", arg);
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

enum { OPT_FORMAT, OPT_OUTPUT, OPT_TOPO };

static const struct cli_option report_options[] = {
    {"format", 0, true, OPT_FORMAT},
    {"output", 'o', true, OPT_OUTPUT},
    {"topo", 0, true, OPT_TOPO},
    {NULL, 0, false, 0},
};

struct report_opts {
    const char *format, *out, *topo;
};

/* One option of report (cli_parse's callback). */
static int report_option(void *ctx, int id, const char *v)
{
    struct report_opts *o = ctx;
    static const char *const what[] = {"--format", "--output", "--topo"};
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
    struct report_opts o = {NULL, NULL, NULL};
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
        if (!add_logs(argv[i], &logs))
            rc = REPORT_FAILED;
    if (rc == REPORT_OK && logs.n == 0) {
        launcher_error("report: no LOG given (see p2pshim report --help)");
        rc = REPORT_USAGE;
    }
    if (rc == REPORT_OK)
        rc = report_render_many((const char *const *)logs.paths, logs.n, o.out,
                                o.format ? o.format : format_for(o.out), o.topo);
    report_inputs_free(&logs);
    return rc;
}
