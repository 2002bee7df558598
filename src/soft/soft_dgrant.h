/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the initiator's grant towards a port (soft_dgrant_t, in the
 * peer): a small RDMA WRITE or READ to the DCT and key of the last direct
 * copy that passed every check checks only what could have changed since
 * (soft_direct.c, "The grant", says what and how the grant is made).  The
 * copy under it, inline here so that the DCI's work within the call
 * (soft_dci_post_now) and the light path execute it without a call.
 */
#ifndef DCX_SOFT_DGRANT_H_
#define DCX_SOFT_DGRANT_H_

#include "soft_req.h"
#include "soft_direct.h"
#include "soft_atomic.h"

#include <sys/uio.h>

/* A direct copy done: the counters */
static inline void soft_dgrant_count(soft_dev_t *dev, int is_write, int mapped,
                                     uint64_t len)
{
    if (is_write) {
        dev->stats.direct_writes++;
    } else {
        dev->stats.direct_reads++;
    }
    if (!mapped) { /* (direct_mapped is the rest: dcx_soft_stats) */
        dev->direct_attached++;
    }
    dev->stats.direct_bytes += len;
}

/* The grant's liveness check where its liveness lock was not held when it
 * was made (soft_direct.c) */
int soft_dgrant_life_unknown(soft_peer_t *peer, const soft_dmap_ent_t *map);

/* The grant's checks for a copy of len bytes at raddr under rkey to or
 * from dest (its DCT and DC key; local_plain: our side needs no
 * strided-key walk), the grant's peer: the marker slot claimed, with our
 * intent set and the MR entry's count confirmed after it, or NULL with
 * nothing held (the caller makes the full checks).  leaf (a constant):
 * make no call -- a grant whose liveness lock was not held when it was
 * made, or that holds no marker, gives NULL too; the caller has checked
 * 0 < len <= 32, within any MTU (DCX_SOFT_LIMIT_MIN_MTU). */
static inline __attribute__((always_inline)) soft_dslot_t *
soft_dgrant_take(soft_dev_t *dev, soft_peer_t *peer, const dcx_dc_dest_t *dest,
                 uint32_t rkey, uint64_t raddr, uint64_t len, uint32_t access,
                 int local_plain, int leaf)
{
    soft_dgrant_t *g         = &peer->grant;
    soft_direct_area_t *area = g->area;
    soft_dmap_ent_t *map     = g->map;
    soft_dslot_t *slot;

    /* len - 1 < mtu: 0 < len <= mtu; dev->light_off: a fault rule or our
     * port killed */
    if ((area == NULL) || (rkey != g->rkey) || (dest->dctn != g->dctn) ||
        (dest->dc_key != g->dc_key) || !(g->access & access) ||
        (!leaf && (len - 1 >= dev->limits.mtu)) || (raddr < g->start) ||
        (raddr >= g->end) || (len > g->end - raddr) || !local_plain ||
        dev->light_off ||
        (__atomic_load_n(&area->gen, __ATOMIC_ACQUIRE) != g->gen) ||
        ((g->life != 0) ? (__atomic_load_n((const uint32_t *)&area->life.lock,
                                           __ATOMIC_ACQUIRE) != g->life) :
                          (leaf || !soft_dgrant_life_unknown(peer, map)))) {
        return NULL;
    }
    if (((slot = g->held) == NULL) &&
        (leaf || ((slot = soft_dslot_hold(dev, peer, area)) == NULL))) {
        return NULL;
    }
    /* intent (soft_dslot.c: a plain store where the owner fences for it) */
    if (g->plain) {
        __atomic_store_n(&slot->key, g->rkey, __ATOMIC_RELAXED);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    } else {
        __atomic_store_n(&slot->key, g->rkey, __ATOMIC_SEQ_CST);
    }
    if (__atomic_load_n(&area->mrs[g->rkey >> 8].seq, __ATOMIC_SEQ_CST) !=
        g->mr_seq) {
        __atomic_store_n(&slot->key, 0, __ATOMIC_RELEASE);
        g->area = NULL;
        return NULL;
    }
    return slot;
}

