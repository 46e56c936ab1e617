/* The terminal summary. Two parts: the human one (aligned columns, units),
 * and a data part for scripts and tests: lines "@ {json}" with stable keys,
 * exact integers (bytes, ns) and unrounded GB/s. Strings from the log are
 * shown with their control characters replaced (report_put_plain) in the
 * human part and JSON-escaped (ASCII only) in the data part. */
#define _GNU_SOURCE
#include <jansson.h>
#include <string.h>
#include <time.h>

#include "report_internal.h"

static const char *const path_names[REPORT_NPATHS] = {"peer", "staged", "other"};

static void put_run(FILE *f, const char *log_path, const struct report_info *in,
                    const struct report_summary *s)
{
    fputs("p2pshim report: ", f);
    report_put_plain(f, log_path);
    fputs("\n  program   ", f);
    report_put_plain(f, in->exe ? in->exe : "(unknown)");
    if (in->has_pid)
        fprintf(f, " (pid %lld)", (long long)in->pid);
    if (in->host) {
        fputs(" on ", f);
        report_put_plain(f, in->host);
    }
    fputs("\n  mode      ", f);
    report_put_plain(f, in->mode ? in->mode : "(absent)");
    fputs("; CUPTI ", f);
    report_put_plain(f, in->cupti ? in->cupti : "(absent)");
    if (in->has_start) {
        time_t t = (time_t)(in->start_unix_ms / 1000);
        struct tm tm;
        char when[64];
        if (gmtime_r(&t, &tm) && strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm))
            fprintf(f, "\n  started   %s", when);
    }
    fprintf(f, "\n  log       %lld decisions, %lld activity lines (%lld matched no "
            "decision), %lld unknown lines",
            (long long)in->decisions, (long long)in->activity_lines,
            (long long)in->orphan_activities, (long long)in->unknown_lines);
    if (in->footers)
        fprintf(f, "\n  footer    %lld records, %lld dropped (buffer cap), %lld "
                "activities, %lld joined late",
                (long long)in->f_records, (long long)in->f_dropped,
                (long long)in->f_activities, (long long)in->f_unjoined);
    if (s->topo && s->topo->loaded) {
        fputs("\n  topo      ", f);
        report_put_plain(f, s->topo->path);
    } else {
        fputs("\n  topo      none (estimates from the run's own records)", f);
    }
    fputc('\n', f);
    if (in->cut_short && in->log_cut)
        fprintf(f, "  note: cut short: %s: the shim could not write the log past line %lld; "
                "the figures cover what was written\n", report_cut_words(in),
                (long long)in->log_cut_line);
    else if (in->cut_short)
        fputs("  note: no footer: the log was cut short (crash, _exit or kill); "
              "the figures cover what was written\n", f);
    else if (in->log_cut)
        fprintf(f, "  note: %s: the shim could not write part of the log (from line %lld); "
                "the figures miss what it could not write\n", report_cut_words(in),
                (long long)in->log_cut_line);
    if (in->torn_tail)
        fputs("  note: the last line was cut mid-write and is ignored\n", f);
    if (in->bad_lines)
        fprintf(f, "  note: %lld unreadable line(s) skipped (the first: line %lld: %s); "
                "the figures miss them\n", (long long)in->bad_lines,
                (long long)in->first_bad_line, in->first_bad_why);
    if (in->f_dropped || s->dropped_events)
        fprintf(f, "  note: %lld decision(s) were dropped (P2PSHIM_RECORD_LIMIT): "
                "the figures miss them\n", (long long)in->f_dropped);
    if (in->runs > 1)
        fprintf(f, "  note: this log holds %d runs (its path was reused); the figures "
                "are the last run's (%lld earlier lines not read)\n", in->runs,
                (long long)in->earlier_run_lines);
    if (in->segments > in->processes)
        fprintf(f, "  note: %d process images (exec) wrote to this log; "
                "header figures are the first one's\n",
                in->segments - in->processes + 1);
    if (in->processes > 1)
        fprintf(f, "  note: %d processes (forked children sharing the path) wrote to "
                "this log; header figures are the first one's\n", in->processes);
    if (s->saturated || in->saturated)
        fputs("  note: some figures reached the 64-bit limit (9223372036854775807) "
              "and are shown at that limit\n", f);
    if (s->oom)
        fputs("  note: out of memory: some copies are missing\n", f);
}

