/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the DCI pool and its policies, and send resources (DCI,
 * queue slots, credits).  What happens to posted WRs (send completions, DCI
 * errors and recovery, cancel) is in dcx_dci_comp.c, the pending queue in
 * dcx_pending.c, flow control in dcx_fc.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <string.h>


const char *uct_dcx_policy_names[] = {[UCT_DCX_POLICY_DCS]       = "dcs",
                                      [UCT_DCX_POLICY_DCS_QUOTA] = "dcs_quota",
                                      [UCT_DCX_POLICY_RAND]      = "rand",
                                      [UCT_DCX_POLICY_LAST]      = NULL};


/* ---------------------------------------------------------------------------
 * Policies
 * ------------------------------------------------------------------------- */

/*
 * dcs policies: an endpoint takes a DCI from the pool when it has none and
 * needs one.  When everything it posted there completed, it keeps the DCI
 * while no endpoint waits for one, so that back-to-back sends do not pay a
 * take and a give-back each: the DCI is "kept" (UCT_DCX_DCI_FLAG_KEPT,
 * counted in dci_kept).  A kept DCI is taken back the moment another
 * endpoint needs a DCI and the free stack is empty, and a DCI drains
 * straight back to the pool while endpoints wait, so keeping never makes
 * anybody wait longer than without it.
 */

static void uct_dcx_dci_release(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
    ucs_assert(dci->flags & UCT_DCX_DCI_FLAG_BUSY);
    ucs_assert(iface->dci_free_top < iface->num_dci);
    uct_dcx_dci_unkeep(iface, dci);
    dci->flags &= ~UCT_DCX_DCI_FLAG_BUSY;
    dci->owner                             = NULL;
    iface->dci_free[iface->dci_free_top++] = dci->index;
    iface->dci_stats.releases++;
}

/*
 * Unsignalled sends.  Most WRs go unsignalled (SIGNAL_PERIOD), so a DCI
 * whose last WRs were not signalled does not see itself drain: nothing
 * reports them.  That matters only when the DCI must go back to the pool
 * (an endpoint waits for a DCI, or the owner left), or when the send
 * buffers those WRs hold are needed (none is free).  Then a signalled
 * no-op behind them (to this interface's own DCT) makes the device report
 * them all; while endpoints wait, every WR is signalled, so that DCIs
 * drain as soon as their work is done, as before.  (A flush does the same
 * for the WRs it waits for.)
 */

ucs_status_t uct_dcx_dci_post_nop(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
    uint8_t nop[DCX_TM_TMH_LEN + UCT_DCX_AM_HDR_LEN] = {0};
    dcx_dc_dest_t self;
    dcx_send_wr_t wr;
    dcx_sge_t sge;

    uct_dcx_iface_self_dest(iface, &self);
    if (iface->rx_tmh_len + UCT_DCX_AM_HDR_LEN > iface->config.max_inline) {
        /* (a device with almost no inline room: through a buffer) */
        return uct_dcx_dci_post_ctl(iface, dci, NULL, &self, UCT_DCX_CTL_NOP,
                                    NULL, 0, iface->rx_tmh_len, NULL);
    }
    if (dci->avail == 0) {
        return UCS_ERR_NO_RESOURCE;
    }

    /* NO_TAG TMH (our DCT is behind a TM SRQ) and the header byte */
    nop[iface->rx_tmh_len] = UCT_DCX_AM_CTL | UCT_DCX_CTL_NOP;
    sge.addr               = (uintptr_t)nop;
    sge.length             = iface->rx_tmh_len + UCT_DCX_AM_HDR_LEN;
    sge.lkey               = 0;
    wr.opcode              = DCX_WR_SEND;
    wr.flags               = DCX_SEND_INLINE;
    wr.num_sge             = 1;
    wr.atomic_size         = 0;
    wr.imm                 = 0;
    wr.dest                = self;
    wr.sg_list             = &sge;
    wr.remote_addr         = 0;
    wr.rkey                = 0;
    wr.reserved            = 0;
    return uct_dcx_dci_post(iface, dci, NULL, &wr, NULL, 1);
}

