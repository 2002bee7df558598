/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: datagram DCIs and the datagrams they send (soft_dgram.c,
 * dcx_soft_qp_set_datagram).
 */
#ifndef DCX_SOFT_DGRAM_H_
#define DCX_SOFT_DGRAM_H_

#include "soft_wire.h"

/* The post function of a datagram DCI (soft_post.c, beside the other post
 * functions whose helpers it shares) */
int soft_dgram_post_send(dcx_qp_t *qp, const dcx_send_wr_t *wr);

/* The DCT a request names, up, with the request's DC key; NULL (the
 * drop counted) otherwise (soft_answer.c, engine lock held) */
soft_qp_t *soft_resp_dct(soft_dev_t *dev, const soft_pkt_t *pkt);

/* A datagram packet arrived (engine lock held) */
void soft_resp_dgram(soft_dev_t *dev, const soft_pkt_t *pkt,
                     const void *payload);

#endif
