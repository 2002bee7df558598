/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: scatter-gather put and get (uct_ep_put_sgl_zcopy and
 * uct_ep_get_sgl_zcopy, internal operations of UCX 1.22 and later), built
 * only where configure found them in the UCX with per-element counts and
 * strides (DCX_UCX_HAVE_SGL_ZCOPY).  docs/strided.md describes them.
 *
 * A list element names its own remote address and rkey, and an RDMA work
 * request has one remote address, so the list is cut into runs of pieces
 * whose remote ranges follow one another under one rkey: each run is one
 * WR whose sges are the run's local pieces (gathered by a put, scattered by
 * a get), as a zero-copy iov list is posted.  A strided element (counts[i]
 * blocks of lengths[i] bytes, strides[i] apart on both sides) is one piece
 * when the blocks touch (stride == length), else one piece per block.
 *
 * The whole list is checked and its WRs counted before the first is posted,
 * so an operation is posted entirely or not at all; only the last WR
 * carries the completion: a DCI executes its WRs in order, and a failed WR
 * fails everything after it on the DCI.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx_ep.inl"

#include <ucs/debug/log.h>

#if DCX_UCX_HAVE_SGL_ZCOPY

/* One list operation: its arguments, and the WR being built */
typedef struct uct_dcx_sgl {
    const char *name;
    uint8_t opcode; /* DCX_WR_RDMA_WRITE or _READ */
    void *const *buffers;
    const size_t *lengths;
    uct_mem_h const *memhs;
    const uint64_t *remote_addrs;
    uct_rkey_t const *rkeys;
    const size_t *counts;
    const size_t *strides;
    size_t count;

    /* the WR being built: a run of pieces */
    dcx_sge_t sge[UCT_DCX_MAX_SGE];
    unsigned num_sge;
    uint64_t raddr; /* remote address of the run */
    uint64_t rend;  /* remote address after it */
    uct_rkey_t rkey;
    size_t run_length;
} uct_dcx_sgl_t;


/* Most WRs (and so list elements) one operation may take: half a DCI's
 * send queue, so that a list never waits for a whole drained queue */
static size_t uct_dcx_sgl_max_wrs(const uct_dcx_iface_t *iface)
{
    return ucs_max(iface->pool.sq_len / 2u, 1u);
}

static UCS_F_NOINLINE ucs_status_t
uct_dcx_sgl_bad_elem(const uct_dcx_sgl_t *sgl, size_t i, const char *what)
{
    ucs_error("dcx: %s: element %zu of %zu (%zu bytes at %p, remote 0x%" PRIx64
              "): %s",
              sgl->name, i, sgl->count, sgl->lengths[i], sgl->buffers[i],
              sgl->remote_addrs[i], what);
    return UCS_ERR_INVALID_PARAM;
}

/*
 * Checks element i and gives its pieces: *num_p blocks of *length_p bytes,
 * *stride_p apart (touching blocks merged into one); *num_p is 0 for an
 * element that moves no byte.
 */
static ucs_status_t uct_dcx_sgl_elem(uct_dcx_iface_t *iface,
                                     const uct_dcx_sgl_t *sgl, size_t i,
                                     size_t *length_p, size_t *num_p,
                                     size_t *stride_p)
{
    size_t length = sgl->lengths[i];
    size_t num    = (sgl->counts != NULL) ? sgl->counts[i] : 1;
    size_t stride = (sgl->strides != NULL) ? sgl->strides[i] : length;

    *num_p = 0;
    if ((length == 0) || (num == 0)) {
        return UCS_OK; /* no memory is accessed: nothing to check */
    }

    if (num > 1) {
        if (stride < length) {
            return uct_dcx_sgl_bad_elem(sgl, i,
                                        "blocks overlap (stride "
                                        "smaller than the length)");
        }
        if (stride == length) {
            if (length > iface->caps->max_msg_size / num) {
                return uct_dcx_bad_length(sgl->name, num * length,
                                          iface->caps->max_msg_size);
            }
            length *= num;
            num = 1;
        }
    }

    if (length > iface->caps->max_msg_size) {
        return uct_dcx_bad_length(sgl->name, length, iface->caps->max_msg_size);
    }
    if (sgl->memhs[i] == UCT_MEM_HANDLE_NULL) {
        return uct_dcx_sgl_bad_elem(sgl, i, "no memory handle");
    }
    if (sgl->rkeys[i] == UCT_INVALID_RKEY) {
        return uct_dcx_sgl_bad_elem(sgl, i, "invalid remote key");
    }

    *length_p = length;
    *num_p    = num;
    *stride_p = stride;
    return UCS_OK;
}

