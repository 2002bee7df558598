/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device tag matching, the device rendezvous: the data of a matched
 * rendezvous request is READ from the sender (its port, and the DCT and DC
 * key of the request's RAVH) into the entry's buffer, then a FIN goes back
 * to the same DCT (docs/device-semantics.md sections 9.7 and 9.9, UCX's
 * DEVX DC offload).  How the failures end is described at the top of
 * soft_tm.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_tm.h"

#include <errno.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Device rendezvous: the matched request's data is READ from the sender
 * (its port, the DCT and DC key of the RAVH) into the entry's buffer, and
 * a FIN goes back to the same DCT.  The device's own DCIs carry one
 * rendezvous each (READ, then FIN), so an error on one never flushes
 * another's; requests wait in FIFO order for a free DCI, and an engine
 * pass of a polling application starts one of them
 * (soft_tm_progress_live).  The engine runs in the
 * application's polls or, when it does not poll, in the helper thread,
 * like any inbound work.
 * ------------------------------------------------------------------------ */
#define SOFT_TM_WR_FIN (1ull << 32)

static int soft_tm_rndv_post(soft_tm_t *tm, soft_tm_dci_t *d, uint32_t r,
                             int fin)
{
    soft_tm_rndv_t *rv = &tm->rndv[r];
    dcx_send_wr_t wr;
    dcx_sge_t sge;

    memset(&wr, 0, sizeof(wr));
    d->ah.peer     = rv->peer;
    wr.wr_id       = r | (fin ? SOFT_TM_WR_FIN : 0);
    wr.flags       = DCX_SEND_SIGNALED;
    wr.dest.ah     = &d->ah.super;
    wr.dest.dctn   = rv->dctn;
    wr.dest.dc_key = rv->dc_key;
    if (fin) {
        sge.addr   = (uint64_t)(uintptr_t)rv->tmh;
        sge.length = sizeof(rv->tmh);
        sge.lkey   = 0;
        wr.opcode  = DCX_WR_SEND;
        wr.flags |= DCX_SEND_INLINE;
        wr.num_sge = 1;
        wr.sg_list = &sge;
    } else {
        wr.opcode      = DCX_WR_RDMA_READ;
        wr.num_sge     = (rv->len > 0) ? 1 : 0;
        wr.sg_list     = &rv->sge;
        wr.remote_addr = rv->va;
        wr.rkey        = rv->rkey;
    }
    return soft_qp_post_locked(d->qp, &wr);
}

static void soft_tm_rndv_free(soft_tm_t *tm, soft_tm_dci_t *d)
{
    tm->rndv[d->rndv].next = tm->rndv_free;
    tm->rndv_free          = d->rndv;
    d->rndv                = SOFT_TM_NONE;
    tm->rndv_live--;
    tm->dev->tm_rndv_live--;
}

/* Hands waiting rendezvous to idle DCIs, at most 'budget'; returns how
 * many it started. */
static unsigned soft_tm_rndv_kick(soft_tm_t *tm, unsigned budget)
{
    unsigned i, started = 0;
    soft_tm_dci_t *d;
    uint32_t r;

    for (i = 0; (i < SOFT_TM_DCIS) && (started < budget) &&
                (tm->wait_head != SOFT_TM_NONE);
         ++i) {
        d = &tm->dci[i];
        if (d->rndv != SOFT_TM_NONE) {
            continue;
        }
        r = tm->wait_head;
        if (soft_tm_rndv_post(tm, d, r, 0) != 0) {
            break; /* the DCI cannot take it now: try on next progress */
        }
        tm->wait_head = tm->rndv[r].next;
        d->rndv       = r;
        ++started;
    }
    return started;
}

void soft_tm_rndv_start(soft_tm_t *tm, soft_qp_t *dct, soft_rstate_t *rs,
                        const uint8_t *req, uint32_t len, uint64_t va,
                        uint32_t rkey)
{
    uint32_t r         = tm->rndv_free;
    soft_tm_rndv_t *rv = &tm->rndv[r];

    tm->rndv_free = rv->next;
    tm->rndv_live++;
    tm->dev->tm_rndv_live++;
    rv->recv_wr_id = rs->recv.wr_id;
    rv->sge        = rs->recv.sge[0];
    rv->sge.length = len;
    rv->entry      = rs->tm.entry;
    rv->gen        = rs->tm.gen;
    rv->dct_qpn    = dct->super.qp_num;
    rv->src_qp     = rs->dci;
    rv->peer       = rs->peer;
    rv->va         = va;
    rv->rkey       = rkey;
    rv->len        = len;
    rv->next       = SOFT_TM_NONE;
    dcx_ravh_unpack(req + DCX_TM_TMH_LEN + sizeof(dcx_rvh_t), &rv->dctn,
                    &rv->dc_key);
    memcpy(rv->tmh, req, sizeof(rv->tmh));
    rv->tmh[0] = DCX_TMH_FIN;
    if (tm->wait_head == SOFT_TM_NONE) {
        tm->wait_head = r;
    } else {
        tm->rndv[tm->wait_tail].next = r;
    }
    tm->wait_tail = r;
    /* started by soft_tm_progress_live at the end of the pass */
}

/* The second completion of a device rendezvous. */
static void soft_tm_rndv_wc(soft_tm_t *tm, soft_tm_rndv_t *rv, uint8_t status)
{
    dcx_wc_t wc;

    soft_tm_recv_wc(&wc, rv->recv_wr_id, status, DCX_WC_TM_RECV,
                    (status == DCX_WC_SUCCESS) ? DCX_WC_FLAG_TM_DATA_VALID : 0,
                    (status == DCX_WC_SUCCESS) ? rv->len : 0, rv->dct_qpn,
                    rv->src_qp);
    soft_tm_push(tm, &wc, rv->entry, rv->gen, 0, SOFT_TMC_RELEASE);
}

static void soft_tm_rndv_done(soft_tm_t *tm, const dcx_wc_t *wc)
{
    soft_tm_dci_t *d = NULL;
    soft_tm_rndv_t *rv;
    unsigned i;

    for (i = 0; i < SOFT_TM_DCIS; ++i) {
        if (tm->dci[i].qp->super.qp_num == wc->qp_num) {
            d = &tm->dci[i];
        }
    }
    if ((d == NULL) || (d->rndv != (uint32_t)wc->wr_id)) {
        return;
    }
    rv = &tm->rndv[d->rndv];
    if (!(wc->wr_id & SOFT_TM_WR_FIN)) {
        if (wc->status == DCX_WC_SUCCESS) {
            soft_tm_rndv_wc(tm, rv, DCX_WC_SUCCESS);
            tm->stats.rndv_hw++;
            if (soft_tm_rndv_post(tm, d, d->rndv, 1) == 0) {
                return; /* the FIN is on its way */
            }
            tm->stats.fin_errors++;
            dcx_debug("%s: tm: cannot post the FIN to dct 0x%x",
                      soft_tm_name(tm), rv->dctn);
        } else {
            dcx_debug("%s: tm: rendezvous read from dct 0x%x (va 0x%llx "
                      "rkey 0x%x len %u) failed: %s",
                      soft_tm_name(tm), rv->dctn, (unsigned long long)rv->va,
                      rv->rkey, rv->len, dcx_wc_status_str(wc->status));
            soft_tm_rndv_wc(tm, rv, wc->status);
            tm->stats.rndv_errors++;
        }
    } else if (wc->status == DCX_WC_SUCCESS) {
        tm->stats.fins_sent++;
    } else {
        dcx_debug("%s: tm: FIN to dct 0x%x failed: %s", soft_tm_name(tm),
                  rv->dctn, dcx_wc_status_str(wc->status));
        tm->stats.fin_errors++;
    }
    if (d->qp->super.state == DCX_QPS_ERR) {
        soft_qp_reset(d->qp);
    }
    soft_tm_rndv_free(tm, d);
}

/* Takes the completions of the rendezvous DCIs (their work is only that
 * of live rendezvous, and a rendezvous stays live until its last
 * completion is taken here). */
static void soft_tm_rndv_reap(soft_tm_t *tm)
{
    soft_cq_t *cq = (soft_cq_t *)tm->rcq;
    soft_cqe_t *cqe;
    dcx_wc_t wc;

    while (cq->head != cq->tail) {
        cqe = &cq->q[cq->head & (cq->size - 1)];
        wc  = cqe->wc;
        if (cqe->qp != NULL) {
            soft_qp_retire(cqe->qp, cqe->sq_idx);
        }
        cq->head++;
        soft_tm_rndv_done(tm, &wc);
    }
    cq->overrun = 0;
}

/* soft_tm_progress (soft_resp.h) while device rendezvous are live, once at
 * the end of every engine pass: ends the rendezvous whose READ completed
 * (second completion, FIN) and starts waiting ones.  A READ is usually
 * copied at once by us (soft_direct.c, tens of us for a MiB), so while the
 * application polls a pass starts one: the application polls its
 * completions (and reposts its receive) before the next pass goes on, as
 * it would while a NIC reads.  Matching is not held back: a ring pass
 * matches every request it serves, which only queues the READs here.
 * While the application is away (no poll for SOFT_APP_IDLE_NS: the
 * helper thread runs the passes, one per nap) nobody waits for those
 * completions, and a pass starts up to SOFT_TM_DCIS, twice.  A READ that
 * went direct completed already, so its second completion and FIN leave
 * in this same pass.  Returns 1 if some still wait for a DCI or
 * completions are left (the engine then is not idle). */
int soft_tm_progress_live(soft_dev_t *dev)
{
    int pending = 0;
    unsigned budget, rounds, reads, started;
    soft_tm_t *tm;
    soft_cq_t *cq;

    for (tm = dev->tms; tm != NULL; tm = tm->next) {
        if (tm->rndv_live == 0) {
            continue;
        }
        soft_tm_rndv_reap(tm);
        budget = (soft_port_poll_age(dev->hdr) > SOFT_APP_IDLE_NS) ?
                     SOFT_TM_DCIS :
                     1;
        reads  = 0;
        for (rounds = (budget > 1) ? 2 : 1; rounds > 0; --rounds) {
            started = soft_tm_rndv_kick(tm, budget);
            if (started == 0) {
                break;
            }
            reads += started;
            soft_tm_rndv_reap(tm);
        }
        if ((budget == 1) && (reads > tm->stats.rndv_pass_max)) {
            tm->stats.rndv_pass_max = reads;
        }
        cq = (soft_cq_t *)tm->rcq;
        pending |= (tm->wait_head != SOFT_TM_NONE) || (cq->head != cq->tail);
    }
    return pending;
}

/* The device's initiators: SOFT_TM_DCIS DCIs on a CQ of their own. */
int soft_tm_rndv_init(soft_tm_t *tm)
{
    dcx_qp_attr_t qattr;
    dcx_qp_t *qp;
    unsigned i;
    int ret;

    ret = dcx_cq_create(&tm->dev->super, SOFT_TM_DCIS * SOFT_TM_DCI_WR,
                        &tm->rcq);
    if (ret != 0) {
        return ret;
    }
    memset(&qattr, 0, sizeof(qattr));
    qattr.type          = DCX_QPT_DCI;
    qattr.send_cq       = tm->rcq;
    qattr.max_send_wr   = SOFT_TM_DCI_WR;
    qattr.max_send_sge  = 1;
    qattr.max_inline    = 64;
    qattr.max_rd_atomic = 1;
    for (i = 0; i < SOFT_TM_DCIS; ++i) {
        ret = dcx_qp_create(tm->pd, &qattr, &qp);
        if (ret != 0) {
            dcx_error("%s: tm srq create: cannot create the rendezvous DCIs",
                      soft_tm_name(tm));
            soft_tm_rndv_cleanup(tm);
            return ret;
        }
        tm->dci[i].qp          = (soft_qp_t *)qp;
        tm->dci[i].ah.super.pd = tm->pd;
        tm->dci[i].rndv        = SOFT_TM_NONE;
    }
    return 0;
}

void soft_tm_rndv_cleanup(soft_tm_t *tm)
{
    unsigned i;

    for (i = 0; i < SOFT_TM_DCIS; ++i) {
        if (tm->dci[i].qp != NULL) {
            dcx_qp_destroy(&tm->dci[i].qp->super);
            tm->dci[i].qp = NULL;
        }
    }
    if (tm->rcq != NULL) {
        dcx_cq_destroy(tm->rcq);
        tm->rcq = NULL;
    }
}
