/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: send WQEs in queue memory (emu_raw.h), read as the
 * HCA reads them and posted to the QP's soft send queue.
 *
 * A WQE is a control segment (opcode, WQE index, QP number and size in
 * 16-byte units, completion and fence flags, immediate), then for DC and
 * UD the address vector (16 bytes, 48 with a GRH), for RDMA and atomics
 * the remote address segment, for atomics their operands, then data
 * segments or inline data.  Segments wrap at the end of the queue.  The
 * soft WR carries the WQE index and opcode in its wr_id, for the CQE.
 * A WQE the device does not take (an unknown opcode, sizes it cannot
 * carry) completes in error with LOCAL_QP_OP_ERR and the QP goes to ERR,
 * as on the HCA; nothing of it reaches the wire.
 */
#include "emu/emu_raw.h"
#include "soft/dcx_soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EMU_RAW_MAX_SGE  32
#define EMU_RAW_MAX_INL  1024
#define EMU_RAW_SLOT     512u        /* inline bytes a WQE holds at most */
#define EMU_RAW_INL_KEY  0xffffffffu /* an sge of inline data, unplaced */
#define EMU_RAW_AV_BASE  16u
#define EMU_RAW_AV_EXT   48u
#define EMU_RAW_GRH_FLAG (1u << 30) /* grh_gid_fl of an extended AV */
#define EMU_RAW_FENCE \
    (MLX5_WQE_CTRL_FENCE | MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE)
#define EMU_RAW_MASKED_SZ \
    0x08 /* opmod of a masked atomic: 8 | log2(size) - 2 */

/* A WQE being read: where its segments are, how many bytes remain */
typedef struct emu_raw_wqe {
    const struct emu_raw_sq *sq;
    uint32_t off;  /* byte offset of the next segment in the queue */
    uint32_t left; /* bytes of the WQE not read */
} emu_raw_wqe_t;

/* The next len bytes of the WQE (wrapping); false if it has fewer */
static bool emu_raw_take(emu_raw_wqe_t *q, void *dst, uint32_t len)
{
    uint32_t size  = q->sq->wqe_cnt * MLX5_SEND_WQE_BB;
    uint32_t off   = q->off & (size - 1);
    uint32_t first = (len < size - off) ? len : size - off;

    if (len > q->left) {
        return false;
    }
    memcpy(dst, q->sq->buf + off, first);
    memcpy((uint8_t *)dst + first, q->sq->buf, len - first);
    q->off += len;
    q->left -= len;
    return true;
}

/* The AH of a LID (and GRH) an address vector names, made once per SQ */
static struct ibv_ah *emu_raw_ah(emu_qp_t *qp, const struct mlx5_wqe_av *av,
                                 bool ext)
{
    struct emu_raw_sq *sq = qp->raw_sq;
    uint16_t lid          = be16toh(av->rlid);
    unsigned slot         = lid % 64;
    struct ibv_ah_attr a;

    if ((sq->ahs[slot] != NULL) && (sq->ah_lids[slot] == lid)) {
        return sq->ahs[slot];
    }
    memset(&a, 0, sizeof(a));
    a.dlid     = lid;
    a.port_num = 1;
    if (ext && (be32toh(av->grh_gid_fl) & EMU_RAW_GRH_FLAG)) {
        a.is_global         = 1;
        a.grh.flow_label    = be32toh(av->grh_gid_fl) & 0xfffff;
        a.grh.hop_limit     = av->hop_limit;
        a.grh.traffic_class = av->tclass;
        memcpy(a.grh.dgid.raw, av->rgid, 16);
    }
    if (sq->ahs[slot] != NULL) {
        /* another LID took the slot: the old AH stays until the QP goes
         * (a WR posted through it may still be queued) */
        return ibv_create_ah(qp->qpx.qp_base.pd, &a);
    }
    sq->ahs[slot]     = ibv_create_ah(qp->qpx.qp_base.pd, &a);
    sq->ah_lids[slot] = lid;
    return sq->ahs[slot];
}

