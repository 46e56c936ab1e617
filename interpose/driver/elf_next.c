/* The first definition of a name in an object loaded after the shim, read
 * from the objects' dynamic symbol tables (the link map), without any
 * dlsym or dlvsym. The one way to reach glibc's dlvsym once the shim
 * exports its own: every call of "dlvsym" by name from inside the shim
 * would reach the shim's (or an earlier interposer's). Uninstrumented: it
 * runs from the dlvsym trampoline's route before any sanitizer is set up. */
#define _GNU_SOURCE
#include "elf_next.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#define UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined", "thread")))

UNINSTRUMENTED static int same(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b)
        a++, b++;
    return *a == *b;
}

UNINSTRUMENTED static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (; *s != '\0'; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

/* A dynamic entry's address: glibc relocates most objects' .dynamic in
 * place; the vDSO's (read-only) keeps link-time values. */
UNINSTRUMENTED static uintptr_t dyn_addr(ElfW(Addr) base, ElfW(Addr) ptr)
{
    return ptr < base ? base + ptr : ptr;
}

UNINSTRUMENTED static int defines(const ElfW(Sym) *s, const char *strtab, const char *name)
{
    return s->st_shndx != SHN_UNDEF && s->st_value != 0 &&
           ELF64_ST_TYPE(s->st_info) == STT_FUNC &&
           same(strtab + s->st_name, name);
}

/* name in one object through its GNU hash table (DT_GNU_HASH), or by a
 * walk over DT_HASH's symbols; 0 when it does not define name. */
UNINSTRUMENTED static ElfW(Addr) object_lookup(ElfW(Addr) base, const ElfW(Dyn) *dyn,
                                               const char *name)
{
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint32_t *gnu = NULL, *sysv = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t p = dyn_addr(base, dyn->d_un.d_ptr);
        if (dyn->d_tag == DT_SYMTAB)
            symtab = (const ElfW(Sym) *)p;
        else if (dyn->d_tag == DT_STRTAB)
            strtab = (const char *)p;
        else if (dyn->d_tag == DT_GNU_HASH)
            gnu = (const uint32_t *)p;
        else if (dyn->d_tag == DT_HASH)
            sysv = (const uint32_t *)p;
    }
    if (symtab == NULL || strtab == NULL)
        return 0;
    if (gnu != NULL) {
        uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_words = gnu[2];
        const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)&gnu[4] + bloom_words);
        const uint32_t *chain = buckets + nbuckets;
        uint32_t h = gnu_hash(name);
        if (nbuckets == 0)
            return 0;
        for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i != 0; i++) {
            uint32_t h2 = chain[i - symoffset];
            if ((h | 1) == (h2 | 1) && defines(&symtab[i], strtab, name))
                return base + symtab[i].st_value;
            if (h2 & 1)
                break;
        }
        return 0;
    }
    if (sysv != NULL)
        for (uint32_t i = 0; i < sysv[1]; i++)
            if (defines(&symtab[i], strtab, name))
                return base + symtab[i].st_value;
    return 0;
}

/* The shim's own dynamic section (_DYNAMIC, link.h): its link_map's l_ld. */

/* The base namespace's objects in load order (the program, the preloads,
 * their dependencies), through the dynamic linker's debugger interface:
 * plain data, where dl_iterate_phdr may be a sanitizer's interceptor not
 * yet able to run (a sanitizer runtime calls dlvsym while it starts). */
UNINSTRUMENTED static struct link_map *first_object(void)
{
    return _r_debug.r_map;
}

UNINSTRUMENTED void *elf_next_definition(const char *name)
{
    int past_self = 0;
    for (struct link_map *m = first_object(); m != NULL; m = m->l_next) {
        if (m->l_ld == _DYNAMIC) {
            past_self = 1;
            continue;
        }
        if (!past_self || m->l_ld == NULL)
            continue;
        ElfW(Addr) at = object_lookup(m->l_addr, m->l_ld, name);
        if (at != 0)
            return (void *)at;
    }
    return NULL;
}

UNINSTRUMENTED int elf_loaded_before_self(const void *addr)
{
    Dl_info info;
    struct link_map *caller = NULL;
    if (dladdr1(addr, &info, (void **)&caller, RTLD_DL_LINKMAP) == 0 || caller == NULL)
        return 0;
    for (struct link_map *m = first_object(); m != NULL; m = m->l_next) {
        if (m->l_ld == _DYNAMIC)
            return 0;
        if (m == caller)
            return 1;
    }
    return 0;
}
