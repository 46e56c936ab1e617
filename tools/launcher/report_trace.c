/* The Chrome trace (JSON object format: traceEvents), written as the log is
 * read, one event per line.
 *
 * Tracks: process "host" (pid 1) with one thread per shim tid for the
 * decisions (zero-length "X" slices) and thread 0 "shim" for the shim's own
 * events (instants); process "GPU n" (pid 10 + n; "GPU ?" is pid 9) with
 * one thread per stream: CUPTI's stream id for activity lines, and for an
 * activity embedded in its decision (which names no CUPTI stream) the
 * application's stream handle, as tid 1000000 + k. pids and tids are
 * numbers, named by metadata events, as every viewer accepts them.
 *
 * Time base: microseconds since the header's instant. Shim times map as
 * (t_ns - clock_ns) / 1000, CUPTI times as (start_ns - cupti_ns) / 1000
 * (each process image by its own header). Every decision and activity
 * carries the decision id in args.decision; a flow ("s" on the decision,
 * "f" bound to the activity slice) links them. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "report_internal.h"

/* Host tracks carry the process's own pid (from its header); GPU tracks
 * numbers past any pid Linux gives (pid_max is at most 2^22), one per
 * log file and device. */
#define GPU_PID_BASE 4000000000LL
#define GPU_PID(t, dev) (GPU_PID_BASE + (t)->file * 1000 + ((dev) >= 0 ? 1 + (int64_t)(dev) : 0))
#define EMBEDDED_TID_BASE 1000000

struct track {
    int64_t key[2];   /* pid, tid; tid INT64_MIN: the process itself */
    UT_hash_handle hh;
};

struct stream_name {
    char *name;
    int64_t tid;
    UT_hash_handle hh;
};

struct report_trace {
    FILE *f;
    bool first, failed;
    bool aligned;          /* every header had the clock pair */
    bool saturated;        /* a duration reached the 64-bit limit */
    int64_t clock_ns, cupti_ns;
    int64_t base_ns;       /* the trace's zero: the earliest time of the logs */
    int64_t host_pid;      /* the pid of the file being read */
    int64_t file;          /* its index */
    const struct report_info *info;   /* its header's */
    char pname[160];       /* its host track's name */
    struct track *tracks;
    struct stream_name *streams;
    int64_t nstreams, flows, decisions, activities, events;
};

static void emit(struct report_trace *t, json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                    JSON_REAL_PRECISION(15))
                : NULL;
    if (!s) {
        t->failed = true;
    } else {
        fprintf(t->f, "%s%s", t->first ? "\n" : ",\n", s);
        t->first = false;
    }
    free(s);
    json_decref(o);
}

/* Names the process and thread on first use. */
static void track(struct report_trace *t, int64_t pid, int64_t tid,
                  const char *pname, const char *tname)
{
    for (int level = 0; level < 2; level++) {
        int64_t key[2] = {pid, level ? tid : INT64_MIN};
        struct track *k;
        HASH_FIND(hh, t->tracks, key, sizeof key, k);
        if (k)
            continue;
        if (!(k = malloc(sizeof *k))) {
            t->failed = true;
            return;
        }
        memcpy(k->key, key, sizeof key);
        HASH_ADD(hh, t->tracks, key, sizeof k->key, k);
        if (level == 0) {
            emit(t, json_pack("{s:s,s:s,s:I,s:I,s:{s:s}}", "name", "process_name",
                              "ph", "M", "pid", (json_int_t)pid, "tid", (json_int_t)0,
                              "args", "name", pname));
            emit(t, json_pack("{s:s,s:s,s:I,s:I,s:{s:I}}", "name",
                              "process_sort_index", "ph", "M", "pid",
                              (json_int_t)pid, "tid", (json_int_t)0, "args",
                              "sort_index", (json_int_t)pid));
        } else {
            emit(t, json_pack("{s:s,s:s,s:I,s:I,s:{s:s}}", "name", "thread_name",
                              "ph", "M", "pid", (json_int_t)pid, "tid",
                              (json_int_t)tid, "args", "name", tname));
        }
    }
}

static void gpu_track(struct report_trace *t, int dev, int64_t tid,
                      const char *stream)
{
    char pname[64], tname[96], who[40] = "";
    if (t->info && t->info->rank >= 0)
        snprintf(who, sizeof who, " (rank %lld)", (long long)t->info->rank);
    else if (t->file > 0 && t->info && t->info->has_pid)
        snprintf(who, sizeof who, " (pid %lld)", (long long)t->info->pid);
    if (dev >= 0)
        snprintf(pname, sizeof pname, "GPU %d%s", dev, who);
    else
        snprintf(pname, sizeof pname, "GPU ?%s", who);
    snprintf(tname, sizeof tname, "stream %s", stream);
    track(t, GPU_PID(t, dev), tid, pname, tname);
}