/* DC and UD: the destination from the address vector */
static bool emu_raw_dgram(emu_qp_t *qp, emu_raw_wqe_t *q, dcx_send_wr_t *wr)
{
    struct mlx5_wqe_av av;
    const emu_route_t *route;
    struct ibv_ah *ah;
    uint32_t dqp, qkey;
    bool ext;

    memset(&av, 0, sizeof(av));
    if (!emu_raw_take(q, &av, EMU_RAW_AV_BASE)) {
        return false;
    }
    ext = (be32toh(av.dqp_dct) & MLX5_EXTENDED_UD_AV) != 0;
    if (ext && !emu_raw_take(q, (uint8_t *)&av + EMU_RAW_AV_BASE,
                             EMU_RAW_AV_EXT - EMU_RAW_AV_BASE)) {
        return false;
    }
    ah = emu_raw_ah(qp, &av, ext);
    if (ah == NULL) {
        return false;
    }
    dqp           = be32toh(av.dqp_dct) & 0xffffff;
    route         = emu_ah_route((emu_ah_t *)ah);
    wr->dest.ah   = route->soft;
    wr->dest.dctn = emu_qpn_at(route->qpn_base, dqp);
    if (qp->kind == EMU_QP_UD) {
        qkey            = be32toh(av.key.qkey.qkey);
        qkey            = (qkey & 0x80000000u) ? qp->ud_qkey : qkey;
        wr->dest.dc_key = emu_ud_key(qkey);
        wr->dest.dctn   = (dqp == 0xffffff) ? 0 : wr->dest.dctn;
    } else {
        wr->dest.dc_key = be64toh(av.key.dc_key);
    }
    qp->raw_sq->last_ah   = ah;
    qp->raw_sq->last_dctn = wr->dest.dctn;
    qp->raw_sq->last_key  = wr->dest.dc_key;
    qp->raw_sq->has_dest  = true;
    return true;
}

/* A WQE's inline data mixed with data segments, or more of it than the
 * soft QP takes inline: its pieces become sges into the WQE's slot of
 * registered scratch memory (made at the first) */
static bool emu_raw_mixed(emu_qp_t *qp, uint16_t idx, const uint8_t *inl,
                          dcx_sge_t *sge, uint32_t n)
{
    struct emu_raw_sq *sq = qp->raw_sq;
    size_t len            = (size_t)sq->wqe_cnt * EMU_RAW_SLOT;
    uint8_t *slot;
    uint32_t i;

    if ((sq->scratch == NULL) &&
        (((sq->scratch = calloc(1, len)) == NULL) ||
         (dcx_mr_reg(qp->pd->soft, sq->scratch, len, DCX_ACCESS_LOCAL_WRITE,
                     &sq->scratch_mr) != 0))) {
        free(sq->scratch);
        sq->scratch = NULL;
        return false;
    }
    slot = sq->scratch + (size_t)(idx & (sq->wqe_cnt - 1)) * EMU_RAW_SLOT;
    for (i = 0; i < n; ++i) {
        if (sge[i].lkey == EMU_RAW_INL_KEY) { /* addr: offset in inl */
            memcpy(slot + sge[i].addr, inl + sge[i].addr, sge[i].length);
            sge[i].addr = (uintptr_t)(slot + sge[i].addr);
            sge[i].lkey = sq->scratch_mr->lkey;
        }
    }
    return true;
}

