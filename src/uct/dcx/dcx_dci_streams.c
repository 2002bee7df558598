/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the streams policy.  One DCI with stream channels
 * (DCX_CAP_DCI_STREAMS) carries every endpoint's work: pool entry i
 * (iface->pool.dcis[i]) is its stream i, with its own sequence numbers, WR
 * rings and send queue, so the rest of the transport sees the streams as
 * the DCIs of a shared pool (as under rand).  An endpoint is hashed onto a
 * stream at creation.  The device keeps order within a stream only, and an
 * error stops only its stream: once the stream's flushed WRs have all
 * completed (they hold its send queue until then), that stream is reset
 * and its healthy endpoints' WRs are posted again (the replay of shared
 * DCIs), the other streams going on untouched.  The queue pair behind the
 * streams (shared, its attributes, the restart of one stream) is in
 * dcx_dci_qp.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <string.h>


/* Fibonacci hashing of the ep's creation number spreads consecutive eps
 * evenly over the streams */
static uint16_t uct_dcx_streams_of(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    return (uint16_t)((((uint64_t)ep->seq * 0x9e3779b97f4a7c15ull) >> 32) %
                      iface->pool.num);
}

ucs_status_t uct_dcx_streams_dci_get(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    uct_dcx_dci_t *dci = &iface->pool.dcis[uct_dcx_streams_of(iface, ep)];

    /* the DCI comes with the first ep; a stream's rings with its first */
    if ((dci->qp == NULL) && (uct_dcx_dci_create(iface, dci) != UCS_OK)) {
        return UCS_ERR_IO_ERROR;
    }
    ep->dci     = dci->index;
    ep->last_sn = dci->sn;
    return UCS_OK;
}

void uct_dcx_streams_ep_init(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    ep->dci   = UCT_DCX_DCI_NONE;
    ep->quota = INT32_MAX;
    /* a stream now if it can be had (refused: the first send reports it) */
    (void)uct_dcx_streams_dci_get(iface, ep);
}

void uct_dcx_streams_dci_idle(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
    /* streams are never lent: nothing to give back */
}

void uct_dcx_streams_ep_detach(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    if (ep->dci != UCT_DCX_DCI_NONE) {
        uct_dcx_dci_detach_ep(iface, &iface->pool.dcis[ep->dci], ep);
        ep->dci = UCT_DCX_DCI_NONE;
    }
}
