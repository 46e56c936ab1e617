/* Internals of p2pshim report, shared by its modules:
 *   report_log.c      reads and joins the run log (two streaming passes)
 *   report_input.c    opens a log so that it can be read twice
 *   report_read.c     reads its lines, bounded, and their numbers
 *   report_lines.c    reads one line's members
 *   report_topo.c     reads the bandwidth table
 *   report_summary.c  aggregates copies per device pair
 *   report_price.c    matches the bandwidth table to the GPUs, estimates savings
 *   report_price_est.c  the estimate from the run's own records, the verdict's basis
 *   report_exit.c     the exit line of p2pshim run in upgrade mode
 *   report_text.c, report_trace.c, report_html.c, report_svg.c,
 *   report_json.c, report_csv.c  render
 *   report_fmt.c      units and escaping
 *   report_cli.c      the command line (report_main)
 *   report_render.c   the other entry points of report.h: table, passes, output
 * Every external name starts with report_ (the launcher links beside us). */
#ifndef P2PSHIM_REPORT_INTERNAL_H
#define P2PSHIM_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "log_vocab.h"

#define REPORT_DEV_NONE (-2)   /* device member absent or not an ordinal */

/* CUPTI record kinds, as a set: a staged copy is DTOH and HTOD. */
enum {
    REPORT_KIND_PTOP = 1u << 0,
    REPORT_KIND_DTOH = 1u << 1,
    REPORT_KIND_HTOD = 1u << 2,
    REPORT_KIND_DTOD = 1u << 3,
    REPORT_KIND_OTHER = 1u << 4,
};

/* The path a copy took. */
enum report_path { REPORT_PEER, REPORT_STAGED, REPORT_OTHER, REPORT_NPATHS };

/* What CUPTI saw of one call, merged over its records. */
struct report_span {
    unsigned kinds;        /* REPORT_KIND_* set; 0: no activity */
    int records;           /* records merged (an embedded activity is one) */
    bool has_span;         /* start_ns/end_ns known */
    int64_t start_ns, end_ns;  /* CUPTI clock: first start, last end */
    int64_t duration_ns;   /* embedded duration_ns; -1 if absent */
    int64_t bytes;         /* largest record's bytes; -1 if none said */
};

/* ---- checked arithmetic (report_lines.c) ---- */
/* a + b, a - b and a * b for figures read from a log: on overflow the
 * result stops at INT64_MAX or INT64_MIN and *saturated is set (the
 * renderers then say so); it is left alone otherwise. */
int64_t report_add(int64_t a, int64_t b, bool *saturated);
int64_t report_sub(int64_t a, int64_t b, bool *saturated);
/* A double as int64, saturating (NaN: 0), setting *saturated when cut. */
int64_t report_i64_of(double v, bool *saturated);

/* ---- one line's members (report_lines.c) ---- */
struct json_t;
/* An integer member (a real is truncated); false when absent or not one. */
bool report_json_i64(struct json_t *o, const char *k, int64_t *out);
/* A string member, valid while o lives; NULL when absent or not one. */
const char *report_json_str(struct json_t *o, const char *k);
/* A device ordinal member (-1 host); REPORT_DEV_NONE when absent or odd. */
int report_json_dev(struct json_t *o, const char *k);
/* Adds one record (kinds, span, bytes; -1: unknown) to s. */
void report_span_add(struct report_span *s, unsigned kinds, bool has_span,
                     int64_t start, int64_t end, int64_t bytes);
/* Fill the structs below from a line's object (see their comments). */
struct report_decision;
struct report_activity;
struct report_event;
void report_parse_decision(struct json_t *o, struct report_decision *d);
void report_parse_activity(struct json_t *o, struct report_activity *a);
void report_parse_event(struct json_t *o, struct report_event *e);

/* The CUPTI kind name of a kind set ("PTOP", "DTOH+HTOD"); "-" for none. */
const char *report_kind_name(unsigned kinds, char *buf, size_t len);
/* Parses "PTOP", "DTOH+HTOD", ... into a set (unknown names: OTHER). */
unsigned report_kind_parse(const char *s);
/* end - start when both are known, else duration_ns; -1 when unknown. */
int64_t report_span_duration(const struct report_span *s);

