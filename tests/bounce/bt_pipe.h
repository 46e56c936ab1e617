/* Reads a buffer the way the kernel does: write(2) of it into a pipe,
 * drained into another buffer by a thread. For the CPU and the GPU bounce
 * tests alike (C and CUDA C++). */
#ifndef BT_PIPE_H
#define BT_PIPE_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>
#include <unistd.h>

struct bt_pipe_drain {
    int fd;
    unsigned char *out;
    size_t n;
};

static inline void *bt_pipe_drain_main(void *arg)
{
    struct bt_pipe_drain *d = (struct bt_pipe_drain *)arg;
    size_t got = 0;
    while (got < d->n) {
        ssize_t r = read(d->fd, d->out + got, d->n - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return NULL;
}

/* n bytes of src through a pipe into out. Returns the bytes write(2) took
 * (n unless a write failed; errno then says why). */
static inline size_t bt_pipe_through(const unsigned char *src, unsigned char *out, size_t n)
{
    int fds[2];
    if (pipe(fds) != 0)
        return 0;
    struct bt_pipe_drain d = {fds[0], out, n};
    pthread_t t;
    size_t put = 0;
    if (pthread_create(&t, NULL, bt_pipe_drain_main, &d) == 0) {
        while (put < n) {
            ssize_t w = write(fds[1], src + put, n - put);
            if (w <= 0)
                break;
            put += (size_t)w;
        }
        close(fds[1]);
        pthread_join(t, NULL);
    } else {
        close(fds[1]);
    }
    close(fds[0]);
    return put;
}

#endif
