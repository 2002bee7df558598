/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the work-request builders of struct ibv_qp_ex and
 * struct mlx5dv_qp_ex (ibv_wr_start ... ibv_wr_complete).
 *
 * Builders and setters report nothing (their API returns void); the first
 * rule a batch breaks is logged once and remembered, and ibv_wr_complete
 * then returns its errno and discards every WR since ibv_wr_start, as
 * libmlx5 does.  Rules:
 *  - a DCI WR is one builder, exactly one mlx5dv_wr_set_dc_addr and exactly
 *    one data setter (in either order); a WR left without them when the
 *    next builder or ibv_wr_complete comes is refused (EINVAL; on hardware
 *    it would be a malformed WQE);
 *  - an operation must be declared in the send_ops_flags of the QP
 *    (libmlx5 sized the WQE from them) (EINVAL);
 *  - more sge than max_send_sge, more inline bytes than max_inline_data,
 *    more WRs than the send queue has room for: ENOMEM;
 *  - inline data only for SEND and RDMA WRITE, an atomic's data one sge of
 *    at least 8 bytes (the fetched value) (EINVAL);
 *  - posting outside RTS (before the first RTS after a RESET): EINVAL.
 * Builders the emulation does not model (bind_mw, send_inv, TSO, UD and
 * XRC addressing, raw WQE, memcpy) fail the batch with EOPNOTSUPP; the
 * memory-key builders and setters are emu_umr.c's, and the batch both
 * fill is emu_wr_batch.c's.
 */
#include "emu/emu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EMU_WR_NONE 0xffu /* opcode of a WR slot not in use */

static inline emu_qp_t *emu_wr_qp(struct ibv_qp_ex *qpx)
{
    return (emu_qp_t *)qpx;
}

static inline emu_qp_t *emu_dv_qp(struct mlx5dv_qp_ex *dv)
{
    return (emu_qp_t *)((char *)dv - offsetof(emu_qp_t, dv));
}

static uint64_t emu_op_flag(uint8_t opcode)
{
    switch (opcode) {
    case DCX_WR_SEND:
        return IBV_QP_EX_WITH_SEND;
    case DCX_WR_SEND_IMM:
        return IBV_QP_EX_WITH_SEND_WITH_IMM;
    case DCX_WR_RDMA_WRITE:
        return IBV_QP_EX_WITH_RDMA_WRITE;
    case DCX_WR_RDMA_WRITE_IMM:
        return IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
    case DCX_WR_RDMA_READ:
        return IBV_QP_EX_WITH_RDMA_READ;
    case DCX_WR_ATOMIC_FADD:
        return IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
    case DCX_WR_ATOMIC_CSWAP:
        return IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP;
    default:
        return 0;
    }
}

/* Starts a data WR (send, RDMA, atomic) of a DCI. */
static emu_wr_t *emu_wr_new(emu_qp_t *qp, uint8_t opcode, const char *name)
{
    if (qp->batch_err != 0) {
        return NULL;
    }
    if (!(qp->send_ops & emu_op_flag(opcode))) {
        emu_wr_fail(qp, EINVAL, "%s is not in the QP's send_ops_flags", name);
        return NULL;
    }
    return emu_wr_push(qp, opcode, name);
}

/* ------------------------------------------------------------------------
 * Builders
 * ------------------------------------------------------------------------ */
static void emu_wr_send(struct ibv_qp_ex *qpx)
{
    emu_wr_new(emu_wr_qp(qpx), DCX_WR_SEND, "send");
}

static void emu_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
    emu_wr_t *w = emu_wr_new(emu_wr_qp(qpx), DCX_WR_SEND_IMM, "send_imm");

    if (w != NULL) {
        w->wr.imm = be32toh(imm);
    }
}

static void emu_wr_rdma(struct ibv_qp_ex *qpx, uint8_t opcode, const char *name,
                        uint32_t rkey, uint64_t raddr, uint32_t imm)
{
    emu_wr_t *w = emu_wr_new(emu_wr_qp(qpx), opcode, name);

    if (w != NULL) {
        w->wr.rkey        = rkey;
        w->wr.remote_addr = raddr;
        w->wr.imm         = imm;
    }
}

static void emu_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
                              uint64_t raddr)
{
    emu_wr_rdma(qpx, DCX_WR_RDMA_WRITE, "rdma_write", rkey, raddr, 0);
}

static void emu_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
                                  uint64_t raddr, __be32 imm)
{
    emu_wr_rdma(qpx, DCX_WR_RDMA_WRITE_IMM, "rdma_write_imm", rkey, raddr,
                be32toh(imm));
}

