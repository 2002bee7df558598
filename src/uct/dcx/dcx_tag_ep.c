/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: tagged sends of an endpoint (eager short/bcopy/zcopy,
 * software rendezvous request) and the sender's side of the device
 * rendezvous (uct_ep_tag_rndv_zcopy, its FIN, cancel, endpoint failure).
 * Wire formats: dcx_tag.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * Sends
 * ------------------------------------------------------------------------- */

static UCS_F_NOINLINE ucs_status_t uct_dcx_tag_no_peer_tm(uct_dcx_ep_t *ep,
                                                          const char *op)
{
    ucs_error("dcx: %s: the peer (DCT 0x%x) has no tag matching", op, ep->dctn);
    return UCS_ERR_UNSUPPORTED;
}

static UCS_F_NOINLINE ucs_status_t uct_dcx_tag_bad_length(const char *op,
                                                          size_t length,
                                                          size_t max)
{
    ucs_error("dcx: %s: length %zu exceeds the maximum %zu", op, length, max);
    return UCS_ERR_INVALID_PARAM;
}

/* Posts a tagged send on ep's own DCI, dci: like an AM, it uses a credit */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_tag_post_dci(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                     uct_dcx_dci_t *dci, dcx_send_wr_t *wr, uct_dcx_op_t *op,
                     int signal)
{
    ucs_status_t status;

    status = uct_dcx_dci_post_own(iface, dci, ep, wr, op, signal, 1);
    if (ucs_unlikely(status != UCS_OK)) {
        if (op != NULL) {
            ucs_mpool_put_inline(op);
        }
        return status;
    }
    ep->fc_wnd--;
    return UCS_OK;
}

/* The same on ep's DCI, found here (uct_dcx_ep_post_dci says when a caller
 * passes the DCI it took before) */
static UCS_F_ALWAYS_INLINE ucs_status_t uct_dcx_tag_post(uct_dcx_iface_t *iface,
                                                         uct_dcx_ep_t *ep,
                                                         dcx_send_wr_t *wr,
                                                         uct_dcx_op_t *op,
                                                         int signal)
{
    return uct_dcx_tag_post_dci(iface, ep, uct_dcx_ep_dci(iface, ep), wr, op,
                                signal);
}

/* Splits a 64-bit immediate into the TMH app_ctx and the SEND_IMM data */
static UCS_F_ALWAYS_INLINE void uct_dcx_tag_imm(dcx_send_wr_t *wr, uint64_t imm,
                                                uint32_t *app_ctx_p)
{
    *app_ctx_p = (uint32_t)imm;
    if (imm != 0) {
        wr->opcode = DCX_WR_SEND_IMM;
        wr->imm    = (uint32_t)(imm >> 32);
    }
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_tag_inline(uct_dcx_ep_t *ep, const char *name, uct_tag_t tag,
                   const void *data, size_t length, int rndv_req)
{
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    dcx_tmh_t tmh; /* aligned: packed with two stores */
    uct_dcx_dci_t *dci;
    dcx_sge_t sge[2];
    dcx_send_wr_t wr;
    ucs_status_t status;

    if (ucs_unlikely(ep->tmh_len == 0)) {
        return uct_dcx_tag_no_peer_tm(ep, name);
    }
    if (ucs_unlikely(length + DCX_TM_TMH_LEN > iface->config.max_inline)) {
        return uct_dcx_tag_bad_length(name, length,
                                      iface->config.max_inline -
                                          DCX_TM_TMH_LEN);
    }

    status = uct_dcx_ep_tx_begin(iface, ep, 1);
    if (ucs_unlikely(status != UCS_OK)) {
        return uct_dcx_ep_tx_refused(ep, status, NULL, UCS_OK);
    }
    dci = uct_dcx_ep_dci(iface, ep);

    /* dcx_tmh_pack's fields, app_ctx 0, stored in place (through the
     * packing function it was built aside and copied: two stores more) */
    memset(&tmh, 0, sizeof(tmh));
    tmh.opcode    = DCX_TMH_EAGER;
    tmh.tag       = htobe64(tag);
    sge[0].addr   = (uintptr_t)&tmh;
    sge[0].length = DCX_TM_TMH_LEN;
    sge[0].lkey   = 0;
    sge[1].addr   = (uintptr_t)data;
    sge[1].length = length;
    sge[1].lkey   = 0;
    uct_dcx_wr_init(&wr, ep, DCX_WR_SEND, DCX_SEND_INLINE, sge,
                    (length > 0) ? 2 : 1);
    if (rndv_req) {
        wr.opcode = DCX_WR_SEND_IMM; /* immediate 0, app_ctx 0 */
    }
    return uct_dcx_tag_post_dci(iface, ep, dci, &wr, NULL, 0);
}

ucs_status_t uct_dcx_ep_tag_eager_short(uct_ep_h tl_ep, uct_tag_t tag,
                                        const void *data, size_t length)
{
    uct_dcx_ep_t *ep = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    ucs_status_t status;

    status = uct_dcx_tag_inline(ep, "tag_eager_short", tag, data, length, 0);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, TAG, SHORT, length);
    return status;
}

