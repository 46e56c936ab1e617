/* The ownership table's VMM handles (ownership.h): handle -> device,
 * under a lock of their own. */
#include <pthread.h>

#include "ownership_int.h"

struct handle_entry {
    UT_hash_handle hh;
    uint64_t handle;
    int device;
};

static pthread_mutex_t handle_lock = PTHREAD_MUTEX_INITIALIZER;
static struct handle_entry *handles;    /* uthash head */

static struct handle_entry *handle_find(uint64_t handle)
{
    struct handle_entry *h = NULL;
    HASH_FIND(hh, handles, &handle, sizeof handle, h);
    return h;
}

static bool handle_insert(struct handle_entry *h)
{
    HASH_ADD(hh, handles, handle, sizeof h->handle, h);
    return h->hh.tbl != NULL;
}

static void handle_unhash(struct handle_entry *h)
{
    HASH_DELETE(hh, handles, h);
}

bool ownership_handle_add(uint64_t handle, int device)
{
    bool ok = true;
    pthread_mutex_lock(&handle_lock);
    struct handle_entry *h = handle_find(handle);
    if (h != NULL) {
        h->device = device;
    } else if ((h = shim_alloc(sizeof *h)) == NULL) {
        ok = false;
    } else {
        h->handle = handle;
        h->device = device;
        if (!handle_insert(h)) {
            shim_free(h, sizeof *h);
            ok = false;
        }
    }
    pthread_mutex_unlock(&handle_lock);
    return ok;
}

bool ownership_handle_lookup(uint64_t handle, int *device)
{
    pthread_mutex_lock(&handle_lock);
    const struct handle_entry *h = handle_find(handle);
    if (h != NULL && device != NULL)
        *device = h->device;
    pthread_mutex_unlock(&handle_lock);
    return h != NULL;
}

bool ownership_handle_remove(uint64_t handle)
{
    pthread_mutex_lock(&handle_lock);
    struct handle_entry *h = handle_find(handle);
    bool found = h != NULL;
    if (found)
        handle_unhash(h);
    pthread_mutex_unlock(&handle_lock);
    shim_free(h, sizeof *h);
    return found;
}

void ownership_handles_clear(void)
{
    pthread_mutex_lock(&handle_lock);
    while (handles != NULL) {
        struct handle_entry *h = handles;
        handle_unhash(h);
        shim_free(h, sizeof *h);
    }
    pthread_mutex_unlock(&handle_lock);
}

void ownership_handles_lock(void)
{
    pthread_mutex_lock(&handle_lock);
}

void ownership_handles_unlock(void)
{
    pthread_mutex_unlock(&handle_lock);
}