/* One decision line. In the decision callback every member is as the line
 * has it (strings valid during the callback only, NULL where absent) and
 * act is its embedded activity. In the copy callback act is merged with the
 * later activity lines, bytes falls back to the records' bytes, action and
 * reason are interned (valid until report_log_free) and api, stream and the
 * kinds are NULL. */
struct report_decision {
    bool has_id, has_t, has_tid, has_bytes;
    int64_t id, t_ns, tid, bytes;
    int src_dev, dst_dev;  /* -1 host; REPORT_DEV_NONE absent */
    const char *api, *src_kind, *dst_kind, *stream, *action, *reason;
    struct report_span act;
    int segment;           /* which header (process image) it follows */
};

/* One "activity" line (a record joined after its decision was written). */
struct report_activity {
    bool has_decision, has_stream, has_bytes, has_span;
    int64_t decision, stream_id, bytes, start_ns, end_ns;
    unsigned kinds;
    const char *kind;      /* as written; valid during the callback */
    int src_dev, dst_dev;
    int segment;
};

struct report_event {
    bool has_t;
    int64_t t_ns, duration_ns;   /* duration -1 if absent */
    const char *what;            /* NULL if absent */
    int from, to;                /* REPORT_DEV_NONE if absent */
    int ok;                      /* 1, 0, or -1 absent */
    int64_t detail_bytes;        /* "detail" read as a byte count, -1 if not one */
};

/* The header of the run's first process image, with what later lines told.
 * Only the last run in the file is read (report_log.c says how runs are
 * told apart). */
#define REPORT_MAX_DEVS 16
struct report_info {
    char *exe, *host, *mode, *cupti;   /* NULL where absent */
    char *version;         /* the p2pshim that wrote it; NULL where absent */
    char *visible;         /* CUDA_VISIBLE_DEVICES; NULL where unset */
    char *process;         /* the header's process identity; NULL absent */
    int64_t ppid, rank, local_rank, world_size;   /* -1 where absent */
    int ndevs;             /* devices the header names (0: none said) */
    struct report_dev {
        char uuid[48], pci[16], name[64];
    } devs[REPORT_MAX_DEVS];
    bool has_pid, has_align, has_start;
    int64_t pid, clock_ns, cupti_ns, start_unix_ms;
    int runs;              /* runs in the file (a reused path adds one) */
    int64_t earlier_run_lines;   /* lines of earlier runs, not read */
    int segments;          /* headers of the run (exec, children sharing the path) */
    int processes;         /* distinct processes among them (1 for version 1) */
    int footers;           /* images with a footer; the figures below are the
                              sums of each image's last footer */
    int64_t f_records, f_dropped, f_activities, f_unjoined;
    int64_t last_footer_ns;   /* the latest footer's t_ns; 0 none */
    bool saturated;        /* a sum reached the 64-bit limit and stopped there */
    bool cut_short;        /* the last process image wrote no footer */
    bool torn_tail;        /* the last line was cut mid-write (ignored) */
    int64_t lines, decisions, activity_lines, orphan_activities;
    int64_t events, unknown_lines;
    /* Lines skipped as unreadable (not JSON, not an object, longer than
     * the line limit, a later header of no version read here): how
     * many, the first one's number (0: none) and why. */
    int64_t bad_lines, first_bad_line;
    char first_bad_why[96];
    /* The shim's log-cut marker: it could not write the log on (why: its
     * reason, "disk-full" and others), from that line. */
    bool log_cut;
    int64_t log_cut_line;
    char log_cut_why[48];
};

/* How a log-cut reason reads in a sentence ("disk full"). */
const char *report_cut_words(const struct report_info *in);

/* Callbacks, all optional. Per line, in file order: header (each header
 * line, with its own clock pair), decision, activity (d: the decision it
 * joins, in its copy form so far, or NULL when none is waiting for it),
 * event, footer. copy comes once per decision, when its last activity line
 * has been read (at once when none refers to it, at the end of the log or
 * of its process image when some never came). */
