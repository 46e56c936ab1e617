/* What the report prices, and from what: the bandwidth table matched to
 * the logs' GPUs (by UUID, else bus id, else ordinal; a table of other
 * GPUs is refused unless --topo forced it), and the time P2P would save
 * per pair and per bounce candidate. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "report_internal.h"

/* g's ordinal in the bandwidth table, and what that tells of the table:
 * a GPU of the table's host that it does not name makes it foreign
 * (refused, unless --topo forced it: then GPUs go by their ordinals). */
void report_price_place(struct report_summary *s, struct report_gpu *g)
{
    char why[256] = "";
    const struct report_topo *t = s->topo;
    g->topo_ord = report_topo_ordinal(t, g, why, sizeof why);
    if (!t || !t->loaded)
        return;
    if (!t->host[0] || !g->host[0] || strcmp(t->host, g->host) == 0)
        s->topo_host_seen = true;
    if (why[0] && !s->topo_note[0])
        snprintf(s->topo_note, sizeof s->topo_note, "%s", why);
    if (why[0])
        s->topo_refused = !t->forced;
    if (g->topo_ord < 0 && t->forced)
        g->topo_ord = g->ordinal;
}

/* The table's figures for the pair of GPU indices src -> dst: NULL when
 * the table is refused or does not hold both GPUs. */
const struct report_link *report_price_link(struct report_summary *s, int src, int dst)
{
    if (!s->topo || !s->topo->loaded || s->topo_refused || src < 0 || dst < 0 ||
        src >= REPORT_MAX_GPUS || dst >= REPORT_MAX_GPUS)
        return NULL;
    int a = s->gpus[src].topo_ord, b = s->gpus[dst].topo_ord;
    const struct report_link *l = a >= 0 && b >= 0 ? report_topo_link(s->topo, a, b) : NULL;
    if (l != NULL)
        s->topo_priced = true;
    return l;
}

/* At the end: a table measured on none of the logs' hosts is foreign too. */
void report_price_check_host(struct report_summary *s)
{
    const struct report_topo *t = s->topo;
    if (!t || !t->loaded || s->topo_host_seen || s->ngpus == 0)
        return;
    const char *host = "(unknown)";
    for (int i = 0; i < s->ngpus; i++)
        if (s->gpus[i].used && s->gpus[i].host[0])
            host = s->gpus[i].host;
    if (!s->topo_note[0])
        snprintf(s->topo_note, sizeof s->topo_note,
                 "it was measured on host %s, the logs are from %s", t->host, host);
    s->topo_refused = !t->forced;
}

void report_price_pair(struct report_summary *s, struct report_pair *p, bool *sat)
{
    const struct report_link *l = report_price_link(s, p->src, p->dst);
    int64_t cand = report_add(p->cand_meas_n, p->cand_unmeas_n, sat);
    if (l && l->can_peer == 0) {
        p->no_estimate = "the topo table says this pair cannot peer";
    } else if (l && l->peer_gbps > 0) {
        p->peer_gbps = l->peer_gbps;
        p->peer_from = "topo";
    } else if (p->best_ptop_gbps > 0) {
        p->peer_gbps = p->best_ptop_gbps;
        p->peer_from = "log";
    } else {
        p->no_estimate = "no peer GB/s: no topo entry and no PTOP copy seen";
    }
    if (p->peer_gbps <= 0) {
        p->unest_n = cand;
        return;
    }
    p->staged_gbps = l ? l->staged_gbps : 0;
    /* CUPTI's records of a staged copy do not time the whole copy: on the
     * H200 machine a 64 MiB staged copy's DTOH and HTOD records each span
     * about 21 us (one staging chunk), the copy ~1.7 ms. With the table's
     * measured staged GB/s, every candidate's staged time comes from it;
     * CUPTI's spans only stand in where there is no table. */
    if (p->staged_gbps > 0) {
        p->cand_unmeas_n = report_add(p->cand_unmeas_n, p->cand_meas_n, sat);
        p->cand_unmeas_bytes = report_add(p->cand_unmeas_bytes, p->cand_meas_bytes, sat);
        p->cand_meas_n = 0;
        p->cand_meas_bytes = 0;
        p->cand_meas_ns = 0;
    }
    p->staged_ns = (double)p->cand_meas_ns;
    double peer_bytes = (double)p->cand_meas_bytes;
    p->saved_n = p->cand_meas_n;
    if (p->cand_unmeas_n > 0 && p->staged_gbps > 0) {
        p->staged_ns += (double)p->cand_unmeas_bytes / p->staged_gbps;
        peer_bytes += (double)p->cand_unmeas_bytes;
        p->saved_n = report_add(p->saved_n, p->cand_unmeas_n, sat);
    } else if (p->cand_unmeas_n > 0) {
        p->unest_n = p->cand_unmeas_n;
        p->no_estimate = "copies CUPTI did not time need the topo table's "
                         "staged GB/s";
    }
    p->peer_ns = peer_bytes / p->peer_gbps;
    p->saved_ns = p->staged_ns - p->peer_ns;
}

/* A GPU-to-GPU trip through host memory costs at least what the driver's
 * staged copy of the same bytes costs (it stages through host memory too,
 * in pipelined chunks: a program's D2H then H2D is slower still), so the
 * saving is bytes / staged GB/s - bytes / peer GB/s: a lower bound. The
 * staged figure is the topo table's; the peer one the table's, else the
 * pair's best PTOP in the log. */
void report_price_bounce(struct report_summary *s, struct report_bounce *b)
{
    const struct report_link *l = report_price_link(s, b->from, b->to);
    const struct report_pair *p = NULL;
    for (int i = 0; i < s->npairs && !p; i++)
        if (s->pairs[i].src == b->from && s->pairs[i].dst == b->to)
            p = &s->pairs[i];
    b->peer_from = l && l->peer_gbps > 0 ? "topo"
                   : p && p->best_ptop_gbps > 0 ? "log" : NULL;
    b->peer_gbps = !b->peer_from ? 0 : l && l->peer_gbps > 0 ? l->peer_gbps : p->best_ptop_gbps;
    b->staged_gbps = l ? l->staged_gbps : 0;
    if (b->served || b->bytes <= 0)
        b->no_estimate = b->served ? "served" : "the events name no byte count";
    else if (l && l->can_peer == 0)
        b->no_estimate = "the topo table says this pair cannot peer";
    else if (b->staged_gbps <= 0)
        b->no_estimate = "no staged GB/s: no topo table entry for the pair";
    else if (b->peer_gbps <= 0)
        b->no_estimate = "no peer GB/s: no topo entry and no PTOP copy seen";
    else
        b->no_estimate = NULL;
    b->estimated = b->no_estimate == NULL;
    if (b->estimated)
        b->saved_ns = (double)b->bytes / b->staged_gbps - (double)b->bytes / b->peer_gbps;
}

