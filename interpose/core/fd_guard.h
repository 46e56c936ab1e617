/* The shim's own descriptors (the log file, the run log, the
 * userfaultfd): out of the program's way and out of its reach
 * (docs/SECURITY.md "The shim's descriptors").
 *
 * Out of its way: each is moved, close-on-exec, to a high number (the
 * highest free one below the soft RLIMIT_NOFILE, at most 1023), never 0-2,
 * so the program's own open() keeps getting the numbers it would get
 * without the shim. Out of its reach: the close family's wrappers
 * (wrap_fd.c) ask here whether a number is the shim's, and where it is,
 * the program's close, close_range and closefrom leave it alone and its
 * dup2 or dup3 onto it first moves the shim's descriptor elsewhere.
 *
 * A descriptor's owner keeps its number in an _Atomic int of its own,
 * which the registry updates when it moves the descriptor; a use that
 * must not reach a program's file after a move (a write) is bracketed by
 * shim_fd_use and shim_fd_unuse: a move waits for the uses begun before it.
 * Allocates nothing, calls no function of the shim's above it. */
#ifndef P2PSHIM_FD_GUARD_H
#define P2PSHIM_FD_GUARD_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* One descriptor of the shim's, in static storage of its owner (zeroed). */
struct shim_fd {
    _Atomic(_Atomic int *) number; /* the owner's variable; NULL while unregistered */
    const char *what;              /* "the run log", for messages */
    dev_t dev;                     /* what it was opened as (fstat) */
    ino_t ino;
    _Atomic unsigned users;        /* uses in flight (shim_fd_use) */
};

/* Takes fd (open, the shim's) into the registry: moves it high and
 * close-on-exec (the original number is closed), records what it is, and
 * stores its number into *number. Returns the number; -1 when it could
 * not be kept off 0-2 (fd is closed then). A registry that is full (8)
 * keeps the descriptor moved but unguarded. errno is preserved. */
int shim_fd_adopt(struct shim_fd *g, _Atomic int *number, int fd, const char *what);

/* Out of the registry and closed (waits for the uses in flight); *number
 * becomes -1. Nothing when g is not registered. */
void shim_fd_release(struct shim_fd *g);

/* Out of the registry, not closed: the number is no longer the shim's
 * (another file is there now). *number becomes -1. */
void shim_fd_forget(struct shim_fd *g);

/* A use of g's descriptor: its current number (-1: none), which stays the
 * shim's file until shim_fd_unuse (a move waits, at most a second: a
 * signal handler that moves it while its own thread is in a use must not
 * wait for ever). Lock-free. */
int shim_fd_use(struct shim_fd *g);
void shim_fd_unuse(struct shim_fd *g);

/* Whether fd is still the file g was opened as (one fstat). */
bool shim_fd_intact(const struct shim_fd *g, int fd);

/* ---- for the wrappers of the close family (wrap_fd.c) -------------------- */

/* The lowest number registered (INT_MAX when none): a number below it is
 * the program's, with one load and one compare. */
extern _Atomic int shim_fd_lowest;

static inline bool shim_fd_maybe(int fd)
{
    return fd >= atomic_load_explicit(&shim_fd_lowest, memory_order_relaxed);
}

/* Whether [first, last] may hold one of the shim's (one load). */
static inline bool shim_fd_maybe_in(unsigned first, unsigned last)
{
    int low = atomic_load_explicit(&shim_fd_lowest, memory_order_relaxed);
    (void)first;
    return low != INT_MAX && last >= (unsigned)low;
}

/* Whether fd is a descriptor of the shim's now: registered, and still the
 * file that was registered (a number the shim lost to a raw system call
 * is the program's again). */
bool shim_fd_held(int fd);

/* The shim's descriptors in [first, last], ascending, at most max of
 * them, into out; returns how many. */
size_t shim_fd_held_in(unsigned first, unsigned last, int *out, size_t max);

/* Makes the number fd free of the shim's descriptor, moving it elsewhere,
 * so that the caller's dup2/dup3 onto fd replaces nothing of the shim's:
 * 0 when it moved (the old number still refers to the shim's file, until
 * the caller's call replaces it or the caller closes it), 1 when fd is not
 * the shim's, or when this process shares the registry's memory with its
 * owner without sharing its descriptors (a vfork child: its table is its
 * own), -1 with errno EMFILE when no number is free for the move. */
int shim_fd_vacate(int fd);

/* Around fork (the lifecycle table's row, shim.h): the registry's lock
 * held across it; the child's uses in flight forgotten (the threads that
 * made them are not in it) and the child made the owner. */
void shim_fd_fork_prepare(void);
void shim_fd_fork_parent(void);
void shim_fd_fork_child(void);

#endif