static const char *saved_cell(const struct report_pair *p, char *buf, size_t len)
{
    if (p->candidates == 0)
        return "-";
    if (p->saved_n == 0)
        return "no estimate";
    return report_fmt_ns(p->saved_ns, buf, len);
}

static void put_row(FILE *f, const char *name, const struct report_pair *p,
                    bool local)
{
    char b[32], g1[32], g2[32], sv[32];
    fprintf(f, "  %-8s %8lld %11s", name, (long long)p->copies,
            report_fmt_bytes(p->bytes, b, sizeof b));
    if (local) {
        fputs("   (not cross-GPU: host memory, same device, unknown pointers)\n", f);
        return;
    }
    fprintf(f, " %7lld %7lld %7lld %10s %12s %15s\n", (long long)p->n[0],
            (long long)p->n[1], (long long)p->n[2],
            report_fmt_gbps(report_gbps(p->act_bytes[0], p->act_ns[0]), g1, sizeof g1),
            report_fmt_gbps(report_gbps(p->act_bytes[1], p->act_ns[1]), g2, sizeof g2),
            saved_cell(p, sv, sizeof sv));
}

static void put_reasons(FILE *f, const char *name, const struct report_pair *p,
                        const char **names, int nnames)
{
    fprintf(f, "  %-8s ", name);
    const char *sep = "";
    for (int i = 0; i < nnames; i++) {
        if (!p->reasons[i])
            continue;
        fputs(sep, f);
        report_put_plain(f, names[i]);
        fprintf(f, " %lld", (long long)p->reasons[i]);
        sep = ", ";
    }
    fputc('\n', f);
}

static void put_saving(FILE *f, const char *name, const struct report_pair *p)
{
    char a[32], b[32], c[32], g[32];
    int64_t cand = p->candidates;
    if (!cand)
        return;
    fprintf(f, "  %-8s %lld staged copies (%lld timed by CUPTI)", name,
            (long long)cand, (long long)p->cand_meas_n);
    if (p->saved_n)
        fprintf(f, ": staged %s, peer at %s GB/s (%s) %s: saves %s",
                report_fmt_ns(p->staged_ns, a, sizeof a),
                report_fmt_gbps(p->peer_gbps, g, sizeof g), p->peer_from,
                report_fmt_ns(p->peer_ns, b, sizeof b),
                report_fmt_ns(p->saved_ns, c, sizeof c));
    if (p->unest_n)
        fprintf(f, "%s%lld without estimate (%s)", p->saved_n ? "; " : ": ",
                (long long)p->unest_n, p->no_estimate);
    fputc('\n', f);
}

/* One row per log (process) when the report reads several: rank, pid,
 * host, copies and bytes; then the GPUs by host and UUID. */
