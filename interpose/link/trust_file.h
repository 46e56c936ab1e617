/* The link verdicts' file (docs/TRUST.md), its format and where it lives:
 * what the shim writes (trust_cache.c) and `p2pshim trust` reads. One
 * line per verdict:
 *
 *   p2pshim-trust-1 boot=BOOT a=UUID@BUS b=UUID@BUS driver=CUDA/MODULE
 *     iommu=0|1 verdict=WORD # note
 *
 * (one line in the file). Pure: no CUDA, no log; the caller supplies what
 * the driver says. */
#ifndef P2PSHIM_TRUST_FILE_H
#define P2PSHIM_TRUST_FILE_H

#include <stdbool.h>
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

/* The verdict's word in the file ("trusted", or its reason's name). */
const char *trust_verdict_name(enum trust_verdict v);

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

/* Parses one line (n bytes, no newline). false when it is not a verdict of
 * this format: another magic, a field missing, out of order or too long, a
 * verdict word not known. */
bool trust_line_parse(const char *line, size_t n, struct trust_line *out);

/* "MAGIC boot=.. a=UUID@BUS b=UUID@BUS driver=.. iommu=N verdict=" into
 * out; snprintf's answer. */
int trust_key_prefix(const struct trust_key *k, char *out, size_t len);

/* Whether two keys name the same boot, devices, driver and IOMMU state. */
bool trust_key_equal(const struct trust_key *a, const struct trust_key *b);

/* Puts the two devices of k in the file's order (by UUID). */
void trust_key_order(struct trust_key *k);

/* The file: named (P2PSHIM_TRUST_FILE's value) when not empty, else
 * $XDG_CACHE_HOME/p2pshim/trust, else $HOME/.cache/p2pshim/trust (only
 * absolute ones count; secure_getenv). false when none can be named. */
bool trust_file_path(const char *named, char *out, size_t len);

/* A device's UUID as the file writes it ("GPU-xxxxxxxx-xxxx-..."). */
void trust_uuid_text(const unsigned char bytes[16], char *out, size_t len);

/* The first line of a small file (/proc, /sys), blanks made '_', or "-". */
void trust_read_word(const char *path, char *out, size_t len);

/* This machine's boot id (/proc/sys/kernel/random/boot_id), IOMMU state
 * (entries in /sys/class/iommu or /sys/kernel/iommu_groups) and NVIDIA
 * kernel module version (/sys/module/nvidia/version, "-" without one). */
void trust_boot_id(char *out, size_t len);
int trust_iommu_on(void);
void trust_module_version(char *out, size_t len);

#endif