ucs_status_t uct_dcx_ep_tag_rndv_request(uct_ep_h tl_ep, uct_tag_t tag,
                                         const void *header,
                                         unsigned header_length, unsigned flags)
{
    uct_dcx_ep_t *ep = ucs_derived_of(tl_ep, uct_dcx_ep_t);

    return uct_dcx_tag_inline(ep, "tag_rndv_request", tag, header,
                              header_length, 1);
}

ssize_t uct_dcx_ep_tag_eager_bcopy(uct_ep_h tl_ep, uct_tag_t tag, uint64_t imm,
                                   uct_pack_callback_t pack_cb, void *arg,
                                   unsigned flags)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    uct_dcx_send_desc_t *desc;
    dcx_send_wr_t wr;
    dcx_sge_t sge;
    uint8_t *data;
    uint32_t app_ctx;
    ucs_status_t status;
    size_t length;

    if (ucs_unlikely(ep->tmh_len == 0)) {
        return uct_dcx_tag_no_peer_tm(ep, "tag_eager_bcopy");
    }

    status = uct_dcx_ep_desc_begin_mp(iface, ep, 1, uct_dcx_op_release_desc,
                                      NULL, iface->tag_bcopy_mp, &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return uct_dcx_ep_bcopy_refused(iface, status, pack_cb, arg);
    }

    data   = uct_dcx_desc_data(desc);
    length = pack_cb(data + DCX_TM_TMH_LEN, arg);
    ucs_assertv(length <= iface->config.rx_seg_size,
                "tag_eager_bcopy packed %zu bytes, max %zu", length,
                iface->config.rx_seg_size);

    sge.addr   = (uintptr_t)data;
    sge.length = DCX_TM_TMH_LEN + length;
    sge.lkey   = desc->lkey;
    uct_dcx_wr_init(&wr, ep, DCX_WR_SEND, 0, &sge, 1);
    uct_dcx_tag_imm(&wr, imm, &app_ctx);
    dcx_tmh_pack(data, DCX_TMH_EAGER, app_ctx, tag);
    status = uct_dcx_tag_post(iface, ep, &wr, &desc->op, 0);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, TAG, BCOPY, length);
    return length;
}

