/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device responder: executes inbound request packets against the
 * local DCTs, SRQs and MRs and answers through the requester's response
 * ring.
 *
 * Per source (port, DCI) the responder keeps the next expected message
 * number 'e' and how far into message e it got.  Requests are handled in
 * order; a later message is dropped (the requester goes back to the lost
 * one after its timeout), an earlier one is a duplicate and only re-answered
 * (atomics return the saved result, reads are re-executed).  The response
 * ring never blocks the responder: a response that does not fit is dropped
 * and recovered by the requester's retry.
 *
 * The answers, the receive a message takes and the DCT a packet names are
 * in soft_answer.c, below this file and the tag-matching engine, which
 * both answer.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_dgram.h"
#include "soft_direct.h"
#include "soft_srq.h"
#include "soft_atomic.h"
#include "soft_tm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Outcome of the last finished message of a source, for duplicates. */
#define SOFT_DONE_NONE 0xffffu

static inline uint32_t soft_rstate_hash(uint32_t pid, uint32_t inst,
                                        uint32_t dci)
{
    return (pid * 2654435761u) ^ (inst * 40503u) ^ (dci * 2246822519u);
}

/* The table is full: forget sources that are idle (no message in progress)
 * and rebuild the probe chains.  A forgotten source is re-learnt from its
 * next packet (ack_base tells where it stands). */
static int soft_rstate_gc(soft_dev_t *dev)
{
    soft_rstate_t *old = dev->rstate, *rs;
    uint32_t i, j, kept = 0;

    dev->rstate = calloc(SOFT_RSTATE_SLOTS, sizeof(*dev->rstate));
    if (dev->rstate == NULL) {
        dev->rstate = old;
        return 0;
    }
    for (i = 0; i < SOFT_RSTATE_SLOTS; ++i) {
        if (!old[i].used ||
            (!old[i].have_recv && (old[i].cur_off == 0) && !old[i].msg_err)) {
            continue;
        }
        j = soft_rstate_hash(old[i].pid, old[i].inst, old[i].dci);
        for (;; ++j) {
            rs = &dev->rstate[j % SOFT_RSTATE_SLOTS];
            if (!rs->used) {
                *rs = old[i];
                break;
            }
        }
        ++kept;
    }
    free(old);
    dcx_debug("%s: responder state table full: kept %u busy sources",
              dev->super.caps.name, kept);
    return kept < SOFT_RSTATE_SLOTS;
}

/* The state of the packet's source, if there is one. */
static inline int soft_rstate_is(const soft_rstate_t *rs, const soft_pkt_t *pkt)
{
    return (rs->pid == pkt->src_pid) && (rs->inst == pkt->src_inst) &&
           (rs->dci == pkt->src_qpn);
}

/* The state of the packet's source, if there is one: the last one found
 * first (dev->rs_hint), then the hash chain. */
static inline soft_rstate_t *soft_rstate_find(soft_dev_t *dev,
                                              const soft_pkt_t *pkt)
{
    soft_rstate_t *rs = &dev->rstate[dev->rs_hint];
    uint32_t h, i;

    if (rs->used && soft_rstate_is(rs, pkt)) {
        return rs;
    }
    h = soft_rstate_hash(pkt->src_pid, pkt->src_inst, pkt->src_qpn);
    for (i = 0; i < SOFT_RSTATE_SLOTS; ++i) {
        rs = &dev->rstate[(h + i) % SOFT_RSTATE_SLOTS];
        if (!rs->used) {
            return NULL;
        }
        if (soft_rstate_is(rs, pkt)) {
            dev->rs_hint = (h + i) % SOFT_RSTATE_SLOTS;
            return rs;
        }
    }
    return NULL;
}

static soft_rstate_t *soft_rstate_get(soft_dev_t *dev, const soft_pkt_t *pkt)
{
    uint32_t h = soft_rstate_hash(pkt->src_pid, pkt->src_inst, pkt->src_qpn);
    soft_rstate_t *rs, *free_rs = NULL;
    uint32_t i;

    for (i = 0; i < SOFT_RSTATE_SLOTS; ++i) {
        rs = &dev->rstate[(h + i) % SOFT_RSTATE_SLOTS];
        if (!rs->used) {
            free_rs = rs;
            break;
        }
        if ((rs->pid == pkt->src_pid) && (rs->inst == pkt->src_inst) &&
            (rs->dci == pkt->src_qpn)) {
            return rs;
        }
    }
    if (free_rs == NULL) {
        if (!soft_rstate_gc(dev)) {
            return NULL;
        }
        return soft_rstate_get(dev, pkt);
    }
    free_rs->peer = soft_peer_get(dev, pkt->src_pid, pkt->src_inst,
                                  pkt->src_token);
    if (free_rs->peer == NULL) {
        return NULL;
    }
    /* its port's LID, read once: mapping the port (for the replies) */
    free_rs->slid         = (soft_peer_map(dev, free_rs->peer) != NULL) ?
                                free_rs->peer->hdr->lid :
                                0;
    free_rs->used         = 1;
    free_rs->pid          = pkt->src_pid;
    free_rs->inst         = pkt->src_inst;
    free_rs->dci          = pkt->src_qpn;
    free_rs->gen          = pkt->gen;
    free_rs->e            = pkt->ack_base;
    free_rs->cur_off      = 0;
    free_rs->msg_err      = 0;
    free_rs->have_recv    = 0;
    free_rs->msg_status   = SOFT_DONE_NONE;
    free_rs->atomic_valid = 0;
    free_rs->wack_hold    = 0;
    free_rs->line_gen     = 0;
    return free_rs;
}

