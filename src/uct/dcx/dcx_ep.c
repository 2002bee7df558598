/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: endpoints and their operations (the zero-copy ones are in
 * dcx_ep_zcopy.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx_ep.inl"

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>
#include <string.h>


/* ---------------------------------------------------------------------------
 * Argument checks (each bad input: one log line and a status)
 * ------------------------------------------------------------------------- */

UCS_F_NOINLINE ucs_status_t uct_dcx_bad_length(const char *op, size_t length,
                                               size_t max)
{
    ucs_error("dcx: %s: length %zu exceeds the maximum %zu", op, length, max);
    return UCS_ERR_INVALID_PARAM;
}

UCS_F_NOINLINE ucs_status_t uct_dcx_bad_am_id(unsigned id)
{
    ucs_error("dcx: invalid active message id %u (valid: 0..%d)", id,
              (int)UCT_AM_ID_MAX - 1);
    return UCS_ERR_INVALID_PARAM;
}

UCS_F_NOINLINE ucs_status_t uct_dcx_bad_iovcnt(const char *op, size_t iovcnt,
                                               size_t max)
{
    ucs_error("dcx: %s: iov count %zu exceeds the maximum %zu", op, iovcnt,
              max);
    return UCS_ERR_INVALID_PARAM;
}

static UCS_F_NOINLINE ucs_status_t uct_dcx_bad_atomic(const char *op,
                                                      unsigned opcode)
{
    ucs_error("dcx: %s: atomic operation %u is not supported by this device",
              op, opcode);
    return UCS_ERR_UNSUPPORTED;
}


/* ---------------------------------------------------------------------------
 * Active messages
 * ------------------------------------------------------------------------- */

/* An inline AM: sge[0] holds the NO_TAG TMH (sent to TM peers only),
 * sge[1] the AM id, the rest carry 'length' bytes */
static UCS_F_ALWAYS_INLINE ucs_status_t uct_dcx_ep_am_inline(uct_dcx_ep_t *ep,
                                                             const char *name,
                                                             dcx_sge_t *sge,
                                                             unsigned num_sge,
                                                             size_t length)
{
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    unsigned skip          = (ep->tmh_len == 0);
    dcx_send_wr_t wr;
    ucs_status_t status;

    if (ucs_unlikely(length + UCT_DCX_AM_HDR_LEN + DCX_TM_TMH_LEN >
                     iface->config.max_inline)) {
        return uct_dcx_bad_length(name, length,
                                  iface->config.max_inline -
                                      UCT_DCX_AM_HDR_LEN - DCX_TM_TMH_LEN);
    }
    uct_dcx_sge_set(&sge[0], uct_dcx_tmh_no_tag, ep->tmh_len, 0);
    sge += skip;
    num_sge -= skip;

    status = uct_dcx_ep_tx_begin(iface, ep, 1);
    if (ucs_unlikely(status != UCS_OK)) {
        return uct_dcx_ep_tx_refused(ep, status, NULL, UCS_OK);
    }

    uct_dcx_wr_init(&wr, ep, DCX_WR_SEND, DCX_SEND_INLINE, sge, num_sge);
    status = uct_dcx_ep_post(iface, ep, &wr, NULL, 0, 1);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, AM, SHORT, length);
    return status;
}

/* What an am_short sends before its payload, in one piece: the NO_TAG TMH
 * (its last tmh_len bytes: all of it to a TM peer, none otherwise), the AM
 * id and the 8-byte header */
typedef struct UCS_S_PACKED uct_dcx_am_short_hdr {
    uint8_t tmh[DCX_TM_TMH_LEN];
    uint8_t am_id;
    uint64_t hdr;
} uct_dcx_am_short_hdr_t;

ucs_status_t uct_dcx_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t hdr,
                                 const void *buffer, unsigned length)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    uct_dcx_am_short_hdr_t am;
    uct_dcx_dci_t *dci;
    dcx_send_wr_t wr;
    dcx_sge_t sge[2];
    ucs_status_t status;

    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return uct_dcx_bad_am_id(id);
    }
    if (ucs_unlikely((size_t)length + sizeof(uct_dcx_am_short_hdr_t) >
                     iface->config.max_inline)) {
        return uct_dcx_bad_length("am_short", length + sizeof(hdr),
                                  iface->config.max_inline -
                                      UCT_DCX_AM_HDR_LEN - DCX_TM_TMH_LEN);
    }

    status = uct_dcx_ep_tx_begin(iface, ep, 1);
    if (ucs_unlikely(status != UCS_OK)) {
        return uct_dcx_ep_tx_refused(ep, status, NULL, UCS_OK);
    }
    dci = uct_dcx_ep_dci(iface, ep);

    UCS_STATIC_ASSERT(sizeof(am) ==
                      DCX_TM_TMH_LEN + UCT_DCX_AM_HDR_LEN + sizeof(hdr));
    memset(am.tmh, 0, sizeof(am.tmh));
    am.am_id = id;
    am.hdr   = hdr;
    uct_dcx_sge_set(&sge[0], &am.tmh[DCX_TM_TMH_LEN - ep->tmh_len],
                    ep->tmh_len + UCT_DCX_AM_HDR_LEN + sizeof(hdr), 0);
    uct_dcx_sge_set(&sge[1], buffer, length, 0);
    uct_dcx_wr_init(&wr, ep, DCX_WR_SEND, DCX_SEND_INLINE, sge,
                    1 + (length != 0));
    status = uct_dcx_ep_post_dci(iface, ep, dci, &wr, NULL, 0, 1);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, AM, SHORT,
                                 sizeof(hdr) + length);
    return status;
}

