/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: the tag-matching SRQ (DCX_SRQ_TM) on DC, through DEVX
 * (docs/device-semantics.md section 9.9).
 *
 * rdma-core's verbs make no DC tag matching, so the SRQ is made of DEVX
 * objects in memory the backend registers (umem):
 *  - an XRQ of the tag-matching topology with the rendezvous offload, made
 *    for DC, whose receive WQEs (the buffers of unexpected messages) are a
 *    linked list written by mlx5_raw_srq.c, and whose CQEs, list
 *    operations' included, go to the SRQ's CQ, which is polled in memory
 *    (mlx5_raw_cq.c hands the tag-matching ones here through tm_cqe);
 *  - a command QP: an RC QP receiving from the XRQ, connected to itself,
 *    whose send WQEs (opcode TAG_MATCHING) are the list operations:
 *    APPEND, REMOVE, NOP;
 *  - the SRQ's DCTs, made by CREATE_DCT on the XRQ with the rendezvous
 *    offload (a verbs DCT has no such attribute).
 *
 * The list has 2^n slots; software names entries by slot.  The hardware
 * keeps a free head: an APPEND fills the head's slot and names the next
 * head, which must be free; so software keeps the free slots in a list
 * whose first is the hardware's head, and an ADD needs a second free slot
 * (ENOMEM otherwise: tm_max_tags = 2^n - 1).  A slot is free again once
 * every CQE due for it was polled: its APPEND's, and its consumption's
 * (the last of a message's) or its successful REMOVE's, and any REMOVE's;
 * until then the hardware may still name it.
 *
 * Every operation asks for a CQE (TM_CQE_REQ), so that each one retires
 * in order from the operation ring when its own CQE is polled; only the
 * signalled ones make a completion.  ADD and DEL completions carry
 * TM_SYNC_REQ when the device's count in the CQE differs from the one
 * software gave with the entry's ADD, and an unexpected message's when
 * more than 0x3fff came since the count software last gave with an ADD,
 * as libmlx5 reports them.  Tags go to the device as htobe64(tag), the
 * bytes the TMH carries (dcx_tmh_pack): the device compares bytes.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* commands */
#define DCX_MLX5_CMD_CREATE_QP   0x500u
#define DCX_MLX5_CMD_RST2INIT_QP 0x502u
#define DCX_MLX5_CMD_INIT2RTR_QP 0x503u
#define DCX_MLX5_CMD_RTR2RTS_QP  0x504u
#define DCX_MLX5_CMD_CREATE_DCT  0x710u
#define DCX_MLX5_CMD_CREATE_XRQ  0x717u
#define DCX_MLX5_CMD_SET_XRQ_DC  0x726u
#define DCX_MLX5_CMD_OUT_LEN     16u
#define DCX_MLX5_CMD_OBJ_NUM     72u, 24u /* out: the object's number */
#define DCX_MLX5_CMD_IN_OBJ_NUM  72u, 24u /* in: the object modified */

/* create_xrq_in: the xrqc at bit 128, its wq at bit 1152 */
#define DCX_MLX5_XRQ_IN_LEN       336u
#define DCX_MLX5_XRQC_TOPOLOGY    148u, 4u
#define DCX_MLX5_XRQC_OFFLOAD     156u, 4u
#define DCX_MLX5_XRQC_CQN         200u, 24u
#define DCX_MLX5_XRQC_DC          255u, 1u
#define DCX_MLX5_XRQC_LOG_LIST    384u, 4u
#define DCX_MLX5_XRQ_WQ           1152u
#define DCX_MLX5_WQ_TYPE          0u, 4u /* 0: linked list */
#define DCX_MLX5_WQ_PD            72u, 24u
#define DCX_MLX5_WQ_DBR_ADDR      128u
#define DCX_MLX5_WQ_LOG_STRIDE    268u, 4u
#define DCX_MLX5_WQ_LOG_SZ        283u, 5u
#define DCX_MLX5_WQ_DBR_UMEM      320u, 32u
#define DCX_MLX5_WQ_UMEM          352u, 32u
#define DCX_MLX5_XRQ_TOPO_TM      1u
#define DCX_MLX5_XRQ_OFFLOAD_RNDV 1u
#define DCX_MLX5_XRQ_LOG_LIST_MAX 15u /* the field's 4 bits */

/* set_xrq_dc_params_entry_in */
#define DCX_MLX5_XRQ_DC_IN_LEN     48u
#define DCX_MLX5_XRQ_DC_ACK_TMO    131u, 5u
#define DCX_MLX5_XRQ_DC_MTU        141u, 3u
#define DCX_MLX5_XRQ_DC_PKEY_INDEX 144u, 16u
#define DCX_MLX5_XRQ_DC_KEY        192u

/* create_qp_in and the QP transitions: the qpc at bit 192 */
#define DCX_MLX5_QP_IN_LEN      272u
#define DCX_MLX5_QPC_ST         200u, 8u /* 0: RC */
#define DCX_MLX5_QPC_PD         232u, 24u
#define DCX_MLX5_QPC_MTU        256u, 3u
#define DCX_MLX5_QPC_LOG_SQ_SZ  273u, 4u
#define DCX_MLX5_QPC_UAR_PAGE   296u, 24u
#define DCX_MLX5_QPC_REMOTE_QPN 360u, 24u
#define DCX_MLX5_QPC_RLID       432u, 16u
#define DCX_MLX5_QPC_ACK_TMO    448u, 5u
#define DCX_MLX5_QPC_PORT       680u, 8u
#define DCX_MLX5_QPC_LOG_SRA    1096u, 3u
#define DCX_MLX5_QPC_RETRY      1101u, 3u
#define DCX_MLX5_QPC_RNR_RETRY  1104u, 3u
#define DCX_MLX5_QPC_CQN_SND    1192u, 24u
#define DCX_MLX5_QPC_LOG_RRA    1352u, 3u
#define DCX_MLX5_QPC_MIN_RNR    1379u, 5u
#define DCX_MLX5_QPC_CQN_RCV    1448u, 24u
#define DCX_MLX5_QPC_DBR_ADDR   1472u
#define DCX_MLX5_QPC_RQ_TYPE    1573u, 3u /* 1: shared */
#define DCX_MLX5_QPC_SRQN       1576u, 24u
#define DCX_MLX5_QP_DBR_UMEM    2016u, 32u
#define DCX_MLX5_QP_WQ_UMEM     2112u, 32u

/* create_dct_in: the dctc at bit 128 */
#define DCX_MLX5_DCT_IN_LEN   128u
#define DCX_MLX5_DCTC_OFFLOAD 152u, 4u /* 1: rendezvous */
#define DCX_MLX5_DCTC_CQN     200u, 24u
#define DCX_MLX5_DCTC_ATOMIC  232u, 4u /* atomic_mode */
#define DCX_MLX5_DCTC_RRE     236u, 1u
#define DCX_MLX5_DCTC_RWE     237u, 1u
#define DCX_MLX5_DCTC_RAE     238u, 1u
#define DCX_MLX5_DCTC_MIN_RNR 275u, 5u
#define DCX_MLX5_DCTC_SRQN    296u, 24u
#define DCX_MLX5_DCTC_PD      328u, 24u
#define DCX_MLX5_DCTC_KEY     384u
#define DCX_MLX5_DCTC_MTU     453u, 3u
#define DCX_MLX5_DCTC_PORT    456u, 8u

/* mlx5_wqe_tm_seg: the operation (high nibble of opcode) and flags */
#define DCX_MLX5_TM_OP_NOP    0x0u
#define DCX_MLX5_TM_OP_APPEND 0x1u
#define DCX_MLX5_TM_OP_REMOVE 0x2u
#define DCX_MLX5_TM_F_CQE     0x80u /* TM_CQE_REQ */
#define DCX_MLX5_TM_F_SW_CNT  0x40u /* sw_cnt is software's count */

/* mlx5_cqe64 app_op of a tag list's CQE */
enum {
    DCX_MLX5_TM_CONSUMED     = 0x1,
    DCX_MLX5_TM_EXPECTED     = 0x2,
    DCX_MLX5_TM_UNEXPECTED   = 0x3,
    DCX_MLX5_TM_NO_TAG       = 0x4,
    DCX_MLX5_TM_APPEND       = 0x5,
    DCX_MLX5_TM_REMOVE       = 0x6,
    DCX_MLX5_TM_NOOP         = 0x7,
    DCX_MLX5_TM_CONSUMED_MSG = 0xa,
    DCX_MLX5_TM_CONSUMED_SW  = 0xb
};

#define DCX_MLX5_TM_SYNC_DIFF   0x3fffu /* libmlx5's MLX5_TM_MAX_SYNC_DIFF */
#define DCX_MLX5_ATOMIC_MODE_8B 3u /* atomic_mode: operands up to 8 bytes */
#define DCX_MLX5_XRQ_PAGE       4096u
#define DCX_MLX5_XRQ_NONE       0xffffu
#define DCX_MLX5_TM_ACK_TMO     18u /* 4.096 us * 2^18: the DCIs' default */
#define DCX_MLX5_TM_RNR_MIN     12u /* the command QP's, never waited on */
#define DCX_MLX5_TM_LOG_SRA     2u

typedef struct dcx_mlx5_xrq_slot {
    uint64_t recv_wr_id;
    uint16_t next_free; /* in the free list */
    uint16_t phase_cnt; /* software's count at the ADD */
    uint16_t rndv_slid; /* TM_RNDV_INCOMPLETE: the sender's LID */
    uint8_t listed;     /* added and not yet free again */
    uint8_t add_due;    /* the APPEND's CQE not polled */
    uint8_t del_due;    /* a REMOVE's CQE not polled */
    uint8_t ended;      /* consumed or removed: no more of its CQEs */
    uint8_t rndv_src;   /* rndv_slid is valid (until the slot is reused) */
} dcx_mlx5_xrq_slot_t;

typedef struct dcx_mlx5_xrq_op {
    uint64_t wr_id;
    uint16_t slot;
    uint8_t opcode; /* dcx_tm_opcode_t */
    uint8_t signaled;
} dcx_mlx5_xrq_op_t;

struct dcx_mlx5_xrq {
    dcx_mlx5_dev_t *dev;
    struct mlx5dv_devx_obj *obj; /* the XRQ */
    struct mlx5dv_devx_obj *cmd; /* the command QP */
    struct mlx5dv_devx_umem *umem[3];
    struct mlx5dv_devx_uar *uar;
    void *mem[3]; /* the XRQ's WQEs, the command QP's, the records */
    uint32_t xrqn;
    uint32_t cmdn;
    /* the command QP's send queue: one basic block an operation */
    uint8_t *sq;
    uint32_t sq_cnt;
    volatile __be32 *sq_dbrec;
    uint16_t sq_pi;
    /* the tag list */
    dcx_mlx5_xrq_slot_t *slots;
    uint32_t nslots;
    uint16_t head;      /* the hardware's free head, the free list's first */
    uint16_t free_tail; /* the free list's last */
    /* outstanding operations, retired in order by their CQEs */
    dcx_mlx5_xrq_op_t *ops;
    uint32_t op_pi;
    uint32_t op_ci;
    /* phase counts (16 bits, as the device's) */
    uint16_t unexp_in;  /* unexpected messages polled */
    uint16_t unexp_out; /* software's count given with the last ADD */
    bool failed;        /* the command QP went to error */
};

static const char *dcx_mlx5_xrq_name(const dcx_mlx5_xrq_t *x)
{
    return x->dev->super.caps.name;
}

static uint32_t dcx_mlx5_xrq_log2(uint32_t v)
{
    uint32_t l = 0;

    while ((1u << l) < v) {
        ++l;
    }
    return l;
}

/* A refused command: its errno, and the status and syndrome in out */
static int dcx_mlx5_xrq_cmd_failed(dcx_mlx5_dev_t *dev, const char *what,
                                   const uint8_t *out, int err)
{
    int ret = err ? err : EIO;

    dcx_error("%s: tm srq: %s failed: %s (status 0x%x, syndrome 0x%x)",
              dev->super.caps.name, what, strerror(ret),
              dcx_mlx5_prm_get(out, 0, 8), dcx_mlx5_prm_get(out, 32, 32));
    return ret;
}

static struct mlx5dv_devx_obj *
dcx_mlx5_xrq_obj_create(dcx_mlx5_dev_t *dev, const char *what, const void *in,
                        size_t inlen, uint32_t *num_p, int *ret_p)
{
    uint8_t out[DCX_MLX5_CMD_OUT_LEN];
    struct mlx5dv_devx_obj *obj;

    memset(out, 0, sizeof(out));
    errno = 0;
    obj   = mlx5dv_devx_obj_create(dev->ctx, in, inlen, out, sizeof(out));
    if (obj == NULL) {
        *ret_p = dcx_mlx5_xrq_cmd_failed(dev, what, out, errno);
        return NULL;
    }
    *num_p = dcx_mlx5_prm_get(out, DCX_MLX5_CMD_OBJ_NUM);
    *ret_p = 0;
    return obj;
}

static int dcx_mlx5_xrq_obj_modify(dcx_mlx5_dev_t *dev, const char *what,
                                   struct mlx5dv_devx_obj *obj, const void *in,
                                   size_t inlen)
{
    uint8_t out[DCX_MLX5_CMD_OUT_LEN];
    int ret;

    memset(out, 0, sizeof(out));
    ret = mlx5dv_devx_obj_modify(obj, in, inlen, out, sizeof(out));
    return (ret == 0) ? 0 : dcx_mlx5_xrq_cmd_failed(dev, what, out, ret);
}

/* ------------------------------------------------------------------------
 * List operations
 * ------------------------------------------------------------------------ */
static void dcx_mlx5_xrq_slot_free(dcx_mlx5_xrq_t *x, uint16_t idx)
{
    dcx_mlx5_xrq_slot_t *s = &x->slots[idx];

    if (!s->listed || s->add_due || s->del_due || !s->ended) {
        return;
    }
    s->listed                        = 0;
    s->next_free                     = DCX_MLX5_XRQ_NONE;
    x->slots[x->free_tail].next_free = idx;
    x->free_tail                     = idx;
}

/* Writes one list operation and rings the command QP's doorbell */
static void dcx_mlx5_xrq_wqe(dcx_mlx5_xrq_t *x, uint8_t op, uint8_t flags,
                             uint16_t index, uint16_t sw_cnt,
                             const dcx_tm_op_t *add)
{
    uint8_t *wqe = x->sq +
                   (size_t)(x->sq_pi & (x->sq_cnt - 1)) * MLX5_SEND_WQE_BB;
    struct mlx5_wqe_ctrl_seg *ctrl = (struct mlx5_wqe_ctrl_seg *)wqe;
    struct mlx5_wqe_tm_seg *tm     = (struct mlx5_wqe_tm_seg *)(ctrl + 1);
    struct mlx5_wqe_data_seg *ds   = (struct mlx5_wqe_data_seg *)(tm + 1);
    uint32_t size                  = sizeof(*ctrl) + sizeof(*tm);

    memset(wqe, 0, MLX5_SEND_WQE_BB);
    tm->opcode = (uint8_t)(op << 4);
    tm->flags  = flags;
    tm->index  = htobe16(index);
    tm->sw_cnt = htobe16(sw_cnt);
    if (add != NULL) {
        tm->append_tag  = htobe64(add->tag);
        tm->append_mask = htobe64(add->mask);
        if (add->num_sge == 1) {
            ds->byte_count = htobe32(add->sge.length);
            ds->lkey       = htobe32(add->sge.lkey);
            ds->addr       = htobe64(add->sge.addr);
            size += sizeof(*ds);
        }
    }
    ctrl->opmod_idx_opcode = htobe32(((uint32_t)x->sq_pi << 8) |
                                     MLX5_OPCODE_TAG_MATCHING);
    ctrl->qpn_ds           = htobe32((x->cmdn << 8) | (size / 16));
    x->sq_pi++;
    __atomic_thread_fence(__ATOMIC_RELEASE); /* the WQE before the record */
    x->sq_dbrec[MLX5_SND_DBR] = htobe32(x->sq_pi);
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the record before the bell */
    *(volatile uint64_t *)x->uar->reg_addr = *(const uint64_t *)wqe;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static int dcx_mlx5_xrq_tm_post(dcx_srq_t *super, dcx_tm_op_t *op)
{
    dcx_mlx5_srq_t *srq = (dcx_mlx5_srq_t *)super;
    dcx_mlx5_xrq_t *x   = srq->xrq;
    uint8_t flags       = DCX_MLX5_TM_F_CQE;
    dcx_mlx5_xrq_slot_t *s;
    dcx_mlx5_xrq_op_t *o;
    uint16_t slot = 0, next;

    if (x->failed) {
        dcx_error("%s: tm srq 0x%x: the command QP failed: no list "
                  "operations",
                  dcx_mlx5_xrq_name(x), x->xrqn);
        return EIO;
    }
    if (x->op_pi - x->op_ci >= super->tm_max_ops) {
        dcx_trace("%s: tm srq 0x%x: %u operations outstanding",
                  dcx_mlx5_xrq_name(x), x->xrqn, super->tm_max_ops);
        return ENOMEM;
    }
    if (op->flags & DCX_TM_OPF_SYNC) {
        flags |= DCX_MLX5_TM_F_SW_CNT;
    }
    switch (op->opcode) {
    case DCX_TM_OP_ADD:
        if (op->num_sge > 1) {
            dcx_error("%s: tm srq 0x%x: add of %u buffers, at most 1",
                      dcx_mlx5_xrq_name(x), x->xrqn, op->num_sge);
            return EINVAL;
        }
        slot = x->head;
        if (slot == x->free_tail) {
            dcx_debug("%s: tm srq 0x%x: tag list full (%u entries)",
                      dcx_mlx5_xrq_name(x), x->xrqn, super->tm_max_tags);
            return ENOMEM;
        }
        next = x->slots[slot].next_free;
        if (op->flags & DCX_TM_OPF_SYNC) {
            x->unexp_out = op->unexpected_cnt;
        }
        s             = &x->slots[slot];
        s->recv_wr_id = op->recv_wr_id;
        s->phase_cnt  = x->unexp_out;
        s->listed     = 1;
        s->add_due    = 1;
        s->del_due    = 0;
        s->ended      = 0;
        s->rndv_src   = 0;
        x->head       = next;
        op->handle    = slot;
        dcx_mlx5_xrq_wqe(x, DCX_MLX5_TM_OP_APPEND, flags, next,
                         op->unexpected_cnt, op);
        break;
    case DCX_TM_OP_DEL:
        if ((op->handle >= x->nslots) || !x->slots[op->handle].listed ||
            x->slots[op->handle].ended || x->slots[op->handle].del_due) {
            dcx_error("%s: tm srq 0x%x: delete of handle %u, which the "
                      "device does not own",
                      dcx_mlx5_xrq_name(x), x->xrqn, op->handle);
            return EINVAL;
        }
        slot                   = (uint16_t)op->handle;
        x->slots[slot].del_due = 1;
        dcx_mlx5_xrq_wqe(x, DCX_MLX5_TM_OP_REMOVE, flags, slot,
                         op->unexpected_cnt, NULL);
        break;
    case DCX_TM_OP_SYNC:
        dcx_mlx5_xrq_wqe(x, DCX_MLX5_TM_OP_NOP, flags, 0, op->unexpected_cnt,
                         NULL);
        break;
    default:
        dcx_error("%s: tm srq 0x%x: unknown list operation %u",
                  dcx_mlx5_xrq_name(x), x->xrqn, op->opcode);
        return EINVAL;
    }
    o           = &x->ops[x->op_pi++ & (x->sq_cnt - 1)];
    o->wr_id    = op->wr_id;
    o->slot     = slot;
    o->opcode   = op->opcode;
    o->signaled = (op->flags & DCX_TM_OPF_SIGNALED) != 0;
    return 0;
}

/* ------------------------------------------------------------------------
 * Completions
 * ------------------------------------------------------------------------ */
/* A list operation's CQE: the oldest outstanding operation retires */
static int dcx_mlx5_xrq_op_done(dcx_mlx5_xrq_t *x, const struct mlx5_cqe64 *cqe,
                                dcx_wc_t *wc)
{
    static const uint8_t app_op[] = {DCX_MLX5_TM_APPEND, DCX_MLX5_TM_REMOVE,
                                     DCX_MLX5_TM_NOOP};
    static const uint8_t wc_op[]  = {DCX_WC_TM_ADD, DCX_WC_TM_DEL,
                                     DCX_WC_TM_SYNC};
    uint16_t hw_cnt               = be16toh(cqe->tm_cqe.hw_phase_cnt);
    bool removed = (be32toh(cqe->tm_cqe.success) & MLX5_TMC_SUCCESS) != 0;
    dcx_mlx5_xrq_slot_t *s;
    dcx_mlx5_xrq_op_t *o;
    bool sync_req = false;

    if (x->op_ci == x->op_pi) {
        dcx_warn("%s: tm srq 0x%x: a list operation's CQE (app_op %u) with "
                 "none outstanding, dropped",
                 dcx_mlx5_xrq_name(x), x->xrqn, cqe->app_op);
        return 0;
    }
    o = &x->ops[x->op_ci++ & (x->sq_cnt - 1)];
    if (cqe->app_op != app_op[o->opcode]) {
        dcx_error("%s: tm srq 0x%x: CQE of list operation %u where %u was "
                  "due",
                  dcx_mlx5_xrq_name(x), x->xrqn, cqe->app_op,
                  app_op[o->opcode]);
    }
    if (o->opcode != DCX_TM_OP_SYNC) {
        s        = &x->slots[o->slot];
        sync_req = (hw_cnt != s->phase_cnt);
        if (o->opcode == DCX_TM_OP_ADD) {
            s->add_due = 0;
        } else {
            s->del_due = 0;
            s->ended |= removed;
        }
        dcx_mlx5_xrq_slot_free(x, o->slot);
    }
    if (!o->signaled) {
        return 0;
    }
    memset(wc, 0, sizeof(*wc));
    wc->wr_id  = o->wr_id;
    wc->opcode = wc_op[o->opcode];
    wc->status = ((o->opcode == DCX_TM_OP_DEL) && !removed) ? DCX_WC_TM_ERR :
                                                              DCX_WC_SUCCESS;
    wc->flags  = sync_req ? DCX_WC_FLAG_TM_SYNC_REQ : 0;
    wc->qp_num = x->cmdn;
    return 1;
}

/* A CQE about a listed entry's receive (the slot in app_info) */
static int dcx_mlx5_xrq_entry(dcx_mlx5_xrq_t *x, const struct mlx5_cqe64 *cqe,
                              uint8_t opcode, dcx_wc_t *wc)
{
    uint16_t idx = be16toh(cqe->app_info);
    const struct mlx5_err_cqe *err;
    dcx_mlx5_xrq_slot_t *s;

    if ((idx >= x->nslots) || !x->slots[idx].listed || x->slots[idx].ended) {
        dcx_warn("%s: tm srq 0x%x: a receive CQE (app_op %u) of slot %u, "
                 "which holds no entry, dropped",
                 dcx_mlx5_xrq_name(x), x->xrqn, cqe->app_op, idx);
        return 0;
    }
    s         = &x->slots[idx];
    wc->wr_id = s->recv_wr_id;
    if (opcode == MLX5_CQE_RESP_ERR) {
        err        = (const struct mlx5_err_cqe *)cqe;
        wc->status = dcx_mlx5_wc_status(dcx_mlx5_syndrome_status(err->syndrome));
        wc->vendor_err = err->vendor_err_synd;
        s->ended       = 1;
        dcx_mlx5_xrq_slot_free(x, idx);
        return 1;
    }
    switch (cqe->app_op) {
    case DCX_MLX5_TM_CONSUMED_MSG: /* expected eager, whole */
        wc->flags |= DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID;
        s->ended = 1;
        break;
    case DCX_MLX5_TM_CONSUMED: /* matched; the data follows */
        wc->flags |= DCX_WC_FLAG_TM_MATCH;
        wc->byte_len = 0;
        break;
    case DCX_MLX5_TM_EXPECTED: /* the data of a matched message */
        wc->flags |= DCX_WC_FLAG_TM_DATA_VALID;
        s->ended = 1;
        dcx_mlx5_xrq_slot_free(x, idx);
        return 1;                 /* no TMH in the CQE: tm_* are 0 */
    case DCX_MLX5_TM_CONSUMED_SW: /* a rendezvous left to software */
        wc->status = DCX_WC_TM_RNDV_INCOMPLETE;
        wc->flags |= DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID;
        s->ended     = 1;
        s->rndv_src  = 1;
        s->rndv_slid = wc->slid;
        break;
    default:
        dcx_warn("%s: tm srq 0x%x: a receive CQE of app_op %u, dropped",
                 dcx_mlx5_xrq_name(x), x->xrqn, cqe->app_op);
        return 0;
    }
    wc->tm_tag  = be64toh(cqe->tmh.tag);
    wc->tm_priv = be32toh(cqe->tmh.app_ctx);
    dcx_mlx5_xrq_slot_free(x, idx);
    return 1;
}

static int dcx_mlx5_xrq_cqe(dcx_mlx5_srq_t *srq, const struct mlx5_cqe64 *cqe,
                            dcx_wc_t *wc)
{
    dcx_mlx5_xrq_t *x = srq->xrq;
    uint8_t opcode    = cqe->op_own >> 4;
    uint32_t qpn      = be32toh(cqe->sop_drop_qpn) & 0xffffff;

    if (opcode == MLX5_CQE_NO_PACKET) {
        return dcx_mlx5_xrq_op_done(x, cqe, wc);
    }
    if ((opcode == MLX5_CQE_REQ) || (opcode == MLX5_CQE_REQ_ERR)) {
        if ((qpn == x->cmdn) && (opcode == MLX5_CQE_REQ_ERR) && !x->failed) {
            /* a list operation the device did not take: the command QP
             * is in error and the list is no longer software's */
            x->failed = true;
            dcx_error("%s: tm srq 0x%x: command QP 0x%x failed (syndrome "
                      "0x%x): no more list operations",
                      dcx_mlx5_xrq_name(x), x->xrqn, qpn,
                      ((const struct mlx5_err_cqe *)cqe)->syndrome);
        }
        return 0;
    }
    memset(wc, 0, sizeof(*wc));
    wc->opcode   = DCX_WC_TM_RECV;
    wc->qp_num   = qpn;
    wc->src_qp   = be32toh(cqe->flags_rqpn) & 0xffffff;
    wc->slid     = be16toh(cqe->slid);
    wc->byte_len = be32toh(cqe->byte_cnt);
    if (opcode == MLX5_CQE_RESP_SEND_IMM) {
        wc->flags = DCX_WC_FLAG_WITH_IMM;
        wc->imm   = be32toh(cqe->imm_inval_pkey);
    }
    if ((opcode == MLX5_CQE_RESP_ERR) ||
        (cqe->app_op == DCX_MLX5_TM_CONSUMED_MSG) ||
        (cqe->app_op == DCX_MLX5_TM_CONSUMED) ||
        (cqe->app_op == DCX_MLX5_TM_EXPECTED) ||
        (cqe->app_op == DCX_MLX5_TM_CONSUMED_SW)) {
        return dcx_mlx5_xrq_entry(x, cqe, opcode, wc);
    }
    /* a message whole in an XRQ WQE */
    wc->wr_id = dcx_mlx5_raw_srq_done(srq->raw, be16toh(cqe->wqe_counter));
    if (cqe->app_op == DCX_MLX5_TM_NO_TAG) {
        wc->opcode = DCX_WC_TM_NO_TAG;
    } else if (cqe->app_op == DCX_MLX5_TM_UNEXPECTED) {
        x->unexp_in++;
        if ((uint16_t)(x->unexp_in - x->unexp_out) > DCX_MLX5_TM_SYNC_DIFF) {
            wc->flags |= DCX_WC_FLAG_TM_SYNC_REQ;
        }
    } else {
        dcx_warn("%s: tm srq 0x%x: a receive CQE of app_op %u in WQE %u, "
                 "taken as unexpected",
                 dcx_mlx5_xrq_name(x), x->xrqn, cqe->app_op,
                 be16toh(cqe->wqe_counter));
    }
    return 1;
}

static int dcx_mlx5_xrq_rndv_src(dcx_srq_t *super, uint64_t wr_id, void *addr,
                                 size_t *len_p)
{
    dcx_mlx5_xrq_t *x = ((dcx_mlx5_srq_t *)super)->xrq;
    dcx_mlx5_addr_t a;
    uint32_t i;

    for (i = 0; i < x->nslots; ++i) {
        if (x->slots[i].rndv_src && (x->slots[i].recv_wr_id == wr_id) &&
            (x->slots[i].rndv_slid != 0)) {
            break;
        }
    }
    if (i == x->nslots) {
        dcx_error("%s: tm srq 0x%x: no incomplete rendezvous of receive "
                  "0x%llx with a sender's LID",
                  dcx_mlx5_xrq_name(x), x->xrqn, (unsigned long long)wr_id);
        return ENOENT;
    }
    /* tag matching runs on InfiniBand ports only: the LID names the port */
    memset(&a, 0, sizeof(a));
    a.mtu = x->dev->addr.mtu;
    a.lid = x->slots[i].rndv_slid;
    if (*len_p < DCX_MLX5_ADDR_LEN) {
        dcx_error("%s: tm srq 0x%x: sender's address: buffer of %zu bytes, "
                  "need %u",
                  dcx_mlx5_xrq_name(x), x->xrqn, *len_p, DCX_MLX5_ADDR_LEN);
        return ENOSPC;
    }
    return dcx_mlx5_addr_pack(&a, addr, len_p);
}

/* ------------------------------------------------------------------------
 * Creation
 * ------------------------------------------------------------------------ */
static int dcx_mlx5_xrq_mem(dcx_mlx5_xrq_t *x, unsigned i, size_t len)
{
    len = (len + DCX_MLX5_XRQ_PAGE - 1) & ~(size_t)(DCX_MLX5_XRQ_PAGE - 1);
    if (posix_memalign(&x->mem[i], DCX_MLX5_XRQ_PAGE, len) != 0) {
        x->mem[i] = NULL;
        dcx_error("%s: tm srq: out of memory (%zu bytes)", dcx_mlx5_xrq_name(x),
                  len);
        return ENOMEM;
    }
    memset(x->mem[i], 0, len);
    errno      = 0;
    x->umem[i] = mlx5dv_devx_umem_reg(x->dev->ctx, x->mem[i], len,
                                      IBV_ACCESS_LOCAL_WRITE);
    if (x->umem[i] == NULL) {
        int ret = errno ? errno : ENOMEM;

        dcx_error("%s: tm srq: mlx5dv_devx_umem_reg(%zu bytes) failed: %s",
                  dcx_mlx5_xrq_name(x), len, strerror(ret));
        return ret;
    }
    return 0;
}

static void dcx_mlx5_xrq_free(dcx_mlx5_xrq_t *x)
{
    unsigned i;

    for (i = 0; i < 3; ++i) {
        if (x->umem[i] != NULL) {
            mlx5dv_devx_umem_dereg(x->umem[i]);
        }
        free(x->mem[i]);
    }
    if (x->uar != NULL) {
        mlx5dv_devx_free_uar(x->uar);
    }
    free(x->slots);
    free(x->ops);
    free(x);
}

static int dcx_mlx5_xrq_make(dcx_mlx5_xrq_t *x, uint32_t pdn, uint32_t cqn,
                             uint32_t log_list, uint32_t wqe_cnt,
                             uint32_t stride)
{
    dcx_mlx5_dev_t *dev = x->dev;
    uint8_t in[DCX_MLX5_XRQ_IN_LEN];
    uint8_t dc[DCX_MLX5_XRQ_DC_IN_LEN];
    const uint32_t wq = DCX_MLX5_XRQ_WQ;
    int ret;

    memset(in, 0, sizeof(in));
    dcx_mlx5_prm_set(in, 0, 16, DCX_MLX5_CMD_CREATE_XRQ);
    dcx_mlx5_prm_set(in, DCX_MLX5_XRQC_TOPOLOGY, DCX_MLX5_XRQ_TOPO_TM);
    dcx_mlx5_prm_set(in, DCX_MLX5_XRQC_OFFLOAD, DCX_MLX5_XRQ_OFFLOAD_RNDV);
    dcx_mlx5_prm_set(in, DCX_MLX5_XRQC_DC, 1);
    dcx_mlx5_prm_set(in, DCX_MLX5_XRQC_CQN, cqn);
    dcx_mlx5_prm_set(in, DCX_MLX5_XRQC_LOG_LIST, log_list);
    dcx_mlx5_prm_set(in, wq + DCX_MLX5_WQ_TYPE, 0);
    dcx_mlx5_prm_set(in, wq + DCX_MLX5_WQ_PD, pdn);
    dcx_mlx5_prm_set64(in, wq + DCX_MLX5_WQ_DBR_ADDR, 0);
    dcx_mlx5_prm_set(in, wq + DCX_MLX5_WQ_LOG_STRIDE,
                     dcx_mlx5_xrq_log2(stride));
    dcx_mlx5_prm_set(in, wq + DCX_MLX5_WQ_LOG_SZ, dcx_mlx5_xrq_log2(wqe_cnt));
    dcx_mlx5_prm_set(in, wq + DCX_MLX5_WQ_DBR_UMEM, x->umem[2]->umem_id);
    dcx_mlx5_prm_set(in, wq + DCX_MLX5_WQ_UMEM, x->umem[0]->umem_id);
    x->obj = dcx_mlx5_xrq_obj_create(dev, "CREATE_XRQ", in, sizeof(in),
                                     &x->xrqn, &ret);
    if (x->obj == NULL) {
        return ret;
    }
    memset(dc, 0, sizeof(dc));
    dcx_mlx5_prm_set(dc, 0, 16, DCX_MLX5_CMD_SET_XRQ_DC);
    dcx_mlx5_prm_set(dc, DCX_MLX5_CMD_IN_OBJ_NUM, x->xrqn);
    dcx_mlx5_prm_set(dc, DCX_MLX5_XRQ_DC_ACK_TMO, DCX_MLX5_TM_ACK_TMO);
    dcx_mlx5_prm_set(dc, DCX_MLX5_XRQ_DC_MTU, dev->path_mtu);
    dcx_mlx5_prm_set(dc, DCX_MLX5_XRQ_DC_PKEY_INDEX, 0);
    return dcx_mlx5_xrq_obj_modify(dev, "SET_XRQ_DC_PARAMS_ENTRY", x->obj, dc,
                                   sizeof(dc));
}

/* The command QP: RC on the XRQ, connected to itself, taken to RTS */
static int dcx_mlx5_xrq_cmd_qp(dcx_mlx5_xrq_t *x, uint32_t pdn, uint32_t cqn)
{
    static const struct {
        uint16_t op;
        const char *what;
    } steps[]           = {{DCX_MLX5_CMD_RST2INIT_QP, "RST2INIT_QP"},
                           {DCX_MLX5_CMD_INIT2RTR_QP, "INIT2RTR_QP"},
                           {DCX_MLX5_CMD_RTR2RTS_QP, "RTR2RTS_QP"}};
    dcx_mlx5_dev_t *dev = x->dev;
    uint8_t in[DCX_MLX5_QP_IN_LEN];
    unsigned i;
    int ret;

    memset(in, 0, sizeof(in));
    dcx_mlx5_prm_set(in, 0, 16, DCX_MLX5_CMD_CREATE_QP);
    dcx_mlx5_prm_set(in, DCX_MLX5_QPC_ST, 0);
    dcx_mlx5_prm_set(in, DCX_MLX5_QPC_PD, pdn);
    dcx_mlx5_prm_set(in, DCX_MLX5_QPC_LOG_SQ_SZ, dcx_mlx5_xrq_log2(x->sq_cnt));
    dcx_mlx5_prm_set(in, DCX_MLX5_QPC_UAR_PAGE, x->uar->page_id);
    dcx_mlx5_prm_set(in, DCX_MLX5_QPC_CQN_SND, cqn);
    dcx_mlx5_prm_set(in, DCX_MLX5_QPC_CQN_RCV, cqn);
    dcx_mlx5_prm_set64(in, DCX_MLX5_QPC_DBR_ADDR, 8); /* after the XRQ's */
    dcx_mlx5_prm_set(in, DCX_MLX5_QPC_RQ_TYPE, 1);
    dcx_mlx5_prm_set(in, DCX_MLX5_QPC_SRQN, x->xrqn);
    dcx_mlx5_prm_set(in, DCX_MLX5_QP_DBR_UMEM, x->umem[2]->umem_id);
    dcx_mlx5_prm_set(in, DCX_MLX5_QP_WQ_UMEM, x->umem[1]->umem_id);
    x->cmd = dcx_mlx5_xrq_obj_create(dev, "CREATE_QP (command QP)", in,
                                     sizeof(in), &x->cmdn, &ret);
    if (x->cmd == NULL) {
        return ret;
    }
    for (i = 0; i < sizeof(steps) / sizeof(steps[0]); ++i) {
        memset(in, 0, sizeof(in));
        dcx_mlx5_prm_set(in, 0, 16, steps[i].op);
        dcx_mlx5_prm_set(in, DCX_MLX5_CMD_IN_OBJ_NUM, x->cmdn);
        dcx_mlx5_prm_set(in, DCX_MLX5_QPC_PORT, dev->port);
        if (steps[i].op == DCX_MLX5_CMD_INIT2RTR_QP) {
            dcx_mlx5_prm_set(in, DCX_MLX5_QPC_MTU, dev->path_mtu);
            dcx_mlx5_prm_set(in, DCX_MLX5_QPC_REMOTE_QPN, x->cmdn);
            dcx_mlx5_prm_set(in, DCX_MLX5_QPC_RLID, dev->addr.lid);
            dcx_mlx5_prm_set(in, DCX_MLX5_QPC_LOG_RRA, DCX_MLX5_TM_LOG_SRA);
            dcx_mlx5_prm_set(in, DCX_MLX5_QPC_MIN_RNR, DCX_MLX5_TM_RNR_MIN);
        } else if (steps[i].op == DCX_MLX5_CMD_RTR2RTS_QP) {
            dcx_mlx5_prm_set(in, DCX_MLX5_QPC_ACK_TMO, DCX_MLX5_TM_ACK_TMO);
            dcx_mlx5_prm_set(in, DCX_MLX5_QPC_LOG_SRA, DCX_MLX5_TM_LOG_SRA);
            dcx_mlx5_prm_set(in, DCX_MLX5_QPC_RETRY, 7);
            dcx_mlx5_prm_set(in, DCX_MLX5_QPC_RNR_RETRY, 7);
        }
        ret = dcx_mlx5_xrq_obj_modify(dev, steps[i].what, x->cmd, in,
                                      sizeof(in));
        if (ret != 0) {
            return ret;
        }
    }
    return 0;
}

static int dcx_mlx5_xrq_attr_check(dcx_mlx5_srq_t *srq,
                                   const dcx_srq_attr_t *attr)
{
    const dcx_dev_caps_t *caps = &srq->super.dev->caps;

    if ((attr->tm_max_tags == 0) || (attr->tm_max_tags > caps->tm_max_tags) ||
        (attr->tm_max_ops == 0) || (attr->tm_max_ops > caps->tm_max_ops) ||
        (attr->max_wr + 1 > 0x10000)) {
        dcx_error("%s: tm srq: invalid attributes (tm_max_tags %u of %u, "
                  "tm_max_ops %u of %u, max_wr %u)",
                  caps->name, attr->tm_max_tags, caps->tm_max_tags,
                  attr->tm_max_ops, caps->tm_max_ops, attr->max_wr);
        return EINVAL;
    }
    return 0;
}

int dcx_mlx5_xrq_create(dcx_mlx5_srq_t *srq, const dcx_srq_attr_t *attr)
{
    dcx_mlx5_dev_t *dev = dcx_mlx5_dev(srq->super.dev);
    dcx_mlx5_cq_t *cq   = srq->cq;
    uint32_t nslots, wqe_cnt, stride, i;
    struct mlx5dv_pd dvpd;
    struct mlx5dv_obj obj;
    dcx_mlx5_raw_cq_t *rc;
    dcx_mlx5_xrq_t *x;
    uint8_t *wqe;
    int ret;

    ret = dcx_mlx5_xrq_attr_check(srq, attr);
    if (ret != 0) {
        return ret;
    }
    rc = cq->raw;
    if (rc->tm_srq != NULL) {
        dcx_error("%s: tm srq: its CQ 0x%x serves another tag-matching SRQ",
                  dev->super.caps.name, rc->cqn);
        return EINVAL;
    }
    memset(&obj, 0, sizeof(obj));
    memset(&dvpd, 0, sizeof(dvpd));
    obj.pd.in  = ((dcx_mlx5_pd_t *)srq->super.pd)->pd;
    obj.pd.out = &dvpd;
    ret        = mlx5dv_init_obj(&obj, MLX5DV_OBJ_PD);
    if (ret != 0) {
        dcx_error("%s: tm srq: mlx5dv_init_obj(PD) failed: %s",
                  dev->super.caps.name, strerror(ret));
        return ret;
    }

    nslots  = 1u << dcx_mlx5_xrq_log2(attr->tm_max_tags + 1);
    wqe_cnt = 1u << dcx_mlx5_xrq_log2(attr->max_wr + 1);
    stride  = 1u << dcx_mlx5_xrq_log2(sizeof(struct mlx5_wqe_srq_next_seg) +
                                      srq->super.max_sge *
                                          sizeof(struct mlx5_wqe_data_seg));
    x       = calloc(1, sizeof(*x));
    if (x != NULL) {
        x->dev    = dev;
        x->nslots = nslots;
        x->sq_cnt = 1u << dcx_mlx5_xrq_log2(attr->tm_max_ops);
        x->slots  = calloc(nslots, sizeof(*x->slots));
        x->ops    = calloc(x->sq_cnt, sizeof(*x->ops));
    }
    if ((x == NULL) || (x->slots == NULL) || (x->ops == NULL)) {
        dcx_error("%s: tm srq: out of memory", dev->super.caps.name);
        if (x != NULL) {
            dcx_mlx5_xrq_free(x);
        }
        return ENOMEM;
    }
    /* a new list: every slot free, in order; the head is slot 0 */
    for (i = 0; i < nslots; ++i) {
        x->slots[i].next_free = (uint16_t)((i + 1 < nslots) ?
                                               i + 1 :
                                               DCX_MLX5_XRQ_NONE);
    }
    x->free_tail = (uint16_t)(nslots - 1);

    ret = dcx_mlx5_xrq_mem(x, 0, (size_t)wqe_cnt * stride);
    ret = (ret != 0) ?
              ret :
              dcx_mlx5_xrq_mem(x, 1, (size_t)x->sq_cnt * MLX5_SEND_WQE_BB);
    ret = (ret != 0) ? ret : dcx_mlx5_xrq_mem(x, 2, 64);
    if (ret != 0) {
        goto err_free;
    }
    /* the XRQ's WQEs: a linked list 0 .. wqe_cnt - 1, the last the tail */
    for (i = 0, wqe = x->mem[0]; i + 1 < wqe_cnt; ++i, wqe += stride) {
        ((struct mlx5_wqe_srq_next_seg *)wqe)->next_wqe_index =
            htobe16((uint16_t)(i + 1));
    }
    x->sq       = x->mem[1];
    x->sq_dbrec = (volatile __be32 *)((uint8_t *)x->mem[2] + 8);
    errno       = 0;
    x->uar      = mlx5dv_devx_alloc_uar(dev->ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
    if (x->uar == NULL) {
        ret = errno ? errno : ENOMEM;
        dcx_error("%s: tm srq: mlx5dv_devx_alloc_uar failed: %s",
                  dev->super.caps.name, strerror(ret));
        goto err_free;
    }

    ret = dcx_mlx5_xrq_make(x, dvpd.pdn, rc->cqn, dcx_mlx5_xrq_log2(nslots),
                            wqe_cnt, stride);
    ret = (ret != 0) ? ret : dcx_mlx5_xrq_cmd_qp(x, dvpd.pdn, rc->cqn);
    ret = (ret != 0) ?
              ret :
              dcx_mlx5_raw_srq_setup(srq, x->mem[0], stride, wqe_cnt, 0,
                                     wqe_cnt - 1, (volatile __be32 *)x->mem[2]);
    if (ret != 0) {
        goto err_destroy;
    }
    srq->xrq               = x;
    srq->tm_cqe            = dcx_mlx5_xrq_cqe;
    srq->raw_cq            = cq;
    srq->super.max_wr      = wqe_cnt - 1;
    srq->super.tm_max_tags = nslots - 1;
    srq->super.tm_max_ops  = attr->tm_max_ops;
    srq->super.tm_post     = dcx_mlx5_xrq_tm_post;
    srq->super.tm_rndv_src = dcx_mlx5_xrq_rndv_src;
    rc->tm_srq             = srq;
    rc->multi_srq |= (rc->srq != NULL) && (rc->srq != srq);
    rc->srq = (rc->srq != NULL) ? rc->srq : srq;
    dcx_debug("%s: tm srq 0x%x: %u tags, %u operations, %u buffers, command "
              "QP 0x%x",
              dev->super.caps.name, x->xrqn, nslots - 1, attr->tm_max_ops,
              wqe_cnt - 1, x->cmdn);
    return 0;

err_destroy:
    if (x->cmd != NULL) {
        mlx5dv_devx_obj_destroy(x->cmd);
    }
    if (x->obj != NULL) {
        mlx5dv_devx_obj_destroy(x->obj);
    }
err_free:
    dcx_mlx5_xrq_free(x);
    return ret;
}

int dcx_mlx5_xrq_destroy(dcx_mlx5_srq_t *srq)
{
    dcx_mlx5_xrq_t *x = srq->xrq;
    int ret;

    if (x->cmd != NULL) {
        ret = mlx5dv_devx_obj_destroy(x->cmd);
        if (ret != 0) {
            dcx_error("%s: tm srq 0x%x: destroying command QP 0x%x failed: "
                      "%s",
                      dcx_mlx5_xrq_name(x), x->xrqn, x->cmdn, strerror(ret));
            return ret;
        }
        x->cmd = NULL;
    }
    ret = mlx5dv_devx_obj_destroy(x->obj);
    if (ret != 0) {
        dcx_error("%s: tm srq 0x%x: destroying the XRQ failed: %s",
                  dcx_mlx5_xrq_name(x), x->xrqn, strerror(ret));
        return ret;
    }
    if (srq->raw_cq->raw->tm_srq == srq) {
        srq->raw_cq->raw->tm_srq = NULL;
    }
    dcx_mlx5_xrq_free(x);
    srq->xrq = NULL;
    return 0;
}

/* ------------------------------------------------------------------------
 * DCTs on the XRQ
 * ------------------------------------------------------------------------ */
int dcx_mlx5_xrq_dct_create(dcx_mlx5_qp_t *qp, dcx_mlx5_pd_t *pd)
{
    dcx_mlx5_dev_t *dev    = dcx_mlx5_dev(pd->super.dev);
    const dcx_qp_attr_t *a = &qp->attr;
    dcx_mlx5_srq_t *srq    = (dcx_mlx5_srq_t *)a->srq;
    uint8_t in[DCX_MLX5_DCT_IN_LEN];
    struct mlx5dv_pd dvpd;
    struct mlx5dv_obj obj;
    dcx_mlx5_raw_cq_t *rc;
    uint32_t dctn = 0;
    int ret;

    if (qp->recv_cq != srq->cq) {
        dcx_error("%s: dct: on a tag-matching SRQ its receive CQ must be the "
                  "SRQ's",
                  dev->super.caps.name);
        return EINVAL;
    }
    memset(&obj, 0, sizeof(obj));
    memset(&dvpd, 0, sizeof(dvpd));
    obj.pd.in  = pd->pd;
    obj.pd.out = &dvpd;
    ret        = mlx5dv_init_obj(&obj, MLX5DV_OBJ_PD);
    if (ret != 0) {
        dcx_error("%s: dct: mlx5dv_init_obj(PD) failed: %s",
                  dev->super.caps.name, strerror(ret));
        return ret;
    }
    memset(in, 0, sizeof(in));
    dcx_mlx5_prm_set(in, 0, 16, DCX_MLX5_CMD_CREATE_DCT);
    dcx_mlx5_prm_set(in, DCX_MLX5_DCTC_OFFLOAD, DCX_MLX5_XRQ_OFFLOAD_RNDV);
    dcx_mlx5_prm_set(in, DCX_MLX5_DCTC_CQN, srq->raw_cq->raw->cqn);
    dcx_mlx5_prm_set(in, DCX_MLX5_DCTC_RRE,
                     !!(a->access & DCX_ACCESS_REMOTE_READ));
    dcx_mlx5_prm_set(in, DCX_MLX5_DCTC_RWE,
                     !!(a->access & DCX_ACCESS_REMOTE_WRITE));
    dcx_mlx5_prm_set(in, DCX_MLX5_DCTC_RAE,
                     !!(a->access & DCX_ACCESS_REMOTE_ATOMIC));
    if (a->access & DCX_ACCESS_REMOTE_ATOMIC) {
        /* operands up to 8 bytes, the extended (masked) atomics included,
         * as the kernel gives a verbs DCT on a device that has them: the
         * IB-compatible default takes the standard 8-byte ones only */
        dcx_mlx5_prm_set(in, DCX_MLX5_DCTC_ATOMIC, DCX_MLX5_ATOMIC_MODE_8B);
    }
    dcx_mlx5_prm_set(in, DCX_MLX5_DCTC_MIN_RNR, a->min_rnr_timer);
    dcx_mlx5_prm_set(in, DCX_MLX5_DCTC_SRQN, srq->xrq->xrqn);
    dcx_mlx5_prm_set(in, DCX_MLX5_DCTC_PD, dvpd.pdn);
    dcx_mlx5_prm_set64(in, DCX_MLX5_DCTC_KEY, a->dc_key);
    dcx_mlx5_prm_set(in, DCX_MLX5_DCTC_MTU, dev->path_mtu);
    dcx_mlx5_prm_set(in, DCX_MLX5_DCTC_PORT, dev->port);
    qp->devx_dct = dcx_mlx5_xrq_obj_create(dev, "CREATE_DCT", in, sizeof(in),
                                           &dctn, &ret);
    if (qp->devx_dct == NULL) {
        return ret;
    }
    qp->super.qp_num = dctn;
    qp->super.state  = DCX_QPS_RTR;
    rc               = qp->recv_cq->raw;
    rc->multi_srq |= (rc->srq != NULL) && (rc->srq != srq);
    rc->srq = (rc->srq != NULL) ? rc->srq : srq;
    return 0;
}

int dcx_mlx5_xrq_dct_destroy(dcx_mlx5_qp_t *qp)
{
    int ret = mlx5dv_devx_obj_destroy(qp->devx_dct); /* the caller logs */

    if (ret == 0) {
        qp->devx_dct = NULL;
    }
    return ret;
}
