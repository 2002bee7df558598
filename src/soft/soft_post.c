/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device posts: the post functions of DCIs and DCTs, which a QP
 * installs at its creation and switches between as its state changes
 * (first post, ready -- whose entry, soft_dci_post_send, is soft_now.c's
 * and hands queued WRs here --, flush mode in ERR), the posts of the
 * device's own DCIs, and a DCI's reset back to RTS, which installs them
 * again.  Above the requester and the engine's active list, which a post
 * runs and joins; below the QPs' control path (soft_qp.c), the streams
 * and the rendezvous, which post and reset through here.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_atomic.h"
#include "soft_dgram.h"
#include "soft_stream.h"
#include "soft_dgrant.h"
#include "soft_light.h"
#include "soft_now.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Posting
 * ------------------------------------------------------------------------ */
static int soft_post_check(soft_qp_t *qp, const dcx_send_wr_t *wr,
                           uint64_t *total_p)
{
    const soft_opinfo_t *op = soft_op(wr->opcode);
    const char *name        = soft_qp_dev_name(qp);
    uint64_t total          = 0;
    unsigned i;

    /* work within the call is the plain post's (soft_dci_post_send): a DCI
     * in any other mode has the caller post it */
    if (wr->flags & DCX_SEND_NOW) {
        return EAGAIN;
    }
    if ((wr->opcode >= DCX_WR_MKEY_FIRST) && (wr->opcode < DCX_WR_MKEY_LAST)) {
        *total_p = 0;
        return soft_mkey_post_check(qp, wr);
    }

    if (op == NULL) {
        dcx_error("%s: dci 0x%x post: opcode %u not supported", name,
                  qp->super.qp_num, wr->opcode);
        return EINVAL;
    }
    if (wr->num_sge > qp->super.max_send_sge) {
        dcx_error("%s: dci 0x%x post %s: %u sge > max %u", name,
                  qp->super.qp_num, op->name, wr->num_sge,
                  qp->super.max_send_sge);
        return EINVAL;
    }
    if ((wr->dest.ah == NULL) || ((wr->num_sge > 0) && (wr->sg_list == NULL))) {
        dcx_error("%s: dci 0x%x post %s: no destination or sg list", name,
                  qp->super.qp_num, op->name);
        return EINVAL;
    }
    for (i = 0; i < wr->num_sge; ++i) {
        total += wr->sg_list[i].length;
    }
    if (op->flags & SOFT_OPF_ATOMIC) {
        uint64_t size = soft_atomic_size(wr);

        if (((size != 4) && (size != 8)) || (wr->num_sge != 1) ||
            (wr->sg_list[0].length < size) || (wr->flags & DCX_SEND_INLINE)) {
            dcx_error("%s: dci 0x%x post %s: need one result sge of the "
                      "atomic size (4/8), got size %llu, %u sge",
                      name, qp->super.qp_num, op->name,
                      (unsigned long long)size, wr->num_sge);
            return EINVAL;
        }
        total = size;
    } else if (wr->flags & DCX_SEND_INLINE) {
        if ((op->flags & SOFT_OPF_READ) || (total > qp->super.max_inline)) {
            dcx_error("%s: dci 0x%x post %s: inline %llu bytes > max %u", name,
                      qp->super.qp_num, op->name, (unsigned long long)total,
                      qp->super.max_inline);
            return EINVAL;
        }
    }
    *total_p = total;
    return 0;
}

/* Queues wr as the DCI's next WQE.  'inl_ready': its inline data is in
 * the WQE's buffer already (soft_post_inline_data). */
