/* Internals shared by the stand-in driver's source files.
 *
 * Locking: one global mutex, sd_mu. Every exported function takes it on
 * entry (sd_enter) and drops it on return (sd_leave); every sd_* function
 * below expects it held, unless its comment says otherwise. Exported
 * functions never call each other, so the lock is never taken twice.
 *
 * Handles: contexts, streams, events, pools and VMM handles are structs of
 * ours. A handle from the program is never dereferenced before it has been
 * found in our lists, so a stale or bogus handle gives an error code, not a
 * crash. Contexts are never freed before a reload (a destroyed context
 * stays listed, marked dead), so a stale context is recognised as such. */
#ifndef SD_INTERNAL_H
#define SD_INTERNAL_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "standin.h"

#define SD_API __attribute__((visibility("default")))

#define SD_MAX_DEV 8
#define SD_GRANULE ((size_t)2 << 20)   /* VMM granularity, large alignment */
#define SD_ALIGN ((size_t)512)         /* alignment of small allocations */
#define SD_DRIVER_VERSION 13000

/* Under ThreadSanitizer only the address ranges it expects may be mapped:
 * fixed placement hints are dropped (see sd_map_hinted). */
#if defined(__SANITIZE_THREAD__)
#define SD_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SD_TSAN 1
#endif
#endif
#ifndef SD_TSAN
#define SD_TSAN 0
#endif

/* ---- configuration (sd_state.c) ---- */
struct sd_config {
    int ndev;
    int phys[SD_MAX_DEV];   /* the machine's device behind each ordinal:
                             * CUDA_VISIBLE_DEVICES as a list of indices
                             * (the UUID, PCI bus and name follow it) */
    unsigned char can[SD_MAX_DEV][SD_MAX_DEV];   /* topology: i may access j */
    unsigned char fail[SD_MAX_DEV][SD_MAX_DEV];  /* injected enable failures */
    unsigned char corrupt[SD_MAX_DEV][SD_MAX_DEV]; /* STANDIN_LINK_CORRUPT: peer
                              * copies between i and j get wrong bytes */
    unsigned char slow[SD_MAX_DEV][SD_MAX_DEV];  /* STANDIN_LINK_SLOW: peer copies
                              * between i and j are slower than staged ones */
    int max_peers;
    size_t arena_bytes;
    int eager_nonblocking;   /* STANDIN_EAGER_NONBLOCKING=1: work on a non-blocking
                              * stream runs at issue, as soon as its dependencies
                              * allow (a GPU may start it before older work of
                              * other streams): exposes a missing wait */
    int leak_report;         /* STANDIN_LEAK_REPORT=1: sd_leak_report at every
                              * context teardown and at unload */
    int driver_fd;           /* STANDIN_DRIVER_FD=1: cuInit opens a device file, as
                              * the driver opens /dev/nvidiactl and its kin, and
                              * every later call fails once the program has closed
                              * or replaced it (sd_driver_fd_lost) */
};

/* ---- contexts ---- */
struct CUctx_st {
    struct CUctx_st *next_all;   /* every context since the last reload */
    uint64_t id;
    int dev;
    int primary;
    /* Non-primary: between cuCtxCreate and cuCtxDestroy. Primary: retained
     * at least once and not released to zero (the handle itself is kept
     * for the device's lifetime, as the real driver keeps it). */
    int alive;
    int refcount;                /* primary only */
    unsigned flags;
    struct CUstream_st *legacy;  /* the legacy default stream, always there */
    struct CUctx_st **peers;     /* contexts this one enabled access to */
    int npeers, cap_peers;
};

/* ---- streams and queued operations (sd_stream.c; the exported stream
 * functions in sd_stream_api.c, events in sd_event.c) ---- */
enum sd_stream_kind { SD_STREAM_LEGACY, SD_STREAM_PTDS, SD_STREAM_USER };

