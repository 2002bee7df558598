/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the exports for tests and diagnostics (dcx_* names, so
 * that the module's export list keeps them: dcx_dci_stats.h,
 * dcx_strided_stats.h).  They take a UCT interface or endpoint of any
 * transport and answer only for a dcx one, recognised in one place
 * (uct_dcx_diag_iface) by its close function, which the interface's ops
 * never change (the progress function does, with tag matching).  They read
 * the state of the objects and call nothing of the fast path.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"
#include "dcx_strided_stats.h"

/* tl_iface as a dcx interface, or NULL if it is not one */
static uct_dcx_iface_t *uct_dcx_diag_iface(uct_iface_h tl_iface)
{
    if ((tl_iface == NULL) ||
        (tl_iface->ops.iface_close != uct_dcx_iface_ops.iface_close)) {
        return NULL;
    }
    return ucs_derived_of(tl_iface, uct_dcx_iface_t);
}

__attribute__((visibility("default"))) int
dcx_dci_iface_stats(uct_iface_h tl_iface, dcx_dci_stats_t *stats)
{
    uct_dcx_iface_t *iface = uct_dcx_diag_iface(tl_iface);

    if (iface == NULL) {
        return -1;
    }
    *stats = iface->cnt->dci;
    uct_dcx_dci_gauges(iface, stats);
    return 0;
}

__attribute__((visibility("default"))) int dcx_dci_ep_index(uct_ep_h tl_ep)
{
    uct_dcx_ep_t *ep;

    if ((tl_ep == NULL) || (uct_dcx_diag_iface(tl_ep->iface) == NULL)) {
        return -2;
    }
    ep = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    return (ep->dci == UCT_DCX_DCI_NONE) ? -1 : (int)ep->dci;
}

__attribute__((visibility("default"))) int
dcx_fc_iface_stats(uct_iface_h tl_iface, dcx_fc_stats_t *stats)
{
    uct_dcx_iface_t *iface = uct_dcx_diag_iface(tl_iface);

    if (iface == NULL) {
        return -1;
    }
    *stats = iface->cnt->fc;
    return 0;
}

__attribute__((visibility("default"))) int
dcx_rx_iface_stats(uct_iface_h tl_iface, dcx_rx_stats_t *stats)
{
    uct_dcx_iface_t *iface = uct_dcx_diag_iface(tl_iface);

    if (iface == NULL) {
        return -1;
    }
    stats->reposts  = iface->rx.reposts;
    stats->reposted = iface->rx.reposted;
    stats->posted   = iface->rx.posted;
    stats->target   = iface->rx.target;
    stats->batch    = iface->rx.repost;
    return 0;
}

__attribute__((visibility("default"))) int
dcx_strided_iface_stats(uct_iface_h tl_iface, dcx_strided_stats_t *stats)
{
    uct_dcx_iface_t *iface = uct_dcx_diag_iface(tl_iface);

    if (iface == NULL) {
        return -1;
    }
    *stats = iface->strided.stats;
    return 0;
}
