/* userfaultfd for the bounce module (bounce.h): one descriptor for the
 * process, opened on first need, and one handler thread that reads it and
 * hands each message to the callbacks given to uffd_open. Knows nothing of
 * CUDA.
 *
 * The descriptor is opened without UFFD_USER_MODE_ONLY: faults raised by
 * the kernel on the program's behalf (read(2) into a lazy page, write(2)
 * from one, a pipe, O_DIRECT) must reach the handler like CPU loads, or
 * those calls would fail with EFAULT. Where only a user-mode descriptor
 * can be had (not root, vm.unprivileged_userfaultfd=0), or none at all
 * (seccomp, containers), uffd_open fails and says so once at debug level.
 *
 * Events: UNMAP, REMOVE and REMAP are asked for (FORK is not: a child gets
 * no registrations, see bounce.h). The kernel lets munmap return as soon as
 * the handler has READ the event, before it is processed; uffd_barrier
 * closes that window for the caller. */
#ifndef P2PSHIM_UFFD_H
#define P2PSHIM_UFFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct uffd_ops {
    /* A fault on the page at addr (page aligned), in the handler thread.
     * It must resolve the fault: uffd_copy, uffd_zero, uffd_protect(off)
     * or uffd_wake. wp: a write to a write-protected page; otherwise a
     * missing page (write: the access is a write). */
    void (*fault)(uintptr_t addr, bool wp, bool write);
    /* [start, end) lost its contents: unmapped (UNMAP) or its pages
     * dropped (REMOVE: MADV_DONTNEED, MADV_REMOVE). */
    void (*gone)(uintptr_t start, uintptr_t end, bool unmapped);
    /* mremap moved [from, from+len) to [to, to+len); registrations move
     * along with the pages. */
    void (*moved)(uintptr_t from, uintptr_t to, size_t len);
};

/* Opens the descriptor and starts the handler (once; thread-safe).
 * Returns false, for good, when userfaultfd is unavailable or lacks what
 * the bounce module needs (MISSING and WP on anonymous memory, the three
 * events). */
bool uffd_open(const struct uffd_ops *ops);

/* Registers the page-aligned range: missing, MISSING|WP; else WP only.
 * Returns false (errno set) when the kernel refuses. */
bool uffd_register(uintptr_t start, size_t len, bool missing);
void uffd_unregister(uintptr_t start, size_t len);

/* Fills missing pages of [dst, dst+len) with src's bytes, write-protected,
 * and wakes the threads waiting on them. Pages already present are
 * skipped. Returns false on a failure (the range is no longer registered,
 * no memory), and in the handler thread with errno EAGAIN while an event
 * waits to be read (the kernel changes no page until then; the handler
 * must go and read it). Other threads wait for the handler instead. The
 * same holds for uffd_zero and uffd_protect. */
bool uffd_copy(uintptr_t dst, const void *src, size_t len);

/* Maps zero pages (a fresh anonymous page's contents) where missing. */
bool uffd_zero(uintptr_t dst, size_t len);

/* Write-protects (on) or unprotects the present pages of the range;
 * unprotecting wakes the threads waiting on it. */
bool uffd_protect(uintptr_t start, size_t len, bool on);

/* Wakes the threads waiting on a fault in the range. */
void uffd_wake(uintptr_t start, size_t len);

/* Waits until every event read so far by the handler has been processed.
 * Cheap when none is in flight (one atomic load). Never call it from the
 * handler thread or with a lock the callbacks take. */
void uffd_barrier(void);

/* True in the handler thread. */
bool uffd_in_handler(void);

/* True when every byte of [start, start+len) lies in writable private
 * anonymous memory (the heap or an anonymous mapping: no file, no shared
 * or hugetlb mapping, no stack), by /proc/self/maps. */
bool uffd_private_anon(uintptr_t start, size_t len);

/* uffd_protect(start, len, false) for an eager range (registered for
 * write-protection only) that the program is writing: its pages made
 * writable at once where they would otherwise fault one by one (a shared
 * mapping: pinned memory), then its waiters woken. uffd.c says how and
 * why. *shared (may be NULL): whether it was a shared mapping, whose
 * pages the kernel made writable in a pass over them (O(pages), in two
 * or three calls). *unregistered (may be NULL): whether the range was
 * unregistered on the way (a shared mapping's cheaper way: the caller
 * must not count on it being registered any more). Private memory is
 * taken in pieces from near's on (a writer there, woken first, writes
 * behind the pass), in O(log(len)) calls; a shared mapping whole. */
bool uffd_unprotect_writable(uintptr_t start, size_t len, uintptr_t near, bool *shared,
                             bool *unregistered);

/* In a fork child: the handler thread does not exist there and the
 * descriptor serves the parent. Closes it; uffd_open fails from now on. */
void uffd_after_fork_child(void);

/* uffd_copy without write-protection: the filled pages are writable at
 * once (a snapshot being given up fills its rest this way). The same
 * answers as uffd_copy. */
bool uffd_copy_writable(uintptr_t dst, const void *src, size_t len);

#endif