static void put_procs(FILE *f, const struct report_summary *s)
{
    int n = report_log_file_count(s->log);
    if (n < 2 && s->ngpus == 0)
        return;
    char b[32], c[32], d[32];
    if (n >= 2) {
        fprintf(f, "\nProcesses\n  %-6s %8s %-16s %8s %11s %11s %11s\n", "rank", "pid",
                "host", "copies", "cross-GPU", "staged", "candidates");
        for (int i = 0; i < n && i < s->nprocs; i++) {
            const struct report_info *in = report_log_file(s->log, i);
            const struct report_proc *p = &s->procs[i];
            char rank[24] = "-";
            if (in->rank >= 0)
                snprintf(rank, sizeof rank, "%lld", (long long)in->rank);
            fprintf(f, "  %-6s %8lld %-16.16s %8lld %11s %11s %11lld\n", rank,
                    (long long)in->pid, in->host ? in->host : "?", (long long)p->copies,
                    report_fmt_bytes(p->cross_bytes, b, sizeof b),
                    report_fmt_bytes(p->staged_bytes, c, sizeof c), (long long)p->candidates);
        }
        (void)d;
    }
    bool named = false;
    for (int i = 0; i < s->ngpus; i++)
        named = named || (s->gpus[i].used && s->gpus[i].uuid[0]);
    if (!named)
        return;
    fputs("\nGPUs (pairs name them by these numbers)\n", f);
    for (int i = 0; i < s->ngpus; i++) {
        const struct report_gpu *g = &s->gpus[i];
        if (!g->used)
            continue;
        fprintf(f, "  GPU %-3d %-16.16s %s %s ", i, g->host, g->uuid[0] ? g->uuid : "-",
                g->pci[0] ? g->pci : "-");
        report_put_plain(f, g->name);
        fputc('\n', f);
    }
}

static json_t *proc_json(const struct report_info *in, const struct report_proc *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "record", json_string("process"));
    json_object_set_new(o, "pid", in->has_pid ? json_integer(in->pid) : json_null());
    json_object_set_new(o, "rank", in->rank >= 0 ? json_integer(in->rank) : json_null());
    json_object_set_new(o, "host", in->host ? json_string(in->host) : json_null());
    json_object_set_new(o, "copies", json_integer(p->copies));
    json_object_set_new(o, "bytes", json_integer(p->bytes));
    json_object_set_new(o, "cross_copies", json_integer(p->cross_copies));
    json_object_set_new(o, "cross_bytes", json_integer(p->cross_bytes));
    json_object_set_new(o, "peer_bytes", json_integer(p->peer_bytes));
    json_object_set_new(o, "staged_bytes", json_integer(p->staged_bytes));
    json_object_set_new(o, "candidates", json_integer(p->candidates));
    return o;
}

/* ---- the data part ---- */

static json_t *gbps_or_null(int64_t bytes, int64_t ns)
{
    return ns > 0 ? json_real(report_gbps(bytes, ns)) : json_null();
}

static json_t *pair_json(const char *record, const struct report_pair *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "record", json_string(record));
    if (p->src >= 0) {
        json_object_set_new(o, "src", json_integer(p->src));
        json_object_set_new(o, "dst", json_integer(p->dst));
    }
    json_object_set_new(o, "copies", json_integer(p->copies));
    json_object_set_new(o, "bytes", json_integer(p->bytes));
    for (int i = 0; i < REPORT_NPATHS; i++) {
        char k[32];
        json_object_set_new(o, path_names[i], json_integer(p->n[i]));
        snprintf(k, sizeof k, "%s_bytes", path_names[i]);
        json_object_set_new(o, k, json_integer(p->b[i]));
    }
    json_object_set_new(o, "by_activity", json_integer(p->by_activity));
    json_object_set_new(o, "peer_gbps", gbps_or_null(p->act_bytes[0], p->act_ns[0]));
    json_object_set_new(o, "staged_gbps", gbps_or_null(p->act_bytes[1], p->act_ns[1]));
    json_object_set_new(o, "timed_peer", json_integer(p->act_n[0]));
    json_object_set_new(o, "timed_staged", json_integer(p->act_n[1]));
    json_object_set_new(o, "best_ptop_gbps", p->best_ptop_gbps > 0
                        ? json_real(p->best_ptop_gbps) : json_null());
    json_object_set_new(o, "candidates",
                        json_integer(p->candidates));
    json_object_set_new(o, "candidates_timed", json_integer(p->cand_meas_n));
    json_object_set_new(o, "estimated", json_integer(p->saved_n));
    json_object_set_new(o, "unestimated", json_integer(p->unest_n));
    json_object_set_new(o, "saved_ns", p->saved_n ? json_real(p->saved_ns)
                                                  : json_null());
    if (p->peer_from) {
        json_object_set_new(o, "est_peer_gbps", json_real(p->peer_gbps));
        json_object_set_new(o, "est_peer_from", json_string(p->peer_from));
    }
    return o;
}

