/* p2pshim topo: shows the devices, the peer matrix and the links, and with
 * --measure times every ordered pair and writes the bandwidth table
 * (docs/LOG_FORMAT.md) that `p2pshim report` reads. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "launcher.h"
#include "topo.h"
#include "topo_internal.h"

#define MEASURE_BYTES ((size_t)64 << 20)
#define MEASURE_REPS 5

static const char topo_usage[] =
    "usage: p2pshim topo [--measure] [--json] [-o FILE]\n"
    "\n"
    "Shows the CUDA devices (name, PCI address), which pairs can use peer\n"
    "access (cuDeviceCanAccessPeer), and each pair's link: NVLink with its link\n"
    "count, NVSwitch, or the PCIe relation (PIX, PXB, PHB, NODE, SYS, as\n"
    "nvidia-smi topo -m names them), read through NVML where it is installed.\n"
    "\n"
    "options:\n"
    "  --measure        also time 64 MiB copies (cuMemcpyPeerAsync) for every\n"
    "                   ordered pair: staged (no peer access) and peer (access\n"
    "                   enabled), and write the bandwidth table to\n"
    "                   $P2PSHIM_TOPO_FILE, else $XDG_CACHE_HOME/p2pshim/topo.json,\n"
    "                   else ~/.cache/p2pshim/topo.json, for p2pshim report.\n"
    "                   Refused under the shim (libp2pshim in LD_PRELOAD).\n"
    "  --json           print JSON in the bandwidth table's format\n"
    "  -o, --output FILE  write to FILE instead of standard output\n"
    "  -h, --help       this text\n"
    "\n"
    "exit status: 0 success, 1 no CUDA driver or a CUDA error, 2 usage error.\n";

bool topo_table_path(char *out, size_t len)
{
    const char *env = getenv("P2PSHIM_TOPO_FILE");
    int n;
    if (env != NULL && env[0] != '\0') {
        n = snprintf(out, len, "%s", env);
    } else {
        /* The same rule as the report's reader (report_topo.c). */
        const char *xdg = getenv("XDG_CACHE_HOME");
        if (xdg != NULL && xdg[0] != '\0') {
            n = snprintf(out, len, "%s/p2pshim/topo.json", xdg);
        } else {
            const char *home = getenv("HOME");
            if (home == NULL || home[0] == '\0')
                return false;
            n = snprintf(out, len, "%s/.cache/p2pshim/topo.json", home);
        }
    }
    return n > 0 && (size_t)n < len;
}

/* mkdir -p of path's folder. */
static bool make_parents(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return false;
        *p = '/';
    }
    return true;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_gbps(FILE *f, double v)
{
    if (v < 0)
        fputs("null", f);
    else
        fprintf(f, "%.1f", v);
}

/* Why a figure is null, where the measurement said. */
static void json_why(FILE *f, const char *key, const char *why)
{
    if (why[0] == '\0')
        return;
    fprintf(f, ",\"%s\":", key);
    json_string(f, why);
}

/* The bandwidth table's format; unknown values are null. */
static void write_json(FILE *f, const struct topo *t)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    fputs("{\"format\":\"p2pshim-topo\",\"version\":1,\"host\":", f);
    json_string(f, host);
    fprintf(f, ",\"driver\":%d,\"nvml\":", t->driver_version);
    json_string(f, t->nvml ? "available" : t->nvml_note);
    fprintf(f, ",\"measured\":%s", t->measured ? "true" : "false");
    if (t->measured)
        fprintf(f, ",\"bytes\":%zu,\"reps\":%d", t->bytes, t->reps);
    fputs(",\n \"devices\":[", f);
    for (int i = 0; i < t->ndev; i++) {
        fprintf(f, "%s\n  {\"ordinal\":%d,\"name\":", i ? "," : "", i);
        json_string(f, t->dev[i].name);
        fputs(",\"pci\":", f);
        json_string(f, t->dev[i].pci);
        fputs(",\"uuid\":", f);
        if (t->dev[i].uuid[0])
            json_string(f, t->dev[i].uuid);
        else
            fputs("null", f);
        fputc('}', f);
    }
    fputs("],\n \"links\":[", f);
    int k = 0;
    for (int i = 0; i < t->ndev; i++)
        for (int j = 0; j < t->ndev; j++) {
            if (i == j)
                continue;
            const struct topo_link *l = &t->link[i][j];
            fprintf(f, "%s\n  {\"src\":%d,\"dst\":%d,\"can_peer\":%s,\"type\":", k++ ? "," : "",
                    i, j, l->can_peer ? "true" : "false");
            if (l->type[0])
                json_string(f, l->type);
            else
                fputs("null", f);
            if (l->nvlinks >= 0)
                fprintf(f, ",\"nvlinks\":%d", l->nvlinks);
            else
                fputs(",\"nvlinks\":null", f);
            fputs(",\"staged_gbps\":", f);
            json_gbps(f, l->staged_gbps);
            fputs(",\"peer_gbps\":", f);
            json_gbps(f, l->peer_gbps);
            json_why(f, "staged_na", l->staged_why);
            json_why(f, "peer_na", l->peer_why);
            fputc('}', f);
        }
    fputs("]}\n", f);
}

