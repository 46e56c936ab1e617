/* watch.c: the predictor behind its lock, observe mode's candidates. */
#ifndef P2PSHIM_BOUNCE_WATCH_H
#define P2PSHIM_BOUNCE_WATCH_H

#include "bounce_int.h"

/* A D2H candidate (upgrade mode, at least the bounce minimum, a device
 * source) about to run: remembered (for a later H2D to match) and
 * judged. Counts candidates, predicted and skipped. */
enum predict_verdict evidence_d2h(uintptr_t host, size_t bytes, CUdeviceptr src, int dev);
/* A large D2H while no key has evidence (the predictor would say no):
 * remembered with its source pointer only, before either pointer is
 * looked up, and counted as a candidate; true when so handled. False
 * when some key has evidence: the caller makes its full checks and asks
 * evidence_d2h. The D2Hs of programs that never bounce stop here, with
 * no lookup, allocation or system call. */
bool evidence_d2h_unarmed(uintptr_t host, size_t bytes, CUdeviceptr src);
/* An H2D not served from a snapshot (upgrade mode): a seen bounce when it
 * lies inside a remembered D2H (counted as seen_plain). One relaxed load
 * while nothing is remembered. */
void evidence_h2d(const void *host, size_t bytes);
/* Whether the H2D would be a seen bounce (changing nothing): it lies
 * inside a remembered D2H, whose host range is [*lo, *lo + *len). One
 * relaxed load while nothing is remembered. */
bool evidence_h2d_inside(const void *host, size_t bytes, uintptr_t *lo, size_t *len);
/* What a snapshot tells the predictor about its keys. */
enum evidence_news {
    NEWS_USEFUL,  /* an eager one's outcome: served an H2D (predict_outcome) */
    NEWS_WASTED,  /* an eager one's outcome: did not */
    NEWS_USEFUL_LAZY, /* the same of a lazy snapshot */
    NEWS_WASTED_LAZY,
    NEWS_WASTED_PINNED, /* an eager snapshot of pinned memory wasted: making its
                         * pages writable again cost 2-3 served ones' saving, so
                         * the keys skip at least PREDICT_COSTLY_BACKOFF D2Hs */
    NEWS_READERS, /* the CPU read it besides (predict_readers) */
    NEWS_FORGET,  /* its host memory was unmapped: a later buffer there is new */
    NEWS_COSTLY,  /* served, but the CPU's rewrite after it cost more than the
                   * H2D it saved (a pinned buffer's protection lifted page by
                   * page in the kernel): the keys back off as after a waste,
                   * at least PREDICT_COSTLY_BACKOFF; counted as neither */
};
/* News of a snapshot's, from a program thread. */
void evidence_news(const struct predict_pair *keys, enum evidence_news news);
/* The same from the userfaultfd handler thread, which must never wait for
 * the predictor's lock (a program thread may hold it while a signal
 * handler runs on that thread and faults on a lazy page): applied at once
 * when the lock is free, else queued and applied by the next program
 * thread that takes it (a full queue drops the news: at worst one more
 * snapshot for that key). */
void evidence_later(const struct predict_pair *keys, enum evidence_news news);
/* A predicted D2H whose snapshot could not be set up (memory that refuses
 * userfaultfd or write-protection, no device memory, a refused copy): its
 * keys back off as after a wasted snapshot, so that a buffer which can
 * never be bounced pays the failed set-up in 1 of 2^k rounds, not in
 * every round. Counted as a fallback, not as wasted. */
void evidence_fallback(const struct predict_pair *keys);
/* free(host): remembered D2Hs starting there are forgotten. */
void watch_forget(const void *host);

#endif
