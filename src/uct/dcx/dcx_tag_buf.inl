/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the buffers of posted tag receives (dcx_tag.c).
 *
 * As UCX's rc_mlx5/dc_mlx5, uct_iface_tag_recv_zcopy refuses with
 * UCS_ERR_ALREADY_EXISTS a buffer another receive holds, whatever its
 * context and tag: two list entries on one buffer would let two messages
 * write it.  Like UCX only the start address (iov->buffer) is compared; an
 * overlapping buffer at another address is taken.  Unlike UCX a receive
 * that touches no memory (iovcnt 0, or a length of 0: no sge is listed) is
 * not checked and takes no entry, so that receives without data need no
 * distinct addresses (UCX checks iov->buffer whatever the length).
 *
 * tm.bufs maps a buffer to the slot holding it for the user: the entry is
 * made by the post (slot->in_bufs) and removed at the exact transition
 * that gives the buffer back, before any callback, which may post it
 * again: the receive reported (uct_dcx_tm_slot_finish, the rndv_cb of a
 * software rendezvous), or cancelled with force (as UCX, though a message
 * the device matched before the cancel may still be landing in it: the
 * user gave up the data, not the device its write).  An unforced cancel
 * keeps it until its completion reports the receive.  So there are at most
 * num_slots entries, and buckets (khash rehashes in place, dropping the
 * deleted ones, before it grows); the lookups are on posts, forced
 * cancels and completions only.
 *
 * UCP takes the refusal as it takes a full list: ucp_tag_offload_do_post
 * admits UCS_ERR_ALREADY_EXISTS, releases its registration, and
 * ucp_tag_offload_try_post leaves the request to software matching.
 */
#ifndef UCT_DCX_TAG_BUF_INL_
#define UCT_DCX_TAG_BUF_INL_

#include "dcx.h"

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>

/* The receive about to be posted in slot idx claims its buffer: *it_p is
 * its entry for uct_dcx_tm_buf_unclaim if the post fails, kh_end when it
 * has none (no memory touched) */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_tm_buf_claim(uct_dcx_iface_t *iface, const uct_iov_t *iov,
                     size_t iovcnt, uint32_t idx, khiter_t *it_p)
{
    khash_t(uct_dcx_tm_bufs) *bufs = &iface->tm.bufs;
    khiter_t it;
    int ret;

    if ((iovcnt == 0) || (uct_iov_get_length(iov) == 0)) {
        *it_p = kh_end(bufs);
        return UCS_OK;
    }
    it = kh_put(uct_dcx_tm_bufs, bufs, (uintptr_t)iov->buffer, &ret);
    if (ucs_unlikely(ret == 0)) {
        /* as UCX: not logged, UCP falls back to software matching */
        return UCS_ERR_ALREADY_EXISTS;
    } else if (ucs_unlikely(ret < 0)) {
        ucs_error("dcx: tag_recv_zcopy: out of memory listing the buffer %p",
                  iov->buffer);
        return UCS_ERR_NO_MEMORY;
    }
    kh_val(bufs, it) = idx;
    *it_p            = it;
    return UCS_OK;
}

/* The post that claimed *it failed: the buffer is free again */
static UCS_F_ALWAYS_INLINE void uct_dcx_tm_buf_unclaim(uct_dcx_iface_t *iface,
                                                       khiter_t it)
{
    if (it != kh_end(&iface->tm.bufs)) {
        kh_del(uct_dcx_tm_bufs, &iface->tm.bufs, it);
    }
}

/* The receive in slot idx gives its buffer back to the user (reported, or
 * cancelled with force); a second call does nothing */
static UCS_F_ALWAYS_INLINE void uct_dcx_tm_buf_release(uct_dcx_iface_t *iface,
                                                       uint32_t idx)
{
    uct_dcx_tm_slot_t *slot = &iface->tm.slots[idx];
    khiter_t it;

    if (!slot->in_bufs) {
        return;
    }
    it = kh_get(uct_dcx_tm_bufs, &iface->tm.bufs, (uintptr_t)slot->buffer);
    ucs_assertv((it != kh_end(&iface->tm.bufs)) &&
                    (kh_val(&iface->tm.bufs, it) == idx),
                "slot %u buffer %p not listed as its own", idx, slot->buffer);
    kh_del(uct_dcx_tm_bufs, &iface->tm.bufs, it);
    slot->in_bufs = 0;
}

#endif