static void text_gbps(FILE *f, double v, const char *why)
{
    if (v >= 0)
        fprintf(f, " %9.1f", v);
    else if (why[0])
        fprintf(f, "  n/a (%s)", why);
    else
        fprintf(f, " %9s", "n/a");
}

static void write_text(FILE *f, const struct topo *t)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    fprintf(f, "CUDA driver %d.%d, %d device%s on %s\n", t->driver_version / 1000,
            t->driver_version % 1000 / 10, t->ndev, t->ndev == 1 ? "" : "s", host);
    for (int i = 0; i < t->ndev; i++)
        fprintf(f, "  GPU%-3d %-14s %s%s%s\n", i, t->dev[i].pci, t->dev[i].name,
                t->dev[i].uuid[0] ? "  " : "", t->dev[i].uuid);
    if (t->ndev == 0)
        return;
    fputs("\nPeer access (cuDeviceCanAccessPeer; row: from, column: to):\n       ", f);
    for (int j = 0; j < t->ndev; j++)
        fprintf(f, " GPU%-3d", j);
    fputc('\n', f);
    for (int i = 0; i < t->ndev; i++) {
        fprintf(f, "  GPU%-3d", i);
        for (int j = 0; j < t->ndev; j++)
            fprintf(f, " %-6s", i == j ? "-" : t->link[i][j].can_peer ? "yes" : "no");
        fputc('\n', f);
    }
    if (!t->nvml) {
        fprintf(f, "\nLinks: %s\n", t->nvml_note);
    } else {
        fputs("\nLinks (NVML; NV<n>: n NVLinks, else the PCIe relation):\n       ", f);
        for (int j = 0; j < t->ndev; j++)
            fprintf(f, " GPU%-3d", j);
        fputc('\n', f);
        for (int i = 0; i < t->ndev; i++) {
            fprintf(f, "  GPU%-3d", i);
            for (int j = 0; j < t->ndev; j++) {
                const struct topo_link *l = &t->link[i][j];
                char cell[24];
                if (i == j)
                    snprintf(cell, sizeof cell, "X");
                else if (strcmp(l->type, "NVLink") == 0)
                    snprintf(cell, sizeof cell, "NV%d", l->nvlinks);
                else
                    snprintf(cell, sizeof cell, "%s", l->type[0] ? l->type : "?");
                fprintf(f, " %-6s", cell);
            }
            fputc('\n', f);
        }
    }
    if (!t->measured)
        return;
    fprintf(f, "\nBandwidth (GB/s; %zu MiB cuMemcpyPeerAsync, %d timed copies):\n",
            t->bytes >> 20, t->reps);
    fprintf(f, "  %-8s %9s %9s\n", "pair", "staged", "peer");
    for (int i = 0; i < t->ndev; i++)
        for (int j = 0; j < t->ndev; j++) {
            if (i == j)
                continue;
            char pair[32];
            snprintf(pair, sizeof pair, "%d->%d", i, j);
            fprintf(f, "  %-8s", pair);
            const struct topo_link *l = &t->link[i][j];
            text_gbps(f, l->staged_gbps, l->staged_why);
            text_gbps(f, l->peer_gbps, l->peer_why);
            fputc('\n', f);
        }
}

/* Writes the table to path through a temporary file in the same folder
 * and a rename: a reader never sees half a table. */
