/* Helpers of the adversarial cases (tests/adversarial): programs that do
 * unusual but legal things around host-bounced copies, run by adv_run.sh
 * without and with the shim, their transcripts compared byte for byte.
 *
 * A case program is "PROG shim|noshim CASE [ARG...]". It prints digests
 * of every buffer it reads back and of every file it wrote (never
 * addresses or timings; descriptor numbers only where they are what the
 * case is about), and exits 0 unless a
 * check it makes on its own fails. Exit 77 in both runs: the system
 * refuses what the case needs (the runner reports a skip).
 *
 * Bounces are arranged as in tests/bounce: a D2H followed by an H2D of the
 * same buffer is evidence, so the next D2H into it is predicted: lazy for
 * pageable memory under P2PSHIM_BOUNCE=lazy (the pages are dropped and
 * filled on demand through userfaultfd), eager for pinned memory and under
 * P2PSHIM_BOUNCE=eager (a snapshot beside, the pages write-protected). */
#ifndef ADV_COMMON_H
#define ADV_COMMON_H

#include "bt_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADV_PAGE 4096
#define ADV_SKIP 77

/* How the host buffer of a bounce is made, and so how it is snapshot. */
enum adv_mem {
    ADV_LAZY,   /* pageable (mmap), P2PSHIM_BOUNCE=lazy */
    ADV_EAGER,  /* pageable (mmap), P2PSHIM_BOUNCE=eager */
    ADV_PINNED, /* cuMemAllocHost: always eager */
};

struct adv_case {
    const char *name;
    /* argv from the case's name on: argv[0] is the case, argv[1] its
     * argument (NULL when none). Returns the exit status. */
    int (*run)(int argc, char **argv);
};

extern int adv_shim;          /* the shim is loaded */
extern const char *adv_tmp;   /* this run's own empty folder (ADV_TMP) */
extern const char *adv_self;  /* argv[0] */
extern const char *adv_mode;  /* argv[1]: "shim" or "noshim" */

/* The program's main: checks argv[1] against what is loaded, reads
 * ADV_TMP, sets P2PSHIM_BOUNCE from the case's argument (lazy, eager,
 * pinned: before any CUDA call, which is when the shim reads its
 * variables) and runs the case named by argv[2]. No CUDA call is made
 * before the case's own (adv_cuda). */
int adv_main(int argc, char **argv, const struct adv_case *cases, int ncases);

/* The memory kind named by a case's argument ("lazy" when NULL). */
enum adv_mem adv_mem_of(const char *arg);

/* cuInit and both devices' primary contexts, device 0 current: once. */
void adv_cuda(void);

/* One line on stdout, flushed at once (children share the file). */
void adv_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "what: host=DIGEST" of [p, p+n). */
void adv_digest(const char *what, const void *p, size_t n);
/* The same line written with write(2) alone: for a child of fork without
 * handlers, vfork, clone or a signal handler. */
void adv_digest_raw(const char *what, const void *p, size_t n);
/* "what: errno=NAME" for a failed call (the errno's name, never its text,
 * so that both runs agree whatever the locale). */
void adv_errno(const char *what, int err);
/* How a child ended: "what: exit N" or "what: signal N". */
void adv_status(const char *what, int status);

/* A host buffer bounced from device 0 (src) towards device 1 (dst). */
struct adv_buf {
    unsigned char *h;    /* the program's host buffer */
    unsigned char *want; /* what a reader of h must see (the case keeps it) */
    size_t n;
    enum adv_mem mem;
    CUdeviceptr src, dst;
    int predicted; /* the last adv_bounce was taken by the shim */
};

/* n bytes of memory of kind mem at h (NULL: the helper maps or pins a
 * fresh buffer), device buffers, and the evidence (a staging round of
 * seed 1) that makes the next D2H into h a predicted one. */
void adv_buf_init(struct adv_buf *b, void *h, size_t n, enum adv_mem mem);
/* Another staging round of the bytes h holds (want): fresh evidence. */
void adv_buf_prime(struct adv_buf *b);
/* The predicted D2H: n bytes of pattern seed (or of bytes, when not NULL)
 * from src into h; want holds them. Under the shim, a D2H the shim did not
 * take (nothing through the device for it) gets a note on stderr: the case
 * then tests nothing, and ADV_REQUIRE_BOUNCE=1 makes that a failure. */
void adv_bounce(struct adv_buf *b, unsigned seed);
void adv_bounce_bytes(struct adv_buf *b, const unsigned char *bytes);
/* The H2D of [h, h+n) to dst; prints "what: device=DIGEST" of dst. */
void adv_h2d(struct adv_buf *b, const char *what);
/* The CPU rewrites [h+off, h+off+len) with pattern seed (want too). */
void adv_rewrite(struct adv_buf *b, size_t off, size_t len, unsigned seed);

/* A file in adv_tmp: its path (static storage per call site: copy it). */
const char *adv_path(const char *name);
/* "what: file=DIGEST size=N" of a file's bytes, or its errno. */
void adv_file_digest(const char *what, const char *path);
/* Writes n bytes to a new file at path (fails the case on error). */
void adv_write_file(const char *path, const void *p, size_t n);

/* environ without LD_PRELOAD, plus LD_PRELOAD=ADV_PRELOAD_PLAIN when set
 * (a new array, or environ itself when none can be made). */
char **adv_plain_env(void);
/* Runs argv (argv[0] a path) with LD_PRELOAD=ADV_PRELOAD_PLAIN (empty or
 * the sanitizer runtime: never the shim, which the launcher puts in
 * itself) and waits; returns its wait status, or -1. Output goes to
 * stderr's file (not the transcript). */
int adv_run_plain(char *const argv[]);

/* The run log's lines of the given "type" in every *.jsonl of dir; -1
 * when there is no log there. */
long adv_log_count(const char *dir, const char *type);

#endif
