/* Process-wide start-up, the lifecycle table and the re-entry guard.
 *
 * Nothing happens at load time: the first hooked call (never a constructor)
 * parses the configuration, opens the log and installs the fork and exit
 * handlers, so `LD_PRELOAD=libp2pshim.so ls` is exactly `ls`. */
#ifndef P2PSHIM_SHIM_H
#define P2PSHIM_SHIM_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* Once per process, thread-safe, cheap after the first call. */
void shim_init(void);

/* ---- the lifecycle table ------------------------------------------------
 *
 * What each module does at start, around fork, at exit and when a context
 * or a device's primary context goes: one row per module, declared by the
 * module itself (SHIM_LIFE_ROW, in its own .c file) in the linker section
 * p2pshim_life. shim.c names no module: it reads the rows from the section
 * and alone installs the process's fork (pthread_atfork) and exit (atexit)
 * handlers. The rows run in the order of their keys, top to bottom:
 *
 *   SHIM_ROW_BOUNCE          host bounces (bounce/): fills lazy pages with
 *                            driver calls, so it runs before any lock below
 *                            is taken; exits first, filling them for later
 *                            readers while the contexts still exist
 *   SHIM_ROW_ALIAS           aliases of mapped memory (vmm_alias.c), a late
 *                            row: unmapped at exit, after the bounce
 *                            module's work and while the contexts exist;
 *                            its lock, taken before shim_alloc's
 *   SHIM_ROW_RELAY           the pool relay's buffers (relay_scratch.c), a
 *                            late row: its streams waited for and its
 *                            scratch freed at exit while the contexts
 *                            exist; its counters' summary line
 *   SHIM_ROW_LINKS           the shim's links' uses and events (link_life.c):
 *                            its lock, taken before peer.c's; its links are
 *                            forgotten before peer.c forgets the pairs
 *   SHIM_ROW_PEER            enabled pairs (peer.c): its locks
 *   SHIM_ROW_OWNERSHIP       the ownership table (ownership.c): its locks
 *   SHIM_ROW_RECORD          the run log (record.c): opened at start in
 *                            every mode, drained and footed at exit after
 *                            the bounce module's last work
 *   SHIM_ROW_THREAD_ID       the cached thread id (shim.c), a late row
 *   SHIM_ROW_STATS           the exit summary's copy lines (stats.c)
 *   SHIM_ROW_ALLOC           the shim's own memory (shim_alloc.c): its lock,
 *                            taken after the others' (the rows above
 *                            allocate under theirs)
 *   SHIM_ROW_FDS             the shim's descriptors (fd_guard.c): the
 *                            registry's lock, taken last (the rows above
 *                            open and close under theirs)
 *   SHIM_ROW_BOUNCE_SUMMARY  the bounce module's summary line, after them
 *   SHIM_ROW_BOUNCE_WARM     the bounce module's tables, touched at start only
 *
 * At the process's first hooked call the start-up rows' at_init runs (in
 * every mode), then, unless the mode is off, their at_start. fork_prepare
 * runs top to bottom; fork_parent and fork_child bottom to top (locks are
 * released in the reverse of the order taken), then every row's reset (the
 * child counts its own traffic only). At exit every row's at_exit runs top
 * to bottom, then every row's report top to bottom: the summary is the
 * last thing the shim writes. before_ctx_gone, ctx_gone and device_gone
 * run top to bottom for every row linked in, started or not (a module
 * with nothing to forget returns at once).
 *
 * Start-up rows (late false) are in the table from the start, run by the
 * handlers shim_init installs. A late row joins when its module starts
 * (shim_life_start: the bounce module at its first predicted bounce): a
 * process that never bounces runs none of its fork and exit work. Such a
 * row gets fork and exit handlers of its own, installed when it joins, as
 * libc orders handlers: they run before (prepare, exit) or after (parent,
 * child) those of libraries that started in between, the CUDA runtime's
 * included (its teardown destroys the contexts the bounce module's exit
 * work needs), and before or after the start-up rows' ones: the late rows
 * with prepare or exit work sit above the start-up rows, so the table's
 * order holds. A late row that starts before shim_init counts as a
 * start-up row. */
enum shim_row {
    SHIM_ROW_BOUNCE,
    SHIM_ROW_ALIAS,
    SHIM_ROW_RELAY,
    SHIM_ROW_LINKS,
    SHIM_ROW_PEER,
    SHIM_ROW_OWNERSHIP,
    SHIM_ROW_RECORD,
    SHIM_ROW_THREAD_ID,
    SHIM_ROW_STATS,
    SHIM_ROW_ALLOC,
    SHIM_ROW_FDS,
    SHIM_ROW_BOUNCE_SUMMARY,
    SHIM_ROW_BOUNCE_WARM,
    SHIM_ROW_COUNT
};

struct CUctx_st; /* CUcontext (cuda.h) */

