/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Raw queues: an application that takes its queues' memory with
 * mlx5dv_init_obj, writes WQEs, rings doorbells and polls CQEs as UCX's
 * mlx5 transports do, between two ports (mlx5_0 and mlx5_1) over RC.  The
 * device executes what the memory says once the doorbell is rung (a
 * store to the UAR page), writes CQEs with the owner bit of their pass,
 * raises a CQ's event after an arm written to its doorbell record and
 * UAR, and completes a WQE it does not take, or one the responder
 * refuses, with an error CQE carrying the PRM's syndrome.
 */
#include "emu_raw_cq.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <vector>

namespace {

const unsigned kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                         IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

struct raw_qp {
    struct ibv_qp *qp = nullptr;
    struct mlx5dv_qp dv;
    uint16_t sq_pi  = 0;
    uint16_t rq_pi  = 0;
    unsigned bf_off = 0;
};

struct side {
    struct ibv_context *ctx     = nullptr;
    struct ibv_pd *pd           = nullptr;
    struct ibv_comp_channel *ch = nullptr;
    raw_cq scq, rcq;
    raw_qp rq;
    struct ibv_mr *mr = nullptr;
    std::vector<uint64_t> buf;
    uint16_t lid = 0;
};

} // namespace

class emu_raw_test : public emu_test {
protected:
    void SetUp() override
    {
        emu_test::SetUp();
        ASSERT_EQ(2, m_num);
        open_side(&m_a, m_ctx, m_pd);
        open_side(&m_b, ibv_open_device(m_list[1]), nullptr);
        ASSERT_EQ(0, connect(&m_a, &m_b));
        ASSERT_EQ(0, connect(&m_b, &m_a));
    }

    void TearDown() override
    {
        close_side(&m_b, true);
        close_side(&m_a, false);
        emu_test::TearDown();
    }