/* A receive completion of the DCT was lost (CQ overrun): the DCT goes to
 * error. */
static void soft_resp_dct_overrun(soft_dev_t *dev, soft_qp_t *dct)
{
    __atomic_store_n(&dct->super.state, DCX_QPS_ERR, __ATOMIC_RELAXED);
    soft_direct_dct_publish(dev, dct, 0);
}

/* Completes receive wr_id of the DCT; a CQ overrun puts the DCT in
 * error. */
static void soft_resp_cqe(soft_dev_t *dev, soft_qp_t *dct,
                          const soft_rstate_t *rs, uint64_t wr_id,
                          uint8_t status, uint8_t opcode, uint16_t flags,
                          uint32_t imm, uint32_t byte_len)
{
    dcx_wc_t wc;

    memset(&wc, 0, sizeof(wc));
    wc.wr_id    = wr_id;
    wc.status   = status;
    wc.opcode   = opcode;
    wc.flags    = flags;
    wc.imm      = imm;
    wc.byte_len = byte_len;
    wc.qp_num   = dct->super.qp_num;
    wc.src_qp   = rs->dci;
    wc.slid     = rs->slid;
    if (soft_cq_push(dct->cq, &wc, NULL, 0) != 0) {
        soft_resp_dct_overrun(dev, dct);
    }
}

static void soft_resp_recv_cqe(soft_dev_t *dev, soft_qp_t *dct,
                               soft_rstate_t *rs, uint8_t status,
                               uint8_t opcode, uint16_t flags, uint32_t imm,
                               uint32_t byte_len)
{
    rs->have_recv = 0;
    soft_resp_cqe(dev, dct, rs, rs->recv.wr_id, status, opcode, flags, imm,
                  byte_len);
}

/* Drops the receive held for an abandoned message. */
static inline void soft_rstate_abandon(soft_dev_t *dev, soft_rstate_t *rs)
{
    if (rs->tm.mode != 0) {
        soft_tm_abandon(dev, rs);
    }
    if (rs->have_recv && (rs->dct != NULL)) {
        soft_resp_recv_cqe(dev, rs->dct, rs, DCX_WC_WR_FLUSH_ERR, DCX_WC_RECV,
                           0, 0, 0);
    }
    rs->have_recv = 0;
    rs->cur_off   = 0;
    rs->msg_err   = 0;
}

/* The requester completed everything before ack_base, which is past the
 * message rs expects (its DCI went to other targets since, or gave up on
 * that message): what is held of it is dropped, ack_base is next. */
static inline void soft_rstate_resync(soft_dev_t *dev, soft_rstate_t *rs,
                                      uint32_t ack_base)
{
    soft_rstate_abandon(dev, rs);
    rs->e          = ack_base;
    rs->msg_status = SOFT_DONE_NONE;
}

void soft_resp_flush_dct(soft_dev_t *dev, soft_qp_t *dct)
{
    uint32_t i;

    for (i = 0; i < SOFT_RSTATE_SLOTS; ++i) {
        if (dev->rstate[i].used && (dev->rstate[i].dct == dct)) {
            soft_rstate_abandon(dev, &dev->rstate[i]);
        }
    }
}

void soft_resp_forget_dct(soft_dev_t *dev, soft_qp_t *dct)
{
    uint32_t i;

    for (i = 0; i < SOFT_RSTATE_SLOTS; ++i) {
        if (dev->rstate[i].used && (dev->rstate[i].dct == dct)) {
            if (dev->rstate[i].tm.mode != 0) {
                soft_tm_abandon(dev, &dev->rstate[i]);
            }
            dev->rstate[i].have_recv = 0;
            dev->rstate[i].dct       = NULL;
        }
    }
}

/* The region a request names, if it grants 'access' over [addr, addr +
 * len) and the DCT allows it; NULL otherwise.  Called for every packet
 * that touches memory, right before the copy: a region deregistered or
 * invalidated since the message began refuses the rest of it. */
static inline soft_mr_t *soft_resp_remote(soft_dev_t *dev, soft_qp_t *dct,
                                          uint32_t rkey, uint32_t access,
                                          uint64_t addr, uint64_t len)
{
    static soft_mr_t no_memory; /* a zero-length access: never read */
    soft_mr_t *mr;

    /* A zero-length RDMA accesses no memory: as on InfiniBand its R_Key and
     * address are not validated; the DCT's access rights still are. */
    if ((len == 0) && (dct->access & access)) {
        return &no_memory;
    }

    mr = soft_key_lookup(dev, rkey);
    if ((mr == NULL) || !(dct->access & access)) {
        return NULL;
    }
    if (mr->mkey != NULL) { /* strided: every entry under [addr, +len) */
        if (soft_mkey_check(dev, mr, addr, len, access) != 0) {
            return NULL;
        }
        return mr;
    }
    if (!(mr->super.access & access) || (addr < mr->start) ||
        (addr > mr->end) || (len > mr->end - addr)) {
        return NULL;
    }
    return mr;
}

