/* Descriptors: a program closes or replaces descriptors it did not open
 * (closefrom, close_range, dup2 over every unknown one: what daemons,
 * spawners and sandboxes do), counts on the numbers open and F_DUPFD give
 * it, or closes everything and opens its own files.
 *
 *   closefrom|close_range|dup2 lazy|eager|pinned
 *       after a predicted D2H: the buffer reads back the D2H's bytes, a CPU
 *       rewrite of half of it reaches the device with the next H2D, and a
 *       second round on it is right too
 *   driver_closed closefrom|close_range|dup2|close
 *       under STANDIN_DRIVER_FD=1 (the stand-in then holds a device file,
 *       as the driver holds /dev/nvidiactl, and fails every call once it
 *       is gone): after a lazy D2H the program closes the driver's
 *       descriptor with the rest (close: that one alone, found in
 *       /proc/self/fd), then reads the buffer back. The driver cannot fill
 *       a page any more; the bytes must be there all the same. The program
 *       makes no CUDA call after (it could not), and ends with _exit
 *   fd_lowest    the numbers open, F_DUPFD and dup give after a bounce
 *   fd_highest   F_DUPFD and dup2 at the top of RLIMIT_NOFILE
 *   own_files    a child with a run log and a log file configured makes
 *       copies, closes every descriptor from 3, opens two files of its own
 *       and writes them, copies on and exits: the files hold only its
 *       bytes
 *   file_size_limit  a child under RLIMIT_FSIZE (ulimit -f) of 64 KiB,
 *       with a run log and a log file configured, makes 3000 copies and
 *       writes a small file: it exits 0 (the shim's files reaching the
 *       limit are the shim's business, never a SIGXFSZ for the program)
 *   file_size_limit stderr  the same with the shim's debug lines on
 *       stderr (a file under the runner) and no file of the shim's, the
 *       limit 256 bytes past stderr's end */
#define _GNU_SOURCE
#include "adv_common.h"
#include "adv_fdlist.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#include <linux/close_range.h>
#endif

#define N (((size_t)1 << 20) + 321)

static void close_from(void)
{
    closefrom(3);
}

static void close_range_all(void)
{
    PL_EXPECT(close_range(3, ~0u, 0) == 0, "close_range: %s", strerror(errno));
}

/* Every descriptor from 3 that the program does not know of now names
 * /dev/null, as a sandbox leaves them. */
static void dup2_sweep(void)
{
    PL_EXPECT(adv_dup2_sweep(), "dup2 of /dev/null: %s", strerror(errno));
}

static int closer_case(const char *name, void (*closer)(void), const char *arg)
{
    struct adv_buf b;
    char what[96];
    adv_buf_init(&b, NULL, N, adv_mem_of(arg));
    adv_bounce(&b, 11);
    closer();
    snprintf(what, sizeof what, "%s: read back", name);
    bt_check_host(b.h, b.want, N, what);
    adv_digest(what, b.h, N);
    adv_rewrite(&b, N / 2, N / 2, 12);
    snprintf(what, sizeof what, "%s: half rewritten, H2D", name);
    adv_h2d(&b, what);
    adv_buf_prime(&b);
    adv_bounce(&b, 13);
    snprintf(what, sizeof what, "%s: next round", name);
    bt_check_host(b.h, b.want, N, what);
    adv_digest(what, b.h, N);
    adv_h2d(&b, what);
    return 0;
}

static int case_closefrom(int argc, char **argv)
{
    return closer_case("closefrom(3)", close_from, argc > 1 ? argv[1] : NULL);
}

static int case_close_range(int argc, char **argv)
{
    return closer_case("close_range(3, ~0)", close_range_all, argc > 1 ? argv[1] : NULL);
}

static int case_dup2(int argc, char **argv)
{
    return closer_case("dup2 /dev/null over the unknown", dup2_sweep,
                       argc > 1 ? argv[1] : NULL);
}

/* Closes the character devices among the descriptors from 3 that the
 * program did not open (the stand-in's device file, as a program would
 * close the driver's by number). */
static void close_devices(void)
{
    int fds[256];
    int count = adv_fds_listed(fds, 256, true);
    for (int i = 0; i < count; i++)
        close(fds[i]);
}

static int case_driver_closed(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "closefrom";
    void (*closer)(void) = strcmp(how, "close_range") == 0 ? close_range_all
                           : strcmp(how, "dup2") == 0      ? dup2_sweep
                           : strcmp(how, "close") == 0     ? close_devices
                                                           : close_from;
    struct adv_buf b;
    adv_buf_init(&b, NULL, N, ADV_LAZY);
    adv_bounce(&b, 31);
    closer();
    bt_check_host(b.h, b.want, N, "the driver's descriptor closed: read back");
    adv_digest("the driver's descriptor closed: read back", b.h, N);
    fflush(stdout);
    fflush(stderr);
    _exit(0);
}

static int case_fd_lowest(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct adv_buf b;
    int p[2];
    adv_buf_init(&b, NULL, N, ADV_LAZY);
    adv_bounce(&b, 21);
    adv_digest("bounced", b.h, N);
    adv_say("open: fd %d", open("/dev/null", O_RDONLY));
    adv_say("F_DUPFD 3: fd %d", fcntl(1, F_DUPFD, 3));
    adv_say("dup: fd %d", dup(1));
    PL_EXPECT(pipe(p) == 0, "pipe: %s", strerror(errno));
    adv_say("pipe: fds %d %d", p[0], p[1]);
    adv_h2d(&b, "after the descriptors");
    return 0;
}

