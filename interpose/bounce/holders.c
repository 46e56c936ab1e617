/* Holders of a page the shim cannot see (holders.h). A snapshot drops a
 * page (lazy) or write-protects it (eager) and relies on every reader and
 * writer of it going through the page tables, where userfaultfd sees
 * them. A holder that took the page itself (io_uring fixed buffers and a
 * pipe's vmsplice pin or reference the page; RDMA and VFIO map it for a
 * device; /proc/self/mem and a tracer's ptrace read and write it with
 * their own rules) breaks that. The rule: a page is dropped or protected
 * only where no such holder may exist; where one was seen, or may exist
 * without being seen, that D2H goes the normal way and is counted
 * (bst_holders: "holders=" in the summary line).
 *
 * Marks are never taken back: a pipe may hold vmspliced pages until its
 * reader drains it, a ring its buffers until it is closed, neither of
 * which the shim follows. Entries of the table of ranges are only added
 * or widened, and read without a lock (a D2H asks it); a full table marks
 * the process. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bounce.h"
#include "counters.h"
#include "holders.h"
#include "log.h"
#include "pages.h"
#include "shim_sys.h"
#include "table.h"

#define HELD_MAX 64
/* Above every user address (x86-64 and AArch64, 5-level tables too), far
 * enough below the top that page rounding never wraps round. */
#define HELD_TOP ((uintptr_t)1 << 62)

static struct {
    _Atomic uintptr_t lo, hi;
} held[HELD_MAX];
static _Atomic int nheld;
static atomic_flag held_mu = ATOMIC_FLAG_INIT; /* writers only */
static _Atomic bool whole;                     /* the process is marked */

static uintptr_t page_down(uintptr_t a)
{
    return a & ~(uintptr_t)(bounce_page - 1);
}

static uintptr_t page_up(uintptr_t a)
{
    return a >= HELD_TOP ? HELD_TOP : (a + bounce_page - 1) & ~(uintptr_t)(bounce_page - 1);
}

/* Appends [lo, hi), or widens an entry it meets; a full table marks the
 * process instead. A reader racing a widening sees the old or the new
 * bounds of that entry, and the caller ends the snapshots over the range
 * only after this returns. */
static void held_add(uintptr_t lo, uintptr_t hi)
{
    while (atomic_flag_test_and_set_explicit(&held_mu, memory_order_acquire))
        ;
    int n = atomic_load_explicit(&nheld, memory_order_relaxed);
    bool done = false;
    for (int i = 0; i < n && !done; i++) {
        uintptr_t a = atomic_load(&held[i].lo), b = atomic_load(&held[i].hi);
        if (lo <= b && a <= hi) {
            atomic_store(&held[i].lo, lo < a ? lo : a);
            atomic_store(&held[i].hi, hi > b ? hi : b);
            done = true;
        }
    }
    if (!done && n < HELD_MAX) {
        atomic_store(&held[n].lo, lo);
        atomic_store(&held[n].hi, hi);
        atomic_store_explicit(&nheld, n + 1, memory_order_release);
        done = true;
    }
    atomic_flag_clear_explicit(&held_mu, memory_order_release);
    if (!done)
        atomic_store(&whole, true);
}

