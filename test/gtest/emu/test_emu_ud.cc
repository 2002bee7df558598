/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD QPs between two ports of the fabric (mlx5_0 and mlx5_1 of this
 * process), through the verbs calls perftest and UCX's ud_verbs use.  A
 * datagram lands after the 40 bytes of the GRH with the sender's QP
 * number and LID in its completion, and with IBV_WC_GRH and a GRH when it
 * went through an AH with one; a datagram with another Q_Key, for a QP
 * with no receive posted, or for nobody is lost without an error at the
 * sender, whose QP keeps working; a receive too small completes with a
 * local length error.
 */
#include "emu_fixture.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <vector>

namespace {

const uint32_t kQkey = 0x11110000;
const uint32_t kGrh  = 40;

struct ud_side {
    struct ibv_context *ctx = nullptr;
    struct ibv_pd *pd       = nullptr;
    struct ibv_cq *cq       = nullptr;
    struct ibv_qp *qp       = nullptr;
    struct ibv_mr *mr       = nullptr;
    uint16_t lid            = 0;
    union ibv_gid gid;
    std::vector<uint8_t> buf;
};

} // namespace

class emu_ud_test : public emu_test {
protected:
    void SetUp() override
    {
        emu_test::SetUp();
        ASSERT_EQ(2, m_num);
        open_side(&m_a, m_ctx, m_pd);
        open_side(&m_b, ibv_open_device(m_list[1]), nullptr);
    }

    void TearDown() override
    {
        for (struct ibv_ah *ah : m_ahs) {
            EXPECT_EQ(0, ibv_destroy_ah(ah));
        }
        close_side(&m_b, true);
        close_side(&m_a, false);
        emu_test::TearDown();
    }

    void open_side(ud_side *s, struct ibv_context *ctx, struct ibv_pd *pd)
    {
        struct ibv_qp_init_attr a;
        struct ibv_port_attr port;
        struct ibv_qp_attr qa;

        ASSERT_NE(nullptr, ctx);
        s->ctx = ctx;
        s->pd  = (pd != nullptr) ? pd : ibv_alloc_pd(ctx);
        ASSERT_NE(nullptr, s->pd);
        s->cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
        ASSERT_NE(nullptr, s->cq);
        s->buf.assign(16384, 0);
        s->mr = ibv_reg_mr(s->pd, s->buf.data(), s->buf.size(),
                           IBV_ACCESS_LOCAL_WRITE);
        ASSERT_NE(nullptr, s->mr);
        ASSERT_EQ(0, ibv_query_port(ctx, 1, &port));
        s->lid = port.lid;
        ASSERT_EQ(0, ibv_query_gid(ctx, 1, 0, &s->gid));
        memset(&a, 0, sizeof(a));
        a.send_cq             = s->cq;
        a.recv_cq             = s->cq;
        a.qp_type             = IBV_QPT_UD;
        a.cap.max_send_wr     = 16;
        a.cap.max_recv_wr     = 16;
        a.cap.max_send_sge    = 1;
        a.cap.max_recv_sge    = 1;
        a.cap.max_inline_data = 64;
        s->qp                 = ibv_create_qp(s->pd, &a);
        ASSERT_NE(nullptr, s->qp);
        memset(&qa, 0, sizeof(qa));
        qa.qp_state = IBV_QPS_INIT;
        qa.port_num = 1;
        qa.qkey     = kQkey;
        ASSERT_EQ(0, ibv_modify_qp(s->qp, &qa,
                                   IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                       IBV_QP_PORT | IBV_QP_QKEY));
        qa.qp_state = IBV_QPS_RTR;
        ASSERT_EQ(0, ibv_modify_qp(s->qp, &qa, IBV_QP_STATE));
        qa.qp_state = IBV_QPS_RTS;
        qa.sq_psn   = 0;
        ASSERT_EQ(0, ibv_modify_qp(s->qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN));
    }

