#define _GNU_SOURCE
#include "adv_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int adv_shim;
const char *adv_tmp;
const char *adv_self;
const char *adv_mode;

enum adv_mem adv_mem_of(const char *arg)
{
    if (arg != NULL && strcmp(arg, "eager") == 0)
        return ADV_EAGER;
    if (arg != NULL && strcmp(arg, "pinned") == 0)
        return ADV_PINNED;
    return ADV_LAZY;
}

int adv_main(int argc, char **argv, const struct adv_case *cases, int ncases)
{
    adv_self = argv[0];
    adv_shim = pl_want_shim(argc, argv);
    bt_shim = adv_shim;
    adv_mode = argv[1];
    adv_tmp = getenv("ADV_TMP");
    if (argc < 3 || adv_tmp == NULL || adv_tmp[0] == '\0') {
        fprintf(stderr, "usage: ADV_TMP=DIR %s shim|noshim CASE [ARG...]\n", argv[0]);
        return 2;
    }
    /* Pageable buffers are lazy unless the case asks for eager (pinned
     * memory is eager in every mode); a test's own setting wins. */
    if (getenv("P2PSHIM_BOUNCE") == NULL)
        setenv("P2PSHIM_BOUNCE", adv_mem_of(argc > 3 ? argv[3] : NULL) == ADV_EAGER ? "eager"
                                                                                 : "lazy",
               1);
    for (int i = 0; i < ncases; i++)
        if (strcmp(cases[i].name, argv[2]) == 0) {
            int rc = cases[i].run(argc - 2, argv + 2);
            fflush(stdout);
            return rc != 0 ? rc : pl_finish(argv[2]);
        }
    fprintf(stderr, "%s: no case '%s'\n", argv[0], argv[2]);
    return 2;
}

void adv_cuda(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    pl_init(&bt_env);
    if (bt_env.ndev < 2) {
        fprintf(stderr, "the adversarial cases need two devices\n");
        exit(2);
    }
}

void adv_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

void adv_digest(const char *what, const void *p, size_t n)
{
    adv_say("%s: host=%016llx", what, (unsigned long long)bt_fnv(p, n));
}

void adv_digest_raw(const char *what, const void *p, size_t n)
{
    char line[256];
    size_t len = strnlen(what, 200);
    uint64_t x = bt_fnv(p, n);
    memcpy(line, what, len);
    memcpy(line + len, ": host=", 7);
    len += 7;
    for (int i = 15; i >= 0; i--)
        line[len++] = "0123456789abcdef"[(x >> (4 * i)) & 15];
    line[len++] = '\n';
    ssize_t w = write(1, line, len);
    (void)w;
}

void adv_errno(const char *what, int err)
{
    const char *name = strerrorname_np(err);
    if (name != NULL)
        adv_say("%s: errno=%s", what, name);
    else
        adv_say("%s: errno=%d", what, err);
}

void adv_status(const char *what, int status)
{
    if (WIFEXITED(status)) {
        adv_say("%s: exit %d", what, WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        const char *name = sigabbrev_np(WTERMSIG(status));
        adv_say("%s: signal %s", what, name ? name : "?");
    } else {
        adv_say("%s: status 0x%x", what, (unsigned)status);
    }
}

void adv_buf_prime(struct adv_buf *b)
{
    bt_set_dev(b->src, b->want, b->n);
    pl_use(bt_env.ctx[0]);
    bt_prime(b->h, b->src, b->dst, b->n);
}

void adv_buf_init(struct adv_buf *b, void *h, size_t n, enum adv_mem mem)
{
    adv_cuda();
    memset(b, 0, sizeof *b);
    b->n = n;
    b->mem = mem;
    b->h = h;
    if (b->h == NULL && mem == ADV_PINNED) {
        PL_OK(cuMemAllocHost_v2((void **)&b->h, n));
    } else if (b->h == NULL) {
        b->h = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b->h == MAP_FAILED)
            b->h = NULL;
    }
    b->want = malloc(n);
    if (b->h == NULL || b->want == NULL) {
        fprintf(stderr, "adv_buf_init: no memory for %zu bytes\n", n);
        exit(2);
    }
    b->src = pl_alloc(bt_env.ctx[0], n);
    b->dst = pl_alloc(bt_env.ctx[1], n);
    bt_pattern(b->want, n, 1);
    adv_buf_prime(b);
}

