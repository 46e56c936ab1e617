/* Configuration: the P2PSHIM_* variables, parsed once into one struct. */
#define _GNU_SOURCE
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "log.h"
#include "outfile.h"

#define PREFIX "P2PSHIM_"
#define PREFIX_LEN (sizeof PREFIX - 1)

/* Longest warning; a value quoted in one is shortened to QUOTE_MAX. */
#define WARN_MAX 512
#define QUOTE_MAX 80

enum var_id {
#define X(name, what) VAR_##name,
    P2PSHIM_CONFIG_VARS(X)
#undef X
    VAR_COUNT
};

static const char *const var_names[VAR_COUNT] = {
#define X(name, what) #name,
    P2PSHIM_CONFIG_VARS(X)
#undef X
};

static const char *const tool_var_names[] = {
#define X(name, what) #name,
    P2PSHIM_TOOL_VARS(X)
#undef X
};

static bool is_tool_var(const char *entry, size_t name_len)
{
    for (size_t i = 0; i < sizeof tool_var_names / sizeof tool_var_names[0]; i++)
        if (strlen(tool_var_names[i]) == name_len &&
            memcmp(tool_var_names[i], entry, name_len) == 0)
            return true;
    return false;
}

static const char known_list[] =
#define X(name, what) ", " #name
    P2PSHIM_CONFIG_VARS(X)
#undef X
    ;

static const char *const mode_names[] = {
    [P2PSHIM_MODE_UPGRADE] = "upgrade",
    [P2PSHIM_MODE_OFF] = "off",
    [P2PSHIM_MODE_OBSERVE] = "observe",
};

static const char *const bounce_names[] = {
    [P2PSHIM_BOUNCE_AUTO] = "auto",
    [P2PSHIM_BOUNCE_LAZY] = "lazy",
    [P2PSHIM_BOUNCE_EAGER] = "eager",
    [P2PSHIM_BOUNCE_OFF] = "off",
};

#define CHUNK_MIN ((size_t)4 << 10)
#define BOUNCE_MIN_FLOOR ((size_t)64 << 10)
#define CHUNK_MAX ((size_t)1 << 30)

static const char *const level_names[] = {
    [P2PSHIM_LOG_ERROR] = "error",
    [P2PSHIM_LOG_WARN] = "warn",
    [P2PSHIM_LOG_INFO] = "info",
    [P2PSHIM_LOG_DEBUG] = "debug",
};

void config_set_defaults(struct p2pshim_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->mode = P2PSHIM_MODE_UPGRADE;
    cfg->log_level = P2PSHIM_LOG_WARN;
    cfg->min_bytes = 0;
    cfg->log_file[0] = '\0';
    cfg->dump_config = false;
    memset(cfg->pair_allowed, 1, sizeof cfg->pair_allowed);
    cfg->cupti = -1;
    cfg->record_limit = 262144; /* 16 MiB of records */
    cfg->bounce = P2PSHIM_BOUNCE_AUTO;
    cfg->bounce_budget = 0;
    cfg->bounce_budget_pct = 25;
    cfg->bounce_chunk = (size_t)2 << 20;
    cfg->bounce_min = 0;
}

/* ---- warnings ---------------------------------------------------------- */

struct warner {
    void (*warn)(const char *line);
    int count;
};

