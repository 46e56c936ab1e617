/* The routing decision as a table: each row is a copy's ends, its link and
 * the configuration, and the action and reason the shim must take. */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "route.h"

static int failures;

#define DEV(d) {true, MEM_KIND_DEVICE, (d)}
#define KIND(k, d) {true, (k), (d)}
#define HOST {true, MEM_KIND_HOST_PINNED, -1}
#define UNKNOWN {false, MEM_KIND_DEVICE, -1}

/* link flags */
#define CAN 1
#define APP 2
#define SHIM 4
#define FAILED 8
#define SHIM_ANY 16 /* the shim enabled the opposite direction only */
#define ALIAS 32    /* the caller can re-issue with aliases (alias_ok) */
#define RELAY 64    /* the caller lets the shim relay the copy (relay_ok) */
#define GRANTED 128 /* the program granted every pool end to the other device */
#define MIB (1 << 20)
#define POOL(d) {true, MEM_KIND_POOL, (d)}
#define VMM(d) {true, MEM_KIND_VMM, (d)}

struct row {
    const char *what;
    struct route_end src, dst;
    size_t bytes;
    int exec;
    int link;
    int cfg; /* 0 default, 1 mode off, 2 min 1 MiB, 3 exclude 0:1, 4 only 1-2 */
    enum route_action action;
    enum route_reason reason;
    int from, to;
};