ucs_status_t uct_dcx_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                     const uct_iov_t *iov, size_t iovcnt)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    uint8_t am_id          = id;
    dcx_sge_t sge[UCT_DCX_MAX_SGE];
    unsigned num_sge, k, count;
    size_t i, length;

    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return uct_dcx_bad_am_id(id);
    }
    if (ucs_unlikely(iovcnt > iface->config.max_iov)) {
        return uct_dcx_bad_iovcnt("am_short_iov", iovcnt,
                                  iface->config.max_iov);
    }

    uct_dcx_sge_set(&sge[1], &am_id, UCT_DCX_AM_HDR_LEN, 0);
    length  = 0;
    num_sge = 2;
    for (i = 0; i < iovcnt; ++i) {
        /* a strided entry: one inline sge per element */
        count = ((iov[i].count > 1) && (iov[i].stride != iov[i].length)) ?
                    iov[i].count :
                    1;
        if (ucs_unlikely(num_sge + count > iface->config.max_sge)) {
            ucs_error("dcx: am_short_iov: iov[%zu] of %u elements: more "
                      "than the %u pieces of an inline send",
                      i, iov[i].count, iface->config.max_sge - 2);
            return UCS_ERR_EXCEEDS_LIMIT;
        }
        if (count == 1) {
            uct_dcx_sge_set(&sge[num_sge++], iov[i].buffer,
                            uct_iov_get_length(&iov[i]), 0);
            length += uct_iov_get_length(&iov[i]);
            continue;
        }
        for (k = 0; k < count; ++k) {
            uct_dcx_sge_set(&sge[num_sge++],
                            UCS_PTR_BYTE_OFFSET(iov[i].buffer,
                                                k * iov[i].stride),
                            iov[i].length, 0);
            length += iov[i].length;
        }
    }
    return uct_dcx_ep_am_inline(ep, "am_short_iov", sge, num_sge, length);
}

ssize_t uct_dcx_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id,
                            uct_pack_callback_t pack_cb, void *arg,
                            unsigned flags)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    uct_dcx_send_desc_t *desc;
    dcx_send_wr_t wr;
    dcx_sge_t sge;
    uint8_t *data;
    ucs_status_t status;
    size_t length;

    if (ucs_unlikely(id >= UCT_AM_ID_MAX)) {
        return uct_dcx_bad_am_id(id);
    }

    status = uct_dcx_ep_desc_begin(iface, ep, 1, uct_dcx_op_release_desc, NULL,
                                   &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return uct_dcx_ep_bcopy_refused(iface, status, pack_cb, arg);
    }

    data = uct_dcx_desc_data(desc);
    memset(data, 0, ep->tmh_len); /* TMH of opcode NO_TAG */
    data += ep->tmh_len;
    data[0] = id;
    length  = pack_cb(data + UCT_DCX_AM_HDR_LEN, arg);
    ucs_assertv(length <= iface->config.seg_size - UCT_DCX_AM_HDR_LEN,
                "am_bcopy packed %zu bytes, max %zu", length,
                iface->config.seg_size - UCT_DCX_AM_HDR_LEN);

    uct_dcx_sge_set(&sge, uct_dcx_desc_data(desc),
                    ep->tmh_len + length + UCT_DCX_AM_HDR_LEN, desc->lkey);
    uct_dcx_wr_init(&wr, ep, DCX_WR_SEND, 0, &sge, 1);
    status = uct_dcx_ep_post(iface, ep, &wr, &desc->op, 0, 1);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, AM, BCOPY, length);
    return length;
}


/* ---------------------------------------------------------------------------
 * RMA
 * ------------------------------------------------------------------------- */

/* put_short's WR: an inline WRITE of the caller's bytes (sge: its one
 * piece) */
static UCS_F_ALWAYS_INLINE void
uct_dcx_put_short_wr(dcx_send_wr_t *wr, dcx_sge_t *sge, uct_dcx_ep_t *ep,
                     const void *buffer, unsigned length, uint64_t remote_addr,
                     uct_rkey_t rkey)
{
    uct_dcx_sge_set(sge, buffer, length, 0);
    uct_dcx_wr_init_rma(wr, ep, DCX_WR_RDMA_WRITE, DCX_SEND_INLINE, sge, 1,
                        remote_addr, rkey);
}

ucs_status_t uct_dcx_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                  unsigned length, uint64_t remote_addr,
                                  uct_rkey_t rkey)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    dcx_send_wr_t wr;
    dcx_sge_t sge;
    ucs_status_t status;

    if (ucs_unlikely(length > iface->config.max_inline)) {
        return uct_dcx_bad_length("put_short", length,
                                  iface->config.max_inline);
    }

    status = uct_dcx_ep_tx_begin(iface, ep, 0);
    if (ucs_unlikely(status != UCS_OK)) {
        return uct_dcx_ep_tx_refused(ep, status, NULL, UCS_OK);
    }

    uct_dcx_put_short_wr(&wr, &sge, ep, buffer, length, remote_addr, rkey);
    status = uct_dcx_ep_post(iface, ep, &wr, NULL, 0, 0);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, PUT, SHORT, length);
    return status;
}

