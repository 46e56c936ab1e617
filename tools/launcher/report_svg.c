/* The page's two inline SVG charts.
 * Heatmap: rows are sources, columns destinations, over the devices that
 * appear in a cross-GPU pair; colour on a log scale of bytes (a pair that
 * moved 1000 times less still shows), with a legend; each cell shows its
 * bytes and carries a <title> with the counts.
 * Bandwidth: log-log, copy size against GB/s, one point per log2 size bin
 * and path (bytes over CUPTI time of the bin's copies; staged copies timed by
 * the topo table where it has them), a bar from the
 * bin's slowest to its fastest copy. Bins keep memory fixed however many
 * copies the log holds. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "report_internal.h"

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Distinct devices of the pairs, sorted; returns how many (0: none). */
static int devices_of(const struct report_summary *s, int **out)
{
    int *d = malloc((size_t)(2 * s->npairs + 1) * sizeof *d), n = 0;
    *out = d;
    if (!d)
        return 0;
    for (int i = 0; i < s->npairs; i++) {
        d[n++] = s->pairs[i].src;
        d[n++] = s->pairs[i].dst;
    }
    qsort(d, (size_t)n, sizeof *d, cmp_int);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (m == 0 || d[m - 1] != d[i])
            d[m++] = d[i];
    return m;
}

/* Light blue to dark blue. */
static void colour(double t, char *buf, size_t len)
{
    static const int lo[3] = {0xde, 0xeb, 0xf7}, hi[3] = {0x08, 0x30, 0x6b};
    int c[3];
    for (int i = 0; i < 3; i++)
        c[i] = (int)lround(lo[i] + (hi[i] - lo[i]) * t);
    snprintf(buf, len, "#%02x%02x%02x", c[0], c[1], c[2]);
}

static const struct report_pair *find(const struct report_summary *s, int a, int b)
{
    for (int i = 0; i < s->npairs; i++)
        if (s->pairs[i].src == a && s->pairs[i].dst == b)
            return &s->pairs[i];
    return NULL;
}

/* The colour scale under the heatmap, lo to hi bytes, at (x, ly). */
static void heatmap_legend(FILE *f, int64_t lo, int64_t hi, int left, int ly, int lw)
{
    char a[32], b[32];
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"12\" "
            "fill=\"url(#scale)\"/>\n", left, ly, lw);
    fprintf(f, "<text x=\"%d\" y=\"%d\" id=\"legend-lo\">%s</text>"
            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" id=\"legend-hi\">%s</text>"
            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">bytes (log scale)</text>\n",
            left, ly + 28, report_fmt_bytes(lo, a, sizeof a), left + lw, ly + 28,
            report_fmt_bytes(hi, b, sizeof b), left + lw / 2, ly + 46);
}

