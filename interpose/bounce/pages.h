/* pages.c: page-state arithmetic of a snapshot's tracked pages and the
 * debug clock. Pure: no locks, no driver. */
#ifndef P2PSHIM_BOUNCE_PAGES_H
#define P2PSHIM_BOUNCE_PAGES_H

#include "bounce_int.h"

extern size_t bounce_page;
extern unsigned bounce_page_shift; /* log2(bounce_page) */

/* The first index in [i, n) whose page state is in stop (a mask of
 * 1 << state), or n; eight states at a time. */
size_t bounce_scan(const uint8_t *st, size_t i, size_t n, unsigned stop);
#define PG_MASK(state) (1u << (state))

/* Microseconds of CLOCK_MONOTONIC at P2PSHIM_LOG=debug (the phase timings
 * of each bounce), else 0. */
double bounce_now_us(void);
/* Nanoseconds of CLOCK_MONOTONIC, always (the handler's time counter). */
uint64_t bounce_clock_ns(void);

uint8_t *bounce_page_state(struct snap *s, uintptr_t addr);
/* Page indices of s for the tracked pages in [lo, hi) (clamped; partial
 * pages at either end excluded when whole, included otherwise). */
size_t bounce_index(const struct snap *s, uintptr_t addr);
void bounce_index_range(const struct snap *s, uintptr_t lo, uintptr_t hi, bool whole,
                        size_t *i0, size_t *i1);

#endif
