/* The bounce predictor (interpose/bounce/predict.h) as a table of
 * sequences: each step is a D2H (asked, then remembered), an H2D, an
 * outcome or a free, and what the D2H's verdict must be. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounce/predict.h"

static int failures;

enum op {
    D2H,    /* host, bytes, src: expect the verdict */
    H2D,    /* host, bytes */
    GOOD,   /* the last predicted D2H's snapshot served an H2D */
    WASTED, /* it did not */
    READERS, /* it was read first, yet served its H2D */
    FREE,   /* free(host) */
    END
};

struct step {
    enum op op;
    uintptr_t host;
    size_t bytes;
    uintptr_t src;
    enum predict_verdict want;
};

#define MB ((size_t)1 << 20)
#define H1 0x100000
#define H2 0x900000
#define S1 0x7000000
#define S2 0x7800000

static void run(const char *name, const struct step *steps)
{
    struct predict_table t;
    predict_init(&t);
    struct predict_pair last = {0};
    enum predict_verdict last_v = PREDICT_NO; /* lazy when YES: a reused buffer */
    for (int i = 0; steps[i].op != END; i++) {
        const struct step *s = &steps[i];
        size_t overlap;
        bool seen, armed;
        switch (s->op) {
        case D2H: {
            struct predict_pair p = predict_pair_of(s->host, s->bytes, s->src);
            enum predict_verdict v = predict_query(&t, &p);
            predict_remember(&t, s->host, s->bytes, s->src, 0);
            if (v != s->want) {
                printf("FAIL %s step %d: verdict %d, expected %d\n", name, i, v, s->want);
                failures++;
            }
            if (getenv("TEST_PREDICT_TRACE"))
                printf("%s step %d: verdict %d\n", name, i, v);
            last = p;
            last_v = v;
            break;
        }
        case H2D: {
            /* The question without the change must answer as the change
             * does, and name the D2H it matched. */
            uintptr_t lo = 0;
            size_t len = 0;
            bool inside = predict_h2d_inside(&t, s->host, s->bytes, &lo, &len);
            predict_h2d(&t, s->host, s->bytes, &overlap, &seen, &armed);
            if (inside != seen || (inside && !(lo <= s->host && s->host + s->bytes <= lo + len))) {
                printf("FAIL %s step %d: inside %d [%#lx, +%zu), seen %d\n", name, i, inside,
                       (unsigned long)lo, len, seen);
                failures++;
            }
            break;
        }
        case GOOD:
        case WASTED:
            predict_outcome(&t, &last, s->op == GOOD, last_v == PREDICT_YES);
            break;
        case READERS:
            predict_readers(&t, &last);
            break;
        case FREE:
            predict_forget(&t, s->host);
            break;
        case END:
            break;
        }
    }
}

/* Whether predict_forget(t, a) has something to forget at a. */
static bool holds(const struct predict_table *t, uintptr_t a)
{
    for (int i = 0; i < PREDICT_D2H; i++)
        if (t->d2h[i].hi != 0 && t->d2h[i].lo == a)
            return true;
    for (int i = 0; i < PREDICT_KEYS; i++)
        if (t->keys[i].key.kind == PK_HOST && t->keys[i].key.addr == a)
            return true;
    return false;
}

/* The host-start filter free() asks first: random D2Hs, H2Ds, outcomes
 * and frees over more addresses than the table holds (so slots and keys
 * are replaced); after every step, an address with something to forget
 * must pass the filter and the live-slot mask must name exactly the live
 * slots, and once everything is forgotten every bucket must be empty again
 * (no count lost or left behind). */
