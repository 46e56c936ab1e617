/* p2pshim trust [--show] [--clear] [--check]: the link verdicts the shim
 * keeps (docs/TRUST.md). The file is found and read as the shim finds
 * and reads it (trust_file.h, outfile.h); each line is compared with this
 * machine now (trust_check.c): the line the shim would use, or why not. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "launcher.h"
#include "outfile.h"
#include "trust_cmd.h"
#include "trust_file.h"

extern char **environ;

static const char usage_text[] =
    "usage: p2pshim trust [--show] [--clear] [--check]\n"
    "\n"
    "The link verdicts the shim keeps: before it first enables peer access\n"
    "between two GPUs it checks the link (NVML, data, speed) and caches the\n"
    "verdict per boot (docs/TRUST.md).\n"
    "\n"
    "  --show    print the cached verdicts: pair, verdict, what was measured,\n"
    "            and whether the shim uses the line here (this boot, these\n"
    "            devices, this driver) or why not (the default)\n"
    "  --clear   remove the file: every link is checked again at its next use\n"
    "  --check   check every pair of devices that can peer now, through the\n"
    "            shim (P2PSHIM_TRUST=recheck), then show the verdicts\n"
    "  -h, --help  this text\n"
    "\n"
    "The file: $P2PSHIM_TRUST_FILE, else $XDG_CACHE_HOME/p2pshim/trust, else\n"
    "~/.cache/p2pshim/trust. Exit: 0 success, 1 a file refused or a check\n"
    "failed, 2 usage, 3 libp2pshim.so not found (--check).\n";

/* Where the shim of this environment keeps its verdicts. */
static bool verdict_path(char *out, size_t len)
{
    struct p2pshim_config cfg;
    config_parse(&cfg, environ, NULL);
    if (trust_file_path(cfg.trust_file, out, len))
        return true;
    launcher_error("trust: no place for the verdicts (P2PSHIM_TRUST_FILE, XDG_CACHE_HOME "
                   "and HOME are not set to absolute paths)");
    return false;
}

/* The device ordinal with this UUID and bus id here, or -1. */
static int device_here(const struct trust_here *h, const char *uuid, const char *bus)
{
    for (int d = 0; d < h->ndev; d++)
        if (strcmp(h->uuid[d], uuid) == 0 && strcmp(h->bus[d], bus) == 0)
            return d;
    return -1;
}

/* Whether the shim here would use a line with key k: "" when it would,
 * else why not. */
static const char *state_of(const struct trust_here *h, const struct trust_key *k, int dev[2])
{
    char driver[40];
    dev[0] = device_here(h, k->uuid[0], k->bus[0]);
    dev[1] = device_here(h, k->uuid[1], k->bus[1]);
    if (strcmp(k->boot, h->boot) != 0)
        return "stale: another boot";
    if (k->iommu != h->iommu)
        return "stale: another IOMMU state";
    if (!h->driver)
        return "this boot (devices not known)";
    snprintf(driver, sizeof driver, "%d/%s", h->driver_version, h->module);
    if (strcmp(k->driver, driver) != 0)
        return "stale: another driver";
    if (dev[0] < 0 || dev[1] < 0)
        return "stale: other devices";
    return "";
}

/* Prints one verdict line; later is true when a later line of the file
 * has the same key (the shim takes the last). */
static void show_line(const struct trust_here *h, const struct trust_line *l, bool later)
{
    int dev[2];
    const char *state = state_of(h, &l->key, dev);
    char pair[32];
    if (dev[0] >= 0 && dev[1] >= 0)
        snprintf(pair, sizeof pair, "%d-%d", dev[0] < dev[1] ? dev[0] : dev[1],
                 dev[0] < dev[1] ? dev[1] : dev[0]);
    else
        snprintf(pair, sizeof pair, "?");
    if (state[0] == '\0')
        state = later ? "replaced by a later line" : "in use (this boot)";
    printf("%-6s %-15s %-30s %.*s\n", pair, trust_verdict_name(l->verdict), state,
           (int)l->note_len, l->note);
    if (dev[0] < 0 || dev[1] < 0)
        printf("       a=%s@%s b=%s@%s\n", l->key.uuid[0], l->key.bus[0], l->key.uuid[1],
               l->key.bus[1]);
}

/* Reads the whole file (at most TRUST_FILE_MAX bytes) into *text. */
static int read_verdicts(const char *path, char **text, size_t *used)
{
    char why[96];
    int fd = outfile_open_read(path, why, sizeof why);
    if (fd < 0) {
        if (errno == ENOENT || strstr(why, "No such file") != NULL) {
            printf("no link verdicts kept (%s does not exist)\n", path);
            return 0;
        }
        launcher_error("trust: %s refused (%s); the shim refuses it too", path, why);
        return LAUNCHER_EXIT_FAILURE;
    }
    *text = malloc(TRUST_FILE_MAX + 1);
    *used = 0;
    for (ssize_t n; *text != NULL && *used < TRUST_FILE_MAX &&
                    (n = read(fd, *text + *used, TRUST_FILE_MAX - *used)) > 0;)
        *used += (size_t)n;
    close(fd);
    if (*text == NULL) {
        launcher_error("trust: out of memory");
        return LAUNCHER_EXIT_FAILURE;
    }
    return 0;
}

