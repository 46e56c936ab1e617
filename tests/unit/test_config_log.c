/* test_config, the log: stderr before log_open, the log file and its
 * threshold, and config_get from several threads writing its warnings
 * there. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_config.h"

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

void test_log_before_open(void)
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

void test_log(char *path, size_t path_len)
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

void test_config_get(const char *path)
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
