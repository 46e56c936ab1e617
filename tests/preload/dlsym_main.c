/* Item 5: dlsym is exact under the shim.
 *
 * pl_dup_symbol is defined in this program and in two libraries
 * (libpl_dlsym_probe.so, then libpl_dlsym_dup.so). Lookups with
 * RTLD_NEXT and RTLD_DEFAULT, made from the program and from code inside
 * each library, and through handles, must give what they give without the
 * shim: the shim's dlsym must not change whose "next" it is. dlerror must
 * behave the same for missing names. The transcript (which object and
 * which definition each lookup found, dlerror's text) is compared by
 * compare.sh; in the shim run, hooked cu* names through a handle or
 * RTLD_DEFAULT must come back as the shim's wrappers. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

const char *pl_dup_symbol(void);
const char *pl_dup_symbol(void)
{
    return "main";
}

void *pl_probe_next(const char *name);
void *pl_probe_default(const char *name);
void *pl_dup_next(const char *name);
void *pl_dup_default(const char *name);
void *pl_probe_vnext(const char *name, const char *version);
void *pl_dup_vnext(const char *name, const char *version);

/* The C library's oldest symbol version (what HAMi-core asks dlvsym for). */
#if defined(__aarch64__)
#define LIBC_BASE_VERSION "GLIBC_2.17"
#else
#define LIBC_BASE_VERSION "GLIBC_2.2.5"
#endif

static int failures;

static const char *object_of(const void *p)
{
    Dl_info i;
    if (!p)
        return "NULL";
    if (!dladdr(p, &i) || !i.dli_fname)
        return "?";
    const char *b = strrchr(i.dli_fname, '/');
    const char *name = b ? b + 1 : i.dli_fname;
    /* the program itself: its path differs from build to build */
    return *name ? (strstr(name, "pl_dlsym") == name ? "program" : name) : "program";
}

static void show(const char *label, void *p)
{
    const char *tag = "";
    if (p && strstr(label, "pl_dup_symbol"))
        tag = ((const char *(*)(void))p)();
    printf("%s: %s %s\n", label, object_of(p), tag);
}

static void show_error(const char *label)
{
    const char *e = dlerror();
    printf("%s: dlerror=%s\n", label, e ? e : "(none)");
    e = dlerror();
    printf("%s: dlerror again=%s\n", label, e ? e : "(none)");
}

static void expect_object(const char *label, void *p, const char *want)
{
    if (strcmp(object_of(p), want) != 0) {
        fprintf(stderr, "FAIL: %s: found in %s, expected %s\n", label, object_of(p), want);
        failures++;
    }
}

/* dlvsym under the shim: RTLD_NEXT from a library and from the program as
 * without the shim, missing names and dlerror the same; "dlsym" asked by
 * the program (loaded before the shim) is the shim's dlsym, asked by a
 * library after the shim the C library's. h: the driver's handle. */
static void dlvsym_cases(void *h, int shim)
{
    const char *v = LIBC_BASE_VERSION;
    show("probe dlvsym RTLD_NEXT printf", pl_probe_vnext("printf", v));
    show("main dlvsym RTLD_NEXT strlen", dlvsym(RTLD_NEXT, "strlen", v));
    show("dup dlvsym RTLD_NEXT pl_dup_symbol", pl_dup_vnext("pl_dup_symbol", v));
    show_error("dup dlvsym RTLD_NEXT pl_dup_symbol");
    show("probe dlvsym RTLD_NEXT missing", pl_probe_vnext("pl_no_such_symbol", v));
    show_error("probe dlvsym RTLD_NEXT missing");
    show("main dlvsym RTLD_DEFAULT bad version", dlvsym(RTLD_DEFAULT, "strlen", "PL_NO_VERSION"));
    show_error("main dlvsym RTLD_DEFAULT bad version");
    show("probe dlvsym RTLD_NEXT dlsym", pl_probe_vnext("dlsym", v));
    const char *libc = "libc.so.6";
    expect_object("program's dlvsym(RTLD_NEXT, dlsym)", dlvsym(RTLD_NEXT, "dlsym", v),
                  shim ? "libp2pshim.so" : libc);
    expect_object("library's dlvsym(RTLD_NEXT, dlsym)", pl_dup_vnext("dlsym", v), libc);
    /* The driver's names carry no version: a versioned lookup finds none,
     * with the shim as without. */
    show("driver handle dlvsym cuMemcpyPeer", dlvsym(h, "cuMemcpyPeer", v));
    show_error("driver handle dlvsym cuMemcpyPeer");
    show("probe dlvsym RTLD_NEXT cuMemcpyPeer", pl_probe_vnext("cuMemcpyPeer", v));
}

/* Names that are not the driver's: duplicates, non-cu names, missing
 * names and dlerror, the duplicate library's handle. */
