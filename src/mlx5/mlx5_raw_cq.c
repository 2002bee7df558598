/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: completion queues read in memory.
 *
 * A CQ is polled through libmlx5 or in memory, never both: libmlx5 keeps
 * its own consumer index and frees SRQ WQEs as it polls.  The first queue
 * that uses a CQ decides (dcx_mlx5_cq_use): DCIs, DCTs and SRQs take it
 * raw when the device's raw queues are on; a UMR QP, which posts through
 * libmlx5's builders and needs libmlx5's poll to retire its WQEs, takes
 * it through libmlx5.  A raw CQ is given up by libmlx5 (mlx5dv_init_obj),
 * which then leaves its memory alone: the CQEs of a DCI that goes to
 * RESET or is destroyed are removed here (dcx_mlx5_raw_cq_clean), so that
 * none reaches a later DCI of the same number.  A DCT's receives stay:
 * one polled after the DCT is gone still hands its buffer back.
 *
 * A CQE belongs to software when its owner bit matches the pass of the
 * consumer index over the queue and its opcode is not INVALID.  The
 * poll's cursor, the CQE's last word at the consumer index and the owner
 * bit it shows once software's, is also the CQ's look (dcx_cq_idle).  A send
 * CQE's WQE counter names the first block of the WQE it completes, whose
 * WR sequence the DCI recorded (mlx5_raw_sq.c); the ring retires every
 * WR up to it.  A receive CQE names the SRQ WQE its message took, handed
 * back to the SRQ's free list at once.  An error CQE carries the PRM's
 * syndrome, translated as libmlx5 does.
 *
 * A SEND the HCA scattered into its CQE (a DCT on 128-byte CQEs: up to 64
 * bytes in the first half) completes there when its SRQ asked for
 * receives in place: wc->data points at the CQE, and the doorbell record
 * stays at that CQE until the caller releases it or polls again, so that
 * the HCA cannot write the slot while it is read.  Else, and for the rest
 * of a poll past DCX_MLX5_IP_MAX of them, the bytes are copied to the
 * receive's first buffer, as libmlx5 copies them.  Tag-matching and error
 * CQEs never carry a message.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum {
    DCX_MLX5_CQ_SET_CI = 0,
    DCX_MLX5_CQ_ARM_DB = 1
};

/* The 64 bytes of the CQE at idx (the last of a 128-byte one) on a CQ of
 * CQEs of 1 << shift bytes */
static inline struct mlx5_cqe64 *
dcx_mlx5_raw_cqe_of(const dcx_mlx5_raw_cq_t *rc, uint32_t idx, uint32_t shift)
{
    return (struct mlx5_cqe64 *)(rc->buf64 +
                                 ((size_t)(idx & rc->cqe_mask) << shift));
}

static inline struct mlx5_cqe64 *dcx_mlx5_raw_cqe(const dcx_mlx5_raw_cq_t *rc,
                                                  uint32_t idx)
{
    return dcx_mlx5_raw_cqe_of(rc, idx, rc->cqe_shift);
}

/* The CQE at idx if software owns it, else NULL.  The owner bit alone
 * tells: every CQE starts with the bit of the pass after the first
 * (dcx_mlx5_raw_cq_take), so a slot the device has not yet written in
 * this pass never matches. */
static inline struct mlx5_cqe64 *
dcx_mlx5_raw_cqe_sw_of(const dcx_mlx5_raw_cq_t *rc, uint32_t idx,
                       uint32_t shift)
{
    struct mlx5_cqe64 *cqe = dcx_mlx5_raw_cqe_of(rc, idx, shift);

    return ((cqe->op_own ^ (idx >> rc->cnt_shift)) & MLX5_CQE_OWNER_MASK) ?
               NULL :
               cqe;
}

static inline struct mlx5_cqe64 *
dcx_mlx5_raw_cqe_sw(const dcx_mlx5_raw_cq_t *rc, uint32_t idx)
{
    return dcx_mlx5_raw_cqe_sw_of(rc, idx, rc->cqe_shift);
}

/* The bit of the owner bit in a CQE's last 8 bytes read as one word (the
 * last byte is op_own) */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define DCX_MLX5_LOOK_OWN_SHIFT 56u
#else
#define DCX_MLX5_LOOK_OWN_SHIFT 0u
#endif
#define DCX_MLX5_LOOK_OWN \
    ((uint64_t)MLX5_CQE_OWNER_MASK << DCX_MLX5_LOOK_OWN_SHIFT)

/* The cursor (the look of dcx_cq_idle) after the consumer index moved */
static inline void dcx_mlx5_raw_cursor_set(dcx_mlx5_raw_cq_t *rc,
                                           uint32_t shift)
{
    const struct mlx5_cqe64 *cqe = dcx_mlx5_raw_cqe_of(rc, rc->ci, shift);
    uint64_t own = (rc->ci >> rc->cnt_shift) & MLX5_CQE_OWNER_MASK;

    rc->look.word = (const uint64_t *)(cqe + 1) - 1;
    rc->look.want = own << DCX_MLX5_LOOK_OWN_SHIFT;
}

