/* Process-wide start-up and the re-entry guard.
 *
 * Nothing happens at load time: the first hooked call (never a constructor)
 * parses the configuration, opens the log and registers the exit summary,
 * so `LD_PRELOAD=libp2pshim.so ls` is exactly `ls`. */
#ifndef P2PSHIM_SHIM_H
#define P2PSHIM_SHIM_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* Once per process, thread-safe, cheap after the first call. */
void shim_init(void);

/* The configuration (shim_init must have run). */
const struct p2pshim_config *shim_config(void);

/* True while this thread is inside the shim's own processing: a hook
 * reached from there passes straight through. */
bool shim_reentered(void);
void shim_guard_enter(void);
void shim_guard_leave(void);

/* Enters the shim for one hooked call: initialises once, then false when
 * this thread is already inside it (the wrapper then only passes
 * through), else true with the guard taken until shim_end. */
bool shim_begin(void);
void shim_end(void);

/* This thread's kernel id, cached per thread (reset in a fork child). */
uint32_t shim_thread_id(void);

#endif
