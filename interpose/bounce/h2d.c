/* The bounce module's H2D: a host-to-device copy from a range holding
 * clean snapshot pages is split into runs served from the snapshots
 * (device to device, peer access enabled as for any copy) and runs from
 * the host, in order, on the program's stream (bounce.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "behind.h"
#include "config.h"
#include "counters.h"
#include "driver.h"
#include "gpu.h"
#include "hooks.h"
#include "link_life.h"
#include "log.h"
#include "pages.h"
#include "record.h"
#include "owner_lookup.h"
#include "route.h"
#include "table.h"
#include "uffd.h"
#include "upgrade.h"
#include "watch.h"

/* An H2D split into more pieces than this goes the normal way. */
#define PIECES_MAX 16

struct piece {
    struct snap *s; /* NULL: from the host */
    uintptr_t lo, hi;
    /* The link whose event is recorded after the last piece (link_life.h);
     * NULL: none (a host piece, an earlier piece's link, idle release off). */
    CUcontext link_a, link_b;
};

/* Peer access for a copy from the snapshot's device to dst's, enabled as
 * for any copy (upgrade.h); the use noted on pc, whose link's event
 * cover_links records once every piece is issued. */
static void link_for(const struct copy_call *call, struct piece *pc,
                     const struct owner_info *dst, size_t bytes)
{
    const struct snap *s = pc->s;
    struct copy_end from = {{true, MEM_KIND_DEVICE, s->buf.dev}, s->buf.ctx};
    struct copy_end to = {{true, dst->kind, dst->device}, dst->ctx};
    struct route_decision d = upgrade_decide(call, &from, &to, bytes, config_get());
    enum route_reason reason = d.reason;
    if (d.action == ROUTE_ENABLE_THEN_PASS)
        reason = upgrade_enable(&d, &from, &to);
    if (!route_reason_is_upgrade(reason))
        return;
    struct copy_call mark = *call;
    mark.link.a = mark.link.b = NULL;
    link_life_note_use(&mark, from.ctx, from.route.device, to.ctx, to.route.device);
    pc->link_a = mark.link.a;
    pc->link_b = mark.link.b;
}

/* Notes the links of the snapshot pieces, one use per snapshot context:
 * the pieces share the program's stream, so one event after the last of
 * them covers every piece from that device. */
static void note_links(const struct copy_call *call, struct piece *pc, int np,
                       const struct owner_info *dst, size_t bytes)
{
    link_life_tick(); /* a cross-GPU copy: idle links are looked for, as at any */
    for (int i = 0; i < np; i++) {
        bool seen = pc[i].s == NULL;
        for (int j = 0; j < i && !seen; j++)
            seen = pc[j].s != NULL && pc[j].s->buf.ctx == pc[i].s->buf.ctx;
        if (!seen)
            link_for(call, &pc[i], dst, bytes);
    }
}

/* After the pieces were issued (all, or up to a failure: the original call
 * then runs after them on the same stream): each noted link's event on
 * the program's stream, so that the link is not released under them. */
static void cover_links(const struct copy_call *call, const struct piece *pc, int np)
{
    for (int i = 0; i < np; i++) {
        if (pc[i].link_a == NULL)
            continue;
        struct copy_call mark = *call;
        mark.link.a = pc[i].link_a;
        mark.link.b = pc[i].link_b;
        link_life_after_issue(&mark);
    }
}

/* Splits [h, h+n) into pieces from snapshots and from the host. false
 * when it cannot be served (too many pieces, or host pieces over lazy
 * pages); pins the snapshots used (unpinned by the caller). */
static bool add_piece(struct piece *pc, int *np, struct snap *who, uintptr_t lo,
                      uintptr_t hi)
{
    if (*np > 0 && pc[*np - 1].s == who && pc[*np - 1].hi == lo) {
        pc[*np - 1].hi = hi;
        return true;
    }
    if (*np == PIECES_MAX)
        return false;
    pc[(*np)++] = (struct piece){who, lo, hi, NULL, NULL};
    if (who != NULL)
        who->busy++;
    return true;
}

/* Whether a page in state st can come from the snapshot, and whether the
 * driver could read it at all (a missing page would fault in the driver). */
static bool servable(uint8_t st)
{
    return st == PG_MISSING || st == PG_CLEAN || st == PG_BUSY;
}

