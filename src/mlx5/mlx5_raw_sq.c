/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: a DCI's work requests written straight into its send
 * queue, as the HCA reads them (mlx5dv.h's segments), and announced by
 * the doorbell record and a write to the BlueFlame register.
 *
 * A WQE is the control segment, the DC address vector (the AH's, with
 * the destination DCT and key), a remote-address segment for RDMA and
 * atomics, an atomic segment, then the data: pointers to registered
 * memory, or the bytes themselves inline.  It takes whole 64-byte basic
 * blocks and may wrap past the queue's end; it is then built aside and
 * copied in two pieces.  A one-block WQE is copied whole to the
 * BlueFlame register (the HCA need not read it from memory); a longer
 * one rings with its first eight bytes.
 *
 * Accounting stays the ring's (mlx5_pure.h): one slot per WR, at most
 * max_send_wr outstanding.  libmlx5 sized the queue for that many WQEs of
 * its largest kind, so a WQE no larger fits whatever is outstanding; the
 * most blocks one may take is checked at post.  Each WQE's first block
 * records the WR's sequence, which its completion (the CQE's WQE
 * counter) finds again.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_dci.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>

#define DCX_MLX5_BB      64u
#define DCX_MLX5_WQE_MAX 1024u /* the most any WQE of a DCI takes */
#define DCX_MLX5_DS      16u

/* The HCA's opcode of a WR (dcx_mlx5_dci_check let only these by) */
static const uint8_t dcx_mlx5_raw_opcode[DCX_WR_OPCODE_LAST] = {
    [DCX_WR_SEND]                = MLX5_OPCODE_SEND,
    [DCX_WR_SEND_IMM]            = MLX5_OPCODE_SEND_IMM,
    [DCX_WR_RDMA_WRITE]          = MLX5_OPCODE_RDMA_WRITE,
    [DCX_WR_RDMA_WRITE_IMM]      = MLX5_OPCODE_RDMA_WRITE_IMM,
    [DCX_WR_RDMA_READ]           = MLX5_OPCODE_RDMA_READ,
    [DCX_WR_ATOMIC_FADD]         = MLX5_OPCODE_ATOMIC_FA,
    [DCX_WR_ATOMIC_CSWAP]        = MLX5_OPCODE_ATOMIC_CS,
    [DCX_WR_ATOMIC_MASKED_FADD]  = MLX5_OPCODE_ATOMIC_MASKED_FA,
    [DCX_WR_ATOMIC_MASKED_CSWAP] = MLX5_OPCODE_ATOMIC_MASKED_CS};

/* The control segment's opmod of a masked atomic: 8 | log2(size) - 2 */
#define DCX_MLX5_OPMOD_MASKED(_size) (0x08u | ((_size) >> 3))

/* The control segment's fm_ce_se byte of DCX_SEND_* flags (SIGNALED 1,
 * INLINE 2, FENCE 4, SOLICITED 8) */
#define DCX_MLX5_FM(_f)                                                   \
    (uint8_t)((((_f)&DCX_SEND_SIGNALED) ? MLX5_WQE_CTRL_CQ_UPDATE : 0) |  \
              (((_f)&DCX_SEND_SOLICITED) ? MLX5_WQE_CTRL_SOLICITED : 0) | \
              (((_f)&DCX_SEND_FENCE) ? MLX5_WQE_CTRL_FENCE : 0))
static const uint8_t dcx_mlx5_raw_fm_ce_se[16] = {
    DCX_MLX5_FM(0),  DCX_MLX5_FM(1),  DCX_MLX5_FM(2),  DCX_MLX5_FM(3),
    DCX_MLX5_FM(4),  DCX_MLX5_FM(5),  DCX_MLX5_FM(6),  DCX_MLX5_FM(7),
    DCX_MLX5_FM(8),  DCX_MLX5_FM(9),  DCX_MLX5_FM(10), DCX_MLX5_FM(11),
    DCX_MLX5_FM(12), DCX_MLX5_FM(13), DCX_MLX5_FM(14), DCX_MLX5_FM(15)};

/* The bytes of a WR's atomic segment: 16, or 32 for a 64-bit masked
 * compare-swap (its four operands) */
static inline uint32_t dcx_mlx5_raw_atomic_len(const dcx_send_wr_t *wr)
{
    return ((wr->opcode == DCX_WR_ATOMIC_MASKED_CSWAP) &&
            (wr->atomic_size == 8)) ?
               32 :
               16;
}