static void emu_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
                             uint64_t raddr)
{
    emu_wr_rdma(qpx, DCX_WR_RDMA_READ, "rdma_read", rkey, raddr, 0);
}

static void emu_wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
                                    uint64_t raddr, uint64_t add)
{
    emu_wr_t *w = emu_wr_new(emu_wr_qp(qpx), DCX_WR_ATOMIC_FADD,
                             "atomic_fetch_add");

    if (w != NULL) {
        w->wr.rkey        = rkey;
        w->wr.remote_addr = raddr;
        w->wr.compare_add = add;
    }
}

static void emu_wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
                                  uint64_t raddr, uint64_t compare,
                                  uint64_t swap)
{
    emu_wr_t *w = emu_wr_new(emu_wr_qp(qpx), DCX_WR_ATOMIC_CSWAP,
                             "atomic_cmp_swp");

    if (w != NULL) {
        w->wr.rkey        = rkey;
        w->wr.remote_addr = raddr;
        w->wr.compare_add = compare;
        w->wr.swap        = swap;
    }
}

static void emu_wr_not_modelled(emu_qp_t *qp, const char *name)
{
    emu_wr_fail(qp, EOPNOTSUPP, "%s is not modelled by the emulation", name);
}

static void emu_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
    emu_wr_not_modelled(emu_wr_qp(qpx), "send_inv");
}

static void emu_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
                           uint32_t rkey, const struct ibv_mw_bind_info *info)
{
    emu_wr_not_modelled(emu_wr_qp(qpx), "bind_mw (memory windows)");
}

static void emu_wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz,
                            uint16_t mss)
{
    emu_wr_not_modelled(emu_wr_qp(qpx), "send_tso");
}

static void emu_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
                               uint32_t qpn, uint32_t qkey)
{
    emu_qp_t *qp = emu_wr_qp(qpx);
    emu_wr_t *w;

    if (qp->kind != EMU_QP_UD) {
        emu_wr_fail(qp, EINVAL, "set_ud_addr on a QP that is not UD");
        return;
    }
    w = emu_wr_cur(qp, "set_ud_addr");
    if (w == NULL) {
        return;
    }
    if (w->has_addr) {
        emu_wr_fail(qp, EINVAL, "a second set_ud_addr");
        return;
    }
    w->ud_ah    = ah; /* checked at ibv_wr_complete (emu_ud_prepare) */
    w->ud_qpn   = qpn;
    w->ud_qkey  = qkey;
    w->has_addr = 1;
    ++w->setters;
}

static void emu_wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
    emu_wr_not_modelled(emu_wr_qp(qpx), "set_xrc_srqn (XRC)");
}

static void emu_wr_raw_wqe(struct mlx5dv_qp_ex *dv, const void *wqe)
{
    emu_wr_not_modelled(emu_dv_qp(dv), "raw_wqe");
}

static void emu_wr_memcpy(struct mlx5dv_qp_ex *dv, uint32_t dest_lkey,
                          uint64_t dest_addr, uint32_t src_lkey,
                          uint64_t src_addr, size_t length)
{
    emu_wr_not_modelled(emu_dv_qp(dv), "memcpy (DMA engine)");
}

/* ------------------------------------------------------------------------
 * Setters
 * ------------------------------------------------------------------------ */
static void emu_wr_set_dc_addr(struct mlx5dv_qp_ex *dv, struct ibv_ah *ibah,
                               uint32_t dctn, uint64_t key)
{
    emu_qp_t *qp = emu_dv_qp(dv);
    const emu_route_t *route;
    emu_wr_t *w;

    if ((qp->kind != EMU_QP_DCI) && (qp->batch_err == 0)) {
        emu_wr_fail(qp, EINVAL, "set_dc_addr on a QP that is not a DCI");
        return;
    }
    w = emu_wr_cur(qp, "set_dc_addr");
    if (w == NULL) {
        return;
    }
    if (w->has_addr) {
        emu_wr_fail(qp, EINVAL, "a second set_dc_addr");
        return;
    }
    if ((ibah == NULL) ||
        (ibah->context->device != qp->qpx.qp_base.context->device)) {
        emu_wr_fail(qp, EINVAL, "set_dc_addr with an AH of another device");
        return;
    }
    route             = emu_ah_route((emu_ah_t *)ibah);
    /* a DCT number outside the LID owner's window names no soft DCT
     * (0 is none): the request is dropped at that port, as by an HCA
     * that has no such DCT */
    w->wr.dest.ah     = route->soft;
    w->wr.dest.dctn   = emu_qpn_at(route->qpn_base, dctn & 0xffffffu);
    w->wr.dest.dc_key = key;
    w->has_addr       = 1;
    ++w->setters;
}

