/* The bandwidth table `p2pshim topo --measure` writes (docs/LOG_FORMAT.md):
 * per ordered pair, whether it can peer and the staged and peer GB/s. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "report_internal.h"

/* P2PSHIM_TOPO_FILE names the table explicitly, so it wins; then the XDG
 * cache, then ~/.cache. (LOG_FORMAT.md lists the three without an order.) */
char *report_topo_default_path(void)
{
    const char *env = getenv("P2PSHIM_TOPO_FILE");
    if (env && *env)
        return strdup(env);
    const char *base = getenv("XDG_CACHE_HOME"), *sub = "p2pshim/topo.json";
    if (!base || !*base) {
        base = getenv("HOME");
        sub = ".cache/p2pshim/topo.json";
    }
    if (!base || !*base)
        return NULL;
    char *p = NULL;
    if (asprintf(&p, "%s/%s", base, sub) < 0)
        return NULL;
    return p;
}

static double get_gbps(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    double d = json_is_number(v) ? json_number_value(v) : 0;
    return d > 0 && d < 1e9 ? d : 0;   /* also rejects NaN */
}

static int get_dev(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > (1 << 24))
        return -1;
    return (int)json_integer_value(v);
}

/* Where the table was measured: its host and each device's UUID and bus
 * id (older tables name no UUID). */
static void read_identity(json_t *root, struct report_topo *t)
{
    const char *host = json_string_value(json_object_get(root, "host"));
    snprintf(t->host, sizeof t->host, "%s", host ? host : "");
    json_t *devs = json_object_get(root, "devices");
    for (size_t i = 0; i < json_array_size(devs); i++) {
        json_t *d = json_array_get(devs, i);
        int ord = get_dev(d, "ordinal");
        if (ord < 0 || ord >= REPORT_TOPO_DEVS)
            continue;
        const char *uuid = json_string_value(json_object_get(d, "uuid"));
        const char *pci = json_string_value(json_object_get(d, "pci"));
        snprintf(t->devs[ord].uuid, sizeof t->devs[ord].uuid, "%s", uuid ? uuid : "");
        snprintf(t->devs[ord].pci, sizeof t->devs[ord].pci, "%s", pci ? pci : "");
        if (ord >= t->ndevs)
            t->ndevs = ord + 1;
    }
}

int report_topo_load(const char *path, struct report_topo *t, char *err,
                     size_t errlen)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return 1;
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    json_error_t jerr;
    json_t *root = json_loadf(f, 0, &jerr);
    fclose(f);
    if (!root) {
        snprintf(err, errlen, "%s:%d: invalid JSON: %s", path, jerr.line,
                 jerr.text);
        return -1;
    }
    const char *format = json_string_value(json_object_get(root, "format"));
    json_t *links = json_object_get(root, "links");
    if (!format || strcmp(format, "p2pshim-topo") != 0 ||
        !json_is_array(links)) {
        snprintf(err, errlen, "%s: not a p2pshim bandwidth table (format "
                 "\"p2pshim-topo\" with a links array)", path);
        json_decref(root);
        return -1;
    }
    read_identity(root, t);
    size_t n = json_array_size(links);
    t->links = calloc(n ? n : 1, sizeof *t->links);
    t->path = strdup(path);
    if (!t->links || !t->path) {
        snprintf(err, errlen, "%s: out of memory", path);
        json_decref(root);
        report_topo_free(t);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *l = json_array_get(links, i);
        struct report_link *k = &t->links[t->nlinks];
        if (!json_is_object(l))
            continue;
        k->src = get_dev(l, "src");
        k->dst = get_dev(l, "dst");
        if (k->src < 0 || k->dst < 0)
            continue;
        json_t *cp = json_object_get(l, "can_peer");
        k->can_peer = json_is_boolean(cp) ? json_is_true(cp) : -1;
        k->staged_gbps = get_gbps(l, "staged_gbps");
        k->peer_gbps = get_gbps(l, "peer_gbps");
        const char *type = json_string_value(json_object_get(l, "type"));
        snprintf(k->type, sizeof k->type, "%s", type ? type : "");
        json_t *nv = json_object_get(l, "nvlinks");
        k->nvlinks = json_is_integer(nv) ? (int)json_integer_value(nv) : -1;
        t->nlinks++;
    }
    t->loaded = true;
    json_decref(root);
    return 0;
}

const struct report_link *report_topo_link(const struct report_topo *t,
                                           int src, int dst)
{
    for (int i = 0; t && i < t->nlinks; i++)
        if (t->links[i].src == src && t->links[i].dst == dst)
            return &t->links[i];
    return NULL;
}

/* The ordinal of the device whose member (uuid or pci) is value; -1 none,
 * -2 when the table names no such member at all. */
static int find_dev(const struct report_topo *t, bool by_uuid, const char *value)
{
    bool named = false;
    for (int k = 0; k < t->ndevs; k++) {
        const char *m = by_uuid ? t->devs[k].uuid : t->devs[k].pci;
        named = named || m[0];
        if (m[0] && strcasecmp(m, value) == 0)
            return k;
    }
    return named ? -1 : -2;
}

int report_topo_ordinal(const struct report_topo *t, const struct report_gpu *g, char *why,
                        size_t why_len)
{
    if (!t || !t->loaded)
        return -1;
    if (t->host[0] && g->host[0] && strcmp(t->host, g->host) != 0)
        return -1;
    int k = g->uuid[0] ? find_dev(t, true, g->uuid) : -2;
    if (k == -2 && g->pci[0])
        k = find_dev(t, false, g->pci);
    if (k == -1)
        snprintf(why, why_len, "it names no GPU %s of host %s (it was measured with other GPUs)",
                 g->uuid[0] ? g->uuid : g->pci, g->host[0] ? g->host : "(unknown)");
    return k == -2 ? g->ordinal : k;
}

void report_topo_free(struct report_topo *t)
{
    free(t->links);
    free(t->path);
    memset(t, 0, sizeof *t);
}