/* dci must drain (go back to the pool): if its last WRs went unsignalled
 * and no signalled WR is in flight behind them, a signalled no-op.  A
 * signalled WR in flight brings uct_dcx_dci_tail_slow() when it completes,
 * which looks again. */
void uct_dcx_dci_drain(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
    ucs_status_t status;

    if ((dci->sig_sn == dci->sn) || (dci->sig_sn > dci->done_sn) ||
        (dci->flags & (UCT_DCX_DCI_FLAG_ERR | UCT_DCX_DCI_FLAG_CANCEL |
                       UCT_DCX_DCI_FLAG_BROKEN))) {
        /* nothing unsignalled at the tail, a signalled WR still to come,
         * or an error on its way (errors always report) */
        return;
    }

    status = uct_dcx_dci_post_nop(iface, dci);
    if (status == UCS_OK) {
        iface->dci_stats.drains++;
    } else {
        /* no slot: impossible with nothing signalled in flight (a full
         * queue holds a signalled WR); the device refused a no-op */
        ucs_error("dcx: %s: DCI 0x%x: could not post the no-op that reports "
                  "its last %u work requests: %s",
                  dcx_dev_name(iface->dev), dci->qp->qp_num,
                  (unsigned)(dci->sn - dci->done_sn),
                  ucs_status_string(status));
    }
}

/* The last signalled WR of dci completed and unsignalled ones follow it
 * (from uct_dcx_dci_tx_wcs): if the DCI must go back to the pool, they
 * need a signalled no-op to report */
UCS_F_NOINLINE void uct_dcx_dci_tail_slow(uct_dcx_iface_t *iface,
                                          uct_dcx_dci_t *dci)
{
    if ((iface->dci_waiters > 0) ||
        ((dci->flags & UCT_DCX_DCI_FLAG_BUSY) && (dci->owner == NULL))) {
        uct_dcx_dci_drain(iface, dci);
    }
}

/* No send buffer is free: those held by unsignalled WRs (bcopy) come back
 * only when a signalled WR after them completes, so every DCI whose last
 * WRs went unsignalled reports them now */
UCS_F_NOINLINE void uct_dcx_iface_tx_starved(uct_dcx_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->num_dci; ++i) {
        uct_dcx_dci_drain(iface, &iface->dcis[i]);
    }
}

/* ep was refused a DCI: it waits.  The first waiter makes every lent DCI
 * drain: their unsignalled tails get a no-op, and from now on every WR is
 * signalled, until nobody waits. */
static void uct_dcx_ep_dci_wait(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    unsigned i;

    if (ep->flags & UCT_DCX_EP_FLAG_DCI_WAIT) {
        return;
    }
    ep->flags |= UCT_DCX_EP_FLAG_DCI_WAIT;
    if (iface->dci_waiters++ > 0) {
        return;
    }
    iface->sig_period = 1;
    for (i = 0; i < iface->num_dci; ++i) {
        if (iface->dcis[i].flags & UCT_DCX_DCI_FLAG_BUSY) {
            uct_dcx_dci_drain(iface, &iface->dcis[i]);
        }
    }
}

/* ep does not wait for a DCI any more (it got one, or it leaves) */
static void uct_dcx_ep_dci_wait_end(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    if (!(ep->flags & UCT_DCX_EP_FLAG_DCI_WAIT)) {
        return;
    }
    ep->flags &= ~UCT_DCX_EP_FLAG_DCI_WAIT;
    ucs_assert(iface->dci_waiters > 0);
    if (--iface->dci_waiters == 0) {
        iface->sig_period = iface->sig_period_cfg;
    }
}

static void uct_dcx_dcs_ep_init(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    ep->dci   = UCT_DCX_DCI_NONE;
    ep->quota = INT32_MAX;
}

/*
 * The free stack is empty: takes back, for ep, a DCI kept by an endpoint
 * that has nothing in flight on it.  Clears the hint of DCIs kept once and
 * busy again (when they drain, they are kept or given back anew), so that
 * only newly kept DCIs cause another scan.  NULL if none is idle.
 */
