/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device DCIs: the work done within the call (dcx_qp_t.post_now,
 * put_now, get_now, pack_now; docs/device-semantics.md, "post_now"), under
 * the grant towards the target (soft_dgrant.h), on a DCI whose posted work is
 * all complete.  The DCI object is in soft_qp.c, its posts in soft_post.c.
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
 * device does within the call (post_now, put_now, get_now) is then
 * ordered after everything the DCI carried before, as a posted WR is */
static inline int soft_dci_now_ok(const soft_qp_t *qp)
{
    return (qp->super.post_send == soft_dci_post_send) && soft_dci_quiet(qp);
}

/* Work within the call begins: the engine lock taken (*fast: how); 1 if
 * soft_dci_now_ok and dest names a destination (none: the post says why) */
static inline int soft_dci_now_begin(soft_qp_t *qp, const dcx_dc_dest_t *dest,
                                     int *fast)
{
    *fast = soft_lock_biasing(&qp->dev->lock);
    return soft_dci_now_ok(qp) && (dest->ah != NULL);
}

/* qp->super.post_now of a DCI (dcx_qp_t.post_now): a WRITE of one
 * registered sge, or an atomic, under the engine lock, on a DCI
 * soft_dci_now_ok allows.  A READ is get_now's, an inline WRITE put_now's
 * (both declined here). */
int soft_dci_post_now(dcx_qp_t *qp_, const dcx_send_wr_t *wr)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;
    int fast, done;

    done = soft_dci_now_begin(qp, &wr->dest, &fast) &&
           (((wr->opcode == DCX_WR_RDMA_WRITE) &&
             !(wr->flags & DCX_SEND_INLINE) && (dev->write_now(qp, wr) == 0)) ||
            (soft_op_atomic(wr->opcode) && (dev->atomic_now(qp, wr) == 0)));
    soft_unlock_as(&dev->lock, fast);
    return done ? 0 : EAGAIN;
}

/* qp->super.get_now of a DCI (dcx_qp_t.get_now): a READ whose bytes go to
 * get->cb */
int soft_dci_get_now(dcx_qp_t *qp_, const dcx_get_now_t *get)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;
    int fast, done;

    done = soft_dci_now_begin(qp, &get->dest, &fast) &&
           (soft_dgrant_read(dev, &get->dest, get->remote_addr, get->rkey,
                             get->length, get->cb, get->arg) == 0);
    soft_unlock_as(&dev->lock, fast);
    return done ? 0 : EAGAIN;
}

/* qp->super.pack_now of a DCI (dcx_qp_t.pack_now): a WRITE whose bytes
 * put->pack writes in place at the target */
int soft_dci_pack_now(dcx_qp_t *qp_, dcx_pack_now_t *put)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;
    int fast, done;

    done = soft_dci_now_begin(qp, &put->dest, &fast) &&
           (soft_dgrant_pack(dev, &put->dest, put->pack, put->arg, put->length,
                             put->remote_addr, put->rkey, &put->packed) == 0);
    soft_unlock_as(&dev->lock, fast);
    return done ? 0 : EAGAIN;
}

/* put_now's work in full (soft_dci_put_now says when): a WRITE of at most
 * an MTU from any memory */
static __attribute__((noinline)) int
soft_dci_put_now_full(dcx_qp_t *qp_, const dcx_put_now_t *put)
{
    soft_qp_t *qp   = (soft_qp_t *)qp_;
    soft_dev_t *dev = qp->dev;
    int fast, done;

    done = soft_dci_now_begin(qp, &put->dest, &fast) &&
           (soft_dgrant_write(dev, &put->dest, put->buffer, put->length,
                              put->remote_addr, put->rkey) == 0);
    soft_unlock_as(&dev->lock, fast);
    return done ? 0 : EAGAIN;
}

/* A put_now's end where its writer was asked for its marker: given up */
static __attribute__((noinline)) int soft_dci_put_now_unhold(soft_dev_t *dev,
                                                             soft_peer_t *peer)
{
    soft_dslot_unhold(peer);
    soft_unlock_fast(&dev->lock);
    return 0;
}

/* qp->super.put_now of a DCI (dcx_qp_t.put_now).  Its common case makes
 * no call (flatten: the copy inlined too): the lock biased here, the grant
 * through a mapping with a marker held and its liveness lock known, at
 * most 32 bytes.  Anything else: soft_dci_put_now_full,
 * which looks again from the start (a tail call). */
__attribute__((flatten)) int soft_dci_put_now(dcx_qp_t *qp_,
                                              const dcx_put_now_t *put)
{
    const dcx_dc_dest_t *dest = &put->dest;
    uint32_t length           = put->length;
    soft_qp_t *qp             = (soft_qp_t *)qp_;
    soft_dev_t *dev           = qp->dev;
    soft_dmap_ent_t *map;
    soft_dslot_t *slot;
    soft_peer_t *peer;
    int unhold;

    if ((length > 32) || (dest->ah == NULL) || !soft_lock_fast(&dev->lock)) {
        goto full;
    }
    peer = ((soft_ah_t *)dest->ah)->peer;
    map  = peer->grant.map;
    if (!soft_dci_now_ok(qp) || (map == NULL) ||
        ((slot = soft_dgrant_take(dev, peer, dest, put->rkey, put->remote_addr,
                                  length, DCX_ACCESS_REMOTE_WRITE, 1, 1)) ==
         NULL)) {
        soft_unlock_fast(&dev->lock);
        goto full;
    }
    soft_copy_small(map->local + (put->remote_addr - map->rbase), put->buffer,
                    length);
    unhold = soft_dgrant_release(peer, slot);
    soft_dgrant_done(dev, peer, length, 1);
    if (unhold) {
        return soft_dci_put_now_unhold(dev, peer);
    }
    soft_unlock_fast(&dev->lock);
    return 0;

full:
    return soft_dci_put_now_full(qp_, put);
}