    void make_cq(side *s, raw_cq *c)
    {
        struct ibv_cq_init_attr_ex a;
        struct mlx5dv_cq_init_attr dv;
        struct mlx5dv_obj obj;

        memset(&a, 0, sizeof(a));
        a.cqe                 = 63;
        a.channel             = s->ch;
        dv.comp_mask          = MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
        dv.cqe_size           = 64;
        struct ibv_cq_ex *cqx = mlx5dv_create_cq(s->ctx, &a, &dv);

        ASSERT_NE(nullptr, cqx);
        c->cq = ibv_cq_ex_to_cq(cqx);
        memset(&obj, 0, sizeof(obj));
        obj.cq.in  = c->cq;
        obj.cq.out = &c->dv;
        ASSERT_EQ(0, mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ));
        ASSERT_EQ(64u, c->dv.cqe_size);
        ASSERT_GE(c->dv.cqe_cnt, 64u);
    }

    void open_side(side *s, struct ibv_context *ctx, struct ibv_pd *pd)
    {
        struct ibv_qp_init_attr a;
        struct ibv_port_attr port;
        struct mlx5dv_obj obj;

        ASSERT_NE(nullptr, ctx);
        s->ctx = ctx;
        s->pd  = (pd != nullptr) ? pd : ibv_alloc_pd(ctx);
        s->ch  = ibv_create_comp_channel(ctx);
        ASSERT_NE(nullptr, s->ch);
        make_cq(s, &s->scq);
        make_cq(s, &s->rcq);
        s->buf.assign(512, 0);
        s->mr = ibv_reg_mr(s->pd, s->buf.data(), s->buf.size() * 8, kAccess);
        ASSERT_NE(nullptr, s->mr);
        ASSERT_EQ(0, ibv_query_port(ctx, 1, &port));
        s->lid = port.lid;
        memset(&a, 0, sizeof(a));
        a.send_cq             = s->scq.cq;
        a.recv_cq             = s->rcq.cq;
        a.qp_type             = IBV_QPT_RC;
        a.cap.max_send_wr     = 32;
        a.cap.max_recv_wr     = 32;
        a.cap.max_send_sge    = 2;
        a.cap.max_recv_sge    = 1;
        a.cap.max_inline_data = 64;
        s->rq.qp              = ibv_create_qp(s->pd, &a);
        ASSERT_NE(nullptr, s->rq.qp);
        memset(&obj, 0, sizeof(obj));
        obj.qp.in  = s->rq.qp;
        obj.qp.out = &s->rq.dv;
        ASSERT_EQ(0, mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP));
        ASSERT_EQ(MLX5_SEND_WQE_BB, s->rq.dv.sq.stride);
        ASSERT_EQ(256u, s->rq.dv.bf.size);
        ASSERT_NE(nullptr, s->rq.dv.rq.buf);
    }

    void close_side(side *s, bool own)
    {
        if (s->rq.qp != nullptr) {
            EXPECT_EQ(0, ibv_destroy_qp(s->rq.qp));
        }
        if (s->mr != nullptr) {
            EXPECT_EQ(0, ibv_dereg_mr(s->mr));
        }
        for (raw_cq *c : {&s->scq, &s->rcq}) {
            if (c->cq != nullptr) {
                EXPECT_EQ(0, ibv_destroy_cq(c->cq));
            }
        }
        if (s->ch != nullptr) {
            EXPECT_EQ(0, ibv_destroy_comp_channel(s->ch));
        }
        if (own) {
            EXPECT_EQ(0, ibv_dealloc_pd(s->pd));
            EXPECT_EQ(0, ibv_close_device(s->ctx));
        }
    }

    int connect(side *s, const side *peer)
    {
        struct ibv_qp_attr a;
        int ret;

        memset(&a, 0, sizeof(a));
        a.qp_state        = IBV_QPS_INIT;
        a.port_num        = 1;
        a.qp_access_flags = kAccess;
        ret               = ibv_modify_qp(s->rq.qp, &a,
                                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                              IBV_QP_ACCESS_FLAGS);
        memset(&a, 0, sizeof(a));
        a.qp_state           = IBV_QPS_RTR;
        a.path_mtu           = IBV_MTU_4096;
        a.dest_qp_num        = peer->rq.qp->qp_num;
        a.max_dest_rd_atomic = 4;
        a.min_rnr_timer      = 1;
        a.ah_attr.dlid       = peer->lid;
        a.ah_attr.port_num   = 1;
        ret                  = ret ?:
                                     ibv_modify_qp(s->rq.qp, &a,
                                                   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                                       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                                       IBV_QP_MAX_DEST_RD_ATOMIC |
                                                       IBV_QP_MIN_RNR_TIMER);
        memset(&a, 0, sizeof(a));
        a.qp_state      = IBV_QPS_RTS;
        a.timeout       = 10;
        a.retry_cnt     = 2;
        a.rnr_retry     = 7;
        a.max_rd_atomic = 4;
        return ret ?:
                     ibv_modify_qp(s->rq.qp, &a,
                                   IBV_QP_STATE | IBV_QP_TIMEOUT |
                                       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    }

    /* A receive WQE over buf[slot], 64 bytes */
    void post_recv(side *s, int slot)
    {
        raw_qp &q = s->rq;
        auto *ds  = (struct mlx5_wqe_data_seg *)((uint8_t *)q.dv.rq.buf +
                                                (q.rq_pi &
                                                 (q.dv.rq.wqe_cnt - 1)) *
                                                    q.dv.rq.stride);

        ds->byte_count = htobe32(64);
        ds->lkey       = htobe32(s->mr->lkey);
        ds->addr       = htobe64((uintptr_t)&s->buf[slot]);
        ++q.rq_pi;
        __atomic_thread_fence(__ATOMIC_RELEASE);
        q.dv.dbrec[MLX5_RCV_DBR] = htobe32(q.rq_pi);
    }

    /* A WQE of opcode (signalled unless told) with the given segments after the control
     * segment, then the doorbell record and a BlueFlame write of its first
     * 64 bytes; returns its index */
    uint16_t post(side *s, uint8_t opcode, const void *segs, size_t len,
                  uint8_t opmod = 0, bool signaled = true)
    {
        raw_qp &q   = s->rq;
        uint16_t pi = announce(s, opcode, segs, len, opmod, signaled);

        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        memcpy((uint8_t *)q.dv.bf.reg + q.bf_off,
               (uint8_t *)q.dv.sq.buf +
                   (pi & (q.dv.sq.wqe_cnt - 1)) * MLX5_SEND_WQE_BB,
               64);
        q.bf_off ^= q.dv.bf.size;
        return pi;
    }

    /* The WQE and its doorbell record, as post() writes them, without the
     * store to the UAR page that rings the doorbell; its index */
    uint16_t announce(side *s, uint8_t opcode, const void *segs, size_t len,
                      uint8_t opmod = 0, bool signaled = true)
    {
        raw_qp &q   = s->rq;
        uint16_t pi = q.sq_pi;
        auto *wqe   = (uint8_t *)q.dv.sq.buf +
                    (pi & (q.dv.sq.wqe_cnt - 1)) * MLX5_SEND_WQE_BB;
        auto *ctrl   = (struct mlx5_wqe_ctrl_seg *)wqe;
        uint32_t ds  = (uint32_t)((sizeof(*ctrl) + len + 15) / 16);
        uint16_t bbs = (uint16_t)((ds * 16 + 63) / 64);

        memset(wqe, 0, 64 * bbs);
        ctrl->opmod_idx_opcode = htobe32(((uint32_t)opmod << 24) |
                                         ((uint32_t)pi << 8) | opcode);
        ctrl->qpn_ds           = htobe32((q.qp->qp_num << 8) | ds);
        ctrl->fm_ce_se         = signaled ? MLX5_WQE_CTRL_CQ_UPDATE : 0;
        memcpy(wqe + sizeof(*ctrl), segs, len);
        q.sq_pi = (uint16_t)(pi + bbs);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        q.dv.dbrec[MLX5_SND_DBR] = htobe32(q.sq_pi);
        return pi;
    }

    uint64_t raddr_b(int slot) { return (uintptr_t)&m_b.buf[slot]; }

    /* The segments of an RDMA WRITE of data, inline, to m_b.buf[slot] */
    struct inline_write {
        struct mlx5_wqe_raddr_seg ra;
        uint32_t inl;
        uint64_t data;
        uint32_t pad;
    } __attribute__((packed));

    inline_write write_to_b(int slot, uint64_t data)
    {
        inline_write iw;

        memset(&iw, 0, sizeof(iw));
        iw.ra.raddr = htobe64(raddr_b(slot));
        iw.ra.rkey  = htobe32(m_b.mr->rkey);
        iw.inl      = htobe32(MLX5_INLINE_SEG | 8);
        iw.data     = data;
        return iw;
    }

    /* A's next CQE says WQE idx completed, and its WRITE left data at
     * m_b.buf[slot] */
    void expect_written(uint16_t idx, int slot, uint64_t data)
    {
        struct mlx5_cqe64 cqe;

        ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
        EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
        EXPECT_EQ(idx, be16toh(cqe.wqe_counter));
        EXPECT_EQ(data, m_b.buf[slot]);
    }

    side m_a, m_b;
};

