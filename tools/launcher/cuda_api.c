/* The launcher's CUDA driver, loaded at run time (cuda_api.h). */
#define _GNU_SOURCE
#include "cuda_api.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

static struct launcher_cuda cu;

const char *launcher_cuda_error(CUresult r)
{
    static char buf[32];
    const char *s = NULL;
    if (cu.error_name != NULL && cu.error_name(r, &s) == CUDA_SUCCESS && s != NULL)
        return s;
    snprintf(buf, sizeof buf, "CUDA error %d", (int)r);
    return buf;
}

static void *lookup(gpa_fn gpa, const char *name, int version)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    if (gpa(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) != CUDA_SUCCESS)
        return NULL;
    return fn;
}

/* cuda_api.def as a table: where each function goes, and whether the
 * launcher can do without it. */
static const struct {
    const char *base;
    int version;
    bool required;
    size_t offset;
} entries[] = {
#define OPTIONAL false
#define REQUIRED true
#define LAUNCHER_CUDA(field, base, version, need)                             \
    {#base, version, need, offsetof(struct launcher_cuda, field)},
#include "cuda_api.def"
#undef LAUNCHER_CUDA
#undef REQUIRED
#undef OPTIONAL
};

const struct launcher_cuda *launcher_cuda(char *why, size_t why_len)
{
    if (cu.init != NULL)
        return &cu;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        snprintf(why, why_len, "no CUDA driver (%s)", dlerror());
        return NULL;
    }
    gpa_fn gpa = (gpa_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (gpa == NULL) {
        snprintf(why, why_len, "the CUDA driver is too old (no cuGetProcAddress_v2)");
        return NULL;
    }
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *fn = lookup(gpa, entries[i].base, entries[i].version);
        memcpy((char *)&cu + entries[i].offset, &fn, sizeof fn);
        if (fn == NULL && entries[i].required) {
            snprintf(why, why_len, "the CUDA driver has no %s", entries[i].base);
            return NULL;
        }
    }
    return &cu;
}
