/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: what an interface keeps about its peers and endpoints
 * below the send and receive paths: the address handles of the peer ports
 * it talks to, the side structure of an endpoint (uct_dcx_ep_ext_t) with
 * its index by id (the id credit grants name), and what a failed work
 * request says about its peer (the status an endpoint fails with).  It
 * calls no other file of the transport: every object above uses it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <string.h>


/* ---------------------------------------------------------------------------
 * Failures
 * ------------------------------------------------------------------------- */

ucs_status_t uct_dcx_status(dcx_wc_status_t status)
{
    switch (status) {
    case DCX_WC_SUCCESS:
        return UCS_OK;
    case DCX_WC_RETRY_EXC_ERR:
    case DCX_WC_RNR_RETRY_EXC_ERR:
        /* peer dead, unknown DCT or DC key mismatch */
        return UCS_ERR_ENDPOINT_TIMEOUT;
    case DCX_WC_REM_ACCESS_ERR:
    case DCX_WC_REM_INV_REQ_ERR:
    case DCX_WC_REM_OP_ERR:
        /* the peer refused: UCP treats it as a failure of that peer */
        return UCS_ERR_CONNECTION_RESET;
    case DCX_WC_WR_FLUSH_ERR:
        return UCS_ERR_CANCELED;
    default:
        return UCS_ERR_IO_ERROR;
    }
}


/* ---------------------------------------------------------------------------
 * Peer ports: one address handle each, shared by the endpoints to it
 * ------------------------------------------------------------------------- */

void uct_dcx_iface_peers_init(uct_dcx_iface_t *iface)
{
    iface->peers     = NULL;
    iface->num_peers = 0;
    iface->max_peers = 0;
}

void uct_dcx_iface_peers_cleanup(uct_dcx_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->num_peers; ++i) {
        dcx_ah_destroy(iface->peers[i].ah);
    }
    ucs_free(iface->peers);
}

/* The address handle of the peer port addr (len bytes): the one made when
 * the interface first met it, or a new one */
ucs_status_t uct_dcx_iface_peer_ah(uct_dcx_iface_t *iface, const uint8_t *addr,
                                   size_t len, dcx_ah_t **ah_p)
{
    uct_dcx_peer_t *peers;
    dcx_ah_t *ah;
    unsigned i;
    int ret;

    for (i = 0; i < iface->num_peers; ++i) {
        if ((iface->peers[i].len == len) &&
            !memcmp(iface->peers[i].addr, addr, len)) {
            *ah_p = iface->peers[i].ah;
            return UCS_OK;
        }
    }

    if (len > DCX_DEV_ADDR_MAX) {
        ucs_error("dcx: %s: peer port address of %zu bytes is too long",
                  dcx_dev_name(iface->dev), len);
        return UCS_ERR_INVALID_ADDR;
    }

    ret = dcx_ah_create(iface->pd, addr, len, &ah);
    if (ret != 0) {
        ucs_error("dcx: %s: cannot create an address handle for a peer "
                  "port: %s",
                  dcx_dev_name(iface->dev), strerror(ret));
        return UCS_ERR_INVALID_ADDR;
    }

    if (iface->num_peers == iface->max_peers) {
        peers = ucs_realloc(iface->peers,
                            sizeof(*peers) * ucs_max(8u, iface->max_peers * 2),
                            "dcx_peers");
        if (peers == NULL) {
            ucs_error("dcx: failed to grow the peer table");
            dcx_ah_destroy(ah);
            return UCS_ERR_NO_MEMORY;
        }
        iface->peers     = peers;
        iface->max_peers = ucs_max(8u, iface->max_peers * 2);
    }

    iface->peers[iface->num_peers].ah  = ah;
    iface->peers[iface->num_peers].len = len;
    memcpy(iface->peers[iface->num_peers].addr, addr, len);
    iface->num_peers++;
    *ah_p = ah;
    return UCS_OK;
}


/* ---------------------------------------------------------------------------
 * Side structures of endpoints (uct_dcx_ep_ext_t), indexed by id
 * ------------------------------------------------------------------------- */

/* Gives ep its side structure if it has none yet, and indexes it by a new
 * id (the one credit grants name) */
UCS_F_NOINLINE ucs_status_t uct_dcx_ep_ext_get(uct_dcx_iface_t *iface,
                                               uct_dcx_ep_t *ep)
{
    uct_dcx_ep_ext_t *ext;
    khiter_t it;
    int ret;

    if (ep->ext != NULL) {
        return UCS_OK;
    }

    ext = ucs_calloc(1, sizeof(*ext), "dcx_ep_ext");
    if (ext == NULL) {
        ucs_error("dcx: %s: ep %p: failed to allocate its pending/flow "
                  "control state",
                  dcx_dev_name(iface->dev), ep);
        return UCS_ERR_NO_MEMORY;
    }
    ext->ep = ep;
    ext->id = ++iface->next_ep_id;
    ucs_queue_head_init(&ext->pending_q);
    ucs_queue_head_init(&ext->invalidate_comps);
    ucs_arbiter_group_init(&ext->arb_group);
    ucs_arbiter_elem_init(&ext->arb_elem);

    it = kh_put(uct_dcx_eps, &iface->eps, ext->id, &ret);
    if (ret < 0) {
        ucs_error("dcx: %s: ep %p: failed to index its state",
                  dcx_dev_name(iface->dev), ep);
        ucs_free(ext);
        return UCS_ERR_NO_MEMORY;
    }
    kh_val(&iface->eps, it) = ep;
    ep->ext                 = ext;
    return UCS_OK;
}

/* ep goes away: its side structure, if any, with its index entry */
void uct_dcx_ep_ext_release(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    khiter_t it;

    if (ep->ext == NULL) {
        return;
    }
    it = kh_get(uct_dcx_eps, &iface->eps, ep->ext->id);
    if (it != kh_end(&iface->eps)) {
        kh_del(uct_dcx_eps, &iface->eps, it);
    }
    ucs_free(ep->ext);
    ep->ext = NULL;
}
