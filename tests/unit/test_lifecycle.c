/* The lifecycle table (shim.h): the order its rows run at start, around
 * fork, at exit and when a context goes, start-up rows and late rows
 * alike. shim.c is built in with none of the modules whose rows it runs in
 * the library: the rows here, declared as the modules declare theirs
 * (SHIM_LIFE_ROW), take their places. A late row started before shim_init
 * (at the relay's place) counts as a start-up row; the bounce row joins
 * after it, with handlers of its own; the alias row never joins, yet its
 * device_gone runs. Each handler appends its mark to a trace that the
 * parent, the child and an exit check compare. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "shim.h"

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
#define MARK_CTX(fn, text)                                                            \
    static void fn(struct CUctx_st *ctx, int dev)                                     \
    {                                                                                 \
        (void)ctx, (void)dev;                                                         \
        mark(text);                                                                   \
    }
#define MARK_GONE(fn, text)                                                           \
    static void fn(struct CUctx_st *ctx)                                              \
    {                                                                                 \
        (void)ctx;                                                                    \
        mark(text);                                                                   \
    }
#define MARK_DEV(fn, text)                                                            \
    static void fn(int dev)                                                           \
    {                                                                                 \
        (void)dev;                                                                    \
        mark(text);                                                                   \
    }
MARK(early_prepare, "Ep ")
MARK(early_parent, "Eo ")
MARK(early_child, "Ec ")
MARK(early_exit, "Ex ")
MARK(early_report, "Er ")
MARK(early_reset, "Ez ")
MARK_CTX(early_before, "Eb ")
MARK(late_prepare, "Lp ")
MARK(late_parent, "Lo ")
MARK(late_child, "Lc ")
MARK(late_exit, "Lx ")
MARK_CTX(late_before, "Lb ")
MARK(alias_prepare, "Ap ")
MARK_DEV(alias_device, "Ad ")
MARK(summary_report, "Sr ")
MARK(summary_reset, "Sz ")
MARK(links_prepare, "Kp ")
MARK(links_parent, "Ko ")
MARK(links_child, "Kc ")
MARK_GONE(links_ctx, "Kg ")
MARK_DEV(links_device, "Kd ")
MARK(peer_warm, "Pw ")
MARK(peer_prepare, "Pp ")
MARK(peer_release, "Pr ")
MARK_GONE(peer_ctx, "Pg ")
MARK_DEV(peer_device, "Pd ")
MARK(record_init, "Ri ")
MARK(record_child, "Rc ")
MARK(record_exit, "Rx ")
MARK(stats_warm, "Tw ")
MARK(stats_report, "Tr ")
MARK(stats_reset, "Tz ")
MARK(warm, "Ww ")
MARK(nowhere, "X ")

SHIM_LIFE_ROW(late_row) = {.order = SHIM_ROW_BOUNCE,
                           .late = true,
                           .name = "late",
                           .fork_prepare = late_prepare,
                           .fork_parent = late_parent,
                           .fork_child = late_child,
                           .at_exit = late_exit,
                           .before_ctx_gone = late_before};
SHIM_LIFE_ROW(alias_row) = {.order = SHIM_ROW_ALIAS,
                            .late = true,
                            .name = "alias",
                            .fork_prepare = alias_prepare,
                            .device_gone = alias_device};
SHIM_LIFE_ROW(early_row) = {.order = SHIM_ROW_RELAY,
                            .late = true,
                            .name = "early",
                            .fork_prepare = early_prepare,
                            .fork_parent = early_parent,
                            .fork_child = early_child,
                            .at_exit = early_exit,
                            .report = early_report,
                            .reset = early_reset,
                            .before_ctx_gone = early_before};
SHIM_LIFE_ROW(links_row) = {.order = SHIM_ROW_LINKS,
                            .name = "links",
                            .fork_prepare = links_prepare,
                            .fork_parent = links_parent,
                            .fork_child = links_child,
                            .ctx_gone = links_ctx,
                            .device_gone = links_device};
SHIM_LIFE_ROW(peer_row) = {.order = SHIM_ROW_PEER,
                           .name = "peer",
                           .at_start = peer_warm,
                           .fork_prepare = peer_prepare,
                           .fork_parent = peer_release,
                           .fork_child = peer_release,
                           .ctx_gone = peer_ctx,
                           .device_gone = peer_device};
SHIM_LIFE_ROW(record_row) = {.order = SHIM_ROW_RECORD,
                             .name = "record",
                             .at_init = record_init,
                             .fork_child = record_child,
                             .at_exit = record_exit};
SHIM_LIFE_ROW(stats_row) = {.order = SHIM_ROW_STATS,
                            .name = "stats",
                            .at_start = stats_warm,
                            .report = stats_report,
                            .reset = stats_reset};
SHIM_LIFE_ROW(summary_row) = {.order = SHIM_ROW_BOUNCE_SUMMARY,
                              .late = true,
                              .name = "summary",
                              .report = summary_report,
                              .reset = summary_reset};
SHIM_LIFE_ROW(warm_row) = {.order = SHIM_ROW_BOUNCE_WARM, .name = "warm", .at_start = warm};
/* No such place: never run. */
SHIM_LIFE_ROW(stray_row) = {.order = SHIM_ROW_COUNT, .name = "stray", .at_init = nowhere,
                            .at_exit = nowhere, .report = nowhere, .device_gone = NULL};

/* Runs last of all exit handlers (registered first): the late row's exit
 * work before the start-up rows', then every report, top to bottom. */
static void check_exit_order(void)
{
    const char *want = "Lx Ex Rx Er Tr Sr ";
    if (strcmp(trace, want) != 0) {
        fprintf(stderr, "FAIL exit order \"%s\", want \"%s\"\n", trace, want);
        _exit(1);
    }
}

int main(void)
{
    atexit(check_exit_order);
    shim_life_start(SHIM_ROW_RELAY); /* before shim_init: a start-up row */
    shim_init();
    /* at_init of the start-up rows, then their at_start, top to bottom. */
    CHECK_STR(trace, "Ri Pw Tw Ww ");
    trace[0] = '\0';
    shim_life_start(SHIM_ROW_BOUNCE);
    shim_life_start(SHIM_ROW_BOUNCE); /* a row joins once: one set of handlers */
    shim_life_start(SHIM_ROW_BOUNCE_SUMMARY);
    shim_life_start(SHIM_ROW_COUNT); /* no such place: ignored */
    CHECK_STR(trace, "");

    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        /* prepare: the bounce row above the start-up ones; the child runs
         * them bottom to top, then every reset. The alias row never
         * joined: none of its fork work. */
        const char *want = "Lp Ep Kp Pp Rc Pr Kc Ec Ez Tz Sz Lc ";
        if (strcmp(trace, want) != 0) {
            fprintf(stderr, "FAIL child order \"%s\", want \"%s\"\n", trace, want);
            _exit(1);
        }
        _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_STR(trace, "Lp Ep Kp Pp Pr Ko Eo Lo ");
    trace[0] = '\0';

    /* The context columns, top to bottom, joined or not. */
    shim_life_before_ctx_gone(NULL, 0);
    CHECK_STR(trace, "Lb Eb ");
    trace[0] = '\0';
    shim_life_ctx_gone(NULL);
    CHECK_STR(trace, "Kg Pg ");
    trace[0] = '\0';
    shim_life_device_gone(0);
    CHECK_STR(trace, "Ad Kd Pd ");
    trace[0] = '\0';
    return check_report();
}
