/* The environment `p2pshim run` gives its program: P2PSHIM_* assignments
 * from the options, the LD_PRELOAD value, and where libp2pshim.so is.
 * Functions that reject input write one line through launcher_error. */
#ifndef P2PSHIM_RUN_ENV_H
#define P2PSHIM_RUN_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Room for every P2PSHIM_* variable once (a later assignment of the same
 * name replaces the earlier one). */
#define RUN_ENV_MAX 32

struct run_env {
    struct {
        char name[64];
        char *value; /* owned */
    } set[RUN_ENV_MAX];
    int nset;
    char **program; /* PROGRAM ARGS..., NULL-terminated */
    char *preload;  /* owned; the child's LD_PRELOAD */
};

void run_env_init(struct run_env *e);
void run_env_free(struct run_env *e);

/* Sets variable name (a full P2PSHIM_* name from interpose/core/config.h's
 * list) to value, replacing an earlier assignment. P2PSHIM_RUN_LOG and
 * P2PSHIM_TOPO_FILE, which the launcher reads too, are made absolute
 * against the current folder, so that the program's own chdir cannot
 * move them. Returns false (with a message) for an unknown name, or a
 * value the shim's own parser (config_parse) would refuse: the same
 * line, whichever option set it. */
bool run_env_set(struct run_env *e, const char *name, const char *value);

/* Checks the P2PSHIM_* variables of envp (the launcher's environment,
 * which the program inherits) that no option replaces, with the shim's
 * own parser: false after one line for the first bad value
 *   p2pshim: run: environment: P2PSHIM_MODE="obsrve": not a mode
 *   (upgrade, observe or off), did you mean observe?
 * An unknown name is one warning line (its near miss, where there is one),
 * not a refusal. */
bool run_env_check_inherited(const struct run_env *e, char *const *envp);

/* "NAME=VALUE" from --set: NAME with or without the P2PSHIM_ prefix.
 * Returns false (with a message) if malformed or unknown. */
bool run_env_assign(struct run_env *e, const char *text);

/* The value assigned to name, or NULL. */
const char *run_env_get(const struct run_env *e, const char *name);

/* Puts every assignment into the process's environment (setenv). */
bool run_env_export(const struct run_env *e);

/* Builds e->preload from the library's path and the existing LD_PRELOAD
 * (NULL or empty: none). Order: sanitizer runtimes already there stay
 * first (ASan must come first in the initial library list), then the
 * shim, then the other entries as they were. Entries naming libp2pshim
 * are dropped: one copy of the shim. Separators (':' or blanks, as ld.so
 * takes them) become ':'. */
bool run_env_build_preload(struct run_env *e, const char *lib, const char *existing);

/* Finds libp2pshim.so, writing its real path to out: $P2PSHIM_LIBRARY
 * (which must then exist), else beside the launcher, else the install
 * libdir relative to it (P2PSHIM_LIBDIR_FROM_BINDIR, e.g. ../lib: an
 * installed prefix), else ../../interpose from it (the build tree);
 * "the launcher" is its real path (/proc/self/exe), so a symlink to it
 * from elsewhere still finds its library. Returns false, with a message
 * naming the places tried, when none has it. */
bool run_env_find_library(char *out, size_t len);

#endif
