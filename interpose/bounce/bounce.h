/* Host-bounced copies, the bounce module's front door (its files are in
 * interpose/bounce/; nothing else of it is seen outside). A device-to-host
 * copy whose host buffer later feeds a host-to-device copy becomes a
 * snapshot of the source on its own GPU plus one peer (or on-GPU) copy,
 * with every byte the program can see kept exactly as without the shim.
 *
 * The life of a bounce: predict -> snapshot -> serve -> end.
 *
 * Predict (predict.h): a D2H is bounced only on evidence, its host range
 * or its device source having shown a D2H followed by an H2D of the same
 * bytes; other D2Hs go the normal way and are only remembered (a small
 * fixed table, no allocation, no driver call). Nothing is opened,
 * allocated or registered before the first predicted D2H. A snapshot that
 * turns out wasted backs its keys off exponentially.
 *
 * Snapshot: the predicted device-to-host copy (D2H) takes a snapshot of the source into a
 * shim-owned device buffer, on the program's stream, where the D2H would
 * have run. Then, by the host memory's kind:
 *   lazy (pageable, private anonymous memory): the D2H does not move the
 *     bytes. The fully covered pages are dropped and registered with
 *     userfaultfd (MISSING|WP); the partial head and tail pages are copied
 *     from the snapshot. A CPU touch (or a system call's) fills pages from
 *     the snapshot, write-protected, in units that double with each fault
 *     of the snapshot; a write marks a page dirty.
 *   eager (pinned or registered memory, where DMA ignores page tables):
 *     the D2H writes the host from the snapshot as usual; the range is
 *     write-protected so that CPU writes mark pages dirty.
 * Either way a snapshot takes at most BOUNCE_FAULT_BUDGET CPU touches
 * (bounce_int.h); past them it is given up at a cost that does not grow
 * with its size (every page unprotected in one call, the rest filled, the
 * host's): docs/BOUNCE.md.
 * The host-to-device copy (H2D) from a range holding clean snapshot pages
 * copies those parts from the snapshot, on the program's stream, in the
 * same legacy/per-thread flavour; dirty parts and bytes no snapshot holds
 * go the normal way, in order, on the same stream.
 *
 * Sync variants complete before returning (lazy D2H variants, sync or not,
 * wait for the snapshot: a pageable D2H returns only once complete). The
 * shim's driver calls go straight to the driver, push and pop contexts,
 * and never become the program's error: any failure before the program's
 * bytes are touched falls back to the original call.
 *
 * A snapshot ends when its range is written by a new D2H, freed (free,
 * realloc, cuMemFreeHost, cuMemHostUnregister), unmapped or dropped
 * (userfaultfd UNMAP/REMOVE; REMAP moves it along), its context is reset
 * or destroyed, before fork (lazy pages are materialised first), at exit,
 * or when evicted (LRU within P2PSHIM_BOUNCE_BUDGET per device; a failed
 * allocation of the program's frees what the shim holds on that device).
 *
 * Thread-safe. One mutex guards the table; it is never held across a
 * driver call, and program threads hold it only with asynchronous signals
 * blocked (table.h: the userfaultfd handler takes it too). */
#ifndef P2PSHIM_BOUNCE_H
#define P2PSHIM_BOUNCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "copy_call.h"
#include "shim_cuda.h"

/* True while any snapshot exists (one relaxed atomic load). */
bool bounce_active(void);

/* The program is about to close or replace descriptors of which some may
 * be the driver's (closefrom, close_range, a dup2 sweep, the close of a
 * character device): once they are gone the driver can fill no lazy page,
 * so every lazy snapshot's missing pages are filled now, while it still
 * works (docs/SECURITY.md, "The shim's descriptors": the driver's too). Eager and pinned
 * snapshots hold their bytes in host memory already. Nothing from the
 * shim's own fault handler; cheap when no snapshot exists. */
void bounce_before_fds_go(void);
/* Whether bounce_before_fds_go has anything to do on this thread: a
 * snapshot exists and this is not the shim's fault handler. Lock-free. */
bool bounce_fds_watched(void);

/* The D2H hooks: true when the shim ran its replacement (then *rc is the
 * program's answer), false when the wrapper must call the original. sync:
 * a synchronous variant (call->issue.stream is then meaningless). */
bool bounce_d2h(const struct copy_call *call, bool sync, void *host, CUdeviceptr dev,
                size_t bytes, CUresult *rc);
bool bounce_h2d(const struct copy_call *call, bool sync, CUdeviceptr dev,
                const void *host, size_t bytes, CUresult *rc);

/* The driver is about to read (write false) or write every byte (write
 * true) of host memory by a path the shim does not replace (cuMemcpy with
 * a host end, batches, a D2H left to the original): lazy pages there are
 * filled first, in this thread, so that the driver never faults on them;
 * a write ends the snapshots it overlaps. Cheap when no snapshot exists. */
