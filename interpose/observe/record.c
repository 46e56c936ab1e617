#define _GNU_SOURCE
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "devinfo.h"
#include "json_text.h"
#include "log.h"
#include "outfile.h"
#include "record_int.h"
#include "shim.h"
#include "thread_start.h"

/* A bounded multi-producer queue (D. Vyukov's): each cell's sequence tells
 * producers and the consumer whose turn it is, so neither ever waits.
 * A cell stores its sequence less its own index, so that the initial state
 * (sequence = index) is all zeroes: the ring is fresh anonymous memory,
 * never written before use, and costs a page only once records reach it. */
struct cell {
    _Atomic size_t seq_less_index;
    struct entry e;
};

static struct cell *ring;
static size_t ring_mask;
static bool ring_wiped_on_fork;          /* MADV_WIPEONFORK took */

static size_t cell_seq(const struct cell *c, size_t pos)
{
    return atomic_load_explicit(&c->seq_less_index, memory_order_acquire) + (pos & ring_mask);
}

static void cell_set_seq(struct cell *c, size_t pos, size_t seq)
{
    atomic_store_explicit(&c->seq_less_index, seq - (pos & ring_mask), memory_order_release);
}
static _Atomic size_t enqueue_pos;
static size_t dequeue_pos;               /* the consumer's, under drain_lock */
static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;

static atomic_bool enabled;
static _Atomic uint64_t next_id;
static _Atomic uint64_t dropped, written_decisions, written_activities;
/* The run log's descriptor, one of the shim's (fd_guard.h): written only
 * through write_lines, which checks it is still the file opened. */
static _Atomic int log_fd = -1;
static struct shim_fd log_guard;
static char log_path[512];
static pid_t log_pid;
static const char *mode_text = "upgrade";
static char cupti_state[96] = "off";
static bool header_written;

static pthread_t writer;
static atomic_bool writer_started, writer_stop;
/* In a forked child no writer thread is started (a child of a threaded
 * process should not start threads; ThreadSanitizer refuses it): each record
 * is written by the call that made it, so a child leaving with _exit keeps
 * every record it made. The child's log is opened with its first record: a
 * child that records nothing leaves no file. */
static atomic_bool in_forked_child;
static bool child_log_pending;           /* under drain_lock */
static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;

uint64_t record_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool record_enabled(void)
{
    return atomic_load_explicit(&enabled, memory_order_relaxed);
}

uint64_t record_next_id(void)
{
    return atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed) + 1;
}

static void start_writer(void);
static void drain_in_child(void);

static void enqueue(const struct entry *e)
{
    if (!record_enabled())
        return;
    size_t pos = atomic_load_explicit(&enqueue_pos, memory_order_relaxed);
    for (;;) {
        struct cell *c = &ring[pos & ring_mask];
        size_t seq = cell_seq(c, pos);
        intptr_t dif = (intptr_t)seq - (intptr_t)pos;
        if (dif == 0) {
            if (atomic_compare_exchange_weak_explicit(&enqueue_pos, &pos, pos + 1,
                                                      memory_order_relaxed,
                                                      memory_order_relaxed)) {
                c->e = *e;
                cell_set_seq(c, pos, pos + 1);
                break;
            }
        } else if (dif < 0) {
            atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
            return; /* full: the writer is behind */
        } else {
            pos = atomic_load_explicit(&enqueue_pos, memory_order_relaxed);
        }
    }
    if (atomic_load_explicit(&in_forked_child, memory_order_relaxed))
        drain_in_child();
    else if (!atomic_load_explicit(&writer_started, memory_order_acquire))
        start_writer();
}

void record_add(const struct decision_record *r)
{
    struct entry e;
    e.type = ENTRY_DECISION;
    e.u.decision = *r;
    enqueue(&e);
}

void record_event(enum log_event what, int from, int to, uint64_t duration_ns,
                  const char *detail)
{
    struct entry e;
    memset(&e, 0, sizeof e);
    e.type = ENTRY_EVENT;
    e.u.event.what = what;
    e.u.event.from = from;
    e.u.event.to = to;
    e.u.event.t_ns = record_now_ns();
    e.u.event.duration_ns = duration_ns;
    if (detail != NULL)
        copy_whole_chars(e.u.event.detail, sizeof e.u.event.detail, detail);
    enqueue(&e);
}

