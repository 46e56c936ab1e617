/* test_ownership, the random walk: adds, lookups and every removal in a
 * fixed pseudo-random order, each answer checked against a brute-force
 * model of the table. */
#define _POSIX_C_SOURCE 200809L
#include "test_ownership.h"

#include <stdio.h>
#include <string.h>

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

void test_random_model(void)
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
