#ifndef P2PSHIM_THREAD_START_H
#define P2PSHIM_THREAD_START_H

#include <pthread.h>

/* pthread_create that returns only once the new thread runs `fn`.
 *
 * Why: a thread's start-up inside the runtime (glibc's pthread_getattr_np,
 * a sanitizer's thread registration) allocates and takes allocator locks.
 * A program that forks right after the shim starts a thread would copy
 * those locks held into the child, where some allocators (GCC 12's
 * AddressSanitizer, which does not lock around fork) never release them:
 * the child hangs in its first malloc. Seen in CI: records.fork forks
 * just after its first copy started the run log's writer. Once running,
 * the writer allocates nothing and the userfaultfd handler is held by the
 * bounce fork handlers.
 *
 * The new thread starts with every signal blocked, from its first
 * instruction (the creator blocks them all around pthread_create, which
 * the new thread inherits, then restores its own mask): the shim's
 * threads never take a signal meant for the program. A process-directed
 * signal that the program blocks in its own threads (to take it with
 * sigwait) would otherwise go to a shim thread, whose default action ends
 * the process, or whose handler (the program's) runs where the program
 * never expects it. Same result as pthread_create; attr may be NULL. */
int shim_thread_start(pthread_t *thread, const pthread_attr_t *attr,
                      void *(*fn)(void *), void *arg);

#endif