ucs_status_t uct_dcx_ep_tag_eager_zcopy(uct_ep_h tl_ep, uct_tag_t tag,
                                        uint64_t imm, const uct_iov_t *iov,
                                        size_t iovcnt, unsigned flags,
                                        uct_completion_t *comp)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    dcx_sge_t sge[UCT_DCX_MAX_SGE];
    uct_dcx_strided_use_t use;
    uct_dcx_send_desc_t *desc;
    dcx_send_wr_t wr;
    uint32_t app_ctx;
    ucs_status_t status;
    unsigned num_sge;
    size_t i, length;

    if (ucs_unlikely(ep->tmh_len == 0)) {
        return uct_dcx_tag_no_peer_tm(ep, "tag_eager_zcopy");
    }
    if (ucs_unlikely(iovcnt > iface->config.max_iov)) {
        ucs_error("dcx: tag_eager_zcopy: iov count %zu exceeds the maximum "
                  "%u",
                  iovcnt, iface->config.max_iov);
        return UCS_ERR_INVALID_PARAM;
    }
    use.op = NULL;
    status = UCS_OK;
    length = 0;
    for (i = 0; i < iovcnt; ++i) {
        if (ucs_unlikely((iov[i].count > 1) &&
                         (iov[i].stride != iov[i].length) &&
                         (iov[i].length != 0))) {
            /* strided: elements as sges or through keys (dcx_strided.c) */
            status = uct_dcx_strided_iov(iface, ep, "tag_eager_zcopy", iov,
                                         iovcnt, 0, sge + 1,
                                         iface->config.max_sge - 1, &num_sge,
                                         &length, &use);
            if ((status != UCS_OK) && !uct_dcx_strided_length_known(status)) {
                return status;
            }
            break;
        }
        if (ucs_unlikely(iov[i].memh == UCT_MEM_HANDLE_NULL)) {
            ucs_error("dcx: tag_eager_zcopy: iov[%zu] has no memory handle", i);
            return UCS_ERR_INVALID_PARAM;
        }
        sge[i + 1].addr   = (uintptr_t)iov[i].buffer;
        sge[i + 1].length = uct_iov_get_length(&iov[i]);
        sge[i + 1].lkey   = uct_dcx_memh_mr(iov[i].memh)->lkey;
        length += sge[i + 1].length;
        num_sge = i + 1;
    }
    if (iovcnt == 0) {
        num_sge = 0;
    }
    if (ucs_unlikely(length > iface->config.rx_seg_size)) {
        uct_dcx_strided_abort(iface, &use);
        return uct_dcx_tag_bad_length("tag_eager_zcopy", length,
                                      iface->config.rx_seg_size);
    }
    if (ucs_unlikely(status == UCS_ERR_NO_RESOURCE)) {
        return status;
    }

    status = uct_dcx_ep_tx_begin(iface, ep, 1);
    if (ucs_unlikely(status != UCS_OK)) {
        uct_dcx_strided_abort(iface, &use);
        return uct_dcx_ep_tx_refused(ep, status, comp, UCS_INPROGRESS);
    }
    desc = uct_dcx_iface_get_desc(iface);
    if (ucs_unlikely(desc == NULL)) {
        uct_dcx_strided_abort(iface, &use);
        return UCS_ERR_NO_RESOURCE;
    }
    desc->op.cb   = uct_dcx_op_release_desc;
    desc->op.comp = comp;

    sge[0].addr   = (uintptr_t)uct_dcx_desc_data(desc);
    sge[0].length = DCX_TM_TMH_LEN;
    sge[0].lkey   = desc->lkey;
    uct_dcx_wr_init(&wr, ep, DCX_WR_SEND, 0, sge, num_sge + 1);
    uct_dcx_tag_imm(&wr, imm, &app_ctx);
    dcx_tmh_pack(uct_dcx_desc_data(desc), DCX_TMH_EAGER, app_ctx, tag);
    status = uct_dcx_tag_post(iface, ep, &wr, &desc->op,
                              (comp != NULL) || (use.op != NULL));
    if (ucs_unlikely(status != UCS_OK)) {
        uct_dcx_strided_abort(iface, &use);
        return status;
    }
    /* the WR reads the user's memory: stop the DCI if the ep goes */
    uct_dcx_ep_dci(iface, ep)
        ->wr_opcode[uct_dcx_ep_dci(iface, ep)->sn & iface->pool.ring_mask] |=
        UCT_DCX_WR_USER_MEM;
    uct_dcx_strided_commit(iface, uct_dcx_ep_dci(iface, ep), &use);

    UCT_TL_EP_STAT_OP(&ep->super, TAG, ZCOPY, length);
    return UCS_INPROGRESS;
}


/* ---------------------------------------------------------------------------
 * Rendezvous (sender)
 * ------------------------------------------------------------------------- */

static void uct_dcx_tm_rndv_put(uct_dcx_iface_t *iface,
                                uct_dcx_tm_rndv_op_t *op)
{
    if (op->skey != UCT_DCX_SKEY_NONE) {
        uct_dcx_strided_key_put(iface, op->skey);
        op->skey = UCT_DCX_SKEY_NONE;
    }
    op->ep   = NULL;
    op->comp = NULL;
    op->gen++;
    op->next_free       = iface->tm.rndv_free;
    iface->tm.rndv_free = op - iface->tm.rndv_ops;
}

/* The free rendezvous op at the head of the list (the caller checked there
 * is one) taken for ep and comp: uct_dcx_tm_rndv_put's twin */
static uct_dcx_tm_rndv_op_t *uct_dcx_tm_rndv_take(uct_dcx_iface_t *iface,
                                                  uct_dcx_ep_t *ep,
                                                  uct_completion_t *comp)
{
    uct_dcx_tm_rndv_op_t *op = &iface->tm.rndv_ops[iface->tm.rndv_free];

    iface->tm.rndv_free = op->next_free;
    op->ep              = ep;
    op->comp            = comp;
    return op;
}