/* A one-sided op between the first 'length' bytes of desc's bounce buffer
 * and remote memory */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_ep_rma_bcopy(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                     uct_dcx_send_desc_t *desc, uint8_t opcode, int signal,
                     size_t length, uint64_t remote_addr, uct_rkey_t rkey)
{
    dcx_send_wr_t wr;
    dcx_sge_t sge;

    uct_dcx_sge_set(&sge, uct_dcx_desc_data(desc), length, desc->lkey);
    uct_dcx_wr_init_rma(&wr, ep, opcode, 0, &sge, 1, remote_addr, rkey);
    return uct_dcx_ep_post(iface, ep, &wr, &desc->op, signal, 0);
}

/* A put_short the device did not take within the call: an inline WRITE
 * where the bytes fit one, else (up to seg_size, the largest put_short
 * within the call) the bytes copied into a bounce buffer, posted as
 * put_bcopy's */
static ucs_status_t
uct_dcx_ep_put_short_post(uct_ep_h tl_ep, const void *buffer, unsigned length,
                          uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    uct_dcx_send_desc_t *desc;
    ucs_status_t status;

    if (ucs_likely(length <= iface->config.max_inline)) {
        return uct_dcx_ep_put_short(tl_ep, buffer, length, remote_addr, rkey);
    }
    if (ucs_unlikely(length > iface->config.max_put_short)) {
        return uct_dcx_bad_length("put_short", length,
                                  iface->config.max_put_short);
    }

    status = uct_dcx_ep_desc_begin(iface, ep, 0, uct_dcx_op_release_desc, NULL,
                                   &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return uct_dcx_ep_tx_refused(ep, status, NULL, UCS_OK);
    }
    memcpy(uct_dcx_desc_data(desc), buffer, length);
    status = uct_dcx_ep_rma_bcopy(iface, ep, desc, DCX_WR_RDMA_WRITE, 0, length,
                                  remote_addr, rkey);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, PUT, SHORT, length);
    return status;
}

/* put_short where the device has DCX_CAP_POST_NOW (chosen at interface
 * creation): an ep that could send at once on the DCI it holds has the
 * bytes, up to seg_size of them, written into the target's memory by the
 * device within the call (an inline WRITE flagged DCX_SEND_NOW: one copy,
 * no DCI slot taken, nothing to complete); where the device declines
 * (EAGAIN), and for every other ep, the put is posted
 * (uct_dcx_ep_put_short_post). */
ucs_status_t uct_dcx_ep_put_short_now(uct_ep_h tl_ep, const void *buffer,
                                      unsigned length, uint64_t remote_addr,
                                      uct_rkey_t rkey)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    dcx_send_wr_t wr;
    dcx_sge_t sge;
    dcx_qp_t *qp;

    if (ucs_likely((length <= iface->config.max_put_short) &&
                   uct_dcx_ep_can_now(iface, ep))) {
        /* (an inline WRITE's key is not read) */
        sge.addr   = (uintptr_t)buffer;
        sge.length = length;
        uct_dcx_wr_init_now(&wr, ep, DCX_WR_RDMA_WRITE, DCX_SEND_INLINE, &sge,
                            remote_addr, rkey);
        qp = uct_dcx_ep_dci(iface, ep)->qp;
        if (ucs_likely(qp->post_send(qp, &wr) == 0)) {
            UCT_TL_EP_STAT_OP(&ep->super, PUT, SHORT, length);
            return UCS_OK;
        }
        /* declined: the put as the caller gave it, from our frame
         * (uct_dcx_rkey keeps the low 32 bits: the same key) */
        return uct_dcx_ep_put_short_post(tl_ep,
                                         (const void *)(uintptr_t)sge.addr,
                                         sge.length, wr.remote_addr,
                                         (uct_rkey_t)wr.rkey);
    }
    return uct_dcx_ep_put_short_post(tl_ep, buffer, length, remote_addr, rkey);
}

/* put_bcopy through a bounce buffer.  With 'now' (a constant: the _now op,
 * chosen at interface creation where the device has DCX_CAP_POST_NOW), an
 * ep that could send at once on the DCI it holds, before anything here
 * gives it one, has the buffer copied to the target by the device within
 * the call (DCX_SEND_NOW) and given straight back to its pool; where the
 * device declines, and otherwise, the buffer is posted. */
static UCS_F_ALWAYS_INLINE ssize_t
uct_dcx_ep_put_bcopy_common(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                            void *arg, uint64_t remote_addr, uct_rkey_t rkey,
                            int now)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    int at_once            = now && uct_dcx_ep_can_now(iface, ep);
    uct_dcx_send_desc_t *desc;
    ucs_status_t status;
    dcx_send_wr_t wr;
    dcx_sge_t sge;
    size_t length;
    dcx_qp_t *qp;

    status = uct_dcx_ep_desc_begin(iface, ep, 0, uct_dcx_op_release_desc, NULL,
                                   &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return uct_dcx_ep_bcopy_refused(iface, status, pack_cb, arg);
    }

    length = pack_cb(uct_dcx_desc_data(desc), arg);
    if (at_once) {
        qp = uct_dcx_ep_dci(iface, ep)->qp;
        uct_dcx_sge_set(&sge, uct_dcx_desc_data(desc), length, desc->lkey);
        uct_dcx_wr_init_now(&wr, ep, DCX_WR_RDMA_WRITE, 0, &sge, remote_addr,
                            rkey);
        at_once = (qp->post_send(qp, &wr) == 0);
    }
    if (at_once) {
        ucs_mpool_put_inline(desc);
    } else {
        status = uct_dcx_ep_rma_bcopy(iface, ep, desc, DCX_WR_RDMA_WRITE, 0,
                                      length, remote_addr, rkey);
        if (ucs_unlikely(status != UCS_OK)) {
            return status;
        }
    }

    UCT_TL_EP_STAT_OP(&ep->super, PUT, BCOPY, length);
    return length;
}

