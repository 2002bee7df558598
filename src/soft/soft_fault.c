/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device fault injection (dcx_soft.h): one rule per device, matched
 * against outbound request packets (drop, delay, corrupt) or posted WRs
 * (forced error completion); killing the port is immediate.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_direct.h"

#include <errno.h>

int dcx_soft_fault_inject(dcx_dev_t *dev_, const dcx_soft_fault_t *fault)
{
    soft_dev_t *dev;
    int mkey_op;

    if (!dcx_dev_is_soft(dev_)) {
        dcx_error("%s: fault inject: not a soft device", dcx_dev_name(dev_));
        return EINVAL;
    }
    dev     = soft_dev(dev_);
    /* a strided-key request sends no packet: only its completion can be
     * forced */
    mkey_op = (fault->opcode >= DCX_WR_MKEY_FIRST) &&
              (fault->opcode < DCX_WR_MKEY_LAST) &&
              (fault->type == DCX_SOFT_FAULT_ERROR_CQE);
    if (((unsigned)fault->type > DCX_SOFT_FAULT_KILL_PORT) ||
        ((fault->opcode != -1) && !mkey_op &&
         ((fault->opcode < 0) || (fault->opcode >= DCX_WR_OPCODE_LAST))) ||
        ((fault->type == DCX_SOFT_FAULT_ERROR_CQE) &&
         ((fault->status == DCX_WC_SUCCESS) ||
          (fault->status >= DCX_WC_STATUS_LAST)))) {
        dcx_error("%s: fault inject: invalid rule (type %d, opcode %d, "
                  "status %d)",
                  dev->super.caps.name, (int)fault->type, fault->opcode,
                  (int)fault->status);
        return EINVAL;
    }
    soft_lock(&dev->lock);
    dev->fault.rule = *fault;
    dev->fault.seen = 0;
    dev->fault.hits = 0;
    if (fault->type == DCX_SOFT_FAULT_KILL_PORT) {
        dev->killed = 1;
        __atomic_store_n(&dev->hdr->killed, 1, __ATOMIC_RELEASE);
        dcx_info("%s: port killed by fault injection", dev->super.caps.name);
    }
    soft_direct_fault_changed(dev);
    soft_dev_light_update(dev);
    soft_unlock(&dev->lock);
    return 0;
}

void dcx_soft_fault_clear(dcx_dev_t *dev_)
{
    soft_dev_t *dev;

    if (!dcx_dev_is_soft(dev_)) {
        return;
    }
    dev = soft_dev(dev_);
    soft_lock(&dev->lock);
    dev->fault.rule.type = DCX_SOFT_FAULT_NONE;
    soft_direct_fault_changed(dev);
    soft_dev_light_update(dev);
    soft_unlock(&dev->lock);
}

/* The light path's word (dev->light_off), after a change of the fault rule
 * or of the port's life (engine lock held): a fault rule needs the general
 * path (its drops, delays, corruption and checksums), and a killed port
 * sends nothing */
void soft_dev_light_update(soft_dev_t *dev)
{
    dev->light_off = (dev->fault.rule.type != DCX_SOFT_FAULT_NONE) ||
                     dev->killed;
}

static int soft_fault_match(soft_dev_t *dev, int opcode)
{
    soft_fault_state_t *f = &dev->fault;

    if ((f->rule.opcode != -1) && (f->rule.opcode != opcode)) {
        return 0;
    }
    if (++f->seen <= f->rule.skip) {
        return 0;
    }
    if ((f->rule.count != 0) && (f->hits >= f->rule.count)) {
        f->seen--;
        return 0;
    }
    f->hits++;
    return 1;
}

int soft_fault_tx(soft_dev_t *dev, int opcode, uint64_t *delay_ns)
{
    switch (dev->fault.rule.type) {
    case DCX_SOFT_FAULT_DROP:
        return soft_fault_match(dev, opcode) ? SOFT_TX_DROP : SOFT_TX_PASS;
    case DCX_SOFT_FAULT_CORRUPT:
        return soft_fault_match(dev, opcode) ? SOFT_TX_CORRUPT : SOFT_TX_PASS;
    case DCX_SOFT_FAULT_DELAY:
        if (soft_fault_match(dev, opcode)) {
            *delay_ns = (uint64_t)dev->fault.rule.delay_us * 1000ull;
            return SOFT_TX_DELAY;
        }
        return SOFT_TX_PASS;
    default:
        return SOFT_TX_PASS;
    }
}

int soft_fault_post(soft_dev_t *dev, int opcode, uint8_t *status)
{
    if ((dev->fault.rule.type == DCX_SOFT_FAULT_ERROR_CQE) &&
        soft_fault_match(dev, opcode)) {
        *status = (uint8_t)dev->fault.rule.status;
        return 1;
    }
    return 0;
}