static const struct row rows[] = {
    {"unknown source", UNKNOWN, DEV(1), 64, -1, CAN, 0, ROUTE_PASS, ROUTE_NOT_CROSS_UNKNOWN, -1, -1},
    {"unknown destination", DEV(0), UNKNOWN, 64, -1, CAN, 0, ROUTE_PASS, ROUTE_NOT_CROSS_UNKNOWN, -1, -1},
    {"device to host", DEV(0), HOST, 64, -1, CAN, 0, ROUTE_PASS, ROUTE_NOT_CROSS_HOST, -1, -1},
    {"registered host to device", KIND(MEM_KIND_HOST_REGISTERED, -1), DEV(1), 64, -1, CAN, 0, ROUTE_PASS, ROUTE_NOT_CROSS_HOST, -1, -1},
    {"same device", DEV(1), DEV(1), 64, -1, CAN, 0, ROUTE_PASS, ROUTE_NOT_CROSS_SAME_DEVICE, -1, -1},
    {"cross, enable src->dst", DEV(0), DEV(1), 64, -1, CAN, 0, ROUTE_ENABLE_THEN_PASS, ROUTE_UPGRADED, 0, 1},
    {"cross, issued on src", DEV(0), DEV(1), 64, 0, CAN, 0, ROUTE_ENABLE_THEN_PASS, ROUTE_UPGRADED, 0, 1},
    {"cross, issued on dst", DEV(0), DEV(1), 64, 1, CAN, 0, ROUTE_ENABLE_THEN_PASS, ROUTE_UPGRADED, 1, 0},
    {"cross, issued on a third", DEV(2), DEV(3), 64, 0, CAN, 0, ROUTE_ENABLE_THEN_PASS, ROUTE_UPGRADED, 2, 3},
    {"mode off", DEV(0), DEV(1), 64, -1, CAN, 1, ROUTE_PASS, ROUTE_MODE_OFF, -1, -1},
    {"ordinal too large", DEV(0), DEV(P2PSHIM_MAX_DEVICES), 64, -1, CAN, 0, ROUTE_PASS, ROUTE_DEVICE_OUT_OF_RANGE, -1, -1},
    {"managed", KIND(MEM_KIND_MANAGED, 0), DEV(1), 64, -1, CAN, 0, ROUTE_PASS, ROUTE_MANAGED, -1, -1},
    {"pool", DEV(0), KIND(MEM_KIND_POOL, 1), 64, -1, CAN, 0, ROUTE_PASS, ROUTE_POOL, -1, -1},
    {"pool, aliases possible", KIND(MEM_KIND_POOL, 0), DEV(1), 64, -1, CAN | ALIAS, 0, ROUTE_PASS, ROUTE_POOL, -1, -1},
    {"pool, relay, enable", POOL(0), POOL(1), MIB, -1, CAN | ALIAS | RELAY, 0, ROUTE_RELAY, ROUTE_UPGRADED_RELAY, 0, 1},
    {"pool to device, relay, issued on dst", POOL(0), DEV(1), MIB, 1, CAN | ALIAS | RELAY, 0, ROUTE_RELAY, ROUTE_UPGRADED_RELAY, 1, 0},
    {"device to pool, the program's link up", DEV(0), POOL(1), MIB, -1, CAN | APP | ALIAS | RELAY, 0, ROUTE_RELAY, ROUTE_UPGRADED_RELAY, 0, 1},
    {"pool, relay, below its minimum", POOL(0), POOL(1), MIB - 1, -1, CAN | ALIAS | RELAY, 0, ROUTE_PASS, ROUTE_POOL, -1, -1},
    {"pool, no relay (2D, batch, off)", POOL(0), POOL(1), MIB, -1, CAN | ALIAS, 0, ROUTE_PASS, ROUTE_POOL, -1, -1},
    {"pool to mapped: not relayed", POOL(0), VMM(1), MIB, -1, CAN | ALIAS | RELAY, 0, ROUTE_PASS, ROUTE_POOL, -1, -1},
    {"pool, relay, cannot peer", POOL(0), POOL(1), MIB, -1, ALIAS | RELAY, 0, ROUTE_PASS, ROUTE_NO_PEER_CAPABILITY, -1, -1},
    {"pool, relay, pair excluded", POOL(0), POOL(1), MIB, -1, CAN | ALIAS | RELAY, 3, ROUTE_PASS, ROUTE_PAIR_EXCLUDED, -1, -1},
    {"pools granted: the program's peer copy", POOL(0), POOL(1), MIB, 0, CAN | ALIAS | RELAY | GRANTED, 0, ROUTE_PASS, ROUTE_APP_PEER, -1, -1},
    {"pools granted, issued on a third", POOL(0), POOL(1), MIB, 2, CAN | ALIAS | RELAY | GRANTED, 0, ROUTE_PASS, ROUTE_APP_PEER, -1, -1},
    {"granted pool to device, issued on src: enable", POOL(0), DEV(1), MIB, 0, CAN | ALIAS | RELAY | GRANTED, 0, ROUTE_ENABLE_THEN_PASS, ROUTE_UPGRADED, 0, 1},
    {"device to granted pool, issued on src: enable", DEV(0), POOL(1), MIB, 0, CAN | ALIAS | RELAY | GRANTED, 0, ROUTE_ENABLE_THEN_PASS, ROUTE_UPGRADED, 0, 1},
    {"granted pool to device, issued on dst: enable", POOL(0), DEV(1), MIB, 1, CAN | ALIAS | RELAY | GRANTED, 0, ROUTE_ENABLE_THEN_PASS, ROUTE_UPGRADED, 1, 0},
    {"granted pool to device, the shim's link up", POOL(0), DEV(1), MIB, 0, CAN | SHIM | ALIAS | RELAY | GRANTED, 0, ROUTE_PASS, ROUTE_ALREADY_UPGRADED, -1, -1},
    {"granted pool to device, the program's link up", POOL(0), DEV(1), MIB, 0, CAN | APP | ALIAS | RELAY | GRANTED, 0, ROUTE_PASS, ROUTE_APP_PEER, -1, -1},
    {"granted pool to device, enable failed before", POOL(0), DEV(1), MIB, 0, CAN | FAILED | ALIAS | RELAY | GRANTED, 0, ROUTE_PASS, ROUTE_ENABLE_FAILED, -1, -1},
    {"granted pool to device, issued on a third: relay", POOL(0), DEV(1), MIB, 2, CAN | ALIAS | RELAY | GRANTED, 0, ROUTE_RELAY, ROUTE_UPGRADED_RELAY, 0, 1},
    {"granted pool to device, issuer unknown: relay", POOL(0), DEV(1), MIB, -1, CAN | ALIAS | RELAY | GRANTED, 0, ROUTE_RELAY, ROUTE_UPGRADED_RELAY, 0, 1},
    {"granted pool to device, below the relay minimum", POOL(0), DEV(1), MIB - 1, 0, CAN | ALIAS | RELAY | GRANTED, 0, ROUTE_PASS, ROUTE_POOL, -1, -1},
    {"mapped, alias, enable", VMM(0), DEV(1), 64, -1, CAN | ALIAS, 0, ROUTE_ALIAS, ROUTE_UPGRADED_ALIAS, 0, 1},
    {"mapped both, issued on dst", VMM(0), VMM(1), 64, 1, CAN | ALIAS, 0, ROUTE_ALIAS, ROUTE_UPGRADED_ALIAS, 1, 0},
    {"mapped, the program's link up", DEV(0), VMM(1), 64, -1, CAN | APP | ALIAS, 0, ROUTE_ALIAS, ROUTE_UPGRADED_ALIAS, 0, 1},
    {"mapped, the shim's other direction up", VMM(0), VMM(1), 64, -1, CAN | SHIM_ANY | FAILED | ALIAS, 0, ROUTE_ALIAS, ROUTE_UPGRADED_ALIAS, 0, 1},
    {"mapped, enable failed before", VMM(0), VMM(1), 64, -1, CAN | FAILED | ALIAS, 0, ROUTE_PASS, ROUTE_ENABLE_FAILED, -1, -1},
    {"mapped, cannot peer", VMM(0), VMM(1), 64, -1, ALIAS, 0, ROUTE_PASS, ROUTE_NO_PEER_CAPABILITY, -1, -1},
    {"mapped, below min bytes", VMM(0), VMM(1), 64, -1, CAN | SHIM | ALIAS, 2, ROUTE_PASS, ROUTE_BELOW_MIN_BYTES, -1, -1},
    {"mapped, pair excluded", VMM(0), VMM(1), 64, -1, CAN | ALIAS, 3, ROUTE_PASS, ROUTE_PAIR_EXCLUDED, -1, -1},
    {"mapped", KIND(MEM_KIND_VMM, 0), DEV(1), 64, -1, CAN, 0, ROUTE_PASS, ROUTE_VMM, -1, -1},
    {"app enabled", DEV(0), DEV(1), 64, -1, CAN | APP, 0, ROUTE_PASS, ROUTE_APP_PEER, -1, -1},
    {"app and shim", DEV(0), DEV(1), 64, -1, CAN | APP | SHIM, 0, ROUTE_PASS, ROUTE_APP_PEER, -1, -1},
    {"shim enabled", DEV(0), DEV(1), 64, -1, CAN | SHIM, 0, ROUTE_PASS, ROUTE_ALREADY_UPGRADED, -1, -1},
    {"excluded direction", DEV(0), DEV(1), 64, -1, CAN, 3, ROUTE_PASS, ROUTE_PAIR_EXCLUDED, -1, -1},
    {"other direction allowed", DEV(1), DEV(0), 64, -1, CAN, 3, ROUTE_ENABLE_THEN_PASS, ROUTE_UPGRADED, 1, 0},
    {"only 1-2: 0->1 excluded", DEV(0), DEV(1), 64, -1, CAN, 4, ROUTE_PASS, ROUTE_PAIR_EXCLUDED, -1, -1},
    {"only 1-2: 2->1 allowed", DEV(2), DEV(1), 64, -1, CAN, 4, ROUTE_ENABLE_THEN_PASS, ROUTE_UPGRADED, 2, 1},
    {"below threshold", DEV(0), DEV(1), 4096, -1, CAN, 2, ROUTE_PASS, ROUTE_BELOW_MIN_BYTES, -1, -1},
    {"at threshold", DEV(0), DEV(1), 1 << 20, -1, CAN, 2, ROUTE_ENABLE_THEN_PASS, ROUTE_UPGRADED, 0, 1},
    {"cannot peer", DEV(0), DEV(1), 64, -1, 0, 0, ROUTE_PASS, ROUTE_NO_PEER_CAPABILITY, -1, -1},
    {"failed before", DEV(0), DEV(1), 64, -1, CAN | FAILED, 0, ROUTE_PASS, ROUTE_ENABLE_FAILED, -1, -1},
    {"needed direction failed, opposite enabled", DEV(0), DEV(1), 64, 0, CAN | FAILED | SHIM_ANY, 0, ROUTE_PASS, ROUTE_ALREADY_UPGRADED, -1, -1},
    {"opposite enabled: enable the needed one too", DEV(0), DEV(1), 64, 1, CAN | SHIM_ANY, 0, ROUTE_ENABLE_THEN_PASS, ROUTE_UPGRADED, 1, 0},
    {"excluded but opposite rides the link", DEV(0), DEV(1), 64, -1, CAN | SHIM_ANY, 3, ROUTE_PASS, ROUTE_ALREADY_UPGRADED, -1, -1},
    {"below threshold, opposite enabled", DEV(0), DEV(1), 64, -1, CAN | SHIM_ANY, 2, ROUTE_PASS, ROUTE_ALREADY_UPGRADED, -1, -1},
    {"app enabled though cannot (trust the driver)", DEV(0), DEV(1), 64, -1, APP, 0, ROUTE_PASS, ROUTE_APP_PEER, -1, -1},
};

