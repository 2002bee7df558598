/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: where tag-matching offload pays, from the device's
 * performance model (dcx_dev_caps_t: latency, bandwidth, the CPU cost of a
 * post and of a tag-list operation).  Two sizes come out of it, and UCP
 * takes both from the interface's attributes:
 *
 *  - The largest eager tagged message (the receive buffer size, so
 *    tag.eager.max_zcopy, which caps UCP's rendezvous threshold on the tag
 *    lane).  An eager message that arrives before its receive costs the
 *    receiver one copy more than a rendezvous does (from the receive buffer
 *    to the user's); a rendezvous that the receiver serves in software costs
 *    a round trip more (the read and its reply) and a post on each side.
 *    They break even at (2 * latency + 2 * overhead) * bandwidth bytes.
 *
 *  - The smallest receive worth posting to the device (tag.recv.min_recv,
 *    which UCP takes as its offload threshold when it is larger than
 *    UCX_TM_THRESH).  A posted eager receive saves the copy from the receive
 *    buffer (length / bandwidth) when the message comes after it; it costs a
 *    list operation to add and, when the message comes first, one to remove.
 *    It pays from 2 * tm_op * bandwidth bytes on.  A posted rendezvous
 *    receive saves a round trip, so every receive above the eager maximum
 *    is worth posting.
 *
 * The receive buffer size is "auto" by default (UCX_DCX_TM_SEG_SIZE).  The
 * smallest receive is 0 by default (UCX_DCX_TM_MIN_RECV), so that UCP's own
 * threshold decides alone, as it does with UCX's transports: UCP takes the
 * larger of the two, and a user's UCX_TM_THRESH (or one set through
 * ucp_config_modify, which the interface cannot see) must hold as set.
 * "auto" is the model's value for a user who wants it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.h"

#include <ucs/sys/math.h>
#include <ucs/sys/string.h>

/* automatic receive buffers stay within this, whatever the model says:
 * each posted receive holds one */
#define UCT_DCX_TM_SEG_AUTO_MAX (64 * UCS_KBYTE)

static size_t uct_dcx_tm_model_bytes(double ns, const dcx_dev_caps_t *caps)
{
    return (size_t)(ns * caps->bandwidth_Bps / 1e9);
}

size_t uct_dcx_tm_seg_size(const uct_dcx_iface_config_t *config,
                           const dcx_dev_caps_t *caps)
{
    size_t eager;

    if (config->tm_seg_size != UCS_MEMUNITS_AUTO) {
        return ucs_max(config->seg_size, config->tm_seg_size);
    }
    eager = uct_dcx_tm_model_bytes(2.0 * (caps->latency_ns + caps->overhead_ns),
                                   caps);
    eager = ucs_min(ucs_align_up(eager, UCS_KBYTE), UCT_DCX_TM_SEG_AUTO_MAX);
    return ucs_min(ucs_max(config->seg_size, eager), caps->max_msg_size);
}

size_t uct_dcx_tm_min_recv(const uct_dcx_iface_config_t *config,
                           const dcx_dev_caps_t *caps, size_t eager_max)
{
    size_t min_recv;

    if (config->tm_min_recv != UCS_MEMUNITS_AUTO) {
        return config->tm_min_recv;
    }
    min_recv = uct_dcx_tm_model_bytes(2.0 * caps->tm_op_ns, caps);
    return ucs_min(min_recv, eager_max + 1);
}