static void put_data(FILE *f, json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII |
                                    JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12))
                : NULL;
    if (s)
        fprintf(f, "@ %s\n", s);
    free(s);
    json_decref(o);
}

static json_t *str_or_null(const char *s)
{
    json_t *v = s ? json_string(s) : NULL;
    return v ? v : json_null();
}

static void put_data_part(FILE *f, const struct report_summary *s,
                          const struct report_info *in, const char **names,
                          int nnames)
{
    fputs("\nData (after \"@ \", one JSON object per line; keys are stable)\n", f);
    json_t *o = json_object();
    json_object_set_new(o, "record", json_string("run"));
    json_object_set_new(o, "mode", str_or_null(in->mode));
    json_object_set_new(o, "cupti", str_or_null(in->cupti));
    json_object_set_new(o, "exe", str_or_null(in->exe));
    json_object_set_new(o, "host", str_or_null(in->host));
    json_object_set_new(o, "pid", in->has_pid ? json_integer(in->pid) : json_null());
    json_object_set_new(o, "segments", json_integer(in->segments));
    json_object_set_new(o, "runs", json_integer(in->runs));
    json_object_set_new(o, "processes", json_integer(in->processes));
    json_object_set_new(o, "saturated", json_boolean(s->saturated || in->saturated));
    json_object_set_new(o, "footer", json_boolean(in->footers > 0));
    json_object_set_new(o, "cut_short", json_boolean(in->cut_short));
    json_object_set_new(o, "torn_tail", json_boolean(in->torn_tail));
    json_object_set_new(o, "cut_reason", in->log_cut ? json_string(in->log_cut_why) : json_null());
    json_object_set_new(o, "bad_lines", json_integer(in->bad_lines));
    json_object_set_new(o, "first_bad_line",
                        in->bad_lines ? json_integer(in->first_bad_line) : json_null());
    json_object_set_new(o, "decisions", json_integer(in->decisions));
    json_object_set_new(o, "activity_lines", json_integer(in->activity_lines));
    json_object_set_new(o, "orphan_activities", json_integer(in->orphan_activities));
    json_object_set_new(o, "unknown_lines", json_integer(in->unknown_lines));
    json_object_set_new(o, "dropped", json_integer(in->f_dropped));
    json_object_set_new(o, "records", json_integer(in->f_records));
    json_object_set_new(o, "unjoined", json_integer(in->f_unjoined));
    json_object_set_new(o, "topo", str_or_null(s->topo && s->topo->loaded
                                               ? s->topo->path : NULL));
    put_data(f, o);
    int nfiles = report_log_file_count(s->log);
    for (int i = 0; nfiles > 1 && i < nfiles && i < s->nprocs; i++)
        put_data(f, proc_json(report_log_file(s->log, i), &s->procs[i]));
    for (int i = 0; i < s->npairs; i++)
        put_data(f, pair_json("pair", &s->pairs[i]));
    for (int h = 0; h < s->ngpus; h++) {
        json_t *m = report_matrix_data(s, h);
        if (m)
            put_data(f, m);
    }
    put_data(f, pair_json("total", &s->total));
    put_data(f, pair_json("local", &s->local));
    for (int i = -1; i < s->npairs; i++) {
        const struct report_pair *p = i < 0 ? &s->local : &s->pairs[i];
        for (int r = 0; r < nnames; r++) {
            if (!p->reasons[r])
                continue;
            o = json_pack("{s:s, s:i, s:i, s:s, s:I}", "record", "reason",
                          "src", p->src, "dst", p->dst, "reason", names[r],
                          "count", (json_int_t)p->reasons[r]);
            put_data(f, o);
        }
    }
    for (int r = 0; r < nnames; r++)
        if (s->actions[r])
            put_data(f, json_pack("{s:s, s:s, s:I}", "record", "action",
                                  "action", names[r], "count",
                                  (json_int_t)s->actions[r]));
    put_data(f, json_pack("{s:s, s:I, s:I, s:I, s:I}", "record", "events",
                          "peer_enable", (json_int_t)s->peer_enables,
                          "peer_enable_failed", (json_int_t)s->peer_enable_failures,
                          "enable_ns", (json_int_t)s->enable_ns,
                          "dropped", (json_int_t)s->dropped_events));
    for (int i = 0; i < s->nbounces; i++)
        put_data(f, json_pack("{s:s, s:i, s:i, s:I, s:I}", "record",
                              s->bounces[i].served ? "bounces" : "bounce-candidates", "src",
                              s->bounces[i].from, "dst", s->bounces[i].to, "pairs",
                              (json_int_t)s->bounces[i].pairs, "bytes",
                              (json_int_t)s->bounces[i].bytes));
}

