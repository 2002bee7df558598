/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the DCI pool and its policies, the no-op that makes a DCI
 * report its unsignalled WRs, and the WR log of shared DCIs.  What happens
 * to posted WRs (send completions, DCI errors and recovery, cancel) is in
 * dcx_dci_comp.c, the pending queue in dcx_pending.c, flow control and the
 * rare path of a send that lacks something (credits, a DCI, a slot) in
 * dcx_fc.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/time/time.h>
#include <stdlib.h>
#include <string.h>


const char *uct_dcx_policy_names[] = {[UCT_DCX_POLICY_DCS]       = "dcs",
                                      [UCT_DCX_POLICY_DCS_QUOTA] = "dcs_quota",
                                      [UCT_DCX_POLICY_RAND]      = "rand",
                                      [UCT_DCX_POLICY_HYBRID]    = "hybrid",
                                      [UCT_DCX_POLICY_STREAMS]   = "streams",
                                      [UCT_DCX_POLICY_LAST]      = NULL};


/* ---------------------------------------------------------------------------
 * Policies
 * ------------------------------------------------------------------------- */

/*
 * dcs policies: an endpoint takes a DCI from the pool when it has none and
 * needs one.  When everything it posted there completed, it keeps the DCI
 * while no endpoint waits for one, so that back-to-back sends do not pay a
 * take and a give-back each: the DCI is "kept" (UCT_DCX_DCI_FLAG_KEPT,
 * counted in pool.kept).  A kept DCI is taken back the moment another
 * endpoint needs a DCI and the free stack is empty, and a DCI drains
 * straight back to the pool while endpoints wait, so keeping never makes
 * anybody wait longer than without it.
 */

/* The pool's gauges into counters: at each change of the pool (so that a
 * live counters file shows them), and for dcx_dci_iface_stats */
void uct_dcx_dci_gauges(uct_dcx_iface_t *iface, dcx_dci_stats_t *stats)
{
    stats->num_dci    = iface->pool.num;
    stats->created    = iface->pool.created;
    stats->kept       = iface->pool.kept;
    stats->waiters    = iface->pool.waiters - iface->pool.spill;
    stats->sig_period = iface->pool.sig_period;
    stats->sq_len     = iface->pool.sq_len;
    /* (under rand every DCI is shared: an ep never waits for one) */
    stats->free       = iface->policy->shared ?
                            iface->pool.limit :
                            iface->pool.free_top + iface->pool.limit -
                          iface->pool.created;
    stats->in_use     = iface->policy->shared ?
                            iface->pool.created :
                            iface->pool.created - iface->pool.free_top;
}

static void uct_dcx_dci_release(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
    ucs_assert(dci->flags & UCT_DCX_DCI_FLAG_BUSY);
    ucs_assert(iface->pool.free_top < iface->pool.num);
    uct_dcx_dci_unkeep(iface, dci);
    dci->flags &= ~UCT_DCX_DCI_FLAG_BUSY;
    dci->owner                               = NULL;
    iface->pool.free[iface->pool.free_top++] = dci->index;
    iface->cnt->dci.releases++;
    uct_dcx_dci_gauges(iface, &iface->cnt->dci);
}

/*
 * Unsignalled sends.  Most WRs go unsignalled (SIGNAL_PERIOD), so a DCI
 * whose last WRs were not signalled does not see itself drain: nothing
 * reports them.  That matters only when the DCI must go back to the pool
 * (an endpoint waits for a DCI, or the owner left), when the send buffers
 * those WRs hold are needed (none is free), or when a flush waits for them.
 * Then a signalled no-op behind them makes the device report them all;
 * while endpoints wait, every WR is signalled, so that DCIs drain as soon
 * as their work is done.
 *
 * The no-op is an RDMA WRITE of no bytes to this interface's own DCT: it
 * completes in order behind the WRs before it, and at the target it
 * accesses no memory (no key is checked) and takes no receive.  A SEND
 * would take one, outside flow control: a pool of more busy DCIs than the
 * DCT has receives posted would then drain at the pace of RNR retries.
 * An endpoint's probe (uct_dcx_ep_check) is the same WRITE to its peer,
 * for the same reason: UCP probes every endpoint of a worker at once.
 */
