/* The link verdicts' file (docs/TRUST.md): reading and writing its lines
 * (the format is trust_format.h's) and where it lives: what the shim
 * writes (trust_cache.c) and `p2pshim trust` reads. Pure: no CUDA, no log;
 * the caller supplies what the driver says. */
#ifndef P2PSHIM_TRUST_FILE_H
#define P2PSHIM_TRUST_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "trust_format.h"

/* The verdict's word in the file ("trusted", or its reason's name). */
const char *trust_verdict_name(enum trust_verdict v);

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