static bool plan(uintptr_t h, size_t n, struct piece *pc, int *np, int dst_dev)
{
    const size_t pg = bounce_page;
    const struct p2pshim_config *cfg = config_get();
    uintptr_t a = h, end = h + n;
    bool any = false;
    *np = 0;
    while (a < end) {
        struct snap *s = bounce_find(a, true); /* a tracked (whole) page */
        if (s == NULL) {
            /* Host bytes up to the next tracked page of any snapshot. */
            uintptr_t next = end;
            for (struct snap *t = bounce_head; t; t = t->next)
                if (t->reg_lo > a && t->reg_lo < next)
                    next = t->reg_lo;
            if (!add_piece(pc, np, NULL, a, next))
                return false;
            a = next;
            continue;
        }
        /* An eager snapshot of pinned memory (or of pageable memory that
         * the devices can reach, HMM) vouches for its pages only until GPU
         * work that could write them behind the page tables was issued. */
        bool unseen_writers = !s->lazy && (s->dma || bgpu_pageable_access());
        bool usable = s->ready && !s->ending &&
                      (!unseen_writers ||
                       s->gen == atomic_load_explicit(&bounce_work_gen, memory_order_relaxed)) &&
                      (s->buf.dev == dst_dev || cfg->pair_allowed[s->buf.dev][dst_dev]);
        /* A run of pages of s in one class, in page indices. */
        size_t i = bounce_index(s, a), last = bounce_index(s, s->reg_hi);
        uintptr_t stop_at = end < s->reg_hi ? end : s->reg_hi;
        bool use = usable && servable(s->page[i]);
        if (!use && (!s->ready || s->page[i] == PG_MISSING || s->page[i] == PG_BUSY))
            return false; /* the driver would fault on it */
        size_t j;
        if (use) {
            j = bounce_scan(s->page, i + 1, last, PG_MASK(PG_DIRTY) | PG_MASK(PG_BUSY_DIRTY));
        } else {
            /* From the host up to a page the driver would fault on (the
             * next turn then gives up) or one the snapshot can serve. */
            unsigned stop = PG_MASK(PG_MISSING) | PG_MASK(PG_BUSY);
            if (usable)
                stop |= PG_MASK(PG_CLEAN);
            j = bounce_scan(s->page, i + 1, last, stop);
        }
        uintptr_t run_end = (a & ~(uintptr_t)(pg - 1)) + ((j - i) << bounce_page_shift);
        run_end = run_end < stop_at ? run_end : stop_at;
        if (!add_piece(pc, np, use ? s : NULL, a, run_end))
            return false;
        any = any || use;
        a = run_end;
    }
    return any;
}

/* Lets the pieces' snapshots go; served: the H2D of [h, h + n) took from
 * them, which tells the predictor their outcome (useful unless the CPU had
 * wanted most of the bytes first or rewritten most of what the H2D read).
 * A served pageable eager snapshot whose pages the H2D covered whole ends
 * behind the program (behind.h), its pin handed to that end. */
static void unpin(struct piece *pc, int np, bool served, bool mostly_host, uintptr_t h,
                  size_t n)
{
    struct snap *behind[PIECES_MAX];
    int nbehind = 0;
    bounce_lock();
    for (int i = 0; i < np; i++) {
        struct snap *s = pc[i].s;
        if (s == NULL)
            continue;
        /* A new buffer read first whose bytes still went to the GPU from
         * the snapshot: its fill cost what the D2H would have, and the H2D
         * was saved. No outcome: the key goes on as its other rounds say
         * (a loop of x.cpu().cuda() with a read every other round stays
         * lazy instead of backing off). */
        bool fresh_read = served && s->lazy && s->fresh && s->read_first && !mostly_host;
        if (served && fresh_read)
            s->judged = true;
        else if (served)
            bounce_judge(s, !s->read_first && !mostly_host);
        /* Read first, yet its bytes went to the GPU from the snapshot: the
         * CPU reads this buffer between the copies without writing it. */
        if (served && s->lazy && s->read_first && !mostly_host && !s->fresh)
            bounce_tell_readers(s);
        if (served && bounce_behind_wanted(s, h, n)) {
            s->ending = true;
            behind[nbehind++] = s; /* its pin goes with it */
            continue;
        }
        s->busy--;
        if (served && !s->ending)
            bounce_touch(s);
    }
    pthread_cond_broadcast(&bounce_cv);
    bounce_unlock();
    for (int i = 0; i < nbehind; i++)
        bounce_behind_end(behind[i]);
}

/* Issues the pieces of an H2D of host h to dst in order, on the program's
 * stream: host pieces as H2Ds in the call's flavour, snapshot pieces as
 * device copies after their snapshot. *from_snap: the bytes from
 * snapshots. Stops at the first failure and returns it. */
static CUresult issue(const struct copy_call *call, bool sync, CUdeviceptr dst, uintptr_t h,
                      const struct piece *pc, int np, size_t *from_snap)
{
    CUresult r = CUDA_SUCCESS;
    for (int i = 0; i < np && r == CUDA_SUCCESS; i++) {
        struct snap *s = pc[i].s;
        size_t len = pc[i].hi - pc[i].lo, off = pc[i].lo - h;
        if (s == NULL) {
            r = bgpu_htod(call, sync, dst + off, (const void *)pc[i].lo, len);
            continue;
        }
        if (s->done != NULL)
            bgpu_wait_event(call, s->done);
        r = bgpu_copy(call, dst + off, s->buf.ptr + (pc[i].lo - s->host), len);
        *from_snap += len;
    }
    return r;
}

/* The run log's view of a served H2D's traffic: GPU to GPU, per source. */
static void record_pieces(const struct piece *pc, int np, int dst_dev)
{
    for (int i = 0; i < np; i++) {
        if (pc[i].s == NULL)
            continue;
        char detail[24];
        snprintf(detail, sizeof detail, "%zu", (size_t)(pc[i].hi - pc[i].lo));
        record_event(LOG_EVENT_BOUNCE, pc[i].s->buf.dev, dst_dev, 0, detail);
    }
}