int report_text_write(FILE *f, const char *log_path,
                      const struct report_summary *s)
{
    const struct report_info *in = report_log_info(s->log);
    const char **names;
    int nnames = report_log_names(s->log, &names);
    char name[40];

    put_run(f, log_path, in, s);
    fputc('\n', f);
    report_verdict_write(f, "", s);
    put_procs(f, s);
    fputs("\nTraffic by device pair (path: as CUPTI saw it, else by the decision)\n", f);
    fprintf(f, "  %-8s %8s %11s %7s %7s %7s %10s %12s %15s\n", "pair", "copies",
            "bytes", "peer", "staged", "other", "peer GB/s", "staged GB/s",
            "P2P would save");
    for (int i = 0; i < s->npairs; i++)
        put_row(f, report_fmt_pair(s->pairs[i].src, s->pairs[i].dst, name,
                                   sizeof name), &s->pairs[i], false);
    put_row(f, "total", &s->total, false);
    put_row(f, "local", &s->local, true);
    report_matrix_text(f, s);

    fputs("\nDecisions by reason\n", f);
    for (int i = 0; i < s->npairs; i++)
        put_reasons(f, report_fmt_pair(s->pairs[i].src, s->pairs[i].dst, name,
                                       sizeof name), &s->pairs[i], names, nnames);
    if (s->local.copies)
        put_reasons(f, "local", &s->local, names, nnames);
    struct report_pair acts = {0};
    for (int i = 0; i < nnames; i++)
        acts.reasons[i] = s->actions[i];
    put_reasons(f, "actions", &acts, names, nnames);

    fputs("\nP2P savings estimate (staged copies: CUPTI saw DTOH+HTOD, or "
          "would-upgrade without activity)\n", f);
    if (s->total.candidates == 0)
        fputs("  none: no staged cross-GPU copy\n", f);
    for (int i = 0; i < s->npairs; i++)
        put_saving(f, report_fmt_pair(s->pairs[i].src, s->pairs[i].dst, name,
                                      sizeof name), &s->pairs[i]);
    if (s->npairs > 1 && s->total.candidates) {
        char t[32];
        fprintf(f, "  %-8s saves %s on %lld copies; %lld without estimate\n",
                "total", report_fmt_ns(s->total.saved_ns, t, sizeof t),
                (long long)s->total.saved_n, (long long)s->total.unest_n);
    }
    char t[32];
    fprintf(f, "\nShim events: %lld peer enables (%s), %lld failed\n",
            (long long)s->peer_enables, report_fmt_ns((double)s->enable_ns, t, sizeof t),
            (long long)s->peer_enable_failures);
    if (s->nbounces > 0) {
        fprintf(f, "\nGPU to GPU through host memory (a D2H, then an H2D from the same "
                   "buffer)\n");
        for (int i = 0; i < s->nbounces; i++) {
            char b[32];
            fprintf(f, "  %d->%d  %lld pairs, %s  %s\n", s->bounces[i].from, s->bounces[i].to,
                    (long long)s->bounces[i].pairs,
                    report_fmt_bytes(s->bounces[i].bytes, b, sizeof b),
                    s->bounces[i].served ? "bounced: the H2D came from a snapshot, peer to peer"
                                         : "candidates: upgrade mode would bounce them");
        }
    }
    put_data_part(f, s, in, names, nnames);
    return ferror(f) ? -1 : 0;
}

