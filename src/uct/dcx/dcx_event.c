/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: wake-up events.
 *
 * Both CQs of an interface sit on one completion channel of the device;
 * its fd is the interface's event fd.  Arming collects the events that
 * fired since the last arm (any means the caller has work: UCS_ERR_BUSY,
 * as UCX's IB transports answer), then arms the CQs for the events asked
 * for, then collects again: a CQ armed while it holds unpolled completions
 * fires at once, so a completion that arrived after the caller's last
 * progress is reported as BUSY instead of being slept through.
 *
 * Send completions need the receive CQ armed too: flow control grants,
 * which let pending sends go, arrive as receives.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.h"

#include <ucs/debug/log.h>
#include <string.h>


static UCS_F_NOINLINE ucs_status_t
uct_dcx_iface_no_events(uct_dcx_iface_t *iface, const char *what)
{
    ucs_error("dcx: %s: %s: the device has no completion channels (no "
              "UCT_IFACE_FLAG_EVENT_FD)",
              dcx_dev_name(iface->dev), what);
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t uct_dcx_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    uct_dcx_iface_t *iface = ucs_derived_of(tl_iface, uct_dcx_iface_t);

    if (iface->channel == NULL) {
        return uct_dcx_iface_no_events(iface, "event_fd_get");
    }
    *fd_p = iface->channel->fd;
    return UCS_OK;
}

/* Collects every pending event; returns how many there were */
static unsigned uct_dcx_iface_collect_events(uct_dcx_iface_t *iface)
{
    unsigned count = 0;
    dcx_cq_t *cq;

    while (dcx_comp_channel_get_event(iface->channel, &cq) == 0) {
        ++count;
    }
    return count;
}

static ucs_status_t uct_dcx_iface_arm_cq(uct_dcx_iface_t *iface, dcx_cq_t *cq,
                                         const char *name)
{
    int ret = dcx_cq_req_notify(cq);

    if (ret != 0) {
        ucs_error("dcx: %s: failed to arm the %s CQ: %s",
                  dcx_dev_name(iface->dev), name, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t uct_dcx_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    uct_dcx_iface_t *iface = ucs_derived_of(tl_iface, uct_dcx_iface_t);
    const unsigned known   = UCT_EVENT_SEND_COMP | UCT_EVENT_RECV;
    ucs_status_t status;

    if (iface->channel == NULL) {
        return uct_dcx_iface_no_events(iface, "event_arm");
    }
    if (events & ~known) {
        ucs_error("dcx: %s: event_arm: events 0x%x not supported (supported: "
                  "0x%x)",
                  dcx_dev_name(iface->dev), events & ~known, known);
        return UCS_ERR_INVALID_PARAM;
    }

    if (uct_dcx_iface_collect_events(iface) > 0) {
        ucs_trace("dcx: iface %p: events pending, not armed", iface);
        return UCS_ERR_BUSY;
    }

    if (events & UCT_EVENT_SEND_COMP) {
        status = uct_dcx_iface_arm_cq(iface, iface->tx_cq, "send");
        if (status != UCS_OK) {
            return status;
        }
    }
    if (events != 0) {
        status = uct_dcx_iface_arm_cq(iface, iface->rx_cq, "receive");
        if (status != UCS_OK) {
            return status;
        }
    }

    if (uct_dcx_iface_collect_events(iface) > 0) {
        ucs_trace("dcx: iface %p: completions arrived before the arm", iface);
        return UCS_ERR_BUSY;
    }
    ucs_trace("dcx: iface %p: armed for events 0x%x", iface, events);
    return UCS_OK;
}
