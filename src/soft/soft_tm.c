/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device tag matching: the tag list of a DCX_SRQ_TM SRQ, its list
 * operations, the matching of inbound messages, and the device rendezvous
 * (READ from the sender, FIN back to it).  Reference: section 9 of
 * docs/device-semantics.md.
 *
 * The soft device plays two parts that are separate on mlx5, and keeps
 * their views apart:
 *  - the library's (libmlx5): which list entries software owns.  An entry
 *    is owned from its ADD until every completion expected for it has been
 *    polled (one for its consumption or removal, one per signalled
 *    operation on it); only then can ADD hand its handle out again.  List
 *    operations stay outstanding in the operation queue until a signalled
 *    one at or after them is polled (ENOMEM at tm_max_ops outstanding).
 *  - the hardware's: the list in ADD order, each entry listed, consumed by
 *    a message, or removed; matching takes the oldest eligible listed entry
 *    with (msg_tag & mask) == tag.
 *
 * Operations execute when posted (rxe runs local operations the same way),
 * so a DEL posted after a message was matched finds the entry consumed and
 * completes with TM_ERR while the receive's completion arrives as well:
 * the race a DEL loses on hardware.
 *
 * Phase synchronisation (docs/device-semantics.md section 9.5): U counts
 * the unexpected tagged messages delivered, S is the last count software
 * gave (DCX_TM_OPF_SYNC on any operation).  An entry added while S != U
 * is held: it does not match until an operation brings S == U.  Otherwise
 * a message could match a receive that software posted before seeing an
 * earlier unexpected message with the same tag, and the two would
 * complete out of order.
 *
 * Completion flags follow libmlx5 (cq.c handle_tag_matching): ADD and DEL
 * completions carry TM_SYNC_REQ when U at the operation differs from the
 * count software gave with the entry's ADD; SYNC completions never do; an
 * unexpected completion does when more than 0x3fff unexpected messages were
 * polled since the count software last gave with an ADD.
 *
 * Modelling choices where hardware behaviour is not documented [INF]:
 *  - an expected eager larger than its buffer completes with LOC_LEN_ERR at
 *    the receiver and nothing is written; the sender's SEND succeeds
 *    (libmlx5 detects the small-message case the same way, after the
 *    hardware has acknowledged it), so truncation never breaks a DCI;
 *  - an entry buffer with a bad lkey gives LOC_PROT_ERR at the receiver and
 *    REM_OP_ERR at the sender, as for a plain SRQ receive;
 *  - a tagged message (or FIN) shorter than a TMH, one with an unknown
 *    TMH opcode, or a rendezvous request shorter than TMH+RVH+RAVH or
 *    longer than caps.tm_max_rndv_hdr is an invalid request:
 *    REM_INV_REQ_ERR at the sender, nothing consumed at the receiver; an
 *    untagged message (first byte NO_TAG) of any length from one byte on
 *    goes to an SRQ buffer whole;
 *  - the device READ of a rendezvous that fails (bad rkey: REM_ACCESS_ERR;
 *    dead or wrong sender, wrong DC key: RETRY_EXC_ERR; bad local buffer:
 *    LOC_PROT_ERR) ends the receive with that status in its second
 *    completion and no FIN is sent: the sender learns nothing from the
 *    device (on RC the receiving QP would go to error; over DC only this
 *    rendezvous fails) and cancels in software;
 *  - a FIN that cannot be delivered (sender gone after its data was read)
 *    is dropped after the retries: the receive already completed with its
 *    data, so no completion reports it; dcx_soft_tm_stats counts it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_tm.h"
#include "soft_tm_poll.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Completions
 * ------------------------------------------------------------------------ */
/* Library side: one expected completion of the entry was polled. */
static void soft_tm_release(soft_tm_t *tm, uint32_t idx, uint32_t gen)
{
    soft_tm_entry_t *e = &tm->e[idx];

    if ((e->gen != gen) || (e->expect_cqe == 0)) {
        return; /* already released (an unsignalled DEL lost the race) */
    }
    if (--e->expect_cqe != 0) {
        return;
    }
    e->next_free = SOFT_TM_NONE;
    if (tm->free_head == SOFT_TM_NONE) {
        tm->free_head = idx;
    } else {
        tm->e[tm->free_tail].next_free = idx;
    }
    tm->free_tail = idx;
}

/* soft_tm_polled's rest (soft_tm_poll.h): list operations and entries
 * retired, and an unexpected message counted when its completion retires
 * more than that */