static void emu_wr_set_dc_addr_stream(struct mlx5dv_qp_ex *dv,
                                      struct ibv_ah *ah, uint32_t dctn,
                                      uint64_t key, uint16_t stream_id)
{
    emu_qp_t *qp = emu_dv_qp(dv);
    emu_wr_t *w;

    /* libmlx5 writes the id into the control segment unchecked, and a DCI
     * made without stream channels executes in posting order whatever it
     * says (perftest, proven on hardware, names streams on such DCIs):
     * ignored there.  On a DCI with channels the HCA takes the id's low
     * bits (rdma-core's own DC stream tests name ids up to two past the
     * count, on hardware): the channel is the id modulo the count, a
     * power of 2. */
    emu_wr_set_dc_addr(dv, ah, dctn, key);
    w = emu_wr_last(qp);
    if ((w != NULL) && w->has_addr && (qp->num_streams > 0)) {
        w->wr.stream_id = (uint16_t)(stream_id & (qp->num_streams - 1));
    }
}

/* Common checks of a data setter; the WR or NULL. */
static emu_wr_t *emu_wr_data(emu_qp_t *qp, const char *setter, bool inl)
{
    emu_wr_t *w = emu_wr_cur(qp, setter);
    uint8_t op;

    if (w == NULL) {
        return NULL;
    }
    if (w->has_data) {
        emu_wr_fail(qp, EINVAL, "a second data setter (%s)", setter);
        return NULL;
    }
    op = w->wr.opcode;
    if (inl && (op != DCX_WR_SEND) && (op != DCX_WR_SEND_IMM) &&
        (op != DCX_WR_RDMA_WRITE) && (op != DCX_WR_RDMA_WRITE_IMM)) {
        emu_wr_fail(qp, EINVAL,
                    "inline data on an operation other than "
                    "send or RDMA write");
        return NULL;
    }
    return w;
}

static void emu_wr_add_sges(emu_qp_t *qp, emu_wr_t *w, size_t n,
                            const struct ibv_sge *sg)
{
    size_t i;

    if (n > qp->max_send_sge) {
        emu_wr_fail(qp, ENOMEM, "%zu sge, max_send_sge is %u", n,
                    qp->max_send_sge);
        return;
    }
    if (emu_grow((void **)&qp->batch_sge, &qp->batch_sge_cap,
                 qp->batch_sge_n + (uint32_t)n, sizeof(dcx_sge_t)) != 0) {
        emu_wr_fail(qp, ENOMEM, "out of memory");
        return;
    }
    for (i = 0; i < n; ++i) {
        if (sg[i].length == 0) {
            continue; /* as libmlx5: no data segment for it */
        }
        qp->batch_sge[qp->batch_sge_n].addr   = sg[i].addr;
        qp->batch_sge[qp->batch_sge_n].length = sg[i].length;
        qp->batch_sge[qp->batch_sge_n].lkey   = sg[i].lkey;
        ++qp->batch_sge_n;
        ++w->wr.num_sge;
    }
    if (((w->wr.opcode == DCX_WR_ATOMIC_FADD) ||
         (w->wr.opcode == DCX_WR_ATOMIC_CSWAP)) &&
        ((w->wr.num_sge != 1) || (qp->batch_sge[w->sge_off].length < 8))) {
        emu_wr_fail(qp, EINVAL,
                    "an atomic takes one sge of 8 bytes for the "
                    "fetched value");
        return;
    }
    w->has_data = 1;
    ++w->setters;
}

static void emu_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
                           uint32_t length)
{
    emu_qp_t *qp       = emu_wr_qp(qpx);
    emu_wr_t *w        = emu_wr_data(qp, "set_sge", false);
    struct ibv_sge sge = {addr, length, lkey};

    if (w != NULL) {
        emu_wr_add_sges(qp, w, 1, &sge);
    }
}

static void emu_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
                                const struct ibv_sge *sg_list)
{
    emu_qp_t *qp = emu_wr_qp(qpx);
    emu_wr_t *w  = emu_wr_data(qp, "set_sge_list", false);

    if (w != NULL) {
        emu_wr_add_sges(qp, w, num_sge, sg_list);
    }
}

