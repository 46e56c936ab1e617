/* Built twice: libpl_dlsym_probe.so (PL_PROBE_LIB) and libpl_dlsym_dup.so.
 * Each defines pl_dup_symbol, a name the test program defines too, and
 * looks names up with dlsym(RTLD_NEXT), dlsym(RTLD_DEFAULT) and
 * dlvsym(RTLD_NEXT) from its own
 * code, where RTLD_NEXT means "after this library". */
#define _GNU_SOURCE
#include <dlfcn.h>

const char *pl_dup_symbol(void);
const char *pl_dup_symbol(void)
{
    return PL_DUP_TAG;
}

#ifdef PL_PROBE_LIB
#define LOOKUP_NEXT pl_probe_next
#define LOOKUP_DEFAULT pl_probe_default
#define LOOKUP_VNEXT pl_probe_vnext
#else
#define LOOKUP_NEXT pl_dup_next
#define LOOKUP_DEFAULT pl_dup_default
#define LOOKUP_VNEXT pl_dup_vnext
#endif

void *LOOKUP_NEXT(const char *name);
void *LOOKUP_DEFAULT(const char *name);
void *LOOKUP_VNEXT(const char *name, const char *version);

void *LOOKUP_NEXT(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

void *LOOKUP_DEFAULT(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

void *LOOKUP_VNEXT(const char *name, const char *version)
{
    return dlvsym(RTLD_NEXT, name, version);
}
