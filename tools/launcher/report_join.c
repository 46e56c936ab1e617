/* Joining a run log's activity lines to their decisions (report_log.c's
 * pass 2), and the interned names of actions and reasons. A decision
 * that activity lines will join (pass 1 counted them) waits in a hash map
 * until its last one has been read; every other one is a copy at once. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "report_internal.h"
#include "report_log_int.h"

/* Slot 0 stands for an absent name, slot 1 for names past the cap. */
static const char *intern(struct report_log *log, const char *s)
{
    if (!s)
        return log->names[0];
    for (int i = 0; i < log->nnames; i++)
        if (strcmp(log->names[i], s) == 0)
            return log->names[i];
    if (log->nnames == REPORT_MAX_NAMES)
        return log->names[1];
    char *dup = strdup(s);
    if (!dup)
        return log->names[1];
    log->names[log->nnames++] = dup;
    return dup;
}

int report_log_names(const struct report_log *log, const char ***names)
{
    *names = (const char **)log->names;
    return log->nnames;
}

int report_log_name_index(const struct report_log *log, const char *name)
{
    for (int i = 0; i < log->nnames; i++)
        if (log->names[i] == name || strcmp(log->names[i], name) == 0)
            return i;
    return 1;
}

/* ---- the copy form and the waiting decisions ---- */

static void emit_copy(struct report_log *log, struct report_decision *c)
{
    if (!c->has_bytes && c->act.bytes >= 0) {
        c->bytes = c->act.bytes;
        c->has_bytes = true;
    }
    if (log->v->copy)
        log->v->copy(log->v->ctx, c);
}

void report_join_flush(struct report_log *log)
{
    struct pend *p, *tmp;
    HASH_ITER(hh, log->pending, p, tmp) {   /* insertion order */
        HASH_DEL(log->pending, p);
        emit_copy(log, &p->d);
        free(p);
    }
}

void report_join_decision(struct report_log *log, json_t *o, int segment)
{
    struct report_decision d;
    report_parse_decision(o, &d);
    d.segment = segment;
    log->info->decisions++;
    if (log->v->decision)
        log->v->decision(log->v->ctx, &d);
    d.action = intern(log, d.action);
    d.reason = intern(log, d.reason);
    d.api = d.stream = d.src_kind = d.dst_kind = NULL;

    struct key k = {segment, d.id};
    struct count *c = NULL;
    if (d.has_id)
        HASH_FIND(hh, log->counts, &k, sizeof k, c);
    struct pend *old = NULL;
    if (d.has_id)
        HASH_FIND(hh, log->pending, &k, sizeof k, old);
    if (old) {   /* a repeated id: the first one is complete now */
        HASH_DEL(log->pending, old);
        emit_copy(log, &old->d);
        free(old);
    }
    struct pend *p = c ? malloc(sizeof *p) : NULL;
    if (!p) {   /* nothing will join it (or no memory: it goes unjoined) */
        emit_copy(log, &d);
        return;
    }
    p->k = k;
    p->remaining = c->n;
    p->d = d;
    HASH_DEL(log->counts, c);
    free(c);
    HASH_ADD(hh, log->pending, k, sizeof p->k, p);
}

void report_join_activity(struct report_log *log, json_t *o, int segment)
{
    struct report_activity a;
    report_parse_activity(o, &a);
    a.segment = segment;
    log->info->activity_lines++;
    struct pend *p = NULL;
    struct key k = {segment, a.decision};
    if (a.has_decision)
        HASH_FIND(hh, log->pending, &k, sizeof k, p);
    if (!p) {
        log->info->orphan_activities++;
        if (log->v->activity)
            log->v->activity(log->v->ctx, &a, NULL);
        return;
    }
    report_span_add(&p->d.act, a.kinds, a.has_span, a.start_ns, a.end_ns,
             a.has_bytes ? a.bytes : -1);
    if (log->v->activity)
        log->v->activity(log->v->ctx, &a, &p->d);
    if (--p->remaining <= 0) {
        HASH_DEL(log->pending, p);
        emit_copy(log, &p->d);
        free(p);
    }
}

