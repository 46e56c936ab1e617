/* A run log's lines, as report_log.c's passes read them: one at a time
 * through a read-ahead buffer, each kept up to the line limit (the rest
 * of a longer line is dropped as it is read, so memory never follows a
 * line's length); and a line parsed as JSON with integers past the
 * 64-bit signed range clamped, not refused (the shim writes sizes as
 * unsigned 64-bit numbers; jansson's integers are signed). */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

#define READ_AHEAD (1u << 16)

bool report_reader_init(struct report_reader *r, FILE *f, size_t max)
{
    memset(r, 0, sizeof *r);
    r->f = f;
    r->max = max;
    r->buf = malloc(READ_AHEAD);
    return r->buf != NULL;
}

void report_reader_reset(struct report_reader *r, FILE *f)
{
    r->f = f;
    r->pos = r->end = 0;
    r->kept = 0;
}

void report_reader_free(struct report_reader *r)
{
    free(r->line);
    free(r->buf);
    memset(r, 0, sizeof *r);
}

/* Appends up to n bytes of p to the line, as far as the limit allows. */
static bool keep(struct report_reader *r, const char *p, size_t n)
{
    size_t room = r->max - r->kept;
    if (n > room)
        n = room;
    if (r->kept + n > r->cap) {
        size_t cap = r->cap ? r->cap : 256;
        while (cap < r->kept + n)
            cap = cap > r->max / 2 ? r->max : 2 * cap;
        char *line = realloc(r->line, cap);
        if (!line)
            return false;
        r->line = line;
        r->cap = cap;
    }
    memcpy(r->line + r->kept, p, n);
    r->kept += n;
    return true;
}

int64_t report_reader_next(struct report_reader *r)
{
    int64_t total = 0;
    bool any = false, room = true;
    r->kept = 0;
    r->newline = false;
    for (;;) {
        if (r->pos == r->end) {
            r->pos = 0;
            r->end = fread(r->buf, 1, READ_AHEAD, r->f);
            if (r->end == 0)
                return any && !ferror(r->f) ? total : -1;
        }
        any = true;
        const char *p = r->buf + r->pos;
        const char *nl = memchr(p, '\n', r->end - r->pos);
        size_t n = nl ? (size_t)(nl - p) + 1 : r->end - r->pos;
        if (room && !keep(r, p, n)) {
            /* No memory for the line: kept short, it reads as too long. */
            room = false;
            r->kept = 0;
        }
        total += (int64_t)n;
        r->pos += n;
        if (nl) {
            r->newline = true;
            return total;
        }
    }
}

/* Rewrites each integer of the line (outside strings) that lies past the
 * int64 range as INT64_MAX or INT64_MIN, padded with spaces to its
 * length (a number past the range has at least as many digits as the
 * limit). Returns how many it rewrote. */
static int clamp_integers(char *s, size_t len)
{
    static const char max[] = "9223372036854775807", min[] = "9223372036854775808";
    bool in_string = false;
    int n = 0;
    for (size_t i = 0; i < len; i++) {
        if (in_string) {
            if (s[i] == '\\')
                i++;
            else if (s[i] == '"')
                in_string = false;
            continue;
        }
        if (s[i] == '"') {
            in_string = true;
            continue;
        }
        if (s[i] != '-' && (s[i] < '0' || s[i] > '9'))
            continue;
        size_t start = i, d0 = i + (s[i] == '-'), end = d0;
        while (end < len && s[end] >= '0' && s[end] <= '9')
            end++;
        bool real = end < len && (s[end] == '.' || s[end] == 'e' || s[end] == 'E');
        size_t digits = end - d0;
        const char *limit = s[start] == '-' ? min : max;
        if (!real && (digits > 19 || (digits == 19 && memcmp(s + d0, limit, 19) > 0))) {
            memcpy(s + d0, limit, 19);
            memset(s + d0 + 19, ' ', digits - 19);
            n++;
        }
        i = end - 1;
        while (i + 1 < len && (s[i + 1] == '.' || s[i + 1] == 'e' || s[i + 1] == 'E' ||
                               s[i + 1] == '+' || s[i + 1] == '-' ||
                               (s[i + 1] >= '0' && s[i + 1] <= '9')))
            i++;
    }
    return n;
}

struct json_t *report_parse_line(char *line, size_t len, bool *clamped, struct json_error_t *err)
{
    json_t *o = json_loadb(line, len, 0, err);
    /* jansson: "too big integer", "too big negative integer". */
    if (!o && strstr(err->text, "too big") && clamp_integers(line, len) > 0) {
        o = json_loadb(line, len, 0, err);
        if (o)
            *clamped = true;
    }
    return o;
}

const char *report_cut_words(const struct report_info *in)
{
    return strcmp(in->log_cut_why, "disk-full") == 0 ? "disk full"
           : in->log_cut_why[0]                      ? in->log_cut_why
                                                     : "a write error";
}
