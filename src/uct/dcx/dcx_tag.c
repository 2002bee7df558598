/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: tag-matching offload (UCT tag API) over a DCX_SRQ_TM SRQ:
 * the receive side, list operations and the interface (sends: dcx_tag_ep.c).
 *
 * With UCX_DCX_TM_ENABLE the DCT is fed by a tag-matching SRQ, which parses
 * the first 16 bytes of every inbound message as a TMH
 * (docs/device-semantics.md section 9.4).
 * Peers know it from the interface address (UCT_DCX_ADDR_FLAG_TM) and send
 * their AMs and control messages behind a NO_TAG TMH; those complete as
 * DCX_WC_TM_NO_TAG with the TMH placed before the header byte (receive
 * buffers are posted 16 bytes early, into the headroom) and go to the AM
 * path.  Where the device completes them in place, unexpected eager and
 * NO_TAG messages are lent to their callbacks where they arrived
 * (uct_dcx_tag_rx_lend).  Tagged sends are only possible to a TM peer.
 *
 * Wire of a tagged send: TMH(EAGER, app_ctx, tag) | payload.  Of a
 * rendezvous: TMH(RNDV, app_ctx, tag) | RVH(va, rkey, len) | RAVH(our DCT,
 * DC key) | header; app_ctx names the rendezvous (gen << 16 | index) and
 * comes back in the TMH of the FIN the receiver's device sends when it has
 * read the data.  Like UCX's rc_mlx5, the first two bytes of the user's
 * header travel in the TMH's reserved bytes (byte 1: how many, bytes 2-3:
 * them), so that 18 bytes fit beside the 48 of headers in the device's 64
 * (UCP's offload header is 17).  An unexpected rendezvous goes to the rndv callback with
 * the sender's buffer and rkey; UCP reads it and tells the sender itself,
 * which then cancels the operation (uct_ep_tag_rndv_cancel).  The 64-bit
 * immediate of eager bcopy/zcopy travels as app_ctx (low half) and the
 * SEND_IMM immediate (high half); a SEND_IMM whose immediate and app_ctx
 * are both 0 is a software rendezvous request (uct_ep_tag_rndv_request),
 * as on UCX's rc_mlx5.
 *
 * Posted receives live in slots (one per device list entry); the receive's
 * wr_id and the list operations' wr_id name the slot, so a receive cancelled
 * with force, whose context the user may free at once, is never touched
 * again.  Every list operation is signalled and carries the count of
 * unexpected messages handled (phase synchronisation,
 * docs/device-semantics.md section 9.5).  A
 * completion asking for a sync gets a SYNC operation at the end of its
 * batch, and only when it brings the device a count it has not had: after
 * a list operation's request whenever the count moved since the last
 * operation (entries the device holds become eligible), after an
 * unexpected message's request only every UCT_DCX_TM_SYNC_GAP messages.
 * The device asks on every unexpected message once 0x3fff came since the
 * last ADD (libmlx5's rule), while all it needs is a count that does not
 * lag by half the 16-bit range; UCX's rc_mlx5 syncs every 2^16.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"
#include "dcx_tag_buf.inl"

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack.h>
#include <ucs/sys/string.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define UCT_DCX_TM_WR_SYNC  UINT64_MAX /* wr_id of SYNC operations */
#define UCT_DCX_TM_SYNC_GAP 0x1000u    /* unexpected messages per SYNC */


static UCS_F_ALWAYS_INLINE uct_dcx_tm_ctx_priv_t *
uct_dcx_tm_priv(uct_tag_context_t *ctx)
{
    UCS_STATIC_ASSERT(sizeof(uct_dcx_tm_ctx_priv_t) <= UCT_TAG_PRIV_LEN);
    return (uct_dcx_tm_ctx_priv_t *)ctx->priv;
}

/* ctx is posted, not cancelled with force: the slot its priv names holds it
 * (true only while posted there, whatever the priv of a fresh context) */
static UCS_F_ALWAYS_INLINE int
uct_dcx_tm_ctx_posted(const uct_dcx_iface_t *iface, uct_tag_context_t *ctx)
{
    uint32_t idx = uct_dcx_tm_priv(ctx)->slot;

    return (idx < iface->tm.num_slots) && (iface->tm.slots[idx].ctx == ctx) &&
           (iface->tm.slots[idx].state == UCT_DCX_TM_SLOT_LIVE) &&
           !iface->tm.slots[idx].forced;
}


/* ---------------------------------------------------------------------------
 * List operations
 * ------------------------------------------------------------------------- */

/* Posts a signalled list operation carrying the unexpected count */
static ucs_status_t uct_dcx_tm_post_op(uct_dcx_iface_t *iface, dcx_tm_op_t *op)
{
    int ret;

    if (iface->tm.ops_out >= iface->tm.max_ops) {
        return UCS_ERR_NO_RESOURCE;
    }

    op->flags          = DCX_TM_OPF_SIGNALED | DCX_TM_OPF_SYNC;
    op->unexpected_cnt = iface->tm.unexp_cnt;
    ret                = dcx_srq_tm_post(iface->srq, op);
    if (ret == ENOMEM) {
        return UCS_ERR_NO_RESOURCE;
    } else if (ret != 0) {
        ucs_error("dcx: %s: tag list operation %u failed: %s",
                  dcx_dev_name(iface->dev), op->opcode, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    iface->tm.ops_out++;
    iface->tm.unexp_sent = op->unexpected_cnt;
    return UCS_OK;
}

/* End of a batch of completions, one of which asked for a SYNC: posted if
 * the device has not had our count yet */
static UCS_F_NOINLINE void uct_dcx_tm_sync(uct_dcx_iface_t *iface)
{
    dcx_tm_op_t op;

    iface->tm.sync_due = 0;
    if (iface->tm.unexp_cnt == iface->tm.unexp_sent) {
        return; /* the last operation carried it */
    }
    memset(&op, 0, sizeof(op));
    op.wr_id  = UCT_DCX_TM_WR_SYNC;
    op.opcode = DCX_TM_OP_SYNC;
    if (uct_dcx_tm_post_op(iface, &op) == UCS_OK) {
        iface->cnt->tm.syncs++;
    }
    /* else: the next operation carries the count anyway */
}

static void uct_dcx_tm_slot_put(uct_dcx_iface_t *iface, uint32_t idx)
{
    uct_dcx_tm_slot_t *slot = &iface->tm.slots[idx];

    ucs_assert(!slot->in_bufs); /* released when reported or forced */
    if (slot->skey != UCT_DCX_SKEY_NONE) {
        uct_dcx_strided_key_put(iface, slot->skey);
        slot->skey = UCT_DCX_SKEY_NONE;
    }
    slot->state         = UCT_DCX_TM_SLOT_FREE;
    slot->ctx           = NULL;
    slot->next_free     = iface->tm.free_head;
    iface->tm.free_head = idx;
}

/* Frees the slot once the receive is reported and nothing else is due */
static void uct_dcx_tm_slot_check(uct_dcx_iface_t *iface, uint32_t idx)
{
    uct_dcx_tm_slot_t *slot = &iface->tm.slots[idx];

    if ((slot->state == UCT_DCX_TM_SLOT_DONE) && (slot->ops_due == 0)) {
        uct_dcx_tm_slot_put(iface, idx);
    }
}

/* The receive in slot idx ends: report it (unless cancelled with force) */
static void uct_dcx_tm_slot_finish(uct_dcx_iface_t *iface, uint32_t idx,
                                   uint64_t imm, size_t length,
                                   ucs_status_t status)
{
    uct_dcx_tm_slot_t *slot = &iface->tm.slots[idx];
    uct_tag_context_t *ctx  = slot->ctx;

    slot->state = UCT_DCX_TM_SLOT_DONE;
    if (!slot->forced) {
        iface->tm.live--;
        uct_dcx_tm_buf_release(iface, idx);
        ctx->completed_cb(ctx, uct_dcx_tm_priv(ctx)->tag, imm, length, NULL,
                          status);
    }
    uct_dcx_tm_slot_check(iface, idx);
}

ucs_status_t uct_dcx_iface_tag_recv_zcopy(uct_iface_h tl_iface, uct_tag_t tag,
                                          uct_tag_t tag_mask,
                                          const uct_iov_t *iov, size_t iovcnt,
                                          uct_tag_context_t *ctx)
{
    uct_dcx_iface_t *iface = ucs_derived_of(tl_iface, uct_dcx_iface_t);
    uct_dcx_tm_ctx_priv_t *priv;
    uct_dcx_tm_slot_t *slot;
    uct_dcx_strided_use_t use;
    dcx_tm_op_t op;
    ucs_status_t status;
    unsigned num_sge;
    size_t length;
    uint32_t idx;
    khiter_t buf_it;

    if (ucs_unlikely(iface->rx.tmh_len == 0)) {
        ucs_error("dcx: %s: tag_recv_zcopy: tag matching is off on this "
                  "interface",
                  dcx_dev_name(iface->dev));
        return UCS_ERR_UNSUPPORTED;
    }
    if (ucs_unlikely(iovcnt > 1)) {
        ucs_error("dcx: tag_recv_zcopy: iov count %zu exceeds the maximum 1",
                  iovcnt);
        return UCS_ERR_INVALID_PARAM;
    }
    if (ucs_unlikely((iovcnt == 1) && (uct_iov_get_length(iov) > 0) &&
                     (iov->memh == UCT_MEM_HANDLE_NULL))) {
        ucs_error("dcx: tag_recv_zcopy: the buffer has no memory handle");
        return UCS_ERR_INVALID_PARAM;
    }
    if (ucs_unlikely((iface->tm.live >= iface->tm.max_live) ||
                     (iface->tm.free_head == UINT32_MAX))) {
        /* as UCX: the list is full (or its spare entries all wait for
         * the removals of receives cancelled with force) */
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    if (ucs_unlikely(uct_dcx_tm_ctx_posted(iface, ctx))) {
        /* as UCX: a second slot would leave the first listed, out of reach
         * of cancel (priv names the second), matched after ctx is freed */
        return UCS_ERR_ALREADY_EXISTS;
    }

    idx    = iface->tm.free_head;
    slot   = &iface->tm.slots[idx];
    status = uct_dcx_tm_buf_claim(iface, iov, iovcnt, idx, &buf_it);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    memset(&op, 0, sizeof(op));
    op.wr_id      = idx;
    op.opcode     = DCX_TM_OP_ADD;
    op.recv_wr_id = idx;
    op.tag        = tag & tag_mask;
    op.mask       = tag_mask;
    use.op        = NULL;
    if ((iovcnt == 1) && (iov->count > 1) && (iov->stride != iov->length) &&
        (iov->length != 0)) {
        /* a strided buffer: one entry over a configured strided key */
        status = uct_dcx_strided_iov(iface, NULL, "tag_recv_zcopy", iov, 1,
                                     UCT_DCX_STRIDED_SCATTER |
                                         UCT_DCX_STRIDED_KEY_ONLY,
                                     &op.sge, 1, &num_sge, &length, &use);
        if (status != UCS_OK) {
            uct_dcx_tm_buf_unclaim(iface, buf_it);
            return status;
        }
        op.num_sge = 1;
    } else if ((iovcnt == 1) && (uct_iov_get_length(iov) > 0)) {
        op.num_sge    = 1;
        op.sge.addr   = (uintptr_t)iov->buffer;
        op.sge.length = uct_iov_get_length(iov);
        op.sge.lkey   = uct_dcx_memh_mr(iov->memh)->lkey;
    }
    status = uct_dcx_tm_post_op(iface, &op);
    if (status != UCS_OK) {
        uct_dcx_strided_abort(iface, &use);
        uct_dcx_tm_buf_unclaim(iface, buf_it);
        return status;
    }
    slot->skey = uct_dcx_strided_take(iface, &use);

    iface->tm.free_head = slot->next_free;
    iface->tm.live++;
    slot->ctx        = ctx;
    slot->buffer     = (iovcnt == 1) ? iov->buffer : NULL;
    slot->length     = op.sge.length;
    slot->handle     = op.handle;
    slot->state      = UCT_DCX_TM_SLOT_LIVE;
    slot->ops_due    = 1;
    slot->forced     = 0;
    slot->del_posted = 0;
    slot->in_bufs    = (buf_it != kh_end(&iface->tm.bufs));
    priv             = uct_dcx_tm_priv(ctx);
    priv->slot       = idx;
    priv->tag        = tag; /* the sender's once a message matches */
    priv->app_ctx    = 0;
    iface->cnt->tm.posted++;
    return UCS_OK;
}

ucs_status_t uct_dcx_iface_tag_recv_cancel(uct_iface_h tl_iface,
                                           uct_tag_context_t *ctx, int force)
{
    uct_dcx_iface_t *iface = ucs_derived_of(tl_iface, uct_dcx_iface_t);
    uint32_t idx           = uct_dcx_tm_priv(ctx)->slot;
    uct_dcx_tm_slot_t *slot;
    dcx_tm_op_t op;
    ucs_status_t status;

    /* one cancelled with force is the user's: it is not touched again */
    if (ucs_unlikely((iface->rx.tmh_len == 0) ||
                     !uct_dcx_tm_ctx_posted(iface, ctx))) {
        ucs_error("dcx: tag_recv_cancel: context %p is not a posted receive",
                  ctx);
        return UCS_ERR_INVALID_PARAM;
    }

    slot = &iface->tm.slots[idx];
    if (!slot->del_posted) {
        memset(&op, 0, sizeof(op));
        op.wr_id  = idx;
        op.opcode = DCX_TM_OP_DEL;
        op.handle = slot->handle;
        status    = uct_dcx_tm_post_op(iface, &op);
        if (status != UCS_OK) {
            return status;
        }
        slot->del_posted = 1;
        slot->ops_due++;
        iface->cnt->tm.cancels++;
    }
    if (force) {
        /* the context and buffer are the user's again: nothing will be
         * reported, and its place counts as free at once (its slot waits
         * for the removal's completion, a spare one stands in) */
        slot->forced = 1;
        iface->tm.live--;
        uct_dcx_tm_buf_release(iface, idx);
    }
    return UCS_OK;
}


/* ---------------------------------------------------------------------------
 * Completions of the TM SRQ
 * ------------------------------------------------------------------------- */

static UCS_F_NOINLINE void uct_dcx_tag_rx_unknown(uct_dcx_iface_t *iface,
                                                  const dcx_wc_t *wc)
{
    ucs_error("dcx: %s: unexpected receive completion (opcode %u, status "
              "%s, %u bytes)",
              dcx_dev_name(iface->dev), wc->opcode,
              dcx_wc_status_str(wc->status), wc->byte_len);
}

static void uct_dcx_tm_release_desc(uct_recv_desc_t *self, void *desc)
{
    uct_dcx_iface_t *iface = ucs_container_of(self, uct_dcx_iface_t,
                                              tm.release_desc);

    /* desc = wire - headroom */
    ucs_mpool_put_inline(UCS_PTR_BYTE_OFFSET(desc,
                                             iface->rx.headroom -
                                                 iface->rx.payload_offset));
}

/* An unexpected or NO_TAG message handled: its SRQ buffer elem back to
 * the pool, or for a message the device completed in place (elem NULL,
 * the buffer given back already), its bytes back to the device */
static UCS_F_ALWAYS_INLINE void uct_dcx_tag_rx_put(uct_dcx_iface_t *iface,
                                                   void *elem)
{
    if (elem != NULL) {
        ucs_mpool_put_inline(elem);
    } else {
        dcx_cq_release(iface->rx_cq);
    }
}

/* Whether a callback may be lent length bytes (what it is passed, past the
 * TMH and for an AM past its id): UCP copies a message it was lent into a
 * buffer of its AM pool, as long as the longest AM of its interfaces
 * (cap.am.max_bcopy here, SEG_SIZE - 1), and a TM SRQ's buffers, of
 * TM_SEG_SIZE, may take longer ones */
static UCS_F_ALWAYS_INLINE int uct_dcx_tag_rx_lendable(uct_dcx_iface_t *iface,
                                                       unsigned length)
{
    return length < iface->config.seg_size;
}

/* The bytes past the TMH of a message the device completed in place
 * (DCX_WC_FLAG_IN_PLACE), lent to a callback: its SRQ buffer *elem_p, taken
 * unused, goes back to the pool now and *elem_p becomes NULL */
static UCS_F_ALWAYS_INLINE uint8_t *uct_dcx_tag_rx_lend(const dcx_wc_t *wc,
                                                        void **elem_p)
{
    ucs_mpool_put_inline(*elem_p);
    *elem_p = NULL;
    return (uint8_t *)wc->data + DCX_TM_TMH_LEN;
}

/* The same message handed over in a descriptor instead: copied into its
 * SRQ buffer elem (as long as the message: the device took it only where
 * it fit), its bytes given back to the device; the bytes past its TMH */
static UCS_F_NOINLINE uint8_t *
uct_dcx_tag_rx_unlend(uct_dcx_iface_t *iface, const dcx_wc_t *wc, void *elem)
{
    uint8_t *wire = uct_dcx_rx_wire(iface, elem);

    memcpy(wire - DCX_TM_TMH_LEN, wc->data, wc->byte_len);
    dcx_cq_release(iface->rx_cq);
    return wire;
}

/* A NO_TAG message, in an SRQ buffer or in place: an AM or a control
 * message */
static UCS_F_ALWAYS_INLINE void uct_dcx_tag_rx_no_tag(uct_dcx_iface_t *iface,
                                                      const dcx_wc_t *wc)
{
    void *elem = (void *)(uintptr_t)wc->wr_id;
    uint8_t *wire;

    iface->rx.posted--;
    if (ucs_unlikely((wc->status != DCX_WC_SUCCESS) ||
                     (wc->byte_len < DCX_TM_TMH_LEN))) {
        uct_dcx_iface_rx_error(iface, wc);
        ucs_mpool_put_inline(elem);
        return;
    }

    if (!(wc->flags & DCX_WC_FLAG_IN_PLACE)) {
        wire = uct_dcx_rx_wire(iface, elem);
    } else if ((((const uint8_t *)wc->data)[0] == DCX_TMH_NO_TAG) &&
               uct_dcx_tag_rx_lendable(iface, wc->byte_len - DCX_TM_TMH_LEN -
                                                  UCT_DCX_AM_HDR_LEN)) {
        /* lent for the handler's call, as a plain SRQ's AMs are (no longer
         * than those: a peer's larger SEG_SIZE could send more) */
        uct_dcx_iface_rx_am_lent(iface, elem,
                                 (const uint8_t *)wc->data + DCX_TM_TMH_LEN,
                                 wc->byte_len - DCX_TM_TMH_LEN);
        return;
    } else {
        wire = uct_dcx_tag_rx_unlend(iface, wc, elem);
    }
    if (ucs_unlikely(wire[-(int)DCX_TM_TMH_LEN] == DCX_TMH_FIN)) {
        uct_dcx_tag_rx_fin(iface, wire - DCX_TM_TMH_LEN);
        ucs_mpool_put_inline(elem);
        return;
    } else if (ucs_unlikely(wire[-(int)DCX_TM_TMH_LEN] != DCX_TMH_NO_TAG)) {
        ucs_error("dcx: %s: dropped a message with TMH opcode %u",
                  dcx_dev_name(iface->dev), wire[-(int)DCX_TM_TMH_LEN]);
        ucs_mpool_put_inline(elem);
        return;
    }
    uct_dcx_iface_rx_am(iface, elem, wire, wc->byte_len - DCX_TM_TMH_LEN);
}

/* An unexpected rendezvous: software (UCP) reads the data.  'wire' points
 * after the TMH, at the RVH. */
static void uct_dcx_tag_rx_unexp_rndv(uct_dcx_iface_t *iface,
                                      const uint8_t *wire, unsigned length,
                                      uint64_t tag)
{
    uint8_t rkey_buf[UCT_DCX_PACKED_RKEY_SIZE];
    uint8_t hdr[256];
    uint64_t va;
    uint32_t rkey, len;
    unsigned hdr_off  = DCX_TM_RNDV_LEN - DCX_TM_TMH_LEN;
    unsigned priv_len = wire[1 - (int)DCX_TM_TMH_LEN];

    if (ucs_unlikely((length < hdr_off) || (priv_len > UCT_DCX_TM_TMH_PRIV) ||
                     (length - hdr_off + priv_len > sizeof(hdr)))) {
        ucs_error("dcx: %s: dropped a malformed rendezvous request (%u bytes, "
                  "%u in the TMH)",
                  dcx_dev_name(iface->dev), length, priv_len);
        return;
    }
    /* the user's header: its first bytes came in the TMH */
    memcpy(hdr, wire + 2 - (int)DCX_TM_TMH_LEN, priv_len);
    memcpy(hdr + priv_len, wire + hdr_off, length - hdr_off);
    dcx_rvh_unpack(wire, &va, &rkey, &len);
    uct_dcx_rkey_pack_raw(rkey, rkey_buf);
    iface->cnt->tm.unexp_rndv++;
    iface->cnt->tm.rndv_sw++;
    /* no DESC flag: the rkey buffer is on the stack, as on rc_mlx5 */
    iface->tm.rndv_cb(iface->tm.rndv_arg, 0, tag, hdr,
                      length - hdr_off + priv_len, va, len, rkey_buf);
}

/* An eager_cb that kept a message it was lent (no UCT_CB_PARAM_FLAG_DESC):
 * its bytes go back to the device all the same as the callback returns */
static UCS_F_NOINLINE void uct_dcx_tag_rx_kept(uct_dcx_iface_t *iface,
                                               uint64_t tag)
{
    ucs_error("dcx: %s: eager_cb returned UCS_INPROGRESS for an unexpected "
              "message (tag 0x%" PRIx64 ") passed without "
              "UCT_CB_PARAM_FLAG_DESC; it is not kept",
              dcx_dev_name(iface->dev), tag);
}

/* An unexpected tagged message, whole, in an SRQ buffer or in place (lent
 * to the callback for its call only: no UCT_CB_PARAM_FLAG_DESC) */
static UCS_F_ALWAYS_INLINE void uct_dcx_tag_rx_unexp(uct_dcx_iface_t *iface,
                                                     const dcx_wc_t *wc)
{
    void *elem = (void *)(uintptr_t)wc->wr_id;
    uint8_t *wire;
    uint8_t opcode;
    uint32_t app_ctx;
    uint64_t tag, imm;
    unsigned length;
    ucs_status_t status;
    uct_recv_desc_t *rdesc;
    void *context;

    iface->rx.posted--;
    if (ucs_unlikely((wc->status != DCX_WC_SUCCESS) ||
                     (wc->byte_len < DCX_TM_TMH_LEN))) {
        uct_dcx_iface_rx_error(iface, wc);
        ucs_mpool_put_inline(elem);
        return;
    }

    length = wc->byte_len - DCX_TM_TMH_LEN;
    if (!(wc->flags & DCX_WC_FLAG_IN_PLACE)) {
        wire = uct_dcx_rx_wire(iface, elem);
    } else if (!(wc->flags & DCX_WC_FLAG_WITH_IMM) &&
               uct_dcx_tag_rx_lendable(iface, length)) {
        wire = uct_dcx_tag_rx_lend(wc, &elem);
    } else {
        /* in a descriptor, its buffer filled here: a synchronous eager
         * message (an immediate), before whose data UCP writes a header of
         * its own (UCP 1.13 copies one it was lent onto its stack, and
         * asserts above ~1 KiB), and one too long to lend */
        wire = uct_dcx_tag_rx_unlend(iface, wc, elem);
    }
    dcx_tmh_unpack(wire - DCX_TM_TMH_LEN, &opcode, &app_ctx, &tag);
    iface->tm.unexp_cnt++;

    if (opcode == DCX_TMH_RNDV) {
        uct_dcx_tag_rx_unexp_rndv(iface, wire, length, tag);
        uct_dcx_tag_rx_put(iface, elem);
        goto out;
    } else if (ucs_unlikely(opcode != DCX_TMH_EAGER)) {
        ucs_error("dcx: %s: dropped an unexpected tagged message with TMH "
                  "opcode %u (tag 0x%" PRIx64 ")",
                  dcx_dev_name(iface->dev), opcode, tag);
        uct_dcx_tag_rx_put(iface, elem);
        goto out;
    }

    imm = (wc->flags & DCX_WC_FLAG_WITH_IMM) ?
              (((uint64_t)wc->imm << 32) | app_ctx) :
              0;
    if ((wc->flags & DCX_WC_FLAG_WITH_IMM) && (imm == 0)) {
        /* software rendezvous request */
        iface->cnt->tm.unexp_rndv++;
        status = iface->tm.rndv_cb(iface->tm.rndv_arg, 0, tag, wire, length, 0,
                                   0, NULL);
        uct_dcx_tag_rx_put(iface, elem);
        (void)status;
        goto out;
    }

    iface->cnt->tm.unexp_eager++;
    context = NULL;
    status  = iface->tm.eager_cb(iface->tm.eager_arg, wire, length,
                                (elem != NULL) ? UCT_CB_PARAM_FLAG_DESC |
                                                     UCT_CB_PARAM_FLAG_FIRST :
                                                  UCT_CB_PARAM_FLAG_FIRST,
                                 tag, imm, &context);
    if (elem == NULL) {
        if (status == UCS_INPROGRESS) {
            uct_dcx_tag_rx_kept(iface, tag);
        }
        dcx_cq_release(iface->rx_cq);
    } else if (status == UCS_INPROGRESS) {
        /* where uct_recv_desc() looks; the payload after a TMH is not
         * aligned as an AM's is, so the slot may not be either */
        rdesc = &iface->tm.release_desc;
        memcpy(wire - iface->rx.headroom - sizeof(rdesc), &rdesc,
               sizeof(rdesc));
    } else {
        ucs_mpool_put_inline(elem);
    }

out:
    if (ucs_unlikely(wc->flags & DCX_WC_FLAG_TM_SYNC_REQ) &&
        ((uint16_t)(iface->tm.unexp_cnt - iface->tm.unexp_sent) >=
         UCT_DCX_TM_SYNC_GAP)) {
        iface->tm.sync_due = 1;
    }
}

/* TM_RNDV_INCOMPLETE (docs/device-semantics.md section 9.7 step 5): the
 * device placed the request (TMH, RVH, RAVH, header) in the buffer and
 * left the rest to software.
 * The data does not fit: the receive completes with
 * UCS_ERR_MESSAGE_TRUNCATED, and we send the sender the FIN the device
 * would have sent, so that its operation completes (as UCP's protocol
 * completes the sender of a truncated software rendezvous). */
static UCS_F_NOINLINE void uct_dcx_tag_rndv_incomplete(uct_dcx_iface_t *iface,
                                                       uint32_t idx,
                                                       const dcx_wc_t *wc)
{
    uct_dcx_tm_slot_t *slot = &iface->tm.slots[idx];
    const uint8_t *req      = slot->buffer;
    uint8_t port[DCX_DEV_ADDR_MAX];
    size_t port_len     = sizeof(port);
    ucs_status_t status = UCS_ERR_MESSAGE_TRUNCATED;
    uct_dcx_grant_t *fin;
    uint64_t va, dc_key;
    uint32_t rkey, len, dctn;
    dcx_ah_t *ah;
    int ret;

    iface->cnt->tm.matched++;
    if (!slot->forced) {
        uct_dcx_tm_priv(slot->ctx)->tag = wc->tm_tag;
        slot->ctx->tag_consumed_cb(slot->ctx);
    }
    if ((req == NULL) || (wc->byte_len < DCX_TM_RNDV_LEN)) {
        ucs_error("dcx: %s: incomplete rendezvous of %u bytes in a buffer of "
                  "%u: no request to answer",
                  dcx_dev_name(iface->dev), wc->byte_len, slot->length);
        goto out;
    }
    dcx_rvh_unpack(req + DCX_TM_TMH_LEN, &va, &rkey, &len);
    dcx_ravh_unpack(req + DCX_TM_TMH_LEN + sizeof(dcx_rvh_t), &dctn, &dc_key);
    if (len <= slot->length) {
        /* the data fits: the device declined for its own reasons */
        ucs_error("dcx: %s: the device did not read a rendezvous of %u bytes "
                  "into a receive of %u",
                  dcx_dev_name(iface->dev), len, slot->length);
        status = UCS_ERR_IO_ERROR;
    }

    ret = dcx_srq_tm_rndv_src(iface->srq, wc->wr_id, port, &port_len);
    if (ret != 0) {
        ucs_error("dcx: %s: no sender for the FIN of an incomplete "
                  "rendezvous (tag 0x%" PRIx64 "): %s",
                  dcx_dev_name(iface->dev), wc->tm_tag, strerror(ret));
        goto out;
    }
    if (uct_dcx_iface_peer_ah(iface, port, port_len, &ah) != UCS_OK) {
        goto out; /* logged */
    }
    fin = ucs_mpool_get_inline(&iface->op_mp);
    if (fin == NULL) {
        ucs_error("dcx: out of memory queueing a rendezvous FIN");
        goto out;
    }
    fin->ah      = ah;
    fin->dctn    = dctn;
    fin->tmh_len = DCX_TM_TMH_LEN;
    fin->fin     = 1;
    fin->app_ctx = wc->tm_priv;
    fin->ep_id   = wc->tm_tag;
    ucs_queue_push(&iface->grant_q, &fin->queue);
    uct_dcx_iface_send_grants(iface);
out:
    uct_dcx_tm_slot_finish(iface, idx, 0, 0, status);
}

/* A receive completion of a posted tag (expected) */
static void uct_dcx_tag_rx_expected(uct_dcx_iface_t *iface, const dcx_wc_t *wc)
{
    uint32_t idx = (uint32_t)wc->wr_id;
    uct_dcx_tm_slot_t *slot;
    uct_tag_context_t *ctx;
    uct_dcx_tm_ctx_priv_t *priv;
    uint64_t imm;

    if (ucs_unlikely((idx >= iface->tm.num_slots) ||
                     (iface->tm.slots[idx].state != UCT_DCX_TM_SLOT_LIVE))) {
        uct_dcx_tag_rx_unknown(iface, wc);
        return;
    }
    slot = &iface->tm.slots[idx];
    ctx  = slot->ctx;
    priv = uct_dcx_tm_priv(ctx);

    if (ucs_unlikely(wc->status != DCX_WC_SUCCESS)) {
        if (wc->status == DCX_WC_TM_RNDV_INCOMPLETE) {
            uct_dcx_tag_rndv_incomplete(iface, idx, wc);
            return;
        }
        uct_dcx_tm_slot_finish(iface, idx, 0, 0,
                               (wc->status == DCX_WC_LOC_LEN_ERR) ?
                                   UCS_ERR_MESSAGE_TRUNCATED :
                                   uct_dcx_status(wc->status));
        return;
    }

    if (!(wc->flags & DCX_WC_FLAG_TM_MATCH)) {
        /* second of two: eager of several packets or a device rendezvous;
         * only a rendezvous can be larger than an eager message */
        if (wc->byte_len > iface->config.rx_seg_size) {
            iface->cnt->tm.rndv_hw++;
        }
    } else {
        iface->cnt->tm.matched++;
        if (!slot->forced) {
            priv->tag     = wc->tm_tag;
            priv->app_ctx = wc->tm_priv;
            ctx->tag_consumed_cb(ctx);
        }
    }
    if (!(wc->flags & DCX_WC_FLAG_TM_DATA_VALID)) {
        return; /* the data comes with the next completion */
    }
    if (ucs_unlikely(slot->forced)) {
        /* ctx is the user's again (freed, reposted): not read, not written */
        slot->state = UCT_DCX_TM_SLOT_DONE;
        uct_dcx_tm_slot_check(iface, idx);
        return;
    }

    imm = (wc->flags & DCX_WC_FLAG_WITH_IMM) ?
              (((uint64_t)wc->imm << 32) | priv->app_ctx) :
              0;
    if ((wc->flags & DCX_WC_FLAG_WITH_IMM) && (imm == 0)) {
        /* a software rendezvous request matched: its header is in the
         * user's buffer */
        iface->cnt->tm.rndv_sw++;
        slot->state = UCT_DCX_TM_SLOT_DONE;
        uct_dcx_tm_buf_release(iface, idx);
        ctx->rndv_cb(ctx, priv->tag, slot->buffer, wc->byte_len, UCS_OK, 0);
        uct_dcx_tm_slot_check(iface, idx);
        return;
    }
    uct_dcx_tm_slot_finish(iface, idx, imm, wc->byte_len, UCS_OK);
}

/* Completion of a list operation */
static void uct_dcx_tag_rx_list_op(uct_dcx_iface_t *iface, const dcx_wc_t *wc)
{
    uint32_t idx;
    uct_dcx_tm_slot_t *slot;

    iface->tm.ops_out--;
    if (wc->wr_id == UCT_DCX_TM_WR_SYNC) {
        return;
    }

    idx = (uint32_t)wc->wr_id;
    if (ucs_unlikely(idx >= iface->tm.num_slots)) {
        uct_dcx_tag_rx_unknown(iface, wc);
        return;
    }
    slot = &iface->tm.slots[idx];
    slot->ops_due--;

    if ((wc->opcode == DCX_WC_TM_DEL) && (wc->status == DCX_WC_SUCCESS) &&
        (slot->state == UCT_DCX_TM_SLOT_LIVE)) {
        /* removed before anything matched it: reported as posted, with
         * its tag and its buffer's length (as UCX's rc/dc report it) */
        uct_dcx_tm_slot_finish(iface, idx, 0, slot->length, UCS_ERR_CANCELED);
    } else if ((wc->status != DCX_WC_SUCCESS) &&
               (wc->status != DCX_WC_TM_ERR)) {
        ucs_error("dcx: %s: tag list operation failed: %s",
                  dcx_dev_name(iface->dev), dcx_wc_status_str(wc->status));
        if ((wc->opcode == DCX_WC_TM_ADD) &&
            (slot->state == UCT_DCX_TM_SLOT_LIVE)) {
            uct_dcx_tm_slot_finish(iface, idx, 0, 0, UCS_ERR_IO_ERROR);
            return;
        }
    }
    /* TM_ERR: the DEL lost the race, the receive's completion reports it */
    if (wc->flags & DCX_WC_FLAG_TM_SYNC_REQ) {
        iface->tm.sync_due = 1;
    }
    uct_dcx_tm_slot_check(iface, idx);
}

static UCS_F_ALWAYS_INLINE void uct_dcx_tag_rx_one(uct_dcx_iface_t *iface,
                                                   const dcx_wc_t *wc)
{
    switch (wc->opcode) {
    case DCX_WC_TM_NO_TAG:
        uct_dcx_tag_rx_no_tag(iface, wc);
        break;
    case DCX_WC_TM_RECV:
        /* a posted tag's completions name its slot; an SRQ buffer's are
         * pointers, never that small */
        if (wc->wr_id < iface->tm.num_slots) {
            uct_dcx_tag_rx_expected(iface, wc);
        } else {
            uct_dcx_tag_rx_unexp(iface, wc);
        }
        break;
    case DCX_WC_TM_ADD:
    case DCX_WC_TM_DEL:
    case DCX_WC_TM_SYNC:
        uct_dcx_tag_rx_list_op(iface, wc);
        break;
    default:
        if (wc->status != DCX_WC_WR_FLUSH_ERR) {
            uct_dcx_tag_rx_unknown(iface, wc);
        }
        if ((wc->status != DCX_WC_SUCCESS) &&
            (wc->wr_id >= iface->tm.num_slots) &&
            (wc->wr_id != UCT_DCX_TM_WR_SYNC)) {
            /* an SRQ buffer flushed with an error */
            iface->rx.posted--;
            ucs_mpool_put_inline((void *)(uintptr_t)wc->wr_id);
        }
        break;
    }
}

/* The receive completions of a TM SRQ's poll: list operations, tagged
 * messages, the NO_TAG messages that carry AMs */
static UCS_F_ALWAYS_INLINE void uct_dcx_tag_rx_wcs(uct_dcx_iface_t *iface,
                                                   const dcx_wc_t *wc, int n)
{
    int i;

    for (i = 0; i < n; ++i) {
        uct_dcx_tag_rx_one(iface, &wc[i]);
    }
    if (ucs_unlikely(iface->tm.sync_due)) {
        uct_dcx_tm_sync(iface);
    }
}

/* The progress of an interface on a TM SRQ, set at its creation in place
 * of uct_dcx_iface_progress (uct_dcx_iface_srq_create): the same poll and
 * tail (uct_dcx_iface_progress_common), its receive completions taken
 * inline, so that an unexpected eager message makes no call of its own
 * before the eager_cb */
UCS_F_NOINLINE unsigned uct_dcx_iface_tag_progress(uct_iface_h tl_iface)
{
    return uct_dcx_iface_progress_common(ucs_derived_of(tl_iface,
                                                        uct_dcx_iface_t),
                                         uct_dcx_tag_rx_wcs);
}

/* The same where both CQs have a look (uct_dcx_iface_progress_choose) */
unsigned uct_dcx_iface_tag_progress_look(uct_iface_h tl_iface)
{
    if (ucs_likely(uct_dcx_iface_idle(ucs_derived_of(tl_iface,
                                                     uct_dcx_iface_t)))) {
        return 0;
    }
    return uct_dcx_iface_tag_progress(tl_iface);
}

/* ---------------------------------------------------------------------------
 * Interface
 * ------------------------------------------------------------------------- */

/*
 * Handlers for an interface opened with UCX_DCX_TM_ENABLE=y but without
 * unexpected-message callbacks (ucx_info -d, a UCT program that only posts
 * receives): the tag list is offered, and a tagged message that finds no
 * posted receive is dropped with a warning, as UCX drops an active message
 * whose id has no handler.
 */
static ucs_status_t uct_dcx_tm_stub_eager(void *arg, void *data, size_t length,
                                          unsigned flags, uct_tag_t stag,
                                          uint64_t imm, void **context)
{
    uct_dcx_iface_t *iface = arg;

    ucs_warn("dcx: %s: unexpected eager tagged message (tag 0x%" PRIx64
             ", %zu bytes) dropped: the interface has no eager_cb",
             dcx_dev_name(iface->dev), stag, length);
    return UCS_OK;
}

static ucs_status_t uct_dcx_tm_stub_rndv(void *arg, unsigned flags,
                                         uint64_t stag, const void *header,
                                         unsigned header_length,
                                         uint64_t remote_addr, size_t length,
                                         const void *rkey_buf)
{
    uct_dcx_iface_t *iface = arg;

    ucs_warn("dcx: %s: unexpected rendezvous request (tag 0x%" PRIx64
             ", %zu bytes) dropped: the interface has no rndv_cb",
             dcx_dev_name(iface->dev), stag, length);
    return UCS_OK;
}

int uct_dcx_iface_tag_params(uct_dcx_iface_t *iface,
                             const uct_iface_params_t *params,
                             const uct_dcx_iface_config_t *cfg)
{
    uct_dcx_tm_t *tm = &iface->tm;
    uint64_t fm      = params->field_mask;

    memset(tm, 0, sizeof(*tm));
    tm->free_head       = UINT32_MAX;
    tm->rndv_free       = UINT16_MAX;
    tm->release_desc.cb = uct_dcx_tm_release_desc;
    tm->eager_cb        = (fm & UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB) ?
                              params->eager_cb :
                              NULL;
    tm->eager_arg       = (fm & UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_ARG) ?
                              params->eager_arg :
                              NULL;
    tm->rndv_cb = (fm & UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB) ? params->rndv_cb :
                                                               NULL;
    tm->rndv_arg = (fm & UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_ARG) ?
                       params->rndv_arg :
                       NULL;
    if ((fm & UCT_IFACE_PARAM_FIELD_FEATURES) &&
        !(params->features & UCT_IFACE_FEATURE_TAG)) {
        return 0; /* the user said it will not use tags */
    }
    if ((tm->eager_cb == NULL) && (tm->rndv_cb == NULL) &&
        (cfg->tm_enable == UCS_YES)) {
        tm->eager_cb  = uct_dcx_tm_stub_eager;
        tm->eager_arg = iface;
        tm->rndv_cb   = uct_dcx_tm_stub_rndv;
        tm->rndv_arg  = iface;
    }
    /* the user asked for tag matching (UCP does with its tag feature), or
     * forced it with UCX_DCX_TM_ENABLE=y */
    return (tm->eager_cb != NULL) && (tm->rndv_cb != NULL);
}

/* UCX_DCX_TM_ENABLE against the device: 1 to try a TM SRQ, 0 not to, -1
 * when it is required and the device has none (logged) */
int uct_dcx_iface_tm_wanted(uct_dcx_iface_t *iface,
                            const uct_dcx_iface_config_t *cfg)
{
    if (cfg->tm_enable == UCS_NO) {
        return 0;
    }
    if (!(iface->caps->flags & DCX_CAP_TM) || (iface->caps->tm_max_tags == 0)) {
        if (cfg->tm_enable == UCS_YES) {
            ucs_error("dcx: %s: UCX_DCX_TM_ENABLE=y but the device has no "
                      "tag matching",
                      dcx_dev_name(iface->dev));
            return -1;
        }
        return 0;
    }
    return 1;
}

/* Receive completions: a TM SRQ also completes list operations and up to
 * two completions per listed receive */
unsigned uct_dcx_iface_tm_rx_cqe(uct_dcx_iface_t *iface, int tm,
                                 unsigned rx_cqe)
{
    if (tm <= 0) {
        return rx_cqe;
    }
    return ucs_min(rx_cqe + iface->caps->tm_max_ops +
                       2 * iface->caps->tm_max_tags,
                   iface->caps->max_cqe);
}

/* The SRQ behind the DCT: a tag-matching one when tm > 0 (rx.tmh_len set),
 * falling back to a plain one under "try" */
ucs_status_t uct_dcx_iface_srq_create(uct_dcx_iface_t *iface,
                                      const uct_dcx_iface_config_t *cfg, int tm)
{
    const char *dev = dcx_dev_name(iface->dev);
    dcx_srq_attr_t srq_attr;
    int ret;

    memset(&srq_attr, 0, sizeof(srq_attr));
    srq_attr.type    = DCX_SRQ_BASIC;
    srq_attr.max_wr  = cfg->rx_queue_len;
    srq_attr.max_sge = 1;
    srq_attr.cq      = iface->rx_cq;
    /* the AM path, and on a TM SRQ the unexpected and NO_TAG messages,
     * take messages in place where the device offers it and no alignment
     * was asked for (uct_dcx_iface_rx_wcs, uct_dcx_tag_rx_lend) */
    if (iface->rx.in_place) {
        srq_attr.flags = DCX_SRQ_F_IN_PLACE;
    }
    if (tm > 0) {
        srq_attr.type        = DCX_SRQ_TM;
        srq_attr.tm_max_tags = iface->caps->tm_max_tags;
        srq_attr.tm_max_ops  = iface->caps->tm_max_ops;
        ret = dcx_srq_create(iface->pd, &srq_attr, &iface->srq);
        if (ret == 0) {
            iface->rx.tmh_len                     = DCX_TM_TMH_LEN;
            /* before uct_base_iface_progress_enable() reads it */
            iface->super.super.ops.iface_progress = uct_dcx_iface_tag_progress;
            return UCS_OK;
        }
        if (cfg->tm_enable == UCS_YES) {
            ucs_error("dcx: %s: failed to create a tag-matching SRQ "
                      "(UCX_DCX_TM_ENABLE=y): %s",
                      dev, strerror(ret));
            return UCS_ERR_IO_ERROR;
        }
        ucs_diag("dcx: %s: no tag-matching SRQ (%s), tag offload off", dev,
                 strerror(ret));
        srq_attr.type        = DCX_SRQ_BASIC;
        srq_attr.tm_max_tags = 0;
        srq_attr.tm_max_ops  = 0;
    }
    ret = dcx_srq_create(iface->pd, &srq_attr, &iface->srq);
    if (ret != 0) {
        ucs_error("dcx: %s: failed to create the SRQ: %s", dev, strerror(ret));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

/* Device list entries kept out of tag.recv.max_outstanding.  A receive
 * cancelled with force is the user's again at once, and so is its place,
 * as on UCX's rc_mlx5: a caller that fills the list, cancels one with
 * force and posts again, without progress between, gets its post.  Its
 * entry stays the device's until the removal's completion is polled (a
 * message may have taken it first, and that completion comes before):
 * one of these stands in meanwhile.  One in UCT_DCX_TM_SPARE_DIV, at
 * least one where the list has two entries. */
#define UCT_DCX_TM_SPARE_DIV 32

static uint32_t uct_dcx_tm_spare(uint32_t num_slots)
{
    return (num_slots < 2) ? 0 : ucs_max(1, num_slots / UCT_DCX_TM_SPARE_DIV);
}

ucs_status_t uct_dcx_iface_tag_init(uct_dcx_iface_t *iface,
                                    const uct_dcx_iface_config_t *config)
{
    uct_dcx_tm_t *tm = &iface->tm;
    uint32_t i;

    if (iface->rx.tmh_len == 0) {
        return UCS_OK;
    }

    tm->num_slots = iface->srq->tm_max_tags;
    tm->max_live  = tm->num_slots - uct_dcx_tm_spare(tm->num_slots);
    tm->live      = 0;
    tm->max_ops   = iface->srq->tm_max_ops;
    tm->slots = ucs_calloc(tm->num_slots, sizeof(*tm->slots), "dcx_tm_slots");
    if (tm->slots == NULL) {
        ucs_error("dcx: failed to allocate %u tag slots", tm->num_slots);
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < tm->num_slots; ++i) {
        tm->slots[i].next_free = (i + 1 < tm->num_slots) ? i + 1 : UINT32_MAX;
        tm->slots[i].skey      = UCT_DCX_SKEY_NONE;
    }
    tm->free_head = 0;
    kh_init_inplace(uct_dcx_tm_bufs, &tm->bufs);

    tm->rndv_ops = ucs_calloc(UCT_DCX_TM_RNDV_OPS, sizeof(*tm->rndv_ops),
                              "dcx_tm_rndv_ops");
    if (tm->rndv_ops == NULL) {
        ucs_error("dcx: failed to allocate the rendezvous table");
        ucs_free(tm->slots);
        tm->slots = NULL;
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < UCT_DCX_TM_RNDV_OPS; ++i) {
        tm->rndv_ops[i].next_free = (i + 1 < UCT_DCX_TM_RNDV_OPS) ? i + 1 :
                                                                    UINT16_MAX;
        tm->rndv_ops[i].skey      = UCT_DCX_SKEY_NONE;
    }
    tm->rndv_free    = 0;
    tm->rndv_max_hdr = (iface->caps->tm_max_rndv_hdr > DCX_TM_RNDV_LEN) ?
                           iface->caps->tm_max_rndv_hdr - DCX_TM_RNDV_LEN :
                           0;
    return UCS_OK;
}

void uct_dcx_iface_tag_cleanup(uct_dcx_iface_t *iface)
{
    const uct_dcx_tm_stats_t *s = &iface->cnt->tm;

    if (iface->rx.tmh_len != 0) {
        ucs_info("dcx iface %s DCT 0x%x: tag matching: posted %" PRIu64
                 " matched %" PRIu64 " unexp_eager %" PRIu64
                 " unexp_rndv %" PRIu64 " rndv_hw %" PRIu64 " rndv_sw %" PRIu64
                 " syncs %" PRIu64 " cancels %" PRIu64,
                 dcx_dev_name(iface->dev), iface->config.dctn, s->posted,
                 s->matched, s->unexp_eager, s->unexp_rndv, s->rndv_hw,
                 s->rndv_sw, s->syncs, s->cancels);
    }
    kh_destroy_inplace(uct_dcx_tm_bufs, &iface->tm.bufs);
    kh_init_inplace(uct_dcx_tm_bufs, &iface->tm.bufs);
    ucs_free(iface->tm.slots);
    ucs_free(iface->tm.rndv_ops);
    iface->tm.slots    = NULL;
    iface->tm.rndv_ops = NULL;
}

void uct_dcx_iface_tag_query(uct_dcx_iface_t *iface, uct_iface_attr_t *attr)
{
    size_t max_inline = iface->config.max_inline;

    if (iface->rx.tmh_len == 0) {
        return;
    }

    attr->cap.flags |= UCT_IFACE_FLAG_TAG_EAGER_BCOPY |
                       UCT_IFACE_FLAG_TAG_EAGER_ZCOPY;
    if (max_inline > DCX_TM_TMH_LEN) {
        attr->cap.flags |= UCT_IFACE_FLAG_TAG_EAGER_SHORT;
        attr->cap.tag.eager.max_short = max_inline - DCX_TM_TMH_LEN;
    }
    attr->cap.tag.eager.max_bcopy      = iface->config.rx_seg_size;
    attr->cap.tag.eager.max_zcopy      = iface->config.rx_seg_size;
    attr->cap.tag.eager.max_iov        = iface->config.max_iov;
    attr->cap.tag.recv.min_recv        = iface->tm.min_recv;
    attr->cap.tag.recv.max_zcopy       = iface->caps->max_msg_size;
    attr->cap.tag.recv.max_iov         = 1;
    attr->cap.tag.recv.max_outstanding = iface->tm.max_live;

    attr->cap.flags |= UCT_IFACE_FLAG_TAG_RNDV_ZCOPY;
    attr->cap.tag.rndv.max_zcopy = ucs_min(iface->caps->max_msg_size,
                                           (uint64_t)UINT32_MAX);
    attr->cap.tag.rndv.max_hdr   = iface->tm.rndv_max_hdr + UCT_DCX_TM_TMH_PRIV;
    attr->cap.tag.rndv.max_iov   = 1;
}
