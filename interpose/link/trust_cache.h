/* The link verdicts kept across processes (docs/TRUST.md): one line per
 * device pair in a file of the user's, keyed by both GPUs' UUIDs and PCI
 * bus ids, the driver's version, whether an IOMMU is on, and the boot it
 * was measured in (/proc/sys/kernel/random/boot_id). A line of another
 * boot or another device set is no match; a line that does not read as
 * one of ours is ignored with one warning; the file is opened as the
 * shim's other files are (docs/SECURITY.md): no symbolic link, a regular
 * file of the user, created 0600. The format is trust_file.h's, which
 * `p2pshim trust` reads too. */
#ifndef P2PSHIM_TRUST_CACHE_H
#define P2PSHIM_TRUST_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "trust_file.h"

/* The key of the link between devices a and b (driver calls: UUIDs, bus
 * ids, version; files under /proc and /sys). false when the driver cannot
 * name a device: then nothing is cached. */
bool trust_key_make(int dev_a, int dev_b, struct trust_key *key);

/* The cache file: trust_file_path with P2PSHIM_TRUST_FILE's value. */
bool trust_cache_path(const struct p2pshim_config *cfg, char *out, size_t len);

/* The last verdict the file holds for key, or TRUST_UNKNOWN (no file, no
 * such line, or a file refused: one warning). */
enum trust_verdict trust_cache_find(const char *path, const struct trust_key *key);

/* Appends key's verdict (note: a few words for a reader, no newline); the
 * folders are created 0700 where missing. A file past 64 KiB is started
 * afresh. Failures warn once and are otherwise harmless. */
void trust_cache_store(const char *path, const struct trust_key *key, enum trust_verdict v,
                       const char *note);

#endif