TEST_F(emu_raw_test, send_through_queue_memory)
{
    struct mlx5_wqe_data_seg d;
    struct mlx5_cqe64 cqe;
    uint16_t idx;

    post_recv(&m_b, 0);
    m_a.buf[10] = 0x0123456789abcdefull;
    d           = dseg(&m_a, &m_a.buf[10], 8);
    idx         = post(&m_a, MLX5_OPCODE_SEND, &d, sizeof(d));
    ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(idx, be16toh(cqe.wqe_counter));
    EXPECT_EQ(m_a.rq.qp->qp_num, be32toh(cqe.sop_drop_qpn) & 0xffffff);
    EXPECT_EQ(MLX5_OPCODE_SEND, be32toh(cqe.sop_drop_qpn) >> 24);
    ASSERT_TRUE(raw_cq_poll(m_b.rcq, &cqe));
    EXPECT_EQ(MLX5_CQE_RESP_SEND, cqe.op_own >> 4);
    EXPECT_EQ(8u, be32toh(cqe.byte_cnt));
    EXPECT_EQ(0u, be16toh(cqe.wqe_counter)); /* the receive WQE's index */
    EXPECT_EQ(m_b.rq.qp->qp_num, be32toh(cqe.sop_drop_qpn) & 0xffffff);
    EXPECT_EQ(m_a.lid, be16toh(cqe.slid)); /* UCX's DC flow control reads it */
    EXPECT_EQ(0x0123456789abcdefull, m_b.buf[0]);
}

#if defined(__x86_64__)
/* A doorbell is served in the thread whose store rang it: the device takes
 * what the doorbell record announces, the store is stepped over (a UAR
 * page is write-only to software, so nothing it held is lost) and the
 * page stays a trap for the next doorbell.  Each store kind that doorbells
 * and BlueFlame copies are made of is tried; a string move, which the
 * emulation does not step over, completes in place instead, and its
 * doorbell is served all the same. */