/* Writes the atomic segment (operands in network order); its length */
static uint32_t dcx_mlx5_raw_atomic(uint8_t *p, const dcx_send_wr_t *wr)
{
    uint64_t *v = (uint64_t *)p;
    uint32_t *w = (uint32_t *)p;

    switch (wr->opcode) {
    case DCX_WR_ATOMIC_FADD:
        v[0] = htobe64(wr->compare_add);
        v[1] = 0;
        break;
    case DCX_WR_ATOMIC_CSWAP:
        v[0] = htobe64(wr->swap);
        v[1] = htobe64(wr->compare_add);
        break;
    case DCX_WR_ATOMIC_MASKED_FADD:
        if (wr->atomic_size == 8) {
            v[0] = htobe64(wr->compare_add);  /* add */
            v[1] = htobe64(wr->compare_mask); /* field boundaries */
        } else {
            w[0] = htobe32((uint32_t)wr->compare_add);
            w[1] = htobe32((uint32_t)wr->compare_mask);
            w[2] = 0;
            w[3] = 0;
        }
        break;
    default: /* DCX_WR_ATOMIC_MASKED_CSWAP */
        if (wr->atomic_size == 8) {
            v[0] = htobe64(wr->swap);
            v[1] = htobe64(wr->compare_add);
            v[2] = htobe64(wr->swap_mask);
            v[3] = htobe64(wr->compare_mask);
        } else {
            w[0] = htobe32((uint32_t)wr->swap);
            w[1] = htobe32((uint32_t)wr->compare_add);
            w[2] = htobe32((uint32_t)wr->swap_mask);
            w[3] = htobe32((uint32_t)wr->compare_mask);
        }
        break;
    }
    return dcx_mlx5_raw_atomic_len(wr);
}

/* len bytes from src to dst, the short ones without a call: an inline
 * WQE's pieces are mostly a few bytes (an AM's header, a small payload),
 * where the C library's copy costs more in its call and its size dispatch
 * than in the copy.  Nothing is read for len 0 (src may be anything). */
static inline __attribute__((always_inline)) void
dcx_mlx5_raw_copy(uint8_t *dst, const uint8_t *src, uint32_t len)
{
    uint64_t a, b;
    uint32_t c, d;

    if (len > 16) {
        memcpy(dst, src, len);
    } else if (len >= 8) { /* two words, overlapping when len < 16 */
        memcpy(&a, src, sizeof(a));
        memcpy(&b, src + len - sizeof(b), sizeof(b));
        memcpy(dst, &a, sizeof(a));
        memcpy(dst + len - sizeof(b), &b, sizeof(b));
    } else if (len >= 4) {
        memcpy(&c, src, sizeof(c));
        memcpy(&d, src + len - sizeof(d), sizeof(d));
        memcpy(dst, &c, sizeof(c));
        memcpy(dst + len - sizeof(d), &d, sizeof(d));
    } else {
        while (len-- > 0) {
            *dst++ = *src++;
        }
    }
}

/* A gather list of one non-empty piece, the shape of nearly every WR that
 * is not inline: one data segment, written and counted without a loop */
static inline int dcx_mlx5_raw_one_sge(const dcx_send_wr_t *wr)
{
    return (wr->num_sge == 1) && (wr->sg_list[0].length != 0);
}

