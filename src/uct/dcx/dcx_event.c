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
 *
 * Before arming, an arm looks at the CQs for up to ARM_POLL (where the
 * device can look without taking completions, dcx_cq_ready): a sleep and
 * its wake-up cost more than that, and the answer of a peer that is awake
 * (a ping-pong's, a reply to what was just sent) usually comes sooner.
 * Found, the arm answers UCS_ERR_BUSY without having armed anything, so
 * that the completion fires no event and the sender wakes nobody.  The
 * time counts from the first arm after a progress call that took
 * completions: arms that keep answering BUSY for work that brings no
 * completion (a timer of the device's) spend it once, then arm.  Looks
 * that keep finding nothing stop (UCT_DCX_ARM_MISSES), so a process whose
 * messages come seldom, or a thread that arms before it sends itself,
 * does not pay the look at every arm.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.h"

#include <ucs/debug/log.h>
#include <ucs/time/time.h>
#include <limits.h>
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

void uct_dcx_iface_arm_init(uct_dcx_iface_t *iface,
                            const uct_dcx_iface_config_t *config)
{
    iface->progressed  = 0;
    iface->arm.seen    = ULONG_MAX; /* the first arm looks */
    iface->arm.since   = 0;
    iface->arm.poll    = 0;
    iface->arm.misses  = 0;
    iface->arm.skipped = 0;
    iface->arm.hit     = 0;
    /* a worker of several threads (UCP's multi-threaded worker makes its
     * UCT worker SERIALIZED) arms under the caller's lock: a look there
     * would hold every other thread's sends back */
    if ((iface->channel != NULL) &&
        (iface->super.worker->thread_mode == UCS_THREAD_MODE_SINGLE)) {
        iface->arm.poll = ucs_time_from_sec(config->arm_poll);
    }
}

/* Looks in a row that spent their whole time finding nothing, or found
 * work that made no completion for the progress calls after them (the
 * device's timers), after which arms stop looking (the caller's answers
 * come later than that, or the caller makes them itself after arming, as
 * a single-threaded UCT user does); one arm in UCT_DCX_ARM_PROBE looks
 * again, a found answer resuming the looks */
#define UCT_DCX_ARM_MISSES 4
#define UCT_DCX_ARM_PROBE  16

/* Whether the device can look at both CQs now: asked at the arm, not when
 * the interface is made, since a backend may settle how a CQ is polled
 * only once the first queue uses it */
static int uct_dcx_iface_can_look(const uct_dcx_iface_t *iface)
{
    return dcx_cq_can_look(iface->rx_cq) && dcx_cq_can_look(iface->tx_cq);
}

static int uct_dcx_iface_arm_ready(uct_dcx_iface_t *iface, unsigned events)
{
    return dcx_cq_ready(iface->rx_cq) ||
           ((events & UCT_EVENT_SEND_COMP) && dcx_cq_ready(iface->tx_cq));
}

/* 1 if a CQ the arm is for has something before the time runs out */
static int uct_dcx_iface_arm_look(uct_dcx_iface_t *iface, unsigned events)
{
    uct_dcx_arm_t *arm = &iface->arm;
    ucs_time_t now     = ucs_get_time();
    ucs_time_t end;

    if (iface->progressed != arm->seen) {
        arm->seen  = iface->progressed;
        arm->since = now;
        if (arm->hit) {
            arm->misses = 0; /* the last look found completions */
        }
    } else if (arm->hit && (arm->misses < UCT_DCX_ARM_MISSES)) {
        ++arm->misses; /* it found work that made none (a timer) */
    }
    arm->hit = 0;
    end      = arm->since + arm->poll;
    if (((int64_t)(now - end) >= 0) || ((arm->misses >= UCT_DCX_ARM_MISSES) &&
                                        (++arm->skipped < UCT_DCX_ARM_PROBE))) {
        /* the time was spent, or looks do not pay: one look */
        return uct_dcx_iface_arm_ready(iface, events);
    }
    arm->skipped = 0;
    iface->cnt->arm.looks++;
    do {
        if (uct_dcx_iface_arm_ready(iface, events)) {
            arm->hit = 1; /* judged by the next arm */
            iface->cnt->arm.found++;
            return 1;
        }
        now = ucs_get_time();
    } while ((int64_t)(now - end) < 0);
    if (arm->misses < UCT_DCX_ARM_MISSES) {
        ++arm->misses;
    }
    return 0;
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

    if (iface->strided.cfgq.out != 0) {
        /* the strided-key configure queue's CQ raises no event: its
         * completions, which operations wait for, come by polling */
        ucs_trace("dcx: iface %p: strided-key configures in flight, not "
                  "armed",
                  iface);
        return UCS_ERR_BUSY;
    }

    if ((iface->arm.poll != 0) && (events != 0) &&
        uct_dcx_iface_can_look(iface) &&
        uct_dcx_iface_arm_look(iface, events)) {
        ucs_trace("dcx: iface %p: work came before arming", iface);
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
