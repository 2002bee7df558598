/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device completion channels (soft_channel.c; arming and taking
 * events, soft_arm.c): the entry points of the device's ops table, and the
 * CQ's side of its channel.  The channel's
 * state, which the engine's inline CQ paths read, is in soft_objs.h.
 */
#ifndef DCX_SOFT_CHANNEL_H_
#define DCX_SOFT_CHANNEL_H_

#include "soft_objs.h"

static inline soft_channel_t *soft_channel(dcx_comp_channel_t *ch)
{
    return (soft_channel_t *)ch;
}

/* soft_channel.c */
int soft_channel_create(dcx_dev_t *dev, dcx_comp_channel_t **ch_p);
int soft_channel_destroy(dcx_comp_channel_t *ch);
void soft_cq_detach_channel(soft_cq_t *cq);
void soft_channel_drain(soft_channel_t *ch);

/* soft_arm.c */
int soft_cq_req_notify(dcx_cq_t *cq);
int soft_channel_get_event(dcx_comp_channel_t *ch, dcx_cq_t **cq_p);

#endif
