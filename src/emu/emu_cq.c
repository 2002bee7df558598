/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: completion queues.
 *
 * One object serves both APIs: ibv_poll_cq (ctx->ops.poll_cq) and the
 * extended start_poll / next_poll / end_poll with the read_* functions.
 * Completions come from the soft CQ in batches into a small buffer; the
 * buffer's lock is held from a start_poll that found a completion to its
 * end_poll, as libmlx5 holds its CQ lock.  Only the readers of the wc_flags
 * asked for at creation are installed (the others stay NULL, as in
 * libmlx5).  Completion channels and events are emu_comp_channel.c's.  Not
 * modelled, refused at creation with EOPNOTSUPP: timestamps, CVLAN, flow
 * tags, tag-matching information and parent domains.  mlx5dv_create_cq
 * creates one with its CQE size, which the raw CQ's memory takes
 * (emu_dv_obj.c).
 */
#include "emu/emu_devx.h"
#include "emu/emu_dv.h"
#include "emu/emu_qbuf.h"
#include "emu/emu_raw.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EMU_CQ_WC_FLAGS IBV_WC_STANDARD_FLAGS
#define EMU_CQ_COMP_MASK \
    (IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)
#define EMU_CQ_FLAGS \
    (IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)

/* dcx_wc_status_t -> ibv_wc_status, and the mlx5 syndrome (vendor_err) */
static const struct {
    enum ibv_wc_status status;
    uint32_t syndrome;
} emu_wc_status[DCX_WC_STATUS_LAST] = {
    [DCX_WC_SUCCESS]            = {IBV_WC_SUCCESS, 0x00},
    [DCX_WC_LOC_LEN_ERR]        = {IBV_WC_LOC_LEN_ERR, 0x01},
    [DCX_WC_LOC_QP_OP_ERR]      = {IBV_WC_LOC_QP_OP_ERR, 0x02},
    [DCX_WC_LOC_PROT_ERR]       = {IBV_WC_LOC_PROT_ERR, 0x04},
    [DCX_WC_WR_FLUSH_ERR]       = {IBV_WC_WR_FLUSH_ERR, 0x05},
    [DCX_WC_REM_INV_REQ_ERR]    = {IBV_WC_REM_INV_REQ_ERR, 0x12},
    [DCX_WC_REM_ACCESS_ERR]     = {IBV_WC_REM_ACCESS_ERR, 0x13},
    [DCX_WC_REM_OP_ERR]         = {IBV_WC_REM_OP_ERR, 0x14},
    [DCX_WC_RETRY_EXC_ERR]      = {IBV_WC_RETRY_EXC_ERR, 0x15},
    [DCX_WC_RNR_RETRY_EXC_ERR]  = {IBV_WC_RNR_RETRY_EXC_ERR, 0x16},
    [DCX_WC_GENERAL_ERR]        = {IBV_WC_GENERAL_ERR, 0xff},
    [DCX_WC_TM_ERR]             = {IBV_WC_TM_ERR, 0xff},
    [DCX_WC_TM_RNDV_INCOMPLETE] = {IBV_WC_TM_RNDV_INCOMPLETE, 0xff}};

uint8_t emu_wc_syndrome(uint8_t status)
{
    return (status < DCX_WC_STATUS_LAST) ?
               (uint8_t)emu_wc_status[status].syndrome :
               0xff;
}

static enum ibv_wc_status emu_status(const dcx_wc_t *wc)
{
    return (wc->status < DCX_WC_STATUS_LAST) ?
               emu_wc_status[wc->status].status :
               IBV_WC_GENERAL_ERR;
}

static uint32_t emu_vendor_err(const dcx_wc_t *wc)
{
    return (wc->status < DCX_WC_STATUS_LAST) ?
               emu_wc_status[wc->status].syndrome :
               0xff;
}

