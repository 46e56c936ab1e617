/* Global state of the stand-in: the lock, the named counters, the
 * configuration, set-up and tear-down, the per-thread context stack, and
 * context bookkeeping shared by the other files. */
#include "sd_internal.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sd_state sd = {.generation = 1};
pthread_mutex_t sd_mu = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------ */
/* Named counters: open addressing over names kept in the slots. Two
 * tables: calls (per exported function) and lookups (per symbol asked of
 * cuGetProcAddress). Fixed tables, no allocation: a call the shim makes
 * for itself must not change the program's heap (tests/footprint's heap
 * probe compares it with and without the shim), as a real driver's
 * function call does not allocate to count itself. Names are cut at
 * SD_CTR_NAME - 1 characters; a full table stops counting new names. */

#define SD_CTR_NAME 96
#define SD_CTR_SLOTS 2048 /* a power of two, well above the exports and names asked */
struct sd_ctr { char name[SD_CTR_NAME]; uint64_t n; };
static struct { struct sd_ctr slot[SD_CTR_SLOTS]; size_t used; } ctr[2];

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (size_t k = 0; *s && k < SD_CTR_NAME - 1; s++, k++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static struct sd_ctr *ctr_find(int t, const char *name, int create)
{
    size_t i = hash_str(name) & (SD_CTR_SLOTS - 1);
    while (ctr[t].slot[i].name[0]) {
        if (strncmp(ctr[t].slot[i].name, name, SD_CTR_NAME - 1) == 0)
            return &ctr[t].slot[i];
        i = (i + 1) & (SD_CTR_SLOTS - 1);
    }
    if (!create || name[0] == '\0' || 2 * (ctr[t].used + 1) > SD_CTR_SLOTS)
        return NULL;
    snprintf(ctr[t].slot[i].name, SD_CTR_NAME, "%s", name);
    ctr[t].used++;
    return &ctr[t].slot[i];
}

void sd_count(int table, const char *name)
{
    struct sd_ctr *c = ctr_find(table, name, 1);
    if (c)
        c->n++;
}

uint64_t sd_counter(int table, const char *name)
{
    struct sd_ctr *c = ctr_find(table, name, 0);
    return c ? c->n : 0;
}

void sd_counters_clear(void)
{
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < SD_CTR_SLOTS; i++)
            ctr[t].slot[i].n = 0;
}

/* STANDIN_SLOW_THREAD=NAME:MS: every call from a thread named NAME
 * sleeps MS ms before it takes the lock, so that a test can hold one of
 * the shim's threads between two driver calls while another thread goes
 * on (adversarial.free_during_fill). */
static char slow_name[16];
static long slow_ms;

static void slow_thread_env(void)
{
    const char *v = getenv("STANDIN_SLOW_THREAD");
    const char *colon = v ? strchr(v, ':') : NULL;
    if (colon == NULL || colon == v || (size_t)(colon - v) >= sizeof slow_name)
        return;
    memcpy(slow_name, v, (size_t)(colon - v));
    slow_ms = strtol(colon + 1, NULL, 10);
}

