/* P2PSHIM_HOT marks code on the path of every copy between host and
 * device, the copies programs make with cold caches: GCC puts hot
 * functions in .text.hot, which the linker lays out together, so such a
 * copy touches a few pages of the shim's code instead of about one page
 * per function (tools/bench/hookbench/coldlines.sh counts them). No
 * dependencies: the pure modules include it too. */
#ifndef P2PSHIM_HOT_H
#define P2PSHIM_HOT_H

#define P2PSHIM_HOT __attribute__((hot))

#endif