TEST_F(emu_raw_test, doorbell_stores_served_where_they_ring)
{
    struct ring_kind {
        const char *name;
        bool stepped_over; /* else the store lands in the page */
        bool (*usable)();
        void (*ring)(uint8_t *reg, uint64_t v);
    };
    static const ring_kind kinds[] = {
        {"mov r64", true, [] { return true; },
         [](uint8_t *reg, uint64_t v) {
             asm volatile("movq %0, (%1)" : : "r"(v), "r"(reg) : "memory");
         }},
        {"mov imm32, disp8", true, [] { return true; },
         [](uint8_t *reg, uint64_t v) {
             (void)v;
             asm volatile("movl $0x5a5a5a5a, 8(%0)" : : "r"(reg) : "memory");
         }},
        {"mov r64, SIB disp32", true, [] { return true; },
         [](uint8_t *reg, uint64_t v) {
             asm volatile("movq %0, 0x100(%1,%2,8)"
                          :
                          : "r"(v), "r"(reg - 0x100), "r"((uint64_t)0)
                          : "memory");
         }},
        {"movdqu (SSE)", true, [] { return true; },
         [](uint8_t *reg, uint64_t v) {
             asm volatile("movq %0, %%xmm0\n\tmovdqu %%xmm0, 16(%1)"
                          :
                          : "r"(v), "r"(reg)
                          : "xmm0", "memory");
         }},
        {"vmovdqu (VEX)", true,
         []() -> bool { return __builtin_cpu_supports("avx"); },
         [](uint8_t *reg, uint64_t v) {
             asm volatile("vmovq %0, %%xmm1\n\tvmovdqu %%ymm1, 32(%1)\n\t"
                          "vzeroupper"
                          :
                          : "r"(v), "r"(reg)
                          : "xmm1", "memory");
         }},
        {"vmovdqu64 (EVEX)", true,
         []() -> bool { return __builtin_cpu_supports("avx512f"); },
         [](uint8_t *reg, uint64_t v) {
             asm volatile("vmovq %0, %%xmm2\n\tvmovdqu64 %%zmm2, (%1)\n\t"
                          "vzeroupper"
                          :
                          : "r"(v), "r"(reg)
                          : "xmm2", "memory");
         }},
        {"rep movsb", false, [] { return true; },
         [](uint8_t *reg, uint64_t v) {
             uint64_t n      = sizeof(v);
             const void *src = &v;
             asm volatile("rep movsb"
                          : "+D"(reg), "+S"(src), "+c"(n)
                          :
                          : "memory");
         }},
    };
    uint64_t mark = 0x1122334455667788ull;

    for (const ring_kind &k : kinds) {
        SCOPED_TRACE(k.name);
        if (!k.usable()) {
            continue;
        }
        raw_qp &q    = m_a.rq;
        uint8_t *reg = (uint8_t *)q.dv.bf.reg + q.bf_off;
        uint8_t before[64], after[64];

        memcpy(before, reg, sizeof(before)); /* readable, as a UAR is not */
        inline_write iw = write_to_b(30, ++mark);
        uint16_t idx = announce(&m_a, MLX5_OPCODE_RDMA_WRITE, &iw, sizeof(iw));
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        k.ring(reg, mark);
        q.bf_off ^= q.dv.bf.size;
        memcpy(after, reg, sizeof(after));

        ASSERT_NO_FATAL_FAILURE(expect_written(idx, 30, mark));
        if (k.stepped_over) {
            EXPECT_EQ(0, memcmp(before, after, sizeof(before)));
        } else {
            uint64_t landed;

            memcpy(&landed, after, sizeof(landed));
            EXPECT_EQ(mark, landed);
        }
    }
}

namespace {

std::atomic<unsigned> g_traps;
struct sigaction g_emu_segv;

/* Counts the faults, and hands each to the emulation's handler */
void counting_segv(int sig, siginfo_t *si, void *uc)
{
    g_traps.fetch_add(1, std::memory_order_relaxed);
    g_emu_segv.sa_sigaction(sig, si, uc);
}

} // namespace

/* The stores to the page that follow a doorbell's store at once (the rest
 * of a BlueFlame copy) are stepped over with it: a copy costs one trap,
 * not one per store.  A store elsewhere, or a load, ends the run: it
 * executes, and the next store to the page traps again. */
