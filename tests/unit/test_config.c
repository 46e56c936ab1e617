/* Unit test of config.c and log.c: parsing, warnings, the pairs grammar,
 * the dump round trip, config_get, and the log's file and threshold. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "config.h"

/* Number of variables in the one list. */
#define COUNT_VAR(name, what) +1
#define NVARS (0 P2PSHIM_CONFIG_VARS(COUNT_VAR))

#include "log.h"

/* ---- helpers ----------------------------------------------------------- */

#define MAX_LINES 64
static char lines[MAX_LINES][1024];
static int nlines;

static void capture(const char *line)
{
    if (nlines < MAX_LINES)
        snprintf(lines[nlines], sizeof lines[0], "%s", line);
    nlines++;
}

/* Parses a NULL-terminated list of "NAME=value" strings into *cfg,
 * capturing the warnings in lines[]; returns config_parse's count. */
static int parse(struct p2pshim_config *cfg, ...)
{
    char *envp[32];
    int n = 0;
    va_list ap;
    va_start(ap, cfg);
    for (char *e; (e = va_arg(ap, char *)) != NULL && n < 31;)
        envp[n++] = e;
    va_end(ap);
    envp[n] = NULL;
    nlines = 0;
    int warnings = config_parse(cfg, envp, capture);
    CHECK(warnings == nlines);
    return warnings;
}

static bool all_pairs(const struct p2pshim_config *cfg)
{
    for (int s = 0; s < P2PSHIM_MAX_DEVICES; s++)
        for (int d = 0; d < P2PSHIM_MAX_DEVICES; d++)
            if (!cfg->pair_allowed[s][d])
                return false;
    return true;
}

static bool same_config(const struct p2pshim_config *a,
                        const struct p2pshim_config *b)
{
    return a->mode == b->mode && a->log_level == b->log_level &&
           a->min_bytes == b->min_bytes &&
           strcmp(a->log_file, b->log_file) == 0 &&
           a->dump_config == b->dump_config &&
           strcmp(a->run_log, b->run_log) == 0 && a->cupti == b->cupti &&
           a->record_limit == b->record_limit &&
           strcmp(a->run_log_pattern, b->run_log_pattern) == 0 && a->bounce == b->bounce &&
           a->bounce_budget == b->bounce_budget &&
           a->bounce_budget_pct == b->bounce_budget_pct &&
           a->bounce_chunk == b->bounce_chunk &&
           memcmp(a->pair_allowed, b->pair_allowed, sizeof a->pair_allowed) ==
               0;
}

static bool is_default(const struct p2pshim_config *cfg)
{
    struct p2pshim_config d;
    config_set_defaults(&d);
    return same_config(cfg, &d);
}

/* ---- tests ------------------------------------------------------------- */

static void test_defaults(void)
{
    struct p2pshim_config cfg;
    config_set_defaults(&cfg);
    CHECK(cfg.mode == P2PSHIM_MODE_UPGRADE);
    CHECK(cfg.log_level == P2PSHIM_LOG_WARN);
    CHECK(cfg.min_bytes == 0);
    CHECK_STR(cfg.log_file, "");
    CHECK(!cfg.dump_config);
    CHECK(all_pairs(&cfg));

    CHECK(config_parse(&cfg, NULL, capture) == 0);
    CHECK(is_default(&cfg));
    CHECK(parse(&cfg, NULL) == 0);
    CHECK(is_default(&cfg));

    /* Parsing starts from the defaults, whatever cfg held. */
    memset(&cfg, 0xff, sizeof cfg);
    CHECK(parse(&cfg, "PATH=/bin", NULL) == 0);
    CHECK(is_default(&cfg));
}

static void test_good_values(void)
{
    struct p2pshim_config cfg;
    static const struct {
        const char *env;
        enum p2pshim_mode mode;
    } modes[] = {{"P2PSHIM_MODE=upgrade", P2PSHIM_MODE_UPGRADE},
                 {"P2PSHIM_MODE=off", P2PSHIM_MODE_OFF},
                 {"P2PSHIM_MODE=OFF", P2PSHIM_MODE_OFF},
                 {"P2PSHIM_MODE=Upgrade", P2PSHIM_MODE_UPGRADE},
                 {"P2PSHIM_MODE=observe", P2PSHIM_MODE_OBSERVE}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        CHECK(parse(&cfg, modes[i].env, NULL) == 0);
        CHECK(cfg.mode == modes[i].mode);
    }

    static const struct {
        const char *env;
        enum p2pshim_log_level level;
    } levels[] = {{"P2PSHIM_LOG=error", P2PSHIM_LOG_ERROR},
                  {"P2PSHIM_LOG=warn", P2PSHIM_LOG_WARN},
                  {"P2PSHIM_LOG=info", P2PSHIM_LOG_INFO},
                  {"P2PSHIM_LOG=debug", P2PSHIM_LOG_DEBUG},
                  {"P2PSHIM_LOG=DEBUG", P2PSHIM_LOG_DEBUG},
                  {"P2PSHIM_LOG=Error", P2PSHIM_LOG_ERROR}};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        CHECK(parse(&cfg, levels[i].env, NULL) == 0);
        CHECK(cfg.log_level == levels[i].level);
    }

    static const struct {
        const char *env;
        bool on;
    } dumps[] = {{"P2PSHIM_DUMP_CONFIG=1", true},
                 {"P2PSHIM_DUMP_CONFIG=0", false},
                 {"P2PSHIM_DUMP_CONFIG=yes", true},
                 {"P2PSHIM_DUMP_CONFIG=no", false},
                 {"P2PSHIM_DUMP_CONFIG=true", true},
                 {"P2PSHIM_DUMP_CONFIG=false", false},
                 {"P2PSHIM_DUMP_CONFIG=on", true},
                 {"P2PSHIM_DUMP_CONFIG=off", false},
                 {"P2PSHIM_DUMP_CONFIG=TRUE", true},
                 {"P2PSHIM_DUMP_CONFIG=Off", false}};
    for (size_t i = 0; i < sizeof dumps / sizeof dumps[0]; i++) {
        CHECK(parse(&cfg, dumps[i].env, NULL) == 0);
        CHECK(cfg.dump_config == dumps[i].on);
    }

    CHECK(parse(&cfg, "P2PSHIM_MIN_BYTES=4K", NULL) == 0);
    CHECK(cfg.min_bytes == 4096);
    CHECK(parse(&cfg, "P2PSHIM_LOG_FILE=/tmp/p2pshim.log", NULL) == 0);
    CHECK_STR(cfg.log_file, "/tmp/p2pshim.log");
    CHECK(parse(&cfg, "P2PSHIM_PAIRS=0-1", NULL) == 0);
    CHECK(cfg.pair_allowed[0][1] && cfg.pair_allowed[1][0]);
    CHECK(!cfg.pair_allowed[0][2] && !cfg.pair_allowed[2][1]);

    /* Everything at once, amid other variables. */
    CHECK(parse(&cfg, "HOME=/root", "P2PSHIM_MODE=off", "P2PSHIM_LOG=debug",
                "P2PSHIM_MIN_BYTES=1M", "CUDA_VISIBLE_DEVICES=0,1",
                "P2PSHIM_LOG_FILE=/tmp/x", "P2PSHIM_DUMP_CONFIG=1",
                "P2PSHIM_PAIRS=!1:0", NULL) == 0);
    CHECK(cfg.mode == P2PSHIM_MODE_OFF);
    CHECK(cfg.log_level == P2PSHIM_LOG_DEBUG);
    CHECK(cfg.min_bytes == 1u << 20);
    CHECK_STR(cfg.log_file, "/tmp/x");
    CHECK(cfg.dump_config);
    CHECK(cfg.pair_allowed[0][1] && !cfg.pair_allowed[1][0]);

    /* An empty value is an unset one: the default, no warning. */
    CHECK(parse(&cfg, "P2PSHIM_MODE=", "P2PSHIM_LOG=", "P2PSHIM_MIN_BYTES=",
                "P2PSHIM_LOG_FILE=", "P2PSHIM_DUMP_CONFIG=", "P2PSHIM_PAIRS=",
                NULL) == 0);
    CHECK(is_default(&cfg));

    /* Like getenv, the first of duplicated entries counts. */
    CHECK(parse(&cfg, "P2PSHIM_MODE=off", "P2PSHIM_MODE=upgrade", NULL) == 0);
    CHECK(cfg.mode == P2PSHIM_MODE_OFF);
}

