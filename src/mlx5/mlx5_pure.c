/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: pure rules of QPs and their work (see mlx5_pure.h):
 * modify-QP masks, DCI send queue sizing, completion and work request
 * translation, the outstanding-WR ring and the QP-number map.  The rules
 * of the device and its ports are in mlx5_pure_dev.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_pure.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DCX_MLX5_ALIGN(_x, _a) (((_x) + (_a)-1) / (_a) * (_a))

/* ------------------------------------------------------------------------
 * Modify-QP masks
 * ------------------------------------------------------------------------ */
#define DCI_RTS_REQUIRED                                                   \
    (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | \
     IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_SQ_PSN)

/* clang-format off */
const dcx_mlx5_qp_transition_t dcx_mlx5_qp_transitions[] = {
    /* DCI: the destination comes with each WR, so no DEST_QPN, RQ_PSN,
     * MAX_DEST_RD_ATOMIC, and no ACCESS_FLAGS at RESET->INIT. */
    {DCX_QPT_DCI, DCX_QPS_RESET, DCX_QPS_INIT,
     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT, 0},
    {DCX_QPT_DCI, DCX_QPS_INIT,  DCX_QPS_INIT,
     IBV_QP_STATE, IBV_QP_PKEY_INDEX | IBV_QP_PORT},
    /* AV is accepted only by newer kernels; the backend does not send it. */
    {DCX_QPT_DCI, DCX_QPS_INIT,  DCX_QPS_RTR,
     IBV_QP_STATE | IBV_QP_PATH_MTU, IBV_QP_PKEY_INDEX | IBV_QP_AV},
    {DCX_QPT_DCI, DCX_QPS_RTR,   DCX_QPS_RTS,
     DCI_RTS_REQUIRED, IBV_QP_MIN_RNR_TIMER},
    {DCX_QPT_DCI, DCX_QPS_RTS,   DCX_QPS_RTS,
     IBV_QP_STATE, IBV_QP_MIN_RNR_TIMER},
    /* to RESET from anywhere, to ERR from anywhere but RESET: state only */
    {DCX_QPT_DCI, DCX_QPS_RESET, DCX_QPS_RESET, IBV_QP_STATE, 0},
    {DCX_QPT_DCI, DCX_QPS_INIT,  DCX_QPS_RESET, IBV_QP_STATE, 0},
    {DCX_QPT_DCI, DCX_QPS_RTR,   DCX_QPS_RESET, IBV_QP_STATE, 0},
    {DCX_QPT_DCI, DCX_QPS_RTS,   DCX_QPS_RESET, IBV_QP_STATE, 0},
    {DCX_QPT_DCI, DCX_QPS_ERR,   DCX_QPS_RESET, IBV_QP_STATE, 0},
    {DCX_QPT_DCI, DCX_QPS_INIT,  DCX_QPS_ERR,   IBV_QP_STATE, 0},
    {DCX_QPT_DCI, DCX_QPS_RTR,   DCX_QPS_ERR,   IBV_QP_STATE, 0},
    {DCX_QPT_DCI, DCX_QPS_RTS,   DCX_QPS_ERR,   IBV_QP_STATE, 0},
    {DCX_QPT_DCI, DCX_QPS_ERR,   DCX_QPS_ERR,   IBV_QP_STATE, 0},
    /* UMR: an RC QP connected to itself (no receive queue use, no RDMA
     * responder rights needed: UMR work requests are local). */
    {DCX_QPT_UMR, DCX_QPS_RESET, DCX_QPS_INIT,
     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
    {DCX_QPT_UMR, DCX_QPS_INIT,  DCX_QPS_RTR,
     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
     IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS},
    {DCX_QPT_UMR, DCX_QPS_RTR,   DCX_QPS_RTS,
     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC, IBV_QP_ACCESS_FLAGS},
    {DCX_QPT_UMR, DCX_QPS_RESET, DCX_QPS_RESET, IBV_QP_STATE, 0},
    {DCX_QPT_UMR, DCX_QPS_INIT,  DCX_QPS_RESET, IBV_QP_STATE, 0},
    {DCX_QPT_UMR, DCX_QPS_RTR,   DCX_QPS_RESET, IBV_QP_STATE, 0},
    {DCX_QPT_UMR, DCX_QPS_RTS,   DCX_QPS_RESET, IBV_QP_STATE, 0},
    {DCX_QPT_UMR, DCX_QPS_ERR,   DCX_QPS_RESET, IBV_QP_STATE, 0},
    {DCX_QPT_UMR, DCX_QPS_INIT,  DCX_QPS_ERR,   IBV_QP_STATE, 0},
    {DCX_QPT_UMR, DCX_QPS_RTR,   DCX_QPS_ERR,   IBV_QP_STATE, 0},
    {DCX_QPT_UMR, DCX_QPS_RTS,   DCX_QPS_ERR,   IBV_QP_STATE, 0},
    {DCX_QPT_UMR, DCX_QPS_ERR,   DCX_QPS_ERR,   IBV_QP_STATE, 0},
    /* DCT: exactly two transitions with exact masks; it gets its number at
     * INIT->RTR and can never be moved to ERR or RESET. */
    {DCX_QPT_DCT, DCX_QPS_RESET, DCX_QPS_INIT,
     IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT, 0},
    {DCX_QPT_DCT, DCX_QPS_INIT,  DCX_QPS_RTR,
     IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV | IBV_QP_PATH_MTU, 0},
};
/* clang-format on */

const size_t dcx_mlx5_qp_transitions_count = sizeof(dcx_mlx5_qp_transitions) /
                                             sizeof(dcx_mlx5_qp_transitions[0]);

const dcx_mlx5_qp_transition_t *dcx_mlx5_qp_transition_find(dcx_qp_type_t type,
                                                            dcx_qp_state_t from,
                                                            dcx_qp_state_t to)
{
    size_t i;

    for (i = 0; i < dcx_mlx5_qp_transitions_count; ++i) {
        const dcx_mlx5_qp_transition_t *t = &dcx_mlx5_qp_transitions[i];

        if ((t->type == type) && (t->from == from) && (t->to == to)) {
            return t;
        }
    }
    return NULL;
}

int dcx_mlx5_qp_mask_check(dcx_qp_type_t type, dcx_qp_state_t from,
                           dcx_qp_state_t to, uint32_t mask)
{
    const dcx_mlx5_qp_transition_t *t;

    t = dcx_mlx5_qp_transition_find(type, from, to);
    if (t == NULL) {
        return EINVAL;
    }
    if ((mask & t->required) != t->required) {
        return EINVAL;
    }
    if (mask & ~(t->required | t->optional)) {
        return EINVAL;
    }
    return 0;
}

enum ibv_qp_state dcx_mlx5_qp_state_to_ibv(dcx_qp_state_t state)
{
    /* clang-format off */
    switch (state) {
    case DCX_QPS_RESET: return IBV_QPS_RESET;
    case DCX_QPS_INIT:  return IBV_QPS_INIT;
    case DCX_QPS_RTR:   return IBV_QPS_RTR;
    case DCX_QPS_RTS:   return IBV_QPS_RTS;
    default:            return IBV_QPS_ERR;
    }
    /* clang-format on */
}

const char *dcx_mlx5_qp_state_str(dcx_qp_state_t state)
{
    /* clang-format off */
    switch (state) {
    case DCX_QPS_RESET: return "RESET";
    case DCX_QPS_INIT:  return "INIT";
    case DCX_QPS_RTR:   return "RTR";
    case DCX_QPS_RTS:   return "RTS";
    case DCX_QPS_ERR:   return "ERR";
    default:            return "?";
    }
    /* clang-format on */
}

/* ------------------------------------------------------------------------
 * WQE sizing
 * ------------------------------------------------------------------------ */
uint32_t dcx_mlx5_dci_overhead(uint64_t ops)
{
    uint32_t size = DCX_MLX5_CTRL_SEG;

    if (ops & (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
               IBV_QP_EX_WITH_RDMA_READ)) {
        if (size < DCX_MLX5_CTRL_SEG + DCX_MLX5_RADDR_SEG) {
            size = DCX_MLX5_CTRL_SEG + DCX_MLX5_RADDR_SEG;
        }
    }
    if (ops & (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
               IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)) {
        if (size <
            DCX_MLX5_CTRL_SEG + DCX_MLX5_RADDR_SEG + DCX_MLX5_ATOMIC_SEG) {
            size = DCX_MLX5_CTRL_SEG + DCX_MLX5_RADDR_SEG + DCX_MLX5_ATOMIC_SEG;
        }
    }
    if (ops & (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)) {
        if (size < DCX_MLX5_UMR_OVERHEAD) {
            size = DCX_MLX5_UMR_OVERHEAD;
        }
    }
    return size + DCX_MLX5_DATAGRAM_SEG;
}

static uint64_t dcx_mlx5_roundup_pow2(uint64_t x)
{
    uint64_t p = 1;

    while (p < x) {
        p <<= 1;
    }
    return p;
}

int dcx_mlx5_dci_sq_size(uint64_t ops, uint32_t max_send_wr,
                         uint32_t max_send_sge, uint32_t max_inline,
                         uint32_t max_desc_size, uint32_t max_wqebb,
                         dcx_mlx5_sq_size_t *out)
{
    uint32_t overhead = dcx_mlx5_dci_overhead(ops);
    uint64_t size, inl_size = 0, tot, wqe, wq;

    if ((max_send_wr == 0) || (max_desc_size <= overhead)) {
        return EINVAL;
    }
    if (max_inline > 0) {
        inl_size = overhead +
                   DCX_MLX5_ALIGN((uint64_t)DCX_MLX5_INL_HDR + max_inline, 16);
    }
    if (max_send_sge > (max_desc_size - overhead) / DCX_MLX5_DATA_SEG) {
        return EINVAL;
    }
    size = overhead + (uint64_t)max_send_sge * DCX_MLX5_DATA_SEG;
    tot  = (size > inl_size) ? size : inl_size;
    if (tot > max_desc_size) {
        return EINVAL;
    }
    wqe = DCX_MLX5_ALIGN(tot, DCX_MLX5_WQE_BB);
    if (wqe > max_desc_size) {
        return EINVAL;
    }
    if (max_send_wr > 0x7fffffffu / max_desc_size) {
        return EINVAL;
    }
    wq = dcx_mlx5_roundup_pow2((uint64_t)max_send_wr * wqe);
    if (wq / DCX_MLX5_WQE_BB > max_wqebb) {
        return EINVAL;
    }
    out->wqe_size   = (uint32_t)wqe;
    out->max_inline = (uint32_t)(wqe - overhead - DCX_MLX5_INL_HDR);
    out->max_post   = (uint32_t)(wq / wqe);
    out->wqe_bbs    = (uint32_t)(wq / DCX_MLX5_WQE_BB);
    return 0;
}

uint32_t dcx_mlx5_dci_max_wr(uint32_t wqe_size, uint32_t max_wqebb)
{
    uint64_t bytes = (uint64_t)max_wqebb * DCX_MLX5_WQE_BB;
    uint64_t p     = 1;

    if ((wqe_size == 0) || (bytes < wqe_size)) {
        return 0;
    }
    while ((p << 1) <= bytes) {
        p <<= 1;
    }
    return (uint32_t)(p / wqe_size);
}

/* ------------------------------------------------------------------------
 * Completions and work requests
 * ------------------------------------------------------------------------ */
dcx_wc_status_t dcx_mlx5_wc_status(enum ibv_wc_status status)
{
    /* clang-format off */
    switch (status) {
    case IBV_WC_SUCCESS:            return DCX_WC_SUCCESS;
    case IBV_WC_LOC_LEN_ERR:        return DCX_WC_LOC_LEN_ERR;
    case IBV_WC_LOC_QP_OP_ERR:      return DCX_WC_LOC_QP_OP_ERR;
    case IBV_WC_LOC_PROT_ERR:       return DCX_WC_LOC_PROT_ERR;
    case IBV_WC_LOC_ACCESS_ERR:     return DCX_WC_LOC_PROT_ERR;
    case IBV_WC_WR_FLUSH_ERR:       return DCX_WC_WR_FLUSH_ERR;
    case IBV_WC_REM_INV_REQ_ERR:    return DCX_WC_REM_INV_REQ_ERR;
    case IBV_WC_REM_INV_RD_REQ_ERR: return DCX_WC_REM_INV_REQ_ERR;
    case IBV_WC_REM_ACCESS_ERR:     return DCX_WC_REM_ACCESS_ERR;
    case IBV_WC_REM_OP_ERR:         return DCX_WC_REM_OP_ERR;
    case IBV_WC_REM_ABORT_ERR:      return DCX_WC_REM_OP_ERR;
    case IBV_WC_RETRY_EXC_ERR:      return DCX_WC_RETRY_EXC_ERR;
    case IBV_WC_RESP_TIMEOUT_ERR:   return DCX_WC_RETRY_EXC_ERR;
    case IBV_WC_RNR_RETRY_EXC_ERR:  return DCX_WC_RNR_RETRY_EXC_ERR;
    case IBV_WC_TM_ERR:             return DCX_WC_TM_ERR;
    case IBV_WC_TM_RNDV_INCOMPLETE: return DCX_WC_TM_RNDV_INCOMPLETE;
    default:                        return DCX_WC_GENERAL_ERR;
    }
    /* clang-format on */
}

enum ibv_wc_status dcx_mlx5_syndrome_status(uint8_t syndrome)
{
    /* clang-format off */
    switch (syndrome) {
    case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR:        return IBV_WC_LOC_LEN_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR:         return IBV_WC_LOC_QP_OP_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR:          return IBV_WC_LOC_PROT_ERR;
    case MLX5_CQE_SYNDROME_WR_FLUSH_ERR:            return IBV_WC_WR_FLUSH_ERR;
    case MLX5_CQE_SYNDROME_MW_BIND_ERR:             return IBV_WC_MW_BIND_ERR;
    case MLX5_CQE_SYNDROME_BAD_RESP_ERR:            return IBV_WC_BAD_RESP_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR:        return IBV_WC_LOC_ACCESS_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:    return IBV_WC_REM_INV_REQ_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR:       return IBV_WC_REM_ACCESS_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_OP_ERR:           return IBV_WC_REM_OP_ERR;
    case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR: return IBV_WC_RETRY_EXC_ERR;
    case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR:       return IBV_WC_RNR_RETRY_EXC_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR:      return IBV_WC_REM_ABORT_ERR;
    default:                                        return IBV_WC_GENERAL_ERR;
    }
    /* clang-format on */
}

int dcx_mlx5_wc_opcode(enum ibv_wc_opcode opcode, dcx_wc_opcode_t *out)
{
    /* clang-format off */
    switch (opcode) {
    case IBV_WC_SEND:               *out = DCX_WC_SEND;               break;
    case IBV_WC_RDMA_WRITE:         *out = DCX_WC_RDMA_WRITE;         break;
    case IBV_WC_RDMA_READ:          *out = DCX_WC_RDMA_READ;          break;
    case IBV_WC_COMP_SWAP:          *out = DCX_WC_COMP_SWAP;          break;
    case IBV_WC_FETCH_ADD:          *out = DCX_WC_FETCH_ADD;          break;
    case IBV_WC_LOCAL_INV:          *out = DCX_WC_LOCAL_INV;          break;
    case IBV_WC_DRIVER1:            *out = DCX_WC_UMR;                break;
    case IBV_WC_RECV:               *out = DCX_WC_RECV;               break;
    case IBV_WC_RECV_RDMA_WITH_IMM: *out = DCX_WC_RECV_RDMA_WITH_IMM; break;
    case IBV_WC_TM_ADD:             *out = DCX_WC_TM_ADD;             break;
    case IBV_WC_TM_DEL:             *out = DCX_WC_TM_DEL;             break;
    case IBV_WC_TM_SYNC:            *out = DCX_WC_TM_SYNC;            break;
    case IBV_WC_TM_RECV:            *out = DCX_WC_TM_RECV;            break;
    case IBV_WC_TM_NO_TAG:          *out = DCX_WC_TM_NO_TAG;          break;
    default:
        return EINVAL;
    }
    /* clang-format on */
    return 0;
}

/* a table: a send completion looks it up, every one */
const uint8_t dcx_mlx5_wc_op[DCX_WR_OPCODE_LAST] = {
    [DCX_WR_SEND]                = DCX_WC_SEND,
    [DCX_WR_SEND_IMM]            = DCX_WC_SEND,
    [DCX_WR_RDMA_WRITE]          = DCX_WC_RDMA_WRITE,
    [DCX_WR_RDMA_WRITE_IMM]      = DCX_WC_RDMA_WRITE,
    [DCX_WR_RDMA_READ]           = DCX_WC_RDMA_READ,
    [DCX_WR_ATOMIC_FADD]         = DCX_WC_FETCH_ADD,
    [DCX_WR_ATOMIC_CSWAP]        = DCX_WC_COMP_SWAP,
    [DCX_WR_ATOMIC_MASKED_FADD]  = DCX_WC_MASKED_FETCH_ADD,
    [DCX_WR_ATOMIC_MASKED_CSWAP] = DCX_WC_MASKED_COMP_SWAP};

dcx_wc_opcode_t dcx_mlx5_wr_wc_opcode(dcx_wr_opcode_t opcode)
{
    if ((unsigned)opcode < DCX_WR_OPCODE_LAST) {
        return (dcx_wc_opcode_t)dcx_mlx5_wc_op[opcode];
    }
    switch (opcode) {
    case DCX_WR_MKEY_INTERLEAVED:
    case DCX_WR_MKEY_LIST:
        return DCX_WC_UMR;
    case DCX_WR_MKEY_INVALIDATE:
        return DCX_WC_LOCAL_INV;
    default:
        return DCX_WC_SEND;
    }
}

unsigned dcx_mlx5_send_flags(unsigned dcx_flags)
{
    unsigned flags = 0;

    if (dcx_flags & DCX_SEND_SIGNALED) {
        flags |= IBV_SEND_SIGNALED;
    }
    if (dcx_flags & DCX_SEND_FENCE) {
        flags |= IBV_SEND_FENCE;
    }
    if (dcx_flags & DCX_SEND_SOLICITED) {
        flags |= IBV_SEND_SOLICITED;
    }
    return flags;
}

unsigned dcx_mlx5_access_flags(uint32_t dcx_access)
{
    unsigned flags = 0;

    if (dcx_access & DCX_ACCESS_LOCAL_WRITE) {
        flags |= IBV_ACCESS_LOCAL_WRITE;
    }
    if (dcx_access & DCX_ACCESS_REMOTE_WRITE) {
        flags |= IBV_ACCESS_REMOTE_WRITE;
    }
    if (dcx_access & DCX_ACCESS_REMOTE_READ) {
        flags |= IBV_ACCESS_REMOTE_READ;
    }
    if (dcx_access & DCX_ACCESS_REMOTE_ATOMIC) {
        flags |= IBV_ACCESS_REMOTE_ATOMIC;
    }
    return flags;
}

/* ------------------------------------------------------------------------
 * Outstanding-WR ring
 * ------------------------------------------------------------------------ */
int dcx_mlx5_ring_init(dcx_mlx5_ring_t *ring, uint32_t size, uint64_t base)
{
    uint64_t slots = dcx_mlx5_roundup_pow2(size);

    if (size == 0) {
        return EINVAL;
    }
    ring->slots = calloc(slots, sizeof(*ring->slots));
    if (ring->slots == NULL) {
        return ENOMEM;
    }
    ring->size = size;
    ring->mask = (uint32_t)(slots - 1);
    ring->head = base;
    ring->tail = base;
    return 0;
}

void dcx_mlx5_ring_cleanup(dcx_mlx5_ring_t *ring)
{
    free(ring->slots);
    ring->slots = NULL;
    ring->size  = 0;
    ring->mask  = 0;
}

/* The slot of seq retired into *wc (seq within the ring).  A completion's
 * common case, success, takes no call: the status mapping is for errors. */
static inline void dcx_mlx5_ring_retire(dcx_mlx5_ring_t *ring, uint64_t seq,
                                        enum ibv_wc_status status,
                                        uint32_t qp_num, dcx_wc_t *wc)
{
    const dcx_mlx5_wr_slot_t *slot = &ring->slots[seq & ring->mask];

    ring->tail = seq + 1;
    memset(wc, 0, sizeof(*wc));
    wc->wr_id  = slot->wr_id;
    wc->opcode = (uint8_t)dcx_mlx5_wr_wc_opcode((dcx_wr_opcode_t)slot->opcode);
    wc->qp_num = qp_num;
    wc->status = (status == IBV_WC_SUCCESS) ?
                     DCX_WC_SUCCESS :
                     (uint8_t)dcx_mlx5_wc_status(status);
}

dcx_mlx5_cqe_action_t dcx_mlx5_ring_cqe(dcx_mlx5_ring_t *ring, uint64_t seq,
                                        enum ibv_wc_status status,
                                        uint32_t qp_num, dcx_wc_t *wc)
{
    if ((seq < ring->tail) || (seq >= ring->head)) {
        return DCX_MLX5_CQE_DROP;
    }
    if (status == IBV_WC_WR_FLUSH_ERR) {
        /* Flush CQEs may cover only some WRs (signalled ones, or one per
         * WQE range); the ring reports all of them, in order. */
        return DCX_MLX5_CQE_FLUSHED;
    }
    dcx_mlx5_ring_retire(ring, seq, status, qp_num, wc);
    return (status == IBV_WC_SUCCESS) ? DCX_MLX5_CQE_REPORT :
                                        DCX_MLX5_CQE_FAILED;
}

int dcx_mlx5_ring_take(dcx_mlx5_ring_t *ring, uint64_t seq,
                       enum ibv_wc_status status, uint32_t qp_num, dcx_wc_t *wc)
{
    if ((seq < ring->tail) || (seq >= ring->head)) {
        return 0;
    }
    dcx_mlx5_ring_retire(ring, seq, status, qp_num, wc);
    return 1;
}

int dcx_mlx5_ring_flush_one(dcx_mlx5_ring_t *ring, uint32_t qp_num,
                            dcx_wc_t *wc)
{
    const dcx_mlx5_wr_slot_t *slot;

    if (ring->tail == ring->head) {
        return 0;
    }
    slot = &ring->slots[ring->tail & ring->mask];
    memset(wc, 0, sizeof(*wc));
    wc->wr_id  = slot->wr_id;
    wc->status = DCX_WC_WR_FLUSH_ERR;
    wc->opcode = (uint8_t)dcx_mlx5_wr_wc_opcode((dcx_wr_opcode_t)slot->opcode);
    wc->qp_num = qp_num;
    ++ring->tail;
    return 1;
}

/* ------------------------------------------------------------------------
 * QP-number map
 * ------------------------------------------------------------------------ */
void dcx_mlx5_qpmap_init(dcx_mlx5_qpmap_t *map)
{
    map->slots = NULL;
    map->mask  = 0;
    map->count = 0;
}

void dcx_mlx5_qpmap_cleanup(dcx_mlx5_qpmap_t *map)
{
    free(map->slots);
    dcx_mlx5_qpmap_init(map);
}

static uint32_t dcx_mlx5_qpmap_home(const dcx_mlx5_qpmap_t *map, uint32_t qpn)
{
    return (qpn * 2654435761u) & map->mask;
}

static void dcx_mlx5_qpmap_place(dcx_mlx5_qpmap_t *map, uint32_t qpn, void *obj)
{
    uint32_t i = dcx_mlx5_qpmap_home(map, qpn);

    while (map->slots[i].obj != NULL) {
        i = (i + 1) & map->mask;
    }
    map->slots[i].qpn = qpn;
    map->slots[i].obj = obj;
}

static int dcx_mlx5_qpmap_grow(dcx_mlx5_qpmap_t *map)
{
    dcx_mlx5_qpmap_t bigger;
    uint32_t cap = (map->slots == NULL) ? 16 : (map->mask + 1) * 2;
    uint32_t i;

    bigger.slots = calloc(cap, sizeof(*bigger.slots));
    if (bigger.slots == NULL) {
        return ENOMEM;
    }
    bigger.mask  = cap - 1;
    bigger.count = map->count;
    if (map->slots != NULL) {
        for (i = 0; i <= map->mask; ++i) {
            if (map->slots[i].obj != NULL) {
                dcx_mlx5_qpmap_place(&bigger, map->slots[i].qpn,
                                     map->slots[i].obj);
            }
        }
    }
    free(map->slots);
    *map = bigger;
    return 0;
}

int dcx_mlx5_qpmap_insert(dcx_mlx5_qpmap_t *map, uint32_t qpn, void *obj)
{
    int ret;

    if (obj == NULL) {
        return EINVAL;
    }
    if (dcx_mlx5_qpmap_find(map, qpn) != NULL) {
        return EEXIST;
    }
    /* keep the load at most one half so probes stay short */
    if ((map->slots == NULL) || ((map->count + 1) * 2 > map->mask + 1)) {
        ret = dcx_mlx5_qpmap_grow(map);
        if (ret != 0) {
            return ret;
        }
    }
    dcx_mlx5_qpmap_place(map, qpn, obj);
    ++map->count;
    return 0;
}

int dcx_mlx5_qpmap_remove(dcx_mlx5_qpmap_t *map, uint32_t qpn)
{
    uint32_t i, j, home;

    if (map->slots == NULL) {
        return ENOENT;
    }
    for (i = dcx_mlx5_qpmap_home(map, qpn);
         map->slots[i].qpn != qpn || map->slots[i].obj == NULL;
         i = (i + 1) & map->mask) {
        if (map->slots[i].obj == NULL) {
            return ENOENT;
        }
    }
    /* Backward-shift deletion: move later members of the probe run into
     * the hole when their home slot does not lie between hole and them. */
    map->slots[i].obj = NULL;
    j                 = i;
    for (;;) {
        j = (j + 1) & map->mask;
        if (map->slots[j].obj == NULL) {
            break;
        }
        home = dcx_mlx5_qpmap_home(map, map->slots[j].qpn);
        if (((j - home) & map->mask) >= ((j - i) & map->mask)) {
            map->slots[i]     = map->slots[j];
            map->slots[j].obj = NULL;
            i                 = j;
        }
    }
    --map->count;
    return 0;
}
