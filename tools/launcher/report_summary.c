/* Aggregation of copies per ordered device pair, and the savings estimate.
 *
 * A copy is cross-GPU when both ends are device ordinals, they differ and
 * the reason is not a local one; everything else goes to the "local" row.
 * Its path comes from CUPTI when it was joined (PTOP alone: peer; DTOH and
 * HTOD: staged; anything else: other), else from the decision (see
 * report_copy_path). Savings are estimated for staged copies: those CUPTI
 * saw as DTOH+HTOD, and those without activity whose action is
 * would-upgrade (observe mode). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uthash.h>

#include "report_internal.h"

/* (src, dst) -> index in pairs, which realloc moves. */
struct report_pair_index {
    int key[2];
    int idx;
    UT_hash_handle hh;
};

double report_gbps(int64_t bytes, int64_t ns)
{
    return ns > 0 ? (double)bytes / (double)ns : 0;
}

static bool local_reason(const char *r)
{
    return report_reason_class(r) == LOG_CLASS_LOCAL;
}

static bool would_upgrade(const struct report_decision *d)
{
    return report_action_of(d->action) == REPORT_ACTION_WOULD_UPGRADE;
}

/* Without activity the decision tells what the shim knew: its own or the
 * program's peer access (peer); no access and none made, or observe mode's
 * would-upgrade (staged: the driver stages a cross-GPU copy without access);
 * anything else (mode off, managed, pool, mapped memory, errors) is not
 * known (other). */
enum report_path report_copy_path(const struct report_decision *d,
                                  bool *from_activity)
{
    *from_activity = d->act.kinds != 0;
    if (d->act.kinds == REPORT_KIND_PTOP)
        return REPORT_PEER;
    if (d->act.kinds == (REPORT_KIND_DTOH | REPORT_KIND_HTOD))
        return REPORT_STAGED;
    if (d->act.kinds)
        return REPORT_OTHER;
    if (would_upgrade(d))
        return REPORT_STAGED;
    enum log_reason_class class = report_reason_class(d->reason);
    if (report_action_of(d->action) == REPORT_ACTION_ENABLE_THEN_PASS ||
        class == LOG_CLASS_UPGRADE || class == LOG_CLASS_APP_PEER)
        return REPORT_PEER;
    if (class == LOG_CLASS_STAGED)
        return REPORT_STAGED;
    return REPORT_OTHER;
}

