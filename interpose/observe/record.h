/* Decision records: one per intercepted copy (or batch element), written to
 * the run log (P2PSHIM_RUN_LOG, docs/LOG_FORMAT.md) as JSON Lines.
 *
 * Hot path: record_add copies a small fixed-size record into a bounded
 * lock-free ring (one atomic increment and a store; no lock, no allocation,
 * no system call). A writer thread, started with the first record, formats
 * and writes off the hot path. When the ring is full the record is dropped
 * and counted (the footer says how many). Nothing is lost at exit (atexit
 * drains the ring), at exec (the exec wrappers drain it first) or in a
 * forked child (the child starts its own log with its first record and
 * writes each record as it is made, so _exit loses none; the parent writes
 * the records made before the fork). */
#ifndef P2PSHIM_RECORD_H
#define P2PSHIM_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log_vocab.h"
#include "ownership.h"
#include "route_reason.h"

/* What happened to the copy (log_vocab.def's LOG_ACTIONS). */
enum record_action {
#define P2PSHIM_ACTION_ENUM(id, name) RECORD_##id,
    LOG_ACTIONS(P2PSHIM_ACTION_ENUM)
#undef P2PSHIM_ACTION_ENUM
    RECORD_ACTION_COUNT
};

/* An end of a copy: a device ordinal, or -1 with a host kind; the kind is
 * an enum mem_kind, or this for memory the driver does not know. */
enum { RECORD_END_UNKNOWN = MEM_KIND_COUNT };

struct decision_record {
    uint64_t id;       /* CUPTI copy records are joined to it */
    uint64_t t_ns;     /* CLOCK_MONOTONIC */
    uint64_t bytes;
    uint64_t stream;   /* the CUstream handle as given */
    uint32_t tid;
    uint16_t api;      /* enum hook_id */
    int8_t src_dev, dst_dev;
    uint8_t src_kind, dst_kind;  /* enum mem_kind or RECORD_END_UNKNOWN */
    uint8_t action;    /* enum record_action */
    uint8_t reason;    /* enum route_reason */
};

/* True when a run log is configured and could be opened (after shim_init).
 * Cheap: one relaxed load. */
bool record_enabled(void);

/* A fresh record id (never 0). Ids increase across threads. */
uint64_t record_next_id(void);

/* Queues one record (its id from record_next_id). Never blocks. */
void record_add(const struct decision_record *r);

/* Queues an "event" line (LOG_FORMAT.md): what is one of log_vocab.def's
 * LOG_EVENTS; from/to are devices or -1; detail is a short string or NULL. */
void record_event(enum log_event what, int from, int to, uint64_t duration_ns,
                  const char *detail);

/* Queues an "activity" line joined to decision `decision` (CUPTI).
 * kind: "PTOP", "DTOH", ... */
void record_activity(uint64_t decision, const char *kind, uint64_t bytes,
                     uint64_t start_ns, uint64_t end_ns, int src_dev, int dst_dev,
                     uint32_t stream_id);

/* Opens the run log (from shim_init): pattern is P2PSHIM_RUN_LOG as
 * written (%p, %h and %% expanded here, and again by a forked child);
 * mode is the header's "mode"; limit caps the records queued. The file is
 * opened by outfile_open (a name too long, a link, a FIFO, a device or
 * another user's file: one warning, no run log). The header is written
 * with the first drain. */
void record_open(const char *pattern, const char *mode, size_t limit);

/* Sets the header's "cupti" text before the header is written (called at
 * most once, before the first flush); later states go out as events. */
void record_set_cupti_state(const char *state);

/* The source of activity lines (CUPTI, cupti_join.c), registered by it once
 * it collects: the header reads its clock, the final flush drains it
 * first. With none, the header's clock is 0 and nothing is drained. */
struct record_source {
    uint64_t (*timestamp)(void);
    void (*flush)(void); /* queues what it holds as activity lines */
};
void record_set_source(const struct record_source *source);

/* Drains everything queued and writes a footer (exit and exec). Safe to
 * call more than once: each call writes what is new and a footer. */
void record_flush_final(void);

/* In a forked child (the lifecycle table, shim.h): the parent writes what
 * it queued; the child opens a log of its own with its first record. */
void record_fork_child(void);

/* Nanoseconds of CLOCK_MONOTONIC. */
uint64_t record_now_ns(void);

#endif
