/* The bounce predictor (predict.h). */
#include "predict.h"

#include "hot.h"

#include <string.h>

_Static_assert(PREDICT_D2H == 64, "live_mask has a bit per remembered D2H slot");

/* A loop over the live slots' indices i, lowest first (the order of the
 * array): a copy of the mask loses its lowest bit each turn, so the body
 * may forget slots (clear their bits) as it goes; break and continue work
 * as in any for loop. */
#define FOR_LIVE_SLOT(i, t)                                                   \
    for (uint64_t m_ = (t)->live_mask, i = 0;                                 \
         m_ != 0 && ((i = (uint64_t)__builtin_ctzll(m_)), true); m_ &= m_ - 1)

void predict_init(struct predict_table *t)
{
    memset(t->keys, 0, sizeof t->keys);
    memset(t->d2h, 0, sizeof t->d2h);
    t->next_d2h = t->live_d2h = t->armed = 0;
    t->live_mask = 0;
    t->clock = 0;
    for (int i = 0; i < PREDICT_FILTER; i++)
        atomic_store_explicit(&t->host_starts[i], 0, memory_order_relaxed);
}

static _Atomic uint8_t *bucket(const struct predict_table *t, uintptr_t host)
{
    uint64_t h = (uint64_t)host * 0x9e3779b97f4a7c15ull; /* Fibonacci hashing */
    return (_Atomic uint8_t *)&t->host_starts[h >> 55]; /* the top 9 bits: 512 buckets */
}

/* One more (+1) or one fewer (-1) thing predict_forget acts on at host.
 * Serialised writers: a load and a store, never a read-modify-write. */
static void filter_add(struct predict_table *t, uintptr_t host, int delta)
{
    _Atomic uint8_t *b = bucket(t, host);
    uint8_t n = atomic_load_explicit(b, memory_order_relaxed);
    atomic_store_explicit(b, (uint8_t)(n + delta), memory_order_relaxed);
}

bool predict_may_forget(const struct predict_table *t, uintptr_t host)
{
    return atomic_load_explicit(bucket(t, host), memory_order_relaxed) != 0;
}

struct predict_pair predict_pair_of(uintptr_t host, size_t bytes, uintptr_t src)
{
    struct predict_pair p = {{host, bytes, PK_HOST}, {src, bytes, src ? PK_DEVICE : 0}};
    return p;
}

static bool same_key(const struct predict_key *a, const struct predict_key *b)
{
    return a->kind == b->kind && a->addr == b->addr && a->bytes == b->bytes;
}

static bool is_armed(const struct predict_entry *e)
{
    return e->key.kind != 0 && (e->evidence || e->skip != 0);
}

/* Sets e's state, keeping t->armed right. */
static void set_state(struct predict_table *t, struct predict_entry *e, bool evidence,
                      uint16_t backoff, uint16_t skip)
{
    bool was = is_armed(e);
    e->evidence = evidence;
    e->backoff = backoff;
    e->skip = skip;
    bool now = is_armed(e);
    if (was != now)
        t->armed += now ? 1u : (unsigned)-1;
}

static struct predict_entry *find(struct predict_table *t, const struct predict_key *k)
{
    if (k->kind == 0)
        return NULL;
    for (int i = 0; i < PREDICT_KEYS; i++)
        if (same_key(&t->keys[i].key, k))
            return &t->keys[i];
    return NULL;
}

const struct predict_entry *predict_lookup(const struct predict_table *t,
                                           const struct predict_key *k)
{
    return find((struct predict_table *)t, k);
}

/* k's entry, made (a free one, else the least recently used) if needed. */
static struct predict_entry *find_or_add(struct predict_table *t, const struct predict_key *k)
{
    struct predict_entry *e = find(t, k);
    if (e == NULL && k->kind != 0) {
        e = &t->keys[0];
        for (int i = 0; i < PREDICT_KEYS && e->key.kind != 0; i++)
            if (t->keys[i].key.kind == 0 || t->keys[i].stamp < e->stamp)
                e = &t->keys[i];
        set_state(t, e, false, 0, 0);
        e->eager = false;
        e->eager_run = e->eager_left = 0;
        e->history = 0;
        e->lazy_ok = e->lazy_next = false;
        e->useful_run = 0;
        if (e->key.kind == PK_HOST)
            filter_add(t, e->key.addr, -1);
        e->key = *k;
        if (k->kind == PK_HOST)
            filter_add(t, k->addr, +1);
    }
    if (e != NULL)
        e->stamp = ++t->clock;
    return e;
}

