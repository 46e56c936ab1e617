/* The HTML page: one file, no script, no external resource (a Content
 * Security Policy of default-src 'none' makes the browser refuse any that
 * slipped in). Everything from the log goes through report_put_html. Rows
 * carry ids (pair-S-D, pair-total, pair-local) and the cells the same
 * figures as the text report, so a test can find them. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report_internal.h"

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}"
    "h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em}"
    "table{border-collapse:collapse;margin:.5em 0}"
    "th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}"
    "th{background:#f0f3f7}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "tr.total td{font-weight:600;background:#fafafa}small{color:#666}"
    "dl.run{display:grid;grid-template-columns:max-content auto;gap:.1em 1em}"
    "dl.run dt{font-weight:600}dl.run dd{margin:0}"
    "p.note{background:#fff4e0;border-left:4px solid #e69500;padding:.4em .8em}"
    "svg text{font:12px system-ui,sans-serif}"
    "header#job ul{list-style:none;padding:0;margin:.3em 0;display:flex;flex-wrap:wrap;gap:.4em}"
    "header#job li{background:#f0f3f7;border-radius:4px;padding:.15em .6em}"
    "section.card{border:1px solid #c9d3df;border-radius:8px;padding:.6em 1.2em 1em;"
    "box-shadow:0 1px 4px rgba(0,0,0,.08);margin:1em 0 2em}"
    "section.card h2{margin-top:.3em}p.sentence{font-size:1.1em}"
    "p.saving{font-size:1.35em;margin:.4em 0}p.basis{color:#555}"
    "span.estimate{font-size:.6em;vertical-align:middle;background:#fff4e0;"
    "border:1px solid #e69500;border-radius:3px;padding:0 .4em;text-transform:uppercase}";

static void dt(FILE *f, const char *term, const char *value)
{
    fprintf(f, "<dt>%s</dt><dd>", term);
    report_put_html(f, value);
    fputs("</dd>\n", f);
}

static void put_run(FILE *f, const char *log_path, const struct report_info *in,
                    const struct report_summary *s)
{
    char buf[256];
    fputs("<dl class=\"run\">\n", f);
    dt(f, "log", log_path);
    dt(f, "program", in->exe ? in->exe : "(unknown)");
    if (in->has_pid) {
        snprintf(buf, sizeof buf, "%lld", (long long)in->pid);
        dt(f, "pid", buf);
    }
    dt(f, "host", in->host ? in->host : "(unknown)");
    dt(f, "mode", in->mode ? in->mode : "(absent)");
    dt(f, "CUPTI", in->cupti ? in->cupti : "(absent)");
    if (in->has_start) {
        time_t t = (time_t)(in->start_unix_ms / 1000);
        struct tm tm;
        if (gmtime_r(&t, &tm) &&
            strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm))
            dt(f, "started", buf);
    }
    snprintf(buf, sizeof buf, "%lld decisions, %lld activity lines (%lld "
             "matched no decision), %lld unknown lines",
             (long long)in->decisions, (long long)in->activity_lines,
             (long long)in->orphan_activities, (long long)in->unknown_lines);
    dt(f, "lines", buf);
    if (in->footers) {
        snprintf(buf, sizeof buf, "%lld records, %lld dropped, %lld activities, "
                 "%lld joined late", (long long)in->f_records,
                 (long long)in->f_dropped, (long long)in->f_activities,
                 (long long)in->f_unjoined);
        dt(f, "footer", buf);
    }
    dt(f, "topo table", s->topo && s->topo->loaded ? s->topo->path
                                                   : "none (estimates from the run's "
                                                     "own records)");
    fputs("</dl>\n", f);
    if (in->cut_short && in->log_cut) {
        fputs("<p class=\"note\" id=\"cut-short\">Cut short: ", f);
        report_put_html(f, report_cut_words(in));
        fprintf(f, ": the shim could not write the log past line %lld. The figures cover "
                "what was written.</p>\n", (long long)in->log_cut_line);
    } else if (in->cut_short) {
        fputs("<p class=\"note\" id=\"cut-short\">No footer: the log was cut short "
              "(crash, _exit or kill). The figures cover what was written.</p>\n", f);
    } else if (in->log_cut) {
        fputs("<p class=\"note\" id=\"log-cut\">", f);
        report_put_html(f, report_cut_words(in));
        fprintf(f, ": the shim could not write part of the log (from line %lld). The "
                "figures miss what it could not write.</p>\n", (long long)in->log_cut_line);
    }
    if (in->torn_tail)
        fputs("<p class=\"note\">The last line was cut mid-write and is "
              "ignored.</p>\n", f);
    if (in->bad_lines) {
        fprintf(f, "<p class=\"note\" id=\"bad-lines\">%lld unreadable line(s) skipped "
                "(the first: line %lld: ", (long long)in->bad_lines,
                (long long)in->first_bad_line);
        report_put_html(f, in->first_bad_why);
        fputs("). The figures miss them.</p>\n", f);
    }
    if (in->f_dropped)
        fprintf(f, "<p class=\"note\" id=\"dropped\">%lld decision(s) were dropped "
                "(P2PSHIM_RECORD_LIMIT): the figures miss them.</p>\n",
                (long long)in->f_dropped);
    if (in->runs > 1)
        fprintf(f, "<p class=\"note\" id=\"runs\">This log holds %d runs (its path "
                "was reused); the figures are the last run's.</p>\n", in->runs);
    if (in->segments > in->processes)
        fprintf(f, "<p class=\"note\">%d process images (exec) wrote to this "
                "log; the header shown is the first one's.</p>\n",
                in->segments - in->processes + 1);
    if (in->processes > 1)
        fprintf(f, "<p class=\"note\">%d processes (forked children sharing the "
                "path) wrote to this log; the header shown is the first one's.</p>\n",
                in->processes);
    if (s->saturated || in->saturated)
        fputs("<p class=\"note\" id=\"saturated\">Some figures reached the 64-bit "
              "limit (9223372036854775807) and are shown at that limit.</p>\n", f);
}

static void cell_n(FILE *f, int64_t v)
{
    fprintf(f, "<td class=\"n\">%lld</td>", (long long)v);
}

static void cell_s(FILE *f, const char *v)
{
    fputs("<td class=\"n\">", f);
    report_put_html(f, v);
    fputs("</td>", f);
}

static void pair_id(FILE *f, const struct report_pair *p, const char *special)
{
    if (special)
        fprintf(f, "pair-%s", special);
    else
        fprintf(f, "pair-%d-%d", p->src, p->dst);
}

static void put_row(FILE *f, const struct report_pair *p, const char *special)
{
    char b[32], g[32];
    fputs(special && special[0] == 't' ? "<tr class=\"total\" id=\"" : "<tr id=\"", f);
    pair_id(f, p, special);
    fputs("\"><td>", f);
    if (special)
        fputs(special, f);
    else
        fprintf(f, "%d &rarr; %d", p->src, p->dst);
    fputs("</td>", f);
    cell_n(f, p->copies);
    fprintf(f, "<td class=\"n\">%s<br><small>%lld B</small></td>",
            report_fmt_bytes(p->bytes, b, sizeof b), (long long)p->bytes);
    for (int i = 0; i < REPORT_NPATHS; i++)
        cell_n(f, p->n[i]);
    cell_s(f, report_fmt_gbps(report_gbps(p->act_bytes[0], p->act_ns[0]), g, sizeof g));
    cell_s(f, report_fmt_gbps(report_gbps(p->act_bytes[1], p->act_ns[1]), g, sizeof g));
    if (p->candidates == 0)
        cell_s(f, "-");
    else if (!p->saved_n)
        cell_s(f, "no estimate");
    else
        cell_s(f, report_fmt_ns(p->saved_ns, b, sizeof b));
    fputs("</tr>\n", f);
}

static void put_pairs(FILE *f, const struct report_summary *s)
{
    fputs("<h2>Traffic by device pair</h2>\n<p>Path as CUPTI saw it (PTOP: peer; "
          "DTOH+HTOD: staged), else as the decision implies. GB/s: bytes over "
          "CUPTI time of the timed copies; for staged copies the topo table's "
          "measured figure where it has one (CUPTI's records of a staged copy "
          "time one staging chunk).</p>\n<table id=\"pairs\"><thead><tr>"
          "<th>pair</th><th>copies</th><th>bytes</th><th>peer</th><th>staged</th>"
          "<th>other</th><th>peer GB/s</th><th>staged GB/s</th>"
          "<th>P2P would save</th></tr></thead><tbody>\n", f);
    for (int i = 0; i < s->npairs; i++)
        put_row(f, &s->pairs[i], NULL);
    put_row(f, &s->total, "total");
    put_row(f, &s->local, "local");
    fputs("</tbody></table>\n<p><small>local: copies that are not cross-GPU (host "
          "memory, same device, unknown pointers).</small></p>\n", f);
}

static void put_reasons(FILE *f, const struct report_summary *s)
{
    const char **names;
    int nnames = report_log_names(s->log, &names);
    fputs("<h2>Decisions by reason</h2>\n<table id=\"reasons\"><thead><tr>"
          "<th>pair</th><th>reason</th><th>copies</th></tr></thead><tbody>\n", f);
    for (int i = 0; i <= s->npairs; i++) {
        const struct report_pair *p = i < s->npairs ? &s->pairs[i] : &s->local;
        for (int r = 0; r < nnames; r++) {
            if (!p->reasons[r])
                continue;
            if (i < s->npairs)
                fprintf(f, "<tr><td>%d &rarr; %d</td><td>", p->src, p->dst);
            else
                fputs("<tr><td>local</td><td>", f);
            report_put_html(f, names[r]);
            fputs("</td>", f);
            cell_n(f, p->reasons[r]);
            fputs("</tr>\n", f);
        }
    }
    fputs("</tbody></table>\n<p>Actions: ", f);
    const char *sep = "";
    for (int r = 0; r < nnames; r++) {
        if (!s->actions[r])
            continue;
        fputs(sep, f);
        report_put_html(f, names[r]);
        fprintf(f, " %lld", (long long)s->actions[r]);
        sep = ", ";
    }
    fputs("</p>\n", f);
}

static void put_savings(FILE *f, const struct report_summary *s)
{
    char a[32], b[32], c[32];
    fputs("<h2>Estimated P2P savings</h2>\n<p>For staged copies (CUPTI saw "
          "DTOH+HTOD, or would-upgrade without activity): staged time (CUPTI's, "
          "else bytes / the topo table's staged GB/s) minus bytes / peer GB/s "
          "(the topo table's, else the best PTOP GB/s of the pair in this "
          "log).</p>\n", f);
    if (s->total.candidates == 0) {
        fputs("<p id=\"no-savings\">No staged cross-GPU copy.</p>\n", f);
        return;
    }
    fputs("<table id=\"savings\"><thead><tr><th>pair</th><th>staged copies</th>"
          "<th>timed by CUPTI</th><th>staged time</th><th>peer GB/s</th>"
          "<th>peer time</th><th>saves</th><th>without estimate</th></tr>"
          "</thead><tbody>\n", f);
    for (int i = 0; i < s->npairs; i++) {
        const struct report_pair *p = &s->pairs[i];
        int64_t cand = p->candidates;
        if (!cand)
            continue;
        fprintf(f, "<tr id=\"save-%d-%d\"><td>%d &rarr; %d</td>", p->src, p->dst,
                p->src, p->dst);
        cell_n(f, cand);
        cell_n(f, p->cand_meas_n);
        if (p->saved_n) {
            cell_s(f, report_fmt_ns(p->staged_ns, a, sizeof a));
            fprintf(f, "<td class=\"n\">%s <small>(%s)</small></td>",
                    report_fmt_gbps(p->peer_gbps, b, sizeof b), p->peer_from);
            cell_s(f, report_fmt_ns(p->peer_ns, a, sizeof a));
            cell_s(f, report_fmt_ns(p->saved_ns, c, sizeof c));
        } else {
            fputs("<td colspan=\"4\">no estimate</td>", f);
        }
        fprintf(f, "<td>%lld", (long long)p->unest_n);
        if (p->unest_n) {
            fputs(" <small>(", f);
            report_put_html(f, p->no_estimate);
            fputs(")</small>", f);
        }
        fputs("</td></tr>\n", f);
    }
    fprintf(f, "<tr class=\"total\" id=\"save-total\"><td>total</td>"
            "<td class=\"n\">%lld</td><td class=\"n\">%lld</td>"
            "<td colspan=\"3\"></td><td class=\"n\">%s</td><td>%lld</td></tr>\n"
            "</tbody></table>\n",
            (long long)(s->total.candidates),
            (long long)s->total.cand_meas_n,
            s->total.saved_n ? report_fmt_ns(s->total.saved_ns, c, sizeof c)
                             : "no estimate",
            (long long)s->total.unest_n);
}

/* The header: every process of the job by rank, pid, host and program
 * (the first REPORT_HTML_PROCS; a count of the others). */
