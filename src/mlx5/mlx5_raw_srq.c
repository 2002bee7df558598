/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: an SRQ whose receive WQEs the backend writes.
 *
 * The SRQ's WQEs form a linked list in its memory (a next segment whose
 * next_wqe_index names the following WQE, then the data segments), as
 * libmlx5 lays it out when it creates the SRQ.  Software posts at the
 * head and moves the head along the list; the list's tail is a WQE never
 * posted, so the HCA, which takes WQEs in list order as the doorbell
 * record's count allows, always has a next index to follow.  A receive
 * whose CQE came back is linked after the tail and becomes the tail.  A
 * WQE with fewer buffers than the SRQ's most ends with the invalid key.
 * The SRQ's CQ is polled in memory too (mlx5_raw_cq.c), which hands each
 * completed WQE back here.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Writes one WQE at the head; EAGAIN when only the tail is left */
static inline int dcx_mlx5_raw_srq_put(dcx_mlx5_raw_srq_t *rs, uint32_t max_sge,
                                       uint64_t wr_id, const dcx_sge_t *sg,
                                       unsigned num_sge)
{
    struct mlx5_wqe_srq_next_seg *next;
    struct mlx5_wqe_data_seg *ds;
    uint16_t idx = rs->head;
    unsigned i;

    if (idx == rs->tail) {
        return EAGAIN;
    }
    next = dcx_mlx5_raw_srq_wqe(rs, idx);
    ds   = (struct mlx5_wqe_data_seg *)(next + 1);
    for (i = 0; i < num_sge; ++i) {
        ds[i].byte_count = htobe32(sg[i].length);
        ds[i].lkey       = htobe32(sg[i].lkey);
        ds[i].addr       = htobe64(sg[i].addr);
    }
    if (i < max_sge) {
        ds[i].byte_count = 0;
        ds[i].lkey       = htobe32(MLX5_INVALID_LKEY);
        ds[i].addr       = 0;
    }
    rs->wr_id[idx] = wr_id;
    rs->head       = be16toh(next->next_wqe_index);
    rs->counter++;
    return 0;
}

static inline void dcx_mlx5_raw_srq_ring(dcx_mlx5_raw_srq_t *rs)
{
    __atomic_thread_fence(__ATOMIC_RELEASE); /* the WQEs before the count */
    rs->dbrec[0] = htobe32(rs->counter);
}

static int dcx_mlx5_raw_srq_post_recv(dcx_srq_t *super, uint64_t wr_id,
                                      const dcx_sge_t *sg_list,
                                      unsigned num_sge)
{
    dcx_mlx5_srq_t *srq = (dcx_mlx5_srq_t *)super;

    if (num_sge > super->max_sge) {
        dcx_error("%s: srq: %u sge, at most %u", super->dev->caps.name, num_sge,
                  super->max_sge);
        return EINVAL;
    }
    if (dcx_mlx5_raw_srq_put(srq->raw, super->max_sge, wr_id, sg_list,
                             num_sge) != 0) {
        dcx_trace("%s: srq: full", super->dev->caps.name);
        return ENOMEM;
    }
    dcx_mlx5_raw_srq_ring(srq->raw);
    return 0;
}

/* Writes the single-buffer receives of list into the WQEs from the head on,
 * as many as come before the tail, and rings once.  term: the SRQ takes
 * more than one buffer per WQE, so each WQE ends with the invalid key; a
 * constant in each caller, which leaves the loop no test for it. */
static inline __attribute__((always_inline)) int
dcx_mlx5_raw_srq_put_list(dcx_srq_t *super, const dcx_recv_t *list,
                          unsigned count, uint32_t length, unsigned *posted_p,
                          bool term)
{
    dcx_mlx5_raw_srq_t *rs = ((dcx_mlx5_srq_t *)super)->raw;
    /* the queue in locals: the stores into the WQEs would make the
     * compiler read it again per receive */
    uint8_t *buf           = rs->buf;
    size_t stride          = rs->stride;
    uint64_t *wr_id        = rs->wr_id;
    uint16_t tail          = rs->tail;
    uint16_t idx           = rs->head;
    __be32 byte_count      = htobe32(length);
    const dcx_recv_t *r, *end = list + count;
    struct mlx5_wqe_srq_next_seg *next;
    struct mlx5_wqe_data_seg *ds;
    unsigned done;

    for (r = list; (r != end) && (idx != tail); ++r) {
        next             = (struct mlx5_wqe_srq_next_seg *)(buf + idx * stride);
        ds               = (struct mlx5_wqe_data_seg *)(next + 1);
        ds[0].byte_count = byte_count;
        ds[0].lkey       = htobe32(r->lkey);
        ds[0].addr       = htobe64(r->addr);
        if (term) {
            ds[1].byte_count = 0;
            ds[1].lkey       = htobe32(MLX5_INVALID_LKEY);
            ds[1].addr       = 0;
        }
        wr_id[idx] = r->wr_id;
        idx        = be16toh(next->next_wqe_index);
    }
    done      = (unsigned)(r - list);
    *posted_p = done;
    if (done != 0) {
        rs->head = idx;
        rs->counter += (uint16_t)done;
        dcx_mlx5_raw_srq_ring(rs);
    }
    if (done < count) {
        dcx_trace("%s: srq: full", super->dev->caps.name);
        return ENOMEM;
    }
    return 0;
}