static bool write_table(const struct topo *t, const char *path)
{
    char tmp[PATH_MAX];
    if (!make_parents(path) ||
        snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp) {
        launcher_error("cannot create the folder of %s: %s", path, strerror(errno));
        return false;
    }
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        launcher_error("cannot write %s: %s", tmp, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return false;
    }
    fchmod(fd, 0644);
    write_json(f, t);
    bool ok = fflush(f) == 0 && fsync(fd) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        launcher_error("cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return false;
    }
    return true;
}

static bool progress_tty;

static void progress(int step, int steps, int src, int dst, const char *what)
{
    if (progress_tty)
        fprintf(stderr, "\rp2pshim: measuring %d/%d: %d->%d %-6s\033[K", step, steps, src, dst,
                what);
    else
        fprintf(stderr, "p2pshim: measuring %d/%d: %d->%d %s\n", step, steps, src, dst, what);
    fflush(stderr);
}

/* Whether libp2pshim is preloaded: its timings would be the shim's. */
static bool under_shim(void)
{
    const char *p = getenv("LD_PRELOAD");
    return p != NULL && strstr(p, "libp2pshim") != NULL;
}

enum { OPT_MEASURE, OPT_JSON, OPT_OUTPUT };

static const struct cli_option topo_options[] = {
    {"measure", 0, false, OPT_MEASURE},
    {"json", 0, false, OPT_JSON},
    {"output", 'o', true, OPT_OUTPUT},
    {NULL, 0, false, 0},
};

struct topo_opts {
    bool measure, json;
    const char *output;
};

/* One option of topo (cli_parse's callback). */
static int topo_option(void *ctx, int id, const char *v)
{
    struct topo_opts *o = ctx;
    if (id == OPT_MEASURE)
        o->measure = true;
    else if (id == OPT_JSON)
        o->json = true;
    else if (v[0] == '\0') {
        launcher_error("topo: --output needs a file name");
        return LAUNCHER_EXIT_USAGE;
    } else
        o->output = v;
    return CLI_OK;
}

int topo_main(int argc, char **argv)
{
    struct topo_opts o = {false, false, NULL};
    int first;
    int rc = cli_parse("topo", argc, argv, topo_options, false, topo_option, &o, &first);
    if (rc == CLI_HELP) {
        fputs(topo_usage, stdout);
        return 0;
    }
    if (rc != CLI_OK)
        return rc;
    if (first < argc) {
        launcher_error("topo: unexpected argument '%s' (see p2pshim topo --help)", argv[first]);
        return LAUNCHER_EXIT_USAGE;
    }
    bool measure = o.measure, json = o.json;
    const char *output = o.output;
    if (measure && under_shim()) {
        launcher_error("topo --measure: refusing to measure with libp2pshim in LD_PRELOAD "
                       "(the staged figures would be the shim's); run it without the shim");
        return LAUNCHER_EXIT_FAILURE;
    }
    static struct topo t; /* 32 x 32 links: not for the stack */
    char why[256];
    if (!topo_cuda_query(&t, why, sizeof why)) {
        launcher_error("topo: %s", why);
        return LAUNCHER_EXIT_FAILURE;
    }
    topo_nvml_links(&t);
    char table[PATH_MAX];
    if (measure) {
        if (!topo_table_path(table, sizeof table)) {
            launcher_error("topo: no place for the bandwidth table (no home folder); "
                           "set P2PSHIM_TOPO_FILE");
            return LAUNCHER_EXIT_FAILURE;
        }
        progress_tty = isatty(STDERR_FILENO);
        bool ok = topo_cuda_measure(&t, MEASURE_BYTES, MEASURE_REPS, progress, why, sizeof why);
        if (progress_tty)
            fputc('\n', stderr);
        if (!ok) {
            launcher_error("topo --measure: %s", why);
            return LAUNCHER_EXIT_FAILURE;
        }
    }
    FILE *f = stdout;
    if (output != NULL && (f = fopen(output, "w")) == NULL) {
        launcher_error("topo: cannot write %s: %s", output, strerror(errno));
        return LAUNCHER_EXIT_FAILURE;
    }
    if (json)
        write_json(f, &t);
    else
        write_text(f, &t);
    if (f != stdout && fclose(f) != 0) {
        launcher_error("topo: cannot write %s: %s", output, strerror(errno));
        return LAUNCHER_EXIT_FAILURE;
    }
    if (measure) {
        if (!write_table(&t, table))
            return LAUNCHER_EXIT_FAILURE;
        fprintf(stderr, "p2pshim: bandwidth table written to %s\n", table);
    }
    return 0;
}