/* The data segments and inline data that end the WQE, in order */
static bool emu_raw_data(emu_qp_t *qp, emu_raw_wqe_t *q, uint16_t idx,
                         dcx_send_wr_t *wr, dcx_sge_t *sge, uint8_t *inl)
{
    struct mlx5_wqe_data_seg ds;
    uint32_t bc, inl_len = 0, n = 0, pad, ndata = 0;

    while (q->left >= 16) {
        if (!emu_raw_take(q, &ds, 4) || (n == EMU_RAW_MAX_SGE)) {
            return false;
        }
        bc = be32toh(ds.byte_count);
        if (bc & MLX5_INLINE_SEG) {
            bc &= ~MLX5_INLINE_SEG;
            if ((inl_len + bc > EMU_RAW_SLOT) ||
                !emu_raw_take(q, inl + inl_len, bc)) {
                return false;
            }
            sge[n].addr   = inl_len; /* an offset until placed */
            sge[n].length = bc;
            sge[n].lkey   = EMU_RAW_INL_KEY;
            n += (bc > 0);
            inl_len += bc;
            pad = (16 - ((4 + bc) & 15)) & 15;
            pad = (pad > q->left) ? q->left : pad;
            q->off += pad;
            q->left -= pad;
            continue;
        }
        if (!emu_raw_take(q, (uint8_t *)&ds + 4, sizeof(ds) - 4)) {
            return false;
        }
        if ((be32toh(ds.lkey) == MLX5_INVALID_LKEY) && (bc == 0)) {
            continue; /* an empty slot */
        }
        sge[n].addr   = be64toh(ds.addr);
        sge[n].length = bc;
        sge[n].lkey   = be32toh(ds.lkey);
        ++n;
        ++ndata;
    }
    if ((ndata == 0) && (inl_len > 0) &&
        (inl_len + ((qp->kind == EMU_QP_UD) ? 40u : 0u) <=
         qp->soft->max_inline)) {
        /* inline only, as much as the soft QP takes inline: it copies it
         * at the post (a WQE may hold more than the QP's max_inline_data,
         * which then goes through the scratch slot) */
        sge[0].addr   = (uintptr_t)inl;
        sge[0].length = inl_len;
        sge[0].lkey   = 0;
        n             = 1;
        wr->flags |= DCX_SEND_INLINE;
    } else if ((inl_len > 0) && !emu_raw_mixed(qp, idx, inl, sge, n)) {
        return false;
    }
    wr->sg_list = sge;
    wr->num_sge = (uint8_t)n;
    return true;
}

/* The operands of an atomic (normal or masked) */
static bool emu_raw_atomic(emu_raw_wqe_t *q, uint8_t opcode, uint8_t opmod,
                           dcx_send_wr_t *wr)
{
    uint64_t v[4] = {0, 0, 0, 0};
    uint32_t w[4] = {0, 0, 0, 0};
    unsigned size;

    if ((opcode == MLX5_OPCODE_ATOMIC_CS) ||
        (opcode == MLX5_OPCODE_ATOMIC_FA)) {
        if (!emu_raw_take(q, v, 16)) {
            return false;
        }
        wr->opcode = (opcode == MLX5_OPCODE_ATOMIC_CS) ? DCX_WR_ATOMIC_CSWAP :
                                                         DCX_WR_ATOMIC_FADD;
        wr->swap   = be64toh(v[0]);
        wr->compare_add = (opcode == MLX5_OPCODE_ATOMIC_CS) ? be64toh(v[1]) :
                                                              be64toh(v[0]);
        return true;
    }
    if ((opmod & EMU_RAW_MASKED_SZ) == 0) {
        return false;
    }
    size            = 4u << (opmod & 0x7);
    wr->atomic_size = (uint8_t)size;
    wr->opcode      = (opcode == MLX5_OPCODE_ATOMIC_MASKED_CS) ?
                          DCX_WR_ATOMIC_MASKED_CSWAP :
                          DCX_WR_ATOMIC_MASKED_FADD;
    if (size == 4) {
        if (!emu_raw_take(q, w, 16)) {
            return false;
        }
        if (opcode == MLX5_OPCODE_ATOMIC_MASKED_CS) {
            wr->swap         = be32toh(w[0]);
            wr->compare_add  = be32toh(w[1]);
            wr->swap_mask    = be32toh(w[2]);
            wr->compare_mask = be32toh(w[3]);
        } else {
            wr->compare_add  = be32toh(w[0]);
            wr->compare_mask = be32toh(w[1]);
        }
        return true;
    }
    if (size != 8) {
        return false;
    }
    if (opcode == MLX5_OPCODE_ATOMIC_MASKED_CS) {
        if (!emu_raw_take(q, v, 32)) {
            return false;
        }
        wr->swap         = be64toh(v[0]);
        wr->compare_add  = be64toh(v[1]);
        wr->swap_mask    = be64toh(v[2]);
        wr->compare_mask = be64toh(v[3]);
    } else {
        if (!emu_raw_take(q, v, 16)) {
            return false;
        }
        wr->compare_add  = be64toh(v[0]);
        wr->compare_mask = be64toh(v[1]);
    }
    return true;
}

