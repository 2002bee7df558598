/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the engine's active list, the DCIs with work outstanding
 * that its passes serve.  A DCI joins it when a WR is queued the general
 * way (a light post joins it inline, soft_wait.h), and leaves it when a
 * pass finds nothing outstanding (soft_req.c), when a post completed its
 * WR at once, or when it is destroyed.  Below the posts and the engine.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft_engine.h"
#include "soft_wait.h"

/* A WR queued the general way (soft_post_enqueue): it waits for a pass */
void soft_engine_activate(soft_qp_t *qp)
{
    soft_dev_t *dev = qp->dev;

    soft_engine_active_add(dev, qp);
    __atomic_store_n(&dev->engine_idle, SOFT_ENGINE_BUSY, __ATOMIC_RELAXED);
}

void soft_engine_deactivate(soft_qp_t *qp)
{
    soft_qp_t **pp;

    if (!qp->active) {
        return;
    }
    for (pp = &qp->dev->active_dcis; *pp != NULL; pp = &(*pp)->next_active) {
        if (*pp == qp) {
            *pp = qp->next_active;
            break;
        }
    }
    qp->active = 0;
}