struct report_visitor {
    void *ctx;
    void (*header)(void *ctx, const struct report_info *info, int segment,
                   bool has_align, int64_t clock_ns, int64_t cupti_ns);
    void (*decision)(void *ctx, const struct report_decision *d);
    void (*activity)(void *ctx, const struct report_activity *a,
                     const struct report_decision *d);
    void (*copy)(void *ctx, const struct report_decision *d);
    void (*event)(void *ctx, const struct report_event *e);
};

struct report_log;
struct report_pair_index;

/* report_input.c: path ("-": standard input) opened so that it can be
 * read twice from the start (a pipe or a gzip file spooled into a
 * temporary file, gzip inflated whole); NULL with the reason in why
 * ("cannot open: No such file or directory", "truncated gzip file"). */
FILE *report_input_open(const char *path, char *why, size_t why_len);
/* report_read.c: a log's lines, one at a time, each kept up to a limit:
 * the rest of a longer line is read and dropped up to its newline, so a
 * reader holds at most the limit whatever the file holds. */
struct report_reader {
    FILE *f;
    size_t max;            /* bytes of a line kept at most */
    char *line;            /* the line's kept bytes, its newline included */
    size_t cap, kept;      /* line's room; bytes in it */
    bool newline;          /* the line ended with a newline (a last one may not) */
    char *buf;             /* read ahead of line */
    size_t pos, end;
};
/* A reader of f keeping max bytes of a line; false: no memory. */
bool report_reader_init(struct report_reader *r, FILE *f, size_t max);
/* The next line: its whole length (a last line may lack its newline),
 * r->kept of it in r->line (fewer when it is longer than r->max); -1 at
 * the end of f or on a read error (ferror(f) tells). */
int64_t report_reader_next(struct report_reader *r);
/* After f was put back to its start (or replaced by rewinding its input). */
void report_reader_reset(struct report_reader *r, FILE *f);
void report_reader_free(struct report_reader *r);
/* Parses a line (len bytes at line, which it may rewrite) as JSON: an
 * integer past the 64-bit signed range (a size written as unsigned) is
 * read as INT64_MAX (INT64_MIN below) and *clamped set; NULL as
 * json_loadb says, *err filled. */
struct json_error_t;
struct json_t *report_parse_line(char *line, size_t len, bool *clamped,
                                 struct json_error_t *err);

/* A cheap look for "type":"<type>" in a line, before parsing it. */
bool report_line_looks_like(const char *line, size_t len, const char *type);
/* The processes of the run pass 1 is in (report_log.c says how runs are
 * told apart): a header continues the run, or starts a new one. */
#define REPORT_MAX_RUN_PROCESSES 256  /* past this, every header continues the run */
struct report_run {
    int n;
    int64_t pid[REPORT_MAX_RUN_PROCESSES];
    char *process[REPORT_MAX_RUN_PROCESSES];
};
struct json_t;
bool report_run_continues(struct report_run *r, struct json_t *header);
void report_run_clear(struct report_run *r);
/* A new run: only the process just added (the last) is in it. */
void report_run_restart(struct report_run *r);

/* A reader: holds the info and the interned names. NULL: no memory. */
struct report_log *report_log_new(void);
/* Reads path through v, once per reader. Returns 0, or -1 with err set to
 * one line naming the file and line ("run.log:1: invalid JSON: ..."): the
 * file cannot be read (or read twice), or its run's first line is not a
 * version 1 or 2 header. A later line that cannot be read (not JSON, not
 * an object, longer than the line limit, a header of another version) is
 * skipped and counted (report_info's bad_lines), a last line torn
 * mid-write is ignored (torn_tail). path "-" is standard input
 * (report_input_open says how each kind of file is read). */
int report_log_read(struct report_log *log, const char *path,
                    const struct report_visitor *v, char *err, size_t errlen);
/* The first file's info (a reader reads one file or several; each
 * report_log_read adds one). */
const struct report_info *report_log_info(const struct report_log *log);
int report_log_file_count(const struct report_log *log);
const struct report_info *report_log_file(const struct report_log *log, int i);
/* Reads the job members of a header (rank, devices, ...) into in. */
void report_parse_job(struct json_t *o, struct report_info *in);
void report_info_free(struct report_info *in);
void report_log_free(struct report_log *log);