void report_svg_heatmap(FILE *f, const struct report_summary *s)
{
    int *dev;
    int n = devices_of(s, &dev);
    if (n == 0) {
        fputs("<p id=\"heatmap-empty\">No cross-GPU copies.</p>\n", f);
        free(dev);
        return;
    }
    int64_t lo = 0, hi = 0;
    for (int i = 0; i < s->npairs; i++) {
        int64_t b = s->pairs[i].bytes;
        if (b > 0 && (lo == 0 || b < lo))
            lo = b;
        if (b > hi)
            hi = b;
    }
    int cell = n <= 8 ? 80 : n <= 16 ? 48 : 28, left = 70, top = 56;
    int w = left + n * cell + 40, h = top + n * cell + 84;
    fprintf(f, "<svg id=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" "
            "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
            w, h, w, h);
    fputs("<defs><linearGradient id=\"scale\">", f);
    for (int i = 0; i <= 4; i++) {
        char c[16];
        colour(i / 4.0, c, sizeof c);
        fprintf(f, "<stop offset=\"%d%%\" stop-color=\"%s\"/>", i * 25, c);
    }
    fputs("</linearGradient></defs>\n", f);
    fprintf(f, "<text x=\"%d\" y=\"14\" text-anchor=\"middle\">destination</text>\n",
            left + n * cell / 2);
    fprintf(f, "<text x=\"14\" y=\"%d\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 14 %d)\">source</text>\n",
            top + n * cell / 2, top + n * cell / 2);
    for (int i = 0; i < n; i++) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">GPU %d</text>\n",
                left + i * cell + cell / 2, top - 8, dev[i]);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">GPU %d</text>\n",
                left - 6, top + i * cell + cell / 2 + 4, dev[i]);
    }
    for (int r = 0; r < n; r++) {
        for (int c = 0; c < n; c++) {
            const struct report_pair *p = r == c ? NULL : find(s, dev[r], dev[c]);
            int x = left + c * cell, y = top + r * cell;
            char fill[16] = "#f4f4f4", b[32];
            double t = 0;
            if (p && p->bytes > 0) {
                t = hi > lo ? (log((double)p->bytes) - log((double)lo)) /
                              (log((double)hi) - log((double)lo)) : 1;
                colour(t, fill, sizeof fill);
            }
            fprintf(f, "<g class=\"cell\" id=\"cell-%d-%d\"><rect x=\"%d\" y=\"%d\" "
                    "width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#fff\"/>",
                    dev[r], dev[c], x, y, cell, cell, fill);
            if (p) {
                fprintf(f, "<title>GPU %d to GPU %d: %lld copies, %lld bytes, "
                        "%lld peer, %lld staged, %lld other</title>", p->src,
                        p->dst, (long long)p->copies, (long long)p->bytes,
                        (long long)p->n[0], (long long)p->n[1], (long long)p->n[2]);
                fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
                        "fill=\"%s\"%s>%s</text>", x + cell / 2, y + cell / 2 + 4,
                        t > 0.5 ? "#fff" : "#111",
                        cell < 48 ? " font-size=\"8\"" : "",
                        report_fmt_bytes(p->bytes, b, sizeof b));
            } else {
                fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
                        "fill=\"#999\">%s</text>", x + cell / 2, y + cell / 2 + 4,
                        r == c ? "&#183;" : "-");
            }
            fputs("</g>\n", f);
        }
    }
    heatmap_legend(f, lo, hi, left, top + n * cell + 24, n * cell < 160 ? 160 : n * cell);
    fputs("</svg>\n", f);
    free(dev);
}

/* ---- bandwidth against size ---- */

#define PW 640   /* plot area */
#define PH 340
#define PL 80    /* margins */
#define PT 20

struct axis {
    double lo, hi;   /* log10 of the range */
};

static double px(const struct axis *x, double v)
{
    return PL + (log10(v) - x->lo) / (x->hi - x->lo) * PW;
}

static double py(const struct axis *y, double v)
{
    return PT + PH - (log10(v) - y->lo) / (y->hi - y->lo) * PH;
}

static void point(FILE *f, const struct axis *ax, const struct axis *ay,
                  const struct report_bin *b, int staged)
{
    double size = (double)b->bytes / (double)b->n;
    double g = report_gbps(b->bytes, b->ns);
    double x = px(ax, size), y = py(ay, g);
    char sz[32];
    fprintf(f, "<g class=\"%s\"><title>%s: %lld copies around %s: %.1f GB/s "
            "(slowest %.1f, fastest %.1f)</title>", staged ? "staged" : "peer",
            staged ? "staged" : "peer", (long long)b->n,
            report_fmt_bytes(size < 9.2e18 ? (int64_t)size : INT64_MAX, sz, sizeof sz), g,
            b->min_gbps,
            b->max_gbps);
    if (b->max_gbps > b->min_gbps && b->min_gbps > 0)
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"%s\"/>", x, x, py(ay, b->min_gbps), py(ay, b->max_gbps),
                staged ? "#d95f02" : "#1b6ec2");
    if (staged)
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" "
                "fill=\"#d95f02\"/>", x - 4.5, y - 4.5);
    else
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#1b6ec2\"/>", x, y);
    fputs("</g>\n", f);
}