static void filter_property(void)
{
    enum { ADDRS = 200 };
    struct predict_table t;
    predict_init(&t);
    uint64_t x = 88172645463325252ull;
    for (int step = 0; step < 20000; step++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uintptr_t a = H1 + (uintptr_t)(x % ADDRS) * 4096 * 3;
        size_t n = 4096 * (1 + (x >> 20) % 4), ov;
        bool seen, armed;
        struct predict_pair p = predict_pair_of(a, n, S1 + (x >> 30) % 7 * MB);
        switch ((x >> 40) % 5) {
        case 0: predict_query(&t, &p); predict_remember(&t, a, n, p.dev.addr, 0); break;
        case 1: predict_h2d(&t, a, n / 2, &ov, &seen, &armed); break;
        case 2: predict_outcome(&t, &p, (x >> 50) & 1, (x >> 51) & 1); break;
        case 3: predict_forget(&t, a); break;
        default: predict_overwritten(&t, a, n); break;
        }
        uint64_t live = 0;
        for (int i = 0; i < PREDICT_D2H; i++)
            live |= (uint64_t)(t.d2h[i].hi != 0) << i;
        if (live != t.live_mask) {
            /* A stale bit costs a scan a line; a missing one hides a slot. */
            printf("FAIL live mask: step %d: %#llx, the live slots are %#llx\n", step,
                   (unsigned long long)t.live_mask, (unsigned long long)live);
            failures++;
            return;
        }
        for (uintptr_t i = 0; i < ADDRS; i++) {
            uintptr_t b = H1 + i * 4096 * 3;
            if (holds(&t, b) && !predict_may_forget(&t, b)) {
                printf("FAIL filter: step %d: %#lx held but filtered out\n", step,
                       (unsigned long)b);
                failures++;
                return;
            }
        }
    }
    for (uintptr_t i = 0; i < ADDRS; i++)
        predict_forget(&t, H1 + i * 4096 * 3);
    for (int i = 0; i < PREDICT_FILTER; i++)
        if (atomic_load(&t.host_starts[i]) != 0) {
            printf("FAIL filter: bucket %d holds %u after every address was forgotten\n", i,
                   (unsigned)atomic_load(&t.host_starts[i]));
            failures++;
            return;
        }
}

#define NO PREDICT_NO
#define YES PREDICT_YES
#define SKIP PREDICT_SKIPPED
#define EAGER PREDICT_EAGER
#define RES PREDICT_EAGER_IF_RESIDENT

/* The backoff doubles up to its cap, and the state counts right. */
static void backoff_capped(void)
{
    struct predict_table t;
    predict_init(&t);
    struct predict_pair p = predict_pair_of(H1, MB, S1);
    unsigned b = 0, prev = 0;
    for (int i = 0; i < 12; i++) {
        b = predict_outcome(&t, &p, false, false);
        if (b != (prev ? (2 * prev > PREDICT_BACKOFF_MAX ? PREDICT_BACKOFF_MAX : 2 * prev) : 1)) {
            printf("FAIL cap: backoff %u after %u\n", b, prev);
            failures++;
        }
        prev = b;
    }
    unsigned skipped = 0;
    while (predict_query(&t, &p) == PREDICT_SKIPPED)
        skipped++;
    const struct predict_entry *h = predict_lookup(&t, &p.host);
    if (b != PREDICT_BACKOFF_MAX || skipped != PREDICT_BACKOFF_MAX || h == NULL ||
        h->skip != 0 || h->evidence || h->backoff != PREDICT_BACKOFF_MAX) {
        printf("FAIL cap: backoff %u, %u skipped\n", b, skipped);
        failures++;
    }
}

/* A costly waste (pinned memory) skips at least PREDICT_COSTLY_BACKOFF
 * D2Hs, then doubles from there; a larger backoff stays. */
static void costly_floor(void)
{
    struct predict_table t;
    predict_init(&t);
    struct predict_pair p = predict_pair_of(H1, MB, S1);
    unsigned got[3];
    for (int i = 0; i < 3; i++) {
        predict_outcome(&t, &p, false, false);
        got[i] = predict_backoff_at_least(&t, &p, PREDICT_COSTLY_BACKOFF);
    }
    unsigned skipped = 0;
    while (predict_query(&t, &p) == PREDICT_SKIPPED)
        skipped++;
    if (got[0] != PREDICT_COSTLY_BACKOFF || got[1] != 2 * PREDICT_COSTLY_BACKOFF ||
        got[2] != 4 * PREDICT_COSTLY_BACKOFF || skipped != got[2]) {
        printf("FAIL costly: backoffs %u %u %u, %u skipped\n", got[0], got[1], got[2], skipped);
        failures++;
    }
}

/* A staging loop whose rounds the program spoils by a pattern: every
 * `period`-th predicted snapshot wasted, the others useful; every D2H not
 * predicted is followed by its H2D (a seen bounce). Over `rounds` D2Hs,
 * the wasted snapshots of the second half, and the useful ones. */