/* The run log's vocabulary (interpose/include/log_vocab.def). Actions by their
 * current names; report_parse_decision reads an older name (an alias) as
 * the current one. */
enum report_action {
#define P2PSHIM_REPORT_ACTION(id, name) REPORT_ACTION_##id,
    LOG_ACTIONS(P2PSHIM_REPORT_ACTION)
#undef P2PSHIM_REPORT_ACTION
    REPORT_ACTION_COUNT
};
const char *report_action_name(enum report_action action);
/* The action a name says (an alias included), -1 for none. */
int report_action_of(const char *name);
/* A reason's class; LOG_CLASS_OTHER for a name not in the list (or NULL). */
enum log_reason_class report_reason_class(const char *reason);
/* The event a name says, -1 for none (or NULL). */
int report_event_of(const char *name);

/* Interned action and reason names. */
#define REPORT_MAX_NAMES 64
int report_log_names(const struct report_log *log, const char ***names);
int report_log_name_index(const struct report_log *log, const char *name);

/* ---- bandwidth table ---- */
struct report_link {
    int src, dst;
    int can_peer;          /* 1, 0, -1 unknown */
    double staged_gbps, peer_gbps;   /* 0: absent */
    char type[24];         /* NVML's link type ("NVLink", "PIX", ...); "" unknown */
    int nvlinks;           /* NVLinks between the pair; -1 unknown */
};
#define REPORT_TOPO_DEVS 32
struct report_topo {
    bool loaded;
    bool forced;           /* named by --topo: used even when foreign */
    char *path;
    int nlinks;
    struct report_link *links;
    char host[64];         /* where it was measured; "" unknown */
    int ndevs;             /* devices it names, by ordinal */
    struct report_topo_dev {
        char uuid[48], pci[16];   /* "" unknown */
    } devs[REPORT_TOPO_DEVS];
};
/* The default place of the table (see report.h); NULL when no home. */
char *report_topo_default_path(void);
/* Loads path. Returns 0 (loaded), 1 (no such file: nothing loaded) or -1
 * with err set (unreadable or malformed). */
int report_topo_load(const char *path, struct report_topo *t, char *err,
                     size_t errlen);
const struct report_link *report_topo_link(const struct report_topo *t,
                                           int src, int dst);
/* The table's ordinal of GPU g, by its UUID where both name UUIDs, else
 * its PCI bus id where both name those, else the ordinal the logs gave
 * it. -1 when the table does not hold it: a GPU of another host (why
 * left alone), or one of the table's host that it does not name (why
 * says so: the table was measured with other GPUs). */
struct report_gpu;
int report_topo_ordinal(const struct report_topo *t, const struct report_gpu *g, char *why,
                        size_t why_len);
void report_topo_free(struct report_topo *t);

/* ---- summary ---- */
#define REPORT_BINS 64     /* log2 copy-size bins of the bandwidth chart */
#define REPORT_TBINS 48    /* time bins of the traffic-over-time chart */

/* The time axis shared by every pair's bins: bin i covers
 * [t0 + i * width, t0 + (i + 1) * width) ns of the logs' clock
 * (CLOCK_MONOTONIC: one axis per host; processes of one host line up). It
 * starts narrow at the first copy and doubles, right or left, to take a
 * later or earlier one, merging bins pairwise. */
struct report_timeline {
    bool any;
    int64_t t0, width;
};

struct report_bin {
    int64_t n, bytes, ns;
    double min_gbps, max_gbps;
};