static UCS_F_NOINLINE uct_dcx_dci_t *
uct_dcx_dci_take_back(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    uct_dcx_dci_t *dci;
    unsigned i;

    for (i = 0; (i < iface->num_dci) && (iface->dci_kept > 0); ++i) {
        dci = &iface->dcis[i];
        if (!(dci->flags & UCT_DCX_DCI_FLAG_KEPT)) {
            continue;
        }
        uct_dcx_dci_unkeep(iface, dci);
        if ((dci->owner == NULL) || (dci->owner == ep) ||
            !uct_dcx_dci_is_drained(dci) ||
            (dci->flags & (UCT_DCX_DCI_FLAG_ERR | UCT_DCX_DCI_FLAG_CANCEL |
                           UCT_DCX_DCI_FLAG_BROKEN))) {
            continue;
        }
        ucs_trace("dcx: DCI %u taken back from ep %p for ep %p", dci->index,
                  dci->owner, ep);
        dci->owner->dci = UCT_DCX_DCI_NONE;
        dci->owner      = NULL;
        iface->dci_stats.take_backs++;
        return dci;
    }
    return NULL;
}

static ucs_status_t uct_dcx_dcs_dci_get(uct_dcx_iface_t *iface,
                                        uct_dcx_ep_t *ep)
{
    uct_dcx_dci_t *dci;

    if (iface->dci_free_top > 0) {
        dci = &iface->dcis[iface->dci_free[--iface->dci_free_top]];
        dci->flags |= UCT_DCX_DCI_FLAG_BUSY;
        iface->dci_stats.gets++;
    } else if ((iface->dci_kept == 0) ||
               ((dci = uct_dcx_dci_take_back(iface, ep)) == NULL)) {
        iface->dci_stats.refusals++;
        uct_dcx_ep_dci_wait(iface, ep);
        return UCS_ERR_NO_RESOURCE;
    }

    uct_dcx_ep_dci_wait_end(iface, ep);

    dci->owner  = ep;
    ep->dci     = dci->index;
    ep->last_sn = dci->sn; /* nothing of this ep is in flight there */
    ep->quota   = (iface->policy == &uct_dcx_policy_ops[UCT_DCX_POLICY_DCS]) ?
                      INT32_MAX :
                      (int32_t)iface->config.quota;
    return UCS_OK;
}

static ucs_status_t uct_dcx_dcs_quota_out(uct_dcx_iface_t *iface,
                                          uct_dcx_ep_t *ep)
{
    ep->quota = INT32_MAX;
    return UCS_OK;
}

static ucs_status_t uct_dcx_dcs_quota_quota_out(uct_dcx_iface_t *iface,
                                                uct_dcx_ep_t *ep)
{
    /* Yield only if somebody is waiting for a DCI and none is free */
    if ((iface->dci_waiters > 0) && (iface->dci_free_top == 0)) {
        return UCS_ERR_NO_RESOURCE;
    }
    ep->quota = iface->config.quota;
    return UCS_OK;
}

/* dci has nothing in flight: its owner keeps it while nobody waits for a
 * DCI, else it goes back to the pool */
static void uct_dcx_dcs_dci_idle(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
    if (!(dci->flags & UCT_DCX_DCI_FLAG_BUSY)) {
        return;
    }
    if ((dci->owner != NULL) && (iface->dci_waiters == 0)) {
        if (!(dci->flags & UCT_DCX_DCI_FLAG_KEPT)) {
            dci->flags |= UCT_DCX_DCI_FLAG_KEPT;
            iface->dci_kept++;
        }
        return;
    }
    if (dci->owner != NULL) {
        dci->owner->dci = UCT_DCX_DCI_NONE;
    }
    uct_dcx_dci_release(iface, dci);
}