void soft_tm_polled_rest(soft_cqe_t *cqe, dcx_wc_t *wc)
{
    soft_tm_t *tm = cqe->tm;

    if (cqe->tm_flags & SOFT_TMC_OP) {
        if ((int32_t)(cqe->tm_op + 1 - tm->op_retired) > 0) {
            tm->op_retired = cqe->tm_op + 1;
        }
    }
    if (cqe->tm_flags & SOFT_TMC_RELEASE) {
        soft_tm_release(tm, cqe->tm_entry, cqe->tm_gen);
    }
    if (cqe->tm_flags & SOFT_TMC_RELEASE2) {
        soft_tm_release(tm, cqe->tm_entry, cqe->tm_gen);
    }
    if (cqe->tm_flags & SOFT_TMC_UNEXP) {
        soft_tm_polled_unexp(tm, wc);
    }
}

/* ------------------------------------------------------------------------
 * List operations
 * ------------------------------------------------------------------------ */
static void soft_tm_unlink(soft_tm_t *tm, uint32_t idx)
{
    soft_tm_entry_t *e = &tm->e[idx];

    if (e->prev != SOFT_TM_NONE) {
        tm->e[e->prev].next = e->next;
    } else {
        tm->list_head = e->next;
    }
    if (e->next != SOFT_TM_NONE) {
        tm->e[e->next].prev = e->prev;
    } else {
        tm->list_tail = e->prev;
    }
    if (!e->eligible) {
        tm->held--;
    }
}

/* Hardware: software reported its count; held entries become eligible
 * once it has seen every unexpected message. */
static void soft_tm_sw_count(soft_tm_t *tm, uint16_t cnt)
{
    uint32_t idx;

    tm->hw_sw_cnt = cnt;
    if ((tm->held == 0) || (tm->hw_sw_cnt != tm->hw_unexp)) {
        return;
    }
    for (idx = tm->list_head; idx != SOFT_TM_NONE; idx = tm->e[idx].next) {
        tm->e[idx].eligible = 1;
    }
    tm->held = 0;
}

static void soft_tm_op_wc(soft_tm_t *tm, const dcx_tm_op_t *op, uint8_t opcode,
                          uint8_t status, int sync_req, uint32_t entry,
                          uint32_t gen, uint8_t flags)
{
    dcx_wc_t wc;

    memset(&wc, 0, sizeof(wc));
    wc.wr_id  = op->wr_id;
    wc.status = status;
    wc.opcode = opcode;
    wc.flags  = sync_req ? DCX_WC_FLAG_TM_SYNC_REQ : 0;
    soft_tm_push(tm, &wc, entry, gen, tm->op_posted - 1, flags | SOFT_TMC_OP);
}

static int soft_tm_add(soft_tm_t *tm, dcx_tm_op_t *op)
{
    uint32_t idx = tm->free_head;
    soft_tm_entry_t *e;

    if (idx == SOFT_TM_NONE) {
        dcx_debug("%s: tm srq %p add: tag list full (%u entries)",
                  soft_tm_name(tm), (void *)tm->srq, tm->max_tags);
        return ENOMEM;
    }
    e             = &tm->e[idx];
    tm->free_head = e->next_free;
    tm->op_posted++;
    if (op->flags & DCX_TM_OPF_SYNC) {
        tm->lib_unexp_out = op->unexpected_cnt;
        soft_tm_sw_count(tm, op->unexpected_cnt);
    }
    e->gen++;
    e->tag        = op->tag;
    e->mask       = op->mask;
    e->recv_wr_id = op->recv_wr_id;
    e->num_sge    = op->num_sge;
    e->sge        = op->sge;
    if (op->num_sge == 0) {
        memset(&e->sge, 0, sizeof(e->sge));
    }
    e->phase_cnt  = tm->lib_unexp_out;
    e->expect_cqe = 1 + !!(op->flags & DCX_TM_OPF_SIGNALED);
    e->state      = SOFT_TME_LISTED;
    e->eligible   = (tm->hw_sw_cnt == tm->hw_unexp);
    tm->held += !e->eligible;
    e->next = SOFT_TM_NONE;
    e->prev = tm->list_tail;
    if (tm->list_tail != SOFT_TM_NONE) {
        tm->e[tm->list_tail].next = idx;
    } else {
        tm->list_head = idx;
    }
    tm->list_tail = idx;
    op->handle    = idx;
    tm->stats.adds++;
    if (op->flags & DCX_TM_OPF_SIGNALED) {
        soft_tm_op_wc(tm, op, DCX_WC_TM_ADD, DCX_WC_SUCCESS,
                      tm->hw_unexp != e->phase_cnt, idx, e->gen,
                      SOFT_TMC_RELEASE);
    }
    return 0;
}