void adv_bounce_bytes(struct adv_buf *b, const unsigned char *bytes)
{
    struct standin_stats before;
    struct bt_paths p;
    if (bytes != b->want)
        memcpy(b->want, bytes, b->n);
    bt_set_dev(b->src, b->want, b->n);
    standin_get_stats(&before);
    pl_use(bt_env.ctx[0]);
    PL_OK(cuMemcpyDtoH_v2(b->h, b->src, b->n));
    bt_paths_since(&before, &p);
    /* The shim's snapshot is a copy on the source's device. */
    b->predicted = p.dev_bytes > 0;
    if (adv_shim && !b->predicted) {
        fprintf(stderr, "adv: note: the shim did not bounce a D2H of %zu bytes\n", b->n);
        PL_EXPECT(getenv("ADV_REQUIRE_BOUNCE") == NULL, "the D2H was not bounced");
    }
}

void adv_bounce(struct adv_buf *b, unsigned seed)
{
    bt_pattern(b->want, b->n, seed);
    adv_bounce_bytes(b, b->want);
}

void adv_h2d(struct adv_buf *b, const char *what)
{
    pl_use(bt_env.ctx[0]);
    PL_OK(cuMemcpyHtoD_v2(b->dst, b->h, b->n));
    bt_check_dev(b->dst, b->want, b->n, what);
    standin_flush_all();
    adv_say("%s: device=%016llx", what,
            (unsigned long long)bt_fnv((const void *)(uintptr_t)b->dst, b->n));
}

void adv_rewrite(struct adv_buf *b, size_t off, size_t len, unsigned seed)
{
    bt_pattern(b->want + off, len, seed);
    memcpy(b->h + off, b->want + off, len);
}

const char *adv_path(const char *name)
{
    static char ring[8][512];
    static int next;
    char *p = ring[next++ % 8];
    snprintf(p, sizeof ring[0], "%s/%s", adv_tmp, name);
    return p;
}

void adv_file_digest(const char *what, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        adv_errno(what, errno);
        return;
    }
    struct stat st;
    unsigned char *p = NULL;
    ssize_t got = -1;
    if (fstat(fd, &st) == 0 && (p = malloc((size_t)st.st_size + 1)) != NULL)
        got = pread(fd, p, (size_t)st.st_size, 0);
    close(fd);
    if (got < 0)
        adv_errno(what, errno);
    else
        adv_say("%s: file=%016llx size=%zd", what, (unsigned long long)bt_fnv(p, (size_t)got),
                got);
    free(p);
}

void adv_write_file(const char *path, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    PL_EXPECT(fd >= 0 && write(fd, p, n) == (ssize_t)n, "writing %s", path);
    if (fd >= 0)
        close(fd);
}

char **adv_plain_env(void)
{
    static char pre[1024];
    size_t n = 0, k = 0;
    while (environ[n] != NULL)
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (env == NULL)
        return environ;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
            env[k++] = environ[i];
    const char *plain = getenv("ADV_PRELOAD_PLAIN");
    if (plain != NULL && plain[0] != '\0') {
        snprintf(pre, sizeof pre, "LD_PRELOAD=%s", plain);
        env[k++] = pre;
    }
    return env;
}

int adv_run_plain(char *const argv[])
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status = -1;
    char **env = adv_plain_env();
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, 2, 1);
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    if (env != environ)
        free(env);
    if (rc != 0) {
        fprintf(stderr, "adv_run_plain: %s: %s\n", argv[0], strerror(rc));
        return -1;
    }
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    return status;
}

static long count_in(const char *path, const char *needle)
{
    FILE *f = fopen(path, "re");
    char *line = NULL;
    size_t cap = 0;
    long count = 0;
    if (f == NULL)
        return 0;
    while (getline(&line, &cap, f) > 0)
        count += strstr(line, needle) != NULL;
    free(line);
    fclose(f);
    return count;
}

long adv_log_count(const char *dir, const char *type)
{
    char needle[64], path[1024];
    long count = -1;
    DIR *d = opendir(dir);
    struct dirent *e;
    snprintf(needle, sizeof needle, "\"type\":\"%s\"", type);
    while (d != NULL && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 6, ".jsonl") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        count = (count < 0 ? 0 : count) + count_in(path, needle);
    }
    if (d != NULL)
        closedir(d);
    return count;
}
