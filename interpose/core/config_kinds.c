/* The kinds of configuration value: one parser, one printer and one
 * default for each, driven by a variable's descriptor (config_int.h). */
#define _GNU_SOURCE
#include "config_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "outfile.h"

_Static_assert(sizeof(enum p2pshim_mode) == sizeof(int) &&
                   sizeof(enum p2pshim_bounce) == sizeof(int) &&
                   sizeof(enum p2pshim_log_level) == sizeof(int),
               "enum fields are read and written as int");

/* ---- the line builder -------------------------------------------------- */

void config_put(struct config_out *o, const char *fmt, ...)
{
    if (o->cut)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
    va_end(ap);
    /* Keep room for "..." so a cut line says so. */
    if (n < 0 || (size_t)n >= o->len - o->used - 3) {
        o->buf[o->used] = '\0';
        if (o->len - o->used >= 4)
            memcpy(o->buf + o->used, "...", 4);
        o->cut = true;
        return;
    }
    o->used += (size_t)n;
}

void config_put_bytes(struct config_out *o, size_t n)
{
    static const char units[] = "GMK";
    for (int i = 0; i < 3; i++) {
        unsigned shift = 30u - 10u * (unsigned)i;
        if (n != 0 && (n & (((size_t)1 << shift) - 1)) == 0) {
            config_put(o, "%zu%c", n >> shift, units[i]);
            return;
        }
    }
    config_put(o, "%zu", n);
}

/* ---- the fields -------------------------------------------------------- */

static void *field(const struct config_var *v, struct p2pshim_config *cfg)
{
    return (char *)cfg + v->offset;
}

static const void *field_of(const struct config_var *v,
                            const struct p2pshim_config *cfg)
{
    return (const char *)cfg + v->offset;
}

/* A switch's or an enum's field: bool or int. */
static int read_int(const struct config_var *v, const struct p2pshim_config *cfg)
{
    if (v->size == sizeof(bool))
        return *(const bool *)field_of(v, cfg);
    int x;
    memcpy(&x, field_of(v, cfg), sizeof x);
    return x;
}

static void write_int(const struct config_var *v, struct p2pshim_config *cfg, int x)
{
    if (v->size == sizeof(bool))
        *(bool *)field(v, cfg) = x != 0;
    else
        memcpy(field(v, cfg), &x, sizeof x);
}

static size_t read_size(const struct config_var *v, const struct p2pshim_config *cfg)
{
    size_t n;
    memcpy(&n, field_of(v, cfg), sizeof n);
    return n;
}

static void write_size(const struct config_var *v, struct p2pshim_config *cfg, size_t n)
{
    memcpy(field(v, cfg), &n, sizeof n);
}

/* ---- values ------------------------------------------------------------ */

bool config_parse_bytes(const char *text, size_t *out)
{
    const char *p = text;
    if (!p || *p < '0' || *p > '9')
        return false;
    size_t n = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        size_t d = (size_t)(*p - '0');
        if (n > (SIZE_MAX - d) / 10)
            return false;
        n = n * 10 + d;
    }
    unsigned shift = 0;
    switch (*p) {
    case 'k': case 'K': shift = 10; p++; break;
    case 'm': case 'M': shift = 20; p++; break;
    case 'g': case 'G': shift = 30; p++; break;
    default: break;
    }
    /* "iB" only after a unit letter; a bare "B" after digits or a unit. */
    if (shift && (p[0] == 'i' || p[0] == 'I') && (p[1] == 'b' || p[1] == 'B'))
        p += 2;
    else if (*p == 'b' || *p == 'B')
        p++;
    if (*p != '\0')
        return false;
    if (shift && n > (SIZE_MAX >> shift))
        return false;
    *out = n << shift;
    return true;
}

static bool parse_switch(const struct config_var *v, struct p2pshim_config *cfg,
                         const char *value, char *why, size_t why_len)
{
    static const char *const on[] = {"1", "yes", "true", "on"};
    static const char *const off[] = {"0", "no", "false", "off"};
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
        if (strcasecmp(value, on[i]) == 0)
            return write_int(v, cfg, 1), true;
        if (strcasecmp(value, off[i]) == 0)
            return write_int(v, cfg, 0), true;
    }
    static const char *const words[] = {"yes", "true", "on", "no", "false", "off"};
    int near = config_name_near(words, 6, value, strlen(value));
    snprintf(why, why_len, "not a switch (1/0, yes/no, true/false, on/off)%s%s%s",
             near >= 0 ? ", did you mean " : "", near >= 0 ? words[near] : "",
             near >= 0 ? "?" : "");
    return false;
}

/* 1 or 0; nothing for "not set" (-1). */
static void print_switch(const struct config_var *v, const struct p2pshim_config *cfg,
                         struct config_out *o, enum config_style style)
{
    (void)style;
    int x = read_int(v, cfg);
    if (x >= 0)
        config_put(o, "%d", x);
}

static bool parse_enum(const struct config_var *v, struct p2pshim_config *cfg,
                       const char *value, char *why, size_t why_len)
{
    int i = config_name_find(v->names, v->nnames, value);
    if (i < 0) {
        char list[128];
        config_name_list(v->names, v->nnames, list, sizeof list);
        int near = config_name_near(v->names, v->nnames, value, strlen(value));
        snprintf(why, why_len, "not a %s (%s)%s%s%s", v->noun, list,
                 near >= 0 ? ", did you mean " : "", near >= 0 ? v->names[near] : "",
                 near >= 0 ? "?" : "");
        return false;
    }
    write_int(v, cfg, i);
    return true;
}