/* The operation of the WQE: false for one the device does not take */
static bool emu_raw_op(emu_qp_t *qp, emu_raw_wqe_t *q, uint8_t opcode,
                       uint8_t opmod, uint32_t imm, dcx_send_wr_t *wr)
{
    struct mlx5_wqe_raddr_seg ra;
    bool ud = (qp->kind == EMU_QP_UD);

    switch (opcode) {
    case MLX5_OPCODE_SEND:
    case MLX5_OPCODE_SEND_IMM:
        wr->opcode = (opcode == MLX5_OPCODE_SEND) ? DCX_WR_SEND :
                                                    DCX_WR_SEND_IMM;
        wr->imm    = be32toh(imm);
        return true;
    case MLX5_OPCODE_RDMA_WRITE:
    case MLX5_OPCODE_RDMA_WRITE_IMM:
    case MLX5_OPCODE_RDMA_READ:
    case MLX5_OPCODE_ATOMIC_CS:
    case MLX5_OPCODE_ATOMIC_FA:
    case MLX5_OPCODE_ATOMIC_MASKED_CS:
    case MLX5_OPCODE_ATOMIC_MASKED_FA:
        if (ud || !emu_raw_take(q, &ra, sizeof(ra))) {
            return false;
        }
        wr->remote_addr = be64toh(ra.raddr);
        wr->rkey        = be32toh(ra.rkey);
        if (opcode == MLX5_OPCODE_RDMA_READ) {
            wr->opcode = DCX_WR_RDMA_READ;
            return true;
        }
        if ((opcode == MLX5_OPCODE_RDMA_WRITE) ||
            (opcode == MLX5_OPCODE_RDMA_WRITE_IMM)) {
            wr->opcode = (opcode == MLX5_OPCODE_RDMA_WRITE) ?
                             DCX_WR_RDMA_WRITE :
                             DCX_WR_RDMA_WRITE_IMM;
            wr->imm    = be32toh(imm);
            return true;
        }
        return emu_raw_atomic(q, opcode, opmod, wr);
    default:
        return false;
    }
}

/* A WQE the device does not take: it completes in error in its turn, the
 * QP going to ERR (the soft QP's failing post), or at once when the QP
 * has no destination to queue it behind.  why: what is wrong with it, for
 * the log line (NULL: logged already) */
static int emu_raw_refuse(emu_qp_t *qp, dcx_send_wr_t *wr, uint16_t idx,
                          uint8_t opcode, const char *why)
{
    const char *name      = qp->qpx.qp_base.context->device->name;
    struct emu_raw_sq *sq = qp->raw_sq;

    if (why != NULL) {
        emu_error("%s: qp 0x%x: WQE %u (opcode 0x%x) is not one the device "
                  "takes (%s); it completes with LOCAL_QP_OP_ERR",
                  name, qp->qpx.qp_base.qp_num, idx, opcode, why);
    }
    wr->opcode  = DCX_WR_SEND;
    wr->num_sge = 0;
    wr->flags   = DCX_SEND_SIGNALED;
    if (qp->kind == EMU_QP_RC) {
        emu_rc_dest(qp, wr);
    } else if (sq->has_dest) {
        const emu_route_t *route = emu_ah_route((emu_ah_t *)sq->last_ah);

        wr->dest.ah     = route->soft;
        wr->dest.dctn   = sq->last_dctn;
        wr->dest.dc_key = sq->last_key;
    } else {
        emu_raw_cq_req(qp->send_cq, qp->qpx.qp_base.qp_num, idx, 0xff);
        return 0;
    }
    return dcx_soft_qp_post_failing(qp->soft, wr, DCX_WC_LOC_QP_OP_ERR);
}

/* A NOP: a zero-length RDMA WRITE to where the QP sends (it completes in
 * order with the WQEs before it), or at once when it has sent nothing */
static bool emu_raw_nop(emu_qp_t *qp, dcx_send_wr_t *wr, uint16_t idx)
{
    struct emu_raw_sq *sq = qp->raw_sq;

    wr->opcode  = DCX_WR_RDMA_WRITE;
    wr->num_sge = 0;
    if (qp->kind == EMU_QP_RC) {
        emu_rc_dest(qp, wr);
        return true;
    }
    if (!sq->has_dest || (qp->kind == EMU_QP_UD)) {
        if (wr->flags & DCX_SEND_SIGNALED) {
            emu_raw_cq_req(qp->send_cq, qp->qpx.qp_base.qp_num, idx,
                           MLX5_OPCODE_NOP);
        }
        return false;
    }
    wr->dest.ah     = emu_ah_route((emu_ah_t *)sq->last_ah)->soft;
    wr->dest.dctn   = sq->last_dctn;
    wr->dest.dc_key = sq->last_key;
    return true;
}

