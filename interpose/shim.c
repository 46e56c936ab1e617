#define _GNU_SOURCE
#include "shim.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd_guard.h"
#include "link_life.h"
#include "log.h"
#include "ownership.h"
#include "peer.h"
#include "record.h"
#include "shim_alloc.h"
#include "stats.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
/* Set (release) when the start-up is done: every intercepted call asks,
 * and one inline load of a flag costs fewer cache lines than pthread_once
 * (its control word and the call into libc), which a copy made with cold
 * caches pays in host time. */
static atomic_bool init_done;
static const struct p2pshim_config *config;
static _Thread_local int guard_depth;

/* ---- the lifecycle table (shim.h) ----------------------------------------- */

/* Modules that start with the shim. record's handlers return at once when
 * no run log is open. */
static const struct shim_module links_row = {
    .name = "links",
    .fork_prepare = link_life_fork_prepare,
    .fork_parent = link_life_fork_parent,
    .fork_child = link_life_fork_child,
};
static const struct shim_module peer_row = {
    .name = "peer",
    .at_start = peer_warm_thread,
    .fork_prepare = peer_fork_prepare,
    .fork_parent = peer_fork_release,
    .fork_child = peer_fork_release,
};
static const struct shim_module ownership_row = {
    .name = "ownership",
    .at_start = ownership_warm_thread,
    .fork_prepare = ownership_fork_prepare,
    .fork_parent = ownership_fork_release,
    .fork_child = ownership_fork_release,
};
static const struct shim_module record_row = {
    .name = "record",
    .fork_child = record_fork_child,
    .at_exit = record_flush_final,
};
static const struct shim_module stats_row = {
    .name = "stats",
    .at_start = stats_warm,
    .report = stats_report,
    .reset = stats_reset,
};
static const struct shim_module alloc_row = {
    .name = "shim-alloc",
    .fork_prepare = shim_alloc_fork_prepare,
    .fork_parent = shim_alloc_fork_release,
    .fork_child = shim_alloc_fork_release,
};
static const struct shim_module fds_row = {
    .name = "descriptors",
    .fork_prepare = shim_fd_fork_prepare,
    .fork_parent = shim_fd_fork_parent,
    .fork_child = shim_fd_fork_child,
};

static _Atomic(const struct shim_module *) rows[SHIM_ROW_COUNT];
/* The rows present at start-up (bit per row): the start-up handlers run
 * them; each row registered later has handlers of its own. */
static _Atomic unsigned startup_rows;
static bool started; /* under table_mu */
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;

enum column { AT_START, FORK_PREPARE, FORK_PARENT, FORK_CHILD, AT_EXIT, REPORT, RESET };

static void (*column_of(const struct shim_module *m, enum column c))(void)
{
    switch (c) {
    case AT_START:
        return m->at_start;
    case FORK_PREPARE:
        return m->fork_prepare;
    case FORK_PARENT:
        return m->fork_parent;
    case FORK_CHILD:
        return m->fork_child;
    case AT_EXIT:
        return m->at_exit;
    case REPORT:
        return m->report;
    case RESET:
        return m->reset;
    }
    return NULL;
}

/* Runs one column of the start-up rows, top to bottom or bottom to top. */
static void run_startup(enum column c, bool upward)
{
    unsigned startup = atomic_load(&startup_rows);
    for (int k = 0; k < SHIM_ROW_COUNT; k++) {
        int i = upward ? SHIM_ROW_COUNT - 1 - k : k;
        const struct shim_module *m = atomic_load(&rows[i]);
        void (*fn)(void) = m != NULL && (startup >> i) & 1u ? column_of(m, c) : NULL;
        if (fn != NULL)
            fn();
    }
}

/* Reports and resets take no locks and ask no driver: the start-up
 * handlers run them for every row. */
static void run_every_row(enum column c)
{
    for (int i = 0; i < SHIM_ROW_COUNT; i++) {
        const struct shim_module *m = atomic_load(&rows[i]);
        void (*fn)(void) = m != NULL ? column_of(m, c) : NULL;
        if (fn != NULL)
            fn();
    }
}

