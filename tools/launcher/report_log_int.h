/* The reader's state shared by report_log.c (the passes) and
 * report_join.c (decisions joined with their activity lines). */
#ifndef P2PSHIM_REPORT_LOG_INT_H
#define P2PSHIM_REPORT_LOG_INT_H

#include <uthash.h>

#include "report_internal.h"

struct key {
    int64_t segment, id;   /* both 64-bit: no padding inside the hash key */
};

struct count {
    struct key k;
    int n;
    UT_hash_handle hh;
};

struct pend {
    struct key k;
    int remaining;
    struct report_decision d;   /* copy form */
    UT_hash_handle hh;
};

/* The last footer of the process image being read. */
struct image_footer {
    bool seen;
    int64_t records, dropped, activities, unjoined;
};

struct report_log {
    struct report_info *info;  /* the file being read: files[nfiles - 1] */
    struct report_info *files;
    int nfiles, capfiles;
    struct image_footer image_footer;
    int64_t run_first_line;    /* the last run's first header */
    int run_first_segment;
    int nnames;
    char *names[REPORT_MAX_NAMES];
    struct count *counts;
    struct pend *pending;
    const struct report_visitor *v;
    const char *path;
    char *err;
    size_t errlen;
};

/* report_join.c: a decision line of process image segment (a copy at
 * once, or waiting for the activity lines pass 1 counted for it); an
 * activity line; and every waiting decision as a copy (at the end of an
 * image or of the log). */
struct json_t;
void report_join_decision(struct report_log *log, struct json_t *o, int segment);
void report_join_activity(struct report_log *log, struct json_t *o, int segment);
void report_join_flush(struct report_log *log);

#endif