/* The CQE at the cursor */
static inline struct mlx5_cqe64 *
dcx_mlx5_raw_cursor_cqe(const dcx_mlx5_raw_cq_t *rc)
{
    return (struct mlx5_cqe64 *)(uintptr_t)(rc->look.word + 1) - 1;
}

/* The owner bit of a software CQE at the cursor, as op_own has it */
static inline uint8_t dcx_mlx5_raw_cursor_own(const dcx_mlx5_raw_cq_t *rc)
{
    return (uint8_t)(rc->look.want >> DCX_MLX5_LOOK_OWN_SHIFT);
}

/* The looks of a CQ not polled in memory: one that no queue has used yet,
 * which nothing can be in (idle), and one polled through libmlx5 (a poll
 * is always due) */
static const uint64_t dcx_mlx5_look_zero;
static const dcx_cq_look_t dcx_mlx5_look_open = {&dcx_mlx5_look_zero, 1, 1};
static const dcx_cq_look_t dcx_mlx5_look_due  = {&dcx_mlx5_look_zero, 0, 0};

void dcx_mlx5_raw_look_sync(dcx_mlx5_cq_t *cq)
{
    if (cq->mode == DCX_MLX5_CQ_RAW) {
        /* a flushed DCI's completions are not in the CQ's memory */
        cq->raw->look.mask = (cq->flush_head == NULL) ? DCX_MLX5_LOOK_OWN : 0;
    }
}

/* The CQE at the consumer index if software owns it, else NULL: the look
 * of every poll, through the cursor */
static inline struct mlx5_cqe64 *
dcx_mlx5_raw_cqe_ready(const dcx_mlx5_raw_cq_t *rc)
{
    return ((*rc->look.word ^ rc->look.want) & DCX_MLX5_LOOK_OWN) ?
               NULL :
               dcx_mlx5_raw_cursor_cqe(rc);
}

/* The CQE size's log2 where a poll knows it as a constant: the polls with
 * receives in place are those of 128-byte CQEs, the others those of
 * 64-byte ones (dcx_mlx5_raw_cq_take) */
#define DCX_MLX5_RAW_SHIFT(_ip) ((_ip) ? 7u : 6u)

/* The SRQ of a receive CQE on a CQ shared by several: its DCT's */
static dcx_mlx5_srq_t *dcx_mlx5_raw_srq_find(dcx_mlx5_cq_t *cq, uint32_t qpn)
{
    dcx_mlx5_qp_t *qp = dcx_mlx5_qpmap_find(&cq->qpmap, qpn);

    return ((qp != NULL) && (qp->super.type == DCX_QPT_DCT)) ?
               (dcx_mlx5_srq_t *)qp->attr.srq :
               NULL;
}

/* The SRQ of a receive CQE: the CQ's one, or its DCT's */
static inline dcx_mlx5_srq_t *dcx_mlx5_raw_srq_of(dcx_mlx5_cq_t *cq,
                                                  uint32_t qpn)
{
    return __builtin_expect(!cq->raw->multi_srq, 1) ?
               cq->raw->srq :
               dcx_mlx5_raw_srq_find(cq, qpn);
}

