/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: where the clears of the request ring stop while receives in
 * place hold slots of it.  Below the CQs whose polls release the slots and
 * the engine whose passes clear the ring: it reads only the fields of the
 * device's CQs that hold slots (dev->ip_cqs).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft_objs.h"
#include "soft_dev.h"

/* Receives in place (DCX_SRQ_F_IN_PLACE).  The responder leaves a message
 * of at least SOFT_IP_MIN bytes in its request ring slot, and completes
 * the receive with the slot's bytes (DCX_WC_FLAG_IN_PLACE), when a poll of
 * the receive's CQ runs the pass (dev->ip_cq) and the completion is among
 * those that poll returns (fewer than dev->ip_max before it in the CQ): so
 * a slot is held only from the poll that returns it to the caller's
 * dcx_cq_release (or its next poll of the CQ), not while the application
 * is away.  Until then the clears of the request ring stop at the oldest
 * slot held (soft_req_clear_end), so that no producer writes it. */
__attribute__((noinline)) uint64_t soft_ip_clear_end(soft_dev_t *dev,
                                                     uint64_t end)
{
    const soft_cq_t *cq;
    int held = 0;
    uint32_t rel;

    for (cq = dev->ip_cqs; cq != NULL; cq = cq->ip_next) {
        rel = __atomic_load_n(&cq->ip_released, __ATOMIC_ACQUIRE);
        if (rel == cq->ip_made) {
            continue;
        }
        held = 1;
        if (cq->ip_pos[rel % SOFT_IP_MAX] < end) {
            end = cq->ip_pos[rel % SOFT_IP_MAX];
        }
    }
    dev->ip_maybe = held; /* set again by the next placement */
    return end;
}
