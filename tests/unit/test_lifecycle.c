/* The lifecycle table (shim.h): the order its rows run around fork and at
 * exit, start-up rows and rows registered later alike. shim.c is built in
 * with stand-ins for the peer, record and stats functions its own rows
 * name (the ownership table's are real). Test rows take the places of the
 * thread-id cache (a start-up row here: registered before shim_init), the
 * bounce module (registered after it) and the bounce summary (report and
 * reset only). Each handler appends its mark to a trace that the parent,
 * the child and an exit check compare. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "link_life.h"
#include "peer.h"
#include "record.h"
#include "shim.h"
#include "stats.h"

static char trace[256];

static void mark(const char *m)
{
    strncat(trace, m, sizeof trace - strlen(trace) - 1);
}

#define MARK(fn, text)                                                                \
    static void fn(void)                                                              \
    {                                                                                 \
        mark(text);                                                                   \
    }
#define STAND_IN(fn, text)                                                            \
    void fn(void)                                                                     \
    {                                                                                 \
        mark(text);                                                                   \
    }
MARK(early_prepare, "Ep ")
MARK(early_parent, "Eo ")
MARK(early_child, "Ec ")
MARK(early_exit, "Ex ")
MARK(early_report, "Er ")
MARK(early_reset, "Ez ")
MARK(late_prepare, "Lp ")
MARK(late_parent, "Lo ")
MARK(late_child, "Lc ")
MARK(late_exit, "Lx ")
MARK(summary_report, "Sr ")
MARK(summary_reset, "Sz ")
STAND_IN(peer_fork_prepare, "Pp ")
STAND_IN(peer_fork_release, "Pr ")
STAND_IN(record_fork_child, "Rc ")
STAND_IN(record_flush_final, "Rx ")
STAND_IN(stats_report, "Tr ")
STAND_IN(stats_reset, "Tz ")
STAND_IN(peer_warm_thread, "Pw ")
STAND_IN(stats_warm, "Tw ")
STAND_IN(link_life_fork_prepare, "Kp ")
STAND_IN(link_life_fork_parent, "Ko ")
STAND_IN(link_life_fork_child, "Kc ")

void record_open(const char *pattern, const char *mode, size_t limit)
{
    (void)pattern, (void)mode, (void)limit;
    mark("Ro "); /* no run log is configured here: never */
}

static const struct shim_module early = {.name = "early",
                                         .fork_prepare = early_prepare,
                                         .fork_parent = early_parent,
                                         .fork_child = early_child,
                                         .at_exit = early_exit,
                                         .report = early_report,
                                         .reset = early_reset};
static const struct shim_module late = {.name = "late",
                                        .fork_prepare = late_prepare,
                                        .fork_parent = late_parent,
                                        .fork_child = late_child,
                                        .at_exit = late_exit};
static const struct shim_module summary = {.name = "summary",
                                           .report = summary_report,
                                           .reset = summary_reset};
static const struct shim_module intruder = {.name = "second", .at_exit = early_report};

/* Runs last of all exit handlers (registered first): the late row's exit
 * work before the start-up rows', then every report, top to bottom. */
static void check_exit_order(void)
{
    const char *want = "Lx Rx Ex Er Tr Sr ";
    if (strcmp(trace, want) != 0) {
        fprintf(stderr, "FAIL exit order \"%s\", want \"%s\"\n", trace, want);
        _exit(1);
    }
}

int main(void)
{
    atexit(check_exit_order);
    shim_register(SHIM_ROW_THREAD_ID, &early);
    shim_init();
    /* at_start: the start-up rows' columns (peer's, stats') ran in shim_init,
     * top to bottom. */
    CHECK_MSG(strcmp(trace, "Pw Tw ") == 0, "start \"%s\", want \"Pw Tw \"", trace);
    trace[0] = '\0';
    shim_register(SHIM_ROW_BOUNCE, &late);
    shim_register(SHIM_ROW_BOUNCE, &intruder); /* a place is taken once */
    shim_register(SHIM_ROW_BOUNCE_SUMMARY, &summary);
    shim_register(SHIM_ROW_COUNT, &intruder); /* no such place: ignored */

    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        /* prepare: the bounce row above the start-up ones; the child runs
         * them bottom to top, then every reset. */
        const char *want = "Lp Kp Pp Ep Ec Rc Pr Kc Ez Tz Sz Lc ";
        if (strcmp(trace, want) != 0) {
            fprintf(stderr, "FAIL child order \"%s\", want \"%s\"\n", trace, want);
            _exit(1);
        }
        _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_MSG(strcmp(trace, "Lp Kp Pp Ep Eo Pr Ko Lo ") == 0, "parent order \"%s\"", trace);
    trace[0] = '\0';
    return check_report();
}
