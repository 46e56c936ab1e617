/* One line's members: the typed reading of a decision, activity or event
 * object. Absent or ill-typed members read as absent (LOG_FORMAT.md: a
 * reader ignores what it does not know), never as an error. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

int64_t report_add(int64_t a, int64_t b, bool *saturated)
{
    int64_t r;
    if (!__builtin_add_overflow(a, b, &r))
        return r;
    *saturated = true;
    return b > 0 ? INT64_MAX : INT64_MIN;
}

int64_t report_sub(int64_t a, int64_t b, bool *saturated)
{
    int64_t r;
    if (!__builtin_sub_overflow(a, b, &r))
        return r;
    *saturated = true;
    return b < 0 ? INT64_MAX : INT64_MIN;
}

int64_t report_i64_of(double v, bool *saturated)
{
    if (v != v)
        return 0;
    if (v >= 9223372036854775807.0 || v < -9223372036854775807.0) {
        *saturated = true;
        return v > 0 ? INT64_MAX : INT64_MIN;
    }
    return (int64_t)v;
}

int64_t report_span_duration(const struct report_span *s)
{
    bool ignored = false;   /* a span past INT64_MAX ns is one of the log's
                               nonsense values: it reads as the limit */
    if (s->has_span)
        return report_sub(s->end_ns, s->start_ns, &ignored);
    return s->duration_ns;
}

const char *report_kind_name(unsigned kinds, char *buf, size_t len)
{
    static const char *const names[] = {"PTOP", "DTOH", "HTOD", "DTOD", "OTHER"};
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < 5; i++) {
        if (!(kinds & (1u << i)))
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? "+" : "",
                         names[i]);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
    return used ? buf : "-";
}


bool report_json_i64(json_t *o, const char *k, int64_t *out)
{
    json_t *v = json_object_get(o, k);
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d >= -9.2e18 && d <= 9.2e18) {   /* NaN fails both */
            *out = (int64_t)d;
            return true;
        }
    }
    return false;
}

