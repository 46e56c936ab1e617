/* The report as one JSON document: `p2pshim report --format json`. Its
 * schema is docs/report-schema.json (JSON Schema draft 2020-12); a change
 * that removes or retypes a member raises REPORT_SCHEMA_VERSION, one that
 * adds a member does not. Byte counts and times are exact integers where
 * the summary holds them so, GB/s and estimates unrounded reals; a figure
 * the report cannot give is null, never a made-up 0. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

#ifndef P2PSHIM_VERSION
#error "P2PSHIM_VERSION must be defined by the build"
#endif

static const char *const class_names[LOG_CLASS_COUNT] = {
#define P2PSHIM_CLASS_NAME(id, name) name,
    LOG_REASON_CLASSES(P2PSHIM_CLASS_NAME)
#undef P2PSHIM_CLASS_NAME
};

static json_t *str_or_null(const char *s)
{
    json_t *v = s && s[0] ? json_string(s) : NULL;
    return v ? v : json_null();
}

static json_t *int_or_null(bool known, int64_t v)
{
    return known ? json_integer(v) : json_null();
}

static json_t *real_or_null(bool known, double v)
{
    return known ? json_real(v) : json_null();
}

/* The verdict's sentences as report_verdict_write words them, one string
 * per line, without the indentation. */
static json_t *verdict_lines(const struct report_summary *s)
{
    char *buf = NULL;
    size_t len = 0;
    json_t *lines = json_array();
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return lines;
    report_verdict_write(m, "", s);
    fclose(m);
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        while (*line == ' ')
            line++;
        json_array_append_new(lines, json_string(line));
    }
    free(buf);
    return lines;
}

static json_t *verdict_json(const struct report_summary *s)
{
    int64_t bounce_n = 0, bounce_bytes = 0;
    double bounce_saved = 0;
    bool bounce_est = false, sat = false;
    for (int i = 0; i < s->nbounces; i++) {
        const struct report_bounce *b = &s->bounces[i];
        if (b->served)
            continue;
        bounce_n = report_add(bounce_n, b->pairs, &sat);
        bounce_bytes = report_add(bounce_bytes, b->bytes, &sat);
        if (b->estimated) {
            bounce_saved += b->saved_ns;
            bounce_est = true;
        }
    }
    json_t *o = json_object();
    json_object_set_new(o, "lines", verdict_lines(s));
    json_object_set_new(o, "processes", json_integer(report_log_file_count(s->log)));
    json_object_set_new(o, "copies", json_integer(s->total.copies));
    json_object_set_new(o, "bytes", json_integer(s->total.bytes));
    json_object_set_new(o, "peer_bytes", json_integer(s->total.b[REPORT_PEER]));
    json_object_set_new(o, "staged_bytes", json_integer(s->total.b[REPORT_STAGED]));
    json_object_set_new(o, "saved_ns", real_or_null(s->total.saved_n > 0, s->total.saved_ns));
    json_object_set_new(o, "bounce_candidates", json_integer(bounce_n));
    json_object_set_new(o, "bounce_bytes", json_integer(bounce_bytes));
    json_object_set_new(o, "bounce_saved_ns", real_or_null(bounce_est, bounce_saved));
    json_object_set_new(o, "saving_ns", real_or_null(s->saving_known, s->saving_ns));
    json_object_set_new(o, "wall_ns", int_or_null(s->wall_ns > 0, s->wall_ns));
    json_object_set_new(o, "share", real_or_null(s->saving_known && s->wall_ns > 0,
                                                 s->saving_ns / (double)s->wall_ns));
    json_object_set_new(o, "estimate", json_boolean(s->estimate));
    json_object_set_new(o, "basis", str_or_null(s->basis[0] ? s->basis : NULL));
    return o;
}

