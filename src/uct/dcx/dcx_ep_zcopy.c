/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: zero-copy endpoint operations (am_zcopy, put_zcopy,
 * get_zcopy).  Strided iov entries go to dcx_strided.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx_ep.inl"

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>
#include <string.h>


/*
 * The iov list of a zero-copy op as sges (at most max_sge).  Contiguous
 * entries (count 1, or elements back to back) are one sge each; the first
 * strided entry hands the whole list to uct_dcx_strided_iov, which may
 * take strided keys into *use: the caller commits them after posting its
 * WR (then the WR must be signalled) or aborts.  scatter: the WR writes
 * into the buffers.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_iov_to_sge(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep, const char *op,
                   const uct_iov_t *iov, size_t iovcnt, unsigned flags,
                   dcx_sge_t *sge, unsigned max_sge, unsigned *num_sge_p,
                   size_t *length_p, uct_dcx_strided_use_t *use)
{
    size_t i, iov_len, length = 0;
    unsigned num_sge = 0;

    use->op = NULL;
    if (ucs_unlikely(iovcnt > iface->config.max_iov)) {
        return uct_dcx_bad_iovcnt(op, iovcnt, iface->config.max_iov);
    }

    for (i = 0; i < iovcnt; ++i) {
        iov_len = uct_iov_get_length(&iov[i]);
        if (iov_len == 0) {
            continue; /* no memory is accessed: no memory handle needed */
        }
        if (ucs_unlikely((iov[i].count > 1) &&
                         (iov[i].stride != iov[i].length))) {
            return uct_dcx_strided_iov(iface, ep, op, iov, iovcnt, flags, sge,
                                       max_sge, num_sge_p, length_p, use);
        }
        if (ucs_unlikely(iov[i].memh == UCT_MEM_HANDLE_NULL)) {
            ucs_error("dcx: %s: iov[%zu] of %zu bytes has no memory handle", op,
                      i, iov_len);
            return UCS_ERR_INVALID_PARAM;
        }
        uct_dcx_sge_set(&sge[num_sge++], iov[i].buffer, iov_len,
                        uct_dcx_memh_mr(iov[i].memh)->lkey);
        length += iov_len;
    }
    *num_sge_p = num_sge;
    *length_p  = length;
    return UCS_OK;
}

ucs_status_t uct_dcx_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                 unsigned header_length, const uct_iov_t *iov,
                                 size_t iovcnt, unsigned flags,
                                 uct_completion_t *comp)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    uct_dcx_send_desc_t *desc;
    dcx_sge_t sge[UCT_DCX_MAX_SGE];
    uct_dcx_strided_use_t use;
    dcx_send_wr_t wr;
    uint8_t *data;
    ucs_status_t status;
    unsigned num_sge;
    size_t length;

    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return uct_dcx_bad_am_id(id);
    }
    if (ucs_unlikely(header_length > UCT_DCX_AM_MAX_HDR)) {
        return uct_dcx_bad_length("am_zcopy header", header_length,
                                  UCT_DCX_AM_MAX_HDR);
    }
    status = uct_dcx_iov_to_sge(iface, ep, "am_zcopy", iov, iovcnt, 0, sge + 1,
                                iface->config.max_sge - 1, &num_sge, &length,
                                &use);
    if (ucs_unlikely(status != UCS_OK) &&
        !uct_dcx_strided_length_known(status)) {
        return status;
    }
    if (ucs_unlikely(UCT_DCX_AM_HDR_LEN + header_length + length >
                     iface->config.seg_size)) {
        uct_dcx_strided_abort(iface, &use);
        return uct_dcx_bad_length("am_zcopy", header_length + length,
                                  iface->config.seg_size - UCT_DCX_AM_HDR_LEN);
    }
    if (ucs_unlikely(status == UCS_ERR_NO_RESOURCE)) {
        return status;
    }

    status = uct_dcx_ep_desc_begin(iface, ep, 1, uct_dcx_op_release_desc, comp,
                                   &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        uct_dcx_strided_abort(iface, &use);
        return uct_dcx_ep_tx_refused(ep, status, comp, UCS_INPROGRESS);
    }

    /* The AM byte and the user header travel from a registered buffer */
    data = uct_dcx_desc_data(desc);
    memset(data, 0, ep->tmh_len); /* TMH of opcode NO_TAG */
    data[ep->tmh_len] = id;
    if (header_length > 0) { /* a header of 0 bytes may be NULL */
        memcpy(data + ep->tmh_len + UCT_DCX_AM_HDR_LEN, header, header_length);
    }
    uct_dcx_sge_set(&sge[0], data,
                    ep->tmh_len + UCT_DCX_AM_HDR_LEN + header_length,
                    desc->lkey);
    uct_dcx_wr_init(&wr, ep, DCX_WR_SEND, 0, sge, num_sge + 1);
    status = uct_dcx_ep_post(iface, ep, &wr, &desc->op,
                             (comp != NULL) || (use.op != NULL), 1);
    if (ucs_unlikely(status != UCS_OK)) {
        uct_dcx_strided_abort(iface, &use);
        return status;
    }
    uct_dcx_ep_mark_user_mem(iface, ep);
    uct_dcx_strided_commit(iface, uct_dcx_ep_dci(iface, ep), &use);

    UCT_TL_EP_STAT_OP(&ep->super, AM, ZCOPY, header_length + length);
    return UCS_INPROGRESS;
}