/* soft_resp_remote, counting a refusal */
static soft_mr_t *soft_resp_check_remote(soft_dev_t *dev, soft_qp_t *dct,
                                         const soft_pkt_t *pkt, uint32_t access,
                                         uint64_t addr, uint64_t len)
{
    soft_mr_t *mr = soft_resp_remote(dev, dct, pkt->rkey, access, addr, len);

    if (mr == NULL) {
        dev->stats.remote_access_errors++;
    }
    return mr;
}

/* The held receive's buffers are still registered for local write; sums
 * their length into *len_p.  Checked at every packet of a message: a
 * region deregistered or invalidated meanwhile is not written. */
static int soft_resp_recv_ok(soft_dev_t *dev, soft_rstate_t *rs,
                             const dcx_pd_t *pd, uint64_t *len_p)
{
    uint64_t len = 0;
    unsigned i;

    for (i = 0; i < rs->recv.num_sge; ++i) {
        if (!soft_sge_ok(dev, &rs->recv.sge[i], DCX_ACCESS_LOCAL_WRITE, pd)) {
            return 0;
        }
        len += rs->recv.sge[i].length;
    }
    *len_p = len;
    return 1;
}

static void soft_resp_send_op(soft_dev_t *dev, soft_qp_t *dct,
                              soft_rstate_t *rs, const soft_pkt_t *pkt,
                              const void *payload, int imm)
{
    uint64_t recv_len = 0;

    if (dct->srq->tm != NULL) {
        soft_tm_send_op(dev, dct, rs, pkt, payload);
        return;
    }
    if ((rs->cur_off == 0) && !soft_resp_take_recv(dev, dct, rs, pkt)) {
        return;
    }
    if (!rs->msg_err) {
        if (!soft_resp_recv_ok(dev, rs, dct->srq->super.pd, &recv_len)) {
            soft_resp_recv_cqe(dev, dct, rs, DCX_WC_LOC_PROT_ERR, DCX_WC_RECV,
                               0, 0, 0);
            soft_resp_nak(dev, rs, pkt, DCX_WC_REM_OP_ERR);
            goto skip;
        }
        if (pkt->total_len > recv_len) {
            soft_resp_recv_cqe(dev, dct, rs, DCX_WC_LOC_LEN_ERR, DCX_WC_RECV, 0,
                               0, 0);
            soft_resp_nak(dev, rs, pkt, DCX_WC_REM_INV_REQ_ERR);
            goto skip;
        }
        soft_sge_scatter(dev, payload, rs->recv.sge, rs->recv.num_sge,
                         pkt->offset, pkt->len);
    }
skip:
    rs->cur_off += pkt->len;
    if (pkt->flags & SOFT_PKT_LAST) {
        if (!rs->msg_err) {
            soft_resp_recv_cqe(dev, dct, rs, DCX_WC_SUCCESS, DCX_WC_RECV,
                               imm ? DCX_WC_FLAG_WITH_IMM : 0,
                               imm ? pkt->imm : 0, (uint32_t)pkt->total_len);
            soft_resp_ack(dev, rs, pkt);
        }
        soft_resp_finish(rs);
    }
}

static void soft_resp_write_op(soft_dev_t *dev, soft_qp_t *dct,
                               soft_rstate_t *rs, const soft_pkt_t *pkt,
                               const void *payload, int imm)
{
    soft_mr_t *mr;

    if ((rs->cur_off == 0) && !rs->msg_err) {
        if (soft_resp_check_remote(dev, dct, pkt, DCX_ACCESS_REMOTE_WRITE,
                                   pkt->raddr, pkt->total_len) == NULL) {
            soft_resp_nak(dev, rs, pkt, DCX_WC_REM_ACCESS_ERR);
        } else if (imm && !soft_resp_take_recv(dev, dct, rs, pkt)) {
            return;
        }
    }
    if (!rs->msg_err && (pkt->len > 0)) {
        mr = soft_resp_check_remote(dev, dct, pkt, DCX_ACCESS_REMOTE_WRITE,
                                    pkt->raddr + pkt->offset, pkt->len);
        if ((mr == NULL) || (soft_key_write(dev, mr, pkt->raddr + pkt->offset,
                                            payload, pkt->len) != 0)) {
            if (mr != NULL) {
                dev->stats.remote_access_errors++;
            }
            dcx_debug("%s: rdma write of %u bytes at 0x%llx (rkey 0x%x): "
                      "region gone or memory not accessible",
                      dev->super.caps.name, pkt->len,
                      (unsigned long long)(pkt->raddr + pkt->offset),
                      pkt->rkey);
            soft_resp_nak(dev, rs, pkt, DCX_WC_REM_ACCESS_ERR);
        }
    }
    rs->cur_off += pkt->len;
    if (pkt->flags & SOFT_PKT_LAST) {
        if (!rs->msg_err) {
            if (imm) {
                soft_resp_recv_cqe(dev, dct, rs, DCX_WC_SUCCESS,
                                   DCX_WC_RECV_RDMA_WITH_IMM,
                                   DCX_WC_FLAG_WITH_IMM, pkt->imm,
                                   (uint32_t)pkt->total_len);
            }
            soft_resp_ack(dev, rs, pkt);
        }
        soft_resp_finish(rs);
    }
}

/* One READ response carrying 'len' bytes at byte 'off' of the message,
 * read from the region the request names; a region that is gone or memory
 * that faults turns the response into a NAK.  Returns 0 or EFAULT. */
