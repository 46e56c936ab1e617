/* Traffic over time per GPU pair (report_internal.h): bins on one axis
 * that widens as copies arrive, and its chart for the HTML report. */
#include <stdio.h>
#include <string.h>

#include "report_internal.h"

#define FIRST_WIDTH_NS 1000   /* 1 us bins at first; doubled as needed */

/* Doubles the axis: to the right (bins merged into the lower half) or to
 * the left (into the upper half, t0 moved back by the old span). */
static void widen(struct report_summary *s, bool left)
{
    struct report_timeline *t = &s->timeline;
    const int half = REPORT_TBINS / 2;
    for (int k = 0; k < s->npairs; k++) {
        int64_t *b = s->pairs[k].tbytes, merged[REPORT_TBINS] = {0};
        for (int i = 0; i < half; i++)
            merged[(left ? half : 0) + i] =
                report_add(b[2 * i], b[2 * i + 1], &s->saturated);
        memcpy(b, merged, sizeof merged);
    }
    if (left)
        t->t0 = report_sub(t->t0, t->width * REPORT_TBINS, &s->saturated);
    t->width *= 2;
}

void report_timeline_add(struct report_summary *s, struct report_pair *p, int64_t t_ns,
                         int64_t bytes)
{
    struct report_timeline *t = &s->timeline;
    if (!t->any) {
        t->any = true;
        t->t0 = t_ns;
        t->width = FIRST_WIDTH_NS;
    }
    /* Some 63 doublings reach any int64 span; stop before overflow. A
     * time at or past t0 is that far from it in uint64 (an int64 span
     * may not hold it: a log's times can be anything). */
    while (t->width < INT64_MAX / (4 * REPORT_TBINS)) {
        if (t_ns < t->t0)
            widen(s, true);
        else if (((uint64_t)t_ns - (uint64_t)t->t0) / (uint64_t)t->width >= REPORT_TBINS)
            widen(s, false);
        else
            break;
    }
    uint64_t i = t_ns < t->t0 ? 0 : ((uint64_t)t_ns - (uint64_t)t->t0) / (uint64_t)t->width;
    if (i >= REPORT_TBINS)
        i = REPORT_TBINS - 1;
    p->tbytes[i] = report_add(p->tbytes[i], bytes, &s->saturated);
}

#define TW 640   /* plot area */
#define TH 220
#define TL 80    /* margins */
#define TT 20
#define MAX_LINES 8

static const char *const palette[MAX_LINES] = {"#1b6ec2", "#d95f02", "#1b9e77", "#7570b3",
                                               "#e7298a", "#66a61e", "#a6761d", "#666666"};

/* The pairs drawn: those with traffic in the bins, most bytes first. */
static int chosen(const struct report_summary *s, int *idx)
{
    int n = 0;
    for (int k = 0; k < s->npairs; k++) {
        int64_t sum = 0;
        for (int i = 0; i < REPORT_TBINS; i++)
            sum |= s->pairs[k].tbytes[i];
        if (sum == 0)
            continue;
        int j = n < MAX_LINES ? n++ : MAX_LINES - 1;
        if (j == MAX_LINES - 1 && n == MAX_LINES &&
            s->pairs[idx[j]].bytes >= s->pairs[k].bytes)
            continue;
        idx[j] = k;
        for (; j > 0 && s->pairs[idx[j - 1]].bytes < s->pairs[idx[j]].bytes; j--) {
            int x = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = x;
        }
    }
    return n;
}

static void series(FILE *f, const struct report_summary *s, const struct report_pair *p,
                   const char *colour, double gmax, int row)
{
    const struct report_timeline *t = &s->timeline;
    int64_t total = 0;
    bool sat = false;
    fprintf(f, "<g class=\"series\" data-pair=\"%d-%d\"><polyline fill=\"none\" "
            "stroke=\"%s\" stroke-width=\"2\" points=\"", p->src, p->dst, colour);
    for (int i = 0; i < REPORT_TBINS; i++) {
        double g = (double)p->tbytes[i] / (double)t->width; /* bytes/ns = GB/s */
        total = report_add(total, p->tbytes[i], &sat);
        fprintf(f, "%.1f,%.1f ", TL + (i + 0.5) * TW / REPORT_TBINS, TT + TH - g / gmax * TH);
    }
    fprintf(f, "\"/><text x=\"%d\" y=\"%d\" fill=\"%s\" data-bytes=\"%lld\">GPU %d to GPU %d"
            "</text></g>\n", TL + TW + 8, TT + 14 + 16 * row, colour, (long long)total, p->src,
            p->dst);
}

void report_svg_timeline(FILE *f, const struct report_summary *s)
{
    int idx[MAX_LINES];
    int n = s->timeline.any ? chosen(s, idx) : 0;
    if (n == 0) {
        fputs("<p id=\"timeline\">No cross-GPU copy with a time.</p>\n", f);
        return;
    }
    double gmax = 0;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < REPORT_TBINS; i++) {
            double g = (double)s->pairs[idx[k]].tbytes[i] / (double)s->timeline.width;
            gmax = g > gmax ? g : gmax;
        }
    char span[32], bin[32];
    report_fmt_ns((double)s->timeline.width * REPORT_TBINS, span, sizeof span);
    report_fmt_ns((double)s->timeline.width, bin, sizeof bin);
    fprintf(f, "<svg id=\"timeline\" width=\"%d\" height=\"%d\" role=\"img\" "
            "aria-label=\"bytes issued per GPU pair over time, as GB/s per bin\">\n", TL + TW + 140, TT + TH + 40);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
            "stroke=\"#999\"/>\n<text x=\"%d\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\" "
            "text-anchor=\"end\">%s</text>\n<text x=\"4\" y=\"%d\">%.1f GB/s</text>"
            "<text x=\"%d\" y=\"%d\">time, first to last copy (bins of %s)</text>\n",
            TL, TT, TW, TH, TL, TT + TH + 16, TL + TW, TT + TH + 16, span, TT + 10, gmax,
            TL + TW / 3, TT + TH + 32, bin);
    for (int k = 0; k < n; k++)
        series(f, s, &s->pairs[idx[k]], palette[k], gmax > 0 ? gmax : 1, k);
    fputs("</svg>\n", f);
    if (s->npairs > n)
        fprintf(f, "<p class=\"note\">The %d pairs with the most bytes are drawn.</p>\n", n);
}
