/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: address handles.
 *
 * As mlx5 on an InfiniBand port, an AH is built without asking anyone: a
 * port number other than 1 fails with NULL and errno untouched (libmlx5
 * does not set it), anything else is accepted.  The destination is the
 * DLID, or, for a global AH with DLID 0, the LID carried in a GID of the
 * emulation (emu_query.c: the port GUID holds it).
 *
 * An AH names a LID, not a port: a packet goes to whoever holds the LID
 * when it is sent.  The soft port behind the LID comes from the fabric's
 * LID directory (emu_sm.c), whose word for the LID changes with every new
 * owner; each work request's address check compares that word with the
 * one the AH's route was made from and resolves again when they differ.
 * A LID nobody holds routes to a soft address that names no port, so that
 * sends to it fail with RETRY_EXC_ERR, as sends to an absent LID on a real
 * fabric.  The DCT number of a work request is checked against the
 * route's window of QP numbers (emu_qpn_at): a number outside the current
 * owner's window (the DCT of a process that held the LID before) names no
 * DCT of the soft port and is dropped there, and the sender's retries run
 * out; a number in it goes unchanged, the soft port's QPs having the
 * numbers of its window.
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

/* A route from the directory's present entry for the AH's LID; NULL with
 * errno set if no soft AH could be made.  The word is read before the
 * lookup: an owner that registers after it changes the word again, so the
 * next check resolves once more. */
static emu_route_t *emu_ah_resolve(emu_ah_t *ah)
{
    emu_dev_t *dev   = emu_ctx(ah->ah.context)->dev;
    const char *name = ah->ah.context->device->name;
    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t len = sizeof(addr);
    emu_route_t *r;
    uint64_t word;
    int ret;

    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        emu_error("%s: ah to LID %u: out of memory", name, ah->dlid);
        errno = ENOMEM;
        return NULL;
    }
    word = (ah->sm_word != NULL) ?
               __atomic_load_n(ah->sm_word, __ATOMIC_ACQUIRE) :
               0;
    if ((ah->sm_word != NULL) &&
        (emu_sm_lookup(dev->fabric, ah->dlid, addr, &len, &word) == 0)) {
        ret = dcx_ah_create(ah->pd->soft, addr, len, &r->soft);
        if (ret != 0) {
            free(r);
            errno = ret;
            return NULL;
        }
        r->qpn_base = emu_sm_qpn_base(word);
    } else {
        emu_debug("%s: ah: LID %u is held by no port of fabric '%s'; sends "
                  "through this AH will time out",
                  name, ah->dlid, dev->fabric);
        r->soft = ah->nowhere;
    }
    r->word = word;
    return r;
}

/* The route a work request takes now (see the top of the file) */
const emu_route_t *emu_ah_route(emu_ah_t *ah)
{
    emu_route_t *r = __atomic_load_n(&ah->route, __ATOMIC_ACQUIRE);
    emu_route_t *n;

    if ((ah->sm_word == NULL) ||
        (__atomic_load_n(ah->sm_word, __ATOMIC_ACQUIRE) == r->word)) {
        return r;
    }
    pthread_mutex_lock(&ah->lock);
    r = ah->route;
    if (__atomic_load_n(ah->sm_word, __ATOMIC_ACQUIRE) != r->word) {
        n = emu_ah_resolve(ah);
        if (n != NULL) {
            emu_debug("%s: ah to LID %u: the LID has a new owner",
                      ah->ah.context->device->name, ah->dlid);
            n->prev = r;
            __atomic_store_n(&ah->route, n, __ATOMIC_RELEASE);
            r = n;
        }
        /* else: the old route stays (its port gone, sends time out) */
    }
    pthread_mutex_unlock(&ah->lock);
    return r;
}

static void emu_ah_free(emu_ah_t *ah)
{
    emu_route_t *r, *prev;

    for (r = ah->route; r != NULL; r = prev) {
        prev = r->prev;
        if (r->soft != ah->nowhere) {
            dcx_ah_destroy(r->soft);
        }
        free(r);
    }
    if (ah->nowhere != NULL) {
        dcx_ah_destroy(ah->nowhere);
    }
    emu_sm_word_put(ah->sm_word);
    pthread_mutex_destroy(&ah->lock);
    free(ah);
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
    pthread_mutex_init(&ah->lock, NULL);
    ah->ah.context = ibpd->context;
    ah->ah.pd      = ibpd;
    ah->pd         = pd;
    ah->dlid       = emu_ah_dlid(attr);
    ah->is_global  = attr->is_global;
    ah->grh        = attr->grh;
    ah->sm_word    = emu_sm_word(ectx->dev->fabric, ah->dlid);
    ret            = dcx_soft_addr_nowhere(ectx->dev->soft, addr, &len);
    if (ret == 0) {
        ret = dcx_ah_create(pd->soft, addr, len, &ah->nowhere);
    }
    if (ret == 0) {
        ah->route = emu_ah_resolve(ah);
        ret       = (ah->route == NULL) ? errno : 0;
    }
    if (ret != 0) {
        emu_ah_free(ah);
        errno = ret;
        return NULL;
    }
    ah->ah.handle = ah->dlid;
    /* the address vector libmlx5 would keep for it */
    ah->av.rlid   = htobe16(ah->dlid);
    if (attr->is_global) {
        ah->av.dqp_dct    = htobe32(MLX5_EXTENDED_UD_AV);
        ah->av.grh_gid_fl = htobe32((1u << 30) |
                                    (attr->grh.flow_label & 0xfffff));
        ah->av.hop_limit  = attr->grh.hop_limit;
        ah->av.tclass     = attr->grh.traffic_class;
        memcpy(ah->av.rgid, attr->grh.dgid.raw, 16);
    }
    __atomic_add_fetch(&pd->refs, 1, __ATOMIC_RELEASE);
    return &ah->ah;
}

int ibv_destroy_ah(struct ibv_ah *ibah)
{
    emu_ah_t *ah = (emu_ah_t *)ibah;
    emu_pd_t *pd = ah->pd;

    emu_ah_free(ah);
    __atomic_sub_fetch(&pd->refs, 1, __ATOMIC_RELEASE);
    return 0;
}
