/* Ownership table: address range -> owning device, context and kind.
 *
 * Lookups of any interior address are O(1) expected: ranges are indexed in
 * a few granule levels (granule 2^12, 2^16, ..., 2^48 bytes); a range is
 * indexed at the smallest level whose granule is at least its size, so it
 * sits in at most two granules of that level, and a granule holds a
 * bounded number of ranges. A lookup probes only the levels that hold any
 * range, after a small per-thread cache of its latest answers (valid until
 * the table next changes). Thread-safe (a reader-writer lock held only
 * inside these calls, never across a CUDA call). Knows nothing of CUDA:
 * the table is fed by the allocation hooks and by the driver-query
 * fallback. */
#ifndef P2PSHIM_OWNERSHIP_H
#define P2PSHIM_OWNERSHIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log_vocab.def"

/* The kinds (log_vocab.def's LOG_END_KINDS, whose names the run log and
 * mem_kind_name use). */
enum mem_kind {
#define P2PSHIM_MEM_KIND_ENUM(id, name) MEM_KIND_##id,
    LOG_END_KINDS(P2PSHIM_MEM_KIND_ENUM)
#undef P2PSHIM_MEM_KIND_ENUM
    MEM_KIND_COUNT
};

/* Short stable name of a kind ("device", "pool", ...). */
const char *mem_kind_name(enum mem_kind kind);

struct owner_info {
    uintptr_t base;
    size_t size;
    enum mem_kind kind;
    int device;        /* ordinal; -1 for host memory */
    void *ctx;         /* owning CUcontext, or NULL when unknown */
    bool from_driver;  /* learnt through a pointer query, not an allocation */
};

/* Tracks [base, base+size). Any range overlapping it is removed first
 * (its memory must have been freed behind our back). size 0 is ignored.
 * Returns false only when memory for the range could not be had; the
 * table is then unchanged. */
bool ownership_add(const struct owner_info *info);

/* Finds the range containing addr. Returns false when none does. */
bool ownership_lookup(uintptr_t addr, struct owner_info *out);

/* Removes the range whose base is exactly base; copies it to *removed
 * when removed is not NULL. Returns false when there is none. */
bool ownership_remove(uintptr_t base, struct owner_info *removed);

/* Removes every range overlapping [base, base+size). Returns how many. */
size_t ownership_remove_range(uintptr_t base, size_t size);

/* Removes every range of that device (a context reset). Returns how many. */
size_t ownership_remove_device(int device);

/* Removes every range whose ctx is ctx (a context destroyed). */
size_t ownership_remove_ctx(void *ctx);

/* Number of ranges; and a full reset of ranges and handles (tests, and
 * fork children). In a child, only safe if no other thread of the parent
 * held the table's lock at fork time (take it around fork with
 * pthread_atfork if that can happen). */
size_t ownership_count(void);
void ownership_clear(void);

/* Physical allocation handles from cuMemCreate: handle -> device, so a
 * later cuMemMap can track the mapped range. */
bool ownership_handle_add(uint64_t handle, int device);
bool ownership_handle_lookup(uint64_t handle, int *device);
bool ownership_handle_remove(uint64_t handle);

/* pthread_atfork handlers: hold every lock across fork so a child never
 * inherits one held by a thread that does not exist there. */
/* Makes this thread's lookup cache now (the shim's start), not at its
 * first copy. */
void ownership_warm_thread(void);
void ownership_fork_prepare(void);
void ownership_fork_release(void);

#endif
