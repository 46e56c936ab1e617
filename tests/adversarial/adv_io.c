/* System calls that read or write the bounced buffer: the kernel, not the
 * CPU's loads and stores, touches its pages.
 *
 *   rw lazy|eager        write(2), pwrite(2) and writev(2) from it to files;
 *                        then, after the next D2H, read(2) into part of it
 *   o_direct lazy|eager  the same through O_DIRECT (the pages pinned for the
 *                        I/O); skipped where the folder's file system
 *                        refuses O_DIRECT
 *   pipe                 written into a pipe that a thread drains, then
 *                        filled from a pipe a thread feeds
 *   vmsplice lazy|eager  vmsplice(2) of it into a pipe (the pipe holds its
 *                        pages), then the next D2H into it, then the pipe
 *                        read: without the shim the reader sees the D2H's
 *                        bytes, the pages being the same
 *   vmsplice lazy|eager syscall   the same through syscall(SYS_vmsplice)
 *   vmsplice lazy|eager after     vmsplice(2) of it just after a D2H (its
 *                        snapshot's pages, missing or write-protected),
 *                        then the CPU rewrites part of it, then the pipe
 *                        read: the pipe's pages are the buffer's, so the
 *                        reader sees the rewrite */
#define _GNU_SOURCE
#include "adv_common.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define N ((size_t)1 << 20)
#define SPLICED ((size_t)256 << 10)

static int create(const char *name, int flags)
{
    return open(adv_path(name), O_RDWR | O_CREAT | O_TRUNC | flags, 0600);
}

static void expect_io(ssize_t got, size_t want, const char *what)
{
    PL_EXPECT(got == (ssize_t)want, "%s: %zd of %zu bytes (%s)", what, got, want,
              got < 0 ? strerror(errno) : "short");
}

/* write, pwrite and writev from the buffer: three files digested. */
static void writes_from(const struct adv_buf *b, int flags)
{
    int fd = create("write", flags);
    expect_io(write(fd, b->h, N), N, "write");
    close(fd);
    adv_file_digest("write(2) from the buffer", adv_path("write"));
    size_t off = 7 * ADV_PAGE, len = 64 * ADV_PAGE;
    fd = create("pwrite", flags);
    expect_io(pwrite(fd, b->h + off, len, 2 * ADV_PAGE), len, "pwrite");
    close(fd);
    adv_file_digest("pwrite(2) from the buffer", adv_path("pwrite"));
    struct iovec iov[3] = {
        {b->h + 100 * ADV_PAGE, 8 * ADV_PAGE},
        {b->h, 4 * ADV_PAGE},
        {b->h + N - 16 * ADV_PAGE, 16 * ADV_PAGE},
    };
    fd = create("writev", flags);
    expect_io(writev(fd, iov, 3), 28 * ADV_PAGE, "writev");
    close(fd);
    adv_file_digest("writev(2) from the buffer", adv_path("writev"));
}

static int io_case(const char *arg, int flags)
{
    struct adv_buf b;
    adv_buf_init(&b, NULL, N, adv_mem_of(arg));
    if (flags != 0) {
        int fd = create("probe", flags);
        if (fd < 0) {
            fprintf(stderr, "O_DIRECT refused in %s: %s\n", adv_tmp, strerror(errno));
            return ADV_SKIP;
        }
        close(fd);
    }
    adv_bounce(&b, 101);
    writes_from(&b, flags);
    adv_buf_prime(&b);
    adv_bounce(&b, 102);
    /* Half of the buffer read from the first file, page aligned. */
    int fd = open(adv_path("write"), O_RDONLY | flags);
    size_t off = 32 * ADV_PAGE, len = N / 2;
    expect_io(pread(fd, b.h + off, len, 0), len, "read");
    close(fd);
    bt_pattern(b.want + off, len, 101);
    bt_check_host(b.h, b.want, N, "read(2) into the buffer");
    adv_digest("read(2) into the buffer", b.h, N);
    adv_h2d(&b, "H2D");
    return 0;
}

static int case_rw(int argc, char **argv)
{
    return io_case(argc > 1 ? argv[1] : NULL, 0);
}