/* Posts the run built so far; op (with a signal) only on the last */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_sgl_post_run(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                     uct_dcx_sgl_t *sgl, uct_dcx_op_t *op)
{
    dcx_send_wr_t wr;
    ucs_status_t status;

    uct_dcx_wr_init_rma(&wr, ep, sgl->opcode, 0, sgl->sge, sgl->num_sge,
                        sgl->raddr, sgl->rkey);
    status = uct_dcx_ep_post(iface, ep, &wr, op, op != NULL, 0);
    if (ucs_likely(status == UCS_OK)) {
        uct_dcx_ep_mark_user_mem(iface, ep);
    }
    return status;
}

/* Adds a piece to the run being built if it continues the run's remote
 * range under the same rkey and fits the WR; 0 if it starts a new run */
static UCS_F_ALWAYS_INLINE int
uct_dcx_sgl_extend(uct_dcx_iface_t *iface, uct_dcx_sgl_t *sgl, uintptr_t laddr,
                   uint64_t raddr, size_t length, uint32_t lkey,
                   uct_rkey_t rkey)
{
    dcx_sge_t *last;

    if ((sgl->num_sge == 0) || (sgl->rkey != rkey) || (sgl->rend != raddr) ||
        (sgl->run_length + length > iface->caps->max_msg_size)) {
        return 0;
    }

    last = &sgl->sge[sgl->num_sge - 1];
    if ((last->lkey == lkey) && (last->addr + last->length == laddr)) {
        last->length += length; /* local bytes that follow too */
    } else if (sgl->num_sge < iface->config.max_sge) {
        uct_dcx_sge_set(&sgl->sge[sgl->num_sge++], (void *)laddr, length, lkey);
    } else {
        return 0;
    }

    sgl->rend += length;
    sgl->run_length += length;
    return 1;
}

/*
 * Walks the list.  Without post: checks it and counts its WRs into
 * *num_wrs_p, stopping past max_wrs.  With post: posts its WRs, the last
 * one with op.  *length_p: the bytes moved.
 */
