/* The shim's own device memory: own_device.h. Slots of (base, end), set
 * and cleared with atomics. A free slot has base 0 and end 0: an add takes
 * it by a compare-and-swap of its base (so two adds never share one), then
 * stores its end; a remove clears the end, then the base. A reader skips a
 * slot whose end is 0 (half added or half removed) and reads its base
 * again after its end, so that it never pairs one buffer's base with
 * another's end. */
#include "own_device.h"

#include <stdint.h>

struct own_slot {
    _Atomic uint64_t base; /* 0: free */
    _Atomic uint64_t end;
};

static struct own_slot slots[OWN_DEVICE_MAX];
/* Slots below this may be in use: readers look no further. */
static _Atomic unsigned high_water;
/* 8 bytes, aligned to 8: one cache line, shared with other globals (a line
 * of its own was one more cold line per copy). */
_Alignas(8) struct own_device_words own_device_words;

bool own_device_add(CUdeviceptr p, size_t n)
{
    if (p == 0 || n == 0 || n > UINT64_MAX - p)
        return false;
    for (unsigned i = 0; i < OWN_DEVICE_MAX; i++) {
        uint64_t free_base = 0;
        if (!atomic_compare_exchange_strong(&slots[i].base, &free_base, (uint64_t)p))
            continue;
        atomic_store_explicit(&slots[i].end, (uint64_t)p + n, memory_order_release);
        unsigned hw = atomic_load(&high_water);
        while (hw < i + 1 && !atomic_compare_exchange_weak(&high_water, &hw, i + 1))
            ;
        atomic_fetch_add(&own_device_words.adds, 1);
        atomic_fetch_add(&own_device_words.live, 1);
        return true;
    }
    return false;
}

void own_device_remove(CUdeviceptr p)
{
    if (p == 0)
        return;
    unsigned hw = atomic_load(&high_water);
    for (unsigned i = 0; i < hw; i++)
        if (atomic_load(&slots[i].base) == (uint64_t)p && atomic_load(&slots[i].end) != 0) {
            atomic_store(&slots[i].end, 0);
            atomic_store(&slots[i].base, 0);
            atomic_fetch_sub(&own_device_words.live, 1);
            return;
        }
}

bool own_device_overlaps_slow(CUdeviceptr p, size_t n)
{
    uint64_t lo = (uint64_t)p, hi = n > UINT64_MAX - lo ? UINT64_MAX : lo + (n ? n : 1);
    unsigned hw = atomic_load_explicit(&high_water, memory_order_acquire);
    for (unsigned i = 0; i < hw; i++) {
        uint64_t base = atomic_load_explicit(&slots[i].base, memory_order_acquire);
        if (base == 0 || base >= hi)
            continue;
        uint64_t end = atomic_load_explicit(&slots[i].end, memory_order_acquire);
        if (end == 0 || atomic_load_explicit(&slots[i].base, memory_order_acquire) != base)
            continue;
        if (end > lo)
            return true;
    }
    return false;
}
