/* The environment of `p2pshim run`'s program (see run_env.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cli.h"
#include "run_env.h"

#define SHIM_FILE "libp2pshim.so"
/* The install libdir relative to the bindir (GNUInstallDirs), from the build. */
#ifndef P2PSHIM_LIBDIR_FROM_BINDIR
#error "P2PSHIM_LIBDIR_FROM_BINDIR must be defined by the build"
#endif

/* What --set may name: the shim's variables (interpose/core/config.h's one
 * list) and P2PSHIM_TOPO_FILE, which the report reads. */
static const char *const known_vars[] = {
#define X(name, what) #name,
    P2PSHIM_CONFIG_VARS(X)
#undef X
    "P2PSHIM_TOPO_FILE",
};
#define NKNOWN (sizeof known_vars / sizeof known_vars[0])
_Static_assert(NKNOWN <= RUN_ENV_MAX, "RUN_ENV_MAX must hold every variable");

void run_env_init(struct run_env *e)
{
    memset(e, 0, sizeof *e);
}

void run_env_free(struct run_env *e)
{
    for (int i = 0; i < e->nset; i++)
        free(e->set[i].value);
    free(e->preload);
    run_env_init(e);
}

static bool is_known(const char *name)
{
    for (size_t i = 0; i < NKNOWN; i++)
        if (strcmp(known_vars[i], name) == 0)
            return true;
    return false;
}

static void list_known(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NKNOWN && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                                 known_vars[i] + strlen("P2PSHIM_"));
}

/* A copy of value, made absolute against the current folder if it is a
 * relative path of a variable the launcher reads itself. */
static char *value_copy(const char *name, const char *value)
{
    bool path = strcmp(name, "P2PSHIM_RUN_LOG") == 0 || strcmp(name, "P2PSHIM_TOPO_FILE") == 0;
    if (!path || value[0] == '/' || value[0] == '\0')
        return strdup(value);
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL)
        return strdup(value);
    size_t n = strlen(cwd) + strlen(value) + 2;
    char *s = malloc(n);
    if (s != NULL)
        snprintf(s, n, "%s/%s", cwd, value);
    return s;
}

/* Whether the shim would take value for name: its own parser says, so
 * that --mode fast and --set MODE=fast meet the same rule and get the
 * same line (without the shim's "; keeping DEFAULT": nothing is kept,
 * the run is refused). */
static bool value_ok(const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 2;
    char *entry = malloc(n), why[512];
    if (entry == NULL)
        return true; /* the shim will warn itself */
    snprintf(entry, n, "%s=%s", name, value);
    enum config_entry_verdict v = config_check_entry(entry, why, sizeof why);
    free(entry);
    if (v != CONFIG_ENTRY_BAD)
        return true;
    launcher_error("run: %s", why);
    return false;
}

/* The known name nearest to name (a full P2PSHIM_* name), or NULL. */
static const char *near_known(const char *name)
{
    const char *tails[NKNOWN];
    for (size_t i = 0; i < NKNOWN; i++)
        tails[i] = known_vars[i] + strlen("P2PSHIM_");
    size_t skip = strncmp(name, "P2PSHIM_", 8) == 0 ? 8 : 0;
    int k = config_name_near(tails, (int)NKNOWN, name + skip, strlen(name + skip));
    return k >= 0 ? known_vars[k] : NULL;
}

bool run_env_set(struct run_env *e, const char *name, const char *value)
{
    if (!is_known(name)) {
        char known[512];
        const char *near = near_known(name);
        list_known(known, sizeof known);
        if (near != NULL)
            launcher_error("run: unknown variable %s, did you mean %s?", name, near);
        else
            launcher_error("run: unknown variable %s (known: %s)", name, known);
        return false;
    }
    if (!value_ok(name, value))
        return false;
    char *copy = value_copy(name, value);
    if (copy == NULL) {
        launcher_error("out of memory");
        return false;
    }
    for (int i = 0; i < e->nset; i++)
        if (strcmp(e->set[i].name, name) == 0) {
            free(e->set[i].value);
            e->set[i].value = copy;
            return true;
        }
    /* Known names are fewer than RUN_ENV_MAX (static assert above). */
    snprintf(e->set[e->nset].name, sizeof e->set[e->nset].name, "%s", name);
    e->set[e->nset++].value = copy;
    return true;
}

/* Whether the options assign the variable that entry ("NAME=value")
 * names: then the inherited value never reaches the program. */
static bool assigned(const struct run_env *e, const char *entry)
{
    size_t n = strcspn(entry, "=");
    for (int i = 0; i < e->nset; i++)
        if (strlen(e->set[i].name) == n && strncmp(e->set[i].name, entry, n) == 0)
            return true;
    return false;
}

bool run_env_check_inherited(const struct run_env *e, char *const *envp)
{
    bool ok = true;
    for (char *const *p = envp; p != NULL && *p != NULL; p++) {
        char why[768];
        if (assigned(e, *p))
            continue;
        enum config_entry_verdict v = config_check_entry(*p, why, sizeof why);
        if (v == CONFIG_ENTRY_UNKNOWN)
            launcher_error("run: warning: environment: %s", why);
        else if (v == CONFIG_ENTRY_BAD && ok) /* one line: the first */
            launcher_error("run: environment: %s", why);
        ok = ok && v != CONFIG_ENTRY_BAD;
    }
    return ok;
}