    void close_side(ud_side *s, bool own)
    {
        if (s->qp != nullptr) {
            EXPECT_EQ(0, ibv_destroy_qp(s->qp));
        }
        if (s->mr != nullptr) {
            EXPECT_EQ(0, ibv_dereg_mr(s->mr));
        }
        if (s->cq != nullptr) {
            EXPECT_EQ(0, ibv_destroy_cq(s->cq));
        }
        if (own) {
            EXPECT_EQ(0, ibv_dealloc_pd(s->pd));
            EXPECT_EQ(0, ibv_close_device(s->ctx));
        }
    }

    struct ibv_ah *ah_to(ud_side *from, const ud_side *to, bool global)
    {
        struct ibv_ah_attr a;
        struct ibv_ah *ah;

        memset(&a, 0, sizeof(a));
        a.dlid     = to->lid;
        a.port_num = 1;
        if (global) {
            a.is_global         = 1;
            a.grh.dgid          = to->gid;
            a.grh.hop_limit     = 7;
            a.grh.traffic_class = 3;
            a.grh.flow_label    = 0x12345;
        }
        ah = ibv_create_ah(from->pd, &a);
        if (ah != nullptr) {
            m_ahs.push_back(ah);
        }
        return ah;
    }

    int post_recv(ud_side *s, uint64_t wr_id, size_t off, uint32_t len)
    {
        struct ibv_sge sge = {(uintptr_t)&s->buf[off], len, s->mr->lkey};
        struct ibv_recv_wr wr, *bad = nullptr;

        memset(&wr, 0, sizeof(wr));
        wr.wr_id   = wr_id;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        return ibv_post_recv(s->qp, &wr, &bad);
    }

    int send(ud_side *s, struct ibv_ah *ah, uint32_t qpn, uint64_t wr_id,
             size_t off, uint32_t len, uint32_t qkey = kQkey,
             unsigned flags = 0, enum ibv_wr_opcode op = IBV_WR_SEND)
    {
        struct ibv_sge sge = {(uintptr_t)&s->buf[off], len, s->mr->lkey};
        struct ibv_send_wr wr, *bad = nullptr;

        memset(&wr, 0, sizeof(wr));
        wr.wr_id             = wr_id;
        wr.opcode            = op;
        wr.send_flags        = IBV_SEND_SIGNALED | flags;
        wr.sg_list           = &sge;
        wr.num_sge           = 1;
        wr.imm_data          = htobe32(0x600d);
        wr.wr.ud.ah          = ah;
        wr.wr.ud.remote_qpn  = qpn;
        wr.wr.ud.remote_qkey = qkey;
        return ibv_post_send(s->qp, &wr, &bad);
    }

    /* One completion of s's CQ, polling the other side's meanwhile */
    bool poll(ud_side *s, struct ibv_wc *wc, int64_t ms = 5000)
    {
        int64_t end = emu_now_ms() + ms;
        ud_side *o  = (s == &m_a) ? &m_b : &m_a;
        struct ibv_wc other;

        do {
            if (ibv_poll_cq(s->cq, 1, wc) == 1) {
                return true;
            }
            if (ibv_poll_cq(o->cq, 1, &other) == 1) {
                m_stray.push_back(other);
            }
        } while (emu_now_ms() < end);
        return false;
    }

    ud_side m_a, m_b;
    std::vector<struct ibv_ah *> m_ahs;
    std::vector<struct ibv_wc> m_stray;
};