/* The observability variables (run log, CUPTI, record cap, topo file). */
static void test_observability_values(void)
{
    struct p2pshim_config cfg;
    char want[64];
    CHECK(parse(&cfg, NULL) == 0);
    CHECK(cfg.cupti == -1 && cfg.record_limit == 262144 && cfg.run_log[0] == '\0');
    CHECK(parse(&cfg, "P2PSHIM_RUN_LOG=/tmp/run-%p.jsonl", "P2PSHIM_CUPTI=0",
                "P2PSHIM_RECORD_LIMIT=1K", "P2PSHIM_TOPO_FILE=/t/topo.json", NULL) == 0);
    snprintf(want, sizeof want, "/tmp/run-%d.jsonl", (int)getpid());
    CHECK_STR(cfg.run_log, want);
    CHECK_STR(cfg.run_log_pattern, "/tmp/run-%p.jsonl");
    CHECK(cfg.cupti == 0 && cfg.record_limit == 1024);
    /* The tool's variables: no warning, nothing set. */
    CHECK(parse(&cfg, "P2PSHIM_LIBRARY=/x/libp2pshim.so", "P2PSHIM_TOPO_FILE=/t/t.json",
                NULL) == 0);
    CHECK(is_default(&cfg));
    CHECK(parse(&cfg, "P2PSHIM_CUPTI=yes", NULL) == 0 && cfg.cupti == 1);
    CHECK(parse(&cfg, "P2PSHIM_CUPTI=maybe", NULL) == 1 && cfg.cupti == -1);
    CHECK(parse(&cfg, "P2PSHIM_RECORD_LIMIT=0", NULL) == 1 && cfg.record_limit == 262144);
    CHECK(parse(&cfg, "P2PSHIM_RECORD_LIMIT=-5", NULL) == 1 && cfg.record_limit == 262144);
    CHECK(parse(&cfg, "P2PSHIM_MODE=watch", NULL) == 1 && cfg.mode == P2PSHIM_MODE_UPGRADE);
}

static char dump_lines[24][1024];
static void round_trip(const struct p2pshim_config *cfg, const char *pairs_want);

/* P2PSHIM_LINK_IDLE_MS: off by default, milliseconds, bad values kept. */
static void test_link_idle(void)
{
    struct p2pshim_config cfg;
    CHECK(parse(&cfg, NULL) == 0 && cfg.link_idle_ms == 0);
    CHECK(parse(&cfg, "P2PSHIM_LINK_IDLE_MS=250", NULL) == 0 && cfg.link_idle_ms == 250);
    round_trip(&cfg, NULL);
    CHECK_STR(dump_lines[NVARS - 4], "config P2PSHIM_LINK_IDLE_MS=250");
    CHECK(parse(&cfg, "P2PSHIM_LINK_IDLE_MS=soon", NULL) == 1 && cfg.link_idle_ms == 0);
    CHECK(strstr(lines[0], "P2PSHIM_LINK_IDLE_MS=\"soon\": not a count of milliseconds") ==
          lines[0]);
    CHECK(parse(&cfg, "P2PSHIM_LINK_IDLE_MS=-5", NULL) == 1 && cfg.link_idle_ms == 0);
}

/* P2PSHIM_POOL_RELAY: 96M by default, 1M multiples up to 128M, 0 off. */
static void test_pool_relay(void)
{
    struct p2pshim_config cfg;
    CHECK(parse(&cfg, NULL) == 0 && cfg.pool_relay == (size_t)96 << 20);
    CHECK(parse(&cfg, "P2PSHIM_POOL_RELAY=0", NULL) == 0 && cfg.pool_relay == 0);
    CHECK(parse(&cfg, "P2PSHIM_POOL_RELAY=128M", NULL) == 0 &&
          cfg.pool_relay == (size_t)128 << 20);
    round_trip(&cfg, NULL);
    CHECK_STR(dump_lines[NVARS - 1], "config P2PSHIM_POOL_RELAY=128M");
    CHECK(parse(&cfg, "P2PSHIM_POOL_RELAY=129M", NULL) == 1 &&
          cfg.pool_relay == (size_t)96 << 20);
    CHECK(parse(&cfg, "P2PSHIM_POOL_RELAY=1536K", NULL) == 1 &&
          cfg.pool_relay == (size_t)96 << 20);
    CHECK(strstr(lines[0], "a multiple of 1M between 0 and 128M") != NULL);
}

