/* The report as a table for spreadsheets: `p2pshim report --format csv`
 * (RFC 4180: comma-separated, CRLF-free lines ending in '\n', a field
 * quoted where it holds a comma, a quote or a line break). One header
 * row, then one row per ordered GPU pair and path its copies took; the
 * columns are docs/LAUNCHER.md's. A figure the report cannot give is an
 * empty field, never a made-up 0. */
#include <stdio.h>
#include <string.h>

#include "report_internal.h"

static const char header[] =
    "host,src_gpu,src_uuid,src_pci,dst_gpu,dst_uuid,dst_pci,path,copies,bytes,"
    "timed_copies,timed_bytes,timed_ns,gbps,est_saved_ns\n";

static const char *const path_names[REPORT_NPATHS] = {"peer", "staged", "other"};

/* A text field from a log. A spreadsheet runs a cell starting with = + -
 * or @ as a formula: such a one gets a leading ' (shown as text). */
static void put_text(FILE *f, const char *s)
{
    s = s ? s : "";
    bool formula = strchr("=+-@", s[0]) != NULL && s[0] != '\0';
    if (!formula && strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    if (formula)
        fputc('\'', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* GPU index of the summary's table: index, UUID and bus id. */
static void put_gpu(FILE *f, const struct report_summary *s, int index)
{
    const struct report_gpu *g = index >= 0 && index < s->ngpus ? &s->gpus[index] : NULL;
    fprintf(f, "%d,", index);
    put_text(f, g ? g->uuid : NULL);
    fputc(',', f);
    put_text(f, g ? g->pci : NULL);
}

/* The row of pair p's copies that took path k. The saving estimate is the
 * pair's staged copies': on the staged row only, so that a column sums. */
static void put_row(FILE *f, const struct report_summary *s, const struct report_pair *p,
                    int k)
{
    const char *host = p->src >= 0 && p->src < s->ngpus ? s->gpus[p->src].host : NULL;
    put_text(f, host);
    fputc(',', f);
    put_gpu(f, s, p->src);
    fputc(',', f);
    put_gpu(f, s, p->dst);
    fprintf(f, ",%s,%lld,%lld,%lld,%lld,%lld,", path_names[k], (long long)p->n[k],
            (long long)p->b[k], (long long)p->act_n[k], (long long)p->act_bytes[k],
            (long long)p->act_ns[k]);
    if (p->act_ns[k] > 0)
        fprintf(f, "%.3f", report_gbps(p->act_bytes[k], p->act_ns[k]));
    fputc(',', f);
    if (k == REPORT_STAGED && p->saved_n > 0)
        fprintf(f, "%.0f", p->saved_ns);
    fputc('\n', f);
}

int report_csv_write(FILE *f, const struct report_summary *s)
{
    fputs(header, f);
    for (int i = 0; i < s->npairs; i++) {
        const struct report_pair *p = &s->pairs[i];
        for (int k = 0; k < REPORT_NPATHS; k++)
            if (p->n[k] > 0 || (k == REPORT_STAGED && p->saved_n > 0))
                put_row(f, s, p, k);
    }
    return ferror(f) ? -1 : 0;
}
