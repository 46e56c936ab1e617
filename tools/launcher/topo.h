/* p2pshim topo: what other parts of the launcher use of it. */
#ifndef P2PSHIM_TOPO_H
#define P2PSHIM_TOPO_H

#include <stdbool.h>
#include <stddef.h>

/* The bandwidth table's path (docs/LOG_FORMAT.md): $P2PSHIM_TOPO_FILE,
 * else $XDG_CACHE_HOME/p2pshim/topo.json, else ~/.cache/p2pshim/topo.json
 * False when neither is set (nor $HOME), or the path does not fit in len.
 * The file may not exist. */
bool topo_table_path(char *out, size_t len);

#endif