TEST_F(emu_raw_test, blueflame_copy_traps_once)
{
    struct copy_kind {
        const char *name;
        unsigned traps;
        bool (*usable)();
        /* rings at reg with v; what it stores elsewhere or loads, in out */
        void (*ring)(uint8_t *reg, uint64_t v, uint64_t *out);
    };
    static const copy_kind kinds[] = {
        {"four movdqu (a 64-byte copy)", 1, [] { return true; },
         [](uint8_t *reg, uint64_t v, uint64_t *out) {
             *out = v;
             asm volatile("movq %0, %%xmm0\n\t"
                          "movdqu %%xmm0, (%1)\n\tmovdqu %%xmm0, 16(%1)\n\t"
                          "movdqu %%xmm0, 32(%1)\n\tmovdqu %%xmm0, 48(%1)"
                          :
                          : "r"(v), "r"(reg)
                          : "xmm0", "memory");
         }},
        {"two vmovdqu (VEX)", 1,
         []() -> bool { return __builtin_cpu_supports("avx"); },
         [](uint8_t *reg, uint64_t v, uint64_t *out) {
             *out = v;
             asm volatile("vmovq %0, %%xmm1\n\tvmovdqu %%ymm1, (%1)\n\t"
                          "vmovdqu %%ymm1, 32(%1)\n\tvzeroupper"
                          :
                          : "r"(v), "r"(reg)
                          : "xmm1", "memory");
         }},
        {"vmovdqu64 at a scaled displacement (EVEX)", 1,
         []() -> bool { return __builtin_cpu_supports("avx512f"); },
         [](uint8_t *reg, uint64_t v, uint64_t *out) {
             *out = v;
             asm volatile("vmovq %0, %%xmm2\n\tvmovdqu64 %%zmm2, -0x40(%1)\n\t"
                          "vmovdqu64 %%zmm2, (%1)\n\tvzeroupper"
                          :
                          : "r"(v), "r"(reg + 0x40)
                          : "xmm2", "memory");
         }},
        {"a store elsewhere between", 2, [] { return true; },
         [](uint8_t *reg, uint64_t v, uint64_t *out) {
             asm volatile("movq %0, (%1)\n\tmovq %0, (%2)\n\tmovq %0, 8(%1)"
                          :
                          : "r"(v), "r"(reg), "r"(out)
                          : "memory");
         }},
        {"a load between", 2, [] { return true; },
         [](uint8_t *reg, uint64_t v, uint64_t *out) {
             uint64_t t = 0;
             asm volatile("movq %1, (%2)\n\tmovq (%3), %0\n\tmovq %0, 8(%2)"
                          : "+&r"(t)
                          : "r"(v), "r"(reg), "r"(&v)
                          : "memory");
             *out = t;
         }},
    };
    struct sigaction count;
    uint64_t mark = 0x5566778899aabbccull;

    /* the emulation's handler, installed with the first raw object */
    ASSERT_EQ(0, sigaction(SIGSEGV, nullptr, &g_emu_segv));
    ASSERT_TRUE(g_emu_segv.sa_flags & SA_SIGINFO);
    count              = g_emu_segv;
    count.sa_sigaction = counting_segv;
    ASSERT_EQ(0, sigaction(SIGSEGV, &count, nullptr));

    for (const copy_kind &k : kinds) {
        SCOPED_TRACE(k.name);
        if (!k.usable()) {
            continue;
        }
        raw_qp &q    = m_a.rq;
        uint8_t *reg = (uint8_t *)q.dv.bf.reg + q.bf_off;
        uint8_t before[64], after[64];
        uint64_t out = 0;

        memcpy(before, reg, sizeof(before));
        inline_write iw = write_to_b(31, ++mark);
        uint16_t idx = announce(&m_a, MLX5_OPCODE_RDMA_WRITE, &iw, sizeof(iw));
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        g_traps = 0;
        k.ring(reg, mark, &out);
        unsigned traps = g_traps;
        q.bf_off ^= q.dv.bf.size;
        memcpy(after, reg, sizeof(after));

        EXPECT_EQ(k.traps, traps);
        EXPECT_EQ(mark, out); /* what ran between the stores ran */
        EXPECT_EQ(0, memcmp(before, after, sizeof(before)));
        ASSERT_NO_FATAL_FAILURE(expect_written(idx, 31, mark));
    }
    EXPECT_EQ(0, sigaction(SIGSEGV, &g_emu_segv, nullptr));
}
#endif

TEST_F(emu_raw_test, write_read_atomic_and_inline)
{
    struct {
        struct mlx5_wqe_raddr_seg ra;
        struct mlx5_wqe_atomic_seg at;
        struct mlx5_wqe_data_seg d;
    } seg;
    struct mlx5_cqe64 cqe;

    /* inline RDMA WRITE */
    inline_write iw = write_to_b(20, 0x77);
    post(&m_a, MLX5_OPCODE_RDMA_WRITE, &iw, sizeof(iw));
    ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(0x77u, m_b.buf[20]);
    /* RDMA READ back */
    m_b.buf[21]     = 0x5151;
    seg.ra.raddr    = htobe64(raddr_b(21));
    seg.ra.rkey     = htobe32(m_b.mr->rkey);
    seg.ra.reserved = 0;
    seg.at.swap_add = 0;
    seg.at.compare  = 0;
    {
        struct {
            struct mlx5_wqe_raddr_seg ra;
            struct mlx5_wqe_data_seg d;
        } rd = {seg.ra, dseg(&m_a, &m_a.buf[30], 8)};

        post(&m_a, MLX5_OPCODE_RDMA_READ, &rd, sizeof(rd));
    }
    ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(0x5151u, m_a.buf[30]);
    /* fetch-add, the old value landing in our buffer */
    m_b.buf[22]     = 40;
    seg.ra.raddr    = htobe64(raddr_b(22));
    seg.at.swap_add = htobe64(2);
    seg.d           = dseg(&m_a, &m_a.buf[31], 8);
    post(&m_a, MLX5_OPCODE_ATOMIC_FA, &seg, sizeof(seg));
    ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(40u, m_a.buf[31]); /* the soft device's order: the host's */
    EXPECT_EQ(42u, m_b.buf[22]);
}

/* Masked atomics as UCX writes them (opmod 8 | log2(size) - 2): the target
 * word in host order; the fetched value of an 8-byte one in host order
 * (atomic_req_8B_endianness_mode 1), of a 4-byte one in network order, as
 * a ConnectX writes it.  An unsignalled one completes without a CQE. */
