/* The shim's descriptors: see fd_guard.h for the contract. */
#define _GNU_SOURCE
#include "fd_guard.h"
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim_sys.h"

#define SLOTS 8
/* Numbers at most 1023: the highest a select() set holds, and a
 * descriptor table of 1024 entries (8 KiB) however high the limit. */
#define CEILING 1024
#define TRIES 64 /* numbers tried downwards from the top before taking any above 2 */
#define WAIT_NS 1000000000L

_Atomic int shim_fd_lowest = INT_MAX;
static _Atomic(struct shim_fd *) slots[SLOTS];
static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
/* The process whose descriptors the registry names (a vfork child shares
 * the memory, not the table). */
static _Atomic pid_t owner_pid;

static int number_of(struct shim_fd *g)
{
    _Atomic int *n = atomic_load(&g->number);
    return n != NULL ? atomic_load(n) : -1;
}

static struct shim_fd *find(int fd)
{
    for (int i = 0; i < SLOTS; i++) {
        struct shim_fd *g = atomic_load(&slots[i]);
        if (g != NULL && number_of(g) == fd)
            return g;
    }
    return NULL;
}

/* registry_mu held. */
static void recompute_lowest(void)
{
    int low = INT_MAX;
    for (int i = 0; i < SLOTS; i++) {
        struct shim_fd *g = atomic_load(&slots[i]);
        int n = g != NULL ? number_of(g) : -1;
        if (n >= 0 && n < low)
            low = n;
    }
    atomic_store(&shim_fd_lowest, low);
}

/* Before a number is published: the wrappers must look from then on. */
static void lower_to(int fd)
{
    if (fd < atomic_load(&shim_fd_lowest))
        atomic_store(&shim_fd_lowest, fd);
}

/* The value of "NAME:" in /proc/self/status, or -1. */
static long status_field(const char *text, const char *name)
{
    const char *at = strstr(text, name);
    return at == NULL ? -1 : strtol(at + strlen(name), NULL, 10);
}

/* The size of the descriptor table, where growing it would make this
 * thread wait: a table shared by several threads is replaced only after
 * an RCU grace period (the kernel's expand_fdtable), 13-14 ms on an H200
 * host for the userfaultfd moved to 1023 at a process's first bounce,
 * once the CUDA driver's threads run. 0: no such limit (one thread, or
 * the size unknown). */
static long table_ceiling(void)
{
    char text[4096];
    int fd = (int)shim_sys6(SYS_openat, AT_FDCWD, (long)"/proc/self/status",
                            O_RDONLY | O_CLOEXEC, 0, 0, 0);
    if (fd < 0)
        return 0;
    long n = shim_sys_read(fd, text, sizeof text - 1);
    shim_sys_close(fd);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    long threads = status_field(text, "\nThreads:"), size = status_field(text, "\nFDSize:");
    return threads > 1 && size >= 64 ? size : 0;
}

/* A close-on-exec duplicate of fd at the highest free number below the
 * ceiling (the soft RLIMIT_NOFILE, at most CEILING, and within the
 * descriptor table where growing it would wait: table_ceiling), trying
 * TRIES numbers downwards, else the lowest free above 2; -1 when there is
 * none. */
static int place_high(int fd)
{
    struct rlimit rl;
    long top = CEILING;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)CEILING)
        top = (long)rl.rlim_cur;
    long table = table_ceiling();
    if (table > 3 && table < top)
        top = table;
    for (long h = top - 1; h > 2 && h >= top - TRIES; h--) {
        /* Taken: F_DUPFD would give the next free number above it, which
         * may lie past the table's end and grow it. */
        if (table > 3 && shim_sys6(SYS_fcntl, h, F_GETFD, 0, 0, 0, 0) >= 0)
            continue;
        int r = shim_sys_dupfd_cloexec(fd, (int)h);
        if (r >= 0 && r < top)
            return r;
        if (r >= 0)
            shim_sys_close(r); /* above the ceiling: a bigger table; look lower */
        else if (errno != EMFILE && errno != EINVAL)
            return -1;
    }
    return shim_sys_dupfd_cloexec(fd, 3);
}

/* Waits until no use of g's descriptor begun before now is in flight, at
 * most WAIT_NS. */
static void wait_users(struct shim_fd *g)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned spins = 0; atomic_load(&g->users) != 0; spins++) {
        sched_yield();
        if ((spins & 63) != 63)
            continue;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > WAIT_NS)
            return;
    }
}