/* A 4-byte masked atomic: its result buffer noted for the completion,
 * which byte-swaps it; signalled so that there is one (a WQE that asked
 * for none gets no CQE: EMU_RAW_WR_SILENT) */
static bool emu_raw_be4(emu_qp_t *qp, dcx_send_wr_t *wr, uint16_t idx)
{
    struct emu_raw_sq *sq = qp->raw_sq;

    if (sq->be4 == NULL) {
        sq->be4 = calloc(sq->wqe_cnt, sizeof(*sq->be4));
        if (sq->be4 == NULL) {
            return false;
        }
    }
    sq->be4[idx & (sq->wqe_cnt - 1)] = wr->sg_list[0].addr;
    wr->wr_id |= EMU_RAW_WR_BE4;
    if (!(wr->flags & DCX_SEND_SIGNALED)) {
        wr->wr_id |= EMU_RAW_WR_SILENT;
        wr->flags |= DCX_SEND_SIGNALED;
    }
    return true;
}

/* A list operation (a command QP's): run on the tag list of the QP's XRQ
 * at once, for it sends nothing; its completion is the XRQ's (when the
 * tag-matching segment asks), and a CQE of the send queue's only when the
 * control segment asks */
static int emu_raw_tm(emu_qp_t *qp, emu_raw_wqe_t *q, dcx_send_wr_t *wr,
                      uint16_t idx)
{
    struct mlx5_wqe_data_seg data;
    struct mlx5_wqe_tm_seg seg;
    bool has_data;
    int ret;

    if (!emu_raw_take(q, &seg, sizeof(seg))) {
        return emu_raw_refuse(qp, wr, idx, MLX5_OPCODE_TAG_MATCHING,
                              "no tag-matching segment");
    }
    has_data = emu_raw_take(q, &data, sizeof(data));
    ret      = emu_xrq_list_op(qp, &seg, has_data ? &data : NULL);
    if (ret == EAGAIN) {
        return EAGAIN;
    }
    if (ret != 0) {
        /* the list said why, and that it completes in error */
        return emu_raw_refuse(qp, wr, idx, MLX5_OPCODE_TAG_MATCHING, NULL);
    }
    if (wr->flags & DCX_SEND_SIGNALED) {
        emu_raw_cq_req(qp->send_cq, qp->qpx.qp_base.qp_num, idx,
                       MLX5_OPCODE_TAG_MATCHING);
    }
    return 0;
}

/* Reads and posts the WQE at the queue's index; EAGAIN when the soft send
 * queue is full (the WQE is taken again later) */