/* (ns - base) in microseconds: exact where the difference fits 64 bits. */
static double us_since(int64_t ns, int64_t base)
{
    int64_t d;
    if (__builtin_sub_overflow(ns, base, &d))
        return ((double)ns - (double)base) / 1e3;
    return (double)d / 1e3;
}

/* A time of the shim's clock, from the trace's zero. */
static double host_us(const struct report_trace *t, int64_t ns)
{
    return us_since(ns, t->base_ns);
}

/* A CUPTI time, moved to the shim's clock by the header's pair, from the
 * trace's zero. */
static double gpu_us(const struct report_trace *t, int64_t ns)
{
    return us_since(ns, t->base_ns) - us_since(t->cupti_ns, t->clock_ns);
}

static void flow(struct report_trace *t, const struct report_decision *d,
                 int64_t pid, int64_t tid, int64_t start_ns)
{
    if (!d->has_t)
        return;
    json_int_t id = (json_int_t)++t->flows;
    emit(t, json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:f}", "name", "copy", "cat",
                      "flow", "ph", "s", "id", id, "pid", (json_int_t)t->host_pid,
                      "tid", (json_int_t)(d->has_tid ? d->tid : 0), "ts",
                      host_us(t, d->t_ns)));
    emit(t, json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:f}", "name", "copy", "cat",
                      "flow", "ph", "f", "bp", "e", "id", id, "pid",
                      (json_int_t)pid, "tid", (json_int_t)tid, "ts",
                      gpu_us(t, start_ns)));
}

static void set_str(json_t *o, const char *k, const char *v)
{
    if (v)
        json_object_set_new(o, k, json_string(v));
}

static int64_t embedded_tid(struct report_trace *t, const char *stream)
{
    const char *s = stream ? stream : "?";
    struct stream_name *n;
    HASH_FIND_STR(t->streams, s, n);
    if (n)
        return n->tid;
    if (!(n = malloc(sizeof *n)) || !(n->name = strdup(s))) {
        free(n);
        t->failed = true;
        return EMBEDDED_TID_BASE;
    }
    n->tid = EMBEDDED_TID_BASE + t->nstreams++;
    HASH_ADD_KEYPTR(hh, t->streams, n->name, strlen(n->name), n);
    return n->tid;
}

static void on_header(void *ctx, const struct report_info *in, int segment,
                      bool has_align, int64_t clock_ns, int64_t cupti_ns)
{
    (void)segment;
    struct report_trace *t = ctx;
    if (t->info != in) {   /* a new file */
        t->file += t->info != NULL;
        t->info = in;
        t->host_pid = in->has_pid ? in->pid : 1 + t->file;
        snprintf(t->pname, sizeof t->pname, "host");
        if (in->rank >= 0 || t->file > 0) {
            const char *exe = in->exe ? strrchr(in->exe, '/') : NULL;
            exe = exe ? exe + 1 : in->exe ? in->exe : "?";
            if (in->rank >= 0)
                snprintf(t->pname, sizeof t->pname, "host: rank %lld %.64s (pid %lld)",
                         (long long)in->rank, exe, (long long)t->host_pid);
            else
                snprintf(t->pname, sizeof t->pname, "host: %.64s (pid %lld)", exe,
                         (long long)t->host_pid);
        }
    }
    t->aligned = t->aligned && has_align;
    t->clock_ns = has_align ? clock_ns : 0;
    t->cupti_ns = has_align ? cupti_ns : 0;
    track(t, t->host_pid, 0, t->pname, "shim");
}