static void warnf(struct warner *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warnf(struct warner *w, const char *fmt, ...)
{
    w->count++;
    if (!w->warn)
        return;
    char line[WARN_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    w->warn(line);
}

/* Copies text for quoting in a warning: at most n bytes of it, control
 * bytes and quotes shown as '?', "..." when cut, so one bad value can
 * neither break the line nor flood it. */
static const char *quote(const char *text, size_t n, char out[QUOTE_MAX + 4])
{
    size_t i = 0;
    for (; i < n && i < QUOTE_MAX && text[i]; i++) {
        unsigned char c = (unsigned char)text[i];
        out[i] = (c < 0x20 || c == 0x7f || c == '"') ? '?' : (char)c;
    }
    if (i < n && text[i])
        memcpy(out + i, "...", 3), i += 3;
    out[i] = '\0';
    return out;
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

static bool parse_switch(const char *v, bool *out)
{
    static const char *const on[] = {"1", "yes", "true", "on"};
    static const char *const off[] = {"0", "no", "false", "off"};
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
        if (strcasecmp(v, on[i]) == 0)
            return *out = true, true;
        if (strcasecmp(v, off[i]) == 0)
            return *out = false, true;
    }
    return false;
}

static int parse_name(const char *v, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (strcasecmp(v, names[i]) == 0)
            return i;
    return -1;
}

/* ---- pairs ------------------------------------------------------------- */

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

static void mark(bool m[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES], int a,
                 int b, bool value)
{
    for (int s = 0; s < P2PSHIM_MAX_DEVICES; s++)
        for (int d = 0; d < P2PSHIM_MAX_DEVICES; d++)
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
    return true;
}

bool config_parse_pairs(const char *spec,
                        bool allowed[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES],
                        char *err, size_t err_len)
{
    /* Two passes over the entries: the first collects what is allowed, the
     * second takes the exclusions away, so order does not matter. */
    bool named[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES];
    bool any_named = false;
    memset(named, 0, sizeof named);
    if (err_len)
        err[0] = '\0';

    for (int pass = 0; pass < 2; pass++) {
        const char *p = skip_spaces(spec);
        /* No entries at all restrict nothing; an empty one is an error. */
        bool more = *p != '\0';
        for (int entry = 1; more; entry++) {
            p = skip_spaces(p);
            bool exclude = false;
            if (*p == '!')
                exclude = true, p = skip_spaces(p + 1);
            int a, b;
            const char *end;
            if (*p == ',' || *p == '\0') {
                snprintf(err, err_len, "entry %d is empty", entry);
                return false;
            }
            if (word_at(p, "all", &end)) {
                a = b = -1;
                p = end;
            } else if (word_at(p, "none", &end)) {
                if (exclude) {
                    snprintf(err, err_len, "entry %d: \"!none\" means nothing",
                             entry);
                    return false;
                }
                a = b = -1; /* "none" is "!*" */
                exclude = true;
                p = end;
            } else {
                if (!(p = parse_device(p, &a, err, err_len, entry)))
                    return false;
                p = skip_spaces(p);
                bool both = false;
                if (*p == ':' || *p == '-') {
                    both = *p == '-';
                    if (!(p = parse_device(p + 1, &b, err, err_len, entry)))
                        return false;
                } else if (a == -1) {
                    b = -1; /* lone '*' */
                } else {
                    snprintf(err, err_len,
                             "entry %d: expected ':' or '-' after device %d",
                             entry, a);
                    return false;
                }
                p = skip_spaces(p);
                if (*p != ',' && *p != '\0') {
                    snprintf(err, err_len, "entry %d: unexpected '%c'", entry,
                             (*p >= 0x20 && *p < 0x7f) ? *p : '?');
                    return false;
                }
                if (both && pass == 0 && !exclude)
                    mark(named, b, a, true), any_named = true;
                if (both && pass == 1 && exclude)
                    mark(named, b, a, false);
            }
            if (pass == 0 && !exclude)
                mark(named, a, b, true), any_named = true;
            if (pass == 1 && exclude)
                mark(named, a, b, false);
            more = *p++ == ',';
        }
        if (pass == 0 && !any_named)
            memset(named, 1, sizeof named);
    }

    /* A copy within one device is no peer copy: the filter never applies
     * there, and a fixed diagonal keeps config_dump's round trip exact. */
    for (int d = 0; d < P2PSHIM_MAX_DEVICES; d++)
        named[d][d] = true;
    memcpy(allowed, named, sizeof named);
    return true;
}

/* ---- the environment --------------------------------------------------- */

static void set_var(struct p2pshim_config *cfg, enum var_id id,
                    const char *value, struct warner *w)
{
    char q[QUOTE_MAX + 4];
    const char *name = var_names[id];

    /* An empty value is the same as an unset one (so that "VAR= prog"
     * clears it), and for P2PSHIM_LOG_FILE that is stderr. */
    if (value[0] == '\0') {
        if (id == VAR_P2PSHIM_LOG_FILE)
            cfg->log_file[0] = '\0';
        if (id == VAR_P2PSHIM_RUN_LOG)
            cfg->run_log[0] = '\0';
        return;
    }

    switch (id) {
    case VAR_P2PSHIM_MODE: {
        int m = parse_name(value, mode_names, 3);
        if (m < 0)
            warnf(w, "%s=\"%s\": not a mode (upgrade, observe or off); keeping %s",
                  name, quote(value, SIZE_MAX, q), mode_names[cfg->mode]);
        else
            cfg->mode = (enum p2pshim_mode)m;
        break;
    }
    case VAR_P2PSHIM_PAIRS: {
        char err[128];
        if (!config_parse_pairs(value, cfg->pair_allowed, err, sizeof err))
            warnf(w, "%s=\"%s\": %s; keeping all pairs", name,
                  quote(value, SIZE_MAX, q), err);
        break;
    }
    case VAR_P2PSHIM_MIN_BYTES:
        if (!config_parse_bytes(value, &cfg->min_bytes))
            warnf(w,
                  "%s=\"%s\": not a byte count (digits with optional K/M/G); "
                  "keeping %zu",
                  name, quote(value, SIZE_MAX, q), cfg->min_bytes);
        break;
    case VAR_P2PSHIM_LOG: {
        int l = parse_name(value, level_names, 4);
        if (l < 0)
            warnf(w,
                  "%s=\"%s\": not a log level (error, warn, info or debug); "
                  "keeping %s",
                  name, quote(value, SIZE_MAX, q), level_names[cfg->log_level]);
        else
            cfg->log_level = (enum p2pshim_log_level)l;
        break;
    }
    case VAR_P2PSHIM_LOG_FILE:
        if (!outfile_expand(value, cfg->log_file, sizeof cfg->log_file)) {
            warnf(w, "%s=\"%s\": longer than %zu bytes once %%p and %%h are expanded; "
                  "keeping stderr",
                  name, quote(value, SIZE_MAX, q), sizeof cfg->log_file - 1);
        }
        break;
    case VAR_P2PSHIM_DUMP_CONFIG:
        if (!parse_switch(value, &cfg->dump_config))
            warnf(w,
                  "%s=\"%s\": not a switch (1/0, yes/no, true/false, on/off); "
                  "keeping %d",
                  name, quote(value, SIZE_MAX, q), cfg->dump_config);
        break;
    case VAR_P2PSHIM_RUN_LOG:
        if (strlen(value) >= sizeof cfg->run_log_pattern ||
            !outfile_expand(value, cfg->run_log, sizeof cfg->run_log))
            warnf(w, "%s=\"%s\": longer than %zu bytes once %%p and %%h are expanded; "
                  "writing no run log",
                  name, quote(value, SIZE_MAX, q), sizeof cfg->run_log - 1);
        else
            memcpy(cfg->run_log_pattern, value, strlen(value) + 1);
        break;
    case VAR_P2PSHIM_CUPTI: {
        bool on = false;
        if (!parse_switch(value, &on))
            warnf(w,
                  "%s=\"%s\": not a switch (1/0, yes/no, true/false, on/off); "
                  "keeping the default (on in observe mode)",
                  name, quote(value, SIZE_MAX, q));
        else
            cfg->cupti = on;
        break;
    }
    case VAR_P2PSHIM_RECORD_LIMIT: {
        size_t n = 0;
        if (!config_parse_bytes(value, &n) || n == 0)
            warnf(w, "%s=\"%s\": not a positive count (K/M/G allowed); keeping %zu",
                  name, quote(value, SIZE_MAX, q), cfg->record_limit);
        else
            cfg->record_limit = n;
        break;
    }
    case VAR_P2PSHIM_BOUNCE: {
        int b = parse_name(value, bounce_names, 4);
        if (b < 0)
            warnf(w, "%s=\"%s\": not a bounce mode (auto, lazy, eager or off); keeping %s",
                  name, quote(value, SIZE_MAX, q), bounce_names[cfg->bounce]);
        else
            cfg->bounce = (enum p2pshim_bounce)b;
        break;
    }
    case VAR_P2PSHIM_BOUNCE_BUDGET: {
        size_t n = 0, len = strlen(value);
        char digits[24];
        bool pct = len > 1 && value[len - 1] == '%' && len - 1 < sizeof digits;
        if (pct) {
            memcpy(digits, value, len - 1);
            digits[len - 1] = '\0';
        }
        if (pct && config_parse_bytes(digits, &n) && digits[len - 2] >= '0' &&
            digits[len - 2] <= '9' && n >= 1 && n <= 100) {
            cfg->bounce_budget = 0;
            cfg->bounce_budget_pct = (unsigned)n;
        } else if (!pct && config_parse_bytes(value, &n)) {
            cfg->bounce_budget = n;
            cfg->bounce_budget_pct = 0;
        } else {
            char now[32];
            if (cfg->bounce_budget_pct)
                snprintf(now, sizeof now, "%u%%", cfg->bounce_budget_pct);
            else
                snprintf(now, sizeof now, "%zu", cfg->bounce_budget);
            warnf(w, "%s=\"%s\": not a byte count (K/M/G) or a percentage (1%%-100%%); "
                  "keeping %s", name, quote(value, SIZE_MAX, q), now);
        }
        break;
    }
    case VAR_P2PSHIM_BOUNCE_MIN: {
        size_t n = 0;
        if (strcasecmp(value, "auto") == 0) {
            cfg->bounce_min = 0;
        } else if (config_parse_bytes(value, &n) && n >= BOUNCE_MIN_FLOOR) {
            cfg->bounce_min = n;
        } else {
            char now[32];
            if (cfg->bounce_min)
                snprintf(now, sizeof now, "%zu", cfg->bounce_min);
            else
                snprintf(now, sizeof now, "auto");
            warnf(w, "%s=\"%s\": not auto or a byte count (K/M/G) of at least 64K; keeping %s",
                  name, quote(value, SIZE_MAX, q), now);
        }
        break;
    }
    case VAR_P2PSHIM_BOUNCE_CHUNK: {
        size_t n = 0;
        if (!config_parse_bytes(value, &n) || n < CHUNK_MIN || n > CHUNK_MAX ||
            n % CHUNK_MIN != 0)
            warnf(w, "%s=\"%s\": not a multiple of 4K between 4K and 1G; keeping %zu",
                  name, quote(value, SIZE_MAX, q), cfg->bounce_chunk);
        else
            cfg->bounce_chunk = n;
        break;
    }
    case VAR_COUNT:
        break;
    }
}

int config_parse(struct p2pshim_config *cfg, char *const *envp,
                 void (*warn)(const char *line))
{
    struct warner w = {warn, 0};
    bool seen[VAR_COUNT] = {false};
    config_set_defaults(cfg);
    for (char *const *e = envp; e && *e; e++) {
        const char *entry = *e;
        if (strncmp(entry, PREFIX, PREFIX_LEN) != 0)
            continue;
        const char *eq = strchr(entry, '=');
        if (!eq)
            continue; /* not a variable */
        size_t name_len = (size_t)(eq - entry);
        int id = -1;
        for (int i = 0; i < VAR_COUNT; i++)
            if (strlen(var_names[i]) == name_len &&
                memcmp(var_names[i], entry, name_len) == 0)
                id = i;
        if (id < 0 && is_tool_var(entry, name_len))
            continue;
        if (id < 0) {
            char q[QUOTE_MAX + 4];
            warnf(&w, "unknown variable %s (known: %s)",
                  quote(entry, name_len, q), known_list + 2);
            continue;
        }
        /* Like getenv: the first of duplicated entries counts. */
        if (seen[id])
            continue;
        seen[id] = true;
        set_var(cfg, (enum var_id)id, eq + 1, &w);
    }
    return w.count;
}

/* ---- dump -------------------------------------------------------------- */

struct out {
    char *buf;
    size_t len, used;
    bool cut;
};

static void put(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
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

/* Writes the off-diagonal pairs where m equals want, shortest first: a whole
 * row as "S:*", a whole column as "*:D", a pair in both directions as
 * "A-B", else "A:B"; each prefixed by bang. */
static void put_pairs(struct out *o,
                      const bool m[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES],
                      bool want, const char *bang)
{
    enum { N = P2PSHIM_MAX_DEVICES };
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
            put(o, "%s%s%d:*", sep, bang, s), sep = ",";
            for (int d = 0; d < N; d++)
                todo[s][d] = false;
        }
    }
    for (int d = 0; d < N; d++) {
        bool col = true;
        for (int s = 0; s < N; s++)
            col = col && (s == d || m[s][d] == want);
        if (col) {
            put(o, "%s%s*:%d", sep, bang, d), sep = ",";
            for (int s = 0; s < N; s++)
                todo[s][d] = false;
        }
    }
    for (int s = 0; s < N; s++)
        for (int d = 0; d < N; d++) {
            if (!todo[s][d])
                continue;
            if (s < d && todo[d][s]) {
                put(o, "%s%s%d-%d", sep, bang, s, d);
                todo[d][s] = false;
            } else {
                put(o, "%s%s%d:%d", sep, bang, s, d);
            }
            sep = ",";
            todo[s][d] = false;
        }
}

static void put_pairs_value(struct out *o, const struct p2pshim_config *cfg)
{
    int allowed = 0, excluded = 0;
    for (int s = 0; s < P2PSHIM_MAX_DEVICES; s++)
        for (int d = 0; d < P2PSHIM_MAX_DEVICES; d++)
            if (s != d)
                cfg->pair_allowed[s][d] ? allowed++ : excluded++;
    if (excluded == 0)
        put(o, "all");
    else if (allowed == 0)
        put(o, "none");
    else if (allowed <= excluded)
        put_pairs(o, cfg->pair_allowed, true, "");
    else
        put_pairs(o, cfg->pair_allowed, false, "!");
}

static void put_bytes(struct out *o, size_t n)
{
    static const char units[] = "GMK";
    for (int i = 0; i < 3; i++) {
        unsigned shift = 30u - 10u * (unsigned)i;
        if (n != 0 && (n & (((size_t)1 << shift) - 1)) == 0) {
            put(o, "%zu%c", n >> shift, units[i]);
            return;
        }
    }
    put(o, "%zu", n);
}

void config_dump(const struct p2pshim_config *cfg,
                 void (*write_line)(const char *line))
{
    for (int id = 0; id < VAR_COUNT; id++) {
        char line[1024];
        struct out o = {line, sizeof line, 0, false};
        put(&o, "config %s=", var_names[id]);
        switch ((enum var_id)id) {
        case VAR_P2PSHIM_MODE:
            put(&o, "%s", mode_names[cfg->mode]);
            break;
        case VAR_P2PSHIM_PAIRS:
            put_pairs_value(&o, cfg);
            break;
        case VAR_P2PSHIM_MIN_BYTES:
            put_bytes(&o, cfg->min_bytes);
            break;
        case VAR_P2PSHIM_LOG:
            put(&o, "%s", level_names[cfg->log_level]);
            break;
        case VAR_P2PSHIM_LOG_FILE:
            /* %-escaped, so that the line reads back as the same file. */
            for (const char *p = cfg->log_file; *p; p++)
                put(&o, *p == '%' ? "%%%%" : "%c", *p);
            break;
        case VAR_P2PSHIM_DUMP_CONFIG:
            put(&o, "%d", cfg->dump_config);
            break;
        case VAR_P2PSHIM_RUN_LOG:
            for (const char *p = cfg->run_log; *p; p++)
                put(&o, *p == '%' ? "%%%%" : "%c", *p);
            break;
        case VAR_P2PSHIM_CUPTI:
            put(&o, "%s", cfg->cupti < 0 ? "" : cfg->cupti ? "1" : "0");
            break;
        case VAR_P2PSHIM_RECORD_LIMIT:
            put(&o, "%zu", cfg->record_limit);
            break;
        case VAR_P2PSHIM_BOUNCE:
            put(&o, "%s", bounce_names[cfg->bounce]);
            break;
        case VAR_P2PSHIM_BOUNCE_BUDGET:
            if (cfg->bounce_budget_pct)
                put(&o, "%u%%", cfg->bounce_budget_pct);
            else
                put_bytes(&o, cfg->bounce_budget);
            break;
        case VAR_P2PSHIM_BOUNCE_CHUNK:
            put_bytes(&o, cfg->bounce_chunk);
            break;
        case VAR_P2PSHIM_BOUNCE_MIN:
            if (cfg->bounce_min)
                put_bytes(&o, cfg->bounce_min);
            else
                put(&o, "auto");
            break;
        case VAR_COUNT:
            break;
        }
        write_line(line);
    }
}

/* ---- the process-wide configuration ------------------------------------ */

static struct p2pshim_config the_config;
static pthread_once_t the_config_once = PTHREAD_ONCE_INIT;

static void warn_to_log(const char *line)
{
    LOG_WARN("%s", line);
}

/* Whether this is a secure execution (AT_SECURE: set-user-ID, set-group-ID,
 * or file capabilities). The test seam is the symbol itself: a test
 * program defines its own getauxval, which the shim's call binds to, as
 * any program's definition would; nothing in the environment can change
 * the answer (ld.so ignores LD_PRELOAD paths in secure execution). */
static bool secure_execution(void)
{
    return getauxval(AT_SECURE) != 0;
}

static void config_init(void)
{
    if (secure_execution()) {
        /* Trust nothing the invoking user set: read no P2PSHIM_* variable,
         * open no file, change nothing (docs/SECURITY.md). */
        config_set_defaults(&the_config);
        the_config.mode = P2PSHIM_MODE_OFF;
        the_config.bounce = P2PSHIM_BOUNCE_OFF;
        the_config.cupti = 0;
        log_open(&the_config);
        LOG_DEBUG("secure execution (AT_SECURE): P2PSHIM_* variables not read; "
                  "every call passes through");
        return;
    }
    /* Parse once silently to learn where the log goes, open it, then parse
     * again to report the problems there: a warning about P2PSHIM_MODE
     * belongs in P2PSHIM_LOG_FILE, at P2PSHIM_LOG's threshold. */
    static struct p2pshim_config scratch;
    config_parse(&the_config, environ, NULL);
    log_open(&the_config);
    config_parse(&scratch, environ, warn_to_log);
}

const struct p2pshim_config *config_get(void)
{
    pthread_once(&the_config_once, config_init);
    return &the_config;
}
