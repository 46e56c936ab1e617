/* The estimate from the run's own records, where the measured pricing
 * (report_price.c: a measured bandwidth table, the log's PTOP copies)
 * gives no saving: staged copies' CUPTI times, the host link's rates the
 * run timed, and the peer rate the pair's link gives at a conservative
 * rate per link (docs/LAUNCHER.md, "Estimates"). Every figure from here
 * is labelled an estimate by the renderers (s->estimate, s->basis). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "report_internal.h"

double report_price_host_gbps(const struct report_summary *s)
{
    if (s->h2d_gbps > 0 && s->d2h_gbps > 0)
        return fmin(s->h2d_gbps, s->d2h_gbps);
    return fmax(s->h2d_gbps, s->d2h_gbps);
}

static bool nvlink_type(const char *type)
{
    return strcmp(type, "NVLink") == 0 || strcmp(type, "NVSwitch") == 0;
}

/* Whether GPU index g is a GPU of this host with a bus id NVML can look up. */
static bool local_gpu(const struct report_summary *s, int g)
{
    char host[256] = "";
    if (g < 0 || g >= s->ngpus || !s->gpus[g].pci[0] || gethostname(host, sizeof host - 1) != 0)
        return false;
    return !s->gpus[g].host[0] || strcmp(s->gpus[g].host, host) == 0;
}

/* The rate of a link of this type and NVLink count: REPORT_NVLINK_GBPS a
 * link for NVLink and NVSwitch; 0 for any other type (PCIe). */
static double nvlink_rate(const char *type, int nvlinks)
{
    return nvlink_type(type) ? REPORT_NVLINK_GBPS * (nvlinks > 0 ? nvlinks : 1) : 0;
}

/* The link of src -> dst: the table's type, else NVML's where both GPUs
 * are of this host (the launcher's report_nvml_link). *from "link" or
 * "nvml"; NULL when neither knows it. */
static const char *link_of(struct report_summary *s, const struct report_link *l, int src,
                           int dst, char *type, size_t len, int *nvlinks)
{
    if (l && l->type[0]) {
        snprintf(type, len, "%s", l->type);
        *nvlinks = l->nvlinks;
        return "link";
    }
    if (report_nvml_link && local_gpu(s, src) && local_gpu(s, dst) &&
        report_nvml_link(s->gpus[src].pci, s->gpus[dst].pci, type, len, nvlinks))
        return "nvml";
    return NULL;
}

double report_price_peer_gbps(struct report_summary *s, int src, int dst, double best_ptop,
                              const char **from, char *link, size_t len)
{
    const struct report_link *l = report_price_link(s, src, dst);
    if (len)
        link[0] = '\0';
    if (best_ptop > 0) {
        *from = "log";
        return best_ptop;
    }
    char type[24] = "";
    int nvlinks = -1;
    *from = link_of(s, l, src, dst, type, sizeof type, &nvlinks);
    if (*from)
        snprintf(link, len, nvlink_type(type) ? "%s x%d" : "%s", type,
                 nvlinks > 0 ? nvlinks : 1);
    if (*from && nvlink_rate(type, nvlinks) > 0)
        return nvlink_rate(type, nvlinks);
    *from = *from ? *from : "assumed";
    double host = report_price_host_gbps(s);
    return host > 0 ? host : REPORT_PCIE_GBPS;
}

/* report_price_peer_gbps, noting the first link named in s->est_link;
 * *l_out the table's link, NULL none. */
static double peer_rate(struct report_summary *s, int src, int dst, double best_ptop,
                        const char **from, const struct report_link **l_out)
{
    char link[sizeof s->est_link];
    *l_out = report_price_link(s, src, dst);
    double g = report_price_peer_gbps(s, src, dst, best_ptop, from, link, sizeof link);
    if (link[0] && !s->est_link[0])
        snprintf(s->est_link, sizeof s->est_link, "%s", link);
    return g;
}

static void estimate_pair(struct report_summary *s, struct report_pair *p)
{
    int64_t cand = p->cand_meas_n + p->cand_unmeas_n;
    if (p->saved_n > 0 || cand <= 0)
        return;
    const struct report_link *l;
    const char *from;
    double peer = peer_rate(s, p->src, p->dst, p->best_ptop_gbps, &from, &l);
    if (l && l->can_peer == 0)
        return;
    double host = report_price_host_gbps(s), staged = 0, bytes = 0;
    int64_t n = 0;
    if (l && l->staged_gbps > 0) {
        bytes = (double)p->cand_meas_bytes + (double)p->cand_unmeas_bytes;
        staged = bytes / l->staged_gbps;
        n = cand;
    } else {
        /* CUPTI's records of a staged copy may time one staging chunk
         * only (report_price.c): the copy takes at least its bytes at the
         * host link's rate, both hops pipelined. */
        staged = (double)p->cand_meas_ns;
        bytes = (double)p->cand_meas_bytes;
        n = p->cand_meas_n;
        if (host > 0) {
            staged = fmax(staged, bytes / host) + (double)p->cand_unmeas_bytes / host;
            bytes += (double)p->cand_unmeas_bytes;
            n += p->cand_unmeas_n;
        }
    }
    if (n <= 0 || bytes <= 0 || staged <= 0)
        return;
    p->est_n = n;
    p->est_staged_ns = staged;
    p->est_peer_gbps = peer;
    p->est_peer_from = from;
    p->est_saved_ns = fmax(0, staged - bytes / peer);
}