enum predict_verdict predict_query(struct predict_table *t, const struct predict_pair *p)
{
    if (t->armed == 0)
        return PREDICT_NO;
    /* The most specific key the table knows decides: the host range
     * (this very buffer), else the device source (a fresh buffer). */
    struct predict_entry *e = find(t, &p->host);
    if (e == NULL)
        e = find(t, &p->dev);
    if (e == NULL)
        return PREDICT_NO;
    e->stamp = ++t->clock;
    if (e->skip != 0) {
        set_state(t, e, e->evidence, e->backoff, (uint16_t)(e->skip - 1));
        return PREDICT_SKIPPED;
    }
    if (!e->evidence)
        return PREDICT_NO;
    if (e->eager && e->eager_left != 0) {
        e->eager_left--;
        return PREDICT_EAGER;
    }
    if (e->eager) {
        e->eager = false; /* the lazy try: its outcome says whether the reads stopped */
        return PREDICT_YES;
    }
    if (e->key.kind == PK_HOST && !e->lazy_ok && !e->lazy_next)
        return PREDICT_EAGER_IF_RESIDENT;
    e->lazy_next = false;
    return PREDICT_YES;
}

void predict_readers(struct predict_table *t, const struct predict_pair *p)
{
    struct predict_entry *e = find_or_add(t, &p->host);
    if (e == NULL)
        return;
    unsigned run = e->eager_run ? 2u * e->eager_run : 4u;
    e->eager_run = (uint16_t)(run > PREDICT_BACKOFF_MAX ? PREDICT_BACKOFF_MAX : run);
    e->eager_left = e->eager_run;
    e->eager = true;
    e->lazy_ok = e->lazy_next = false; /* read: lazy pays fills here */
    set_state(t, e, true, e->backoff, 0);
}

static void forget_slot(struct predict_table *t, struct predict_d2h *r)
{
    if (r->hi != 0) {
        r->hi = 0;
        t->live_d2h--;
        t->live_mask &= ~((uint64_t)1 << (r - t->d2h));
        filter_add(t, r->lo, -1);
    }
}

void predict_overwritten(struct predict_table *t, uintptr_t host, size_t bytes)
{
    uintptr_t lo = host, hi = host + bytes;
    FOR_LIVE_SLOT(i, t)
        if (t->d2h[i].lo < hi && lo < t->d2h[i].hi)
            forget_slot(t, &t->d2h[i]);
}

P2PSHIM_HOT void predict_remember(struct predict_table *t, uintptr_t host, size_t bytes,
                                  uintptr_t src, int dev)
{
    if (bytes == 0 || host == 0)
        return;
    predict_overwritten(t, host, bytes);
    unsigned slot = t->next_d2h++ % PREDICT_D2H;
    struct predict_d2h *r = &t->d2h[slot];
    if (r->hi == 0)
        t->live_d2h++;
    else
        filter_add(t, r->lo, -1);
    *r = (struct predict_d2h){host, host + bytes, src, dev};
    t->live_mask |= (uint64_t)1 << slot;
    filter_add(t, host, +1);
}

void predict_forget(struct predict_table *t, uintptr_t host)
{
    FOR_LIVE_SLOT(i, t)
        if (t->d2h[i].lo == host)
            forget_slot(t, &t->d2h[i]);
    /* Every host key there, armed or not: the filter counts them all. */
    for (int i = 0; i < PREDICT_KEYS && predict_may_forget(t, host); i++) {
        struct predict_entry *e = &t->keys[i];
        if (e->key.kind == PK_HOST && e->key.addr == host) {
            set_state(t, e, false, 0, 0);
            e->eager = false;
            e->eager_run = e->eager_left = 0;
            e->history = 0;
            e->lazy_ok = e->lazy_next = false;
            e->useful_run = 0;
            e->key.kind = 0;
            filter_add(t, host, -1);
        }
    }
}

/* A seen bounce: k gets evidence unless still skipping. */
static bool give_evidence(struct predict_table *t, const struct predict_key *k)
{
    struct predict_entry *e = find_or_add(t, k);
    if (e == NULL)
        return false;
    if (e->skip == 0)
        set_state(t, e, true, e->backoff, 0);
    return e->evidence;
}