/* The marker of a copy under the grant given back; 1 if the peer's
 * writers asked for the markers held (another found none free): the
 * caller then gives up its hold (soft_dslot_unhold). */
static inline __attribute__((always_inline)) int
soft_dgrant_release(soft_peer_t *peer, soft_dslot_t *slot)
{
    __atomic_store_n(&slot->gen, slot->gen + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->key, 0, __ATOMIC_RELEASE);
    return __atomic_load_n(&peer->grant.area->short_gen, __ATOMIC_RELAXED) !=
           peer->grant.short_seen;
}

/* A copy of len bytes under the grant done: the mapping marked used (its
 * place in the LRU), the copy counted */
static inline __attribute__((always_inline)) void
soft_dgrant_done(soft_dev_t *dev, soft_peer_t *peer, uint64_t len, int is_write)
{
    soft_dmap_ent_t *map = peer->grant.map;

    if (map != NULL) {
        soft_dmap_touch(dev, map);
    }
    soft_dgrant_count(dev, is_write, map != NULL, len);
}

/* Ends a copy under the grant that soft_dgrant_take started: the
 * marker given back; 1 if all len bytes were copied (counted, the mapping
 * marked used), else 0 with the grant dropped (the full checks try again
 * and say why). */
static inline __attribute__((always_inline)) int
soft_dgrant_give(soft_dev_t *dev, soft_peer_t *peer, soft_dslot_t *slot,
                 ssize_t ret, uint64_t len, int is_write)
{
    if (soft_dgrant_release(peer, slot)) {
        soft_dslot_unhold(peer);
    }
    if (ret != (ssize_t)len) {
        peer->grant.area = NULL;
        return 0;
    }
    soft_dgrant_done(dev, peer, len, is_write);
    return 1;
}

/* One piece of ours (l) and len bytes at raddr of the granted peer:
 * through its mapping, or by cross-memory attach.  The bytes copied, as
 * the system call returns them. */
static inline ssize_t soft_dgrant_copy1(const soft_peer_t *peer, uint8_t *l,
                                        uint64_t raddr, uint64_t len,
                                        int is_write)
{
    soft_dmap_ent_t *map = peer->grant.map;
    struct iovec liov, riov;
    uint8_t *r;

    if (map != NULL) {
        r = map->local + (raddr - map->rbase);
        if (is_write) {
            soft_copy_small(r, l, len);
        } else {
            soft_copy_small(l, r, len);
        }
        return (ssize_t)len;
    }
    liov.iov_base = l;
    liov.iov_len  = len;
    riov.iov_base = (void *)(uintptr_t)raddr;
    riov.iov_len  = len;
    return is_write ?
               process_vm_writev((pid_t)peer->pid, &liov, 1, &riov, 1, 0) :
               process_vm_readv((pid_t)peer->pid, &liov, 1, &riov, 1, 0);
}

/* An RDMA READ of len bytes (at most an MTU) at raddr under rkey at dest
 * into buf, any memory of ours, on a DCI with nothing outstanding (engine
 * lock held; a READ flagged DCX_SEND_NOW), copied under the grant towards
 * its peer: through the mapping of the target's allocation, or by
 * cross-memory attach.  0 if done, 1 if the grant does not cover it
 * (nothing read; there is no grant where the device copies nothing
 * directly). */
static inline __attribute__((always_inline)) int
soft_dgrant_read(soft_dev_t *dev, const dcx_dc_dest_t *dest, uint64_t raddr,
                 uint32_t rkey, uint32_t len, void *buf)
{
    soft_peer_t *peer = ((soft_ah_t *)dest->ah)->peer;
    soft_dslot_t *slot;
    ssize_t ret;

    slot = soft_dgrant_take(dev, peer, dest, rkey, raddr, len,
                            DCX_ACCESS_REMOTE_READ, 1, 0);
    if (slot == NULL) {
        return 1;
    }
    ret = soft_dgrant_copy1(peer, (uint8_t *)buf, raddr, len, 0);
    return !soft_dgrant_give(dev, peer, slot, ret, len, 0);
}

