/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DEVX tests' fixture: two ports (mlx5_0 and mlx5_1), each a DEVX
 * context with a PD, a raw CQ, a UAR, registered user memory (umem) for a
 * send queue, doorbell records and a receive queue, and a buffer with its
 * MR; the commands that make RMPs, QPs and KSM keys and move QPs, written
 * as UCX's mlx5 transports write them, and the check of a refusal.
 */
#ifndef DCX_TEST_EMU_DEVX_FIXTURE_H_
#define DCX_TEST_EMU_DEVX_FIXTURE_H_

#include "emu_raw_cq.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

static const unsigned kAccess = IBV_ACCESS_LOCAL_WRITE |
                                IBV_ACCESS_REMOTE_WRITE |
                                IBV_ACCESS_REMOTE_READ |
                                IBV_ACCESS_REMOTE_ATOMIC;
static const uint32_t kLogSq  = 6; /* basic blocks of each send queue: 64 */
static const uint32_t kLogRmp = 4; /* WQEs of the RMP: 16 */

/* big-endian bit fields of a mailbox, by bit offset */
static inline void prm_set(uint8_t *buf, uint32_t bit, uint32_t width,
                           uint32_t val)
{
    for (uint32_t i = 0; i < width; ++i) {
        uint32_t b   = bit + width - 1 - i;
        uint8_t mask = (uint8_t)(0x80u >> (b % 8));

        buf[b / 8] = (uint8_t)((val >> i) & 1 ? (buf[b / 8] | mask) :
                                                (buf[b / 8] & ~mask));
    }
}

static inline uint32_t prm_get(const uint8_t *buf, uint32_t bit, uint32_t width)
{
    uint32_t v = 0;

    for (uint32_t i = 0; i < width; ++i) {
        uint32_t b = bit + i;

        v = (v << 1) | ((buf[b / 8] >> (7 - b % 8)) & 1);
    }
    return v;
}

static inline void prm_set64(uint8_t *buf, uint32_t bit, uint64_t val)
{
    prm_set(buf, bit, 32, (uint32_t)(val >> 32));
    prm_set(buf, bit + 32, 32, (uint32_t)val);
}

struct side {
    struct ibv_context *ctx = nullptr;
    struct ibv_pd *pd       = nullptr;
    uint32_t pdn            = 0;
    uint16_t lid            = 0;
    raw_cq cq;
    struct mlx5dv_devx_uar *uar = nullptr;
    /* the send queue and the doorbell records (QP's, then RMP's) */
    std::vector<uint8_t> sq, rmp;
    alignas(64) uint32_t dbr[32];
    struct mlx5dv_devx_umem *sq_umem = nullptr, *dbr_umem = nullptr,
                            *rmp_umem = nullptr;
    struct mlx5dv_devx_obj *qp = nullptr, *rmpo = nullptr;
    uint32_t qpn = 0, rmpn = 0;
    uint16_t sq_pi = 0, rmp_pi = 0;
    std::vector<uint64_t> buf;
    struct ibv_mr *mr = nullptr;
};

class emu_devx_test : public emu_test {
protected:
    void SetUp() override
    {
        emu_test::SetUp();
        ASSERT_EQ(2, m_num);
        open_side(&m_a, 0);
        open_side(&m_b, 1);
    }

    void TearDown() override
    {
        for (side *s : {&m_a, &m_b}) {
            close_side(s);
        }
        emu_test::TearDown();
    }

    static struct ibv_context *devx_open(struct ibv_device *dev)
    {
        struct mlx5dv_context_attr attr;

        memset(&attr, 0, sizeof(attr));
        attr.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
        return mlx5dv_open_device(dev, &attr);
    }

