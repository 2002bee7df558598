/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the queue of strided-key configures that do not travel on
 * a DCI (dcx_cfg_queue.c, docs/strided.md).
 *
 * A QP of the type the device takes DCX_WR_MKEY_* requests on
 * (caps.mkey_qp_type: DCX_QPT_UMR on mlx5, a DCI on the soft device when
 * asked for) with a CQ of its own.  Every request is signalled; its wr_id
 * comes back to the owner's done callback with the completion's status.
 * Nothing orders this queue with the DCIs: a data work request may use a
 * key only after done reported its configure.
 */
#ifndef UCT_DCX_CFG_QUEUE_H_
#define UCT_DCX_CFG_QUEUE_H_

#include "dcx_dev.h"

#include <ucs/type/status.h>

/* Called for each completion polled: the request's wr_id and its status
 * (UCS_OK, UCS_ERR_CANCELED for a request flushed by an earlier failure,
 * another error for the request that failed) */
typedef void (*uct_dcx_cfg_queue_done_t)(void *arg, uint64_t wr_id,
                                         ucs_status_t status);

typedef struct uct_dcx_cfg_queue {
    dcx_pd_t *pd;
    dcx_cq_t *cq;     /* NULL until the first post */
    dcx_qp_t *qp;     /* NULL until the first post */
    uint32_t qp_type; /* dcx_qp_type_t */
    uint32_t depth;   /* requests in flight at most */
    uint32_t out;     /* posted, completion not polled yet */
    uint32_t head;    /* ids[head % depth]: the oldest of them */
    uint64_t *ids;    /* their wr_ids, in posting order */
    uint8_t in_error; /* a request failed: recovered once out is 0 */
    uint8_t broken;   /* creation or recovery failed: no more posts */
    uct_dcx_cfg_queue_done_t done;
    void *arg;
} uct_dcx_cfg_queue_t;

void uct_dcx_cfg_queue_init(uct_dcx_cfg_queue_t *q, dcx_pd_t *pd,
                            uint32_t qp_type, uint32_t depth,
                            uct_dcx_cfg_queue_done_t done, void *arg);

/* Posts wr (DCX_WR_MKEY_*), signalled, with wr->wr_id as given; creates
 * the QP and CQ on the first call.  UCS_OK; UCS_ERR_NO_RESOURCE when the
 * queue is full or recovering from a failure (the caller retries after
 * progress); UCS_ERR_IO_ERROR (logged) when the queue cannot be created or
 * recovered, or the device refuses the request. */
ucs_status_t uct_dcx_cfg_queue_post(uct_dcx_cfg_queue_t *q, dcx_send_wr_t *wr);

/* Polls the completions, calling done for each; the number polled.  A CQ
 * that cannot be polled any more puts the queue out of service and ends
 * every request in flight with UCS_ERR_IO_ERROR (one log line). */
unsigned uct_dcx_cfg_queue_progress(uct_dcx_cfg_queue_t *q);

/* Destroys the QP and CQ (requests in flight are dropped unreported) */
void uct_dcx_cfg_queue_cleanup(uct_dcx_cfg_queue_t *q);

#endif /* UCT_DCX_CFG_QUEUE_H_ */
