/* test_config, values: the defaults, each variable's good and bad values,
 * the warnings, unknown names and the log file name's patterns. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_config.h"

void test_defaults(void)
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

void test_good_values(void)
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
void test_observability_values(void)
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
    CHECK(parse(&cfg, "P2PSHIM_MODE=watch", NULL) == 1 && cfg.mode == P2PSHIM_MODE_OFF);
}

/* P2PSHIM_LINK_IDLE_MS: off by default, milliseconds, bad values kept. */
void test_link_idle(void)
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
void test_pool_relay(void)
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
void test_bounce_values(void)
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

/* want: the whole warning, or a prefix; as: the entry whose value the
 * bad one stands for (NULL: the default). A variable that decides what
 * the shim changes falls back to the choice that changes least. */
static const struct {
    const char *env, *want, *as;
} bad[] = {
    {"P2PSHIM_MIN_BYTES=12Q",
     "P2PSHIM_MIN_BYTES=\"12Q\": not a byte count (digits with optional "
     "K/M/G); keeping 0", NULL},
    {"P2PSHIM_MODE=fast",
     "P2PSHIM_MODE=\"fast\": not a mode (upgrade, observe or off); using off: "
     "the shim changes nothing", "P2PSHIM_MODE=off"},
    {"P2PSHIM_MODE=upgrade ",
     "P2PSHIM_MODE=\"upgrade \": not a mode (upgrade, observe or off), did you "
     "mean upgrade?; using off: the shim changes nothing", "P2PSHIM_MODE=off"},
    {"P2PSHIM_MODE=obsrve",
     "P2PSHIM_MODE=\"obsrve\": not a mode (upgrade, observe or off), did you "
     "mean observe?; using off: the shim changes nothing", "P2PSHIM_MODE=off"},
    {"P2PSHIM_MODE=UPGARDE", "P2PSHIM_MODE=\"UPGARDE\": not a mode (upgrade, "
     "observe or off), did you mean upgrade?;", "P2PSHIM_MODE=off"},
    {"P2PSHIM_LOG=verbose",
     "P2PSHIM_LOG=\"verbose\": not a log level (error, warn, info or "
     "debug); keeping warn", NULL},
    {"P2PSHIM_DUMP_CONFIG=2",
     "P2PSHIM_DUMP_CONFIG=\"2\": not a switch (1/0, yes/no, true/false, "
     "on/off); keeping 0", NULL},
    {"P2PSHIM_TRUST=sikp", "P2PSHIM_TRUST=\"sikp\": not a trust setting (check, skip "
     "or recheck), did you mean skip?; keeping check", NULL},
    {"P2PSHIM_PAIRS=0:x",
     "P2PSHIM_PAIRS=\"0:x\": entry 1: expected a device ordinal or *; "
     "upgrading no pair (none)", "P2PSHIM_PAIRS=none"},
    {"P2PSHIM_PAIRS=0-1,32:0",
     "P2PSHIM_PAIRS=\"0-1,32:0\": entry 2: device 32 out of range (0-31); "
     "upgrading no pair (none)", "P2PSHIM_PAIRS=none"},
    {"P2PSHIM_MIN_BYTES=-1", "P2PSHIM_MIN_BYTES=\"-1\": not a byte", NULL},
    {"P2PSHIM_MIN_BYTES=99999999999999999999",
     "P2PSHIM_MIN_BYTES=\"99999999999999999999\": not a byte", NULL},
    {"P2PSHIM_BOUNCE=fast",
     "P2PSHIM_BOUNCE=\"fast\": not a bounce mode (auto, lazy, eager or off); "
     "using off: no bounced copy is changed", "P2PSHIM_BOUNCE=off"},
    {"P2PSHIM_BOUNCE=lzy", "P2PSHIM_BOUNCE=\"lzy\": not a bounce mode (auto, lazy, "
     "eager or off), did you mean lazy?; using off", "P2PSHIM_BOUNCE=off"},
    {"P2PSHIM_LOG=infoo", "P2PSHIM_LOG=\"infoo\": not a log level (error, warn, info "
     "or debug), did you mean info?; keeping warn", NULL},
    {"P2PSHIM_CUPTI=ture", "P2PSHIM_CUPTI=\"ture\": not a switch (1/0, yes/no, "
     "true/false, on/off), did you mean true?; keeping the default", NULL},
    {"P2PSHIM_BOUNCE_BUDGET=0%",
     "P2PSHIM_BOUNCE_BUDGET=\"0%\": not a byte count (K/M/G) or a percentage "
     "(1%-100%); keeping 25%", NULL},
    {"P2PSHIM_BOUNCE_BUDGET=101%", "P2PSHIM_BOUNCE_BUDGET=\"101%\": not a byte", NULL},
    {"P2PSHIM_BOUNCE_BUDGET=%", "P2PSHIM_BOUNCE_BUDGET=\"%\": not a byte", NULL},
    {"P2PSHIM_BOUNCE_BUDGET=5K%", "P2PSHIM_BOUNCE_BUDGET=\"5K%\": not a byte", NULL},
    {"P2PSHIM_BOUNCE_BUDGET=lots", "P2PSHIM_BOUNCE_BUDGET=\"lots\": not a byte", NULL},
    {"P2PSHIM_BOUNCE_CHUNK=1000",
     "P2PSHIM_BOUNCE_CHUNK=\"1000\": not a multiple of 4K between 4K and 1G; "
     "keeping 2097152", NULL},
    {"P2PSHIM_BOUNCE_CHUNK=2G", "P2PSHIM_BOUNCE_CHUNK=\"2G\": not a multiple", NULL},
    {"P2PSHIM_BOUNCE_MIN=4K",
     "P2PSHIM_BOUNCE_MIN=\"4K\": not auto or a byte count (K/M/G) of at least 64K; "
     "keeping auto", NULL},
    {"P2PSHIM_BOUNCE_MIN=big", "P2PSHIM_BOUNCE_MIN=\"big\": not auto or a byte", NULL},
    {"P2PSHIM_BOUNCE_CHUNK=6K", "P2PSHIM_BOUNCE_CHUNK=\"6K\": not a multiple", NULL},
};

