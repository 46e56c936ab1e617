/* The link verdicts kept across processes (docs/TRUST.md): one line per
 * device pair in a file of the user's, keyed by both GPUs' UUIDs and PCI
 * bus ids, the driver's version, whether an IOMMU is on, and the boot it
 * was measured in (/proc/sys/kernel/random/boot_id). A line of another
 * boot or another device set is no match; a line that does not read as
 * one of ours is ignored with one warning; the file is opened as the
 * shim's other files are (docs/SECURITY.md): no symbolic link, a regular
 * file of the user, created 0600. */
#ifndef P2PSHIM_TRUST_CACHE_H
#define P2PSHIM_TRUST_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

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

/* The key of the link between devices a and b (driver calls: UUIDs, bus
 * ids, version; files under /proc and /sys). false when the driver cannot
 * name a device: then nothing is cached. */
bool trust_key_make(int dev_a, int dev_b, struct trust_key *key);

/* The cache file: P2PSHIM_TRUST_FILE, else $XDG_CACHE_HOME/p2pshim/trust,
 * else $HOME/.cache/p2pshim/trust. false when none can be named. */
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