static int soft_resp_read_resp(soft_dev_t *dev, soft_qp_t *dct,
                               soft_rstate_t *rs, const soft_pkt_t *req,
                               uint64_t off, uint32_t len)
{
    soft_port_hdr_t *hdr = soft_peer_map(dev, rs->peer);
    uint64_t addr        = req->raddr + off;
    soft_pkt_t *pkt;
    soft_mr_t *mr;
    void *payload;
    uint64_t pos;
    int ret = 0;

    mr = soft_resp_check_remote(dev, dct, req, DCX_ACCESS_REMOTE_READ, addr,
                                len);
    if (mr == NULL) {
        return EFAULT;
    }
    if ((hdr == NULL) || __atomic_load_n(&hdr->killed, __ATOMIC_RELAXED) ||
        (len > hdr->resp.payload)) {
        return 0;
    }
    pkt = soft_ring_reserve_c(hdr, &hdr->resp, dev->pid,
                              &rs->peer->resp_freed_seen, &payload, &pos);
    if (pkt == NULL) {
        dev->stats.resp_drops++;
        return 0;
    }
    memset(pkt, 0, sizeof(*pkt));
    if ((len > 0) && (soft_key_read(dev, mr, payload, addr, len) != 0)) {
        /* the slot is ours: it carries the NAK instead */
        dev->stats.remote_access_errors++;
        dcx_debug("%s: rdma read of %u bytes at 0x%llx (rkey 0x%x): region "
                  "gone or memory not accessible",
                  dev->super.caps.name, len, (unsigned long long)addr,
                  req->rkey);
        pkt->op     = SOFT_OP_NAK;
        pkt->status = DCX_WC_REM_ACCESS_ERR;
        len         = 0;
        ret         = EFAULT;
    } else {
        pkt->op     = SOFT_OP_READ_RESP;
        pkt->flags  = (off + len == req->total_len) ? SOFT_PKT_LAST : 0;
        pkt->offset = off;
    }
    pkt->len       = len;
    pkt->src_pid   = dev->pid;
    pkt->src_inst  = (uint16_t)dev->inst;
    pkt->src_token = dev->token;
    pkt->src_qpn   = req->dst_qpn;
    pkt->dst_qpn   = req->src_qpn;
    pkt->msn       = req->msn;
    pkt->total_len = req->total_len;
    dev->stats.futex_wakes += soft_ring_publish(hdr, &hdr->resp, pos);
    dev->stats.tx_packets++;
    dev->stats.tx_bytes += len;
    return ret;
}

/* Answers one READ request packet: its range (args[0] bytes from offset)
 * goes back as a train of responses of at most args[1] bytes each, one per
 * response slot the requester reserved.  Every response is checked against
 * the region (re-reads of a retransmitted request too). */
static void soft_resp_read_data(soft_dev_t *dev, soft_qp_t *dct,
                                soft_rstate_t *rs, const soft_pkt_t *pkt)
{
    uint64_t end  = pkt->offset + pkt->args[0];
    uint64_t step = pkt->args[1];
    uint64_t off  = pkt->offset;
    uint64_t len;

    if (step == 0) {
        step = pkt->args[0];
    }
    do {
        len = end - off;
        if (len > step) {
            len = step;
        }
        if (soft_resp_read_resp(dev, dct, rs, pkt, off, (uint32_t)len) != 0) {
            if (pkt->msn == rs->e) {
                soft_resp_nak(dev, rs, pkt, DCX_WC_REM_ACCESS_ERR);
            } else {
                soft_resp_send(dev, rs, pkt, SOFT_OP_NAK, DCX_WC_REM_ACCESS_ERR,
                               0, 0, NULL, 0, 0);
            }
            return;
        }
        off += len;
    } while (off < end);
}

static void soft_resp_read_op(soft_dev_t *dev, soft_qp_t *dct,
                              soft_rstate_t *rs, const soft_pkt_t *pkt)
{
    uint64_t chunk = pkt->args[0];

    if ((rs->cur_off == 0) && !rs->msg_err &&
        ((pkt->offset + chunk > pkt->total_len) ||
         (soft_resp_check_remote(dev, dct, pkt, DCX_ACCESS_REMOTE_READ,
                                 pkt->raddr, pkt->total_len) == NULL))) {
        soft_resp_nak(dev, rs, pkt, DCX_WC_REM_ACCESS_ERR);
    }
    if (!rs->msg_err) {
        soft_resp_read_data(dev, dct, rs, pkt);
    }
    rs->cur_off += chunk;
    if (pkt->offset + chunk >= pkt->total_len) {
        soft_resp_finish(rs);
    }
}

static void soft_resp_atomic_op(soft_dev_t *dev, soft_qp_t *dct,
                                soft_rstate_t *rs, const soft_pkt_t *pkt)
{
    unsigned size = pkt->atomic_size;
    soft_mr_t *mr;
    uint64_t res;
    int ret;

    mr = soft_resp_check_remote(dev, dct, pkt, DCX_ACCESS_REMOTE_ATOMIC,
                                pkt->raddr, size);
    if (mr == NULL) {
        soft_resp_nak(dev, rs, pkt, DCX_WC_REM_ACCESS_ERR);
    } else if (!soft_atomic_valid(pkt->op, size, dct->ext_atomic_max) ||
               (pkt->raddr % size)) {
        soft_resp_nak(dev, rs, pkt, DCX_WC_REM_INV_REQ_ERR);
    } else if ((ret = soft_key_atomic(dev, mr, pkt, soft_atomic_exec, &res)) !=
               0) {
        if (ret == EINVAL) {
            soft_resp_nak(dev, rs, pkt, DCX_WC_REM_INV_REQ_ERR);
        } else {
            dev->stats.remote_access_errors++;
            soft_resp_nak(dev, rs, pkt, DCX_WC_REM_ACCESS_ERR);
        }
    } else {
        unsigned slot = rs->at_next;

        rs->at_next      = (uint8_t)((slot + 1) % SOFT_ATOMIC_SAVED);
        rs->at_msn[slot] = pkt->msn;
        rs->at_res[slot] = res;
        rs->atomic_valid |= 1u << slot;
        soft_resp_send(dev, rs, pkt, SOFT_OP_ATOMIC_RESP, 0, res, 0, NULL, 0,
                       SOFT_PKT_LAST);
    }
    soft_resp_finish(rs);
}

