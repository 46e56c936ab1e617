/* The bounce predictor: whether a device-to-host copy (D2H) is worth a
 * snapshot, from what the program did before. Pure: no locks, no driver,
 * no allocation; the caller serialises (watch.c holds the lock).
 *
 * Evidence comes from history. Every D2H that is not bounced is
 * remembered (host range, device source; PREDICT_D2H of them, oldest
 * replaced). A host-to-device copy (H2D) whose host range lies inside a
 * remembered D2H's is a "seen bounce": it gives evidence to two keys, the
 * D2H's host range and its device source range, so that a loop that gets a
 * fresh host buffer each round from the same source is caught too.
 *
 * A D2H is predicted when the most specific key the table knows has
 * evidence and is not backing off: the host range when known (this very
 * buffer), else the device source (a fresh buffer from the same tensor).
 * The snapshot's outcome feeds back: useful (it served an H2D the CPU had
 * not read or rewritten first) keeps the evidence; wasted (the CPU
 * materialised or rewrote most of it, or it ended without serving an H2D)
 * takes the evidence away and makes the keys skip the next 1, 2, 4, ...
 * PREDICT_BACKOFF_MAX D2Hs; only a seen bounce after the skips re-arms
 * them. A useful outcome resets the backoff only when none of the key's
 * last PREDICT_HISTORY outcomes was wasted: a key whose outcomes alternate
 * (a staging loop whose every other round is rewritten) keeps doubling
 * its backoff instead of renewing it. So wasted snapshots of a key are
 * either at most one per PREDICT_HISTORY + 1 useful ones, or one per 2^k
 * D2Hs, at worst one in PREDICT_BACKOFF_MAX + 1 once the backoff is
 * spent (docs/BOUNCE.md, "Worst case").
 *
 * Lazy or eager: a lazy snapshot drops the buffer's pages, and a wrong
 * guess pays for new pages and their fill; an eager one keeps them, and a
 * wrong guess pays two passes over the page table. So a host key whose
 * buffer keeps its pages between rounds (a reused buffer) is eager until
 * lazy has paid for it: a lazy try comes after PREDICT_LAZY_TRY useful
 * snapshots in a row (PREDICT_HISTORY + 1 when one of its last 8 outcomes
 * was wasted), and the key stays lazy while its lazy snapshots serve
 * (lazy_ok). A fresh
 * buffer (no host key, or none of its pages there) is lazy at once: its
 * pages cost the same either way.
 *
 * Keys live in a table of PREDICT_KEYS, least recently used replaced. */
#ifndef P2PSHIM_BOUNCE_PREDICT_H
#define P2PSHIM_BOUNCE_PREDICT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PREDICT_KEYS 64
#define PREDICT_D2H 64
#define PREDICT_BACKOFF_MAX 256
/* Outcomes a key remembers: a wasted one among its last PREDICT_HISTORY
 * keeps the backoff through a useful one. */
#define PREDICT_HISTORY 4
/* The least backoff after a wasted snapshot of pinned memory: making its
 * pages writable again is a pass over its page table that costs 2-3 times
 * what a served snapshot saves (64 MiB on one H200: +2.9 ms against
 * -1.1 ms), so the key waits longer before it tries again. */
#define PREDICT_COSTLY_BACKOFF 4
/* Useful snapshots in a row before a reused buffer's first lazy try. */
#define PREDICT_LAZY_TRY 2
/* Buckets of the host-start filter (a power of two). */
#define PREDICT_FILTER 512

enum predict_kind { PK_HOST = 1, PK_DEVICE = 2 };

struct predict_key {
    uintptr_t addr;
    size_t bytes;
    uint8_t kind; /* enum predict_kind; 0: no key */
};

/* The two keys of one D2H. */
struct predict_pair {
    struct predict_key host, dev;
};

struct predict_entry {
    struct predict_key key;  /* kind 0: free */
    bool evidence;           /* a seen bounce or a useful snapshot, not lost since */
    bool eager;              /* host key: the CPU reads the buffer between (predict_readers) */
    uint16_t backoff;        /* the skip length after the last misprediction (0: none) */
    uint16_t skip;           /* D2Hs still to be skipped */
    uint16_t eager_run;      /* eager D2Hs before the next lazy try (doubles) */
    uint16_t eager_left;     /* of those, still to come */
    uint8_t history;         /* the last outcomes, newest in bit 0: 1 wasted, 0 useful */
    uint8_t useful_run;      /* useful outcomes in a row (saturating) */
    bool lazy_ok;            /* host key: its last lazy snapshot served */
    bool lazy_next;          /* host key: the next snapshot is a lazy try */
    uint64_t stamp;          /* last use, for LRU */
};

struct predict_d2h {
    uintptr_t lo, hi;        /* host range; hi == 0: free */
    uintptr_t src;           /* device source */
    int dev;                 /* source device */
};

struct predict_table {
    struct predict_entry keys[PREDICT_KEYS];
    struct predict_d2h d2h[PREDICT_D2H];
    unsigned next_d2h;       /* slot replaced next */
    unsigned live_d2h;       /* remembered D2Hs */
    /* Bit i: d2h[i] is live. The scans visit live slots only: a large D2H
     * made with cold caches reads one line per live slot, not the whole
     * array (32 lines), each a miss the program pays for in host time. */
    uint64_t live_mask;
    unsigned armed;          /* keys with evidence or skips: 0 lets a query return at once */
    uint64_t clock;
    /* How many remembered D2Hs start, and host keys sit, at an address
     * hashing to each bucket: what predict_forget can act on. Written by
     * the serialised functions, read without the lock by
     * predict_may_forget (relaxed: a program frees a buffer only after
     * the copy into it returned, which orders the two). At most
     * PREDICT_D2H + PREDICT_KEYS in all, so a byte each. */
    _Atomic uint8_t host_starts[PREDICT_FILTER];
};