ssize_t uct_dcx_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                             void *arg, uint64_t remote_addr, uct_rkey_t rkey)
{
    return uct_dcx_ep_put_bcopy_common(tl_ep, pack_cb, arg, remote_addr, rkey,
                                       0);
}

/* put_bcopy where the device may execute a WRITE within the call
 * (DCX_CAP_POST_NOW; chosen at interface creation): the bounce buffer the
 * user packed is copied to the target at once where the device can */
ssize_t uct_dcx_ep_put_bcopy_now(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                 void *arg, uint64_t remote_addr,
                                 uct_rkey_t rkey)
{
    return uct_dcx_ep_put_bcopy_common(tl_ep, pack_cb, arg, remote_addr, rkey,
                                       1);
}

/* The data read into the bounce buffer goes to the user's buffer */
static void uct_dcx_copy_result_done(uct_dcx_iface_t *iface, uct_dcx_op_t *op,
                                     ucs_status_t status)
{
    uct_dcx_send_desc_t *desc = ucs_container_of(op, uct_dcx_send_desc_t, op);

    if (status == UCS_OK) {
        memcpy(desc->u.result, uct_dcx_desc_data(desc), desc->length);
    }
    uct_dcx_op_release_desc(iface, op, status);
}

/* GET_SHORT is not offered (docs/uct-contract.md): get_short must return
 * with the data in the buffer, which a READ from a peer can only do by
 * waiting for the device inside the call.  A caller that asks anyway is
 * refused, its buffer untouched. */
ucs_status_t uct_dcx_ep_get_short(uct_ep_h tl_ep, void *buffer, unsigned length,
                                  uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);

    ucs_error("dcx: %s: get_short of %u bytes: not supported (the interface "
              "does not advertise UCT_IFACE_FLAG_GET_SHORT; get_bcopy and "
              "get_zcopy read)",
              dcx_dev_name(iface->dev), length);
    return UCS_ERR_UNSUPPORTED;
}

static void uct_dcx_get_bcopy_done(uct_dcx_iface_t *iface, uct_dcx_op_t *op,
                                   ucs_status_t status)
{
    uct_dcx_send_desc_t *desc = ucs_container_of(op, uct_dcx_send_desc_t, op);

    if (status == UCS_OK) {
        desc->u.unpack.cb(desc->u.unpack.arg, uct_dcx_desc_data(desc),
                          desc->length);
    }
    uct_dcx_op_release_desc(iface, op, status);
}

ucs_status_t uct_dcx_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t cb,
                                  void *arg, size_t length,
                                  uint64_t remote_addr, uct_rkey_t rkey,
                                  uct_completion_t *comp)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    uct_dcx_send_desc_t *desc;
    ucs_status_t status;

    if (ucs_unlikely(length > iface->config.seg_size)) {
        return uct_dcx_bad_length("get_bcopy", length, iface->config.seg_size);
    }

    status = uct_dcx_ep_desc_begin(iface, ep, 0, uct_dcx_get_bcopy_done, comp,
                                   &desc);
    if (ucs_unlikely(status != UCS_OK)) {
        return uct_dcx_ep_tx_refused(ep, status, comp, UCS_INPROGRESS);
    }

    desc->length       = length;
    desc->u.unpack.cb  = cb;
    desc->u.unpack.arg = arg;
    status = uct_dcx_ep_rma_bcopy(iface, ep, desc, DCX_WR_RDMA_READ, 1, length,
                                  remote_addr, rkey);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    UCT_TL_EP_STAT_OP(&ep->super, GET, BCOPY, length);
    return UCS_INPROGRESS;
}

/* get_bcopy where the device may execute a small READ within the call
 * (DCX_CAP_POST_NOW; chosen at interface creation): an ep that could send
 * at once on the DCI it holds has the bytes read into the interface's
 * READ buffer (DCX_SEND_NOW), handed to the caller's unpack, and UCS_OK
 * returned, comp untouched.  Where the device declines (the READ would
 * not be ordered after the DCI's earlier work, or its target was not
 * checked yet), and for every other ep, the READ is posted as by
 * uct_dcx_ep_get_bcopy.  (The buffer is free again once unpack returns: an
 * unpack callback makes no UCT call.) */
ucs_status_t uct_dcx_ep_get_bcopy_now(uct_ep_h tl_ep, uct_unpack_callback_t cb,
                                      void *arg, size_t length,
                                      uint64_t remote_addr, uct_rkey_t rkey,
                                      uct_completion_t *comp)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    dcx_send_wr_t wr;
    dcx_sge_t sge;
    dcx_qp_t *qp;

    if (ucs_likely((length <= iface->config.seg_size) &&
                   uct_dcx_ep_can_now(iface, ep))) {
        uct_dcx_sge_set(&sge, iface->now_buf, length, 0);
        uct_dcx_wr_init_now(&wr, ep, DCX_WR_RDMA_READ, 0, &sge, remote_addr,
                            rkey);
        qp = uct_dcx_ep_dci(iface, ep)->qp;
        if (ucs_likely(qp->post_send(qp, &wr) == 0)) {
            UCT_TL_EP_STAT_OP(&ep->super, GET, BCOPY, length);
            cb(arg, iface->now_buf, length); /* last: nothing touched after */
            return UCS_OK;
        }
    }
    return uct_dcx_ep_get_bcopy(tl_ep, cb, arg, length, remote_addr, rkey,
                                comp);
}


