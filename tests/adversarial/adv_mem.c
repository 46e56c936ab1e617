/* The bounced buffer's memory, looked at and changed behind the copies.
 *
 *   proc_mem [PATH] after a lazy D2H, the buffer read through
 *                   /proc/self/mem (what ptrace, gdb and core dumps read);
 *                   PATH: pid (/proc/PID/mem), task (/proc/self/task/TID/mem),
 *                   syscall (opened through syscall(SYS_openat))
 *   proc_mem_write  after an eager D2H, new bytes written into it through
 *                   /proc/self/mem (a debugger's poke); the H2D carries them
 *   mincore [syscall]  resident pages after a lazy D2H (through syscall())
 *   traced lazy|eager  a child attached as the process's tracer
 *                   (PTRACE_SEIZE) before the D2H reads the buffer through
 *                   /proc/PID/mem after it; skipped where ptrace is refused
 *   dontneed lazy|eager   MADV_DONTNEED of part of it: zeros there
 *   free lazy|eager       MADV_FREE of it, then the CPU rewrites it
 *   mremap | mremap_raw   moved (MREMAP_FIXED) and grown, through libc or
 *                   syscall(SYS_mremap): the bytes move with it
 *   vm_readv [MEM]  process_vm_readv of it (lazy), into another buffer
 *   vm_writev [MEM] process_vm_writev of new bytes into it (eager)
 *   thp lazy|eager  a transparent huge page buffer (MADV_HUGEPAGE)
 *   hugetlb         a MAP_HUGETLB buffer (skipped with no huge pages)
 *   free_during_fill  the driver frees pinned memory with a snapshot
 *                   while the fault handler, slowed in the driver, is
 *                   between two runs of a lazy fill */
#define _GNU_SOURCE
#include "adv_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define N ((size_t)1 << 20)
#define HUGE ((size_t)2 << 20)

static const char *mem_arg(int argc, char **argv)
{
    return argc > 1 ? argv[1] : NULL;
}