static int soft_tm_del(soft_tm_t *tm, dcx_tm_op_t *op)
{
    soft_tm_entry_t *e;
    int removed;

    if ((op->handle >= tm->max_tags) || (tm->e[op->handle].expect_cqe == 0)) {
        dcx_error("%s: tm srq %p del: handle %u is not a posted entry",
                  soft_tm_name(tm), (void *)tm->srq, op->handle);
        return EINVAL;
    }
    e = &tm->e[op->handle];
    tm->op_posted++;
    if (op->flags & DCX_TM_OPF_SYNC) {
        soft_tm_sw_count(tm, op->unexpected_cnt);
    }
    removed = (e->state == SOFT_TME_LISTED);
    if (removed) {
        soft_tm_unlink(tm, op->handle);
        e->state = SOFT_TME_REMOVED;
        tm->stats.dels++;
    } else {
        tm->stats.del_races++;
    }
    if (op->flags & DCX_TM_OPF_SIGNALED) {
        e->expect_cqe++;
        soft_tm_op_wc(tm, op, DCX_WC_TM_DEL,
                      removed ? DCX_WC_SUCCESS : DCX_WC_TM_ERR,
                      tm->hw_unexp != e->phase_cnt, op->handle, e->gen,
                      SOFT_TMC_RELEASE | (removed ? SOFT_TMC_RELEASE2 : 0));
    } else {
        /* as libmlx5: the handle is software's again at once */
        soft_tm_release(tm, op->handle, e->gen);
    }
    return 0;
}

/* dcx_srq_tm_rndv_src: the newest incomplete rendezvous of wr_id (a
 * receive's wr_id is not reused before software saw its completion) */
static int soft_tm_rndv_src(dcx_srq_t *srq_, uint64_t wr_id, void *addr,
                            size_t *len_p)
{
    soft_srq_t *srq = (soft_srq_t *)srq_;
    soft_tm_t *tm   = srq->tm;
    soft_dev_t *dev = tm->dev;
    soft_tm_inc_t *inc;
    soft_addr_t a;
    uint32_t i, k;

    if (*len_p < SOFT_ADDR_LEN) {
        dcx_error("%s: tm rndv src: buffer of %zu bytes, need %u",
                  soft_tm_name(tm), *len_p, SOFT_ADDR_LEN);
        return ENOSPC;
    }
    soft_lock(&dev->lock);
    for (i = 0; i < tm->max_tags; ++i) {
        k   = (tm->inc_pos + tm->max_tags - 1 - i) % tm->max_tags;
        inc = &tm->inc[k];
        if ((inc->peer == NULL) || (inc->wr_id != wr_id)) {
            continue;
        }
        memset(&a, 0, sizeof(a));
        a.magic   = SOFT_ADDR_MAGIC;
        a.uid     = dev->uid;
        a.host    = dev->host;
        a.fabric  = dev->fabric_hash;
        a.pid     = inc->peer->pid;
        a.inst    = (uint16_t)inc->peer->inst;
        a.token   = inc->peer->token;
        inc->peer = NULL;
        soft_unlock(&dev->lock);
        memcpy(addr, &a, sizeof(a));
        *len_p = SOFT_ADDR_LEN;
        return 0;
    }
    soft_unlock(&dev->lock);
    return ENOENT;
}