/* ---------------------------------------------------------------------------
 * Atomics: UCT operations expressed as device atomics
 * ------------------------------------------------------------------------- */

/* Fills wr with the device atomic doing UCT op 'opcode' with 'value' on a
 * field of 'size' bytes; UCS_ERR_UNSUPPORTED if the device cannot. */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_atomic_wr(uct_dcx_iface_t *iface, dcx_send_wr_t *wr, unsigned opcode,
                  uint64_t value, uint64_t compare, unsigned size)
{
    uint32_t flags        = iface->caps->atomic_flags;
    uint64_t all          = (size == 8) ? UINT64_MAX : UINT32_MAX;
    uint32_t masked_fadd  = (size == 8) ? DCX_ATOMIC_MASKED_FADD64 :
                                          DCX_ATOMIC_MASKED_FADD32;
    uint32_t masked_cswap = (size == 8) ? DCX_ATOMIC_MASKED_CSWAP64 :
                                          DCX_ATOMIC_MASKED_CSWAP32;

    wr->atomic_size  = size;
    wr->compare_add  = 0;
    wr->swap         = 0;
    wr->compare_mask = 0;
    wr->swap_mask    = 0;

    switch (opcode) {
    case UCT_ATOMIC_OP_ADD:
        if ((size == 8) && (flags & DCX_ATOMIC_FADD64)) {
            wr->opcode      = DCX_WR_ATOMIC_FADD;
            wr->compare_add = value;
            return UCS_OK;
        }
        if (!(flags & masked_fadd)) {
            break;
        }
        /* one field spanning the whole word: a plain add */
        wr->opcode      = DCX_WR_ATOMIC_MASKED_FADD;
        wr->compare_add = value;
        return UCS_OK;
    case UCT_ATOMIC_OP_XOR:
        if (!(flags & masked_fadd)) {
            break;
        }
        /* every bit its own field: addition without carries is xor */
        wr->opcode       = DCX_WR_ATOMIC_MASKED_FADD;
        wr->compare_add  = value;
        wr->compare_mask = all;
        return UCS_OK;
    case UCT_ATOMIC_OP_AND:
        if (!(flags & masked_cswap)) {
            break;
        }
        /* unconditional swap of the bits cleared in value, to zero */
        wr->opcode    = DCX_WR_ATOMIC_MASKED_CSWAP;
        wr->swap      = 0;
        wr->swap_mask = ~value & all;
        return UCS_OK;
    case UCT_ATOMIC_OP_OR:
        if (!(flags & masked_cswap)) {
            break;
        }
        /* unconditional swap of the bits set in value, to one */
        wr->opcode    = DCX_WR_ATOMIC_MASKED_CSWAP;
        wr->swap      = value;
        wr->swap_mask = value;
        return UCS_OK;
    case UCT_ATOMIC_OP_SWAP:
        if (!(flags & masked_cswap)) {
            break;
        }
        wr->opcode    = DCX_WR_ATOMIC_MASKED_CSWAP;
        wr->swap      = value;
        wr->swap_mask = all;
        return UCS_OK;
    case UCT_ATOMIC_OP_CSWAP:
        if ((size == 8) && (flags & DCX_ATOMIC_CSWAP64)) {
            wr->opcode      = DCX_WR_ATOMIC_CSWAP;
            wr->compare_add = compare;
            wr->swap        = value;
            return UCS_OK;
        }
        if (!(flags & masked_cswap)) {
            break;
        }
        wr->opcode       = DCX_WR_ATOMIC_MASKED_CSWAP;
        wr->compare_add  = compare;
        wr->compare_mask = all;
        wr->swap         = value;
        wr->swap_mask    = all;
        return UCS_OK;
    default:
        break;
    }
    return UCS_ERR_UNSUPPORTED;
}

