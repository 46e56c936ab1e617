/* Dormant ranges (dormant.c): a shared mapping (pinned memory is a shared
 * mapping of /dev/zero) whose eager snapshot ended stays registered with
 * userfaultfd, write-protected, instead of being unregistered.
 *
 * Why: on a shared mapping, unregistering (like lifting the protection)
 * leaves every page read-only, and the program's next write to the buffer
 * then takes one kernel fault per 4 KiB page (a rewrite of 64 MiB pinned:
 * 16,384 faults, 7x its memset on the CPU machine; 28 ms on an H200 host).
 * Kept dormant, the first write faults once into the shim's handler,
 * which lifts the protection and makes every page writable in one call
 * (uffd_unprotect_writable): the cost is paid only when the program
 * writes, once, in two kernel calls. A program that never writes the
 * buffer again pays nothing.
 *
 * The table is bounce_mu's (lock.h); every function takes it itself. */
#ifndef P2PSHIM_BOUNCE_DORMANT_H
#define P2PSHIM_BOUNCE_DORMANT_H

#include <stdbool.h>
#include <stdint.h>

#include "predict.h"

/* At the end of a snapshot over [lo, hi) (whole pages, registered):
 * true when the range stays registered as dormant (an eager snapshot on a
 * shared mapping, with room in the table); false when the caller must
 * unregister it as before. Without the lock; the oldest entry may be
 * unregistered here to make room. keys: the snapshot's, told NEWS_COSTLY
 * (watch.h) when a write wakes the range while still protected: the
 * wake made the kernel fault its pages in, more than the H2D saved. */
bool dormant_keep(uintptr_t lo, uintptr_t hi, bool lazy, const struct predict_pair *keys);

/* A write fault at addr outside every snapshot (the handler thread, lock
 * held): when addr lies in a dormant range, that range is woken (its
 * protection lifted, every page writable, the writers woken; dropped
 * meanwhile) and forgotten, and true is returned. */
bool dormant_fault(uintptr_t addr);

/* A new eager snapshot over [lo, hi) (without the lock, before it is
 * linked): an entry of exactly that range is the snapshot's now (true:
 * its pages are registered, maybe protected still); one overlapping it
 * otherwise is woken first, so that no fault outside the new snapshot
 * lifts the protection of its pages. */
bool dormant_claim(uintptr_t lo, uintptr_t hi);

/* [lo, hi) about to be unmapped by the driver (cuMemFreeHost; without
 * the lock): the entries overlapping it are unregistered and forgotten
 * first. The driver unmaps while it holds its own lock, and an unmap of a
 * registered range waits until the handler thread has read its event;
 * the handler may itself be waiting for that lock (the rest of a lazy
 * fill after the faulting page was woken): a deadlock, seen on the
 * stand-in under load (bounce.cost). Unregistered, the unmap raises no
 * event. */
void dormant_release(uintptr_t lo, uintptr_t hi);

/* [lo, hi) unmapped or moved (lock held): the entries overlapping it are
 * forgotten (their registration went with the mapping). */
void dormant_forget(uintptr_t lo, uintptr_t hi);

#endif
