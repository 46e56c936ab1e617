#include "route.h"

static bool is_host_kind(enum mem_kind kind)
{
    return kind == MEM_KIND_HOST_PINNED || kind == MEM_KIND_HOST_REGISTERED;
}

static struct route_decision pass(enum route_reason reason)
{
    struct route_decision d = {ROUTE_PASS, reason, -1, -1, false};
    return d;
}

bool route_from_dst(const struct route_input *in)
{
    return in->exec_device >= 0 && in->exec_device == in->dst.device;
}

/* The needed direction of a decision that uses the link. */
static void set_direction(const struct route_input *in, struct route_decision *out)
{
    out->enable_from = in->src.device;
    out->enable_to = in->dst.device;
    if (route_from_dst(in)) {
        out->enable_from = in->dst.device;
        out->enable_to = in->src.device;
    }
}

/* Mapped memory with aliases to be had, or pool memory relayed through
 * the shim's buffers (action): the link is used through them whichever
 * direction is up; an enable is needed only when none is. */
static struct route_decision decide_alias(const struct route_input *in,
                                          const struct p2pshim_config *cfg,
                                          enum route_action action)
{
    const struct route_link *l = &in->link;
    bool up = l->app_enabled || l->shim_enabled || l->shim_any;
    if (!cfg->pair_allowed[in->src.device][in->dst.device])
        return pass(ROUTE_PAIR_EXCLUDED);
    if (in->bytes < cfg->min_bytes)
        return pass(ROUTE_BELOW_MIN_BYTES);
    if (!up && !l->can_access)
        return pass(ROUTE_NO_PEER_CAPABILITY);
    if (!up && l->failed)
        return pass(ROUTE_ENABLE_FAILED);
    struct route_decision out = {action,
                                 action == ROUTE_RELAY ? ROUTE_UPGRADED_RELAY
                                                       : ROUTE_UPGRADED_ALIAS,
                                 -1, -1, !up};
    set_direction(in, &out);
    return out;
}

/* The rules of a copy that context peer access serves: the program's own
 * access, the shim's in the needed direction, then, before enabling
 * anything, the pair filter, the size threshold, capability and a
 * remembered failure. */
static struct route_decision decide_plain(const struct route_input *in,
                                          const struct p2pshim_config *cfg)
{
    const struct route_end *s = &in->src, *d = &in->dst;
    if (in->link.app_enabled)
        return pass(ROUTE_APP_PEER);
    if (in->link.shim_enabled)
        return pass(ROUTE_ALREADY_UPGRADED);

    enum route_reason stop = ROUTE_UPGRADED;
    if (!cfg->pair_allowed[s->device][d->device])
        stop = ROUTE_PAIR_EXCLUDED;
    else if (in->bytes < cfg->min_bytes)
        stop = ROUTE_BELOW_MIN_BYTES;
    else if (!in->link.can_access)
        stop = ROUTE_NO_PEER_CAPABILITY;
    else if (in->link.failed)
        stop = ROUTE_ENABLE_FAILED;
    if (stop != ROUTE_UPGRADED)
        return pass(in->link.shim_any ? ROUTE_ALREADY_UPGRADED : stop);

    struct route_decision out = {ROUTE_ENABLE_THEN_PASS, ROUTE_UPGRADED, -1, -1, false};
    set_direction(in, &out);
    return out;
}

/* A relayable copy of pool memory. A copy engine of the device issuing
 * the copy reads its source and writes its destination, so that device
 * must reach both ends. With every pool end granted to the other device
 * by the program (pool_granted), each pool end is reached from both
 * devices: two pool ends are the program's own peer copy; a pool end and
 * an ordinary one, issued by one of the two devices, need context peer
 * access from the issuing device to the ordinary end, the needed
 * direction of an ordinary copy: upgraded as one. Otherwise the relay. */
static struct route_decision decide_pool(const struct route_input *in,
                                         const struct p2pshim_config *cfg)
{
    bool by_end = in->exec_device >= 0 &&
                  (in->exec_device == in->src.device || in->exec_device == in->dst.device);
    if (in->pool_granted && in->src.kind == MEM_KIND_POOL && in->dst.kind == MEM_KIND_POOL)
        return pass(ROUTE_APP_PEER);
    if (in->pool_granted && by_end)
        return decide_plain(in, cfg);
    return decide_alias(in, cfg, ROUTE_RELAY);
}

struct route_decision route_decide(const struct route_input *in,
                                   const struct p2pshim_config *cfg)
{
    const struct route_end *s = &in->src, *d = &in->dst;

    if (!s->known || !d->known)
        return pass(ROUTE_NOT_CROSS_UNKNOWN);
    if (is_host_kind(s->kind) || is_host_kind(d->kind) || s->device < 0 ||
        d->device < 0)
        return pass(ROUTE_NOT_CROSS_HOST);
    if (s->device == d->device)
        return pass(ROUTE_NOT_CROSS_SAME_DEVICE);

    if (cfg->mode == P2PSHIM_MODE_OFF)
        return pass(ROUTE_MODE_OFF);
    if (s->device >= P2PSHIM_MAX_DEVICES || d->device >= P2PSHIM_MAX_DEVICES)
        return pass(ROUTE_DEVICE_OUT_OF_RANGE);
    if (s->kind == MEM_KIND_MANAGED || d->kind == MEM_KIND_MANAGED)
        return pass(ROUTE_MANAGED);
    bool pool = s->kind == MEM_KIND_POOL || d->kind == MEM_KIND_POOL;
    if (pool && in->relay_ok && in->bytes >= ROUTE_RELAY_MIN &&
        (s->kind == MEM_KIND_POOL || s->kind == MEM_KIND_DEVICE) &&
        (d->kind == MEM_KIND_POOL || d->kind == MEM_KIND_DEVICE))
        return decide_pool(in, cfg);
    if (pool)
        return pass(ROUTE_POOL);
    if (s->kind == MEM_KIND_VMM || d->kind == MEM_KIND_VMM)
        return in->alias_ok ? decide_alias(in, cfg, ROUTE_ALIAS) : pass(ROUTE_VMM);
    return decide_plain(in, cfg);
}