/* A rendezvous refused with status: an invalidated ep (UCT_DCX_TX_SINK)
 * takes it as any other operation, listed and never sent; the report of the
 * ep's failure completes it (uct_dcx_tag_ep_gone) */
static ucs_status_ptr_t uct_dcx_tm_rndv_refused(uct_dcx_iface_t *iface,
                                                uct_dcx_ep_t *ep,
                                                ucs_status_t status,
                                                uct_completion_t *comp)
{
    if (status != UCT_DCX_TX_SINK) {
        return UCS_STATUS_PTR(status);
    }
    return uct_dcx_tm_rndv_take(iface, ep, comp);
}

ucs_status_ptr_t
uct_dcx_ep_tag_rndv_zcopy(uct_ep_h tl_ep, uct_tag_t tag, const void *header,
                          unsigned header_length, const uct_iov_t *iov,
                          size_t iovcnt, unsigned flags, uct_completion_t *comp)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    uct_dcx_tm_rndv_op_t *op;
    uct_dcx_send_desc_t *desc;
    uct_dcx_strided_use_t use;
    dcx_send_wr_t wr;
    dcx_sge_t sge, data_sge;
    uint8_t *data;
    uint16_t idx;
    unsigned priv_len, num_sge;
    size_t length;
    uint64_t addr;
    uint32_t rkey;
    ucs_status_t status;

    if (ucs_unlikely(ep->tmh_len == 0)) {
        return UCS_STATUS_PTR(uct_dcx_tag_no_peer_tm(ep, "tag_rndv_zcopy"));
    }
    if (ucs_unlikely(iface->rx.tmh_len == 0)) {
        /* the FIN comes back as a TM message: our SRQ must parse it */
        ucs_error("dcx: %s: tag_rndv_zcopy: tag matching is off on this "
                  "interface",
                  dcx_dev_name(iface->dev));
        return UCS_STATUS_PTR(UCS_ERR_UNSUPPORTED);
    }
    if (ucs_unlikely(header_length >
                     iface->tm.rndv_max_hdr + UCT_DCX_TM_TMH_PRIV)) {
        return UCS_STATUS_PTR(uct_dcx_tag_bad_length("tag_rndv_zcopy header",
                                                     header_length,
                                                     iface->tm.rndv_max_hdr +
                                                         UCT_DCX_TM_TMH_PRIV));
    }
    if (ucs_unlikely((iovcnt != 1) || (iov->memh == UCT_MEM_HANDLE_NULL) ||
                     (uct_iov_get_length(iov) > UINT32_MAX))) {
        ucs_error("dcx: tag_rndv_zcopy: needs one registered buffer of at "
                  "most 4 GiB (iov count %zu)",
                  iovcnt);
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (ucs_unlikely(iface->tm.rndv_free == UINT16_MAX)) {
        return UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE);
    }

    /* The peer's device reads the buffer with one READ: a strided buffer
     * goes through a strided key (never expanded to sges) */
    use.op = NULL;
    length = uct_iov_get_length(iov);
    addr   = (uintptr_t)iov->buffer;
    rkey   = uct_dcx_memh_mr(iov->memh)->rkey;
    if (ucs_unlikely((iov->count > 1) && (iov->stride != iov->length) &&
                     (iov->length != 0))) {
        status = uct_dcx_strided_iov(iface, ep, "tag_rndv_zcopy", iov, 1,
                                     UCT_DCX_STRIDED_KEY_ONLY, &data_sge, 1,
                                     &num_sge, &length, &use);
        if (status != UCS_OK) {
            return uct_dcx_tm_rndv_refused(iface, ep, status, comp);
        }
        addr = 0; /* the key's address space */
        rkey = uct_dcx_strided_key_rkey(iface, uct_dcx_strided_use_key(&use));
    }

    status = uct_dcx_ep_tx_begin(iface, ep, 1);
    if (ucs_unlikely(status != UCS_OK)) {
        uct_dcx_strided_abort(iface, &use);
        return uct_dcx_tm_rndv_refused(iface, ep, status, comp);
    }
    desc = uct_dcx_iface_get_desc(iface);
    if (ucs_unlikely(desc == NULL)) {
        uct_dcx_strided_abort(iface, &use);
        return UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE);
    }
    desc->op.cb   = uct_dcx_op_release_desc;
    desc->op.comp = NULL;

    idx  = iface->tm.rndv_free;
    op   = &iface->tm.rndv_ops[idx];
    data = uct_dcx_desc_data(desc);
    dcx_tmh_pack(data, DCX_TMH_RNDV, ((uint32_t)op->gen << 16) | idx, tag);
    dcx_rvh_pack(data + DCX_TM_TMH_LEN, addr, rkey, (uint32_t)length);
    dcx_ravh_pack(data + DCX_TM_TMH_LEN + sizeof(dcx_rvh_t), iface->config.dctn,
                  iface->config.dc_key);
    priv_len = ucs_min(header_length, UCT_DCX_TM_TMH_PRIV);
    data[1]  = priv_len;
    if (header_length > 0) { /* a header of 0 bytes may be NULL */
        memcpy(data + 2, header, priv_len);
        memcpy(data + DCX_TM_RNDV_LEN, UCS_PTR_BYTE_OFFSET(header, priv_len),
               header_length - priv_len);
    }

    sge.addr   = (uintptr_t)data;
    sge.length = DCX_TM_RNDV_LEN + header_length - priv_len;
    sge.lkey   = desc->lkey;
    uct_dcx_wr_init(&wr, ep, DCX_WR_SEND, 0, &sge, 1);
    status = uct_dcx_tag_post(iface, ep, &wr, &desc->op, 0);
    if (ucs_unlikely(status != UCS_OK)) {
        uct_dcx_strided_abort(iface, &use);
        return UCS_STATUS_PTR(status);
    }

    /* op is the list's head still: taken now that the request is posted;
     * the key stays until the rendezvous ends (FIN, cancel, failure) */
    op       = uct_dcx_tm_rndv_take(iface, ep, comp);
    op->skey = uct_dcx_strided_take(iface, &use);
    UCT_TL_EP_STAT_OP(&ep->super, TAG, ZCOPY, length);
    return op;
}