static bool held_meets(uintptr_t lo, uintptr_t hi)
{
    int n = atomic_load_explicit(&nheld, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (lo < atomic_load(&held[i].hi) && atomic_load(&held[i].lo) < hi)
            return true;
    return false;
}

void bounce_holder_mark_range(const void *host, size_t bytes)
{
    uintptr_t lo = (uintptr_t)host, hi = bytes < HELD_TOP - lo ? lo + bytes : HELD_TOP;
    if (bytes != 0 && lo < HELD_TOP)
        held_add(page_down(lo), page_up(hi));
}

void bounce_holder_range(const void *host, size_t bytes)
{
    uintptr_t lo = (uintptr_t)host, hi = bytes < HELD_TOP - lo ? lo + bytes : HELD_TOP;
    if (bytes == 0 || lo >= HELD_TOP)
        return;
    bounce_holder_mark_range(host, bytes);
    bounce_host_keep(host, hi - lo);
}

void bounce_holder_mark_process(void)
{
    atomic_store(&whole, true);
}

void bounce_holder_process(void)
{
    if (!atomic_exchange(&whole, true))
        LOG_DEBUG("bounce: a holder of any page may exist (a device or /proc/self/mem "
                  "opened): no snapshot from now on");
    if (bounce_active())
        bounce_host_keep((const void *)(uintptr_t)bounce_page, HELD_TOP - bounce_page);
}

/* The value of the "Name:" line of /proc/self/status, or -1 when it
 * cannot be read. Through the kernel directly: no wrapper of the
 * program's sees the descriptor, which lives only inside this call. */
static void status_values(long *tracer, long *pinned_kb)
{
    *tracer = *pinned_kb = -1;
    char buf[4096];
    int fd = (int)shim_sys6(SYS_openat, AT_FDCWD, (long)"/proc/self/status",
                            O_RDONLY | O_CLOEXEC, 0, 0, 0);
    if (fd < 0)
        return;
    size_t len = 0;
    long r;
    while (len < sizeof buf - 1 &&
           (r = shim_sys_read(fd, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    shim_sys_close(fd);
    buf[len] = '\0';
    const char *t = strstr(buf, "\nTracerPid:"), *p = strstr(buf, "\nVmPin:");
    if (t != NULL)
        *tracer = strtol(t + sizeof "\nTracerPid:" - 1, NULL, 10);
    if (p != NULL)
        *pinned_kb = strtol(p + sizeof "\nVmPin:" - 1, NULL, 10);
}

/* How long an answer of /proc/self/status stands: reading it costs about
 * 12 us, a sixth of a 1 MiB snapshot's set-up; asked at most every 10 ms,
 * it costs a loop of bounces under 0.2%. A pin made by a call the shim
 * did not see less than that after the last look goes unnoticed, as does
 * one made after a snapshot was taken (docs/SECURITY.md). */
#define STATUS_FRESH_NS 10000000ull

static _Atomic uint64_t status_at;   /* when it was read (CLOCK_MONOTONIC ns + 1) */
static _Atomic(const char *) status_why; /* its answer: NULL, or why not */

static const char *status_says(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + 1;
    uint64_t at = atomic_load_explicit(&status_at, memory_order_acquire);
    if (at != 0 && now - at < STATUS_FRESH_NS)
        return atomic_load_explicit(&status_why, memory_order_relaxed);
    /* A tracer reads and writes through /proc/<pid>/mem or ptrace, past
     * userfaultfd; pinned pages (VmPin: io_uring buffers, RDMA memory
     * registered by a call the shim did not see) may be any of the
     * program's, this buffer's too. */
    long tracer, pinned;
    status_values(&tracer, &pinned);
    const char *why = NULL;
    if (tracer != 0)
        why = tracer > 0 ? "a tracer is attached" : "/proc/self/status unreadable";
    else if (pinned != 0)
        why = pinned > 0 ? "pages are pinned (VmPin)" : "/proc/self/status unreadable";
    atomic_store_explicit(&status_why, why, memory_order_relaxed);
    atomic_store_explicit(&status_at, now, memory_order_release);
    return why;
}

bool bounce_holders_allow(uintptr_t host, size_t bytes)
{
    uintptr_t hi = bytes < HELD_TOP - host ? host + bytes : HELD_TOP;
    const char *why = NULL;
    if (atomic_load(&whole))
        why = "the process is marked";
    else if (held_meets(page_down(host), page_up(hi)))
        why = "its range is held (io_uring, vmsplice)";
    else
        why = status_says();
    if (why == NULL)
        return true;
    atomic_fetch_add_explicit(&bst_holders, 1, memory_order_relaxed);
    LOG_DEBUG("bounce: no snapshot of %zu bytes at %#lx: %s", bytes, (unsigned long)host, why);
    return false;
}

/* mincore's vector, made to say what the program would be told without
 * the shim: a lazy page is present for it (the D2H wrote it) and a touch
 * brings it back from device memory without any I/O, so it is marked
 * resident rather than filled (filling every page a memory profiler
 * looks at would undo the snapshot). The states are read under the lock
 * into a buffer of the shim's and written into vec after it: vec is the
 * program's memory and may itself fault. */
void bounce_mincore_resident(const void *addr, size_t len, unsigned char *vec)
{
    if (!bounce_active() || len == 0)
        return;
    uintptr_t base = page_down((uintptr_t)addr), at = base;
    uintptr_t end = page_up((uintptr_t)addr + len);
    enum { RUNS = 32 };
    while (at < end) {
        uintptr_t run_lo[RUNS], run_hi[RUNS], next = end;
        int n = 0;
        bounce_lock();
        /* The lowest lazy snapshot past at: its missing pages from at on. */
        struct snap *low = NULL;
        for (struct snap *s = bounce_head; s; s = s->next)
            if (s->lazy && s->ready && !s->ending && s->reg_hi > at && s->reg_lo < end &&
                (low == NULL || s->reg_lo < low->reg_lo))
                low = s;
        if (low != NULL) {
            uintptr_t p = low->reg_lo > at ? low->reg_lo : at;
            uintptr_t q = low->reg_hi < end ? low->reg_hi : end;
            for (; p < q && n < RUNS; p += bounce_page) {
                uint8_t st = *bounce_page_state(low, p);
                if (st != PG_MISSING && st != PG_BUSY && st != PG_BUSY_DIRTY)
                    continue;
                if (n > 0 && run_hi[n - 1] == p)
                    run_hi[n - 1] = p + bounce_page;
                else
                    run_lo[n] = p, run_hi[n] = p + bounce_page, n++;
            }
            next = p;
        }
        bounce_unlock();
        for (int i = 0; i < n; i++)
            for (uintptr_t p = run_lo[i]; p < run_hi[i]; p += bounce_page)
                vec[(p - base) >> bounce_page_shift] |= 1;
        at = next;
    }
}