int shim_fd_adopt(struct shim_fd *g, _Atomic int *number, int fd, const char *what)
{
    int saved = errno;
    int moved = place_high(fd);
    if (moved >= 0) {
        shim_sys_close(fd);
    } else if (fd > 2) {
        moved = fd; /* no room elsewhere: where it is, close-on-exec as opened */
    } else {
        shim_sys_close(fd);
        errno = saved;
        return -1;
    }
    struct stat st;
    if (shim_sys_fstat(moved, &st) == 0) {
        g->dev = st.st_dev;
        g->ino = st.st_ino;
    }
    g->what = what;
    atomic_store(&g->users, 0);
    pthread_mutex_lock(&registry_mu);
    atomic_store(&owner_pid, getpid());
    for (int i = 0; i < SLOTS; i++) {
        struct shim_fd *none = NULL;
        if (atomic_load(&slots[i]) == g || atomic_compare_exchange_strong(&slots[i], &none, g)) {
            lower_to(moved);
            atomic_store(&g->number, number);
            break;
        }
    }
    atomic_store(number, moved);
    pthread_mutex_unlock(&registry_mu);
    errno = saved;
    return moved;
}

/* Takes g out of the registry; returns the number it had (-1: none).
 * registry_mu held. */
static int unregister(struct shim_fd *g)
{
    _Atomic int *n = atomic_load(&g->number);
    if (n == NULL)
        return -1;
    int fd = atomic_exchange(n, -1);
    atomic_store(&g->number, NULL);
    for (int i = 0; i < SLOTS; i++) {
        struct shim_fd *me = g;
        atomic_compare_exchange_strong(&slots[i], &me, NULL);
    }
    recompute_lowest();
    wait_users(g);
    return fd;
}

void shim_fd_release(struct shim_fd *g)
{
    int saved = errno;
    pthread_mutex_lock(&registry_mu);
    int fd = unregister(g);
    pthread_mutex_unlock(&registry_mu);
    if (fd >= 0)
        shim_sys_close(fd);
    errno = saved;
}

void shim_fd_forget(struct shim_fd *g)
{
    pthread_mutex_lock(&registry_mu);
    unregister(g);
    pthread_mutex_unlock(&registry_mu);
}

int shim_fd_use(struct shim_fd *g)
{
    atomic_fetch_add(&g->users, 1);
    return number_of(g);
}

void shim_fd_unuse(struct shim_fd *g)
{
    atomic_fetch_sub(&g->users, 1);
}

bool shim_fd_intact(const struct shim_fd *g, int fd)
{
    int saved = errno;
    struct stat st;
    bool same = fd >= 0 && shim_sys_fstat(fd, &st) == 0 && st.st_dev == g->dev &&
                st.st_ino == g->ino;
    errno = saved;
    return same;
}

bool shim_fd_held(int fd)
{
    struct shim_fd *g = fd >= 0 ? find(fd) : NULL;
    return g != NULL && shim_fd_intact(g, fd);
}

size_t shim_fd_held_in(unsigned first, unsigned last, int *out, size_t max)
{
    size_t n = 0;
    for (int i = 0; i < SLOTS && n < max; i++) {
        struct shim_fd *g = atomic_load(&slots[i]);
        int fd = g != NULL ? number_of(g) : -1;
        if (fd < 0 || (unsigned)fd < first || (unsigned)fd > last || !shim_fd_intact(g, fd))
            continue;
        size_t k = n++;
        for (; k > 0 && out[k - 1] > fd; k--)
            out[k] = out[k - 1];
        out[k] = fd;
    }
    return n;
}

int shim_fd_vacate(int fd)
{
    int saved = errno;
    if (getpid() != atomic_load(&owner_pid))
        return 1;
    pthread_mutex_lock(&registry_mu);
    struct shim_fd *g = find(fd);
    if (g == NULL || !shim_fd_intact(g, fd)) {
        pthread_mutex_unlock(&registry_mu);
        errno = saved;
        return 1;
    }
    int moved = place_high(fd);
    if (moved < 0) {
        pthread_mutex_unlock(&registry_mu);
        errno = EMFILE;
        return -1;
    }
    lower_to(moved);
    atomic_store(atomic_load(&g->number), moved);
    recompute_lowest();
    wait_users(g);
    pthread_mutex_unlock(&registry_mu);
    errno = saved;
    return 0;
}

void shim_fd_fork_prepare(void)
{
    pthread_mutex_lock(&registry_mu);
}

void shim_fd_fork_parent(void)
{
    pthread_mutex_unlock(&registry_mu);
}

void shim_fd_fork_child(void)
{
    pthread_mutex_init(&registry_mu, NULL);
    for (int i = 0; i < SLOTS; i++) {
        struct shim_fd *g = atomic_load(&slots[i]);
        if (g != NULL)
            atomic_store(&g->users, 0);
    }
    atomic_store(&owner_pid, getpid());
}

SHIM_LIFE_ROW(fds_row) = {
    .order = SHIM_ROW_FDS,
    .name = "descriptors",
    .fork_prepare = shim_fd_fork_prepare,
    .fork_parent = shim_fd_fork_parent,
    .fork_child = shim_fd_fork_child,
};