static void spoil_pattern(int period, int rounds, int *wasted, int *useful, int *lazy_wasted)
{
    struct predict_table t;
    predict_init(&t);
    struct predict_pair p = predict_pair_of(H1, MB, S1);
    int predicted = 0;
    *wasted = *useful = *lazy_wasted = 0;
    for (int r = 0; r < rounds; r++) {
        enum predict_verdict v = predict_query(&t, &p);
        predict_remember(&t, H1, MB, S1, 0);
        if (predict_snapshot(v)) {
            bool good = ++predicted % period != 0;
            predict_outcome(&t, &p, good, v == PREDICT_YES);
            if (r >= rounds / 2)
                (*(good ? useful : wasted))++;
            if (r >= rounds / 2 && !good && v == PREDICT_YES)
                (*lazy_wasted)++;
        } else {
            size_t ov;
            bool seen, armed;
            predict_h2d(&t, H1, MB, &ov, &seen, &armed);
        }
    }
}

/* The worst case of docs/BOUNCE.md: a key whose outcomes alternate (or
 * waste one in up to PREDICT_HISTORY + 1) doubles its backoff to the cap:
 * at most one wasted snapshot per PREDICT_BACKOFF_MAX D2Hs or so; one that
 * wastes rarer keeps its wins, with at least PREDICT_HISTORY useful
 * snapshots per wasted one. */
static void spoilt_bounded(void)
{
    const int rounds = 20000;
    for (int period = 2; period <= 8; period++) {
        int wasted, useful, lazy_wasted;
        spoil_pattern(period, rounds, &wasted, &useful, &lazy_wasted);
        /* A wrong lazy guess (new pages, their fill) follows at least
         * PREDICT_HISTORY + 1 useful snapshots in a row. */
        if (lazy_wasted > useful / (PREDICT_HISTORY + 1) + 1) {
            printf("FAIL spoilt 1 in %d: %d of %d wasted were lazy, %d useful\n", period,
                   lazy_wasted, wasted, useful);
            failures++;
        }
        bool doubling = period <= PREDICT_HISTORY + 1;
        int cap = doubling ? rounds / 2 / (PREDICT_BACKOFF_MAX / 2) : useful / PREDICT_HISTORY;
        if (wasted > cap || (!doubling && useful < rounds / 4)) {
            printf("FAIL spoilt 1 in %d: %d wasted, %d useful in the last %d D2Hs (cap %d)\n",
                   period, wasted, useful, rounds / 2, cap);
            failures++;
        }
    }
}

/* LRU: more keys than the table holds; the table stays consistent. */
static void lru_consistent(void)
{
    struct predict_table t;
    predict_init(&t);
    for (uintptr_t i = 0; i < 3 * PREDICT_KEYS; i++) {
        predict_remember(&t, H1 + i * MB, MB, S1 + i * MB, 0);
        size_t ov;
        bool seen, armed;
        predict_h2d(&t, H1 + i * MB, MB, &ov, &seen, &armed);
    }
    if (t.armed != PREDICT_KEYS || t.live_d2h != PREDICT_D2H) {
        printf("FAIL lru: %u armed, %u remembered\n", t.armed, t.live_d2h);
        failures++;
    }
    struct predict_pair newest = predict_pair_of(H1 + (3 * PREDICT_KEYS - 1) * MB, MB,
                                                 S1 + (3 * PREDICT_KEYS - 1) * MB);
    if (predict_query(&t, &newest) != PREDICT_EAGER_IF_RESIDENT) {
        printf("FAIL lru: the newest key lost\n");
        failures++;
    }
}

/* The outcome history: alternating outcomes keep doubling the backoff;
 * enough useful ones reset it; served and then read back turns eager. */