/* The bounce variables (host-bounced copies). */
static void test_bounce_values(void)
{
    struct p2pshim_config cfg;
    CHECK(parse(&cfg, NULL) == 0);
    CHECK(cfg.bounce == P2PSHIM_BOUNCE_AUTO && cfg.bounce_budget_pct == 25 &&
          cfg.bounce_budget == 0 && cfg.bounce_chunk == ((size_t)2 << 20) &&
          cfg.bounce_min == 0);
    CHECK(parse(&cfg, "P2PSHIM_BOUNCE_MIN=256K", NULL) == 0 &&
          cfg.bounce_min == ((size_t)256 << 10));
    round_trip(&cfg, NULL);
    CHECK_STR(dump_lines[NVARS - 7], "config P2PSHIM_BOUNCE_MIN=256K");
    CHECK(parse(&cfg, "P2PSHIM_BOUNCE_MIN=AUTO", NULL) == 0 && cfg.bounce_min == 0);
    round_trip(&cfg, NULL);
    CHECK_STR(dump_lines[NVARS - 7], "config P2PSHIM_BOUNCE_MIN=auto");
    CHECK(parse(&cfg, "P2PSHIM_BOUNCE=Lazy", "P2PSHIM_BOUNCE_BUDGET=512M",
                "P2PSHIM_BOUNCE_CHUNK=64K", NULL) == 0);
    CHECK(cfg.bounce == P2PSHIM_BOUNCE_LAZY && cfg.bounce_budget == ((size_t)512 << 20) &&
          cfg.bounce_budget_pct == 0 && cfg.bounce_chunk == ((size_t)64 << 10));
    round_trip(&cfg, NULL);
    CHECK_STR(dump_lines[NVARS - 6], "config P2PSHIM_BOUNCE_BUDGET=512M");
    CHECK(parse(&cfg, "P2PSHIM_BOUNCE=eager", "P2PSHIM_BOUNCE_BUDGET=40%", NULL) == 0);
    CHECK(cfg.bounce == P2PSHIM_BOUNCE_EAGER && cfg.bounce_budget_pct == 40);
    round_trip(&cfg, NULL);
    CHECK_STR(dump_lines[NVARS - 6], "config P2PSHIM_BOUNCE_BUDGET=40%");
    CHECK(parse(&cfg, "P2PSHIM_BOUNCE=off", "P2PSHIM_BOUNCE_BUDGET=0", NULL) == 0);
    CHECK(cfg.bounce == P2PSHIM_BOUNCE_OFF && cfg.bounce_budget == 0 &&
          cfg.bounce_budget_pct == 0);
    round_trip(&cfg, NULL);

}

