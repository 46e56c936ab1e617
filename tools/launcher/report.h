/* p2pshim report: renders a run log (docs/LOG_FORMAT.md, versions 1 and 2)
 * as a terminal summary, one JSON document, a CSV table, a Chrome trace
 * (Perfetto, chrome://tracing) or one self-contained HTML page. Reads the
 * log twice, line by line: memory grows with the device pairs, threads and
 * streams seen and with the decisions that later "activity" lines refer
 * to, never with the log's length. */
#ifndef P2PSHIM_REPORT_H
#define P2PSHIM_REPORT_H

#include <stdbool.h>
#include <stddef.h>

/* Exit codes of both entry points. */
#define REPORT_OK 0
#define REPORT_FAILED 1   /* a file could not be read or written, or the log
                             (or an explicit --topo file) is malformed */
#define REPORT_USAGE 2    /* bad command line or unknown format */

/* `p2pshim report [--format text|json|csv|trace|html] [-o FILE] [--topo FILE]
 * [--strict] [--help] LOG...`. argv[0] is the command's name ("report";
 * ignored); options start at argv[1]. Without --format the format follows
 * -o's name (report_format_for); without -o, text goes to stdout. Messages
 * go to stderr, one line each, naming the file and line. Returns
 * REPORT_OK, REPORT_FAILED or REPORT_USAGE. */
int report_main(int argc, char **argv);

/* The format a report written to path has when no --format says: .json
 * the JSON report, .trace.json and .pftrace a trace, .html/.htm a page,
 * .csv the table, anything else (.txt) the text summary. */
const char *report_format_for(const char *path);

/* Whether path, met in a run folder or among a glob's matches, is a log
 * the report reads: readable (a gzip file whole), its first line a
 * p2pshim log header of a version it reads. False with the reason in why
 * ("truncated gzip file", "not a p2pshim run log (...)", "cannot open:
 * Permission denied"). */
bool report_log_usable(const char *path, char *why, size_t why_len);

/* Keeps the paths[0..n) that report_log_usable takes, in order: one
 * warning line names each other one ("p2pshim: report: warning: skipping
 * FILE: why"), or with strict one error line for the first. Returns how
 * many are kept, or -1 (strict). */
int report_keep_usable(char **paths, int n, bool strict);

/* Renders log_path as format ("text", "json", "csv", "trace", "html",
 * "verdict" or "exit-line": the line of p2pshim run in upgrade mode) into
 * out_path
 * (NULL: stdout; a file is written beside itself and renamed into place, so
 * a failed run leaves no half-written file). topo_path NULL: the bandwidth
 * table at its default place (P2PSHIM_TOPO_FILE, else
 * $XDG_CACHE_HOME/p2pshim/topo.json, else ~/.cache/p2pshim/topo.json), where
 * a missing file means no estimate from it and a malformed one a warning;
 * a topo_path given must be readable. */
int report_render(const char *log_path, const char *out_path,
                  const char *format, const char *topo_path);

/* The same over several logs (the processes of one job): one report. */
int report_render_many(const char *const *logs, int nlogs, const char *out_path,
                       const char *format, const char *topo_path);

/* A list of log paths (owned copies). */
struct report_inputs {
    char **paths;
    int n, cap;
};
bool report_inputs_add(struct report_inputs *in, const char *path);
void report_inputs_free(struct report_inputs *in);

#endif