static soft_swqe_t *soft_post_enqueue(soft_qp_t *qp, const dcx_send_wr_t *wr,
                                      uint64_t total, int inl_ready)
{
    soft_swqe_t *w = soft_wqe(qp, qp->sq_head);
    unsigned i;

    w->wr             = *wr;
    w->wr.sg_list     = NULL;
    w->wr.mkey_layout = NULL;
    w->mkw            = NULL;
    if (soft_opinfo[wr->opcode].flags & SOFT_OPF_MKEY) {
        /* executed locally: no destination, no data */
        w->wr.num_sge = 0;
        w->peer       = NULL;
    } else {
        w->peer = ((soft_ah_t *)wr->dest.ah)->peer;
    }
    w->total_len    = total;
    w->sent_off     = 0;
    w->recv_off     = 0;
    w->credits      = 0;
    w->msn          = qp->next_msn++;
    w->state        = SOFT_WQE_POSTED;
    w->forced       = SOFT_NO_STATUS;
    w->checked      = 0;
    w->all_sent     = 0;
    w->rd_counted   = 0;
    w->copy_refused = 0;
    w->late         = (soft_opinfo[wr->opcode].flags & SOFT_OPF_MKEY) &&
              qp->dev->limits.mkey_late;
    w->tx_end = 0;
    if (inl_ready) {
        /* copied by soft_post_inline_data */
    } else if (wr->flags & DCX_SEND_INLINE) {
        uint64_t off = 0;

        for (i = 0; i < wr->num_sge; ++i) {
            if (wr->sg_list[i].length == 0) {
                continue; /* zero bytes: the address is never read */
            }
            memcpy(w->inl + off, (void *)(uintptr_t)wr->sg_list[i].addr,
                   wr->sg_list[i].length);
            off += wr->sg_list[i].length;
        }
    } else if (w->peer == NULL) {
        soft_mkey_wr_copy(qp, w, wr);
    } else if (wr->num_sge > 0) {
        memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(*w->sge));
    }
    qp->sq_head++;
    soft_engine_activate(qp);
    return w;
}

/* Gives the DCI its send-queue slots, sge lists and inline buffers at its
 * first WR (soft_dci_post_first): a DCI that is never used costs no more
 * than its struct.  Called with the engine lock held (no WQE of the DCI
 * exists before). */
static int __attribute__((noinline)) soft_qp_slots_alloc(soft_qp_t *qp)
{
    size_t stride  = (size_t)qp->super.max_inline + 1;
    size_t sge     = qp->super.max_send_sge;
    uint32_t slots = qp->sq_mask + 1;
    uint32_t i;

    if (qp->sq != NULL) {
        return 0;
    }
    qp->sge_pool = calloc((size_t)slots * sge, sizeof(dcx_sge_t));
    qp->inl_pool = calloc((size_t)slots, stride);
    qp->sq       = calloc(slots, sizeof(*qp->sq));
    if ((qp->sq == NULL) || (qp->sge_pool == NULL) || (qp->inl_pool == NULL)) {
        free(qp->sq);
        free(qp->sge_pool);
        free(qp->inl_pool);
        qp->sq       = NULL;
        qp->sge_pool = NULL;
        qp->inl_pool = NULL;
        dcx_error("%s: dci 0x%x post: out of memory for the send queue of "
                  "%u WRs",
                  soft_qp_dev_name(qp), qp->super.qp_num, qp->sq_size);
        return ENOMEM;
    }
    for (i = 0; i < slots; ++i) {
        qp->sq[i].sge = qp->sge_pool + (size_t)i * sge;
        qp->sq[i].inl = qp->inl_pool + (size_t)i * stride;
    }
    return 0;
}

/* What soft_post_lock() returns when the WR may be queued. */
#define SOFT_POST_READY (-1)

/* Validates wr and takes the engine lock with a free send-queue slot.
 * Returns SOFT_POST_READY with the lock held, or, with the lock released,
 * the result of the post: an errno, or what the QP's current post function
 * did with wr if the QP changed mode (error, recovery) while we waited. */
static inline int soft_post_lock(soft_qp_t *qp, const dcx_send_wr_t *wr,
                                 int (*self)(dcx_qp_t *, const dcx_send_wr_t *),
                                 uint64_t *total_p)
{
    int ret;

    ret = soft_post_check(qp, wr, total_p);
    if (ret != 0) {
        return ret;
    }
    soft_lock(&qp->dev->lock);
    if (qp->sq_head - qp->sq_tail >= qp->sq_size) {
        soft_unlock(&qp->dev->lock);
        dcx_debug("%s: dci 0x%x post: send queue full (%u WRs not retired)",
                  soft_qp_dev_name(qp), qp->super.qp_num, qp->sq_size);
        return ENOMEM;
    }
    if (qp->super.post_send != self) {
        soft_unlock(&qp->dev->lock);
        return qp->super.post_send(&qp->super, wr);
    }
    return SOFT_POST_READY;
}

/* An inline WRITE the device may copy without a WQE (soft_dgrant_write):
 * one sge of at most max_inline bytes */
