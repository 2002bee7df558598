/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: ibv_modify_qp and ibv_query_qp.
 *
 * The kernel checks a modify against a table per QP type: the transition
 * must exist, every required attribute bit must be in the mask and no bit
 * outside required and optional may be.  emu_trans below is that table for
 * the types the emulation models (DCI and DCT as mlx5_ib's modify checks,
 * RC as the IB core's); anything else is EINVAL with one log line naming
 * the missing or extra bits.  The current state is the device's: a DCI
 * that an error completion moved to ERR is in ERR whatever qp->state says.
 */
#include "emu/emu_raw.h"
#include "soft/dcx_soft.h"

#include <errno.h>
#include <string.h>

#define EMU_ANY_STATE ((enum ibv_qp_state) - 1)
#define EMU_NOT_RESET ((enum ibv_qp_state) - 2)
#define EMU_ACCESS_QP                                   \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

typedef struct emu_trans {
    unsigned kinds; /* 1 << emu_qp_kind_t */
    enum ibv_qp_state from;
    enum ibv_qp_state to;
    uint32_t required;
    uint32_t optional;
} emu_trans_t;

#define K_DCI (1u << EMU_QP_DCI)
#define K_DCT (1u << EMU_QP_DCT)
#define K_RC  (1u << EMU_QP_RC)
#define K_UD  (1u << EMU_QP_UD)

static const emu_trans_t emu_trans[] = {
    /* DCI */
    {K_DCI, IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT, 0},
    {K_DCI, IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT},
    {K_DCI, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_PATH_MTU,
     IBV_QP_PKEY_INDEX | IBV_QP_AV},
    {K_DCI, IBV_QPS_RTR, IBV_QPS_RTS,
     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
         IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_SQ_PSN,
     IBV_QP_MIN_RNR_TIMER},
    {K_DCI, IBV_QPS_RTS, IBV_QPS_RTS, 0, IBV_QP_MIN_RNR_TIMER},
    /* DCT: two transitions, exact masks */
    {K_DCT, IBV_QPS_RESET, IBV_QPS_INIT,
     IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT, 0},
    {K_DCT, IBV_QPS_INIT, IBV_QPS_RTR,
     IBV_QP_MIN_RNR_TIMER | IBV_QP_AV | IBV_QP_PATH_MTU, 0},
    /* RC */
    {K_RC, IBV_QPS_RESET, IBV_QPS_INIT,
     IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
    {K_RC, IBV_QPS_INIT, IBV_QPS_INIT, 0,
     IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    {K_RC, IBV_QPS_INIT, IBV_QPS_RTR,
     IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
    {K_RC, IBV_QPS_RTR, IBV_QPS_RTS,
     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
         IBV_QP_MAX_QP_RD_ATOMIC,
     IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
         IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE},
    {K_RC, IBV_QPS_RTS, IBV_QPS_RTS, 0,
     IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
         IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER},
    /* UD */
    {K_UD, IBV_QPS_RESET, IBV_QPS_INIT,
     IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0},
    {K_UD, IBV_QPS_INIT, IBV_QPS_INIT, 0,
     IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY},
    {K_UD, IBV_QPS_INIT, IBV_QPS_RTR, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
    {K_UD, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_SQ_PSN,
     IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {K_UD, IBV_QPS_RTS, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    /* DCI, RC and UD: to RESET from anywhere, to ERR from anywhere but
     * RESET */
    {K_DCI | K_RC | K_UD, EMU_ANY_STATE, IBV_QPS_RESET, 0, 0},
    {K_DCI | K_RC | K_UD, EMU_NOT_RESET, IBV_QPS_ERR, 0, 0},
};

static const char *emu_kind_name(emu_qp_kind_t kind)
{
    return (kind == EMU_QP_DCI) ? "dci" :
           (kind == EMU_QP_DCT) ? "dct" :
           (kind == EMU_QP_UD)  ? "ud qp" :
                                  "rc qp";
}

/* The state the device has the QP in. */
static enum ibv_qp_state emu_qp_cur_state(emu_qp_t *qp)
{
    if ((qp->kind != EMU_QP_DCT) && (qp->soft != NULL) &&
        (__atomic_load_n(&qp->soft->state, __ATOMIC_ACQUIRE) == DCX_QPS_ERR)) {
        return IBV_QPS_ERR;
    }
    return qp->qpx.qp_base.state;
}

static const emu_trans_t *
emu_trans_find(emu_qp_kind_t kind, enum ibv_qp_state from, enum ibv_qp_state to)
{
    unsigned i;

    for (i = 0; i < sizeof(emu_trans) / sizeof(emu_trans[0]); ++i) {
        const emu_trans_t *t = &emu_trans[i];

        if (!(t->kinds & (1u << kind)) || (t->to != to)) {
            continue;
        }
        if ((t->from == from) || (t->from == EMU_ANY_STATE) ||
            ((t->from == EMU_NOT_RESET) && (from != IBV_QPS_RESET))) {
            return t;
        }
    }
    return NULL;
}

/* Values the kernel checks whatever the transition */
static int emu_modify_values(emu_qp_t *qp, const struct ibv_qp_attr *a,
                             int mask, const char **why_p)
{
    const dcx_dev_caps_t *caps = dcx_dev_caps(qp->ctx->dev->soft);

    if ((mask & IBV_QP_PORT) && (a->port_num != 1)) {
        *why_p = "port_num is not 1 (the device's only port)";
    } else if ((mask & IBV_QP_PKEY_INDEX) && (a->pkey_index != 0)) {
        *why_p = "pkey_index outside the P_Key table (1 entry)";
    } else if ((mask & IBV_QP_PATH_MTU) &&
               ((a->path_mtu < IBV_MTU_256) || (a->path_mtu > IBV_MTU_4096))) {
        *why_p = "path_mtu is not an MTU";
    } else if ((mask & IBV_QP_TIMEOUT) && (a->timeout > 31)) {
        *why_p = "timeout above 31";
    } else if ((mask & IBV_QP_RETRY_CNT) && (a->retry_cnt > 7)) {
        *why_p = "retry_cnt above 7";
    } else if ((mask & IBV_QP_RNR_RETRY) && (a->rnr_retry > 7)) {
        *why_p = "rnr_retry above 7";
    } else if ((mask & IBV_QP_MIN_RNR_TIMER) && (a->min_rnr_timer > 31)) {
        *why_p = "min_rnr_timer above 31";
    } else if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
               (a->max_rd_atomic > caps->max_rd_atomic)) {
        *why_p = "max_rd_atomic above the device's max_qp_init_rd_atom";
    } else if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
               (a->max_dest_rd_atomic > caps->max_rd_atomic)) {
        *why_p = "max_dest_rd_atomic above the device's max_qp_rd_atom";
    } else if ((mask & IBV_QP_ACCESS_FLAGS) &&
               (a->qp_access_flags & ~EMU_ACCESS_QP)) {
        *why_p = "qp_access_flags has bits other than local/remote access";
    } else if ((mask & IBV_QP_AV) && (a->ah_attr.port_num != 0) &&
               (a->ah_attr.port_num != 1)) {
        *why_p = "ah_attr.port_num is not 1";
    } else {
        return 0;
    }
    return EINVAL;
}

/* An RC or UD QP's own receive queue (not an application's SRQ): its
 * receives flushed with the move into ERR, and those posted while there
 * (on), or dropped with the move to RESET */
static int emu_qp_rq_flush(emu_qp_t *qp, int on)
{
    if ((qp->rq == NULL) || (qp->resp == NULL)) {
        return 0;
    }
    return dcx_soft_dct_flush(qp->resp, on);
}

/* A DCI, RC or UD QP back to RESET: the device forgets its WRs, the QP's
 * own receive queue is emptied, and libmlx5 discards its completions not
 * yet polled. */
static int emu_qp_to_reset(emu_qp_t *qp)
{
    int ret;

    if (qp->soft->state != DCX_QPS_ERR) {
        ret = dcx_qp_set_error(qp->soft);
        if (ret != 0) {
            return ret;
        }
    }
    if (qp->raw_sq != NULL) {
        /* the queue's indices start over before the soft QP takes work
         * again: WQEs the engine had not taken are forgotten, never
         * executed by the QP's next life */
        emu_raw_sq_reset(qp);
    }
    ret = dcx_qp_recover(qp->soft); /* drops the soft CQ's entries too */
    if (ret == 0) {
        ret = emu_qp_rq_flush(qp, 0);
    }
    if (ret != 0) {
        return ret;
    }
    if ((qp->kind == EMU_QP_RC) && (qp->resp != NULL)) {
        /* the responder's receive completions: the soft CQ's first, then
         * those buffered */
        ret = dcx_soft_dct_purge(qp->resp);
        if (ret != 0) {
            return ret;
        }
    }
    emu_cq_purge(qp->send_cq, qp->qpx.qp_base.qp_num);
    if (qp->recv_cq != qp->send_cq) {
        emu_cq_purge(qp->recv_cq, qp->qpx.qp_base.qp_num);
    }
    pthread_mutex_lock(&qp->sq_lock);
    qp->sq_retired = qp->sq_posted;
    for (uint32_t i = 0; i < qp->num_streams; ++i) {
        qp->st_retired[i] = qp->st_posted[i];
    }
    qp->post_ok     = false;
    qp->err_entered = false;
    pthread_mutex_unlock(&qp->sq_lock);
    return 0;
}

/* A DCT at INIT->RTR: the soft DCT is made here and gives the number */
static int emu_dct_to_rtr(emu_qp_t *qp, const struct ibv_qp_attr *a)
{
    dcx_qp_attr_t sa;
    int ret;

    memset(&sa, 0, sizeof(sa));
    sa.type          = DCX_QPT_DCT;
    sa.send_cq       = qp->send_cq->soft;
    sa.recv_cq       = qp->recv_cq->soft;
    sa.srq           = qp->srq->soft;
    sa.dc_key        = qp->dct_key;
    sa.access        = qp->dct_access;
    sa.min_rnr_timer = a->min_rnr_timer;
    ret              = dcx_qp_create(qp->pd->soft, &sa, &qp->soft);
    if (ret != 0) {
        return ret;
    }
    ret = emu_qp_number(qp, qp->qpx.qp_base.context->device->name);
    if (ret == 0) {
        emu_dct_scat_mark(qp, true);
    }
    return ret;
}

int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
    emu_qp_t *qp          = emu_qp(ibqp);
    const char *name      = ibqp->context->device->name;
    enum ibv_qp_state cur = emu_qp_cur_state(qp), to;
    const emu_trans_t *t;
    const char *why = NULL;
    uint32_t extra, missing, mask = (uint32_t)attr_mask;
    int ret;

    to = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
    if ((mask & IBV_QP_CUR_STATE) && (attr->cur_qp_state != cur)) {
        emu_error("%s: %s 0x%x: modify: cur_qp_state %d, the QP is in %d", name,
                  emu_kind_name(qp->kind), ibqp->qp_num,
                  (int)attr->cur_qp_state, (int)cur);
        return EINVAL;
    }
    t = emu_trans_find(qp->kind, cur, to);
    if (t == NULL) {
        emu_error("%s: %s 0x%x: modify: no transition %d -> %d for this QP "
                  "type",
                  name, emu_kind_name(qp->kind), ibqp->qp_num, (int)cur,
                  (int)to);
        return EINVAL;
    }
    missing = t->required & ~mask;
    extra   = mask & ~(t->required | t->optional | IBV_QP_STATE);
    if ((missing != 0) || (extra != 0)) {
        emu_error("%s: %s 0x%x: modify %d -> %d: mask 0x%x lacks required "
                  "0x%x or has bits 0x%x the transition does not take",
                  name, emu_kind_name(qp->kind), ibqp->qp_num, (int)cur,
                  (int)to, mask, missing, extra);
        return EINVAL;
    }
    if (emu_modify_values(qp, attr, (int)mask, &why) != 0) {
        emu_error("%s: %s 0x%x: modify %d -> %d: %s", name,
                  emu_kind_name(qp->kind), ibqp->qp_num, (int)cur, (int)to,
                  why);
        return EINVAL;
    }

    ret = 0;
    switch (qp->kind) {
    case EMU_QP_DCT:
        if (to == IBV_QPS_INIT) {
            qp->dct_access = emu_dcx_access(attr->qp_access_flags);
        } else {
            ret = emu_dct_to_rtr(qp, attr);
        }
        break;
    default:
        if (qp->kind != EMU_QP_DCI) {
            /* the responder first: closed before the requester stops,
             * armed before it may send */
            ret = (qp->kind == EMU_QP_RC) ?
                      emu_rc_modify(qp, attr, attr_mask, to) :
                      emu_ud_modify(qp, attr, attr_mask, to);
            if (ret != 0) {
                break;
            }
        }
        if ((to == IBV_QPS_RESET) || (to == IBV_QPS_ERR)) {
            emu_raw_sq_take_rung(qp); /* the HCA had them already */
        }
        if (to == IBV_QPS_RESET) {
            ret = emu_qp_to_reset(qp);
        } else if (to == IBV_QPS_ERR) {
            ret = (qp->soft->state == DCX_QPS_ERR) ? 0 :
                                                     dcx_qp_set_error(qp->soft);
            /* once per move into ERR, also for a QP that failed by itself
             * (its requester's error) and is moved there by software */
            if ((ret == 0) && !qp->err_entered) {
                ret = emu_qp_rq_flush(qp, 1);
            }
            /* an SRQ's QP: the last-WQE event with the move into ERR */
            if ((ret == 0) && !qp->err_entered && (qp->kind == EMU_QP_RC) &&
                emu_qp_on_srq(qp) && !qp->by_devx) {
                emu_async_qp_event(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
            }
            qp->err_entered = qp->err_entered || (ret == 0);
        } else if ((to == IBV_QPS_RTS) && (cur == IBV_QPS_RTR)) {
            /* UD takes no transport timers: the device's (a datagram
             * waits that long for a full ring before it is lost) */
            ret = (qp->kind == EMU_QP_UD) ?
                      dcx_soft_qp_set_timers(qp->soft, 0, 0, 0, 0) :
                      dcx_soft_qp_set_timers(qp->soft, attr->timeout,
                                             attr->retry_cnt, attr->rnr_retry,
                                             attr->max_rd_atomic);
            if (ret == 0) {
                pthread_mutex_lock(&qp->sq_lock);
                qp->post_ok = true;
                pthread_mutex_unlock(&qp->sq_lock);
            }
        }
        break;
    }
    if (ret != 0) {
        return ret;
    }
    if (mask & IBV_QP_SQ_PSN) {
        qp->sq_psn = attr->sq_psn & 0xffffff;
    }
    /* as libibverbs: the field follows the state asked for, never the
     * device's own moves (UCX's rc_verbs asserts it is RTS when it posts
     * to a QP whose peer failed) */
    if (mask & IBV_QP_STATE) {
        ibqp->state = to;
    }
    return 0;
}

int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
                 struct ibv_qp_init_attr *init_attr)
{
    emu_qp_t *qp = emu_qp(ibqp);

    memset(attr, 0, sizeof(*attr));
    attr->qp_state            = emu_qp_cur_state(qp);
    attr->cur_qp_state        = attr->qp_state;
    attr->path_mtu            = IBV_MTU_4096;
    attr->sq_psn              = qp->sq_psn;
    attr->port_num            = 1;
    attr->cap.max_send_wr     = qp->max_send_wr;
    attr->cap.max_send_sge    = qp->max_send_sge;
    attr->cap.max_inline_data = qp->max_inline;
    if (qp->soft != NULL) {
        attr->max_rd_atomic = (uint8_t)qp->soft->max_rd_atomic;
    }
    if ((qp->kind == EMU_QP_RC) || (qp->kind == EMU_QP_UD)) {
        attr->dest_qp_num      = qp->rc_dest_qpn;
        attr->qp_access_flags  = qp->rc_access;
        attr->min_rnr_timer    = qp->rc_min_rnr;
        attr->ah_attr.dlid     = (qp->rc_ah != NULL) ?
                                     ((emu_ah_t *)qp->rc_ah)->dlid :
                                     0;
        attr->ah_attr.port_num = 1;
        attr->cap.max_recv_wr  = qp->rq_max_wr;
        attr->cap.max_recv_sge = qp->rq_max_wr ? qp->rq->max_sge : 0;
        attr->qkey             = qp->ud_qkey;
    }
    if (init_attr != NULL) {
        memset(init_attr, 0, sizeof(*init_attr));
        init_attr->qp_context = ibqp->qp_context;
        init_attr->send_cq    = ibqp->send_cq;
        init_attr->recv_cq    = ibqp->recv_cq;
        init_attr->srq        = ibqp->srq;
        init_attr->cap        = attr->cap;
        init_attr->qp_type    = ibqp->qp_type;
        init_attr->sq_sig_all = qp->sig_all;
    }
    if (attr_mask & IBV_QP_STATE) {
        ibqp->state = attr->qp_state; /* as libibverbs' ibv_query_qp */
    }
    return 0;
}
