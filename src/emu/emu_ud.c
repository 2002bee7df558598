/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: UD queue pairs.
 *
 * A UD QP is built as an RC QP is (emu_rc.c), from the two halves of DC,
 * its requester made a datagram DCI (dcx_soft_qp_set_datagram): every
 * SEND is one packet of at most the MTU, completed once it is on the wire
 * or lost, never answered.  The responder is a DCT made at creation whose
 * number is the QP's; its DC key is made from the QP's Q_Key, and a send
 * carries the key of the Q_Key it names (the QP's own when the WR's has
 * its high bit set, as InfiniBand says), so a datagram with another Q_Key
 * is dropped at the target.  The DCI's completions carry the QP's number,
 * which also keys the device's QP map, so that both queues' completions
 * find the QP.
 *
 * The first 40 bytes of every receive buffer are the GRH's, as on the
 * hardware: the sender puts them in front of the payload from a slot per
 * send-queue entry in memory registered at creation.  Through an AH with a
 * GRH they are a GRH (version 6, traffic class, flow label, payload length,
 * next header 0x1B, hop limit, the sender's and the destination's GIDs);
 * otherwise the hardware leaves them undefined, and the emulation puts
 * there zeros and, where a GRH has its source GID, the sender's GID.  On
 * a QP with a receive queue of its own the receive's buffer is known by
 * its slot, and the completion takes from those bytes IBV_WC_GRH and the
 * source LID (the GID carries it, emu_dev_guid); src_qp is the sender's
 * QP number, which its datagrams name.  A UD QP on an SRQ reports no GRH
 * flag and source LID 0.
 */
#include "emu/emu_raw.h"
#include "soft/dcx_soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define EMU_GRH_LEN     40u
#define EMU_UD_MTU      4096u
#define EMU_UD_QKEY_OWN 0x80000000u     /* the WR's high bit: the QP's Q_Key */
#define EMU_BTH_DETH    (12u + 8u + 4u) /* GRH payload length overhead */

typedef struct emu_ud_recv {
    uint64_t wr_id;
    uint64_t grh; /* address of the buffer's first 40 bytes; 0: none */
} emu_ud_recv_t;

/* The key of a closed responder: no Q_Key makes it */
static uint64_t emu_ud_closed_key(void)
{
    return emu_ud_key(0) - 1;
}

int emu_ud_init(emu_qp_t *qp, struct ibv_qp_init_attr_ex *attr,
                const char *name)
{
    size_t grh_len = (size_t)qp->max_send_wr * EMU_GRH_LEN;
    int ret;

    /* the responder and the receive queue are an RC QP's */
    ret = emu_rc_init(qp, attr, name);
    if (ret != 0) {
        return ret;
    }
    qp->send_num = qp->qpx.qp_base.qp_num;
    ret = dcx_soft_qp_set_datagram(qp->soft, qp->send_num, qp->resp->qp_num);
    if ((ret == 0) && (qp->rq != NULL)) {
        qp->ud_recv = calloc(qp->rq->max_wr, sizeof(*qp->ud_recv));
        ret         = (qp->ud_recv == NULL) ? ENOMEM : 0;
    }
    if (ret == 0) {
        qp->ud_grh = calloc(1, grh_len);
        ret        = (qp->ud_grh == NULL) ? ENOMEM : 0;
    }
    if (ret == 0) {
        ret = dcx_mr_reg(qp->pd->soft, qp->ud_grh, grh_len,
                         DCX_ACCESS_LOCAL_WRITE, &qp->ud_grh_mr);
    }
    if (ret != 0) {
        emu_error("%s: create_qp: UD QP set-up failed (%s)", name,
                  strerror(ret));
        emu_ud_fini(qp);
        return ret;
    }
    return dcx_soft_dct_set(qp->resp, emu_ud_closed_key(), 0, 0);
}

void emu_ud_fini(emu_qp_t *qp)
{
    emu_rc_fini(qp);
    if (qp->ud_grh_mr != NULL) {
        dcx_mr_dereg(qp->ud_grh_mr);
        qp->ud_grh_mr = NULL;
    }
    free(qp->ud_grh);
    free(qp->ud_recv);
    qp->ud_grh  = NULL;
    qp->ud_recv = NULL;
}