static inline int soft_dci_inline_one(const soft_qp_t *qp,
                                      const dcx_send_wr_t *wr)
{
    return (wr->num_sge == 1) &&
           (wr->sg_list[0].length <= qp->super.max_inline);
}

/* The WRs the light path may take (soft_req_post_inline), recognised with
 * the few checks they need: an inline SEND, SEND_IMM or RDMA WRITE with a
 * destination and an sg list within the DCI's limit.  Everything else, and
 * every error (logged there), goes through soft_post_check. */
static inline int soft_post_is_light(const soft_qp_t *qp,
                                     const dcx_send_wr_t *wr)
{
    return ((wr->opcode == DCX_WR_SEND) || (wr->opcode == DCX_WR_SEND_IMM) ||
            (wr->opcode == DCX_WR_RDMA_WRITE)) &&
           (wr->flags & DCX_SEND_INLINE) &&
           (wr->num_sge <= qp->super.max_send_sge) && (wr->dest.ah != NULL) &&
           ((wr->num_sge == 0) || (wr->sg_list != NULL));
}

/* The WRs soft_req_post_sge may take: a SEND or SEND_IMM, not inline, of
 * one sge to the DCI's max_send_sge, with a destination, on a device
 * that copies our own sg lists plainly (dev->local_in: the consumer
 * reports unmaps, soft_mem.c) */
static inline int soft_post_is_sge(const soft_qp_t *qp, const dcx_send_wr_t *wr)
{
    return ((wr->opcode == DCX_WR_SEND) || (wr->opcode == DCX_WR_SEND_IMM)) &&
           !(wr->flags & DCX_SEND_INLINE) && (wr->num_sge >= 1) &&
           (wr->num_sge <= qp->super.max_send_sge) && (wr->sg_list != NULL) &&
           (wr->dest.ah != NULL) && (qp->dev->local_in == soft_mem_copy_plain);
}

/* Copies an inline WR's data into the buffer of w, the WQE it will be
 * (engine lock held), summing the lengths in the same walk of the sg
 * list; returns the length, or UINT64_MAX, with nothing else done, when
 * it is longer than the DCI's max_inline. */
static inline uint64_t soft_post_inline_data(const soft_qp_t *qp,
                                             soft_swqe_t *w,
                                             const dcx_send_wr_t *wr)
{
    const dcx_sge_t *sg = wr->sg_list;
    uint8_t *inl        = w->inl;
    uint64_t total      = 0;
    uint64_t len0, len1;
    uint32_t len;
    unsigned i;

    if ((uint8_t)(wr->num_sge - 1) < 2) {
        /* one or two sges, the transport's inline sends (a header, then
         * the data): no loop, whose register moves cost more than the
         * copies (two 32-bit lengths: their sum does not wrap) */
        len0 = sg[0].length;
        len1 = (wr->num_sge == 2) ? sg[1].length : 0;
        if (len0 + len1 > qp->super.max_inline) {
            return UINT64_MAX;
        }
        if (len0 != 0) { /* zero bytes: the address is never read */
            soft_copy_small(inl, (const uint8_t *)(uintptr_t)sg[0].addr, len0);
        }
        if (len1 != 0) {
            soft_copy_small(inl + len0, (const uint8_t *)(uintptr_t)sg[1].addr,
                            len1);
        }
        return len0 + len1;
    }
    for (i = 0; i < wr->num_sge; ++i) {
        len = wr->sg_list[i].length;
        if (len == 0) {
            continue; /* zero bytes: the address is never read */
        }
        if (len > qp->super.max_inline - total) {
            return UINT64_MAX;
        }
        soft_copy_small(inl + total,
                        (const uint8_t *)(uintptr_t)wr->sg_list[i].addr, len);
        total += len;
    }
    return total;
}

/* The general post of a WR checked under the engine lock: queued, then
 * sent as far as the target takes it (data_in: the inline data is already
 * in the WQE). */
/* After a post that completed in the post (soft_post_general): the
 * engine put back as it was before (idle), which the enqueue's activation
 * marked busy.  Only a BUSY of ours is undone: a poll's look that marked
 * the engine busy meanwhile (soft_engine_tail_look, periodic) looks
 * again. */