static void history_tables(void)
{
    /* Useful and wasted in turn: a useful outcome after a recent wasted
     * one keeps the backoff, so the skips grow 1, 2, 4 instead of
     * staying at 1. */
    static const struct step alternate[] = {
        {D2H, H1, MB, S1, NO},   {H2D, H1, MB, 0, 0},     {D2H, H1, MB, S1, RES},
        {GOOD, 0, 0, 0, 0},      {D2H, H1, MB, S1, RES},  {WASTED, 0, 0, 0, 0},
        {D2H, H1, MB, S1, SKIP}, {H2D, H1, MB, 0, 0},     {D2H, H1, MB, S1, RES},
        {GOOD, 0, 0, 0, 0},      {D2H, H1, MB, S1, RES},  {WASTED, 0, 0, 0, 0},
        {D2H, H1, MB, S1, SKIP}, {H2D, H1, MB, 0, 0},     {D2H, H1, MB, S1, SKIP},
        {H2D, H1, MB, 0, 0},     {D2H, H1, MB, S1, RES},  {GOOD, 0, 0, 0, 0},
        {D2H, H1, MB, S1, RES},  {WASTED, 0, 0, 0, 0},    {D2H, H1, MB, S1, SKIP},
        {D2H, H1, MB, S1, SKIP}, {D2H, H1, MB, S1, SKIP}, {D2H, H1, MB, S1, SKIP},
        {H2D, H1, MB, 0, 0},     {D2H, H1, MB, S1, RES},  {END, 0, 0, 0, 0}};
    run("alternate", alternate);
    /* PREDICT_HISTORY useful outcomes after a wasted one keep the backoff;
     * one more resets it: the next wasted one skips 1 again. */
    static const struct step recovers[] = {
        {D2H, H1, MB, S1, NO},   {H2D, H1, MB, 0, 0},     {D2H, H1, MB, S1, RES},
        {WASTED, 0, 0, 0, 0},    {D2H, H1, MB, S1, SKIP}, {H2D, H1, MB, 0, 0},
        {D2H, H1, MB, S1, RES},  {GOOD, 0, 0, 0, 0},      {D2H, H1, MB, S1, RES},
        {GOOD, 0, 0, 0, 0},      {D2H, H1, MB, S1, RES},  {GOOD, 0, 0, 0, 0},
        {D2H, H1, MB, S1, RES},  {GOOD, 0, 0, 0, 0},      {D2H, H1, MB, S1, RES},
        {GOOD, 0, 0, 0, 0},      {D2H, H1, MB, S1, YES},  {WASTED, 0, 0, 0, 0},
        {D2H, H1, MB, S1, SKIP}, {H2D, H1, MB, 0, 0},     {D2H, H1, MB, S1, RES},
        {END, 0, 0, 0, 0}};
    run("recovers", recovers);
    /* Served, then read back whole (a checksum after the upload): eager for
     * 4 D2Hs (the reads then cost no fill), then a lazy try; served and
     * left alone: lazy from then on. */
    static const struct step after[] = {
        {D2H, H1, MB, S1, NO},     {H2D, H1, MB, 0, 0},      {D2H, H1, MB, S1, RES},
        {GOOD, 0, 0, 0, 0},        {READERS, 0, 0, 0, 0},    {D2H, H1, MB, S1, EAGER},
        {GOOD, 0, 0, 0, 0},        {D2H, H1, MB, S1, EAGER}, {GOOD, 0, 0, 0, 0},
        {D2H, H1, MB, S1, EAGER},  {GOOD, 0, 0, 0, 0},       {D2H, H1, MB, S1, EAGER},
        {GOOD, 0, 0, 0, 0},        {D2H, H1, MB, S1, YES},   {GOOD, 0, 0, 0, 0},
        {D2H, H1, MB, S1, YES},    {GOOD, 0, 0, 0, 0},       {D2H, H1, MB, S1, YES},
        {END, 0, 0, 0, 0}};
    run("read after", after);
    /* A reused buffer: eager first; a lazy try after PREDICT_LAZY_TRY
     * useful snapshots in a row; lazy while lazy serves; a wasted lazy one
     * makes it eager again until PREDICT_HISTORY + 1 useful in a row. */
    static const struct step reused[] = {
        {D2H, H1, MB, S1, NO},   {H2D, H1, MB, 0, 0},     {D2H, H1, MB, S1, RES},
        {GOOD, 0, 0, 0, 0},      {D2H, H1, MB, S1, RES},  {GOOD, 0, 0, 0, 0},
        {D2H, H1, MB, S1, YES},  {GOOD, 0, 0, 0, 0},      {D2H, H1, MB, S1, YES},
        {GOOD, 0, 0, 0, 0},      {D2H, H1, MB, S1, YES},  {GOOD, 0, 0, 0, 0},
        {D2H, H1, MB, S1, YES},  {GOOD, 0, 0, 0, 0},      {D2H, H1, MB, S1, YES},
        {WASTED, 0, 0, 0, 0},    {D2H, H1, MB, S1, SKIP}, {H2D, H1, MB, 0, 0},
        {D2H, H1, MB, S1, RES},  {GOOD, 0, 0, 0, 0},      {D2H, H1, MB, S1, RES},
        {GOOD, 0, 0, 0, 0},      {D2H, H1, MB, S1, RES},  {GOOD, 0, 0, 0, 0},
        {D2H, H1, MB, S1, RES},  {GOOD, 0, 0, 0, 0},      {D2H, H1, MB, S1, RES},
        {GOOD, 0, 0, 0, 0},      {D2H, H1, MB, S1, YES},  {END, 0, 0, 0, 0}};
    run("reused", reused);
}