static ucs_status_t uct_dcx_sgl_walk(uct_dcx_iface_t *iface, uct_dcx_ep_t *ep,
                                     uct_dcx_sgl_t *sgl, int post,
                                     uct_dcx_op_t *op, size_t max_wrs,
                                     size_t *num_wrs_p, size_t *length_p)
{
    size_t i, k, length, num, stride, num_wrs = 0, total = 0;
    uint64_t raddr;
    uintptr_t laddr;
    ucs_status_t status;
    uint32_t lkey;

    sgl->num_sge = 0;
    for (i = 0; i < sgl->count; ++i) {
        status = uct_dcx_sgl_elem(iface, sgl, i, &length, &num, &stride);
        if (ucs_unlikely(status != UCS_OK)) {
            return status;
        }

        for (k = 0; k < num; ++k) {
            laddr = (uintptr_t)sgl->buffers[i] + (k * stride);
            raddr = sgl->remote_addrs[i] + (k * stride);
            lkey  = uct_dcx_memh_mr(sgl->memhs[i])->lkey;
            total += length;

            if (uct_dcx_sgl_extend(iface, sgl, laddr, raddr, length, lkey,
                                   sgl->rkeys[i])) {
                continue;
            }

            /* a new run: the one built so far goes first */
            if (sgl->num_sge > 0) {
                if (post) {
                    status = uct_dcx_sgl_post_run(iface, ep, sgl, NULL);
                    if (ucs_unlikely(status != UCS_OK)) {
                        if (op != NULL) {
                            ucs_mpool_put_inline(op);
                        }
                        goto err_posted;
                    }
                }
                if (++num_wrs >= max_wrs) {
                    *num_wrs_p = num_wrs + 1; /* at least */
                    return UCS_OK;
                }
            }
            uct_dcx_sge_set(&sgl->sge[0], (void *)laddr, length, lkey);
            sgl->num_sge    = 1;
            sgl->raddr      = raddr;
            sgl->rend       = raddr + length;
            sgl->rkey       = sgl->rkeys[i];
            sgl->run_length = length;
        }
    }

    if (sgl->num_sge > 0) {
        if (post) {
            /* on failure the op went back to its pool */
            status = uct_dcx_sgl_post_run(iface, ep, sgl, op);
            if (ucs_unlikely(status != UCS_OK)) {
                goto err_posted;
            }
        }
        ++num_wrs;
    }
    *num_wrs_p = num_wrs;
    *length_p  = total;
    return UCS_OK;

err_posted:
    /* the count and the free slots were checked: only a device refusal
     * (logged by the post) gets here; WRs already posted finish without a
     * completion */
    if (num_wrs > 0) {
        ucs_error("dcx: %s: %s after %zu of its work requests were posted",
                  sgl->name, ucs_status_string(status), num_wrs);
    }
    return status;
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_ep_sgl_zcopy(uct_dcx_ep_t *ep, uct_dcx_sgl_t *sgl,
                     uct_completion_t *comp, size_t *length_p)
{
    uct_dcx_iface_t *iface = uct_dcx_ep_iface(ep);
    size_t max_wrs         = uct_dcx_sgl_max_wrs(iface);
    uct_dcx_op_t *op       = NULL;
    ucs_status_t status;
    size_t num_wrs;

    *length_p = 0;
    if (ucs_unlikely(sgl->count > max_wrs)) {
        ucs_error("dcx: %s: %zu elements exceed the maximum %zu "
                  "(max_%s_sgl_zcopy_count)",
                  sgl->name, sgl->count, max_wrs,
                  (sgl->opcode == DCX_WR_RDMA_WRITE) ? "put" : "get");
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    if (ucs_unlikely((sgl->counts == NULL) != (sgl->strides == NULL))) {
        ucs_error("dcx: %s: counts and strides must be given together "
                  "(counts %p strides %p)",
                  sgl->name, sgl->counts, sgl->strides);
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_dcx_sgl_walk(iface, ep, sgl, 0, NULL, max_wrs, &num_wrs,
                              length_p);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (ucs_unlikely(num_wrs > max_wrs)) {
        ucs_error("dcx: %s: its strided elements need more than %zu work "
                  "requests (blocks that do not touch take one each)",
                  sgl->name, max_wrs);
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    if (num_wrs == 0) {
        return UCS_OK; /* no byte to move */
    }

    status = uct_dcx_ep_tx_begin(iface, ep, 0);
    if (ucs_unlikely(status != UCS_OK)) {
        return uct_dcx_ep_tx_refused(ep, status, comp, UCS_INPROGRESS);
    }
    if (uct_dcx_ep_dci(iface, ep)->avail < num_wrs) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (comp != NULL) {
        op = ucs_mpool_get_inline(&iface->op_mp);
        if (ucs_unlikely(op == NULL)) {
            return UCS_ERR_NO_RESOURCE;
        }
        op->cb   = uct_dcx_op_put;
        op->comp = comp;
    }

    status = uct_dcx_sgl_walk(iface, ep, sgl, 1, op, SIZE_MAX, &num_wrs,
                              length_p);
    return (status == UCS_OK) ? UCS_INPROGRESS : status;
}

/* The two entry points differ only in the opcode, the name in log lines
 * and the statistics counter */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_dcx_ep_sgl_op(uct_dcx_ep_t *ep, const char *name, uint8_t opcode,
                  void *const *buffers, const size_t *lengths,
                  uct_mem_h const *memhs, const uint64_t *remote_addrs,
                  uct_rkey_t const *rkeys, const size_t *counts,
                  const size_t *strides, size_t count, uct_completion_t *comp,
                  size_t *length_p)
{
    uct_dcx_sgl_t sgl;

    sgl.name         = name;
    sgl.opcode       = opcode;
    sgl.buffers      = buffers;
    sgl.lengths      = lengths;
    sgl.memhs        = memhs;
    sgl.remote_addrs = remote_addrs;
    sgl.rkeys        = rkeys;
    sgl.counts       = counts;
    sgl.strides      = strides;
    sgl.count        = count;
    return uct_dcx_ep_sgl_zcopy(ep, &sgl, comp, length_p);
}

ucs_status_t
uct_dcx_ep_put_sgl_zcopy(uct_ep_h tl_ep, void *const *buffers,
                         const size_t *lengths, uct_mem_h const *memhs,
                         const uint64_t *remote_addrs, uct_rkey_t const *rkeys,
                         const size_t *counts, const size_t *strides,
                         size_t count, uct_completion_t *comp)
{
    uct_dcx_ep_t *ep = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    ucs_status_t status;
    size_t length;

    status = uct_dcx_ep_sgl_op(ep, "put_sgl_zcopy", DCX_WR_RDMA_WRITE, buffers,
                               lengths, memhs, remote_addrs, rkeys, counts,
                               strides, count, comp, &length);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, PUT, ZCOPY, length);
    return status;
}

ucs_status_t
uct_dcx_ep_get_sgl_zcopy(uct_ep_h tl_ep, void *const *buffers,
                         const size_t *lengths, uct_mem_h const *memhs,
                         const uint64_t *remote_addrs, uct_rkey_t const *rkeys,
                         const size_t *counts, const size_t *strides,
                         size_t count, uct_completion_t *comp)
{
    uct_dcx_ep_t *ep = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    ucs_status_t status;
    size_t length;

    status = uct_dcx_ep_sgl_op(ep, "get_sgl_zcopy", DCX_WR_RDMA_READ, buffers,
                               lengths, memhs, remote_addrs, rkeys, counts,
                               strides, count, comp, &length);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, GET, ZCOPY, length);
    return status;
}

ucs_status_t uct_dcx_iface_query_v2(uct_iface_h tl_iface,
                                    uct_iface_attr_v2_t *attr)
{
    uct_dcx_iface_t *iface = ucs_derived_of(tl_iface, uct_dcx_iface_t);
    ucs_status_t status;

    status = uct_iface_base_query_v2(tl_iface, attr);
    if (status != UCS_OK) {
        return status;
    }

    if (attr->field_mask & UCT_IFACE_ATTR_FIELD_CAP_FLAGS) {
        attr->cap.flags |= UCT_IFACE_FLAG_V2_PUT_SGL_ZCOPY |
                           UCT_IFACE_FLAG_V2_GET_SGL_ZCOPY;
    }
    if (attr->field_mask & UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT) {
        attr->max_put_sgl_zcopy_count = uct_dcx_sgl_max_wrs(iface);
    }
    if (attr->field_mask & UCT_IFACE_ATTR_FIELD_MAX_GET_SGL_ZCOPY_COUNT) {
        attr->max_get_sgl_zcopy_count = uct_dcx_sgl_max_wrs(iface);
    }
    return UCS_OK;
}

#endif /* DCX_UCX_HAVE_SGL_ZCOPY */