int dcx_soft_dct_set_ext_atomics(dcx_qp_t *qp_, uint8_t max_bytes)
{
    soft_qp_t *qp = (soft_qp_t *)qp_;

    if ((qp->super.type != DCX_QPT_DCT) ||
        ((max_bytes != 0) && (max_bytes != 4) && (max_bytes != 8))) {
        dcx_error("%s: qp 0x%x: extended atomics of %u bytes at most: not a "
                  "DCT, or not 0, 4 or 8",
                  qp->dev->super.caps.name, qp->super.qp_num, max_bytes);
        return EINVAL;
    }
    soft_lock(&qp->dev->lock);
    qp->ext_atomic_max = max_bytes;
    if (qp->super.state != DCX_QPS_ERR) {
        /* initiators executing atomics themselves read it there */
        soft_direct_dct_publish(qp->dev, qp, 1);
    }
    soft_unlock(&qp->dev->lock);
    return 0;
}

/* A request for a message already handled: answer it again. */
static void soft_resp_duplicate(soft_dev_t *dev, soft_qp_t *dct,
                                soft_rstate_t *rs, const soft_pkt_t *pkt,
                                unsigned opflags)
{
    int is_prev = (pkt->msn == rs->e - 1);

    if (is_prev && (rs->msg_status != DCX_WC_SUCCESS) &&
        (rs->msg_status != SOFT_DONE_NONE)) {
        if (pkt->flags & SOFT_PKT_LAST) {
            soft_resp_send(dev, rs, pkt, SOFT_OP_NAK, (uint8_t)rs->msg_status,
                           0, 0, NULL, 0, 0);
        }
        return;
    }
    if (opflags & SOFT_OPF_ATOMIC) {
        unsigned slot;

        for (slot = 0; slot < SOFT_ATOMIC_SAVED; ++slot) {
            if ((rs->atomic_valid & (1u << slot)) &&
                (rs->at_msn[slot] == pkt->msn)) {
                soft_resp_send(dev, rs, pkt, SOFT_OP_ATOMIC_RESP, 0,
                               rs->at_res[slot], 0, NULL, 0, SOFT_PKT_LAST);
                break;
            }
        }
        return;
    }
    if (opflags & SOFT_OPF_READ) {
        soft_resp_read_data(dev, dct, rs, pkt); /* reads are idempotent */
        return;
    }
    if (pkt->flags & SOFT_PKT_LAST) {
        soft_resp_send(dev, rs, pkt, SOFT_OP_ACK, 0, 0, 0, NULL, 0, 0);
    }
}

/* The whole header of a light packet (soft_pkt_t): a single packet at
 * offset 0 without checksum or delay (a one-line packet's token whole
 * only once soft_line_token filled it in). */
static __attribute__((noinline)) void soft_pkt_expand(const soft_pkt_t *light,
                                                      soft_pkt_t *full)
{
    memset(full, 0, sizeof(*full));
    memcpy(full, light, offsetof(soft_pkt_t, offset));
    full->flags &= (uint8_t) ~(SOFT_PKT_LIGHT | SOFT_PKT_CSUM | SOFT_PKT_FAR);
    full->deliver_ns = 0;
    full->total_len  = light->len;
}

/* The port of a short one-line packet expanded into full, whose token
 * carries only its low 56 bits: the port of that name the responder
 * knows, as the sender expects (its DCI's previous packet came here, with
 * the whole token); the source's state first (a hash), the list of ports
 * if it has none.  NULL if it knows none. */
static soft_peer_t *soft_line_short_peer(soft_dev_t *dev,
                                         const soft_pkt_t *full)
{
    soft_rstate_t *rs = soft_rstate_find(dev, full);

    if ((rs != NULL) &&
        (((rs->peer->token ^ full->src_token) & SOFT_LINE_TOKEN) == 0)) {
        return rs->peer;
    }
    return soft_peer_known(dev, full->src_pid, full->src_inst, full->src_token,
                           SOFT_LINE_TOKEN);
}

/* The port of a keyless one-line packet expanded into full, whose DC key
 * and token are filled in here: only where the source's state says that
 * the DCI's last whole packet passed the key check of the DCT it names,
 * as it was when the check was made (line_gen), whose key the packet
 * then has (soft_wire.h).  NULL otherwise. */
static soft_peer_t *soft_line_keyless_peer(soft_dev_t *dev, soft_pkt_t *full)
{
    soft_rstate_t *rs = soft_rstate_find(dev, full);
    soft_qp_t *dct    = soft_dct_at(dev, full->dst_qpn);

    if ((rs == NULL) || (rs->gen != full->gen) || (dct == NULL) ||
        (rs->line_gen != dct->gen)) {
        return NULL;
    }
    full->dc_key = dct->dc_key;
    return rs->peer;
}

