/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DEVX: firmware commands on contexts opened with MLX5DV_CONTEXT_FLAGS_DEVX,
 * as UCX's mlx5 transports issue them.  Between two ports (mlx5_0 and
 * mlx5_1): RC QPs made by CREATE_QP with their send queues and doorbell
 * records in registered user memory (umem) and rung through a UAR from
 * mlx5dv_devx_alloc_uar, taken to RTS by the PRM transitions; receives
 * from an RMP (CREATE_RMP, a ring in umem); an RDMA WRITE and an atomic
 * through a KSM key (CREATE_MKEY) whose addresses start at its
 * start_addr; QUERY_QP; the last-WQE event of an SRQ-attached QP on an
 * event channel; the capabilities QUERY_HCA_CAP reports.  Bad flows: a
 * command the emulation does not model answers the PRM's status and
 * syndrome with EREMOTEIO and one log line, as do bad object numbers and
 * memory outside a umem; nothing is created by a refused command.
 */
#include "emu_raw_cq.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

namespace {

const unsigned kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                         IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
const uint32_t kLogSq  = 6; /* basic blocks of each send queue: 64 */
const uint32_t kLogRmp = 4; /* WQEs of the RMP: 16 */

/* big-endian bit fields of a mailbox, by bit offset */
void prm_set(uint8_t *buf, uint32_t bit, uint32_t width, uint32_t val)
{
    for (uint32_t i = 0; i < width; ++i) {
        uint32_t b   = bit + width - 1 - i;
        uint8_t mask = (uint8_t)(0x80u >> (b % 8));

        buf[b / 8] = (uint8_t)((val >> i) & 1 ? (buf[b / 8] | mask) :
                                                (buf[b / 8] & ~mask));
    }
}

uint32_t prm_get(const uint8_t *buf, uint32_t bit, uint32_t width)
{
    uint32_t v = 0;

    for (uint32_t i = 0; i < width; ++i) {
        uint32_t b = bit + i;

        v = (v << 1) | ((buf[b / 8] >> (7 - b % 8)) & 1);
    }
    return v;
}

void prm_set64(uint8_t *buf, uint32_t bit, uint64_t val)
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

} // namespace

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
        uint8_t in[272] = {}, out[16] = {};

        prm_set(in, 0, 16, 0x500);
        prm_set(in, 200, 8, 0x0);              /* st: RC */
        prm_set(in, 232, 24, s->pdn);          /* pd */
        prm_set(in, 273, 4, kLogSq);           /* log_sq_size */
        prm_set(in, 296, 24, s->uar->page_id); /* uar_page */
        prm_set(in, 1192, 24, s->cq.dv.cqn);   /* cqn_snd */
        prm_set(in, 1448, 24, s->cq.dv.cqn);   /* cqn_rcv */
        prm_set64(in, 1472, 0);                /* dbr_addr: dbr[0] */
        prm_set(in, 1573, 3, 1);               /* rq_type: shared */
        prm_set(in, 1576, 24, s->rmpn);        /* srqn_rmpn_xrqn */
        prm_set(in, 2016, 32, s->dbr_umem->umem_id);
        prm_set(in, 2112, 32, s->sq_umem->umem_id);
        s->qp = mlx5dv_devx_obj_create(s->ctx, in, sizeof(in), out,
                                       sizeof(out));
        ASSERT_NE(nullptr, s->qp) << strerror(errno);
        s->qpn = prm_get(out, 72, 24);
        EXPECT_NE(0u, s->qpn);
    }

    /* one PRM transition of s's QP toward peer; the command's result */
    int modify(side *s, uint16_t opcode, const side *peer)
    {
        uint8_t in[272] = {}, out[16] = {};

        prm_set(in, 0, 16, opcode);
        prm_set(in, 72, 24, s->qpn);
        prm_set(in, 680, 8, 1); /* vhca_port_num */
        switch (opcode) {
        case 0x502:                  /* RST2INIT */
            prm_set(in, 1360, 3, 7); /* rre, rwe, rae */
            break;
        case 0x503: /* INIT2RTR */
            prm_set(in, 256, 3, IBV_MTU_4096);
            prm_set(in, 360, 24, peer->qpn); /* remote_qpn */
            prm_set(in, 432, 16, peer->lid); /* rlid */
            prm_set(in, 1352, 3, 2);         /* log_rra_max */
            prm_set(in, 1379, 5, 1);         /* min_rnr_nak */
            break;
        case 0x504:                  /* RTR2RTS */
            prm_set(in, 448, 5, 10); /* ack_timeout */
            prm_set(in, 1096, 3, 2); /* log_sra_max */
            prm_set(in, 1101, 3, 2); /* retry_count */
            prm_set(in, 1104, 3, 7); /* rnr_retry */
            break;
        }
        return mlx5dv_devx_obj_modify(s->qp, in, sizeof(in), out, sizeof(out));
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
        uint16_t pi  = s->sq_pi;
        uint8_t *wqe = s->sq.data() + (pi & ((1u << kLogSq) - 1)) * 64;
        auto *ctrl   = (struct mlx5_wqe_ctrl_seg *)wqe;
        uint32_t ds  = (uint32_t)((sizeof(*ctrl) + len + 15) / 16);

        memset(wqe, 0, 64);
        ctrl->opmod_idx_opcode = htobe32(((uint32_t)pi << 8) | opcode);
        ctrl->qpn_ds           = htobe32((s->qpn << 8) | ds);
        ctrl->fm_ce_se         = MLX5_WQE_CTRL_CQ_UPDATE;
        memcpy(wqe + sizeof(*ctrl), segs, len);
        s->sq_pi = (uint16_t)(pi + 1);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        s->dbr[MLX5_SND_DBR] = htobe32(s->sq_pi);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        *(volatile uint64_t *)s->uar->reg_addr = *(uint64_t *)wqe;
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

TEST_F(emu_devx_test, capabilities)
{
    std::vector<uint8_t> out(16 + 4096);
    uint8_t in[16]     = {};
    const uint8_t *cap = out.data() + 16;

    prm_set(in, 0, 16, 0x100);
    prm_set(in, 48, 16, 1); /* general, current */
    ASSERT_EQ(0, mlx5dv_devx_general_cmd(m_a.ctx, in, sizeof(in), out.data(),
                                         out.size()));
    EXPECT_EQ(30u, prm_get(cap, 451, 5)); /* log_max_msg */
    EXPECT_EQ(1u, prm_get(cap, 538, 1));  /* dct */
    EXPECT_EQ(1u, prm_get(cap, 542, 1));  /* atomic */
    EXPECT_EQ(1u, prm_get(cap, 264, 1));  /* fixed_buffer_size: KSM */
    EXPECT_LT(0u, prm_get(cap, 899, 5));  /* log_max_rmp */
    EXPECT_EQ(0u, prm_get(cap, 551, 1));  /* pg: no ODP */
    EXPECT_GE(7u, prm_get(cap, 298, 6));  /* log_max_ra_req_dc */
    prm_set(in, 48, 16, (3u << 1) | 1);   /* atomic */
    ASSERT_EQ(0, mlx5dv_devx_general_cmd(m_a.ctx, in, sizeof(in), out.data(),
                                         out.size()));
    EXPECT_EQ(0xfu, prm_get(cap, 144, 16)); /* CS, FA and masked */
    EXPECT_EQ(0xcu, prm_get(cap, 176, 16)); /* 4- and 8-byte operands */
    EXPECT_EQ(1u, prm_get(cap, 64, 2));     /* host-order memory */
    prm_set(in, 0, 16, 0x842);              /* QUERY_LAG */
    ASSERT_EQ(0, mlx5dv_devx_general_cmd(m_a.ctx, in, sizeof(in), out.data(),
                                         out.size()));
    EXPECT_EQ(0u, prm_get(out.data(), 93, 3)); /* lag_state */
}

TEST_F(emu_devx_test, rc_send_write_through_umem_queues)
{
    struct mlx5_wqe_data_seg d;
    struct mlx5_cqe64 cqe;
    uint8_t segs[32];
    uint16_t idx;

    connect();
    post_recv(&m_b, 0);
    m_a.buf[10] = 0x0123456789abcdefull;
    d           = dseg(&m_a, &m_a.buf[10], 8);
    idx         = post(&m_a, MLX5_OPCODE_SEND, &d, sizeof(d));
    ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(idx, be16toh(cqe.wqe_counter));
    EXPECT_EQ(m_a.qpn, be32toh(cqe.sop_drop_qpn) & 0xffffff);
    ASSERT_TRUE(raw_cq_poll(m_b.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_RESP_SEND, cqe.op_own >> 4);
    EXPECT_EQ(8u, be32toh(cqe.byte_cnt));
    EXPECT_EQ(0u, be16toh(cqe.wqe_counter)); /* the RMP ring's slot 0 */
    EXPECT_EQ(0x0123456789abcdefull, m_b.buf[0]);

    /* RDMA WRITE: a remote-address segment, then the data */
    auto *ra     = (struct mlx5_wqe_raddr_seg *)segs;
    ra->raddr    = htobe64((uintptr_t)&m_b.buf[100]);
    ra->rkey     = htobe32(m_b.mr->rkey);
    ra->reserved = 0;
    m_a.buf[11]  = 42;
    d            = dseg(&m_a, &m_a.buf[11], 8);
    memcpy(segs + 16, &d, sizeof(d));
    post(&m_a, MLX5_OPCODE_RDMA_WRITE, segs, sizeof(segs));
    ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(42u, m_b.buf[100]);

    /* QUERY_QP: RTS, and the peer it was given */
    uint8_t in[16] = {}, out[256] = {};
    prm_set(in, 0, 16, 0x50b);
    prm_set(in, 72, 24, m_a.qpn);
    ASSERT_EQ(0,
              mlx5dv_devx_obj_query(m_a.qp, in, sizeof(in), out, sizeof(out)));
    EXPECT_EQ(3u, prm_get(out, 192, 4));       /* state: RTS */
    EXPECT_EQ(m_b.qpn, prm_get(out, 360, 24)); /* remote_qpn */
    EXPECT_EQ(m_b.lid, prm_get(out, 432, 16)); /* rlid */
}

/* A KSM key as UCX makes its atomic key: one 2 GiB entry from the MR's
 * address rounded down to 2 GiB, start_addr that plus an offset (0x7b8);
 * an atomic and a WRITE at start_addr + x land at base + x */
TEST_F(emu_devx_test, ksm_key_from_start_addr)
{
    const uint64_t base  = (uintptr_t)m_b.buf.data() & ~((1ull << 31) - 1);
    const uint64_t start = base + 0x7b8;
    uint8_t segs[48];
    struct mlx5_wqe_data_seg d;
    struct mlx5_cqe64 cqe;
    uint32_t rkey;

    connect();
    struct mlx5dv_devx_obj *mk = ksm_key(&m_b, m_b.mr, 0x7b8, &rkey);
    ASSERT_NE(nullptr, mk) << strerror(errno);

    auto *ra          = (struct mlx5_wqe_raddr_seg *)segs;
    const uint64_t at = (uintptr_t)m_b.buf.data() + 0x7b8; /* buf[0] */
    ra->raddr         = htobe64(at + 16);
    ra->rkey          = htobe32(rkey);
    ra->reserved      = 0;
    uint64_t fa[2]    = {htobe64(5), 0};
    memcpy(segs + 16, fa, 16);
    d = dseg(&m_a, &m_a.buf[20], 8);
    memcpy(segs + 32, &d, sizeof(d));
    m_b.buf[2] = 100;
    post(&m_a, MLX5_OPCODE_ATOMIC_FA, segs, sizeof(segs));
    ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(105u, m_b.buf[2]);
    EXPECT_EQ(100u, m_a.buf[20]); /* fetched, in host order */

    /* an RDMA WRITE through the key (UCX's weak fence sends a fenced PUT
     * through its atomic key) */
    struct {
        struct mlx5_wqe_raddr_seg ra;
        struct mlx5_wqe_data_seg d;
    } wr;
    wr.ra.raddr    = htobe64(at + 24);
    wr.ra.rkey     = htobe32(rkey);
    wr.ra.reserved = 0;
    m_a.buf[21]    = 77;
    wr.d           = dseg(&m_a, &m_a.buf[21], 8);
    post(&m_a, MLX5_OPCODE_RDMA_WRITE, &wr, sizeof(wr));
    ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(77u, m_b.buf[3]);

    /* below start_addr: a remote access error, the QP in error */
    ra->raddr = htobe64(start - 8);
    post(&m_a, MLX5_OPCODE_ATOMIC_FA, segs, sizeof(segs));
    ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ_ERR, cqe.op_own >> 4);
    EXPECT_EQ(0, mlx5dv_devx_obj_destroy(mk));
}

/* A registration keeps its pages, as a ConnectX's pins them: UCX's
 * uct_p2p_rma_test_xfer.fence frees its buffers (munmap) while its fenced
 * PUT, through the KSM key, is still on its way.  The PUT completes; the
 * write into the page still mapped lands, the one into the page that went
 * nowhere, and a read of that page gives zeros. */
TEST_F(emu_devx_test, write_into_pages_unmapped_since_registration)
{
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    struct mlx5_cqe64 cqe;
    uint32_t rkey;
    struct {
        struct mlx5_wqe_raddr_seg ra;
        struct mlx5_wqe_data_seg d;
    } wr;

    connect();
    auto *m = (uint8_t *)mmap(nullptr, 2 * pg, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void *)m);
    struct ibv_mr *mr = ibv_reg_mr(m_b.pd, m, 2 * pg, kAccess);
    ASSERT_NE(nullptr, mr);
    struct mlx5dv_devx_obj *mk = ksm_key(&m_b, mr, 0x418, &rkey);
    ASSERT_NE(nullptr, mk) << strerror(errno);
    /* page 0 goes: an inaccessible reservation in its place, so that no
     * other mapping takes the address while the test runs */
    ASSERT_EQ((void *)m,
              mmap(m, pg, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
                   0));

    /* 64 bytes into page 0, then 128 across into page 1 */
    memset(&m_a.buf[24], 0x6b, 128);
    for (uint64_t at :
         {(uint64_t)(uintptr_t)m + 64, (uint64_t)(uintptr_t)m + pg - 64}) {
        wr.ra.raddr    = htobe64(at + 0x418);
        wr.ra.rkey     = htobe32(rkey);
        wr.ra.reserved = 0;
        wr.d = dseg(&m_a, &m_a.buf[24], (at == (uintptr_t)m + 64) ? 64 : 128);
        post(&m_a, MLX5_OPCODE_RDMA_WRITE, &wr, sizeof(wr));
        ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
        EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    }
    EXPECT_EQ(0x6b, m[pg]);
    EXPECT_EQ(0x6b, m[pg + 63]);
    EXPECT_EQ(0, m[pg + 64]);

    /* a read across both pages through the plain key */
    m[pg]       = 0x2c;
    wr.ra.raddr = htobe64((uintptr_t)m + pg - 8);
    wr.ra.rkey  = htobe32(mr->rkey);
    wr.d        = dseg(&m_a, &m_a.buf[40], 16);
    m_a.buf[40] = m_a.buf[41] = ~0ull;
    post(&m_a, MLX5_OPCODE_RDMA_READ, &wr, sizeof(wr));
    ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(0u, m_a.buf[40]);
    EXPECT_EQ(0x2cu, m_a.buf[41] & 0xff);
    EXPECT_EQ(0x6b6b6b6b6b6b6b00ull, m_a.buf[41] & ~0xffull);

    EXPECT_EQ(0, mlx5dv_devx_obj_destroy(mk));
    EXPECT_EQ(0, ibv_dereg_mr(mr));
    munmap(m, 2 * pg);
}

