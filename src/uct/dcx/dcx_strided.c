/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: strided uct_iov_t entries in zero-copy operations
 * (dcx_strided_iov.h, docs/strided.md).
 *
 * The pool: up to UCX_DCX_STRIDED_KEYS indirect keys of
 * UCX_DCX_STRIDED_KEY_ENTRIES translation entries each, created when first
 * needed (a miss is the slow path anyway) and destroyed with the interface.
 * A key with no user (refs == 0) sits on 'free' (no layout) or 'lru'
 * (cached layout, least recently used first); a key with users is on
 * neither and is never reconfigured.  A miss takes a free key, creates one,
 * or evicts the least recently used cached one; with every key in use the
 * operation gets UCS_ERR_NO_RESOURCE and goes pending, and the keys come
 * back as the work requests holding them complete.
 *
 * Ordering: the device takes configure work requests on a QP of type
 * caps.mkey_qp_type, and the interface chose at creation where they go
 * (post_cfg, UCX_DCX_STRIDED_KEY_QUEUE):
 *  - on the DCI of the operation (only where that QP type is a DCI: the
 *    soft device), right before the data work request, which the device
 *    executes after it.  A key whose configure is still in flight on
 *    another DCI is not usable yet: the operation gets UCS_ERR_NO_RESOURCE
 *    until the configure completes.  A receive posted to the tag list
 *    (another queue) needs a configured key: a miss posts the configure on
 *    the control DCI and returns UCS_ERR_NO_RESOURCE, the retry finds the
 *    key ready.
 *  - on a queue of their own (dcx_cfg_queue.h; mlx5's UMR QP), which
 *    nothing orders with the DCIs: a miss posts the configure there, marks
 *    the key CFG and refuses the operation (UCS_ERR_NO_RESOURCE, nothing
 *    posted on a DCI); the progress call that polls the configure's
 *    completion marks the key READY and dispatches the pending requests,
 *    whose retry finds it READY and posts at once.  So no data work request
 *    ever names a key whose configure has not completed.  A configure that
 *    fails marks its key FAILED (one error line, dcx_cfg_queue.c): the next
 *    operation over that layout is refused with UCS_ERR_IO_ERROR, having
 *    moved nothing, and the layout is dropped.
 * Either way a key is held (refs) by its configure and by every work
 * request, receive and rendezvous naming it, and only a key with no holder
 * is reconfigured: eviction never changes a key a work request in flight
 * still reads.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <string.h>

/* What the keys are used for: the local device writes through them
 * (get_zcopy, receives) and a rendezvous peer reads through the rkey; no
 * remote write or atomic, which some devices do not let keys grant */
#define UCT_DCX_SKEY_ACCESS (DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_READ)

/* Configures in flight on the configure queue at most (more wait) */
#define UCT_DCX_STRIDED_CFGQ_DEPTH 64

const char *uct_dcx_strided_queue_names[] = {
    [UCT_DCX_STRIDED_QUEUE_AUTO] = "auto",
    [UCT_DCX_STRIDED_QUEUE_DCI]  = "dci",
    [UCT_DCX_STRIDED_QUEUE_OWN]  = "own",
    [UCT_DCX_STRIDED_QUEUE_LAST] = NULL};

/* What an operation (or a configure) holds until its WR completes */
typedef struct uct_dcx_strided_op {
    uct_dcx_op_t super;
    uint16_t num;
    uint16_t cfg; /* a configure: keys[0] becomes ready */
    uint16_t keys[UCT_DCX_MAX_IOV];
} uct_dcx_strided_op_t;

static ucs_mpool_ops_t uct_dcx_strided_mp_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = NULL,
    .obj_cleanup   = NULL,
    .obj_str       = NULL};


/* ---------------------------------------------------------------------------
 * Keys
 * ------------------------------------------------------------------------- */

static void uct_dcx_skey_uncache(uct_dcx_strided_t *st, uct_dcx_skey_t *key)
{
    khiter_t it;

    if (!key->cached) {
        return;
    }
    it = kh_get(uct_dcx_skeys, &st->hash, key->lay);
    ucs_assert(it != kh_end(&st->hash));
    kh_del(uct_dcx_skeys, &st->hash, it);
    key->cached = 0;
    if (key->state == UCT_DCX_SKEY_READY) {
        /* the device keeps the old layout until the next configure, which
         * replaces it; nothing uses it from now on */
        key->state = UCT_DCX_SKEY_UNSET;
    }
    if (key->refs == 0) {
        ucs_list_del(&key->idle);
        ucs_list_add_tail(&st->free, &key->idle);
    }
}