/* A receive's CQE (opcode, or RESP_ERR); 1 with *wc filled */
static inline __attribute__((always_inline)) int
dcx_mlx5_raw_recv(dcx_mlx5_cq_t *cq, const struct mlx5_cqe64 *cqe,
                  uint8_t opcode, dcx_wc_t *wc)
{
    uint32_t qpn          = be32toh(cqe->sop_drop_qpn) & 0xffffff;
    dcx_mlx5_raw_cq_t *rc = cq->raw;
    const struct mlx5_err_cqe *err;
    dcx_mlx5_srq_t *srq;
    const void *data;
    uint16_t idx;
    void *buf;

    srq = dcx_mlx5_raw_srq_of(cq, qpn);
    if (srq == NULL) {
        dcx_warn("%s: cq: a receive of QP 0x%x with no SRQ known, dropped",
                 cq->super.dev->caps.name, qpn);
        return 0;
    }
    if (__builtin_expect(cqe->app != 0, 0) && (srq->tm_cqe != NULL)) {
        return srq->tm_cqe(srq, cqe, wc); /* a tag-matching receive */
    }
    idx        = be16toh(cqe->wqe_counter);
    wc->wr_id  = dcx_mlx5_raw_srq_done(srq->raw, idx);
    wc->qp_num = qpn;
    wc->flags  = 0;
    if (opcode == MLX5_CQE_RESP_ERR) {
        err        = (const struct mlx5_err_cqe *)cqe;
        wc->opcode = DCX_WC_RECV;
        wc->status = dcx_mlx5_wc_status(dcx_mlx5_syndrome_status(err->syndrome));
        wc->vendor_err = err->vendor_err_synd;
        wc->byte_len   = 0;
        return 1;
    }
    wc->status     = DCX_WC_SUCCESS;
    wc->vendor_err = 0;
    wc->byte_len   = be32toh(cqe->byte_cnt);
    wc->src_qp     = be32toh(cqe->flags_rqpn) & 0xffffff;
    wc->opcode = (opcode == MLX5_CQE_RESP_WR_IMM) ? DCX_WC_RECV_RDMA_WITH_IMM :
                                                    DCX_WC_RECV;
    if ((opcode == MLX5_CQE_RESP_WR_IMM) ||
        (opcode == MLX5_CQE_RESP_SEND_IMM)) {
        wc->flags |= DCX_WC_FLAG_WITH_IMM;
        wc->imm = be32toh(cqe->imm_inval_pkey);
    }
    /* a short message the HCA scattered into the CQE itself: read there,
     * or copied to the receive's first buffer (its WQE still names it) */
    if (cqe->op_own & (MLX5_INLINE_SCATTER_32 | MLX5_INLINE_SCATTER_64)) {
        data = (cqe->op_own & MLX5_INLINE_SCATTER_32) ? (const void *)cqe :
                                                        (const void *)(cqe - 1);
        if (srq->raw->in_place && (rc->ip_n < DCX_MLX5_IP_MAX)) {
            rc->ip_ci[rc->ip_n++] = rc->ci - 1; /* the poll passed it */
            wc->flags |= DCX_WC_FLAG_IN_PLACE;
            wc->data = data;
            return 1;
        }
        buf = dcx_mlx5_raw_srq_first(srq->raw, idx & (srq->raw->wqe_cnt - 1));
        memcpy(buf, data, wc->byte_len);
    }
    return 1;
}

/* A DCI's CQE (REQ or REQ_ERR); 1 with *wc filled */
static inline __attribute__((always_inline)) int
dcx_mlx5_raw_send(dcx_mlx5_cq_t *cq, const struct mlx5_cqe64 *cqe,
                  uint8_t opcode, dcx_wc_t *wc)
{
    const struct mlx5_err_cqe *err = (const struct mlx5_err_cqe *)cqe;
    uint32_t qpn                   = be32toh(cqe->sop_drop_qpn) & 0xffffff;
    dcx_mlx5_qp_t *qp;
    dcx_mlx5_cqe_t c;

    qp = dcx_mlx5_qpmap_find(&cq->qpmap, qpn);
    if ((qp == NULL) || (qp->raw == NULL)) {
        if (cq->raw->tm_srq != NULL) {
            /* the tag-matching SRQ's command QP, which is no dcx QP */
            return cq->raw->tm_srq->tm_cqe(cq->raw->tm_srq, cqe, wc);
        }
        dcx_debug("%s: cq: completion for unknown QP 0x%x dropped",
                  cq->super.dev->caps.name, qpn);
        return 0;
    }
    c.seq = dcx_mlx5_raw_sq_seq(qp, be16toh(cqe->wqe_counter));
    if (opcode == MLX5_CQE_REQ) {
        /* the WQE's opcode is the top byte of sop_drop_qpn */
        if (__builtin_expect(qp->raw->be4 != NULL, 0) &&
            (((be32toh(cqe->sop_drop_qpn) >> 24) | 1) ==
             MLX5_OPCODE_ATOMIC_MASKED_FA)) {
            dcx_mlx5_raw_sq_be4_done(qp, be16toh(cqe->wqe_counter));
        }
        /* a DCI without streams: retired here, no call */
        if (__builtin_expect(qp->super.num_streams == 0, 1) &&
            dcx_mlx5_ring_retire_ok(&qp->ring, c.seq, qpn,
                                    be32toh(cqe->byte_cnt), wc)) {
            return 1;
        }
        c.status     = IBV_WC_SUCCESS;
        c.byte_len   = be32toh(cqe->byte_cnt);
        c.vendor_err = 0;
    } else {
        c.status     = dcx_mlx5_syndrome_status(err->syndrome);
        c.byte_len   = 0;
        c.vendor_err = err->vendor_err_synd;
    }
    return dcx_mlx5_cq_dci_done(cq, qp, &c, wc);
}

/* Inline in both polls (with and without receives in place), as the
 * completion's whole work */