/* An SRQ of one buffer per WQE: nothing follows a WQE's data segment */
static int dcx_mlx5_raw_srq_post_recv_list(dcx_srq_t *super,
                                           const dcx_recv_t *list,
                                           unsigned count, uint32_t length,
                                           unsigned *posted_p)
{
    return dcx_mlx5_raw_srq_put_list(super, list, count, length, posted_p,
                                     false);
}

static int dcx_mlx5_raw_srq_post_recv_list_term(dcx_srq_t *super,
                                                const dcx_recv_t *list,
                                                unsigned count, uint32_t length,
                                                unsigned *posted_p)
{
    return dcx_mlx5_raw_srq_put_list(super, list, count, length, posted_p,
                                     true);
}

int dcx_mlx5_raw_srq_setup(dcx_mlx5_srq_t *srq, void *buf, uint32_t stride,
                           uint32_t cnt, uint32_t head, uint32_t tail,
                           volatile __be32 *dbrec)
{
    const char *name = srq->super.dev->caps.name;
    dcx_mlx5_raw_srq_t *rs;

    /* a new SRQ: its list runs from WQE 0 to the tail, the last one */
    if ((head != 0) || (tail + 1 != cnt) || (cnt & (cnt - 1)) ||
        (cnt > 0x10000) ||
        (stride < sizeof(struct mlx5_wqe_srq_next_seg) +
                      srq->super.max_sge * sizeof(struct mlx5_wqe_data_seg))) {
        dcx_error("%s: srq: a queue of %u WQEs of %u bytes (head %u, tail "
                  "%u) cannot be written raw",
                  name, cnt, stride, head, tail);
        return EINVAL;
    }
    rs = calloc(1, sizeof(*rs));
    if (rs != NULL) {
        rs->wr_id = calloc(cnt, sizeof(*rs->wr_id));
    }
    if ((rs == NULL) || (rs->wr_id == NULL)) {
        free(rs);
        dcx_error("%s: srq: out of memory", name);
        return ENOMEM;
    }
    rs->buf                   = buf;
    rs->stride                = stride;
    rs->wqe_cnt               = cnt;
    rs->dbrec                 = dbrec;
    rs->head                  = (uint16_t)head;
    rs->tail                  = (uint16_t)tail;
    srq->raw                  = rs;
    srq->super.post_recv      = dcx_mlx5_raw_srq_post_recv;
    srq->super.post_recv_list = (srq->super.max_sge > 1) ?
                                    dcx_mlx5_raw_srq_post_recv_list_term :
                                    dcx_mlx5_raw_srq_post_recv_list;
    return 0;
}

int dcx_mlx5_raw_srq_init(dcx_mlx5_srq_t *srq)
{
    struct mlx5dv_obj obj;
    struct mlx5dv_srq dv;
    int ret;

    memset(&obj, 0, sizeof(obj));
    memset(&dv, 0, sizeof(dv));
    obj.srq.in  = srq->srq;
    obj.srq.out = &dv;
    ret         = mlx5dv_init_obj(&obj, MLX5DV_OBJ_SRQ);
    if (ret != 0) {
        dcx_error("%s: srq: mlx5dv_init_obj failed: %s",
                  srq->super.dev->caps.name, strerror(ret));
        return ret;
    }
    return dcx_mlx5_raw_srq_setup(srq, dv.buf, dv.stride, dv.tail + 1, dv.head,
                                  dv.tail, dv.dbrec);
}

void dcx_mlx5_raw_srq_free(dcx_mlx5_srq_t *srq)
{
    if (srq->raw != NULL) {
        free(srq->raw->wr_id);
        free(srq->raw);
        srq->raw = NULL;
    }
}
