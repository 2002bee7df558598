/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device DCIs: the work a DCI does within the call (soft_now.c:
 * dcx_qp_t.post_now, put_now, get_now, pack_now) and what it shares with
 * the DCI's posts (soft_post.c).
 */
#ifndef DCX_SOFT_NOW_H_
#define DCX_SOFT_NOW_H_

#include "soft_objs.h"

/* A DCI's plain post (soft_post.c): the post function of a DCI neither new
 * nor in error */
int soft_dci_post_send(dcx_qp_t *qp_, const dcx_send_wr_t *wr);

/* Nothing outstanding on the DCI and no RNR wait (engine lock held): what
 * is done within the call is then ordered after everything the DCI
 * carried before, as a posted WR is. */
static inline int soft_dci_quiet(const soft_qp_t *qp)
{
    return (qp->sq_comp == qp->sq_head) && (qp->rnr_until_ns == 0);
}

/* qp->super.post_now, get_now, put_now and pack_now of a DCI (soft_now.c) */
int soft_dci_post_now(dcx_qp_t *qp_, const dcx_send_wr_t *wr);
int soft_dci_get_now(dcx_qp_t *qp_, const dcx_get_now_t *get);
int soft_dci_put_now(dcx_qp_t *qp_, const dcx_put_now_t *put);
int soft_dci_pack_now(dcx_qp_t *qp_, dcx_pack_now_t *put);

#endif