static uct_dcx_tm_rndv_op_t *uct_dcx_tm_rndv_op(uct_dcx_iface_t *iface,
                                                void *handle)
{
    uct_dcx_tm_rndv_op_t *op = handle;

    if ((iface->tm.rndv_ops == NULL) || (op < iface->tm.rndv_ops) ||
        (op >= iface->tm.rndv_ops + UCT_DCX_TM_RNDV_OPS) || (op->ep == NULL)) {
        return NULL;
    }
    return op;
}

ucs_status_t uct_dcx_ep_tag_rndv_cancel(uct_ep_h tl_ep, void *handle)
{
    uct_dcx_ep_t *ep         = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface   = uct_dcx_ep_iface(ep);
    uct_dcx_tm_rndv_op_t *op = uct_dcx_tm_rndv_op(iface, handle);

    if ((op == NULL) || (op->ep != ep)) {
        ucs_error("dcx: tag_rndv_cancel: %p is not a rendezvous of ep %p",
                  handle, ep);
        return UCS_ERR_INVALID_PARAM;
    }
    /* a FIN that still comes finds nothing */
    uct_dcx_tm_rndv_put(iface, op);
    return UCS_OK;
}

void uct_dcx_tag_ep_gone(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                         ucs_status_t status)
{
    uct_dcx_tm_rndv_op_t *op;
    uct_completion_t *comp;
    unsigned i;

    if (iface->tm.rndv_ops == NULL) {
        return;
    }
    for (i = 0; i < UCT_DCX_TM_RNDV_OPS; ++i) {
        op = &iface->tm.rndv_ops[i];
        if (op->ep != ep) {
            continue;
        }
        comp = op->comp;
        uct_dcx_tm_rndv_put(iface, op);
        if ((status != UCS_OK) && (comp != NULL)) {
            uct_invoke_completion(comp, status);
        }
    }
}

/* The receiver's device read a rendezvous of ours */
void uct_dcx_tag_rx_fin(uct_dcx_iface_t *iface, const uint8_t *tmh)
{
    uct_dcx_tm_rndv_op_t *op;
    uct_completion_t *comp;
    uint8_t opcode;
    uint32_t app_ctx;
    uint64_t tag;

    dcx_tmh_unpack(tmh, &opcode, &app_ctx, &tag);
    op = &iface->tm.rndv_ops[(app_ctx & 0xffff) % UCT_DCX_TM_RNDV_OPS];
    if ((op->ep == NULL) || (op->gen != (app_ctx >> 16))) {
        return; /* cancelled, or its ep is gone */
    }
    comp = op->comp;
    uct_dcx_tm_rndv_put(iface, op);
    if (comp != NULL) {
        uct_invoke_completion(comp, UCS_OK);
    }
}