static void make_config(int which, struct p2pshim_config *cfg)
{
    char err[128];
    config_set_defaults(cfg);
    if (which == 1)
        cfg->mode = P2PSHIM_MODE_OFF;
    if (which == 2)
        cfg->min_bytes = 1 << 20;
    if (which == 3 && !config_parse_pairs("!0:1", cfg->pair_allowed, err, sizeof err))
        printf("pairs: %s\n", err);
    if (which == 4 && !config_parse_pairs("1-2", cfg->pair_allowed, err, sizeof err))
        printf("pairs: %s\n", err);
}

int main(void)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct row *r = &rows[i];
        struct p2pshim_config cfg;
        struct route_input in;
        memset(&in, 0, sizeof in);
        make_config(r->cfg, &cfg);
        in.src = r->src;
        in.dst = r->dst;
        in.bytes = r->bytes;
        in.exec_device = r->exec;
        in.link.can_access = (r->link & CAN) != 0;
        in.link.app_enabled = (r->link & APP) != 0;
        in.link.shim_enabled = (r->link & SHIM) != 0;
        in.link.failed = (r->link & FAILED) != 0;
        in.link.shim_any = (r->link & (SHIM | SHIM_ANY)) != 0;
        in.alias_ok = (r->link & ALIAS) != 0;
        in.relay_ok = (r->link & RELAY) != 0;
        in.pool_granted = (r->link & GRANTED) != 0;
        struct route_decision d = route_decide(&in, &cfg);
        bool ok = d.action == r->action && d.reason == r->reason;
        if (ok && d.action != ROUTE_PASS)
            ok = d.enable_from == r->from && d.enable_to == r->to;
        /* An alias needs an enable only when no direction is up. */
        if (ok && (d.action == ROUTE_ALIAS || d.action == ROUTE_RELAY))
            ok = d.need_enable == !(r->link & (APP | SHIM | SHIM_ANY));
        if (!ok) {
            failures++;
            printf("FAIL %s: got action %d reason %s (%d->%d), want %d %s (%d->%d)\n",
                   r->what, d.action, route_reason_name(d.reason), d.enable_from,
                   d.enable_to, r->action, route_reason_name(r->reason), r->from, r->to);
        }
    }
    /* Names are stable: the exit summary and the docs use them. */
    if (strcmp(route_reason_name(ROUTE_BELOW_MIN_BYTES), "below-min-bytes") != 0 ||
        strcmp(route_reason_name((enum route_reason)ROUTE_REASON_COUNT), "?") != 0) {
        failures++;
        printf("FAIL reason names\n");
    }
    if (!route_reason_is_upgrade(ROUTE_ALREADY_UPGRADED) || route_reason_is_upgrade(ROUTE_APP_PEER) ||
        !route_reason_is_local(ROUTE_NOT_CROSS_HOST) || route_reason_is_local(ROUTE_POOL)) {
        failures++;
        printf("FAIL reason classes\n");
    }
    printf("%zu rows, %d failures\n", sizeof rows / sizeof rows[0], failures);
    return failures ? 1 : 0;
}