/* The copies and bytes of a row by path: peer_copies, peer_bytes, ... */
static void set_paths(json_t *o, const struct report_pair *p)
{
    static const char *const names[REPORT_NPATHS] = {"peer", "staged", "other"};
    for (int i = 0; i < REPORT_NPATHS; i++) {
        char k[32];
        snprintf(k, sizeof k, "%s_copies", names[i]);
        json_object_set_new(o, k, json_integer(p->n[i]));
        snprintf(k, sizeof k, "%s_bytes", names[i]);
        json_object_set_new(o, k, json_integer(p->b[i]));
    }
}

static void set_estimate(json_t *o, const struct report_pair *p)
{
    json_object_set_new(o, "candidates", json_integer(p->candidates));
    json_object_set_new(o, "estimated", json_integer(p->saved_n));
    json_object_set_new(o, "unestimated", json_integer(p->unest_n));
    json_object_set_new(o, "saved_ns", real_or_null(p->saved_n > 0, p->saved_ns));
}

/* A pair's estimate from the run's records (report_price_est.c). */
static void set_run_estimate(json_t *o, const struct report_pair *p)
{
    bool est = p->est_n > 0;
    json_object_set_new(o, "run_estimate",
                        !est ? json_null()
                             : json_pack("{s:I, s:f, s:f, s:f, s:s}", "copies",
                                         (json_int_t)p->est_n, "staged_ns", p->est_staged_ns,
                                         "peer_gbps", p->est_peer_gbps, "saved_ns",
                                         p->est_saved_ns, "peer_from", p->est_peer_from));
}

static json_t *totals_json(const struct report_summary *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "copies", json_integer(s->total.copies));
    json_object_set_new(o, "bytes", json_integer(s->total.bytes));
    set_paths(o, &s->total);
    set_estimate(o, &s->total);
    json_object_set_new(o, "local_copies", json_integer(s->local.copies));
    json_object_set_new(o, "local_bytes", json_integer(s->local.bytes));
    json_object_set_new(o, "peer_enables", json_integer(s->peer_enables));
    json_object_set_new(o, "peer_enable_failures", json_integer(s->peer_enable_failures));
    json_object_set_new(o, "enable_ns", json_integer(s->enable_ns));
    json_object_set_new(o, "dropped", json_integer(s->dropped_events));
    json_object_set_new(o, "saturated", json_boolean(s->saturated));
    return o;
}

static json_t *proc_json(const struct report_summary *s, int i)
{
    const struct report_info *in = report_log_file(s->log, i);
    const struct report_proc *p = &s->procs[i];
    const char **names;
    int nnames = report_log_names(s->log, &names);
    json_t *o = json_object();
    json_object_set_new(o, "host", str_or_null(in->host));
    json_object_set_new(o, "pid", int_or_null(in->has_pid, in->pid));
    json_object_set_new(o, "rank", int_or_null(in->rank >= 0, in->rank));
    json_object_set_new(o, "local_rank", int_or_null(in->local_rank >= 0, in->local_rank));
    json_object_set_new(o, "world_size", int_or_null(in->world_size >= 0, in->world_size));
    json_object_set_new(o, "cuda_visible_devices",
                        in->visible ? json_string(in->visible) : json_null());
    json_object_set_new(o, "p2pshim_version", str_or_null(in->version));
    json_object_set_new(o, "mode", str_or_null(in->mode));
    json_object_set_new(o, "exe", str_or_null(in->exe));
    json_object_set_new(o, "copies", json_integer(p->copies));
    json_object_set_new(o, "bytes", json_integer(p->bytes));
    json_object_set_new(o, "cross_copies", json_integer(p->cross_copies));
    json_object_set_new(o, "cross_bytes", json_integer(p->cross_bytes));
    json_object_set_new(o, "peer_bytes", json_integer(p->peer_bytes));
    json_object_set_new(o, "staged_bytes", json_integer(p->staged_bytes));
    json_object_set_new(o, "candidates", json_integer(p->candidates));
    json_object_set_new(o, "candidate_bytes", json_integer(p->candidate_bytes));
    json_object_set_new(o, "cut_short", json_boolean(in->cut_short));
    json_object_set_new(o, "cut_reason", in->log_cut ? json_string(in->log_cut_why) : json_null());
    json_object_set_new(o, "bad_lines", json_integer(in->bad_lines));
    json_t *by_action = json_object();
    for (int a = 0; a < nnames; a++)
        if (p->action_bytes[a] && report_action_of(names[a]) >= 0)
            json_object_set_new(by_action, names[a], json_integer(p->action_bytes[a]));
    json_object_set_new(o, "bytes_by_action", by_action);
    json_t *by_class = json_object();
    for (int c = 0; c < LOG_CLASS_COUNT; c++)
        json_object_set_new(by_class, class_names[c], json_integer(p->class_bytes[c]));
    json_object_set_new(o, "bytes_by_reason_class", by_class);
    return o;
}

