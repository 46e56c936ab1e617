/* The exit line of `p2pshim run` in upgrade mode: what the shim carried
 * over the peer link, and the time that saved, from the run's own records.
 *
 * Measured (CUPTI timed every upgraded copy and some host copy): the
 * copies' bytes at the host link's rate the run timed (what the staged
 * path costs at least: report_price_est.c) minus their CUPTI times.
 *
 * Nominal (otherwise): per pair, its upgraded bytes at the host link's
 * rate (timed, else REPORT_PCIE_GBPS) minus the same bytes at the pair's
 * peer rate (report_price_peer_gbps: the log's best peer copy, the link
 * the bandwidth table or NVML names). A pair whose peer rate is no faster
 * than that (PCIe, or no link known) is not counted; with no pair counted
 * the line says why instead of a figure.
 *
 * One line, whatever the log's strings hold; "not estimated" says why. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "report_internal.h"

/* Why CUPTI did not time the copies, NULL when it was on in every file;
 * *off: because it was off (upgrade mode's default), not unavailable. */
static const char *cupti_why(const struct report_summary *s, bool *off, char *buf, size_t len)
{
    *off = false;
    for (int i = 0; i < report_log_file_count(s->log); i++) {
        const char *c = report_log_file(s->log, i)->cupti;
        if ((*off = c && strcmp(c, "off") == 0))
            return "CUPTI off, upgrade mode's default: --set CUPTI=1 times the copies";
        if (c && strcmp(c, "on") != 0) {
            snprintf(buf, len, "CUPTI %s", c);
            return buf;
        }
    }
    return NULL;
}

/* The nominal estimate over the pairs with upgraded bytes. */
struct nominal {
    double staged_gbps;          /* the host link's rate, timed or nominal */
    double saved_ns;
    int64_t counted_bytes, other_bytes;   /* over links faster / not known faster */
    bool mixed;                  /* counted pairs at more than one rate or source */
    struct nominal_pair {        /* the first pair counted, the first not */
        bool set;
        int src, dst;
        double gbps;
        const char *from;
        char link[48];
    } counted, other;
};

static void nominal_add(struct nominal *e, struct report_summary *s,
                        const struct report_pair *p)
{
    struct nominal_pair q = {.set = true, .src = p->src, .dst = p->dst};
    q.gbps = report_price_peer_gbps(s, p->src, p->dst, p->best_ptop_gbps, &q.from, q.link,
                                    sizeof q.link);
    double bytes = (double)p->upgraded_bytes;
    if (!(q.gbps > e->staged_gbps)) {
        e->other_bytes = report_add(e->other_bytes, p->upgraded_bytes, &s->saturated);
        if (!e->other.set)
            e->other = q;
        return;
    }
    e->saved_ns += bytes / e->staged_gbps - bytes / q.gbps;
    e->counted_bytes = report_add(e->counted_bytes, p->upgraded_bytes, &s->saturated);
    if (!e->counted.set)
        e->counted = q;
    else if (q.gbps != e->counted.gbps || strcmp(q.from, e->counted.from) != 0)
        e->mixed = true;
}

/* Where a counted pair's peer rate came from, in words. */
static void put_peer(FILE *f, const struct nominal *e)
{
    const struct nominal_pair *q = &e->counted;
    char g[32], pair[32];
    fprintf(f, "the peer link's %s GB/s (", report_fmt_gbps(q->gbps, g, sizeof g));
    if (strcmp(q->from, "log") == 0)
        fprintf(f, "the best peer copy of the logs");
    else {
        report_put_plain(f, q->link);
        fprintf(f, " as %s names it, %.0f GB/s per NVLink",
                strcmp(q->from, "nvml") == 0 ? "NVML" : "the bandwidth table",
                REPORT_NVLINK_GBPS);
    }
    fprintf(f, ")");
    if (e->mixed)
        fprintf(f, " for %s, other pairs at their own links' rates",
                report_fmt_pair(q->src, q->dst, pair, sizeof pair));
}