int emu_ud_modify(emu_qp_t *qp, const struct ibv_qp_attr *a, int mask,
                  enum ibv_qp_state to)
{
    if ((to == IBV_QPS_RESET) || (to == IBV_QPS_ERR)) {
        return dcx_soft_dct_set(qp->resp, emu_ud_closed_key(), 0, 0);
    }
    if (mask & IBV_QP_QKEY) {
        qp->ud_qkey = a->qkey;
    }
    if ((to == IBV_QPS_RTR) || (to == IBV_QPS_RTS) ||
        ((mask & IBV_QP_QKEY) && (qp->qpx.qp_base.state != IBV_QPS_INIT) &&
         (qp->qpx.qp_base.state != IBV_QPS_RESET))) {
        /* receives are taken from RTR on */
        return dcx_soft_dct_set(qp->resp, emu_ud_key(qp->ud_qkey), 0, 0);
    }
    return 0;
}

/* The 40 bytes in front of a datagram of len bytes through ah */
static void emu_ud_grh(emu_qp_t *qp, const emu_ah_t *ah, uint32_t len,
                       uint8_t *grh)
{
    uint64_t guid = emu_dev_guid(qp->ctx->dev);
    uint32_t w0;
    uint16_t plen;
    int i;

    memset(grh, 0, EMU_GRH_LEN);
    /* the source GID (subnet prefix, then the port GUID), big-endian */
    for (i = 0; i < 8; ++i) {
        grh[8 + i]  = (uint8_t)(EMU_GID_PREFIX >> (56 - 8 * i));
        grh[16 + i] = (uint8_t)(guid >> (56 - 8 * i));
    }
    if (!ah->is_global) {
        return; /* the rest undefined on the hardware: zeros */
    }
    w0   = htobe32((6u << 28) | ((uint32_t)ah->grh.traffic_class << 20) |
                   (ah->grh.flow_label & 0xfffff));
    plen = htobe16((uint16_t)(len + EMU_BTH_DETH));
    memcpy(grh, &w0, 4);
    memcpy(grh + 4, &plen, 2);
    grh[6] = 0x1b; /* next header: IBA transport */
    grh[7] = ah->grh.hop_limit;
    memcpy(grh + 24, ah->grh.dgid.raw, 16);
}

int emu_ud_prepare(emu_qp_t *qp, emu_wr_t *w, dcx_sge_t *sge,
                   const dcx_sge_t *inl)
{
    const char *name = qp->qpx.qp_base.context->device->name;
    emu_ah_t *ah     = (emu_ah_t *)w->ud_ah;
    const emu_route_t *route;
    uint32_t slot, qkey, len = 0, i, n;
    const dcx_sge_t *data;

    data = (w->wr.flags & DCX_SEND_INLINE) ? inl : w->wr.sg_list;
    n    = w->wr.num_sge;
    for (i = 0; i < n; ++i) {
        len += data[i].length;
    }
    if (len > EMU_UD_MTU) {
        emu_error("%s: ud qp 0x%x: a datagram of %u bytes exceeds the MTU "
                  "(%u)",
                  name, qp->qpx.qp_base.qp_num, len, EMU_UD_MTU);
        return EINVAL;
    }
    if ((ah == NULL) || (ah->ah.context != qp->qpx.qp_base.context) ||
        (w->ud_qpn == 0xffffff)) {
        emu_error("%s: ud qp 0x%x: %s", name, qp->qpx.qp_base.qp_num,
                  (w->ud_qpn == 0xffffff) ? "multicast is not modelled" :
                                            "an AH of another device");
        return (w->ud_qpn == 0xffffff) ? EOPNOTSUPP : EINVAL;
    }
    slot = (uint32_t)(qp->sq_posted % qp->max_send_wr);
    emu_ud_grh(qp, ah, len, qp->ud_grh + (size_t)slot * EMU_GRH_LEN);
    sge[0].addr   = (uintptr_t)(qp->ud_grh + (size_t)slot * EMU_GRH_LEN);
    sge[0].length = EMU_GRH_LEN;
    sge[0].lkey   = qp->ud_grh_mr->lkey;
    memcpy(sge + 1, data, n * sizeof(*sge));
    w->wr.sg_list = sge;
    w->wr.num_sge = (uint8_t)(n + 1);

    route           = emu_ah_route(ah);
    qkey            = (w->ud_qkey & EMU_UD_QKEY_OWN) ? qp->ud_qkey : w->ud_qkey;
    /* a number outside the LID owner's window names no soft QP there */
    w->wr.dest.ah   = route->soft;
    w->wr.dest.dctn = emu_qpn_at(route->qpn_base, w->ud_qpn & 0xffffff);
    w->wr.dest.dc_key = emu_ud_key(qkey);
    return 0;
}