static struct report_pair *get_pair(struct report_summary *s, int src, int dst)
{
    struct report_pair_index *e;
    int key[2] = {src, dst};
    HASH_FIND(hh, s->index, key, sizeof key, e);
    if (e)
        return &s->pairs[e->idx];
    if (s->npairs == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        struct report_pair *p = realloc(s->pairs, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        s->pairs = p;
        s->cap = cap;
    }
    if (!(e = malloc(sizeof *e)))
        return NULL;
    struct report_pair *p = &s->pairs[s->npairs];
    memset(p, 0, sizeof *p);
    p->src = src;
    p->dst = dst;
    e->key[0] = src;
    e->key[1] = dst;
    e->idx = s->npairs++;
    HASH_ADD(hh, s->index, key, sizeof e->key, e);
    return p;
}

static void add_bin(struct report_summary *s, enum report_path path,
                    int64_t bytes, int64_t ns)
{
    if (bytes <= 0 || (path != REPORT_PEER && path != REPORT_STAGED))
        return;
    int i = 0;
    while (i < REPORT_BINS - 1 && (bytes >> (i + 1)) != 0)
        i++;   /* floor(log2(bytes)) */
    struct report_bin *b = &s->bins[path == REPORT_STAGED][i];
    double g = report_gbps(bytes, ns);
    if (b->n == 0 || g < b->min_gbps)
        b->min_gbps = g;
    if (b->n == 0 || g > b->max_gbps)
        b->max_gbps = g;
    b->n = report_add(b->n, 1, &s->saturated);
    b->bytes = report_add(b->bytes, bytes, &s->saturated);
    b->ns = report_add(b->ns, ns, &s->saturated);
}

/* The table's index for (host, uuid) or, without a UUID, (host,
 * ordinal); a new GPU takes the index equal to its ordinal when free (one
 * process's GPUs keep their ordinals), else the first free one. -1: full. */
static int gpu_index(struct report_summary *s, const char *host, const struct report_dev *dev,
                     int ordinal)
{
    const char *uuid = dev && dev->uuid[0] ? dev->uuid : "";
    host = host ? host : "";
    for (int i = 0; i < s->ngpus; i++) {
        const struct report_gpu *g = &s->gpus[i];
        if (g->used && strcmp(g->host, host) == 0 && strcmp(g->uuid, uuid) == 0 &&
            (uuid[0] || g->ordinal == ordinal))
            return i;
    }
    int id = ordinal >= 0 && ordinal < REPORT_MAX_GPUS && !s->gpus[ordinal].used ? ordinal : -1;
    for (int i = 0; id < 0 && i < REPORT_MAX_GPUS; i++)
        if (!s->gpus[i].used)
            id = i;
    if (id < 0)
        return -1;
    struct report_gpu *g = &s->gpus[id];
    g->used = true;
    g->ordinal = ordinal;
    snprintf(g->host, sizeof g->host, "%s", host);
    snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
    snprintf(g->pci, sizeof g->pci, "%s", dev ? dev->pci : "");
    snprintf(g->name, sizeof g->name, "%s", dev ? dev->name : "");
    report_price_place(s, g);
    if (id >= s->ngpus)
        s->ngpus = id + 1;
    return id;
}

/* A device ordinal of the file being read as a GPU index (host: -1). */
static int gpu_of(struct report_summary *s, int ordinal)
{
    if (ordinal < 0)
        return ordinal;
    if (ordinal < REPORT_MAX_DEVS && s->map[ordinal] >= 0)
        return s->map[ordinal];
    const struct report_info *in = report_log_file(s->log, s->file);
    int id = gpu_index(s, in->host, NULL, ordinal);
    if (ordinal < REPORT_MAX_DEVS)
        s->map[ordinal] = id;
    return id < 0 ? REPORT_DEV_NONE : id;
}

/* A time of the file being read on the shim's clock: widens its span. */
static void note_time(struct report_summary *s, int64_t t)
{
    if (s->file < 0 || s->file >= s->nprocs || t <= 0)
        return;
    struct report_proc *p = &s->procs[s->file];
    if (p->first_ns == 0 || t < p->first_ns)
        p->first_ns = t;
    if (t > p->last_ns)
        p->last_ns = t;
}

/* A copy between host memory and one GPU, timed by CUPTI: the host link's
 * best rate so far, per direction. */
static void note_host_link(struct report_summary *s, const struct report_decision *d)
{
    int64_t ns = report_span_duration(&d->act);
    if (ns <= 0 || d->bytes <= 0)
        return;
    double g = report_gbps(d->bytes, ns);
    if (d->src_dev == -1 && d->dst_dev >= 0 && d->act.kinds == REPORT_KIND_HTOD)
        s->h2d_gbps = fmax(s->h2d_gbps, g);
    if (d->src_dev >= 0 && d->dst_dev == -1 && d->act.kinds == REPORT_KIND_DTOH)
        s->d2h_gbps = fmax(s->d2h_gbps, g);
}

/* A copy the shim itself carried over the peer link (upgrade mode), for
 * the exit line: its bytes and its CUPTI time per file, its bytes per pair. */
static void note_upgraded(struct report_summary *s, struct report_pair *pair,
                          const struct report_decision *d, enum report_path path)
{
    if (s->file < 0 || s->file >= s->nprocs || path != REPORT_PEER ||
        report_reason_class(d->reason) != LOG_CLASS_UPGRADE)
        return;
    struct report_proc *p = &s->procs[s->file];
    bool *sat = &s->saturated;
    int64_t ns = report_span_duration(&d->act);
    p->upgraded = report_add(p->upgraded, 1, sat);
    p->upgraded_bytes = report_add(p->upgraded_bytes, d->bytes, sat);
    pair->upgraded_bytes = report_add(pair->upgraded_bytes, d->bytes, sat);
    if (p->upgraded_ns >= 0)
        p->upgraded_ns = ns > 0 ? report_add(p->upgraded_ns, ns, sat) : -1;
}

/* A file's first header: its devices join the table, in ordinal order. */
static void on_header(void *ctx, const struct report_info *in, int segment, bool has_align,
                      int64_t clock_ns, int64_t cupti_ns)
{
    (void)segment, (void)has_align, (void)cupti_ns;
    struct report_summary *s = ctx;
    int file = report_log_file_count(s->log) - 1;
    if (file == s->file && s->nprocs > 0) {
        note_time(s, clock_ns);
        return;
    }
    s->file = file;
    for (int i = 0; i < REPORT_MAX_DEVS; i++)
        s->map[i] = -1;
    for (int i = 0; i < in->ndevs; i++)
        s->map[i] = gpu_index(s, in->host, &in->devs[i], i);
    if (file >= s->nprocs) {
        struct report_proc *p = realloc(s->procs, (size_t)(file + 1) * sizeof *p);
        if (!p) {
            s->oom = true;
            return;
        }
        memset(p + s->nprocs, 0, (size_t)(file + 1 - s->nprocs) * sizeof *p);
        s->procs = p;
        s->nprocs = file + 1;
    }
    note_time(s, clock_ns);
}

static void count_proc(struct report_summary *s, const struct report_decision *d, bool cross,
                       enum report_path path, bool candidate)
{
    if (s->file < 0 || s->file >= s->nprocs)
        return;
    struct report_proc *p = &s->procs[s->file];
    bool *sat = &s->saturated;
    p->copies = report_add(p->copies, 1, sat);
    p->bytes = report_add(p->bytes, d->bytes, sat);
    int64_t *action = &p->action_bytes[report_log_name_index(s->log, d->action)];
    *action = report_add(*action, d->bytes, sat);
    int64_t *class = &p->class_bytes[report_reason_class(d->reason)];
    *class = report_add(*class, d->bytes, sat);
    if (!cross)
        return;
    p->cross_copies = report_add(p->cross_copies, 1, sat);
    p->cross_bytes = report_add(p->cross_bytes, d->bytes, sat);
    if (path == REPORT_PEER)
        p->peer_bytes = report_add(p->peer_bytes, d->bytes, sat);
    if (path == REPORT_STAGED)
        p->staged_bytes = report_add(p->staged_bytes, d->bytes, sat);
    if (candidate) {
        p->candidates = report_add(p->candidates, 1, sat);
        p->candidate_bytes = report_add(p->candidate_bytes, d->bytes, sat);
    }
}

static void on_copy(void *ctx, const struct report_decision *given)
{
    struct report_summary *s = ctx;
    struct report_decision mapped = *given;
    const struct report_decision *d = &mapped;
    mapped.src_dev = gpu_of(s, given->src_dev);
    mapped.dst_dev = gpu_of(s, given->dst_dev);
    s->copies_seen++;   /* one per line read: no overflow */
    int64_t *action = &s->actions[report_log_name_index(s->log, d->action)];
    *action = report_add(*action, 1, &s->saturated);
    bool cross = d->src_dev >= 0 && d->dst_dev >= 0 &&
                 d->src_dev != d->dst_dev && !local_reason(d->reason);
    struct report_pair *p = cross ? get_pair(s, d->src_dev, d->dst_dev)
                                  : &s->local;
    if (!p) {
        s->oom = true;
        return;
    }
    bool from_act;
    enum report_path path = report_copy_path(d, &from_act);
    bool *sat = &s->saturated;
    p->copies = report_add(p->copies, 1, sat);
    p->bytes = report_add(p->bytes, d->bytes, sat);
    p->n[path] = report_add(p->n[path], 1, sat);
    p->b[path] = report_add(p->b[path], d->bytes, sat);
    p->by_activity = report_add(p->by_activity, from_act, sat);
    int64_t *reason = &p->reasons[report_log_name_index(s->log, d->reason)];
    *reason = report_add(*reason, 1, sat);
    bool candidate = cross && (from_act ? path == REPORT_STAGED : would_upgrade(d));
    count_proc(s, d, cross, path, candidate);
    if (d->has_t)
        note_time(s, d->t_ns);
    if (!cross) {
        note_host_link(s, d);
        return;
    }
    note_upgraded(s, p, d, path);
    if (d->has_t)
        report_timeline_add(s, p, d->t_ns, d->bytes);
    int64_t ns = report_span_duration(&d->act);
    /* A staged copy's CUPTI records time one staging chunk, not the copy
     * (estimate() says more): with the table's staged GB/s, that is the
     * copy's time, here and in the chart. */
    const struct report_link *l = report_price_link(s, d->src_dev, d->dst_dev);
    if (from_act && path == REPORT_STAGED && l && l->staged_gbps > 0)
        ns = report_i64_of((double)d->bytes / l->staged_gbps, sat);
    if (from_act && ns > 0) {
        p->act_n[path] = report_add(p->act_n[path], 1, sat);
        p->act_bytes[path] = report_add(p->act_bytes[path], d->bytes, sat);
        p->act_ns[path] = report_add(p->act_ns[path], ns, sat);
        double g = report_gbps(d->bytes, ns);
        if (path == REPORT_PEER && g > p->best_ptop_gbps)
            p->best_ptop_gbps = g;
        add_bin(s, path, d->bytes, ns);
    }
    bool staged = from_act && path == REPORT_STAGED;
    if (staged && ns > 0) {
        p->cand_meas_n = report_add(p->cand_meas_n, 1, sat);
        p->cand_meas_bytes = report_add(p->cand_meas_bytes, d->bytes, sat);
        p->cand_meas_ns = report_add(p->cand_meas_ns, ns, sat);
    } else if (staged || (!from_act && would_upgrade(d))) {
        p->cand_unmeas_n = report_add(p->cand_unmeas_n, 1, sat);
        p->cand_unmeas_bytes = report_add(p->cand_unmeas_bytes, d->bytes, sat);
    }
}

static void on_event(void *ctx, const struct report_event *e)
{
    struct report_summary *s = ctx;
    int what = report_event_of(e->what);
    if (e->has_t)
        note_time(s, e->t_ns);
    if (what == LOG_EVENT_PEER_ENABLE) {
        s->peer_enables++;
        if (e->duration_ns > 0)
            s->enable_ns = report_add(s->enable_ns, e->duration_ns, &s->saturated);
    } else if (what == LOG_EVENT_PEER_ENABLE_FAILED) {
        s->peer_enable_failures++;
    } else if (what == LOG_EVENT_DROPPED) {
        s->dropped_events++;
    } else if ((what == LOG_EVENT_WOULD_BOUNCE || what == LOG_EVENT_BOUNCE) && e->from >= 0 &&
               e->to >= 0) {
        struct report_event mapped = *e;
        mapped.from = gpu_of(s, e->from);
        mapped.to = gpu_of(s, e->to);
        e = &mapped;
        bool served = what == LOG_EVENT_BOUNCE;
        int i = 0;
        while (i < s->nbounces && !(s->bounces[i].from == e->from &&
                                    s->bounces[i].to == e->to && s->bounces[i].served == served))
            i++;
        if (i == s->nbounces && i < REPORT_MAX_BOUNCE_PAIRS)
            s->bounces[s->nbounces++] =
                (struct report_bounce){.from = e->from, .to = e->to, .served = served};
        if (i < s->nbounces) {
            s->bounces[i].pairs++;
            if (e->detail_bytes > 0)
                s->bounces[i].bytes = report_add(s->bounces[i].bytes, e->detail_bytes,
                                                 &s->saturated);
        }
    }
}

void report_summary_init(struct report_summary *s, const struct report_topo *t,
                         struct report_log *log, struct report_visitor *v)
{
    memset(s, 0, sizeof *s);
    s->log = log;
    s->local.src = s->local.dst = -1;
    s->topo = t;
    s->file = -1;
    for (int i = 0; i < REPORT_MAX_DEVS; i++)
        s->map[i] = -1;
    memset(v, 0, sizeof *v);
    v->ctx = s;
    v->header = on_header;
    v->copy = on_copy;
    v->event = on_event;
}

static int cmp_pair(const void *a, const void *b)
{
    const struct report_pair *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->dst > y->dst) - (x->dst < y->dst);
}

