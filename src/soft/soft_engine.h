/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device engine (soft_engine.c): its passes and the DCIs it serves,
 * the clear of the request ring, and the fault injection a post and a
 * packet's send go through (soft_fault.c).  Sits on soft_dev.h and
 * soft_ring.h (the clear) and soft_objs.h.
 */
#ifndef DCX_SOFT_ENGINE_H_
#define DCX_SOFT_ENGINE_H_

#include "dcx_dev.h"
#include "soft_base.h"
#include "soft_ring.h"
#include "soft_objs.h"
#include "soft_dev.h"

#include <stdint.h>

/* Engine lock held: clears the consumed request slots (soft_ring_clear),
 * up to the oldest a receive in place holds (soft_req_clear_end) */
static inline unsigned soft_req_clear(soft_dev_t *dev)
{
    return soft_ring_clear(dev->hdr, &dev->hdr->req, soft_req_clear_end(dev));
}

/* soft_engine.c */
uint64_t soft_engine_progress(soft_dev_t *dev, int from_helper);
int soft_engine_busy(soft_dev_t *dev);
int soft_engine_rings_pending(soft_dev_t *dev);
void soft_engine_app_sleeps(soft_dev_t *dev);
void soft_engine_poll_pass(soft_dev_t *dev, soft_cq_t *cq, soft_cq_t *other,
                           int look, uint64_t clk);
void soft_dev_light_update(soft_dev_t *dev); /* soft_fault.c */
void soft_dev_progress(dcx_dev_t *dev);

/* soft_active.c */
void soft_engine_activate(soft_qp_t *qp);
void soft_engine_deactivate(soft_qp_t *qp);

/* soft_fault.c */
enum {
    SOFT_TX_PASS,
    SOFT_TX_DROP,
    SOFT_TX_DELAY,
    SOFT_TX_CORRUPT
};
int soft_fault_tx(soft_dev_t *dev, int opcode, uint64_t *delay_ns);
int soft_fault_post(soft_dev_t *dev, int opcode, uint8_t *status);

#endif
