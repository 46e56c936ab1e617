/* Configuration: every P2PSHIM_* variable is named here, parsed once into
 * one struct. A bad value warns once (one line, "p2pshim: warning: ...");
 * for a variable that decides what the shim changes (P2PSHIM_MODE,
 * P2PSHIM_BOUNCE, P2PSHIM_PAIRS) it stands for the choice that changes
 * least (off, no pair), for the others it keeps the default. An unknown
 * P2PSHIM_* name warns once too, with its near miss. */
#ifndef P2PSHIM_CONFIG_H
#define P2PSHIM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The variables of the shim, one row each in config_table.h; here, each
 * as X(ENV_NAME, what it sets), in the order config_dump writes them. */
#include "config_table.h"
#define P2PSHIM_CONFIG_NAME_HELP_(X, name, help, descriptor) X(name, help)
#define P2PSHIM_CONFIG_VARS(X) P2PSHIM_CONFIG_TABLE(P2PSHIM_CONFIG_NAME_HELP_, X)

/* Variables of the p2pshim tool (launcher, topo, report), not of the shim:
 * the shim neither reads them nor warns about them. */
#define P2PSHIM_TOOL_VARS(X)                                                  \
    X(P2PSHIM_LIBRARY, "the shim the launcher preloads")                     \
    X(P2PSHIM_TOPO_FILE, "bandwidth table of p2pshim topo --measure")

/* Devices the pair filter and the statistics can name. Devices at or past
 * this ordinal are never upgraded (reason "device ordinal too large"). */
#define P2PSHIM_MAX_DEVICES 32

/* The names of the modes, bounce modes and log levels: the one list of
 * each, X(ENUMERATOR, "name"), in the order messages list them. Each
 * expands into its enum below (values 0, 1, ... in this order) and into
 * the name tables of config_names.c, which the parser, the dump, the shim
 * and the launcher use. */
#define P2PSHIM_MODE_NAMES(X)                                                 \
    X(P2PSHIM_MODE_UPGRADE, "upgrade")                                        \
    X(P2PSHIM_MODE_OBSERVE, "observe")                                        \
    X(P2PSHIM_MODE_OFF, "off")
#define P2PSHIM_BOUNCE_NAMES(X)                                               \
    X(P2PSHIM_BOUNCE_AUTO, "auto")                                            \
    X(P2PSHIM_BOUNCE_LAZY, "lazy")                                            \
    X(P2PSHIM_BOUNCE_EAGER, "eager")                                          \
    X(P2PSHIM_BOUNCE_OFF, "off")
/* check: validate a pair's link once before its first upgrade (docs/TRUST.md);
 * skip: trust cuDeviceCanAccessPeer alone; recheck: validate again, replacing
 * what the cache holds. */
#define P2PSHIM_TRUST_NAMES(X)                                                \
    X(P2PSHIM_TRUST_CHECK, "check")                                           \
    X(P2PSHIM_TRUST_SKIP, "skip")                                             \
    X(P2PSHIM_TRUST_RECHECK, "recheck")
/* Ordered: a message is written when its level <= the threshold. */
#define P2PSHIM_LOG_LEVEL_NAMES(X)                                            \
    X(P2PSHIM_LOG_ERROR, "error")                                             \
    X(P2PSHIM_LOG_WARN, "warn")                                               \
    X(P2PSHIM_LOG_INFO, "info")                                               \
    X(P2PSHIM_LOG_DEBUG, "debug")

#define P2PSHIM_ENUMERATOR_(enumerator, name) enumerator,

/* observe: change nothing the program sees or does; record what upgrade
 * would do. */
enum p2pshim_mode { P2PSHIM_MODE_NAMES(P2PSHIM_ENUMERATOR_) P2PSHIM_MODE_COUNT };

/* Host-bounced copies (bounce.h). auto: lazy where provably safe, eager
 * where only that is, off elsewhere; lazy: lazy for pageable memory and
 * eager for pinned even where a GPU could write it unseen; eager: never
 * lazy. */
enum p2pshim_bounce { P2PSHIM_BOUNCE_NAMES(P2PSHIM_ENUMERATOR_) P2PSHIM_BOUNCE_COUNT };