static void add_into(struct report_pair *t, const struct report_pair *p, bool *sat)
{
#define ADD(field) t->field = report_add(t->field, p->field, sat)
    ADD(copies);
    ADD(bytes);
    ADD(by_activity);
    for (int i = 0; i < REPORT_NPATHS; i++) {
        ADD(n[i]);
        ADD(b[i]);
        ADD(act_n[i]);
        ADD(act_bytes[i]);
        ADD(act_ns[i]);
    }
    t->best_ptop_gbps = fmax(t->best_ptop_gbps, p->best_ptop_gbps);
    ADD(cand_meas_n);
    ADD(cand_meas_bytes);
    ADD(cand_meas_ns);
    ADD(cand_unmeas_n);
    ADD(cand_unmeas_bytes);
    for (int i = 0; i < REPORT_MAX_NAMES; i++)
        ADD(reasons[i]);
    ADD(saved_n);
    ADD(unest_n);
    ADD(upgraded_bytes);
#undef ADD
    t->saved_ns += p->saved_ns;
    t->staged_ns += p->staged_ns;
    t->peer_ns += p->peer_ns;
}

static void count_candidates(struct report_pair *p, bool *sat)
{
    p->candidates = report_add(p->cand_meas_n, p->cand_unmeas_n, sat);
}