static int case_fd_highest(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct adv_buf b;
    struct rlimit lim;
    adv_buf_init(&b, NULL, N, ADV_LAZY);
    adv_bounce(&b, 22);
    PL_EXPECT(getrlimit(RLIMIT_NOFILE, &lim) == 0, "getrlimit");
    int top = (int)(lim.rlim_cur > 65536 ? 65536 : lim.rlim_cur) - 1;
    if (lim.rlim_cur > 65536) {
        lim.rlim_cur = 65536; /* a bounded table: the same in both runs */
        PL_EXPECT(setrlimit(RLIMIT_NOFILE, &lim) == 0, "setrlimit");
    }
    int fd = fcntl(1, F_DUPFD, top);
    if (fd < 0)
        adv_errno("F_DUPFD at the top", errno);
    else
        adv_say("F_DUPFD at the top: the top %s", fd == top ? "itself" : "missed");
    close(fd);
    fd = dup2(1, top);
    adv_say("dup2 onto the top: %s", fd == top ? "the top" : "failed");
    close(top);
    adv_digest("read back", b.h, N);
    adv_h2d(&b, "after the top descriptor");
    return 0;
}

/* Cross-GPU copies: a decision record each, and log lines at debug. */
static void cross_copies(CUdeviceptr a0, CUdeviceptr a1, int count)
{
    for (int i = 0; i < count; i++)
        PL_OK(cuMemcpyPeer(a1, bt_env.ctx[1], a0, bt_env.ctx[0], 4096));
}

static void write_all(int fd, const char *text)
{
    PL_EXPECT(write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write: %s",
              strerror(errno));
}

static void own_files_child(void)
{
    adv_cuda();
    CUdeviceptr a0 = pl_alloc(bt_env.ctx[0], 4096), a1 = pl_alloc(bt_env.ctx[1], 4096);
    cross_copies(a0, a1, 4);
    closefrom(3);
    int f1 = open(adv_path("mine1.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int f2 = open(adv_path("mine2.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    PL_EXPECT(f1 >= 0 && f2 >= 0, "open: %s", strerror(errno));
    write_all(f1, "the program's first file\n");
    write_all(f2, "the program's second file\n");
    cross_copies(a0, a1, 40);
    write_all(f1, "its last line\n");
    write_all(f2, "its last line\n");
    exit(pl_failures != 0);
}

static int case_own_files(int argc, char **argv)
{
    (void)argc, (void)argv;
    int status = 0;
    setenv("P2PSHIM_RUN_LOG", adv_path("run-%p.jsonl"), 1);
    setenv("P2PSHIM_LOG_FILE", adv_path("shim-%p.log"), 1);
    setenv("P2PSHIM_LOG", "debug", 1);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        own_files_child();
    PL_EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait: %s", strerror(errno));
    adv_status("child", status);
    adv_file_digest("first file", adv_path("mine1.txt"));
    adv_file_digest("second file", adv_path("mine2.txt"));
    return 0;
}

/* A child limited to files of 64 KiB (ulimit -f), with a run log and a
 * log file configured, makes more copies than their records fit in and
 * writes a small file of its own. */
static void small_files_child(rlim_t size)
{
    struct rlimit lim = {size, size};
    PL_EXPECT(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit: %s", strerror(errno));
    adv_cuda();
    CUdeviceptr a0 = pl_alloc(bt_env.ctx[0], 4096), a1 = pl_alloc(bt_env.ctx[1], 4096);
    cross_copies(a0, a1, 3000);
    int fd = open(adv_path("mine.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    write_all(fd, "the program's own small file\n");
    close(fd);
    exit(pl_failures != 0);
}

static int case_file_size_limit(int argc, char **argv)
{
    int status = 0;
    if (argc < 2 || strcmp(argv[1], "stderr") != 0) {
        setenv("P2PSHIM_RUN_LOG", adv_path("run-%p.jsonl"), 1);
        setenv("P2PSHIM_LOG_FILE", adv_path("shim-%p.log"), 1);
    }
    setenv("P2PSHIM_LOG", "debug", 1);
    fflush(stdout);
    /* stderr: 256 bytes past what it holds (the shim's lines reach it,
     * the program writes none there). */
    off_t err_end = lseek(STDERR_FILENO, 0, SEEK_END);
    rlim_t size = argc > 1 ? (rlim_t)(err_end > 0 ? err_end : 0) + 256 : 64 << 10;
    pid_t pid = fork();
    if (pid == 0)
        small_files_child(size);
    PL_EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait: %s", strerror(errno));
    adv_status("child", status);
    adv_file_digest("its file", adv_path("mine.txt"));
    return 0;
}

int main(int argc, char **argv)
{
    static const struct adv_case cases[] = {
        {"closefrom", case_closefrom},   {"close_range", case_close_range},
        {"dup2", case_dup2},             {"driver_closed", case_driver_closed},
        {"fd_lowest", case_fd_lowest},
        {"fd_highest", case_fd_highest}, {"own_files", case_own_files},
        {"file_size_limit", case_file_size_limit},
    };
    return adv_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