static json_t *gpu_ref(const struct report_summary *s, int index)
{
    const struct report_gpu *g = index >= 0 && index < s->ngpus ? &s->gpus[index] : NULL;
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer(index));
    json_object_set_new(o, "uuid", str_or_null(g ? g->uuid : NULL));
    json_object_set_new(o, "pci", str_or_null(g ? g->pci : NULL));
    return o;
}

static json_t *pair_json(const struct report_summary *s, const struct report_pair *p)
{
    const char **names;
    int nnames = report_log_names(s->log, &names);
    json_t *o = json_object();
    const char *host = p->src >= 0 && p->src < s->ngpus ? s->gpus[p->src].host : NULL;
    json_object_set_new(o, "host", str_or_null(host));
    json_object_set_new(o, "src", gpu_ref(s, p->src));
    json_object_set_new(o, "dst", gpu_ref(s, p->dst));
    json_object_set_new(o, "copies", json_integer(p->copies));
    json_object_set_new(o, "bytes", json_integer(p->bytes));
    set_paths(o, p);
    json_object_set_new(o, "peer_gbps", real_or_null(p->act_ns[REPORT_PEER] > 0,
        report_gbps(p->act_bytes[REPORT_PEER], p->act_ns[REPORT_PEER])));
    json_object_set_new(o, "staged_gbps", real_or_null(p->act_ns[REPORT_STAGED] > 0,
        report_gbps(p->act_bytes[REPORT_STAGED], p->act_ns[REPORT_STAGED])));
    set_estimate(o, p);
    json_object_set_new(o, "est_peer_gbps", real_or_null(p->peer_from != NULL, p->peer_gbps));
    json_object_set_new(o, "est_peer_from", str_or_null(p->peer_from));
    json_object_set_new(o, "no_estimate", str_or_null(p->unest_n ? p->no_estimate : NULL));
    set_run_estimate(o, p);
    json_t *reasons = json_object();
    for (int r = 0; r < nnames; r++)
        if (p->reasons[r])
            json_object_set_new(reasons, names[r], json_integer(p->reasons[r]));
    json_object_set_new(o, "reasons", reasons);
    return o;
}

static json_t *bounce_json(const struct report_summary *s, const struct report_bounce *b)
{
    json_t *o = json_object();
    json_object_set_new(o, "src", gpu_ref(s, b->from));
    json_object_set_new(o, "dst", gpu_ref(s, b->to));
    json_object_set_new(o, "served", json_boolean(b->served));
    json_object_set_new(o, "pairs", json_integer(b->pairs));
    json_object_set_new(o, "bytes", json_integer(b->bytes));
    json_object_set_new(o, "saved_ns", real_or_null(b->estimated, b->saved_ns));
    json_object_set_new(o, "staged_gbps", real_or_null(b->staged_gbps > 0, b->staged_gbps));
    json_object_set_new(o, "peer_gbps", real_or_null(b->peer_gbps > 0, b->peer_gbps));
    json_object_set_new(o, "peer_from", str_or_null(b->peer_from));
    json_object_set_new(o, "no_estimate", str_or_null(b->served ? NULL : b->no_estimate));
    json_object_set_new(o, "est_saved_ns", real_or_null(b->est, b->est_saved_ns));
    json_object_set_new(o, "est_peer_from", str_or_null(b->est ? b->est_peer_from : NULL));
    return o;
}

