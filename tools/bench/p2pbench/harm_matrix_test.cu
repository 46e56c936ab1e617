/* harmbench --row miss --self-test: the matrix's actions and checks on the
 * host, without a GPU (harm_matrix.cuh). CTest runs it on the CPU tier. */
#include "harm_matrix.cuh"
#include "harm_util.cuh"
#include "pattern.cuh"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int failures, cases;

static void fail(const char *what, const char *why)
{
    printf("FAIL %s: %s\n", what, why);
    failures++;
}

/* Whether every byte of h is what e says; the first wrong offset or n. */
static size_t first_unexpected(const unsigned char *h, size_t n, size_t page,
                               const miss_expect *e)
{
    for (size_t i = 0; i < n; i++)
        if (h[i] != miss_expected_byte(e, i, page, p2pk_pattern_word(e->seed, i >> 2)))
            return i;
    return n;
}

/* The checks must catch what they are there for: a changed copy, file,
 * sum or child. */
static void mutation(miss_work *w, miss_host *h, uint64_t want, uint64_t read_sum,
                     const char *what)
{
    int caught = 1;
    if (w->action == MA_READ)
        caught = !miss_check_action(w, h->n, read_sum + 1, want, what);
    else if (w->action == MA_MEMCPY) {
        w->scratch[h->n / 3] ^= 0x20;
        caught = !miss_check_action(w, h->n, 0, want, what);
    } else if (w->action == MA_WRITE || w->action == MA_PWRITE || w->action == MA_WRITEV) {
        unsigned char bad = (unsigned char)(h->p[h->n / 3] ^ 0x20);
        caught = pwrite(w->fd, &bad, 1, (off_t)(h->n / 3)) == 1 &&
                 !miss_check_action(w, h->n, 0, want, what);
    } else if (w->action == MA_FORK) {
        miss_act(w, h, 0, want + 1);
        caught = !miss_check_action(w, h->n, 0, want, what);
    }
    if (!caught)
        fail(what, "a wrong result passed the action's check");
}

static void one_case(int kind, size_t n, int action, const char *tmpdir)
{
    char what[96];
    snprintf(what, sizeof what, "%s %s %zu B", miss_kind_names[kind], miss_action_names[action],
             n);
    miss_host h;
    miss_work w;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint32_t seed = 0x5e1f + (uint32_t)action;
    unsigned char v = 0x9c;
    miss_host_alloc(&h, kind, n);
    miss_work_init(&w, action, n, tmpdir);
    for (size_t i = 0; i < n; i++)
        h.p[i] = p2pk_pattern_byte(seed, i);
    uint64_t want = harm_host_sum(h.p, n);
    uint64_t read_sum = miss_act(&w, &h, v, want);
    miss_expect e = miss_expect_after(action, n, page, seed, v);
    size_t bad = first_unexpected(h.p, n, page, &e);
    if (bad < n) {
        char why[96];
        snprintf(why, sizeof why, "byte %zu is 0x%02x after the action", bad, h.p[bad]);
        fail(what, why);
    }
    if (action != MA_NONE && action != MA_READ && e.patch == MP_NONE &&
        harm_host_sum(h.p, n) != want)
        fail(what, "an action that only reads changed the buffer");
    if (!miss_check_action(&w, n, read_sum, want, what))
        fail(what, "the action's check failed on right results");
    mutation(&w, &h, want, read_sum, what);
    miss_work_free(&w);
    miss_host_free(&h);
    cases++;
}

int miss_selftest(const char *tmpdir)
{
    const int kinds[] = {MK_MALLOC, MK_MMAP, MK_THP};
    const size_t sizes[] = {(size_t)64 << 10, (size_t)1 << 20, (size_t)4 << 20};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int a = 0; a < MA_COUNT; a++)
                one_case(kinds[k], sizes[s], a, tmpdir);
    printf("harmbench miss self-test: %d cases, %d failure(s)\n", cases, failures);
    return failures ? 1 : 0;
}