    void open_side(side *s, int dev)
    {
        struct ibv_cq_init_attr_ex a;
        struct mlx5dv_obj obj;
        struct mlx5dv_pd dvpd;
        struct ibv_port_attr port;

        s->ctx = devx_open(m_list[dev]);
        ASSERT_NE(nullptr, s->ctx);
        s->pd = ibv_alloc_pd(s->ctx);
        ASSERT_NE(nullptr, s->pd);
        memset(&obj, 0, sizeof(obj));
        obj.pd.in  = s->pd;
        obj.pd.out = &dvpd;
        ASSERT_EQ(0, mlx5dv_init_obj(&obj, MLX5DV_OBJ_PD));
        s->pdn = dvpd.pdn;
        ASSERT_EQ(0, ibv_query_port(s->ctx, 1, &port));
        s->lid = port.lid;

        memset(&a, 0, sizeof(a));
        a.cqe                 = 63;
        struct ibv_cq_ex *cqx = mlx5dv_create_cq(s->ctx, &a, nullptr);
        ASSERT_NE(nullptr, cqx);
        s->cq.cq = ibv_cq_ex_to_cq(cqx);
        memset(&obj, 0, sizeof(obj));
        obj.cq.in  = s->cq.cq;
        obj.cq.out = &s->cq.dv;
        ASSERT_EQ(0, mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ));

