/* Internals of the run log (record.h), shared by record.c (the queue, the
 * writer thread, the file and its lifecycle) and record_lines.c (the JSON
 * lines: header, records, footer's buffer), which calls nothing of
 * record.c's. */
#ifndef P2PSHIM_RECORD_INT_H
#define P2PSHIM_RECORD_INT_H

#include <stddef.h>
#include <stdint.h>

#include "devinfo.h"
#include "record.h"

enum entry_type { ENTRY_DECISION = 1, ENTRY_EVENT, ENTRY_ACTIVITY };

struct event_entry {
    enum log_event what;
    int from, to;
    uint64_t t_ns, duration_ns;
    char detail[40];
};

struct activity_entry {
    uint64_t decision, bytes, start_ns, end_ns;
    const char *kind;       /* static strings only */
    int src_dev, dst_dev;
    uint32_t stream_id;
};

struct entry {
    int type;
    union {
        struct decision_record decision;
        struct event_entry event;
        struct activity_entry activity;
    } u;
};

struct outbuf {
    char data[1 << 16];
    size_t used;
    /* Where out_flush writes (NULL: nowhere): writes the whole lines of
     * data[0..used), moves what is left (a line not yet ended) to the
     * front and returns its length (record.c). */
    size_t (*sink)(char *data, size_t used);
};

/* Writes what o holds through o->sink, which keeps a line not yet ended. */
void out_flush(struct outbuf *o);
/* Appends to o (flushed first when nearly full). */
void out_printf(struct outbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One queued entry as a JSON line. */
void write_entry(struct outbuf *o, const struct entry *e);

/* What the header says that only record.c knows. */
struct header_facts {
    const char *mode;
    const char *cupti;
    uint64_t clock_ns, cupti_ns;
    const struct devinfo *devs; /* the devices the driver named; ndevs < 0: none */
    int ndevs;
};
/* The header line: the process, the job, and h. Calls no driver
 * function. */
void write_header(struct outbuf *o, const struct header_facts *h);

#endif