static enum ibv_wc_opcode emu_opcode(const dcx_wc_t *wc)
{
    if (wc->status != DCX_WC_SUCCESS) {
        return IBV_WC_SEND; /* undefined on error; libmlx5 gives 0 */
    }
    switch (wc->opcode) {
    case DCX_WC_SEND:
        return IBV_WC_SEND;
    case DCX_WC_RDMA_WRITE:
        return IBV_WC_RDMA_WRITE;
    case DCX_WC_RDMA_READ:
        return IBV_WC_RDMA_READ;
    case DCX_WC_COMP_SWAP:
    case DCX_WC_MASKED_COMP_SWAP:
        return IBV_WC_COMP_SWAP;
    case DCX_WC_FETCH_ADD:
    case DCX_WC_MASKED_FETCH_ADD:
        return IBV_WC_FETCH_ADD;
    case DCX_WC_LOCAL_INV:
        return IBV_WC_LOCAL_INV;
    case DCX_WC_UMR:
        return (enum ibv_wc_opcode)MLX5DV_WC_UMR;
    case DCX_WC_RECV_RDMA_WITH_IMM:
        return IBV_WC_RECV_RDMA_WITH_IMM;
    case DCX_WC_TM_ADD:
        return IBV_WC_TM_ADD;
    case DCX_WC_TM_DEL:
        return IBV_WC_TM_DEL;
    case DCX_WC_TM_SYNC:
        return IBV_WC_TM_SYNC;
    case DCX_WC_TM_RECV:
        return IBV_WC_TM_RECV;
    case DCX_WC_TM_NO_TAG:
        return IBV_WC_TM_NO_TAG;
    default:
        return IBV_WC_RECV;
    }
}

/* Responder completions carry WITH_IMM (the extended readers of libmlx5
 * report it for responder completions only). */
static unsigned emu_wc_flags(const dcx_wc_t *wc)
{
    return ((wc->opcode & DCX_WC_RECV_BIT) &&
            (wc->flags & DCX_WC_FLAG_WITH_IMM)) ?
               IBV_WC_WITH_IMM :
               0;
}

/* Refills the buffer from the soft CQ; lock held.  Returns the count. */
static unsigned emu_cq_fill(emu_cq_t *cq)
{
    emu_dev_t *dev = emu_ctx(cq->cq.context)->dev;
    emu_qp_t *qp;
    unsigned i;
    int n;

    if (cq->head < cq->count) {
        return cq->count - cq->head;
    }
    n         = dcx_cq_poll(cq->soft, EMU_CQ_BATCH, cq->buf);
    cq->head  = 0;
    cq->count = (n > 0) ? (unsigned)n : 0;
    for (i = 0; i < cq->count; ++i) {
        dcx_wc_t *wc = &cq->buf[i];

        memset(&cq->ext[i], 0, sizeof(cq->ext[i]));
        cq->ext[i].slid = wc->slid; /* the sender port's (a UD QP's: again
                                       from its GRH bytes) */

        qp = emu_qp_find(dev, wc->qp_num);
        if (qp == NULL) {
            continue; /* a DCT's or an RC QP's receive */
        }
        if (wc->opcode & DCX_WC_RECV_BIT) {
            emu_ud_recv_done(qp, wc, &cq->ext[i]); /* a UD QP's */
        } else {
            /* a send queue's: its soft wr_id is the post's sequence */
            wc->wr_id  = emu_sq_retire(qp, wc->wr_id);
            wc->qp_num = qp->qpx.qp_base.qp_num; /* an RC QP's */
        }
    }
    return cq->count;
}