static inline __attribute__((always_inline)) int
dcx_mlx5_raw_one(dcx_mlx5_cq_t *cq, const struct mlx5_cqe64 *cqe, dcx_wc_t *wc)
{
    uint8_t opcode = cqe->op_own >> 4;

    /* the two common cases first, each a test */
    if (__builtin_expect(opcode == MLX5_CQE_REQ, 1)) {
        return dcx_mlx5_raw_send(cq, cqe, opcode, wc);
    }
    if (__builtin_expect(opcode == MLX5_CQE_RESP_SEND, 1)) {
        return dcx_mlx5_raw_recv(cq, cqe, opcode, wc);
    }
    switch (opcode) {
    case MLX5_CQE_REQ:
    case MLX5_CQE_REQ_ERR:
        return dcx_mlx5_raw_send(cq, cqe, opcode, wc);
    case MLX5_CQE_RESP_WR_IMM:
    case MLX5_CQE_RESP_SEND:
    case MLX5_CQE_RESP_SEND_IMM:
    case MLX5_CQE_RESP_SEND_INV:
    case MLX5_CQE_RESP_ERR:
        return dcx_mlx5_raw_recv(cq, cqe, opcode, wc);
    case MLX5_CQE_NO_PACKET:
        /* a tag-list operation's */
        if (cq->raw->tm_srq != NULL) {
            return cq->raw->tm_srq->tm_cqe(cq->raw->tm_srq, cqe, wc);
        }
        /* fall through */
    default:
        dcx_warn("%s: cq 0x%x: a CQE of opcode %u dropped",
                 cq->super.dev->caps.name, cq->raw->cqn, opcode);
        return 0;
    }
}

/* A poll's flushed DCIs to report, after the CQEs it took */
static int dcx_mlx5_raw_poll_flush(dcx_mlx5_cq_t *cq, int n, int max,
                                   dcx_wc_t *wc)
{
    if ((n < max) && (cq->flush_head != NULL)) {
        n += dcx_mlx5_cq_drain_flush(cq, max - n, &wc[n]);
    }
    return n;
}

/* The rest of a poll that found cqe, software's, at the consumer index.
 * ip: the CQ has 128-byte CQEs, into which a DCT may scatter receives
 * that complete in place, and the doorbell record stays at the first one
 * the poll returns; the polls of other CQs keep none of that bookkeeping
 * (chosen when the CQ is taken). */
static inline __attribute__((always_inline)) int
dcx_mlx5_raw_poll_found_inl(dcx_mlx5_cq_t *cq, struct mlx5_cqe64 *cqe, int max,
                            dcx_wc_t *wc, const bool ip)
{
    dcx_mlx5_raw_cq_t *rc = cq->raw;
    int n                 = 0;

    if (ip) {
        rc->ip_n = 0; /* the last poll's receives in place are released */
    }
    do {
        __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the CQE after op_own */
        rc->ci++;
        n += dcx_mlx5_raw_one(cq, cqe, &wc[n]);
    } while ((n < max) &&
             ((cqe = dcx_mlx5_raw_cqe_sw_of(rc, rc->ci,
                                            DCX_MLX5_RAW_SHIFT(ip))) != NULL));
    dcx_mlx5_raw_cursor_set(rc, DCX_MLX5_RAW_SHIFT(ip));
    __atomic_thread_fence(__ATOMIC_RELEASE); /* read before freed */
    if (ip) {
        rc->ip_left                   = rc->ip_n;
        rc->ip_ci[rc->ip_n]           = rc->ci;
        rc->dbrec[DCX_MLX5_CQ_SET_CI] = htobe32(rc->ip_ci[0] & 0xffffff);
    } else {
        rc->dbrec[DCX_MLX5_CQ_SET_CI] = htobe32(rc->ci & 0xffffff);
    }
    return dcx_mlx5_raw_poll_flush(cq, n, max, wc);
}

/* Out of line, so that an empty poll is one load and two tests */
static int __attribute__((noinline))
dcx_mlx5_raw_poll_found(dcx_mlx5_cq_t *cq, struct mlx5_cqe64 *cqe, int max,
                        dcx_wc_t *wc)
{
    return dcx_mlx5_raw_poll_found_inl(cq, cqe, max, wc, false);
}

static int __attribute__((noinline))
dcx_mlx5_raw_poll_found_ip(dcx_mlx5_cq_t *cq, struct mlx5_cqe64 *cqe, int max,
                           dcx_wc_t *wc)
{
    return dcx_mlx5_raw_poll_found_inl(cq, cqe, max, wc, true);
}

/* The doorbell record at the oldest receive in place not released, or
 * past the last CQE taken */
static inline void dcx_mlx5_raw_set_ci(dcx_mlx5_raw_cq_t *rc)
{
    __atomic_thread_fence(__ATOMIC_RELEASE); /* read before freed */
    rc->dbrec[DCX_MLX5_CQ_SET_CI] = htobe32(rc->ip_ci[rc->ip_n - rc->ip_left] &
                                            0xffffff);
}

void dcx_mlx5_raw_cq_release(dcx_cq_t *super)
{
    dcx_mlx5_raw_cq_t *rc = ((dcx_mlx5_cq_t *)super)->raw;

    if ((rc != NULL) && (rc->ip_left != 0)) {
        rc->ip_left--;
        dcx_mlx5_raw_set_ci(rc);
    }
}

/* A poll that found nothing releases the last one's receives in place */
static void __attribute__((noinline))
dcx_mlx5_raw_release_all(dcx_mlx5_raw_cq_t *rc)
{
    rc->ip_left = 0;
    dcx_mlx5_raw_set_ci(rc);
}

