/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: pieces the endpoint operations are built from, shared by
 * dcx_ep.c and dcx_ep_zcopy.c.
 */
#ifndef UCT_DCX_EP_INL_
#define UCT_DCX_EP_INL_

#include "dcx.inl"

#include <string.h>

/* Argument checks (dcx_ep.c): one log line and a status */
UCS_F_NOINLINE ucs_status_t uct_dcx_bad_length(const char *op, size_t length,
                                               size_t max);
UCS_F_NOINLINE ucs_status_t uct_dcx_bad_am_id(unsigned id);
UCS_F_NOINLINE ucs_status_t uct_dcx_bad_iovcnt(const char *op, size_t iovcnt,
                                               size_t max);

/* ---------------------------------------------------------------------------
 * Pieces every send below is built from
 * ------------------------------------------------------------------------- */

static UCS_F_ALWAYS_INLINE void
uct_dcx_sge_set(dcx_sge_t *sge, const void *addr, size_t length, uint32_t lkey)
{
    sge->addr   = (uintptr_t)addr;
    sge->length = length;
    sge->lkey   = lkey;
}

/* A WR aimed at remote memory: uct_dcx_wr_init plus the remote side */
static UCS_F_ALWAYS_INLINE void
uct_dcx_wr_init_rma(dcx_send_wr_t *wr, uct_dcx_ep_t *ep, uint8_t opcode,
                    uint8_t flags, const dcx_sge_t *sge, unsigned num_sge,
                    uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_dcx_wr_init(wr, ep, opcode, flags, sge, num_sge);
    wr->remote_addr = remote_addr;
    wr->rkey        = uct_dcx_rkey(rkey);
}

/* A WR of one sge to be done within the call (DCX_SEND_NOW): every field
 * the device may read set, the constant ones side by side so that they
 * are stored as one word (no WR id, nothing completes; no immediate, no
 * opcode here carries one; no stream, the _now ops are not chosen under
 * streams, whose DCIs alone read it) */
static UCS_F_ALWAYS_INLINE void
uct_dcx_wr_init_now(dcx_send_wr_t *wr, uct_dcx_ep_t *ep, uint8_t opcode,
                    uint8_t flags, const dcx_sge_t *sge, uint64_t remote_addr,
                    uct_rkey_t rkey)
{
    wr->opcode      = opcode;
    wr->flags       = flags | DCX_SEND_NOW;
    wr->num_sge     = 1;
    wr->atomic_size = 0;
    uct_dcx_ep_dest(ep, &wr->dest);
    wr->sg_list     = sge;
    wr->remote_addr = remote_addr;
    wr->rkey        = uct_dcx_rkey(rkey);
}

/* ep could send at once on the DCI it holds (uct_dcx_ep_tx_begin's fast
 * test), and is neither failed nor invalidated: what a WR the device may
 * execute within the call (DCX_SEND_NOW) needs first */
static UCS_F_ALWAYS_INLINE int uct_dcx_ep_can_now(uct_dcx_iface_t *iface,
                                                  const uct_dcx_ep_t *ep)
{
    return uct_dcx_ep_dci_ready(iface, ep) &&
           !(ep->flags &
             (UCT_DCX_EP_FLAG_FAILED | UCT_DCX_EP_FLAG_INVALIDATED));
}

/* The WR just posted by ep reads or writes the user's memory (zcopy): if
 * the ep goes away with it in flight, its DCI is stopped */
static UCS_F_ALWAYS_INLINE void uct_dcx_ep_mark_user_mem(uct_dcx_iface_t *iface,
                                                         uct_dcx_ep_t *ep)
{
    uct_dcx_dci_t *dci = uct_dcx_ep_dci(iface, ep);

    dci->wr_opcode[dci->sn & iface->pool.ring_mask] |= UCT_DCX_WR_USER_MEM;
}

/*
 * Posts wr on ep's DCI.  On failure op (a bare op, or the op heading a
 * descriptor) returns to its pool; on success an AM uses up one credit.
 * Callers pass op, signal and is_am as constants where they can, so the
 * tests on them vanish once this is inlined.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_ep_post_dci(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                    uct_dcx_dci_t *dci, dcx_send_wr_t *wr, uct_dcx_op_t *op,
                    int signal, int is_am)
{
    ucs_status_t status;

    /* the op of a descriptor is its first member: same pool object */
    UCS_STATIC_ASSERT(ucs_offsetof(uct_dcx_send_desc_t, op) == 0);

    status = uct_dcx_dci_post_own(iface, dci, ep, wr, op, signal, 1);
    if (ucs_unlikely(status != UCS_OK)) {
        if (op != NULL) {
            ucs_mpool_put_inline(op);
        }
        return status;
    }

    if (is_am) {
        ep->fc_wnd--;
    }
    return UCS_OK;
}

/* The same on ep's DCI, found here (callers that filled byte-sized fields
 * since tx_begin pass the DCI they took before: a byte store may alias
 * ep->dci, which the compiler then reads again) */
static UCS_F_ALWAYS_INLINE ucs_status_t uct_dcx_ep_post(uct_dcx_iface_t *iface,
                                                        uct_dcx_ep_t *ep,
                                                        dcx_send_wr_t *wr,
                                                        uct_dcx_op_t *op,
                                                        int signal, int is_am)
{
    return uct_dcx_ep_post_dci(iface, ep, uct_dcx_ep_dci(iface, ep), wr, op,
                               signal, is_am);
}


#endif /* UCT_DCX_EP_INL_ */