/* Any column may be NULL. */
struct shim_life_row {
    enum shim_row order; /* its place; one row per place (the first linked counts) */
    bool late;           /* joins at shim_life_start, not at start-up */
    const char *name;
    void (*at_init)(void);      /* the process's first hooked call, every mode */
    void (*at_start)(void);     /* then, unless the mode is off, in its thread: memory the
                                 * module's first copy would touch is touched now, so
                                 * that no copy pays its first page faults */
    void (*fork_prepare)(void); /* take the module's locks */
    void (*fork_parent)(void);  /* release them */
    void (*fork_child)(void);   /* release or re-create them; forget the parent's state */
    void (*at_exit)(void);      /* last work, before any report */
    void (*report)(void);       /* exit summary lines (log.h, info level) */
    void (*reset)(void);        /* forked child: zero what report reads */
    /* A context may go (ctx; NULL: every context of device dev, a primary
     * context's reset or last release): what the module holds there is
     * given back while the context still works. */
    void (*before_ctx_gone)(struct CUctx_st *ctx, int dev);
    void (*ctx_gone)(struct CUctx_st *ctx); /* it went: forget what was in it */
    void (*device_gone)(int dev);            /* dev's primary context was reset */
};

/* Declares a module's row: `SHIM_LIFE_ROW(row) = {.order = ..., ...};`.
 * used and retain keep it through link-time optimisation and
 * --gc-sections; a section whose name is a C identifier gets
 * __start_/__stop_ symbols from the linker (hidden, as the version script
 * makes every name it does not export). The explicit alignment keeps the
 * rows of all files one array. */
#if defined(__has_attribute) && __has_attribute(retain)
#define SHIM_LIFE_RETAIN retain,
#else
#define SHIM_LIFE_RETAIN
#endif
#define SHIM_LIFE_ROW(ident)                                                                       \
    static const struct shim_life_row ident __attribute__((                                       \
        used, SHIM_LIFE_RETAIN section("p2pshim_life"), aligned(_Alignof(struct shim_life_row))))

/* A late row's module has started: its row joins the table (once; later
 * calls return at once). Thread-safe; may run before shim_init. */
void shim_life_start(enum shim_row row);

/* The context columns of every row, top to bottom (see above); the
 * caller holds the guard (shim_begin). */
void shim_life_before_ctx_gone(struct CUctx_st *ctx, int dev);
void shim_life_ctx_gone(struct CUctx_st *ctx);
void shim_life_device_gone(int dev);

/* fork's handlers for the forks that run none (_Fork, a fork through
 * syscall(): wrap_syscall.c): every row's fork_prepare top to bottom;
 * then in the parent every fork_parent, in the child every fork_child,
 * bottom to top, and every reset: what the handlers shim_init installs
 * and those of the late rows do for fork. Nothing before shim_init. */
void shim_fork_prepare(void);
void shim_fork_parent(void);
void shim_fork_child(void);

/* True while this thread is inside the shim's own processing: a hook
 * reached from there passes straight through. */
bool shim_reentered(void);
void shim_guard_enter(void);
void shim_guard_leave(void);

/* Enters the shim for one hooked call: initialises once, then false when
 * this thread is already inside it (the wrapper then only passes
 * through), else true with the guard taken until shim_end. */
bool shim_begin(void);
void shim_end(void);

/* Quiet sections: where a program thread may hold a lock that the shim's
 * userfaultfd handler needs to resolve a fault (the driver's own locks,
 * inside any driver call; the bounce module's locks; a snapshot's setup,
 * whose pages the handler leaves waiting until it is done), every
 * asynchronous signal is blocked. A signal handler of the program's that
 * touches a lazy page there would wait for the handler thread, which
 * would wait for the interrupted thread: a hang. Blocked, a signal is
 * delivered at the section's end instead, not lost. Synchronous signals
 * (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS) stay open: blocked,
 * a fault would kill. Sections nest (only the outermost pair costs the
 * two system calls) and are async-signal-safe.
 *
 * shim_quiet_begin(false) opens one only once the bounce module has
 * asked for them (shim_quiet_enable, before its first snapshot): a
 * program that never bounces pays nothing. always: even before then (a
 * lock that the handler thread takes). The answer goes to the matching
 * shim_quiet_end. shim_begin and shim_end hold one across the shim's
 * processing; every wrapper of a driver function holds one across the
 * driver's call too (SHIM_QUIET_SCOPE). */
void shim_quiet_enable(void);
bool shim_quiet_begin(bool always);
void shim_quiet_end(bool begun);
/* A quiet section (shim_quiet_begin(false)) from here to the end of the
 * enclosing block, however it is left: a wrapper's call of the driver,
 * its early returns included. */
void shim_quiet_scope_end(const bool *begun);
#define SHIM_QUIET_SCOPE()                                                    \
    bool shim_quiet_scope_ __attribute__((cleanup(shim_quiet_scope_end))) =   \
        shim_quiet_begin(false)

/* This thread's kernel id, cached per thread (reset in a fork child). */
uint32_t shim_thread_id(void);

#endif
