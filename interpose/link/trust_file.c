#define _GNU_SOURCE
#include "trust_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "route_reason.h"

const char *trust_verdict_name(enum trust_verdict v)
{
    switch (v) {
    case TRUST_TRUSTED: return "trusted";
    case TRUST_UNTRUSTED: return route_reason_name(ROUTE_LINK_UNTRUSTED);
    case TRUST_SLOWER: return route_reason_name(ROUTE_LINK_SLOWER);
    default: return "unknown";
    }
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

/* A cursor over one line. */
struct cursor {
    const char *at, *end;
};

/* Reads "NAME" + value up to stop (a space, or '@') into out (len bytes,
 * terminated), then steps over stop. false when the name is not there,
 * the value is empty or does not fit, or stop does not follow. */
static bool field(struct cursor *c, const char *name, char stop, char *out, size_t len)
{
    size_t nn = strlen(name);
    if ((size_t)(c->end - c->at) < nn || memcmp(c->at, name, nn) != 0)
        return false;
    const char *v = c->at + nn, *e = v;
    while (e < c->end && *e != stop && *e != ' ' && *e != '@' && *e != '\0')
        e++;
    size_t vn = (size_t)(e - v);
    if (vn == 0 || vn >= len || e >= c->end || *e != stop)
        return false;
    memcpy(out, v, vn);
    out[vn] = '\0';
    c->at = e + 1;
    return true;
}

bool trust_line_parse(const char *line, size_t n, struct trust_line *out)
{
    struct cursor c = {line, line + n};
    char magic[sizeof TRUST_MAGIC + 1], iommu[4];
    struct trust_key *k = &out->key;
    memset(out, 0, sizeof *out);
    if (!field(&c, "", ' ', magic, sizeof magic) || strcmp(magic, TRUST_MAGIC) != 0 ||
        !field(&c, "boot=", ' ', k->boot, sizeof k->boot) ||
        !field(&c, "a=", '@', k->uuid[0], sizeof k->uuid[0]) ||
        !field(&c, "", ' ', k->bus[0], sizeof k->bus[0]) ||
        !field(&c, "b=", '@', k->uuid[1], sizeof k->uuid[1]) ||
        !field(&c, "", ' ', k->bus[1], sizeof k->bus[1]) ||
        !field(&c, "driver=", ' ', k->driver, sizeof k->driver) ||
        !field(&c, "iommu=", ' ', iommu, sizeof iommu) ||
        (strcmp(iommu, "0") != 0 && strcmp(iommu, "1") != 0))
        return false;
    k->iommu = iommu[0] == '1';
    static const char verdict[] = "verdict=";
    if ((size_t)(c.end - c.at) < sizeof verdict - 1 ||
        memcmp(c.at, verdict, sizeof verdict - 1) != 0)
        return false;
    c.at += sizeof verdict - 1;
    const char *w = c.at;
    while (c.at < c.end && *c.at != ' ' && *c.at != '#')
        c.at++;
    out->verdict = verdict_of(w, (size_t)(c.at - w));
    if (out->verdict == TRUST_UNKNOWN)
        return false;
    const char *hash = memchr(c.at, '#', (size_t)(c.end - c.at));
    out->note = "";
    if (hash != NULL) {
        out->note = hash + 1 + (hash + 1 < c.end && hash[1] == ' ');
        out->note_len = (size_t)(c.end - out->note);
    }
    return true;
}

int trust_key_prefix(const struct trust_key *k, char *out, size_t len)
{
    return snprintf(out, len, "%s boot=%s a=%s@%s b=%s@%s driver=%s iommu=%d verdict=",
                    TRUST_MAGIC, k->boot, k->uuid[0], k->bus[0], k->uuid[1], k->bus[1],
                    k->driver, k->iommu);
}

bool trust_key_equal(const struct trust_key *a, const struct trust_key *b)
{
    return strcmp(a->boot, b->boot) == 0 && strcmp(a->uuid[0], b->uuid[0]) == 0 &&
           strcmp(a->uuid[1], b->uuid[1]) == 0 && strcmp(a->bus[0], b->bus[0]) == 0 &&
           strcmp(a->bus[1], b->bus[1]) == 0 && strcmp(a->driver, b->driver) == 0 &&
           a->iommu == b->iommu;
}

void trust_key_order(struct trust_key *k)
{
    if (strcmp(k->uuid[0], k->uuid[1]) <= 0)
        return;
    char t[sizeof k->uuid[0]];
    memcpy(t, k->uuid[0], sizeof t);
    memcpy(k->uuid[0], k->uuid[1], sizeof t);
    memcpy(k->uuid[1], t, sizeof t);
    char tb[sizeof k->bus[0]];
    memcpy(tb, k->bus[0], sizeof tb);
    memcpy(k->bus[0], k->bus[1], sizeof tb);
    memcpy(k->bus[1], tb, sizeof tb);
}

bool trust_file_path(const char *named, char *out, size_t len)
{
    if (named != NULL && named[0] != '\0')
        return snprintf(out, len, "%s", named) < (int)len;
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

void trust_uuid_text(const unsigned char b[16], char *out, size_t len)
{
    snprintf(out, len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

void trust_read_word(const char *path, char *out, size_t len)
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

void trust_boot_id(char *out, size_t len)
{
    trust_read_word("/proc/sys/kernel/random/boot_id", out, len);
}

int trust_iommu_on(void)
{
    return folder_has_entries("/sys/class/iommu") ||
           folder_has_entries("/sys/kernel/iommu_groups");
}

void trust_module_version(char *out, size_t len)
{
    trust_read_word("/sys/module/nvidia/version", out, len);
}
