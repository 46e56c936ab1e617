/* Route: the pure decision for one cross-GPU copy (or batch element):
 * from what the copy touches, the peer link's state and the configuration,
 * to an action and a reason. No CUDA calls, no globals: unit-tested as a
 * table (tests/unit/test_route.c). */
#ifndef P2PSHIM_ROUTE_H
#define P2PSHIM_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "log_vocab.h"
#include "ownership.h"
#include "route_reason.h"

enum route_action {
    ROUTE_PASS = 0,          /* call the original unchanged */
    ROUTE_ENABLE_THEN_PASS,  /* enable peer access, then call the original */
    ROUTE_ALIAS,             /* mapped memory: enable when need_enable, then
                              * call the original with the mapped ends'
                              * aliases (vmm_alias.h) */
    ROUTE_RELAY,             /* pool memory: enable when need_enable, then
                              * carry the copy through the shim's own
                              * buffers instead of the call (pool_relay.h) */
};

/* Below this a cross-GPU copy of pool memory passes as it would: three
 * copies and their fences per chunk cost more than the driver's staging
 * saves (a staged 1 MiB copy takes about 30 us on an H200 pair; a relay
 * adds 6-10 driver calls of a few us each before its first byte moves). */
#define ROUTE_RELAY_MIN ((size_t)1 << 20)

/* One end of a copy as the ownership layer sees it. */
struct route_end {
    bool known;            /* false: the driver does not know the pointer */
    enum mem_kind kind;
    int device;            /* ordinal; -1 for host memory */
};

/* The peer link between the two devices' contexts. "The needed direction"
 * is from the device issuing the copy to the other end (source to
 * destination when the issuer is neither): measured on H200 NVLink, a copy
 * runs at full speed (388 GB/s) when its issuing device has access to the
 * other, and at 370 GB/s when only the opposite direction is enabled. */
struct route_link {
    bool can_access;       /* cuDeviceCanAccessPeer, either direction */
    bool app_enabled;      /* the program enabled a direction itself */
    bool shim_enabled;     /* the shim enabled the needed direction */
    bool shim_any;         /* the shim enabled either direction */
    bool failed;           /* enabling the needed direction failed before */
};

struct route_input {
    struct route_end src, dst;
    size_t bytes;
    int exec_device;       /* device issuing the copy, -1 if unknown */
    struct route_link link;
    bool alias_ok;         /* the caller can re-issue with aliases of mapped
                            * ends (linear copies) */
    bool relay_ok;         /* the caller lets the shim replace the copy
                            * (linear copies) and the relay is on */
    bool pool_granted;     /* every pool end is granted to the other end's
                            * device by the program itself (cuMemPoolSetAccess:
                            * read for a source, read-write for a
                            * destination); asked only of a copy the relay
                            * would otherwise take */
};

struct route_decision {
    enum route_action action;
    enum route_reason reason;
    int enable_from;       /* for ROUTE_ENABLE_THEN_PASS: the direction */
    int enable_to;         /* (route_from_dst), device ordinals */
    bool need_enable;      /* ROUTE_ALIAS, ROUTE_RELAY: no direction of the
                            * link is up yet */
};

/* The needed direction, the one rule every caller reads: true when it
 * starts at the destination (the destination's device issues the copy),
 * false when it starts at the source. Reads in->src, in->dst and
 * in->exec_device only, so a caller can ask it before reading the link. */
bool route_from_dst(const struct route_input *in);

/* Decides. Rules, in order: not cross-GPU (unknown, host, same device);
 * mode off; ordinals past P2PSHIM_MAX_DEVICES; managed and pool memory
 * (context peer access does not cover them: passed through; pool memory
 * is relayed instead when relay_ok and the copy is at least
 * ROUTE_RELAY_MIN, with the same checks as an alias; unless pool_granted
 * and the copy is issued by one of its two devices: then two pool ends
 * pass as the program's own peer copy, and a pool end with an ordinary
 * one takes the ordinary rules below), and mapped
 * memory unless alias_ok (then ROUTE_ALIAS, after the pair filter, the
 * size threshold, capability and a remembered failure of a link not yet
 * up: the program's or the shim's link does not reach mapped memory); the
 * program's own access (it chose its links: left as they are); the shim's
 * access in the needed direction; then, before enabling anything, the pair
 * filter, the size threshold, capability and a remembered failure — where
 * one of those stops an enable but the shim already enabled the opposite
 * direction, the copy rides the link anyway and counts as upgraded; else
 * enable the needed direction. */
struct route_decision route_decide(const struct route_input *in,
                                   const struct p2pshim_config *cfg);

#endif