static void uct_dcx_dcs_ep_detach(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    uct_dcx_dci_t *dci;

    uct_dcx_ep_dci_wait_end(iface, ep);
    if (ep->dci == UCT_DCX_DCI_NONE) {
        return;
    }

    dci        = &iface->dcis[ep->dci];
    dci->owner = NULL;
    ep->dci    = UCT_DCX_DCI_NONE;
    uct_dcx_dci_unkeep(iface, dci);
    uct_dcx_dci_detach_ep(iface, dci, ep);
    if (dci->flags & UCT_DCX_DCI_FLAG_BROKEN) {
        return;
    }
    if (uct_dcx_dci_is_drained(dci)) {
        uct_dcx_dci_release(iface, dci);
    } else {
        /* it returns to the pool when its last WR completes: make sure
         * that one reports */
        uct_dcx_dci_drain(iface, dci);
    }
}

static uint16_t uct_dcx_rand_dci(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    /* Fibonacci hashing of the ep id spreads consecutive eps evenly */
    return (uint16_t)((((uint64_t)ep->seq * 0x9e3779b97f4a7c15ull) >> 32) %
                      iface->num_dci);
}

static void uct_dcx_rand_ep_init(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    ep->dci     = uct_dcx_rand_dci(iface, ep);
    ep->last_sn = iface->dcis[ep->dci].sn;
    ep->quota   = INT32_MAX;
}

static ucs_status_t uct_dcx_rand_dci_get(uct_dcx_iface_t *iface,
                                         uct_dcx_ep_t *ep)
{
    ep->dci     = uct_dcx_rand_dci(iface, ep);
    ep->last_sn = iface->dcis[ep->dci].sn;
    return UCS_OK;
}

static void uct_dcx_rand_dci_idle(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
}

static void uct_dcx_rand_ep_detach(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    if (ep->dci != UCT_DCX_DCI_NONE) {
        uct_dcx_dci_detach_ep(iface, &iface->dcis[ep->dci], ep);
        ep->dci = UCT_DCX_DCI_NONE;
    }
}

const uct_dcx_policy_ops_t uct_dcx_policy_ops[UCT_DCX_POLICY_LAST] = {
    [UCT_DCX_POLICY_DCS]       = {.name      = "dcs",
                                  .ep_init   = uct_dcx_dcs_ep_init,
                                  .dci_get   = uct_dcx_dcs_dci_get,
                                  .quota_out = uct_dcx_dcs_quota_out,
                                  .dci_idle  = uct_dcx_dcs_dci_idle,
                                  .ep_detach = uct_dcx_dcs_ep_detach,
                                  .shared    = 0},
    [UCT_DCX_POLICY_DCS_QUOTA] = {.name      = "dcs_quota",
                                  .ep_init   = uct_dcx_dcs_ep_init,
                                  .dci_get   = uct_dcx_dcs_dci_get,
                                  .quota_out = uct_dcx_dcs_quota_quota_out,
                                  .dci_idle  = uct_dcx_dcs_dci_idle,
                                  .ep_detach = uct_dcx_dcs_ep_detach,
                                  .shared    = 0},
    [UCT_DCX_POLICY_RAND]      = {.name      = "rand",
                                  .ep_init   = uct_dcx_rand_ep_init,
                                  .dci_get   = uct_dcx_rand_dci_get,
                                  .quota_out = uct_dcx_dcs_quota_out,
                                  .dci_idle  = uct_dcx_rand_dci_idle,
                                  .ep_detach = uct_dcx_rand_ep_detach,
                                  .shared    = 1}};


/* ---------------------------------------------------------------------------
 * Pool creation
 * ------------------------------------------------------------------------- */

