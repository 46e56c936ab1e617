/* The first definition of a name in an object loaded after the shim, read
 * from the objects' dynamic symbol tables (dl_iterate_phdr), without any
 * dlsym or dlvsym. The one way to reach glibc's dlvsym once the shim
 * exports its own: every call of "dlvsym" by name from inside the shim
 * would reach the shim's (or an earlier interposer's). Uninstrumented: it
 * runs from the dlvsym trampoline's route before any sanitizer is set up. */
#define _GNU_SOURCE
#include "next_symbol.h"

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#define UNINSTRUMENTED __attribute__((no_sanitize("address", "undefined", "thread")))

struct elf_search {
    const char *name; /* the name to find, or NULL: where addr lies */
    uintptr_t self;   /* an address inside the shim */
    uintptr_t addr;   /* with name NULL: an address to place */
    int past_self;    /* the shim's object has been seen */
    void *found;      /* name's definition; or, placing addr: non-NULL when
                       * addr lies in an object before the shim */
};

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

UNINSTRUMENTED static int visit(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct elf_search *s = data;
    const ElfW(Dyn) *dyn = NULL;
    int is_self = 0, has_addr = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)start;
        else if (ph->p_type == PT_LOAD && s->self >= start && s->self - start < ph->p_memsz)
            is_self = 1;
        if (ph->p_type == PT_LOAD && s->addr >= start && s->addr - start < ph->p_memsz)
            has_addr = 1;
    }
    if (s->name == NULL) {
        if (is_self || has_addr)
            s->found = has_addr && !is_self ? (void *)1 : NULL;
        return is_self || has_addr;
    }
    if (is_self) {
        s->past_self = 1;
        return 0;
    }
    if (!s->past_self || dyn == NULL)
        return 0;
    ElfW(Addr) at = object_lookup(info->dlpi_addr, dyn, s->name);
    if (at == 0)
        return 0;
    s->found = (void *)at;
    return 1;
}

UNINSTRUMENTED void *elf_next_definition(const char *name)
{
    struct elf_search s = {name, (uintptr_t)&elf_next_definition, 0, 0, NULL};
    dl_iterate_phdr(visit, &s);
    return s.found;
}

UNINSTRUMENTED int elf_loaded_before_self(const void *addr)
{
    struct elf_search s = {NULL, (uintptr_t)&elf_next_definition, (uintptr_t)addr, 0, NULL};
    dl_iterate_phdr(visit, &s);
    return s.found != NULL;
}
