#define _GNU_SOURCE
#include "trust_cache.h"

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
#include "shim_alloc.h"

static bool device_names(int dev, char *uuid, size_t uuid_len, char *bus, size_t bus_len)
{
    const struct driver_api *d = driver_api();
    CUuuid u;
    if (d->device_get_uuid_v2 == NULL || d->device_get_pci_bus_id == NULL ||
        d->device_get_uuid_v2(&u, dev) != CUDA_SUCCESS ||
        d->device_get_pci_bus_id(bus, (int)bus_len, dev) != CUDA_SUCCESS)
        return false;
    trust_uuid_text((const unsigned char *)u.bytes, uuid, uuid_len);
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
    trust_key_order(key);
    int version = 0;
    if (d->driver_get_version == NULL || d->driver_get_version(&version) != CUDA_SUCCESS)
        version = 0;
    char module[24];
    trust_module_version(module, sizeof module);
    snprintf(key->driver, sizeof key->driver, "%d/%s", version, module);
    trust_boot_id(key->boot, sizeof key->boot);
    key->iommu = trust_iommu_on();
    return true;
}

bool trust_cache_path(const struct p2pshim_config *cfg, char *out, size_t len)
{
    return trust_file_path(cfg->trust_file, out, len);
}

enum trust_verdict trust_cache_find(const char *path, const struct trust_key *key)
{
    char why[96];
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
    enum trust_verdict found = TRUST_UNKNOWN;
    bool bad = false;
    for (size_t at = 0; at < used;) {
        const char *nl = memchr(text + at, '\n', used - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : used - at;
        if (nl == NULL) {
            bad = true; /* a cut line: written by no complete store */
            break;
        }
        struct trust_line l;
        if (n > 0 && !trust_line_parse(text + at, n, &l))
            bad = true;
        else if (n > 0 && trust_key_equal(&l.key, key))
            found = l.verdict;
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
    int n = trust_key_prefix(key, line, sizeof line);
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