static void on_decision(void *ctx, const struct report_decision *d)
{
    struct report_trace *t = ctx;
    char tname[48], kind[48];
    int64_t tid = d->has_tid ? d->tid : 0;
    t->decisions++;
    if (!d->has_t)
        return;   /* cannot be placed */
    snprintf(tname, sizeof tname, "thread %lld", (long long)tid);
    track(t, t->host_pid, tid, t->pname, tname);
    json_t *args = json_object();
    if (d->has_id)
        json_object_set_new(args, "decision", json_integer(d->id));
    set_str(args, "api", d->api);
    json_object_set_new(args, "bytes", json_integer(d->bytes));
    json_object_set_new(args, "src_dev", json_integer(d->src_dev));
    json_object_set_new(args, "dst_dev", json_integer(d->dst_dev));
    set_str(args, "src_kind", d->src_kind);
    set_str(args, "dst_kind", d->dst_kind);
    set_str(args, "stream", d->stream);
    set_str(args, "action", d->action);
    set_str(args, "reason", d->reason);
    int64_t ns = report_span_duration(&d->act);
    if (d->act.kinds) {
        set_str(args, "ran", report_kind_name(d->act.kinds, kind, sizeof kind));
        if (ns > 0)
            json_object_set_new(args, "gbps", json_real(report_gbps(d->bytes, ns)));
    }
    emit(t, json_pack("{s:s,s:s,s:s,s:f,s:i,s:I,s:I,s:o}", "name",
                      d->api ? d->api : "copy", "cat", "decision", "ph", "X",
                      "ts", host_us(t, d->t_ns), "dur", 0, "pid",
                      (json_int_t)t->host_pid, "tid", (json_int_t)tid, "args", args));
    if (!d->act.kinds || !d->act.has_span)
        return;
    int dev = d->src_dev >= 0 ? d->src_dev : d->dst_dev;
    int64_t stid = embedded_tid(t, d->stream);
    gpu_track(t, dev, stid, d->stream ? d->stream : "?");
    args = json_object();
    if (d->has_id)
        json_object_set_new(args, "decision", json_integer(d->id));
    json_object_set_new(args, "bytes", json_integer(d->bytes));
    set_str(args, "api", d->api);
    set_str(args, "reason", d->reason);
    if (ns > 0)
        json_object_set_new(args, "gbps", json_real(report_gbps(d->bytes, ns)));
    t->activities++;
    emit(t, json_pack("{s:s,s:s,s:s,s:f,s:f,s:I,s:I,s:o}", "name", kind, "cat",
                      "activity", "ph", "X", "ts", gpu_us(t, d->act.start_ns),
                      "dur", (double)ns / 1e3, "pid", (json_int_t)GPU_PID(t, dev),
                      "tid", (json_int_t)stid, "args", args));
    flow(t, d, GPU_PID(t, dev), stid, d->act.start_ns);
}

static void on_activity(void *ctx, const struct report_activity *a,
                        const struct report_decision *d)
{
    struct report_trace *t = ctx;
    if (!a->has_span)
        return;
    int dev = a->src_dev >= 0 ? a->src_dev : a->dst_dev;
    int64_t tid = a->has_stream ? a->stream_id : 0;
    char sname[32];
    snprintf(sname, sizeof sname, "%lld", (long long)tid);
    gpu_track(t, dev, tid, a->has_stream ? sname : "?");
    json_t *args = json_object();
    if (a->has_decision)
        json_object_set_new(args, "decision", json_integer(a->decision));
    if (a->has_bytes)
        json_object_set_new(args, "bytes", json_integer(a->bytes));
    json_object_set_new(args, "src_dev", json_integer(a->src_dev));
    json_object_set_new(args, "dst_dev", json_integer(a->dst_dev));
    if (a->has_stream)
        json_object_set_new(args, "stream_id", json_integer(a->stream_id));
    if (d)
        set_str(args, "reason", d->reason);
    int64_t ns = report_sub(a->end_ns, a->start_ns, &t->saturated);
    if (a->has_bytes && ns > 0)
        json_object_set_new(args, "gbps", json_real(report_gbps(a->bytes, ns)));
    t->activities++;
    emit(t, json_pack("{s:s,s:s,s:s,s:f,s:f,s:I,s:I,s:o}", "name",
                      a->kind ? a->kind : "?", "cat", "activity", "ph", "X",
                      "ts", gpu_us(t, a->start_ns), "dur", (double)ns / 1e3,
                      "pid", (json_int_t)GPU_PID(t, dev), "tid", (json_int_t)tid,
                      "args", args));
    if (d)
        flow(t, d, GPU_PID(t, dev), tid, a->start_ns);
}

static void on_event(void *ctx, const struct report_event *e)
{
    struct report_trace *t = ctx;
    t->events++;
    if (!e->has_t)
        return;
    json_t *args = json_object();
    if (e->from != REPORT_DEV_NONE)
        json_object_set_new(args, "from", json_integer(e->from));
    if (e->to != REPORT_DEV_NONE)
        json_object_set_new(args, "to", json_integer(e->to));
    if (e->ok >= 0)
        json_object_set_new(args, "ok", json_boolean(e->ok));
    if (e->duration_ns >= 0)
        json_object_set_new(args, "duration_ns", json_integer(e->duration_ns));
    emit(t, json_pack("{s:s,s:s,s:s,s:s,s:f,s:I,s:I,s:o}", "name",
                      e->what ? e->what : "event", "cat", "event", "ph", "i",
                      "s", "t", "ts", host_us(t, e->t_ns), "pid",
                      (json_int_t)t->host_pid, "tid", (json_int_t)0, "args", args));
}

