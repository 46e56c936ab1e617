/* p2pshim report: renders a run log (docs/LOG_FORMAT.md, versions 1 and 2) as a
 * terminal summary, a Chrome trace (Perfetto, chrome://tracing) or one
 * self-contained HTML page. Reads the log twice, line by line: memory grows
 * with the device pairs, threads and streams seen and with the decisions
 * that later "activity" lines refer to, never with the log's length. */
#ifndef P2PSHIM_REPORT_H
#define P2PSHIM_REPORT_H

/* Exit codes of both entry points. */
#define REPORT_OK 0
#define REPORT_FAILED 1   /* a file could not be read or written, or the log
                             (or an explicit --topo file) is malformed */
#define REPORT_USAGE 2    /* bad command line or unknown format */

/* `p2pshim report [--format text|trace|html] [-o FILE] [--topo FILE]
 * [--help] LOG`. argv[0] is the command's name ("report"; ignored);
 * options start at argv[1]. Without --format the format follows -o's
 * extension (.html: html, .json: trace, else text); without -o, text goes
 * to stdout. Messages go to stderr, one line each, naming the file and line.
 * Returns REPORT_OK, REPORT_FAILED or REPORT_USAGE. */
int report_main(int argc, char **argv);

/* Renders log_path as format ("text", "trace" or "html") into out_path
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
#include <stdbool.h>
struct report_inputs {
    char **paths;
    int n, cap;
};
bool report_inputs_add(struct report_inputs *in, const char *path);
void report_inputs_free(struct report_inputs *in);

#endif