/* result == NULL: post (no fetch), the old value lands in scratch memory.
 * now (a constant: the _now ops, chosen at interface creation where the
 * device has DCX_CAP_POST_NOW): an ep that could send at once on the DCI
 * it holds has the device execute the atomic within the call
 * (DCX_SEND_NOW), the old value stored straight into result, and UCS_OK
 * returned with comp untouched; where the device declines, the atomic is
 * posted. */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_ep_atomic(uct_dcx_ep_t *ep, unsigned opcode, uint64_t value,
                  uint64_t compare, unsigned size, void *result,
                  uint64_t remote_addr, uct_rkey_t rkey, uct_completion_t *comp,
                  int now)
{
    uct_dcx_iface_t *iface    = uct_dcx_ep_iface(ep);
    uct_dcx_send_desc_t *desc = NULL;
    dcx_send_wr_t wr;
    dcx_sge_t sge;
    ucs_status_t status;
    dcx_qp_t *qp;

    uct_dcx_wr_init_rma(&wr, ep, 0, 0, &sge, 1, remote_addr, rkey);
    status = uct_dcx_atomic_wr(iface, &wr, opcode, value, compare, size);
    if (ucs_unlikely(status != UCS_OK)) {
        return uct_dcx_bad_atomic(result ? "atomic fetch" : "atomic post",
                                  opcode);
    }

    if (now && ucs_likely(uct_dcx_ep_can_now(iface, ep))) {
        /* the result is written within the call: no key needed */
        uct_dcx_sge_set(&sge, (result != NULL) ? result : iface->scratch, size,
                        0);
        qp       = uct_dcx_ep_dci(iface, ep)->qp;
        wr.flags = DCX_SEND_NOW;
        if (ucs_likely(qp->post_send(qp, &wr) == 0)) {
            UCT_TL_EP_STAT_ATOMIC(&ep->super);
            return UCS_OK;
        }
        wr.flags = 0;
    }

    status = uct_dcx_ep_tx_begin(iface, ep, 0);
    if (ucs_unlikely(status != UCS_OK)) {
        /* a fetch taken by an invalidated ep writes nothing to result */
        return uct_dcx_ep_tx_refused(ep, status, comp,
                                     (result != NULL) ? UCS_INPROGRESS :
                                                        UCS_OK);
    }

    if (result != NULL) {
        desc = uct_dcx_iface_get_desc(iface);
        if (ucs_unlikely(desc == NULL)) {
            return UCS_ERR_NO_RESOURCE;
        }
        desc->op.cb    = uct_dcx_copy_result_done;
        desc->op.comp  = comp;
        desc->length   = size;
        desc->u.result = result;
        uct_dcx_sge_set(&sge, uct_dcx_desc_data(desc), size, desc->lkey);
    } else {
        uct_dcx_sge_set(&sge, iface->scratch, size, iface->scratch_mr->lkey);
    }

    status = uct_dcx_ep_post(iface, ep, &wr, desc ? &desc->op : NULL,
                             desc != NULL, 0);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    UCT_TL_EP_STAT_ATOMIC(&ep->super);
    return (result != NULL) ? UCS_INPROGRESS : UCS_OK;
}

/* UCT's six atomic entry points over uct_dcx_ep_atomic, as a set named
 * uct_dcx_ep_*<_suffix> with 'now' as given */
#define UCT_DCX_EP_ATOMIC_OPS(_suffix, _now)                                  \
    ucs_status_t uct_dcx_ep_atomic32_post##_suffix(uct_ep_h tl_ep,            \
                                                   unsigned opcode,           \
                                                   uint32_t value,            \
                                                   uint64_t remote_addr,      \
                                                   uct_rkey_t rkey)           \
    {                                                                         \
        return uct_dcx_ep_atomic(ucs_derived_of(tl_ep, uct_dcx_ep_t), opcode, \
                                 value, 0, sizeof(uint32_t), NULL,            \
                                 remote_addr, rkey, NULL, _now);              \
    }                                                                         \
    ucs_status_t uct_dcx_ep_atomic64_post##_suffix(uct_ep_h tl_ep,            \
                                                   unsigned opcode,           \
                                                   uint64_t value,            \
                                                   uint64_t remote_addr,      \
                                                   uct_rkey_t rkey)           \
    {                                                                         \
        return uct_dcx_ep_atomic(ucs_derived_of(tl_ep, uct_dcx_ep_t), opcode, \
                                 value, 0, sizeof(uint64_t), NULL,            \
                                 remote_addr, rkey, NULL, _now);              \
    }                                                                         \
    ucs_status_t uct_dcx_ep_atomic32_fetch##_suffix(uct_ep_h tl_ep,           \
                                                    uct_atomic_op_t opcode,   \
                                                    uint32_t value,           \
                                                    uint32_t *result,         \
                                                    uint64_t remote_addr,     \
                                                    uct_rkey_t rkey,          \
                                                    uct_completion_t *comp)   \
    {                                                                         \
        return uct_dcx_ep_atomic(ucs_derived_of(tl_ep, uct_dcx_ep_t), opcode, \
                                 value, 0, sizeof(uint32_t), result,          \
                                 remote_addr, rkey, comp, _now);              \
    }                                                                         \
    ucs_status_t uct_dcx_ep_atomic64_fetch##_suffix(uct_ep_h tl_ep,           \
                                                    uct_atomic_op_t opcode,   \
                                                    uint64_t value,           \
                                                    uint64_t *result,         \
                                                    uint64_t remote_addr,     \
                                                    uct_rkey_t rkey,          \
                                                    uct_completion_t *comp)   \
    {                                                                         \
        return uct_dcx_ep_atomic(ucs_derived_of(tl_ep, uct_dcx_ep_t), opcode, \
                                 value, 0, sizeof(uint64_t), result,          \
                                 remote_addr, rkey, comp, _now);              \
    }                                                                         \
    ucs_status_t uct_dcx_ep_atomic_cswap32##_suffix(uct_ep_h tl_ep,           \
                                                    uint32_t compare,         \
                                                    uint32_t swap,            \
                                                    uint64_t remote_addr,     \
                                                    uct_rkey_t rkey,          \
                                                    uint32_t *result,         \
                                                    uct_completion_t *comp)   \
    {                                                                         \
        return uct_dcx_ep_atomic(ucs_derived_of(tl_ep, uct_dcx_ep_t),         \
                                 UCT_ATOMIC_OP_CSWAP, swap, compare,          \
                                 sizeof(uint32_t), result, remote_addr, rkey, \
                                 comp, _now);                                 \
    }                                                                         \
    ucs_status_t uct_dcx_ep_atomic_cswap64##_suffix(uct_ep_h tl_ep,           \
                                                    uint64_t compare,         \
                                                    uint64_t swap,            \
                                                    uint64_t remote_addr,     \
                                                    uct_rkey_t rkey,          \
                                                    uint64_t *result,         \
                                                    uct_completion_t *comp)   \
    {                                                                         \
        return uct_dcx_ep_atomic(ucs_derived_of(tl_ep, uct_dcx_ep_t),         \
                                 UCT_ATOMIC_OP_CSWAP, swap, compare,          \
                                 sizeof(uint64_t), result, remote_addr, rkey, \
                                 comp, _now);                                 \
    }