/* The segments after the address vector (dcx_mlx5_raw_ds() counts them) */
static inline __attribute__((always_inline)) void
dcx_mlx5_raw_body(uint8_t *p, const dcx_send_wr_t *wr, uint32_t total)
{
    struct mlx5_wqe_raddr_seg *ra;
    struct mlx5_wqe_inl_data_seg *inl;
    struct mlx5_wqe_data_seg *ds;
    uint8_t *data;
    unsigned i;

    if (wr->opcode >= DCX_WR_RDMA_WRITE) {
        ra           = (struct mlx5_wqe_raddr_seg *)p;
        ra->raddr    = htobe64(wr->remote_addr);
        ra->rkey     = htobe32(wr->rkey);
        ra->reserved = 0;
        p += sizeof(*ra);
    }
    if (wr->opcode >= DCX_WR_ATOMIC_FADD) {
        p += dcx_mlx5_raw_atomic(p, wr);
    }
    if (wr->flags & DCX_SEND_INLINE) {
        inl             = (struct mlx5_wqe_inl_data_seg *)p;
        inl->byte_count = htobe32(total | MLX5_INLINE_SEG);
        data            = p + sizeof(*inl);
        for (i = 0; i < wr->num_sge; ++i) {
            /* a zero-length sge's address may be anything, NULL too */
            dcx_mlx5_raw_copy(data,
                              (const uint8_t *)(uintptr_t)wr->sg_list[i].addr,
                              wr->sg_list[i].length);
            data += wr->sg_list[i].length;
        }
        return;
    }
    ds = (struct mlx5_wqe_data_seg *)p;
    if (__builtin_expect(dcx_mlx5_raw_one_sge(wr), 1)) {
        ds->byte_count = htobe32(wr->sg_list[0].length);
        ds->lkey       = htobe32(wr->sg_list[0].lkey);
        ds->addr       = htobe64(wr->sg_list[0].addr);
        return;
    }
    for (i = 0; i < wr->num_sge; ++i) {
        if (wr->sg_list[i].length == 0) {
            continue; /* a zero byte count would mean 2 GiB to the HCA */
        }
        ds->byte_count = htobe32(wr->sg_list[i].length);
        ds->lkey       = htobe32(wr->sg_list[i].lkey);
        ds->addr       = htobe64(wr->sg_list[i].addr);
        ++ds;
    }
}

/* The 16-byte units of the WR's WQE */
static inline uint32_t dcx_mlx5_raw_ds(const dcx_send_wr_t *wr, uint32_t total)
{
    uint32_t bytes = sizeof(struct mlx5_wqe_ctrl_seg) +
                     sizeof(struct mlx5_wqe_datagram_seg);
    unsigned i;

    bytes += (wr->opcode >= DCX_WR_RDMA_WRITE) ?
                 sizeof(struct mlx5_wqe_raddr_seg) :
                 0;
    bytes += (wr->opcode >= DCX_WR_ATOMIC_FADD) ? dcx_mlx5_raw_atomic_len(wr) :
                                                  0;
    if (wr->flags & DCX_SEND_INLINE) {
        bytes += (sizeof(struct mlx5_wqe_inl_data_seg) + total + DCX_MLX5_DS -
                  1) &
                 ~(DCX_MLX5_DS - 1);
    } else if (__builtin_expect(dcx_mlx5_raw_one_sge(wr), 1)) {
        bytes += DCX_MLX5_DS;
    } else {
        for (i = 0; i < wr->num_sge; ++i) {
            bytes += (wr->sg_list[i].length != 0) ? DCX_MLX5_DS : 0;
        }
    }
    return bytes / DCX_MLX5_DS;
}

/* Copies a WQE built aside into the queue, wrapping at its end */
static void dcx_mlx5_raw_wrap_copy(dcx_mlx5_raw_sq_t *sq, const uint8_t *wqe,
                                   uint32_t bbs)
{
    uint32_t at    = sq->pi & (sq->bb_cnt - 1);
    uint32_t first = sq->bb_cnt - at;

    first = (first < bbs) ? first : bbs;
    memcpy(sq->buf + (size_t)at * DCX_MLX5_BB, wqe, first * DCX_MLX5_BB);
    memcpy(sq->buf, wqe + first * DCX_MLX5_BB, (bbs - first) * DCX_MLX5_BB);
}

/* The doorbell record, then the BlueFlame register: the whole WQE when it
 * is one block, else its first eight bytes */
