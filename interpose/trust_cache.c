#define _GNU_SOURCE
#include "trust_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"
#include "log.h"
#include "outfile.h"
#include "route.h"
#include "shim_alloc.h"

/* Each line: MAGIC, then the key's fields, then "verdict=WORD", then
 * optionally " # note". */
#define TRUST_MAGIC "p2pshim-trust-1"
#define TRUST_FILE_MAX ((size_t)64 << 10)

const char *trust_verdict_name(enum trust_verdict v)
{
    switch (v) {
    case TRUST_TRUSTED: return "trusted";
    case TRUST_UNTRUSTED: return route_reason_name(ROUTE_LINK_UNTRUSTED);
    case TRUST_SLOWER: return route_reason_name(ROUTE_LINK_SLOWER);
    default: return "unknown";
    }
}

/* The first line of a small file, without its newline, or "-". Spaces
 * become '_' (a field of the key holds no space). */
static void read_word(const char *path, char *out, size_t len)
{
    snprintf(out, len, "-");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, len - 1);
    close(fd);
    if (n <= 0) {
        snprintf(out, len, "-");
        return;
    }
    out[n] = '\0';
    out[strcspn(out, "\n")] = '\0';
    for (char *p = out; *p; p++)
        if (*p == ' ' || *p == '\t')
            *p = '_';
}

static bool folder_has_entries(const char *path)
{
    DIR *d = opendir(path);
    if (d == NULL)
        return false;
    bool any = false;
    for (struct dirent *e; !any && (e = readdir(d)) != NULL;)
        any = e->d_name[0] != '.';
    closedir(d);
    return any;
}