static void slow_thread(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, slow_thread_env);
    if (slow_ms <= 0)
        return;
    char self[16] = "";
    if (pthread_getname_np(pthread_self(), self, sizeof self) != 0 ||
        strcmp(self, slow_name) != 0)
        return;
    struct timespec t = {slow_ms / 1000, (slow_ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

CUresult sd_enter(const char *fn, int need_init)
{
    sd_observe_enter(fn); /* outside the lock: a profiler calls back into its tool */
    slow_thread();
    pthread_mutex_lock(&sd_mu);
    sd_count(SD_COUNT_CALLS, fn);
    if (need_init && !sd.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (need_init && sd.cfg.driver_fd && sd_driver_fd_lost())
        return CUDA_ERROR_UNKNOWN;
    return CUDA_SUCCESS;
}

/* The device file of STANDIN_DRIVER_FD, as the real driver holds its own:
 * what the program's closefrom(3) or dup2 sweep takes away. */
static int driver_fd = -1;
static dev_t driver_fd_rdev;
static ino_t driver_fd_ino;

void sd_driver_fd_open(void)
{
    struct stat st;
    if (driver_fd >= 0)
        return;
    driver_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    if (driver_fd >= 0 && fstat(driver_fd, &st) == 0) {
        driver_fd_rdev = st.st_rdev;
        driver_fd_ino = st.st_ino;
    }
}

int sd_driver_fd_lost(void)
{
    struct stat st;
    return driver_fd < 0 || fstat(driver_fd, &st) != 0 || !S_ISCHR(st.st_mode) ||
           st.st_rdev != driver_fd_rdev || st.st_ino != driver_fd_ino;
}

CUresult sd_leave(CUresult r)
{
    /* At the end of the call that issued it, so that no caller holds an
     * operation that has already run (and been freed). */
    if (sd.cfg.eager_nonblocking)
        sd_run_nonblocking();
    pthread_mutex_unlock(&sd_mu);
    return r;
}

/* ------------------------------------------------------------------ */
/* Configuration. A bad value warns on stderr and keeps the default. */

static void warn(const char *var, const char *val)
{
    fprintf(stderr, "standin: ignoring %s=%s (bad value), using the default\n", var, val);
}

static long env_long(const char *var, long def, long lo, long hi)
{
    const char *s = getenv(var);
    if (!s || !*s)
        return def;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi) {
        warn(var, s);
        return def;
    }
    return v;
}

static int parse_matrix(const char *s, int n, unsigned char can[SD_MAX_DEV][SD_MAX_DEV])
{
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            if (s[j] != '0' && s[j] != '1')
                return 0;
            can[i][j] = (unsigned char)(s[j] == '1' && i != j);
        }
        s += n;
        if (i + 1 < n) {
            if (*s != ',')
                return 0;
            s++;
        }
    }
    return *s == '\0';
}

/* A list "a:b,c:d" of device pairs from var into out[a][b] (and out[b][a]
 * when both_ways). A bad list warns and stops where it went wrong. */
static void read_pairs(const char *var, int n, unsigned char out[SD_MAX_DEV][SD_MAX_DEV],
                       int both_ways)
{
    const char *f = getenv(var);
    if (!f || !*f)
        return;
    const char *p = f;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10);
        if (end == p || *end != ':') { warn(var, f); break; }
        p = end + 1;
        long b = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',')) { warn(var, f); break; }
        if (a >= 0 && a < n && b >= 0 && b < n) {
            out[a][b] = 1;
            if (both_ways)
                out[b][a] = 1;
        }
        p = *end ? end + 1 : end;
    }
}

/* CUDA_VISIBLE_DEVICES as the driver reads indices: the listed devices of
 * the machine's n, in that order; the list ends at the first entry that is
 * not one of them (a UUID, a repeat, out of range). Unset: all n. Returns
 * the devices visible (at least 1, as the stand-in has no "no device"). */
static int visible_devices(int n, int phys[SD_MAX_DEV])
{
    const char *s = getenv("CUDA_VISIBLE_DEVICES");
    for (int i = 0; i < SD_MAX_DEV; i++)
        phys[i] = i;
    if (!s)
        return n;
    int count = 0;
    unsigned char seen[SD_MAX_DEV] = {0};
    while (*s && count < n) {
        char *end;
        long d = strtol(s, &end, 10);
        if (end == s || (*end && *end != ',') || d < 0 || d >= n || seen[d])
            break;
        seen[d] = 1;
        phys[count++] = (int)d;
        s = *end ? end + 1 : end;
    }
    if (count == 0) {
        phys[0] = 0;
        return 1;
    }
    return count;
}