static void startup_prepare(void)
{
    run_startup(FORK_PREPARE, false);
}

static void startup_parent(void)
{
    run_startup(FORK_PARENT, true);
}

static void startup_child(void)
{
    run_startup(FORK_CHILD, true);
    run_every_row(RESET);
}

static void startup_exit(void)
{
    run_startup(AT_EXIT, false);
    run_every_row(REPORT);
}

/* A row registered after start-up: its own handlers, installed when it
 * registers (one set per row, since libc's handlers take no argument). */
static void run_late(enum shim_row row, enum column c)
{
    const struct shim_module *m = atomic_load(&rows[row]);
    void (*fn)(void) = m != NULL ? column_of(m, c) : NULL;
    if (fn != NULL)
        fn();
}

struct handlers {
    void (*prepare)(void), (*parent)(void), (*child)(void), (*exit)(void);
};

#define LATE_HANDLERS(row)                                                                         \
    static void late_prepare_##row(void)                                                           \
    {                                                                                              \
        run_late(row, FORK_PREPARE);                                                               \
    }                                                                                              \
    static void late_parent_##row(void)                                                            \
    {                                                                                              \
        run_late(row, FORK_PARENT);                                                                \
    }                                                                                              \
    static void late_child_##row(void)                                                             \
    {                                                                                              \
        run_late(row, FORK_CHILD);                                                                 \
    }                                                                                              \
    static void late_exit_##row(void)                                                              \
    {                                                                                              \
        run_late(row, AT_EXIT);                                                                    \
    }