TEST_F(emu_ud_test, datagram_after_the_grh_with_source)
{
    struct ibv_ah *ah = ah_to(&m_a, &m_b, false);
    struct ibv_wc wc;

    ASSERT_NE(nullptr, ah);
    ASSERT_EQ(0, post_recv(&m_b, 5, 0, 256));
    memcpy(&m_a.buf[1000], "datagram", 8);
    ASSERT_EQ(0, send(&m_a, ah, m_b.qp->qp_num, 1, 1000, 8));
    ASSERT_TRUE(poll(&m_a, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SEND, wc.opcode);
    EXPECT_EQ(m_a.qp->qp_num, wc.qp_num);
    ASSERT_TRUE(poll(&m_b, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(5u, wc.wr_id);
    EXPECT_EQ(IBV_WC_RECV, wc.opcode);
    EXPECT_EQ(kGrh + 8, wc.byte_len);
    EXPECT_EQ(m_b.qp->qp_num, wc.qp_num);
    EXPECT_EQ(m_a.qp->qp_num, wc.src_qp);
    EXPECT_EQ(m_a.lid, wc.slid);
    EXPECT_FALSE(wc.wc_flags & IBV_WC_GRH);
    EXPECT_EQ(0, memcmp(&m_b.buf[kGrh], "datagram", 8));
}

/* A receive buffer its owner unmapped before the datagram came (UCX's
 * uct_flush_test frees its receive buffers while datagrams are still on
 * their way): the datagram lands nowhere, as in pages only the
 * registration holds, and its completion, whose GRH the emulation reads
 * back from the buffer, is made without touching the missing page. */
TEST_F(emu_ud_test, receive_into_pages_unmapped_since_posting)
{
    const size_t pg   = (size_t)sysconf(_SC_PAGESIZE);
    struct ibv_ah *ah = ah_to(&m_a, &m_b, true);
    struct ibv_recv_wr wr, *bad = nullptr;
    struct ibv_wc wc;

    ASSERT_NE(nullptr, ah);
    auto *m = (uint8_t *)mmap(nullptr, pg, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void *)m);
    struct ibv_mr *mr = ibv_reg_mr(m_b.pd, m, pg, IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(nullptr, mr);
    struct ibv_sge sge = {(uintptr_t)m, 256, mr->lkey};
    memset(&wr, 0, sizeof(wr));
    wr.wr_id   = 9;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ASSERT_EQ(0, ibv_post_recv(m_b.qp, &wr, &bad));
    ASSERT_EQ((void *)m,
              mmap(m, pg, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
                   0));
    ASSERT_EQ(0, send(&m_a, ah, m_b.qp->qp_num, 3, 1000, 8));
    ASSERT_TRUE(poll(&m_a, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    ASSERT_TRUE(poll(&m_b, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(9u, wc.wr_id);
    EXPECT_EQ(kGrh + 8, wc.byte_len);
    EXPECT_EQ(m_a.qp->qp_num, wc.src_qp);
    EXPECT_EQ(0, ibv_dereg_mr(mr));
    munmap(m, pg);
}

TEST_F(emu_ud_test, grh_through_a_global_ah_and_immediate)
{
    struct ibv_ah *ah = ah_to(&m_a, &m_b, true);
    const uint8_t *grh;
    struct ibv_wc wc;

    ASSERT_NE(nullptr, ah);
    ASSERT_EQ(0, post_recv(&m_b, 6, 0, 256));
    ASSERT_EQ(0, send(&m_a, ah, m_b.qp->qp_num, 2, 1000, 16, kQkey,
                      IBV_SEND_INLINE, IBV_WR_SEND_WITH_IMM));
    ASSERT_TRUE(poll(&m_b, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(kGrh + 16, wc.byte_len);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(0x600du, be32toh(wc.imm_data));
    grh = &m_b.buf[0];
    EXPECT_EQ(6, grh[0] >> 4); /* IP version */
    EXPECT_EQ(0x1b, grh[6]);   /* next header */
    EXPECT_EQ(7, grh[7]);      /* hop limit */
    EXPECT_EQ(0, memcmp(grh + 8, m_a.gid.raw, 16));
    EXPECT_EQ(0, memcmp(grh + 24, m_b.gid.raw, 16));
    EXPECT_EQ(m_a.lid, wc.slid);
    ASSERT_TRUE(poll(&m_a, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

/* Q_Key 0x8000xxxx in the WR: the QP's own is used */
TEST_F(emu_ud_test, high_bit_qkey_takes_the_qps)
{
    struct ibv_ah *ah = ah_to(&m_a, &m_b, false);
    struct ibv_wc wc;

    ASSERT_EQ(0, post_recv(&m_b, 7, 0, 256));
    ASSERT_EQ(0, send(&m_a, ah, m_b.qp->qp_num, 3, 1000, 8, 0x80000000u));
    ASSERT_TRUE(poll(&m_b, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(7u, wc.wr_id);
}

/* Lost datagrams are lost silently: another Q_Key, no receive, a QP
 * number nobody has; the sender completes each with success and its QP
 * keeps working */
TEST_F(emu_ud_test, lost_datagrams_bad_flow)
{
    struct ibv_ah *ah = ah_to(&m_a, &m_b, false);
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr init;
    struct ibv_wc wc;

    /* no receive posted (B's engine runs while its CQ is polled: the
     * datagram arrives then, and finds no receive) */
    ASSERT_EQ(0, send(&m_a, ah, m_b.qp->qp_num, 10, 1000, 8));
    ASSERT_TRUE(poll(&m_a, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_FALSE(poll(&m_b, &wc, 100));
    /* another Q_Key */
    ASSERT_EQ(0, post_recv(&m_b, 8, 0, 256));
    ASSERT_EQ(0, send(&m_a, ah, m_b.qp->qp_num, 11, 1000, 8, kQkey + 1));
    ASSERT_TRUE(poll(&m_a, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    /* a number nobody has */
    ASSERT_EQ(0, send(&m_a, ah, 0xfffff0, 12, 1000, 8));
    ASSERT_TRUE(poll(&m_a, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_FALSE(poll(&m_b, &wc, 100));
    ASSERT_EQ(0, ibv_query_qp(m_a.qp, &qa, IBV_QP_STATE, &init));
    EXPECT_EQ(IBV_QPS_RTS, qa.qp_state);
    /* the receive is still there for the right one */
    ASSERT_EQ(0, send(&m_a, ah, m_b.qp->qp_num, 13, 1000, 8));
    ASSERT_TRUE(poll(&m_b, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(8u, wc.wr_id);
}

TEST_F(emu_ud_test, receive_too_small_bad_flow)
{
    struct ibv_ah *ah = ah_to(&m_a, &m_b, false);
    struct ibv_wc wc;

    ASSERT_EQ(0, post_recv(&m_b, 9, 0, kGrh + 4));
    ASSERT_EQ(0, send(&m_a, ah, m_b.qp->qp_num, 14, 1000, 64));
    ASSERT_TRUE(poll(&m_b, &wc));
    EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status);
    EXPECT_EQ(9u, wc.wr_id);
    ASSERT_TRUE(poll(&m_a, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

TEST_F(emu_ud_test, post_errors_bad_flow)
{
    struct ibv_ah *ah = ah_to(&m_a, &m_b, false);

    {
        log_capture log;

        /* longer than the MTU */
        EXPECT_EQ(EINVAL, send(&m_a, ah, m_b.qp->qp_num, 1, 0, 4097));
        EXPECT_EQ(1u, log.count());
    }
    {
        log_capture log;

        /* an RDMA operation on UD */
        EXPECT_EQ(EINVAL, send(&m_a, ah, m_b.qp->qp_num, 2, 0, 8, kQkey, 0,
                               IBV_WR_RDMA_WRITE));
        EXPECT_EQ(1u, log.count());
    }
    {
        log_capture log;

        /* multicast */
        EXPECT_EQ(EOPNOTSUPP, send(&m_a, ah, 0xffffff, 3, 0, 8));
        EXPECT_EQ(1u, log.count());
    }
}

/* A UD QP moved into ERR flushes its receive queue, the application's
 * wr_ids in order, and one posted while there */
TEST_F(emu_ud_test, err_flushes_receive_queue)
{
    struct ibv_qp_attr a;
    struct ibv_wc wc;

    ASSERT_EQ(0, post_recv(&m_b, 41, 0, kGrh + 64));
    ASSERT_EQ(0, post_recv(&m_b, 42, 128, kGrh + 64));
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(0, ibv_modify_qp(m_b.qp, &a, IBV_QP_STATE));
    for (uint64_t id = 41; id < 44; ++id) {
        if (id == 43) {
            ASSERT_EQ(0, post_recv(&m_b, 43, 256, kGrh + 64));
        }
        ASSERT_TRUE(poll(&m_b, &wc)) << "receive " << id << " not flushed";
        EXPECT_EQ(id, wc.wr_id);
        EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
        EXPECT_EQ(m_b.qp->qp_num, wc.qp_num);
    }
}
