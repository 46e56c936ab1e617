/* test_ownership under stress: allocation failure (in a child with a low
 * address-space limit), concurrent writers and readers, and the mean
 * lookup time (information only). */
#define _POSIX_C_SOURCE 200809L
#include "test_ownership.h"

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

void test_alloc_failure(void)
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

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
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

void test_concurrency(void)
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

void test_timing(void)
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