static void emu_wr_add_inline(emu_qp_t *qp, emu_wr_t *w, size_t n,
                              const struct ibv_data_buf *buf)
{
    size_t i, total = 0;

    for (i = 0; i < n; ++i) {
        total += buf[i].length;
    }
    if (total > qp->max_inline) {
        emu_wr_fail(qp, ENOMEM, "%zu inline bytes, max_inline_data is %u",
                    total, qp->max_inline);
        return;
    }
    if (emu_grow((void **)&qp->batch_inl, &qp->batch_inl_cap,
                 qp->batch_inl_n + (uint32_t)total + 1, 1) != 0) {
        emu_wr_fail(qp, ENOMEM, "out of memory");
        return;
    }
    /* copied now: the caller may reuse its buffers on return */
    for (i = 0; i < n; ++i) {
        if (buf[i].length > 0) {
            memcpy(qp->batch_inl + qp->batch_inl_n, buf[i].addr, buf[i].length);
            qp->batch_inl_n += (uint32_t)buf[i].length;
        }
    }
    w->inl_len = (uint32_t)total;
    w->wr.flags |= DCX_SEND_INLINE;
    w->has_data = 1;
    ++w->setters;
}

static void emu_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
                                   size_t length)
{
    emu_qp_t *qp            = emu_wr_qp(qpx);
    emu_wr_t *w             = emu_wr_data(qp, "set_inline_data", true);
    struct ibv_data_buf buf = {addr, length};

    if (w != NULL) {
        emu_wr_add_inline(qp, w, 1, &buf);
    }
}

static void emu_wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
                                        const struct ibv_data_buf *buf_list)
{
    emu_qp_t *qp = emu_wr_qp(qpx);
    emu_wr_t *w  = emu_wr_data(qp, "set_inline_data_list", true);

    if (w != NULL) {
        emu_wr_add_inline(qp, w, num_buf, buf_list);
    }
}

/* ------------------------------------------------------------------------
 * Start, complete, abort
 * ------------------------------------------------------------------------ */
static void emu_wr_reset(emu_qp_t *qp)
{
    qp->batch_n     = 0;
    qp->batch_sge_n = 0;
    qp->batch_inl_n = 0;
    qp->batch_il_n  = 0;
    qp->batch_err   = 0;
}

static void emu_wr_start(struct ibv_qp_ex *qpx)
{
    emu_qp_t *qp = emu_wr_qp(qpx);

    pthread_mutex_lock(&qp->wr_lock);
    emu_wr_reset(qp);
}

static void emu_wr_abort(struct ibv_qp_ex *qpx)
{
    emu_qp_t *qp = emu_wr_qp(qpx);

    emu_wr_reset(qp);
    pthread_mutex_unlock(&qp->wr_lock);
}

/* A DCI with streams: whether the batch fits the shares of its streams
 * (sq_lock held) */
static bool emu_wr_streams_fit(emu_qp_t *qp)
{
    uint32_t n[64] = {0}; /* soft streams: 2^6 at most */
    uint32_t i, s;

    for (i = 0; i < qp->batch_n; ++i) {
        s = qp->batch[i].wr.stream_id;
        if ((s >= 64) ||
            (qp->st_posted[s] - qp->st_retired[s] + ++n[s] > qp->st_depth)) {
            return false;
        }
    }
    return true;
}

/* Whether the batch may go to the device; errno or 0 (lock held). */
static int emu_wr_check(emu_qp_t *qp)
{
    const char *name = qp->qpx.qp_base.context->device->name;
    emu_wr_t *w      = emu_wr_last(qp);
    int ret          = 0;

    if (qp->batch_err != 0) {
        return qp->batch_err; /* logged when it happened */
    }
    if (qp->raw_sq != NULL) {
        emu_error("%s: qp 0x%x: the send queue's memory was taken "
                  "(mlx5dv_init_obj): post WQEs there",
                  name, qp->qpx.qp_base.qp_num);
        return EINVAL;
    }
    if ((w != NULL) && !emu_wr_done(qp, w)) {
        emu_wr_fail(qp, EINVAL,
                    "left without its %s setter at "
                    "ibv_wr_complete",
                    emu_wr_missing(w));
        return EINVAL;
    }
    pthread_mutex_lock(&qp->sq_lock);
    if (!qp->post_ok) {
        emu_error("%s: qp 0x%x: ibv_wr_complete before the QP reached RTS "
                  "(state %d): %u WRs discarded",
                  name, qp->qpx.qp_base.qp_num, (int)qp->qpx.qp_base.state,
                  qp->batch_n);
        ret = EINVAL;
    } else if ((qp->num_streams > 0) ?
                   !emu_wr_streams_fit(qp) :
                   (qp->sq_posted - qp->sq_retired + qp->batch_n >
                    qp->max_send_wr)) {
        /* flow control, not an error: said at debug level only */
        emu_debug("%s: qp 0x%x: send queue full (%llu outstanding, %u "
                  "more, depth %u)",
                  name, qp->qpx.qp_base.qp_num,
                  (unsigned long long)(qp->sq_posted - qp->sq_retired),
                  qp->batch_n, qp->max_send_wr);
        ret = ENOMEM;
    }
    pthread_mutex_unlock(&qp->sq_lock);
    return ret;
}

