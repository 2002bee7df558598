/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: address handles.
 *
 * As mlx5 on an InfiniBand port, an AH is built without asking anyone: a
 * port number other than 1 fails with NULL and errno untouched (libmlx5
 * does not set it), anything else is accepted.  The destination is the
 * DLID, or, for a global AH with DLID 0, the LID carried in a GID of the
 * emulation (emu_query.c: the port GUID holds it).  The soft port behind
 * the LID comes from the fabric's LID directory (emu_sm.c); a LID no port
 * holds gets a soft address that names no port, so that sends to it fail
 * with RETRY_EXC_ERR, as sends to an absent LID on a real fabric.
 */
#include "emu/emu.h"
#include "soft/dcx_soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The LID an AH sends to; 0 if it names none. */
static uint16_t emu_ah_dlid(const struct ibv_ah_attr *attr)
{
    uint64_t iid;

    if ((attr->dlid != 0) || !attr->is_global) {
        return attr->dlid;
    }
    iid = be64toh(attr->grh.dgid.global.interface_id);
    if ((be64toh(attr->grh.dgid.global.subnet_prefix) != EMU_GID_PREFIX) ||
        ((iid & ~0xffffffull) != EMU_GUID_BASE)) {
        return 0;
    }
    return (uint16_t)(iid >> 8);
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
    emu_pd_t *pd = emu_pd(ibpd);
    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t len = sizeof(addr);
    const char *name;
    emu_ctx_t *ectx;
    emu_ah_t *ah;
    int ret;

    ectx = (ibpd != NULL) ? emu_ctx_check(ibpd->context, "ibv_create_ah") :
                            NULL;
    if ((ectx == NULL) || (attr == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    name = ibpd->context->device->name;
    if (attr->port_num != 1) {
        /* libmlx5 returns NULL here without setting errno */
        emu_error("%s: create_ah: port %u does not exist", name,
                  attr->port_num);
        return NULL;
    }
    if (attr->is_global && (attr->grh.sgid_index != 0)) {
        emu_error("%s: create_ah: sgid_index %u outside the GID table (1 "
                  "entry)",
                  name, attr->grh.sgid_index);
        errno = EINVAL;
        return NULL;
    }
    ah = calloc(1, sizeof(*ah));
    if (ah == NULL) {
        emu_error("%s: create_ah: out of memory", name);
        errno = ENOMEM;
        return NULL;
    }
    ah->dlid = emu_ah_dlid(attr);
    if (ah->dlid == ectx->dev->lid) {
        memcpy(addr, ectx->dev->addr, ectx->dev->addr_len);
        len          = ectx->dev->addr_len;
        ah->resolved = true;
    } else if (emu_sm_lookup(ectx->dev->fabric, ah->dlid, addr, &len) == 0) {
        ah->resolved = true;
    } else {
        emu_debug("%s: create_ah: LID %u is held by no port of fabric "
                  "'%s'; sends through this AH will time out",
                  name, ah->dlid, ectx->dev->fabric);
        len = sizeof(addr);
        ret = dcx_soft_addr_nowhere(ectx->dev->soft, addr, &len);
        if (ret != 0) {
            free(ah);
            errno = ret;
            return NULL;
        }
    }
    ret = dcx_ah_create(pd->soft, addr, len, &ah->soft);
    if (ret != 0) {
        free(ah);
        errno = ret;
        return NULL;
    }
    ah->ah.context = ibpd->context;
    ah->ah.pd      = ibpd;
    ah->ah.handle  = ah->dlid;
    __atomic_add_fetch(&pd->refs, 1, __ATOMIC_RELEASE);
    return &ah->ah;
}

int ibv_destroy_ah(struct ibv_ah *ibah)
{
    emu_ah_t *ah = (emu_ah_t *)ibah;
    emu_pd_t *pd = emu_pd(ibah->pd);
    int ret;

    ret = dcx_ah_destroy(ah->soft);
    if (ret != 0) {
        return ret;
    }
    __atomic_sub_fetch(&pd->refs, 1, __ATOMIC_RELEASE);
    free(ah);
    return 0;
}
