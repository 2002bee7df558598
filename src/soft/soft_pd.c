/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: protection domains (counted by the device, which refuses to
 * close while any is allocated).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"

#include <errno.h>
#include <stdlib.h>

int soft_pd_alloc(dcx_dev_t *dev_, dcx_pd_t **pd_p)
{
    soft_dev_t *dev = soft_dev(dev_);
    dcx_pd_t *pd    = calloc(1, sizeof(*pd));

    if (pd == NULL) {
        dcx_error("%s: pd alloc: out of memory", dev->super.caps.name);
        return ENOMEM;
    }
    pd->dev = dev_;
    soft_lock(&dev->lock);
    dev->num_pds++;
    soft_unlock(&dev->lock);
    *pd_p = pd;
    return 0;
}

int soft_pd_free(dcx_pd_t *pd)
{
    soft_dev_t *dev = soft_dev(pd->dev);

    soft_lock(&dev->lock);
    dev->num_pds--;
    soft_unlock(&dev->lock);
    free(pd);
    return 0;
}