#define REPORT_HTML_PROCS 64
static void put_job(FILE *f, const struct report_summary *s)
{
    int n = report_log_file_count(s->log);
    fprintf(f, "<header id=\"job\"><h1>p2pshim report</h1>\n<p>%d process%s:</p>"
            "<ul id=\"job-procs\">\n", n, n == 1 ? "" : "es");
    for (int i = 0; i < n && i < REPORT_HTML_PROCS; i++) {
        const struct report_info *in = report_log_file(s->log, i);
        fprintf(f, "<li id=\"job-proc-%d\">", i);
        if (in->rank >= 0)
            fprintf(f, "<b>rank %lld</b>", (long long)in->rank);
        else
            fputs("<b>no rank</b>", f);
        if (in->has_pid)
            fprintf(f, " &middot; pid %lld", (long long)in->pid);
        fputs(" &middot; ", f);
        report_put_html(f, in->host ? in->host : "(unknown host)");
        fputs(" &middot; <code>", f);
        const char *exe = in->exe ? strrchr(in->exe, '/') : NULL;
        report_put_html(f, exe ? exe + 1 : in->exe ? in->exe : "(unknown program)");
        fputs("</code></li>\n", f);
    }
    if (n > REPORT_HTML_PROCS)
        fprintf(f, "<li>and %d more (the Processes table)</li>\n", n - REPORT_HTML_PROCS);
    fputs("</ul></header>\n", f);
}