struct report_pair {
    int src, dst;          /* src == dst == -1: the "local" row */
    int64_t copies, bytes, n[REPORT_NPATHS], b[REPORT_NPATHS];
    int64_t by_activity;   /* copies whose path came from CUPTI */
    int64_t act_n[REPORT_NPATHS], act_bytes[REPORT_NPATHS], act_ns[REPORT_NPATHS];
    double best_ptop_gbps; /* 0: no PTOP seen */
    int64_t cand_meas_n, cand_meas_bytes, cand_meas_ns;
    int64_t cand_unmeas_n, cand_unmeas_bytes;
    int64_t reasons[REPORT_MAX_NAMES];
    /* set by report_summary_finish */
    double peer_gbps, staged_gbps;   /* used for the estimate; 0: none */
    /* "topo" (the table's measured figure), "log" (the best PTOP copy),
     * "link" (the table's link type and NVLink count, at a documented
     * rate per link), "nvml" (the same from NVML), "assumed" (no link
     * known: PCIe at the host link's rate), or NULL */
    const char *peer_from;
    const char *no_estimate;         /* why not, when candidates lack one */
    int64_t saved_n, unest_n;
    double saved_ns, staged_ns, peer_ns;
    int64_t candidates;              /* cand_meas_n + cand_unmeas_n, saturated */
    /* The estimate from the run's own records, where the figures above
     * give no saving (report_price_estimate): est_n candidates, their
     * staged time (CUPTI's, at least bytes at the host link's rate), the
     * peer GB/s and where it came from (as peer_from), the saving
     * (never below 0). est_n 0: none. */
    int64_t est_n;
    double est_staged_ns, est_peer_gbps, est_saved_ns;
    const char *est_peer_from;
    int64_t tbytes[REPORT_TBINS];    /* bytes of copies issued per time bin */
    int64_t upgraded_bytes;          /* of the copies the shim put on the peer link */
};

#define REPORT_MAX_BOUNCE_PAIRS 64
#define REPORT_MAX_GPUS 256

/* A GPU of the job: a host and the driver's UUID (or, when the log does not
 * name its devices, the ordinal the first process saw). Pairs and bounces
 * name GPUs by their index in the summary's table: for one process that
 * is its device ordinal. */
struct report_gpu {
    bool used;
    char host[64];
    char uuid[48], pci[16], name[64];
    int ordinal;           /* in the process that named it first */
    int topo_ord;          /* its ordinal in the bandwidth table; -1 none */
};

/* One log file (a process, or the processes that shared its path). */
struct report_proc {
    int64_t copies, bytes, cross_copies, cross_bytes;
    int64_t peer_bytes, staged_bytes, candidates, candidate_bytes;
    int64_t action_bytes[REPORT_MAX_NAMES];   /* by interned action name */
    int64_t class_bytes[LOG_CLASS_COUNT];     /* by the reason's class */
    /* The span of the shim's clock the file's lines cover (header, copies,
     * events, footers): first_ns 0 and last_ns 0 when none said a time. */
    int64_t first_ns, last_ns;
    int64_t upgraded, upgraded_bytes;         /* copies the shim put on the peer link */
    int64_t upgraded_ns;                      /* their CUPTI time; -1 one was untimed */
};

struct report_summary {
    int npairs, cap;
    struct report_pair *pairs;   /* cross-GPU pairs, sorted by finish */
    struct report_pair local;    /* host memory, same device, unknown */
    struct report_pair total;    /* the sum of the pairs */
    int64_t actions[REPORT_MAX_NAMES];
    int64_t peer_enables, peer_enable_failures, enable_ns, dropped_events;
    /* GPU to GPU through host memory: "bounce" events (the shim served the
     * H2D from a snapshot) and observe mode's "would-bounce" ones. */
    struct report_bounce {
        int from, to;
        bool served;
        int64_t pairs, bytes;
        /* set by report_summary_finish for candidates (not served): the
         * time a peer copy would save over the host round trip */
        bool estimated;
        double saved_ns, staged_gbps, peer_gbps;
        const char *peer_from;   /* as a pair's */
        const char *no_estimate; /* why not, when !estimated */
        /* the estimate from the run's records, where !estimated */
        bool est;
        double est_saved_ns, est_staged_gbps, est_peer_gbps;
        const char *est_peer_from;
    } bounces[REPORT_MAX_BOUNCE_PAIRS];
    int nbounces;
    int64_t copies_seen;
    struct report_gpu gpus[REPORT_MAX_GPUS];
    int ngpus;             /* highest index used + 1 */
    int file;              /* the file being read */
    int map[REPORT_MAX_DEVS];   /* its ordinals' GPU indices; -1 none yet */
    struct report_proc *procs;  /* per file */
    int nprocs;
    struct report_bin bins[2][REPORT_BINS];   /* [peer, staged][log2 size] */
    struct report_timeline timeline;          /* the pairs' tbytes axis */
    const struct report_topo *topo;
    /* The table against the logs' GPUs: why it is foreign ("" it is
     * this run's); refused (foreign, not forced: nothing priced from
     * it); priced (a figure came from it). */
    char topo_note[256];
    bool topo_refused, topo_priced, topo_host_seen;
    struct report_log *log;
    struct report_pair_index *index;
    bool oom;
    bool saturated;   /* a figure reached the 64-bit limit (report_add) */
    /* The host link as the run saw it: the best GB/s of a timed copy from
     * host memory to a GPU and back (0: none timed). */
    double h2d_gbps, d2h_gbps;
    /* The job's wall time as its logs span it (the longest host's first
     * record to its last footer); 0 unknown. */
    int64_t wall_ns;
    /* Set by report_summary_finish: whether a saving came from the run's
     * own records rather than a measured table alone (an estimate), and
     * what it rests on, one sentence. */
    bool estimate;
    char basis[320];
    char est_link[48];   /* the first estimate's link from NVML or a table ("NVLink x2") */
    /* The saving the verdict states: the measured figures where there are
     * some, the estimate elsewhere; known false when neither has one. */
    bool saving_known;
    double saving_ns;
};