int predict_h2d(struct predict_table *t, uintptr_t host, size_t bytes, size_t *overlap,
                bool *seen, bool *armed)
{
    *seen = *armed = false;
    *overlap = 0;
    if (t->live_d2h == 0 || bytes == 0)
        return -1;
    uintptr_t lo = host, hi = host + bytes;
    FOR_LIVE_SLOT(i, t) {
        const struct predict_d2h *r = &t->d2h[i];
        if (!(r->lo < hi && lo < r->hi))
            continue;
        *overlap = (r->hi < hi ? r->hi : hi) - (r->lo > lo ? r->lo : lo);
        if (r->lo <= lo && hi <= r->hi) {
            struct predict_pair p = predict_pair_of(r->lo, r->hi - r->lo, r->src);
            *seen = true;
            bool a = give_evidence(t, &p.host);
            bool b = give_evidence(t, &p.dev);
            *armed = a || b;
        }
        return r->dev;
    }
    return -1;
}

bool predict_h2d_inside(const struct predict_table *t, uintptr_t host, size_t bytes,
                        uintptr_t *lo, size_t *len)
{
    if (t->live_d2h == 0 || bytes == 0)
        return false;
    FOR_LIVE_SLOT(i, t) {
        const struct predict_d2h *r = &t->d2h[i];
        if (!(r->lo < host + bytes && host < r->hi))
            continue;
        *lo = r->lo;
        *len = r->hi - r->lo;
        return r->lo <= host && host + bytes <= r->hi;
    }
    return false;
}

unsigned predict_outcome(struct predict_table *t, const struct predict_pair *p, bool useful,
                         bool lazy)
{
    const struct predict_key *k[2] = {&p->host, &p->dev};
    unsigned backoff = 0;
    for (int i = 0; i < 2; i++) {
        struct predict_entry *e = find_or_add(t, k[i]);
        if (e == NULL)
            continue;
        bool recent_waste = (e->history & ((1u << PREDICT_HISTORY) - 1)) != 0;
        bool lazy_served_before = e->lazy_ok;
        e->history = (uint8_t)(e->history << 1 | (useful ? 0u : 1u));
        e->useful_run = useful ? (uint8_t)(e->useful_run + (e->useful_run < 255)) : 0;
        if (lazy)
            e->lazy_ok = useful, e->lazy_next = false;
        else
            e->lazy_next = !e->lazy_ok &&
                           e->useful_run >= (e->history ? PREDICT_HISTORY + 1 : PREDICT_LAZY_TRY);
        if (useful && e->eager) {
            set_state(t, e, true, e->backoff, 0); /* eager and useful: stays eager */
            continue;
        }
        e->eager = false;
        if (useful) {
            /* Two lazy snapshots in a row served: the reads stopped. One
             * (the lazy try after an eager run) may have fallen between
             * two reads: the next eager run, if any, is twice as long. */
            if (!lazy || lazy_served_before)
                e->eager_run = 0;
            /* A wasted outcome not long ago: the backoff stays, so that a
             * key alternating served and spoilt rounds doubles it. */
            set_state(t, e, true, recent_waste ? e->backoff : 0, 0);
            continue;
        }
        unsigned b = e->backoff ? 2u * e->backoff : 1u;
        b = b > PREDICT_BACKOFF_MAX ? PREDICT_BACKOFF_MAX : b;
        set_state(t, e, false, (uint16_t)b, (uint16_t)b);
        backoff = b > backoff ? b : backoff;
    }
    return backoff;
}

unsigned predict_backoff_at_least(struct predict_table *t, const struct predict_pair *p,
                                  unsigned n)
{
    const struct predict_key *k[2] = {&p->host, &p->dev};
    unsigned most = 0;
    n = n > PREDICT_BACKOFF_MAX ? PREDICT_BACKOFF_MAX : n;
    for (int i = 0; i < 2; i++) {
        struct predict_entry *e = find(t, k[i]);
        if (e == NULL)
            continue;
        if (e->backoff < n)
            set_state(t, e, false, (uint16_t)n, (uint16_t)(e->skip > n ? e->skip : n));
        most = e->backoff > most ? e->backoff : most;
    }
    return most;
}