void test_bad_values(void)
{
    struct p2pshim_config cfg;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct p2pshim_config want;
        CHECK(parse(&want, bad[i].as, NULL) == 0);
        CHECK(parse(&cfg, bad[i].env, NULL) == 1);
        CHECK(same_config(&cfg, &want));
        CHECK(bad[i].as != NULL || is_default(&cfg));
        if (strncmp(lines[0], bad[i].want, strlen(bad[i].want)) != 0) {
            fprintf(stderr, "%s:%d: warning \"%s\", want \"%s\"\n", __FILE__,
                    __LINE__, lines[0], bad[i].want);
            check_failures++;
        }
        CHECK(strchr(lines[0], '\n') == NULL);
    }

}

/* A bad value keeps the default (or, for what decides the shim's changes,
 * the least change), not an earlier good one, and each bad
 * variable warns once: one per variable, none for the good ones; the
 * warning line is short and clean. */
void test_bad_values_warn_once(void)
{
    struct p2pshim_config cfg;
    CHECK(parse(&cfg, "P2PSHIM_MODE=x", "P2PSHIM_LOG=y", "P2PSHIM_MIN_BYTES=z",
                "P2PSHIM_DUMP_CONFIG=w", "P2PSHIM_PAIRS=v", "P2PSHIM_LOG_FILE=ok",
                NULL) == 5);
    CHECK(cfg.mode == P2PSHIM_MODE_OFF);
    CHECK(cfg.log_level == P2PSHIM_LOG_WARN);
    CHECK(cfg.min_bytes == 0 && !cfg.dump_config && !all_pairs(&cfg));
    for (int s = 0; s < P2PSHIM_MAX_DEVICES; s++)
        for (int d = 0; d < P2PSHIM_MAX_DEVICES; d++)
            CHECK(cfg.pair_allowed[s][d] == (s == d));
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
void test_trust_values(void)
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

void test_names(void)
{
    struct p2pshim_config cfg;
    CHECK(parse(&cfg, "P2PSHIM_MODEE=off", NULL) == 1);
    CHECK(cfg.mode == P2PSHIM_MODE_UPGRADE);
    CHECK_STR(lines[0], "unknown variable P2PSHIM_MODEE, did you mean P2PSHIM_MODE?");
    /* No near miss: the known names. */
    CHECK(parse(&cfg, "P2PSHIM_FROBNICATE=1", NULL) == 1);
    CHECK_STR(lines[0],
              "unknown variable P2PSHIM_FROBNICATE (known: P2PSHIM_MODE, "
              "P2PSHIM_PAIRS, P2PSHIM_MIN_BYTES, P2PSHIM_LOG, "
              "P2PSHIM_LOG_FILE, P2PSHIM_DUMP_CONFIG, P2PSHIM_RUN_LOG, P2PSHIM_CUPTI, P2PSHIM_RECORD_LIMIT, "
              "P2PSHIM_BOUNCE, P2PSHIM_BOUNCE_MIN, P2PSHIM_BOUNCE_BUDGET, P2PSHIM_BOUNCE_CHUNK, "
              "P2PSHIM_LINK_IDLE_MS, P2PSHIM_TRUST, P2PSHIM_TRUST_FILE, P2PSHIM_POOL_RELAY)");

    CHECK(parse(&cfg, "P2PSHIM_=1", "P2PSHIM_LOGFILE=x", "P2PSHIM_mode=off",
                "P2PSHIM_BOUNCEMIN=1M", "P2PSHIM_LIBRAY=/x.so", "P2PSHIM_X=1", NULL) == 6);
    CHECK(strncmp(lines[0], "unknown variable P2PSHIM_ (", 27) == 0);
    CHECK_STR(lines[1], "unknown variable P2PSHIM_LOGFILE, did you mean P2PSHIM_LOG_FILE?");
    CHECK_STR(lines[2], "unknown variable P2PSHIM_mode, did you mean P2PSHIM_MODE?");
    CHECK_STR(lines[3], "unknown variable P2PSHIM_BOUNCEMIN, did you mean P2PSHIM_BOUNCE_MIN?");
    /* The tool's variables are names a user may mean too. */
    CHECK_STR(lines[4], "unknown variable P2PSHIM_LIBRAY, did you mean P2PSHIM_LIBRARY?");
    CHECK(strncmp(lines[5], "unknown variable P2PSHIM_X (", 28) == 0);
    CHECK(is_default(&cfg));

    /* Not ours: ignored without a word. */
    CHECK(parse(&cfg, "p2pshim_mode=off", "P2PSHIMMODE=off", "MODE=off",
                "XP2PSHIM_MODE=off", "P2PSHIM_MODE", "=", "", NULL) == 0);
    CHECK(is_default(&cfg));
}

void test_log_file_names(void)
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
