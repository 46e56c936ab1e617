/* Unit test of the shim's own allocator (interpose/core/shim_alloc.c): every
 * size class and large blocks zeroed, aligned and disjoint (each block
 * filled with its own pattern, all checked after every allocation);
 * reuse after free; realloc keeping the bytes; the live-byte count; the
 * program's heap untouched (sbrk and mallinfo2 unchanged by thousands of
 * blocks); a forked child using inherited blocks and allocating; threads
 * allocating and freeing at once (CI also runs this under TSan, label
 * "threads"; under ASan the freed blocks are poisoned). */
#define _GNU_SOURCE
#include "shim_alloc.h"

#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"

#define BLOCKS 600

struct block {
    unsigned char *p;
    size_t size;
    unsigned char tag;
};

static unsigned char byte_of(unsigned char tag, size_t i)
{
    return (unsigned char)(tag * 31u + i * 7u + 1u);
}

static void fill(const struct block *b)
{
    for (size_t i = 0; i < b->size; i++)
        b->p[i] = byte_of(b->tag, i);
}

static int intact(const struct block *b)
{
    for (size_t i = 0; i < b->size; i++)
        if (b->p[i] != byte_of(b->tag, i))
            return 0;
    return 1;
}

static int zeroed(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return 0;
    return 1;
}

/* Sizes 1 .. 3 * SHIM_ALLOC_SMALL_MAX, every class boundary and its
 * neighbours among them. */
static size_t size_of(unsigned i)
{
    static const size_t edges[] = {1, 15, 16, 17, 47, 48, 63, 64, 65, 96, 192, 200, 4095,
                                   4096, 4097, 12288};
    if (i % 3 == 0)
        return edges[(i / 3) % (sizeof edges / sizeof edges[0])];
    return 1 + (i * 2654435761u) % (3 * SHIM_ALLOC_SMALL_MAX);
}

static struct block blocks[BLOCKS];

static void alloc_block(unsigned i)
{
    struct block *b = &blocks[i];
    b->size = size_of(i);
    b->tag = (unsigned char)(i * 13u + 5u);
    b->p = shim_alloc(b->size);
    REQUIRE(b->p != NULL);
    REQUIRE(((uintptr_t)b->p & 15) == 0);
    if (b->size % 64 == 0)
        REQUIRE(((uintptr_t)b->p & 63) == 0);
    REQUIRE(zeroed(b->p, b->size));
    fill(b);
}

static void check_all(unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (blocks[i].p != NULL)
            REQUIRE(intact(&blocks[i]));
}

static size_t live_expected(void)
{
    size_t n = 0;
    for (unsigned i = 0; i < BLOCKS; i++)
        if (blocks[i].p != NULL)
            n += blocks[i].size;
    return n;
}

static void test_blocks(void)
{
    size_t base = shim_alloc_live_bytes();
    REQUIRE(shim_alloc(0) == NULL);
    for (unsigned i = 0; i < BLOCKS; i++) {
        alloc_block(i);
        if (i % 50 == 0)
            check_all(i + 1);
    }
    check_all(BLOCKS);
    REQUIRE(shim_alloc_live_bytes() - base == live_expected());
    /* Free every other block, allocate them again: reused blocks come
     * back zeroed, and nothing else is disturbed. */
    for (unsigned i = 0; i < BLOCKS; i += 2) {
        shim_free(blocks[i].p, blocks[i].size);
        blocks[i].p = NULL;
    }
    check_all(BLOCKS);
    REQUIRE(shim_alloc_live_bytes() - base == live_expected());
    for (unsigned i = 0; i < BLOCKS; i += 2)
        alloc_block(i);
    check_all(BLOCKS);
    /* The same small size freed and asked again: the very same block. */
    unsigned char *p = shim_alloc(80);
    shim_free(p, 80);
    REQUIRE(shim_alloc(80) == p);
    shim_free(p, 80);
    shim_free(NULL, 80);
}