static void uct_dcx_skey_get(uct_dcx_strided_t *st, uct_dcx_skey_t *key)
{
    if (key->refs++ == 0) {
        ucs_list_del(&key->idle);
    }
}

void uct_dcx_strided_key_put(uct_dcx_iface_t *iface, uint16_t idx)
{
    uct_dcx_strided_t *st = &iface->strided;
    uct_dcx_skey_t *key   = &st->keys[idx];

    ucs_assert(key->refs > 0);
    if (--key->refs == 0) {
        ucs_list_add_tail(key->cached ? &st->lru : &st->free, &key->idle);
        st->key_wait = 0; /* a key to take or evict */
    }
}

uint32_t uct_dcx_strided_key_rkey(uct_dcx_iface_t *iface, uint16_t idx)
{
    return iface->strided.keys[idx].mkey->rkey;
}

/* The configure of key idx completed with status (its hold is the
 * caller's to release).  keep_failure: the failure is reported to the next
 * operation over the layout (FAILED); otherwise the layout is dropped, and
 * the next operation configures it again.  A flushed configure
 * (UCS_ERR_CANCELED) failed for another's sake: dropped either way. */
static void uct_dcx_strided_cfg_done(uct_dcx_iface_t *iface, uint16_t idx,
                                     ucs_status_t status, int keep_failure)
{
    uct_dcx_strided_t *st = &iface->strided;
    uct_dcx_skey_t *key   = &st->keys[idx];

    ucs_assert(key->state == UCT_DCX_SKEY_CFG);
    ucs_assert(st->cfg_out > 0);
    st->cfg_out--;
    st->key_wait = 0; /* the operations waiting for it may go */
    if (ucs_likely(status == UCS_OK)) {
        /* (a layout dropped meanwhile by a deregistration stays unused) */
        key->state = key->cached ? UCT_DCX_SKEY_READY : UCT_DCX_SKEY_UNSET;
        st->stats.cfg_done++;
        return;
    }

    ucs_debug("dcx: %s: configure of strided key 0x%x failed: %s",
              dcx_dev_name(iface->dev), key->mkey->lkey,
              ucs_status_string(status));
    if (status != UCS_ERR_CANCELED) {
        st->stats.cfg_failed++;
    }
    if (keep_failure && key->cached && (status != UCS_ERR_CANCELED)) {
        key->state = UCT_DCX_SKEY_FAILED;
    } else {
        key->state = UCT_DCX_SKEY_UNSET;
        uct_dcx_skey_uncache(st, key);
    }
}

/* A completion of the configure queue: wr_id is the key's index */
static void uct_dcx_strided_cfgq_done(void *arg, uint64_t wr_id,
                                      ucs_status_t status)
{
    uct_dcx_iface_t *iface = arg;
    uint16_t idx           = (uint16_t)wr_id;

    uct_dcx_strided_cfg_done(iface, idx, status, 1);
    uct_dcx_strided_key_put(iface, idx);
}

static void uct_dcx_strided_op_done(uct_dcx_iface_t *iface, uct_dcx_op_t *op,
                                    ucs_status_t status)
{
    uct_dcx_strided_op_t *sop = ucs_derived_of(op, uct_dcx_strided_op_t);
    unsigned i;

    if (sop->cfg) {
        /* on the DCI: the data work requests after it failed with it */
        uct_dcx_strided_cfg_done(iface, sop->keys[0], status, 0);
    }
    for (i = 0; i < sop->num; ++i) {
        uct_dcx_strided_key_put(iface, sop->keys[i]);
    }
    ucs_mpool_put(sop);
}

/* A key for a layout not in the cache: a free one, a new one, or the least
 * recently used cached one.  NULL when every key is in use. */