TEST_F(emu_devx_test, last_wqe_event_on_channel)
{
    struct mlx5dv_devx_event_channel *ch;
    struct mlx5dv_devx_async_event_hdr ev;
    uint16_t type = 0x13;
    struct pollfd pfd;

    connect();
    ch = mlx5dv_devx_create_event_channel(
        m_a.ctx, MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA);
    ASSERT_NE(nullptr, ch);
    ASSERT_EQ(0, mlx5dv_devx_subscribe_devx_event(ch, m_a.qp, sizeof(type),
                                                  &type, 0x1234));
    pfd = {ch->fd, POLLIN, 0};
    EXPECT_EQ(0, ::poll(&pfd, 1, 0));        /* nothing yet */
    ASSERT_EQ(0, modify(&m_a, 0x507, &m_b)); /* 2ERR */
    ASSERT_EQ(1, ::poll(&pfd, 1, 5000));
    ASSERT_EQ((ssize_t)sizeof(ev), mlx5dv_devx_get_event(ch, &ev, sizeof(ev)));
    EXPECT_EQ(0x1234u, ev.cookie);
    /* once: a QP already in ERR moved there again raises nothing (UCX
     * asserts one event per QP) */
    ASSERT_EQ(0, modify(&m_a, 0x507, &m_b));
    EXPECT_EQ(0, ::poll(&pfd, 1, 100));
    ASSERT_EQ(0, modify(&m_a, 0x50a, &m_b)); /* 2RST */
    mlx5dv_devx_destroy_event_channel(ch);
}