static json_t *gpus_json(const struct report_summary *s)
{
    json_t *a = json_array();
    for (int i = 0; i < s->ngpus; i++) {
        const struct report_gpu *g = &s->gpus[i];
        if (!g->used)
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "index", json_integer(i));
        json_object_set_new(o, "host", str_or_null(g->host));
        json_object_set_new(o, "uuid", str_or_null(g->uuid));
        json_object_set_new(o, "pci", str_or_null(g->pci));
        json_object_set_new(o, "name", str_or_null(g->name));
        json_object_set_new(o, "ordinal", json_integer(g->ordinal));
        json_array_append_new(a, o);
    }
    return a;
}

/* Per host: its GPUs (table indices, in index order) and the bytes from
 * row to column. */
static json_t *matrix_json(const struct report_summary *s)
{
    json_t *a = json_array();
    for (int h = 0; h < s->ngpus; h++) {
        const struct report_gpu *first = &s->gpus[h];
        bool seen = !first->used;
        for (int k = 0; k < h && !seen; k++)
            seen = s->gpus[k].used && strcmp(s->gpus[k].host, first->host) == 0;
        if (seen)
            continue;
        json_t *gpus = json_array(), *rows = json_array();
        for (int i = h; i < s->ngpus; i++) {
            if (!s->gpus[i].used || strcmp(s->gpus[i].host, first->host) != 0)
                continue;
            json_array_append_new(gpus, json_integer(i));
            json_t *row = json_array();
            for (int j = h; j < s->ngpus; j++)
                if (s->gpus[j].used && strcmp(s->gpus[j].host, first->host) == 0)
                    json_array_append_new(row, json_integer(report_pair_bytes(s, i, j)));
            json_array_append_new(rows, row);
        }
        json_t *o = json_object();
        json_object_set_new(o, "host", str_or_null(first->host));
        json_object_set_new(o, "gpus", gpus);
        json_object_set_new(o, "bytes", rows);
        json_array_append_new(a, o);
    }
    return a;
}

int report_json_write(FILE *f, const char *log_path, const struct report_summary *s)
{
    (void)log_path;
    json_t *doc = json_object();
    json_object_set_new(doc, "schema", json_string("p2pshim-report"));
    json_object_set_new(doc, "schema_version", json_integer(REPORT_SCHEMA_VERSION));
    json_object_set_new(doc, "p2pshim_version", json_string(P2PSHIM_VERSION));
    json_object_set_new(doc, "topo", str_or_null(s->topo && s->topo->loaded ? s->topo->path
                                                                            : NULL));
    json_object_set_new(doc, "verdict", verdict_json(s));
    json_object_set_new(doc, "totals", totals_json(s));
    json_t *procs = json_array();
    for (int i = 0; i < report_log_file_count(s->log) && i < s->nprocs; i++)
        json_array_append_new(procs, proc_json(s, i));
    json_object_set_new(doc, "processes", procs);
    json_object_set_new(doc, "gpus", gpus_json(s));
    json_t *pairs = json_array();
    for (int i = 0; i < s->npairs; i++)
        json_array_append_new(pairs, pair_json(s, &s->pairs[i]));
    json_object_set_new(doc, "pairs", pairs);
    json_object_set_new(doc, "matrix", matrix_json(s));
    json_t *bounces = json_array();
    for (int i = 0; i < s->nbounces; i++)
        json_array_append_new(bounces, bounce_json(s, &s->bounces[i]));
    json_object_set_new(doc, "bounces", bounces);
    int rc = json_dumpf(doc, f, JSON_INDENT(1) | JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER |
                                    JSON_REAL_PRECISION(12));
    json_decref(doc);
    if (rc == 0)
        fputc('\n', f);
    return rc == 0 && !ferror(f) ? 0 : -1;
}