int64_t report_pair_bytes(const struct report_summary *s, int src, int dst)
{
    struct report_pair_index *e;
    int key[2] = {src, dst};
    HASH_FIND(hh, s->index, key, sizeof key, e);
    return e ? s->pairs[e->idx].bytes : 0;
}

/* The process's start on the shim's clock, from the header's process
 * identity (boot id/pid/start in clock ticks since boot, as /proc has
 * it); 0 unknown. Ticks count since boot including suspended time, the
 * clock without it: the start found is before the real one by less than
 * one tick (10 ms at 100 Hz), never more. */
static int64_t process_start_ns(const struct report_info *in)
{
    long long pid = 0, ticks = 0;
    long hz = sysconf(_SC_CLK_TCK);
    const char *slash = in->process ? strchr(in->process, '/') : NULL;
    if (!slash || hz <= 0 || sscanf(slash, "/%lld/%lld", &pid, &ticks) != 2 || ticks <= 0 ||
        ticks > INT64_MAX / 1000000000)
        return 0;
    return (int64_t)ticks * (1000000000 / hz);
}

/* The wall time of the job: per host (one CLOCK_MONOTONIC), its
 * processes' first start (or first record) to their last footer (or
 * record); the longest host's. */
static void find_wall(struct report_summary *s)
{
    s->wall_ns = 0;
    for (int i = 0; i < s->nprocs; i++) {
        const struct report_info *in = report_log_file(s->log, i);
        struct report_proc *p = &s->procs[i];
        int64_t start = process_start_ns(in);
        if (in->last_footer_ns > p->last_ns)
            p->last_ns = in->last_footer_ns;
        if (start > 0 && start < p->first_ns)
            p->first_ns = start;
    }
    for (int i = 0; i < s->nprocs; i++) {
        const char *host = report_log_file(s->log, i)->host;
        int64_t first = 0, last = 0;
        for (int j = 0; j < s->nprocs; j++) {
            const char *h = report_log_file(s->log, j)->host;
            const struct report_proc *p = &s->procs[j];
            if (p->first_ns <= 0 || strcmp(h ? h : "", host ? host : "") != 0)
                continue;
            first = first == 0 || p->first_ns < first ? p->first_ns : first;
            last = p->last_ns > last ? p->last_ns : last;
        }
        if (last - first > s->wall_ns)
            s->wall_ns = last - first;
    }
}

void report_summary_finish(struct report_summary *s)
{
    find_wall(s);
    report_price_check_host(s);
    if (s->npairs > 1)
        qsort(s->pairs, (size_t)s->npairs, sizeof *s->pairs, cmp_pair);
    memset(&s->total, 0, sizeof s->total);
    s->total.src = s->total.dst = -1;
    for (int i = 0; i < s->npairs; i++) {
        report_price_pair(s, &s->pairs[i], &s->saturated);
        add_into(&s->total, &s->pairs[i], &s->saturated);
        count_candidates(&s->pairs[i], &s->saturated);
    }
    count_candidates(&s->total, &s->saturated);
    count_candidates(&s->local, &s->saturated);
    for (int i = 0; i < s->nbounces; i++)
        report_price_bounce(s, &s->bounces[i]);
    report_price_basis(s);
}

void report_summary_free(struct report_summary *s)
{
    struct report_pair_index *e, *tmp;
    HASH_ITER(hh, s->index, e, tmp) {
        HASH_DEL(s->index, e);
        free(e);
    }
    free(s->pairs);
    s->pairs = NULL;
    free(s->procs);
    s->procs = NULL;
    s->nprocs = 0;
    s->npairs = s->cap = 0;
}