/* Why no pair was counted: the first one's link, as far as it is known. */
static const char *slow_why(const struct nominal *e, const char *cupti, char *buf,
                            size_t len)
{
    const struct nominal_pair *q = &e->other;
    char g[32], h[32];
    if (strcmp(q->from, "assumed") == 0)
        snprintf(buf, len, "no link known for GPU %d -> GPU %d: no NVML or bandwidth table "
                 "names it, and the copies were not timed; %s", q->src, q->dst,
                 cupti ? cupti : "CUPTI did not time them");
    else if (strcmp(q->from, "log") == 0)
        snprintf(buf, len, "the best peer copy of GPU %d -> GPU %d ran at %s GB/s, no faster "
                 "than the staged path's %s GB/s", q->src, q->dst,
                 report_fmt_gbps(q->gbps, g, sizeof g),
                 report_fmt_gbps(e->staged_gbps, h, sizeof h));
    else
        snprintf(buf, len, "the link of GPU %d -> GPU %d, %s as %s names it, is not known to "
                 "be faster than the staged path", q->src, q->dst, q->link,
                 strcmp(q->from, "nvml") == 0 ? "NVML" : "the bandwidth table");
    return buf;
}

/* "; time saved: not estimated (why)", the end of the line; why (from the
 * log, NVML, a table) with its control characters shown as '?'. */
static int put_not_estimated(FILE *f, const char *why)
{
    fprintf(f, "; time saved: not estimated (");
    report_put_plain(f, why);
    fprintf(f, ")\n");
    return ferror(f) ? -1 : 0;
}

static void put_share(FILE *f, const struct report_summary *s, double saved)
{
    char w[32];
    if (s->wall_ns > 0)
        fprintf(f, " (%.1f%% of %s wall time)", 100.0 * saved / (double)s->wall_ns,
                report_fmt_ns((double)s->wall_ns, w, sizeof w));
}

int report_exit_line_write(FILE *f, struct report_summary *s)
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
    char b[32], t[32], g[32], why[400], cbuf[160];
    bool off;
    const char *cupti = cupti_why(s, &off, cbuf, sizeof cbuf);
    fprintf(f, "p2pshim: upgraded %lld cop%s (%s) onto the peer link", (long long)n,
            n == 1 ? "y" : "ies", report_fmt_bytes(bytes, b, sizeof b));
    if (n == 0 || bytes <= 0)
        return put_not_estimated(f, n == 0 ? "no copy was upgraded"
                                           : "the upgraded copies moved no bytes");
    if (!cupti && ns >= 0 && host > 0) {
        double saved = (double)bytes / host - (double)ns;
        saved = saved > 0 ? saved : 0;
        fprintf(f, "; estimated time saved: %s", report_fmt_ns(saved, t, sizeof t));
        put_share(f, s, saved);
        fprintf(f, "; estimate: staged at the host link's %s GB/s against the copies' "
                   "CUPTI times\n", report_fmt_gbps(host, g, sizeof g));
        return ferror(f) ? -1 : 0;
    }
    struct nominal e = {.staged_gbps = host > 0 ? host : REPORT_PCIE_GBPS};
    for (int i = 0; i < s->npairs; i++)
        if (s->pairs[i].upgraded_bytes > 0)
            nominal_add(&e, s, &s->pairs[i]);
    if (e.counted_bytes <= 0)
        return put_not_estimated(f, e.other.set ? slow_why(&e, cupti, why, sizeof why)
                                                : "the upgraded copies name no GPU pair");
    double saved = e.saved_ns > 0 ? e.saved_ns : 0;
    fprintf(f, "; nominal time saved: %s", report_fmt_ns(saved, t, sizeof t));
    put_share(f, s, saved);
    if (host > 0)
        fprintf(f, "; nominal estimate, not measured: staged at the host link's %s GB/s as "
                   "timed against ", report_fmt_gbps(host, g, sizeof g));
    else
        fprintf(f, "; nominal estimate, not measured: staged at PCIe's nominal %s GB/s (no "
                   "host copy timed) against ", report_fmt_gbps(e.staged_gbps, g, sizeof g));
    put_peer(f, &e);
    if (e.other_bytes > 0)
        fprintf(f, "; %s over links not known to be faster not counted",
                report_fmt_bytes(e.other_bytes, b, sizeof b));
    if (off)
        fprintf(f, "; --set CUPTI=1 times the copies");
    fprintf(f, "\n");
    return ferror(f) ? -1 : 0;
}