/* The source port of a one-line packet (soft_pkt_is_line) expanded into
 * full, and what the packet left out of the header filled in from it.  A
 * port the responder cannot name, or a keyless packet it cannot vouch for:
 * -1, and the packet is dropped as if lost, for the requester's
 * retransmission (whole) to deliver. */
static int soft_line_source(soft_dev_t *dev, soft_pkt_t *full)
{
    soft_peer_t *peer = soft_line_is_keyless(full->len) ?
                            soft_line_keyless_peer(dev, full) :
                            soft_line_short_peer(dev, full);

    if (peer == NULL) {
        dev->stats.line_drops++;
        dcx_debug("%s: dropping a one-line packet (%u B) of a source it "
                  "cannot name or vouch for (pid %u inst %u qp 0x%x to 0x%x "
                  "msn %u): its retransmission is whole",
                  dev->super.caps.name, full->len, full->src_pid,
                  full->src_inst, full->src_qpn, full->dst_qpn, full->msn);
        return -1;
    }
    full->src_token = peer->token;
    return 0;
}

/* The receive at the head of the SRQ takes 'len' bytes: every sge is
 * registered for local write (checked right before the copy, as for every
 * message) and they hold len bytes together; strided keys are left to the
 * general path. */
static inline int soft_resp_sge_ok(soft_dev_t *dev, const dcx_sge_t *sge,
                                   const dcx_pd_t *pd)
{
    soft_mr_t *mr = soft_key_find(dev, sge->lkey);

    return (mr != NULL) && (mr->mkey == NULL) && (mr->super.pd == pd) &&
           (mr->super.access & DCX_ACCESS_LOCAL_WRITE) &&
           (sge->addr >= mr->start) && (sge->addr <= mr->end) &&
           (sge->length <= mr->end - sge->addr);
}

static inline int soft_resp_recv_fits(soft_dev_t *dev, const soft_rwqe_t *wqe,
                                      const dcx_pd_t *pd, uint32_t len)
{
    uint64_t room = 0;
    unsigned i;

    if (wqe->num_sge == 1) { /* the transport's receives: one buffer */
        return (wqe->sge[0].length >= len) &&
               soft_resp_sge_ok(dev, &wqe->sge[0], pd);
    }
    for (i = 0; i < wqe->num_sge; ++i) {
        if (!soft_resp_sge_ok(dev, &wqe->sge[i], pd)) {
            return 0;
        }
        room += wqe->sge[i].length;
    }
    return room >= len;
}

/* Copies a message into the receive's buffers (soft_resp_recv_fits). */
static inline void soft_resp_recv_copy(const soft_rwqe_t *wqe,
                                       const uint8_t *data, uint32_t len)
{
    uint32_t chunk;
    unsigned i;

    if (wqe->num_sge == 1) { /* fits (checked): a small one, no call */
        soft_copy_small((uint8_t *)(uintptr_t)wqe->sge[0].addr, data, len);
        return;
    }
    for (i = 0; len > 0; ++i) {
        chunk = (wqe->sge[i].length < len) ? wqe->sge[i].length : len;
        memcpy((void *)(uintptr_t)wqe->sge[i].addr, data, chunk);
        data += chunk;
        len -= chunk;
    }
}

/* The receive completion of a fast-path SEND (soft_resp_fast), written in
 * the CQ in place: every field the transport reads, the rest zero. */
static inline void soft_resp_fast_cqe(soft_dev_t *dev, soft_qp_t *dct,
                                      const soft_pkt_t *pkt, uint64_t wr_id,
                                      uint16_t slid)
{
    soft_cqe_t *cqe = soft_cq_slot(dct->cq);

    if (cqe == NULL) {
        soft_cq_overrun(dct->cq, dct->super.qp_num);
        soft_resp_dct_overrun(dev, dct);
        return;
    }
    soft_cqe_fast_recv(cqe, DCX_WC_RECV, wr_id, dct->super.qp_num, pkt, slid);
    cqe->tm = NULL;
    soft_cq_commit(dct->cq);
}

/* Whether a large receive may complete in place on cq, whose poll runs
 * this pass and returns at most max completions (soft_ip.c, "Receives in
 * place"): returned by that poll, with room to number it */
static inline int soft_resp_place_ok(const soft_cq_t *cq, uint32_t max)
{
    return (cq->tail - cq->head < max) &&
           (cq->tail - cq->head < cq->super.cqe) &&
           (cq->ip_made - __atomic_load_n(&cq->ip_released, __ATOMIC_RELAXED) <
            SOFT_IP_MAX);
}

/* The receive completion of a fast-path SEND left in its request slot
 * (payload), kept by the ring's clears until the poller releases it: a
 * RECV, or on a TM SRQ what soft_tm_fast_opcode() found (tm_opcode) */