P2PSHIM_HOT static bool serve(const struct copy_call *call, bool sync, CUdeviceptr dst,
                               const void *host, size_t bytes, CUresult *rc)
{
    if (atomic_load_explicit(&bounce_count, memory_order_relaxed) == 0 || bytes == 0 ||
        host == NULL)
        return false;
    uintptr_t h = (uintptr_t)host;
    struct owner_info d;
    if (!resolve_pointer(dst, &d) || d.device < 0 || d.device >= P2PSHIM_MAX_DEVICES ||
        dst < d.base || dst - d.base + bytes > d.size) {
        bounce_host_access(host, bytes, false);
        return false;
    }
    struct piece pc[PIECES_MAX];
    int np = 0;
    bool seen = false;
    bounce_lock();
    for (struct snap *s = bounce_head; s && !seen; s = s->next)
        seen = s->host < h + bytes && h < s->host + s->bytes;
    bounce_unlock();
    if (!seen)
        return false;
    double t0 = bounce_now_us();
    if (bgpu_capturing(call)) {
        /* Captured into a graph, to run later: from the host as it will be
         * then, never from a snapshot that may be gone by then. */
        bounce_host_access(host, bytes, false);
        return false;
    }
    /* Events read and not yet processed (munmap returned) first. */
    uffd_barrier();
    bounce_reap();
    atomic_fetch_add(&bst_seen, 1);
    bounce_lock();
    bool ok = plan(h, bytes, pc, &np, d.device);
    for (int i = 0; ok && i < np; i++) {
        struct snap *s = pc[i].s;
        if (s != NULL && !s->h2d_seen) {
            s->h2d_seen = true;
            s->read_first = s->filled * 2 > (s->reg_hi - s->reg_lo) >> bounce_page_shift;
        }
    }
    bounce_unlock();
    if (ok)
        note_links(call, pc, np, &d, bytes);
    if (!ok) {
        unpin(pc, np, false, false, h, bytes);
        bounce_host_access(host, bytes, false);
        return false;
    }
    double t1 = bounce_now_us();
    size_t from_snap = 0;
    CUresult r = issue(call, sync, dst, h, pc, np, &from_snap);
    cover_links(call, pc, np);
    if (r != CUDA_SUCCESS) {
        /* The original call does it all again, after what was issued. */
        unpin(pc, np, false, false, h, bytes);
        bounce_host_access(host, bytes, false);
        return false;
    }
    for (int i = 0; i < np; i++)
        if (pc[i].s != NULL && (i == 0 || pc[i].s != pc[i - 1].s))
            bgpu_add_use(&pc[i].s->buf, call);
    double t2 = bounce_now_us();
    if (sync)
        r = bgpu_fence(call, true, NULL);
    LOG_DEBUG("bounce: H2D of %zu bytes in %d piece(s): plan %.0f us, issued %.0f us, "
              "wait %.0f us", bytes, np, t1 - t0, t2 - t1, bounce_now_us() - t2);
    if (record_enabled())
        record_pieces(pc, np, d.device);
    unpin(pc, np, true, from_snap * 2 < bytes, h, bytes);
    atomic_fetch_add(&bst_upgraded, 1);
    atomic_fetch_add(&bst_upgraded_bytes, from_snap);
    *rc = r;
    return true;
}

/* Whether a D2H into this host range could ever take a snapshot: the D2H
 * side remembers large D2Hs before it knows the kind of their host memory
 * (watch.h), so a pinned range below the pinned minimum is told apart
 * here, when a remembered D2H is about to gain evidence, and never arms
 * the predictor. */
static bool host_may_bounce(const struct p2pshim_config *cfg, const void *host, size_t bytes)
{
    struct owner_info h;
    if (!resolve_pointer((CUdeviceptr)(uintptr_t)host, &h))
        return bytes >= config_bounce_min(cfg, false);
    return (h.kind == MEM_KIND_HOST_PINNED || h.kind == MEM_KIND_HOST_REGISTERED) &&
           bytes >= config_bounce_min(cfg, true);
}

P2PSHIM_HOT bool bounce_h2d(const struct copy_call *call, bool sync, CUdeviceptr dst, const void *host,
                size_t bytes, CUresult *rc)
{
    bounce_behind_h2d((uintptr_t)host, bytes);
    if (serve(call, sync, dst, host, bytes, rc))
        return true;
    const struct p2pshim_config *cfg = config_get();
    uintptr_t lo;
    size_t len;
    /* The normal way: maybe a seen bounce. Its D2H's host memory is looked
     * up only then, not for every H2D while some D2H is remembered. An H2D
     * smaller than any snapshot worth taking is no evidence, and does not
     * take the predictor's lock (a program's many small H2Ds of indices
     * and scalars). */
    if (config_bounce_on(cfg) && bytes >= CONFIG_BOUNCE_MIN_FLOOR &&
        evidence_h2d_inside(host, bytes, &lo, &len) &&
        host_may_bounce(cfg, (const void *)lo, len))
        evidence_h2d(host, bytes);
    return false;
}
