/* The exit summary's counters (interpose/observe/stats.c): byte counts and the
 * totals over pairs stop at UINT64_MAX instead of wrapping to a small
 * figure, per pair and in the "summary total" line. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "log.h"
#include "stats.h"

/* stats_report's lines, read back from a temporary file put at fd 2. */
static void report_text(char *buf, size_t len)
{
    FILE *tmp = tmpfile();
    REQUIRE(tmp != NULL);
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    stats_report();
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(buf, 1, len - 1, tmp);
    buf[n] = '\0';
    fclose(tmp);
}

int main(void)
{
    static char text[1 << 14];
    struct stats_pair p;
    /* Two copies whose bytes sum past 2^64, on one pair and over two. */
    stats_count(0, 1, ROUTE_UPGRADED, SIZE_MAX - 10);
    stats_count(0, 1, ROUTE_UPGRADED, 100);
    stats_get_pair(0, 1, &p);
    CHECK(p.copies == 2 && p.upgraded == 2);
    CHECK_MSG(p.bytes == UINT64_MAX, "pair bytes %llu", (unsigned long long)p.bytes);
    CHECK_MSG(p.upgraded_bytes == UINT64_MAX, "pair upgraded bytes %llu",
              (unsigned long long)p.upgraded_bytes);
    stats_count(1, 0, ROUTE_NO_PEER_CAPABILITY, 4096);
    stats_get_pair(1, 0, &p);
    CHECK(p.copies == 1 && p.upgraded == 0 && p.bytes == 4096);
    stats_count(-1, -1, ROUTE_NOT_CROSS_HOST, SIZE_MAX);
    stats_count(-1, -1, ROUTE_NOT_CROSS_HOST, 1);

    p2pshim_log_threshold = P2PSHIM_LOG_INFO;
    report_text(text, sizeof text);
    CHECK_MSG(strstr(text, "summary pair=0->1 copies=2 upgraded=2 passed=0 "
                           "bytes=18446744073709551615 upgraded_bytes=18446744073709551615") != NULL,
              "%s", text);
    CHECK_MSG(strstr(text, "summary total copies=3 upgraded=2 passed=1 "
                           "bytes=18446744073709551615 upgraded_bytes=18446744073709551615") != NULL,
              "%s", text);
    CHECK_MSG(strstr(text, "summary local copies=2 bytes=18446744073709551615 ") != NULL, "%s",
              text);

    /* Small counts still add exactly. */
    stats_reset();
    stats_count(0, 1, ROUTE_UPGRADED, 1000);
    stats_count(0, 1, ROUTE_UPGRADED, 24);
    stats_get_pair(0, 1, &p);
    CHECK(p.copies == 2 && p.bytes == 1024 && p.upgraded_bytes == 1024);
    return check_report();
}