enum sd_op_kind { SD_OP_COPY, SD_OP_MEMSET, SD_OP_RECORD, SD_OP_WAIT, SD_OP_WAIT_VALUE };

/* A strided 3D copy between host-addressable bytes (every simulated memory
 * is host memory). Row r of slice z starts at base + z*slice + r*pitch. */
struct sd_xfer {
    char *dst;
    const char *src;
    size_t width, height, depth;
    size_t dpitch, dslice, spitch, sslice;
    char *snapshot;   /* owned copy of the source, read at issue (or NULL) */
    int corrupt;      /* a peer copy over a STANDIN_LINK_CORRUPT link: bytes
                       * are flipped as they land */
};

struct sd_op {
    struct sd_op *next;
    uint64_t seq;     /* global issue order */
    enum sd_op_kind kind;
    struct sd_xfer x;                              /* SD_OP_COPY */
    char *mdst; size_t mpitch, mwidth, mheight;    /* SD_OP_MEMSET */
    unsigned mvalue; int melem;
    uint64_t wait_stream, wait_seq;                /* SD_OP_WAIT */
    const uint32_t *wv_addr; uint32_t wv_value;    /* SD_OP_WAIT_VALUE: the */
    unsigned wv_cond;                              /* stream holds until the
                                                    * word at wv_addr meets
                                                    * cond (cuStreamWaitValue32) */
    int captured;     /* issued to a capturing stream: part of a graph, not run */
};

struct CUstream_st {
    struct CUstream_st *next;
    uint64_t id;
    struct CUctx_st *ctx;
    enum sd_stream_kind kind;
    unsigned flags;          /* CU_STREAM_NON_BLOCKING or 0 */
    int priority;
    uint64_t thread;         /* SD_STREAM_PTDS: owning thread's key */
    struct sd_op *head, *tail;
    int capturing;           /* cuStreamBeginCapture .. cuStreamEndCapture */
    uint64_t sim_ns;         /* the time model's clock: the simulated duration
                              * of the async copies issued to it so far */
};

struct CUevent_st {
    struct CUevent_st *next;
    struct CUctx_st *ctx;
    unsigned flags;
    int recorded;
    uint64_t stream_id, seq; /* the record operation */
    uint64_t sim_ns;         /* its stream's time-model clock at the record */
};

/* ---- memory (sd_memory.c, sd_vmm.c) ---- */
enum sd_kind {
    SD_MEM_DEVICE,      /* cuMemAlloc, cuMemAllocPitch */
    SD_MEM_POOL,        /* cuMemAllocAsync, cuMemAllocFromPoolAsync */
    SD_MEM_VMM,         /* a cuMemMap mapping */
    SD_MEM_MANAGED,     /* cuMemAllocManaged */
    SD_MEM_PINNED,      /* cuMemAllocHost, cuMemHostAlloc */
    SD_MEM_REGISTERED,  /* cuMemHostRegister */
    SD_MEM_ARRAY        /* a CUDA array's storage (sd_array.c): no lookup finds it */
};

struct CUmemPoolHandle_st {
    struct CUmemPoolHandle_st *next;
    int dev;
    int is_default;
    CUmemAccess_flags access[SD_MAX_DEV];
    uint64_t access_sets;     /* successful cuMemPoolSetAccess calls */
};

/* A cuMemCreate handle: a memfd holding the physical pages. */
struct sd_vmh {
    struct sd_vmh *next;
    int dev;
    size_t size;
    int fd;
    int refs;         /* cuMemCreate's and cuMemRetainAllocationHandle's,
                       * less cuMemRelease's */
    int released;     /* refs reached 0: the handle is no longer valid */
    int maps;
};

