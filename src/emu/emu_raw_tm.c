/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: an XRQ's tag list (emu_raw.h).
 *
 * The list itself, its matching, its phase count and the device
 * rendezvous are the soft SRQ's (DCX_SRQ_TM, docs/device-semantics.md
 * section 9).  What this file adds is the interface a ConnectX shows:
 *  - list operations are WQEs of opcode 0x28 on a command QP whose receive
 *    queue is the XRQ: a 16-byte control segment, a 32-byte tag-matching
 *    segment (operation, flags, slot index, software's unexpected count,
 *    tag and mask) and, for an APPEND, one data segment;
 *  - software names entries by slot.  The XRQ keeps a free head: an APPEND
 *    fills the slot the head is at and moves the head to the slot the WQE
 *    names; a REMOVE names the slot to take.  Completions about an entry
 *    carry its slot (the CQE's app_info);
 *  - a completion is written only for an operation whose segment asks for
 *    one (TM_CQE_REQ); the soft device is asked for every one, so that no
 *    soft operation stays outstanding behind the CQE-less ones.
 * Tags and masks are compared as the 8 bytes software wrote, as the
 * hardware compares them: both they and the messages' TMH tags go to the
 * soft device through the same big-endian load.
 */
#include "emu/emu_raw.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* mlx5_wqe_tm_seg: the operation (in opcode's high nibble) and flags */
#define EMU_TM_OP_NOP      0x0u
#define EMU_TM_OP_APPEND   0x1u
#define EMU_TM_OP_REMOVE   0x2u
#define EMU_TM_FLAG_CQE    0x80u /* a completion for this operation */
#define EMU_TM_FLAG_SW_CNT 0x40u /* sw_cnt is software's count */

/* a slot's entry in the wr_id of an operation or receive (emu_raw.h) */
static uint64_t emu_xrq_wr_id(const emu_xrq_t *xrq, uint32_t slot)
{
    return ((uint64_t)xrq->srq->srqn << 32) | ((uint64_t)xrq->gen[slot] << 16) |
           slot;
}

static int emu_xrq_bad(emu_qp_t *qp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int emu_xrq_bad(emu_qp_t *qp, const char *fmt, ...)
{
    char why[128];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    emu_error("%s: qp 0x%x: tag-list operation not taken (%s); it completes "
              "with LOCAL_QP_OP_ERR",
              qp->qpx.qp_base.context->device->name, qp->qpx.qp_base.qp_num,
              why);
    return EINVAL;
}

/* An operation on the soft list.  Entries whose last completion the CQ
 * has not taken yet still hold soft entries, and operations whose
 * completions it has not taken are outstanding: when the soft list has no
 * room, the CQ is taken and the operation tried once more */
static int emu_xrq_post(emu_xrq_t *xrq, dcx_tm_op_t *op)
{
    int ret = dcx_srq_tm_post(xrq->srq->soft, op);

    if ((ret == ENOMEM) && (xrq->cq->raw != NULL)) {
        emu_raw_cq_run(xrq->cq);
        ret = dcx_srq_tm_post(xrq->srq->soft, op);
    }
    return ret;
}

/* An APPEND: the entry in the head's slot, the head to the named slot */
static int emu_xrq_append(emu_qp_t *qp, emu_xrq_t *xrq, dcx_tm_op_t *op,
                          const struct mlx5_wqe_tm_seg *seg,
                          const struct mlx5_wqe_data_seg *data)
{
    uint32_t slot = xrq->head;
    uint32_t next = be16toh(seg->index);
    int ret;

    if ((next >= xrq->nslots) || (next == slot) ||
        (xrq->handle[next] != EMU_XRQ_FREE)) {
        return emu_xrq_bad(qp,
                           "APPEND names slot %u as the next head, which is "
                           "not a free slot other than the head (%u)",
                           next, slot);
    }
    op->opcode = DCX_TM_OP_ADD;
    op->mask   = be64toh(seg->append_mask);
    op->tag    = be64toh(seg->append_tag) & op->mask;
    if ((data != NULL) && (be32toh(data->byte_count) > 0)) {
        op->num_sge    = 1;
        op->sge.addr   = be64toh(data->addr);
        op->sge.length = be32toh(data->byte_count);
        op->sge.lkey   = be32toh(data->lkey);
    }
    xrq->gen[slot]++;
    op->wr_id |= emu_xrq_wr_id(xrq, slot);
    op->recv_wr_id = EMU_XRQ_WR_ENTRY | emu_xrq_wr_id(xrq, slot);
    ret            = emu_xrq_post(xrq, op);
    if (ret != 0) {
        xrq->gen[slot]--;
        return (ret == ENOMEM) ? EAGAIN :
                                 emu_xrq_bad(qp,
                                             "APPEND into slot %u: the "
                                             "soft list refused it (%u)",
                                             slot, (uint32_t)ret);
    }
    xrq->handle[slot] = op->handle;
    xrq->head         = next;
    return 0;
}

int emu_xrq_list_op(emu_qp_t *qp, const struct mlx5_wqe_tm_seg *seg,
                    const struct mlx5_wqe_data_seg *data)
{
    emu_xrq_t *xrq = (qp->srq != NULL) ? qp->srq->xrq : NULL;
    uint32_t op    = seg->opcode >> 4;
    dcx_tm_op_t o;
    uint32_t slot;
    int ret;

    if (xrq == NULL) {
        return emu_xrq_bad(qp,
                           "the QP's receive queue has no tag list "
                           "(srq %u, operation %u)",
                           (qp->srq != NULL) ? qp->srq->srqn : 0, op);
    }
    memset(&o, 0, sizeof(o));
    o.flags = DCX_TM_OPF_SIGNALED;
    o.wr_id = ((uint64_t)xrq->srq->srqn << 32) | EMU_XRQ_WR_OP |
              ((seg->flags & EMU_TM_FLAG_CQE) ? EMU_XRQ_WR_CQE : 0);
    if (seg->flags & EMU_TM_FLAG_SW_CNT) {
        o.flags |= DCX_TM_OPF_SYNC;
        o.unexpected_cnt = be16toh(seg->sw_cnt);
    }
    switch (op) {
    case EMU_TM_OP_APPEND:
        return emu_xrq_append(qp, xrq, &o, seg, data);
    case EMU_TM_OP_REMOVE:
        slot = be16toh(seg->index);
        if (slot >= xrq->nslots) {
            return emu_xrq_bad(qp, "REMOVE of slot %u of a list of %u", slot,
                               xrq->nslots);
        }
        o.wr_id |= emu_xrq_wr_id(xrq, slot);
        if (xrq->handle[slot] == EMU_XRQ_FREE) {
            /* nothing listed there: a SYNC carries the count and the
             * completion, which reports nothing removed */
            o.opcode = DCX_TM_OP_SYNC;
            o.wr_id |= EMU_XRQ_WR_REMOVE;
        } else {
            o.opcode          = DCX_TM_OP_DEL;
            o.handle          = xrq->handle[slot];
            xrq->handle[slot] = EMU_XRQ_FREE;
        }
        break;
    case EMU_TM_OP_NOP:
        o.opcode = DCX_TM_OP_SYNC;
        break;
    default:
        return emu_xrq_bad(qp,
                           "operation %u is not NOP (0), APPEND (1) or "
                           "REMOVE (2)",
                           op);
    }
    ret = emu_xrq_post(xrq, &o);
    if (ret == ENOMEM) {
        if (o.opcode == DCX_TM_OP_DEL) {
            xrq->handle[be16toh(seg->index)] = o.handle; /* not taken yet */
        }
        return EAGAIN;
    }
    return (ret == 0) ? 0 :
                        emu_xrq_bad(qp,
                                    "the soft list refused operation %u "
                                    "(%u)",
                                    op, (uint32_t)ret);
}
