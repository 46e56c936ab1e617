/* fp_dlopen SHIM: the shim can be loaded into a process that is already
 * running, with threads (dlopen), not only at start-up (LD_PRELOAD, the
 * way it is used). Its thread-locals use the initial-exec model: such an
 * object needs room in the static TLS space the C library keeps for
 * objects loaded later, in every thread that exists, and a load without
 * room fails ("cannot allocate memory in static TLS block"). The shim's
 * 112 bytes must fit. Exit 0 when the load succeeds with a thread running;
 * 1 otherwise (dlerror's text on stdout). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int done;

static void *waiting_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!done)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    pthread_t t;
    if (pthread_create(&t, NULL, waiting_thread, NULL) != 0)
        return 1;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        printf("fp_dlopen: dlopen: %s\n", dlerror());
    else
        printf("fp_dlopen: loaded into a running process with 2 threads\n");
    pthread_mutex_lock(&mu);
    done = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    return h != NULL ? 0 : 1;
}