ucs_status_t uct_dcx_dci_pool_init(uct_dcx_iface_t *iface,
                                   const uct_dcx_iface_config_t *config)
{
    const dcx_dev_caps_t *caps = iface->caps;
    unsigned total             = config->num_dci + 1;
    unsigned ring;
    dcx_qp_attr_t attr;
    uct_dcx_dci_t *dci;
    unsigned i;
    int ret;

    iface->num_dci      = config->num_dci;
    iface->wr_replay    = NULL;
    iface->ctl_dci      = config->num_dci;
    iface->dci_free_top = 0;
    iface->dci_waiters  = 0;
    iface->dci_kept     = 0;
    memset(&iface->dci_stats, 0, sizeof(iface->dci_stats));
    iface->dcis     = ucs_calloc(total, sizeof(*iface->dcis), "dcx_dcis");
    iface->dci_free = ucs_calloc(total, sizeof(*iface->dci_free),
                                 "dcx_dci_free");
    if ((iface->dcis == NULL) || (iface->dci_free == NULL)) {
        ucs_error("dcx: %s: failed to allocate a pool of %u DCIs",
                  dcx_dev_name(iface->dev), total);
        goto err_free;
    }

    memset(&attr, 0, sizeof(attr));
    attr.type          = DCX_QPT_DCI;
    attr.send_cq       = iface->tx_cq;
    attr.max_send_wr   = ucs_min(config->tx_queue_len, caps->max_qp_wr);
    attr.max_send_sge  = ucs_min(caps->max_sge, (uint32_t)UCT_DCX_MAX_SGE);
    attr.max_inline    = caps->max_inline;
    attr.max_rd_atomic = caps->max_rd_atomic;
    attr.timeout       = iface->config.timeout;
    attr.retry_cnt     = iface->config.retry_count;
    attr.rnr_retry     = iface->config.rnr_retry;

    iface->sq_len = UINT16_MAX;
    for (i = 0; i < total; ++i) {
        dci = &iface->dcis[i];
        ucs_queue_head_init(&dci->ops);
        dci->index = i;
        ret        = dcx_qp_create(iface->pd, &attr, &dci->qp);
        if (ret != 0) {
            ucs_error("dcx: %s: failed to create DCI %u of %u: %s",
                      dcx_dev_name(iface->dev), i, total, strerror(ret));
            goto err_destroy;
        }
        iface->sq_len            = ucs_min(iface->sq_len, dci->qp->max_send_wr);
        iface->config.max_sge    = (i == 0) ? dci->qp->max_send_sge :
                                              ucs_min(iface->config.max_sge,
                                                      dci->qp->max_send_sge);
        iface->config.max_inline = (i == 0) ? dci->qp->max_inline :
                                              ucs_min(iface->config.max_inline,
                                                      dci->qp->max_inline);
    }

    ring              = ucs_roundup_pow2(iface->sq_len);
    iface->ring_mask  = ring - 1;
    iface->log_stride = ucs_align_up(sizeof(uct_dcx_wr_log_t) +
                                         iface->config.max_inline,
                                     8);
    /* a WR being posted again is copied here first (a log entry holds up
     * to UCT_DCX_MAX_SGE sges and the inline bytes: too big for alloca) */
    iface->wr_replay  = ucs_malloc(iface->log_stride, "dcx_wr_replay");
    if (iface->wr_replay == NULL) {
        ucs_error("dcx: failed to allocate the WR replay buffer");
        i = total;
        goto err_destroy;
    }
    for (i = 0; i < total; ++i) {
        dci            = &iface->dcis[i];
        dci->avail     = iface->sq_len;
        dci->wr_ep     = ucs_calloc(ring, sizeof(*dci->wr_ep), "dcx_wr_ep");
        dci->wr_opcode = ucs_calloc(ring, sizeof(*dci->wr_opcode),
                                    "dcx_wr_opcode");
        /* DCIs shared by endpoints keep copies of their WRs in flight */
        if (iface->policy->shared || (i == iface->ctl_dci)) {
            dci->log = ucs_malloc(ring * iface->log_stride, "dcx_wr_log");
        }
        if ((dci->wr_ep == NULL) || (dci->wr_opcode == NULL) ||
            ((iface->policy->shared || (i == iface->ctl_dci)) &&
             (dci->log == NULL))) {
            ucs_error("dcx: failed to allocate the WR ring of DCI %u", i);
            i = total;
            goto err_destroy;
        }
    }

    /* A completion every sig_period WRs at least: shared DCIs every half
     * queue by default, lent ones every UCT_DCX_SIG_PERIOD_LENT (their
     * unsignalled tails are reported on demand: uct_dcx_dci_drain).  At
     * most a queue: a full queue then always holds a signalled WR. */
    if (config->sig_period != 0) {
        iface->sig_period_cfg = ucs_min(config->sig_period,
                                        (unsigned)iface->sq_len);
    } else if (iface->policy->shared) {
        iface->sig_period_cfg = ucs_max(iface->sq_len / 2u, 1u);
    } else {
        iface->sig_period_cfg = ucs_max(ucs_min(iface->sq_len / 2u,
                                                UCT_DCX_SIG_PERIOD_LENT),
                                        1u);
    }
    iface->sig_period = iface->sig_period_cfg;

    iface->dcis[iface->ctl_dci].flags |= UCT_DCX_DCI_FLAG_CTL;
    for (i = 0; i < iface->num_dci; ++i) {
        /* lowest index on top */
        iface->dci_free[iface->dci_free_top++] = iface->num_dci - 1 - i;
    }
    return UCS_OK;

err_destroy:
    while (i-- > 0) {
        ucs_free(iface->dcis[i].wr_ep);
        ucs_free(iface->dcis[i].wr_opcode);
        ucs_free(iface->dcis[i].log);
        if (iface->dcis[i].qp != NULL) {
            dcx_qp_destroy(iface->dcis[i].qp);
        }
    }
err_free:
    ucs_free(iface->wr_replay);
    iface->wr_replay = NULL;
    ucs_free(iface->dcis);
    ucs_free(iface->dci_free);
    iface->dcis = NULL;
    return UCS_ERR_IO_ERROR;
}

