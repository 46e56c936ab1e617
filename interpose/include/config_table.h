/* The one table of the shim's P2PSHIM_* variables, in the order
 * config_dump writes them (and docs/CONFIGURATION.md lists them):
 *   ROW(X, NAME, what it sets, (descriptor))
 * NAME and the help are everyone's, through P2PSHIM_CONFIG_VARS
 * (config.h). The descriptor is the variable's behaviour: an initializer
 * of struct config_var (config_int.h) written with its kind macros —
 *   CONFIG_SWITCH(field)                1/0, yes/no, true/false, on/off
 *   CONFIG_ENUM(field, names, noun)     one of names[], any case
 *   CONFIG_BYTES(field, min, max, mult) K/M/G byte count; dumped with a unit
 *   CONFIG_COUNT(field, min, max)       K/M/G count; dumped as digits
 *   CONFIG_PATH(field)                  file name, %p and %h expanded
 *   CONFIG_CUSTOM(handler)              its own syntax (config_int.h)
 * and .def (the default), .doc (the default as docs/CONFIGURATION.md
 * words it, where the value alone would not say it), .expect ("not
 * EXPECT" in a warning) and .kept (what a bad value leaves, where not
 * "keeping VALUE"). A variable that decides what the shim changes has
 * .on_bad: the value a bad one stands for, the choice that changes least
 * (a typo must never change more of the program than the user asked),
 * with a .kept that says so.
 * Only config.c expands the descriptors. */
#ifndef P2PSHIM_CONFIG_TABLE_H
#define P2PSHIM_CONFIG_TABLE_H

#include <stddef.h>

/* P2PSHIM_BOUNCE_MIN's floor: below it a snapshot never pays, and no copy
 * that small is looked at for bouncing (config_bounce_min, config.h). */
#define CONFIG_BOUNCE_MIN_FLOOR ((size_t)64 << 10)
/* P2PSHIM_BOUNCE_MIN=auto: measured on the H200 pair (docs/RESULTS.md),
 * a pageable pair of 64 KiB took 0.08 ms with a snapshot against 0.04 ms
 * without, one of 1 MiB 0.08 against 0.34; a pinned pair of 1 MiB 0.07
 * against 0.056, one of 16 MiB 0.40 against 0.62. */
#define CONFIG_BOUNCE_AUTO_PAGEABLE ((size_t)1 << 20)
#define CONFIG_BOUNCE_AUTO_PINNED ((size_t)16 << 20)
/* And a reused pageable buffer (its pages resident at the D2H) from 4 MiB:
 * a wrong guess on one of 1 MiB cost 0.6-0.75 ms on an H200 host (its
 * write-protection, the faults that spend the budget, lifting it) against
 * a round of 0.4 ms, 2.2-2.9x; a new buffer's pages cost the same either
 * way, and it is taken (lazy) from CONFIG_BOUNCE_AUTO_PAGEABLE. */
#define CONFIG_BOUNCE_AUTO_REUSED ((size_t)4 << 20)

