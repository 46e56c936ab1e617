/* Page-state arithmetic of the bounce module (bounce_int.h): indices of a
 * snapshot's tracked pages and scans of their states, and the debug
 * clock. Pure: no locks, no driver; unit-tested
 * (tests/unit/test_bounce_pages.c). */
#define _GNU_SOURCE
#include <string.h>
#include <time.h>

#include "log.h"
#include "pages.h"

size_t bounce_page = 4096;
unsigned bounce_page_shift = 12;

uint8_t *bounce_page_state(struct snap *s, uintptr_t addr)
{
    return &s->page[(addr - s->reg_lo) >> bounce_page_shift];
}

size_t bounce_scan(const uint8_t *st, size_t i, size_t n, unsigned stop)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    while (i < n && (i & 7) != 0) {
        if (stop & PG_MASK(st[i]))
            return i;
        i++;
    }
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, st + i, 8);
        uint64_t hit = 0;
        for (unsigned v = 0; v <= PG_BUSY_DIRTY; v++) {
            if (stop & PG_MASK(v)) {
                uint64_t x = w ^ (ones * v); /* a zero byte where st == v */
                hit |= (x - ones) & ~x & highs;
            }
        }
        if (hit)
            break;
    }
    while (i < n && !(stop & PG_MASK(st[i])))
        i++;
    return i;
}

size_t bounce_index(const struct snap *s, uintptr_t addr)
{
    return (addr - s->reg_lo) >> bounce_page_shift;
}

void bounce_index_range(const struct snap *s, uintptr_t lo, uintptr_t hi, bool whole,
                        size_t *i0, size_t *i1)
{
    const uintptr_t mask = bounce_page - 1;
    lo = lo < s->reg_lo ? s->reg_lo : lo;
    hi = hi > s->reg_hi ? s->reg_hi : hi;
    if (hi <= lo) {
        *i0 = *i1 = 0;
        return;
    }
    uintptr_t a = whole ? (lo + mask) & ~mask : lo & ~mask;
    uintptr_t b = whole ? hi & ~mask : (hi + mask) & ~mask;
    if (b <= a) {
        *i0 = *i1 = 0;
        return;
    }
    *i0 = bounce_index(s, a);
    *i1 = bounce_index(s, b);
}

uint64_t bounce_clock_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

double bounce_now_us(void)
{
    if (p2pshim_log_threshold < P2PSHIM_LOG_DEBUG)
        return 0;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}
