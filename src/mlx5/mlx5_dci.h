/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: what every DCI post checks, whichever way it writes
 * its WQE (the ibv_wr_* builders in mlx5_qp.c, or the queue memory in
 * mlx5_raw_sq.c).
 */
#ifndef DCX_MLX5_DCI_H_
#define DCX_MLX5_DCI_H_

#include "mlx5/mlx5_int.h"

#include <errno.h>

/* The ring a WR goes to: the DCI's, or its stream's */
static inline dcx_mlx5_ring_t *dcx_mlx5_dci_ring(dcx_mlx5_qp_t *qp,
                                                 const dcx_send_wr_t *wr)
{
    return (qp->super.num_streams > 0) ? &qp->stream_rings[wr->stream_id] :
                                         &qp->ring;
}

/* A WR's stream is not one of the DCI's (any WR of a DCI without streams
 * goes to its one ring) */
static inline int dcx_mlx5_dci_stream_bad(const dcx_mlx5_qp_t *qp,
                                          const dcx_send_wr_t *wr)
{
    return (qp->super.num_streams > 0) &&
           (wr->stream_id >= qp->super.num_streams);
}

/* A WR's stream must be one of the DCI's: 0, or EINVAL and one line */
static inline int dcx_mlx5_dci_stream_check(dcx_mlx5_qp_t *qp,
                                            const dcx_send_wr_t *wr)
{
    if (dcx_mlx5_dci_stream_bad(qp, wr)) {
        dcx_error("%s: dci 0x%x: stream %u, the DCI has %u streams",
                  qp->super.dev->caps.name, qp->super.qp_num, wr->stream_id,
                  qp->super.num_streams);
        return EINVAL;
    }
    return 0;
}

/* The WR's ring is full (its stream's, with streams): normal back-pressure */
static inline int dcx_mlx5_dci_full(dcx_mlx5_qp_t *qp, const dcx_send_wr_t *wr)
{
    if (dcx_mlx5_ring_full(dcx_mlx5_dci_ring(qp, wr))) {
        dcx_trace("%s: dci 0x%x: send queue full (%u, stream %u)",
                  qp->super.dev->caps.name, qp->super.qp_num,
                  qp->super.max_send_wr, wr->stream_id);
        return 1;
    }
    return 0;
}

/* The WR's opcode is one the DCI sends.  A masked atomic passes here;
 * whether the device offers it at its size is the atomic check's
 * (caps.atomic_flags) */
static inline int dcx_mlx5_dci_op_ok(const dcx_mlx5_qp_t *qp,
                                     const dcx_send_wr_t *wr)
{
    uint64_t op = (wr->opcode < DCX_WR_OPCODE_LAST) ?
                      dcx_mlx5_wr_send_op((dcx_wr_opcode_t)wr->opcode) :
                      0;

    return ((dcx_mlx5_dev(qp->super.dev)->dci_send_ops |
             DCX_MLX5_SEND_OP_MASKED) &
            op) != 0;
}

/* Why dcx_mlx5_dci_check refused wr: one line, EINVAL.  Out of line and
 * cold, so that the check's caller keeps a small frame */
static __attribute__((noinline, cold, unused)) int
dcx_mlx5_dci_check_fail(dcx_mlx5_qp_t *qp, const dcx_send_wr_t *wr)
{
    const char *name = qp->super.dev->caps.name;

    if (!dcx_mlx5_dci_op_ok(qp, wr)) {
        dcx_error("%s: dci 0x%x: opcode %u is not supported", name,
                  qp->super.qp_num, wr->opcode);
    } else if (wr->num_sge > qp->super.max_send_sge) {
        dcx_error("%s: dci 0x%x: %u sge, at most %u", name, qp->super.qp_num,
                  wr->num_sge, qp->super.max_send_sge);
    } else if (wr->dest.ah == NULL) {
        dcx_error("%s: dci 0x%x: WR without a destination", name,
                  qp->super.qp_num);
    } else {
        dcx_mlx5_dci_stream_check(qp, wr);
    }
    return EINVAL;
}

/* The WR's opcode, sge count, destination and stream are the DCI's to
 * take (one test of them all: a refusal finds its reason out of line),
 * and its ring has room: 0, EINVAL with one line, or ENOMEM */