UCT_DCX_EP_ATOMIC_OPS(, 0)
UCT_DCX_EP_ATOMIC_OPS(_now, 1)


/* ---------------------------------------------------------------------------
 * Flush, fence, check
 * ------------------------------------------------------------------------- */

static int uct_dcx_ep_is_flushed(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep)
{
    return (ep->dci == UCT_DCX_DCI_NONE) ||
           (iface->pool.dcis[ep->dci].done_sn >= ep->last_sn);
}

ucs_status_t uct_dcx_ep_flush(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    uct_dcx_dci_t *dci;
    ucs_status_t status;

    if (ucs_unlikely((ep->flags &
                      (UCT_DCX_EP_FLAG_INVALIDATED | UCT_DCX_EP_FLAG_FAILED)) ==
                     UCT_DCX_EP_FLAG_INVALIDATED)) {
        /* invalidated, not yet reported: its operations (outstanding at
         * the call, or taken since, with a completion or without) end when
         * the failure is reported; so does a flush after them, taken as
         * they were */
        if (flags & UCT_FLUSH_FLAG_CANCEL) {
            uct_dcx_ep_pending_purge(tl_ep, NULL, NULL);
        }
        return uct_dcx_ep_tx_sink(ep, comp, UCS_INPROGRESS);
    }

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        uct_dcx_ep_pending_purge(tl_ep, NULL, NULL);
        if (!uct_dcx_ep_is_flushed(iface, ep) &&
            !uct_dcx_dci_is_shared(iface, uct_dcx_ep_dci(iface, ep))) {
            return uct_dcx_ep_flush_cancel(iface, ep, comp);
        }
        /* a shared DCI: nothing of ep's can be cancelled without flushing
         * other endpoints' WRs; the flush waits for ep's WRs as a plain
         * one (those that access the user's memory included) */
    } else if (ucs_unlikely(!(ep->flags & UCT_DCX_EP_FLAG_FAILED) &&
                            ((uct_dcx_ep_has_pending(ep) &&
                              (iface->dispatch_ep != ep)) ||
                             uct_dcx_ep_fc_blocked(ep)))) {
        /* The flush must also cover the requests waiting in the pending
         * queue (UCP counts on it), and those an ep out of credits will
         * send when the grant comes: without a completion to call, the
         * answer is "not yet"; with one, the caller queues the flush
         * behind them.  When that queued flush runs, from the dispatcher,
         * all requests before it have been posted, and it goes through
         * once the ep has credits again. */
        return (comp == NULL) ? UCS_INPROGRESS : UCS_ERR_NO_RESOURCE;
    }

    if (uct_dcx_ep_is_flushed(iface, ep)) {
        UCT_TL_EP_STAT_FLUSH(&ep->super);
        return UCS_OK;
    }

    dci = uct_dcx_ep_dci(iface, ep);
    if (dci->sig_sn < ep->last_sn) {
        /* Unsignalled WRs in flight: a signalled no-op after them tells
         * when they are done */
        status = uct_dcx_dci_post_nop(iface, dci, ep, NULL);
        if (status != UCS_OK) {
            return status;
        }
    }

    if (comp != NULL) {
        status = uct_dcx_dci_add_comp(iface, dci, ep->last_sn, comp);
        if (status != UCS_OK) {
            return status;
        }
    }

    UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    return UCS_INPROGRESS;
}

ucs_status_t uct_dcx_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);

    /* Without a DCI nothing of this ep is in flight: nothing to order */
    if (ep->dci != UCT_DCX_DCI_NONE) {
        uct_dcx_ep_dci(iface, ep)->next_flags |= DCX_SEND_FENCE;
    }
    UCT_TL_EP_STAT_FENCE(&ep->super);
    return UCS_OK;
}

ucs_status_t uct_dcx_ep_check(uct_ep_h tl_ep, unsigned flags,
                              uct_completion_t *comp)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    dcx_dc_dest_t dest;
    ucs_status_t status;

    if ((flags != 0) || (comp != NULL)) {
        ucs_error("dcx: ep_check: flags 0x%x / completion %p not supported",
                  flags, comp);
        return UCS_ERR_INVALID_PARAM;
    }
    if (ep->flags & UCT_DCX_EP_FLAG_FAILED) {
        return UCS_OK; /* already reported */
    }

    /* A no-op (a WRITE of no bytes, which takes no receive) to the peer on
     * the control DCI; if the peer is gone the failure reaches the error
     * handler like any other */
    uct_dcx_ep_dest(ep, &dest);
    status = uct_dcx_dci_post_nop(iface, &iface->pool.dcis[iface->pool.ctl], ep,
                                  &dest);
    return (status == UCS_ERR_NO_RESOURCE) ? UCS_OK : status;
}


/* ---------------------------------------------------------------------------
 * Failure
 * ------------------------------------------------------------------------- */

