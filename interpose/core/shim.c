#define _GNU_SOURCE
#include "shim.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hot.h"
#include "log.h"
#include "sigmask.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
/* Set (release) when the start-up is done: every intercepted call asks,
 * and one inline load of a flag costs fewer cache lines than pthread_once
 * (its control word and the call into libc), which a copy made with cold
 * caches pays in host time. */
static atomic_bool init_done;
static const struct p2pshim_config *config;
static _Thread_local int guard_depth;

/* ---- the lifecycle table (shim.h) ----------------------------------------- */

/* The rows the modules linked in declare (SHIM_LIFE_ROW). Weak: a program
 * that links shim.c with no module has none. */
extern const struct shim_life_row __start_p2pshim_life[] __attribute__((weak, visibility("hidden")));
extern const struct shim_life_row __stop_p2pshim_life[] __attribute__((weak, visibility("hidden")));

static const struct shim_life_row *by_order[SHIM_ROW_COUNT];
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static void index_rows(void)
{
    for (const struct shim_life_row *r = __start_p2pshim_life; r < __stop_p2pshim_life; r++)
        if ((unsigned)r->order < SHIM_ROW_COUNT && by_order[r->order] == NULL)
            by_order[r->order] = r;
}

/* The row in place i, or NULL. */
static const struct shim_life_row *row_at(int i)
{
    pthread_once(&index_once, index_rows);
    return by_order[i];
}

/* The rows in the table (bit per place), and those of them present at
 * start-up: the start-up handlers run those; each row that joins later has
 * handlers of its own. */
static _Atomic unsigned joined_rows;
static _Atomic unsigned startup_rows;
static bool started; /* under table_mu */
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;

enum column { AT_INIT, AT_START, FORK_PREPARE, FORK_PARENT, FORK_CHILD, AT_EXIT, REPORT, RESET };

