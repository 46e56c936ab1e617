/* Unit test of the ownership table (interpose/ownership.c): boundaries,
 * granule levels from 512 bytes to past 2^48, overlap replacement, every
 * removal, the handle table, a random walk checked against a brute-force
 * model, allocation failure (in a child with a low address-space limit),
 * and concurrent writers and readers (CI also runs this under TSan, label
 * "threads"). Only addresses are recorded: no memory is touched.
 * Prints the mean lookup time, for information only. */
#define _POSIX_C_SOURCE 200809L
#include "ownership.h"

#include "../check.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||  \
    __has_feature(memory_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#ifndef UNDER_SANITIZER
#define UNDER_SANITIZER 0
#endif


#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static struct owner_info mk(uint64_t base, uint64_t size, int device,
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

static bool same(const struct owner_info *a, const struct owner_info *b)
{
    return a->base == b->base && a->size == b->size && a->kind == b->kind &&
           a->device == b->device && a->ctx == b->ctx &&
           a->from_driver == b->from_driver;
}

static void add_ok(uint64_t base, uint64_t size, int device)
{
    struct owner_info o = mk(base, size, device, NULL, MEM_KIND_DEVICE);
    REQUIRE(ownership_add(&o));
}

/* Checks that addr resolves to the range [base, base+size). */
static bool owned_by(uint64_t addr, uint64_t base, uint64_t size)
{
    struct owner_info o;
    return ownership_lookup(addr, &o) && o.base == base && o.size == size;
}

static bool unowned(uint64_t addr)
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
static uint64_t rnd(void) /* xorshift64*, fixed seed */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(0x2545F4914F6CDD1D);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
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

/* ---- random walk against a brute-force model ---- */

enum { MODEL_MAX = 4096 };
static struct owner_info model[MODEL_MAX];
static size_t model_n;
static int model_ctx[4];

static uint64_t m_last(const struct owner_info *o)
{
    return o->size - 1 > UINT64_MAX - o->base ? UINT64_MAX : o->base + o->size - 1;
}

static const struct owner_info *model_lookup(uint64_t addr)
{
    for (size_t i = 0; i < model_n; i++)
        if (model[i].base <= addr && addr <= m_last(&model[i]))
            return &model[i];
    return NULL;
}

static size_t model_remove_if(uint64_t base, uint64_t last, int device, void *ctx, int how)
{
    size_t n = 0;
    for (size_t i = 0; i < model_n;) {
        const struct owner_info *o = &model[i];
        bool hit = how == 0   ? o->base <= last && m_last(o) >= base
                   : how == 1 ? o->device == device
                              : o->ctx == ctx;
        if (hit) {
            model[i] = model[--model_n];
            n++;
        } else {
            i++;
        }
    }
    return n;
}

/* One rnd() per statement: the sequence must not depend on the order in
 * which a compiler evaluates operands. */
static void random_range(uint64_t *base, uint64_t *size)
{
    uint64_t r = rnd() % 100, a = rnd(), b = rnd(), c = rnd();
    if (r < 55) { /* dense window: sizes 1 B .. 16 KiB */
        *base = 0x7f5000000000 + a % (16 * MiB);
        *size = 1 + b % (UINT64_C(1) << (c % 15));
    } else if (r < 90) { /* medium window: up to 16 GiB */
        *base = 0x7f6000000000 + (a % (UINT64_C(1) << 38) & ~UINT64_C(0xff));
        *size = 1 + b % (UINT64_C(1) << (c % 35));
    } else if (r < 98) { /* huge: up to 2^52, sparse */
        *base = (a % 64) << 52 | (a >> 12);
        *size = 1 + b % (UINT64_C(1) << (20 + c % 33));
    } else { /* anywhere, possibly running past the top */
        *base = a;
        *size = b >> (c % 64);
    }
    if (*size == 0)
        *size = 1;
}

static uint64_t random_probe(void)
{
    if (model_n > 0 && rnd() % 4 != 0) {
        const struct owner_info *o = &model[rnd() % model_n];
        switch (rnd() % 5) {
        case 0: return o->base;
        case 1: return o->base - 1;
        case 2: return m_last(o);
        case 3: return m_last(o) + 1;
        default: return o->base + rnd() % o->size;
        }
    }
    uint64_t b, s;
    random_range(&b, &s);
    return b + rnd() % s;
}

static size_t probes_checked;

static void check_probe(uint64_t addr)
{
    probes_checked++;
    const struct owner_info *want = model_lookup(addr);
    struct owner_info got;
    bool found = ownership_lookup(addr, &got);
    REQUIRE(found == (want != NULL));
    if (found)
        REQUIRE(same(&got, want));
}

static void test_random_model(void)
{
    enum { OPS = 30000 };
    ownership_clear();
    model_n = 0;
    size_t max_n = 0;
    for (int op = 0; op < OPS; op++) {
        uint64_t r = rnd() % 1000;
        if (r < 450 && model_n < MODEL_MAX) {
            uint64_t b, s;
            random_range(&b, &s);
            int dev = (int)(rnd() % 4) - 1;
            void *ctx = &model_ctx[rnd() % 4];
            struct owner_info o = mk(b, s, dev, ctx, (enum mem_kind)(rnd() % MEM_KIND_COUNT));
            REQUIRE(ownership_add(&o));
            model_remove_if(b, m_last(&o), 0, NULL, 0);
            model[model_n++] = o;
        } else if (r < 750) {
            check_probe(random_probe());
        } else if (r < 880) {
            uint64_t b = random_probe();
            if (model_n > 0 && rnd() % 2)
                b = model[rnd() % model_n].base;
            struct owner_info got;
            const struct owner_info *want = model_lookup(b);
            bool exp = want != NULL && want->base == b;
            struct owner_info wcopy;
            if (exp)
                wcopy = *want;
            REQUIRE(ownership_remove(b, &got) == exp);
            if (exp) {
                REQUIRE(same(&got, &wcopy));
                model_remove_if(b, b, 0, NULL, 0);
            }
        } else if (r < 960) {
            uint64_t b, s;
            random_range(&b, &s);
            if (rnd() % 2 && model_n > 0) { /* start inside a record */
                const struct owner_info *o = &model[rnd() % model_n];
                b = o->base + rnd() % o->size;
            }
            uint64_t last = s - 1 > UINT64_MAX - b ? UINT64_MAX : b + s - 1;
            size_t want = model_remove_if(b, last, 0, NULL, 0);
            REQUIRE(ownership_remove_range(b, s) == want);
        } else if (r < 963) {
            int d = (int)(rnd() % 5) - 1;
            REQUIRE(ownership_remove_device(d) == model_remove_if(0, 0, d, NULL, 1));
        } else if (r < 966) {
            void *c = &model_ctx[rnd() % 4];
            REQUIRE(ownership_remove_ctx(c) == model_remove_if(0, 0, 0, c, 2));
        } else if (r < 967 && rnd() % 4 == 0) {
            ownership_clear();
            model_n = 0;
        }
        REQUIRE(ownership_count() == model_n);
        if (model_n > max_n)
            max_n = model_n;
        if (op % 500 == 0) {
            for (size_t i = 0; i < model_n; i++) {
                const struct owner_info o = model[i];
                check_probe(o.base);
                check_probe(o.base - 1);
                check_probe(o.base + o.size / 2);
                check_probe(m_last(&o));
                check_probe(m_last(&o) + 1);
            }
        }
    }
    printf("random walk: %d operations, up to %zu records, %zu lookups checked\n",
           OPS, max_n, probes_checked);
    ownership_clear();
}

/* ---- allocation failure ---- */

static size_t vm_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f != NULL) {
        if (fscanf(f, "%lu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* In a child: lower the address-space limit, add records until an add
 * fails, then check that every failure left the table consistent. */
static void oom_child(void)
{
    struct rlimit old;
    REQUIRE(getrlimit(RLIMIT_AS, &old) == 0);
    size_t vm = vm_bytes();
    REQUIRE(vm > 0);
    signal(SIGPIPE, SIG_IGN); /* a closed stdout must not fail the test */
    struct rlimit low = old;
    low.rlim_cur = vm + 8 * MiB;
    if (old.rlim_max != RLIM_INFINITY && low.rlim_cur > old.rlim_max) {
        printf("allocation failure: skipped, address-space limit too low\n");
        _exit(0);
    }
    REQUIRE(setrlimit(RLIMIT_AS, &low) == 0);

    const uint64_t packed = 0x300000000, spread = 0x7f7000000000;
    size_t n_ok = 0, fails = 0;
    for (size_t i = 0; i < 10000000 && fails < 200; i++) {
        /* Packed 512-byte ranges grow slot vectors; spread ones add
         * granules and grow the hash table. */
        uint64_t b = i % 3 ? packed + (n_ok + 1) * 512 : spread + (n_ok + 1) * 4 * MiB;
        uint64_t s = i % 3 ? 512 : 3 * MiB;
        struct owner_info o = mk(b, s, 0, NULL, MEM_KIND_DEVICE);
        if (ownership_add(&o)) {
            n_ok++;
            REQUIRE(ownership_count() == n_ok);
        } else {
            fails++;
            REQUIRE(ownership_count() == n_ok);
            REQUIRE(unowned(b)); /* untouched */
        }
    }
    REQUIRE(fails > 0);
    /* Under pressure, an add that would replace records fails whole or
     * succeeds whole. */
    size_t replaced = 0, kept = 0;
    for (uint64_t i = 1; i < 2000 && n_ok > 0; i += 7) {
        uint64_t b = packed + i * 512 + 100; /* overlaps two 512-byte ranges */
        const uint64_t s = 64 * KiB + 1;
        const uint64_t probe[5] = {b - 1, b, b + 512, b + s - 1, b + s};
        struct owner_info before[5];
        bool had[5];
        for (int k = 0; k < 5; k++)
            had[k] = ownership_lookup(probe[k], &before[k]);
        size_t count = ownership_count();
        struct owner_info o = mk(b, s, 1, NULL, MEM_KIND_VMM);
        if (ownership_add(&o)) {
            REQUIRE(owned_by(b, b, s) && owned_by(b + s - 1, b, s));
            replaced++;
        } else {
            REQUIRE(ownership_count() == count);
            for (int k = 0; k < 5; k++) {
                struct owner_info now;
                REQUIRE(ownership_lookup(probe[k], &now) == had[k]);
                REQUIRE(!had[k] || same(&now, &before[k]));
            }
            kept++;
        }
    }
    REQUIRE(setrlimit(RLIMIT_AS, &old) == 0);
    /* Everything still answers, and everything goes away. */
    size_t n = ownership_count();
    REQUIRE(n > 0);
    ownership_clear();
    REQUIRE(ownership_count() == 0);
    for (uint64_t i = 1; i < 1000; i++)
        add_ok(packed + i * 512, 512, 0);
    REQUIRE(ownership_count() == 999 && owned_by(packed + 999 * 512 + 1, packed + 999 * 512, 512));
    printf("allocation failure: %zu adds fitted, %zu failed cleanly; under pressure "
           "%zu replacing adds succeeded, %zu failed cleanly\n",
           n_ok, fails, replaced, kept);
    fflush(stdout);
    _exit(0);
}

static void test_alloc_failure(void)
{
    if (UNDER_SANITIZER) {
        printf("allocation failure: skipped under a sanitizer\n");
        return;
    }
    ownership_clear();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0)
        oom_child();
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- concurrency ---- */

enum { WORKERS = 8, READERS = 2, SHARED = 64 };
#define SHARED_BASE UINT64_C(0x100000000)
static int worker_ctx[WORKERS];
static atomic_int workers_left;

static uint64_t shared_base(int i) { return SHARED_BASE + (uint64_t)i * 64 * MiB; }
static uint64_t shared_size(int i) { return (uint64_t)(i + 1) * (i % 2 ? 1 * MiB : 1000); }

static void check_shared(uint64_t *st)
{
    *st ^= *st << 13;
    *st ^= *st >> 7;
    *st ^= *st << 17;
    int i = (int)(*st % SHARED);
    uint64_t b = shared_base(i), s = shared_size(i);
    struct owner_info o;
    REQUIRE(ownership_lookup(b + *st % s, &o));
    REQUIRE(o.base == b && o.size == s && o.device == 100 + i);
    REQUIRE(unowned(b + s) && unowned(b - 1));
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    uint64_t st = UINT64_C(0x9E3779B97F4A7C15) * (uint64_t)(t + 1);
    const uint64_t region = (uint64_t)(t + 1) << 45; /* 2^45 apart */
    const int iters = 3000;
    for (int it = 0; it < iters; it++) {
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        /* Sizes from 1 byte to 2^44: every level, and top-level granules
         * shared with the neighbouring workers. */
        uint64_t size = 1 + st % (UINT64_C(1) << (st >> 58) % 45);
        uint64_t base = region + (st >> 20) % ((UINT64_C(1) << 44) - size + 1);
        struct owner_info in = mk(base, size, t, &worker_ctx[t], MEM_KIND_DEVICE);
        REQUIRE(ownership_add(&in));
        struct owner_info o;
        REQUIRE(ownership_lookup(base, &o) && same(&o, &in));
        REQUIRE(ownership_lookup(base + size - 1, &o) && same(&o, &in));
        REQUIRE(ownership_lookup(base + size / 3, &o) && same(&o, &in));
        REQUIRE(unowned(base + size) && unowned(base - 1));
        check_shared(&st);
        if (it % 4 == 0) {
            REQUIRE(ownership_remove_range(base + size - 1, 1) == 1);
        } else {
            REQUIRE(ownership_remove(base, &o) && same(&o, &in));
        }
        REQUIRE(unowned(base) && unowned(base + size - 1));
    }
    atomic_fetch_sub(&workers_left, 1);
    return NULL;
}

static void *reader(void *arg)
{
    uint64_t st = UINT64_C(0x1234567) + (uint64_t)(intptr_t)arg;
    long n = 0;
    while (atomic_load(&workers_left) > 0 || n < 1000) {
        check_shared(&st);
        n++;
    }
    return NULL;
}

static void test_concurrency(void)
{
    ownership_clear();
    for (int i = 0; i < SHARED; i++) {
        struct owner_info o = mk(shared_base(i), shared_size(i), 100 + i, NULL,
                                 MEM_KIND_HOST_PINNED);
        REQUIRE(ownership_add(&o));
    }
    atomic_store(&workers_left, WORKERS);
    pthread_t th[WORKERS + READERS];
    for (int t = 0; t < WORKERS; t++)
        REQUIRE(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
    for (int t = 0; t < READERS; t++)
        REQUIRE(pthread_create(&th[WORKERS + t], NULL, reader, (void *)(intptr_t)t) == 0);
    for (int t = 0; t < WORKERS + READERS; t++)
        REQUIRE(pthread_join(th[t], NULL) == 0);
    REQUIRE(ownership_count() == SHARED);
    REQUIRE(ownership_remove_device(100) == 1 && ownership_count() == SHARED - 1);
    ownership_clear();
}

/* ---- timing (information only) ---- */

static void time_lookups(const char *what, const uint64_t *addrs, size_t n_addrs)
{
    const long total = UNDER_SANITIZER ? 200000 : 4000000;
    long found = 0;
    struct owner_info o;
    double t0 = now_ns();
    for (long i = 0; i < total; i++)
        found += ownership_lookup(addrs[(size_t)i % n_addrs], &o);
    double t1 = now_ns();
    printf("lookup time, %s: %.1f ns mean over %ld lookups (%.0f%% hits)\n", what,
           (t1 - t0) / (double)total, total, 100.0 * (double)found / (double)total);
}

static void test_timing(void)
{
    enum { N_ADDRS = 1 << 16 };
    static uint64_t addrs[N_ADDRS];
    static uint64_t bases[20000], sizes[20000];

    /* A caching allocator's view: 2 MiB and 20 MiB blocks, one level. */
    ownership_clear();
    for (int i = 0; i < 2000; i++)
        add_ok(0x7f8000000000 + (uint64_t)i * 32 * MiB, i % 4 ? 2 * MiB : 20 * MiB, i % 2);
    for (size_t i = 0; i < N_ADDRS; i++) {
        uint64_t k = rnd() % 2000;
        addrs[i] = 0x7f8000000000 + k * 32 * MiB + rnd() % (2 * MiB);
    }
    time_lookups("2000 records, 1 level", addrs, N_ADDRS);

    /* A mixed table: 20,000 records of 512 B .. 4 GiB, every level up to
     * 2^32 in use; 90 % of lookups hit. */
    ownership_clear();
    uint64_t at = 0x7f9000000000;
    for (int i = 0; i < 20000; i++) {
        uint64_t shift = rnd() % 24;
        uint64_t s = 512 + rnd() % (UINT64_C(512) << shift);
        bases[i] = at;
        sizes[i] = s;
        add_ok(at, s, i % 4);
        at += s + 4096;
    }
    for (size_t i = 0; i < N_ADDRS; i++) {
        uint64_t k = rnd() % 20000;
        addrs[i] = i % 10 ? bases[k] + rnd() % sizes[k] : bases[k] + sizes[k] + 1;
    }
    time_lookups("20000 records, mixed levels", addrs, N_ADDRS);

    /* A copy loop: the same source and destination again and again. */
    for (size_t i = 0; i < N_ADDRS; i++)
        addrs[i] = i % 2 ? bases[7] + 64 : bases[1234] + sizes[1234] - 1;
    time_lookups("20000 records, one pair of buffers (thread cache)", addrs, N_ADDRS);
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