static inline int dcx_mlx5_dci_check(dcx_mlx5_qp_t *qp, const dcx_send_wr_t *wr)
{
    if (__builtin_expect(!dcx_mlx5_dci_op_ok(qp, wr) ||
                             (wr->num_sge > qp->super.max_send_sge) ||
                             (wr->dest.ah == NULL) ||
                             dcx_mlx5_dci_stream_bad(qp, wr),
                         0)) {
        return dcx_mlx5_dci_check_fail(qp, wr);
    }
    return dcx_mlx5_dci_full(qp, wr) ? ENOMEM : 0;
}

/* An atomic's operand size is one the device takes for its operation
 * (8 bytes but for the masked ones, 4 or 8), with one result buffer of
 * that size: 0, or EINVAL and one line */
static inline int dcx_mlx5_dci_atomic_check(dcx_mlx5_qp_t *qp,
                                            const dcx_send_wr_t *wr)
{
    static const uint32_t need[DCX_WR_OPCODE_LAST][2] = {
        [DCX_WR_ATOMIC_FADD]         = {0, DCX_ATOMIC_FADD64},
        [DCX_WR_ATOMIC_CSWAP]        = {0, DCX_ATOMIC_CSWAP64},
        [DCX_WR_ATOMIC_MASKED_FADD]  = {DCX_ATOMIC_MASKED_FADD32,
                                        DCX_ATOMIC_MASKED_FADD64},
        [DCX_WR_ATOMIC_MASKED_CSWAP] = {DCX_ATOMIC_MASKED_CSWAP32,
                                        DCX_ATOMIC_MASKED_CSWAP64}};
    uint32_t size = (wr->opcode >= DCX_WR_ATOMIC_MASKED_FADD) ?
                        wr->atomic_size :
                        8;
    uint32_t flag = ((size == 4) || (size == 8)) ? need[wr->opcode][size / 8] :
                                                   0;

    if ((flag == 0) || !(qp->super.dev->caps.atomic_flags & flag)) {
        dcx_error("%s: dci 0x%x: a %u-byte atomic of opcode %u is not one "
                  "the device offers",
                  qp->super.dev->caps.name, qp->super.qp_num, size, wr->opcode);
        return EINVAL;
    }
    if ((wr->num_sge != 1) || (wr->sg_list[0].length != size)) {
        dcx_error("%s: dci 0x%x: a %u-byte atomic needs one %u-byte result "
                  "buffer",
                  qp->super.dev->caps.name, qp->super.qp_num, size, size);
        return EINVAL;
    }
    return 0;
}

/* Every check of a post: 0 with an inline WR's byte count in *total_p (0
 * for the others, whose bytes a post need not count), EAGAIN
 * for a WR flagged DCX_SEND_NOW (a NIC executes nothing within the call:
 * the caller posts it without the flag), ENOMEM when its ring is full, or
 * EINVAL with one line */
static inline int dcx_mlx5_dci_validate(dcx_mlx5_qp_t *qp,
                                        const dcx_send_wr_t *wr,
                                        uint32_t *total_p)
{
    int ret;

    if (__builtin_expect(wr->flags & DCX_SEND_NOW, 0)) {
        return EAGAIN;
    }
    ret = dcx_mlx5_dci_check(qp, wr);
    if (ret != 0) {
        return ret;
    }
    uint32_t total   = 0;
    const char *name = qp->super.dev->caps.name;
    dcx_qp_t *super  = &qp->super;

    if (wr->flags & DCX_SEND_INLINE) {
        total = dcx_mlx5_sge_total(wr->sg_list, wr->num_sge);
        if ((wr->opcode != DCX_WR_SEND) && (wr->opcode != DCX_WR_SEND_IMM) &&
            (wr->opcode != DCX_WR_RDMA_WRITE) &&
            (wr->opcode != DCX_WR_RDMA_WRITE_IMM)) {
            dcx_error("%s: dci 0x%x: inline data with opcode %u", name,
                      super->qp_num, wr->opcode);
            return EINVAL;
        }
        if (total > super->max_inline) {
            dcx_error("%s: dci 0x%x: %u inline bytes, at most %u", name,
                      super->qp_num, total, super->max_inline);
            return EINVAL;
        }
    }
    if ((wr->opcode >= DCX_WR_ATOMIC_FADD) &&
        (dcx_mlx5_dci_atomic_check(qp, wr) != 0)) {
        return EINVAL;
    }

    *total_p = total;
    return 0;
}

#endif /* DCX_MLX5_DCI_H_ */
