#define _GNU_SOURCE
#include "shim.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "ownership.h"
#include "peer.h"
#include "record.h"
#include "stats.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static const struct p2pshim_config *config;
static _Thread_local int guard_depth;

static void dump_line(const char *line)
{
    log_line(line);
}

static void fork_prepare(void)
{
    peer_fork_prepare();
    ownership_fork_prepare();
}

static void fork_release(void)
{
    ownership_fork_release();
    peer_fork_release();
}

static void fork_child(void)
{
    fork_release();
    stats_reset();
}

static void init_once_body(void)
{
    config = config_get(); /* also opens the log (log.h) */
    if (config->dump_config)
        config_dump(config, dump_line);
    LOG_DEBUG("loaded (mode %s)", p2pshim_mode_names[config->mode]);
    atexit(stats_report);
    if (config->run_log[0] != '\0') {
        record_open(config->run_log_pattern, p2pshim_mode_names[config->mode],
                    config->record_limit);
        atexit(record_flush_final);
    }
    pthread_atfork(fork_prepare, fork_release, fork_child);
}

void shim_init(void)
{
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
    pthread_atfork(NULL, NULL, forget_tid);
}

uint32_t shim_thread_id(void)
{
    if (cached_tid == 0) {
        pthread_once(&tid_once, tid_once_body);
        cached_tid = (uint32_t)syscall(SYS_gettid);
    }
    return cached_tid;
}
