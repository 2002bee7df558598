/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A CQ polled from its memory, as UCX's mlx5 transports poll one (the
 * raw-queue and DEVX tests): the CQE at the consumer index is software's
 * once its owner bit matches the index's pass and it is not invalid.
 * Also a data segment through a side's MR, for WQEs written by hand.
 */
#ifndef DCX_TEST_EMU_RAW_CQ_H_
#define DCX_TEST_EMU_RAW_CQ_H_

#include "emu_fixture.h"

#include <infiniband/mlx5dv.h>

struct raw_cq {
    struct ibv_cq *cq = nullptr;
    struct mlx5dv_cq dv;
    uint32_t ci = 0;
};

/* a CQE in software's hands at ci, or nullptr */
static inline struct mlx5_cqe64 *cqe_at(raw_cq &c)
{
    uint8_t *slot = (uint8_t *)c.dv.buf +
                    (size_t)(c.ci & (c.dv.cqe_cnt - 1)) * c.dv.cqe_size;
    struct mlx5_cqe64 *cqe = (struct mlx5_cqe64 *)(slot + c.dv.cqe_size -
                                                   sizeof(*cqe));
    uint8_t op_own         = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE);

    if (((op_own >> 4) == MLX5_CQE_INVALID) ||
        ((op_own & MLX5_CQE_OWNER_MASK) != !!(c.ci & c.dv.cqe_cnt))) {
        return nullptr;
    }
    return cqe;
}

/* The next CQE of c, copied, its slot given back; false after ms */
static inline bool raw_cq_poll(raw_cq &c, struct mlx5_cqe64 *out,
                               int64_t ms = 5000)
{
    int64_t end = emu_now_ms() + ms;
    struct mlx5_cqe64 *cqe;

    do {
        cqe = cqe_at(c);
        if (cqe != nullptr) {
            *out = *cqe;
            ++c.ci;
            return true;
        }
    } while (emu_now_ms() < end);
    return false;
}

/* A data segment of len bytes at addr through s's MR */
template <typename S>
static inline struct mlx5_wqe_data_seg dseg(const S *s, const void *addr,
                                            uint32_t len)
{
    struct mlx5_wqe_data_seg d;

    d.byte_count = htobe32(len);
    d.lkey       = htobe32(s->mr->lkey);
    d.addr       = htobe64((uintptr_t)addr);
    return d;
}

#endif
