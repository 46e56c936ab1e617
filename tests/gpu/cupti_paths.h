/* Counts the paths cross-GPU copies took, from CUPTI activity records.
 *
 * A staged peer copy (no peer access) shows as a DTOH record plus an HTOD
 * record; a peer copy as one MEMCPY2 record of copyKind PTOP (ARCHITECTURE.md).
 * Test programs link libcupti; the shim never does.
 *
 * Use: cupti_paths_init() once, after the program knows GPUs exist; then per
 * measured window: cupti_paths_begin(), the copies, a device synchronisation
 * of every device involved, cupti_paths_end(). Only records delivered
 * between begin and end are counted, so the program's other copies (result
 * read-backs) must happen outside windows. Not re-entrant: one window at a
 * time per process. */
#ifndef P2PSHIM_TESTS_CUPTI_PATHS_H
#define P2PSHIM_TESTS_CUPTI_PATHS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cupti_paths_counts {
    unsigned long ptop;      /* MEMCPY2 (or MEMCPY) records of kind PTOP */
    unsigned long dtoh;      /* MEMCPY records of kind DTOH */
    unsigned long htod;      /* MEMCPY records of kind HTOD */
    unsigned long dtod;      /* MEMCPY or MEMCPY2 records of kind DTOD */
    unsigned long other;     /* any other memcpy record */
    unsigned long records;   /* all memcpy records of the window */
    unsigned long long ptop_bytes, dtoh_bytes, htod_bytes, dtod_bytes;
};

/* Registers the buffer callbacks and enables the MEMCPY and MEMCPY2 activity
 * kinds. Returns 0, or -1 with a reason in err (CUPTI unavailable, another
 * subscriber, ...): the caller must then FAIL its path checks, never pass
 * them. */
int cupti_paths_init(char *err, size_t err_len);

/* Delivers and discards every record so far, then zeroes the counters.
 * Returns 0, or -1 with a reason in err. */
int cupti_paths_begin(char *err, size_t err_len);

/* Delivers every record so far (forced flush) and copies the window's
 * counts to *out. Returns 0, or -1 with a reason in err, including when
 * CUPTI dropped records (the counts would be incomplete). */
int cupti_paths_end(struct cupti_paths_counts *out, char *err, size_t err_len);

/* Writes the counts as "ptop=N dtoh=N htod=N dtod=N other=N". */
void cupti_paths_format(const struct cupti_paths_counts *c, char *buf, size_t len);

/* Flushes and disables the activity kinds (best effort). */
void cupti_paths_shutdown(void);

#ifdef __cplusplus
}
#endif

#endif