static int soft_tm_post(dcx_srq_t *srq_, dcx_tm_op_t *op)
{
    soft_srq_t *srq = (soft_srq_t *)srq_;
    soft_tm_t *tm   = srq->tm;
    int ret;

    if ((op->opcode >= DCX_TM_OP_LAST) ||
        (op->flags & ~(DCX_TM_OPF_SIGNALED | DCX_TM_OPF_SYNC)) ||
        ((op->opcode == DCX_TM_OP_ADD) && (op->num_sge > 1))) {
        dcx_error("%s: tm srq %p: bad list operation (opcode %u, flags 0x%x, "
                  "num_sge %u)",
                  soft_tm_name(tm), (void *)srq, op->opcode, op->flags,
                  op->num_sge);
        return EINVAL;
    }
    soft_lock(&tm->dev->lock);
    if (tm->op_posted - tm->op_retired >= tm->max_ops) {
        soft_unlock(&tm->dev->lock);
        dcx_debug("%s: tm srq %p: operation queue full (%u outstanding)",
                  soft_tm_name(tm), (void *)srq, tm->max_ops);
        return ENOMEM;
    }
    switch (op->opcode) {
    case DCX_TM_OP_ADD:
        ret = soft_tm_add(tm, op);
        break;
    case DCX_TM_OP_DEL:
        ret = soft_tm_del(tm, op);
        break;
    default:
        tm->op_posted++;
        if (op->flags & DCX_TM_OPF_SYNC) {
            soft_tm_sw_count(tm, op->unexpected_cnt);
        }
        tm->stats.syncs++;
        if (op->flags & DCX_TM_OPF_SIGNALED) {
            soft_tm_op_wc(tm, op, DCX_WC_TM_SYNC, DCX_WC_SUCCESS, 0,
                          SOFT_TM_NONE, 0, 0);
        }
        ret = 0;
        break;
    }
    soft_unlock(&tm->dev->lock);
    return ret;
}

/* ------------------------------------------------------------------------
 * Matching and placement
 * ------------------------------------------------------------------------ */
static uint32_t soft_tm_match(soft_tm_t *tm, uint64_t tag)
{
    uint32_t idx = soft_tm_find(tm, tag);

    if (idx != SOFT_TM_NONE) {
        soft_tm_unlink(tm, idx);
        tm->e[idx].state = SOFT_TME_CONSUMED;
    }
    return idx;
}

/* Local write access to a receive buffer; its total length in *len_p. */
static int soft_tm_buf_ok(soft_dev_t *dev, const dcx_sge_t *sge,
                          unsigned num_sge, const dcx_pd_t *pd, uint64_t *len_p)
{
    uint64_t len = 0;
    unsigned i;

    for (i = 0; i < num_sge; ++i) {
        if (!soft_sge_ok(dev, &sge[i], DCX_ACCESS_LOCAL_WRITE, pd)) {
            return 0;
        }
        len += sge[i].length;
    }
    *len_p = len;
    return 1;
}

static void soft_tm_msg_done(soft_rstate_t *rs)
{
    rs->tm.mode  = SOFT_TMM_NONE;
    rs->tm.entry = SOFT_TM_NONE;
    rs->tm.tm    = NULL;
}

/* A receive completion of the message on rs. */
static void soft_tm_msg_wc(soft_tm_t *tm, soft_qp_t *dct, soft_rstate_t *rs,
                           uint8_t status, uint8_t opcode, uint16_t flags,
                           uint32_t byte_len, uint64_t tag, uint32_t priv,
                           const soft_pkt_t *pkt, uint8_t release)
{
    soft_cqe_t *cqe = soft_tm_cqe(tm, dct->super.qp_num, rs->tm.entry,
                                  rs->tm.gen, 0, release);

    if (cqe == NULL) {
        return;
    }
    soft_tm_recv_wc(&cqe->wc, rs->recv.wr_id, status, opcode, flags, byte_len,
                    dct->super.qp_num, rs->dci);
    cqe->wc.tm_tag  = tag;
    cqe->wc.tm_priv = priv;
    cqe->wc.slid    = rs->slid; /* a ConnectX's CQE has it too */
    if ((pkt != NULL) && (pkt->op == DCX_WR_SEND_IMM) &&
        (status == DCX_WC_SUCCESS)) {
        cqe->wc.flags |= DCX_WC_FLAG_WITH_IMM;
        cqe->wc.imm = pkt->imm;
    }
    soft_cq_commit(tm->srq->cq);
}

/* The matched entry's buffer becomes the message's receive. */
static void soft_tm_hold_entry(soft_tm_t *tm, soft_rstate_t *rs, soft_qp_t *dct,
                               uint32_t idx)
{
    soft_tm_entry_t *e = &tm->e[idx];

    rs->recv.wr_id   = e->recv_wr_id;
    rs->recv.num_sge = e->num_sge;
    rs->recv.sge[0]  = e->sge;
    rs->dct          = dct;
    rs->tm.tm        = tm;
    rs->tm.entry     = idx;
    rs->tm.gen       = e->gen;
    tm->stats.matched++;
}

/* What the first packet of a message leads to. */
enum {
    SOFT_TMF_PLACE, /* place it (or skip it: error NAK sent) */
    SOFT_TMF_RNR    /* no SRQ buffer: RNR NAK sent, nothing consumed */
};

