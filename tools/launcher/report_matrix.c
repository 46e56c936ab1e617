/* The traffic matrix per host, GPUs named by PCI bus id and UUID rather than
 * by device ordinal: ordinals differ between processes under
 * CUDA_VISIBLE_DEVICES, while the summary's GPU table merges them by UUID.
 * Text (with its data record) and HTML renderings; report_json.c has the
 * JSON one. */
#define _GNU_SOURCE
#include <jansson.h>
#include <string.h>

#include "report_internal.h"

/* Whether GPU i is the first of its host in the table. */
static bool first_of_host(const struct report_summary *s, int i)
{
    if (!s->gpus[i].used)
        return false;
    for (int k = 0; k < i; k++)
        if (s->gpus[k].used && strcmp(s->gpus[k].host, s->gpus[i].host) == 0)
            return false;
    return true;
}

static bool same_host(const struct report_summary *s, int i, int first)
{
    return s->gpus[i].used && strcmp(s->gpus[i].host, s->gpus[first].host) == 0;
}

/* A GPU's short name: its bus id, else its UUID, else "GPU n". */
static const char *gpu_label(const struct report_summary *s, int i, char *buf, size_t len)
{
    const struct report_gpu *g = &s->gpus[i];
    if (g->pci[0])
        return g->pci;
    if (g->uuid[0])
        return g->uuid;
    snprintf(buf, len, "GPU %d", i);
    return buf;
}

static bool any_traffic(const struct report_summary *s)
{
    for (int i = 0; i < s->npairs; i++)
        if (s->pairs[i].bytes > 0)
            return true;
    return false;
}

void report_matrix_text(FILE *f, const struct report_summary *s)
{
    if (!any_traffic(s))
        return;
    for (int h = 0; h < s->ngpus; h++) {
        if (!first_of_host(s, h))
            continue;
        char l[32], b[32];
        fputs("\nTraffic matrix on ", f);
        report_put_plain(f, s->gpus[h].host[0] ? s->gpus[h].host : "(unknown host)");
        fprintf(f, " (bytes from row to column; GPUs by PCI bus id)\n  %-14s", "from \\ to");
        for (int j = h; j < s->ngpus; j++)
            if (same_host(s, j, h))
                fprintf(f, " %14.14s", gpu_label(s, j, l, sizeof l));
        fputc('\n', f);
        for (int i = h; i < s->ngpus; i++) {
            if (!same_host(s, i, h))
                continue;
            fprintf(f, "  %-14.14s", gpu_label(s, i, l, sizeof l));
            for (int j = h; j < s->ngpus; j++) {
                int64_t n = same_host(s, j, h) ? report_pair_bytes(s, i, j) : -1;
                if (n >= 0)
                    fprintf(f, " %14s", n ? report_fmt_bytes(n, b, sizeof b) : "-");
            }
            fputc('\n', f);
        }
    }
}

json_t *report_matrix_data(const struct report_summary *s, int h)
{
    if (!first_of_host(s, h) || !any_traffic(s))
        return NULL;
    json_t *gpus = json_array(), *rows = json_array(), *o = json_object();
    for (int i = h; i < s->ngpus; i++) {
        if (!same_host(s, i, h))
            continue;
        const char *uuid = s->gpus[i].uuid;
        json_array_append_new(gpus, uuid[0] ? json_string(uuid) : json_integer(i));
        json_t *row = json_array();
        for (int j = h; j < s->ngpus; j++)
            if (same_host(s, j, h))
                json_array_append_new(row, json_integer(report_pair_bytes(s, i, j)));
        json_array_append_new(rows, row);
    }
    json_object_set_new(o, "record", json_string("matrix"));
    json_t *host = json_string(s->gpus[h].host);
    json_object_set_new(o, "host", host ? host : json_null());
    json_object_set_new(o, "gpus", gpus);
    json_object_set_new(o, "bytes", rows);
    return o;
}

void report_matrix_html(FILE *f, const struct report_summary *s)
{
    if (!any_traffic(s))
        return;
    for (int h = 0; h < s->ngpus; h++) {
        if (!first_of_host(s, h))
            continue;
        char l[32], b[32];
        fputs("<table class=\"matrix\"><caption>", f);
        report_put_html(f, s->gpus[h].host[0] ? s->gpus[h].host : "(unknown host)");
        fputs(": bytes from row to column</caption>\n<tr><th>from \\ to</th>", f);
        for (int j = h; j < s->ngpus; j++) {
            if (!same_host(s, j, h))
                continue;
            fputs("<th title=\"", f);
            report_put_html(f, s->gpus[j].uuid);
            fputs("\">", f);
            report_put_html(f, gpu_label(s, j, l, sizeof l));
            fputs("</th>", f);
        }
        fputs("</tr>\n", f);
        for (int i = h; i < s->ngpus; i++) {
            if (!same_host(s, i, h))
                continue;
            fputs("<tr><th title=\"", f);
            report_put_html(f, s->gpus[i].uuid);
            fputs("\">", f);
            report_put_html(f, gpu_label(s, i, l, sizeof l));
            fputs("</th>", f);
            for (int j = h; j < s->ngpus; j++) {
                if (!same_host(s, j, h))
                    continue;
                int64_t n = report_pair_bytes(s, i, j);
                fputs("<td data-src=\"", f);
                report_put_html(f, s->gpus[i].uuid);
                fputs("\" data-dst=\"", f);
                report_put_html(f, s->gpus[j].uuid);
                fprintf(f, "\" data-bytes=\"%lld\" class=\"n\">%s</td>", (long long)n,
                        n ? report_fmt_bytes(n, b, sizeof b) : "-");
            }
            fputs("</tr>\n", f);
        }
        fputs("</table>\n", f);
    }
}