static int emu_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
    emu_cq_t *cq = emu_cq(ibcq);
    const dcx_wc_t *e;
    int n = 0;

    if (cq->raw != NULL) {
        emu_error("%s: poll_cq: the CQ's memory was taken (mlx5dv_init_obj): "
                  "poll its CQEs",
                  ibcq->context->device->name);
        return -1;
    }
    pthread_mutex_lock(&cq->lock);
    while ((n < num_entries) && (emu_cq_fill(cq) > 0)) {
        e = &cq->buf[cq->head++];
        memset(&wc[n], 0, sizeof(wc[n]));
        wc[n].wr_id      = e->wr_id;
        wc[n].status     = emu_status(e);
        wc[n].vendor_err = emu_vendor_err(e);
        wc[n].qp_num     = e->qp_num;
        if (e->status == DCX_WC_SUCCESS) {
            wc[n].opcode   = emu_opcode(e);
            wc[n].byte_len = e->byte_len;
            wc[n].src_qp   = e->src_qp;
            wc[n].slid     = cq->ext[cq->head - 1].slid;
            wc[n].wc_flags = emu_wc_flags(e) |
                             (cq->ext[cq->head - 1].grh ? IBV_WC_GRH : 0);
            if (wc[n].wc_flags & IBV_WC_WITH_IMM) {
                wc[n].imm_data = htobe32(e->imm);
            }
        }
        ++n;
    }
    pthread_mutex_unlock(&cq->lock);
    return n;
}

/* ------------------------------------------------------------------------
 * Extended polling
 * ------------------------------------------------------------------------ */
static inline const dcx_wc_t *emu_cur(struct ibv_cq_ex *cqx)
{
    emu_cq_t *cq = (emu_cq_t *)cqx;

    return &cq->buf[cq->head];
}

static void emu_cq_publish(emu_cq_t *cq)
{
    const dcx_wc_t *e = &cq->buf[cq->head];

    cq->current   = true;
    cq->cq.wr_id  = e->wr_id;
    cq->cq.status = emu_status(e);
}

static int emu_start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
    emu_cq_t *cq = (emu_cq_t *)cqx;

    if ((attr->comp_mask != 0) || (cq->raw != NULL)) {
        emu_error("%s: start_poll: comp_mask 0x%x (must be 0), or the CQ's "
                  "memory was taken (mlx5dv_init_obj)",
                  cqx->context->device->name, attr->comp_mask);
        return EINVAL;
    }
    pthread_mutex_lock(&cq->lock);
    if (emu_cq_fill(cq) == 0) {
        pthread_mutex_unlock(&cq->lock); /* no end_poll follows ENOENT */
        return ENOENT;
    }
    emu_cq_publish(cq);
    return 0;
}

static int emu_next_poll(struct ibv_cq_ex *cqx)
{
    emu_cq_t *cq = (emu_cq_t *)cqx;

    if (cq->current) {
        cq->head++;
        cq->current = false;
    }
    if (emu_cq_fill(cq) == 0) {
        return ENOENT;
    }
    emu_cq_publish(cq);
    return 0;
}

static void emu_end_poll(struct ibv_cq_ex *cqx)
{
    emu_cq_t *cq = (emu_cq_t *)cqx;

    if (cq->current) {
        cq->head++;
        cq->current = false;
    }
    pthread_mutex_unlock(&cq->lock);
}

static enum ibv_wc_opcode emu_read_opcode(struct ibv_cq_ex *cqx)
{
    return emu_opcode(emu_cur(cqx));
}

static uint32_t emu_read_vendor_err(struct ibv_cq_ex *cqx)
{
    return emu_vendor_err(emu_cur(cqx));
}

static uint32_t emu_read_byte_len(struct ibv_cq_ex *cqx)
{
    return emu_cur(cqx)->byte_len;
}

static __be32 emu_read_imm_data(struct ibv_cq_ex *cqx)
{
    return htobe32(emu_cur(cqx)->imm);
}

static uint32_t emu_read_qp_num(struct ibv_cq_ex *cqx)
{
    return emu_cur(cqx)->qp_num;
}

static uint32_t emu_read_src_qp(struct ibv_cq_ex *cqx)
{
    return emu_cur(cqx)->src_qp;
}

