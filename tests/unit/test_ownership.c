/* Unit test of the ownership table (interpose/memory/ownership.c): boundaries,
 * granule levels from 512 bytes to past 2^48, overlap replacement, every
 * removal, the handle table, a random walk checked against a brute-force
 * model, allocation failure (in a child with a low address-space limit),
 * and concurrent writers and readers (CI also runs this under TSan, label
 * "threads"). Only addresses are recorded: no memory is touched.
 * Prints the mean lookup time, for information only.
 * The random walk is in test_ownership_model.c, allocation failure,
 * concurrency and timing in test_ownership_stress.c. */
#define _POSIX_C_SOURCE 200809L
#include "test_ownership.h"

#include <stdio.h>
#include <string.h>

struct owner_info mk(uint64_t base, uint64_t size, int device,
                     void *ctx, enum mem_kind kind)
{
    struct owner_info o;
    memset(&o, 0, sizeof o);
    o.base = base;
    o.size = size;
    o.device = device;
    o.ctx = ctx;
    o.kind = kind;
    o.from_driver = (base >> 12) & 1;
    return o;
}

bool same(const struct owner_info *a, const struct owner_info *b)
{
    return a->base == b->base && a->size == b->size && a->kind == b->kind &&
           a->device == b->device && a->ctx == b->ctx &&
           a->from_driver == b->from_driver;
}

void add_ok(uint64_t base, uint64_t size, int device)
{
    struct owner_info o = mk(base, size, device, NULL, MEM_KIND_DEVICE);
    REQUIRE(ownership_add(&o));
}

/* Checks that addr resolves to the range [base, base+size). */
bool owned_by(uint64_t addr, uint64_t base, uint64_t size)
{
    struct owner_info o;
    return ownership_lookup(addr, &o) && o.base == base && o.size == size;
}

bool unowned(uint64_t addr)
{
    struct owner_info o;
    return !ownership_lookup(addr, &o) && !ownership_lookup(addr, NULL);
}

/* Base, interior, last byte inside; one before and one past outside. */
static void check_edges(uint64_t base, uint64_t size)
{
    REQUIRE(owned_by(base, base, size));
    REQUIRE(owned_by(base + size / 2, base, size));
    REQUIRE(owned_by(base + size - 1, base, size));
    REQUIRE(unowned(base + size));
    REQUIRE(unowned(base - 1));
}

static uint64_t rng_state = UINT64_C(0x2545F4914F6CDD1D);
uint64_t rnd(void) /* xorshift64*, fixed seed */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(0x2545F4914F6CDD1D);
}

static void test_basics(void)
{
    REQUIRE(strcmp(mem_kind_name(MEM_KIND_DEVICE), "device") == 0);
    REQUIRE(strcmp(mem_kind_name(MEM_KIND_POOL), "pool") == 0);
    for (int k = 0; k < MEM_KIND_COUNT; k++)
        REQUIRE(mem_kind_name((enum mem_kind)k) != NULL &&
              strcmp(mem_kind_name((enum mem_kind)k), "unknown") != 0);
    REQUIRE(strcmp(mem_kind_name(MEM_KIND_COUNT), "unknown") == 0);

    ownership_clear();
    REQUIRE(ownership_count() == 0);
    REQUIRE(unowned(0x7f0000100000));
    REQUIRE(!ownership_add(NULL));

    int ctx;
    struct owner_info in = mk(0x7f0000100000, 0x3000, 1, &ctx, MEM_KIND_MANAGED);
    in.from_driver = true;
    REQUIRE(ownership_add(&in));
    REQUIRE(ownership_count() == 1);
    struct owner_info out;
    REQUIRE(ownership_lookup(0x7f0000100000, &out) && same(&out, &in));
    REQUIRE(ownership_lookup(0x7f0000101234, &out) && same(&out, &in));
    REQUIRE(ownership_lookup(0x7f0000102fff, &out) && same(&out, &in));
    REQUIRE(unowned(0x7f0000103000));
    REQUIRE(unowned(0x7f00000fffff));
    REQUIRE(ownership_lookup(0x7f0000101000, NULL));
    check_edges(0x7f0000100000, 0x3000);

    /* size 0 is ignored, even on top of an existing range */
    struct owner_info zero = mk(0x7f0000101000, 0, 2, NULL, MEM_KIND_DEVICE);
    REQUIRE(ownership_add(&zero));
    REQUIRE(ownership_count() == 1);
    REQUIRE(ownership_lookup(0x7f0000101000, &out) && same(&out, &in));

    /* One byte, at the lowest and highest addresses. */
    add_ok(0, 1, 0);
    add_ok(UINT64_MAX, 1, 0);
    REQUIRE(owned_by(0, 0, 1) && unowned(1));
    REQUIRE(owned_by(UINT64_MAX, UINT64_MAX, 1) && unowned(UINT64_MAX - 1));
    REQUIRE(ownership_count() == 3);
    ownership_clear();
    REQUIRE(ownership_count() == 0 && unowned(0x7f0000101000) && unowned(0));
}

