/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the QP operations the device offers (soft_dev.c's table,
 * and dcx_soft.h's calls on a QP), each sent to the file that owns the
 * QP: a DCI with stream channels to soft_stream.c, every other QP (a
 * stream's channels among them) to soft_qp.c.  This file sits above both,
 * so that calls go one way: the streams are built on plain QPs, and a
 * plain QP's file never names them.  None of these is on a fast path: a
 * post goes through the function the QP's creation installed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_stream.h"

#include <errno.h>

int soft_qp_create(dcx_pd_t *pd, const dcx_qp_attr_t *attr, dcx_qp_t **qp_p)
{
    if ((attr->type == DCX_QPT_DCI) && attr->dci_streams) {
        return soft_stream_create(pd, attr, qp_p);
    }
    return soft_qp_create_plain(pd, attr, qp_p);
}

int soft_qp_destroy(dcx_qp_t *qp)
{
    if (soft_qp_has_streams((soft_qp_t *)qp)) {
        return soft_stream_destroy((soft_qp_t *)qp);
    }
    return soft_qp_destroy_plain(qp);
}

int soft_qp_set_error(dcx_qp_t *qp)
{
    if (soft_qp_has_streams((soft_qp_t *)qp)) {
        return soft_stream_set_error((soft_qp_t *)qp);
    }
    return soft_qp_set_error_plain(qp);
}

int soft_qp_recover(dcx_qp_t *qp)
{
    if (soft_qp_has_streams((soft_qp_t *)qp)) {
        return soft_stream_recover((soft_qp_t *)qp);
    }
    return soft_qp_recover_plain(qp);
}

int dcx_soft_qp_set_timers(dcx_qp_t *qp, uint8_t timeout, uint8_t retry_cnt,
                           uint8_t rnr_retry, uint32_t max_rd_atomic)
{
    if (soft_qp_has_streams((soft_qp_t *)qp)) {
        return soft_stream_set_timers((soft_qp_t *)qp, timeout, retry_cnt,
                                      rnr_retry, max_rd_atomic);
    }
    return soft_qp_set_timers_plain(qp, timeout, retry_cnt, rnr_retry,
                                    max_rd_atomic);
}

/* dcx_soft.h.  The WR goes through the checks of any post and is queued
 * in order; when it reaches the head of the DCI it is not executed but
 * completes with 'status', and the DCI goes to ERR as after any error
 * completion (soft_post_failing). */
int dcx_soft_qp_post_failing(dcx_qp_t *qp_, const dcx_send_wr_t *wr,
                             dcx_wc_status_t status)
{
    soft_qp_t *qp = (soft_qp_t *)qp_;

    if (!dcx_dev_is_soft(qp_->dev) || (qp_->type != DCX_QPT_DCI) ||
        (status == DCX_WC_SUCCESS) || (status >= DCX_WC_STATUS_LAST)) {
        dcx_error("%s: qp 0x%x: failing post: not a soft DCI, or status %d "
                  "is not an error",
                  dcx_dev_name(qp_->dev), qp_->qp_num, (int)status);
        return EINVAL;
    }
    if (soft_qp_has_streams(qp)) {
        /* a DCI with streams: the WR goes to its stream's channel */
        qp = soft_stream_channel(qp, wr->stream_id);
        if (qp == NULL) {
            return EINVAL;
        }
    }
    return soft_post_failing(qp, wr, status);
}