static UCS_F_NOINLINE uct_dcx_skey_t *
uct_dcx_strided_key_alloc(uct_dcx_iface_t *iface)
{
    uct_dcx_strided_t *st = &iface->strided;
    uct_dcx_skey_t *key;
    int ret;

    if (!ucs_list_is_empty(&st->free)) {
        return ucs_list_head(&st->free, uct_dcx_skey_t, idle);
    }
    if (st->keys_created < st->keys_max) {
        key = &st->keys[st->keys_created];
        ret = dcx_mkey_create(iface->pd, st->key_entries, &key->mkey);
        if (ret != 0) {
            ucs_error("dcx: %s: cannot create strided key %u of %u (%u "
                      "entries): %s",
                      dcx_dev_name(iface->dev), st->keys_created + 1,
                      st->keys_max, st->key_entries, strerror(ret));
            return NULL;
        }
        key->list = ucs_calloc(st->key_entries, sizeof(*key->list),
                               "dcx_skey_list");
        if (key->list == NULL) {
            ucs_error("dcx: %s: cannot allocate the layout of strided key %u",
                      dcx_dev_name(iface->dev), st->keys_created + 1);
            dcx_mkey_destroy(key->mkey);
            key->mkey = NULL;
            return NULL;
        }
        key->state = UCT_DCX_SKEY_UNSET;
        ucs_list_add_tail(&st->free, &key->idle);
        st->keys_created++;
        st->stats.keys_created = st->keys_created;
        return key;
    }
    ucs_list_for_each(key, &st->lru, idle) {
        if (ucs_likely(!key->fresh)) {
            uct_dcx_skey_uncache(st, key);
            st->stats.evictions++;
            return key;
        }
    }
    if (!ucs_list_is_empty(&st->lru)) {
        /* only keys configured for operations that have not come back for
         * them yet: the oldest is spared once, so that operations over
         * different layouts that take turns evicting each other's key
         * before its use cannot all wait for ever */
        key        = ucs_list_head(&st->lru, uct_dcx_skey_t, idle);
        key->fresh = 0;
    }
    st->stats.exhausted++;
    return NULL;
}

/* Fills key's layout from lay: one interleaved entry repeated count times
 * where the device takes the element length and stride, else a list of
 * count sges */
static void uct_dcx_skey_set_layout(uct_dcx_strided_t *st, uct_dcx_skey_t *key,
                                    const uct_dcx_skey_lay_t *lay,
                                    int interleaved)
{
    uint32_t k;

    key->lay                = *lay;
    key->layout.access      = UCT_DCX_SKEY_ACCESS;
    key->layout.reserved    = 0;
    key->layout.interleaved = NULL;
    key->layout.list        = NULL;
    if (interleaved) {
        key->ent.addr            = lay->addr;
        key->ent.bytes_count     = lay->length;
        key->ent.bytes_skip      = lay->stride - lay->length;
        key->ent.lkey            = lay->lkey;
        key->ent.reserved        = 0;
        key->layout.repeat_count = lay->count;
        key->layout.num_entries  = 1;
        key->layout.interleaved  = &key->ent;
    } else {
        for (k = 0; k < lay->count; ++k) {
            key->list[k].addr   = lay->addr + k * lay->stride;
            key->list[k].length = lay->length;
            key->list[k].lkey   = lay->lkey;
        }
        key->layout.repeat_count = 1;
        key->layout.num_entries  = lay->count;
        key->layout.list         = key->list;
    }
}

/* Whether the device takes the element of lay as one interleaved entry */
static int uct_dcx_strided_interleaved(const uct_dcx_strided_t *st,
                                       const uct_dcx_skey_lay_t *lay)
{
    return (lay->stride >= lay->length) && (lay->stride <= st->max_stride) &&
           (st->key_entries >= 2);
}

/* post_cfg on the DCI of the operation (the control DCI for a tag-list
 * receive); the configure op holds a reference */