/* The verdict card: its first sentence, the saving as time and as a share
 * of the wall time, what it rests on, then the verdict's other lines. */
static void put_verdict(FILE *f, const struct report_summary *s)
{
    char *text = NULL, t[32], w[32];
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (m) {
        report_verdict_write(m, "", s);
        fclose(m);
    }
    char *rest = text ? strchr(text, '\n') : NULL;
    if (rest)
        *rest++ = '\0';
    fputs("<section id=\"verdict\" class=\"card\"><h2>Verdict</h2>\n<p class=\"sentence\">", f);
    const char *sentence = text ? text : "";
    if (strncmp(sentence, "verdict: ", 9) == 0)
        sentence += 9;   /* the card's title says it */
    report_put_html(f, sentence);
    fputs("</p>\n<p class=\"saving\">", f);
    if (s->saving_known) {
        fprintf(f, "P2P would save <b id=\"saving\">%s</b>",
                report_fmt_ns(s->saving_ns, t, sizeof t));
        if (s->wall_ns > 0)
            fprintf(f, ", <b id=\"share\">%.1f%%</b> of the run's %s wall time",
                    100.0 * s->saving_ns / (double)s->wall_ns,
                    report_fmt_ns((double)s->wall_ns, w, sizeof w));
        if (s->estimate)
            fputs(" <span class=\"estimate\" id=\"estimate\">estimate</span>", f);
    } else {
        fputs("<span id=\"saving\">no time estimate</span>", f);
    }
    fputs("</p>\n", f);
    if (s->basis[0]) {
        fputs("<p class=\"basis\" id=\"basis\">Basis: ", f);
        report_put_html(f, s->basis);
        fputs("</p>\n", f);
    }
    fputs("<ul class=\"lines\">\n", f);
    for (char *line = rest; line && *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        while (*line == ' ')
            line++;
        /* the saving and its basis are the card's own lines above */
        if (strncmp(line, "P2P would save", 14) != 0 && strncmp(line, "basis:", 6) != 0) {
            fputs("<li>", f);
            report_put_html(f, line);
            fputs("</li>\n", f);
        }
        line = end ? end + 1 : NULL;
    }
    fputs("</ul></section>\n", f);
    free(text);
}