void report_svg_bandwidth(FILE *f, const struct report_summary *s)
{
    double xmin = 0, xmax = 0, ymin = 0, ymax = 0;
    int points = 0;
    for (int p = 0; p < 2; p++) {
        for (int i = 0; i < REPORT_BINS; i++) {
            const struct report_bin *b = &s->bins[p][i];
            if (!b->n || b->ns <= 0 || b->bytes <= 0)
                continue;
            double size = (double)b->bytes / (double)b->n;
            double lo = b->min_gbps > 0 ? b->min_gbps : report_gbps(b->bytes, b->ns);
            double hi = fmax(b->max_gbps, report_gbps(b->bytes, b->ns));
            xmin = points ? fmin(xmin, size) : size;
            xmax = points ? fmax(xmax, size) : size;
            ymin = points ? fmin(ymin, lo) : lo;
            ymax = points ? fmax(ymax, hi) : hi;
            points++;
        }
    }
    if (!points) {
        fputs("<p id=\"bandwidth-empty\">No timed cross-GPU copy (CUPTI "
              "activity) to plot.</p>\n", f);
        return;
    }
    /* Whole powers: of 2 for sizes, with one to spare on each side so no
     * point sits on the frame; of 10 for GB/s. */
    struct axis ax = {(floor(log10(xmin) / log10(2)) - 1) * log10(2),
                      (ceil(log10(xmax) / log10(2)) + 1) * log10(2)};
    struct axis ay = {floor(log10(ymin)), ceil(log10(ymax))};
    if (ay.hi - ay.lo < 1)
        ay.hi = ay.lo + 1;
    int w = PL + PW + 200, h = PT + PH + 50;
    fprintf(f, "<svg id=\"bandwidth\" xmlns=\"http://www.w3.org/2000/svg\" "
            "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
            w, h, w, h);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
            "stroke=\"#999\"/>\n", PL, PT, PW, PH);
    int steps = (int)lround((ax.hi - ax.lo) / log10(2));
    int every = (steps + 9) / 10;   /* at most about ten labels */
    for (int i = 0; i <= steps; i += every) {
        double v = pow(2, ax.lo / log10(2) + i);
        double x = px(&ax, v);
        char b[32];
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" "
                "stroke=\"#eee\"/><text x=\"%.1f\" y=\"%d\" "
                "text-anchor=\"middle\">%s</text>\n", x, x, PT, PT + PH, x,
                PT + PH + 16, report_fmt_bytes((int64_t)llround(v), b, sizeof b));
    }
    for (int e = (int)ay.lo; e <= (int)ay.hi; e++) {
        double y = py(&ay, pow(10, e));
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#eee\"/><text x=\"%d\" y=\"%.1f\" "
                "text-anchor=\"end\">%g</text>\n", PL, PL + PW, y, y, PL - 6,
                y + 4, pow(10, e));
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">copy size</text>\n",
            PL + PW / 2, PT + PH + 40);
    fprintf(f, "<text x=\"16\" y=\"%d\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 16 %d)\">GB/s</text>\n", PT + PH / 2, PT + PH / 2);
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < REPORT_BINS; i++)
            if (s->bins[p][i].n && s->bins[p][i].ns > 0 && s->bins[p][i].bytes > 0)
                point(f, &ax, &ay, &s->bins[p][i], p);
    int lx = PL + PW + 20;
    fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"5\" fill=\"#1b6ec2\"/>"
            "<text x=\"%d\" y=\"%d\">peer (PTOP)</text>\n"
            "<rect x=\"%d\" y=\"%d\" width=\"9\" height=\"9\" fill=\"#d95f02\"/>"
            "<text x=\"%d\" y=\"%d\">staged (DTOH+HTOD)</text>\n",
            lx, PT + 10, lx + 10, PT + 14, lx - 4, PT + 26, lx + 10, PT + 34);
    fputs("</svg>\n", f);
}