static inline __attribute__((always_inline)) int
dcx_mlx5_raw_poll_inl(dcx_cq_t *super, int max, dcx_wc_t *wc, const bool ip)
{
    dcx_mlx5_cq_t *cq      = (dcx_mlx5_cq_t *)super;
    struct mlx5_cqe64 *cqe = dcx_mlx5_raw_cqe_ready(cq->raw);

    if (__builtin_expect(max <= 0, 0)) {
        return 0;
    }
    if (cqe != NULL) {
        return ip ? dcx_mlx5_raw_poll_found_ip(cq, cqe, max, wc) :
                    dcx_mlx5_raw_poll_found(cq, cqe, max, wc);
    }
    if (ip && __builtin_expect(cq->raw->ip_left != 0, 0)) {
        dcx_mlx5_raw_release_all(cq->raw);
    }
    return (cq->flush_head == NULL) ? 0 :
                                      dcx_mlx5_raw_poll_flush(cq, 0, max, wc);
}

static int dcx_mlx5_raw_poll(dcx_cq_t *super, int max, dcx_wc_t *wc)
{
    return dcx_mlx5_raw_poll_inl(super, max, wc, false);
}

static int dcx_mlx5_raw_poll_ip(dcx_cq_t *super, int max, dcx_wc_t *wc)
{
    return dcx_mlx5_raw_poll_inl(super, max, wc, true);
}

/* dcx_cq_ready(): a CQE software owns at the consumer index (read, not
 * taken: its owner bit is the whole test, as for a poll), or flushed DCIs a
 * poll would report.  A CQE the device writes while this looks is seen by
 * the next look. */
static int dcx_mlx5_raw_ready(const dcx_cq_t *super)
{
    const dcx_mlx5_cq_t *cq = (const dcx_mlx5_cq_t *)super;

    return (dcx_mlx5_raw_cqe_ready(cq->raw) != NULL) ||
           (cq->flush_head != NULL);
}

/* A pair that dcx_mlx5_raw_poll_pair does not take whole (the other CQ
 * not raw without receives in place, a flushed DCI to report, CQEs in
 * both): one CQ after the other */
static int __attribute__((noinline))
dcx_mlx5_raw_pair_mixed(dcx_cq_t *super, dcx_cq_t *other, int max, dcx_wc_t *wc,
                        int *n_other_p)
{
    int n = dcx_mlx5_raw_poll_inl(super, max, wc, false);

    *n_other_p = other->poll(other, max, wc + max);
    return n;
}

/* The CQE at the consumer index of a CQ of 64-byte CQEs is the only one
 * software owns there: none follows it yet */
static inline int dcx_mlx5_raw_cqe_alone(const dcx_mlx5_raw_cq_t *rc)
{
    return dcx_mlx5_raw_cqe_sw_of(rc, rc->ci + 1, DCX_MLX5_RAW_SHIFT(0)) ==
           NULL;
}

/* The CQE at the consumer index of a CQ of 64-byte CQEs taken alone: the
 * index, its cursor and the doorbell record past it */
static inline void dcx_mlx5_raw_take_alone(dcx_mlx5_raw_cq_t *rc)
{
    rc->ci++;
    dcx_mlx5_raw_cursor_set(rc, DCX_MLX5_RAW_SHIFT(0));
    __atomic_thread_fence(__ATOMIC_RELEASE); /* read before freed */
    rc->dbrec[DCX_MLX5_CQ_SET_CI] = htobe32(rc->ci & 0xffffff);
}

/* cqe, software's at the consumer index of a CQ of 64-byte CQEs, taken
 * when it is the CQ's only one and a plain successful send completion:
 * of a DCI without streams, no 4-byte masked atomic to turn, a WR not
 * retired yet.  1 with *wc filled and the CQE freed; 0 with nothing done
 * (the loop of the poll takes it).  No call and no loop: the pair poll
 * that finds one send completion stays a leaf. */