/* ---- the trace's zero: a first pass over the logs ---- */

struct base_scan {
    int64_t *base;
    int64_t clock_ns, cupti_ns;
};

static void lower(struct base_scan *b, int64_t ns)
{
    if (ns < *b->base)
        *b->base = ns;
}

static void base_header(void *ctx, const struct report_info *in, int segment, bool has_align,
                        int64_t clock_ns, int64_t cupti_ns)
{
    (void)in, (void)segment;
    struct base_scan *b = ctx;
    b->clock_ns = has_align ? clock_ns : 0;
    b->cupti_ns = has_align ? cupti_ns : 0;
    if (has_align)
        lower(b, clock_ns);
}

/* A CUPTI time on the shim's clock (saturating: a nonsense value of a log
 * must not wrap). */
static int64_t on_host_clock(const struct base_scan *b, int64_t cupti_time)
{
    bool sat = false;
    return report_add(report_sub(cupti_time, b->cupti_ns, &sat), b->clock_ns, &sat);
}

static void base_decision(void *ctx, const struct report_decision *d)
{
    struct base_scan *b = ctx;
    if (d->has_t)
        lower(b, d->t_ns);
    if (d->act.kinds && d->act.has_span)
        lower(b, on_host_clock(b, d->act.start_ns));
}

static void base_activity(void *ctx, const struct report_activity *a,
                          const struct report_decision *d)
{
    (void)d;
    struct base_scan *b = ctx;
    if (a->has_span)
        lower(b, on_host_clock(b, a->start_ns));
}

static void base_event(void *ctx, const struct report_event *e)
{
    struct base_scan *b = ctx;
    if (e->has_t)
        lower(b, e->t_ns);
}

void report_trace_base_visitor(struct report_visitor *v, int64_t *base)
{
    static _Thread_local struct base_scan scan;
    scan = (struct base_scan){base, 0, 0};
    memset(v, 0, sizeof *v);
    v->ctx = &scan;
    v->header = base_header;
    v->decision = base_decision;
    v->activity = base_activity;
    v->event = base_event;
}

struct report_trace *report_trace_new(FILE *f, struct report_visitor *v, int64_t base_ns)
{
    struct report_trace *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->f = f;
    t->base_ns = base_ns;
    t->first = true;
    t->aligned = true;
    memset(v, 0, sizeof *v);
    v->ctx = t;
    v->header = on_header;
    v->decision = on_decision;
    v->activity = on_activity;
    v->event = on_event;
    fputs("{\"traceEvents\":[", f);
    return t;
}

int report_trace_finish(struct report_trace *t, const char *log_path,
                        const struct report_log *log)
{
    const struct report_info *in = report_log_info(log);
    json_t *o = json_pack("{s:s,s:s?,s:s?,s:s?,s:s?,s:b,s:b,s:I,s:I,s:I,s:I,s:I}",
                          "format", "p2pshim-trace", "exe", in->exe, "host", in->host, "mode", in->mode,
                          "cupti", in->cupti, "aligned", t->aligned,
                          "cut_short", in->cut_short,
                          "dropped", (json_int_t)in->f_dropped,
                          "decisions", (json_int_t)t->decisions,
                          "activities", (json_int_t)t->activities,
                          "events", (json_int_t)t->events,
                          "flows", (json_int_t)t->flows);
    if (o && (t->saturated || in->saturated))
        json_object_set_new(o, "note", json_string("some figures reached the 64-bit "
                                                   "limit and are shown at that limit"));
    if (o && in->log_cut)
        json_object_set_new(o, "cut_reason", json_string(in->log_cut_why));
    if (o && in->bad_lines)
        json_object_set_new(o, "bad_lines", json_integer(in->bad_lines));
    json_t *path = json_string(log_path);   /* NULL: not UTF-8, left out */
    if (o && path)
        json_object_set_new(o, "log", path);
    else
        json_decref(path);
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (!s)
        t->failed = true;
    else
        fprintf(t->f, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":%s}\n", s);
    free(s);
    json_decref(o);
    return t->failed || ferror(t->f) ? -1 : 0;
}

void report_trace_free(struct report_trace *t)
{
    struct track *k, *kt;
    HASH_ITER(hh, t->tracks, k, kt) {
        HASH_DEL(t->tracks, k);
        free(k);
    }
    struct stream_name *n, *nt;
    HASH_ITER(hh, t->streams, n, nt) {
        HASH_DEL(t->streams, n);
        free(n->name);
        free(n);
    }
    free(t);
}