/* The buffer's mem file opened the way how says (NULL: /proc/self/mem). */
static int open_mem(const char *how, int flags)
{
    char path[64];
    if (how != NULL && strcmp(how, "syscall") == 0)
        return (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/mem", flags, 0);
    if (how != NULL && strcmp(how, "pid") == 0)
        snprintf(path, sizeof path, "/proc/%ld/mem", (long)getpid());
    else if (how != NULL && strcmp(how, "task") == 0)
        snprintf(path, sizeof path, "/proc/self/task/%ld/mem", (long)gettid());
    else
        snprintf(path, sizeof path, "/proc/self/mem");
    return open(path, flags);
}

/* n bytes at addr read from the mem file fd: "what: N bytes" and the
 * digest, or the errno. */
static void read_mem(const char *what, int fd, const void *addr, size_t n)
{
    unsigned char *copy = malloc(n);
    ssize_t got = pread(fd, copy, n, (off_t)(uintptr_t)addr);
    if (got < 0)
        adv_errno(what, errno);
    else
        adv_say("%s: %zd bytes", what, got);
    if (got > 0)
        adv_digest("what it read", copy, (size_t)got);
    free(copy);
}

static int case_proc_mem(int argc, char **argv)
{
    struct adv_buf b;
    adv_buf_init(&b, NULL, N, ADV_LAZY);
    adv_bounce(&b, 81);
    int fd = open_mem(argc > 1 ? argv[1] : NULL, O_RDONLY);
    read_mem("pread /proc/self/mem", fd, b.h, N);
    close(fd);
    adv_digest("read back", b.h, N);
    adv_h2d(&b, "H2D");
    return 0;
}

/* A child that attaches to the process as its tracer, then (told the
 * D2H is done) reads the buffer through /proc/PID/mem. */
static int case_traced(int argc, char **argv)
{
    struct adv_buf b;
    int up[2], down[2], status = 0;
    char c = 0;
    adv_buf_init(&b, NULL, N, adv_mem_of(argc > 1 ? argv[1] : NULL));
    PL_EXPECT(pipe(up) == 0 && pipe(down) == 0, "pipe: %s", strerror(errno));
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    pid_t parent = getpid();
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char path[64];
        c = ptrace(PTRACE_SEIZE, parent, NULL, NULL) == 0 ? 'y' : 'n';
        if (write(up[1], &c, 1) != 1 || c != 'y' || read(down[0], &c, 1) != 1)
            _exit(1);
        snprintf(path, sizeof path, "/proc/%ld/mem", (long)parent);
        int fd = open(path, O_RDONLY);
        unsigned char *copy = malloc(N);
        ssize_t got = fd < 0 ? -1 : pread(fd, copy, N, (off_t)(uintptr_t)b.h);
        if (got == (ssize_t)N)
            adv_digest_raw("the tracer read", copy, N);
        else
            adv_digest_raw("the tracer's read failed", "", 0);
        _exit(0);
    }
    if (pid < 0 || read(up[0], &c, 1) != 1 || c != 'y') {
        fprintf(stderr, "ptrace refused here (PTRACE_SEIZE of the parent)\n");
        if (pid > 0)
            waitpid(pid, &status, 0);
        return ADV_SKIP;
    }
    adv_buf_prime(&b);
    adv_bounce(&b, 95);
    PL_EXPECT(write(down[1], "g", 1) == 1, "write: %s", strerror(errno));
    PL_EXPECT(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
    adv_status("the tracer", status);
    adv_digest("read back", b.h, N);
    adv_h2d(&b, "H2D");
    return 0;
}

static int case_proc_mem_write(int argc, char **argv)
{
    struct adv_buf b;
    adv_buf_init(&b, NULL, N, ADV_EAGER);
    adv_bounce(&b, 82);
    size_t off = 5 * ADV_PAGE + 17, len = 40000;
    bt_pattern(b.want + off, len, 83);
    int fd = open_mem(argc > 1 ? argv[1] : NULL, O_RDWR);
    ssize_t put = pwrite(fd, b.want + off, len, (off_t)(uintptr_t)(b.h + off));
    if (put < 0)
        adv_errno("pwrite /proc/self/mem", errno);
    else
        adv_say("pwrite /proc/self/mem: %zd bytes", put);
    close(fd);
    bt_check_host(b.h, b.want, N, "poked");
    adv_digest("read back", b.h, N);
    adv_h2d(&b, "H2D");
    return 0;
}

static int case_mincore(int argc, char **argv)
{
    struct adv_buf b;
    unsigned char vec[N / ADV_PAGE];
    bool raw = argc > 1 && strcmp(argv[1], "syscall") == 0;
    adv_buf_init(&b, NULL, N, ADV_LAZY);
    adv_bounce(&b, 84);
    int resident = 0;
    if ((raw ? syscall(SYS_mincore, b.h, N, vec) : mincore(b.h, N, vec)) != 0)
        adv_errno("mincore", errno);
    for (size_t i = 0; i < N / ADV_PAGE; i++)
        resident += vec[i] & 1;
    adv_say("mincore: %d of %zu pages resident", resident, N / ADV_PAGE);
    adv_h2d(&b, "H2D");
    return 0;
}

static int case_dontneed(int argc, char **argv)
{
    struct adv_buf b;
    adv_buf_init(&b, NULL, N, adv_mem_of(mem_arg(argc, argv)));
    adv_bounce(&b, 85);
    size_t off = 16 * ADV_PAGE, len = 48 * ADV_PAGE;
    PL_EXPECT(madvise(b.h + off, len, MADV_DONTNEED) == 0, "madvise: %s", strerror(errno));
    memset(b.want + off, 0, len);
    bt_check_host(b.h, b.want, N, "MADV_DONTNEED");
    adv_digest("read back", b.h, N);
    adv_h2d(&b, "H2D");
    return 0;
}

static int case_free(int argc, char **argv)
{
    struct adv_buf b;
    adv_buf_init(&b, NULL, N, adv_mem_of(mem_arg(argc, argv)));
    adv_bounce(&b, 86);
    PL_EXPECT(madvise(b.h, N, MADV_FREE) == 0, "madvise: %s", strerror(errno));
    /* What MADV_FREE leaves is the kernel's choice until a page is
     * written: the program writes it all, as an allocator reusing it. */
    adv_rewrite(&b, 0, N, 87);
    adv_digest("read back", b.h, N);
    adv_h2d(&b, "H2D");
    return 0;
}

static int case_mremap(int argc, char **argv)
{
    struct adv_buf b;
    int raw = strcmp(argv[0], "mremap_raw") == 0;
    (void)argc;
    adv_buf_init(&b, NULL, N, ADV_LAZY);
    adv_bounce(&b, 88);
    void *to = mmap(NULL, 2 * N, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *moved = raw ? (void *)syscall(SYS_mremap, b.h, N, 2 * N,
                                        MREMAP_MAYMOVE | MREMAP_FIXED, to)
                      : mremap(b.h, N, 2 * N, MREMAP_MAYMOVE | MREMAP_FIXED, to);
    PL_EXPECT(moved == to, "mremap: %s", strerror(errno));
    if (moved != to)
        return 1;
    b.h = moved;
    bt_check_host(b.h, b.want, N, "moved");
    adv_digest("read back at the new place", b.h, N);
    adv_digest("the grown part", b.h + N, N);
    adv_h2d(&b, "H2D from the new place");
    return 0;
}

static int case_vm_readv(int argc, char **argv)
{
    struct adv_buf b;
    adv_buf_init(&b, NULL, N, argc > 1 ? adv_mem_of(argv[1]) : ADV_LAZY);
    adv_bounce(&b, 89);
    unsigned char *copy = calloc(1, N);
    struct iovec local = {copy, N}, remote = {b.h, N};
    ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (got < 0)
        adv_errno("process_vm_readv", errno);
    else
        adv_say("process_vm_readv: %zd bytes", got);
    adv_digest("what it read", copy, N);
    adv_h2d(&b, "H2D");
    free(copy);
    return 0;
}

static int case_vm_writev(int argc, char **argv)
{
    struct adv_buf b;
    adv_buf_init(&b, NULL, N, argc > 1 ? adv_mem_of(argv[1]) : ADV_EAGER);
    adv_bounce(&b, 90);
    size_t off = 3 * ADV_PAGE + 99, len = 200000;
    bt_pattern(b.want + off, len, 91);
    struct iovec local = {b.want + off, len}, remote = {b.h + off, len};
    ssize_t put = process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
    if (put < 0)
        adv_errno("process_vm_writev", errno);
    else
        adv_say("process_vm_writev: %zd bytes", put);
    bt_check_host(b.h, b.want, N, "written");
    adv_digest("read back", b.h, N);
    adv_h2d(&b, "H2D");
    return 0;
}

/* HUGE bytes aligned to a huge page, asked to be one (THP). */
static void *thp_buffer(void)
{
    char *p = mmap(NULL, 2 * HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    char *aligned = (char *)(((uintptr_t)p + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    if (madvise(aligned, HUGE, MADV_HUGEPAGE) != 0)
        fprintf(stderr, "adv: MADV_HUGEPAGE: %s\n", strerror(errno));
    memset(aligned, 0, HUGE);
    return aligned;
}

static int huge_case(void *h, enum adv_mem mem)
{
    struct adv_buf b;
    adv_buf_init(&b, h, HUGE, mem);
    adv_bounce(&b, 92);
    bt_check_host(b.h, b.want, HUGE, "huge page");
    adv_digest("read back", b.h, HUGE);
    adv_rewrite(&b, HUGE / 2 + 12345, 777, 93);
    adv_h2d(&b, "H2D");
    adv_buf_prime(&b);
    adv_bounce(&b, 94);
    adv_h2d(&b, "the next round, H2D untouched");
    return 0;
}

static int case_thp(int argc, char **argv)
{
    void *h = thp_buffer();
    PL_EXPECT(h != NULL, "mmap: %s", strerror(errno));
    return h == NULL ? 1 : huge_case(h, adv_mem_of(mem_arg(argc, argv)));
}

static int case_hugetlb(int argc, char **argv)
{
    void *h = mmap(NULL, HUGE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (h == MAP_FAILED) {
        fprintf(stderr, "no huge page for MAP_HUGETLB (vm.nr_hugepages): %s\n",
                strerror(errno));
        return ADV_SKIP;
    }
    return huge_case(h, adv_mem_of(mem_arg(argc, argv)));
}

/* The driver unmaps pinned memory that still has a snapshot
 * (cuMemFreeHost) while the shim's fault handler is between two runs of
 * a lazy fill of another buffer: the handler has woken the toucher after
 * the first run and is slowed in the driver before the second
 * (STANDIN_SLOW_THREAD). The driver unmaps under its own lock, and the
 * kernel makes an unmap of a range registered with userfaultfd wait
 * until the handler has read its event: if the pinned range is still
 * registered then, the handler waits for that lock and the process hangs.
 * Chunk 1 of the lazy buffer is read first, so that the fault in chunk 0
 * fills two runs (chunk 0, then chunk 2 past the filled chunk 1). */
static int case_free_during_fill(int argc, char **argv)
{
    (void)argc, (void)argv;
    const size_t chunk = (size_t)2 << 20;
    struct adv_buf lazy, pinned;
    adv_buf_init(&lazy, NULL, 4 * chunk, ADV_LAZY);
    adv_buf_init(&pinned, NULL, N, ADV_PINNED);
    adv_bounce(&lazy, 11);
    adv_bounce(&pinned, 12);
    adv_h2d(&pinned, "pinned H2D");
    volatile unsigned char *h = lazy.h;
    unsigned sum = h[chunk + 5];
    sum += h[5];
    adv_say("read: %u", sum);
    CUresult r = cuMemFreeHost(pinned.h);
    adv_say("cuMemFreeHost: %d", (int)r);
    adv_digest("lazy read back", lazy.h, lazy.n);
    adv_h2d(&lazy, "lazy H2D");
    return 0;
}

int main(int argc, char **argv)
{
    static const struct adv_case cases[] = {
        {"free_during_fill", case_free_during_fill},
        {"proc_mem", case_proc_mem},
        {"proc_mem_write", case_proc_mem_write},
        {"mincore", case_mincore},
        {"traced", case_traced},
        {"dontneed", case_dontneed},
        {"free", case_free},
        {"mremap", case_mremap},
        {"mremap_raw", case_mremap},
        {"vm_readv", case_vm_readv},
        {"vm_writev", case_vm_writev},
        {"thp", case_thp},
        {"hugetlb", case_hugetlb},
    };
    return adv_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