static ucs_status_t uct_dcx_strided_post_cfg_dci(uct_dcx_iface_t *iface,
                                                 uct_dcx_dci_t *dci,
                                                 uct_dcx_ep_t *ep, uint16_t idx)
{
    uct_dcx_strided_t *st = &iface->strided;
    uct_dcx_skey_t *key   = &st->keys[idx];
    uct_dcx_strided_op_t *sop;
    dcx_send_wr_t wr;
    ucs_status_t status;

    sop = ucs_mpool_get(&st->op_mp);
    if (sop == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    sop->super.cb   = uct_dcx_strided_op_done;
    sop->super.comp = NULL;
    sop->num        = 1;
    sop->cfg        = 1;
    sop->keys[0]    = idx;

    memset(&wr, 0, sizeof(wr));
    if (ep != NULL) {
        uct_dcx_ep_dest(ep, &wr.dest);
    }
    wr.opcode = (key->layout.interleaved != NULL) ? DCX_WR_MKEY_INTERLEAVED :
                                                    DCX_WR_MKEY_LIST;
    wr.mkey   = key->mkey;
    wr.mkey_layout = &key->layout;
    status         = uct_dcx_dci_post(iface, dci, ep, &wr, &sop->super, 1);
    if (status != UCS_OK) {
        ucs_mpool_put(sop);
        return status;
    }
    uct_dcx_skey_get(st, key);
    key->state   = UCT_DCX_SKEY_CFG;
    key->cfg_dci = dci->index;
    st->cfg_out++;
    st->stats.configures++;
    /* a tag-list receive needs its keys configured before it is posted */
    return (ep == NULL) ? UCS_INPROGRESS : UCS_OK;
}

/* post_cfg on the configure queue: the key is usable once the queue's
 * completion made it READY (uct_dcx_strided_cfgq_done) */
static ucs_status_t uct_dcx_strided_post_cfg_own(uct_dcx_iface_t *iface,
                                                 uct_dcx_dci_t *dci,
                                                 uct_dcx_ep_t *ep, uint16_t idx)
{
    uct_dcx_strided_t *st = &iface->strided;
    uct_dcx_skey_t *key   = &st->keys[idx];
    dcx_send_wr_t wr;
    ucs_status_t status;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id  = idx;
    wr.opcode = (key->layout.interleaved != NULL) ? DCX_WR_MKEY_INTERLEAVED :
                                                    DCX_WR_MKEY_LIST;
    wr.mkey   = key->mkey;
    wr.mkey_layout = &key->layout;
    status         = uct_dcx_cfg_queue_post(&st->cfgq, &wr);
    if (status != UCS_OK) {
        return status;
    }
    uct_dcx_skey_get(st, key);
    key->state   = UCT_DCX_SKEY_CFG;
    key->cfg_dci = UCT_DCX_DCI_NONE;
    st->cfg_out++;
    st->stats.configures++;
    return UCS_INPROGRESS;
}


/* ---------------------------------------------------------------------------
 * Operations
 * ------------------------------------------------------------------------- */

static UCS_F_NOINLINE ucs_status_t
uct_dcx_strided_too_large(uct_dcx_iface_t *iface, const char *name, size_t i,
                          const uct_iov_t *iov, const char *why)
{
    ucs_error("dcx: %s: %s: iov[%zu] (%u elements of %zu bytes at stride "
              "%zu) %s",
              dcx_dev_name(iface->dev), name, i, iov->count, iov->length,
              iov->stride, why);
    return UCS_ERR_EXCEEDS_LIMIT;
}

void uct_dcx_strided_abort(uct_dcx_iface_t *iface, uct_dcx_strided_use_t *use)
{
    uct_dcx_strided_op_t *sop = use->op;
    unsigned i;

    if (sop == NULL) {
        return;
    }
    for (i = 0; i < sop->num; ++i) {
        uct_dcx_strided_key_put(iface, sop->keys[i]);
    }
    ucs_mpool_put(sop);
    use->op = NULL;
}

void uct_dcx_strided_commit(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                            uct_dcx_strided_use_t *use)
{
    uct_dcx_strided_op_t *sop = use->op;

    if (sop == NULL) {
        return;
    }
    /* the keys come back when the data WR just posted completes */
    sop->super.sn = dci->sn;
    ucs_queue_push(&dci->ops, &sop->super.queue);
    use->op = NULL;
}

/* The key an operation over one strided entry holds */
uint16_t uct_dcx_strided_use_key(const uct_dcx_strided_use_t *use)
{
    const uct_dcx_strided_op_t *sop = use->op;

    ucs_assert((sop != NULL) && (sop->num == 1));
    return sop->keys[0];
}

uint16_t uct_dcx_strided_take(uct_dcx_iface_t *iface,
                              uct_dcx_strided_use_t *use)
{
    uct_dcx_strided_op_t *sop = use->op;
    uint16_t idx;

    if (sop == NULL) {
        return UCT_DCX_SKEY_NONE;
    }
    ucs_assert(sop->num == 1);
    idx     = sop->keys[0];
    use->op = NULL;
    ucs_mpool_put(sop);
    return idx;
}

/* One contiguous run: a single element or elements without gaps */
static UCS_F_ALWAYS_INLINE int
uct_dcx_strided_iov_is_plain(const uct_iov_t *iov)
{
    return (iov->count == 1) || (iov->stride == iov->length);
}

static UCS_F_ALWAYS_INLINE void uct_dcx_strided_sge_set(dcx_sge_t *sge,
                                                        uintptr_t addr,
                                                        size_t length,
                                                        uint32_t lkey)
{
    sge->addr   = addr;
    sge->length = length;
    sge->lkey   = lkey;
}

static UCS_F_ALWAYS_INLINE void uct_dcx_strided_lay_set(uct_dcx_skey_lay_t *lay,
                                                        const uct_iov_t *iov,
                                                        uint32_t lkey)
{
    lay->addr   = (uintptr_t)iov->buffer;
    lay->length = iov->length;
    lay->stride = iov->stride;
    lay->count  = iov->count;
    lay->lkey   = lkey;
}

/* Phase 1 of uct_dcx_strided_iov: every entry checked before anything is
 * taken.  The total length, the elements of the strided entries and the
 * number of plain entries (one contiguous run each) come back. */
static ucs_status_t
uct_dcx_strided_iov_check(uct_dcx_iface_t *iface, const char *name,
                          const uct_iov_t *iov, size_t iovcnt, unsigned flags,
                          size_t *length_p, size_t *nelem_p, size_t *nplain_p)
{
    size_t nelem = 0, nplain = 0, length = 0, total, i;

    if (ucs_unlikely(iovcnt > iface->config.max_iov)) {
        ucs_error("dcx: %s: iov count %zu exceeds the maximum %u", name, iovcnt,
                  iface->config.max_iov);
        return UCS_ERR_INVALID_PARAM;
    }

    for (i = 0; i < iovcnt; ++i) {
        if ((iov[i].length == 0) || (iov[i].count == 0)) {
            continue; /* no memory is accessed */
        }
        if (iov[i].memh == UCT_MEM_HANDLE_NULL) {
            ucs_error("dcx: %s: iov[%zu] of %zu x %u bytes has no memory "
                      "handle",
                      name, i, iov[i].length, iov[i].count);
            return UCS_ERR_INVALID_PARAM;
        }
        if (iov[i].length > SIZE_MAX / iov[i].count) {
            ucs_error("dcx: %s: iov[%zu]: %u elements of %zu bytes overflow",
                      name, i, iov[i].count, iov[i].length);
            return UCS_ERR_INVALID_PARAM;
        }
        total = iov[i].length * iov[i].count;
        if ((total > UINT32_MAX) || (length + total < length)) {
            return uct_dcx_strided_too_large(iface, name, i, &iov[i],
                                             "is more than 4 GiB");
        }
        length += total;
        if (uct_dcx_strided_iov_is_plain(&iov[i])) {
            nplain++;
            continue;
        }
        if ((flags & UCT_DCX_STRIDED_SCATTER) &&
            (iov[i].stride < iov[i].length)) {
            ucs_error("dcx: %s: iov[%zu]: elements of %zu bytes at stride "
                      "%zu overlap: a receive buffer cannot hold them",
                      name, i, iov[i].length, iov[i].stride);
            return UCS_ERR_INVALID_PARAM;
        }
        nelem += iov[i].count;
    }

    *length_p = length;
    *nelem_p  = nelem;
    *nplain_p = nplain;
    return UCS_OK;
}

/* An empty entry is skipped, a plain one takes one sge at sge[*num_sge]:
 * 1.  Otherwise 0, with *lkey_p the entry's local key for its elements. */
static UCS_F_ALWAYS_INLINE int
uct_dcx_strided_iov_take_plain(const uct_iov_t *iov, dcx_sge_t *sge,
                               unsigned *num_sge, uint32_t *lkey_p)
{
    if ((iov->length == 0) || (iov->count == 0)) {
        return 1;
    }
    *lkey_p = uct_dcx_memh_mr(iov->memh)->lkey;
    if (uct_dcx_strided_iov_is_plain(iov)) {
        uct_dcx_strided_sge_set(&sge[(*num_sge)++], (uintptr_t)iov->buffer,
                                iov->length * iov->count, *lkey_p);
        return 1;
    }
    return 0;
}

/* Phase 2, few elements: one sge each (a plain entry: one sge).  The
 * number of sges written. */
static unsigned uct_dcx_strided_iov_expand(const uct_iov_t *iov, size_t iovcnt,
                                           dcx_sge_t *sge)
{
    unsigned num_sge = 0, k;
    uint32_t lkey;
    size_t i;

    for (i = 0; i < iovcnt; ++i) {
        if (uct_dcx_strided_iov_take_plain(&iov[i], sge, &num_sge, &lkey)) {
            continue;
        }
        for (k = 0; k < iov[i].count; ++k) {
            uct_dcx_strided_sge_set(&sge[num_sge++],
                                    (uintptr_t)iov[i].buffer +
                                        k * iov[i].stride,
                                    iov[i].length, lkey);
        }
    }
    return num_sge;
}

/* Phase 3, through keys: strided keys exist here and each layout fits
 * one */
static ucs_status_t uct_dcx_strided_iov_check_keys(uct_dcx_iface_t *iface,
                                                   const char *name,
                                                   const uct_iov_t *iov,
                                                   size_t iovcnt, size_t nelem,
                                                   unsigned max_sge)
{
    uct_dcx_strided_t *st = &iface->strided;
    uct_dcx_skey_lay_t lay;
    size_t i;

    if (st->keys_max == 0) {
        ucs_error("dcx: %s: %s: %zu strided elements need more than the %u "
                  "sges of plain expansion and strided keys are %s",
                  dcx_dev_name(iface->dev), name, nelem,
                  ucs_min(st->sge_max, max_sge),
                  (iface->caps->flags & DCX_CAP_MKEY_STRIDE) ?
                      "disabled (UCX_DCX_STRIDED_KEYS=0)" :
                      "not available on this device");
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    for (i = 0; i < iovcnt; ++i) {
        if ((iov[i].length == 0) || (iov[i].count <= 1) ||
            (iov[i].stride == iov[i].length)) {
            continue;
        }
        uct_dcx_strided_lay_set(&lay, &iov[i], 0);
        if (!uct_dcx_strided_interleaved(st, &lay) &&
            (lay.count > st->key_entries)) {
            return uct_dcx_strided_too_large(iface, name, i, &iov[i],
                                             "needs more translation entries "
                                             "than a strided key holds (see "
                                             "docs/strided.md)");
        }
    }
    return UCS_OK;
}

/* A cached key that is not READY: UCS_INPROGRESS while its configure is in
 * flight and dci (NULL: none) may not use it yet; UCS_OK where the data
 * work request follows the configure on the same DCI; UCS_ERR_IO_ERROR,
 * once, for a layout whose configure failed, which is dropped then */
static UCS_F_NOINLINE ucs_status_t
uct_dcx_strided_key_unready(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                            uct_dcx_dci_t *dci, uct_dcx_skey_t *key)
{
    uct_dcx_strided_t *st = &iface->strided;

    if (key->state == UCT_DCX_SKEY_FAILED) {
        key->state = UCT_DCX_SKEY_UNSET;
        uct_dcx_skey_uncache(st, key);
        return UCS_ERR_IO_ERROR; /* (logged when the configure failed) */
    }
    ucs_assert(key->state == UCT_DCX_SKEY_CFG);
    if ((ep == NULL) || (dci == NULL) || (key->cfg_dci != dci->index)) {
        return UCS_INPROGRESS;
    }
    return UCS_OK;
}

/* Phase 4, for each strided entry: the key of layout lay for a WR on dci
 * (NULL where configures go on the configure queue), from the cache, or a
 * new one whose configure is posted now (post_cfg).  UCS_OK with *idx_p;
 * UCS_INPROGRESS when the key is not usable yet (its configure is in
 * flight elsewhere, or, ep NULL, it was just posted and a tag-list receive
 * needs it configured first); or an error. */
static ucs_status_t uct_dcx_strided_iov_key(uct_dcx_iface_t *iface,
                                            uct_dcx_ep_t *ep,
                                            uct_dcx_dci_t *dci,
                                            const uct_dcx_skey_lay_t *lay,
                                            uint16_t *idx_p)
{
    uct_dcx_strided_t *st = &iface->strided;
    uct_dcx_skey_t *key;
    ucs_status_t status;
    khiter_t it;
    uint16_t idx;
    int ret;

    it = kh_get(uct_dcx_skeys, &st->hash, *lay);
    if (it != kh_end(&st->hash)) {
        idx = kh_val(&st->hash, it);
        key = &st->keys[idx];
        if (ucs_unlikely(key->state != UCT_DCX_SKEY_READY)) {
            status = uct_dcx_strided_key_unready(iface, ep, dci, key);
            if (status != UCS_OK) {
                return status;
            }
        }
        /* held from now on; back at the lru's tail (most recently used)
         * when released */
        if (ucs_likely(!key->fresh)) {
            st->stats.hits++;
        } else {
            key->fresh = 0;
        }
        *idx_p = idx;
        return UCS_OK;
    }

    key = uct_dcx_strided_key_alloc(iface);
    if (key == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    if ((dci != NULL) &&
        ((dci->avail <= 1) ||
         (dci->flags & (UCT_DCX_DCI_FLAG_BROKEN | UCT_DCX_DCI_FLAG_ERR)))) {
        /* room for the configure and the data WR after it */
        return UCS_ERR_NO_RESOURCE;
    }
    idx = key - st->keys;
    uct_dcx_skey_set_layout(st, key, lay, uct_dcx_strided_interleaved(st, lay));
    status = st->post_cfg(iface, dci, ep, idx);
    if (UCS_STATUS_IS_ERR(status)) {
        return status;
    }
    it = kh_put(uct_dcx_skeys, &st->hash, *lay, &ret);
    if (ret < 0) {
        ucs_error("dcx: %s: strided key cache: out of memory",
                  dcx_dev_name(iface->dev));
        return UCS_ERR_NO_MEMORY;
    }
    kh_val(&st->hash, it) = idx;
    key->cached           = 1;
    key->fresh            = (status == UCS_INPROGRESS);
    st->stats.misses++;
    *idx_p = idx;
    return status;
}

/*
 * The iov list of a zero-copy operation with at least one strided entry,
 * as sges: see dcx_strided_iov.h.  ep NULL: a tag-list receive, whose keys must
 * be configured before it is posted (configures go on the control DCI).
 * On UCS_OK the caller posts its WR and then calls uct_dcx_strided_commit
 * (or takes the key), or uct_dcx_strided_abort if it could not post.
 */
ucs_status_t uct_dcx_strided_iov(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                                 const char *name, const uct_iov_t *iov,
                                 size_t iovcnt, unsigned flags, dcx_sge_t *sge,
                                 unsigned max_sge, unsigned *num_sge_p,
                                 size_t *length_p, uct_dcx_strided_use_t *use)
{
    uct_dcx_strided_t *st = &iface->strided;
    size_t nelem = 0, nplain = 0, i;
    uct_dcx_strided_op_t *sop;
    uct_dcx_skey_lay_t lay;
    uct_dcx_dci_t *dci;
    unsigned num_sge = 0, pending_cfg = 0;
    ucs_status_t status;
    uint32_t lkey;
    uint16_t idx;

    use->op       = NULL;
    use->num_keys = 0;
    status        = uct_dcx_strided_iov_check(iface, name, iov, iovcnt, flags,
                                              length_p, &nelem, &nplain);
    if (status != UCS_OK) {
        return status;
    }

    if (!(flags & UCT_DCX_STRIDED_KEY_ONLY) && (nelem <= st->sge_max) &&
        (nelem + nplain <= max_sge)) {
        *num_sge_p = uct_dcx_strided_iov_expand(iov, iovcnt, sge);
        st->stats.sge_expanded++;
        return UCS_OK;
    }

    status = uct_dcx_strided_iov_check_keys(iface, name, iov, iovcnt, nelem,
                                            max_sge);
    if (status != UCS_OK) {
        return status;
    }

    /* Where configures go */
    if (st->own_queue) {
        dci = NULL;
    } else if (ep != NULL) {
        status = uct_dcx_ep_tx_begin(iface, ep, 0);
        if (status != UCS_OK) {
            /* (UCT_DCX_TX_SINK: the caller takes the operation whole) */
            return status;
        }
        dci = uct_dcx_ep_dci(iface, ep);
    } else {
        dci = &iface->pool.dcis[iface->pool.ctl];
    }

    sop = ucs_mpool_get(&st->op_mp);
    if (sop == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    sop->super.cb   = uct_dcx_strided_op_done;
    sop->super.comp = NULL;
    sop->num        = 0;
    sop->cfg        = 0;
    use->op         = sop;

    for (i = 0; i < iovcnt; ++i) {
        if (uct_dcx_strided_iov_take_plain(&iov[i], sge, &num_sge, &lkey)) {
            continue;
        }

        uct_dcx_strided_lay_set(&lay, &iov[i], lkey);
        status = uct_dcx_strided_iov_key(iface, ep, dci, &lay, &idx);
        if (status == UCS_INPROGRESS) {
            pending_cfg = 1;
            continue;
        } else if (status != UCS_OK) {
            goto err;
        }
        uct_dcx_skey_get(st, &st->keys[idx]);
        sop->keys[sop->num++] = idx;
        /* address 0: the key's address space */
        uct_dcx_strided_sge_set(&sge[num_sge++], 0,
                                iov[i].length * iov[i].count,
                                st->keys[idx].mkey->lkey);
    }

    if (pending_cfg) {
        st->stats.cfg_waits++;
        status = UCS_ERR_NO_RESOURCE;
        goto err;
    }
    use->num_keys = sop->num;
    *num_sge_p    = num_sge;
    return UCS_OK;

err:
    uct_dcx_strided_abort(iface, use);
    if (status == UCS_ERR_NO_RESOURCE) {
        /* what lets it go is a configure's completion or a key coming
         * back, not a DCI slot: a pending request waits for it */
        st->key_wait = 1;
    }
    return status;
}


/* ---------------------------------------------------------------------------
 * Deregistration, setup, counters
 * ------------------------------------------------------------------------- */

/* A registration goes away: no cached layout may use it any more */
static int uct_dcx_strided_dereg_cb(void *arg, dcx_mr_t *mr, int kept)
{
    uct_dcx_iface_t *iface = arg;
    uct_dcx_strided_t *st  = &iface->strided;
    uct_dcx_skey_t *key;
    unsigned i;

    for (i = 0; i < st->keys_created; ++i) {
        key = &st->keys[i];
        if (key->cached && (key->lay.lkey == mr->lkey)) {
            uct_dcx_skey_uncache(st, key);
            st->stats.invalidations++;
        }
    }
    return 0;
}

ucs_status_t uct_dcx_strided_init(uct_dcx_iface_t *iface,
                                  const uct_dcx_iface_config_t *config)
{
    uct_dcx_strided_t *st      = &iface->strided;
    const dcx_dev_caps_t *caps = iface->caps;
    uct_dcx_md_t *md           = ucs_derived_of(iface->super.md, uct_dcx_md_t);
    ucs_status_t status;

    memset(st, 0, sizeof(*st));
    ucs_list_head_init(&st->free);
    ucs_list_head_init(&st->lru);
    kh_init_inplace(uct_dcx_skeys, &st->hash);

    /* configures on the DCI of the operation where the device executes
     * them there in order with the data (dcx_strided_iov.h), else on a
     * queue of their own */
    st->post_cfg = uct_dcx_strided_post_cfg_dci;
    if (caps->flags & DCX_CAP_MKEY_STRIDE) {
        if ((config->strided_key_queue == UCT_DCX_STRIDED_QUEUE_DCI) &&
            (caps->mkey_qp_type != DCX_QPT_DCI)) {
            ucs_error("dcx: %s: UCX_DCX_STRIDED_KEY_QUEUE=dci: the device "
                      "takes strided-key configures on another queue than "
                      "the DCIs (\"own\" or \"auto\")",
                      dcx_dev_name(iface->dev));
            status = UCS_ERR_INVALID_PARAM;
            goto err;
        }
        st->keys_max    = config->strided_keys;
        st->key_entries = (config->strided_key_entries == 0) ?
                              caps->mkey_max_entries :
                              config->strided_key_entries;
        st->max_stride  = caps->mkey_max_stride;
        st->own_queue   = (config->strided_key_queue ==
                         UCT_DCX_STRIDED_QUEUE_OWN) ||
                        (caps->mkey_qp_type != DCX_QPT_DCI);
    }
    if (st->own_queue) {
        /* a configure in flight holds its key: at most keys_max */
        st->post_cfg = uct_dcx_strided_post_cfg_own;
        uct_dcx_cfg_queue_init(&st->cfgq, iface->pd, caps->mkey_qp_type,
                               ucs_min(st->keys_max,
                                       UCT_DCX_STRIDED_CFGQ_DEPTH),
                               uct_dcx_strided_cfgq_done, iface);
    }
    st->sge_max           = config->strided_sge_max;
    st->stats.own_queue   = st->own_queue;
    st->stats.keys_max    = st->keys_max;
    st->stats.key_entries = st->key_entries;
    st->stats.sge_max     = st->sge_max;

    if (st->keys_max != 0) {
        st->keys = ucs_calloc(st->keys_max, sizeof(*st->keys),
                              "dcx_strided_keys");
        if (st->keys == NULL) {
            ucs_error("dcx: %s: cannot allocate %u strided keys",
                      dcx_dev_name(iface->dev), st->keys_max);
            status = UCS_ERR_NO_MEMORY;
            goto err;
        }
    }

    status = uct_dcx_mpool_init(&st->op_mp, 0, sizeof(uct_dcx_strided_op_t), 0,
                                UCS_SYS_CACHE_LINE_SIZE, 64, UINT_MAX,
                                &uct_dcx_strided_mp_ops, "dcx_strided_ops");
    if (status != UCS_OK) {
        goto err_keys;
    }

    st->dereg_cb.cb  = uct_dcx_strided_dereg_cb;
    st->dereg_cb.arg = iface;
    ucs_list_add_tail(&md->dereg_cbs, &st->dereg_cb.list);
    return UCS_OK;

err_keys:
    ucs_free(st->keys);
err:
    kh_destroy_inplace(uct_dcx_skeys, &st->hash);
    return status;
}

/* After the DCI pool is gone (its operations completed) */
void uct_dcx_strided_cleanup(uct_dcx_iface_t *iface)
{
    uct_dcx_strided_t *st = &iface->strided;
    unsigned i;

    ucs_list_del(&st->dereg_cb.list);
    uct_dcx_cfg_queue_cleanup(&st->cfgq);
    ucs_debug("dcx: %s: strided keys: %u created, %" PRIu64 " hits, %" PRIu64
              " misses, %" PRIu64 " evictions, %" PRIu64
              " invalidations, %" PRIu64 " exhausted, %" PRIu64
              " expanded to sges",
              dcx_dev_name(iface->dev), st->keys_created, st->stats.hits,
              st->stats.misses, st->stats.evictions, st->stats.invalidations,
              st->stats.exhausted, st->stats.sge_expanded);
    for (i = 0; i < st->keys_created; ++i) {
        dcx_mkey_destroy(st->keys[i].mkey);
        ucs_free(st->keys[i].list);
    }
    ucs_free(st->keys);
    ucs_mpool_cleanup(&st->op_mp, 0);
    kh_destroy_inplace(uct_dcx_skeys, &st->hash);
}
