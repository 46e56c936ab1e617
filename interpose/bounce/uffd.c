/* userfaultfd: see uffd.h for the contract. */
#define _GNU_SOURCE
#include "uffd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd_guard.h"
#include "log.h"
#include "pages.h"
#include "shim.h"
#include "shim_sys.h"
#include "thread_start.h"

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

#define NEEDED_FEATURES                                                      \
    (UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_EVENT_REMAP |             \
     UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_UNMAP)

static pthread_once_t open_once = PTHREAD_ONCE_INIT;
/* One of the shim's descriptors (fd_guard.h): the program's close family
 * leaves it alone, and its number may move (a dup2 onto it). The handler
 * waits on it through an epoll instance (also the shim's), which watches
 * the file, not the number: a poll() asleep on the number would look at
 * whatever the program put there after a move, and miss the faults. */
static _Atomic int the_fd = -1, the_epoll = -1;
static struct shim_fd uffd_guard, epoll_guard;
static const struct uffd_ops *the_ops;
static _Atomic bool usable;
static size_t page_size;

static _Atomic uint64_t maps_gen;

/* The barrier: set before each read(), cleared once what was read has been
 * processed. munmap returns once its event is read, so a thread that has
 * seen munmap return and then finds this clear knows the event was dealt
 * with. */
static _Atomic int in_batch;
static pthread_mutex_t batch_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t batch_cv = PTHREAD_COND_INITIALIZER;
static _Thread_local bool is_handler;

/* Ranges found private and anonymous, valid while no UNMAP or REMAP event
 * has come since (a staging buffer reused in a loop is read from
 * /proc/self/maps once). A REMOVE (MADV_DONTNEED) changes no mapping.
 * Only mappings registered with us raise events: an mprotect or an mmap
 * over other memory does not, but such ranges are not vetted yet. */
#define VETTED_MAX 8
static struct vetted {
    uintptr_t lo, hi;
    uint64_t gen;
} vetted[VETTED_MAX];
static unsigned vetted_next;
static pthread_mutex_t vetted_mu = PTHREAD_MUTEX_INITIALIZER;

/* The locks the handler takes (vetted_mu, batch_mu) are taken by program
 * threads only in quiet sections (shim.h): a signal handler there that
 * touched a lazy page would wait for the handler, which would wait for
 * the lock (bounce/table.h's contract). */
static void vetted_lock(void)
{
    if (!is_handler)
        shim_quiet_begin(true);
    pthread_mutex_lock(&vetted_mu);
}

static void vetted_unlock(void)
{
    pthread_mutex_unlock(&vetted_mu);
    if (!is_handler)
        shim_quiet_end(true);
}

/* The kernel's answer for a descriptor that also takes kernel-mode faults:
 * the syscall first, then /dev/userfaultfd (which root may use when the
 * syscall is filtered). */
static int new_descriptor(void)
{
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0)
        return fd;
    int saved = errno;
    int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
    if (dev < 0) {
        errno = saved;
        return -1;
    }
    fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
    saved = errno;
    close(dev);
    errno = saved;
    return fd;
}

static void dispatch(const struct uffd_msg *m)
{
    switch (m->event) {
    case UFFD_EVENT_PAGEFAULT: {
        uintptr_t a = (uintptr_t)m->arg.pagefault.address & ~(uintptr_t)(page_size - 1);
        bool wp = (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) != 0;
        bool wr = (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE) != 0;
        the_ops->fault(a, wp, wr);
        break;
    }
    case UFFD_EVENT_UNMAP:
        atomic_fetch_add(&maps_gen, 1);
        the_ops->gone((uintptr_t)m->arg.remove.start, (uintptr_t)m->arg.remove.end, true);
        break;
    case UFFD_EVENT_REMOVE:
        the_ops->gone((uintptr_t)m->arg.remove.start, (uintptr_t)m->arg.remove.end, false);
        break;
    case UFFD_EVENT_REMAP:
        atomic_fetch_add(&maps_gen, 1);
        the_ops->moved((uintptr_t)m->arg.remap.from, (uintptr_t)m->arg.remap.to,
                       (size_t)m->arg.remap.len);
        break;
    default:
        break;
    }
}

static void batch_done(void)
{
    pthread_mutex_lock(&batch_mu);
    atomic_store(&in_batch, 0);
    pthread_cond_broadcast(&batch_cv);
    pthread_mutex_unlock(&batch_mu);
}