void uct_dcx_dci_pool_cleanup(uct_dcx_iface_t *iface)
{
    uct_dcx_dci_t *dci;
    uct_dcx_op_t *op;
    unsigned i;

    for (i = 0; i <= iface->num_dci; ++i) {
        dci = &iface->dcis[i];
        /* operations still queued never completed: cancel them */
        while (!ucs_queue_is_empty(&dci->ops)) {
            op = ucs_queue_pull_elem_non_empty(&dci->ops, uct_dcx_op_t, queue);
            uct_dcx_op_complete(iface, op, UCS_ERR_CANCELED);
        }
        dcx_qp_destroy(dci->qp);
        ucs_free(dci->wr_ep);
        ucs_free(dci->wr_opcode);
        ucs_free(dci->log);
    }
    ucs_free(iface->dcis);
    ucs_free(iface->dci_free);
    ucs_free(iface->wr_replay);
}


/* ---------------------------------------------------------------------------
 * Operations and completions
 * ------------------------------------------------------------------------- */

void uct_dcx_op_put(uct_dcx_iface_t *iface, uct_dcx_op_t *op,
                    ucs_status_t status)
{
    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, status);
    }
    ucs_mpool_put_inline(op);
}

void uct_dcx_op_release_desc(uct_dcx_iface_t *iface, uct_dcx_op_t *op,
                             ucs_status_t status)
{
    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, status);
    }
    ucs_mpool_put_inline(op);
}

void uct_dcx_dci_detach_ep(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                           uct_dcx_ep_t *ep)
{
    uint64_t sn;

    for (sn = dci->done_sn + 1; sn <= dci->sn; ++sn) {
        if (dci->wr_ep[sn & iface->ring_mask] == ep) {
            dci->wr_ep[sn & iface->ring_mask] = NULL;
        }
    }
}

/* ---------------------------------------------------------------------------
 * Resources: the rare path of uct_dcx_ep_tx_begin()
 * ------------------------------------------------------------------------- */