/* Whether a line after position from has the same key as l. */
static bool replaced_later(const char *text, size_t used, size_t from, const struct trust_key *k)
{
    for (size_t at = from; at < used;) {
        const char *nl = memchr(text + at, '\n', used - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : used - at;
        struct trust_line l;
        if (nl != NULL && trust_line_parse(text + at, n, &l) && trust_key_equal(&l.key, k))
            return true;
        at += n + 1;
    }
    return false;
}

static int show(void)
{
    char path[4096], *text = NULL;
    size_t used = 0;
    if (!verdict_path(path, sizeof path))
        return LAUNCHER_EXIT_FAILURE;
    int rc = read_verdicts(path, &text, &used);
    if (rc != 0 || text == NULL)
        return rc;
    struct trust_here here;
    trust_here_query(&here);
    printf("link verdicts in %s\n", path);
    if (!here.driver)
        printf("(devices not compared: %s)\n", here.driver_why);
    printf("%-6s %-15s %-30s %s\n", "pair", "verdict", "state", "measured");
    int lines = 0, number = 0;
    for (size_t at = 0; at < used;) {
        const char *nl = memchr(text + at, '\n', used - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : used - at;
        struct trust_line l;
        number++;
        if (nl != NULL && trust_line_parse(text + at, n, &l)) {
            show_line(&here, &l, replaced_later(text, used, at + n + 1, &l.key));
            lines++;
        } else if (n > 0) {
            printf("line %d: not a link verdict of this version (the shim ignores it)\n",
                   number);
        }
        at += n + 1;
    }
    if (lines == 0)
        printf("(no verdicts)\n");
    free(text);
    return 0;
}

/* Removes the file, refusing what the shim would refuse to read. */
static int clear(void)
{
    char path[4096];
    struct stat st;
    if (!verdict_path(path, sizeof path))
        return LAUNCHER_EXIT_FAILURE;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) {
            printf("no link verdicts kept (%s does not exist)\n", path);
            return 0;
        }
        launcher_error("trust --clear: %s: %s", path, strerror(errno));
        return LAUNCHER_EXIT_FAILURE;
    }
    const char *refused = S_ISLNK(st.st_mode)   ? "a symbolic link (not followed)"
                          : !S_ISREG(st.st_mode) ? "not a regular file"
                          : st.st_uid != geteuid() ? "owned by another user"
                                                   : NULL;
    if (refused != NULL) {
        launcher_error("trust --clear: %s not removed: %s", path, refused);
        return LAUNCHER_EXIT_FAILURE;
    }
    if (unlink(path) != 0) {
        launcher_error("trust --clear: %s: %s", path, strerror(errno));
        return LAUNCHER_EXIT_FAILURE;
    }
    printf("removed %s: every link is checked again at its next use\n", path);
    return 0;
}

enum { OPT_SHOW, OPT_CLEAR, OPT_CHECK };

static const struct cli_option trust_options[] = {
    {"show", 0, false, OPT_SHOW},
    {"clear", 0, false, OPT_CLEAR},
    {"check", 0, false, OPT_CHECK},
    {NULL, 0, false, 0},
};

struct trust_opts {
    bool show, clear, check;
};

/* One option of trust (cli_parse's callback). */
static int trust_option(void *ctx, int id, const char *value)
{
    (void)value;
    struct trust_opts *o = ctx;
    if (id == OPT_SHOW)
        o->show = true;
    else if (id == OPT_CLEAR)
        o->clear = true;
    else
        o->check = true;
    return CLI_OK;
}

int trust_main(int argc, char **argv)
{
    /* --check's child, under the shim: not an option users give. */
    if (argc == 2 && strcmp(argv[1], "--probe-pairs") == 0)
        return trust_probe_pairs();
    struct trust_opts o = {false, false, false};
    int first;
    int rc = cli_parse("trust", argc, argv, trust_options, false, trust_option, &o, &first);
    if (rc == CLI_HELP) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (rc != CLI_OK)
        return rc;
    if (first < argc) {
        launcher_error("trust: unexpected argument '%s' (see p2pshim trust --help)", argv[first]);
        return LAUNCHER_EXIT_USAGE;
    }
    bool do_show = o.show, do_clear = o.clear, do_check = o.check;
    if (do_clear && do_check) {
        launcher_error("trust: --clear and --check do not go together (--check replaces "
                       "the verdicts of the pairs it checks)");
        return LAUNCHER_EXIT_USAGE;
    }
    rc = 0;
    if (do_clear)
        rc = clear();
    if (rc == 0 && do_check)
        rc = trust_check_all();
    if (rc == 0 && (do_show || do_check || !do_clear))
        rc = show();
    return rc;
}
