/* The shim's policy around the program's allocations, for the allocation
 * wrappers (wrap_mem.c). Tracking: an allocation is added to the ownership
 * table only after it succeeded, and removed before its free (so a racing
 * allocation of the same address is never deleted by us; a stale range in
 * between is replaced by that allocation's own). Out of memory: the shim
 * never makes an allocation fail; when it holds bounce snapshots on the
 * device, it gives them back and the wrapper calls again. */
#ifndef P2PSHIM_ALLOC_POLICY_H
#define P2PSHIM_ALLOC_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ownership.h"
#include "shim_cuda.h"

/* Adds [base, base + size) to the ownership table. */
void alloc_track(uintptr_t base, size_t size, enum mem_kind kind, int device, CUcontext ctx);

/* Device memory just allocated in the current context (nothing when the
 * context cannot be asked: a later lookup asks the driver). */
void alloc_track_current(CUdeviceptr ptr, size_t size, enum mem_kind kind);

/* A stream-ordered allocation: the driver's view when it has one, else the
 * stream's device. */
void alloc_track_pool(CUdeviceptr ptr, size_t size, CUstream stream, bool per_thread);

/* Removes the range at base before its free (0: nothing). */
void alloc_forget(uintptr_t base);

/* Host memory the driver stops pinning (or frees): the snapshots over it
 * end first. */
void alloc_host_gone(void *p);

/* True when r is out of memory on dev and the shim gave back what it held
 * there: the wrapper then calls again. _on: that device; plain: the
 * current context's; _stream: the stream's (the current one's when the
 * stream's cannot be told). */
bool alloc_oom_release_on(CUresult r, int dev);
bool alloc_oom_release(CUresult r);
bool alloc_oom_release_stream(CUresult r, CUstream s, bool per_thread);

#endif