static void non_driver_lookups(void)
{
    show("main RTLD_DEFAULT pl_dup_symbol", dlsym(RTLD_DEFAULT, "pl_dup_symbol"));
    show("main RTLD_NEXT pl_dup_symbol", dlsym(RTLD_NEXT, "pl_dup_symbol"));
    show("probe RTLD_DEFAULT pl_dup_symbol", pl_probe_default("pl_dup_symbol"));
    show("probe RTLD_NEXT pl_dup_symbol", pl_probe_next("pl_dup_symbol"));
    show("dup RTLD_DEFAULT pl_dup_symbol", pl_dup_default("pl_dup_symbol"));
    show("dup RTLD_NEXT pl_dup_symbol", pl_dup_next("pl_dup_symbol"));
    show_error("dup RTLD_NEXT pl_dup_symbol");
    show("probe RTLD_NEXT pl_probe_next", pl_probe_next("pl_probe_next"));
    show("dup RTLD_NEXT pl_probe_next", pl_dup_next("pl_probe_next"));
    show_error("dup RTLD_NEXT pl_probe_next");

    /* names that are not cu*: untouched */
    show("main RTLD_DEFAULT strlen", dlsym(RTLD_DEFAULT, "strlen"));
    show("probe RTLD_NEXT printf", pl_probe_next("printf"));
    show("main RTLD_DEFAULT dlopen", dlsym(RTLD_DEFAULT, "dlopen"));
    show("main RTLD_NEXT dlerror", dlsym(RTLD_NEXT, "dlerror"));

    /* missing names, dlerror */
    show("main RTLD_DEFAULT missing", dlsym(RTLD_DEFAULT, "pl_no_such_symbol"));
    show_error("main RTLD_DEFAULT missing");
    show("probe RTLD_NEXT missing", pl_probe_next("pl_no_such_symbol"));
    show_error("probe RTLD_NEXT missing");
    show("main RTLD_DEFAULT cuNoSuchThing", dlsym(RTLD_DEFAULT, "cuNoSuchThing"));
    show_error("main RTLD_DEFAULT cuNoSuchThing");

    /* handles */
    void *hd = dlopen("libpl_dlsym_dup.so", RTLD_NOW | RTLD_NOLOAD);
    show("dup handle pl_dup_symbol", hd ? dlsym(hd, "pl_dup_symbol") : NULL);
    show("dup handle cuMemcpyPeer", hd ? dlsym(hd, "cuMemcpyPeer") : NULL);
    show_error("dup handle cuMemcpyPeer");
    show("dup handle missing", hd ? dlsym(hd, "pl_no_such_symbol") : NULL);
    show_error("dup handle missing");
}

/* the driver opened first by its full path with RTLD_DEEPBIND: a lookup
 * on that handle still gets the shim's wrapper (by full path only under a
 * sanitizer runtime, which refuses RTLD_DEEPBIND). Returns 0 when the
 * driver does not open. */
static int deep_bound_driver_lookup(int shim)
{
    int sanitized = dlsym(RTLD_DEFAULT, "__asan_init") || dlsym(RTLD_DEFAULT, "__tsan_init");
    void *deep = dlopen(PL_STANDIN_DRIVER,
                        RTLD_NOW | RTLD_LOCAL | (sanitized ? 0 : RTLD_DEEPBIND));
    if (!deep) {
        fprintf(stderr, "dlopen %s: %s\n", PL_STANDIN_DRIVER, dlerror());
        return 0;
    }
    expect_object("dlsym(deep-bound driver by full path, cuMemcpyPeer)",
                  dlsym(deep, "cuMemcpyPeer"), shim ? "libp2pshim.so" : "libcuda.so.1");
    show("deep-bound driver handle cuCtxGetCurrent", dlsym(deep, "cuCtxGetCurrent"));
    return 1;
}

/* hooked names: the same answer by name; in the shim run, the shim's
 * wrapper, and the driver's own through RTLD_NEXT from a library */
static void hooked_name_lookups(void *h, int shim)
{
    void *by_handle = dlsym(h, "cuMemcpyPeer");
    void *by_default = dlsym(RTLD_DEFAULT, "cuMemcpyPeer");
    Dl_info i;
    printf("hooked by handle: %s\n",
           by_handle && dladdr(by_handle, &i) && i.dli_sname ? i.dli_sname : "?");
    show_error("hooked by handle");
    printf("hooked by default: %s\n",
           by_default && dladdr(by_default, &i) && i.dli_sname ? i.dli_sname : "?");
    show_error("hooked by default");
    const char *drv = "libcuda.so.1", *ours = shim ? "libp2pshim.so" : drv;
    expect_object("dlsym(h, cuMemcpyPeer)", by_handle, ours);
    expect_object("dlsym(RTLD_DEFAULT, cuMemcpyPeer_ptds)",
                  dlsym(RTLD_DEFAULT, "cuMemcpyPeer_ptds"), ours);
    expect_object("dlsym(h, cuMemcpyDtoH_v2)", dlsym(h, "cuMemcpyDtoH_v2"), ours);
    expect_object("RTLD_NEXT cuMemcpyPeer from a library", pl_probe_next("cuMemcpyPeer"), drv);
    dlvsym_cases(h, shim);
    if (shim && by_handle == dlsym(h, "cuMemcpyPeer_ptds")) {
        fprintf(stderr, "FAIL: legacy and per-thread cuMemcpyPeer are one pointer\n");
        failures++;
    }
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int shim = strcmp(argv[1], "shim") == 0;
    dlerror();

    non_driver_lookups();
    if (!deep_bound_driver_lookup(shim))
        return 1;

    /* the driver, loaded the way cudart loads it */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    show("probe RTLD_NEXT cuMemcpyPeer", pl_probe_next("cuMemcpyPeer"));
    show("dup RTLD_NEXT cuCtxGetCurrent", pl_dup_next("cuCtxGetCurrent"));
    show("driver handle cuCtxGetCurrent", dlsym(h, "cuCtxGetCurrent"));
    show("driver handle cuNoSuchThing", dlsym(h, "cuNoSuchThing"));
    show_error("driver handle cuNoSuchThing");
    show("driver handle standin_calls", dlsym(h, "standin_calls"));
    show_error("after a good lookup");

    hooked_name_lookups(h, shim);
    return failures ? 1 : 0;
}
