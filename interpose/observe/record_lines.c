/* The run log's lines (record_int.h, docs/LOG_FORMAT.md): a buffer of
 * JSON text, the header, and one line per queued entry. Off the hot path:
 * the writer thread and the final flush call it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hooks.h"
#include "job.h"
#include "json_text.h"
#include "log_format.h"
#include "record_int.h"

void out_flush(struct outbuf *o)
{
    o->used = o->sink != NULL ? o->sink(o->data, o->used) : 0;
}

void out_printf(struct outbuf *o, const char *fmt, ...)
{
    if (sizeof o->data - o->used < 1024)
        out_flush(o);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->data + o->used, sizeof o->data - o->used, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->used += (size_t)n < sizeof o->data - o->used ? (size_t)n
                                                         : sizeof o->data - o->used - 1;
}

static const char *const action_names[RECORD_ACTION_COUNT] = {
#define P2PSHIM_ACTION_NAME(id, name) name,
    LOG_ACTIONS(P2PSHIM_ACTION_NAME)
#undef P2PSHIM_ACTION_NAME
};

static const char *const event_names[LOG_EVENT_COUNT] = {
#define P2PSHIM_EVENT_NAME(id, name) name,
    LOG_EVENTS(P2PSHIM_EVENT_NAME)
#undef P2PSHIM_EVENT_NAME
};

static void write_end(struct outbuf *o, int dev, unsigned kind)
{
    out_printf(o, "{\"dev\":%d,\"kind\":\"%s\"}", dev, mem_kind_name((enum mem_kind)kind));
}

/* A string member, "name":"text" (json_text.h): a value that is not valid
 * UTF-8 gets "name_hex" with its exact bytes as well. */
static void write_string_member(struct outbuf *o, const char *name, const char *s)
{
    size_t n = strlen(s);
    size_t need = JSON_ESCAPED_MAX(n) + 2 * n + 2 * strlen(name) + 16;
    if (sizeof o->data - o->used < need)
        out_flush(o);
    if (sizeof o->data - o->used < need)
        n = 0; /* longer than the buffer: not one of ours */
    out_printf(o, "\"%s\":\"", name);
    o->used += json_escape(o->data + o->used, s, n);
    out_printf(o, "\"");
    if (utf8_valid(s, n))
        return;
    out_printf(o, ",\"%s_hex\":\"", name);
    json_hex(o->data + o->used, s, n);
    o->used += 2 * n;
    out_printf(o, "\"");
}

void write_entry(struct outbuf *o, const struct entry *e)
{
    if (e->type == ENTRY_DECISION) {
        const struct decision_record *r = &e->u.decision;
        out_printf(o,
                   "{\"type\":\"decision\",\"id\":%llu,\"t_ns\":%llu,\"tid\":%u,"
                   "\"api\":\"%s\",\"src\":",
                   (unsigned long long)r->id, (unsigned long long)r->t_ns, r->tid,
                   r->api < HOOK_COUNT ? hook_table[r->api].name : "?");
        write_end(o, r->src_dev, r->src_kind);
        out_printf(o, ",\"dst\":");
        write_end(o, r->dst_dev, r->dst_kind);
        out_printf(o, ",\"bytes\":%llu,\"stream\":\"0x%llx\",\"action\":\"%s\",\"reason\":\"%s\"}\n",
                   (unsigned long long)r->bytes, (unsigned long long)r->stream,
                   r->action < RECORD_ACTION_COUNT
                       ? action_names[r->action]
                       : "?",
                   route_reason_name((enum route_reason)r->reason));
    } else if (e->type == ENTRY_EVENT) {
        const struct event_entry *v = &e->u.event;
        out_printf(o, "{\"type\":\"event\",\"t_ns\":%llu,\"what\":\"%s\",\"from\":%d,\"to\":%d,"
                      "\"ok\":%s,\"duration_ns\":%llu",
                   (unsigned long long)v->t_ns,
                   (unsigned)v->what < LOG_EVENT_COUNT ? event_names[v->what] : "?", v->from,
                   v->to,
                   v->what == LOG_EVENT_PEER_ENABLE || v->what == LOG_EVENT_PEER_RELEASE ? "true"
                                                                                         : "false",
                   (unsigned long long)v->duration_ns);
        if (v->detail[0]) {
            out_printf(o, ",");
            write_string_member(o, "detail", v->detail);
        }
        out_printf(o, "}\n");
    } else if (e->type == ENTRY_ACTIVITY) {
        const struct activity_entry *a = &e->u.activity;
        out_printf(o, "{\"type\":\"activity\",\"decision\":%llu,\"kind\":\"%s\",\"bytes\":%llu,"
                      "\"start_ns\":%llu,\"end_ns\":%llu,\"src_dev\":%d,\"dst_dev\":%d,"
                      "\"stream_id\":%u}\n",
                   (unsigned long long)a->decision, a->kind, (unsigned long long)a->bytes,
                   (unsigned long long)a->start_ns, (unsigned long long)a->end_ns, a->src_dev,
                   a->dst_dev, a->stream_id);
    }
}