static int case_o_direct(int argc, char **argv)
{
    return io_case(argc > 1 ? argv[1] : NULL, O_DIRECT);
}

struct pipe_job {
    int fd;
    unsigned char *bytes;
    size_t n;
};

static void *drain(void *arg)
{
    struct pipe_job *j = arg;
    size_t got = 0;
    ssize_t r;
    while (got < j->n && (r = read(j->fd, j->bytes + got, j->n - got)) > 0)
        got += (size_t)r;
    j->n = got;
    return NULL;
}

static void *feed(void *arg)
{
    struct pipe_job *j = arg;
    expect_io(write(j->fd, j->bytes, j->n), j->n, "write to the pipe");
    return NULL;
}

static int case_pipe(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct adv_buf b;
    int p[2];
    pthread_t t;
    adv_buf_init(&b, NULL, N, ADV_LAZY);
    adv_bounce(&b, 103);
    PL_EXPECT(pipe(p) == 0, "pipe: %s", strerror(errno));
    struct pipe_job out = {p[0], calloc(1, N), N};
    pthread_create(&t, NULL, drain, &out);
    expect_io(write(p[1], b.h, N), N, "write into the pipe");
    pthread_join(t, NULL);
    adv_digest("what the pipe carried out", out.bytes, out.n);
    adv_buf_prime(&b);
    adv_bounce(&b, 104);
    struct pipe_job in = {p[1], out.bytes, N};
    bt_pattern(in.bytes, N, 105);
    pthread_create(&t, NULL, feed, &in);
    size_t got = 0, off = 9;
    ssize_t r;
    while (got < N - off && (r = read(p[0], b.h + off + got, N - off - got)) > 0)
        got += (size_t)r;
    pthread_join(t, NULL);
    memcpy(b.want + off, in.bytes, N - off);
    bt_check_host(b.h, b.want, N, "filled from the pipe");
    adv_digest("filled from the pipe", b.h, N);
    adv_h2d(&b, "H2D");
    free(out.bytes);
    return 0;
}

/* vmsplice of [h, h+SPLICED) into p[1], by libc or through syscall(). */
static void splice_in(int p[2], unsigned char *h, bool raw)
{
    struct iovec iov = {h, SPLICED};
    ssize_t r = raw ? (ssize_t)syscall(SYS_vmsplice, p[1], &iov, 1, 0) : vmsplice(p[1], &iov, 1, 0);
    expect_io(r, SPLICED, "vmsplice");
}

static int case_vmsplice(int argc, char **argv)
{
    struct adv_buf b;
    int p[2];
    const char *how = argc > 2 ? argv[2] : "";
    bool raw = strcmp(how, "syscall") == 0, after = strcmp(how, "after") == 0;
    adv_buf_init(&b, NULL, SPLICED, adv_mem_of(argc > 1 ? argv[1] : NULL));
    adv_bounce(&b, 106);
    PL_EXPECT(pipe(p) == 0, "pipe: %s", strerror(errno));
    if (fcntl(p[1], F_SETPIPE_SZ, (int)SPLICED) < (int)SPLICED) {
        fprintf(stderr, "a pipe of %zu bytes refused: %s\n", SPLICED, strerror(errno));
        return ADV_SKIP;
    }
    if (after) {
        adv_buf_prime(&b);
        adv_bounce(&b, 107);
        splice_in(p, b.h, raw);
        adv_rewrite(&b, 5 * ADV_PAGE + 3, 9000, 108);
    } else {
        splice_in(p, b.h, raw);
        adv_buf_prime(&b);
        adv_bounce(&b, 107);
    }
    unsigned char *out = malloc(SPLICED);
    size_t got = 0;
    ssize_t r;
    while (got < SPLICED && (r = read(p[0], out + got, SPLICED - got)) > 0)
        got += (size_t)r;
    adv_digest("what the pipe carried", out, got);
    adv_digest("read back", b.h, SPLICED);
    adv_h2d(&b, "H2D");
    free(out);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct adv_case cases[] = {
        {"rw", case_rw},
        {"o_direct", case_o_direct},
        {"pipe", case_pipe},
        {"vmsplice", case_vmsplice},
    };
    return adv_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
