/* Units and escaping shared by the renderers. Binary units for sizes
 * (KiB = 1024 B); decimal GB/s (the log's gbps: bytes per ns). */
#include <stdio.h>
#include <string.h>

#include "report_internal.h"

const char *report_fmt_bytes(int64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024 && bytes > -1024) {
        snprintf(buf, len, "%lld B", (long long)bytes);
        return buf;
    }
    double v = (double)bytes / 1024;
    int u = 0;
    while (u < 4 && (v >= 1024 || v <= -1024)) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}

const char *report_fmt_ns(double ns, char *buf, size_t len)
{
    double a = ns < 0 ? -ns : ns;
    if (a < 1e3)
        snprintf(buf, len, "%.0f ns", ns);
    else if (a < 1e6)
        snprintf(buf, len, "%.1f \xc2\xb5s", ns / 1e3);
    else if (a < 1e9)
        snprintf(buf, len, "%.1f ms", ns / 1e6);
    else
        snprintf(buf, len, "%.2f s", ns / 1e9);
    return buf;
}

const char *report_fmt_gbps(double gbps, char *buf, size_t len)
{
    if (!(gbps > 0))
        return "-";
    snprintf(buf, len, "%.1f", gbps);
    return buf;
}

const char *report_fmt_pair(int src, int dst, char *buf, size_t len)
{
    if (src < 0 && dst < 0)
        snprintf(buf, len, "local");
    else
        snprintf(buf, len, "%d->%d", src, dst);
    return buf;
}

/* The log is UTF-8 (jansson checked it); C0, DEL and the C1 controls
 * (U+0080..U+009F, 0xC2 0x80..0x9F) could drive a terminal: shown as '?'. */
void report_put_plain(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    for (; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            fputc('?', f);
        } else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
            fputc('?', f);
            p++;
        } else {
            fputc(*p, f);
        }
    }
}

/* Control characters are not allowed in HTML text: shown as '?'. */
void report_put_html(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p < 0x20 || *p == 0x7f || (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)) {
            fputc('?', f);
            p += *p == 0xc2;
            continue;
        }
        switch (*p) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*p, f);
        }
    }
}

/* As report_put_html, keeping newlines (for a <pre>). */
void report_put_html_lines(FILE *f, const char *s)
{
    const char *p = s ? s : "";
    while (*p) {
        size_t n = strcspn(p, "\n");
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        report_put_html(f, line);
        if (p[n] == '\n')
            fputc('\n', f);
        p += n + (p[n] == '\n');
    }
}