/* The message goes to an SRQ buffer, headers included.  A bad or short
 * buffer completes with an error and the sender gets a NAK. */
static int soft_tm_to_srq(soft_dev_t *dev, soft_tm_t *tm, soft_qp_t *dct,
                          soft_rstate_t *rs, const soft_pkt_t *pkt,
                          uint8_t wc_opcode)
{
    uint64_t len;

    if (!soft_resp_take_recv(dev, dct, rs, pkt)) {
        return SOFT_TMF_RNR;
    }
    rs->tm.tm    = tm;
    rs->tm.entry = SOFT_TM_NONE;
    if (!soft_tm_buf_ok(dev, rs->recv.sge, rs->recv.num_sge, dct->srq->super.pd,
                        &len)) {
        soft_tm_msg_wc(tm, dct, rs, DCX_WC_LOC_PROT_ERR, wc_opcode, 0, 0, 0, 0,
                       NULL, 0);
        rs->have_recv = 0;
        soft_resp_nak(dev, rs, pkt, DCX_WC_REM_OP_ERR);
    } else if (pkt->total_len > len) {
        soft_tm_msg_wc(tm, dct, rs, DCX_WC_LOC_LEN_ERR, wc_opcode, 0, 0, 0, 0,
                       NULL, 0);
        rs->have_recv = 0;
        soft_resp_nak(dev, rs, pkt, DCX_WC_REM_INV_REQ_ERR);
    } else {
        rs->tm.mode      = SOFT_TMM_SRQ;
        rs->tm.wc_opcode = wc_opcode;
    }
    return SOFT_TMF_PLACE;
}

/* First packet of an EAGER or RNDV message: match it. */
static int soft_tm_first(soft_dev_t *dev, soft_tm_t *tm, soft_qp_t *dct,
                         soft_rstate_t *rs, const soft_pkt_t *pkt,
                         const uint8_t *payload, uint8_t opcode)
{
    uint64_t va   = 0, buf_len;
    uint32_t rkey = 0, rlen = 0, idx;
    int ret;

    if (opcode == DCX_TMH_RNDV) {
        if ((pkt->total_len < DCX_TM_RNDV_LEN) ||
            (pkt->total_len > dev->super.caps.tm_max_rndv_hdr)) {
            dcx_debug("%s: tm: rendezvous request of %llu bytes (%u..%u): "
                      "invalid",
                      dev->super.caps.name, (unsigned long long)pkt->total_len,
                      DCX_TM_RNDV_LEN, dev->super.caps.tm_max_rndv_hdr);
            soft_resp_nak(dev, rs, pkt, DCX_WC_REM_INV_REQ_ERR);
            return SOFT_TMF_PLACE;
        }
        dcx_rvh_unpack(payload + DCX_TM_TMH_LEN, &va, &rkey, &rlen);
    }
    idx = soft_tm_match(tm, rs->tm.tag);
    if (idx == SOFT_TM_NONE) {
        ret = soft_tm_to_srq(dev, tm, dct, rs, pkt, DCX_WC_TM_RECV);
        if (rs->tm.mode == SOFT_TMM_SRQ) {
            tm->hw_unexp++;
            if (opcode == DCX_TMH_RNDV) {
                tm->stats.unexp_rndv++;
            } else {
                tm->stats.unexp_eager++;
            }
        }
        return ret;
    }
    soft_tm_hold_entry(tm, rs, dct, idx);
    if (!soft_tm_buf_ok(dev, rs->recv.sge, rs->recv.num_sge, dct->srq->super.pd,
                        &buf_len)) {
        soft_tm_msg_wc(tm, dct, rs, DCX_WC_LOC_PROT_ERR, DCX_WC_TM_RECV, 0, 0,
                       0, 0, NULL, SOFT_TMC_RELEASE);
        soft_resp_nak(dev, rs, pkt, DCX_WC_REM_OP_ERR);
        return SOFT_TMF_PLACE;
    }
    if (opcode == DCX_TMH_RNDV) {
        /* one packet (at most 64 bytes): ACKed when the caller ends it */
        rs->tm.mode = SOFT_TMM_DISCARD;
        if ((rlen <= buf_len) && (tm->rndv_free != SOFT_TM_NONE)) {
            soft_tm_msg_wc(tm, dct, rs, DCX_WC_SUCCESS, DCX_WC_TM_RECV,
                           DCX_WC_FLAG_TM_MATCH, 0, rs->tm.tag, rs->tm.app_ctx,
                           pkt, 0);
            soft_tm_rndv_start(tm, dct, rs, payload, rlen, va, rkey);
        } else if (pkt->total_len <= buf_len) {
            /* software reads and sends the FIN: give it the request */
            soft_sge_scatter(dev, payload, rs->recv.sge, rs->recv.num_sge, 0,
                             pkt->total_len);
            /* software answers with the FIN: it asks for the sender */
            tm->inc[tm->inc_pos].wr_id = rs->recv.wr_id;
            tm->inc[tm->inc_pos].peer  = rs->peer;
            tm->inc_pos                = (tm->inc_pos + 1) % tm->max_tags;
            soft_tm_msg_wc(tm, dct, rs, DCX_WC_TM_RNDV_INCOMPLETE,
                           DCX_WC_TM_RECV,
                           DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID,
                           (uint32_t)pkt->total_len, rs->tm.tag, rs->tm.app_ctx,
                           pkt, SOFT_TMC_RELEASE);
            tm->stats.rndv_sw++;
        } else {
            soft_tm_msg_wc(tm, dct, rs, DCX_WC_LOC_LEN_ERR, DCX_WC_TM_RECV, 0,
                           0, 0, 0, NULL, SOFT_TMC_RELEASE);
        }
        return SOFT_TMF_PLACE;
    }
    if (pkt->total_len - DCX_TM_TMH_LEN > buf_len) {
        soft_tm_msg_wc(tm, dct, rs, DCX_WC_LOC_LEN_ERR, DCX_WC_TM_RECV, 0, 0, 0,
                       0, NULL, SOFT_TMC_RELEASE);
        rs->tm.mode = SOFT_TMM_DISCARD;
        return SOFT_TMF_PLACE;
    }
    rs->tm.mode = SOFT_TMM_EXPECTED;
    if (!(pkt->flags & SOFT_PKT_LAST)) {
        /* several packets: the match is reported at once */
        soft_tm_msg_wc(tm, dct, rs, DCX_WC_SUCCESS, DCX_WC_TM_RECV,
                       DCX_WC_FLAG_TM_MATCH, 0, rs->tm.tag, rs->tm.app_ctx, pkt,
                       0);
    }
    return SOFT_TMF_PLACE;
}