struct sd_alloc {
    uintptr_t base;
    size_t size;          /* what the program asked for (pitch * height) */
    size_t footprint;     /* what it occupies in its arena, or 0 */
    enum sd_kind kind;
    int dev;              /* owning device; -1 for host and managed memory */
    int arena;            /* arena index (device ordinal, SD_ARENA_MANAGED), -1 */
    struct CUctx_st *ctx; /* allocating context (NULL for mappings) */
    struct CUmemPoolHandle_st *pool;
    struct sd_vmh *vmh;   /* SD_MEM_VMM */
    CUmemAccess_flags access[SD_MAX_DEV];   /* SD_MEM_VMM: cuMemSetAccess */
    uint64_t access_sets; /* SD_MEM_VMM: successful cuMemSetAccess calls on it */
    unsigned flags;
    uint64_t buffer_id;
    char *dma_view;       /* SD_MEM_PINNED: a second mapping of the same pages,
                           * through which the "GPU" writes (DMA bypasses the
                           * program's page tables, its protections included) */
};
#define SD_ARENA_MANAGED SD_MAX_DEV

struct sd_arena {
    char *base;
    size_t size;
    size_t used;
};

/* ---- the global state ---- */
struct sd_state {
    int initialized;
    struct sd_config cfg;
    uint64_t generation;            /* bumped by a reload */
    struct CUctx_st *primary[SD_MAX_DEV];
    struct CUmemPoolHandle_st *default_pool[SD_MAX_DEV];
    struct CUctx_st *ctxs;
    struct CUstream_st *streams;
    struct CUevent_st *events;
    struct CUmemPoolHandle_st *pools;
    struct sd_vmh *vmhs;
    struct sd_arena arena[SD_MAX_DEV + 1];   /* devices, then managed */
    struct sd_alloc *allocs;        /* sorted by base, disjoint */
    size_t nallocs, cap_allocs;
    uint64_t next_id;
    uint64_t seq;
    uint64_t pending;
    struct standin_stats stats;
    size_t vmm_bytes[SD_MAX_DEV];
};

extern struct sd_state sd;
extern pthread_mutex_t sd_mu;

/* Entry and exit of every exported driver function: takes the lock,
 * counts the call under the function's exact name, and (need_init) fails
 * with CUDA_ERROR_NOT_INITIALIZED before cuInit. sd_leave drops the lock
 * and returns r. */
CUresult sd_enter(const char *fn, int need_init);
/* Loads the CUDA_INJECTION64_PATH tool, once (sd_procaddr.c). */
void sd_load_injection(void);
CUresult sd_leave(CUresult r);
/* STANDIN_DRIVER_FD: opens the device file at cuInit (lock held), and
 * whether it is gone since (closed, or its number now names another
 * file): then every call needing initialisation answers
 * CUDA_ERROR_UNKNOWN. */
void sd_driver_fd_open(void);
int sd_driver_fd_lost(void);
#define SD_BODY(expr)                                  \
    do {                                               \
        CUresult r_ = sd_enter(__func__, 1);           \
        if (r_ == CUDA_SUCCESS)                        \
            r_ = (expr);                               \
        return sd_leave(r_);                           \
    } while (0)

/* Named counters: calls per exported name, lookups per requested name. */
void sd_count(int table, const char *name);
uint64_t sd_counter(int table, const char *name);
void sd_counters_clear(void);
#define SD_COUNT_CALLS 0
#define SD_COUNT_LOOKUPS 1

/* sd_state.c */
void sd_read_config(struct sd_config *cfg);
void sd_setup(void);          /* after cuInit: arenas, primary contexts, pools */
void sd_teardown_all(void);   /* everything setup built, and every handle */
uint64_t sd_thread_key(void); /* a small unique number per thread */
int sd_valid_dev(CUdevice d);
/* The calling thread's current context, or NULL. */
struct CUctx_st *sd_current_raw(void);
/* The current context, checked: CUDA_ERROR_INVALID_CONTEXT when none,
 * CUDA_ERROR_CONTEXT_IS_DESTROYED when it was destroyed or released. */