static void *handler_main(void *arg)
{
    (void)arg;
    is_handler = true;
    struct uffd_msg msgs[16];
    for (;;) {
        struct epoll_event ev;
        /* The kernel's own calls: the shim's descriptors are none of the
         * program's business, nor of a sanitizer watching it (shim_sys.h). */
        if (shim_sys_epoll_wait(the_epoll, &ev, 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            LOG_ERROR("userfaultfd handler: epoll_wait: %s", strerror(errno));
            return NULL;
        }
        atomic_store(&in_batch, 1);
        /* A use: a move of the descriptor waits until the read is done. */
        ssize_t n = shim_sys_read(shim_fd_use(&uffd_guard), msgs, sizeof msgs);
        shim_fd_unuse(&uffd_guard);
        if (n < 0) {
            batch_done();
            if (errno == EAGAIN || errno == EINTR)
                continue;
            LOG_ERROR("userfaultfd handler: read: %s", strerror(errno));
            return NULL;
        }
        for (size_t i = 0; i < (size_t)n / sizeof msgs[0]; i++)
            dispatch(&msgs[i]);
        batch_done();
    }
}

static void open_body(void)
{
    page_size = (size_t)sysconf(_SC_PAGESIZE);
    double t0 = bounce_now_us();
    int fd = new_descriptor();
    double t1 = bounce_now_us();
    if (fd < 0) {
        LOG_DEBUG("bounce: userfaultfd unavailable (%s): no lazy host buffers",
                  strerror(errno));
        return;
    }
    struct uffdio_api api = {.api = UFFD_API, .features = NEEDED_FEATURES};
    if (ioctl(fd, UFFDIO_API, &api) < 0 || (api.features & NEEDED_FEATURES) != NEEDED_FEATURES) {
        LOG_DEBUG("bounce: userfaultfd lacks write-protect or events (%s): "
                  "no lazy host buffers", strerror(errno));
        close(fd);
        return;
    }
    double t2 = bounce_now_us();
    int ep = -1;
    struct epoll_event ev = {.events = EPOLLIN};
    if (shim_fd_adopt(&uffd_guard, &the_fd, fd, "the userfaultfd") < 0 ||
        (ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        shim_fd_adopt(&epoll_guard, &the_epoll, ep, "the userfaultfd's epoll") < 0 ||
        epoll_ctl(the_epoll, EPOLL_CTL_ADD, the_fd, &ev) != 0) {
        LOG_DEBUG("bounce: no descriptors for userfaultfd: no lazy host buffers");
        shim_fd_release(&epoll_guard);
        shim_fd_release(&uffd_guard);
        return;
    }
    /* The handler takes no signals (shim_thread_start blocks them all):
     * they belong to the program's threads, and lock.h counts on it. */
    double t3 = bounce_now_us();
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int rc = shim_thread_start(&t, &attr, handler_main, NULL);
    LOG_DEBUG("bounce: userfaultfd opened %.0f us, API %.0f us, descriptors %.0f us, "
              "thread %.0f us", t1 - t0, t2 - t1, t3 - t2, bounce_now_us() - t3);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        LOG_DEBUG("bounce: cannot start the userfaultfd handler: %s", strerror(rc));
        shim_fd_release(&epoll_guard);
        shim_fd_release(&uffd_guard);
        return;
    }
    pthread_setname_np(t, "p2pshim-uffd");
    atomic_store(&usable, true);
}

static const struct uffd_ops *pending_ops;

static void open_with_ops(void)
{
    the_ops = pending_ops;
    open_body();
}

bool uffd_open(const struct uffd_ops *ops)
{
    /* The first caller's ops count; table.c is the only caller. */
    if (!atomic_load(&usable) && pending_ops == NULL)
        pending_ops = ops;
    pthread_once(&open_once, open_with_ops);
    return atomic_load(&usable);
}

bool uffd_register(uintptr_t start, size_t len, bool missing)
{
    if (!atomic_load(&usable))
        return errno = ENOSYS, false;
    struct uffdio_register r = {
        .range = {.start = start, .len = len},
        .mode = UFFDIO_REGISTER_MODE_WP | (missing ? UFFDIO_REGISTER_MODE_MISSING : 0),
    };
    return ioctl(the_fd, UFFDIO_REGISTER, &r) == 0;
}

void uffd_unregister(uintptr_t start, size_t len)
{
    struct uffdio_range r = {.start = start, .len = len};
    if (the_fd >= 0)
        ioctl(the_fd, UFFDIO_UNREGISTER, &r);
    /* No longer ours: an unmap there raises no event from now on. */
    vetted_lock();
    for (int i = 0; i < VETTED_MAX; i++)
        if (vetted[i].lo < start + len && start < vetted[i].hi)
            vetted[i].hi = 0;
    vetted_unlock();
}

/* EAGAIN: an UNMAP/REMOVE/REMAP event is waiting to be read, and the
 * kernel refuses to change pages until it is. Only the handler reads it:
 * the handler gives up (errno EAGAIN) and goes to read; others wait. */
static bool again(void)
{
    if (is_handler)
        return false;
    sched_yield();
    return true;
}

/* UFFDIO_COPY of [dst, dst+len) in mode (write-protected or not), skipping
 * pages already present; uffd_copy says what it returns. */
static bool copy_span(uintptr_t dst, const void *src, size_t len, __u64 mode)
{
    const char *s = src;
    while (len > 0) {
        struct uffdio_copy c = {.dst = dst, .src = (uintptr_t)s, .len = len,
                                .mode = mode};
        if (ioctl(the_fd, UFFDIO_COPY, &c) == 0)
            return true;
        int err = errno;
        size_t done = c.copy > 0 ? (size_t)c.copy : 0;
        if (err == EEXIST && done == 0)
            done = page_size; /* present already: leave it as it is */
        else if (err == EAGAIN && done == 0 && !again())
            return errno = EAGAIN, false;
        else if (err != EAGAIN && err != EEXIST)
            return false;
        dst += done;
        s += done;
        len -= done < len ? done : len;
    }
    return true;
}

/* copy_span with the first page placed last. A thread reading in order
 * right behind the fill reaches each piece at its first page: placed
 * first, the thread would chase the kernel's page-by-page placement and
 * fault once per 4 KiB page (each fault finding its page placed a moment
 * later); placed last, it waits once, for the whole piece. */
static bool copy_mode(uintptr_t dst, const void *src, size_t len, __u64 mode)
{
    if (len <= page_size)
        return copy_span(dst, src, len, mode);
    return copy_span(dst + page_size, (const char *)src + page_size, len - page_size, mode) &&
           copy_span(dst, src, page_size, mode);
}

bool uffd_copy(uintptr_t dst, const void *src, size_t len)
{
    return copy_mode(dst, src, len, UFFDIO_COPY_MODE_WP);
}

bool uffd_zero(uintptr_t dst, size_t len)
{
    while (len > 0) {
        struct uffdio_zeropage z = {.range = {.start = dst, .len = len}};
        if (ioctl(the_fd, UFFDIO_ZEROPAGE, &z) == 0)
            return true;
        int err = errno;
        size_t done = z.zeropage > 0 ? (size_t)z.zeropage : 0;
        if (err == EEXIST && done == 0)
            done = page_size;
        else if (err == EAGAIN && done == 0 && !again())
            return errno = EAGAIN, false;
        else if (err != EAGAIN && err != EEXIST)
            return false;
        dst += done;
        len -= done < len ? done : len;
    }
    return true;
}

bool uffd_protect(uintptr_t start, size_t len, bool on)
{
    struct uffdio_writeprotect w = {.range = {.start = start, .len = len},
                                    .mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0};
    for (;;) {
        if (ioctl(the_fd, UFFDIO_WRITEPROTECT, &w) == 0)
            return true;
        if (errno != EAGAIN || !again())
            return false;
    }
}

/* Lifting write-protection makes a private anonymous page that the
 * process alone maps writable at once; a shared mapping's page (pinned
 * memory is a shared mapping of /dev/zero) stays read-only until its
 * next write, one kernel fault per 4 KiB page (on the H200 host 1.6 us
 * each, 26 ms for 64 MiB, 8x its memset): while the range is registered
 * for write-protection the kernel keeps its pages read-only and upgrades
 * them only in a fault. Measured there (bounce_gpu --probe, 4 MiB):
 *   unprotect, then rewrite                  1,024 faults, 1.59 ms
 *   unprotect + MADV_POPULATE_WRITE          0.40 ms, then 0 faults
 *   unregister + MADV_POPULATE_WRITE         0.55 ms, then 0 faults
 *   unregister + mprotect +PROT_EXEC and -   0.08 ms, then 0 faults
 * (an mprotect made while still registered, or a protection-key change,
 * leaves them read-only). So the range is unregistered and its protection
 * changed twice, adding PROT_EXEC for the moment between two calls, the
 * kernel's mprotect pass making each dirty shared page writable (it
 * tracks no writes there once unregistered): 5x cheaper than populating,
 * a pass over the page table instead of a fault per page. Only for a
 * range that is wholly "rw-s" in /proc/self/maps (no PROT_EXEC of its own
 * to keep); where the mprotect is refused (a policy against executable
 * data: SELinux execmem, PaX), MADV_POPULATE_WRITE (Linux 5.14) does it.
 * The waiters are woken after, else they race ahead of it, faulting. A
 * range registered for missing pages must not take this (a missing page
 * would wait for this thread, maybe the handler); eager ranges are not. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack it */
#endif
static bool maps_cover(uintptr_t start, size_t len, bool shared_rw);

static bool release_shared(uintptr_t start, size_t len)
{
    if (!maps_cover(start, len, true))
        return false;
    struct uffdio_range r = {.start = start, .len = len};
    if (ioctl(the_fd, UFFDIO_UNREGISTER, &r) != 0)
        return false;
    int saved = errno;
    if (mprotect((void *)start, len, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
        (void)madvise((void *)start, len, MADV_POPULATE_WRITE);
    } else if (mprotect((void *)start, len, PROT_READ | PROT_WRITE) != 0) {
        /* Splitting or merging the mapping ran out of map entries:
         * once more, then say so (the pages stay executable). */
        if (mprotect((void *)start, len, PROT_READ | PROT_WRITE) != 0)
            LOG_WARN("bounce: could not restore the protection of %zu bytes at %#lx: %s", len,
                     (unsigned long)start, strerror(errno));
    }
    errno = saved;
    return true;
}

/* The pieces of a private range [start, start + len) (a shared one goes
 * whole: uffd_unprotect_writable) in the order a writer at near meets
 * them: from near's piece to the end, then from the start; the first
 * piece UNPROTECT_FIRST_PIECE bytes, each next twice the last, so a range
 * takes O(log(len)) of them. A writer woken after its own piece goes on
 * writing behind the pass (a pass over a piece's page table is several
 * times faster than a memset of it), instead of waiting for the whole
 * range: the give-up's wait no longer grows with the buffer. */
#define UNPROTECT_FIRST_PIECE ((size_t)2 << 20)

struct piece_walk {
    uintptr_t start, end, at, next;
    size_t piece;
    bool wrapped;
};

static struct piece_walk pieces_from(uintptr_t start, size_t len, uintptr_t near)
{
    uintptr_t end = start + len;
    if (near < start || near >= end)
        near = start;
    uintptr_t at = start + ((near - start) & ~(uintptr_t)(UNPROTECT_FIRST_PIECE - 1));
    return (struct piece_walk){start, end, at, at, UNPROTECT_FIRST_PIECE, false};
}

/* The next piece into [*lo, *lo + *n); false when none is left. */
static bool piece_next(struct piece_walk *w, uintptr_t *lo, size_t *n)
{
    uintptr_t stop = w->wrapped ? w->at : w->end;
    if (w->next >= stop) {
        if (w->wrapped || w->at == w->start)
            return false;
        w->wrapped = true;
        w->next = w->start;
        stop = w->at;
    }
    *lo = w->next;
    *n = stop - w->next < w->piece ? stop - w->next : w->piece;
    w->next += *n;
    if (w->piece < ((size_t)1 << 40))
        w->piece *= 2;
    return true;
}

bool uffd_unprotect_writable(uintptr_t start, size_t len, uintptr_t near, bool *shared,
                             bool *unregistered)
{
    bool anon = uffd_private_anon(start, len);
    if (shared)
        *shared = !anon;
    if (unregistered)
        *unregistered = false;
    struct piece_walk w = pieces_from(start, len, near);
    uintptr_t lo;
    size_t n;
    if (anon) {
        /* Each call wakes the writers waiting in its piece. */
        while (piece_next(&w, &lo, &n))
            if (!uffd_protect(lo, n, false))
                return false;
        return true;
    }
    /* A shared mapping in one piece: unregistering a piece wakes a writer
     * already waiting in it before its pages are writable, and the writer
     * then takes a kernel fault per page it reaches before the mprotect
     * pass does. Woken piece by piece (its own first, then the rest), a
     * 1 GiB rewrite took 1,000-6,500 such faults on the project's loaded
     * 2-core machine (bounce.waste); woken once, after the pass, 17. */
    if (release_shared(start, len)) {
        uffd_unregister(start, len); /* the bookkeeping: already unregistered */
        if (unregistered)
            *unregistered = true;
        uffd_wake(start, len);
        return true;
    }
    struct uffdio_writeprotect wp = {.range = {.start = start, .len = len},
                                     .mode = UFFDIO_WRITEPROTECT_MODE_DONTWAKE};
    for (;;) {
        if (ioctl(the_fd, UFFDIO_WRITEPROTECT, &wp) == 0)
            break;
        if (errno != EAGAIN || !again())
            return false;
    }
    int saved = errno;
    (void)madvise((void *)start, len, MADV_POPULATE_WRITE);
    errno = saved;
    uffd_wake(start, len);
    return true;
}

void uffd_wake(uintptr_t start, size_t len)
{
    struct uffdio_range r = {.start = start, .len = len};
    ioctl(the_fd, UFFDIO_WAKE, &r);
}

void uffd_barrier(void)
{
    if (atomic_load(&in_batch) == 0 || is_handler)
        return;
    bool quiet = shim_quiet_begin(true);
    pthread_mutex_lock(&batch_mu);
    while (atomic_load(&in_batch) != 0)
        pthread_cond_wait(&batch_cv, &batch_mu);
    pthread_mutex_unlock(&batch_mu);
    shim_quiet_end(quiet);
}

bool uffd_in_handler(void)
{
    return is_handler;
}

void uffd_after_fork_child(void)
{
    atomic_store(&usable, false);
    atomic_store(&in_batch, 0);
    shim_fd_release(&epoll_guard);
    shim_fd_release(&uffd_guard);
    /* pthread_once has run: uffd_open now answers false. */
}

/* ---- /proc/self/maps ---------------------------------------------------- */

static bool parse_hex(const char **p, uintptr_t *out)
{
    uintptr_t v = 0;
    const char *q = *p;
    int n = 0;
    for (;; q++, n++) {
        char c = *q;
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else
            break;
        v = v * 16 + d;
    }
    *p = q;
    *out = v;
    return n > 0;
}

/* One line: "start-end perms offset dev inode   path". Whether its VMA
 * may hold lazy pages, or with shared_rw, whether it is a shared mapping
 * readable and writable, not executable ("rw-s", whatever it maps). */
static bool line_ok(const char *line, uintptr_t *lo, uintptr_t *hi, bool shared_rw)
{
    const char *p = line;
    if (!parse_hex(&p, lo) || *p++ != '-' || !parse_hex(&p, hi) || *p++ != ' ')
        return false;
    if (shared_rw)
        return strncmp(p, "rw-s", 4) == 0;
    bool ok = p[0] == 'r' && p[1] == 'w' && p[3] == 'p';
    p += 4;
    for (int field = 0; field < 3 && *p; field++) { /* offset, dev, inode */
        while (*p == ' ')
            p++;
        const char *start = p;
        while (*p && *p != ' ' && *p != '\n')
            p++;
        if (field == 2 && !(p - start == 1 && start[0] == '0'))
            ok = false; /* a file */
    }
    while (*p == ' ')
        p++;
    if (*p != '\n' && *p != '\0' && strncmp(p, "[heap]", 6) != 0)
        ok = false; /* [stack], [vvar], /anon_hugepage, memfd:, ... */
    return ok;
}

bool uffd_private_anon(uintptr_t start, size_t len)
{
    uint64_t gen = atomic_load(&maps_gen);
    vetted_lock();
    for (int i = 0; i < VETTED_MAX; i++)
        if (vetted[i].gen == gen && vetted[i].lo <= start && start + len <= vetted[i].hi &&
            vetted[i].hi != 0) {
            vetted_unlock();
            return true;
        }
    vetted_unlock();
    if (!maps_cover(start, len, false))
        return false;
    vetted_lock();
    vetted[vetted_next++ % VETTED_MAX] = (struct vetted){start, start + len, gen};
    vetted_unlock();
    return true;
}

/* Whether every byte of [start, start+len) lies in mappings line_ok
 * accepts, by /proc/self/maps. */
static bool maps_cover(uintptr_t start, size_t len, bool shared_rw)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    uintptr_t want = start, end = start + len;
    bool ok = false, done = false;
    char buf[8192];
    size_t have = 0;
    while (!done) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        buf[have] = '\0';
        char *line = buf, *nl;
        while (!done && (nl = strchr(line, '\n')) != NULL) {
            uintptr_t lo = 0, hi = 0;
            bool good = line_ok(line, &lo, &hi, shared_rw);
            if (hi > want && lo < end) {
                if (lo > want || !good) /* a hole, or memory we must not touch */
                    done = true;
                else if ((want = hi) >= end)
                    ok = done = true;
            } else if (lo >= end) {
                done = true;
            }
            line = nl + 1;
        }
        have = (size_t)(buf + have - line);
        memmove(buf, line, have);
        if (have == sizeof buf - 1)
            break; /* an absurd line: give up */
    }
    close(fd);
    return ok;
}

/* ---- filling without protection (the bounce module's fault budget) ------ */

bool uffd_copy_writable(uintptr_t dst, const void *src, size_t len)
{
    return copy_mode(dst, src, len, 0);
}
