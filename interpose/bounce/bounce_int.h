/* Types shared by the bounce module's files (interpose/bounce/; the rest
 * of the shim sees bounce.h only): a snapshot, its device buffer, its page
 * states. Each file's functions are declared in a header of its own, and
 * the files form layers (docs/ARCHITECTURE.md; tools/dev/check_layers.py
 * checks that no file calls a function of a file above it):
 *
 *   pages.c, predict.c, uffd.c, counters.c  pure parts, userfaultfd, counters
 *   gpu.c                                   device buffers, events, streams
 *   stage.c                                 filling lazy pages (staging)
 *   watch.c                                 the predictor behind its lock
 *   table.c                                 the snapshots, ending, faults
 *   life.c                                  lifetimes, eviction, fork, exit
 *   libc.c, d2h.c, h2d.c                    free/realloc, the D2H, the H2D
 */
#ifndef P2PSHIM_BOUNCE_INT_H
#define P2PSHIM_BOUNCE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bounce.h"
#include "config.h"
#include "predict.h"
#include "shim_cuda.h"

/* Page states, one byte per page of a snapshot's registered range. */
enum {
    PG_MISSING = 0, /* dropped: the bytes live in the snapshot only */
    PG_CLEAN,       /* present, write-protected, equal to the snapshot */
    PG_DIRTY,       /* written since, or never tracked: the host is right */
    PG_BUSY,        /* being filled from the snapshot */
    PG_BUSY_DIRTY,  /* written while being filled: dirty once filled */
};

#define USES_MAX 8

/* The fault budget of one snapshot: the CPU touches (write-protect faults
 * and missing-page faults together, and the fills the driver's own reads
 * ask for) it may take before it is given up at a cost that does not grow
 * with its size (docs/BOUNCE.md). Each fault is a round trip to the
 * handler thread, 10-20 us; 16 of them cost at most about 0.3 ms, 1/400 of
 * a full rewrite of a 1 GiB buffer (117 ms on an H200 host), while a
 * snapshot the CPU only patches (a word, a header, a few pages) keeps
 * serving its H2D. */
#define BOUNCE_FAULT_BUDGET 16


/* A device buffer holding a snapshot; the events of the work reading it
 * that a reuse must wait for (or a free synchronise with). */
struct dbuf {
    CUdeviceptr ptr;
    size_t size;
    int dev;
    CUcontext ctx;
    CUevent uses[USES_MAX];
    int nuses;
};

struct snap {
    struct snap *prev, *next;   /* the table, most recently used first */
    uintptr_t host;             /* the D2H's host range */
    size_t bytes;
    struct dbuf buf;            /* holds [host, host+bytes) */
    bool lazy;
    bool dma;                   /* pinned/registered host memory: the GPU writes it by DMA */
    struct predict_pair keys;   /* its D2H's predictor keys */
    bool judged;                /* its outcome was told to the predictor */
    bool useful;                /* ... and that outcome */
    bool neutral;               /* ended by the shim (eviction, context gone): no outcome */
    uint64_t gen;               /* eager: bounce_work_gen before its D2H was issued */
    size_t filled;              /* lazy: pages materialised from the snapshot */
    bool h2d_seen;              /* an H2D has been served from it */
    bool read_first;            /* most pages were materialised before that H2D */
    bool fresh;                 /* lazy: its pages were not resident at its D2H and
                                 * no snapshot of the same pages handed them over (a
                                 * new buffer): a fill costs what the driver's D2H
                                 * into them would have (docs/BOUNCE.md) */
    bool readers_told;          /* predict_readers was told (once per snapshot) */
    bool ready;                 /* set up; before that faults wait, REMOVE is ours */
    bool ending;                /* being ended: no new users; still registered */
    bool gone;                  /* its memory was unmapped or dropped: to be ended */
    bool keep_reg;              /* ended for a D2H over the same pages: stays registered */
    bool unregistered;          /* given up by unregistering (a shared mapping): not dormant */
    CUevent done;               /* eager: recorded after the snapshot and the D2H */
    uintptr_t reg_lo, reg_hi;   /* registered: the pages [host, host+bytes) covers whole */
    uint8_t *page;              /* state of each page of [reg_lo, reg_hi) */
    size_t fill_unit;           /* lazy: bytes of missing pages the next fault fills (doubles) */
    unsigned faults;            /* CPU touches: faults and fills asked for (the budget's count) */
    size_t filled_after;        /* lazy: of filled, the pages materialised after h2d_seen */
    bool abandoned;             /* past the fault budget: being given up (no more protection) */
    bool given_up;              /* ... and given up: every page the host's, to be ended */
    int busy;                   /* threads working outside the lock */
    size_t map_size;            /* the record's own mapping (page array after it) */
};

#endif