static int emu_raw_sq_one(emu_qp_t *qp, uint16_t *nbb_p)
{
    struct emu_raw_sq *sq = qp->raw_sq;
    dcx_sge_t sge[EMU_RAW_MAX_SGE + 1];
    uint8_t inl[EMU_RAW_MAX_INL + 48];
    struct mlx5_wqe_ctrl_seg ctrl;
    emu_raw_wqe_t q;
    dcx_send_wr_t wr;
    uint32_t w0, ds;
    const char *why;
    uint8_t opcode, opmod;
    uint16_t idx;
    bool ok;
    int ret;

    q.sq   = sq;
    q.off  = (uint32_t)(sq->ci & (sq->wqe_cnt - 1)) * MLX5_SEND_WQE_BB;
    q.left = MLX5_SEND_WQE_BB;
    emu_raw_take(&q, &ctrl, sizeof(ctrl));
    w0     = be32toh(ctrl.opmod_idx_opcode);
    opcode = w0 & 0xff;
    opmod  = w0 >> 24;
    idx    = (w0 >> 8) & 0xffff;
    ds     = be32toh(ctrl.qpn_ds) & 0x3f;
    ds     = (ds == 0) ? 1 : ds;
    q.left = ds * 16 - sizeof(ctrl);
    *nbb_p = (uint16_t)((ds * 16 + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB);

    memset(&wr, 0, sizeof(wr));
    wr.wr_id = idx | ((uint64_t)opcode << 16);
    wr.flags = ((ctrl.fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) ? DCX_SEND_SIGNALED :
                                                            0) |
               ((ctrl.fm_ce_se & EMU_RAW_FENCE) ? DCX_SEND_FENCE : 0) |
               ((ctrl.fm_ce_se & MLX5_WQE_CTRL_SOLICITED) ? DCX_SEND_SOLICITED :
                                                            0);
    if (qp->num_streams > 0) {
        /* a DCI with streams: the control segment names the WQE's */
        wr.stream_id = (uint16_t)(be16toh(ctrl.dci_stream_channel_id) &
                                  (qp->num_streams - 1));
    }
    if (opcode == MLX5_OPCODE_NOP) {
        if (!emu_raw_nop(qp, &wr, idx)) {
            return 0;
        }
        ret = dcx_qp_post_send(qp->soft, &wr);
        return (ret == ENOMEM) ? EAGAIN : 0;
    }
    if ((opcode == MLX5_OPCODE_TAG_MATCHING) && (qp->kind == EMU_QP_RC)) {
        return emu_raw_tm(qp, &q, &wr, idx);
    }
    ok = true;
    if ((qp->kind == EMU_QP_DCI) || (qp->kind == EMU_QP_UD)) {
        ok = emu_raw_dgram(qp, &q, &wr);
    } else {
        emu_rc_dest(qp, &wr);
    }
    why = !ok ? "its address vector" :
          !emu_raw_op(qp, &q, opcode, opmod, ctrl.imm, &wr) ?
                "its operation" :
          !emu_raw_data(qp, &q, idx, &wr, sge + 1, inl + 40) ?
                "its data segments" :
          ((qp->kind == EMU_QP_UD) && !emu_ud_raw_grh(qp, &wr, sge, inl, idx)) ?
                "its length (the MTU)" :
                NULL;
    ok  = (why == NULL);
    if (!ok) {
        return emu_raw_refuse(qp, &wr, idx, opcode, why);
    }
    if ((wr.opcode >= DCX_WR_ATOMIC_MASKED_FADD) && (wr.atomic_size == 4) &&
        !emu_raw_be4(qp, &wr, idx)) {
        return emu_raw_refuse(qp, &wr, idx, opcode, "out of memory");
    }
    ret = dcx_qp_post_send(qp->soft, &wr);
    if (ret == ENOMEM) {
        return EAGAIN;
    }
    if (ret != 0) {
        return emu_raw_refuse(qp, &wr, idx, opcode, "the soft device");
    }
    if (wr.flags & DCX_SEND_SIGNALED) {
        qp->raw_sq->waiting  = true;
        qp->raw_sq->wait_idx = idx;
    }
    return 0;
}

unsigned emu_raw_sq_run(emu_qp_t *qp)
{
    struct emu_raw_sq *sq = qp->raw_sq;
    uint16_t pi, nbb;
    unsigned n = 0;

    pi = (uint16_t)be32toh(sq->dbrec[MLX5_SND_DBR]);
    __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the WQEs before the record */
    sq->blocked = false;
    while (sq->ci != pi) {
        if (emu_raw_sq_one(qp, &nbb) == EAGAIN) {
            sq->blocked = true;
            break;
        }
        sq->ci += nbb;
        ++n;
    }
    return n;
}

void emu_raw_sq_take_rung(emu_qp_t *qp)
{
    pthread_mutex_lock(&emu_raw_lock);
    if ((qp->raw_sq != NULL) && (qp->soft != NULL) &&
        (qp->soft->state == DCX_QPS_RTS)) {
        emu_raw_sq_run(qp);
        if (qp->send_cq->raw != NULL) {
            /* and sends them: the soft device transmits as its CQ is
             * polled */
            emu_raw_cq_run(qp->send_cq);
        }
    }
    pthread_mutex_unlock(&emu_raw_lock);
}

void emu_raw_sq_reset(emu_qp_t *qp)
{
    pthread_mutex_lock(&emu_raw_lock);
    qp->raw_sq->ci                  = 0;
    qp->raw_sq->dbrec[MLX5_SND_DBR] = 0;
    qp->raw_sq->dbrec[MLX5_RCV_DBR] = 0;
    pthread_mutex_unlock(&emu_raw_lock);
}