/* First packet: decide where the message goes. */
static int soft_tm_start(soft_dev_t *dev, soft_tm_t *tm, soft_qp_t *dct,
                         soft_rstate_t *rs, const soft_pkt_t *pkt,
                         const uint8_t *payload)
{
    uint8_t opcode;
    int ret;

    soft_tm_msg_done(rs);
    /* the first byte says what the message is; only an untagged one may
     * be shorter than a TMH (UCX's active messages carry a few bytes of
     * header, not a whole TMH, and a ConnectX takes them) */
    if ((pkt->len >= 1) && (pkt->len < DCX_TM_TMH_LEN) &&
        (payload[0] == DCX_TMH_NO_TAG)) {
        rs->tm.app_ctx = 0;
        rs->tm.tag     = 0;
        return soft_tm_to_srq(dev, tm, dct, rs, pkt, DCX_WC_TM_NO_TAG);
    }
    if (pkt->len < DCX_TM_TMH_LEN) {
        dcx_debug("%s: tm: message of %llu bytes has no TMH",
                  dev->super.caps.name, (unsigned long long)pkt->total_len);
        soft_resp_nak(dev, rs, pkt, DCX_WC_REM_INV_REQ_ERR);
        return SOFT_TMF_PLACE;
    }
    dcx_tmh_unpack(payload, &opcode, &rs->tm.app_ctx, &rs->tm.tag);
    switch (opcode) {
    case DCX_TMH_FIN:
    case DCX_TMH_NO_TAG:
        ret = soft_tm_to_srq(dev, tm, dct, rs, pkt, DCX_WC_TM_NO_TAG);
        if ((opcode == DCX_TMH_FIN) && (rs->tm.mode == SOFT_TMM_SRQ)) {
            tm->stats.fins_received++;
        }
        return ret;
    case DCX_TMH_EAGER:
    case DCX_TMH_RNDV:
        return soft_tm_first(dev, tm, dct, rs, pkt, payload, opcode);
    default:
        dcx_debug("%s: tm: unknown TMH opcode %u", dev->super.caps.name,
                  opcode);
        soft_resp_nak(dev, rs, pkt, DCX_WC_REM_INV_REQ_ERR);
        return SOFT_TMF_PLACE;
    }
}