TEST_F(emu_raw_test, masked_atomics_and_their_result_order)
{
    struct {
        struct mlx5_wqe_raddr_seg ra;
        uint32_t op[4]; /* 32-bit: swap/add, compare/boundary, masks */
        struct mlx5_wqe_data_seg d;
    } s32;
    struct {
        struct mlx5_wqe_raddr_seg ra;
        uint64_t op[4]; /* 64-bit CS: swap, compare, swap mask, cmp mask */
        struct mlx5_wqe_data_seg d;
    } s64;
    uint32_t *t32 = (uint32_t *)&m_b.buf[40];
    uint32_t *r32 = (uint32_t *)&m_a.buf[41];
    struct mlx5_cqe64 cqe;
    uint16_t idx;

    /* 32-bit fetch-add of 0x10 to the low word */
    t32[0] = 0x01020304;
    t32[1] = 0xa0b0c0d0;
    memset(&s32, 0, sizeof(s32));
    s32.ra.raddr = htobe64((uintptr_t)&t32[0]);
    s32.ra.rkey  = htobe32(m_b.mr->rkey);
    s32.op[0]    = htobe32(0x10);
    s32.d        = dseg(&m_a, r32, 4);
    idx = post(&m_a, MLX5_OPCODE_ATOMIC_MASKED_FA, &s32, sizeof(s32), 0x08);
    ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(idx, be16toh(cqe.wqe_counter));
    EXPECT_EQ(0x01020314u, t32[0]);
    EXPECT_EQ(0xa0b0c0d0u, t32[1]); /* the word beside is untouched */
    EXPECT_EQ(htobe32(0x01020304), r32[0]);

    /* 32-bit masked compare-swap of the high word's low byte, unsignalled,
     * then a signalled one whose CQE is the only one */
    memset(&s32, 0, sizeof(s32));
    s32.ra.raddr = htobe64((uintptr_t)&t32[1]);
    s32.ra.rkey  = htobe32(m_b.mr->rkey);
    s32.op[0]    = htobe32(0x000000ee); /* swap */
    s32.op[1]    = htobe32(0xa0000000); /* compare */
    s32.op[2]    = htobe32(0x000000ff); /* swap mask */
    s32.op[3]    = htobe32(0xf0000000); /* compare mask */
    s32.d        = dseg(&m_a, &r32[1], 4);
    post(&m_a, MLX5_OPCODE_ATOMIC_MASKED_CS, &s32, sizeof(s32), 0x08, false);
    s32.op[1] = htobe32(0xb0000000); /* does not match: nothing swapped */
    s32.op[0] = htobe32(0x00000011);
    s32.d     = dseg(&m_a, &r32[2], 4);
    idx = post(&m_a, MLX5_OPCODE_ATOMIC_MASKED_CS, &s32, sizeof(s32), 0x08);
    ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(idx, be16toh(cqe.wqe_counter));
    EXPECT_EQ(0xa0b0c0eeu, t32[1]);
    EXPECT_EQ(htobe32(0xa0b0c0d0), r32[1]);
    EXPECT_EQ(htobe32(0xa0b0c0ee), r32[2]);
    EXPECT_FALSE(raw_cq_poll(m_a.scq, &cqe, 100));

    /* 64-bit masked compare-swap: host-order result */
    m_b.buf[42] = 0x1111222233334444ull;
    memset(&s64, 0, sizeof(s64));
    s64.ra.raddr = htobe64(raddr_b(42));
    s64.ra.rkey  = htobe32(m_b.mr->rkey);
    s64.op[0]    = htobe64(0x5555000000000000ull);
    s64.op[1]    = htobe64(0x0000000000004444ull);
    s64.op[2]    = htobe64(0xffff000000000000ull);
    s64.op[3]    = htobe64(0x000000000000ffffull);
    s64.d        = dseg(&m_a, &m_a.buf[43], 8);
    post(&m_a, MLX5_OPCODE_ATOMIC_MASKED_CS, &s64, sizeof(s64), 0x09);
    ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(0x5555222233334444ull, m_b.buf[42]);
    EXPECT_EQ(0x1111222233334444ull, m_a.buf[43]);
}

/* a write through an rkey the peer does not have: an error CQE with the
 * remote access syndrome; a WQE of an opcode the device does not take:
 * LOCAL_QP_OP_ERR */
/* A WQE written in queue memory may carry as many data segments as its
 * size holds, past the QP's max_send_sge (2 here), as on the HCA: UCX's
 * zcopy operations gather that many */
TEST_F(emu_raw_test, more_data_segments_than_max_send_sge)
{
    struct {
        struct mlx5_wqe_raddr_seg ra;
        struct mlx5_wqe_data_seg d[14];
    } w;
    struct mlx5_cqe64 cqe;
    int i;

    w.ra.raddr    = htobe64(raddr_b(200));
    w.ra.rkey     = htobe32(m_b.mr->rkey);
    w.ra.reserved = 0;
    for (i = 0; i < 14; ++i) {
        m_a.buf[100 + 2 * i] = 1000 + i;
        w.d[i]               = dseg(&m_a, &m_a.buf[100 + 2 * i], 8);
    }
    post(&m_a, MLX5_OPCODE_RDMA_WRITE, &w, sizeof(w));
    ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    for (i = 0; i < 14; ++i) {
        EXPECT_EQ(1000u + i, m_b.buf[200 + i]) << i;
    }
}