/* Thousands of 512-byte ranges, eight to a 4 KiB granule, then the same
 * shifted by 100 bytes so that some straddle two granules. */
static void test_small_adjacent(void)
{
    enum { N = 4096 };
    for (int shift = 0; shift <= 100; shift += 100) {
        ownership_clear();
        uint64_t base0 = 0x10000000 + (uint64_t)shift;
        for (uint64_t i = 0; i < N; i++)
            add_ok(base0 + i * 512, 512, (int)(i % 7));
        REQUIRE(ownership_count() == N);
        for (uint64_t i = 0; i < N; i++) {
            uint64_t b = base0 + i * 512;
            struct owner_info o;
            REQUIRE(owned_by(b, b, 512) && owned_by(b + 511, b, 512));
            REQUIRE(ownership_lookup(b + 300, &o) && o.device == (int)(i % 7));
        }
        REQUIRE(unowned(base0 - 1) && unowned(base0 + N * 512));
        REQUIRE(owned_by(base0 + 512, base0 + 512, 512));
        /* Remove every other one; the rest stay whole. */
        for (uint64_t i = 0; i < N; i += 2)
            REQUIRE(ownership_remove(base0 + i * 512, NULL));
        REQUIRE(ownership_count() == N / 2);
        for (uint64_t i = 0; i < N; i++) {
            uint64_t b = base0 + i * 512;
            if (i % 2)
                REQUIRE(owned_by(b, b, 512) && owned_by(b + 511, b, 512));
            else
                REQUIRE(unowned(b) && unowned(b + 511));
        }
    }
    ownership_clear();
}

static void test_big(void)
{
    ownership_clear();
    const uint64_t g1 = 0x7f1000000000, g80 = 0x7f2000000000;
    const uint64_t h = UINT64_C(0x1000000000000007);      /* sparse, odd */
    const uint64_t hsize = (UINT64_C(1) << 50) + 12345;    /* > 2^48 */
    add_ok(g1, 1 * GiB, 0);
    add_ok(g80, 80 * GiB, 1);
    check_edges(g1, GiB);
    check_edges(g80, 80 * GiB);
    add_ok(h, hsize, 2);
    /* Small neighbours touching each big range on both sides. */
    add_ok(g1 - 512, 512, 3);
    add_ok(g1 + GiB, 4 * KiB, 3);
    add_ok(g80 + 80 * GiB, 2 * MiB, 3);
    add_ok(h + hsize, 1, 3);
    add_ok(h - 64 * KiB, 64 * KiB, 3);
    REQUIRE(ownership_count() == 8);
    REQUIRE(owned_by(g1, g1, GiB) && owned_by(g1 + GiB - 1, g1, GiB));
    REQUIRE(owned_by(g1 + 123456789, g1, GiB));
    REQUIRE(owned_by(g1 - 1, g1 - 512, 512) && owned_by(g1 + GiB, g1 + GiB, 4 * KiB));
    REQUIRE(owned_by(g80 + 79 * GiB + 17, g80, 80 * GiB));
    REQUIRE(owned_by(g80 + 80 * GiB - 1, g80, 80 * GiB));
    REQUIRE(owned_by(g80 + 80 * GiB, g80 + 80 * GiB, 2 * MiB));
    REQUIRE(unowned(g80 - 1));
    for (uint64_t off = 0; off < hsize; off += hsize / 37)
        REQUIRE(owned_by(h + off, h, hsize));
    REQUIRE(owned_by(h + hsize - 1, h, hsize));
    REQUIRE(owned_by(h + hsize, h + hsize, 1) && unowned(h + hsize + 1));
    REQUIRE(owned_by(h - 1, h - 64 * KiB, 64 * KiB) && unowned(h - 64 * KiB - 1));
    struct owner_info o;
    REQUIRE(ownership_remove(h, &o) && o.size == hsize && o.device == 2);
    REQUIRE(unowned(h) && unowned(h + hsize / 2) && unowned(h + hsize - 1));
    REQUIRE(owned_by(h + hsize, h + hsize, 1));

    /* Ranges that reach the top of the address space: one exactly, one
     * running past it (cut at the top). Many top-level granules each. */
    const uint64_t top = UINT64_MAX - (UINT64_C(1) << 52) + 1;
    add_ok(top, UINT64_C(1) << 52, 4);
    REQUIRE(owned_by(UINT64_MAX, top, UINT64_C(1) << 52));
    REQUIRE(owned_by(top, top, UINT64_C(1) << 52) && unowned(top - 1));
    add_ok(top + 5, UINT64_C(1) << 53, 5); /* replaces the previous one */
    REQUIRE(unowned(top) && owned_by(UINT64_MAX, top + 5, UINT64_C(1) << 53));
    REQUIRE(ownership_remove_range(UINT64_MAX, 1) == 1 && unowned(UINT64_MAX));

    /* 80 GiB removed by a range touching its last byte only. */
    REQUIRE(ownership_remove_range(g80 + 80 * GiB - 1, 1) == 1);
    REQUIRE(unowned(g80) && owned_by(g80 + 80 * GiB, g80 + 80 * GiB, 2 * MiB));
    ownership_clear();
}

