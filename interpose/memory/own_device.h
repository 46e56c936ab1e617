/* The shim's own device memory (bounce snapshots, the pool relay's
 * chunks, the trust probe's buffers), as the program must not see it.
 *
 * The driver hands out the addresses the program freed a moment ago; a
 * buffer of the shim's there would make the program's stale pointer valid:
 * a copy or memset through it, which the driver refuses without the shim,
 * would succeed and read or spoil the shim's bytes (a snapshot the next
 * H2D serves). The copy and memset wrappers ask own_device_overlaps and
 * refuse as the driver would (CUDA_ERROR_INVALID_VALUE), cuMemFree too.
 *
 * Lock-free for readers: a wrapper may run in a signal handler that
 * interrupted another wrapper. A lookup that races an add or a remove may
 * miss that one buffer (the program's pointer then reaches the driver, as
 * before); it never blocks. Costs one relaxed load while the shim holds
 * no device memory. */
#ifndef P2PSHIM_OWN_DEVICE_H
#define P2PSHIM_OWN_DEVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "shim_cuda.h"

/* The most buffers tracked at once; own_device_add refuses past it. */
#define OWN_DEVICE_MAX 512

/* [p, p + n) is the shim's until own_device_remove(p). false: no room;
 * the caller gives the buffer back and goes without it. */
bool own_device_add(CUdeviceptr p, size_t n);
void own_device_remove(CUdeviceptr p);

/* Whether [p, p + n) (n 0: the byte at p) meets a buffer of the shim's. */
bool own_device_overlaps_slow(CUdeviceptr p, size_t n);
/* live: buffers now; adds: buffers ever added. One cache line, which the
 * check below loads anyway. */
struct own_device_words {
    _Atomic unsigned live, adds;
};
extern struct own_device_words own_device_words;
static inline bool own_device_overlaps(CUdeviceptr p, size_t n)
{
    return atomic_load_explicit(&own_device_words.live, memory_order_relaxed) != 0 &&
           own_device_overlaps_slow(p, n);
}
/* The count of buffers ever added: a copy checked before the shim's own
 * work compares it after that work (which may have been given the
 * address of memory the program just freed), and checks again only when
 * it moved. */
static inline unsigned own_device_adds(void)
{
    return atomic_load_explicit(&own_device_words.adds, memory_order_relaxed);
}

#endif