static void (*column_of(const struct shim_life_row *m, enum column c))(void)
{
    switch (c) {
    case AT_INIT:
        return m->at_init;
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

/* The row in place i when it is in the given set of places, else NULL. */
static const struct shim_life_row *row_in(int i, unsigned set)
{
    return (set >> i) & 1u ? row_at(i) : NULL;
}

/* Runs one column of the start-up rows, top to bottom or bottom to top. */
static void run_startup(enum column c, bool upward)
{
    unsigned startup = atomic_load(&startup_rows);
    for (int k = 0; k < SHIM_ROW_COUNT; k++) {
        int i = upward ? SHIM_ROW_COUNT - 1 - k : k;
        const struct shim_life_row *m = row_in(i, startup);
        void (*fn)(void) = m != NULL ? column_of(m, c) : NULL;
        if (fn != NULL)
            fn();
    }
}

/* Reports and resets take no locks and ask no driver: the start-up
 * handlers run them for every row in the table. */
static void run_every_row(enum column c)
{
    unsigned joined = atomic_load(&joined_rows);
    for (int i = 0; i < SHIM_ROW_COUNT; i++) {
        const struct shim_life_row *m = row_in(i, joined);
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

/* A row that joined after start-up: its own handlers, installed when it
 * joins (one set per place, since libc's handlers take no argument). */
static void run_late(enum shim_row row, enum column c)
{
    const struct shim_life_row *m = row_in(row, atomic_load(&joined_rows));
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

static bool has_handlers(const struct shim_life_row *m)
{
    return m->fork_prepare || m->fork_parent || m->fork_child || m->at_exit;
}

/* Puts the row in place row in the table, under table_mu; false when it
 * was there already or no module linked in declares it. */
static bool join_locked(enum shim_row row)
{
    const struct shim_life_row *m = row_at(row);
    if (m == NULL || (atomic_load(&joined_rows) >> row) & 1u)
        return false;
    atomic_fetch_or(&joined_rows, 1u << row);
    if (!started)
        atomic_fetch_or(&startup_rows, 1u << row);
    return true;
}

void shim_life_start(enum shim_row row)
{
    if ((unsigned)row >= SHIM_ROW_COUNT || (atomic_load(&joined_rows) >> row) & 1u)
        return;
    pthread_mutex_lock(&table_mu);
    if (join_locked(row) && started && has_handlers(row_at(row))) {
        pthread_atfork(late[row].prepare, late[row].parent, late[row].child);
        atexit(late[row].exit);
    }
    pthread_mutex_unlock(&table_mu);
}

/* Puts the start-up rows in the table, opens what they open in every mode
 * (the run log), then installs the process's handlers for them. */
static void start_table(void)
{
    pthread_mutex_lock(&table_mu);
    for (int i = 0; i < SHIM_ROW_COUNT; i++)
        if (row_at(i) != NULL && !row_at(i)->late)
            join_locked((enum shim_row)i);
    pthread_mutex_unlock(&table_mu);
    run_startup(AT_INIT, false);
    pthread_mutex_lock(&table_mu);
    started = true;
    pthread_mutex_unlock(&table_mu);
    atexit(startup_exit);
    pthread_atfork(startup_prepare, startup_parent, startup_child);
}

void shim_life_before_ctx_gone(struct CUctx_st *ctx, int dev)
{
    for (int i = 0; i < SHIM_ROW_COUNT; i++)
        if (row_at(i) != NULL && row_at(i)->before_ctx_gone != NULL)
            row_at(i)->before_ctx_gone(ctx, dev);
}

void shim_life_ctx_gone(struct CUctx_st *ctx)
{
    for (int i = 0; i < SHIM_ROW_COUNT; i++)
        if (row_at(i) != NULL && row_at(i)->ctx_gone != NULL)
            row_at(i)->ctx_gone(ctx);
}

void shim_life_device_gone(int dev)
{
    for (int i = 0; i < SHIM_ROW_COUNT; i++)
        if (row_at(i) != NULL && row_at(i)->device_gone != NULL)
            row_at(i)->device_gone(dev);
}

/* Names the rows linked in, in their order (a debug line at start-up). */
static void log_rows(void)
{
    char names[256] = "";
    size_t used = 0;
    for (int i = 0; i < SHIM_ROW_COUNT && used < sizeof names; i++)
        if (row_at(i) != NULL)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                     used > 0 ? " " : "", row_at(i)->name);
    LOG_DEBUG("lifecycle rows: %s", names);
}

/* Every row, late ones included, in the table's order. */
static void run_all(enum column c, bool upward)
{
    if (!atomic_load_explicit(&init_done, memory_order_acquire))
        return;
    unsigned joined = atomic_load(&joined_rows);
    for (int k = 0; k < SHIM_ROW_COUNT; k++) {
        int i = upward ? SHIM_ROW_COUNT - 1 - k : k;
        const struct shim_life_row *m = row_in(i, joined);
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
    log_rows();
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

/* Quiet sections (shim.h). The depth and the mask to restore are the
 * thread's own; a signal cannot land between the block and the depth's
 * first count (blocked by then), and one landing before it runs whole
 * pairs of its own, leaving depth and mask as it found them. */
static _Atomic bool quiet_wanted;
static _Thread_local unsigned quiet_depth;
/* The mask to restore, as the kernel keeps it: 64 bits, the first eight
 * bytes of a sigset_t (glibc and musl), whose 128 would more than double
 * the shim's static TLS (footprint.tls). */
static _Thread_local uint64_t quiet_saved;
_Static_assert(sizeof(sigset_t) >= sizeof(uint64_t), "a sigset_t holds the kernel's mask");
/* The section shim_begin opened (begin and end never nest on a thread). */
static _Thread_local bool begin_quiet;

void shim_quiet_enable(void)
{
    atomic_store(&quiet_wanted, true);
}

P2PSHIM_HOT bool shim_quiet_begin(bool always)
{
    if (quiet_depth > 0) {
        quiet_depth++;
        return true;
    }
    if (!always && !atomic_load_explicit(&quiet_wanted, memory_order_acquire))
        return false;
    sigset_t old;
    shim_block_async_signals(&old);
    memcpy(&quiet_saved, &old, sizeof quiet_saved);
    quiet_depth = 1;
    return true;
}

P2PSHIM_HOT void shim_quiet_end(bool begun)
{
    if (!begun || --quiet_depth > 0)
        return;
    sigset_t old;
    sigemptyset(&old);
    memcpy(&old, &quiet_saved, sizeof quiet_saved);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

P2PSHIM_HOT void shim_quiet_scope_end(const bool *begun)
{
    shim_quiet_end(*begun);
}

P2PSHIM_HOT bool shim_begin(void)
{
    if (shim_reentered())
        return false;
    shim_init();
    shim_guard_enter();
    begin_quiet = shim_quiet_begin(false);
    return true;
}

P2PSHIM_HOT void shim_end(void)
{
    shim_quiet_end(begin_quiet);
    shim_guard_leave();
}

static _Thread_local uint32_t cached_tid;
static pthread_once_t tid_once = PTHREAD_ONCE_INIT;

static void forget_tid(void)
{
    cached_tid = 0; /* runs in the one thread a fork child has */
}

SHIM_LIFE_ROW(tid_row) = {
    .order = SHIM_ROW_THREAD_ID, .late = true, .name = "thread-id", .fork_child = forget_tid};

static void tid_once_body(void)
{
    shim_life_start(SHIM_ROW_THREAD_ID);
}

uint32_t shim_thread_id(void)
{
    if (cached_tid == 0) {
        pthread_once(&tid_once, tid_once_body);
        cached_tid = (uint32_t)syscall(SYS_gettid);
    }
    return cached_tid;
}