static void test_overlap_replaces(void)
{
    ownership_clear();
    const uint64_t x = 0x7f3000000000;
    add_ok(x, MiB, 0);
    add_ok(x + MiB / 2, 2 * MiB, 1); /* overlaps the tail of the first */
    REQUIRE(ownership_count() == 1);
    REQUIRE(unowned(x) && owned_by(x + MiB / 2, x + MiB / 2, 2 * MiB));

    /* Same base, new owner. */
    add_ok(x + MiB / 2, 2 * MiB, 2);
    struct owner_info o;
    REQUIRE(ownership_lookup(x + MiB, &o) && o.device == 2 && ownership_count() == 1);

    /* A big range swallows many small ones at another level; neighbours
     * outside it stay. */
    ownership_clear();
    for (uint64_t i = 0; i < 1000; i++)
        add_ok(x + i * 4096, 4096, 0);
    add_ok(x + 10 * 4096 + 1, 100 * 4096, 1);
    REQUIRE(ownership_count() == 1000 - 101 + 1);
    REQUIRE(unowned(x + 10 * 4096) && unowned(x + 110 * 4096 + 1));
    REQUIRE(owned_by(x + 10 * 4096 - 1, x + 9 * 4096, 4096));
    REQUIRE(owned_by(x + 111 * 4096, x + 111 * 4096, 4096));
    REQUIRE(owned_by(x + 11 * 4096, x + 10 * 4096 + 1, 100 * 4096));

    /* A small range inside a big one replaces it. */
    ownership_clear();
    add_ok(x, GiB, 0);
    add_ok(x + 5 * MiB, 512, 1);
    REQUIRE(ownership_count() == 1 && unowned(x) && owned_by(x + 5 * MiB, x + 5 * MiB, 512));
    ownership_clear();
}