static unsigned int emu_read_wc_flags(struct ibv_cq_ex *cqx)
{
    emu_cq_t *cq = (emu_cq_t *)cqx;

    return emu_wc_flags(emu_cur(cqx)) |
           (cq->ext[cq->head].grh ? IBV_WC_GRH : 0);
}

/* The soft device does not say which port sent a request: the source LID
 * is known for a UD receive on the QP's own queue (emu_ud.c) and 0
 * otherwise; SL and path bits read as 0 (docs/mlx5-emulation.md). */
static uint32_t emu_read_slid(struct ibv_cq_ex *cqx)
{
    emu_cq_t *cq = (emu_cq_t *)cqx;

    return cq->ext[cq->head].slid;
}

static uint8_t emu_read_sl(struct ibv_cq_ex *cqx)
{
    return 0;
}

static uint8_t emu_read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
    return 0;
}

/* ------------------------------------------------------------------------
 * Creation
 * ------------------------------------------------------------------------ */
/* The CQE size libmlx5 takes from MLX5_CQE_SIZE (64 or 128; 0: unset);
 * -1, logged, for another value, which fails the creation as there */
static int emu_cq_env_size(const char *name)
{
    const char *env = getenv("MLX5_CQE_SIZE");

    if (env == NULL) {
        return 0;
    }
    if (strcmp(env, "64") && strcmp(env, "128")) {
        emu_error("%s: create_cq: MLX5_CQE_SIZE=%s (64 or 128)", name, env);
        return -1;
    }
    return atoi(env);
}

static emu_cq_t *emu_cq_create(struct ibv_context *context,
                               const struct ibv_cq_init_attr_ex *attr)
{
    emu_ctx_t *ectx = emu_ctx_check(context, "create_cq");
    const char *name;
    const dcx_dev_caps_t *caps;
    emu_cq_t *cq;
    int ret;

    if (ectx == NULL) {
        return NULL;
    }
    name = context->device->name;
    caps = dcx_dev_caps(ectx->dev->soft);
    ret  = EINVAL;
    if (emu_cq_env_size(name) < 0) {
        goto err;
    }
    if ((attr->cqe == 0) || (attr->cqe > caps->max_cqe)) {
        emu_error("%s: create_cq: %u entries (1..%u)", name, attr->cqe,
                  caps->max_cqe);
        goto err;
    }
    if ((attr->comp_mask & ~EMU_CQ_COMP_MASK) ||
        ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
         (attr->flags & ~EMU_CQ_FLAGS))) {
        emu_error("%s: create_cq: unknown comp_mask 0x%x or flags 0x%x", name,
                  attr->comp_mask, attr->flags);
        goto err;
    }
    if (attr->comp_vector >= (uint32_t)context->num_comp_vectors) {
        emu_error("%s: create_cq: completion vector %u (the device has %d)",
                  name, attr->comp_vector, context->num_comp_vectors);
        goto err;
    }
    ret = EOPNOTSUPP;
    if (attr->wc_flags & ~(uint64_t)EMU_CQ_WC_FLAGS) {
        emu_error("%s: create_cq: wc_flags 0x%llx not modelled (the "
                  "emulation offers 0x%x)",
                  name, (unsigned long long)(attr->wc_flags & ~EMU_CQ_WC_FLAGS),
                  EMU_CQ_WC_FLAGS);
        goto err;
    }
    if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
        emu_error("%s: create_cq: parent domains are not modelled", name);
        goto err;
    }
    if (attr->channel != NULL) {
        ret = emu_channel_check(attr->channel, context);
        if (ret != 0) {
            goto err;
        }
    }

    cq = calloc(1, sizeof(*cq));
    if (cq == NULL) {
        emu_error("%s: create_cq: out of memory", name);
        ret = ENOMEM;
        goto err;
    }
    ret = dcx_cq_create_ch(ectx->dev->soft, attr->cqe,
                           (attr->channel != NULL) ?
                               emu_channel_soft(attr->channel) :
                               NULL,
                           &cq->soft);
    if (ret == 0) {
        /* libmlx5 places the CQE buffer before the kernel's create */
        ret = emu_qbuf_open(name, "create_cq", EMU_QBUF_CQ, 0,
                            emu_dv_cq_bytes(cq->soft->cqe), &cq->qbuf);
        if (ret != 0) {
            dcx_cq_destroy(cq->soft);
        }
    }
    if (ret != 0) {
        free(cq);
        goto err;
    }
    pthread_mutex_init(&cq->lock, NULL);
    pthread_mutex_init(&cq->cq.mutex, NULL);
    pthread_cond_init(&cq->cq.cond, NULL);
    cq->wc_flags      = attr->wc_flags;
    cq->cq.context    = context;
    cq->cq.cq_context = attr->cq_context;
    cq->cq.cqe        = (int)cq->soft->cqe;
    cq->cqe_size      = (uint16_t)emu_cq_env_size(name);
    cq->cqn           = ectx->dev->qpn_base +
              (__atomic_fetch_add(&ectx->dev->srq_seq, 1, __ATOMIC_RELAXED) %
               EMU_QPN_SPAN);
    cq->cq.start_poll      = emu_start_poll;
    cq->cq.next_poll       = emu_next_poll;
    cq->cq.end_poll        = emu_end_poll;
    cq->cq.read_opcode     = emu_read_opcode;
    cq->cq.read_vendor_err = emu_read_vendor_err;
    cq->cq.read_wc_flags   = emu_read_wc_flags;
