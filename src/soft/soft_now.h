/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device DCIs: the work a DCI does within the call (soft_now.c: a WR
 * flagged DCX_SEND_NOW) and what it shares with the DCI's posts
 * (soft_post.c).
 */
#ifndef DCX_SOFT_NOW_H_
#define DCX_SOFT_NOW_H_

#include "soft_objs.h"

#include <string.h>

/* A DCI's plain post (soft_now.c): the post function of a DCI neither new
 * nor in error; a WR flagged DCX_SEND_NOW is done within the call there
 * (0) or declined (EAGAIN) */
int soft_dci_post_send(dcx_qp_t *qp_, const dcx_send_wr_t *wr);

/* Nothing outstanding on the DCI and no RNR wait (engine lock held): what
 * is done within the call is then ordered after everything the DCI
 * carried before, as a posted WR is. */
static inline int soft_dci_quiet(const soft_qp_t *qp)
{
    return (qp->sq_comp == qp->sq_head) && (qp->rnr_until_ns == 0);
}

/* The first four bytes of a WR (opcode, flags, num_sge, atomic_size) as
 * one word, and that word for the two WRs of the common case of work
 * within the call: an inline WRITE and a READ, of one sge, flagged
 * DCX_SEND_NOW and nothing else */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "soft_now_shape() assumes a little-endian host"
#endif
#define SOFT_NOW_SHAPE(_op, _flags) \
    ((uint32_t)(_op) | ((uint32_t)(_flags) << 8) | (1u << 16))
#define SOFT_NOW_INLINE_WRITE \
    SOFT_NOW_SHAPE(DCX_WR_RDMA_WRITE, DCX_SEND_INLINE | DCX_SEND_NOW)
#define SOFT_NOW_READ SOFT_NOW_SHAPE(DCX_WR_RDMA_READ, DCX_SEND_NOW)

static inline uint32_t soft_now_shape(const dcx_send_wr_t *wr)
{
    uint32_t shape;

    memcpy(&shape, &wr->opcode, sizeof(shape));
    return shape;
}

/* A DCI's plain post of a WR not flagged DCX_SEND_NOW (soft_post.c), to
 * which soft_dci_post_send (soft_now.c) hands it */
int soft_dci_post_queued(soft_qp_t *qp, const dcx_send_wr_t *wr);

#endif