static void alternate_reads(void)
{
    /* Read every other round: the lazy try after an eager run serves (it
     * fell on an unread round), the next lazy snapshot is read (wasted,
     * readers): the eager run doubles (8), as if the try had been read,
     * instead of starting again at 4. Two lazy snapshots in a row that
     * serve end it (the next readers: 4 again). */
    static const struct step alternate[] = {
        {D2H, H1, MB, S1, NO},     {H2D, H1, MB, 0, 0},      {D2H, H1, MB, S1, RES},
        {WASTED, 0, 0, 0, 0},      {READERS, 0, 0, 0, 0},    {D2H, H1, MB, S1, EAGER},
        {GOOD, 0, 0, 0, 0},        {D2H, H1, MB, S1, EAGER}, {GOOD, 0, 0, 0, 0},
        {D2H, H1, MB, S1, EAGER},  {GOOD, 0, 0, 0, 0},       {D2H, H1, MB, S1, EAGER},
        {GOOD, 0, 0, 0, 0},        {D2H, H1, MB, S1, YES},   {GOOD, 0, 0, 0, 0},
        {D2H, H1, MB, S1, YES},    {WASTED, 0, 0, 0, 0},     {READERS, 0, 0, 0, 0},
        {D2H, H1, MB, S1, EAGER},  {D2H, H1, MB, S1, EAGER}, {D2H, H1, MB, S1, EAGER},
        {D2H, H1, MB, S1, EAGER},  {D2H, H1, MB, S1, EAGER}, {D2H, H1, MB, S1, EAGER},
        {D2H, H1, MB, S1, EAGER},  {D2H, H1, MB, S1, EAGER}, {D2H, H1, MB, S1, YES},
        {GOOD, 0, 0, 0, 0},        {D2H, H1, MB, S1, YES},   {GOOD, 0, 0, 0, 0},
        {D2H, H1, MB, S1, YES},    {WASTED, 0, 0, 0, 0},     {READERS, 0, 0, 0, 0},
        {D2H, H1, MB, S1, EAGER},  {D2H, H1, MB, S1, EAGER}, {D2H, H1, MB, S1, EAGER},
        {D2H, H1, MB, S1, EAGER},  {D2H, H1, MB, S1, YES},   {END, 0, 0, 0, 0}};
    run("alternate reads", alternate);
}

