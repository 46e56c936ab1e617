/* Footprint probe: what the shim costs a process it cannot help. Run by
 * footprint.sh with and without the shim; prints key=value lines, which
 * the script compares. Modes:
 *   tls LIB     the static TLS LIB adds to every thread (its PT_TLS header)
 *   stack64k    a thread with a 64 KiB stack that uses 32 KiB of it
 *   rss         VmRSS with 16 idle threads, before and after the first
 *               CUDA calls (one device, nothing crosses GPUs)
 *   fork        after CUDA calls, a forked child's Private_Dirty
 *               (smaps_rollup) before it does anything
 *   exec        execl, execlp and execle of itself with 100,000 arguments
 *   FP_EXEC_ARG (what those execs run) counts and checks its arguments */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fp_probe.h"
#include "pl_common.h"

static int fail(const char *what)
{
    printf("FAIL: %s: %s\n", what, strerror(errno));
    return 1;
}

/* PT_TLS p_memsz rounded up to p_align: what the loader reserves in every
 * thread's static TLS block for this object (0: no PT_TLS). */
static int tls_mode(const char *lib)
{
    FILE *f = fopen(lib, "rb");
    Elf64_Ehdr eh;
    if (f == NULL || fread(&eh, sizeof eh, 1, f) != 1)
        return fail(lib);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
        printf("FAIL: %s: not a 64-bit ELF file\n", lib);
        return 1;
    }
    unsigned long long tls = 0;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (fseek(f, (long)(eh.e_phoff + (Elf64_Off)i * eh.e_phentsize), SEEK_SET) != 0 ||
            fread(&ph, sizeof ph, 1, f) != 1)
            return fail(lib);
        if (ph.p_type == PT_TLS) {
            unsigned long long a = ph.p_align ? ph.p_align : 1;
            tls = (ph.p_memsz + a - 1) / a * a;
        }
    }
    fclose(f);
    printf("static_tls_bytes=%llu\n", tls);
    return 0;
}

static void *use_32k(void *arg)
{
    volatile char buf[32 << 10];
    for (size_t i = 0; i < sizeof buf; i += 512)
        buf[i] = (char)i;
    *(int *)arg = buf[512] == (char)512;
    return NULL;
}

static int stack64k_mode(void)
{
    pthread_attr_t attr;
    pthread_t t;
    int ok = 0;
    pthread_attr_init(&attr);
    int rc = pthread_attr_setstacksize(&attr, 64 << 10);
    if (rc == 0)
        rc = pthread_create(&t, &attr, use_32k, &ok);
    if (rc == 0)
        pthread_join(t, NULL);
    printf("stack64k=%s\n", rc != 0 ? strerror(rc) : ok ? "ok" : "bad bytes");
    return 0;
}

static long status_kib(const char *file, const char *key)
{
    char buf[8192];
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = strstr(buf, key);
    return p != NULL ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* One device, nothing crossing: allocate, write, read back. */
static void cuda_on_one_device(void)
{
    struct pl_env env;
    pl_init(&env);
    CUdeviceptr d = pl_alloc(env.ctx[0], 1 << 20);
    pl_fill(env.ctx[0], d, 1 << 20, 7);
    pl_verify(env.ctx[0], d, 1 << 20, 7, "one-device round trip");
    pl_free(env.ctx[0], d);
}

static int park[2];

static void *idle(void *arg)
{
    char c;
    (void)arg;
    while (read(park[0], &c, 1) < 0 && errno == EINTR)
        ;
    return NULL;
}

static int rss_mode(void)
{
    enum { THREADS = 16 };
    pthread_t t[THREADS];
    if (pipe(park) != 0)
        return fail("pipe");
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, idle, NULL) != 0)
            return fail("pthread_create");
    printf("threads=%d\n", THREADS + 1);
    printf("rss_before_kib=%ld\n", status_kib("/proc/self/status", "VmRSS:"));
    cuda_on_one_device();
    printf("rss_after_kib=%ld\n", status_kib("/proc/self/status", "VmRSS:"));
    close(park[1]);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    return 0;
}

static int fork_mode(void)
{
    cuda_on_one_device();
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return fail("fork");
    if (pid == 0) {
        char line[64];
        long kib = status_kib("/proc/self/smaps_rollup", "Private_Dirty:");
        int n = snprintf(line, sizeof line, "fork_private_dirty_kib=%ld\n", kib);
        _exit(write(STDOUT_FILENO, line, (size_t)n) == n ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

/* Runs one exec in a child; prints what the exec'd program said and how
 * the child ended. */
static void exec_one(const char *name, int which, const char *self)
{
    static char *envp[] = {"FP_EXECLE_ENV=given", NULL};
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        printf("%s: ", name);
        fflush(stdout);
        int r = which == 0 ? fp_execl(self) : which == 1 ? fp_execlp(self) : fp_execle(self, envp);
        printf("exec returned %d (%s)\n", r, strerror(errno));
        fflush(stdout);
        _exit(3);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    printf("%s: exit %d\n", name, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

static int exec_mode(const char *self)
{
    exec_one("execl", 0, self);
    exec_one("execlp", 1, self);
    exec_one("execle", 2, self);
    return 0;
}

static int count_args(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i < argc; i++)
        bad += strcmp(argv[i], FP_EXEC_ARG) != 0;
    const char *env = getenv("FP_EXECLE_ENV");
    printf("args=%d bad=%d env=%s\n", argc - 1, bad, env ? env : "-");
    return bad != 0 || argc - 1 != FP_EXEC_ARGS;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, FP_EXEC_ARG) == 0)
        return count_args(argc, argv);
    printf("shim=%d\n", pl_shim_loaded());
    if (strcmp(mode, "tls") == 0 && argc > 2)
        return tls_mode(argv[2]);
    if (strcmp(mode, "stack64k") == 0)
        return stack64k_mode();
    if (strcmp(mode, "rss") == 0)
        return rss_mode() | pl_finish("rss");
    if (strcmp(mode, "fork") == 0)
        return fork_mode() | pl_finish("fork");
    if (strcmp(mode, "exec") == 0)
        return exec_mode(argv[0][0] == '/' ? argv[0] : "/proc/self/exe");
    fprintf(stderr, "usage: fp_probe tls LIB | stack64k | rss | fork | exec\n");
    return 2;
}