/* A send queue holds as many WQEs as it has basic blocks, whatever
 * max_send_wr the verbs path was sized for (32 WQEs of several blocks):
 * rc_mlx5 posts one-block WQEs, most of them unsignalled, up to its
 * queue's blocks */
TEST_F(emu_raw_test, one_block_wqes_fill_the_queue_past_max_send_wr)
{
    const unsigned n = m_a.rq.dv.sq.wqe_cnt - 1;
    struct mlx5_cqe64 cqe;
    uint16_t last = 0;

    ASSERT_GT(n, 40u); /* past the 32 WRs of max_send_wr */
    ASSERT_LE(256 + n, m_b.buf.size());
    for (unsigned i = 0; i < n; ++i) {
        inline_write iw = write_to_b((int)(256 + i), 5000 + i);
        last            = post(&m_a, MLX5_OPCODE_RDMA_WRITE, &iw, sizeof(iw), 0,
                               i == n - 1);
    }
    ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(last, be16toh(cqe.wqe_counter));
    for (unsigned i = 0; i < n; ++i) {
        EXPECT_EQ(5000u + i, m_b.buf[256 + i]) << i;
    }
}

/* A child made by fork() after the parent's engine ran has no engine
 * thread and none of the parent's contexts: the contexts it opens are its
 * own (data lands in its memory, never the parent's), its raw queues get
 * an engine of their own, and the parent's go on being served */
TEST_F(emu_raw_test, forked_child_gets_an_engine_of_its_own)
{
    struct mlx5_wqe_data_seg d;
    struct mlx5_cqe64 cqe;
    int status = -1;
    pid_t pid;

    post_recv(&m_b, 0);
    d = dseg(&m_a, &m_a.buf[10], 8);
    post(&m_a, MLX5_OPCODE_SEND, &d, sizeof(d)); /* the engine runs */
    ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
    ASSERT_TRUE(raw_cq_poll(m_b.rcq, &cqe));

    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        side c, e;

        open_side(&c, ibv_open_device(m_list[0]), nullptr);
        open_side(&e, ibv_open_device(m_list[1]), nullptr);
        if (!HasFailure() && (connect(&c, &e) == 0) && (connect(&e, &c) == 0)) {
            post_recv(&e, 0);
            c.buf[10] = 0x5eed;
            d         = dseg(&c, &c.buf[10], 8);
            post(&c, MLX5_OPCODE_SEND, &d, sizeof(d));
            if (raw_cq_poll(c.scq, &cqe, 10000) &&
                raw_cq_poll(e.rcq, &cqe, 10000) && (e.buf[0] == 0x5eed)) {
                _exit(0);
            }
        }
        _exit(1);
    }
    /* the parent's queues still work meanwhile */
    post_recv(&m_b, 1);
    post(&m_a, MLX5_OPCODE_SEND, &d, sizeof(d));
    EXPECT_TRUE(raw_cq_poll(m_a.scq, &cqe));
    EXPECT_TRUE(raw_cq_poll(m_b.rcq, &cqe));
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0)) << status;
}

/* A receive queue's CQEs count the WQEs taken in 16 bits, past the
 * ring's size (ud_mlx5 and rc_mlx5 compare it with their own count) */
TEST_F(emu_raw_test, receive_wqe_counter_passes_the_ring)
{
    const unsigned n = m_b.rq.dv.rq.wqe_cnt + 5;
    struct mlx5_wqe_data_seg d;
    struct mlx5_cqe64 cqe;

    d = dseg(&m_a, &m_a.buf[10], 8);
    for (unsigned i = 0; i < n; ++i) {
        post_recv(&m_b, 0);
        post(&m_a, MLX5_OPCODE_SEND, &d, sizeof(d));
        ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
        ASSERT_TRUE(raw_cq_poll(m_b.rcq, &cqe));
        ASSERT_EQ(MLX5_CQE_RESP_SEND, cqe.op_own >> 4);
        EXPECT_EQ(i, be16toh(cqe.wqe_counter)) << i;
    }
}