static void test_bad_values(void)
{
    struct p2pshim_config cfg;
    static const struct {
        const char *env, *want; /* want: the whole warning, or a prefix */
    } bad[] = {
        {"P2PSHIM_MIN_BYTES=12Q",
         "P2PSHIM_MIN_BYTES=\"12Q\": not a byte count (digits with optional "
         "K/M/G); keeping 0"},
        {"P2PSHIM_MODE=fast",
         "P2PSHIM_MODE=\"fast\": not a mode (upgrade, observe or off); keeping "
         "upgrade"},
        {"P2PSHIM_MODE=upgrade ",
         "P2PSHIM_MODE=\"upgrade \": not a mode (upgrade, observe or off); keeping "
         "upgrade"},
        {"P2PSHIM_LOG=verbose",
         "P2PSHIM_LOG=\"verbose\": not a log level (error, warn, info or "
         "debug); keeping warn"},
        {"P2PSHIM_DUMP_CONFIG=2",
         "P2PSHIM_DUMP_CONFIG=\"2\": not a switch (1/0, yes/no, true/false, "
         "on/off); keeping 0"},
        {"P2PSHIM_PAIRS=0:x",
         "P2PSHIM_PAIRS=\"0:x\": entry 1: expected a device ordinal or *; "
         "keeping all pairs"},
        {"P2PSHIM_PAIRS=0-1,32:0",
         "P2PSHIM_PAIRS=\"0-1,32:0\": entry 2: device 32 out of range (0-31); "
         "keeping all pairs"},
        {"P2PSHIM_MIN_BYTES=-1", "P2PSHIM_MIN_BYTES=\"-1\": not a byte"},
        {"P2PSHIM_MIN_BYTES=99999999999999999999",
         "P2PSHIM_MIN_BYTES=\"99999999999999999999\": not a byte"},
        {"P2PSHIM_BOUNCE=fast",
         "P2PSHIM_BOUNCE=\"fast\": not a bounce mode (auto, lazy, eager or off); "
         "keeping auto"},
        {"P2PSHIM_BOUNCE_BUDGET=0%",
         "P2PSHIM_BOUNCE_BUDGET=\"0%\": not a byte count (K/M/G) or a percentage "
         "(1%-100%); keeping 25%"},
        {"P2PSHIM_BOUNCE_BUDGET=101%", "P2PSHIM_BOUNCE_BUDGET=\"101%\": not a byte"},
        {"P2PSHIM_BOUNCE_BUDGET=%", "P2PSHIM_BOUNCE_BUDGET=\"%\": not a byte"},
        {"P2PSHIM_BOUNCE_BUDGET=5K%", "P2PSHIM_BOUNCE_BUDGET=\"5K%\": not a byte"},
        {"P2PSHIM_BOUNCE_BUDGET=lots", "P2PSHIM_BOUNCE_BUDGET=\"lots\": not a byte"},
        {"P2PSHIM_BOUNCE_CHUNK=1000",
         "P2PSHIM_BOUNCE_CHUNK=\"1000\": not a multiple of 4K between 4K and 1G; "
         "keeping 2097152"},
        {"P2PSHIM_BOUNCE_CHUNK=2G", "P2PSHIM_BOUNCE_CHUNK=\"2G\": not a multiple"},
        {"P2PSHIM_BOUNCE_MIN=4K",
         "P2PSHIM_BOUNCE_MIN=\"4K\": not auto or a byte count (K/M/G) of at least 64K; "
         "keeping auto"},
        {"P2PSHIM_BOUNCE_MIN=big", "P2PSHIM_BOUNCE_MIN=\"big\": not auto or a byte"},
        {"P2PSHIM_BOUNCE_CHUNK=6K", "P2PSHIM_BOUNCE_CHUNK=\"6K\": not a multiple"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(parse(&cfg, bad[i].env, NULL) == 1);
        CHECK(is_default(&cfg));
        if (strncmp(lines[0], bad[i].want, strlen(bad[i].want)) != 0) {
            fprintf(stderr, "%s:%d: warning \"%s\", want \"%s\"\n", __FILE__,
                    __LINE__, lines[0], bad[i].want);
            check_failures++;
        }
        CHECK(strchr(lines[0], '\n') == NULL);
    }

}

/* A bad value keeps the default, not an earlier good one, and each bad
 * variable warns once: one per variable, none for the good ones; the
 * warning line is short and clean. */
static void test_bad_values_warn_once(void)
{
    struct p2pshim_config cfg;
    CHECK(parse(&cfg, "P2PSHIM_MODE=x", "P2PSHIM_LOG=y", "P2PSHIM_MIN_BYTES=z",
                "P2PSHIM_DUMP_CONFIG=w", "P2PSHIM_PAIRS=v", "P2PSHIM_LOG_FILE=ok",
                NULL) == 5);
    CHECK(cfg.mode == P2PSHIM_MODE_UPGRADE);
    CHECK(cfg.log_level == P2PSHIM_LOG_WARN);
    CHECK(cfg.min_bytes == 0 && !cfg.dump_config && all_pairs(&cfg));
    CHECK_STR(cfg.log_file, "ok");
    CHECK(strstr(lines[0], "P2PSHIM_MODE=") == lines[0]);
    CHECK(strstr(lines[4], "P2PSHIM_PAIRS=") == lines[4]);

    /* Without a callback the warnings are still counted. */
    CHECK(config_parse(&cfg, (char *[]){"P2PSHIM_MODE=x", NULL}, NULL) == 1);

    /* A long or unprintable value is shortened and cleaned in the line. */
    char env[600] = "P2PSHIM_MODE=";
    memset(env + strlen(env), 'a', 500);
    CHECK(parse(&cfg, env, NULL) == 1);
    CHECK(strlen(lines[0]) < 200);
    CHECK(strstr(lines[0], "aaa...\"") != NULL);
    CHECK(parse(&cfg, "P2PSHIM_LOG=a\nb\"c", NULL) == 1);
    CHECK(strstr(lines[0], "\"a?b?c\"") != NULL);
    CHECK(strchr(lines[0], '\n') == NULL);
}

/* The link check's variables (docs/TRUST.md). */
static void test_trust_values(void)
{
    struct p2pshim_config cfg;
    CHECK(parse(&cfg, NULL) == 0);
    CHECK(cfg.trust == P2PSHIM_TRUST_CHECK && cfg.trust_file[0] == '\0');
    CHECK(parse(&cfg, "P2PSHIM_TRUST=skip", NULL) == 0 && cfg.trust == P2PSHIM_TRUST_SKIP);
    round_trip(&cfg, NULL);
    CHECK_STR(dump_lines[NVARS - 3], "config P2PSHIM_TRUST=skip");
    CHECK(parse(&cfg, "P2PSHIM_TRUST=RECHECK", "P2PSHIM_TRUST_FILE=/tmp/t-%%", NULL) == 0);
    CHECK(cfg.trust == P2PSHIM_TRUST_RECHECK && strcmp(cfg.trust_file, "/tmp/t-%") == 0);
    round_trip(&cfg, NULL);
    CHECK(parse(&cfg, "P2PSHIM_TRUST=maybe", NULL) == 1 && cfg.trust == P2PSHIM_TRUST_CHECK);
    CHECK_STR(lines[0], "P2PSHIM_TRUST=\"maybe\": not a trust setting (check, skip or recheck);"
                        " keeping check");
}

static void test_names(void)
{
    struct p2pshim_config cfg;
    CHECK(parse(&cfg, "P2PSHIM_MODEE=off", NULL) == 1);
    CHECK(cfg.mode == P2PSHIM_MODE_UPGRADE);
    CHECK_STR(lines[0],
              "unknown variable P2PSHIM_MODEE (known: P2PSHIM_MODE, "
              "P2PSHIM_PAIRS, P2PSHIM_MIN_BYTES, P2PSHIM_LOG, "
              "P2PSHIM_LOG_FILE, P2PSHIM_DUMP_CONFIG, P2PSHIM_RUN_LOG, P2PSHIM_CUPTI, P2PSHIM_RECORD_LIMIT, "
              "P2PSHIM_BOUNCE, P2PSHIM_BOUNCE_MIN, P2PSHIM_BOUNCE_BUDGET, P2PSHIM_BOUNCE_CHUNK, "
              "P2PSHIM_LINK_IDLE_MS, P2PSHIM_TRUST, P2PSHIM_TRUST_FILE, P2PSHIM_POOL_RELAY)");

    CHECK(parse(&cfg, "P2PSHIM_=1", "P2PSHIM_LOGFILE=x", "P2PSHIM_mode=off",
                NULL) == 3);
    CHECK(strncmp(lines[0], "unknown variable P2PSHIM_ (", 27) == 0);
    CHECK(strncmp(lines[1], "unknown variable P2PSHIM_LOGFILE (", 34) == 0);
    CHECK(strncmp(lines[2], "unknown variable P2PSHIM_mode (", 31) == 0);
    CHECK(is_default(&cfg));

    /* Not ours: ignored without a word. */
    CHECK(parse(&cfg, "p2pshim_mode=off", "P2PSHIMMODE=off", "MODE=off",
                "XP2PSHIM_MODE=off", "P2PSHIM_MODE", "=", "", NULL) == 0);
    CHECK(is_default(&cfg));
}

static void test_bytes(void)
{
    static const struct {
        const char *text;
        bool ok;
        size_t value;
    } cases[] = {
        {"0", true, 0},
        {"1", true, 1},
        {"000", true, 0},
        {"4096", true, 4096},
        {"1K", true, 1024},
        {"1k", true, 1024},
        {"2M", true, 2u << 20},
        {"3G", true, (size_t)3 << 30},
        {"1KiB", true, 1024},
        {"1kib", true, 1024},
        {"1KB", true, 1024},
        {"1MB", true, 1u << 20},
        {"1MiB", true, 1u << 20},
        {"1GiB", true, (size_t)1 << 30},
        {"0K", true, 0},
        {"12B", true, 12},
        {"12b", true, 12},
        {"", false, 0},
        {"K", false, 0},
        {"-1", false, 0},
        {"+1", false, 0},
        {" 1", false, 0},
        {"1 ", false, 0},
        {"1 K", false, 0},
        {"12Q", false, 0},
        {"1KK", false, 0},
        {"1Ki", false, 0},
        {"1iB", false, 0},
        {"1KiBx", false, 0},
        {"1.5M", false, 0},
        {"0x10", false, 0},
        {"1T", false, 0},
        {"18446744073709551615", true, SIZE_MAX},
        {"18446744073709551616", false, 0},
        {"99999999999999999999999", false, 0},
        {"17179869183G", true, (size_t)17179869183 << 30},
        {"17179869184G", false, 0},
        {"18014398509481984K", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t v = 12345;
        bool ok = config_parse_bytes(cases[i].text, &v);
        if (ok != cases[i].ok || (ok && v != cases[i].value) ||
            (!ok && v != 12345)) {
            fprintf(stderr, "%s:%d: bytes \"%s\": ok %d value %zu\n", __FILE__,
                    __LINE__, cases[i].text, ok, v);
            check_failures++;
        }
    }
    size_t v = 7;
    CHECK(!config_parse_bytes(NULL, &v) && v == 7);
}

/* Parses spec into m (cleared first), checking what err says. */
static bool pairs(const char *spec,
                  bool m[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES])
{
    char err[128] = "x";
    memset(m, 0, sizeof(bool) * P2PSHIM_MAX_DEVICES * P2PSHIM_MAX_DEVICES);
    bool ok = config_parse_pairs(spec, m, err, sizeof err);
    if (ok)
        CHECK(err[0] == '\0');
    else
        CHECK(err[0] != '\0' && strlen(err) < sizeof err);
    return ok;
}

/* The off-diagonal allowed pairs among devices 0-3, as "0:1 1:0". */
static const char *small(bool m[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES])
{
    static char buf[256];
    buf[0] = '\0';
    for (int s = 0; s < 4; s++)
        for (int d = 0; d < 4; d++)
            if (s != d && m[s][d])
                snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%d:%d",
                         buf[0] ? " " : "", s, d);
    return buf;
}

static int count_allowed(bool m[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES])
{
    int n = 0;
    for (int s = 0; s < P2PSHIM_MAX_DEVICES; s++)
        for (int d = 0; d < P2PSHIM_MAX_DEVICES; d++)
            n += s != d && m[s][d];
    return n;
}

#define OFFDIAG (P2PSHIM_MAX_DEVICES * (P2PSHIM_MAX_DEVICES - 1))

static void test_pairs(void)
{
    bool m[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES];

    CHECK(pairs("0:1", m));
    CHECK_STR(small(m), "0:1");
    CHECK(count_allowed(m) == 1);
    CHECK(pairs("0-1", m));
    CHECK_STR(small(m), "0:1 1:0");
    CHECK(count_allowed(m) == 2);
    CHECK(pairs("0:1,2:3", m));
    CHECK_STR(small(m), "0:1 2:3");
    CHECK(pairs(" 0 : 1 , 2 - 3 ", m));
    CHECK_STR(small(m), "0:1 2:3 3:2");
    CHECK(pairs("\t0:1\t", m));
    CHECK_STR(small(m), "0:1");
    CHECK(pairs("*", m));
    CHECK(count_allowed(m) == OFFDIAG);
    CHECK(pairs("*:*", m));
    CHECK(count_allowed(m) == OFFDIAG);
    CHECK(pairs("*-*", m));
    CHECK(count_allowed(m) == OFFDIAG);
    CHECK(pairs("0:*", m));
    CHECK_STR(small(m), "0:1 0:2 0:3");
    CHECK(count_allowed(m) == P2PSHIM_MAX_DEVICES - 1);
    CHECK(pairs("*:2", m));
    CHECK_STR(small(m), "0:2 1:2 3:2");
    CHECK(pairs("1-*", m));
    CHECK_STR(small(m), "0:1 1:0 1:2 1:3 2:1 3:1");
    CHECK(pairs("31:30", m));
    CHECK(count_allowed(m) == 1 && m[31][30]);
    CHECK(pairs("007:1", m));
    CHECK(count_allowed(m) == 1 && m[7][1]);

    /* Exclusions alone take away from every pair. */
    CHECK(pairs("!0:1", m));
    CHECK(count_allowed(m) == OFFDIAG - 1 && !m[0][1] && m[1][0]);
    CHECK(pairs("!0-1", m));
    CHECK(count_allowed(m) == OFFDIAG - 2 && !m[0][1] && !m[1][0]);
    CHECK(pairs("!2:*", m));
    CHECK(count_allowed(m) == OFFDIAG - (P2PSHIM_MAX_DEVICES - 1));
    CHECK(!m[2][0] && m[0][2]);
    CHECK(pairs("!*", m));
    CHECK(count_allowed(m) == 0);
    CHECK(pairs("! 0:1", m));
    CHECK(!m[0][1]);

}

/* Exclusions after the named pairs; words; no entries; the diagonal. */
static void test_pairs_order_and_words(void)
{
    bool m[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES];

    /* Exclusions apply after the named pairs, wherever they are written. */
    CHECK(pairs("0-*,!0:2", m));
    CHECK_STR(small(m), "0:1 0:3 1:0 2:0 3:0");
    CHECK(pairs("!0:2,0-*", m));
    CHECK_STR(small(m), "0:1 0:3 1:0 2:0 3:0");
    CHECK(pairs("*,!1-2", m));
    CHECK(count_allowed(m) == OFFDIAG - 2 && !m[1][2] && !m[2][1]);
    CHECK(pairs("0-1,0-2,1-2,!2:*", m));
    CHECK_STR(small(m), "0:1 0:2 1:0 1:2");
    CHECK(pairs("0:1,!0:1", m));
    CHECK(count_allowed(m) == 0);

    /* Words, written back by config_dump. */
    CHECK(pairs("all", m));
    CHECK(count_allowed(m) == OFFDIAG);
    CHECK(pairs("ALL,!0:1", m));
    CHECK(count_allowed(m) == OFFDIAG - 1);
    CHECK(pairs("none", m));
    CHECK(count_allowed(m) == 0);
    CHECK(pairs("none,0:1", m));
    CHECK(count_allowed(m) == 0);
    CHECK(pairs("!all", m));
    CHECK(count_allowed(m) == 0);

    /* No entries: nothing restricted. */
    CHECK(pairs("", m));
    CHECK(count_allowed(m) == OFFDIAG);
    CHECK(pairs("   ", m));
    CHECK(count_allowed(m) == OFFDIAG);

    /* The diagonal is always allowed. */
    CHECK(pairs("!*", m));
    CHECK(m[0][0] && m[31][31]);
    CHECK(pairs("0:1", m));
    CHECK(m[5][5]);
    CHECK(pairs("3:3", m));
    CHECK(count_allowed(m) == 0 && m[3][3]);

}

/* Malformed: rejected, the matrix left untouched, the error said. */
static void test_pairs_malformed(void)
{
    bool m[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES];

    static const char *const bad[] = {
        "32:0",  "0:32",  "0-99999999999999999999", "100:1", "0",  "*:",
        ":1",    "0:",    "0:1,",      ",0:1",  "0:1,,1:0", "0;1", "0:1:2",
        "0 1:2", "a:b",   "-1:0",      "0:-1",  "!",        "!!0:1", "0=1",
        "all0",  "!none", "0:1 x",     "0:1\n", "*x",       "1*",  "0 - 1 - 2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bool before[P2PSHIM_MAX_DEVICES][P2PSHIM_MAX_DEVICES];
        memset(m, 0, sizeof m);
        m[4][9] = true;
        memcpy(before, m, sizeof m);
        char err[128] = "";
        if (config_parse_pairs(bad[i], m, err, sizeof err)) {
            fprintf(stderr, "%s:%d: pairs \"%s\" accepted\n", __FILE__,
                    __LINE__, bad[i]);
            check_failures++;
        }
        CHECK(memcmp(before, m, sizeof m) == 0);
        CHECK(err[0] != '\0');
    }
    char err[128];
    CHECK(!config_parse_pairs("0:40", m, err, sizeof err));
    CHECK(strstr(err, "40") && strstr(err, "out of range"));
    CHECK(!config_parse_pairs("0:1,7", m, err, sizeof err));
    CHECK(strstr(err, "entry 2") != NULL);
    /* A tiny error buffer is never overrun. */
    char tiny[4] = "abc";
    CHECK(!config_parse_pairs("zz", m, tiny, 2));
    CHECK(tiny[1] == '\0' && tiny[2] == 'c');
    CHECK(!config_parse_pairs("zz", m, NULL, 0));
}

static void test_log_file_names(void)
{
    struct p2pshim_config cfg;
    char want[600];
    long pid = (long)getpid();

    CHECK(parse(&cfg, "P2PSHIM_LOG_FILE=/tmp/p2p.%p.log", NULL) == 0);
    snprintf(want, sizeof want, "/tmp/p2p.%ld.log", pid);
    CHECK_STR(cfg.log_file, want);
    CHECK(parse(&cfg, "P2PSHIM_LOG_FILE=%p-%p", NULL) == 0);
    snprintf(want, sizeof want, "%ld-%ld", pid, pid);
    CHECK_STR(cfg.log_file, want);
    CHECK(parse(&cfg, "P2PSHIM_LOG_FILE=a%%pb%%", NULL) == 0);
    CHECK_STR(cfg.log_file, "a%pb%");
    CHECK(parse(&cfg, "P2PSHIM_LOG_FILE=100%", NULL) == 0);
    CHECK_STR(cfg.log_file, "100%");
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    CHECK(parse(&cfg, "P2PSHIM_LOG_FILE=%h%P", NULL) == 0);
    snprintf(want, sizeof want, "%s%%P", host);
    CHECK_STR(cfg.log_file, want);
    CHECK(parse(&cfg, "P2PSHIM_LOG_FILE=%%h.%h", NULL) == 0);
    snprintf(want, sizeof want, "%%h.%s", host);
    CHECK_STR(cfg.log_file, want);
    CHECK(parse(&cfg, "P2PSHIM_LOG_FILE=%%%p", NULL) == 0);
    snprintf(want, sizeof want, "%%%ld", pid);
    CHECK_STR(cfg.log_file, want);

    /* 511 bytes fit; 512 do not, nor does a pattern that grows past. */
    char env[1200] = "P2PSHIM_LOG_FILE=";
    size_t at = strlen(env);
    memset(env + at, 'f', 511);
    env[at + 511] = '\0';
    CHECK(parse(&cfg, env, NULL) == 0);
    CHECK(strlen(cfg.log_file) == 511);
    strcat(env, "f");
    CHECK(parse(&cfg, env, NULL) == 1);
    CHECK_STR(cfg.log_file, "");
    CHECK(strstr(lines[0], "keeping stderr") != NULL);
    memset(env + at, 'f', 500);
    env[at + 500] = '\0';
    strcat(env, "%p%p%p%p%p%p");
    CHECK(parse(&cfg, env, NULL) == 1);
    CHECK_STR(cfg.log_file, "");
}

static char dump_lines[24][1024];
static int ndump;

static void collect_dump(const char *line)
{
    if (ndump < 24)
        snprintf(dump_lines[ndump], sizeof dump_lines[0], "%s", line);
    ndump++;
}

/* Dumps cfg, checks the lines, parses them back and compares. */
static void round_trip(const struct p2pshim_config *cfg, const char *pairs_want)
{
    ndump = 0;
    config_dump(cfg, collect_dump);
    CHECK(ndump == NVARS);
    char *envp[NVARS + 1];
    int n = 0;
    for (int i = 0; i < ndump && i < NVARS; i++) {
        CHECK(strncmp(dump_lines[i], "config P2PSHIM_", 15) == 0);
        CHECK(strchr(dump_lines[i], '\n') == NULL);
        envp[n++] = dump_lines[i] + strlen("config ");
    }
    envp[n] = NULL;
    if (pairs_want) {
        char want[1100];
        snprintf(want, sizeof want, "config P2PSHIM_PAIRS=%s", pairs_want);
        CHECK_STR(dump_lines[1], want);
    }
    struct p2pshim_config back;
    nlines = 0;
    CHECK(config_parse(&back, envp, capture) == 0);
    CHECK(same_config(cfg, &back));
}

static void test_dump(void)
{
    struct p2pshim_config cfg;
    config_set_defaults(&cfg);
    ndump = 0;
    config_dump(&cfg, collect_dump);
    CHECK(ndump == NVARS);
    CHECK_STR(dump_lines[0], "config P2PSHIM_MODE=upgrade");
    CHECK_STR(dump_lines[1], "config P2PSHIM_PAIRS=all");
    CHECK_STR(dump_lines[2], "config P2PSHIM_MIN_BYTES=0");
    CHECK_STR(dump_lines[3], "config P2PSHIM_LOG=warn");
    CHECK_STR(dump_lines[4], "config P2PSHIM_LOG_FILE=");
    CHECK_STR(dump_lines[5], "config P2PSHIM_DUMP_CONFIG=0");
    round_trip(&cfg, "all");

    parse(&cfg, "P2PSHIM_MODE=OFF", "P2PSHIM_LOG=Debug",
          "P2PSHIM_MIN_BYTES=2048KiB", "P2PSHIM_LOG_FILE=/tmp/a%%b.%p",
          "P2PSHIM_DUMP_CONFIG=yes", "P2PSHIM_PAIRS=1-0", NULL);
    ndump = 0;
    config_dump(&cfg, collect_dump);
    CHECK_STR(dump_lines[0], "config P2PSHIM_MODE=off");
    CHECK_STR(dump_lines[2], "config P2PSHIM_MIN_BYTES=2M");
    CHECK_STR(dump_lines[3], "config P2PSHIM_LOG=debug");
    CHECK_STR(dump_lines[5], "config P2PSHIM_DUMP_CONFIG=1");
    char want[600];
    snprintf(want, sizeof want, "config P2PSHIM_LOG_FILE=/tmp/a%%%%b.%ld",
             (long)getpid());
    CHECK_STR(dump_lines[4], want);
    round_trip(&cfg, "0-1");

    static const struct {
        const char *spec, *dumped;
    } specs[] = {
        {"0:1", "0:1"},
        {"1:0,0:1", "0-1"},
        {"0-1,2:3", "0-1,2:3"},
        {"!*", "none"},
        {"*", "all"},
        {"!0:1", "!0:1"},
        {"!0-1,!3:2", "!0-1,!3:2"},
        {"0:*", "0:*"},
        {"!*:5", "!*:5"},
        {"*,!1-*", "!1:*,!*:1"},
        {"31-30", "30-31"},
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        char env[128];
        snprintf(env, sizeof env, "P2PSHIM_PAIRS=%s", specs[i].spec);
        CHECK(parse(&cfg, env, NULL) == 0);
        round_trip(&cfg, specs[i].dumped);
    }

}

/* Byte counts written back with the largest exact unit; a pairs line too
 * long for one line is cut. */
static void test_dump_bytes_and_long_pairs(void)
{
    struct p2pshim_config cfg;
    static const struct {
        const char *env, *line;
    } bytes[] = {
        {"P2PSHIM_MIN_BYTES=1", "config P2PSHIM_MIN_BYTES=1"},
        {"P2PSHIM_MIN_BYTES=1536", "config P2PSHIM_MIN_BYTES=1536"},
        {"P2PSHIM_MIN_BYTES=1024", "config P2PSHIM_MIN_BYTES=1K"},
        {"P2PSHIM_MIN_BYTES=3G", "config P2PSHIM_MIN_BYTES=3G"},
        {"P2PSHIM_MIN_BYTES=1048577", "config P2PSHIM_MIN_BYTES=1048577"},
        {"P2PSHIM_MIN_BYTES=18446744073709551615",
         "config P2PSHIM_MIN_BYTES=18446744073709551615"},
    };
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        CHECK(parse(&cfg, bytes[i].env, NULL) == 0);
        ndump = 0;
        config_dump(&cfg, collect_dump);
        CHECK_STR(dump_lines[2], bytes[i].line);
        round_trip(&cfg, NULL);
    }

    /* A checkerboard of pairs is too long for one line: cut, with "...". */
    config_set_defaults(&cfg);
    for (int s = 0; s < P2PSHIM_MAX_DEVICES; s++)
        for (int d = 0; d < P2PSHIM_MAX_DEVICES; d++)
            cfg.pair_allowed[s][d] = s == d || (s + d) % 2 == 0 || s < d;
    ndump = 0;
    config_dump(&cfg, collect_dump);
    CHECK(ndump == NVARS);
    CHECK(strlen(dump_lines[1]) < 1024);
    size_t len = strlen(dump_lines[1]);
    CHECK(len > 3 && strcmp(dump_lines[1] + len - 3, "...") == 0);
}