/* ---- pricing (report_price.c) ---- */
/* Sets g->topo_ord, noting in s a table that does not name g. */
void report_price_place(struct report_summary *s, struct report_gpu *g);
/* The table's link of GPU indices src -> dst; NULL when the table is
 * refused or lacks either (sets s->topo_priced otherwise). */
const struct report_link *report_price_link(struct report_summary *s, int src, int dst);
/* At the end: a table of none of the logs' hosts is foreign. */
void report_price_check_host(struct report_summary *s);
/* The savings estimate of a pair, of a bounce candidate. */
void report_price_pair(struct report_summary *s, struct report_pair *p, bool *sat);
void report_price_bounce(struct report_summary *s, struct report_bounce *b);
/* After both: the estimate from the run's records where they gave none,
 * the verdict's saving, and its basis (report_price_est.c). */
void report_price_basis(struct report_summary *s);
/* The host link's rate the estimate uses: the slower direction's best
 * timed copy (one direction when only one was timed); 0 none. */
double report_price_host_gbps(const struct report_summary *s);
/* The peer GB/s the estimates take for GPU indices src -> dst where
 * nothing measured it: best_ptop (the pair's best timed peer copy; 0
 * none), else the link's type and NVLink count (the table's, else NVML's
 * for GPUs of this host) at REPORT_NVLINK_GBPS a link, else the host
 * link's rate (REPORT_PCIE_GBPS when the run timed no host copy): a peer
 * copy over PCIe runs no faster than the host link. *from: "log", "link"
 * (the table), "nvml" or "assumed" (no link known); link: the link as
 * named ("NVLink x2", "PIX"), "" when none named it. */
double report_price_peer_gbps(struct report_summary *s, int src, int dst, double best_ptop,
                              const char **from, char *link, size_t len);
/* NVML's link between the GPUs at PCI bus ids a and b of this host: its
 * type ("NVLink", "NVSwitch", "PIX", ...) and NVLink count. Defined by the
 * launcher (run_links.c), weak here: builds of the report without NVML
 * have none, and the estimate goes without it. False when NVML cannot
 * say. */
bool report_nvml_link(const char *pci_a, const char *pci_b, char *type, size_t len,
                      int *nvlinks) __attribute__((weak));
/* Conservative peer rates (docs/LAUNCHER.md, "Estimates"): GB/s per
 * NVLink and direction, and a PCIe peer link when no host copy was timed. */
#define REPORT_NVLINK_GBPS 20.0
#define REPORT_PCIE_GBPS 10.0

/* Sets v to callbacks that fill s (copy and event) from log. */
void report_summary_init(struct report_summary *s, const struct report_topo *t,
                         struct report_log *log, struct report_visitor *v);