int main(void)
{
    /* A staging loop: predicted from round 2 on. */
    static const struct step loop[] = {
        {D2H, H1, MB, S1, NO},  {H2D, H1, MB, 0, 0},  {D2H, H1, MB, S1, RES}, {GOOD, 0, 0, 0, 0},
        {D2H, H1, MB, S1, RES}, {GOOD, 0, 0, 0, 0},   {D2H, H1, MB, S1, YES}, {END, 0, 0, 0, 0}};
    run("loop", loop);
    /* Results copied down and used: never predicted. */
    static const struct step use[] = {{D2H, H1, MB, S1, NO}, {D2H, H1, MB, S1, NO},
                                      {D2H, H2, MB, S1, NO}, {END, 0, 0, 0, 0}};
    run("use", use);
    /* An H2D of part of the range counts; one running past it does not. */
    static const struct step part[] = {
        {D2H, H1, MB, S1, NO},      {H2D, H1 + 4096, MB / 2, 0, 0}, {D2H, H1, MB, S1, RES},
        {D2H, H2, MB, S2, NO},      {H2D, H2, MB + 1, 0, 0},        {D2H, H2, MB, S2, NO},
        {END, 0, 0, 0, 0}};
    run("part", part);
    /* A fresh host buffer each round from one source: the source decides. */
    static const struct step fresh[] = {
        {D2H, H1, MB, S1, NO},  {H2D, H1, MB, 0, 0}, {FREE, H1, 0, 0, 0},
        {D2H, H2, MB, S1, YES}, {GOOD, 0, 0, 0, 0},  {FREE, H2, 0, 0, 0},
        {D2H, H1 + MB, MB, S1, YES}, {END, 0, 0, 0, 0}};
    run("fresh", fresh);
    /* Wasted: skip 1, re-armed by a seen bounce, wasted: skip 2, ... */
    static const struct step backoff[] = {
        {D2H, H1, MB, S1, NO},   {H2D, H1, MB, 0, 0},    {D2H, H1, MB, S1, RES},
        {WASTED, 0, 0, 0, 0},    {D2H, H1, MB, S1, SKIP}, {H2D, H1, MB, 0, 0},
        {D2H, H1, MB, S1, RES},  {WASTED, 0, 0, 0, 0},   {D2H, H1, MB, S1, SKIP},
        {H2D, H1, MB, 0, 0},     {D2H, H1, MB, S1, SKIP}, {H2D, H1, MB, 0, 0},
        {D2H, H1, MB, S1, RES},  {GOOD, 0, 0, 0, 0},     {D2H, H1, MB, S1, RES},
        {END, 0, 0, 0, 0}};
    run("backoff", backoff);
    /* Wasted and no H2D since: the skips end, but nothing re-arms it. */
    static const struct step stops[] = {
        {D2H, H1, MB, S1, NO},   {H2D, H1, MB, 0, 0},     {D2H, H1, MB, S1, RES},
        {WASTED, 0, 0, 0, 0},    {D2H, H1, MB, S1, SKIP}, {D2H, H1, MB, S1, NO},
        {D2H, H1, MB, S1, NO},   {END, 0, 0, 0, 0}};
    run("stops", stops);
    /* A new D2H over the range forgets the old one: its H2D is no bounce. */
    static const struct step over[] = {
        {D2H, H1, MB, S1, NO},     {D2H, H1 + 4096, 8192, S2, NO}, {H2D, H1, MB / 2, 0, 0},
        {D2H, H1, MB, S1, NO},     {END, 0, 0, 0, 0}};
    run("overwritten", over);
    /* Read between the copies: eager for 4 D2Hs, a lazy try (read again:
     * eager for 8), a lazy try that serves: lazy from then on. An eager
     * snapshot the CPU wrote is wasted: the key backs off. */
    static const struct step readers[] = {
        {D2H, H1, MB, S1, NO},     {H2D, H1, MB, 0, 0},      {D2H, H1, MB, S1, RES},
        {WASTED, 0, 0, 0, 0},      {READERS, 0, 0, 0, 0},    {D2H, H1, MB, S1, EAGER},
        {GOOD, 0, 0, 0, 0},        {D2H, H1, MB, S1, EAGER}, {GOOD, 0, 0, 0, 0},
        {D2H, H1, MB, S1, EAGER},  {D2H, H1, MB, S1, EAGER}, {D2H, H1, MB, S1, YES},
        {WASTED, 0, 0, 0, 0},      {READERS, 0, 0, 0, 0},    {D2H, H1, MB, S1, EAGER},
        {D2H, H1, MB, S1, EAGER},  {D2H, H1, MB, S1, EAGER}, {D2H, H1, MB, S1, EAGER},
        {D2H, H1, MB, S1, EAGER},  {D2H, H1, MB, S1, EAGER}, {D2H, H1, MB, S1, EAGER},
        {D2H, H1, MB, S1, EAGER},  {D2H, H1, MB, S1, YES},   {GOOD, 0, 0, 0, 0},
        {D2H, H1, MB, S1, YES},    {GOOD, 0, 0, 0, 0},       {D2H, H2, MB, S2, NO},
        {H2D, H2, MB, 0, 0},       {D2H, H2, MB, S2, RES},   {WASTED, 0, 0, 0, 0},
        {READERS, 0, 0, 0, 0},     {D2H, H2, MB, S2, EAGER}, {WASTED, 0, 0, 0, 0},
        {D2H, H2, MB, S2, SKIP},   {END, 0, 0, 0, 0}};
    run("readers", readers);

    alternate_reads();
    history_tables();
    backoff_capped();
    costly_floor();
    spoilt_bounded();
    lru_consistent();
    filter_property();
    printf("%s\n", failures ? "test_predict: FAILED" : "test_predict: ok");
    return failures != 0;
}