void sd_read_config(struct sd_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    int n = cfg->ndev = (int)env_long("STANDIN_DEVICES", 2, 1, SD_MAX_DEV);
    n = cfg->ndev = visible_devices(n, cfg->phys);
    cfg->max_peers = (int)env_long("STANDIN_MAX_PEERS", 8, 0, 1 << 20);
    cfg->arena_bytes = (size_t)env_long("STANDIN_ARENA_MB", 256, 1, 16384) << 20;
    cfg->eager_nonblocking = (int)env_long("STANDIN_EAGER_NONBLOCKING", 0, 0, 1);
    cfg->leak_report = (int)env_long("STANDIN_LEAK_REPORT", 0, 0, 1);
    cfg->driver_fd = (int)env_long("STANDIN_DRIVER_FD", 0, 0, 1);

    const char *t = getenv("STANDIN_TOPOLOGY");
    int ok = 1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            cfg->can[i][j] = (unsigned char)(i != j);   /* full */
    if (t && *t && strcmp(t, "full") != 0) {
        if (strcmp(t, "none") == 0) {
            memset(cfg->can, 0, sizeof cfg->can);
        } else if (strcmp(t, "islands") == 0) {
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++)
                    cfg->can[i][j] = (unsigned char)(i != j && (i < n / 2) == (j < n / 2));
        } else if (strncmp(t, "matrix:", 7) == 0) {
            unsigned char m[SD_MAX_DEV][SD_MAX_DEV] = {{0}};
            ok = parse_matrix(t + 7, n, m);
            if (ok)
                memcpy(cfg->can, m, sizeof m);
        } else {
            ok = 0;
        }
    }
    if (!ok)
        warn("STANDIN_TOPOLOGY", t);

    read_pairs("STANDIN_FAIL_ENABLE", n, cfg->fail, 0);
    read_pairs("STANDIN_LINK_CORRUPT", n, cfg->corrupt, 1);
    read_pairs("STANDIN_LINK_SLOW", n, cfg->slow, 1);
}

/* ------------------------------------------------------------------ */
/* Per-thread current-context stack. Stamped with the generation, so a
 * reload empties every thread's stack without touching other threads. */

#define SD_STACK_MAX 64
static _Thread_local struct {
    uint64_t gen;
    int n;
    struct CUctx_st *stk[SD_STACK_MAX];
} tls;
static _Thread_local uint64_t tls_key;
static uint64_t next_thread_key;

static void tls_check(void)
{
    if (tls.gen != sd.generation) {
        tls.gen = sd.generation;
        tls.n = 0;
    }
}

uint64_t sd_thread_key(void)
{
    if (!tls_key)
        tls_key = ++next_thread_key;
    return tls_key;
}

struct CUctx_st *sd_current_raw(void)
{
    tls_check();
    return tls.n ? tls.stk[tls.n - 1] : NULL;
}

CUresult sd_current(struct CUctx_st **out)
{
    struct CUctx_st *c = sd_current_raw();
    *out = c;
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!c->alive)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    return CUDA_SUCCESS;
}

/* Stack operations for sd_context.c. */
int sd_tls_push(struct CUctx_st *c)
{
    tls_check();
    if (tls.n == SD_STACK_MAX)
        return 0;
    tls.stk[tls.n++] = c;
    return 1;
}

struct CUctx_st *sd_tls_pop(void)
{
    tls_check();
    return tls.n ? tls.stk[--tls.n] : NULL;
}

void sd_tls_set_top(struct CUctx_st *c)
{
    tls_check();
    if (tls.n == 0) {
        if (c)
            tls.stk[tls.n++] = c;
    } else if (c) {
        tls.stk[tls.n - 1] = c;
    } else {
        tls.n--;
    }
}

/* ------------------------------------------------------------------ */
/* Contexts. */

int sd_valid_dev(CUdevice d)
{
    return d >= 0 && d < sd.cfg.ndev;
}

int sd_ctx_live(struct CUctx_st *c)
{
    if (!c)
        return 0;
    for (struct CUctx_st *x = sd.ctxs; x; x = x->next_all)
        if (x == c)
            return x->alive;
    return 0;
}

static int has_peer(struct CUctx_st *from, struct CUctx_st *to)
{
    for (int i = 0; i < from->npeers; i++)
        if (from->peers[i] == to)
            return 1;
    return 0;
}

int sd_peer_either(struct CUctx_st *a, struct CUctx_st *b)
{
    return a && b && (has_peer(a, b) || has_peer(b, a));
}

int sd_dev_has_peer_to(int dev, struct CUctx_st *c)
{
    for (struct CUctx_st *x = sd.ctxs; x; x = x->next_all)
        if (x->alive && x->dev == dev && c && has_peer(x, c))
            return 1;
    return 0;
}

/* Peer lists, for sd_context.c and the control API. */
int sd_peer_has(struct CUctx_st *from, struct CUctx_st *to)
{
    return has_peer(from, to);
}

