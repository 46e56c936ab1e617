/* The misprediction matrix of harmbench (--row miss, harm_matrix.cu): the
 * memory kinds, what the program does with the host buffer (the actions),
 * the checks of what an action wrote or read, and the GPU check of a
 * destination against what the program meant it to hold. */
#ifndef P2PSHIM_HARM_MATRIX_CUH
#define P2PSHIM_HARM_MATRIX_CUH

#include <stddef.h>
#include <stdint.h>

/* harmbench's main for --row miss (harm_matrix.cu): parses its own
 * options, runs the cells, returns the exit status. */
int harm_miss_main(int argc, char **argv);

enum miss_kind { MK_PINNED, MK_REGISTERED, MK_MALLOC, MK_MMAP, MK_THP, MK_COUNT };
extern const char *const miss_kind_names[MK_COUNT];

/* What the program does with the host buffer in a spoilt round, between
 * the D2H and the H2D or after the H2D (--where). */
enum miss_action {
    MA_NONE,     /* nothing */
    MA_MEMSET,   /* writes every byte, in order */
    MA_RANDOM,   /* writes every page, the pages in a random order */
    MA_PAGEBYTE, /* writes the first byte of every page */
    MA_WORD,     /* writes one 8-byte word in the middle (a one-word patch) */
    MA_READ,     /* reads every byte (a checksum) */
    MA_WRITE,    /* write(2) of all of it to a file */
    MA_PWRITE,   /* pwrite(2) of all of it */
    MA_WRITEV,   /* writev(2) of all of it, in four pieces */
    MA_MEMCPY,   /* memcpy of all of it into another buffer */
    MA_FORK,     /* a forked child reads every byte */
    MA_THREAD,   /* another thread writes every byte */
    MA_COUNT
};
extern const char *const miss_action_names[MA_COUNT];

/* What a destination must hold: the pattern of seed, with bytes set to v
 * where patch says (none; all of them; the first byte of each page; the
 * bytes [lo, hi)). */
enum miss_patch { MP_NONE, MP_ALL, MP_PAGE, MP_RANGE };
typedef struct miss_expect {
    uint32_t seed;
    int patch;
    unsigned char v;
    size_t lo, hi;
} miss_expect;

/* The byte the destination must hold at offset i (page: the page size). */
static __host__ __device__ __forceinline__ unsigned char miss_expected_byte(
    const miss_expect *e, size_t i, size_t page, uint32_t pattern_word)
{
    int patched = e->patch == MP_ALL || (e->patch == MP_PAGE && i % page == 0) ||
                  (e->patch == MP_RANGE && i >= e->lo && i < e->hi);
    return patched ? e->v : (unsigned char)(pattern_word >> (8 * (i & 3)));
}

/* A host buffer of one kind: p[0..n), and what to free (base, map_len). */
typedef struct miss_host {
    unsigned char *p;
    void *base;
    size_t n, map_len;
    int kind;
    char note[96]; /* THP: madvise's answer when it failed */
} miss_host;

void miss_host_alloc(miss_host *h, int kind, size_t n);
void miss_host_free(miss_host *h);
/* THP: the KiB of the buffer's mapping backed by huge pages (smaps
 * AnonHugePages), -1 when unreadable. */
long miss_host_huge_kb(const miss_host *h);

/* One action's working state: what it needs besides the buffer. */
typedef struct miss_work {
    int action;
    size_t page, npages;
    uint32_t *perm;          /* MA_RANDOM: the page order */
    unsigned char *scratch;  /* MA_MEMCPY, file checks: n bytes, touched */
    int fd;                  /* file actions: an unlinked temporary file */
    double helper_cpu_ms;    /* MA_THREAD: the writer's own CPU time */
    int child_status;        /* MA_FORK: waitpid's status of the last child */
    int child_signals;       /* MA_FORK: children killed by a signal */
} miss_work;

/* Sets up what the action needs (tmpdir: where its file goes). */
void miss_work_init(miss_work *w, int action, size_t n, const char *tmpdir);
void miss_work_free(miss_work *w);

/* Runs the action on h (v: the byte a writing action writes; want: the
 * source's sum, which a forked child checks itself). Returns the sum the
 * action read (MA_READ), else 0. */
uint64_t miss_act(miss_work *w, miss_host *h, unsigned char v, uint64_t want);

/* What the destination holds after a spoilt round whose action ran
 * between the D2H and the H2D, with the pattern of seed and byte v. */
miss_expect miss_expect_after(int action, size_t n, size_t page, uint32_t seed,
                              unsigned char v);

/* The checks of what the action produced besides the buffer (the file's
 * bytes, the copy, the child's verdict, the sum read), against want; 1 when
 * right, else 0 with a line on stderr. Not timed. */
int miss_check_action(miss_work *w, size_t n, uint64_t read_sum, uint64_t want,
                      const char *what);

/* The GPU check of dst[0..n) on the current device against e; 1 when
 * right, else 0 with a line on stderr. */
int miss_check_device(const void *dst, size_t n, size_t page, const miss_expect *e,
                      const char *what);

/* --row miss --self-test: every action on malloc, mmap and THP buffers on
 * the host (no GPU): the bytes it leaves, what it reads, copies and
 * writes, and that a wrong copy or file is caught. Exit status. */
int miss_selftest(const char *tmpdir);

#endif