static bool device_names(int dev, char *uuid, size_t uuid_len, char *bus, size_t bus_len)
{
    const struct driver_api *d = driver_api();
    CUuuid u;
    if (d->device_get_uuid_v2 == NULL || d->device_get_pci_bus_id == NULL ||
        d->device_get_uuid_v2(&u, dev) != CUDA_SUCCESS ||
        d->device_get_pci_bus_id(bus, (int)bus_len, dev) != CUDA_SUCCESS)
        return false;
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(uuid, uuid_len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    for (char *p = bus; *p; p++)
        if (*p == ' ')
            *p = '_';
    return true;
}

bool trust_key_make(int dev_a, int dev_b, struct trust_key *key)
{
    const struct driver_api *d = driver_api();
    memset(key, 0, sizeof *key);
    if (!device_names(dev_a, key->uuid[0], sizeof key->uuid[0], key->bus[0],
                      sizeof key->bus[0]) ||
        !device_names(dev_b, key->uuid[1], sizeof key->uuid[1], key->bus[1],
                      sizeof key->bus[1]))
        return false;
    if (strcmp(key->uuid[0], key->uuid[1]) > 0) {
        char t[48];
        memcpy(t, key->uuid[0], sizeof t);
        memcpy(key->uuid[0], key->uuid[1], sizeof t);
        memcpy(key->uuid[1], t, sizeof t);
        char tb[24];
        memcpy(tb, key->bus[0], sizeof tb);
        memcpy(key->bus[0], key->bus[1], sizeof tb);
        memcpy(key->bus[1], tb, sizeof tb);
    }
    int version = 0;
    if (d->driver_get_version == NULL || d->driver_get_version(&version) != CUDA_SUCCESS)
        version = 0;
    char module[24];
    read_word("/sys/module/nvidia/version", module, sizeof module);
    snprintf(key->driver, sizeof key->driver, "%d/%s", version, module);
    read_word("/proc/sys/kernel/random/boot_id", key->boot, sizeof key->boot);
    key->iommu = folder_has_entries("/sys/class/iommu") ||
                 folder_has_entries("/sys/kernel/iommu_groups");
    return true;
}

bool trust_cache_path(const struct p2pshim_config *cfg, char *out, size_t len)
{
    if (cfg->trust_file[0] != '\0')
        return snprintf(out, len, "%s", cfg->trust_file) < (int)len;
    const char *xdg = secure_getenv("XDG_CACHE_HOME"), *home = secure_getenv("HOME");
    int n;
    if (xdg != NULL && xdg[0] == '/')
        n = snprintf(out, len, "%s/p2pshim/trust", xdg);
    else if (home != NULL && home[0] == '/')
        n = snprintf(out, len, "%s/.cache/p2pshim/trust", home);
    else
        return false;
    return n > 0 && (size_t)n < len;
}

/* "MAGIC boot=.. a=UUID@BUS b=UUID@BUS driver=.. iommu=N verdict=" */
static int key_prefix(const struct trust_key *k, char *out, size_t len)
{
    return snprintf(out, len, "%s boot=%s a=%s@%s b=%s@%s driver=%s iommu=%d verdict=",
                    TRUST_MAGIC, k->boot, k->uuid[0], k->bus[0], k->uuid[1], k->bus[1],
                    k->driver, k->iommu);
}

static enum trust_verdict verdict_of(const char *word, size_t n)
{
    for (int v = TRUST_TRUSTED; v <= TRUST_SLOWER; v++) {
        const char *name = trust_verdict_name((enum trust_verdict)v);
        if (strlen(name) == n && memcmp(name, word, n) == 0)
            return (enum trust_verdict)v;
    }
    return TRUST_UNKNOWN;
}

/* One line (no newline): its verdict when it is key's, TRUST_UNKNOWN when
 * it is another key's; *bad when it is not a line of ours. */
static enum trust_verdict read_line(const char *line, size_t n, const char *prefix,
                                    size_t prefix_len, bool *bad)
{
    const char *v = memmem(line, n, " verdict=", 9);
    if (n < sizeof TRUST_MAGIC || memcmp(line, TRUST_MAGIC " ", sizeof TRUST_MAGIC) != 0 ||
        v == NULL) {
        *bad = true;
        return TRUST_UNKNOWN;
    }
    v += 9;
    size_t wn = strcspn(v, " #");
    if (v + wn > line + n)
        wn = (size_t)(line + n - v);
    enum trust_verdict verdict = verdict_of(v, wn);
    if (verdict == TRUST_UNKNOWN) {
        *bad = true;
        return TRUST_UNKNOWN;
    }
    if (n < prefix_len || memcmp(line, prefix, prefix_len) != 0)
        return TRUST_UNKNOWN;
    return verdict;
}

enum trust_verdict trust_cache_find(const char *path, const struct trust_key *key)
{
    char why[96], prefix[400];
    int fd = outfile_open_read(path, why, sizeof why);
    if (fd < 0) {
        if (errno != ENOENT && strstr(why, "No such file") == NULL)
            LOG_WARN("link verdicts in %s not read (%s); links are checked again", path, why);
        return TRUST_UNKNOWN;
    }
    size_t cap = TRUST_FILE_MAX, used = 0;
    char *text = shim_alloc(cap + 1);
    if (text == NULL) {
        close(fd);
        return TRUST_UNKNOWN;
    }
    for (ssize_t n; used < cap && (n = read(fd, text + used, cap - used)) > 0;)
        used += (size_t)n;
    close(fd);
    text[used] = '\0';
    size_t prefix_len = (size_t)key_prefix(key, prefix, sizeof prefix);
    enum trust_verdict found = TRUST_UNKNOWN;
    bool bad = false;
    for (size_t at = 0; at < used;) {
        const char *nl = memchr(text + at, '\n', used - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : used - at;
        if (nl == NULL) {
            bad = true; /* a cut line: written by no complete store */
            break;
        }
        if (n > 0 && memchr(text + at, '\0', n) == NULL) {
            enum trust_verdict v = read_line(text + at, n, prefix, prefix_len, &bad);
            if (v != TRUST_UNKNOWN)
                found = v;
        } else if (n > 0) {
            bad = true;
        }
        at += n + 1;
    }
    shim_free(text, cap + 1);
    if (bad)
        LOG_WARN("%s holds lines that are not link verdicts of this version: ignored", path);
    return found;
}

/* Creates the folder of path (and its parent) 0700 where missing. */
static void make_folders(const char *path)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir)
        return;
    *slash = '\0';
    char *up = strrchr(dir, '/');
    if (up != NULL && up != dir) {
        *up = '\0';
        mkdir(dir, 0700);
        *up = '/';
    }
    mkdir(dir, 0700);
}

void trust_cache_store(const char *path, const struct trust_key *key, enum trust_verdict v,
                       const char *note)
{
    char line[600], why[96];
    int n = key_prefix(key, line, sizeof line);
    if (n <= 0 || (size_t)n >= sizeof line)
        return;
    n += snprintf(line + n, sizeof line - (size_t)n, "%s # %s\n", trust_verdict_name(v),
                  note != NULL ? note : "");
    if ((size_t)n >= sizeof line)
        return;
    int saved = errno;
    make_folders(path);
    struct stat st;
    int trunc = lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
                (size_t)st.st_size + (size_t)n > TRUST_FILE_MAX;
    int fd = outfile_open(path, trunc ? O_TRUNC : 0, why, sizeof why);
    if (fd < 0) {
        LOG_WARN("link verdict not kept in %s (%s)", path, why);
    } else {
        if (write(fd, line, (size_t)n) != n)
            LOG_WARN("link verdict not kept in %s (short write)", path);
        close(fd);
    }
    errno = saved;
}
