/* Unit test of the bounce module's page arithmetic (interpose/bounce/pages.c):
 * bounce_scan against a byte-by-byte scan over random state arrays, every
 * start offset and every stop set; bounce_index_range at the edges. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "bounce/pages.h"


static size_t naive(const uint8_t *st, size_t i, size_t n, unsigned stop)
{
    while (i < n && !(stop & PG_MASK(st[i])))
        i++;
    return i;
}

static void scans(void)
{
    enum { N = 203 };
    uint8_t st[N];
    srand(7);
    for (int round = 0; round < 300; round++) {
        /* Long runs of one state with a few others: the shape of real use. */
        uint8_t base = (uint8_t)(rand() % 5);
        memset(st, base, N);
        int others = rand() % 4;
        for (int k = 0; k < others; k++)
            st[rand() % N] = (uint8_t)(rand() % 5);
        for (unsigned stop = 1; stop < 32; stop++)
            for (size_t i = 0; i <= N; i += 1 + (size_t)(rand() % 3)) {
                size_t n = N - (size_t)(rand() % 9);
                if (i > n)
                    continue;
                size_t got = bounce_scan(st, i, n, stop), want = naive(st, i, n, stop);
                CHECK_MSG(got == want, "round %d stop %#x from %zu to %zu: %zu, expected %zu",
                      round, stop, i, n, got, want);
            }
    }
}

static void ranges(void)
{
    struct snap s;
    memset(&s, 0, sizeof s);
    s.reg_lo = 0x10000;
    s.reg_hi = 0x10000 + 16 * 4096;
    size_t a, b;
    bounce_index_range(&s, 0x10000, 0x10000 + 16 * 4096, true, &a, &b);
    CHECK_MSG(a == 0 && b == 16, "whole range: [%zu, %zu)", a, b);
    bounce_index_range(&s, 0x10001, 0x10000 + 3 * 4096 + 1, true, &a, &b);
    CHECK_MSG(a == 1 && b == 3, "whole pages inside: [%zu, %zu)", a, b);
    bounce_index_range(&s, 0x10001, 0x10000 + 3 * 4096 + 1, false, &a, &b);
    CHECK_MSG(a == 0 && b == 4, "pages met: [%zu, %zu)", a, b);
    bounce_index_range(&s, 0x0, 0x10000, false, &a, &b);
    CHECK_MSG(a == b, "before the range: [%zu, %zu)", a, b);
    bounce_index_range(&s, 0x10000 + 5 * 4096 + 10, 0x10000 + 5 * 4096 + 20, true, &a, &b);
    CHECK_MSG(a == b, "no whole page: [%zu, %zu)", a, b);
    bounce_index_range(&s, 0x8000, 0x10000 + 64 * 4096, true, &a, &b);
    CHECK_MSG(a == 0 && b == 16, "clamped: [%zu, %zu)", a, b);
    CHECK_MSG(bounce_index(&s, 0x10000 + 7 * 4096 + 5) == 7, "index of a byte in page 7");
}

int main(void)
{
    scans();
    ranges();
    printf("test_bounce_pages: %d failure(s)\n", check_failures);
    return check_failures != 0;
}