CUresult sd_current(struct CUctx_st **out);
/* 1 if c is a live context of ours. */
int sd_ctx_live(struct CUctx_st *c);
/* 1 if peer access is enabled from a to b or from b to a. */
int sd_peer_either(struct CUctx_st *a, struct CUctx_st *b);
/* 1 if some context of device dev has access enabled to context c. */
int sd_dev_has_peer_to(int dev, struct CUctx_st *c);
/* Destroys what a context owns (a cuCtxDestroy or a primary reset). */
void sd_ctx_clear(struct CUctx_st *c);
struct CUctx_st *sd_ctx_new(int dev, int primary);
int sd_peer_has(struct CUctx_st *from, struct CUctx_st *to);
int sd_peer_add(struct CUctx_st *from, struct CUctx_st *to);
void sd_peer_remove(struct CUctx_st *from, struct CUctx_st *to);
/* The calling thread's context stack. */
int sd_tls_push(struct CUctx_st *c);          /* 0 when full */
struct CUctx_st *sd_tls_pop(void);            /* NULL when empty */
void sd_tls_set_top(struct CUctx_st *c);      /* cuCtxSetCurrent */

/* sd_stream.c */
CUresult sd_stream_resolve(CUstream h, int per_thread, struct CUstream_st **out);
struct CUstream_st *sd_ptds(struct CUctx_st *c, int create);
struct CUstream_st *sd_stream_new(struct CUctx_st *c, enum sd_stream_kind k,
                                  unsigned flags, int prio);
void sd_stream_free(struct CUstream_st *s);   /* unlinks; drops its ops */
struct sd_op *sd_op_new(enum sd_op_kind k);
void sd_enqueue(struct CUstream_st *s, struct sd_op *op);
/* Runs the operations of s up to seq limit, each after its dependencies.
 * 1 when all of them ran; 0 when a value wait that does not hold yet
 * (cuStreamWaitValue32), in s or in a dependency, stopped it: what
 * follows it stays queued, as on a GPU. */
int sd_run_until(struct CUstream_st *s, uint64_t limit);
/* sd_run_until, blocking as a synchronising call of the driver does: while
 * a value wait holds the work, the lock is let go for a millisecond at a
 * time (another thread may write the value). Returns when it all ran or
 * the stream is gone. */
void sd_block_until(struct CUstream_st *s, uint64_t limit);
/* Runs the streams' work in issue order; a stream held by a value wait is
 * dropped from the set (its entry set to NULL). */
void sd_flush_set(struct CUstream_st **set, size_t n);
void sd_flush_ctx(struct CUctx_st *c, int include_nonblocking);
void sd_flush_all(void);
/* Flushes what a synchronous call of the legacy (per_thread 0) or the
 * per-thread (1) variant must wait for, given the contexts it touches
 * (NULL entries ignored), and runs op on the stream it belongs to: the
 * current context's legacy or per-thread stream. */
void sd_sync_run(struct CUctx_st *cur, struct CUctx_st **touch, size_t ntouch,
                 int per_thread, struct sd_op *op);
void sd_streams_drop_ctx(struct CUctx_st *c);
/* The stream with this id, or NULL (an event's or a wait's stream). */
struct CUstream_st *sd_stream_by_id(uint64_t id);
/* The stream the program created as h (SD_STREAM_USER), or NULL. */
struct CUstream_st *sd_user_stream(CUstream h);

/* sd_memory.c */
/* mmap of anonymous memory at hint when that range is free, anywhere
 * otherwise; NULL on failure. */
void *sd_map_hinted(uintptr_t hint, size_t size, int prot);
void sd_arenas_map(void);
void sd_arenas_unmap(void);
struct sd_alloc *sd_lookup(uintptr_t p);
/* sd_stream.c, STANDIN_EAGER_NONBLOCKING: runs what the non-blocking
 * streams hold, each operation after its dependencies (at the end of every
 * call). */