void record_activity(uint64_t decision, const char *kind, uint64_t bytes,
                     uint64_t start_ns, uint64_t end_ns, int src_dev, int dst_dev,
                     uint32_t stream_id)
{
    struct entry e;
    e.type = ENTRY_ACTIVITY;
    e.u.activity = (struct activity_entry){decision, bytes, start_ns, end_ns, kind,
                                           src_dev, dst_dev, stream_id};
    enqueue(&e);
}

static _Atomic(const struct record_source *) source;

void record_set_source(const struct record_source *src)
{
    atomic_store(&source, src);
}

static uint64_t source_timestamp(void)
{
    const struct record_source *src = atomic_load(&source);
    return src != NULL ? src->timestamp() : 0;
}

static void open_log_file(void);

/* The header's devices, asked of the driver when the log starts, on the
 * thread of its first record (or of the final flush when there is none):
 * never by the writer thread, which would otherwise sit in the driver
 * while it holds a half-built header. A forked child keeps the parent's
 * list (the same devices). writer_lock held. */
static struct devinfo devices[DEVINFO_MAX];
static int device_count = -1;
static bool devices_asked;

static void collect_devices(void)
{
    if (!devices_asked) {
        devices_asked = true;
        device_count = devinfo_list(devices, DEVINFO_MAX);
    }
}

static void count_written(const struct entry *e)
{
    if (e->type == ENTRY_DECISION)
        atomic_fetch_add_explicit(&written_decisions, 1, memory_order_relaxed);
    else if (e->type == ENTRY_ACTIVITY)
        atomic_fetch_add_explicit(&written_activities, 1, memory_order_relaxed);
}

static struct outbuf writer_buf, final_buf, cut_buf;

/* Room kept for the log-cut line when a write fails: the file is cut back
 * far enough for it (outfile_append_lines). */
#define CUT_LINE_ROOM 192

/* The run log takes no more lines: a write failed (a full disk: the file
 * is cut back to a whole line and, where that leaves room, a last event
 * line "log-cut" says why: docs/LOG_FORMAT.md), or its descriptor
 * is another file now (the program closed it with a raw system call and
 * opened something there: nothing more is written to it, and it is never
 * reopened). Said once on stderr; recording stops. drain_lock held. */
static void stop_writing(enum outfile_status status, int err)
{
    char text[128];
    if (status == OUTFILE_FAILED) {
        struct entry e;
        memset(&e, 0, sizeof e);
        e.type = ENTRY_EVENT;
        e.u.event = (struct event_entry){.what = LOG_EVENT_LOG_CUT, .from = -1, .to = -1,
                                         .t_ns = record_now_ns()};
        copy_whole_chars(e.u.event.detail, sizeof e.u.event.detail,
                         err == ENOSPC || err == EDQUOT ? "disk-full"
                         : err == EFBIG                 ? "file-too-big"
                                                        : "write-error");
        cut_buf.sink = NULL;
        cut_buf.used = 0;
        write_entry(&cut_buf, &e);
        int ignored = 0;
        bool noted = outfile_append_lines(&log_guard, cut_buf.data, &cut_buf.used, 0, 0,
                                          &ignored) == OUTFILE_WRITTEN;
        log_warn_stderr("cannot write the run log %s: %s; no more records%s", log_path,
                        strerror_r(err, text, sizeof text),
                        noted ? " (its last line says it was cut)" : "");
        shim_fd_release(&log_guard);
    } else {
        log_warn_stderr("the run log %s is no longer open where the shim wrote it (its "
                        "descriptor was closed and reused); no more records", log_path);
        shim_fd_forget(&log_guard);
    }
    atomic_store(&enabled, false);
}

