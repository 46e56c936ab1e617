/* What test_config's files share: the helpers in test_config.c and the
 * test functions of each file, run in order by test_config.c's main. The
 * checks of every file count in one place (check.h). */
#ifndef P2PSHIM_TEST_CONFIG_H
#define P2PSHIM_TEST_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define P2PSHIM_CHECK_SHARED_COUNT
#include "../check.h"
#include "config.h"
#include "log.h"

/* Number of variables in the one list. */
#define COUNT_VAR(name, what) +1
#define NVARS (0 P2PSHIM_CONFIG_VARS(COUNT_VAR))

/* The warnings of the last parse() (or round_trip()), one a line; nlines
 * counts them all, even past MAX_LINES. */
#define MAX_LINES 64
extern char lines[MAX_LINES][1024];
extern int nlines;
void capture(const char *line);

/* Parses a NULL-terminated list of "NAME=value" strings into *cfg,
 * capturing the warnings in lines[]; returns config_parse's count. */
int parse(struct p2pshim_config *cfg, ...);
bool all_pairs(const struct p2pshim_config *cfg);
bool same_config(const struct p2pshim_config *a, const struct p2pshim_config *b);
bool is_default(const struct p2pshim_config *cfg);

/* The lines of the last config_dump into collect_dump. */
extern char dump_lines[24][1024];
extern int ndump;
void collect_dump(const char *line);
/* Dumps cfg, checks the lines, parses them back and compares; pairs_want,
 * when not NULL, is the P2PSHIM_PAIRS line's value. */
void round_trip(const struct p2pshim_config *cfg, const char *pairs_want);

/* test_config_values.c */
void test_defaults(void);
void test_good_values(void);
void test_observability_values(void);
void test_bounce_values(void);
void test_link_idle(void);
void test_pool_relay(void);
void test_trust_values(void);
void test_bad_values(void);
void test_bad_values_warn_once(void);
void test_names(void);
void test_log_file_names(void);

/* test_config_pairs.c */
void test_bytes(void);
void test_pairs(void);
void test_pairs_order_and_words(void);
void test_pairs_malformed(void);
void test_dump(void);
void test_dump_bytes_and_long_pairs(void);

/* test_config_log.c: test_log opens the log for good (path: its file);
 * test_config_get's warnings land there. */
void test_log_before_open(void);
void test_log(char *path, size_t path_len);
void test_config_get(const char *path);

#endif
