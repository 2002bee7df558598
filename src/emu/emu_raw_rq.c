/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: receive WQEs in queue memory (emu_raw.h), taken into
 * the soft SRQ that the responder consumes.
 *
 * An SRQ's WQEs are a linked list: a 16-byte next segment whose
 * next_wqe_index names the WQE after it, then data segments (a DEVX RMP's
 * may instead be a ring: the next segment there, its index unused).  A
 * QP's own receive queue holds WQEs in order, data segments only.  In both, a data
 * segment with the invalid lkey ends the list early.  The doorbell record
 * counts the WQEs software posted (16 bits); the device takes every WQE
 * the count covers, in order, as the soft SRQ has room; the receive's
 * wr_id (the CQE's wqe_counter) is a list's WQE index, and a ring's count
 * of WQEs taken, 16 bits, as the HCA reports them.  It takes them
 * whenever the engine runs, and when a message finds the soft SRQ empty
 * (its watch wakes the engine).
 *
 * Scatter-to-CQE: the soft device writes every message into the buffers
 * of its receive, where the HCA writes none of one it scatters into the
 * CQE.  So an SRQ keeps, per WQE, its first EMU_SCAT_MAX bytes of buffer
 * as they were when the device took the WQE; a scattered SEND then moves
 * its bytes to the CQE and puts these back.  They are read through the
 * kernel (process_vm_readv): a buffer the application got wrong faults
 * nothing here, its receive fails in the soft device and nothing is put
 * back; what is put back goes only where the soft device wrote.
 */
#include "emu/emu_raw.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* The first bytes of a WQE's buffers (n entries of sge), kept */
static void emu_raw_rq_keep(struct emu_raw_rq *rq, uint32_t idx,
                            const dcx_sge_t *sge, uint32_t n)
{
    struct emu_raw_keep *k = &rq->keep[idx];
    struct iovec remote[EMU_RAW_KEEP_SGES], local;
    uint32_t left = EMU_SCAT_MAX, len;
    ssize_t got;

    for (k->n = 0; (k->n < n) && (k->n < EMU_RAW_KEEP_SGES) && (left > 0);
         ++k->n) {
        len           = (sge[k->n].length < left) ? sge[k->n].length : left;
        k->addr[k->n] = sge[k->n].addr;
        k->len[k->n]  = len;
        remote[k->n].iov_base = (void *)(uintptr_t)sge[k->n].addr;
        remote[k->n].iov_len  = len;
        left -= len;
    }
    local.iov_base = k->data;
    local.iov_len  = EMU_SCAT_MAX - left;
    got = (k->n > 0) ? process_vm_readv(getpid(), &local, 1, remote, k->n, 0) :
                       0;
    k->bytes = (got > 0) ? (uint32_t)got : 0;
}

bool emu_raw_rq_scatter(struct emu_raw_rq *rq, uint16_t idx, uint32_t len,
                        uint8_t *dst)
{
    struct emu_raw_keep *k;
    uint32_t i, off, l;
    uint8_t *buf;

    if (rq->keep == NULL) {
        return false;
    }
    k = &rq->keep[idx & (rq->wqe_cnt - 1)];
    if (len > k->bytes) {
        return false;
    }
    for (i = off = 0; (i < k->n) && (off < len); ++i, off += l) {
        l   = (k->len[i] < len - off) ? k->len[i] : len - off;
        buf = (uint8_t *)(uintptr_t)k->addr[i];
        memcpy(dst + off, buf, l);
        memcpy(buf, k->data + off, l);
    }
    return true;
}

unsigned emu_raw_rq_run(struct emu_raw_rq *rq)
{
    uint16_t posted = (uint16_t)be32toh(rq->dbrec[0]);
    struct mlx5_wqe_srq_next_seg next;
    dcx_sge_t sge[32];
    const uint8_t *wqe;
    const struct mlx5_wqe_data_seg *ds;
    uint32_t idx, i, n;
    unsigned taken = 0;

    __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the WQEs before the count */
    while (rq->taken != posted) {
        idx = rq->linked ? rq->head : (rq->taken & (rq->wqe_cnt - 1));
        wqe = rq->buf + (size_t)idx * rq->stride;
        ds  = (const void *)(wqe + rq->hdr);
        for (i = n = 0; (i < rq->max_sge) && (n < 32); ++i) {
            if (be32toh(ds[i].lkey) == MLX5_INVALID_LKEY) {
                break;
            }
            sge[n].addr   = be64toh(ds[i].addr);
            sge[n].length = be32toh(ds[i].byte_count);
            sge[n].lkey   = be32toh(ds[i].lkey);
            ++n;
        }
        /* kept before the soft device can write the buffers */
        if (rq->keep != NULL) {
            emu_raw_rq_keep(rq, idx, sge, n);
        }
        /* the CQE's wqe_counter: a list's WQE index, a ring's 16-bit count
         * of the WQEs taken (which wraps past the ring's size); the SRQ's
         * number above it tells an XRQ's completions apart (emu_raw.h) */
        if (dcx_srq_post_recv(rq->srq->soft,
                              ((uint64_t)rq->srq->srqn << 32) |
                                  (rq->linked ? idx : rq->taken),
                              sge, n) != 0) {
            break; /* the soft SRQ is full: the rest waits */
        }
        if (rq->grh != NULL) {
            rq->grh[idx] = ((n > 0) && (sge[0].length >= 40)) ? sge[0].addr : 0;
        }
        if (rq->linked) {
            memcpy(&next, wqe, sizeof(next));
            rq->head = be16toh(next.next_wqe_index) & (rq->wqe_cnt - 1);
        }
        rq->taken++;
        ++taken;
    }
    return taken;
}
