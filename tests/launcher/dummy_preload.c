/* A library to preload beside the shim: `p2pshim run` must keep an
 * existing LD_PRELOAD. It only has to exist and be mapped. */
__attribute__((visibility("default"))) int lt_dummy_marker = 1;