/* A zeroed table is empty and valid; this zeroes one. */
void predict_init(struct predict_table *t);

struct predict_pair predict_pair_of(uintptr_t host, size_t bytes, uintptr_t src);

enum predict_verdict {
    PREDICT_NO,      /* no evidence: the normal path */
    PREDICT_YES,     /* take a snapshot */
    PREDICT_SKIPPED, /* a key is backing off: this D2H was one of its skips */
    PREDICT_EAGER,   /* take an eager snapshot: the D2H runs, the bytes are kept too */
    PREDICT_EAGER_IF_RESIDENT, /* a snapshot, eager if the buffer's pages are there
                                * (reused), lazy if not (new): lazy has not paid
                                * for this buffer yet */
};
/* Whether the verdict asks for a snapshot. */
static inline bool predict_snapshot(enum predict_verdict v)
{
    return v == PREDICT_YES || v == PREDICT_EAGER || v == PREDICT_EAGER_IF_RESIDENT;
}
/* A D2H about to run: counts down the skips of its keys. */
enum predict_verdict predict_query(struct predict_table *t, const struct predict_pair *p);

/* A D2H that writes [host, host+bytes) the normal way, from src on dev:
 * remembered; remembered D2Hs it overlaps are forgotten (overwritten). */
void predict_remember(struct predict_table *t, uintptr_t host, size_t bytes, uintptr_t src,
                      int dev);
/* [host, host+bytes) written otherwise (a snapshot D2H): remembered D2Hs
 * overlapping it are forgotten. */
void predict_overwritten(struct predict_table *t, uintptr_t host, size_t bytes);
/* free(host): remembered D2Hs starting there, and the host keys there,
 * are forgotten (a new allocation there is a new buffer). */
void predict_forget(struct predict_table *t, uintptr_t host);
/* Whether predict_forget(t, host) may change anything; false means it
 * would not. Needs no lock: free() asks it first, so that a program's
 * frees of memory the predictor never saw take no lock (one load). */
bool predict_may_forget(const struct predict_table *t, uintptr_t host);

/* An H2D from [host, host+bytes). Returns the source device of the first
 * remembered D2H it overlaps (-1: none; *overlap: the bytes in common).
 * When the H2D lies inside that D2H's range it is a seen bounce: its keys
 * get evidence unless backing off (*armed: whether any key has evidence
 * after it). */
int predict_h2d(struct predict_table *t, uintptr_t host, size_t bytes, size_t *overlap,
                bool *seen, bool *armed);
/* Whether predict_h2d would call the H2D a seen bounce, changing nothing:
 * it lies inside the first remembered D2H it overlaps, whose host range
 * is then [*lo, *lo + *len). */
bool predict_h2d_inside(const struct predict_table *t, uintptr_t host, size_t bytes,
                        uintptr_t *lo, size_t *len);

/* A snapshot's outcome (useful or wasted) for its D2H's keys; lazy: the
 * snapshot was lazy. Returns the new backoff length (0 when useful). An
 * eager host key's eager snapshot that was useful stays eager; a lazy try
 * that was useful ends the eager mode (its eager run is forgotten only
 * when the lazy snapshot before was useful too: a try that fell between
 * two reads leaves the next run doubled); a wasted one of either kind
 * ends it and backs off. A useful one keeps the backoff (the next wasted one
 * doubles it) while a wasted one is among the key's last PREDICT_HISTORY
 * outcomes. A useful lazy one sets lazy_ok, a wasted lazy one clears it;
 * a useful eager one that makes PREDICT_LAZY_TRY useful in a row
 * (PREDICT_HISTORY + 1 after a recent waste) makes the next snapshot a
 * lazy try. */
unsigned predict_outcome(struct predict_table *t, const struct predict_pair *p, bool useful,
                         bool lazy);

/* After predict_outcome's wasted outcome: the keys back off at least n
 * D2Hs (a costly waste); a larger backoff stays. Returns the largest. */
unsigned predict_backoff_at_least(struct predict_table *t, const struct predict_pair *p,
                                  unsigned n);

/* Readers besides: a lazy snapshot the CPU materialised (read) before
 * its H2D, which still took most of its bytes from it (the CPU did not
 * write them; after its wasted outcome), or one that served its H2D and
 * was then materialised anyway (a checksum, write(2), a save; after its
 * useful outcome). The host key gets its evidence in eager mode: its next
 * D2Hs run as without the shim and keep a device copy of the bytes too
 * (the CPU's touches cost no fill, the H2D is served from the copy);
 * after eager_run of them (4, then doubling up to PREDICT_BACKOFF_MAX)
 * one lazy try tells whether the reads stopped. */
void predict_readers(struct predict_table *t, const struct predict_pair *p);

/* The state of a key (tests): NULL when not in the table. */
const struct predict_entry *predict_lookup(const struct predict_table *t,
                                           const struct predict_key *k);

#endif