/* The last packet of a message placed without error. */
static void soft_tm_last(soft_tm_t *tm, soft_qp_t *dct, soft_rstate_t *rs,
                         const soft_pkt_t *pkt)
{
    uint32_t payload_len = (uint32_t)(pkt->total_len - DCX_TM_TMH_LEN);

    switch (rs->tm.mode) {
    case SOFT_TMM_SRQ:
        /* unexpected tagged: no MATCH/DATA_VALID, tag info not valid */
        soft_tm_msg_wc(tm, dct, rs, DCX_WC_SUCCESS, rs->tm.wc_opcode, 0,
                       (uint32_t)pkt->total_len, 0, 0, pkt,
                       (rs->tm.wc_opcode == DCX_WC_TM_RECV) ? SOFT_TMC_UNEXP :
                                                              0);
        rs->have_recv = 0;
        break;
    case SOFT_TMM_EXPECTED:
        if (pkt->flags & SOFT_PKT_FIRST) {
            soft_tm_msg_wc(tm, dct, rs, DCX_WC_SUCCESS, DCX_WC_TM_RECV,
                           DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID,
                           payload_len, rs->tm.tag, rs->tm.app_ctx, pkt,
                           SOFT_TMC_RELEASE);
        } else {
            soft_tm_msg_wc(tm, dct, rs, DCX_WC_SUCCESS, DCX_WC_TM_RECV,
                           DCX_WC_FLAG_TM_DATA_VALID, payload_len, 0, 0, pkt,
                           SOFT_TMC_RELEASE);
        }
        break;
    default:
        break;
    }
}

void soft_tm_send_op(soft_dev_t *dev, soft_qp_t *dct, soft_rstate_t *rs,
                     const soft_pkt_t *pkt, const void *payload_)
{
    const uint8_t *payload = payload_;
    soft_tm_t *tm          = dct->srq->tm;
    uint64_t skip;

    if ((rs->cur_off == 0) && !rs->msg_err &&
        (soft_tm_start(dev, tm, dct, rs, pkt, payload) == SOFT_TMF_RNR)) {
        return;
    }
    if (!rs->msg_err) {
        if (rs->tm.mode == SOFT_TMM_SRQ) {
            soft_sge_scatter(dev, payload, rs->recv.sge, rs->recv.num_sge,
                             pkt->offset, pkt->len);
        } else if (rs->tm.mode == SOFT_TMM_EXPECTED) {
            skip = (pkt->offset == 0) ? DCX_TM_TMH_LEN : 0;
            soft_sge_scatter(dev, payload + skip, rs->recv.sge, 1,
                             pkt->offset + skip - DCX_TM_TMH_LEN,
                             pkt->len - skip);
        }
    }
    rs->cur_off += pkt->len;
    if (!(pkt->flags & SOFT_PKT_LAST)) {
        return;
    }
    if (!rs->msg_err) {
        soft_tm_last(tm, dct, rs, pkt);
        soft_resp_ack(dev, rs, pkt);
    }
    soft_tm_msg_done(rs);
    soft_resp_finish(rs);
}

void soft_tm_abandon(soft_dev_t *dev, soft_rstate_t *rs)
{
    dcx_wc_t wc;

    if ((rs->tm.mode == SOFT_TMM_EXPECTED) && (rs->tm.tm != NULL) &&
        (rs->dct != NULL)) {
        /* the sender gave up on a message half placed in the entry */
        soft_tm_recv_wc(&wc, rs->recv.wr_id, DCX_WC_WR_FLUSH_ERR,
                        DCX_WC_TM_RECV, 0, 0, rs->dct->super.qp_num, rs->dci);
        soft_tm_push(rs->tm.tm, &wc, rs->tm.entry, rs->tm.gen, 0,
                     SOFT_TMC_RELEASE);
        dcx_debug("%s: tm: message from dci 0x%x abandoned by its sender",
                  dev->super.caps.name, rs->dci);
    }
    soft_tm_msg_done(rs);
}


/* ------------------------------------------------------------------------
 * Creation
 * ------------------------------------------------------------------------ */