bool run_env_assign(struct run_env *e, const char *text)
{
    const char *eq = strchr(text, '=');
    if (eq == NULL || eq == text) {
        launcher_error("run: --set %s: expected NAME=VALUE, e.g. --set LOG=info", text);
        return false;
    }
    char name[64];
    size_t n = (size_t)(eq - text);
    const char *prefix = strncmp(text, "P2PSHIM_", 8) == 0 ? "" : "P2PSHIM_";
    if (n + strlen(prefix) >= sizeof name) {
        launcher_error("run: --set %s: name too long", text);
        return false;
    }
    snprintf(name, sizeof name, "%s%.*s", prefix, (int)n, text);
    return run_env_set(e, name, eq + 1);
}

const char *run_env_get(const struct run_env *e, const char *name)
{
    for (int i = 0; i < e->nset; i++)
        if (strcmp(e->set[i].name, name) == 0)
            return e->set[i].value;
    return NULL;
}

bool run_env_export(const struct run_env *e)
{
    for (int i = 0; i < e->nset; i++)
        if (setenv(e->set[i].name, e->set[i].value, 1) != 0) {
            launcher_error("setenv %s: %s", e->set[i].name, strerror(errno));
            return false;
        }
    return true;
}

static const char *base_name(const char *path, size_t len)
{
    const char *b = path;
    for (size_t i = 0; i < len; i++)
        if (path[i] == '/')
            b = path + i + 1;
    return b;
}

static bool is_sanitizer_runtime(const char *base)
{
    static const char *const runtimes[] = {"libasan", "libtsan", "libubsan", "liblsan",
                                           "libhwasan", "libclang_rt."};
    for (size_t i = 0; i < sizeof runtimes / sizeof runtimes[0]; i++)
        if (strncmp(base, runtimes[i], strlen(runtimes[i])) == 0)
            return true;
    return false;
}

/* Appends the entries of existing for which pick(base) == want. */
static void append_entries(char *out, size_t *used, const char *existing, bool want)
{
    const char *p = existing;
    while (p != NULL && *p) {
        size_t n = strcspn(p, ": \t");
        if (n > 0) {
            const char *base = base_name(p, n);
            bool shim = strncmp(base, "libp2pshim", 10) == 0;
            if (!shim && is_sanitizer_runtime(base) == want) {
                if (*used > 0)
                    out[(*used)++] = ':';
                memcpy(out + *used, p, n);
                *used += n;
            }
        }
        p += n;
        p += strspn(p, ": \t");
    }
    out[*used] = '\0';
}

bool run_env_build_preload(struct run_env *e, const char *lib, const char *existing)
{
    size_t cap = strlen(lib) + (existing ? strlen(existing) : 0) + 2;
    char *out = malloc(cap);
    if (out == NULL) {
        launcher_error("out of memory");
        return false;
    }
    size_t used = 0;
    out[0] = '\0';
    append_entries(out, &used, existing, true);
    if (used > 0)
        out[used++] = ':';
    memcpy(out + used, lib, strlen(lib) + 1);
    used += strlen(lib);
    append_entries(out, &used, existing, false);
    free(e->preload);
    e->preload = out;
    return true;
}

/* Writes dir/rel (resolved) to out if it names a readable file. */
static bool try_candidate(const char *dir, const char *rel, char *out, size_t len,
                          char *tried, size_t tried_len)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    size_t t = strlen(tried);
    snprintf(tried + t, tried_len - t, "%s%s", t ? ", " : "", path);
    char real[PATH_MAX];
    if (access(path, R_OK) != 0 || realpath(path, real) == NULL || strlen(real) >= len)
        return false;
    memcpy(out, real, strlen(real) + 1);
    return true;
}

bool run_env_find_library(char *out, size_t len)
{
    const char *env = getenv("P2PSHIM_LIBRARY");
    char real[PATH_MAX];
    if (env != NULL && env[0] != '\0') {
        if (access(env, R_OK) != 0 || realpath(env, real) == NULL) {
            launcher_error("P2PSHIM_LIBRARY=%s: %s", env, strerror(errno));
            return false;
        }
        if (strlen(real) >= len) {
            launcher_error("P2PSHIM_LIBRARY=%s: path too long", env);
            return false;
        }
        memcpy(out, real, strlen(real) + 1);
        return true;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        launcher_error("cannot find the launcher's own path (/proc/self/exe: %s); "
                       "set P2PSHIM_LIBRARY", strerror(errno));
        return false;
    }
    self[n] = '\0';
    *strrchr(self, '/') = '\0'; /* the launcher's folder; the path is absolute */
    char tried[4 * PATH_MAX] = "";
    if (try_candidate(self, SHIM_FILE, out, len, tried, sizeof tried) ||
        try_candidate(self, P2PSHIM_LIBDIR_FROM_BINDIR "/" SHIM_FILE, out, len, tried,
                      sizeof tried) ||
        try_candidate(self, "../../interpose/" SHIM_FILE, out, len, tried, sizeof tried))
        return true;
    launcher_error("%s not found (looked at %s); set P2PSHIM_LIBRARY to its path",
                   SHIM_FILE, tried);
    return false;
}