#define EMU_CQ_READER(_flag, _field, _fn) \
    if (attr->wc_flags & (_flag)) {       \
        cq->cq._field = _fn;              \
    }
    EMU_CQ_READER(IBV_WC_EX_WITH_BYTE_LEN, read_byte_len, emu_read_byte_len)
    EMU_CQ_READER(IBV_WC_EX_WITH_IMM, read_imm_data, emu_read_imm_data)
    EMU_CQ_READER(IBV_WC_EX_WITH_QP_NUM, read_qp_num, emu_read_qp_num)
    EMU_CQ_READER(IBV_WC_EX_WITH_SRC_QP, read_src_qp, emu_read_src_qp)
    EMU_CQ_READER(IBV_WC_EX_WITH_SLID, read_slid, emu_read_slid)
    EMU_CQ_READER(IBV_WC_EX_WITH_SL, read_sl, emu_read_sl)
    EMU_CQ_READER(IBV_WC_EX_WITH_DLID_PATH_BITS, read_dlid_path_bits,
                  emu_read_dlid_path_bits)
#undef EMU_CQ_READER
    if (attr->channel != NULL) {
        emu_channel_attach(cq, attr->channel, true);
    }
    emu_num_add(ectx->dev, EMU_NUM_CQ, cq->cqn, cq);
    return cq;

err:
    errno = ret;
    return NULL;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
                             void *cq_context, struct ibv_comp_channel *channel,
                             int comp_vector)
{
    struct ibv_cq_init_attr_ex attr;
    emu_cq_t *cq;

    memset(&attr, 0, sizeof(attr));
    attr.cqe         = (cqe > 0) ? (uint32_t)cqe : 0;
    attr.cq_context  = cq_context;
    attr.channel     = channel;
    attr.comp_vector = (comp_vector >= 0) ? (uint32_t)comp_vector : ~0u;
    attr.wc_flags    = IBV_WC_STANDARD_FLAGS;
    cq               = emu_cq_create(context, &attr);
    return (cq != NULL) ? ibv_cq_ex_to_cq(&cq->cq) : NULL;
}

static struct ibv_cq_ex *emu_create_cq_ex(struct ibv_context *context,
                                          struct ibv_cq_init_attr_ex *attr)
{
    emu_cq_t *cq = emu_cq_create(context, attr);