int soft_tm_create(soft_srq_t *srq, const dcx_srq_attr_t *attr)
{
    soft_dev_t *dev            = srq->dev;
    const dcx_dev_caps_t *caps = &dev->super.caps;
    const char *name           = caps->name;
    soft_tm_t *tm;
    unsigned i;
    int ret;

    if ((attr->tm_max_tags == 0) || (attr->tm_max_tags > caps->tm_max_tags) ||
        (attr->tm_max_ops == 0) || (attr->tm_max_ops > caps->tm_max_ops)) {
        dcx_error("%s: tm srq create: tm_max_tags %u (1..%u) or tm_max_ops "
                  "%u (1..%u) invalid",
                  name, attr->tm_max_tags, caps->tm_max_tags, attr->tm_max_ops,
                  caps->tm_max_ops);
        return EINVAL;
    }
    tm = calloc(1, sizeof(*tm));
    if (tm != NULL) {
        tm->e    = calloc(attr->tm_max_tags, sizeof(*tm->e));
        tm->rndv = calloc(attr->tm_max_tags, sizeof(*tm->rndv));
        tm->inc  = calloc(attr->tm_max_tags, sizeof(*tm->inc));
    }
    if ((tm == NULL) || (tm->e == NULL) || (tm->rndv == NULL) ||
        (tm->inc == NULL)) {
        dcx_error("%s: tm srq create: out of memory for %u tags", name,
                  attr->tm_max_tags);
        ret = ENOMEM;
        goto err_free;
    }
    tm->srq       = srq;
    tm->dev       = dev;
    tm->pd        = srq->super.pd;
    tm->max_tags  = attr->tm_max_tags;
    tm->max_ops   = attr->tm_max_ops;
    tm->list_head = tm->list_tail = SOFT_TM_NONE;
    tm->wait_head = tm->wait_tail = SOFT_TM_NONE;
    for (i = 0; i < tm->max_tags; ++i) {
        tm->e[i].next_free = (i + 1 < tm->max_tags) ? i + 1 : SOFT_TM_NONE;
        tm->e[i].prev = tm->e[i].next = SOFT_TM_NONE;
        tm->rndv[i].next = (i + 1 < tm->max_tags) ? i + 1 : SOFT_TM_NONE;
    }
    tm->free_head = 0;
    tm->free_tail = tm->max_tags - 1;
    tm->rndv_free = 0;

    ret = soft_tm_rndv_init(tm);
    if (ret != 0) {
        goto err_free;
    }
    srq->tm                = tm;
    srq->super.tm_post     = soft_tm_post;
    srq->super.tm_rndv_src = soft_tm_rndv_src;
    srq->super.tm_max_tags = tm->max_tags;
    srq->super.tm_max_ops  = tm->max_ops;
    soft_lock(&dev->lock);
    tm->next = dev->tms;
    dev->tms = tm;
    soft_unlock(&dev->lock);
    return 0;

err_free:
    if (tm != NULL) {
        free(tm->e);
        free(tm->rndv);
        free(tm->inc);
    }
    free(tm);
    return ret;
}

void soft_tm_destroy(soft_srq_t *srq)
{
    soft_tm_t *tm   = srq->tm;
    soft_dev_t *dev = tm->dev;
    soft_cq_t *cq   = srq->cq;
    soft_tm_t **pp;
    uint32_t i;

    soft_lock(&dev->lock);
    for (pp = &dev->tms; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == tm) {
            *pp = tm->next;
            break;
        }
    }
    dev->tm_rndv_live -= tm->rndv_live; /* those never end now */
    /* completions not polled yet retire nothing any more */
    for (i = cq->head; i != cq->tail; ++i) {
        if (cq->q[i & (cq->size - 1)].tm == tm) {
            cq->q[i & (cq->size - 1)].tm = NULL;
        }
    }
    soft_unlock(&dev->lock);
    soft_tm_rndv_cleanup(tm);
    free(tm->e);
    free(tm->rndv);
    free(tm->inc);
    free(tm);
    srq->tm = NULL;
}

int dcx_soft_tm_stats(dcx_srq_t *srq_, dcx_soft_tm_stats_t *stats)
{
    soft_srq_t *srq = (soft_srq_t *)srq_;

    if (!dcx_dev_is_soft(srq_->dev) || (srq->tm == NULL)) {
        dcx_error("%s: tm stats: srq %p is not a soft tag-matching SRQ",
                  srq_->dev->caps.name, (void *)srq_);
        return EINVAL;
    }
    soft_lock(&srq->dev->lock);
    *stats = srq->tm->stats;
    soft_unlock(&srq->dev->lock);
    return 0;
}