/* The outbufs' sink (record_int.h): whole lines to the run log. */
static size_t write_lines(char *data, size_t used)
{
    if (atomic_load(&log_fd) < 0)
        return 0;
    int err = 0;
    enum outfile_status status =
        outfile_append_lines(&log_guard, data, &used, sizeof writer_buf.data / 2, CUT_LINE_ROOM,
                             &err);
    if (status != OUTFILE_WRITTEN)
        stop_writing(status, err);
    return used;
}

/* Writes everything queued so far. drain_lock held. */
static void drain(struct outbuf *o)
{
    if (child_log_pending) {
        child_log_pending = false;
        open_log_file();
        if (log_fd < 0) {
            atomic_store(&enabled, false);
            return;
        }
    }
    o->sink = write_lines;
    if (!header_written) {
        struct header_facts h = {mode_text,          cupti_state, record_now_ns(),
                                 source_timestamp(), devices,     device_count};
        write_header(o, &h);
        header_written = true;
    }
    for (;;) {
        struct cell *c = &ring[dequeue_pos & ring_mask];
        size_t seq = cell_seq(c, dequeue_pos);
        if ((intptr_t)seq - (intptr_t)(dequeue_pos + 1) < 0)
            break; /* empty (or a producer is mid-store: next round) */
        struct entry e = c->e;
        cell_set_seq(c, dequeue_pos, dequeue_pos + ring_mask + 1);
        dequeue_pos++;
        write_entry(o, &e);
        count_written(&e);
    }
    out_flush(o);
}

static void *writer_main(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&writer_stop, memory_order_acquire)) {
        pthread_mutex_lock(&drain_lock);
        drain(&writer_buf);
        pthread_mutex_unlock(&drain_lock);
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    return NULL;
}

/* Forked child: writes what is queued, the record just made included
 * (unless another thread of the child is writing: it or the next record
 * takes it). */
static void drain_in_child(void)
{
    pthread_mutex_lock(&writer_lock);
    collect_devices();
    pthread_mutex_unlock(&writer_lock);
    if (pthread_mutex_trylock(&drain_lock) != 0)
        return;
    drain(&writer_buf);
    pthread_mutex_unlock(&drain_lock);
}

static void start_writer(void)
{
    pthread_mutex_lock(&writer_lock);
    if (!atomic_load(&writer_started) && getpid() == log_pid) {
        collect_devices();
        atomic_store(&writer_stop, false);
        if (shim_thread_start(&writer, NULL, writer_main, NULL) == 0)
            atomic_store_explicit(&writer_started, true, memory_order_release);
    }
    pthread_mutex_unlock(&writer_lock);
}

/* Empties the ring in a forked child: the parent writes what it queued,
 * the child starts from zeroed cells. With MADV_WIPEONFORK the kernel gave
 * the child zero pages already; otherwise fresh ones replace the inherited
 * copy (writing zeroes over it would copy every page the parent touched). */