static inline void soft_engine_idle_again(soft_dev_t *dev, int idle)
{
    int busy = SOFT_ENGINE_BUSY;

    if (idle != SOFT_ENGINE_BUSY) {
        __atomic_compare_exchange_n(&dev->engine_idle, &busy, idle, 0,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    }
}

static void soft_post_general(soft_qp_t *qp, const dcx_send_wr_t *wr,
                              uint64_t total, int data_in)
{
    soft_dev_t *dev = qp->dev;
    int was_active  = qp->active;
    int idle        = __atomic_load_n(&dev->engine_idle, __ATOMIC_RELAXED);
    soft_swqe_t *w  = soft_post_enqueue(qp, wr, total, data_in);
    int at_once;

    /* a WRITE, READ or atomic on a DCI with nothing else outstanding is
     * tried by the initiator right away (soft_req_run_direct);
     * dev->light_off: a fault rule (soft_fault_post) or a killed port */
    at_once = !was_active && (qp->sq_comp + 1 == qp->sq_head) &&
              !dev->light_off && (qp->rnr_until_ns == 0) &&
              (qp->super.state == DCX_QPS_RTS) &&
              ((wr->opcode == DCX_WR_RDMA_WRITE) ||
               (wr->opcode == DCX_WR_RDMA_READ) ||
               (soft_opinfo[wr->opcode].flags & SOFT_OPF_ATOMIC));

    if (!at_once || (soft_req_run_direct(qp, w) != 0)) {
        soft_fault_post(dev, wr->opcode, &w->forced);
        dev->now = soft_dev_now(dev);
        soft_req_run(qp, dev->now);
    }
    if (!was_active && (qp->sq_comp == qp->sq_head)) {
        /* completed in the post (a WRITE or READ the initiator copied, an
         * error): the enqueue's activation leaves the next poll nothing to
         * pass for */
        soft_engine_deactivate(qp);
        soft_engine_idle_again(dev, idle);
    }
}

/* Ends a post: the lock released, then the target port of a light packet
 * (if any) woken: its application if it sleeps on a completion channel
 * and the packet consumes a receive ('recv', soft_wake.c), its helper
 * otherwise, the poll age taken at 'clk' (soft_port_kick_due_at); and our
 * own helper rung if it sleeps.  The unlock's locked instruction orders
 * the packet's publish before the reads of app_wait and 'sleeping'
 * (soft_fence_after_locked): one barrier where a kick inside the publish,
 * the unlock and the own kick made three. */
static inline __attribute__((always_inline)) void
soft_post_unlock_kick(soft_dev_t *dev, soft_port_hdr_t *target, uint64_t clk,
                      int recv, int fast)
{
    int woke = 0;

    soft_unlock_as(&dev->lock, fast);
    if (!fast) {
        soft_fence_after_locked();
    } else if ((target != NULL) &&
               (!dev->kick_asym ||
                __atomic_load_n(&target->fence_hint, __ATOMIC_RELAXED))) {
        /* taken biased (soft_dci_post_light): the fence the unlock would
         * have been, where a packet went out, unless the target's
         * sleepers issue it for us (soft_wake.c, "asymmetric kick"); our
         * own helper's look takes the lock, which orders our work before
         * it */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }
    /* soft_port_kick_seen's test inline: the call only to wake */
    if (target != NULL) {
        if (soft_wake_sleeps(dev, target)) {
            /* one hop: the application serves the packet itself */
            woke = soft_wake_sleeper(dev, target, recv);
        } else if (soft_port_kick_due_at(target, clk)) {
            woke = soft_port_wake_once(target);
        }
    }
    if (__atomic_load_n(&dev->hdr->sleeping, __ATOMIC_RELAXED) ==
        SOFT_HELPER_DEEP) {
        woke += soft_port_kick_sleeping_seen(dev->hdr);
    }
    if (woke) {
        __atomic_fetch_add(&dev->futex_wakes, woke, __ATOMIC_RELAXED);
    }
}

/* An unsignaled inline WRITE of one sge (at most max_inline bytes) on a
 * DCI in RTS with a free slot (both checked by the caller) and nothing
 * outstanding, engine lock held: copied from the caller's buffer under the
 * grant towards its target, and completed at once without a WQE written;
 * its slot is taken all the same, and retired by the next signaled
 * completion polled, as the send queue's accounting wants.  0 if done,
 * else nothing was done. */
static inline int soft_dci_write_at_once(soft_qp_t *qp, const dcx_send_wr_t *wr)
{
    if (!soft_dci_quiet(qp) || (soft_dgrant_write_wr(qp->dev, wr) != 0)) {
        return 1;
    }
    qp->sq_head++;
    qp->sq_send = qp->sq_head;
    qp->sq_comp = qp->sq_head;
    return 0;
}

/* Whether a light post may go ahead (engine lock held): a free send queue
 * slot, and the DCI's plain post (not that of a DCI in error, nor a
 * change of mode meanwhile); otherwise the general post says why not */
static inline int soft_dci_light_open(const soft_qp_t *qp)
{
    return (qp->sq_head - qp->sq_tail < qp->sq_size) &&
           (qp->super.post_send == soft_dci_post_send);
}

/* Posts a WR that soft_post_is_light() recognised: one walk of its sg list
 * (soft_post_inline_data), then the light path, or the general one with
 * the data already in the WQE. */
static int soft_dci_post_light(soft_qp_t *qp, const dcx_send_wr_t *wr)
{
    soft_dev_t *dev         = qp->dev;
    soft_port_hdr_t *target = NULL;
    uint64_t total, clk = 0;
    soft_swqe_t *w;
    int ret;

    int at_once = (wr->opcode == DCX_WR_RDMA_WRITE) &&
                  !(wr->flags & (DCX_SEND_SIGNALED | DCX_SEND_FENCE)) &&
                  soft_dci_inline_one(qp, wr);

    /* under the lock's bias (soft_lock.h) where the thread has it: no
     * locked instruction of the lock's after the copy's stores */
    int fast = soft_lock_biasing(&dev->lock);

    if (!soft_dci_light_open(qp)) {
        soft_unlock_as(&dev->lock, fast);
        return SOFT_POST_READY; /* the caller's general post says why */
    }
    if (at_once && (soft_dci_write_at_once(qp, wr) == 0)) {
        soft_post_unlock_kick(dev, NULL, 0, 0, fast);
        return 0;
    }
    /* the WQE at sq_head, found once: the data's byte stores may alias
     * the DCI's fields, which the compiler would read again */
    w     = soft_wqe(qp, qp->sq_head);
    total = soft_post_inline_data(qp, w, wr);
    if (total == UINT64_MAX) {
        soft_unlock_as(&dev->lock, fast);
        ret = soft_post_check(qp, wr, &total); /* logs it */
        return (ret != 0) ? ret : EINVAL;
    }
    if (soft_req_post_inline(qp, w, wr, total, &target, &clk) != 0) {
        soft_post_general(qp, wr, total, 1);
    }
    soft_post_unlock_kick(dev, target, clk,
                          soft_opinfo[wr->opcode].flags & SOFT_OPF_RECV, fast);
    return 0;
}

/* Posts a WR that soft_post_is_sge() recognised: the light path of an sg
 * list of registered memory, or the general one (which checks it and says
 * why it fails, if it does) */
static __attribute__((noinline)) int soft_dci_post_sge(soft_qp_t *qp,
                                                       const dcx_send_wr_t *wr)
{
    soft_dev_t *dev         = qp->dev;
    soft_port_hdr_t *target = NULL;
    uint64_t clk            = 0;
    int fast                = soft_lock_biasing(&dev->lock);

    if (!soft_dci_light_open(qp) ||
        (soft_req_post_sge(qp, soft_wqe(qp, qp->sq_head), wr, &target, &clk) !=
         0)) {
        soft_unlock_as(&dev->lock, fast);
        return SOFT_POST_READY;
    }
    soft_post_unlock_kick(dev, target, clk, 1, fast);
    return 0;
}

/* The plain post of a WR that is not to be done within the call (from
 * soft_dci_post_send) */
__attribute__((noinline)) int soft_dci_post_queued(soft_qp_t *qp,
                                                   const dcx_send_wr_t *wr)
{
    soft_dev_t *dev = qp->dev;
    uint64_t total;
    int ret;

    if (soft_post_is_light(qp, wr)) {
        ret = soft_dci_post_light(qp, wr);
        if (ret != SOFT_POST_READY) {
            return ret;
        }
        /* a full send queue or a change of mode: as any post */
    } else if (soft_post_is_sge(qp, wr)) {
        ret = soft_dci_post_sge(qp, wr);
        if (ret != SOFT_POST_READY) {
            return ret;
        }
    }
    ret = soft_post_lock(qp, wr, soft_dci_post_send, &total);
    if (ret != SOFT_POST_READY) {
        return ret;
    }
    soft_post_general(qp, wr, total, 0);
    soft_post_unlock_kick(dev, NULL, 0, 0, 0);
    return 0;
}

int soft_dgram_post_send(dcx_qp_t *qp_, const dcx_send_wr_t *wr)
{
    soft_qp_t *qp = (soft_qp_t *)qp_;
    uint64_t total;
    int ret;

    if (wr->flags & DCX_SEND_NOW) {
        return EAGAIN; /* a datagram DCI does nothing within the call */
    }
    if ((wr->opcode != DCX_WR_SEND) && (wr->opcode != DCX_WR_SEND_IMM)) {
        dcx_error("%s: dci 0x%x post: a datagram DCI sends only SEND and "
                  "SEND_IMM (opcode %u)",
                  soft_qp_dev_name(qp), qp->super.qp_num, wr->opcode);
        return EINVAL;
    }
    ret = soft_post_lock(qp, wr, soft_dgram_post_send, &total);
    if (ret != SOFT_POST_READY) {
        return ret;
    }
    if (total > qp->dev->limits.mtu) {
        soft_unlock(&qp->dev->lock);
        dcx_error("%s: dci 0x%x post: a datagram of %llu bytes exceeds the "
                  "MTU (%u)",
                  soft_qp_dev_name(qp), qp->super.qp_num,
                  (unsigned long long)total, qp->dev->limits.mtu);
        return EINVAL;
    }
    soft_post_general(qp, wr, total, 0);
    soft_post_unlock_kick(qp->dev, NULL, 0, 0, 0);
    return 0;
}

/* The post function of a DCI in ERR: the WR is accepted and completes at
 * once with a flush error, as on the hardware. */
int soft_dci_post_flush(dcx_qp_t *qp_, const dcx_send_wr_t *wr)
{
    soft_qp_t *qp = (soft_qp_t *)qp_;
    soft_swqe_t *w;
    uint64_t total;
    int ret;

    ret = soft_post_lock(qp, wr, soft_dci_post_flush, &total);
    if (ret != SOFT_POST_READY) {
        return ret;
    }
    ret = soft_qp_slots_alloc(qp); /* flushed before its first post */
    if (ret != 0) {
        soft_unlock(&qp->dev->lock);
        return ret;
    }
    w        = soft_post_enqueue(qp, wr, total, 0);
    w->state = SOFT_WQE_DONE;
    soft_mkey_wr_free(w);
    soft_wqe_push_cqe(qp, w, qp->sq_head - 1, DCX_WC_WR_FLUSH_ERR, 0);
    qp->sq_comp = qp->sq_head;
    qp->sq_send = qp->sq_head;
    soft_unlock(&qp->dev->lock);
    return 0;
}

/* A DCI's post_send until its first WR: gives it its send queue, then posts
 * through soft_dci_post_send from then on (the fast path checks nothing) */
int soft_dci_post_first(dcx_qp_t *qp_, const dcx_send_wr_t *wr)
{
    soft_qp_t *qp = (soft_qp_t *)qp_;
    int ret;

    soft_lock(&qp->dev->lock);
    ret = soft_qp_slots_alloc(qp);
    if ((ret == 0) && (qp->super.post_send == soft_dci_post_first)) {
        __atomic_store_n(&qp->super.post_send, qp->post_ready,
                         __ATOMIC_RELEASE);
    }
    soft_unlock(&qp->dev->lock);
    if (ret != 0) {
        return ret;
    }
    return qp->super.post_send(qp_, wr);
}

/* dcx_soft_qp_post_failing (soft_qp_ops.c) on a DCI, or on the channel of a
 * DCI with streams the WR goes to: the WR goes through the checks of any
 * post and is queued in order; when it reaches the head of the DCI it is
 * not executed but completes with 'status', and the DCI goes to ERR as
 * after any error completion. */
int soft_post_failing(soft_qp_t *qp, const dcx_send_wr_t *wr,
                      dcx_wc_status_t status)
{
    dcx_qp_t *qp_   = &qp->super;
    soft_dev_t *dev = qp->dev;
    soft_swqe_t *w;
    uint64_t total;
    int ret;

    ret = soft_post_check(qp, wr, &total);
    if (ret != 0) {
        return ret;
    }
    soft_lock(&dev->lock);
    if (qp->super.post_send == soft_dci_post_first) {
        ret = soft_qp_slots_alloc(qp);
        if (ret != 0) {
            soft_unlock(&dev->lock);
            return ret;
        }
        __atomic_store_n(&qp->super.post_send, qp->post_ready,
                         __ATOMIC_RELEASE);
    }
    if (qp->super.post_send != qp->post_ready) {
        /* in ERR (flushed) or not ready: as any post there */
        soft_unlock(&dev->lock);
        return qp->super.post_send(qp_, wr);
    }
    if (qp->sq_head - qp->sq_tail >= qp->sq_size) {
        soft_unlock(&dev->lock);
        dcx_debug("%s: dci 0x%x failing post: send queue full (%u WRs not "
                  "retired)",
                  soft_qp_dev_name(qp), qp->super.qp_num, qp->sq_size);
        return ENOMEM;
    }
    w         = soft_post_enqueue(qp, wr, total, 0);
    w->forced = (uint8_t)status; /* a datagram DCI's too: a local error */
    dev->now  = soft_dev_now(dev);
    soft_req_run(qp, dev->now);
    soft_post_unlock_kick(dev, NULL, 0, 0, 0);
    return 0;
}

/* Posts on a DCI with the engine lock held: for the device's own DCIs
 * (rendezvous reads and FINs of a TM SRQ).  Same checks as a post. */
int soft_qp_post_locked(soft_qp_t *qp, const dcx_send_wr_t *wr)
{
    soft_swqe_t *w;
    uint64_t total;
    int ret;

    ret = soft_post_check(qp, wr, &total);
    if (ret != 0) {
        return ret;
    }
    if ((qp->super.state != DCX_QPS_RTS) ||
        (qp->sq_head - qp->sq_tail >= qp->sq_size)) {
        return EAGAIN;
    }
    ret = soft_qp_slots_alloc(qp);
    if (ret != 0) {
        return ret;
    }
    w = soft_post_enqueue(qp, wr, total, 0);
    soft_fault_post(qp->dev, wr->opcode, &w->forced);
    soft_req_run(qp, qp->dev->now);
    return 0;
}

int soft_dct_post_send(dcx_qp_t *qp_, const dcx_send_wr_t *wr)
{
    dcx_error("%s: qp 0x%x is a DCT: cannot post sends", qp_->dev->caps.name,
              qp_->qp_num);
    return EINVAL;
}

void soft_qp_retire(soft_qp_t *qp, uint32_t sq_idx)
{
    if ((int32_t)(sq_idx + 1 - qp->sq_tail) > 0) {
        qp->sq_tail = sq_idx + 1;
    }
}

/* ERR -> RESET -> RTS of a DCI, engine lock held. */
void soft_qp_reset(soft_qp_t *qp)
{
    /* RESET: forget every WR and the unpolled completions */
    soft_cq_purge(qp->cq, qp, 1);
    soft_qp_rearm(qp);
}

/* A DCI in ERR, all of its WRs flushed, back to RTS without touching its
 * completions not yet polled (they retire nothing any more): the reset of
 * a stream channel (soft_stream.c), and the end of soft_qp_reset.  Engine
 * lock held. */
void soft_qp_rearm(soft_qp_t *qp)
{
    qp->sq_tail      = qp->sq_head;
    qp->sq_comp      = qp->sq_head;
    qp->sq_send      = qp->sq_head;
    qp->rd_atomic    = 0;
    qp->retries      = 0;
    qp->rnr_count    = 0;
    qp->deadline_ns  = 0;
    qp->rnr_until_ns = 0;
    qp->tx_dctn      = 0; /* the next packet whole (soft_light_is_line) */
    __atomic_store_n(&qp->super.state, DCX_QPS_RTS, __ATOMIC_RELAXED);
    __atomic_store_n(&qp->super.post_send,
                     (qp->sq != NULL) ? qp->post_ready : soft_dci_post_first,
                     __ATOMIC_RELEASE);
}