#define LATE_ENTRY(row)                                                                            \
    [row] = {late_prepare_##row, late_parent_##row, late_child_##row, late_exit_##row}

LATE_HANDLERS(SHIM_ROW_BOUNCE)
LATE_HANDLERS(SHIM_ROW_ALIAS)
LATE_HANDLERS(SHIM_ROW_RELAY)
LATE_HANDLERS(SHIM_ROW_LINKS)
LATE_HANDLERS(SHIM_ROW_PEER)
LATE_HANDLERS(SHIM_ROW_OWNERSHIP)
LATE_HANDLERS(SHIM_ROW_RECORD)
LATE_HANDLERS(SHIM_ROW_THREAD_ID)
LATE_HANDLERS(SHIM_ROW_STATS)
LATE_HANDLERS(SHIM_ROW_ALLOC)
LATE_HANDLERS(SHIM_ROW_FDS)
LATE_HANDLERS(SHIM_ROW_BOUNCE_SUMMARY)
LATE_HANDLERS(SHIM_ROW_BOUNCE_WARM)
static const struct handlers late[SHIM_ROW_COUNT] = {
    LATE_ENTRY(SHIM_ROW_BOUNCE),         LATE_ENTRY(SHIM_ROW_ALIAS),
    LATE_ENTRY(SHIM_ROW_RELAY),
    LATE_ENTRY(SHIM_ROW_LINKS),          LATE_ENTRY(SHIM_ROW_PEER),
    LATE_ENTRY(SHIM_ROW_OWNERSHIP),      LATE_ENTRY(SHIM_ROW_RECORD),
    LATE_ENTRY(SHIM_ROW_THREAD_ID),      LATE_ENTRY(SHIM_ROW_STATS),
    LATE_ENTRY(SHIM_ROW_ALLOC),          LATE_ENTRY(SHIM_ROW_FDS),
    LATE_ENTRY(SHIM_ROW_BOUNCE_SUMMARY), LATE_ENTRY(SHIM_ROW_BOUNCE_WARM),
};
_Static_assert(SHIM_ROW_COUNT == 13, "one LATE_HANDLERS and LATE_ENTRY per row");

static bool has_handlers(const struct shim_module *m)
{
    return m->fork_prepare || m->fork_parent || m->fork_child || m->at_exit;
}

void shim_register(enum shim_row row, const struct shim_module *module)
{
    if ((unsigned)row >= SHIM_ROW_COUNT || module == NULL)
        return;
    pthread_mutex_lock(&table_mu);
    const struct shim_module *none = NULL;
    if (atomic_compare_exchange_strong(&rows[row], &none, module)) {
        if (!started)
            atomic_fetch_or(&startup_rows, 1u << row);
        else if (has_handlers(module)) {
            pthread_atfork(late[row].prepare, late[row].parent, late[row].child);
            atexit(late[row].exit);
        }
    }
    pthread_mutex_unlock(&table_mu);
}

/* Installs the start-up rows and the process's handlers for them. */
static void start_table(void)
{
    shim_register(SHIM_ROW_LINKS, &links_row);
    shim_register(SHIM_ROW_PEER, &peer_row);
    shim_register(SHIM_ROW_OWNERSHIP, &ownership_row);
    shim_register(SHIM_ROW_RECORD, &record_row);
    shim_register(SHIM_ROW_STATS, &stats_row);
    shim_register(SHIM_ROW_ALLOC, &alloc_row);
    shim_register(SHIM_ROW_FDS, &fds_row);
    pthread_mutex_lock(&table_mu);
    started = true;
    pthread_mutex_unlock(&table_mu);
    atexit(startup_exit);
    pthread_atfork(startup_prepare, startup_parent, startup_child);
}

/* Every row, late ones included, in the table's order. */
static void run_all(enum column c, bool upward)
{
    if (!atomic_load_explicit(&init_done, memory_order_acquire))
        return;
    for (int k = 0; k < SHIM_ROW_COUNT; k++) {
        int i = upward ? SHIM_ROW_COUNT - 1 - k : k;
        const struct shim_module *m = atomic_load(&rows[i]);
        void (*fn)(void) = m != NULL ? column_of(m, c) : NULL;
        if (fn != NULL)
            fn();
    }
}

void shim_fork_prepare(void)
{
    run_all(FORK_PREPARE, false);
}

void shim_fork_parent(void)
{
    run_all(FORK_PARENT, true);
}

void shim_fork_child(void)
{
    run_all(FORK_CHILD, true);
    if (atomic_load_explicit(&init_done, memory_order_acquire))
        run_every_row(RESET);
}

/* ---- start-up and the guard ----------------------------------------------- */

static void dump_line(const char *line)
{
    log_line(line);
}

static void init_once_body(void)
{
    config = config_get(); /* also opens the log (log.h) */
    if (config->dump_config)
        config_dump(config, dump_line);
    LOG_DEBUG("loaded (mode %s)", p2pshim_mode_names[config->mode]);
    if (config->run_log[0] != '\0')
        record_open(config->run_log_pattern, p2pshim_mode_names[config->mode],
                    config->record_limit);
    start_table();
    if (config->mode != P2PSHIM_MODE_OFF)
        run_startup(AT_START, false);
    atomic_store_explicit(&init_done, true, memory_order_release);
}

void shim_init(void)
{
    if (!atomic_load_explicit(&init_done, memory_order_acquire))
        pthread_once(&init_once, init_once_body);
}

const struct p2pshim_config *shim_config(void)
{
    shim_init();
    return config;
}

bool shim_reentered(void)
{
    return guard_depth > 0;
}

void shim_guard_enter(void)
{
    guard_depth++;
}

void shim_guard_leave(void)
{
    guard_depth--;
}

bool shim_begin(void)
{
    if (shim_reentered())
        return false;
    shim_init();
    shim_guard_enter();
    return true;
}

void shim_end(void)
{
    shim_guard_leave();
}

static _Thread_local uint32_t cached_tid;
static pthread_once_t tid_once = PTHREAD_ONCE_INIT;

static void forget_tid(void)
{
    cached_tid = 0; /* runs in the one thread a fork child has */
}

static void tid_once_body(void)
{
    static const struct shim_module row = {.name = "thread-id", .fork_child = forget_tid};
    shim_register(SHIM_ROW_THREAD_ID, &row);
}

uint32_t shim_thread_id(void)
{
    if (cached_tid == 0) {
        pthread_once(&tid_once, tid_once_body);
        cached_tid = (uint32_t)syscall(SYS_gettid);
    }
    return cached_tid;
}