/* An RDMA WRITE of len bytes (at most an MTU) from buf, any memory, to
 * raddr under rkey at dest, on a DCI with nothing outstanding (engine lock
 * held), copied under the grant towards its peer with no WQE: the
 * unsignaled inline WRITE of the light path (soft_dci_post_light) and a
 * WRITE flagged DCX_SEND_NOW.  0 if done, 1 if the grant does not cover it
 * (nothing was copied; there is no grant where the device copies nothing
 * directly). */
static inline __attribute__((always_inline)) int
soft_dgrant_write(soft_dev_t *dev, const dcx_dc_dest_t *dest, const void *buf,
                  uint64_t len, uint64_t raddr, uint32_t rkey)
{
    soft_peer_t *peer = ((soft_ah_t *)dest->ah)->peer;
    soft_dslot_t *slot;
    ssize_t ret;

    slot = soft_dgrant_take(dev, peer, dest, rkey, raddr, len,
                            DCX_ACCESS_REMOTE_WRITE, 1, 0);
    if (slot == NULL) {
        return 1;
    }
    ret = soft_dgrant_copy1(peer, (uint8_t *)(uintptr_t)buf, raddr, len, 1);
    return !soft_dgrant_give(dev, peer, slot, ret, len, 1);
}

/* An atomic, op (DCX_WR_ATOMIC_*) on size bytes at raddr under rkey at
 * dest with operands args[0..3] (soft_atomic_apply), on a DCI with nothing
 * outstanding (engine lock held), executed under the grant towards its
 * peer with the CPU atomic the target's responder uses: only through a
 * mapping of the target's allocation (a system call cannot be atomic).
 * The value found there is stored at result (size bytes, any memory of
 * ours).  0 if done, 1 if the grant does not cover it or the target would
 * refuse it (nothing done: the posted atomic's full checks say why). */
static inline __attribute__((always_inline)) int
soft_dgrant_atomic(soft_dev_t *dev, const dcx_dc_dest_t *dest, uint8_t op,
                   unsigned size, uint64_t raddr, uint32_t rkey,
                   const uint64_t *args, void *result)
{
    soft_peer_t *peer = ((soft_ah_t *)dest->ah)->peer;
    soft_dmap_ent_t *map;
    soft_dslot_t *slot;
    uint64_t old;

    /* the map is looked at only once the grant is taken */
    if ((peer->grant.map == NULL) || (raddr % size) ||
        !soft_atomic_valid(op, size, peer->grant.ext_max)) {
        return 1;
    }
    slot = soft_dgrant_take(dev, peer, dest, rkey, raddr, size,
                            DCX_ACCESS_REMOTE_ATOMIC, 1, 0);
    if (slot == NULL) {
        return 1;
    }
    map = peer->grant.map;
    if ((size == 8) &&
        ((op == DCX_WR_ATOMIC_FADD) || (op == DCX_WR_ATOMIC_CSWAP))) {
        old = soft_atomic_apply64((uint64_t *)(map->local +
                                               (raddr - map->rbase)),
                                  op, args);
    } else {
        old = soft_atomic_apply(map->local + (raddr - map->rbase), op, size,
                                args);
    }
    if (soft_dgrant_release(peer, slot)) {
        soft_dslot_unhold(peer);
    }
    soft_dmap_touch(dev, map);
    dev->stats.direct_atomics++;
    soft_atomic_result(result, old, size);
    return 0;
}

/* The same for wr's one sge */
static inline __attribute__((always_inline)) int
soft_dgrant_write_wr(soft_dev_t *dev, const dcx_send_wr_t *wr)
{
    return soft_dgrant_write(dev, &wr->dest,
                             (const void *)(uintptr_t)wr->sg_list[0].addr,
                             wr->sg_list[0].length, wr->remote_addr, wr->rkey);
}

#endif
