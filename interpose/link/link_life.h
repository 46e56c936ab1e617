/* The life of the peer links the shim enabled: when each last carried a
 * copy of the shim's, which of those copies may still be in flight, and
 * giving links back —
 *   idle release (P2PSHIM_LINK_IDLE_MS): a link no upgraded copy has used
 *     for that long, with every such copy complete, is disabled; the next
 *     copy that needs it enables it again (peer.h). Checked at copy time,
 *     at most every idle/4: no thread of its own.
 *   the peer limit: when the program's own enable meets
 *     CUDA_ERROR_TOO_MANY_PEERS, the least recently used link of the shim's
 *     on either of its contexts is given back, once the shim's copies on it
 *     are complete (waited for), and the program's call retried
 *     (wrap_peer.c).
 * Links the program enabled itself are never given back (peer.h's
 * peer_shim_release refuses them).
 *
 * In flight: with idle release on, every copy the shim issues across one
 * of its links records an event on the stream that carries it, after its
 * last piece there (one event per link and stream, re-recorded: a
 * stream's later event covers its earlier copies): an upgraded copy right
 * after its driver call (an alias's too), a pool relay on the program's
 * stream after that stream's wait for the relay's last copy, a bounced
 * H2D after its snapshot pieces. Between the note of a use and its event
 * the link counts as in flight too. A link that carried a copy no event
 * covers (idle release off, more streams than slots, a call across
 * several links: a batch) is "untracked": never released
 * for idleness, and given back for the peer limit only after both its
 * contexts are synchronised. One lock, taken before peer.c's, serialises
 * the table and its events (held across those driver calls: this runs for
 * upgraded copies only, never for a copy the shim leaves alone). */
#ifndef P2PSHIM_LINK_LIFE_H
#define P2PSHIM_LINK_LIFE_H

#include <stdbool.h>

#include "copy_call.h"
#include "shim_cuda.h"

/* An upgraded copy between contexts a and b (devices dev_a, dev_b) is
 * about to be issued for call: the link's last use is now. With idle
 * release on and call non-NULL, call is marked (link_a, link_b; when not
 * already marked for another link) and the link counts as in flight until
 * link_life_after_issue records its event: every marked call must get
 * that call, on the stream that carries the copy (call->issue.stream,
 * call->issue.per_thread). With call NULL (a copy nothing will cover) the link
 * becomes untracked. */
void link_life_note_use(struct copy_call *call, CUcontext a, int dev_a, CUcontext b, int dev_b);

/* A link the shim enabled for a copy that then did not ride it (its alias
 * or its relay failed): its last use is now, with nothing of the shim's in
 * flight on it, so it is released when idle and given back for the peer
 * limit like any other (an untracked link stays so). */
void link_life_note_idle(CUcontext a, int dev_a, CUcontext b, int dev_b);

/* Whether call carries a use to record after its driver call. */
bool link_life_pending(const struct copy_call *call);

/* After the driver call of a marked copy (or the last piece of a copy the
 * shim issues itself on call->issue.stream): records the link's event on that
 * stream, in the call's flavour (legacy or per-thread); the link is no
 * longer in flight but for that event. */
void link_life_after_issue(const struct copy_call *call);

/* At copy time: gives back links idle for P2PSHIM_LINK_IDLE_MS (nothing
 * when 0; one clock read otherwise, until a check is due). */
void link_life_tick(void);

/* The program's enable from cur to peer met CUDA_ERROR_TOO_MANY_PEERS:
 * gives back the least recently used link of the shim's that touches cur
 * or peer, after waiting for the shim's copies on it (its events; both
 * contexts when untracked). true when one was given back (the caller
 * retries once per true). */
bool link_life_make_room(CUcontext cur, CUcontext peer);

/* Drops what is known of links touching a device (reset) or a context
 * (destroyed): their events died with the context. */
void link_life_forget_device(int dev);
void link_life_forget_ctx(CUcontext ctx);

/* The lifecycle row's columns (shim.h): its lock around fork; in a child
 * every entry is dropped (the parent's contexts and events are not the
 * child's); at exit the events are destroyed. */
void link_life_fork_prepare(void);
void link_life_fork_parent(void);
void link_life_fork_child(void);

#endif