int emu_ud_post_recv(emu_qp_t *qp, struct ibv_recv_wr *wr,
                     struct ibv_recv_wr **bad_wr)
{
    uint32_t size = qp->rq->max_wr;
    struct ibv_recv_wr one, *bad;
    emu_ud_recv_t *r;
    int ret = 0;

    for (; wr != NULL; wr = wr->next) {
        /* receives complete in posting order: slots are a ring */
        r         = &qp->ud_recv[qp->ud_recv_posted % size];
        one       = *wr;
        one.next  = NULL;
        one.wr_id = qp->ud_recv_posted % size;
        ret       = ibv_post_srq_recv(&qp->rq->srq, &one, &bad);
        if (ret != 0) {
            *bad_wr = wr;
            break;
        }
        r->wr_id = wr->wr_id;
        r->grh = ((wr->num_sge > 0) && (wr->sg_list[0].length >= EMU_GRH_LEN)) ?
                     wr->sg_list[0].addr :
                     0;
        qp->ud_recv_posted++;
    }
    return ret;
}

/* What the first 40 bytes of a receive (at addr; 0: none) say.  The
 * application may have freed the buffer by the time the completion is
 * made (the raw engine runs beside it; a NIC never reads the buffer
 * back), so the bytes are read through the kernel: a buffer gone says
 * nothing. */
static void emu_ud_ext(uint64_t addr, emu_wc_ext_t *ext)
{
    uint8_t grh[24];
    struct iovec l = {grh, sizeof(grh)};
    struct iovec r = {(void *)(uintptr_t)addr, sizeof(grh)};
    uint64_t guid  = 0;
    ssize_t got;
    int i;

    if (addr == 0) {
        return;
    }
    got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
    if ((got < 0) && ((errno == ENOSYS) || (errno == EPERM))) {
        memcpy(grh, r.iov_base, sizeof(grh)); /* no kernel copy here */
    } else if (got != (ssize_t)sizeof(grh)) {
        return;
    }
    for (i = 0; i < 8; ++i) {
        guid = (guid << 8) | grh[16 + i];
    }
    if ((guid & ~0xffffffull) == EMU_GUID_BASE) {
        ext->slid = (uint16_t)(guid >> 8);
    }
    ext->grh = ((grh[0] >> 4) == 6);
}

void emu_ud_recv_done(emu_qp_t *qp, dcx_wc_t *wc, emu_wc_ext_t *ext)
{
    const emu_ud_recv_t *r;

    if (qp->ud_recv == NULL) {
        return; /* on an SRQ: its wr_id is the application's */
    }
    r         = &qp->ud_recv[wc->wr_id % qp->rq->max_wr];
    wc->wr_id = r->wr_id;
    if (wc->status == DCX_WC_SUCCESS) {
        emu_ud_ext(r->grh, ext);
    }
}

bool emu_ud_raw_grh(emu_qp_t *qp, dcx_send_wr_t *wr, dcx_sge_t *sge,
                    uint8_t *inl, uint16_t idx)
{
    const emu_ah_t *ah = (const emu_ah_t *)qp->raw_sq->last_ah;
    uint32_t len       = 0, i, slot;

    for (i = 0; i < wr->num_sge; ++i) {
        len += sge[1 + i].length;
    }
    if ((len > EMU_UD_MTU) || (ah == NULL)) {
        return false;
    }
    if (wr->flags & DCX_SEND_INLINE) {
        /* the inline data follows the GRH in one buffer */
        emu_ud_grh(qp, ah, len, inl);
        sge[0].addr   = (uintptr_t)inl;
        sge[0].length = EMU_GRH_LEN + len;
        sge[0].lkey   = 0;
        wr->num_sge   = 1;
    } else {
        slot = idx & (qp->raw_sq->wqe_cnt - 1);
        emu_ud_grh(qp, ah, len, qp->ud_grh + (size_t)slot * EMU_GRH_LEN);
        sge[0].addr   = (uintptr_t)(qp->ud_grh + (size_t)slot * EMU_GRH_LEN);
        sge[0].length = EMU_GRH_LEN;
        sge[0].lkey   = qp->ud_grh_mr->lkey;
        wr->num_sge   = (uint8_t)(wr->num_sge + 1);
    }
    wr->sg_list = sge;
    return true;
}

void emu_ud_raw_recv(emu_qp_t *qp, uint16_t idx, emu_wc_ext_t *ext)
{
    struct emu_raw_rq *rq = qp->rq->raw;

    emu_ud_ext(rq->grh[idx & (rq->wqe_cnt - 1)], ext);
}