const char *report_json_str(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

int report_json_dev(json_t *o, const char *k)
{
    int64_t v;
    if (!o || !report_json_i64(o, k, &v) || v < -1 || v > (1 << 24))
        return REPORT_DEV_NONE;
    return (int)v;
}

unsigned report_kind_parse(const char *s)
{
    static const struct { const char *name; unsigned bit; } kinds[] = {
        {"PTOP", REPORT_KIND_PTOP}, {"DTOH", REPORT_KIND_DTOH},
        {"HTOD", REPORT_KIND_HTOD}, {"DTOD", REPORT_KIND_DTOD}};
    unsigned set = 0;
    while (s && *s) {
        size_t n = strcspn(s, "+");
        unsigned bit = REPORT_KIND_OTHER;
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
            if (strlen(kinds[i].name) == n && strncmp(s, kinds[i].name, n) == 0)
                bit = kinds[i].bit;
        set |= n ? bit : 0;
        s += n + (s[n] == '+');
    }
    return set;
}

void report_span_add(struct report_span *s, unsigned kinds, bool has_span,
                     int64_t start, int64_t end, int64_t bytes)
{
    s->kinds |= kinds;
    s->records++;
    if (has_span) {
        if (!s->has_span || start < s->start_ns)
            s->start_ns = start;
        if (!s->has_span || end > s->end_ns)
            s->end_ns = end;
        s->has_span = true;
    }
    if (bytes > s->bytes)
        s->bytes = bytes;
}

static const char *const action_names[REPORT_ACTION_COUNT] = {
#define P2PSHIM_ACTION_NAME(id, name) name,
    LOG_ACTIONS(P2PSHIM_ACTION_NAME)
#undef P2PSHIM_ACTION_NAME
};

static const struct {
    const char *name;
    enum report_action action;
} action_aliases[] = {
#define P2PSHIM_ACTION_ALIAS(old, id) {old, REPORT_ACTION_##id},
    LOG_ACTION_ALIASES(P2PSHIM_ACTION_ALIAS)
#undef P2PSHIM_ACTION_ALIAS
};

static const struct {
    const char *name;
    enum log_reason_class class;
} reasons[] = {
#define P2PSHIM_REASON_ROW(id, name, class) {name, LOG_CLASS_##class},
    LOG_REASONS(P2PSHIM_REASON_ROW)
#undef P2PSHIM_REASON_ROW
};

static const char *const event_names[LOG_EVENT_COUNT] = {
#define P2PSHIM_EVENT_NAME(id, name) name,
    LOG_EVENTS(P2PSHIM_EVENT_NAME)
#undef P2PSHIM_EVENT_NAME
};

const char *report_action_name(enum report_action action)
{
    return (unsigned)action < REPORT_ACTION_COUNT ? action_names[action] : "?";
}

int report_action_of(const char *name)
{
    if (name == NULL)
        return -1;
    for (int i = 0; i < REPORT_ACTION_COUNT; i++)
        if (strcmp(name, action_names[i]) == 0)
            return i;
    for (size_t i = 0; i < sizeof action_aliases / sizeof action_aliases[0]; i++)
        if (strcmp(name, action_aliases[i].name) == 0)
            return (int)action_aliases[i].action;
    return -1;
}

enum log_reason_class report_reason_class(const char *reason)
{
    for (size_t i = 0; reason != NULL && i < sizeof reasons / sizeof reasons[0]; i++)
        if (strcmp(reason, reasons[i].name) == 0)
            return reasons[i].class;
    return LOG_CLASS_OTHER;
}

int report_event_of(const char *name)
{
    for (int i = 0; name != NULL && i < LOG_EVENT_COUNT; i++)
        if (strcmp(name, event_names[i]) == 0)
            return i;
    return -1;
}

void report_parse_decision(json_t *o, struct report_decision *d)
{
    memset(d, 0, sizeof *d);
    d->has_id = report_json_i64(o, "id", &d->id);
    d->has_t = report_json_i64(o, "t_ns", &d->t_ns);
    d->has_tid = report_json_i64(o, "tid", &d->tid);
    d->has_bytes = report_json_i64(o, "bytes", &d->bytes) && d->bytes >= 0;
    if (!d->has_bytes)
        d->bytes = 0;
    d->api = report_json_str(o, "api");
    d->stream = report_json_str(o, "stream");
    d->action = report_json_str(o, "action");
    int action = report_action_of(d->action);
    if (action >= 0)
        d->action = action_names[action]; /* an older name read as today's */
    d->reason = report_json_str(o, "reason");
    json_t *src = json_object_get(o, "src"), *dst = json_object_get(o, "dst");
    d->src_dev = report_json_dev(json_is_object(src) ? src : NULL, "dev");
    d->dst_dev = report_json_dev(json_is_object(dst) ? dst : NULL, "dev");
    d->src_kind = json_is_object(src) ? report_json_str(src, "kind") : NULL;
    d->dst_kind = json_is_object(dst) ? report_json_str(dst, "kind") : NULL;
    d->act.duration_ns = -1;
    d->act.bytes = -1;
    json_t *a = json_object_get(o, "activity");
    if (json_is_object(a)) {
        int64_t start = 0, end = 0, dur;
        bool span = report_json_i64(a, "start_ns", &start) && report_json_i64(a, "end_ns", &end)
                    && end >= start;
        unsigned kinds = report_kind_parse(report_json_str(a, "kind"));
        report_span_add(&d->act, kinds ? kinds : REPORT_KIND_OTHER, span, start, end, -1);
        if (report_json_i64(a, "duration_ns", &dur) && dur >= 0)
            d->act.duration_ns = dur;
    }
}

void report_parse_activity(json_t *o, struct report_activity *a)
{
    memset(a, 0, sizeof *a);
    a->has_decision = report_json_i64(o, "decision", &a->decision);
    a->has_stream = report_json_i64(o, "stream_id", &a->stream_id);
    a->has_bytes = report_json_i64(o, "bytes", &a->bytes) && a->bytes >= 0;
    a->has_span = report_json_i64(o, "start_ns", &a->start_ns) &&
                  report_json_i64(o, "end_ns", &a->end_ns) && a->end_ns >= a->start_ns;
    a->kind = report_json_str(o, "kind");
    a->kinds = report_kind_parse(a->kind);
    if (!a->kinds)
        a->kinds = REPORT_KIND_OTHER;
    a->src_dev = report_json_dev(o, "src_dev");
    a->dst_dev = report_json_dev(o, "dst_dev");
}

void report_parse_event(json_t *o, struct report_event *e)
{
    e->has_t = report_json_i64(o, "t_ns", &e->t_ns);
    if (!report_json_i64(o, "duration_ns", &e->duration_ns))
        e->duration_ns = -1;
    e->what = report_json_str(o, "what");
    e->from = report_json_dev(o, "from");
    e->to = report_json_dev(o, "to");
    json_t *ok = json_object_get(o, "ok");
    e->ok = json_is_boolean(ok) ? json_is_true(ok) : -1;
    const char *detail = report_json_str(o, "detail");
    char *end = NULL;
    long long n = detail ? strtoll(detail, &end, 10) : -1;
    e->detail_bytes = detail && end != detail && *end == '\0' && n >= 0 ? (int64_t)n : -1;
}

static char *dup_str(json_t *o, const char *k)
{
    const char *v = report_json_str(o, k);
    return v ? strdup(v) : NULL;
}

static int64_t i64_or(json_t *o, const char *k, int64_t dflt)
{
    int64_t v;
    return report_json_i64(o, k, &v) ? v : dflt;
}

void report_parse_job(json_t *o, struct report_info *in)
{
    in->version = dup_str(o, "p2pshim");
    in->visible = dup_str(o, "cuda_visible_devices");
    in->process = dup_str(o, "process");
    in->ppid = i64_or(o, "ppid", -1);
    in->rank = i64_or(o, "rank", -1);
    in->local_rank = i64_or(o, "local_rank", -1);
    in->world_size = i64_or(o, "world_size", -1);
    json_t *devs = json_object_get(o, "devices");
    in->ndevs = 0;
    for (size_t i = 0; json_is_array(devs) && i < json_array_size(devs) &&
                       in->ndevs < REPORT_MAX_DEVS; i++) {
        json_t *d = json_array_get(devs, i);
        int64_t ord;
        if (!json_is_object(d) || !report_json_i64(d, "ordinal", &ord) ||
            ord != (int64_t)in->ndevs)
            break;   /* ordinals in order from 0: anything else is not ours */
        struct report_dev *r = &in->devs[in->ndevs++];
        const char *u = report_json_str(d, "uuid"), *p = report_json_str(d, "pci"),
                   *n = report_json_str(d, "name");
        snprintf(r->uuid, sizeof r->uuid, "%s", u ? u : "");
        snprintf(r->pci, sizeof r->pci, "%s", p ? p : "");
        snprintf(r->name, sizeof r->name, "%s", n ? n : "");
    }
}

void report_info_free(struct report_info *in)
{
    free(in->exe);
    free(in->host);
    free(in->mode);
    free(in->cupti);
    free(in->version);
    free(in->visible);
    free(in->process);
}
