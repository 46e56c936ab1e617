/* The loaded objects' own dynamic symbol tables, read through the link
 * map (_r_debug): where the shim finds the next dlvsym, since calling
 * dlvsym by name from inside the shim reaches the shim's own.
 * Uninstrumented, no allocation. */
#ifndef P2PSHIM_ELF_NEXT_H
#define P2PSHIM_ELF_NEXT_H

/* The first definition of name, a function, in an object loaded after the
 * shim (link-map order), read from the objects' own symbol tables: no
 * dlsym, no dlvsym, no allocation; NULL when none defines it. An IFUNC's
 * resolver, not its choice (the names asked for are not IFUNCs). */
void *elf_next_definition(const char *name);

/* Whether addr lies in an object loaded before the shim (the program
 * itself, or a library preloaded ahead of it): a caller whose RTLD_NEXT
 * search passes over the shim. */
int elf_loaded_before_self(const void *addr);

#endif
