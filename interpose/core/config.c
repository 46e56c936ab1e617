/* Configuration: the P2PSHIM_* variables, parsed once into one struct.
 * Every variable is one row of config_table.h; the defaults, the parse
 * loop and the dump below are driven by that table alone. */
#define _GNU_SOURCE
#include "config_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "log.h"

#define PREFIX "P2PSHIM_"
#define PREFIX_LEN (sizeof PREFIX - 1)

/* Longest warning; a value quoted in one is shortened to QUOTE_MAX. */
#define WARN_MAX 512
#define QUOTE_MAX 80

/* ---- the table --------------------------------------------------------- */

#define UNPAREN_(...) __VA_ARGS__
#define DESCRIPTOR_(X, name_, help_, descriptor)                              \
    {.name = #name_, .help = help_, UNPAREN_ descriptor},

const struct config_var config_vars[] = {P2PSHIM_CONFIG_TABLE(DESCRIPTOR_, _)};
const int config_var_count = (int)(sizeof config_vars / sizeof config_vars[0]);

enum { VAR_COUNT = sizeof config_vars / sizeof config_vars[0] };

static const char *const tool_var_names[] = {
#define X(name, what) #name,
    P2PSHIM_TOOL_VARS(X)
#undef X
};

static const char known_list[] =
#define X(name, what) ", " #name
    P2PSHIM_CONFIG_VARS(X)
#undef X
    ;

void config_set_defaults(struct p2pshim_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (int id = 0; id < VAR_COUNT; id++)
        config_kind_default(&config_vars[id], cfg);
}

/* ---- P2PSHIM_BOUNCE_BUDGET: bytes or N% -------------------------------- */

static bool budget_parse(struct p2pshim_config *cfg, const char *value, char *why,
                         size_t why_len)
{
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
        return true;
    }
    if (!pct && config_parse_bytes(value, &n)) {
        cfg->bounce_budget = n;
        cfg->bounce_budget_pct = 0;
        return true;
    }
    snprintf(why, why_len, "not a byte count (K/M/G) or a percentage (1%%-100%%)");
    return false;
}

static void budget_print(struct config_out *o, const struct p2pshim_config *cfg,
                         enum config_style style)
{
    if (cfg->bounce_budget_pct)
        config_put(o, "%u%%", cfg->bounce_budget_pct);
    else if (style == CONFIG_AS_KEPT)
        config_put(o, "%zu", cfg->bounce_budget);
    else
        config_put_bytes(o, cfg->bounce_budget);
}

const struct config_handler config_budget_handler = {budget_parse, budget_print};

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

/* ---- the environment --------------------------------------------------- */

/* The problem with a value, as the warning says it before what the shim
 * then does: NAME="value": why. False when the value is good (cfg then
 * holds it); cfg is untouched otherwise. */
static bool value_problem(struct p2pshim_config *cfg, const struct config_var *v,
                          const char *value, char *line, size_t len)
{
    char why[192], q[QUOTE_MAX + 4];
    if (config_kind_parse(v, cfg, value, why, sizeof why))
        return false;
    snprintf(line, len, "%s=\"%s\": %s", v->name, quote(value, SIZE_MAX, q), why);
    return true;
}

/* Sets one variable from its value. A bad value warns and leaves what its
 * row says: the choice that changes least (.on_bad), else the default:
 * "NAME="value": why; keeping DEFAULT". */
static void set_var(struct p2pshim_config *cfg, const struct config_var *v,
                    const char *value, struct warner *w)
{
    /* An empty value is the same as an unset one (so that "VAR= prog"
     * clears it): the default, which each field still holds here. */
    if (value[0] == '\0')
        return;
    char line[WARN_MAX], why[128];
    if (!value_problem(cfg, v, value, line, sizeof line))
        return;
    if (v->on_bad)
        config_kind_parse(v, cfg, v->on_bad, why, sizeof why);
    char kept[128];
    struct config_out o = {kept, sizeof kept, 0, false};
    if (v->kept) {
        config_put(&o, "%s", v->kept);
    } else {
        config_put(&o, "keeping ");
        config_kind_print(v, cfg, &o, CONFIG_AS_KEPT);
    }
    warnf(w, "%s; %s", line, kept);
}

/* The row of the variable that entry ("NAME=value") names, or -1. */
static int find_var(const char *entry, size_t name_len)
{
    for (int id = 0; id < VAR_COUNT; id++)
        if (strlen(config_vars[id].name) == name_len &&
            memcmp(config_vars[id].name, entry, name_len) == 0)
            return id;
    return -1;
}

static bool is_tool_var(const char *entry, size_t name_len)
{
    for (size_t i = 0; i < sizeof tool_var_names / sizeof tool_var_names[0]; i++)
        if (strlen(tool_var_names[i]) == name_len &&
            memcmp(tool_var_names[i], entry, name_len) == 0)
            return true;
    return false;
}

