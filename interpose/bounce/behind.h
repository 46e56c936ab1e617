/* behind.c: the write-protection of an eager snapshot's pages made beside
 * the copy that writes them, on a thread of the shim's ("p2pshim-wp").
 *
 * A pageable D2H that takes an eager snapshot copies its bytes into the
 * program's pages itself (stage.c, bgpu_dtoh_staged); its pages must be
 * write-protected once written, and those of a snapshot it takes over
 * made writable before they are written. One pass over the page table
 * each, 1-2 ms per 64 MiB of 4 KiB pages on an H200 host: as much as a
 * third of the copy when made after it. So the writer gives each run of
 * pages it has written to this thread, which protects it while the writer
 * copies the next, and, for a range taken over, this thread lifts the
 * protection a piece ahead of the writer.
 *
 * One series at a time (its writer holds the caller's staging lock):
 * bounce_behind_begin, then ascending, contiguous bounce_behind_wrote and
 * bounce_behind_ahead calls, then bounce_behind_end. The writer's waits
 * are made with every asynchronous signal blocked; the thread takes no
 * lock of the program's and never the bounce table's. */
#ifndef P2PSHIM_BOUNCE_BEHIND_H
#define P2PSHIM_BOUNCE_BEHIND_H

#include <stdbool.h>
#include <stdint.h>

/* Starts a series over the page-aligned [lo, hi); open: its pages may be
 * write-protected now (a range taken over) and are made writable ahead of
 * the writer. false: no thread to do it (it could not be started): the
 * caller protects for itself. */
bool bounce_behind_begin(uintptr_t lo, uintptr_t hi, bool open);
/* Waits until [lo, at) is writable (a series begun with open; at once
 * otherwise). false: it could not be made so. */
bool bounce_behind_ahead(uintptr_t at);
/* [lo, at) is written: write-protected behind the writer. */
void bounce_behind_wrote(uintptr_t at);
/* Ends the series: waits until every page given is protected. false when
 * a protection or an unprotection failed. */
bool bounce_behind_end(void);
/* In a forked child: no thread runs there; the next series starts one. */
void bounce_behind_after_fork_child(void);

#endif