static ucs_status_t uct_dcx_ep_tx_resources(uct_dcx_iface_t *iface,
                                            uct_dcx_ep_t *ep, int is_am)
{
    ucs_status_t status;

    if (is_am && (ep->fc_wnd <= iface->fc_thresh) && (ep->ext != NULL) &&
        (ep->ext->fc_held != 0)) {
        /* granted, but held for the pending requests (uct_dcx_ep_fc_grant):
         * no second request either */
        return UCS_ERR_NO_RESOURCE;
    }
    if (is_am && (ep->fc_wnd <= 0) &&
        (ep->flags & UCT_DCX_EP_FLAG_FC_REQ_SENT)) {
        return UCS_ERR_NO_RESOURCE; /* waiting for a grant */
    }

    if (ep->dci == UCT_DCX_DCI_NONE) {
        status = iface->policy->dci_get(iface, ep);
        if (status != UCS_OK) {
            return status;
        }
    }

    if (iface->dcis[ep->dci].avail == 0) {
        return UCS_ERR_NO_RESOURCE;
    }

    if (ep->quota <= 0) {
        status = iface->policy->quota_out(iface, ep);
        if (status != UCS_OK) {
            return status;
        }
    }

    if (is_am && (ep->fc_wnd <= iface->fc_thresh)) {
        if (!(ep->flags & UCT_DCX_EP_FLAG_FC_REQ_SENT)) {
            status = uct_dcx_ep_fc_request(iface, ep);
            if (status != UCS_OK) {
                return status;
            }
        }
        if ((ep->fc_wnd <= 0) || (iface->dcis[ep->dci].avail == 0)) {
            return UCS_ERR_NO_RESOURCE;
        }
    }

    return UCS_OK;
}

UCS_F_NOINLINE ucs_status_t uct_dcx_ep_tx_slow(uct_dcx_iface_t *iface,
                                               uct_dcx_ep_t *ep, int is_am)
{
    ucs_status_t status;

    if (ucs_unlikely(ep->flags &
                     (UCT_DCX_EP_FLAG_FAILED | UCT_DCX_EP_FLAG_INVALIDATED))) {
        /* failed and reported: refused; invalidated, not yet reported:
         * taken and dropped, as by a queue pair in error */
        return (ep->flags & UCT_DCX_EP_FLAG_FAILED) ? UCS_ERR_CONNECTION_RESET :
                                                      UCT_DCX_TX_SINK;
    }

    status = uct_dcx_ep_tx_resources(iface, ep, is_am);
    if (status != UCS_OK) {
        /* Do not sit on an idle lent DCI while waiting for something else */
        uct_dcx_ep_put_idle_dci(iface, ep);
    }
    return status;
}

void uct_dcx_ep_put_idle_dci(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    uct_dcx_dci_t *dci;

    if (ep->dci == UCT_DCX_DCI_NONE) {
        return;
    }
    dci = uct_dcx_ep_dci(iface, ep);
    if ((dci->flags & UCT_DCX_DCI_FLAG_BUSY) && uct_dcx_dci_is_drained(dci)) {
        iface->policy->dci_idle(iface, dci);
    }
}


/* ---------------------------------------------------------------------------
 * Introspection (dcx_dci_stats.h), exported (dcx_* names only) for tests and
 * diagnostics
 * ------------------------------------------------------------------------- */

__attribute__((visibility("default"))) int
dcx_dci_iface_stats(uct_iface_h tl_iface, dcx_dci_stats_t *stats)
{
    uct_dcx_iface_t *iface;

    if ((tl_iface == NULL) ||
        (tl_iface->ops.ep_put_short != uct_dcx_ep_put_short)) {
        return -1;
    }
    iface             = ucs_derived_of(tl_iface, uct_dcx_iface_t);
    *stats            = iface->dci_stats;
    stats->num_dci    = iface->num_dci;
    stats->free       = iface->dci_free_top;
    stats->kept       = iface->dci_kept;
    stats->waiters    = iface->dci_waiters;
    stats->sig_period = iface->sig_period;
    stats->sq_len     = iface->sq_len;
    return 0;
}

__attribute__((visibility("default"))) int dcx_dci_ep_index(uct_ep_h tl_ep)
{
    uct_dcx_ep_t *ep;

    if ((tl_ep == NULL) ||
        (tl_ep->iface->ops.ep_put_short != uct_dcx_ep_put_short)) {
        return -2;
    }
    ep = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    return (ep->dci == UCT_DCX_DCI_NONE) ? -1 : (int)ep->dci;
}