static void test_removals(void)
{
    ownership_clear();
    const uint64_t x = 0x7f4000000000;
    int ctx_a, ctx_b;
    struct owner_info r1 = mk(x, 100, 0, &ctx_a, MEM_KIND_DEVICE);
    REQUIRE(ownership_add(&r1));
    struct owner_info got;
    REQUIRE(!ownership_remove(x + 1, &got));  /* interior: not a base */
    REQUIRE(!ownership_remove(x - 1, NULL));
    REQUIRE(ownership_remove(x, &got) && same(&got, &r1));
    REQUIRE(!ownership_remove(x, &got) && ownership_count() == 0);

    /* remove_range: four adjacent ranges, cut through the middle two. */
    for (uint64_t i = 0; i < 4; i++)
        add_ok(x + i * 100, 100, 0);
    REQUIRE(ownership_remove_range(x + 150, 100) == 2);
    REQUIRE(owned_by(x + 99, x, 100) && owned_by(x + 300, x + 300, 100));
    REQUIRE(unowned(x + 100) && unowned(x + 299));
    REQUIRE(ownership_remove_range(x + 100, 200) == 0); /* the gap */
    REQUIRE(ownership_remove_range(x + 400, 1000) == 0); /* one past the end */
    REQUIRE(ownership_remove_range(x, 0) == 0);
    REQUIRE(ownership_remove_range(x + 99, 202) == 2);  /* last byte, first byte */
    REQUIRE(ownership_count() == 0);

    /* A huge remove_range over a small table. */
    add_ok(x, 4096, 0);
    add_ok(0x1000, 4096, 0);
    REQUIRE(ownership_remove_range(0, UINT64_MAX) == 2);

    /* remove_device, remove_ctx */
    for (uint64_t i = 0; i < 300; i++) {
        struct owner_info o = mk(x + i * 64 * KiB, (i % 3 + 1) * 8 * KiB, (int)(i % 3),
                                 i % 2 ? &ctx_a : &ctx_b, MEM_KIND_POOL);
        REQUIRE(ownership_add(&o));
    }
    REQUIRE(ownership_remove_device(7) == 0);
    REQUIRE(ownership_remove_device(1) == 100);
    REQUIRE(ownership_count() == 200);
    REQUIRE(ownership_remove_ctx(&ctx_a) == 100); /* devices 0 and 2, odd i */
    REQUIRE(ownership_count() == 100);
    for (uint64_t i = 0; i < 300; i++) {
        uint64_t b = x + i * 64 * KiB;
        if (i % 3 == 1 || i % 2 == 1)
            REQUIRE(unowned(b));
        else
            REQUIRE(owned_by(b + 100, b, (i % 3 + 1) * 8 * KiB));
    }
    REQUIRE(ownership_remove_ctx(NULL) == 0);
    ownership_clear();
    REQUIRE(ownership_count() == 0);
    for (uint64_t i = 0; i < 300; i++)
        REQUIRE(unowned(x + i * 64 * KiB));
    /* Usable after a clear. */
    add_ok(x, 4096, 3);
    REQUIRE(owned_by(x + 4095, x, 4096));
    ownership_clear();
}

static void test_handles(void)
{
    ownership_clear();
    int dev = -5;
    REQUIRE(!ownership_handle_lookup(42, &dev) && dev == -5);
    REQUIRE(!ownership_handle_remove(42));
    for (uint64_t h = 1; h <= 1000; h++)
        REQUIRE(ownership_handle_add(h * UINT64_C(0x100000001), (int)(h % 8)));
    for (uint64_t h = 1; h <= 1000; h++)
        REQUIRE(ownership_handle_lookup(h * UINT64_C(0x100000001), &dev) && dev == (int)(h % 8));
    REQUIRE(ownership_handle_add(0x100000001, 7)); /* re-added: new device */
    REQUIRE(ownership_handle_lookup(0x100000001, &dev) && dev == 7);
    REQUIRE(ownership_handle_lookup(0x100000001, NULL));
    REQUIRE(ownership_handle_remove(0x100000001) && !ownership_handle_remove(0x100000001));
    REQUIRE(!ownership_handle_lookup(0x100000001, &dev));
    REQUIRE(ownership_handle_lookup(2 * UINT64_C(0x100000001), &dev) && dev == 2);
    ownership_clear(); /* clears handles too */
    REQUIRE(!ownership_handle_lookup(2 * UINT64_C(0x100000001), &dev));
    REQUIRE(ownership_handle_add(0, 1) && ownership_handle_lookup(0, &dev) && dev == 1);
    ownership_clear();
}

int main(void)
{
    test_basics();
    test_small_adjacent();
    test_big();
    test_overlap_replaces();
    test_removals();
    test_handles();
    test_random_model();
    test_alloc_failure();
    test_concurrency();
    test_timing();
    printf("test_ownership: all checks passed\n");
    return 0;
}
