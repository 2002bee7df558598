/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the writers' in-flight markers of a target's tables
 * (soft_dslot_t, the deregistration protocol at the top of soft_direct.c).
 *
 * Claimed per copy, a marker costs a writer two locked instructions (the
 * claim's compare-and-swap, and the intent's sequentially consistent
 * store), each of which waits for the writer's earlier stores, among them
 * the bytes it just put into a line its target polls.  Two things take
 * them off the path of a small copy under the grant:
 *
 *  - Held markers.  The grant towards a peer keeps the marker it claimed
 *    (soft_dgrant_t.held) for the next copy; between copies its key is 0,
 *    which the owner's wait ignores.  A writer that finds no free marker
 *    first takes over the markers of dead holders, then bumps the area's
 *    'short_gen', and every holder gives its marker back after its next
 *    copy; a held marker goes back at the latest when the device closes.
 *    With every marker held by a live, idle writer, copies to that target
 *    take the responder's packet path, as they did when all were busy.
 *  - An asymmetric fence (membarrier(2), MEMBARRIER_CMD_GLOBAL_EXPEDITED).
 *    A target whose owner can issue it says so in its area ('asym'), and
 *    issues it in its wait (soft_direct_quiesce) between unpublishing an
 *    entry and reading the markers.  A writer in a process registered to
 *    receive those barriers then sets its intent with a plain store: the
 *    barrier orders its store before its re-read of the entry whenever the
 *    two could interleave with the owner's, as the locked store did.  A
 *    process that cannot register (no membarrier, or a sandbox refusing
 *    it) keeps the locked store.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_direct.h"

#include <linux/membarrier.h>

/* this process receives the barriers (soft_membarrier_registered) */
static int soft_dslot_registered;

int soft_dslot_plain_intent(void)
{
    return soft_membarrier_registered(&soft_dslot_registered,
                                      MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);
}

void soft_dslot_area_init(soft_dev_t *dev, soft_direct_area_t *area)
{
    int query = soft_membarrier(MEMBARRIER_CMD_QUERY);

    area->asym = (query > 0) && (query & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
                 (soft_membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0);
    area->short_gen = 0;
}

void soft_dslot_owner_fence(soft_dev_t *dev, soft_direct_area_t *area)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&area->asym, __ATOMIC_RELAXED) &&
        (soft_membarrier_fence(MEMBARRIER_CMD_GLOBAL_EXPEDITED,
                               dev->super.caps.name) != 0)) {
        /* writers go back to locked intents at their next copy: a grant
         * fixed its mode when made, the gen makes it remake it */
        __atomic_store_n(&area->asym, 0, __ATOMIC_SEQ_CST);
        soft_direct_gen_bump(dev);
    }
}

static soft_dslot_t *soft_dslot_take(soft_dev_t *dev, soft_dslot_t *s,
                                     uint64_t seen)
{
    if (!__atomic_compare_exchange_n(&s->owner, &seen, dev->token, 0,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        return NULL;
    }
    __atomic_store_n(&s->pid, dev->pid, __ATOMIC_RELAXED);
    __atomic_store_n(&s->start, dev->direct_start, __ATOMIC_RELAXED);
    return s;
}

soft_dslot_t *soft_dslot_claim(soft_dev_t *dev, soft_direct_area_t *area,
                               unsigned first)
{
    soft_dslot_t *s;
    uint64_t owner;
    unsigned i;

    for (i = 0; i < SOFT_DIRECT_SLOTS; ++i) {
        s = &area->slots[(first + i) % SOFT_DIRECT_SLOTS];
        if ((__atomic_load_n(&s->owner, __ATOMIC_RELAXED) == 0) &&
            (soft_dslot_take(dev, s, 0) != NULL)) {
            return s;
        }
    }
    /* every one taken: a holder that died between copies still owns its
     * marker (the owner's wait reclaims only busy ones) */
    for (i = 0; i < SOFT_DIRECT_SLOTS; ++i) {
        s     = &area->slots[(first + i) % SOFT_DIRECT_SLOTS];
        owner = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE);
        if ((owner != 0) && (__atomic_load_n(&s->key, __ATOMIC_ACQUIRE) == 0) &&
            !soft_pid_alive(__atomic_load_n(&s->pid, __ATOMIC_RELAXED),
                            __atomic_load_n(&s->start, __ATOMIC_RELAXED)) &&
            (soft_dslot_take(dev, s, owner) != NULL)) {
            return s;
        }
    }
    __atomic_fetch_add(&area->short_gen, 1, __ATOMIC_RELAXED);
    return NULL;
}

void soft_dslot_put(soft_dslot_t *s)
{
    __atomic_store_n(&s->owner, 0, __ATOMIC_RELEASE);
}

soft_dslot_t *soft_dslot_hold(soft_dev_t *dev, soft_peer_t *peer,
                              soft_direct_area_t *area)
{
    soft_dgrant_t *g = &peer->grant;

    g->held = soft_dslot_claim(dev, area, g->slot);
    if (g->held != NULL) {
        g->slot       = (uint32_t)(g->held - area->slots);
        g->short_seen = __atomic_load_n(&area->short_gen, __ATOMIC_RELAXED);
    }
    return g->held;
}

void soft_dslot_unhold(soft_peer_t *peer)
{
    if (peer->grant.held != NULL) {
        soft_dslot_put(peer->grant.held);
        peer->grant.held = NULL;
    }
}