TEST_F(emu_raw_test, error_cqes_bad_flow)
{
    struct {
        struct mlx5_wqe_raddr_seg ra;
        struct mlx5_wqe_data_seg d;
    } w;
    struct mlx5_cqe64 cqe;
    struct mlx5_err_cqe *e = (struct mlx5_err_cqe *)&cqe;
    uint16_t idx;

    w.ra.raddr    = htobe64(raddr_b(0));
    w.ra.rkey     = htobe32(m_b.mr->rkey ^ 0x5500);
    w.ra.reserved = 0;
    w.d           = dseg(&m_a, &m_a.buf[0], 8);
    idx           = post(&m_a, MLX5_OPCODE_RDMA_WRITE, &w, sizeof(w));
    ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ_ERR, cqe.op_own >> 4);
    EXPECT_EQ(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, e->syndrome);
    EXPECT_EQ(idx, be16toh(e->wqe_counter));
}

/* A completion no doorbell brings reaches CQ memory while doorbells are
 * being served in the threads that ring them (the engine then arms only
 * devices that hear from other processes, and looks for the rest): an
 * unsignalled WRITE to a peer gone to ERR, whose requests are dropped,
 * fails when its retries run out, on the soft device's timer */
TEST_F(emu_raw_test, retries_exhausted_while_doorbells_ring_bad_flow)
{
    struct {
        struct mlx5_wqe_raddr_seg ra;
        struct mlx5_wqe_data_seg d;
    } w;
    struct mlx5_cqe64 cqe;
    struct mlx5_err_cqe *e = (struct mlx5_err_cqe *)&cqe;
    struct ibv_qp_attr a;
    uint16_t idx;
    int i;

    w.ra.raddr    = htobe64(raddr_b(40));
    w.ra.rkey     = htobe32(m_b.mr->rkey);
    w.ra.reserved = 0;
    w.d           = dseg(&m_a, &m_a.buf[1], 8);
    for (i = 0; i < 8; ++i) { /* doorbells served in this thread */
        post(&m_a, MLX5_OPCODE_RDMA_WRITE, &w, sizeof(w));
        ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
        ASSERT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    }

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(0, ibv_modify_qp(m_b.rq.qp, &a, IBV_QP_STATE));
    idx = post(&m_a, MLX5_OPCODE_RDMA_WRITE, &w, sizeof(w), 0, false);
    ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ_ERR, cqe.op_own >> 4);
    EXPECT_EQ(MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, e->syndrome);
    EXPECT_EQ(idx, be16toh(e->wqe_counter));
}

TEST_F(emu_raw_test, unknown_opcode_bad_flow)
{
    struct mlx5_cqe64 cqe;
    struct mlx5_err_cqe *e = (struct mlx5_err_cqe *)&cqe;
    uint64_t pad[2]        = {0, 0};

    {
        log_capture log;

        post(&m_a, 0x1d, pad, sizeof(pad)); /* no such opcode */
        ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
        EXPECT_LE(1u, log.count());
    }
    EXPECT_EQ(MLX5_CQE_REQ_ERR, cqe.op_own >> 4);
    EXPECT_EQ(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, e->syndrome);
}

/* an arm written to the doorbell record and UAR raises the CQ's event on
 * its channel once a CQE arrives */
TEST_F(emu_raw_test, arm_raises_the_event)
{
    struct mlx5_wqe_data_seg d;
    struct mlx5_cqe64 cqe;
    struct ibv_cq *ev_cq = nullptr;
    void *ev_ctx;
    struct pollfd pfd;
    uint32_t word;
    uint64_t db;

    word                = (0u << 28) | (0u << 24) | (m_b.rcq.ci & 0xffffff);
    m_b.rcq.dv.dbrec[1] = htobe32(word);
    db                  = ((uint64_t)word << 32) | m_b.rcq.dv.cqn;
    *(volatile uint64_t *)((uint8_t *)m_b.rcq.dv.cq_uar +
                           MLX5_CQ_DOORBELL) = htobe64(db);
    post_recv(&m_b, 1);
    d = dseg(&m_a, &m_a.buf[1], 8);
    post(&m_a, MLX5_OPCODE_SEND, &d, sizeof(d));
    pfd.fd     = m_b.ch->fd;
    pfd.events = POLLIN;
    ASSERT_EQ(1, ::poll(&pfd, 1, 5000));
    ASSERT_EQ(0, ibv_get_cq_event(m_b.ch, &ev_cq, &ev_ctx));
    EXPECT_EQ(m_b.rcq.cq, ev_cq);
    ibv_ack_cq_events(ev_cq, 1);
    ASSERT_TRUE(raw_cq_poll(m_b.rcq, &cqe));
    EXPECT_EQ(MLX5_CQE_RESP_SEND, cqe.op_own >> 4);
    ASSERT_TRUE(raw_cq_poll(m_a.scq, &cqe));
}

/* the verbs calls on memory the application took refuse */
TEST_F(emu_raw_test, verbs_on_raw_objects_bad_flow)
{
    struct ibv_wc wc;

    {
        log_capture log;

        EXPECT_EQ(-1, ibv_poll_cq(m_a.scq.cq, 1, &wc));
        EXPECT_EQ(1u, log.count());
    }
}