static int emu_wr_complete(struct ibv_qp_ex *qpx)
{
    emu_qp_t *qp = emu_wr_qp(qpx);
    dcx_sge_t ud_sge[EMU_UD_MAX_SGE];
    dcx_sge_t inl;
    uint64_t seq;
    uint32_t i;
    int ret;

    ret = emu_wr_check(qp);
    for (i = 0; (ret == 0) && (i < qp->batch_n); ++i) {
        emu_wr_t *w = &qp->batch[i];

        if (emu_wr_is_mkey(w)) {
            /* sg_list and layout are set by emu_umr_post */
        } else if (w->wr.flags & DCX_SEND_INLINE) {
            inl.addr      = (uintptr_t)(qp->batch_inl + w->inl_off);
            inl.length    = w->inl_len;
            inl.lkey      = 0;
            w->wr.sg_list = &inl;
            w->wr.num_sge = (w->inl_len > 0) ? 1 : 0;
        } else {
            w->wr.sg_list = qp->batch_sge + w->sge_off;
        }
        if ((qp->kind == EMU_QP_RC) && !emu_wr_is_mkey(w)) {
            emu_rc_dest(qp, &w->wr);
        } else if (qp->kind == EMU_QP_UD) {
            ret = emu_ud_prepare(qp, w, ud_sge, &inl);
            if (ret != 0) {
                break;
            }
        }
        pthread_mutex_lock(&qp->sq_lock);
        seq         = emu_sq_take_slot(qp, w);
        w->wr.wr_id = seq;
        ret         = emu_wr_is_mkey(w) ? emu_umr_post(qp, w) :
                                          dcx_qp_post_send(qp->soft, &w->wr);
        if (ret == 0) {
            emu_sq_posted(qp, w);
        }
        pthread_mutex_unlock(&qp->sq_lock);
    }
    emu_wr_reset(qp);
    pthread_mutex_unlock(&qp->wr_lock);
    return ret;
}

void emu_wr_init(emu_qp_t *qp)
{
    struct ibv_qp_ex *x = &qp->qpx;

    pthread_mutex_init(&qp->wr_lock, NULL);
    x->wr_start                = emu_wr_start;
    x->wr_complete             = emu_wr_complete;
    x->wr_abort                = emu_wr_abort;
    x->wr_send                 = emu_wr_send;
    x->wr_send_imm             = emu_wr_send_imm;
    x->wr_send_inv             = emu_wr_send_inv;
    x->wr_send_tso             = emu_wr_send_tso;
    x->wr_rdma_write           = emu_wr_rdma_write;
    x->wr_rdma_write_imm       = emu_wr_rdma_write_imm;
    x->wr_rdma_read            = emu_wr_rdma_read;
    x->wr_atomic_fetch_add     = emu_wr_atomic_fetch_add;
    x->wr_atomic_cmp_swp       = emu_wr_atomic_cmp_swp;
    x->wr_bind_mw              = emu_wr_bind_mw;
    x->wr_set_sge              = emu_wr_set_sge;
    x->wr_set_sge_list         = emu_wr_set_sge_list;
    x->wr_set_inline_data      = emu_wr_set_inline_data;
    x->wr_set_inline_data_list = emu_wr_set_inline_data_list;
    x->wr_set_ud_addr          = emu_wr_set_ud_addr;
    x->wr_set_xrc_srqn         = emu_wr_set_xrc_srqn;
    /* wr_atomic_write stays NULL, as in libmlx5 */
    if (qp->kind == EMU_QP_DCI) {
        qp->dv.wr_set_dc_addr        = emu_wr_set_dc_addr;
        qp->dv.wr_set_dc_addr_stream = emu_wr_set_dc_addr_stream;
    }
    emu_umr_init(qp);
    qp->dv.wr_raw_wqe = emu_wr_raw_wqe;
    qp->dv.wr_memcpy  = emu_wr_memcpy;
}

void emu_wr_cleanup(emu_qp_t *qp)
{
    free(qp->batch);
    free(qp->batch_sge);
    free(qp->batch_inl);
    free(qp->batch_il);
    pthread_mutex_destroy(&qp->wr_lock);
}