static void test_realloc(void)
{
    struct block b = {shim_realloc(NULL, 0, 40), 40, 9};
    REQUIRE(b.p != NULL && zeroed(b.p, 40));
    fill(&b);
    /* Growing through classes and into a mapping, shrinking back. */
    const size_t steps[] = {48, 100, 1000, 5000, 70000, 3000, 24};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        size_t keep = b.size < steps[k] ? b.size : steps[k];
        unsigned char *q = shim_realloc(b.p, b.size, steps[k]);
        REQUIRE(q != NULL);
        struct block kept = {q, keep, b.tag};
        REQUIRE(intact(&kept));
        REQUIRE(zeroed(q + keep, steps[k] - keep));
        b.p = q;
        b.size = steps[k];
        fill(&b);
    }
    REQUIRE(shim_realloc(b.p, b.size, 0) == NULL);
}

/* The program's heap: thousands of the shim's blocks move neither the
 * break nor malloc's counts. */
static void test_heap_untouched(void)
{
    void *brk0 = sbrk(0);
    struct mallinfo2 m0 = mallinfo2();
    static void *p[4000];
    for (unsigned i = 0; i < 4000; i++)
        p[i] = shim_alloc(size_of(i));
    for (unsigned i = 0; i < 4000; i += 3)
        shim_free(p[i], size_of(i));
    struct mallinfo2 m1 = mallinfo2();
    REQUIRE(sbrk(0) == brk0);
    REQUIRE(m1.arena == m0.arena && m1.uordblks == m0.uordblks && m1.hblks == m0.hblks);
    for (unsigned i = 0; i < 4000; i++)
        if (i % 3 != 0)
            shim_free(p[i], size_of(i));
}

/* A child inherits the blocks (same bytes, its own copies) and allocates. */
static void test_fork(void)
{
    check_all(BLOCKS);
    shim_alloc_fork_prepare();
    pid_t pid = fork();
    shim_alloc_fork_release();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int ok = 1;
        for (unsigned i = 0; i < BLOCKS; i++)
            ok &= intact(&blocks[i]);
        unsigned char *q = shim_alloc(64);
        ok &= q != NULL && zeroed(q, 64);
        if (q != NULL)
            memset(q, 0xff, 64);
        blocks[0].p[0] ^= 1; /* the parent's copy must not see it */
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    check_all(BLOCKS);
}

#define THREADS 4
#define ROUNDS 3000

static void *churn(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    struct block mine[16] = {{0}};
    for (unsigned r = 0; r < ROUNDS; r++) {
        seed = seed * 1103515245u + 12345u;
        struct block *b = &mine[(seed >> 8) % 16];
        if (b->p != NULL) {
            REQUIRE(intact(b));
            shim_free(b->p, b->size);
            b->p = NULL;
            continue;
        }
        b->size = 1 + (seed >> 12) % (2 * SHIM_ALLOC_SMALL_MAX);
        b->tag = (unsigned char)seed;
        b->p = shim_alloc(b->size);
        REQUIRE(b->p != NULL && zeroed(b->p, b->size));
        fill(b);
    }
    for (unsigned i = 0; i < 16; i++)
        if (mine[i].p != NULL) {
            REQUIRE(intact(&mine[i]));
            shim_free(mine[i].p, mine[i].size);
        }
    return NULL;
}

static void test_threads(void)
{
    size_t before = shim_alloc_live_bytes();
    pthread_t t[THREADS];
    for (unsigned i = 0; i < THREADS; i++)
        REQUIRE(pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1)) == 0);
    for (unsigned i = 0; i < THREADS; i++)
        REQUIRE(pthread_join(t[i], NULL) == 0);
    REQUIRE(shim_alloc_live_bytes() == before);
    check_all(BLOCKS);
}

int main(void)
{
    test_blocks();
    test_realloc();
    test_heap_untouched();
    test_fork();
    test_threads();
    for (unsigned i = 0; i < BLOCKS; i++)
        shim_free(blocks[i].p, blocks[i].size);
    REQUIRE(shim_alloc_live_bytes() == 0);
    printf("test_shim_alloc: all checks passed\n");
    return 0;
}