/* Sorts the pairs, computes the totals and the savings estimate. */
void report_summary_finish(struct report_summary *s);
void report_summary_free(struct report_summary *s);
/* The path a merged copy took: by its activity, else by its decision. */
enum report_path report_copy_path(const struct report_decision *d,
                                  bool *from_activity);
/* bytes / ns as GB/s, or 0 when ns <= 0. */
double report_gbps(int64_t bytes, int64_t ns);

/* ---- renderers: 0, or -1 on a write error ---- */
int report_text_write(FILE *f, const char *log_path,
                      const struct report_summary *s);
/* The verdict: a few lines, each starting with prefix, that answer
 * "would the shim help, and by how much" (report_text.c). */
int report_verdict_write(FILE *f, const char *prefix, const struct report_summary *s);
/* The one line `p2pshim run` prints at exit in upgrade mode: copies
 * upgraded, their bytes, the time saved or why not (report_exit.c). Not
 * const: it looks up the pairs' links (report_price_peer_gbps). */
int report_exit_line_write(FILE *f, struct report_summary *s);
int report_html_write(FILE *f, const char *log_path,
                      const struct report_summary *s);
/* The report as one JSON document (docs/report-schema.json), report_json.c. */
#define REPORT_SCHEMA_VERSION 1
int report_json_write(FILE *f, const char *log_path, const struct report_summary *s);
/* The report as a table (report_csv.c): a header row, then one row per
 * GPU pair and path its copies took (docs/LAUNCHER.md lists the columns). */
int report_csv_write(FILE *f, const struct report_summary *s);
/* report_matrix.c: the traffic matrix per host, GPUs by bus id and UUID;
 * the data part's record for the host of GPU h (NULL unless h is its
 * host's first GPU and some pair has traffic). */
void report_matrix_text(FILE *f, const struct report_summary *s);
void report_matrix_html(FILE *f, const struct report_summary *s);
struct json_t *report_matrix_data(const struct report_summary *s, int h);
/* The traffic between two GPUs of the summary's table (0: none). */
int64_t report_pair_bytes(const struct report_summary *s, int src, int dst);
/* report_svg.c: the two charts of the page. */
void report_svg_heatmap(FILE *f, const struct report_summary *s);
void report_svg_bandwidth(FILE *f, const struct report_summary *s);
/* Traffic over time (report_timeline.c): a cross-GPU copy issued at t_ns
 * into its pair's bins; the chart, one line of GB/s per pair. */
void report_timeline_add(struct report_summary *s, struct report_pair *p, int64_t t_ns,
                         int64_t bytes);
void report_svg_timeline(FILE *f, const struct report_summary *s);

/* The trace renderer streams: it is a visitor writing f as the log is read. */
struct report_trace;
/* base_ns: the trace's zero on the shim's clock (report_trace_base_visitor
 * finds the earliest time of the logs: no time is negative). Host tracks
 * carry each process's pid. */
struct report_trace *report_trace_new(FILE *f, struct report_visitor *v, int64_t base_ns);
/* A visitor that lowers *base to every time the logs hold (set *base to
 * INT64_MAX first). */
void report_trace_base_visitor(struct report_visitor *v, int64_t *base);
/* Closes the JSON document. Returns 0, or -1 on a write or memory error. */
int report_trace_finish(struct report_trace *t, const char *log_path,
                        const struct report_log *log);
void report_trace_free(struct report_trace *t);

/* ---- formatting (report_fmt.c) ---- */
const char *report_fmt_bytes(int64_t bytes, char *buf, size_t len); /* 1.5 MiB */
const char *report_fmt_ns(double ns, char *buf, size_t len);        /* 2.4 ms */
const char *report_fmt_gbps(double gbps, char *buf, size_t len);    /* 394.8, "-" */
const char *report_fmt_pair(int src, int dst, char *buf, size_t len);
/* Writes s with control characters shown as '?' (terminal output). */
void report_put_plain(FILE *f, const char *s);
/* Writes s escaped for HTML text and attribute values. */
void report_put_html(FILE *f, const char *s);
/* As report_put_html, keeping newlines (for a <pre>). */
void report_put_html_lines(FILE *f, const char *s);

#endif