void bounce_host_access(const void *host, size_t bytes, bool write);

/* The range is about to change in ways a snapshot cannot follow (a 2D/3D
 * write that skips bytes, cuMemHostRegister pinning it, realloc): the
 * snapshots overlapping it end, every lazy page filled first. */
void bounce_host_keep(const void *host, size_t bytes);

/* Host memory given back (free, cuMemFreeHost, cuMemHostUnregister): the
 * snapshots overlapping it end, without filling pages that the range
 * covers whole. size 0: the range is unknown (free): ends the snapshot
 * whose range starts at host, if any. A size given (memory the driver
 * frees or unpins): no registration of the range is left behind either
 * (dormant.h, dormant_release). */
void bounce_host_release(const void *host, size_t bytes);

/* Holders of a page the shim cannot see (holders.c; docs/SECURITY.md):
 * [host, host+bytes) is about to be held by something that reads or
 * writes its pages past the page tables (an io_uring fixed buffer, pages
 * vmspliced into a pipe): the snapshots over it end (lazy pages filled,
 * write-protection lifted) and no snapshot is taken there again. The
 * process form: any page may be (/proc/self/mem, an RDMA or VFIO device
 * opened): every snapshot ends, none is taken again. */
void bounce_holder_range(const void *host, size_t bytes);
void bounce_holder_process(void);
/* Their first half alone: the marks, lock-free and without starting the
 * shim (a program that never calls CUDA opens /proc/self/mem or
 * registers io_uring buffers unchanged); the wrappers call the whole
 * functions only while a snapshot exists (bounce_active). */
void bounce_holder_mark_range(const void *host, size_t bytes);
void bounce_holder_mark_process(void);

/* After a successful mincore(addr, len, vec): lazy pages there marked
 * resident, as they would be without the shim. Nothing when no snapshot
 * exists. */
void bounce_mincore_resident(const void *addr, size_t len, unsigned char *vec);

/* GPU work was issued that may write host memory through a mapped
 * pointer the shim cannot see (a kernel, a graph, a stream memory
 * operation): eager snapshots taken before it no longer vouch for their
 * pages (their H2D goes the normal way). One relaxed load when no
 * snapshot exists. */
void bounce_gpu_work(void);

/* The GPU is about to write [dst, dst+bytes) (a memset): the snapshots
 * over it end. */
void bounce_gpu_writes(CUdeviceptr dst, size_t bytes);

/* A context reset or destroyed (ctx NULL with dev >= 0: every context of
 * dev; dev < 0: every context): snapshots held there are materialised
 * and freed first, then the idle buffers, staging memory and streams the
 * shim made there. */
void bounce_ctx_gone(CUcontext ctx, int dev);

/* The program's allocation on dev failed for lack of memory: frees every
 * snapshot held there (materialising lazy pages). Returns true when
 * anything was freed (the caller then retries once). */
bool bounce_release_device(int dev);

/* Observe mode (no snapshot, no change): a D2H of bytes from device
 * src_dev into host, and an H2D from host to dst_dev; an H2D over a
 * remembered D2H is reported as a candidate (a "would-bounce" event in the
 * run log, a "summary bounce-candidates" line per device pair). */
void watch_d2h(const void *host, size_t bytes, int src_dev);
void watch_h2d(const void *host, size_t bytes, int dst_dev);

struct bounce_stats {
    uint64_t d2h_lazy, d2h_eager;  /* D2H copies that took a snapshot */
    uint64_t seen, upgraded;       /* H2D copies from snapshot ranges; served (partly) */
    uint64_t upgraded_bytes;       /* bytes an H2D took from a snapshot */
    uint64_t lazy_bytes;           /* bytes a D2H left on the device */
    uint64_t materialised_bytes;   /* of those, filled into host memory later */
    uint64_t faults;               /* page faults served (missing pages, protected writes) */
    uint64_t evicted, fallbacks;   /* snapshots evicted; D2H left to the original */
    uint64_t candidates;           /* D2H copies the predictor was asked about */
    uint64_t predicted, skipped;   /* of those: predicted; left alone while backing off */
    uint64_t useful, wasted;       /* snapshot outcomes told to the predictor */
    uint64_t seen_plain;           /* H2D copies matching a D2H that went the normal way */
    uint64_t handler_ns;           /* time the fault handler spent on faults */
    uint64_t abandoned;            /* snapshots given up past their fault budget */
    uint64_t faults_max;           /* the most CPU touches one snapshot took */
    uint64_t holders;              /* predicted D2H copies left alone: a holder may exist */
    uint64_t ended_behind;         /* snapshots ended on the shim's thread after their H2D */
};
/* The counters; their exit summary line ("summary bounce candidates=N
 * ...") is registered with stats.h by the module itself. */
void bounce_get_stats(struct bounce_stats *out);

#endif
