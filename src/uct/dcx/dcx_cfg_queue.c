/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the queue of strided-key configures that do not travel on
 * a DCI (dcx_cfg_queue.h).
 *
 * The QP and its CQ are made on the first post (an interface that never
 * moves a strided layout through a key never has them).  A failed request
 * puts the QP in error: the requests after it are flushed, and each
 * completion still goes to done.  Posts are refused (UCS_ERR_NO_RESOURCE)
 * until every request in flight has been polled, and the QP is recovered
 * then, so that the reset discards no completion still due.  A queue that
 * cannot be created or recovered refuses every post with an error.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx_cfg_queue.h"

#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/compiler_def.h>
#include <string.h>

#define UCT_DCX_CFG_QUEUE_BATCH 16

void uct_dcx_cfg_queue_init(uct_dcx_cfg_queue_t *q, dcx_pd_t *pd,
                            uint32_t qp_type, uint32_t depth,
                            uct_dcx_cfg_queue_done_t done, void *arg)
{
    memset(q, 0, sizeof(*q));
    q->pd      = pd;
    q->qp_type = qp_type;
    q->depth   = depth;
    q->done    = done;
    q->arg     = arg;
}

static UCS_F_NOINLINE ucs_status_t
uct_dcx_cfg_queue_create(uct_dcx_cfg_queue_t *q)
{
    const char *name = dcx_dev_name(q->pd->dev);
    dcx_qp_attr_t attr;
    int ret;

    q->ids = ucs_calloc(q->depth, sizeof(*q->ids), "dcx_cfg_queue_ids");
    if (q->ids == NULL) {
        ucs_error("dcx: %s: cannot allocate the strided-key configure queue",
                  name);
        q->broken = 1;
        return UCS_ERR_NO_MEMORY;
    }
    ret = dcx_cq_create(q->pd->dev, q->depth, &q->cq);
    if (ret != 0) {
        ucs_error("dcx: %s: cannot create the CQ of the strided-key "
                  "configure queue (%u entries): %s",
                  name, q->depth, strerror(ret));
        q->cq     = NULL;
        q->broken = 1;
        return UCS_ERR_IO_ERROR;
    }

    memset(&attr, 0, sizeof(attr));
    attr.type          = (dcx_qp_type_t)q->qp_type;
    attr.send_cq       = q->cq;
    attr.max_send_wr   = q->depth;
    attr.max_send_sge  = 1;
    attr.max_rd_atomic = 1;
    ret                = dcx_qp_create(q->pd, &attr, &q->qp);
    if (ret != 0) {
        ucs_error("dcx: %s: cannot create the QP of the strided-key "
                  "configure queue (type %u, %u requests): %s",
                  name, q->qp_type, q->depth, strerror(ret));
        dcx_cq_destroy(q->cq);
        q->cq     = NULL;
        q->qp     = NULL;
        q->broken = 1;
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t uct_dcx_cfg_queue_post(uct_dcx_cfg_queue_t *q, dcx_send_wr_t *wr)
{
    ucs_status_t status;
    int ret;

    if (ucs_unlikely(q->broken)) {
        ucs_error("dcx: %s: the strided-key configure queue is out of "
                  "service (its creation or recovery failed)",
                  dcx_dev_name(q->pd->dev));
        return UCS_ERR_IO_ERROR;
    }
    if (ucs_unlikely(q->qp == NULL)) {
        status = uct_dcx_cfg_queue_create(q);
        if (status != UCS_OK) {
            return status;
        }
    }
    if ((q->out >= q->depth) || q->in_error) {
        return UCS_ERR_NO_RESOURCE;
    }

    wr->flags |= DCX_SEND_SIGNALED;
    ret = dcx_qp_post_send(q->qp, wr);
    if (ret == ENOMEM) {
        return UCS_ERR_NO_RESOURCE;
    } else if (ret != 0) {
        ucs_error("dcx: %s: the strided-key configure queue (QP 0x%x) "
                  "refused a request (opcode 0x%x): %s",
                  dcx_dev_name(q->pd->dev), q->qp->qp_num, wr->opcode,
                  strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    q->ids[(q->head + q->out) % q->depth] = wr->wr_id;
    q->out++;
    return UCS_OK;
}

/* Every request of the failed QP has been polled: back to service */
static UCS_F_NOINLINE void uct_dcx_cfg_queue_recover(uct_dcx_cfg_queue_t *q)
{
    int ret;

    q->in_error = 0;
    if (q->qp->state != DCX_QPS_ERR) {
        return;
    }
    ret = dcx_qp_recover(q->qp);
    if (ret != 0) {
        ucs_error("dcx: %s: the strided-key configure queue (QP 0x%x) did "
                  "not recover from an error: %s",
                  dcx_dev_name(q->pd->dev), q->qp->qp_num, strerror(ret));
        q->broken = 1;
    }
}

/* The CQ failed (poll returned ret): nothing in flight will complete */
static UCS_F_NOINLINE void uct_dcx_cfg_queue_fail_all(uct_dcx_cfg_queue_t *q,
                                                      int ret)
{
    uint64_t wr_id;

    ucs_error("dcx: %s: polling the CQ of the strided-key configure queue "
              "failed (%d): %u configures in flight fail, the queue is out "
              "of service",
              dcx_dev_name(q->pd->dev), ret, q->out);
    q->broken = 1;
    while (q->out > 0) {
        wr_id = q->ids[q->head++ % q->depth];
        q->out--;
        q->done(q->arg, wr_id, UCS_ERR_IO_ERROR);
    }
}

unsigned uct_dcx_cfg_queue_progress(uct_dcx_cfg_queue_t *q)
{
    dcx_wc_t wc[UCT_DCX_CFG_QUEUE_BATCH];
    ucs_status_t status;
    int n, i;

    n = dcx_cq_poll(q->cq, UCT_DCX_CFG_QUEUE_BATCH, wc);
    if (ucs_likely(n == 0)) {
        return 0;
    } else if (n < 0) {
        uct_dcx_cfg_queue_fail_all(q, n);
        return 0;
    }

    for (i = 0; i < n; ++i) {
        ucs_assert(q->out > 0);
        /* (in posting order: one RC QP) */
        ucs_assert(wc[i].wr_id == q->ids[q->head % q->depth]);
        q->head++;
        q->out--;
        if (ucs_likely(wc[i].status == DCX_WC_SUCCESS)) {
            status = UCS_OK;
        } else if (wc[i].status == DCX_WC_WR_FLUSH_ERR) {
            q->in_error = 1;
            status      = UCS_ERR_CANCELED;
        } else {
            q->in_error = 1;
            status      = UCS_ERR_IO_ERROR;
            ucs_error("dcx: %s: a strided-key configure failed on QP 0x%x: "
                      "%s (vendor error 0x%x)",
                      dcx_dev_name(q->pd->dev), q->qp->qp_num,
                      dcx_wc_status_str((dcx_wc_status_t)wc[i].status),
                      wc[i].vendor_err);
        }
        q->done(q->arg, wc[i].wr_id, status);
    }
    if (ucs_unlikely(q->in_error) && (q->out == 0)) {
        uct_dcx_cfg_queue_recover(q);
    }
    return n;
}

void uct_dcx_cfg_queue_cleanup(uct_dcx_cfg_queue_t *q)
{
    int ret;

    if (q->qp != NULL) {
        ret = dcx_qp_destroy(q->qp);
        if (ret != 0) {
            ucs_warn("dcx: %s: destroying the QP of the strided-key "
                     "configure queue failed: %s",
                     dcx_dev_name(q->pd->dev), strerror(ret));
        }
        q->qp = NULL;
    }
    if (q->cq != NULL) {
        ret = dcx_cq_destroy(q->cq);
        if (ret != 0) {
            ucs_warn("dcx: %s: destroying the CQ of the strided-key "
                     "configure queue failed: %s",
                     dcx_dev_name(q->pd->dev), strerror(ret));
        }
        q->cq = NULL;
    }
    ucs_free(q->ids);
    q->ids = NULL;
}