ucs_status_t uct_dcx_dci_post_nop(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                                  uct_dcx_ep_t *ep, const dcx_dc_dest_t *dest)
{
    dcx_send_wr_t wr;

    if (dci->avail == 0) {
        return UCS_ERR_NO_RESOURCE;
    }

    memset(&wr, 0, sizeof(wr));
    if (dest != NULL) {
        wr.dest = *dest;
    } else {
        uct_dcx_iface_self_dest(iface, &wr.dest);
    }
    wr.opcode = DCX_WR_RDMA_WRITE;
    return uct_dcx_dci_post(iface, dci, ep, &wr, NULL, 1);
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

    status = uct_dcx_dci_post_nop(iface, dci, NULL, NULL);
    if (status == UCS_OK) {
        iface->cnt->dci.drains++;
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
    if ((iface->pool.waiters > 0) ||
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

    for (i = 0; i < iface->pool.total; ++i) {
        if ((i != iface->pool.ctl) && (iface->pool.dcis[i].qp != NULL)) {
            uct_dcx_dci_drain(iface, &iface->pool.dcis[i]);
        }
    }
}

/* ep was refused a DCI: it waits.  The first waiter makes every lent DCI
 * drain: their unsignalled tails get a no-op, and from now on every WR is
 * signalled, until nobody waits. */
/* The time eps waited for a DCI since the number of waiters last changed
 * goes into the counters (the sum of every ep's wait) */
static void uct_dcx_dci_wait_account(uct_dcx_iface_t *iface)
{
    ucs_time_t now = ucs_get_time();

    /* (hybrid's eps on the shared DCI send: they do not wait) */
    if (iface->pool.waiters > iface->pool.spill) {
        iface->cnt->dci.wait_ns += (iface->pool.waiters - iface->pool.spill) *
                                   ucs_time_to_nsec(now -
                                                    iface->pool.wait_mark);
    }
    iface->pool.wait_mark = now;
}

/* One more waiter (accounted before) */
static void uct_dcx_dci_waiters_inc(uct_dcx_iface_t *iface)
{
    unsigned i;

    if (iface->pool.waiters++ > 0) {
        return;
    }
    iface->pool.sig_period = 1;
    for (i = 0; i < iface->pool.num; ++i) {
        if (iface->pool.dcis[i].flags & UCT_DCX_DCI_FLAG_BUSY) {
            uct_dcx_dci_drain(iface, &iface->pool.dcis[i]);
        }
    }
}

static void uct_dcx_dci_waiters_dec(uct_dcx_iface_t *iface)
{
    ucs_assert(iface->pool.waiters > 0);
    if (--iface->pool.waiters == 0) {
        iface->pool.sig_period = iface->pool.sig_period_cfg;
    }
}

static void uct_dcx_ep_dci_wait(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    if (ep->flags & UCT_DCX_EP_FLAG_DCI_WAIT) {
        return;
    }
    uct_dcx_dci_wait_account(iface);
    ep->flags |= UCT_DCX_EP_FLAG_DCI_WAIT;
    uct_dcx_dci_waiters_inc(iface);
}

/* ep does not wait for a DCI any more (it got one, or it leaves) */
static void uct_dcx_ep_dci_wait_end(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    if (!(ep->flags & UCT_DCX_EP_FLAG_DCI_WAIT)) {
        return;
    }
    uct_dcx_dci_wait_account(iface);
    ep->flags &= ~UCT_DCX_EP_FLAG_DCI_WAIT;
    uct_dcx_dci_waiters_dec(iface);
}

void uct_dcx_dci_set_spill(uct_dcx_iface_t *iface, int spill)
{
    if (iface->pool.spill == !!spill) {
        return;
    }
    uct_dcx_dci_wait_account(iface);
    iface->pool.spill = !!spill;
    if (spill) {
        uct_dcx_dci_waiters_inc(iface);
    } else {
        uct_dcx_dci_waiters_dec(iface);
    }
    uct_dcx_dci_gauges(iface, &iface->cnt->dci);
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

    for (i = 0; (i < iface->pool.num) && (iface->pool.kept > 0); ++i) {
        dci = &iface->pool.dcis[i];
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
        iface->cnt->dci.take_backs++;
        return dci;
    }
    return NULL;
}

static uct_dcx_dci_t *uct_dcx_dci_grow(uct_dcx_iface_t *iface);

/* dci, free or new, goes to an ep */
static uct_dcx_dci_t *uct_dcx_dci_lend(uct_dcx_iface_t *iface,
                                       uct_dcx_dci_t *dci)
{
    dci->flags |= UCT_DCX_DCI_FLAG_BUSY;
    iface->cnt->dci.gets++;
    return dci;
}

/* The free stack is empty (dcs policies): a DCI kept idle by another ep,
 * before a new one, so that the pool grows only as far as endpoints have
 * work in flight at once; NULL if neither.  A take is when the pool also
 * looks for DCIs left unused (uct_dcx_dci_pool_check). */
static UCS_F_NOINLINE uct_dcx_dci_t *
uct_dcx_dcs_dci_find(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    uct_dcx_dci_t *dci;

    uct_dcx_dci_pool_check(iface);
    if ((iface->pool.kept > 0) &&
        ((dci = uct_dcx_dci_take_back(iface, ep)) != NULL)) {
        return dci;
    }
    if ((iface->pool.created < iface->pool.limit) &&
        ((dci = uct_dcx_dci_grow(iface)) != NULL)) {
        return uct_dcx_dci_lend(iface, dci);
    }
    return NULL;
}

uct_dcx_dci_t *uct_dcx_dcs_dci_take(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    if (iface->pool.free_top > 0) {
        return uct_dcx_dci_lend(
            iface, &iface->pool.dcis[iface->pool.free[--iface->pool.free_top]]);
    }
    return uct_dcx_dcs_dci_find(iface, ep);
}

ucs_status_t uct_dcx_dcs_dci_refuse(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    if (iface->pool.created == 0) {
        /* the device refused the first DCI: nothing to wait for */
        return UCS_ERR_IO_ERROR;
    }
    iface->cnt->dci.refusals++;
    uct_dcx_ep_dci_wait(iface, ep);
    uct_dcx_dci_gauges(iface, &iface->cnt->dci);
    return UCS_ERR_NO_RESOURCE;
}

static ucs_status_t uct_dcx_dcs_dci_get(uct_dcx_iface_t *iface,
                                        uct_dcx_ep_t *ep)
{
    uct_dcx_dci_t *dci = uct_dcx_dcs_dci_take(iface, ep);

    if (dci == NULL) {
        return uct_dcx_dcs_dci_refuse(iface, ep);
    }
    uct_dcx_dcs_dci_assign(iface, ep, dci);
    return UCS_OK;
}

void uct_dcx_dcs_dci_assign(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                            uct_dcx_dci_t *dci)
{
    uct_dcx_ep_dci_wait_end(iface, ep);

    dci->owner  = ep;
    ep->dci     = dci->index;
    ep->last_sn = dci->sn; /* nothing of this ep is in flight there */
    ep->quota   = (iface->policy == &uct_dcx_policy_ops[UCT_DCX_POLICY_DCS]) ?
                      INT32_MAX :
                      (int32_t)iface->config.quota;
    uct_dcx_dci_gauges(iface, &iface->cnt->dci);
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
    if ((iface->pool.waiters > 0) && (iface->pool.free_top == 0)) {
        return UCS_ERR_NO_RESOURCE;
    }
    ep->quota = iface->config.quota;
    return UCS_OK;
}

/* dci has nothing in flight: its owner keeps it while nobody waits for a
 * DCI, else it goes back to the pool */
void uct_dcx_dcs_dci_idle(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
    if (!(dci->flags & UCT_DCX_DCI_FLAG_BUSY)) {
        return;
    }
    uct_dcx_dci_pool_check(iface);
    if ((dci->owner != NULL) && (iface->pool.waiters == 0)) {
        if (!(dci->flags & UCT_DCX_DCI_FLAG_KEPT)) {
            dci->flags |= UCT_DCX_DCI_FLAG_KEPT;
            iface->pool.kept++;
        }
        return;
    }
    if (dci->owner != NULL) {
        dci->owner->dci = UCT_DCX_DCI_NONE;
    }
    uct_dcx_dci_release(iface, dci);
}

void uct_dcx_dcs_ep_detach(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    uct_dcx_dci_t *dci;

    uct_dcx_ep_dci_wait_end(iface, ep);
    if (ep->dci == UCT_DCX_DCI_NONE) {
        return;
    }

    dci        = &iface->pool.dcis[ep->dci];
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
                      iface->pool.num);
}

static ucs_status_t uct_dcx_rand_dci_get(uct_dcx_iface_t *iface,
                                         uct_dcx_ep_t *ep)
{
    uct_dcx_dci_t *dci = &iface->pool.dcis[uct_dcx_rand_dci(iface, ep)];

    /* the DCI an ep hashes onto is created when the first ep needs it */
    if ((dci->qp == NULL) && (uct_dcx_dci_create(iface, dci) != UCS_OK)) {
        return UCS_ERR_IO_ERROR;
    }
    ep->dci     = dci->index;
    ep->last_sn = dci->sn;
    return UCS_OK;
}

static void uct_dcx_rand_ep_init(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    ep->dci   = UCT_DCX_DCI_NONE;
    ep->quota = INT32_MAX;
    /* a DCI now if it can be had (refused: the first send reports it) */
    (void)uct_dcx_rand_dci_get(iface, ep);
}

static void uct_dcx_rand_dci_idle(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
}

static void uct_dcx_rand_ep_detach(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    if (ep->dci != UCT_DCX_DCI_NONE) {
        uct_dcx_dci_detach_ep(iface, &iface->pool.dcis[ep->dci], ep);
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
                                  .shared    = 1},
    [UCT_DCX_POLICY_HYBRID]    = {.name      = "hybrid",
                                  .ep_init   = uct_dcx_hybrid_ep_init,
                                  .dci_get   = uct_dcx_hybrid_dci_get,
                                  .quota_out = uct_dcx_hybrid_quota_out,
                                  .dci_idle  = uct_dcx_hybrid_dci_idle,
                                  .ep_detach = uct_dcx_hybrid_ep_detach,
                                  .shared    = 0},
    [UCT_DCX_POLICY_STREAMS]   = {.name      = "streams",
                                  .ep_init   = uct_dcx_streams_ep_init,
                                  .dci_get   = uct_dcx_streams_dci_get,
                                  .quota_out = uct_dcx_dcs_quota_out,
                                  .dci_idle  = uct_dcx_streams_dci_idle,
                                  .ep_detach = uct_dcx_streams_ep_detach,
                                  .shared    = 1}};


/* ---------------------------------------------------------------------------
 * Pool creation
 * ------------------------------------------------------------------------- */

/*
 * A DCI's queue pair and WR rings.  The control DCI, created at open, fixes
 * the queue length, inline size and sges every DCI of the interface works
 * with; data DCIs come when first needed (uct_dcx_dci_grow, rand's
 * dci_get) and, with the dcs policies, go again after idling on the free
 * stack for DCI_IDLE_TIMEOUT (uct_dcx_dci_shrink).  Their sequence numbers
 * run on across a destroy and a re-creation, so that nothing that
 * remembered one can mistake the new DCI's WRs for the old one's.
 */
/* The WR rings of dci, whose queue pair was just created */
static int uct_dcx_dci_setup(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
    const int logged = uct_dcx_dci_is_shared(iface, dci) ||
                       (dci->index == iface->pool.ctl);
    const unsigned ring = iface->pool.ring_mask + 1;

    if ((dci->qp->max_send_wr < iface->pool.sq_len) ||
        (dci->qp->max_send_sge < iface->config.max_sge) ||
        (dci->qp->max_inline < iface->config.max_inline)) {
        return ENOMEM; /* less than the control DCI got: not usable */
    }

    dci->wr_ep     = ucs_calloc(ring, sizeof(*dci->wr_ep), "dcx_wr_ep");
    dci->wr_opcode = ucs_calloc(ring, sizeof(*dci->wr_opcode), "dcx_wr_opcode");
    /* DCIs shared by endpoints keep copies of their WRs in flight */
    dci->log       = logged ?
                         ucs_malloc(ring * iface->pool.log_stride, "dcx_wr_log") :
                         NULL;
    if ((dci->wr_ep == NULL) || (dci->wr_opcode == NULL) ||
        (logged && (dci->log == NULL))) {
        ucs_free(dci->wr_ep);
        ucs_free(dci->wr_opcode);
        ucs_free(dci->log);
        dci->wr_ep     = NULL;
        dci->wr_opcode = NULL;
        dci->log       = NULL;
        return ENOMEM;
    }

    dci->avail      = iface->pool.sq_len;
    dci->unsig      = 0;
    dci->next_flags = 0;
    dci->owner      = NULL;
    dci->flags &= UCT_DCX_DCI_FLAG_CTL;
    dci->check_sn   = dci->sn;
    dci->idle_since = ucs_get_time();
    return 0;
}

/* A data DCI, on first need (from the dcs policies' growth, rand or
 * streams) */
ucs_status_t uct_dcx_dci_create(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
    int ret;

    ucs_assert((dci->qp == NULL) && (dci->index != iface->pool.ctl));
    if (iface->pool.created >= iface->pool.limit) {
        return UCS_ERR_IO_ERROR; /* refused before: said then */
    }

    ret = uct_dcx_dci_qp_create(iface, dci);
    if (ret != 0) {
        dci->qp = NULL;
    } else if ((ret = uct_dcx_dci_setup(iface, dci)) != 0) {
        uct_dcx_dci_qp_destroy(iface, dci);
        dci->qp = NULL;
    }
    if (ret != 0) {
        /* the pool stays as it is: no retry (and no log line) per send */
        iface->pool.limit = iface->pool.created;
        ucs_error("dcx: %s: failed to create DCI %u (%s); the pool keeps the "
                  "%u data DCIs it has",
                  dcx_dev_name(iface->dev), dci->index, strerror(ret),
                  iface->pool.created);
        return UCS_ERR_IO_ERROR;
    }

    iface->pool.created++;
    iface->cnt->dci.creates++;
    iface->cnt->dci.high_water = ucs_max(iface->cnt->dci.high_water,
                                         iface->pool.created);
    uct_dcx_dci_gauges(iface, &iface->cnt->dci);
    ucs_debug("dcx: %s: DCI %u created (0x%x), %u of %u data DCIs exist",
              dcx_dev_name(iface->dev), dci->index, dci->qp->qp_num,
              iface->pool.created, iface->pool.num);
    return UCS_OK;
}

/* hybrid's shared DCI, when the pool first runs dry: not one of the pool's
 * NUM_DCI (pool.created, pool.limit), never destroyed before the interface */
ucs_status_t uct_dcx_dci_create_shared(uct_dcx_iface_t *iface)
{
    uct_dcx_dci_t *dci = &iface->pool.dcis[iface->pool.shared];
    int ret;

    ucs_assert((iface->pool.shared != UCT_DCX_DCI_NONE) && (dci->qp == NULL));
    if (dci->flags & UCT_DCX_DCI_FLAG_BROKEN) {
        return UCS_ERR_IO_ERROR; /* refused before: said then */
    }
    ret = dcx_qp_create(iface->pd, &iface->pool.attr, &dci->qp);
    if (ret != 0) {
        dci->qp = NULL;
    } else if ((ret = uct_dcx_dci_setup(iface, dci)) != 0) {
        dcx_qp_destroy(dci->qp);
        dci->qp = NULL;
    }
    if (ret != 0) {
        dci->flags |= UCT_DCX_DCI_FLAG_BROKEN;
        ucs_error("dcx: %s: failed to create the shared DCI (%s); endpoints "
                  "wait for a DCI of the pool instead",
                  dcx_dev_name(iface->dev), strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    iface->cnt->dci.creates++;
    ucs_debug("dcx: %s: shared DCI %u created (0x%x)", dcx_dev_name(iface->dev),
              dci->index, dci->qp->qp_num);
    return UCS_OK;
}

/* dci holds nothing: its queue pair and rings go (operations still queued
 * there never completed: cancelled) */
static void uct_dcx_dci_destroy(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
    uct_dcx_op_t *op;

    while (!ucs_queue_is_empty(&dci->ops)) {
        op = ucs_queue_pull_elem_non_empty(&dci->ops, uct_dcx_op_t, queue);
        uct_dcx_op_complete(iface, op, UCS_ERR_CANCELED);
    }
    if (dci->qp == NULL) {
        return;
    }
    if (dci->index == iface->pool.ctl) {
        dcx_qp_destroy(dci->qp);
    } else {
        uct_dcx_dci_qp_destroy(iface, dci);
    }
    ucs_free(dci->wr_ep);
    ucs_free(dci->wr_opcode);
    ucs_free(dci->log);
    dci->qp        = NULL;
    dci->wr_ep     = NULL;
    dci->wr_opcode = NULL;
    dci->log       = NULL;
    dci->avail     = 0;
    if ((dci->index != iface->pool.ctl) && (dci->index != iface->pool.shared)) {
        iface->pool.created--;
    }
}

/* dcs policies, the free stack is empty: a new DCI, if the pool may still
 * grow (the lowest index not in use); NULL if the device refused it */
static UCS_F_NOINLINE uct_dcx_dci_t *uct_dcx_dci_grow(uct_dcx_iface_t *iface)
{
    uct_dcx_dci_t *dci;
    unsigned i;

    for (i = 0; i < iface->pool.num; ++i) {
        dci = &iface->pool.dcis[i];
        if (dci->qp == NULL) {
            return (uct_dcx_dci_create(iface, dci) == UCS_OK) ? dci : NULL;
        }
    }
    ucs_assertv(0, "dcx: %u of %u DCIs exist and none is free",
                iface->pool.created, iface->pool.num);
    return NULL;
}

/*
 * dcs policies: a DCI that had nothing to do for dci_idle_timeout -- on the
 * free stack, or kept by an endpoint that did not send since -- is
 * destroyed; a kept one's endpoint takes a DCI from the pool again when it
 * sends.  Whether a DCI was used is seen from its sequence number, which
 * each look compares with the one before (nothing on the send path).
 * The pool is looked at, at most twice per timeout, when endpoints take
 * or give back DCIs and every UCT_DCX_DCI_CHECK_PERIOD send completion
 * batches: an interface whose traffic stopped altogether keeps its DCIs
 * until it sends again.
 */
static void uct_dcx_dci_shrink(uct_dcx_iface_t *iface, ucs_time_t now)
{
    unsigned i, n;
    uct_dcx_dci_t *dci;

    iface->pool.shrink_next = now + iface->pool.idle_timeout / 2;
    for (i = 0; i < iface->pool.num; ++i) {
        dci = &iface->pool.dcis[i];
        if (dci->qp == NULL) {
            continue;
        }
        if ((dci->check_sn != dci->sn) || !uct_dcx_dci_is_drained(dci) ||
            ((dci->flags & UCT_DCX_DCI_FLAG_BUSY) &&
             !(dci->flags & UCT_DCX_DCI_FLAG_KEPT)) ||
            (dci->flags & (UCT_DCX_DCI_FLAG_ERR | UCT_DCX_DCI_FLAG_CANCEL))) {
            /* used since the last look, or in use */
            dci->check_sn   = dci->sn;
            dci->idle_since = now;
            continue;
        }
        if ((now - dci->idle_since) <= iface->pool.idle_timeout) {
            continue;
        }
        if (dci->flags & UCT_DCX_DCI_FLAG_KEPT) {
            uct_dcx_dci_unkeep(iface, dci);
            dci->owner->dci = UCT_DCX_DCI_NONE;
            dci->owner      = NULL;
            dci->flags &= ~UCT_DCX_DCI_FLAG_BUSY;
        }
        ucs_debug("dcx: %s: DCI %u unused for %.3f s: destroyed",
                  dcx_dev_name(iface->dev), dci->index,
                  ucs_time_to_sec(now - dci->idle_since));
        uct_dcx_dci_destroy(iface, dci);
        iface->cnt->dci.destroys++;
    }

    /* the free stack keeps the DCIs that are left, in their order */
    for (i = n = 0; i < iface->pool.free_top; ++i) {
        if (iface->pool.dcis[iface->pool.free[i]].qp != NULL) {
            iface->pool.free[n++] = iface->pool.free[i];
        }
    }
    iface->pool.free_top = n;
    uct_dcx_dci_gauges(iface, &iface->cnt->dci);
}

UCS_F_NOINLINE void uct_dcx_dci_pool_check(uct_dcx_iface_t *iface)
{
    ucs_time_t now;

    iface->pool.check_countdown = UCT_DCX_DCI_CHECK_PERIOD;
    if ((iface->pool.idle_timeout == UCS_TIME_INFINITY) ||
        iface->policy->shared) {
        return;
    }
    now = ucs_get_time();
    if (now >= iface->pool.shrink_next) {
        uct_dcx_dci_shrink(iface, now);
    }
}

ucs_status_t uct_dcx_dci_pool_init(uct_dcx_iface_t *iface,
                                   const uct_dcx_iface_config_t *config)
{
    const dcx_dev_caps_t *caps = iface->caps;
    const int hybrid           = config->policy == UCT_DCX_POLICY_HYBRID;
    const unsigned pool        = uct_dcx_pool_size(config);
    const unsigned total       = uct_dcx_config_dci_total(config);
    dcx_qp_attr_t *attr        = &iface->pool.attr;
    uct_dcx_dci_t *dci;
    unsigned i;
    int ret;

    iface->pool.num             = pool;
    iface->pool.wr_replay       = NULL;
    iface->pool.ctl             = pool;
    iface->pool.shared          = hybrid ? pool + 1 : UCT_DCX_DCI_NONE;
    iface->pool.total           = total;
    iface->pool.spill           = 0;
    iface->pool.stream_qp       = NULL;
    iface->pool.stream_refs     = 0;
    iface->pool.free_top        = 0;
    iface->pool.waiters         = 0;
    iface->pool.kept            = 0;
    iface->pool.created         = 0;
    iface->pool.limit           = pool;
    iface->pool.idle_timeout    = config->dci_idle_timeout;
    iface->pool.shrink_next     = 0;
    iface->pool.check_countdown = UCT_DCX_DCI_CHECK_PERIOD;
    iface->pool.wait_mark       = 0;
    /* each DCI a cache line apart (uct_dcx_dci_t) */
    if (posix_memalign((void **)&iface->pool.dcis, UCS_SYS_CACHE_LINE_SIZE,
                       total * sizeof(*iface->pool.dcis)) != 0) {
        iface->pool.dcis = NULL;
    } else {
        memset(iface->pool.dcis, 0, total * sizeof(*iface->pool.dcis));
    }
    iface->pool.free = ucs_calloc(total, sizeof(*iface->pool.free),
                                  "dcx_dci_free");
    if ((iface->pool.dcis == NULL) || (iface->pool.free == NULL)) {
        ucs_error("dcx: %s: failed to allocate a pool of %u DCIs",
                  dcx_dev_name(iface->dev), total);
        goto err_free;
    }
    for (i = 0; i < total; ++i) {
        ucs_queue_head_init(&iface->pool.dcis[i].ops);
        iface->pool.dcis[i].index = i;
    }

    memset(attr, 0, sizeof(*attr));
    attr->type          = DCX_QPT_DCI;
    attr->send_cq       = iface->tx_cq;
    attr->max_send_wr   = ucs_min(config->tx_queue_len, caps->max_qp_wr);
    attr->max_send_sge  = ucs_min(caps->max_sge, (uint32_t)UCT_DCX_MAX_SGE);
    attr->max_inline    = caps->max_inline;
    attr->max_rd_atomic = caps->max_rd_atomic;
    attr->timeout       = iface->config.timeout;
    attr->retry_cnt     = iface->config.retry_count;
    attr->rnr_retry     = iface->config.rnr_retry;

    /* the control DCI's queue pair sets the limits of all */
    dci = &iface->pool.dcis[iface->pool.ctl];
    ret = dcx_qp_create(iface->pd, attr, &dci->qp);
    if (ret != 0) {
        ucs_error("dcx: %s: failed to create the control DCI: %s",
                  dcx_dev_name(iface->dev), strerror(ret));
        dci->qp = NULL;
        goto err_free;
    }
    iface->pool.sq_len       = dci->qp->max_send_wr;
    iface->config.max_sge    = dci->qp->max_send_sge;
    iface->config.max_inline = dci->qp->max_inline;
    iface->pool.ring_mask    = ucs_roundup_pow2(iface->pool.sq_len) - 1;
    iface->pool.log_stride   = ucs_align_up(sizeof(uct_dcx_wr_log_t) +
                                                iface->config.max_inline,
                                            8);
    ret                      = uct_dcx_dci_setup(iface, dci);
    if (ret != 0) {
        ucs_error("dcx: %s: failed to allocate the WR ring of the control DCI",
                  dcx_dev_name(iface->dev));
        goto err_destroy;
    }

    uct_dcx_streams_attr(iface, config);

    /* a WR being posted again is copied here first (a log entry holds up
     * to UCT_DCX_MAX_SGE sges and the inline bytes: too big for alloca) */
    iface->pool.wr_replay = ucs_malloc(iface->pool.log_stride, "dcx_wr_replay");
    if (iface->pool.wr_replay == NULL) {
        ucs_error("dcx: failed to allocate the WR replay buffer");
        goto err_destroy;
    }

    /* A completion every sig_period WRs at least: shared DCIs every half
     * queue by default, lent ones every UCT_DCX_SIG_PERIOD_LENT (their
     * unsignalled tails are reported on demand: uct_dcx_dci_drain).  At
     * most a queue: a full queue then always holds a signalled WR. */
    if (config->sig_period != 0) {
        iface->pool.sig_period_cfg = ucs_min(config->sig_period,
                                             (unsigned)iface->pool.sq_len);
    } else if (iface->policy->shared) {
        iface->pool.sig_period_cfg = ucs_max(iface->pool.sq_len / 2u, 1u);
    } else {
        iface->pool.sig_period_cfg = ucs_max(ucs_min(iface->pool.sq_len / 2u,
                                                     UCT_DCX_SIG_PERIOD_LENT),
                                             1u);
    }
    iface->pool.sig_period = iface->pool.sig_period_cfg;

    iface->pool.dcis[iface->pool.ctl].flags |= UCT_DCX_DCI_FLAG_CTL;
    uct_dcx_dci_gauges(iface, &iface->cnt->dci);
    return UCS_OK;

err_destroy:
    uct_dcx_dci_destroy(iface, dci);
err_free:
    ucs_free(iface->pool.wr_replay);
    iface->pool.wr_replay = NULL;
    free(iface->pool.dcis);
    ucs_free(iface->pool.free);
    iface->pool.dcis = NULL;
    return UCS_ERR_IO_ERROR;
}

void uct_dcx_dci_pool_cleanup(uct_dcx_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->pool.total; ++i) {
        uct_dcx_dci_destroy(iface, &iface->pool.dcis[i]);
    }
    free(iface->pool.dcis);
    ucs_free(iface->pool.free);
    ucs_free(iface->pool.wr_replay);
}


/* ---------------------------------------------------------------------------
 * Operations and completions
 * ------------------------------------------------------------------------- */

/* Copies a WR posted on a DCI that keeps a log (shared between endpoints)
 * into the log entry of its sn (uct_dcx_dci_replay, dcx_dci_comp.c) */
void uct_dcx_dci_log_wr(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci, uint64_t sn,
                        const dcx_send_wr_t *wr)
{
    uct_dcx_wr_log_t *entry =
        (uct_dcx_wr_log_t *)(dci->log + (sn & iface->pool.ring_mask) *
                                            iface->pool.log_stride);
    char *data    = (char *)(entry + 1);
    size_t length = 0;
    unsigned i;

    entry->wr = *wr;
    /* (hybrid's shared DCI: counted here, where the WRs of shared DCIs pass
     * anyway, with nothing on the send path of lent DCIs) */
    if ((dci->index == iface->pool.shared) &&
        (dci->wr_ep[sn & iface->pool.ring_mask] != NULL)) {
        iface->cnt->dci.shared_wrs++;
    }
    if (wr->flags & DCX_SEND_INLINE) {
        /* the caller's buffers are gone after the post: keep the bytes */
        for (i = 0; i < wr->num_sge; ++i) {
            if (wr->sg_list[i].length == 0) {
                continue; /* a zero-length buffer may be NULL */
            }
            memcpy(data + length, (void *)(uintptr_t)wr->sg_list[i].addr,
                   wr->sg_list[i].length);
            length += wr->sg_list[i].length;
        }
        entry->sge[0].addr   = 0; /* set when posted again */
        entry->sge[0].length = length;
        entry->sge[0].lkey   = 0;
        entry->wr.num_sge    = 1;
    } else if (wr->num_sge > 0) {
        /* (a strided-key configure has no sges: sg_list may be NULL) */
        memcpy(entry->sge, wr->sg_list, wr->num_sge * sizeof(*wr->sg_list));
    }
}

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
        if (dci->wr_ep[sn & iface->pool.ring_mask] == ep) {
            dci->wr_ep[sn & iface->pool.ring_mask] = NULL;
        }
    }
}

/* ---------------------------------------------------------------------------
 * An endpoint's idle DCI back to the pool
 * ------------------------------------------------------------------------- */

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