        s->uar = mlx5dv_devx_alloc_uar(s->ctx, MLX5DV_UAR_ALLOC_TYPE_BF);
        ASSERT_NE(nullptr, s->uar);
        s->sq.assign((64u << kLogSq) + 4096, 0);
        s->rmp.assign(32u << kLogRmp, 0);
        memset(s->dbr, 0, sizeof(s->dbr));
        s->sq_umem  = mlx5dv_devx_umem_reg(s->ctx, s->sq.data(), s->sq.size(),
                                           kAccess);
        s->dbr_umem = mlx5dv_devx_umem_reg(s->ctx, s->dbr, sizeof(s->dbr),
                                           kAccess);
        s->rmp_umem = mlx5dv_devx_umem_reg(s->ctx, s->rmp.data(), s->rmp.size(),
                                           kAccess);
        ASSERT_NE(nullptr, s->sq_umem);
        ASSERT_NE(nullptr, s->dbr_umem);
        ASSERT_NE(nullptr, s->rmp_umem);
        s->buf.assign(512, 0);
        s->mr = ibv_reg_mr(s->pd, s->buf.data(), s->buf.size() * 8, kAccess);
        ASSERT_NE(nullptr, s->mr);
    }

    void close_side(side *s)
    {
        if (s->qp != nullptr) {
            EXPECT_EQ(0, mlx5dv_devx_obj_destroy(s->qp));
        }
        if (s->rmpo != nullptr) {
            EXPECT_EQ(0, mlx5dv_devx_obj_destroy(s->rmpo));
        }
        for (auto *u : {s->sq_umem, s->dbr_umem, s->rmp_umem}) {
            if (u != nullptr) {
                EXPECT_EQ(0, mlx5dv_devx_umem_dereg(u));
            }
        }
        if (s->uar != nullptr) {
            mlx5dv_devx_free_uar(s->uar);
        }
        if (s->mr != nullptr) {
            EXPECT_EQ(0, ibv_dereg_mr(s->mr));
        }
        if (s->cq.cq != nullptr) {
            EXPECT_EQ(0, ibv_destroy_cq(s->cq.cq));
        }
        if (s->pd != nullptr) {
            EXPECT_EQ(0, ibv_dealloc_pd(s->pd));
        }
        if (s->ctx != nullptr) {
            EXPECT_EQ(0, ibv_close_device(s->ctx));
        }
    }

    /* CREATE_RMP: a ring of 2^kLogRmp 32-byte WQEs, record at dbr[4] */
    void make_rmp(side *s)
    {
        uint8_t in[272] = {}, out[16] = {};

        prm_set(in, 0, 16, 0x90c);
        prm_set(in, 264, 4, 1);       /* rmpc.state: ready */
        prm_set(in, 640, 4, 1);       /* wq_type: cyclic */
        prm_set(in, 712, 24, s->pdn); /* pd */
        prm_set64(in, 768, 16);       /* dbr_addr: dbr[4] */
        prm_set(in, 908, 4, 5);       /* log_wq_stride: 32 bytes */
        prm_set(in, 923, 5, kLogRmp); /* log_wq_sz */
        prm_set(in, 960, 32, s->dbr_umem->umem_id);
        prm_set(in, 992, 32, s->rmp_umem->umem_id);
        s->rmpo = mlx5dv_devx_obj_create(s->ctx, in, sizeof(in), out,
                                         sizeof(out));
        ASSERT_NE(nullptr, s->rmpo) << strerror(errno);
        EXPECT_EQ(0u, out[0]);
        s->rmpn = prm_get(out, 72, 24);
    }

    /* CREATE_QP of an RC QP on s's CQ and RMP, record at dbr[0] */
    void make_qp(side *s)
    {
        create_qp(s, s->sq_umem->umem_id, 0, s->rmpn, &s->qp, &s->qpn);
    }

    /* CREATE_QP of an RC QP on s's CQ taking receives from srqn, its
     * send queue at offset 0 of umem sq_umem, its record at dbr_off of
     * s's record umem */
    void create_qp(side *s, uint32_t sq_umem, uint32_t dbr_off, uint32_t srqn,
                   struct mlx5dv_devx_obj **obj, uint32_t *qpn)
    {
        uint8_t in[272] = {}, out[16] = {};

        prm_set(in, 0, 16, 0x500);
        prm_set(in, 200, 8, 0x0);              /* st: RC */
        prm_set(in, 232, 24, s->pdn);          /* pd */
        prm_set(in, 273, 4, kLogSq);           /* log_sq_size */
        prm_set(in, 296, 24, s->uar->page_id); /* uar_page */
        prm_set(in, 1192, 24, s->cq.dv.cqn);   /* cqn_snd */
        prm_set(in, 1448, 24, s->cq.dv.cqn);   /* cqn_rcv */
        prm_set64(in, 1472, dbr_off);          /* dbr_addr */
        prm_set(in, 1573, 3, 1);               /* rq_type: shared */
        prm_set(in, 1576, 24, srqn);           /* srqn_rmpn_xrqn */
        prm_set(in, 2016, 32, s->dbr_umem->umem_id);
        prm_set(in, 2112, 32, sq_umem);
        *obj = mlx5dv_devx_obj_create(s->ctx, in, sizeof(in), out, sizeof(out));
        ASSERT_NE(nullptr, *obj) << strerror(errno);
        *qpn = prm_get(out, 72, 24);
        EXPECT_NE(0u, *qpn);
    }

    /* one PRM transition of s's QP toward peer; the command's result */
    int modify(side *s, uint16_t opcode, const side *peer)
    {
        return modify_qp(s->qp, s->qpn, opcode, peer->qpn, peer->lid);
    }

    /* one PRM transition of QP qpn toward the QP rqpn at LID rlid */
    static int modify_qp(struct mlx5dv_devx_obj *qp, uint32_t qpn,
                         uint16_t opcode, uint32_t rqpn, uint16_t rlid)
    {
        uint8_t in[272] = {}, out[16] = {};

        prm_set(in, 0, 16, opcode);
        prm_set(in, 72, 24, qpn);
        prm_set(in, 680, 8, 1); /* vhca_port_num */
        switch (opcode) {
        case 0x502:                  /* RST2INIT */
            prm_set(in, 1360, 3, 7); /* rre, rwe, rae */
            break;
        case 0x503: /* INIT2RTR */
            prm_set(in, 256, 3, IBV_MTU_4096);
            prm_set(in, 360, 24, rqpn); /* remote_qpn */
            prm_set(in, 432, 16, rlid); /* rlid */
            prm_set(in, 1352, 3, 2);    /* log_rra_max */
            prm_set(in, 1379, 5, 1);    /* min_rnr_nak */
            break;
        case 0x504:                  /* RTR2RTS */
            prm_set(in, 448, 5, 10); /* ack_timeout */
            prm_set(in, 1096, 3, 2); /* log_sra_max */
            prm_set(in, 1101, 3, 2); /* retry_count */
            prm_set(in, 1104, 3, 7); /* rnr_retry */
            break;
        }
        return mlx5dv_devx_obj_modify(qp, in, sizeof(in), out, sizeof(out));
    }

    void connect()
    {
        make_rmp(&m_a);
        make_rmp(&m_b);
        make_qp(&m_a);
        make_qp(&m_b);
        for (uint16_t op : {0x502, 0x503, 0x504}) {
            ASSERT_EQ(0, modify(&m_a, op, &m_b));
            ASSERT_EQ(0, modify(&m_b, op, &m_a));
        }
    }

    /* a receive of 64 bytes over buf[slot] in the RMP ring */
    void post_recv(side *s, int slot)
    {
        uint8_t *wqe = s->rmp.data() + (s->rmp_pi & ((1u << kLogRmp) - 1)) * 32;
        auto *ds     = (struct mlx5_wqe_data_seg *)(wqe + 16);

        ds->byte_count = htobe32(64);
        ds->lkey       = htobe32(s->mr->lkey);
        ds->addr       = htobe64((uintptr_t)&s->buf[slot]);
        ++s->rmp_pi;
        __atomic_thread_fence(__ATOMIC_RELEASE);
        s->dbr[4] = htobe32(s->rmp_pi);
    }

    uint16_t post(side *s, uint8_t opcode, const void *segs, size_t len)
    {
        return post_on(s->sq.data(), &s->sq_pi, s->qpn, &s->dbr[0], s->uar,
                       opcode, segs, len, MLX5_WQE_CTRL_CQ_UPDATE);
    }

    /* A WQE into the send queue at sq (2^kLogSq basic blocks), its
     * record at dbr (the receive counter, then the send counter), rung
     * through uar; its index */
    static uint16_t post_on(uint8_t *sq, uint16_t *pi_p, uint32_t qpn,
                            uint32_t *dbr, struct mlx5dv_devx_uar *uar,
                            uint8_t opcode, const void *segs, size_t len,
                            uint8_t fm_ce_se)
    {
        uint16_t pi  = *pi_p;
        uint8_t *wqe = sq + (pi & ((1u << kLogSq) - 1)) * 64;
        auto *ctrl   = (struct mlx5_wqe_ctrl_seg *)wqe;
        uint32_t ds  = (uint32_t)((sizeof(*ctrl) + len + 15) / 16);

        memset(wqe, 0, 64);
        ctrl->opmod_idx_opcode = htobe32(((uint32_t)pi << 8) | opcode);
        ctrl->qpn_ds           = htobe32((qpn << 8) | ds);
        ctrl->fm_ce_se         = fm_ce_se;
        memcpy(wqe + sizeof(*ctrl), segs, len);
        *pi_p = (uint16_t)(pi + 1);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        dbr[MLX5_SND_DBR] = htobe32(*pi_p);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        *(volatile uint64_t *)uar->reg_addr = *(uint64_t *)wqe;
        return pi;
    }

    /* A KSM key as UCX 1.13 makes its atomic keys: one 2 GiB entry from
     * mr's address rounded down to 2 GiB (base), through mr's lkey, with
     * addresses starting at base + off; the key's rkey in *rkey */
    struct mlx5dv_devx_obj *ksm_key(side *s, struct ibv_mr *mr, uint64_t off,
                                    uint32_t *rkey)
    {
        const uint64_t base  = (uintptr_t)mr->addr & ~((1ull << 31) - 1);
        uint8_t in[272 + 16] = {}, out[16] = {};
        struct mlx5dv_devx_obj *mk;

        prm_set(in, 0, 16, 0x200);
        prm_set(in, 145, 5, 0x1f);      /* a, rw, rr, lw, lr */
        prm_set(in, 150, 2, 3);         /* access mode: KSM */
        prm_set(in, 160, 24, 0xffffff); /* qpn: none */
        prm_set(in, 184, 8, 0x5a);      /* mkey_7_0 */
        prm_set(in, 232, 24, s->pdn);
        prm_set64(in, 256, base + off);
        prm_set64(in, 320, (uintptr_t)mr->addr + mr->length - base);
        prm_set(in, 544, 32, 1); /* translations_octword_size */
        prm_set(in, 603, 5, 31); /* 2 GiB entries */
        prm_set(in, 768, 32, 1); /* actual size */
        prm_set(in, 2208, 32, mr->lkey);
        prm_set64(in, 2240, base);
        mk = mlx5dv_devx_obj_create(s->ctx, in, sizeof(in), out, sizeof(out));
        *rkey = (prm_get(out, 72, 24) << 8) | 0x5a;
        return mk;
    }

    /* a refused command: EREMOTEIO, the status in out, one log line */
    template <typename F> void refused(F call, uint8_t status, const char *why)
    {
        uint8_t out[16];
        log_capture log;

        memset(out, 0xee, sizeof(out));
        errno = 0;
        EXPECT_FALSE(call(out)) << why;
        EXPECT_EQ(EREMOTEIO, errno) << why;
        EXPECT_EQ(status, out[0]) << why;
        EXPECT_EQ(1u, log.count()) << why;
    }

    side m_a, m_b;
};

#endif
