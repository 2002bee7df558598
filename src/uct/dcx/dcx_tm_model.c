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
 * Both are "auto" by default (UCX_DCX_TM_SEG_SIZE, UCX_DCX_TM_MIN_RECV).  A
 * user who sets UCP's own threshold (UCX_TM_THRESH, or UCX_<prefix>_TM_THRESH
 * for a prefixed configuration) gets exactly that: UCP takes the larger of
 * its threshold and min_recv, so the automatic min_recv is 0 then.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.h"

#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <string.h>

/* automatic receive buffers stay within this, whatever the model says:
 * each posted receive holds one */
#define UCT_DCX_TM_SEG_AUTO_MAX (64 * UCS_KBYTE)

extern char **environ;

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

/* Whether UCP's offload threshold is set in the environment: a variable
 * UCX_TM_THRESH or UCX_<prefix>_TM_THRESH */
static int uct_dcx_tm_user_thresh(void)
{
    static const char suffix[] = "_TM_THRESH";
    const size_t slen          = sizeof(suffix) - 1;
    const char *eq;
    char **env;
    size_t len;

    for (env = environ; (env != NULL) && (*env != NULL); ++env) {
        if (strncmp(*env, "UCX_", 4) != 0) {
            continue;
        }
        eq = strchr(*env, '=');
        if (eq == NULL) {
            continue;
        }
        len = eq - *env;
        if ((len >= 3 + slen) && !memcmp(eq - slen, suffix, slen)) {
            return 1;
        }
    }
    return 0;
}

size_t uct_dcx_tm_min_recv(const uct_dcx_iface_config_t *config,
                           const dcx_dev_caps_t *caps, size_t eager_max)
{
    size_t min_recv;

    if (config->tm_min_recv != UCS_MEMUNITS_AUTO) {
        return config->tm_min_recv;
    }
    if (uct_dcx_tm_user_thresh()) {
        return 0;
    }
    min_recv = uct_dcx_tm_model_bytes(2.0 * caps->tm_op_ns, caps);
    return ucs_min(min_recv, eager_max + 1);
}