TEST_F(emu_devx_test, refused_commands_bad_flow)
{
    uint8_t in[272] = {};

    /* an object-less command nobody models */
    prm_set(in, 0, 16, 0x101);
    refused(
        [&](uint8_t *out) {
            return mlx5dv_devx_general_cmd(m_a.ctx, in, 16, out, 16) == 0;
        },
        0x02, "QUERY_ADAPTER is not modelled");
    /* an object the emulation does not create: CREATE_CQ */
    prm_set(in, 0, 16, 0x400);
    refused(
        [&](uint8_t *out) {
            return mlx5dv_devx_obj_create(m_a.ctx, in, sizeof(in), out, 16) !=
                   nullptr;
        },
        0x02, "CREATE_CQ is not modelled");
    /* a QP on a PD, CQ or umem that does not exist */
    make_rmp(&m_a);
    make_qp(&m_a);
    uint8_t qp[272] = {};
    prm_set(qp, 0, 16, 0x500);
    prm_set(qp, 232, 24, 0xabcdef); /* no such PD */
    prm_set(qp, 296, 24, 1);
    refused(
        [&](uint8_t *out) {
            return mlx5dv_devx_obj_create(m_a.ctx, qp, sizeof(qp), out, 16) !=
                   nullptr;
        },
        0x05, "a PD number nobody has");
    prm_set(qp, 232, 24, m_a.pdn);
    prm_set(qp, 1192, 24, m_a.cq.dv.cqn);
    prm_set(qp, 1448, 24, m_a.cq.dv.cqn);
    prm_set(qp, 273, 4, 12); /* 4096 basic blocks: past the umem */
    prm_set(qp, 2016, 32, m_a.dbr_umem->umem_id);
    prm_set(qp, 2112, 32, m_a.sq_umem->umem_id);
    refused(
        [&](uint8_t *out) {
            return mlx5dv_devx_obj_create(m_a.ctx, qp, sizeof(qp), out, 16) !=
                   nullptr;
        },
        0x03, "a send queue larger than its umem");
    prm_set(qp, 200, 8, 0x2); /* UD */
    prm_set(qp, 273, 4, kLogSq);
    refused(
        [&](uint8_t *out) {
            return mlx5dv_devx_obj_create(m_a.ctx, qp, sizeof(qp), out, 16) !=
                   nullptr;
        },
        0x03, "a UD QP through DEVX is not modelled");
    /* a transition the QP's state does not allow: RESET -> RTS */
    refused(
        [&](uint8_t *out) {
            uint8_t m[272] = {};
            prm_set(m, 0, 16, 0x504);
            prm_set(m, 72, 24, m_a.qpn);
            return mlx5dv_devx_obj_modify(m_a.qp, m, sizeof(m), out, 16) == 0;
        },
        0x09, "RTR2RTS from RESET");
    /* a command naming another QP than the object */
    refused(
        [&](uint8_t *out) {
            uint8_t m[272] = {};
            prm_set(m, 0, 16, 0x502);
            prm_set(m, 72, 24, m_a.qpn + 1);
            return mlx5dv_devx_obj_modify(m_a.qp, m, sizeof(m), out, 16) == 0;
        },
        0x03, "another QP's number");

    /* the calls' own checks: no DEVX, not an object of the emulation */
    struct mlx5dv_context_attr attr;
    memset(&attr, 0, sizeof(attr));
    struct ibv_context *plain = mlx5dv_open_device(m_list[0], &attr);
    ASSERT_NE(nullptr, plain);
    {
        log_capture log;
        int dummy;
        EXPECT_EQ(nullptr,
                  mlx5dv_devx_umem_reg(plain, &dummy, sizeof(dummy), 0));
        EXPECT_EQ(EOPNOTSUPP, errno);
        EXPECT_EQ(nullptr, mlx5dv_devx_alloc_uar(m_a.ctx, 7));
        EXPECT_EQ(EINVAL, errno);
        EXPECT_EQ(EINVAL,
                  mlx5dv_devx_obj_destroy((struct mlx5dv_devx_obj *)&dummy));
        EXPECT_EQ(3u, log.count());
    }
    EXPECT_EQ(0, ibv_close_device(plain));
}