static void print_enum(const struct config_var *v, const struct p2pshim_config *cfg,
                       struct config_out *o, enum config_style style)
{
    (void)style;
    int x = read_int(v, cfg);
    config_put(o, "%s", x >= 0 && x < v->nnames ? v->names[x] : "?");
}

/* Bytes and counts: config_parse_bytes's syntax, within the bounds, or
 * the auto word for 0. */
static bool parse_size(const struct config_var *v, struct p2pshim_config *cfg,
                       const char *value, char *why, size_t why_len)
{
    size_t n = 0;
    if (v->auto_word && strcasecmp(value, v->auto_word) == 0) {
        write_size(v, cfg, 0);
        return true;
    }
    if (!config_parse_bytes(value, &n) || n < v->min || n > v->max ||
        n % v->align != 0) {
        snprintf(why, why_len, "not %s", v->expect);
        return false;
    }
    write_size(v, cfg, n);
    return true;
}

/* The dump writes a byte count with its unit and a count as digits; a
 * warning writes digits; docs/CONFIGURATION.md the shortest. */
static void print_size(const struct config_var *v, const struct p2pshim_config *cfg,
                       struct config_out *o, enum config_style style)
{
    size_t n = read_size(v, cfg);
    bool unit = style == CONFIG_AS_DOC ||
                (style == CONFIG_AS_DUMP && v->kind == CONFIG_KIND_BYTES);
    if (n == 0 && v->auto_word)
        config_put(o, "%s", v->auto_word);
    else if (unit)
        config_put_bytes(o, n);
    else
        config_put(o, "%zu", n);
}

/* A file name: stored with %p and %h expanded (and, where the row says,
 * as written too, for a forked child to expand again). */
static bool parse_path(const struct config_var *v, struct p2pshim_config *cfg,
                       const char *value, char *why, size_t why_len)
{
    size_t len = strlen(value);
    if (v->pattern_size && len >= v->pattern_size) {
        snprintf(why, why_len, "longer than %zu bytes", v->pattern_size - 1);
        return false;
    }
    if (!outfile_expand(value, field(v, cfg), v->size)) {
        snprintf(why, why_len,
                 "longer than %zu bytes once %%p and %%h are expanded", v->size - 1);
        return false;
    }
    if (v->pattern_size)
        memcpy((char *)cfg + v->pattern_offset, value, len + 1);
    return true;
}

/* As written where the row keeps the pattern (its %-escaped expansion can
 * be longer than a pattern may be), else %-escaped: either way the dump
 * reads back as the same file. */
static void print_path(const struct config_var *v, const struct p2pshim_config *cfg,
                       struct config_out *o, enum config_style style)
{
    (void)style;
    if (v->pattern_size) {
        config_put(o, "%s", (const char *)cfg + v->pattern_offset);
        return;
    }
    for (const char *p = field_of(v, cfg); *p; p++)
        config_put(o, *p == '%' ? "%%%%" : "%c", *p);
}

static bool parse_custom(const struct config_var *v, struct p2pshim_config *cfg,
                         const char *value, char *why, size_t why_len)
{
    return v->handler->parse(cfg, value, why, why_len);
}

static void print_custom(const struct config_var *v, const struct p2pshim_config *cfg,
                         struct config_out *o, enum config_style style)
{
    v->handler->print(o, cfg, style);
}

/* ---- dispatch ---------------------------------------------------------- */

static const struct {
    bool (*parse)(const struct config_var *v, struct p2pshim_config *cfg,
                  const char *value, char *why, size_t why_len);
    void (*print)(const struct config_var *v, const struct p2pshim_config *cfg,
                  struct config_out *o, enum config_style style);
} kinds[] = {
    [CONFIG_KIND_SWITCH] = {parse_switch, print_switch},
    [CONFIG_KIND_ENUM] = {parse_enum, print_enum},
    [CONFIG_KIND_BYTES] = {parse_size, print_size},
    [CONFIG_KIND_COUNT] = {parse_size, print_size},
    [CONFIG_KIND_PATH] = {parse_path, print_path},
    [CONFIG_KIND_CUSTOM] = {parse_custom, print_custom},
};

bool config_kind_parse(const struct config_var *v, struct p2pshim_config *cfg,
                       const char *value, char *why, size_t why_len)
{
    return kinds[v->kind].parse(v, cfg, value, why, why_len);
}

void config_kind_print(const struct config_var *v, const struct p2pshim_config *cfg,
                       struct config_out *o, enum config_style style)
{
    kinds[v->kind].print(v, cfg, o, style);
}

void config_kind_default(const struct config_var *v, struct p2pshim_config *cfg)
{
    char why[128];
    switch (v->kind) {
    case CONFIG_KIND_SWITCH:
    case CONFIG_KIND_ENUM:
        write_int(v, cfg, (int)v->def);
        break;
    case CONFIG_KIND_BYTES:
    case CONFIG_KIND_COUNT:
        write_size(v, cfg, (size_t)v->def);
        break;
    case CONFIG_KIND_PATH:
        ((char *)field(v, cfg))[0] = '\0';
        if (v->pattern_size)
            ((char *)cfg)[v->pattern_offset] = '\0';
        break;
    case CONFIG_KIND_CUSTOM:
        v->handler->parse(cfg, v->def_text, why, sizeof why);
        break;
    }
}