/* The process this image belongs to, the same in every image an exec
 * starts: the boot, and the process's start time in clock ticks since boot
 * (/proc/self/stat, field 22), which exec keeps and a new process with the
 * same pid does not share. "" when /proc cannot tell. */
static void process_identity(char *out, size_t len)
{
    char stat[1024] = "", boot[64] = "";
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, stat, sizeof stat - 1) : -1;
    stat[n > 0 ? n : 0] = '\0';
    if (fd >= 0)
        close(fd);
    fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    n = fd >= 0 ? read(fd, boot, sizeof boot - 1) : -1;
    boot[n > 0 ? n : 0] = '\0';
    boot[strcspn(boot, "\n")] = '\0';
    if (fd >= 0)
        close(fd);
    /* Fields after the command name (which may hold spaces and parentheses):
     * the state is field 3, the start time field 22. */
    const char *p = strrchr(stat, ')');
    unsigned long long start = 0;
    int field = 2;
    for (; p != NULL && *p && field < 22; p++)
        if (*p == ' ')
            field++;
    out[0] = '\0';
    if (p != NULL && field == 22 && sscanf(p, "%llu", &start) == 1)
        snprintf(out, len, "%s/%d/%llu", boot, (int)getpid(), start);
}

#ifndef P2PSHIM_VERSION
#error "P2PSHIM_VERSION must be defined by the build"
#endif

/* "name":N when text is a decimal number, else nothing (a launcher's
 * variable that is absent or odd). */
static void write_number_member(struct outbuf *o, const char *name, const char *text)
{
    char *end = NULL;
    long long v = text != NULL ? strtoll(text, &end, 10) : -1;
    if (text != NULL && end != text && *end == '\0' && v >= 0)
        out_printf(o, ",\"%s\":%lld", name, v);
}

/* The job's members of the header: rank, local_rank, world_size (each
 * when the launcher set it), CUDA_VISIBLE_DEVICES (when set), and the
 * devices the driver named (when it could). */
static void write_job(struct outbuf *o, const struct header_facts *h)
{
    write_number_member(o, "rank", job_rank());
    write_number_member(o, "local_rank", job_local_rank());
    write_number_member(o, "world_size", job_world_size());
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (visible != NULL) {
        out_printf(o, ",");
        write_string_member(o, "cuda_visible_devices", visible);
    }
    const struct devinfo *devs = h->devs;
    int n = h->ndevs;
    if (n < 0)
        return;
    out_printf(o, ",\"devices\":[");
    for (int i = 0; i < n; i++) {
        out_printf(o, "%s{\"ordinal\":%d,", i ? "," : "", devs[i].ordinal);
        write_string_member(o, "name", devs[i].name);
        out_printf(o, ",\"uuid\":\"%s\",\"pci\":\"%s\"}", devs[i].uuid, devs[i].pci);
    }
    out_printf(o, "]");
}

void write_header(struct outbuf *o, const struct header_facts *h)
{
    char exe[PATH_MAX + 1] = "", host[256] = "", process[128];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    gethostname(host, sizeof host - 1);
    process_identity(process, sizeof process);
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    out_printf(o, "{\"type\":\"header\",\"format\":\"" LOG_FORMAT_NAME "\",\"version\":%d,"
                  "\"p2pshim\":\"%s\",\"pid\":%d,\"ppid\":%d,\"process\":\"%s\",",
               LOG_FORMAT_VERSION, P2PSHIM_VERSION, (int)getpid(), (int)getppid(), process);
    write_string_member(o, "exe", exe);
    out_printf(o, ",");
    write_string_member(o, "host", host);
    write_job(o, h);
    out_printf(o, ",\"mode\":\"%s\",", h->mode);
    write_string_member(o, "cupti", h->cupti);
    out_printf(o, ",\"clock_ns\":%llu,\"cupti_ns\":%llu,\"start_unix_ms\":%llu}\n",
               (unsigned long long)h->clock_ns, (unsigned long long)h->cupti_ns,
               (unsigned long long)wall.tv_sec * 1000u +
                   (unsigned long long)wall.tv_nsec / 1000000u);
}
