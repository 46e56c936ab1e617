/* CUPTI, loaded at run time (never a link dependency): activity records of
 * the copies that really ran (MEMCPY, MEMCPY2) joined to the shim's
 * decisions. The shim subscribes to the driver API callbacks: inside each
 * driver call it makes for a decision, the call's correlation id (which
 * the copy records carry) is mapped to the decision's id. (External
 * correlation ids were tried first: on the H200 machine only the first
 * call of a process got its record.) */
#ifndef P2PSHIM_CUPTI_JOIN_H
#define P2PSHIM_CUPTI_JOIN_H

#include <stdbool.h>
#include <stdint.h>

/* Starts CUPTI once (thread-safe; later calls are cheap). Returns true when
 * activity collection is on. When CUPTI is absent or held by another tool
 * (Nsight Systems, compute-sanitizer), says so once and returns false. */
bool cupti_start(void);

/* True once cupti_start succeeded. One relaxed load. */
bool cupti_active(void);

/* Around the driver call of decision id: the copy records that call
 * produces are joined to id. Thread-local; no CUPTI call. */
void cupti_push(uint64_t id);
void cupti_pop(void);

/* A program copy the shim relays (pool_relay.h) is one copy to the
 * profile: the records of the driver copies the relay issues for it are
 * merged into one activity line joined to its decision id: kind, devices
 * and stream of the copies across the link, their bytes summed (the
 * program's bytes), start of the first record and end of the last of all
 * its copies. The shim's copies into and out of its own buffers widen that
 * span and are no line of their own. The line is written once the
 * decision is (cupti_relay_close) and every part's record has come (at the
 * final flush, with those that did). Thread-local state with the lock of
 * the join; no CUPTI call. Nothing happens while CUPTI is off. */
void cupti_relay_open(uint64_t id);
/* Around each driver copy of the relay opened on this thread: which part
 * of the relay it is (CUPTI_RELAY_NONE after it). */
enum cupti_relay_part { CUPTI_RELAY_NONE, CUPTI_RELAY_LINK, CUPTI_RELAY_LOCAL };
void cupti_relay_part(enum cupti_relay_part part);
/* After the decision of id was queued: carried, the relay took the copy
 * (its line goes out when complete); else it was given up and its parts'
 * records are dropped (the driver's own records of the original call join
 * the decision as any call's do). */
void cupti_relay_close(uint64_t id, bool carried);

/* CUPTI's timestamp now, 0 when CUPTI is off (the log header aligns the
 * two clocks with it). */
uint64_t cupti_timestamp(void);

/* Flushes CUPTI's buffers and queues every activity it holds as run-log
 * lines (record.h), joined or not. Called by record_flush_final. */
void cupti_flush(void);

#endif
