/* P2PSHIM_PAIRS: its grammar (config.h) and its dump, the custom handler
 * of the pairs row. */
#define _GNU_SOURCE
#include "config_int.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

enum { N = P2PSHIM_MAX_DEVICES };

static const char *skip_spaces(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* One device: an ordinal below P2PSHIM_MAX_DEVICES or '*' (-1). */
static const char *parse_device(const char *p, int *dev, char *err,
                                size_t err_len, int entry)
{
    p = skip_spaces(p);
    if (*p == '*') {
        *dev = -1;
        return p + 1;
    }
    if (*p < '0' || *p > '9') {
        snprintf(err, err_len, "entry %d: expected a device ordinal or *",
                 entry);
        return NULL;
    }
    const char *digits = p;
    int n = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if (n < P2PSHIM_MAX_DEVICES) /* stays small: no overflow */
            n = n * 10 + (*p - '0');
    if (n >= P2PSHIM_MAX_DEVICES) {
        snprintf(err, err_len, "entry %d: device %.*s%s out of range (0-%d)",
                 entry, (int)(p - digits > 12 ? 12 : p - digits), digits,
                 p - digits > 12 ? "..." : "", P2PSHIM_MAX_DEVICES - 1);
        return NULL;
    }
    *dev = n;
    return p;
}

static void mark(bool m[N][N], int a, int b, bool value)
{
    for (int s = 0; s < N; s++)
        for (int d = 0; d < N; d++)
            if ((a < 0 || a == s) && (b < 0 || b == d))
                m[s][d] = value;
}

static bool word_at(const char *p, const char *word, const char **end)
{
    size_t n = strlen(word);
    if (strncasecmp(p, word, n) != 0)
        return false;
    const char *q = skip_spaces(p + n);
    if (*q != ',' && *q != '\0')
        return false;
    *end = q;
    return true;}

/* One entry at p: its pairs marked in named as the pass says (0: the
 * allowed ones; 1: the excluded ones taken away). Returns where the entry
 * ends (',' or '\0'), or NULL with the reason in err. */
static const char *parse_entry(const char *p, int entry, int pass, bool named[N][N],
                               bool *any_named, char *err, size_t err_len)
{
    bool exclude = false, both = false;
    int a, b;
    const char *end;
    if (*p == '!')
        exclude = true, p = skip_spaces(p + 1);
    if (*p == ',' || *p == '\0') {
        snprintf(err, err_len, "entry %d is empty", entry);
        return NULL;
    }
    if (word_at(p, "all", &end)) {
        a = b = -1;
        p = end;
    } else if (word_at(p, "none", &end)) {
        if (exclude) {
            snprintf(err, err_len, "entry %d: \"!none\" means nothing", entry);
            return NULL;
        }
        a = b = -1; /* "none" is "!*" */
        exclude = true;
        p = end;
    } else {
        if (!(p = parse_device(p, &a, err, err_len, entry)))
            return NULL;
        p = skip_spaces(p);
        if (*p == ':' || *p == '-') {
            both = *p == '-';
            if (!(p = parse_device(p + 1, &b, err, err_len, entry)))
                return NULL;
        } else if (a == -1) {
            b = -1; /* lone '*' */
        } else {
            snprintf(err, err_len, "entry %d: expected ':' or '-' after device %d",
                     entry, a);
            return NULL;
        }
        p = skip_spaces(p);
        if (*p != ',' && *p != '\0') {
            snprintf(err, err_len, "entry %d: unexpected '%c'", entry,
                     (*p >= 0x20 && *p < 0x7f) ? *p : '?');
            return NULL;
        }
    }
    if (pass == 0 && !exclude) {
        mark(named, a, b, true);
        if (both)
            mark(named, b, a, true);
        *any_named = true;
    }
    if (pass == 1 && exclude) {
        mark(named, a, b, false);
        if (both)
            mark(named, b, a, false);
    }
    return p;
}

bool config_parse_pairs(const char *spec, bool allowed[N][N], char *err,
                        size_t err_len)
{
    /* Two passes over the entries: the first collects what is allowed, the
     * second takes the exclusions away, so order does not matter. */
    bool named[N][N];
    bool any_named = false;
    memset(named, 0, sizeof named);
    if (err_len)
        err[0] = '\0';

    for (int pass = 0; pass < 2; pass++) {
        const char *p = skip_spaces(spec);
        /* No entries at all restrict nothing; an empty one is an error. */
        bool more = *p != '\0';
        for (int entry = 1; more; entry++) {
            p = parse_entry(skip_spaces(p), entry, pass, named, &any_named, err,
                            err_len);
            if (!p)
                return false;
            more = *p++ == ',';
        }
        if (pass == 0 && !any_named)
            memset(named, 1, sizeof named);
    }

    /* A copy within one device is no peer copy: the filter never applies
     * there, and a fixed diagonal keeps config_dump's round trip exact. */
    for (int d = 0; d < N; d++)
        named[d][d] = true;
    memcpy(allowed, named, sizeof named);
    return true;
}

/* ---- the dump ---------------------------------------------------------- */

/* Writes the off-diagonal pairs where m equals want, shortest first: a whole
 * row as "S:*", a whole column as "*:D", a pair in both directions as
 * "A-B", else "A:B"; each prefixed by bang. */
static void put_pairs(struct config_out *o, const bool m[N][N], bool want,
                      const char *bang)
{
    bool todo[N][N];
    const char *sep = "";
    for (int s = 0; s < N; s++)
        for (int d = 0; d < N; d++)
            todo[s][d] = s != d && m[s][d] == want;
    for (int s = 0; s < N; s++) {
        bool row = true;
        for (int d = 0; d < N; d++)
            row = row && (s == d || m[s][d] == want);
        if (row) {
            config_put(o, "%s%s%d:*", sep, bang, s), sep = ",";
            for (int d = 0; d < N; d++)
                todo[s][d] = false;
        }
    }
    for (int d = 0; d < N; d++) {
        bool col = true;
        for (int s = 0; s < N; s++)
            col = col && (s == d || m[s][d] == want);
        if (col) {
            config_put(o, "%s%s*:%d", sep, bang, d), sep = ",";
            for (int s = 0; s < N; s++)
                todo[s][d] = false;
        }
    }
    for (int s = 0; s < N; s++)
        for (int d = 0; d < N; d++) {
            if (!todo[s][d])
                continue;
            if (s < d && todo[d][s]) {
                config_put(o, "%s%s%d-%d", sep, bang, s, d);
                todo[d][s] = false;
            } else {
                config_put(o, "%s%s%d:%d", sep, bang, s, d);
            }
            sep = ",";
            todo[s][d] = false;
        }
}

static void put_pairs_value(struct config_out *o, const struct p2pshim_config *cfg)
{
    int allowed = 0, excluded = 0;
    for (int s = 0; s < N; s++)
        for (int d = 0; d < N; d++)
            if (s != d)
                cfg->pair_allowed[s][d] ? allowed++ : excluded++;
    if (excluded == 0)
        config_put(o, "all");
    else if (allowed == 0)
        config_put(o, "none");
    else if (allowed <= excluded)
        put_pairs(o, cfg->pair_allowed, true, "");
    else
        put_pairs(o, cfg->pair_allowed, false, "!");
}

static bool pairs_parse(struct p2pshim_config *cfg, const char *value, char *why,
                        size_t why_len)
{
    return config_parse_pairs(value, cfg->pair_allowed, why, why_len);
}

static void pairs_print(struct config_out *o, const struct p2pshim_config *cfg,
                        enum config_style style)
{
    (void)style;
    put_pairs_value(o, cfg);
}

const struct config_handler config_pairs_handler = {pairs_parse, pairs_print};
