/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: queue pairs.  DCIs and DCTs (mlx5dv_create_qp with
 * MLX5DV_QP_INIT_ATTR_MASK_DC) and RC QPs (ibv_create_qp; their responder
 * and connection in emu_rc.c).
 *
 * Creation applies libmlx5's and the kernel's checks (comp masks, send-op
 * flags per type, SRQ and CQs present) and sizes the send queue as libmlx5
 * does (emu_qp_size): the reported max_inline_data and max_send_wr are
 * those a ConnectX-6 gives for the same request.  ibv_modify_qp enforces
 * the kernel's exact masks per type and transition (emu_qp_trans) and
 * takes the effects: a DCI's timers at RTS (dcx_soft_qp_set_timers), the
 * soft DCT created at INIT->RTR (where the DCT gets its number), RESET
 * discarding the QP's completions not yet polled and its outstanding WRs,
 * ERR flushing them.  Posting (ibv_wr_complete) is allowed from the first
 * RTS after a RESET until the next RESET, as libmlx5 swaps wr_complete.
 */
#include "emu/emu_qbuf.h"
#include "emu/emu_raw.h"
#include "emu/emu_dv.h"
#include "soft/dcx_soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* What libmlx5 accepts in the verbs and mlx5 comp masks */
#define EMU_QP_COMP_MASK                                               \
    (IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |                     \
     IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_MAX_TSO_HEADER | \
     IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |           \
     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
#define EMU_DV_COMP_MASK                                                      \
    (MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS | MLX5DV_QP_INIT_ATTR_MASK_DC | \
     MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS |                                \
     MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS)
/* Send ops of a DCI (libmlx5 refuses TSO and ATOMIC_WRITE on one) */
#define EMU_DCI_OPS                                                            \
    (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV |                      \
     IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |                \
     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |           \
     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
     IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)
#define EMU_RDMA_OPS                                                  \
    (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
     IBV_QP_EX_WITH_RDMA_READ)
#define EMU_ATOMIC_OPS \
    (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
/* Send ops of a UD QP */
#define EMU_UD_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
/* What a UD QP's send queue takes beyond the application's WR: the GRH
 * slot in front of every datagram (emu_ud.c), one more sge or 40 more
 * inline bytes */
#define EMU_UD_GRH_LEN 40u
#define EMU_UMR_DV_OPS \
    (MLX5DV_QP_EX_WITH_MR_INTERLEAVED | MLX5DV_QP_EX_WITH_MR_LIST)

/* Send WQE sizing of libmlx5 (bytes): segments and the device's largest
 * send descriptor.  libmlx5 bounds a WQE by max_sq_desc_sz, which the
 * kernel passes from the HCA capability max_wqe_sz_sq: 1024 on ConnectX-4
 * and later (the kernel's own query_device caps it at 512 only to derive
 * max_sge, so max_sge stays 30 while a WQE may take 1024 bytes, e.g. an
 * RC QP with 512 bytes of inline data). */
#define EMU_SEG_CTRL     16u
#define EMU_SEG_RADDR    16u
#define EMU_SEG_ATOMIC   16u
#define EMU_SEG_DGRAM    48u
#define EMU_SEG_UMR_CTRL 48u
#define EMU_SEG_MKEY_CTX 64u
#define EMU_SEG_KLM_MIN  64u
#define EMU_SEG_DATA     16u
#define EMU_SEG_INL_HDR  4u
#define EMU_WQE_BB       64u
#define EMU_MAX_DESC_SZ  1024u

static uint32_t emu_align(uint32_t v, uint32_t a)
{
    return (v + a - 1) & ~(a - 1);
}

static uint32_t emu_pow2(uint64_t v)
{
    uint64_t p = 1;

    while (p < v) {
        p <<= 1;
    }
    return (uint32_t)p;
}

/* The per-WQE bytes before data: the largest operation's segments, plus
 * the datagram segment of a DCI. */
static uint32_t emu_qp_overhead(emu_qp_kind_t kind, uint64_t ops,
                                uint64_t dv_ops)
{
    uint32_t size = EMU_SEG_CTRL, op;

    if (ops & EMU_RDMA_OPS) {
        op   = EMU_SEG_CTRL + EMU_SEG_RADDR;
        size = (op > size) ? op : size;
    }
    if (ops & EMU_ATOMIC_OPS) {
        op   = EMU_SEG_CTRL + EMU_SEG_RADDR + EMU_SEG_ATOMIC;
        size = (op > size) ? op : size;
    }
    if ((ops & (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)) ||
        (dv_ops & EMU_UMR_DV_OPS)) {
        op = EMU_SEG_CTRL + EMU_SEG_UMR_CTRL + EMU_SEG_MKEY_CTX +
             EMU_SEG_KLM_MIN;
        size = (op > size) ? op : size;
    }
    return size +
           (((kind == EMU_QP_DCI) || (kind == EMU_QP_UD)) ? EMU_SEG_DGRAM : 0);
}

__thread bool emu_qp_sizing_quiet;

/* Sizes the send queue as libmlx5 does; EINVAL when the WQE would be
 * larger than the device's descriptor or the queue deeper than it takes.
 * cap is updated with what was granted. */
static int emu_qp_size(emu_qp_t *qp, const dcx_dev_caps_t *caps,
                       struct ibv_qp_cap *cap, const char *name)
{
    uint32_t ovh     = emu_qp_overhead(qp->kind, qp->send_ops, qp->dv_ops);
    /* a UD QP's GRH slot takes one sge and 40 inline bytes of the
     * device's */
    uint32_t grh     = (qp->kind == EMU_QP_UD) ? EMU_UD_GRH_LEN : 0;
    uint32_t max_sge = !grh                             ? caps->max_sge :
                       (caps->max_sge < EMU_UD_MAX_SGE) ? caps->max_sge - 1 :
                                                          EMU_UD_MAX_SGE - 1;
    uint32_t size, inl = 0, wqe, wq;

    if ((cap->max_send_wr == 0) || (cap->max_send_wr > caps->max_qp_wr) ||
        (cap->max_send_sge > max_sge)) {
        emu_error("%s: create_qp: max_send_wr %u (1..%u) or max_send_sge %u "
                  "(<= %u) out of range",
                  name, cap->max_send_wr, caps->max_qp_wr, cap->max_send_sge,
                  max_sge);
        return EINVAL;
    }
    if (cap->max_inline_data != 0) {
        inl = ovh + emu_align(EMU_SEG_INL_HDR + cap->max_inline_data, 16);
    }
    size = ovh + cap->max_send_sge * EMU_SEG_DATA;
    size = (size > inl) ? size : inl;
    if (size > EMU_MAX_DESC_SZ) {
        /* at debug level: libmlx5 says it only at its debug verbosity, and
         * programs find the device's largest WQE this way (dcx's UMR
         * probe, src/mlx5/mlx5_mkey.c) */
        emu_debug("%s: create_qp: a WQE of %u bytes (%u sge, %u inline "
                  "bytes) exceeds the device's %u",
                  name, size, cap->max_send_sge, cap->max_inline_data,
                  EMU_MAX_DESC_SZ);
        return EINVAL;
    }
    if (cap->max_inline_data + grh > caps->max_inline) {
        /* a descriptor holds more than the soft device copies inline: the
         * request is refused as one above the descriptor is, quietly */
        emu_debug("%s: create_qp: %u inline bytes exceed the %u the device "
                  "takes",
                  name, cap->max_inline_data, caps->max_inline - grh);
        return EINVAL;
    }
    wqe = emu_align(size, EMU_WQE_BB);
    wq  = emu_pow2((uint64_t)cap->max_send_wr * wqe);
    if (wq / EMU_WQE_BB > caps->max_qp_wr) {
        /* the queue's basic blocks are what the HCA bounds (ENOMEM, as
         * the kernel answers); a DEVX QP's sizing tries it quietly */
        emu_log(emu_qp_sizing_quiet ? DCX_LOG_DEBUG : DCX_LOG_ERROR,
                "%s: create_qp: %u WRs of %u bytes need %u basic blocks, "
                "more than the device's %u",
                name, cap->max_send_wr, wqe, wq / EMU_WQE_BB, caps->max_qp_wr);
        return ENOMEM;
    }
    qp->max_send_wr  = wq / wqe;
    qp->sq_wqe_cnt   = wq / EMU_WQE_BB;
    qp->max_send_sge = cap->max_send_sge;
    qp->max_inline   = wqe - ovh - EMU_SEG_INL_HDR;
    if ((qp->max_send_wr > caps->max_qp_wr) ||
        (qp->max_inline > caps->max_inline)) {
        qp->max_send_wr = (qp->max_send_wr > caps->max_qp_wr) ?
                              caps->max_qp_wr :
                              qp->max_send_wr;
        qp->max_inline  = (qp->max_inline > caps->max_inline) ?
                              caps->max_inline :
                              qp->max_inline;
    }
    if (qp->max_inline + grh > caps->max_inline) {
        qp->max_inline = caps->max_inline - grh;
    }
    cap->max_send_wr     = qp->max_send_wr;
    cap->max_inline_data = qp->max_inline;
    return 0;
}

/* The number the program sees: the soft device's, which lies in the
 * window of numbers of the port's LID registration (emu_sm.c) when the
 * device has no more QPs than the window has room for.  One past the
 * window would name another port's QP: the soft QP is destroyed, ENOMEM. */
int emu_qp_number(emu_qp_t *qp, const char *name)
{
    uint32_t num  = qp->soft->qp_num;
    uint32_t base = qp->ctx->dev->qpn_base;

    if (num - base >= EMU_QPN_SPAN) {
        emu_error("%s: create_qp: soft QP number 0x%x outside the port's "
                  "window of %u numbers from 0x%x",
                  name, num, EMU_QPN_SPAN, base);
        dcx_qp_destroy(qp->soft);
        qp->soft = NULL;
        return ENOMEM;
    }
    qp->qpx.qp_base.qp_num = num;
    return 0;
}

void emu_dct_scat_mark(emu_qp_t *qp, bool on)
{
    emu_dev_t *dev = qp->ctx->dev;
    uint32_t i     = qp->qpx.qp_base.qp_num - dev->qpn_base;

    if (!qp->scat64 || (i >= EMU_QPN_SPAN)) {
        return;
    }
    if (on) {
        __atomic_or_fetch(&dev->scat64[i / 8], (uint8_t)(1u << (i % 8)),
                          __ATOMIC_RELEASE);
    } else {
        __atomic_and_fetch(&dev->scat64[i / 8], (uint8_t) ~(1u << (i % 8)),
                           __ATOMIC_RELEASE);
    }
}

/* A DCT's responder scatter-to-CQE, as rdma-core 44 and mlx5_ib set it
 * up: libmlx5 asks for it on every QP unless MLX5_SCATTER_TO_CQE is "0"
 * or the DCT is created with MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE
 * (the device reports the DCT flavour of it), and the kernel then gives a
 * DCT the mode "up to 64 bytes" only when its receive CQ has 128-byte
 * CQEs: a DCT has no 32-byte mode */
static bool emu_dct_scatter(const emu_cq_t *recv_cq,
                            const struct mlx5dv_qp_init_attr *dv)
{
    const char *env = getenv("MLX5_SCATTER_TO_CQE");

    if ((dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS) &&
        (dv->create_flags & MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE)) {
        return false;
    }
    if ((env != NULL) && (strcmp(env, "0") == 0)) {
        return false;
    }
    return recv_cq->cqe_size == 128;
}

/* ------------------------------------------------------------------------
 * Creation
 * ------------------------------------------------------------------------ */
/* The checks of libmlx5 and the kernel; errno value or 0.  *silent_p:
 * the failure libmlx5 reports without setting errno. */
static int emu_qp_check(emu_qp_t *qp, struct ibv_qp_init_attr_ex *attr,
                        struct mlx5dv_qp_init_attr *dv, const char *name,
                        bool *silent_p)
{
    uint64_t dv_mask = (dv != NULL) ? dv->comp_mask : 0;
    uint32_t create_flags;

    *silent_p = false;
    if (attr->comp_mask & ~EMU_QP_COMP_MASK) {
        emu_error("%s: create_qp: unknown comp_mask bits 0x%x (libmlx5 "
                  "fails without setting errno)",
                  name, attr->comp_mask & ~EMU_QP_COMP_MASK);
        *silent_p = true;
        return EINVAL;
    }
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || (attr->pd == NULL)) {
        emu_error("%s: create_qp: IBV_QP_INIT_ATTR_PD and a PD are required",
                  name);
        return EINVAL;
    }
    if (dv_mask & ~(uint64_t)EMU_DV_COMP_MASK) {
        emu_error("%s: create_qp: unknown mlx5 comp_mask bits 0x%llx", name,
                  (unsigned long long)(dv_mask & ~(uint64_t)EMU_DV_COMP_MASK));
        return EINVAL;
    }
    if ((attr->send_cq == NULL) || (attr->recv_cq == NULL)) {
        emu_error("%s: create_qp: send_cq and recv_cq are both required", name);
        return EINVAL;
    }
    if (attr->comp_mask &
        (IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
         IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH)) {
        emu_error("%s: create_qp: comp_mask 0x%x asks for XRC, TSO or RSS, "
                  "not modelled",
                  name, attr->comp_mask);
        return EOPNOTSUPP;
    }
    /* A UD QP may block the loopback of its own multicast: with no
     * multicast group to join (ibv_attach_mcast is not modelled) nothing
     * of its own ever comes back, so the flag holds as asked */
    create_flags = (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) ?
                       attr->create_flags :
                       0;
    if (attr->qp_type == IBV_QPT_UD) {
        create_flags &= ~(uint32_t)IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
    }
    if (create_flags != 0) {
        emu_error("%s: create_qp: create_flags 0x%x on QP type %d, not "
                  "modelled",
                  name, create_flags, (int)attr->qp_type);
        return EOPNOTSUPP;
    }
    if (dv_mask & MLX5DV_QP_INIT_ATTR_MASK_DC) {
        if (attr->qp_type != IBV_QPT_DRIVER) {
            emu_error("%s: create_qp: DC attributes on QP type %d", name,
                      (int)attr->qp_type);
            return EINVAL;
        }
        switch (dv->dc_init_attr.dc_type) {
        case MLX5DV_DCTYPE_DCI:
            qp->kind = EMU_QP_DCI;
            break;
        case MLX5DV_DCTYPE_DCT:
            qp->kind = EMU_QP_DCT;
            break;
        default:
            emu_error("%s: create_qp: dc_type %d", name,
                      (int)dv->dc_init_attr.dc_type);
            return EINVAL;
        }
    } else if (attr->qp_type == IBV_QPT_RC) {
        qp->kind = EMU_QP_RC;
    } else if (attr->qp_type == IBV_QPT_UD) {
        qp->kind = EMU_QP_UD;
    } else if (attr->qp_type == IBV_QPT_DRIVER) {
        emu_error("%s: create_qp: IBV_QPT_DRIVER without DC attributes", name);
        return EINVAL;
    } else {
        emu_error("%s: create_qp: QP type %d is not modelled (DCI, DCT, RC "
                  "and UD only)",
                  name, (int)attr->qp_type);
        return EOPNOTSUPP;
    }
    qp->send_ops = (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ?
                       attr->send_ops_flags :
                       0;
    qp->dv_ops   = (dv_mask & MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS) ?
                       dv->send_ops_flags :
                       0;
    return 0;
}

/* A DCI's streams (MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS): at most what
 * mlx5dv_query_device reports (the soft device's stream channels) */
static int emu_qp_check_streams(emu_qp_t *qp, struct mlx5dv_qp_init_attr *dv,
                                const dcx_dev_caps_t *caps, const char *name)
{
    const struct mlx5dv_dci_streams *s = &dv->dc_init_attr.dci_streams;
    uint32_t max_c = 0, max_e = 0;

    if (caps->flags & DCX_CAP_DCI_STREAMS) {
        max_c = caps->dci_streams_log_max;
        max_e = caps->dci_errored_log_max;
    }
    if ((s->log_num_concurent > max_c) || (s->log_num_errored > max_e)) {
        emu_error("%s: create_qp: DCI streams 2^%u concurrent, 2^%u errored: "
                  "the device allows at most 2^%u and 2^%u",
                  name, s->log_num_concurent, s->log_num_errored, max_c, max_e);
        return EINVAL;
    }
    /* the mask makes a DCI of streams, one stream (log 0) included */
    qp->num_streams = 1u << s->log_num_concurent;
    return 0;
}

static int emu_qp_check_kind(emu_qp_t *qp, struct ibv_qp_init_attr_ex *attr,
                             struct mlx5dv_qp_init_attr *dv,
                             const dcx_dev_caps_t *caps, const char *name)
{
    uint64_t dv_mask = (dv != NULL) ? dv->comp_mask : 0;

    switch (qp->kind) {
    case EMU_QP_DCT:
        if ((attr->comp_mask & ~IBV_QP_INIT_ATTR_PD) ||
            (dv_mask & ~(uint64_t)(MLX5DV_QP_INIT_ATTR_MASK_DC |
                                   MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS)) ||
            ((dv_mask & MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS) &&
             (dv->create_flags & ~MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE))) {
            emu_error("%s: create_qp: a DCT takes only a PD (comp_mask 0x%x), "
                      "DC attributes and no create flag but disabling "
                      "scatter-to-CQE",
                      name, attr->comp_mask);
            return EINVAL;
        }
        if (attr->srq == NULL) {
            emu_error("%s: create_qp: a DCT needs an SRQ", name);
            return EINVAL;
        }
        return 0;
    case EMU_QP_DCI:
        if (qp->send_ops & ~(uint64_t)EMU_DCI_OPS) {
            emu_error("%s: create_qp: send ops 0x%llx are not offered on a "
                      "DCI",
                      name, (unsigned long long)(qp->send_ops & ~EMU_DCI_OPS));
            return EOPNOTSUPP;
        }
        if (qp->dv_ops != 0) {
            emu_error("%s: create_qp: mlx5 send ops 0x%llx on a DCI (raw WQE "
                      "and memcpy are not modelled, UMR is RC only)",
                      name, (unsigned long long)qp->dv_ops);
            return EOPNOTSUPP;
        }
        if (dv_mask & MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS) {
            return emu_qp_check_streams(qp, dv, caps, name);
        }
        return 0;
    case EMU_QP_UD:
        if ((qp->send_ops & ~(uint64_t)EMU_UD_OPS) || (qp->dv_ops != 0)) {
            emu_error("%s: create_qp: send ops 0x%llx, mlx5 ops 0x%llx: a UD "
                      "QP of the emulation sends SEND and SEND_WITH_IMM only",
                      name, (unsigned long long)qp->send_ops,
                      (unsigned long long)qp->dv_ops);
            return EOPNOTSUPP;
        }
        return 0;
    default: /* RC */
        if (qp->send_ops & ~(uint64_t)(EMU_DCI_OPS)) {
            emu_error("%s: create_qp: send ops 0x%llx are not offered on an "
                      "RC QP",
                      name, (unsigned long long)(qp->send_ops & ~EMU_DCI_OPS));
            return EOPNOTSUPP;
        }
        if (qp->dv_ops &
            ~(uint64_t)(EMU_UMR_DV_OPS | MLX5DV_QP_EX_WITH_MKEY_CONFIGURE)) {
            emu_error("%s: create_qp: mlx5 send ops 0x%llx not modelled on "
                      "RC (raw WQE, memcpy)",
                      name, (unsigned long long)qp->dv_ops);
            return EOPNOTSUPP;
        }
        return 0;
    }
}

/* A DCI with streams: each stream gets an equal share of the send queue,
 * with sequences of its own.  The HCA has one queue that libmlx5 frees in
 * posting order, which its completions presumably keep across streams;
 * the soft device completes each stream on its own, and a queue freed in
 * posting order over it would let an idle stream's last unsignaled WRs
 * (retired by nothing until that stream signals again) hold every other
 * stream's slots.  A stream that posts more than its share meets ENOMEM
 * before the queue is full. */
static int emu_qp_streams_init(emu_qp_t *qp, const char *name)
{
    if (qp->max_send_wr < qp->num_streams) {
        emu_error("%s: create_qp: a send queue of %u for %u streams", name,
                  qp->max_send_wr, qp->num_streams);
        return EINVAL;
    }
    qp->st_depth   = qp->max_send_wr / qp->num_streams;
    qp->st_posted  = calloc(qp->num_streams, sizeof(*qp->st_posted));
    qp->st_retired = calloc(qp->num_streams, sizeof(*qp->st_retired));
    return ((qp->st_posted == NULL) || (qp->st_retired == NULL)) ? ENOMEM : 0;
}

static int emu_qp_make_soft(emu_qp_t *qp, struct mlx5dv_qp_init_attr *dv,
                            const char *name)
{
    dcx_qp_attr_t a;
    int ret;

    memset(&a, 0, sizeof(a));
    a.type         = DCX_QPT_DCI; /* the soft device's UMR QP too */
    a.send_cq      = qp->send_cq->soft;
    /* a WQE written in queue memory may take a single basic block, so a
     * queue of sq_wqe_cnt blocks holds that many WQEs whatever size the
     * verbs path's max_send_wr was computed for (which emu_wr.c keeps) */
    a.max_send_wr  = (qp->sq_wqe_cnt > qp->max_send_wr) ? qp->sq_wqe_cnt :
                                                          qp->max_send_wr;
    /* the device's most: a WQE an application writes itself may carry as
     * many data segments as its size holds (the ibv_wr_* path keeps to
     * max_send_sge, emu_wr.c) */
    a.max_send_sge = dcx_dev_caps(qp->ctx->dev->soft)->max_sge;
    a.max_inline   = qp->max_inline;
    if (qp->kind == EMU_QP_UD) {
        a.max_send_sge = qp->max_send_sge + 1;
        a.max_inline   = qp->max_inline + EMU_UD_GRH_LEN;
    }
    if (qp->num_streams > 0) {
        /* each stream its share of the send queue (emu_qp_streams_init) */
        a.max_send_wr        = qp->st_depth;
        a.dci_streams        = 1;
        a.log_num_concurrent = dv->dc_init_attr.dci_streams.log_num_concurent;
        a.log_num_errored    = dv->dc_init_attr.dci_streams.log_num_errored;
    }
    ret = dcx_qp_create(qp->pd->soft, &a, &qp->soft);
    if (ret != 0) {
        emu_error("%s: create_qp: the soft device refused the send queue "
                  "(%s)",
                  name, strerror(ret));
        return ret;
    }
    return emu_qp_number(qp, name);
}

/* The QP's queues placed as MLX_QP_ALLOC_TYPE asks; a refusal undoes
 * what its type's set-up made */
static int emu_qp_place(emu_qp_t *qp, const struct ibv_qp_init_attr_ex *attr,
                        const char *name)
{
    int ret = emu_qbuf_open(name, "create_qp", EMU_QBUF_QP, attr->qp_type,
                            emu_dv_qp_bytes(qp), &qp->qbuf);

    if (ret == 0) {
        return 0;
    }
    if (qp->kind == EMU_QP_RC) {
        emu_rc_fini(qp);
    } else if (qp->kind == EMU_QP_UD) {
        emu_ud_fini(qp);
    }
    return ret;
}

static struct ibv_qp *emu_qp_create(struct ibv_context *context,
                                    struct ibv_qp_init_attr_ex *attr,
                                    struct mlx5dv_qp_init_attr *dv)
{
    emu_ctx_t *ectx = emu_ctx_check(context, "create_qp");
    const char *name;
    bool silent;
    emu_qp_t *qp;
    int ret;

    if ((ectx == NULL) || (attr == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    name = context->device->name;
    qp   = calloc(1, sizeof(*qp));
    if (qp == NULL) {
        emu_error("%s: create_qp: out of memory", name);
        errno = ENOMEM;
        return NULL;
    }
    ret = emu_qp_check(qp, attr, dv, name, &silent);
    if (ret == 0) {
        ret = emu_qp_check_kind(qp, attr, dv, dcx_dev_caps(ectx->dev->soft),
                                name);
    }
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) {
        /* ibv_post_send takes every op of the type */
        qp->send_ops = (qp->kind == EMU_QP_RC) ? EMU_DCI_OPS :
                       (qp->kind == EMU_QP_UD) ? EMU_UD_OPS :
                                                 qp->send_ops;
    }
    if (ret != 0) {
        free(qp);
        if (!silent) {
            errno = ret;
        }
        return NULL;
    }
    qp->ctx     = ectx;
    qp->pd      = emu_pd(attr->pd);
    qp->send_cq = emu_cq(attr->send_cq);
    qp->recv_cq = emu_cq(attr->recv_cq);
    qp->sig_all = attr->sq_sig_all;
    qp->has_qpx = (qp->kind != EMU_QP_DCT) &&
                  (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
    pthread_mutex_init(&qp->sq_lock, NULL);

    if (qp->kind == EMU_QP_DCT) {
        qp->srq     = (emu_srq_t *)attr->srq;
        qp->dct_key = dv->dc_init_attr.dct_access_key;
        qp->scat64  = emu_dct_scatter(qp->recv_cq, dv);
        __atomic_add_fetch(&qp->srq->refs, 1, __ATOMIC_RELEASE);
        qp->qpx.qp_base.qp_num = 0; /* the DCT's number comes at RTR */
    } else {
        ret = emu_qp_size(qp, dcx_dev_caps(ectx->dev->soft), &attr->cap, name);
        if (ret == 0) {
            qp->sq = calloc(qp->max_send_wr, sizeof(*qp->sq));
            ret    = (qp->sq == NULL) ? ENOMEM : 0;
        }
        if ((ret == 0) && (qp->num_streams > 0)) {
            ret = emu_qp_streams_init(qp, name);
        }
        if (ret == 0) {
            ret = emu_qp_make_soft(qp, dv, name);
        }
        if (ret == 0) {
            qp->send_num = qp->qpx.qp_base.qp_num;
            if (qp->kind == EMU_QP_RC) {
                ret = emu_rc_init(qp, attr, name);
            } else if (qp->kind == EMU_QP_UD) {
                ret = emu_ud_init(qp, attr, name);
            } else {
                attr->cap.max_recv_wr  = 0;
                attr->cap.max_recv_sge = 0;
            }
            if (ret == 0) {
                ret = emu_qp_place(qp, attr, name);
            }
            if (ret != 0) {
                dcx_qp_destroy(qp->soft);
            }
        }
        if (ret != 0) {
            free(qp->st_posted);
            free(qp->st_retired);
            free(qp->sq);
            pthread_mutex_destroy(&qp->sq_lock);
            free(qp);
            errno = ret;
            return NULL;
        }
        emu_qp_map_add(ectx->dev, qp);
    }

    qp->qpx.qp_base.context    = context;
    qp->qpx.qp_base.qp_context = attr->qp_context;
    qp->qpx.qp_base.pd         = attr->pd;
    qp->qpx.qp_base.send_cq    = attr->send_cq;
    qp->qpx.qp_base.recv_cq    = attr->recv_cq;
    qp->qpx.qp_base.srq        = attr->srq;
    qp->qpx.qp_base.qp_type    = attr->qp_type;
    qp->qpx.qp_base.state      = IBV_QPS_RESET;
    qp->qpx.qp_base.handle     = (uint32_t)(uintptr_t)qp;
    pthread_mutex_init(&qp->qpx.qp_base.mutex, NULL);
    pthread_cond_init(&qp->qpx.qp_base.cond, NULL);
    if (qp->has_qpx || (qp->kind == EMU_QP_RC) || (qp->kind == EMU_QP_UD)) {
        emu_wr_init(qp); /* ibv_post_send builds with them too */
    }
    __atomic_add_fetch(&qp->pd->refs, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&qp->send_cq->refs, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&qp->recv_cq->refs, 1, __ATOMIC_RELEASE);
    return &qp->qpx.qp_base;
}

struct ibv_qp *dcx_emu_mlx5dv_create_qp(struct ibv_context *context,
                                        struct ibv_qp_init_attr_ex *qp_attr,
                                        struct mlx5dv_qp_init_attr *mlx5_attr)
{
    if ((context == NULL) || (emu_dev_of(context->device) == NULL)) {
        emu_error("mlx5dv_create_qp: context %p is not of the emulation",
                  (void *)context);
        errno = EOPNOTSUPP;
        return NULL;
    }
    return emu_qp_create(context, qp_attr, mlx5_attr);
}

static struct ibv_qp *emu_create_qp_ex(struct ibv_context *context,
                                       struct ibv_qp_init_attr_ex *attr)
{
    return emu_qp_create(context, attr, NULL);
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
                             struct ibv_qp_init_attr *qp_init_attr)
{
    struct ibv_qp_init_attr_ex attr;
    struct ibv_qp *qp;

    memset(&attr, 0, sizeof(attr));
    memcpy(&attr, qp_init_attr, sizeof(*qp_init_attr));
    attr.comp_mask = IBV_QP_INIT_ATTR_PD;
    attr.pd        = pd;
    qp             = emu_qp_create(pd->context, &attr, NULL);
    if (qp != NULL) {
        qp_init_attr->cap = attr.cap;
    }
    return qp;
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
    emu_qp_t *qp = emu_qp(ibqp);

    return qp->has_qpx ? &qp->qpx : NULL;
}

struct mlx5dv_qp_ex *dcx_emu_mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qpx)
{
    /* a plain container_of, as libmlx5's */
    return &((emu_qp_t *)qpx)->dv;
}

int ibv_destroy_qp(struct ibv_qp *ibqp)
{
    emu_qp_t *qp   = emu_qp(ibqp);
    emu_dev_t *dev = qp->ctx->dev;
    int ret;

    if (qp->raw_sq != NULL) {
        /* the engine takes the WQEs rung (emu_raw_sq_take_rung), then
         * lets go of the queue's memory */
        emu_raw_sq_take_rung(qp);
        pthread_mutex_lock(&emu_raw_lock);
        emu_raw_qp_free(qp);
        pthread_mutex_unlock(&emu_raw_lock);
    }
    if (qp->soft != NULL) {
        ret = dcx_qp_destroy(qp->soft);
        if (ret != 0) {
            return ret;
        }
    }
    emu_async_qp_forget(qp);
    emu_async_qp_wait_acks(qp);
    if (qp->kind == EMU_QP_DCT) {
        emu_dct_scat_mark(qp, false);
        __atomic_sub_fetch(&qp->srq->refs, 1, __ATOMIC_RELEASE);
    } else {
        emu_qp_map_del(dev, qp);
        emu_cq_purge(qp->send_cq, ibqp->qp_num);
    }
    if (qp->kind == EMU_QP_RC) {
        emu_rc_fini(qp);
        emu_cq_purge(qp->recv_cq, ibqp->qp_num);
    } else if (qp->kind == EMU_QP_UD) {
        emu_ud_fini(qp);
        emu_cq_purge(qp->recv_cq, ibqp->qp_num);
    }
    if (qp->has_qpx || (qp->kind == EMU_QP_RC) || (qp->kind == EMU_QP_UD)) {
        emu_wr_cleanup(qp);
    }
    __atomic_sub_fetch(&qp->pd->refs, 1, __ATOMIC_RELEASE);
    __atomic_sub_fetch(&qp->send_cq->refs, 1, __ATOMIC_RELEASE);
    __atomic_sub_fetch(&qp->recv_cq->refs, 1, __ATOMIC_RELEASE);
    pthread_mutex_destroy(&ibqp->mutex);
    pthread_cond_destroy(&ibqp->cond);
    pthread_mutex_destroy(&qp->sq_lock);
    free(qp->st_posted);
    free(qp->st_retired);
    free(qp->sq);
    emu_qbuf_close(qp->qbuf);
    free(qp);
    return 0;
}

void emu_ctx_set_qp_ops(struct verbs_context *vctx)
{
    vctx->create_qp_ex = emu_create_qp_ex;
}

/* mlx5dv_dci_stream_id_reset: an errored stream of a DCI back to service
 * (the soft device's channel rearmed).  The HCA takes the id's low bits,
 * as in a WQE (emu_wr_set_dc_addr_stream), and refuses to reset a stream
 * that is not in error (EINVAL, its RTS2RTS failing); as libmlx5: EINVAL
 * for a QP that is not a DCI, EOPNOTSUPP for a DCI without streams or not
 * in RTS, or a QP of another device */
int dcx_emu_mlx5dv_dci_stream_id_reset(struct ibv_qp *ibqp, uint16_t stream_id)
{
    emu_qp_t *qp;
    int errored;

    if ((ibqp == NULL) ||
        (emu_ctx_check(ibqp->context, "mlx5dv_dci_stream_id_reset") == NULL)) {
        return EOPNOTSUPP;
    }
    qp = emu_qp(ibqp);
    if (qp->kind != EMU_QP_DCI) {
        emu_error("%s: mlx5dv_dci_stream_id_reset: qp 0x%x is not a DCI",
                  ibqp->context->device->name, ibqp->qp_num);
        return EINVAL;
    }
    if (qp->num_streams == 0) {
        emu_error("%s: mlx5dv_dci_stream_id_reset: dci 0x%x has no streams",
                  ibqp->context->device->name, ibqp->qp_num);
        return EOPNOTSUPP;
    }
    if (ibqp->state != IBV_QPS_RTS) {
        emu_error("%s: mlx5dv_dci_stream_id_reset: dci 0x%x is not in RTS "
                  "(state %d)",
                  ibqp->context->device->name, ibqp->qp_num, (int)ibqp->state);
        return EOPNOTSUPP;
    }
    stream_id &= (uint16_t)(qp->num_streams - 1);
    errored = dcx_soft_stream_errored(qp->soft, stream_id);
    if (errored < 0) {
        return -errored;
    }
    if (!errored) {
        emu_error("%s: mlx5dv_dci_stream_id_reset: stream %u of dci 0x%x is "
                  "not in error (the HCA refuses the reset)",
                  ibqp->context->device->name, stream_id, ibqp->qp_num);
        return EINVAL;
    }
    /* the soft device logs its refusals (not in RTS: EOPNOTSUPP) */
    return dcx_qp_stream_reset(qp->soft, stream_id);
}