/* A program's D2H then H2D of the same buffer: the stream runs them one
 * after the other, each at the host link's rate the run timed for its
 * direction (the table's staged GB/s where there is one). */
static void estimate_bounce(struct report_summary *s, struct report_bounce *b)
{
    if (b->estimated || b->served || b->bytes <= 0)
        return;
    const struct report_pair *p = NULL;
    for (int i = 0; i < s->npairs && !p; i++)
        if (s->pairs[i].src == b->from && s->pairs[i].dst == b->to)
            p = &s->pairs[i];
    const struct report_link *l;
    const char *from;
    double peer = peer_rate(s, b->from, b->to, p ? p->best_ptop_gbps : 0, &from, &l);
    if (l && l->can_peer == 0)
        return;
    double bytes = (double)b->bytes, staged;
    if (l && l->staged_gbps > 0)
        staged = bytes / l->staged_gbps;
    else if (s->d2h_gbps > 0 && s->h2d_gbps > 0)
        staged = bytes / s->d2h_gbps + bytes / s->h2d_gbps;
    else
        return;
    b->est = true;
    b->est_staged_gbps = bytes / staged;
    b->est_peer_gbps = peer;
    b->est_peer_from = from;
    b->est_saved_ns = fmax(0, staged - bytes / peer);
}

/* Where an estimate's peer rate came from (from: as report_pair's
 * peer_from; link: its type, "NVLink x2"), as the basis words it. */
static const char *link_words(const char *from, const char *link, char *buf, size_t len)
{
    if (from && strcmp(from, "log") == 0)
        snprintf(buf, len, "the best peer copy of the logs");
    else if (from && strcmp(from, "topo") == 0)
        snprintf(buf, len, "the measured bandwidth table");
    else if (from && (strcmp(from, "link") == 0 || strcmp(from, "nvml") == 0))
        snprintf(buf, len, "the link %s (%s), at %.0f GB/s per NVLink (PCIe: the host "
                 "link's rate)", strcmp(from, "nvml") == 0 ? "NVML names" : "the bandwidth "
                 "table names", link, REPORT_NVLINK_GBPS);
    else
        snprintf(buf, len, "no link type known (no NVML, no bandwidth table), taken as PCIe "
                 "at the host link's rate");
    return buf;
}

/* The basis sentence: what the estimate's figures rest on. */
static void put_basis(struct report_summary *s, const char *from)
{
    char g1[32], g2[32], link[160];
    int n = snprintf(s->basis, sizeof s->basis, "estimate from this run's records: ");
    if (n < 0 || (size_t)n >= sizeof s->basis)
        return;
    if (s->h2d_gbps > 0 || s->d2h_gbps > 0)
        n += snprintf(s->basis + n, sizeof s->basis - (size_t)n,
                      "staged copies' CUPTI times and the host link as timed (H2D %s GB/s, "
                      "D2H %s GB/s); ", report_fmt_gbps(s->h2d_gbps, g1, sizeof g1),
                      report_fmt_gbps(s->d2h_gbps, g2, sizeof g2));
    else
        n += snprintf(s->basis + n, sizeof s->basis - (size_t)n,
                      "staged copies' CUPTI times (no host copy timed); ");
    if (n < 0 || (size_t)n >= sizeof s->basis)
        return;
    snprintf(s->basis + n, sizeof s->basis - (size_t)n, "peer rate: %s",
             link_words(from, s->est_link, link, sizeof link));
}

void report_price_basis(struct report_summary *s)
{
    const char *from = NULL;
    bool measured = false;
    s->saving_ns = 0;
    s->saving_known = false;
    s->estimate = false;
    s->est_link[0] = '\0';
    for (int i = 0; i < s->npairs; i++) {
        struct report_pair *p = &s->pairs[i];
        estimate_pair(s, p);
        if (p->saved_n > 0) {
            s->saving_ns += p->saved_ns;
            measured = true;
        } else if (p->est_n > 0) {
            s->saving_ns += p->est_saved_ns;
            from = from ? from : p->est_peer_from;
        }
    }
    for (int i = 0; i < s->nbounces; i++) {
        struct report_bounce *b = &s->bounces[i];
        estimate_bounce(s, b);
        if (b->estimated) {
            s->saving_ns += b->saved_ns;
            measured = true;
        } else if (b->est) {
            s->saving_ns += b->est_saved_ns;
            from = from ? from : b->est_peer_from;
        }
    }
    s->estimate = from != NULL;
    s->saving_known = measured || s->estimate;
    s->basis[0] = '\0';
    if (s->estimate)
        put_basis(s, from);
    else if (measured)
        snprintf(s->basis, sizeof s->basis, "%s",
                 s->topo_priced ? "the measured bandwidth table (p2pshim topo --measure)"
                                : "CUPTI times of this run's copies, peer rate from the "
                                  "best peer copy of the logs");
}