static void reset_ring_in_child(void)
{
    if (!ring_wiped_on_fork &&
        mmap(ring, (ring_mask + 1) * sizeof(struct cell), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
        memset(ring, 0, (ring_mask + 1) * sizeof(struct cell));
    atomic_store(&enqueue_pos, 0);
    dequeue_pos = 0;
}

static char log_pattern[512];

/* Opens the run log named by log_pattern for this process (%p is its pid:
 * a forked child gets a log of its own). A name that would not fit is
 * refused, never cut. */
static void open_log_file(void)
{
    char why[128];
    atomic_store(&log_fd, -1);
    log_pid = getpid();
    header_written = false;
    if (!outfile_expand(log_pattern, log_path, sizeof log_path)) {
        LOG_WARN("the run log's name P2PSHIM_RUN_LOG=\"%s\" is longer than %zu bytes once "
                 "%%p and %%h are expanded; writing none", log_pattern, sizeof log_path - 1);
        return;
    }
    int fd = outfile_open(log_path, 0, why, sizeof why);
    if (fd >= 0 && shim_fd_adopt(&log_guard, &log_fd, fd, "the run log") < 0)
        snprintf(why, sizeof why, "no descriptor above 2 is free"), fd = -1;
    if (fd < 0)
        LOG_WARN("cannot open the run log %s: %s; writing none", log_path, why);
}

void record_fork_child(void)
{
    if (!record_enabled())
        return;
    /* The parent writes what it queued before the fork. */
    pthread_mutex_init(&drain_lock, NULL);
    pthread_mutex_init(&writer_lock, NULL);
    reset_ring_in_child();
    atomic_store(&writer_started, false);
    atomic_store(&in_forked_child, true);
    atomic_store(&dropped, 0);
    atomic_store(&written_decisions, 0);
    atomic_store(&written_activities, 0);
    shim_fd_release(&log_guard); /* the child's copy of the parent's */
    int unguarded = atomic_exchange(&log_fd, -1);
    if (unguarded >= 0)
        close(unguarded);
    /* The parent's writer may have been mid-line (its header waits on the
     * driver for device names): nothing it had built is the child's. */
    writer_buf.used = 0;
    final_buf.used = 0;
    header_written = false;
    child_log_pending = true; /* opened by its first record (drain) */
}

void record_open(const char *pattern, const char *mode, size_t limit)
{
    size_t cap = 1024;
    while (cap < limit && cap < ((size_t)1 << 26))
        cap <<= 1;
    /* mmap: pages are touched only as the ring fills. */
    void *mem = mmap(NULL, cap * sizeof(struct cell), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        LOG_WARN("no memory for the run log's buffer (%zu records); writing none", cap);
        return;
    }
    ring = mem;
    ring_mask = cap - 1;
#ifdef MADV_WIPEONFORK
    ring_wiped_on_fork = madvise(mem, cap * sizeof(struct cell), MADV_WIPEONFORK) == 0;
#endif
    mode_text = mode;
    /* As written, %p unexpanded: a forked child expands it again. */
    if (strlen(pattern) >= sizeof log_pattern) {
        LOG_WARN("the run log's name is longer than %zu bytes; writing none",
                 sizeof log_pattern - 1);
        return;
    }
    memcpy(log_pattern, pattern, strlen(pattern) + 1);
    open_log_file();
    if (log_fd < 0)
        return;
    atomic_store(&enabled, true);
}

void record_set_cupti_state(const char *state)
{
    pthread_mutex_lock(&drain_lock);
    bool late = header_written;
    if (!late)
        snprintf(cupti_state, sizeof cupti_state, "%s", state);
    pthread_mutex_unlock(&drain_lock);
    if (late)
        record_event(LOG_EVENT_CUPTI_UNAVAILABLE, -1, -1, 0, state);
}

void record_flush_final(void)
{
    if (!record_enabled() || getpid() != log_pid)
        return; /* a vfork child shares our memory: leave it to us */
    pthread_mutex_lock(&writer_lock);
    if (atomic_load(&writer_started)) {
        atomic_store(&writer_stop, true);
        pthread_join(writer, NULL);
        atomic_store(&writer_started, false);
    }
    collect_devices();
    pthread_mutex_unlock(&writer_lock);
    const struct record_source *src = atomic_load(&source);
    if (src != NULL)
        src->flush();
    pthread_mutex_lock(&drain_lock);
    drain(&final_buf);
    out_printf(&final_buf,
               "{\"type\":\"footer\",\"t_ns\":%llu,\"records\":%llu,\"dropped\":%llu,"
               "\"activities\":%llu}\n",
               (unsigned long long)record_now_ns(),
               (unsigned long long)atomic_load(&written_decisions),
               (unsigned long long)atomic_load(&dropped),
               (unsigned long long)atomic_load(&written_activities));
    out_flush(&final_buf);
    pthread_mutex_unlock(&drain_lock);
}

/* The run log opens at the first hooked call in every mode, when one is
 * configured. */
static void open_configured(void)
{
    const struct p2pshim_config *c = config_get();
    if (c->run_log[0] != '\0')
        record_open(c->run_log_pattern, p2pshim_mode_names[c->mode], c->record_limit);
}

/* Its handlers return at once when no run log is open. */
SHIM_LIFE_ROW(record_row) = {
    .order = SHIM_ROW_RECORD,
    .name = "record",
    .at_init = open_configured,
    .fork_child = record_fork_child,
    .at_exit = record_flush_final,
};