int sd_peer_add(struct CUctx_st *from, struct CUctx_st *to)
{
    if (from->npeers == from->cap_peers) {
        int ncap = from->cap_peers ? 2 * from->cap_peers : 8;
        struct CUctx_st **np = realloc(from->peers, (size_t)ncap * sizeof *np);
        if (!np)
            return 0;
        from->peers = np;
        from->cap_peers = ncap;
    }
    from->peers[from->npeers++] = to;
    return 1;
}

void sd_peer_remove(struct CUctx_st *from, struct CUctx_st *to)
{
    for (int i = 0; i < from->npeers; i++)
        if (from->peers[i] == to) {
            from->peers[i] = from->peers[--from->npeers];
            return;
        }
}

struct CUctx_st *sd_ctx_new(int dev, int primary)
{
    struct CUctx_st *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->id = ++sd.next_id;
    c->dev = dev;
    c->primary = primary;
    c->legacy = sd_stream_new(c, SD_STREAM_LEGACY, 0, 0);
    if (!c->legacy) {
        free(c);
        return NULL;
    }
    c->next_all = sd.ctxs;
    sd.ctxs = c;
    return c;
}

void sd_ctx_clear(struct CUctx_st *c)
{
    if (sd.cfg.leak_report) {
        char when[64];
        snprintf(when, sizeof when, "the end of a %scontext of device %d",
                 c->primary ? "primary " : "", c->dev);
        sd_leak_report(c, when);
    }
    /* Pending work first: it may read or write what is about to go. */
    sd_flush_all();
    sd_streams_drop_ctx(c);
    for (struct CUevent_st **pe = &sd.events; *pe;) {
        if ((*pe)->ctx == c) {
            struct CUevent_st *e = *pe;
            *pe = e->next;
            free(e);
        } else {
            pe = &(*pe)->next;
        }
    }
    sd_free_ctx_allocs(c);
    c->npeers = 0;
    for (struct CUctx_st *x = sd.ctxs; x; x = x->next_all)
        sd_peer_remove(x, c);
}

/* ------------------------------------------------------------------ */
/* Set-up after cuInit (or a reload of an initialised driver), and the
 * tear-down of everything. */

void sd_setup(void)
{
    sd_arenas_map();
    sd_vmm_init();
    for (int d = 0; d < sd.cfg.ndev; d++) {
        sd.primary[d] = sd_ctx_new(d, 1);
        sd.default_pool[d] = sd_pool_new(d, 1);
        if (!sd.primary[d] || !sd.default_pool[d]) {
            fprintf(stderr, "standin: out of memory at set-up\n");
            abort();
        }
    }
}

void sd_teardown_all(void)
{
    while (sd.streams)
        sd_stream_free(sd.streams);
    while (sd.events) {
        struct CUevent_st *e = sd.events;
        sd.events = e->next;
        free(e);
    }
    sd_vmm_fini();
    sd_free_all_allocs();
    sd_arrays_free();
    sd_pools_free();
    while (sd.ctxs) {
        struct CUctx_st *c = sd.ctxs;
        sd.ctxs = c->next_all;
        free(c->peers);
        free(c);
    }
    sd_arenas_unmap();
    memset(sd.primary, 0, sizeof sd.primary);
    memset(sd.default_pool, 0, sizeof sd.default_pool);
    memset(sd.vmm_bytes, 0, sizeof sd.vmm_bytes);
    sd.pending = 0;
    sd.generation++;
}

/* Frees everything at unload, so that leak checkers see a clean exit. */
__attribute__((destructor)) static void sd_fini(void)
{
    pthread_mutex_lock(&sd_mu);
    if (sd.cfg.leak_report && sd.initialized)
        sd_leak_report(NULL, "unload");
    sd_teardown_all();
    pthread_mutex_unlock(&sd_mu);
}

/* A fork while another thread is inside the stand-in (the shim's run-log
 * writer asking for device names, say) must not leave the child's copy of
 * the lock held by a thread the child does not have: the lock is taken
 * around fork, as a library that is fork-safe does. Registered when the
 * library loads, before the shim's handlers: those run first at a fork,
 * and may still call in. */
static void sd_fork_prepare(void)
{
    pthread_mutex_lock(&sd_mu);
}

static void sd_fork_release(void)
{
    pthread_mutex_unlock(&sd_mu);
}

__attribute__((constructor)) static void sd_fork_register(void)
{
    pthread_atfork(sd_fork_prepare, sd_fork_release, sd_fork_release);
}