/* ---- the verdict: the answer first ---- */

/* One line per GPU pair with D2H-then-H2D candidates, with the time a peer
 * copy would save and the bandwidth it was estimated at. Returns the
 * candidates. */
static int64_t put_bounce_verdicts(FILE *f, const char *prefix, const struct report_summary *s)
{
    int64_t pairs = 0;
    char b[32], t[32], g1[32], g2[32];
    for (int i = 0; i < s->nbounces; i++) {
        const struct report_bounce *x = &s->bounces[i];
        if (x->served)
            continue;
        pairs += x->pairs;
        fprintf(f, "%s  GPU %d -> GPU %d through host memory: %lld D2H-then-H2D candidates, %s",
                prefix, x->from, x->to, (long long)x->pairs,
                report_fmt_bytes(x->bytes, b, sizeof b));
        if (x->estimated)
            fprintf(f, "; a peer copy would save about %s (host round trip at the topo "
                       "table's staged %s GB/s, peer at %s GB/s from the %s)\n",
                    report_fmt_ns(x->saved_ns, t, sizeof t),
                    report_fmt_gbps(x->staged_gbps, g1, sizeof g1),
                    report_fmt_gbps(x->peer_gbps, g2, sizeof g2),
                    strcmp(x->peer_from, "topo") == 0 ? "topo table" : "log's best PTOP copy");
        else if (x->est)
            fprintf(f, "; estimate: a peer copy would save %s (the D2H and H2D at %s GB/s "
                       "together, peer at %s GB/s)\n",
                    report_fmt_ns(x->est_saved_ns, t, sizeof t),
                    report_fmt_gbps(x->est_staged_gbps, g1, sizeof g1),
                    report_fmt_gbps(x->est_peer_gbps, g2, sizeof g2));
        else
            fprintf(f, "; no time estimate (%s)\n", x->no_estimate);
    }
    return pairs;
}

/* Without a saving where copies were staged: the processes whose CUPTI
 * did not run, as what took the timings away. */
static void put_untimed(FILE *f, const char *prefix, const struct report_summary *s,
                        bool staged)
{
    int n = report_log_file_count(s->log), off = 0;
    const char *why = NULL;
    for (int i = 0; i < n; i++) {
        const char *c = report_log_file(s->log, i)->cupti;
        if (c && strcmp(c, "on") != 0) {
            off++;
            why = why ? why : c;
        }
    }
    if (s->saving_known || !staged || off == 0)
        return;
    fprintf(f, "%s  no time estimate: the run has no timings of copies (%d of %d process%s: "
               "CUPTI %s)\n", prefix, off, n, n == 1 ? "" : "es", why);
}

/* The saving the verdict states, as time and as a share of the job's wall
 * time, and what it rests on. */