static inline void soft_resp_place(soft_dev_t *dev, soft_qp_t *dct,
                                   const soft_pkt_t *pkt, uint64_t wr_id,
                                   const void *payload, uint8_t tm_opcode,
                                   uint16_t slid)
{
    soft_cq_t *cq   = dct->cq;
    soft_cqe_t *cqe = soft_cq_slot(cq); /* room: soft_resp_place_ok */

    soft_cqe_fast_recv(cqe, (tm_opcode != 0) ? tm_opcode : DCX_WC_RECV, wr_id,
                       dct->super.qp_num, pkt, slid);
    cqe->wc.flags |= DCX_WC_FLAG_IN_PLACE;
    cqe->wc.data = payload;
    cqe->tm = (tm_opcode != 0) ? soft_tm_fast_count(dct->srq->tm, tm_opcode) :
                                 NULL;
    cqe->tm_flags = SOFT_TMC_UNEXP; /* read only where tm is set */

    cq->ip_pos[cq->ip_made % SOFT_IP_MAX] = dev->hdr->req.head;
    cq->ip_made++;
    dev->ip_maybe = 1;
    dev->stats.recv_in_place++;
    soft_cq_commit(cq);
}

/* The responder's common case in one pass: a single-packet SEND (plain
 * SRQ, a receive posted that takes it; on a TM SRQ, one that goes to an
 * SRQ buffer unmatched, soft_tm_fast_opcode) or RDMA WRITE (of at least
 * one byte into a plain MR) that is the next message expected from a source
 * already known, on a DCT that is up, with the right DC key.  The receive
 * is used in place (no copy of it is held), the data copied, the CQE pushed
 * and the message acknowledged (in the requester's ack table when it asks
 * for that).  Returns 0 with nothing done for everything else: the general
 * path then handles the packet (and produces the errors). */
static inline int soft_resp_fast(soft_dev_t *dev, const soft_pkt_t *pkt,
                                 const void *payload)
{
    uint32_t len = pkt->len;
    const soft_rwqe_t *wqe;
    soft_pkt_t full;
    soft_rstate_t *rs;
    soft_srq_t *srq;
    soft_qp_t *dct;
    soft_mr_t *mr;
    soft_ack_t *a;
    uint8_t tm_opcode;

    if ((len > dev->limits.mtu) ||
        ((dct = soft_dct_at(dev, pkt->dst_qpn)) == NULL) ||
        (dct->super.state == DCX_QPS_ERR) ||
        ((rs = soft_rstate_find(dev, pkt)) == NULL) || (rs->gen != pkt->gen) ||
        (rs->cur_off != 0) || rs->msg_err || rs->have_recv) {
        return 0;
    }
    /* the key: a keyless one-line packet's is the one the DCI's last whole
     * packet here passed with (soft_wire.h), which that packet records */
    if (soft_pkt_is_keyless(pkt->flags, len) ? (rs->line_gen != dct->gen) :
                                               (pkt->dc_key != dct->dc_key)) {
        return 0;
    }
    rs->line_gen = dct->gen;
    if ((int32_t)(pkt->ack_base - rs->e) > 0) {
        /* a DCI that sent to other targets since its last message here
         * (it goes to one target at a time): resynchronised as the general
         * path does */
        soft_rstate_resync(dev, rs, pkt->ack_base);
    }
    if (rs->e != pkt->msn) {
        return 0;
    }
    /* the ack's line (one the requester polls) is fetched while the
     * message executes, so its store at the pass's end does not wait */
    a = (pkt->flags & SOFT_PKT_WACK) ? soft_resp_ack_entry(dev, rs, pkt) : NULL;
    if (a != NULL) {
        soft_prefetchw(a);
    }
    if (pkt->op == DCX_WR_RDMA_WRITE) {
        mr = soft_resp_remote(dev, dct, pkt->rkey, DCX_ACCESS_REMOTE_WRITE,
                              pkt->raddr, len);
        if ((len == 0) || (mr == NULL) || (mr->mkey != NULL) ||
            (soft_key_write(dev, mr, pkt->raddr, payload, len) != 0)) {
            return 0; /* the general path writes again, or refuses */
        }
    } else if ((pkt->op == DCX_WR_SEND) || (pkt->op == DCX_WR_SEND_IMM)) {
        srq       = dct->srq;
        /* a TM SRQ: only what goes to an SRQ buffer unmatched (tm_opcode
         * is not 0 exactly when the SRQ has a tag list) */
        tm_opcode = 0;
        if ((srq->head == srq->tail) ||
            ((srq->tm != NULL) &&
             !(tm_opcode = soft_tm_fast_opcode(srq->tm, pkt, payload)))) {
            return 0;
        }
        wqe = soft_srq_head(srq);
        if (!soft_resp_recv_fits(dev, wqe, srq->super.pd, len)) {
            return 0;
        }
        if ((len >= SOFT_IP_MIN) && (dct->cq == dev->ip_cq) && srq->in_place &&
            (srq->cq == dct->cq) && soft_resp_place_ok(dct->cq, dev->ip_max)) {
            /* the message stays in its slot (a light packet's payload is
             * aligned as a full one's), on the CQ whose polls release it */
            soft_srq_pop(srq);
            soft_resp_place(dev, dct, pkt, wqe->wr_id, payload, tm_opcode,
                            rs->slid);
        } else {
            soft_resp_recv_copy(wqe, payload, len);
            soft_srq_pop(srq);
            if (tm_opcode != 0) {
                soft_tm_fast_wc(srq, dct, pkt, tm_opcode, wqe->wr_id, rs->slid);
            } else {
                soft_resp_fast_cqe(dev, dct, pkt, wqe->wr_id, rs->slid);
            }
        }
    } else {
        return 0;
    }
    rs->msg_status = DCX_WC_SUCCESS;
    rs->e++;
    dev->stats.resp_fast++;
    /* the acknowledgement last, after everything local: held back until
     * the end of the pass (soft_resp_ack_flush), so that several messages
     * of one DCI served in a pass cost one store in the requester's table */
    if (a != NULL) {
        if ((dev->ack_line != NULL) && (dev->ack_line != a)) {
            soft_resp_ack_flush(dev);
        }
        dev->ack_line = a;
        dev->ack_word = soft_ack_word(pkt);
        if (pkt->flags & SOFT_PKT_WKICK) {
            dev->ack_kick = rs->peer->hdr;
        }
        dev->stats.acks_in_table++;
        return 1;
    }
    if (dev->ack_line != NULL) {
        soft_resp_ack_flush(dev);
    }
    if (pkt->flags & SOFT_PKT_LIGHT) {
        soft_pkt_expand(pkt, &full); /* the answer goes to rs's port */
        pkt = &full;
    }
    soft_resp_send(dev, rs, pkt, SOFT_OP_ACK, 0, 0, 0, NULL, 0, 0);
    return 1;
}

