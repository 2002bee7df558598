/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device DCIs: the plain post (soft_dci_post_send), which hands a WR
 * not flagged DCX_SEND_NOW to the queue (soft_post.c), and the work of one
 * flagged so, done within the post (docs/device-semantics.md, "Work within
 * the call") under the grant towards the target (soft_dgrant.h), on a DCI
 * whose posted work is all complete.  The DCI object is in soft_qp.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_now.h"
#include "soft_dgrant.h"

#include <errno.h>

/* The DCI's plain post (not the first post, nor that of a DCI in error)
 * and nothing outstanding, no RNR wait (engine lock held): what the
 * device does within the call is then ordered after everything the DCI
 * carried before, as a posted WR is */
static inline int soft_dci_now_ok(const soft_qp_t *qp)
{
    return (qp->super.post_send == soft_dci_post_send) && soft_dci_quiet(qp);
}

/* wr's work within the call, engine lock held: 0 if done, 1 if not (the
 * grant does not cover it, a WRITE's registered sge fails a posted one's
 * checks, or it is no WRITE or READ of one sge) */
static inline int soft_dci_now_exec(soft_qp_t *qp, const dcx_send_wr_t *wr)
{
    soft_dev_t *dev      = qp->dev;
    const dcx_sge_t *sge = wr->sg_list;

    if (!soft_dci_now_ok(qp) || (wr->dest.ah == NULL) || (wr->num_sge != 1)) {
        return 1;
    }
    if (wr->opcode == DCX_WR_RDMA_WRITE) {
        if (!(wr->flags & DCX_SEND_INLINE)) {
            return dev->write_now(qp, wr); /* a registered sge */
        }
        return soft_dgrant_write(dev, &wr->dest,
                                 (const void *)(uintptr_t)sge->addr,
                                 sge->length, wr->remote_addr, wr->rkey);
    }
    if (wr->opcode == DCX_WR_RDMA_READ) {
        return soft_dgrant_read(dev, &wr->dest, wr->remote_addr, wr->rkey,
                                sge->length, (void *)(uintptr_t)sge->addr);
    }
    return 1;
}

/* The work in full (soft_dci_post_now says when) */
static __attribute__((noinline)) int
soft_dci_post_now_full(soft_qp_t *qp, const dcx_send_wr_t *wr)
{
    soft_dev_t *dev = qp->dev;
    int fast        = soft_lock_biasing(&dev->lock);
    int ret         = soft_dci_now_exec(qp, wr);

    soft_unlock_as(&dev->lock, fast);
    return (ret == 0) ? 0 : EAGAIN;
}

/* A small copy's end where its writer was asked for its marker: given up */
static __attribute__((noinline)) int soft_dci_now_unhold(soft_dev_t *dev,
                                                         soft_peer_t *peer)
{
    soft_dslot_unhold(peer);
    soft_unlock_fast(&dev->lock);
    return 0;
}

/* The common case: a copy of 1 to 32 bytes (is_write, a constant: an
 * inline WRITE from the sge, else a READ into it), the lock biased here,
 * the grant through a mapping with a marker held and its liveness lock
 * known; it makes no call (flatten: the copy inlined too).  Anything
 * else: soft_dci_post_now_full, which looks again from the start (a tail
 * call). */
_Static_assert(DCX_SOFT_LIMIT_MIN_MTU >= 32, "a small copy is one packet");

static inline __attribute__((always_inline)) int
soft_dci_now_small(soft_qp_t *qp, const dcx_send_wr_t *wr, int is_write)
{
    const dcx_dc_dest_t *dest = &wr->dest;
    const dcx_sge_t *sge      = wr->sg_list;
    uint32_t length           = sge->length;
    soft_dev_t *dev           = qp->dev;
    soft_dmap_ent_t *map;
    soft_dslot_t *slot;
    soft_peer_t *peer;
    uint8_t *remote;
    int unhold;

    if ((length - 1 >= 32) || (dest->ah == NULL) ||
        !soft_lock_fast(&dev->lock)) {
        goto full;
    }
    peer = ((soft_ah_t *)dest->ah)->peer;
    map  = peer->grant.map;
    if (!soft_dci_now_ok(qp) || (map == NULL) ||
        ((slot = soft_dgrant_take(dev, peer, dest, wr->rkey, wr->remote_addr,
                                  length,
                                  is_write ? DCX_ACCESS_REMOTE_WRITE :
                                             DCX_ACCESS_REMOTE_READ,
                                  1, 1)) == NULL)) {
        soft_unlock_fast(&dev->lock);
        goto full;
    }
    remote = map->local + (wr->remote_addr - map->rbase);
    if (is_write) {
        soft_copy_small(remote, (const uint8_t *)(uintptr_t)sge->addr, length);
    } else {
        soft_copy_small((uint8_t *)(uintptr_t)sge->addr, remote, length);
    }
    unhold = soft_dgrant_release(peer, slot);
    /* soft_dgrant_done, the mapping known */
    soft_dmap_touch(dev, map);
    soft_dgrant_count(dev, is_write, 1, length);
    if (unhold) {
        return soft_dci_now_unhold(dev, peer);
    }
    soft_unlock_fast(&dev->lock);
    return 0;

full:
    return soft_dci_post_now_full(qp, wr);
}

static __attribute__((flatten, noinline)) int
soft_dci_now_read_small(soft_qp_t *qp, const dcx_send_wr_t *wr)
{
    return soft_dci_now_small(qp, wr, 0);
}

/* An atomic within the call (its one sge checked by dev->atomic_now),
 * apart from the copies so that it saves only the registers it needs */
static __attribute__((noinline)) int
soft_dci_now_atomic(soft_qp_t *qp, const dcx_send_wr_t *wr)
{
    soft_dev_t *dev = qp->dev;
    int fast        = soft_lock_biasing(&dev->lock);
    int ret         = !soft_dci_now_ok(qp) || (wr->dest.ah == NULL) ||
              (dev->atomic_now(qp, wr) != 0);

    soft_unlock_as(&dev->lock, fast);
    return (ret == 0) ? 0 : EAGAIN;
}

_Static_assert(DCX_WR_ATOMIC_MASKED_CSWAP - DCX_WR_ATOMIC_FADD == 3,
               "the four atomic opcodes, in a row");

/* A DCI's WR flagged DCX_SEND_NOW other than an inline WRITE (from
 * soft_dci_post_send), handed on with no frame of its own: a READ to its
 * common case, an atomic to its own path, anything else to the work in
 * full */
static __attribute__((noinline)) int soft_dci_post_now(soft_qp_t *qp,
                                                       const dcx_send_wr_t *wr)
{
    if (soft_now_shape(wr) == SOFT_NOW_READ) {
        return soft_dci_now_read_small(qp, wr);
    }
    if ((uint8_t)(wr->opcode - DCX_WR_ATOMIC_FADD) <=
        (DCX_WR_ATOMIC_MASKED_CSWAP - DCX_WR_ATOMIC_FADD)) {
        return soft_dci_now_atomic(qp, wr);
    }
    return soft_dci_post_now_full(qp, wr);
}

/* A DCI's plain post (dcx_qp_t.post_send): a WR not flagged DCX_SEND_NOW
 * goes to the queue (soft_dci_post_queued) after one test; an inline
 * WRITE flagged so (a put's, recognised by one compare) is done here, in
 * its common case with no call but the copy; any other to
 * soft_dci_post_now.  Each leaves by a tail call that sets up no frame. */
__attribute__((flatten)) int soft_dci_post_send(dcx_qp_t *qp_,
                                                const dcx_send_wr_t *wr)
{
    soft_qp_t *qp = (soft_qp_t *)qp_;

    if (!(wr->flags & DCX_SEND_NOW)) {
        return soft_dci_post_queued(qp, wr);
    }
    if (soft_now_shape(wr) == SOFT_NOW_INLINE_WRITE) {
        return soft_dci_now_small(qp, wr, 1);
    }
    return soft_dci_post_now(qp, wr);
}