enum p2pshim_trust { P2PSHIM_TRUST_NAMES(P2PSHIM_ENUMERATOR_) P2PSHIM_TRUST_COUNT };

enum p2pshim_log_level {
    P2PSHIM_LOG_LEVEL_NAMES(P2PSHIM_ENUMERATOR_) P2PSHIM_LOG_LEVEL_COUNT
};

/* "config_names.c": each name by its enum value. */
extern const char *const p2pshim_mode_names[P2PSHIM_MODE_COUNT];
extern const char *const p2pshim_bounce_names[P2PSHIM_BOUNCE_COUNT];
extern const char *const p2pshim_log_level_names[P2PSHIM_LOG_LEVEL_COUNT];
extern const char *const p2pshim_trust_names[P2PSHIM_TRUST_COUNT];

/* The index of text in names[0..count), in any case, or -1. */
int config_name_find(const char *const *names, int count, const char *text);

/* The index of the name of names[0..count) that text[0..len) is likely a
 * typo of (case aside: one slip in a name of up to 5 characters, two in a
 * longer one, and a single best match), or -1. */
int config_name_near(const char *const *names, int count, const char *text, size_t len);

/* Writes names[0..count) as a list, "a, b or c", into buf (cut to len). */
void config_name_list(const char *const *names, int count, char *buf, size_t len);

struct p2pshim_config {
    enum p2pshim_mode mode;
    enum p2pshim_log_level log_level;
    size_t min_bytes;             /* copies smaller than this pass through */
    char log_file[512];           /* "" = stderr; %p and %h already expanded */
    bool dump_config;
    char run_log[512];            /* "" = no run log; %p and %h already expanded */
    char run_log_pattern[512];    /* as written: a forked child expands it again */
    int cupti;                    /* 1 on, 0 off, -1 auto (on in observe) */
    size_t record_limit;          /* decisions buffered at most */
    enum p2pshim_bounce bounce;
    unsigned bounce_budget_pct;   /* percent of the device's free memory, */
    size_t bounce_budget;         /* or, when that is 0, bytes per device */
    size_t bounce_chunk;          /* page multiple */
    size_t bounce_min;            /* 0: auto (config_bounce_min) */
    size_t link_idle_ms;          /* 0: the shim keeps its links; else idle time before release */
    size_t pool_relay;            /* scratch per device for relaying pool memory; 0: off */
    enum p2pshim_trust trust;
    char trust_file[512];         /* "" = the default place (trust_cache.h) */
    /* pair_allowed[src][dst]: whether a copy from device src to device dst
     * may be upgraded. All true unless P2PSHIM_PAIRS says otherwise. */
    bool pair_allowed[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES];
};

/* Whether host bounces are on (docs/BOUNCE.md): upgrade mode, and
 * P2PSHIM_BOUNCE not off. Observe mode watches bounces but takes no
 * snapshot. */
static inline bool config_bounce_on(const struct p2pshim_config *cfg)
{
    return cfg->mode == P2PSHIM_MODE_UPGRADE && cfg->bounce != P2PSHIM_BOUNCE_OFF;
}

/* The smallest D2H worth a snapshot for this kind of host memory
 * (P2PSHIM_BOUNCE_MIN, else the measured minimum of config_table.h). */
static inline size_t config_bounce_min(const struct p2pshim_config *cfg, bool pinned)
{
    return cfg->bounce_min ? cfg->bounce_min
           : pinned        ? CONFIG_BOUNCE_AUTO_PINNED
                           : CONFIG_BOUNCE_AUTO_PAGEABLE;
}

/* Fills *cfg with the defaults. */
void config_set_defaults(struct p2pshim_config *cfg);