void soft_resp_packet(soft_dev_t *dev, const soft_pkt_t *pkt,
                      const void *payload)
{
    const soft_opinfo_t *op;
    soft_pkt_t full;
    soft_rstate_t *rs;
    soft_qp_t *dct;
    int32_t d;

    /* the fast path's shape: a whole message in one packet without
     * checksum (a light one, by construction); inlined, one call site */
    if (((pkt->flags & (SOFT_PKT_FIRST | SOFT_PKT_LAST | SOFT_PKT_CSUM)) ==
         (SOFT_PKT_FIRST | SOFT_PKT_LAST)) &&
        ((pkt->flags & SOFT_PKT_LIGHT) ||
         ((pkt->offset == 0) && (pkt->total_len == pkt->len))) &&
        soft_resp_fast(dev, pkt, payload)) {
        return;
    }
    if (pkt->flags & SOFT_PKT_LIGHT) {
        soft_pkt_expand(pkt, &full);
        if (soft_pkt_is_line(pkt->flags, pkt->len) &&
            (soft_line_source(dev, &full) != 0)) {
            return;
        }
        pkt = &full;
    }
    if (dev->ack_line != NULL) { /* answers never overtake a held ack */
        soft_resp_ack_flush(dev);
    }
    if ((pkt->flags & SOFT_PKT_CSUM) && (soft_pkt_csum(pkt) != pkt->csum)) {
        dev->stats.corrupt_drops++;
        return;
    }
    if (pkt->flags & SOFT_PKT_DGRAM) {
        soft_resp_dgram(dev, pkt, payload);
        return;
    }
    op = soft_op(pkt->op);
    if ((op == NULL) || (pkt->len > dev->limits.mtu) ||
        (pkt->offset > pkt->total_len) ||
        (pkt->len > pkt->total_len - pkt->offset) ||
        ((op->flags & SOFT_OPF_READ) &&
         (pkt->args[0] > pkt->total_len - pkt->offset))) {
        dcx_debug("%s: dropping malformed request (opcode %u)",
                  dev->super.caps.name, pkt->op);
        return;
    }
    dct = soft_resp_dct(dev, pkt);
    if (dct == NULL) {
        /* no keyless packet of the DCI is taken until a whole one passes */
        rs = soft_rstate_find(dev, pkt);
        if (rs != NULL) {
            rs->line_gen = 0;
        }
        return;
    }
    rs = soft_rstate_get(dev, pkt);
    if (rs == NULL) {
        return; /* no room to track the source: as if lost */
    }
    if (rs->gen != pkt->gen) {
        soft_rstate_abandon(dev, rs); /* the DCI number was reused */
        rs->gen          = pkt->gen;
        rs->e            = pkt->ack_base;
        rs->msg_status   = SOFT_DONE_NONE;
        rs->atomic_valid = 0;
        rs->wack_hold    = 0;
    }
    rs->line_gen = dct->gen; /* it passed the key check */
    if ((int32_t)(pkt->ack_base - rs->e) > 0) {
        soft_rstate_resync(dev, rs, pkt->ack_base);
    }
    d = (int32_t)(pkt->msn - rs->e);
    if (d < 0) {
        soft_resp_duplicate(dev, dct, rs, pkt, op->flags);
        return;
    }
    if (d > 0) {
        return; /* a message before this one was lost */
    }
    if (pkt->offset != rs->cur_off) {
        if ((pkt->offset < rs->cur_off) && (op->flags & SOFT_OPF_READ) &&
            !rs->msg_err) {
            soft_resp_read_data(dev, dct, rs, pkt);
        }
        return;
    }

    switch (pkt->op) {
    case DCX_WR_SEND:
    case DCX_WR_SEND_IMM:
        soft_resp_send_op(dev, dct, rs, pkt, payload,
                          pkt->op == DCX_WR_SEND_IMM);
        break;
    case DCX_WR_RDMA_WRITE:
    case DCX_WR_RDMA_WRITE_IMM:
        soft_resp_write_op(dev, dct, rs, pkt, payload,
                           pkt->op == DCX_WR_RDMA_WRITE_IMM);
        break;
    case DCX_WR_RDMA_READ:
        soft_resp_read_op(dev, dct, rs, pkt);
        break;
    default:
        soft_resp_atomic_op(dev, dct, rs, pkt);
        break;
    }
}