/* ---------------------------------------------------------------------------
 * RMA
 * ------------------------------------------------------------------------- */

/* One-sided zero-copy op; a bare op carries the completion if any */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_ep_rma_zcopy(uct_dcx_ep_t *ep, uint8_t opcode, const char *name,
                     const uct_iov_t *iov, size_t iovcnt, uint64_t remote_addr,
                     uct_rkey_t rkey, uct_completion_t *comp, size_t *len_p)
{
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    dcx_sge_t sge[UCT_DCX_MAX_SGE];
    uct_dcx_op_t *op = NULL;
    uct_dcx_strided_use_t use;
    dcx_send_wr_t wr;
    ucs_status_t status;
    unsigned num_sge;

    status = uct_dcx_iov_to_sge(iface, ep, name, iov, iovcnt,
                                (opcode == DCX_WR_RDMA_READ) ?
                                    UCT_DCX_STRIDED_SCATTER :
                                    0,
                                sge, iface->config.max_sge, &num_sge, len_p,
                                &use);
    if (ucs_unlikely(status != UCS_OK) &&
        !uct_dcx_strided_length_known(status)) {
        return status;
    }
    if (ucs_unlikely(*len_p > iface->caps->max_msg_size)) {
        uct_dcx_strided_abort(iface, &use);
        return uct_dcx_bad_length(name, *len_p, iface->caps->max_msg_size);
    }
    if (ucs_unlikely(status == UCS_ERR_NO_RESOURCE)) {
        return status;
    }

    status = uct_dcx_ep_tx_begin(iface, ep, 0);
    if (ucs_unlikely(status != UCS_OK)) {
        goto err;
    }

    if (comp != NULL) {
        op = ucs_mpool_get_inline(&iface->op_mp);
        if (ucs_unlikely(op == NULL)) {
            status = UCS_ERR_NO_RESOURCE;
            goto err;
        }
        op->cb   = uct_dcx_op_put;
        op->comp = comp;
    }

    uct_dcx_wr_init_rma(&wr, ep, opcode, 0, sge, num_sge, remote_addr, rkey);
    status = uct_dcx_ep_post(iface, ep, &wr, op,
                             (op != NULL) || (use.op != NULL), 0);
    if (ucs_unlikely(status != UCS_OK)) {
        goto err;
    }
    uct_dcx_ep_mark_user_mem(iface, ep);
    uct_dcx_strided_commit(iface, uct_dcx_ep_dci(iface, ep), &use);
    return UCS_INPROGRESS;

err:
    uct_dcx_strided_abort(iface, &use);
    return uct_dcx_ep_tx_refused(ep, status, comp, UCS_INPROGRESS);
}

ucs_status_t uct_dcx_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                  size_t iovcnt, uint64_t remote_addr,
                                  uct_rkey_t rkey, uct_completion_t *comp)
{
    uct_dcx_ep_t *ep = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    ucs_status_t status;
    size_t length;

    status = uct_dcx_ep_rma_zcopy(ep, DCX_WR_RDMA_WRITE, "put_zcopy", iov,
                                  iovcnt, remote_addr, rkey, comp, &length);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, PUT, ZCOPY, length);
    return status;
}

ucs_status_t uct_dcx_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                  size_t iovcnt, uint64_t remote_addr,
                                  uct_rkey_t rkey, uct_completion_t *comp)
{
    uct_dcx_ep_t *ep = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    ucs_status_t status;
    size_t length;

    status = uct_dcx_ep_rma_zcopy(ep, DCX_WR_RDMA_READ, "get_zcopy", iov,
                                  iovcnt, remote_addr, rkey, comp, &length);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, GET, ZCOPY, length);
    return status;
}
