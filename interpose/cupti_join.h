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

/* CUPTI's timestamp now, 0 when CUPTI is off (the log header aligns the
 * two clocks with it). */
uint64_t cupti_timestamp(void);

/* Flushes CUPTI's buffers and queues every activity it holds as run-log
 * lines (record.h), joined or not. Called by record_flush_final. */
void cupti_flush(void);

#endif