static inline __attribute__((always_inline)) int
dcx_mlx5_raw_send_alone(dcx_mlx5_cq_t *cq, const struct mlx5_cqe64 *cqe,
                        dcx_wc_t *wc)
{
    dcx_mlx5_raw_cq_t *rc = cq->raw;
    uint32_t sop, qpn;
    dcx_mlx5_qp_t *qp;

    if (((cqe->op_own >> 4) != MLX5_CQE_REQ) || !dcx_mlx5_raw_cqe_alone(rc)) {
        return 0;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the CQE after op_own */
    sop = be32toh(cqe->sop_drop_qpn);
    qpn = sop & 0xffffff;
    qp  = dcx_mlx5_qpmap_find(&cq->qpmap, qpn);
    if ((qp == NULL) || (qp->raw == NULL) || (qp->super.num_streams != 0) ||
        ((qp->raw->be4 != NULL) &&
         (((sop >> 24) | 1) == MLX5_OPCODE_ATOMIC_MASKED_FA)) ||
        !dcx_mlx5_ring_retire_ok(&qp->ring,
                                 dcx_mlx5_raw_sq_seq(qp,
                                                     be16toh(cqe->wqe_counter)),
                                 qpn, be32toh(cqe->byte_cnt), wc)) {
        return 0;
    }
    dcx_mlx5_raw_take_alone(rc);
    return 1;
}

/* The other CQ of a pair found ocqe, more than a lone send completion */
static int __attribute__((noinline))
dcx_mlx5_raw_pair_other_all(dcx_mlx5_cq_t *ocq, struct mlx5_cqe64 *ocqe,
                            int max, dcx_wc_t *wc, int *n_other_p)
{
    *n_other_p = dcx_mlx5_raw_poll_found_inl(ocq, ocqe, max, wc, false);
    return 0;
}

/* The other CQ of a pair found ocqe (software's), the first nothing: a
 * lone send completion here, anything else by the poll's loop */
static int __attribute__((noinline))
dcx_mlx5_raw_pair_other(dcx_mlx5_cq_t *ocq, struct mlx5_cqe64 *ocqe, int max,
                        dcx_wc_t *wc, int *n_other_p)
{
    if (__builtin_expect(dcx_mlx5_raw_send_alone(ocq, ocqe, wc), 1)) {
        *n_other_p = 1;
        return 0;
    }
    return dcx_mlx5_raw_pair_other_all(ocq, ocqe, max, wc, n_other_p);
}

/* cqe, software's at the consumer index of a CQ of 64-byte CQEs, taken
 * when it is the CQ's only one and a plain SEND received on the CQ's one
 * SRQ: no immediate, not tag matching, its bytes in the receive's buffer
 * (not scattered into the CQE).  1 with *wc filled, the SRQ WQE and the
 * CQE freed; 0 with nothing done.  No call and no loop, as
 * dcx_mlx5_raw_send_alone. */
static inline __attribute__((always_inline)) int
dcx_mlx5_raw_recv_alone(dcx_mlx5_cq_t *cq, const struct mlx5_cqe64 *cqe,
                        dcx_wc_t *wc)
{
    dcx_mlx5_raw_cq_t *rc = cq->raw;
    dcx_mlx5_srq_t *srq   = rc->srq;

    if ((cqe->op_own !=
         ((MLX5_CQE_RESP_SEND << 4) | dcx_mlx5_raw_cursor_own(rc))) ||
        (cqe->app != 0) || (srq == NULL) || rc->multi_srq ||
        !dcx_mlx5_raw_cqe_alone(rc)) {
        return 0;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the CQE after op_own */
    wc->wr_id      = dcx_mlx5_raw_srq_done(srq->raw, be16toh(cqe->wqe_counter));
    wc->status     = DCX_WC_SUCCESS;
    wc->opcode     = DCX_WC_RECV;
    wc->flags      = 0;
    wc->byte_len   = be32toh(cqe->byte_cnt);
    wc->qp_num     = be32toh(cqe->sop_drop_qpn) & 0xffffff;
    wc->src_qp     = be32toh(cqe->flags_rqpn) & 0xffffff;
    wc->vendor_err = 0;
    dcx_mlx5_raw_take_alone(rc);
    return 1;
}

/* The first CQ of a pair found cqe, more than a lone receive */
static int __attribute__((noinline))
dcx_mlx5_raw_pair_first_all(dcx_mlx5_cq_t *cq, struct mlx5_cqe64 *cqe, int max,
                            dcx_wc_t *wc, int *n_other_p)
{
    *n_other_p = 0;
    return dcx_mlx5_raw_poll_found_inl(cq, cqe, max, wc, false);
}

/* The first CQ of a pair found cqe (software's), the other nothing: a
 * lone receive here, anything else by the poll's loop */
static int __attribute__((noinline))
dcx_mlx5_raw_pair_first(dcx_mlx5_cq_t *cq, struct mlx5_cqe64 *cqe, int max,
                        dcx_wc_t *wc, int *n_other_p)
{
    if (__builtin_expect(dcx_mlx5_raw_recv_alone(cq, cqe, wc), 1)) {
        *n_other_p = 0;
        return 1;
    }
    return dcx_mlx5_raw_pair_first_all(cq, cqe, max, wc, n_other_p);
}

/* Both CQs looked at here when the other is raw without receives in place
 * too (the transport's common pair), with no flushed DCI to report: a pair
 * with nothing to do is a leaf, and one that finds CQEs in one CQ makes
 * one call, with no register saved here.  CQEs in both poll one CQ after
 * the other. */
static int dcx_mlx5_raw_poll_pair(dcx_cq_t *super, dcx_cq_t *other, int max,
                                  dcx_wc_t *wc, int *n_other_p)
{
    dcx_mlx5_cq_t *cq  = (dcx_mlx5_cq_t *)super;
    dcx_mlx5_cq_t *ocq = (dcx_mlx5_cq_t *)other;
    struct mlx5_cqe64 *cqe, *ocqe;

    if (__builtin_expect((other->poll != dcx_mlx5_raw_poll) || (max <= 0) ||
                             (cq->flush_head != NULL) ||
                             (ocq->flush_head != NULL),
                         0)) {
        return dcx_mlx5_raw_pair_mixed(super, other, max, wc, n_other_p);
    }
    cqe  = dcx_mlx5_raw_cqe_ready(cq->raw);
    ocqe = dcx_mlx5_raw_cqe_ready(ocq->raw);
    if (ocqe == NULL) {
        if (cqe == NULL) {
            *n_other_p = 0;
            return 0;
        }
        return dcx_mlx5_raw_pair_first(cq, cqe, max, wc, n_other_p);
    }
    if (cqe == NULL) {
        return dcx_mlx5_raw_pair_other(ocq, ocqe, max, wc + max, n_other_p);
    }
    return dcx_mlx5_raw_pair_mixed(super, other, max, wc, n_other_p);
}

static int dcx_mlx5_raw_poll_pair_ip(dcx_cq_t *super, dcx_cq_t *other, int max,
                                     dcx_wc_t *wc, int *n_other_p)
{
    int n = dcx_mlx5_raw_poll_inl(super, max, wc, true);

    *n_other_p = other->poll(other, max, wc + max);
    return n;
}

/* A CQ polled before any queue used it: nothing can be in it */
static int dcx_mlx5_open_poll(dcx_cq_t *super, int max, dcx_wc_t *wc)
{
    (void)super;
    (void)max;
    (void)wc;
    return 0;
}

static int dcx_mlx5_open_ready(const dcx_cq_t *super)
{
    (void)super;
    return 0;
}

static int dcx_mlx5_open_poll_pair(dcx_cq_t *super, dcx_cq_t *other, int max,
                                   dcx_wc_t *wc, int *n_other_p)
{
    (void)super;
    *n_other_p = other->poll(other, max, wc + max);
    return 0;
}

void dcx_mlx5_cq_open_init(dcx_mlx5_cq_t *cq, bool raw)
{
    cq->mode = raw ? DCX_MLX5_CQ_OPEN : DCX_MLX5_CQ_VERBS;
    if (raw) {
        cq->verbs_poll      = cq->super.poll;
        cq->verbs_poll_pair = cq->super.poll_pair;
        cq->super.poll      = dcx_mlx5_open_poll;
        cq->super.poll_pair = dcx_mlx5_open_poll_pair;
        cq->super.ready     = dcx_mlx5_open_ready;
        cq->super.look      = &dcx_mlx5_look_open;
    } else {
        cq->super.look = NULL; /* libmlx5 polls it: no word to look at */
    }
}

static int dcx_mlx5_raw_cq_take(dcx_mlx5_cq_t *cq)
{
    const char *name = cq->super.dev->caps.name;
    struct mlx5dv_obj obj;
    struct mlx5dv_cq dv;
    uint32_t i;
    int ret;

    memset(&obj, 0, sizeof(obj));
    memset(&dv, 0, sizeof(dv));
    obj.cq.in  = ibv_cq_ex_to_cq(cq->cq);
    obj.cq.out = &dv;
    ret        = mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ);
    if (ret != 0) {
        dcx_error("%s: cq: mlx5dv_init_obj failed: %s", name, strerror(ret));
        return ret;
    }
    if ((dv.cqe_cnt == 0) || (dv.cqe_cnt & (dv.cqe_cnt - 1)) ||
        ((dv.cqe_size != 64) && (dv.cqe_size != 128))) {
        dcx_error("%s: cq 0x%x: %u CQEs of %u bytes cannot be polled raw", name,
                  dv.cqn, dv.cqe_cnt, dv.cqe_size);
        return EINVAL;
    }
    cq->raw = calloc(1, sizeof(*cq->raw));
    if (cq->raw == NULL) {
        dcx_error("%s: cq 0x%x: out of memory", name, dv.cqn);
        return ENOMEM;
    }
    cq->raw->buf64 = (uint8_t *)dv.buf + dv.cqe_size -
                     sizeof(struct mlx5_cqe64);
    cq->raw->cqe_mask  = dv.cqe_cnt - 1;
    cq->raw->cqe_shift = (dv.cqe_size == 128) ? 7 : 6;
    cq->raw->cnt_shift = (uint32_t)__builtin_ctz(dv.cqe_cnt);
    /* No queue has used the CQ yet: every CQE is the INVALID one libmlx5
     * made, owner bit 0, which the first pass would take for software's.
     * With the bit set they belong to the device until it writes them,
     * and a poll needs no opcode test. */
    for (i = 0; i < dv.cqe_cnt; ++i) {
        dcx_mlx5_raw_cqe(cq->raw, i)->op_own |= MLX5_CQE_OWNER_MASK;
    }
    dcx_mlx5_raw_cursor_set(cq->raw, cq->raw->cqe_shift);
    cq->raw->dbrec = dv.dbrec;
    cq->raw->uar   = dv.cq_uar;
    cq->raw->cqn   = dv.cqn;
    /* only into 128-byte CQEs does a DCT scatter what may complete in
     * place (the device makes them for that alone) */
    if (dv.cqe_size == 128) {
        cq->super.poll      = dcx_mlx5_raw_poll_ip;
        cq->super.poll_pair = dcx_mlx5_raw_poll_pair_ip;
    } else {
        cq->super.poll      = dcx_mlx5_raw_poll;
        cq->super.poll_pair = dcx_mlx5_raw_poll_pair;
    }
    cq->super.ready = dcx_mlx5_raw_ready;
    cq->mode        = DCX_MLX5_CQ_RAW;
    dcx_mlx5_raw_look_sync(cq);
    cq->super.look = &cq->raw->look;
    return 0;
}

int dcx_mlx5_cq_use(dcx_mlx5_cq_t *cq, bool raw, const char *what)
{
    int ret;

    if (cq->mode == DCX_MLX5_CQ_OPEN) {
        if (raw) {
            ret = dcx_mlx5_raw_cq_take(cq);
            if (ret != 0) {
                return ret;
            }
        } else {
            /* libmlx5's poll takes what it finds: no look */
            cq->super.poll      = cq->verbs_poll;
            cq->super.poll_pair = cq->verbs_poll_pair;
            cq->super.ready     = NULL;
            cq->super.look      = &dcx_mlx5_look_due;
        }
        cq->mode = raw ? DCX_MLX5_CQ_RAW : DCX_MLX5_CQ_VERBS;
        return 0;
    }
    if ((cq->mode == DCX_MLX5_CQ_RAW) != raw) {
        dcx_error("%s: %s: its CQ is polled %s, it needs a CQ polled %s",
                  cq->super.dev->caps.name, what,
                  raw ? "through libmlx5" : "in memory",
                  raw ? "in memory" : "through libmlx5");
        return EINVAL;
    }
    return 0;
}

void dcx_mlx5_raw_cq_free(dcx_mlx5_cq_t *cq)
{
    free(cq->raw);
    cq->raw = NULL;
}

void dcx_mlx5_raw_cq_clean(dcx_mlx5_cq_t *cq, uint32_t qpn)
{
    dcx_mlx5_raw_cq_t *rc = (cq->mode == DCX_MLX5_CQ_RAW) ? cq->raw : NULL;
    struct mlx5_cqe64 *cqe, *dest;
    uint32_t pi, nfreed = 0;
    uint8_t owner;

    if (rc == NULL) {
        return;
    }
    for (pi = rc->ci; dcx_mlx5_raw_cqe_sw(rc, pi) != NULL; ++pi) {
        if (pi == rc->ci + rc->cqe_mask) {
            break;
        }
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    /* from the newest back: the QP's CQEs go, the others move up over
     * them, each keeping the owner bit of the slot it lands in */
    while ((int32_t)(--pi - rc->ci) >= 0) {
        cqe = dcx_mlx5_raw_cqe(rc, pi);
        if ((be32toh(cqe->sop_drop_qpn) & 0xffffff) == qpn) {
            ++nfreed;
        } else if (nfreed != 0) {
            /* the whole slot: a 128-byte CQE's first half may hold data */
            dest  = dcx_mlx5_raw_cqe(rc, pi + nfreed);
            owner = dest->op_own & MLX5_CQE_OWNER_MASK;
            memcpy((uint8_t *)(dest + 1) - (1u << rc->cqe_shift),
                   (uint8_t *)(cqe + 1) - (1u << rc->cqe_shift),
                   1u << rc->cqe_shift);
            dest->op_own = (uint8_t)((dest->op_own & ~MLX5_CQE_OWNER_MASK) |
                                     owner);
        }
    }
    if (nfreed != 0) {
        rc->ci += nfreed;
        dcx_mlx5_raw_cursor_set(rc, rc->cqe_shift);
        rc->ip_ci[rc->ip_n] = rc->ci; /* receives in place stay held */
        dcx_mlx5_raw_set_ci(rc);
    }
}

void dcx_mlx5_raw_cq_arm(dcx_mlx5_cq_t *cq)
{
    dcx_mlx5_raw_cq_t *rc = cq->raw;
    uint32_t word;
    uint64_t bell;

    word = ((rc->arm_sn & 3) << 28) | MLX5_CQ_DB_REQ_NOT | (rc->ci & 0xffffff);
    rc->dbrec[DCX_MLX5_CQ_ARM_DB] = htobe32(word);
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the record before the bell */
    bell = htobe64(((uint64_t)word << 32) | rc->cqn);
    *(volatile uint64_t *)((uint8_t *)rc->uar + MLX5_CQ_DOORBELL) = bell;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void dcx_mlx5_raw_cq_event(dcx_mlx5_cq_t *cq)
{
    if (cq->mode == DCX_MLX5_CQ_RAW) {
        cq->raw->arm_sn++;
    }
}
