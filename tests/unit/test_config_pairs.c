/* test_config, grammars and the dump: byte counts, the pairs grammar,
 * and config_dump's lines parsed back. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test_config.h"

void test_bytes(void)
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

void test_pairs(void)
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
void test_pairs_order_and_words(void)
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
void test_pairs_malformed(void)
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

void test_dump(void)
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
void test_dump_bytes_and_long_pairs(void)
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
