/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: address handles: a checked peer address, bound to the
 * device's record of that peer.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"

#include <errno.h>
#include <stdlib.h>

int soft_addr_check_op(dcx_dev_t *dev_, const void *addr, size_t len, char *why,
                       size_t why_len)
{
    return soft_addr_check(soft_dev(dev_), addr, len, NULL, why, why_len);
}

int soft_ah_create(dcx_pd_t *pd, const void *addr, size_t len, dcx_ah_t **ah_p)
{
    soft_dev_t *dev = soft_dev(pd->dev);
    char why[128];
    soft_addr_t a;
    soft_ah_t *ah;

    if (soft_addr_check(dev, addr, len, &a, why, sizeof(why)) != 0) {
        dcx_error("%s: ah create: %s", dev->super.caps.name, why);
        return EINVAL;
    }
    ah = calloc(1, sizeof(*ah));
    if (ah == NULL) {
        dcx_error("%s: ah create: out of memory", dev->super.caps.name);
        return ENOMEM;
    }
    soft_lock(&dev->lock);
    ah->peer = soft_peer_get(dev, a.pid, a.inst, a.token);
    if (ah->peer != NULL) {
        dev->num_objs++;
    }
    soft_unlock(&dev->lock);
    if (ah->peer == NULL) {
        free(ah);
        dcx_error("%s: ah create: out of memory", dev->super.caps.name);
        return ENOMEM;
    }
    ah->super.pd = pd;
    *ah_p        = &ah->super;
    return 0;
}

int soft_ah_destroy(dcx_ah_t *ah)
{
    soft_dev_t *dev = soft_dev(ah->pd->dev);

    soft_lock(&dev->lock);
    dev->num_objs--;
    soft_unlock(&dev->lock);
    free(ah);
    return 0;
}