/* Every name a user may mean, without the prefix: the shim's and the
 * tool's variables. */
static const char *const near_names[] = {
#define X(name, what) &#name[PREFIX_LEN],
    P2PSHIM_CONFIG_VARS(X) P2PSHIM_TOOL_VARS(X)
#undef X
};

/* The warning about an unknown name: its near miss, else the known ones. */
static void unknown_problem(const char *entry, size_t name_len, char *line, size_t len)
{
    char q[QUOTE_MAX + 4];
    int near = config_name_near(near_names, (int)(sizeof near_names / sizeof near_names[0]),
                                entry + PREFIX_LEN, name_len - PREFIX_LEN);
    if (near >= 0)
        snprintf(line, len, "unknown variable %s, did you mean " PREFIX "%s?",
                 quote(entry, name_len, q), near_names[near]);
    else
        snprintf(line, len, "unknown variable %s (known: %s)", quote(entry, name_len, q),
                 known_list + 2);
}

enum { ENTRY_UNKNOWN = -1, ENTRY_NOT_OURS = -2 };

/* The row entry ("NAME=value") names, ENTRY_UNKNOWN for another
 * P2PSHIM_* name, or ENTRY_NOT_OURS; *value is where its value starts. */
static int entry_var(const char *entry, const char **value)
{
    if (strncmp(entry, PREFIX, PREFIX_LEN) != 0)
        return ENTRY_NOT_OURS;
    const char *eq = strchr(entry, '=');
    if (!eq)
        return ENTRY_NOT_OURS; /* not a variable */
    size_t name_len = (size_t)(eq - entry);
    *value = eq + 1;
    int id = find_var(entry, name_len);
    if (id < 0 && is_tool_var(entry, name_len))
        return ENTRY_NOT_OURS;
    return id < 0 ? ENTRY_UNKNOWN : id;
}

int config_parse(struct p2pshim_config *cfg, char *const *envp,
                 void (*warn)(const char *line))
{
    struct warner w = {warn, 0};
    bool seen[VAR_COUNT] = {false};
    config_set_defaults(cfg);
    for (char *const *e = envp; e && *e; e++) {
        const char *value = NULL;
        int id = entry_var(*e, &value);
        if (id == ENTRY_NOT_OURS)
            continue;
        if (id == ENTRY_UNKNOWN) {
            char line[WARN_MAX];
            unknown_problem(*e, (size_t)(value - 1 - *e), line, sizeof line);
            warnf(&w, "%s", line);
            continue;
        }
        /* Like getenv: the first of duplicated entries counts. */
        if (seen[id])
            continue;
        seen[id] = true;
        set_var(cfg, &config_vars[id], value, &w);
    }
    return w.count;
}

enum config_entry_verdict config_check_entry(const char *entry, char *why,
                                             size_t why_len)
{
    const char *value = NULL;
    int id = entry_var(entry, &value);
    char line[WARN_MAX];
    struct p2pshim_config scratch;
    if (why_len)
        why[0] = '\0';
    if (id == ENTRY_NOT_OURS)
        return CONFIG_ENTRY_NOT_OURS;
    if (id == ENTRY_UNKNOWN) {
        unknown_problem(entry, (size_t)(value - 1 - entry), line, sizeof line);
        snprintf(why, why_len, "%s", line);
        return CONFIG_ENTRY_UNKNOWN;
    }
    config_set_defaults(&scratch);
    if (value[0] == '\0' ||
        !value_problem(&scratch, &config_vars[id], value, line, sizeof line))
        return CONFIG_ENTRY_OK;
    snprintf(why, why_len, "%s", line);
    return CONFIG_ENTRY_BAD;
}

/* ---- dump -------------------------------------------------------------- */

void config_dump(const struct p2pshim_config *cfg,
                 void (*write_line)(const char *line))
{
    for (int id = 0; id < VAR_COUNT; id++) {
        char line[1024];
        struct config_out o = {line, sizeof line, 0, false};
        config_put(&o, "config %s=", config_vars[id].name);
        config_kind_print(&config_vars[id], cfg, &o, CONFIG_AS_DUMP);
        write_line(line);
    }
}

/* ---- the process-wide configuration ------------------------------------ */

static struct p2pshim_config the_config;
static pthread_once_t the_config_once = PTHREAD_ONCE_INIT;
/* Set (release) once the_config is parsed: config_get's fast path, one
 * inline load instead of a call to pthread_once on every intercepted call
 * (shim.c says why that matters). */
static atomic_bool the_config_ready;

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
    if (!atomic_load_explicit(&the_config_ready, memory_order_acquire)) {
        pthread_once(&the_config_once, config_init);
        atomic_store_explicit(&the_config_ready, true, memory_order_release);
    }
    return &the_config;
}