/* ---- log.c ------------------------------------------------------------- */

static char *read_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY);
    buf[0] = '\0';
    if (fd < 0)
        return buf;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

/* The identity a line of this process starts with (log.h), computed here
 * from the same sources, not by the function under test: "host:pid " and
 * " rRANK" before the space when a launcher's rank variable is set. */
static const char *expected_identity(void)
{
    static char id[512];
    char host[64] = "";
    const char *vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    const char *rank = NULL;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0] && !rank; i++)
        if (getenv(vars[i]) && getenv(vars[i])[0])
            rank = getenv(vars[i]);
    gethostname(host, sizeof host - 1);
    if (rank)
        snprintf(id, sizeof id, "%s:%ld r%s ", host, (long)getpid(), rank);
    else
        snprintf(id, sizeof id, "%s:%ld ", host, (long)getpid());
    return id;
}

static int count_lines(const char *text)
{
    int n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

static const char *tmp_dir(void)
{
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

static void test_log_before_open(void)
{
    /* Before log_open: stderr, threshold warn. */
    CHECK(p2pshim_log_threshold == P2PSHIM_LOG_WARN);
    char path[512];
    snprintf(path, sizeof path, "%s/p2pshim-test-stderr.%ld", tmp_dir(),
             (long)getpid());
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(saved >= 0 && fd >= 0);
    dup2(fd, STDERR_FILENO);
    close(fd);
    LOG_WARN("early %d", 1);
    LOG_INFO("early %d", 2);
    LOG_ERROR("early %d", 3);
    dup2(saved, STDERR_FILENO);
    close(saved);
    char text[4096];
    read_file(path, text, sizeof text);
    unlink(path);
    char want[1024];
    const char *id = expected_identity();
    snprintf(want, sizeof want, "%sp2pshim: warning: early 1\n%sp2pshim: error: early 3\n",
             id, id);
    CHECK_STR(text, want);
}

static void test_log(char *path, size_t path_len)
{
    struct p2pshim_config cfg;
    char env[600];
    snprintf(env, sizeof env, "P2PSHIM_LOG_FILE=%s/p2pshim-test-log.%%p.log",
             tmp_dir());
    CHECK(parse(&cfg, env, "P2PSHIM_LOG=info", NULL) == 0);
    snprintf(path, path_len, "%s/p2pshim-test-log.%ld.log", tmp_dir(),
             (long)getpid());
    CHECK_STR(cfg.log_file, path);
    unlink(path);

    log_open(&cfg);
    CHECK(p2pshim_log_threshold == P2PSHIM_LOG_INFO);
    /* A second call changes nothing. */
    struct p2pshim_config other;
    config_set_defaults(&other);
    log_open(&other);
    CHECK(p2pshim_log_threshold == P2PSHIM_LOG_INFO);

    errno = EXDEV;
    LOG_ERROR("an error %d", 1);
    LOG_WARN("a warning %s", "two");
    LOG_INFO("some info %u", 3u);
    LOG_DEBUG("debug must not appear %d", 4);
    log_write(P2PSHIM_LOG_DEBUG, "debug must not appear either");
    log_line("summary: 3 copies upgraded");
    CHECK(errno == EXDEV);

    /* A long line is cut at 1 KiB, newline included. */
    char big[3000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    LOG_INFO("%s", big);
    log_line(big);
    LOG_INFO("%s", "last");
    CHECK(errno == EXDEV);

    char text[16384];
    read_file(path, text, sizeof text);
    const char *id = expected_identity();
    char want[2048], zzz[512], last[512];
    snprintf(want, sizeof want,
             "%sp2pshim: error: an error 1\n"
             "%sp2pshim: warning: a warning two\n"
             "%sp2pshim: some info 3\n"
             "%sp2pshim: summary: 3 copies upgraded\n", id, id, id, id);
    snprintf(zzz, sizeof zzz, "%sp2pshim: zzz", id);
    snprintf(last, sizeof last, "%sp2pshim: last\n", id);
    CHECK(strncmp(text, want, strlen(want)) == 0);
    CHECK(strstr(text, "debug must not") == NULL);
    CHECK(count_lines(text) == 7);
    const char *l5 = text + strlen(want);
    const char *nl = strchr(l5, '\n');
    CHECK(nl && nl - l5 + 1 == 1024 && strncmp(l5, zzz, strlen(zzz)) == 0);
    if (nl) {
        const char *l6 = nl + 1;
        nl = strchr(l6, '\n');
        CHECK(nl && nl - l6 + 1 == 1024);
        CHECK(nl && strcmp(nl + 1, last) == 0);
    }
}

/* config_get: once, from any thread; its warnings go to the log, which
 * test_log has already opened (log_open does nothing the second time, so
 * they land in the same file). */
static void *get_config(void *arg)
{
    (void)arg;
    return (void *)config_get();
}

static void test_config_get(const char *path)
{
    setenv("P2PSHIM_MODE", "off", 1);
    setenv("P2PSHIM_MIN_BYTES", "64K", 1);
    setenv("P2PSHIM_DUMP_CONFIG", "on", 1);
    setenv("P2PSHIM_PAIRS", "0-1", 1);
    setenv("P2PSHIM_LOG", "bogus", 1);
    setenv("P2PSHIM_BOGUS", "1", 1);

    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, get_config, NULL) == 0);
    const struct p2pshim_config *cfg = config_get();
    for (int i = 0; i < 4; i++) {
        void *r = NULL;
        pthread_join(t[i], &r);
        CHECK(r == cfg);
    }
    CHECK(config_get() == cfg);
    CHECK(cfg->mode == P2PSHIM_MODE_OFF);
    CHECK(cfg->min_bytes == 65536);
    CHECK(cfg->dump_config);
    CHECK(cfg->log_level == P2PSHIM_LOG_WARN);
    CHECK(cfg->pair_allowed[0][1] && !cfg->pair_allowed[0][2]);

    /* Parsed once: later changes are not seen. */
    setenv("P2PSHIM_MODE", "upgrade", 1);
    CHECK(config_get()->mode == P2PSHIM_MODE_OFF);

    char text[16384];
    read_file(path, text, sizeof text);
    CHECK(strstr(text, "p2pshim: warning: P2PSHIM_LOG=\"bogus\": not a log "
                       "level (error, warn, info or debug); keeping warn\n"));
    CHECK(strstr(text, "p2pshim: warning: unknown variable P2PSHIM_BOGUS "
                       "(known: P2PSHIM_MODE, "));
    /* config_get does not dump; the shim's init does, as here. */
    CHECK(strstr(text, "config P2PSHIM_") == NULL);
    config_dump(cfg, log_line);
    read_file(path, text, sizeof text);
    CHECK(strstr(text, "p2pshim: config P2PSHIM_MODE=off\n"));
    CHECK(strstr(text, "p2pshim: config P2PSHIM_PAIRS=0-1\n"));
    CHECK(strstr(text, "p2pshim: config P2PSHIM_MIN_BYTES=64K\n"));
    CHECK(strstr(text, "p2pshim: config P2PSHIM_DUMP_CONFIG=1\n"));
    /* Each warning once, the dump once. */
    const char *first = strstr(text, "unknown variable P2PSHIM_BOGUS");
    CHECK(first && !strstr(first + 1, "unknown variable P2PSHIM_BOGUS"));
    first = strstr(text, "config P2PSHIM_MODE=off");
    CHECK(first && !strstr(first + 1, "config P2PSHIM_MODE=off"));
}

int main(void)
{
    test_defaults();
    test_good_values();
    test_observability_values();
    test_bounce_values();
    test_link_idle();
    test_pool_relay();
    test_trust_values();
    test_bad_values();
    test_bad_values_warn_once();
    test_names();
    test_bytes();
    test_pairs();
    test_pairs_order_and_words();
    test_pairs_malformed();
    test_log_file_names();
    test_dump();
    test_dump_bytes_and_long_pairs();

    char path[600];
    test_log_before_open();
    test_log(path, sizeof path);
    test_config_get(path);
    if (check_failures == 0)
        unlink(path);
    else
        fprintf(stderr, "log file kept: %s\n", path);

    if (check_failures) {
        fprintf(stderr, "test_config: %d check(s) failed\n", check_failures);
        return 1;
    }
    printf("test_config: all checks passed\n");
    return 0;
}