/* A context's UAR page goes back when it closes: a program that opens
 * and closes contexts (UCX's tests, one per entity) never runs out */
TEST_F(emu_devx_test, uar_pages_come_back)
{
    for (int i = 0; i < 200; ++i) {
        struct ibv_context *ctx = devx_open(m_list[0]);

        ASSERT_NE(nullptr, ctx);
        struct mlx5dv_devx_uar *uar = mlx5dv_devx_alloc_uar(ctx, 0);
        ASSERT_NE(nullptr, uar) << "context " << i;
        mlx5dv_devx_free_uar(uar);
        EXPECT_EQ(0, ibv_close_device(ctx));
    }
}

/* Contexts with raw queues at once: UCX's peer-failure tests hold more
 * than a hundred */
TEST_F(emu_devx_test, many_contexts_with_uar_pages)
{
    std::vector<struct ibv_context *> ctxs;
    std::vector<struct mlx5dv_devx_uar *> uars;

    for (int i = 0; i < 200; ++i) {
        ctxs.push_back(devx_open(m_list[i % 2]));
        ASSERT_NE(nullptr, ctxs.back());
        uars.push_back(mlx5dv_devx_alloc_uar(ctxs.back(), 0));
        ASSERT_NE(nullptr, uars.back()) << "context " << i;
    }
    for (size_t i = 0; i < ctxs.size(); ++i) {
        mlx5dv_devx_free_uar(uars[i]);
        EXPECT_EQ(0, ibv_close_device(ctxs[i]));
    }
}
