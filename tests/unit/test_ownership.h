/* What test_ownership's files share: the helpers in test_ownership.c and
 * the tests of the other files, run in order by test_ownership.c's main. */
#ifndef P2PSHIM_TEST_OWNERSHIP_H
#define P2PSHIM_TEST_OWNERSHIP_H

#include "ownership.h"

#include "../check.h"

#include <stdbool.h>
#include <stdint.h>

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

/* A record of [base, base+size); from_driver follows bit 12 of base. */
struct owner_info mk(uint64_t base, uint64_t size, int device, void *ctx,
                     enum mem_kind kind);
bool same(const struct owner_info *a, const struct owner_info *b);
/* Adds a device record; ends the program if the table refuses it. */
void add_ok(uint64_t base, uint64_t size, int device);
/* Checks that addr resolves to the range [base, base+size). */
bool owned_by(uint64_t addr, uint64_t base, uint64_t size);
bool unowned(uint64_t addr);
/* xorshift64*, fixed seed: one sequence for the whole program, so each
 * test's draws depend on the tests run before it. */
uint64_t rnd(void);

/* test_ownership_model.c */
void test_random_model(void);

/* test_ownership_stress.c */
void test_alloc_failure(void);
void test_concurrency(void);
void test_timing(void);

#endif