void uct_dcx_ep_handle_failure(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                               ucs_status_t status, dcx_wc_status_t wc_status)
{
    uint32_t dctn = ep->dctn; /* the handler may destroy ep */
    ucs_status_t err;

    if (ep->flags & UCT_DCX_EP_FLAG_FAILED) {
        return;
    }

    uct_dcx_ep_fc_forget(iface, ep);
    ep->flags |= UCT_DCX_EP_FLAG_FAILED;
    iface->cnt->dci.ep_failures++;
    /* all its operations fail now (those on the failed DCI already did) */
    uct_dcx_ep_complete_ops(iface, ep, status);
    uct_dcx_ep_invalidate_fail_taken(ep, status);
    uct_dcx_tag_ep_gone(iface, ep, status);
    iface->policy->ep_detach(iface, ep);
    ep->dci = UCT_DCX_DCI_NONE;

    err = uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                  status);
    if (err != UCS_OK) {
        ucs_log(uct_base_iface_failure_log_level(&iface->super, err, status),
                "dcx: %s: endpoint %p to DCT 0x%x failed: %s (%s), and no "
                "error handler took it",
                dcx_dev_name(iface->dev), ep, dctn, ucs_status_string(status),
                dcx_wc_status_str(wc_status));
    }
}


/* ---------------------------------------------------------------------------
 * Endpoint object
 * ------------------------------------------------------------------------- */

static ucs_status_t uct_dcx_ep_parse_addr(uct_dcx_iface_t *iface,
                                          const uct_ep_params_t *params,
                                          dcx_ah_t **ah_p, uint32_t *dctn_p,
                                          uint8_t *tmh_len_p)
{
    const uct_dcx_dev_addr_t *dev_addr;
    const uct_dcx_iface_addr_t *iface_addr;

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_DEV_ADDR) ||
        !(params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR) ||
        (params->dev_addr == NULL) || (params->iface_addr == NULL)) {
        ucs_error("dcx: ep_create needs a device and an interface address");
        return UCS_ERR_INVALID_PARAM;
    }

    dev_addr   = (const uct_dcx_dev_addr_t *)params->dev_addr;
    iface_addr = (const uct_dcx_iface_addr_t *)params->iface_addr;
    if ((iface_addr->magic != UCT_DCX_ADDR_MAGIC) ||
        (iface_addr->version != UCT_DCX_ADDR_VERSION) ||
        (dev_addr->len != iface->config.port_len)) {
        ucs_error("dcx: %s: malformed peer address (magic 0x%x version %u "
                  "port length %u, expected 0x%x %u %u)",
                  dcx_dev_name(iface->dev), iface_addr->magic,
                  iface_addr->version, dev_addr->len, UCT_DCX_ADDR_MAGIC,
                  UCT_DCX_ADDR_VERSION, iface->config.port_len);
        return UCS_ERR_INVALID_ADDR;
    }

    *dctn_p = iface_addr->dctn[0] | ((uint32_t)iface_addr->dctn[1] << 8) |
              ((uint32_t)iface_addr->dctn[2] << 16);
    *tmh_len_p = (iface_addr->flags & UCT_DCX_ADDR_FLAG_TM) ? DCX_TM_TMH_LEN :
                                                              0;
    return uct_dcx_iface_peer_ah(iface, dev_addr->port, dev_addr->len, ah_p);
}

UCS_CLASS_INIT_FUNC(uct_dcx_ep_t, const uct_ep_params_t *params)
{
    uct_dcx_iface_t *iface;
    ucs_status_t status;

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_IFACE)) {
        ucs_error("dcx: ep_create needs an interface");
        return UCS_ERR_INVALID_PARAM;
    }
    iface = ucs_derived_of(params->iface, uct_dcx_iface_t);

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    UCS_STATIC_ASSERT(sizeof(uct_dcx_ep_t) <= UCT_DCX_EP_MAX_SIZE);
    status = uct_dcx_ep_parse_addr(iface, params, &self->ah, &self->dctn,
                                   &self->tmh_len);
    if (status != UCS_OK) {
        return status;
    }

    self->flags   = 0;
    self->fc_wnd  = iface->fc.wnd;
    self->last_sn = 0;
    self->seq     = ++iface->next_ep_seq;
    uct_dcx_ep_pending_init(self);
    iface->num_eps++;

    iface->policy->ep_init(iface, self);
    ucs_debug("dcx: %s: ep %p to DCT 0x%x (policy %s, dci %d)",
              dcx_dev_name(iface->dev), self, self->dctn, iface->policy->name,
              (self->dci == UCT_DCX_DCI_NONE) ? -1 : (int)self->dci);
    return UCS_OK;
}

UCS_CLASS_CLEANUP_FUNC(uct_dcx_ep_t)
{
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(self);

    uct_dcx_ep_pending_cleanup(iface, self);
    /* its rendezvous in flight are forgotten: no FIN reaches them */
    uct_dcx_tag_ep_gone(iface, self, UCS_OK);

    uct_dcx_ep_fc_forget(iface, self);
    if (!(self->flags & UCT_DCX_EP_FLAG_FAILED)) {
        /* nothing of the ep may complete after it is gone (a failed ep's
         * operations completed when it failed) */
        uct_dcx_ep_complete_ops(iface, self, UCS_ERR_CANCELED);
        iface->policy->ep_detach(iface, self);
    }
    /* ep_check probes may still be in flight on the control DCI */
    uct_dcx_dci_detach_ep(iface, &iface->pool.dcis[iface->pool.ctl], self);

    uct_dcx_ep_invalidate_cleanup(iface, self);
    uct_dcx_ep_ext_release(iface, self);
    iface->num_eps--;
}

UCS_CLASS_DEFINE(uct_dcx_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_dcx_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_dcx_ep_t, uct_ep_t);
