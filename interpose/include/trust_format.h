/* The link verdicts' file format (docs/TRUST.md), shared by the shim,
 * which writes it (interpose/link/trust_cache.c), and `p2pshim trust`,
 * which reads it (tools/launcher/trust_cmd.c, trust_check.c); the parse
 * and the writing are interpose/link/trust_file.c's. One line per verdict:
 *
 *   p2pshim-trust-1 boot=BOOT a=UUID@BUS b=UUID@BUS driver=CUDA/MODULE
 *     iommu=0|1 verdict=WORD # note
 *
 * (one line in the file). A change of the fields takes a new magic. */
#ifndef P2PSHIM_TRUST_FORMAT_H
#define P2PSHIM_TRUST_FORMAT_H

#include <stddef.h>

#define TRUST_MAGIC "p2pshim-trust-1"
/* A file past this size is started afresh by the next verdict. */
#define TRUST_FILE_MAX ((size_t)64 << 10)

enum trust_verdict {
    TRUST_UNKNOWN = 0,
    TRUST_TRUSTED,
    TRUST_UNTRUSTED,   /* reason "link-untrusted" */
    TRUST_SLOWER,      /* reason "link-slower" */
};

/* What a verdict is about. The two devices in a fixed order (by UUID), so
 * that a pair has one line whichever way its first copy went. */
struct trust_key {
    char boot[40];
    char uuid[2][48];
    char bus[2][24];
    char driver[40];   /* CUDA driver API version / kernel module version */
    int iommu;
};

/* One line of the file, read. note points into the line (not terminated:
 * note_len bytes; "" when there is none). */
struct trust_line {
    struct trust_key key;
    enum trust_verdict verdict;
    const char *note;
    size_t note_len;
};

#endif