static void put_saving_line(FILE *f, const char *prefix, const struct report_summary *s)
{
    char t[32], w[32];
    if (!s->saving_known)
        return;
    fprintf(f, "%s  P2P would save %s%s", prefix, s->estimate ? "an estimated " : "about ",
            report_fmt_ns(s->saving_ns, t, sizeof t));
    if (s->wall_ns > 0)
        fprintf(f, ", %.1f%% of the run's %s wall time", 100.0 * s->saving_ns / (double)s->wall_ns,
                report_fmt_ns((double)s->wall_ns, w, sizeof w));
    fputc('\n', f);
    fprintf(f, "%s  basis: %s%s\n", prefix, s->basis,
            s->estimate ? "; measured figures: p2pshim topo --measure" : "");
}

int report_verdict_write(FILE *f, const char *prefix, const struct report_summary *s)
{
    const struct report_info *in = report_log_info(s->log);
    int nfiles = report_log_file_count(s->log);
    bool observe = in->mode && strcmp(in->mode, "observe") == 0;
    char b[32], t[32];
    int64_t staged = s->total.b[REPORT_STAGED], peer = s->total.b[REPORT_PEER];
    fprintf(f, "%sverdict: %d process%s, %lld copies between GPUs (%s)", prefix, nfiles,
            nfiles == 1 ? "" : "es", (long long)s->total.copies,
            report_fmt_bytes(s->total.bytes, b, sizeof b));
    fprintf(f, "; %s over the peer link", report_fmt_bytes(peer, b, sizeof b));
    fprintf(f, ", %s staged through host memory\n", report_fmt_bytes(staged, b, sizeof b));
    for (int i = 0; i < s->npairs; i++) {
        const struct report_pair *p = &s->pairs[i];
        if (!p->b[REPORT_STAGED])
            continue;
        fprintf(f, "%s  GPU %d -> GPU %d: %s staged", prefix, p->src, p->dst,
                report_fmt_bytes(p->b[REPORT_STAGED], b, sizeof b));
        if (p->saved_n)
            fprintf(f, "; time lost at the measured bandwidth: %s",
                    report_fmt_ns(p->saved_ns, t, sizeof t));
        else if (p->est_n)
            fprintf(f, "; estimated time lost: %s (peer at %s GB/s)",
                    report_fmt_ns(p->est_saved_ns, t, sizeof t),
                    report_fmt_gbps(p->est_peer_gbps, b, sizeof b));
        else if (p->candidates)
            fprintf(f, "; no time estimate (%s)", p->no_estimate ? p->no_estimate : "-");
        fputc('\n', f);
    }
    int64_t bounce_pairs = put_bounce_verdicts(f, prefix, s);
    const char **names;
    int nnames = report_log_names(s->log, &names);
    int64_t would_upgrade = 0;
    for (int r = 0; r < nnames; r++)
        if (strcmp(names[r], report_action_name(REPORT_ACTION_WOULD_UPGRADE)) == 0)
            would_upgrade = s->actions[r];
    if (observe && (would_upgrade || bounce_pairs))
        fprintf(f, "%s  upgrade mode would: %s%lld copies over the peer link%s%s\n", prefix,
                "carry ", (long long)would_upgrade,
                bounce_pairs ? ", and bounce the host-memory round trips GPU to GPU" : "",
                s->total.saved_n ? "" : "");
    put_saving_line(f, prefix, s);
    put_untimed(f, prefix, s, staged || bounce_pairs);
    if (would_upgrade)
        fprintf(f, "%s  advice: enable peer access between these GPUs "
                   "(cudaDeviceEnablePeerAccess), or run under p2pshim in upgrade mode\n",
                prefix);
    if (bounce_pairs)
        fprintf(f, "%s  advice: copy GPU to GPU directly (cudaMemcpyPeer) instead of "
                   "through a host buffer, or keep the data on the GPU\n", prefix);
    if (!staged && !bounce_pairs && s->total.copies)
        fprintf(f, "%s  nothing to gain: every copy between GPUs used the peer link\n",
                prefix);
    if (!s->total.copies && !bounce_pairs)
        fprintf(f, "%s  nothing to gain: no copy between GPUs\n", prefix);
    return ferror(f) ? -1 : 0;
}
