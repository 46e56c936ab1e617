/* The shim's descriptors and its whole-line writes (fd_guard.h,
 * outfile.h), without a program around them: where a descriptor goes, what
 * the registry says of it, and what a file holds after a write that fails
 * (the file size limit stands in for a full disk: the kernel writes what
 * fits, then says EFBIG, as a full disk writes what fits, then says
 * ENOSPC). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check.h"
#include "fd_guard.h"
#include "outfile.h"

static char dir[] = "/tmp/test_outfile.XXXXXX";

static int open_file(const char *name, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    char why[128];
    int fd = outfile_open(path, O_TRUNC, why, sizeof why);
    REQUIRE(fd >= 0);
    return fd;
}

static size_t file_size(const char *path)
{
    struct stat st;
    REQUIRE(stat(path, &st) == 0);
    return (size_t)st.st_size;
}

/* High, close-on-exec, registered; released: the number is free again. */
static void check_placement(void)
{
    static struct shim_fd g;
    static _Atomic int number = -1;
    char path[256];
    struct rlimit rl;
    REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    int fd = open_file("placed", path, sizeof path);
    int got = shim_fd_adopt(&g, &number, fd, "a test file");
    long top = rl.rlim_cur < 1024 ? (long)rl.rlim_cur : 1024;
    CHECK_MSG(got == top - 1, "adopted as %d, want %ld", got, top - 1);
    CHECK(atomic_load(&number) == got);
    CHECK(fcntl(fd, F_GETFD) < 0); /* the original number was closed */
    CHECK((fcntl(got, F_GETFD) & FD_CLOEXEC) != 0);
    CHECK(shim_fd_held(got) && shim_fd_maybe(got) && !shim_fd_maybe(got - 1));
    int out[8];
    CHECK(shim_fd_held_in(3, ~0U, out, 8) == 1 && out[0] == got);
    CHECK(shim_fd_held_in(3, (unsigned)got - 1, out, 8) == 0);
    /* Another file at that number is not the shim's any more. */
    int other = open("/dev/null", O_RDONLY);
    REQUIRE(other >= 0 && dup2(other, got) == got);
    CHECK(!shim_fd_held(got));
    REQUIRE(dup2(fd = open(path, O_WRONLY), got) == got);
    close(fd);
    close(other);
    CHECK(shim_fd_held(got));
    /* Moved (a dup2 onto it to come): elsewhere, the same file. */
    CHECK(shim_fd_vacate(got) == 0);
    int moved = atomic_load(&number);
    CHECK_MSG(moved != got && moved > 2 && shim_fd_held(moved), "moved to %d", moved);
    close(got); /* the old number, now nobody's */
    shim_fd_release(&g);
    CHECK(atomic_load(&number) == -1 && fcntl(moved, F_GETFD) < 0 && !shim_fd_maybe(moved));
}

/* 40 lines of 25 bytes ("line NN of the test file\n"). */
static size_t fill(char *buf)
{
    size_t n = 0;
    for (int i = 0; i < 40; i++)
        n += (size_t)sprintf(buf + n, "line %02d of the test file\n", i);
    return n;
}

/* Writes text (all whole lines but a tail) under a file size limit of
 * `limit` bytes, keeping `reserve` for a last line; returns the file's
 * size afterwards. */
static size_t write_limited(const char *name, size_t limit, size_t reserve, int *status)
{
    static struct shim_fd g;
    static _Atomic int number = -1;
    char path[256], buf[2048];
    size_t n = fill(buf);
    memcpy(buf + n, "a line not yet ended", 20);
    n += 20;
    int fd = shim_fd_adopt(&g, &number, open_file(name, path, sizeof path), "a test file");
    REQUIRE(fd >= 0);
    struct rlimit old, rl = {limit, RLIM_INFINITY};
    REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0 && setrlimit(RLIMIT_FSIZE, &rl) == 0);
    int err = 0;
    size_t left = n;
    *status = outfile_append_lines(&g, buf, &left, 1024, reserve, &err);
    REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
    if (*status == OUTFILE_WRITTEN)
        CHECK(left == 20 && memcmp(buf, "a line not yet ended", 20) == 0);
    else
        CHECK(err == EFBIG && left == 0);
    shim_fd_release(&g);
    return file_size(path);
}

static void check_cut(void)
{
    int status;
    /* Room for all: the whole lines go, the tail waits for its end. */
    CHECK(write_limited("all", 1 << 20, 0, &status) == 1000 && status == OUTFILE_WRITTEN);
    /* The limit inside line 10: cut back to the end of line 9. */
    CHECK(write_limited("mid", 10 * 25 + 7, 0, &status) == 250 && status == OUTFILE_FAILED);
    /* ... and back to leave 60 bytes for a last line: line 7's end. */
    CHECK(write_limited("room", 10 * 25 + 7, 60, &status) == 175);
    /* The limit right at a line's end: nothing to cut, unless room is asked. */
    CHECK(write_limited("edge", 250, 0, &status) == 250 && status == OUTFILE_FAILED);
    CHECK(write_limited("edge-room", 250, 30, &status) == 200);
    /* No room can be made for the last line within what this call wrote:
     * its whole lines stay (dropping them would leave no room either). */
    CHECK(write_limited("tiny", 30, 100, &status) == 25);
}

/* A descriptor the program put another file at: nothing written there. */
static void check_not_ours(void)
{
    static struct shim_fd g;
    static _Atomic int number = -1;
    char path[256], other_path[256], buf[64] = "a line of the shim's\n";
    int fd = shim_fd_adopt(&g, &number, open_file("ours", path, sizeof path), "a test file");
    int other = open_file("program", other_path, sizeof other_path);
    REQUIRE(fd >= 0 && dup2(other, fd) == fd);
    int err = 0;
    size_t len = strlen(buf);
    CHECK(outfile_append_lines(&g, buf, &len, 1024, 0, &err) == OUTFILE_NOT_OURS && len == 0);
    CHECK(file_size(other_path) == 0 && file_size(path) == 0);
    shim_fd_forget(&g);
    CHECK(fcntl(fd, F_GETFD) >= 0); /* forgotten, not closed: the program's */
    close(fd);
    close(other);
}

int main(void)
{
    signal(SIGXFSZ, SIG_IGN);
    REQUIRE(mkdtemp(dir) != NULL);
    check_placement();
    check_cut();
    check_not_ours();
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        check_failures++;
    return check_report();
}