/* One row per process when the report reads several logs. */
static void put_procs(FILE *f, const struct report_summary *s)
{
    int n = report_log_file_count(s->log);
    if (n < 2)
        return;
    char b[32], c[32];
    fputs("<h2>Processes</h2>\n<table id=\"processes\"><thead><tr><th>rank</th><th>pid</th>"
          "<th>host</th><th>copies</th><th>cross-GPU bytes</th><th>staged bytes</th>"
          "<th>candidates</th></tr></thead><tbody>\n", f);
    for (int i = 0; i < n && i < s->nprocs; i++) {
        const struct report_info *in = report_log_file(s->log, i);
        const struct report_proc *p = &s->procs[i];
        fprintf(f, "<tr id=\"proc-%d\"><td>", i);
        if (in->rank >= 0)
            fprintf(f, "%lld", (long long)in->rank);
        else
            fputs("-", f);
        fprintf(f, "</td><td class=\"n\">%lld</td><td>", (long long)in->pid);
        report_put_html(f, in->host ? in->host : "?");
        fputs("</td>", f);
        cell_n(f, p->copies);
        fprintf(f, "<td class=\"n\">%s<br><small>%lld B</small></td>",
                report_fmt_bytes(p->cross_bytes, b, sizeof b), (long long)p->cross_bytes);
        cell_s(f, report_fmt_bytes(p->staged_bytes, c, sizeof c));
        cell_n(f, p->candidates);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

int report_html_write(FILE *f, const char *log_path,
                      const struct report_summary *s)
{
    const struct report_info *in = report_log_info(s->log);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
          "'none'; style-src 'unsafe-inline'\">\n<title>p2pshim report: ", f);
    report_put_html(f, log_path);
    fprintf(f, "</title>\n<style>%s</style></head><body>\n", style);
    put_job(f, s);
    put_verdict(f, s);
    put_run(f, log_path, in, s);
    put_procs(f, s);
    put_pairs(f, s);
    fputs("<h2>Traffic matrix</h2>\n", f);
    report_svg_heatmap(f, s);
    report_matrix_html(f, s);
    fputs("<h2>Traffic over time</h2>\n", f);
    report_svg_timeline(f, s);
    fputs("<h2>Achieved bandwidth against copy size</h2>\n", f);
    report_svg_bandwidth(f, s);
    put_savings(f, s);
    put_reasons(f, s);
    char t[32];
    fprintf(f, "<h2>Shim events</h2>\n<p id=\"events\">%lld peer enables (%s), "
            "%lld failed.</p>\n", (long long)s->peer_enables,
            report_fmt_ns((double)s->enable_ns, t, sizeof t),
            (long long)s->peer_enable_failures);
    if (s->nbounces > 0) {
        fputs("<h2>GPU to GPU through host memory</h2>\n<table id=\"bounces\">"
              "<tr><th>pair</th><th>D2H then H2D</th><th>bytes</th><th></th></tr>\n", f);
        for (int i = 0; i < s->nbounces; i++) {
            char b[32];
            fprintf(f, "<tr><td>%d&rarr;%d</td><td>%lld</td><td>%s</td><td>%s</td></tr>\n",
                    s->bounces[i].from, s->bounces[i].to, (long long)s->bounces[i].pairs,
                    report_fmt_bytes(s->bounces[i].bytes, b, sizeof b),
                    s->bounces[i].served ? "bounced: the H2D came from a snapshot, peer to peer"
                                         : "candidates: upgrade mode would bounce them");
        }
        fputs("</table>\n", f);
    }
    fputs("<footer><small>p2pshim " P2PSHIM_VERSION " report; run logs written by ", f);
    report_put_html(f, in->version ? in->version : "an earlier p2pshim");
    fputs("</small></footer>\n</body></html>\n", f);
    return ferror(f) ? -1 : 0;
}