    return (cq != NULL) ? &cq->cq : NULL;
}

int ibv_destroy_cq(struct ibv_cq *ibcq)
{
    emu_cq_t *cq = emu_cq(ibcq);
    int ret;

    if (__atomic_load_n(&cq->refs, __ATOMIC_ACQUIRE) != 0) {
        emu_error("%s: destroy_cq: %u QPs or SRQs still use it",
                  ibcq->context->device->name, cq->refs);
        return EBUSY;
    }
    if (cq->raw != NULL) {
        /* the engine lets go of its memory first */
        pthread_mutex_lock(&emu_raw_lock);
        emu_raw_cq_free(cq);
        pthread_mutex_unlock(&emu_raw_lock);
    }
    if (cq->channel != NULL) {
        emu_channel_detach(cq);
    }
    ret = dcx_cq_destroy(cq->soft);
    if (ret != 0) {
        if (ibcq->channel != NULL) {
            emu_channel_attach(cq, ibcq->channel, false);
        }
        return ret;
    }
    emu_num_del(emu_ctx(ibcq->context)->dev, EMU_NUM_CQ, cq->cqn, cq);
    if (cq->channel != NULL) {
        emu_channel_cq_wait_acks(cq);
    }
    pthread_mutex_destroy(&cq->lock);
    pthread_mutex_destroy(&cq->cq.mutex);
    pthread_cond_destroy(&cq->cq.cond);
    emu_qbuf_close(cq->qbuf);
    free(cq);
    return 0;
}

/* Drops the buffered completions of one QP (its move to RESET); the soft
 * device drops those it still holds itself. */
void emu_cq_purge(emu_cq_t *cq, uint32_t qp_num)
{
    unsigned i, out;

    pthread_mutex_lock(&cq->lock);
    for (i = out = cq->head; i < cq->count; ++i) {
        if (cq->buf[i].qp_num != qp_num) {
            cq->ext[out]   = cq->ext[i];
            cq->buf[out++] = cq->buf[i];
        }
    }
    cq->count = out;
    pthread_mutex_unlock(&cq->lock);
}

void emu_ctx_set_cq_ops(struct verbs_context *vctx)
{
    vctx->create_cq_ex        = emu_create_cq_ex;
    vctx->context.ops.poll_cq = emu_poll_cq;
    emu_ctx_set_channel_ops(vctx);
}

struct ibv_cq_ex *
dcx_emu_mlx5dv_create_cq(struct ibv_context *context,
                         struct ibv_cq_init_attr_ex *cq_attr,
                         struct mlx5dv_cq_init_attr *mlx5_cq_attr)
{
    uint64_t mask = (mlx5_cq_attr != NULL) ? mlx5_cq_attr->comp_mask : 0;
    struct ibv_cq_ex *cqx;
    uint32_t size = 64;

    if ((context == NULL) || (emu_dev_of(context->device) == NULL)) {
        emu_error("mlx5dv_create_cq: context %p is not of the emulation",
                  (void *)context);
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (mask & ~(uint64_t)MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE) {
        emu_error("%s: mlx5dv_create_cq: comp_mask 0x%llx asks for CQE "
                  "compression or flags, not modelled",
                  context->device->name, (unsigned long long)mask);
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (mask & MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE) {
        size = mlx5_cq_attr->cqe_size;
        if ((size != 64) && (size != 128)) {
            emu_error("%s: mlx5dv_create_cq: CQE size %u (64 or 128)",
                      context->device->name, size);
            errno = EINVAL;
            return NULL;
        }
    }
    if (!(mask & MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE) &&
        (emu_cq_env_size(context->device->name) > 0)) {
        size = (uint32_t)emu_cq_env_size(context->device->name);
    }
    cqx = ibv_create_cq_ex(context, cq_attr);
    if (cqx != NULL) {
        ((emu_cq_t *)cqx)->cqe_size = (uint16_t)size;
    }
    return cqx;
}