static inline void dcx_mlx5_raw_ring(dcx_mlx5_raw_sq_t *sq, const uint8_t *wqe,
                                     uint32_t bbs, uint64_t first8)
{
    volatile uint64_t *bf = (volatile uint64_t *)(sq->bf + sq->bf_off);
    const uint64_t *src   = (const uint64_t *)wqe;
    unsigned i;

    __atomic_thread_fence(__ATOMIC_RELEASE); /* the WQE before the record */
    sq->dbrec[MLX5_SND_DBR] = htobe32(sq->pi);
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the record before the bell */
    if (bbs == 1) {
        for (i = 0; i < DCX_MLX5_BB / 8; ++i) {
            bf[i] = src[i];
        }
    } else {
        bf[0] = first8;
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* flushed out of the CPU */
    sq->bf_off ^= sq->bf_size;
}

/* Writes the WQE of wr at wqe (ds 16-byte units) */
static inline __attribute__((always_inline)) void
dcx_mlx5_raw_build(const dcx_mlx5_qp_t *qp, uint8_t *wqe,
                   const dcx_send_wr_t *wr, uint32_t total, uint32_t ds)
{
    const dcx_mlx5_raw_sq_t *sq    = qp->raw;
    const dcx_mlx5_ah_t *ah        = (const dcx_mlx5_ah_t *)wr->dest.ah;
    struct mlx5_wqe_ctrl_seg *ctrl = (struct mlx5_wqe_ctrl_seg *)wqe;
    struct mlx5_wqe_datagram_seg *dg;

    dg = (struct mlx5_wqe_datagram_seg *)(wqe + sizeof(*ctrl));
    memcpy(&dg->av, &ah->av, sizeof(dg->av));
    dg->av.key.dc_key = htobe64(wr->dest.dc_key);
    dg->av.dqp_dct |= htobe32(wr->dest.dctn | MLX5_EXTENDED_UD_AV);
    dcx_mlx5_raw_body(wqe + sizeof(*ctrl) + sizeof(*dg), wr, total);

    ctrl->opmod_idx_opcode = htobe32(((uint32_t)sq->pi << 8) |
                                     dcx_mlx5_raw_opcode[wr->opcode]);
    if (wr->opcode >= DCX_WR_ATOMIC_MASKED_FADD) {
        ctrl->opmod_idx_opcode |=
            htobe32(DCX_MLX5_OPMOD_MASKED((uint32_t)wr->atomic_size) << 24);
    }
    ctrl->qpn_ds                = htobe32((qp->super.qp_num << 8) | ds);
    ctrl->signature             = 0;
    ctrl->dci_stream_channel_id = htobe16(wr->stream_id & sq->stream_mask);
    ctrl->fm_ce_se              = dcx_mlx5_raw_fm_ce_se[wr->flags & 0xf];
    ctrl->imm                   = htobe32(wr->imm);
}

/* A WQE that passes the queue's end: built aside, copied in two pieces
 * (out of line: the common post keeps a small frame) */
static void __attribute__((noinline))
dcx_mlx5_raw_build_wrapped(const dcx_mlx5_qp_t *qp, const dcx_send_wr_t *wr,
                           uint32_t total, uint32_t ds, uint32_t bbs,
                           uint64_t *first8)
{
    uint8_t aside[DCX_MLX5_WQE_MAX] __attribute__((aligned(64)));

    dcx_mlx5_raw_build(qp, aside, wr, total, ds);
    dcx_mlx5_raw_wrap_copy(qp->raw, aside, bbs);
    memcpy(first8, aside, sizeof(*first8));
}

int dcx_mlx5_raw_dci_post_send(dcx_qp_t *super, const dcx_send_wr_t *wr)
{
    dcx_mlx5_qp_t *qp     = (dcx_mlx5_qp_t *)super;
    dcx_mlx5_raw_sq_t *sq = qp->raw;
    dcx_mlx5_ring_t *ring;
    uint32_t total, ds, bbs, at;
    uint64_t first8;
    uint8_t *wqe;
    int ret;

    ret = dcx_mlx5_dci_validate(qp, wr, &total);
    if (ret != 0) {
        return ret;
    }
    ds  = dcx_mlx5_raw_ds(wr, total);
    bbs = (ds * DCX_MLX5_DS + DCX_MLX5_BB - 1) / DCX_MLX5_BB;
    if (__builtin_expect(bbs > sq->max_bb, 0)) {
        dcx_error("%s: dci 0x%x: a WQE of %u blocks, the queue holds WQEs of "
                  "%u",
                  super->dev->caps.name, super->qp_num, bbs, sq->max_bb);
        return EINVAL;
    }
    at  = sq->pi & (sq->bb_cnt - 1);
    wqe = sq->buf + (size_t)at * DCX_MLX5_BB;
    if (__builtin_expect(at + bbs <= sq->bb_cnt, 1)) {
        dcx_mlx5_raw_build(qp, wqe, wr, total, ds);
        first8 = *(const uint64_t *)wqe;
    } else {
        dcx_mlx5_raw_build_wrapped(qp, wr, total, ds, bbs, &first8);
    }

    if (__builtin_expect(wr->opcode >= DCX_WR_ATOMIC_MASKED_FADD, 0) &&
        (sq->be4 != NULL)) {
        sq->be4[at] = (wr->atomic_size == 4) ? wr->sg_list[0].addr : 0;
    }
    ring        = dcx_mlx5_dci_ring(qp, wr);
    sq->seq[at] = ring->head;
    dcx_mlx5_ring_push(ring, wr->wr_id, wr->opcode,
                       wr->flags & DCX_SEND_SIGNALED);
    sq->pi = (uint16_t)(sq->pi + bbs);
    dcx_mlx5_raw_ring(sq, wqe, bbs, first8);
    return 0;
}

int dcx_mlx5_raw_sq_init(dcx_mlx5_qp_t *qp)
{
    const char *name = qp->super.dev->caps.name;
    dcx_mlx5_raw_sq_t *sq;
    struct mlx5dv_qp dv;
    struct mlx5dv_obj obj;
    uint32_t wrs;
    bool be4;
    int ret;

    memset(&dv, 0, sizeof(dv));
    memset(&obj, 0, sizeof(obj));
    obj.qp.in  = qp->qp;
    obj.qp.out = &dv;
    ret        = mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP);
    if (ret != 0) {
        dcx_error("%s: dci 0x%x: mlx5dv_init_obj failed: %s", name,
                  qp->super.qp_num, strerror(ret));
        return ret;
    }
    wrs = qp->super.max_send_wr *
          ((qp->super.num_streams > 0) ? qp->super.num_streams : 1);
    if ((dv.sq.stride != DCX_MLX5_BB) || (dv.sq.wqe_cnt == 0) ||
        (dv.sq.wqe_cnt & (dv.sq.wqe_cnt - 1)) || (dv.sq.wqe_cnt < wrs) ||
        (dv.bf.reg == NULL)) {
        dcx_error("%s: dci 0x%x: a send queue of %u blocks of %u bytes for "
                  "%u WRs cannot be written raw",
                  name, qp->super.qp_num, dv.sq.wqe_cnt, dv.sq.stride, wrs);
        return EINVAL;
    }
    be4     = dcx_mlx5_dev(qp->super.dev)->atomic4_be;
    sq      = calloc(1, sizeof(*sq));
    qp->raw = sq;
    if (sq != NULL) {
        sq->seq = calloc(dv.sq.wqe_cnt, sizeof(*sq->seq));
        sq->be4 = be4 ? calloc(dv.sq.wqe_cnt, sizeof(*sq->be4)) : NULL;
    }
    if ((sq == NULL) || (sq->seq == NULL) || (be4 && (sq->be4 == NULL))) {
        dcx_mlx5_raw_sq_free(qp);
        dcx_error("%s: dci 0x%x: out of memory", name, qp->super.qp_num);
        return ENOMEM;
    }
    sq->buf         = dv.sq.buf;
    sq->bb_cnt      = dv.sq.wqe_cnt;
    sq->max_bb      = dv.sq.wqe_cnt / wrs;
    sq->max_bb      = (sq->max_bb > DCX_MLX5_WQE_MAX / DCX_MLX5_BB) ?
                          DCX_MLX5_WQE_MAX / DCX_MLX5_BB :
                          sq->max_bb;
    sq->dbrec       = dv.dbrec;
    sq->bf          = dv.bf.reg;
    sq->bf_size     = dv.bf.size;
    /* a DCI without streams carries stream 0 */
    sq->stream_mask = (qp->super.num_streams > 0) ? 0xffff : 0;
    return 0;
}

void dcx_mlx5_raw_sq_reset(dcx_mlx5_qp_t *qp)
{
    if (qp->raw != NULL) {
        qp->raw->pi = 0; /* libmlx5 cleared the doorbell record */
    }
}

void dcx_mlx5_raw_sq_be4_done(dcx_mlx5_qp_t *qp, uint16_t wqe_counter)
{
    dcx_mlx5_raw_sq_t *sq = qp->raw;
    uint32_t at           = wqe_counter & (sq->bb_cnt - 1);
    uint32_t v;

    if (sq->be4[at] != 0) {
        memcpy(&v, (const void *)(uintptr_t)sq->be4[at], sizeof(v));
        v = be32toh(v);
        memcpy((void *)(uintptr_t)sq->be4[at], &v, sizeof(v));
        sq->be4[at] = 0;
    }
}

void dcx_mlx5_raw_sq_free(dcx_mlx5_qp_t *qp)
{
    if (qp->raw != NULL) {
        free(qp->raw->be4);
        free(qp->raw->seq);
        free(qp->raw);
        qp->raw = NULL;
    }
}