/* Parses from an environment block (NULL-terminated "NAME=value" strings,
 * like environ) into *cfg, starting from the defaults. Every problem is
 * reported through warn(line) once; a bad value leaves what its row says
 * (the default, or for the variables that decide what the shim changes the
 * choice that changes least); warn may be NULL. Returns the number of warnings. Pure: reads nothing else (but the
 * pid and host name, for %p and %h), so unit tests feed it arbitrary
 * blocks. The variables of P2PSHIM_TOOL_VARS are skipped without a word.
 * The line given to warn has no prefix and no newline, e.g.
 *   P2PSHIM_LOG="loud": not a log level (error, warn, info or debug); keeping warn
 *   P2PSHIM_MODE="obsrve": not a mode (upgrade, observe or off), did you
 *   mean observe?; using off: the shim changes nothing
 *   unknown variable P2PSHIM_MODEE, did you mean P2PSHIM_MODE?
 * (the log adds "p2pshim: warning: ").
 * Values are exact apart from case
 * (no spaces trimmed). An empty value is the same as an unset variable
 * (for P2PSHIM_LOG_FILE: stderr). Of duplicated entries the first counts,
 * as with getenv. Names are case-sensitive; entries not starting with
 * "P2PSHIM_" are ignored. */
int config_parse(struct p2pshim_config *cfg, char *const *envp,
                 void (*warn)(const char *line));

/* What config_check_entry finds in one entry. */
enum config_entry_verdict {
    CONFIG_ENTRY_OK,       /* a variable of the shim, its value taken */
    CONFIG_ENTRY_NOT_OURS, /* not P2PSHIM_*, no '=', or a tool variable */
    CONFIG_ENTRY_UNKNOWN,  /* a P2PSHIM_* name that is no variable */
    CONFIG_ENTRY_BAD,      /* a variable of the shim with a bad value */
};

/* Checks one "NAME=value" entry as config_parse reads it. For UNKNOWN and
 * BAD, why gets config_parse's warning without what the shim then does
 * ("; using off: ..."), e.g.
 *   P2PSHIM_MODE="obsrve": not a mode (upgrade, observe or off), did you
 *   mean observe?
 * so that the launcher, which refuses a bad value, says it the same way. */
enum config_entry_verdict config_check_entry(const char *entry, char *why,
                                             size_t why_len);

/* P2PSHIM_PAIRS grammar, comma-separated entries, spaces ignored:
 *   A:B    the ordered pair, device A to device B
 *   A-B    both directions between A and B
 *   *      every pair (also written "all"; "none" is "!*")
 * A or B may be '*'. An entry starting with '!' excludes its pairs. If any
 * entry is not an exclusion, only the pairs named are allowed; exclusions
 * apply after, wherever they are written. No entries at all (an empty or
 * blank spec) restrict nothing. Ordinals must be below P2PSHIM_MAX_DEVICES.
 * The diagonal allowed[d][d] is always true: a copy within one device is
 * no peer copy. Returns false (and leaves allowed untouched) on a syntax
 * error, writing a short reason to err ("entry 2: device 40 out of range
 * (0-31)"; err may be NULL when err_len is 0). */
bool config_parse_pairs(const char *spec,
                        bool allowed[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES],
                        char *err, size_t err_len);

/* Parses a byte count: decimal digits with an optional K, M or G suffix
 * (binary units, case-insensitive, optional trailing "iB"/"B"; "12B" is 12
 * bytes). Rejects signs, spaces, overflow of size_t and trailing junk,
 * leaving *out untouched. */
bool config_parse_bytes(const char *text, size_t *out);

/* Writes the effective configuration, one "config NAME=value" line per
 * variable in P2PSHIM_CONFIG_VARS order, through write_line (log_line adds
 * "p2pshim: "). The values read back through config_parse as the same
 * config: pairs as "all", "none", or the shorter of the allowed and the
 * excluded pairs ("0-1,2:3", "!0:1", "3:*"); byte counts with the largest
 * exact unit ("64K"); the log file with % written %%; an empty log file
 * means stderr. A line that would pass 1 KiB (a pathological pair set) is
 * cut and ends in "...". */
void config_dump(const struct p2pshim_config *cfg,
                 void (*write_line)(const char *line));

/* The process-wide configuration, parsed from environ on first use
 * (thread-safe, once; never calls CUDA). Under secure execution (a setuid
 * or setgid program, or one given capabilities: AT_SECURE) the environment
 * is not read at all: the defaults with mode, bounces and CUPTI off, the
 * log on stderr at the default level, and no file opened. That first use also opens the log
 * (log_open, with the parsed file and level; a later log_open does nothing)
 * and then reports the warnings there, so that they obey P2PSHIM_LOG_FILE
 * and P2PSHIM_LOG. The dump is the caller's (config_dump). */
const struct p2pshim_config *config_get(void);

#endif