#define P2PSHIM_CONFIG_TABLE(ROW, X)                                          \
    ROW(X, P2PSHIM_MODE, "upgrade (default), observe or off",                 \
        (CONFIG_ENUM(mode, p2pshim_mode_names, "mode"),                       \
         .def = P2PSHIM_MODE_UPGRADE, .on_bad = "off",                        \
         .kept = "using off: the shim changes nothing"))                      \
    ROW(X, P2PSHIM_PAIRS, "device pairs to upgrade or exclude, e.g. 0-1,!2:3", \
        (CONFIG_CUSTOM(&config_pairs_handler), .def_text = "all",             \
         .doc = "all pairs", .on_bad = "none",                                \
         .kept = "upgrading no pair (none)"))                                 \
    ROW(X, P2PSHIM_MIN_BYTES, "smallest copy to upgrade; K/M/G suffixes (KiB)", \
        (CONFIG_BYTES(min_bytes, 0, SIZE_MAX, 1), .def = 0,                   \
         .expect = "a byte count (digits with optional K/M/G)"))              \
    ROW(X, P2PSHIM_LOG, "error, warn (default), info or debug",               \
        (CONFIG_ENUM(log_level, p2pshim_log_level_names, "log level"),        \
         .def = P2PSHIM_LOG_WARN))                                            \
    ROW(X, P2PSHIM_LOG_FILE,                                                  \
        "log file instead of stderr; %p is the pid, %h the host",             \
        (CONFIG_PATH(log_file), .doc = "stderr", .kept = "keeping stderr"))   \
    ROW(X, P2PSHIM_DUMP_CONFIG, "1: print the effective configuration at start", \
        (CONFIG_SWITCH(dump_config), .def = 0))                               \
    ROW(X, P2PSHIM_RUN_LOG,                                                   \
        "run log (JSON Lines, docs/LOG_FORMAT.md); %p is the pid, %h the host", \
        (CONFIG_PATH(run_log), CONFIG_PATTERN(run_log_pattern), .doc = "none", \
         .kept = "writing no run log"))                                       \
    ROW(X, P2PSHIM_CUPTI, "1/0: join CUPTI activity to decisions (default: observe)", \
        (CONFIG_SWITCH(cupti), .def = -1, .doc = "on in observe mode",        \
         .kept = "keeping the default (on in observe mode)"))                 \
    ROW(X, P2PSHIM_RECORD_LIMIT, "decision records buffered before drops",    \
        (CONFIG_COUNT(record_limit, 1, SIZE_MAX), .def = 262144,              \
         .expect = "a positive count (K/M/G allowed)"))                       \
    ROW(X, P2PSHIM_BOUNCE, "host-bounced copies: auto (default), lazy, eager or off", \
        (CONFIG_ENUM(bounce, p2pshim_bounce_names, "bounce mode"),            \
         .def = P2PSHIM_BOUNCE_AUTO, .on_bad = "off",                         \
         .kept = "using off: no bounced copy is changed"))                    \
    ROW(X, P2PSHIM_BOUNCE_MIN,                                                \
        "smallest D2H to take a bounce snapshot of: bytes (K/M/G, "           \
        "at least 64K) or auto (default: 1M pageable, 4M for a reused "       \
        "pageable buffer, 16M pinned)",                                       \
        (CONFIG_BYTES(bounce_min, CONFIG_BOUNCE_MIN_FLOOR, SIZE_MAX, 1), .def = 0, \
         .auto_word = "auto",                                                 \
         .doc = "`auto`: 1M pageable (4M for a buffer reused between rounds), 16M pinned", \
         .expect = "auto or a byte count (K/M/G) of at least 64K"))           \
    ROW(X, P2PSHIM_BOUNCE_BUDGET, "device memory for bounce snapshots, per device: " \
        "bytes (K/M/G) or N% of free memory (default 25%)",                   \
        (CONFIG_CUSTOM(&config_budget_handler), .def_text = "25%"))           \
    ROW(X, P2PSHIM_BOUNCE_CHUNK,                                              \
        "bytes a lazy host buffer fills per fault, 4K..1G (default 2M)",      \
        (CONFIG_BYTES(bounce_chunk, (size_t)4 << 10, (size_t)1 << 30,         \
                      (size_t)4 << 10),                                       \
         .def = (size_t)2 << 20,                                              \
         .expect = "a multiple of 4K between 4K and 1G"))                     \
    ROW(X, P2PSHIM_LINK_IDLE_MS,                                              \
        "give back a peer link the shim enabled after this many ms unused (0: never)", \
        (CONFIG_COUNT(link_idle_ms, 0, 86400000), .def = 0, .doc = "`0` (never)", \
         .expect = "a count of milliseconds, 0 to 86400000"))                 \
    ROW(X, P2PSHIM_TRUST, "check (default): test a pair's link once before its " \
        "first upgrade; skip; or recheck (ignore the cached verdicts)",       \
        (CONFIG_ENUM(trust, p2pshim_trust_names, "trust setting"),            \
         .def = P2PSHIM_TRUST_CHECK))                                         \
    ROW(X, P2PSHIM_TRUST_FILE, "the link verdicts' cache file; %p is the pid, " \
        "%h the host",                                                        \
        (CONFIG_PATH(trust_file),                                             \
         .doc = "`$XDG_CACHE_HOME/p2pshim/trust`, else `~/.cache/p2pshim/trust`", \
         .kept = "keeping the default place"))                            \
    ROW(X, P2PSHIM_POOL_RELAY,                                                \
        "device memory per device for relaying copies of pool memory over the " \
        "link, 1M multiples up to 128M; 0 turns the relay off (default 96M)", \
        (CONFIG_BYTES(pool_relay, 0, (size_t)128 << 20, (size_t)1 << 20),     \
         .def = (size_t)96 << 20,                                             \
         .expect = "a multiple of 1M between 0 and 128M"))

#endif