void sd_run_nonblocking(void);
/* Where the "GPU" writes n bytes at p: pinned memory through its DMA view,
 * anything else in place. */
char *sd_dma_dst(char *p, size_t n);
void sd_free_ctx_allocs(struct CUctx_st *c);
void sd_free_all_allocs(void);
CUresult sd_alloc_in_arena(int arena, size_t size, size_t *footprint, uintptr_t *out);
struct sd_alloc *sd_insert_alloc(const struct sd_alloc *a);
void sd_remove_alloc(struct sd_alloc *a);
int sd_mem_on_device(const struct sd_alloc *a);
/* 1 if p lies in memory the stand-in manages (an arena or the VMM region),
 * allocated or not: an unallocated address there is a bad device pointer,
 * not pageable host memory. */
int sd_owned_region(uintptr_t p);

/* sd_pool.c */
/* Checks one access descriptor against device `owner`'s memory. */
CUresult sd_check_access_desc(const CUmemAccessDesc *d, int owner);

/* sd_vmm.c; sd_array.c's and sd_pool.c's parts of setup and teardown */
void sd_arrays_free(void);     /* sd_array.c: every array handle (teardown) */
void sd_vmm_init(void);
void sd_vmm_fini(void);
struct CUmemPoolHandle_st *sd_pool_new(int dev, int is_default);   /* sd_pool.c */
void sd_pools_free(void);                                            /* sd_pool.c */
int sd_vmm_contains(uintptr_t p);
/* The cuMemAddressReserve range holding ptr (its base; 0 when none). */
uintptr_t sd_vmm_range(uintptr_t ptr, size_t *size);
/* Whether [p, p+n), from the mapping a that holds p, lies in mappings end
 * to end (every byte mapped): the driver copies over such a run as over
 * one range. */
int sd_vmm_span_mapped(const struct sd_alloc *a, uintptr_t p, size_t n);
/* Whether every mapping that [p, p+n) touches lets device dev in (its
 * access list). */
int sd_vmm_span_reachable(uintptr_t p, size_t n, int dev);

/* sd_account.c: path accounting for one copy of `bytes` bytes. */
/* Counts a copy in its class (standin_stats) and returns its simulated
 * duration in the time model: a fixed 2 us per copy plus the bytes at the
 * class's speed, in GB/s (bytes per ns): peer 400 (5 over a
 * STANDIN_LINK_SLOW link), staged 40, host 25, same device 1000. Async
 * copies add it to their stream's clock, which cuEventElapsedTime reads. */
/* The stand-in CUPTI's observer (standin.h), when one is set. */
void sd_observe_enter(const char *fn);
void sd_observe_copy(enum standin_path path, uint64_t bytes, int src_dev, int dst_dev,
                     uint64_t ns);
uint64_t sd_account(const struct sd_xfer *x, const struct sd_alloc *dst,
                    const struct sd_alloc *src);
/* 1 when the copy x between the two would be a peer copy over a
 * STANDIN_LINK_CORRUPT link. */
int sd_link_corrupts(const struct sd_xfer *x, const struct sd_alloc *dst,
                     const struct sd_alloc *src);
/* Operand checks. Known: [p, p+span) inside one allocation, or over
 * mappings (cuMemMap) that lie end to end, else CUDA_ERROR_INVALID_VALUE;
 * *out is the allocation holding p. Any: the same, except that memory
 * outside the stand-in's regions is pageable host memory (*out = NULL). */
CUresult sd_known_operand(uintptr_t p, size_t span, struct sd_alloc **out);
CUresult sd_any_operand(uintptr_t p, size_t span, struct sd_alloc **out);

/* sd_control.c: prints what is alive in c (NULL: everywhere), by kind,
 * on stdout (through stdio: in order with the program's own output). */
void sd_leak_report(const struct CUctx_st *c, const char *when);

/* sd_procaddr.c */
const char *sd_error_name(CUresult r);

#endif /* SD_INTERNAL_H */
