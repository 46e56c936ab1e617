/* The exit line of `p2pshim run` in upgrade mode: what the shim carried
 * over the peer link, and the time that saved, estimated from the run's
 * own records: each upgraded copy's CUPTI time against its bytes at the
 * host link's rate the run timed (what the staged path costs at least:
 * report_price_est.c). One line; "not estimated" says why. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "report_internal.h"

/* Why the saving cannot be estimated, or NULL when it can. */
static const char *why_not(const struct report_summary *s, int64_t n, int64_t ns,
                           double host, char *buf, size_t len)
{
    for (int i = 0; i < report_log_file_count(s->log); i++) {
        const char *c = report_log_file(s->log, i)->cupti;
        if (c && strcmp(c, "off") == 0)
            return "CUPTI off, upgrade mode's default: the copies were not timed; "
                   "--set CUPTI=1 times them";
        if (c && strcmp(c, "on") != 0) {
            snprintf(buf, len, "CUPTI %s: the copies were not timed", c);
            return buf;
        }
    }
    if (n == 0)
        return "no copy was upgraded";
    if (ns < 0)
        return "CUPTI did not time every upgraded copy";
    if (host <= 0)
        return "the run timed no copy to or from host memory to price the staged path";
    return NULL;
}

int report_exit_line_write(FILE *f, const struct report_summary *s)
{
    int64_t n = 0, bytes = 0, ns = 0;
    bool sat = false;
    for (int i = 0; i < s->nprocs; i++) {
        const struct report_proc *p = &s->procs[i];
        n = report_add(n, p->upgraded, &sat);
        bytes = report_add(bytes, p->upgraded_bytes, &sat);
        ns = ns < 0 || p->upgraded_ns < 0 ? -1 : report_add(ns, p->upgraded_ns, &sat);
    }
    double host = report_price_host_gbps(s);
    char b[32], t[32], w[32], g[32], why[160];
    fprintf(f, "p2pshim: upgraded %lld cop%s (%s) onto the peer link", (long long)n,
            n == 1 ? "y" : "ies", report_fmt_bytes(bytes, b, sizeof b));
    const char *no = why_not(s, n, ns, host, why, sizeof why);
    if (no) {
        fprintf(f, "; time saved: not estimated (%s)\n", no);
        return ferror(f) ? -1 : 0;
    }
    double saved = (double)bytes / host - (double)ns;
    saved = saved > 0 ? saved : 0;
    fprintf(f, "; estimated time saved: %s", report_fmt_ns(saved, t, sizeof t));
    if (s->wall_ns > 0)
        fprintf(f, " (%.1f%% of %s wall time)", 100.0 * saved / (double)s->wall_ns,
                report_fmt_ns((double)s->wall_ns, w, sizeof w));
    fprintf(f, "; estimate: staged at the host link's %s GB/s against the copies' "
               "CUPTI times\n", report_fmt_gbps(host, g, sizeof g));
    return ferror(f) ? -1 : 0;
}
