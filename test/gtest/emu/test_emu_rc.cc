/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC QPs between two ports of the fabric (mlx5_0 and mlx5_1 of this
 * process are ports of their own), through the plain verbs calls
 * perftest and UCX's rc_verbs use: ibv_create_qp, the RC modify recipe,
 * ibv_post_recv, ibv_post_send and ibv_poll_cq.  Each operation lands in
 * the peer's memory or receive queue and completes with the QP numbers
 * the program knows; a responder takes requests only from the QP it is
 * connected to and only once it is in RTR; a QP takes only the remote
 * access it was given; an empty receive queue answers RNR.
 */
#include "emu_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <vector>

namespace {

const unsigned kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                         IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

/* One side: a context on one device, its PD, CQs, buffer and QPs */
struct side {
    struct ibv_context *ctx = nullptr;
    struct ibv_pd *pd       = nullptr;
    struct ibv_cq *scq      = nullptr;
    struct ibv_cq *rcq      = nullptr;
    struct ibv_mr *mr       = nullptr;
    uint16_t lid            = 0;
    std::vector<uint64_t> buf;
    std::vector<struct ibv_qp *> qps;
};

} // namespace

class emu_rc_test : public emu_test {
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
        close_side(&m_b, true);
        close_side(&m_a, false);
        emu_test::TearDown();
    }

    void open_side(side *s, struct ibv_context *ctx, struct ibv_pd *pd)
    {
        struct ibv_port_attr port;

        ASSERT_NE(nullptr, ctx);
        s->ctx = ctx;
        s->pd  = (pd != nullptr) ? pd : ibv_alloc_pd(ctx);
        ASSERT_NE(nullptr, s->pd);
        s->scq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
        s->rcq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
        ASSERT_NE(nullptr, s->scq);
        ASSERT_NE(nullptr, s->rcq);
        s->buf.assign(512, 0);
        s->mr = ibv_reg_mr(s->pd, s->buf.data(), s->buf.size() * 8, kAccess);
        ASSERT_NE(nullptr, s->mr);
        ASSERT_EQ(0, ibv_query_port(ctx, 1, &port));
        s->lid = port.lid;
    }

    /* Destroys qp of s before the teardown (an SRQ it uses may go then) */
    int destroy_qp(side *s, struct ibv_qp *qp)
    {
        for (auto it = s->qps.begin(); it != s->qps.end(); ++it) {
            if (*it == qp) {
                s->qps.erase(it);
                break;
            }
        }
        return ibv_destroy_qp(qp);
    }

    void close_side(side *s, bool own)
    {
        for (struct ibv_qp *qp : s->qps) {
            EXPECT_EQ(0, ibv_destroy_qp(qp));
        }
        if (s->mr != nullptr) {
            EXPECT_EQ(0, ibv_dereg_mr(s->mr));
        }
        if (s->scq != nullptr) {
            EXPECT_EQ(0, ibv_destroy_cq(s->scq));
        }
        if (s->rcq != nullptr) {
            EXPECT_EQ(0, ibv_destroy_cq(s->rcq));
        }
        if (own && (s->pd != nullptr)) {
            EXPECT_EQ(0, ibv_dealloc_pd(s->pd));
        }
        if (own && (s->ctx != nullptr)) {
            EXPECT_EQ(0, ibv_close_device(s->ctx));
        }
    }

    struct ibv_qp *create_rc(side *s, struct ibv_srq *srq = nullptr,
                             uint32_t max_recv_wr = 16)
    {
        struct ibv_qp_init_attr a;
        struct ibv_qp *qp;

        memset(&a, 0, sizeof(a));
        a.send_cq             = s->scq;
        a.recv_cq             = s->rcq;
        a.srq                 = srq;
        a.qp_type             = IBV_QPT_RC;
        a.cap.max_send_wr     = 16;
        a.cap.max_send_sge    = 2;
        a.cap.max_recv_wr     = max_recv_wr;
        a.cap.max_recv_sge    = 1;
        a.cap.max_inline_data = 64;
        qp                    = ibv_create_qp(s->pd, &a);
        if (qp != nullptr) {
            s->qps.push_back(qp);
            EXPECT_EQ((srq != nullptr) ? 0u : max_recv_wr, a.cap.max_recv_wr);
        }
        return qp;
    }

    /* The RC recipe of perftest and rdma-core's examples */
    int connect(struct ibv_qp *qp, uint16_t dlid, uint32_t dqpn,
                unsigned access = kAccess, uint8_t timeout = 14,
                uint8_t retry_cnt = 7, uint8_t rnr_retry = 7,
                bool to_rts = true)
    {
        struct ibv_qp_attr a;
        int ret;

        memset(&a, 0, sizeof(a));
        a.qp_state        = IBV_QPS_INIT;
        a.port_num        = 1;
        a.qp_access_flags = access;
        ret               = ibv_modify_qp(qp, &a,
                                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                              IBV_QP_ACCESS_FLAGS);
        if (ret != 0) {
            return ret;
        }
        memset(&a, 0, sizeof(a));
        a.qp_state           = IBV_QPS_RTR;
        a.path_mtu           = IBV_MTU_4096;
        a.dest_qp_num        = dqpn;
        a.max_dest_rd_atomic = 4;
        a.min_rnr_timer      = 1;
        a.ah_attr.dlid       = dlid;
        a.ah_attr.port_num   = 1;
        ret                  = ibv_modify_qp(qp, &a,
                                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                                 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                                 IBV_QP_MAX_DEST_RD_ATOMIC |
                                                 IBV_QP_MIN_RNR_TIMER);
        if ((ret != 0) || !to_rts) {
            return ret;
        }
        memset(&a, 0, sizeof(a));
        a.qp_state      = IBV_QPS_RTS;
        a.timeout       = timeout;
        a.retry_cnt     = retry_cnt;
        a.rnr_retry     = rnr_retry;
        a.max_rd_atomic = 4;
        return ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                 IBV_QP_MAX_QP_RD_ATOMIC);
    }

    /* An SRQ of 8 one-sge receives on s's PD */
    struct ibv_srq *create_srq(side *s)
    {
        struct ibv_srq_init_attr sa;

        memset(&sa, 0, sizeof(sa));
        sa.attr.max_wr  = 8;
        sa.attr.max_sge = 1;
        return ibv_create_srq(s->pd, &sa);
    }

    /* A connected pair: m_qa on mlx5_0, m_qb on mlx5_1 */
    void make_pair(unsigned access_b = kAccess, uint8_t rnr_retry = 7)
    {
        m_qa = create_rc(&m_a);
        m_qb = create_rc(&m_b);
        ASSERT_NE(nullptr, m_qa);
        ASSERT_NE(nullptr, m_qb);
        ASSERT_EQ(0, connect(m_qb, m_a.lid, m_qa->qp_num, access_b));
        ASSERT_EQ(0, connect(m_qa, m_b.lid, m_qb->qp_num, kAccess, 14, 7,
                             rnr_retry));
    }

    int post_recv(side *s, struct ibv_qp *qp, uint64_t wr_id, int slot,
                  uint32_t len = 64)
    {
        struct ibv_recv_wr wr, *bad = nullptr;
        struct ibv_sge sge;

        sge.addr   = (uintptr_t)&s->buf[slot];
        sge.length = len;
        sge.lkey   = s->mr->lkey;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id   = wr_id;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        return ibv_post_recv(qp, &wr, &bad);
    }

    /* post_recv's receive, posted to srq */
    int post_srq_recv(side *s, struct ibv_srq *srq, uint64_t wr_id, int slot,
                      uint32_t len = 64)
    {
        struct ibv_recv_wr wr, *bad = nullptr;
        struct ibv_sge sge = {(uintptr_t)&s->buf[slot], len, s->mr->lkey};

        memset(&wr, 0, sizeof(wr));
        wr.wr_id   = wr_id;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        return ibv_post_srq_recv(srq, &wr, &bad);
    }

    int post_send(struct ibv_qp *qp, side *s, uint64_t wr_id,
                  enum ibv_wr_opcode op, int slot, uint32_t len,
                  uint64_t raddr = 0, uint32_t rkey = 0, unsigned flags = 0,
                  uint64_t add = 0, uint64_t swap = 0)
    {
        struct ibv_send_wr wr, *bad = nullptr;
        struct ibv_sge sge;

        sge.addr   = (uintptr_t)&s->buf[slot];
        sge.length = len;
        sge.lkey   = s->mr->lkey;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id      = wr_id;
        wr.opcode     = op;
        wr.send_flags = IBV_SEND_SIGNALED | flags;
        wr.sg_list    = &sge;
        wr.num_sge    = 1;
        wr.imm_data   = htobe32(0xabcd0000u + (uint32_t)wr_id);
        if ((op == IBV_WR_ATOMIC_FETCH_AND_ADD) ||
            (op == IBV_WR_ATOMIC_CMP_AND_SWP)) {
            wr.wr.atomic.remote_addr = raddr;
            wr.wr.atomic.rkey        = rkey;
            wr.wr.atomic.compare_add = add;
            wr.wr.atomic.swap        = swap;
        } else {
            wr.wr.rdma.remote_addr = raddr;
            wr.wr.rdma.rkey        = rkey;
        }
        return ibv_post_send(qp, &wr, &bad);
    }

    /* One completion of cq, polling every CQ of both sides meanwhile (the
     * engines of both ports run when their CQs are polled) */
    bool poll(struct ibv_cq *cq, struct ibv_wc *wc, int64_t ms = 5000)
    {
        int64_t end = emu_now_ms() + ms;

        do {
            if (ibv_poll_cq(cq, 1, wc) == 1) {
                return true;
            }
            for (struct ibv_cq *o : {m_a.scq, m_a.rcq, m_b.scq, m_b.rcq}) {
                if (o != cq) {
                    struct ibv_wc other;

                    if (ibv_poll_cq(o, 1, &other) == 1) {
                        m_stray.push_back(other);
                    }
                }
            }
        } while (emu_now_ms() < end);
        return false;
    }

    uint64_t raddr_b(int slot) { return (uintptr_t)&m_b.buf[slot]; }

    side m_a, m_b;
    struct ibv_qp *m_qa = nullptr;
    struct ibv_qp *m_qb = nullptr;
    std::vector<struct ibv_wc> m_stray;
};

TEST_F(emu_rc_test, send_write_read_atomics_between_ports)
{
    struct ibv_wc wc;

    make_pair();
    /* send with immediate into the peer's receive queue */
    ASSERT_EQ(0, post_recv(&m_b, m_qb, 77, 0));
    m_a.buf[8] = 0x1122334455667788ull;
    ASSERT_EQ(0, post_send(m_qa, &m_a, 1, IBV_WR_SEND_WITH_IMM, 8, 8));
    ASSERT_TRUE(poll(m_b.rcq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(77u, wc.wr_id);
    EXPECT_EQ(IBV_WC_RECV, wc.opcode);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(0xabcd0001u, be32toh(wc.imm_data));
    EXPECT_EQ(8u, wc.byte_len);
    EXPECT_EQ(m_qb->qp_num, wc.qp_num);
    EXPECT_EQ(m_a.lid, wc.slid); /* the sender port's LID */
    EXPECT_EQ(0x1122334455667788ull, m_b.buf[0]);
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SEND, wc.opcode);
    EXPECT_EQ(m_qa->qp_num, wc.qp_num);

    /* inline send */
    ASSERT_EQ(0, post_recv(&m_b, m_qb, 78, 1));
    m_a.buf[9] = 0xfeedull;
    ASSERT_EQ(0, post_send(m_qa, &m_a, 2, IBV_WR_SEND, 9, 8, 0, 0,
                           IBV_SEND_INLINE));
    ASSERT_TRUE(poll(m_b.rcq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(0xfeedull, m_b.buf[1]);
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(2u, wc.wr_id);

    /* RDMA write, then read back */
    m_a.buf[10] = 0xabcdefull;
    ASSERT_EQ(0, post_send(m_qa, &m_a, 3, IBV_WR_RDMA_WRITE, 10, 8, raddr_b(20),
                           m_b.mr->rkey));
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RDMA_WRITE, wc.opcode);
    EXPECT_EQ(0xabcdefull, m_b.buf[20]);
    m_b.buf[21] = 0x5151ull;
    ASSERT_EQ(0, post_send(m_qa, &m_a, 4, IBV_WR_RDMA_READ, 11, 8, raddr_b(21),
                           m_b.mr->rkey));
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_RDMA_READ, wc.opcode);
    EXPECT_EQ(0x5151ull, m_a.buf[11]);

    /* fetch-add and compare-swap, the old value returned */
    m_b.buf[22] = 100;
    ASSERT_EQ(0, post_send(m_qa, &m_a, 5, IBV_WR_ATOMIC_FETCH_AND_ADD, 12, 8,
                           raddr_b(22), m_b.mr->rkey, 0, 5));
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(IBV_WC_FETCH_ADD, wc.opcode);
    EXPECT_EQ(100u, m_a.buf[12]);
    EXPECT_EQ(105u, m_b.buf[22]);
    ASSERT_EQ(0, post_send(m_qa, &m_a, 6, IBV_WR_ATOMIC_CMP_AND_SWP, 13, 8,
                           raddr_b(22), m_b.mr->rkey, 0, 105, 7));
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(105u, m_a.buf[13]);
    EXPECT_EQ(7u, m_b.buf[22]);
    EXPECT_TRUE(m_stray.empty());
}

/* Both directions at once, and receives from an SRQ */
TEST_F(emu_rc_test, both_ways_and_srq)
{
    struct ibv_srq_attr attr;
    struct ibv_srq *srq = create_srq(&m_b);
    struct ibv_wc wc;

    ASSERT_NE(nullptr, srq);
    m_qa = create_rc(&m_a);
    m_qb = create_rc(&m_b, srq);
    ASSERT_NE(nullptr, m_qb);
    ASSERT_EQ(0, connect(m_qb, m_a.lid, m_qa->qp_num));
    ASSERT_EQ(0, connect(m_qa, m_b.lid, m_qb->qp_num));

    ASSERT_EQ(0, post_srq_recv(&m_b, srq, 9, 0));
    ASSERT_EQ(0, post_recv(&m_a, m_qa, 10, 0));
    m_a.buf[1] = 1;
    m_b.buf[1] = 2;
    ASSERT_EQ(0, post_send(m_qa, &m_a, 11, IBV_WR_SEND, 1, 8));
    ASSERT_EQ(0, post_send(m_qb, &m_b, 12, IBV_WR_SEND, 1, 8));
    ASSERT_TRUE(poll(m_b.rcq, &wc));
    EXPECT_EQ(9u, wc.wr_id);
    EXPECT_EQ(m_qb->qp_num, wc.qp_num);
    EXPECT_EQ(1u, m_b.buf[0]);
    ASSERT_TRUE(poll(m_a.rcq, &wc));
    EXPECT_EQ(10u, wc.wr_id);
    EXPECT_EQ(2u, m_a.buf[0]);
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(11u, wc.wr_id);
    ASSERT_TRUE(poll(m_b.scq, &wc));
    EXPECT_EQ(12u, wc.wr_id);
    EXPECT_EQ(0, ibv_query_srq(srq, &attr));
    for (struct ibv_qp *qp : m_b.qps) {
        EXPECT_EQ(0, ibv_destroy_qp(qp));
    }
    m_b.qps.clear();
    EXPECT_EQ(0, ibv_destroy_srq(srq));
}

/* An SRQ's RC QP moved into ERR raises its last-WQE-reached event on the
 * context's async fd, once (UCX's rc_mlx5 without DEVX waits for it
 * before it destroys the QP); a QP with its own receive queue raises
 * none, and a QP destroyed takes its unread events with it. */
TEST_F(emu_rc_test, last_wqe_reached_async_event)
{
    struct ibv_async_event ev;
    struct ibv_qp_attr a;
    struct ibv_srq *srq = create_srq(&m_b);
    struct pollfd pfd   = {m_b.ctx->async_fd, POLLIN, 0};

    ASSERT_EQ(0, fcntl(m_b.ctx->async_fd, F_SETFL,
                       fcntl(m_b.ctx->async_fd, F_GETFL) | O_NONBLOCK));
    ASSERT_NE(nullptr, srq);
    m_qa                   = create_rc(&m_a);
    m_qb                   = create_rc(&m_b, srq);
    struct ibv_qp *own_rq  = create_rc(&m_b);
    struct ibv_qp *dropped = create_rc(&m_b, srq);
    ASSERT_NE(nullptr, m_qb);
    ASSERT_NE(nullptr, own_rq);
    ASSERT_NE(nullptr, dropped);
    ASSERT_EQ(0, connect(m_qb, m_a.lid, m_qa->qp_num));
    ASSERT_EQ(0,
              connect(own_rq, m_a.lid, m_qa->qp_num, kAccess, 14, 7, 7, false));
    ASSERT_EQ(0, connect(dropped, m_a.lid, m_qa->qp_num, kAccess, 14, 7, 7,
                         false));
    EXPECT_EQ(0, ::poll(&pfd, 1, 0)); /* nothing yet */
    EXPECT_EQ(-1, ibv_get_async_event(m_b.ctx, &ev));
    EXPECT_EQ(EAGAIN, errno);

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(0, ibv_modify_qp(m_qb, &a, IBV_QP_STATE));
    ASSERT_EQ(0, ibv_modify_qp(own_rq, &a, IBV_QP_STATE));
    ASSERT_EQ(1, ::poll(&pfd, 1, 0));
    ASSERT_EQ(0, ibv_get_async_event(m_b.ctx, &ev));
    EXPECT_EQ(IBV_EVENT_QP_LAST_WQE_REACHED, ev.event_type);
    EXPECT_EQ(m_qb, ev.element.qp);
    ibv_ack_async_event(&ev);
    /* once: already in ERR, and none for the QP without an SRQ */
    ASSERT_EQ(0, ibv_modify_qp(m_qb, &a, IBV_QP_STATE));
    EXPECT_EQ(0, ::poll(&pfd, 1, 0));
    EXPECT_EQ(-1, ibv_get_async_event(m_b.ctx, &ev));
    EXPECT_EQ(EAGAIN, errno);

    /* an event not read yet goes with its QP */
    ASSERT_EQ(0, ibv_modify_qp(dropped, &a, IBV_QP_STATE));
    ASSERT_EQ(0, destroy_qp(&m_b, dropped));
    EXPECT_EQ(-1, ibv_get_async_event(m_b.ctx, &ev));
    EXPECT_EQ(EAGAIN, errno);

    for (struct ibv_qp *qp : m_b.qps) {
        EXPECT_EQ(0, ibv_destroy_qp(qp));
    }
    m_b.qps.clear();
    EXPECT_EQ(0, ibv_destroy_srq(srq));
}

struct destroy_qp_arg {
    struct ibv_qp *qp;
    int ret;
    bool done; /* atomic */
};

static void *destroy_qp_thread(void *p)
{
    destroy_qp_arg *arg = (destroy_qp_arg *)p;

    arg->ret = ibv_destroy_qp(arg->qp);
    __atomic_store_n(&arg->done, true, __ATOMIC_RELEASE);
    return nullptr;
}

/* An event handed out names its QP until it is acknowledged: the QP's
 * destroy waits for the acknowledgement (UCX's async thread reads
 * element.qp->qp_num while its main thread may be destroying the QP). */
TEST_F(emu_rc_test, destroy_qp_waits_for_event_ack_bad_flow)
{
    struct ibv_async_event ev;
    struct ibv_qp_attr a;
    struct ibv_srq *srq = create_srq(&m_b);
    destroy_qp_arg arg;
    pthread_t thread;

    ASSERT_NE(nullptr, srq);
    m_qa = create_rc(&m_a);
    m_qb = create_rc(&m_b, srq);
    ASSERT_NE(nullptr, m_qb);
    ASSERT_EQ(0, connect(m_qb, m_a.lid, m_qa->qp_num));
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(0, ibv_modify_qp(m_qb, &a, IBV_QP_STATE));
    ASSERT_EQ(0, ibv_get_async_event(m_b.ctx, &ev));
    ASSERT_EQ(IBV_EVENT_QP_LAST_WQE_REACHED, ev.event_type);
    ASSERT_EQ(m_qb, ev.element.qp);
    const uint32_t qpn = m_qb->qp_num;
    m_b.qps.clear();

    arg.qp   = m_qb;
    arg.ret  = -1;
    arg.done = false;
    ASSERT_EQ(0, pthread_create(&thread, nullptr, destroy_qp_thread, &arg));
    usleep(100000); /* lets the destroy reach its wait, if it waits */
    if (__atomic_load_n(&arg.done, __ATOMIC_ACQUIRE)) {
        ADD_FAILURE() << "QP destroyed with its event not acknowledged";
    } else {
        EXPECT_EQ(qpn, ev.element.qp->qp_num); /* still the QP's memory */
    }
    ibv_ack_async_event(&ev);
    pthread_join(thread, nullptr);
    EXPECT_EQ(0, arg.ret);
    m_qb = nullptr;
    EXPECT_EQ(0, ibv_destroy_srq(srq));
}

/* ibv_query_qp gives back what the connection was made with */
TEST_F(emu_rc_test, query_after_connect)
{
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr a;

    make_pair();
    ASSERT_EQ(0, ibv_query_qp(m_qa, &a, IBV_QP_STATE | IBV_QP_DEST_QPN, &init));
    EXPECT_EQ(IBV_QPS_RTS, a.qp_state);
    EXPECT_EQ(m_qb->qp_num, a.dest_qp_num);
    EXPECT_EQ(m_b.lid, a.ah_attr.dlid);
    EXPECT_EQ(kAccess, a.qp_access_flags);
    EXPECT_EQ(16u, a.cap.max_recv_wr);
    EXPECT_EQ(IBV_QPT_RC, init.qp_type);
    EXPECT_NE(m_qa->qp_num, m_qb->qp_num);
}

TEST_F(emu_rc_test, empty_receive_queue_rnr_bad_flow)
{
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr init;
    struct ibv_wc wc;

    make_pair(kAccess, 1);
    ASSERT_EQ(0, post_send(m_qa, &m_a, 1, IBV_WR_SEND, 0, 8));
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_RNR_RETRY_EXC_ERR, wc.status);
    EXPECT_EQ(1u, wc.wr_id);
    ASSERT_EQ(0, ibv_query_qp(m_qa, &a, IBV_QP_STATE, &init));
    EXPECT_EQ(IBV_QPS_ERR, a.qp_state);
    EXPECT_FALSE(poll(m_b.rcq, &wc, 100));
}

TEST_F(emu_rc_test, remote_access_not_granted_bad_flow)
{
    struct ibv_wc wc;

    make_pair(IBV_ACCESS_REMOTE_WRITE);
    m_b.buf[30] = 3;
    ASSERT_EQ(0, post_send(m_qa, &m_a, 1, IBV_WR_RDMA_READ, 0, 8, raddr_b(30),
                           m_b.mr->rkey));
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_NE(3u, m_a.buf[0]);
}

/* A QP that is not the responder's peer reaches nothing: its requests
 * are dropped, it fails with retry exceeded, and the responder's peer is
 * not disturbed */
TEST_F(emu_rc_test, third_qp_is_not_the_peer_bad_flow)
{
    struct ibv_qp *qc;
    struct ibv_wc wc;

    make_pair();
    qc = create_rc(&m_a);
    ASSERT_NE(nullptr, qc);
    ASSERT_EQ(0, connect(qc, m_b.lid, m_qb->qp_num, kAccess, 8, 1, 1));
    m_a.buf[5] = 0x99;
    ASSERT_EQ(0, post_send(qc, &m_a, 1, IBV_WR_RDMA_WRITE, 5, 8, raddr_b(40),
                           m_b.mr->rkey));
    ASSERT_TRUE(poll(m_a.scq, &wc, 20000));
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
    EXPECT_EQ(qc->qp_num, wc.qp_num);
    EXPECT_EQ(0u, m_b.buf[40]);
    /* the real pair still works */
    ASSERT_EQ(0, post_send(m_qa, &m_a, 2, IBV_WR_RDMA_WRITE, 5, 8, raddr_b(40),
                           m_b.mr->rkey));
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(0x99u, m_b.buf[40]);
}

/* A responder still in INIT takes nothing */
TEST_F(emu_rc_test, peer_not_ready_bad_flow)
{
    struct ibv_qp_attr a;
    struct ibv_wc wc;

    m_qa = create_rc(&m_a);
    m_qb = create_rc(&m_b);
    ASSERT_NE(nullptr, m_qb);
    memset(&a, 0, sizeof(a));
    a.qp_state        = IBV_QPS_INIT;
    a.port_num        = 1;
    a.qp_access_flags = kAccess;
    ASSERT_EQ(0, ibv_modify_qp(m_qb, &a,
                               IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                   IBV_QP_ACCESS_FLAGS));
    ASSERT_EQ(0, connect(m_qa, m_b.lid, m_qb->qp_num, kAccess, 8, 1, 1));
    ASSERT_EQ(0, post_send(m_qa, &m_a, 1, IBV_WR_RDMA_WRITE, 0, 8, raddr_b(50),
                           m_b.mr->rkey));
    ASSERT_TRUE(poll(m_a.scq, &wc, 20000));
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
}

TEST_F(emu_rc_test, post_errors_bad_flow)
{
    struct ibv_send_wr wr[2], *bad = nullptr;
    struct ibv_recv_wr rwr, *rbad  = nullptr;
    struct ibv_sge sge;
    struct ibv_srq_init_attr sa;
    struct ibv_qp *q_srq;
    struct ibv_srq *srq;
    struct ibv_wc wc;

    make_pair();
    /* an opcode RC does not take: the WR before it is posted, bad_wr names
     * it, one log line */
    sge = {(uintptr_t)&m_a.buf[0], 8, m_a.mr->lkey};
    memset(wr, 0, sizeof(wr));
    wr[0].wr_id               = 1;
    wr[0].opcode              = IBV_WR_RDMA_WRITE;
    wr[0].send_flags          = IBV_SEND_SIGNALED;
    wr[0].sg_list             = &sge;
    wr[0].num_sge             = 1;
    wr[0].wr.rdma.remote_addr = raddr_b(60);
    wr[0].wr.rdma.rkey        = m_b.mr->rkey;
    wr[0].next                = &wr[1];
    wr[1]                     = wr[0];
    wr[1].wr_id               = 2;
    wr[1].opcode              = IBV_WR_TSO;
    wr[1].next                = nullptr;
    {
        log_capture log;

        EXPECT_EQ(EINVAL, ibv_post_send(m_qa, wr, &bad));
        EXPECT_EQ(&wr[1], bad);
        EXPECT_EQ(1u, log.count());
    }
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);

    /* a QP on an SRQ has no receive queue of its own */
    memset(&sa, 0, sizeof(sa));
    sa.attr.max_wr  = 4;
    sa.attr.max_sge = 1;
    srq             = ibv_create_srq(m_a.pd, &sa);
    ASSERT_NE(nullptr, srq);
    q_srq = create_rc(&m_a, srq);
    ASSERT_NE(nullptr, q_srq);
    memset(&rwr, 0, sizeof(rwr));
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    {
        log_capture log;

        EXPECT_EQ(EINVAL, ibv_post_recv(q_srq, &rwr, &rbad));
        EXPECT_EQ(&rwr, rbad);
        EXPECT_EQ(1u, log.count());
    }
    EXPECT_EQ(0, ibv_destroy_qp(q_srq));
    m_a.qps.pop_back();
    EXPECT_EQ(0, ibv_destroy_srq(srq));

    /* before RTS nothing is posted */
    struct ibv_qp *fresh = create_rc(&m_a);

    ASSERT_NE(nullptr, fresh);
    wr[0].next = nullptr;
    {
        log_capture log;

        EXPECT_NE(0, ibv_post_send(fresh, wr, &bad));
        EXPECT_EQ(&wr[0], bad);
        EXPECT_EQ(1u, log.count());
    }
}

/* A connection to a number its LID's port never gave out is not made:
 * requests go nowhere and fail with retry exceeded */
TEST_F(emu_rc_test, unknown_peer_number_bad_flow)
{
    struct ibv_wc wc;

    m_qa = create_rc(&m_a);
    ASSERT_NE(nullptr, m_qa);
    ASSERT_EQ(0, connect(m_qa, m_b.lid, 0xfffff0, kAccess, 8, 1, 1));
    ASSERT_EQ(0, post_send(m_qa, &m_a, 1, IBV_WR_RDMA_WRITE, 0, 8, raddr_b(0),
                           m_b.mr->rkey));
    ASSERT_TRUE(poll(m_a.scq, &wc, 20000));
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
}

/* ibv_rereg_mr: the MR keeps its keys and takes the new access, range or
 * PD; the device applies them from then on */
TEST_F(emu_rc_test, rereg_mr_access)
{
    struct ibv_wc wc;
    uint32_t lkey = m_b.mr->lkey, rkey = m_b.mr->rkey;

    make_pair();
    ASSERT_EQ(0,
              ibv_rereg_mr(m_b.mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr,
                           0,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
    EXPECT_EQ(lkey, m_b.mr->lkey);
    EXPECT_EQ(rkey, m_b.mr->rkey);
    m_a.buf[0] = 42;
    ASSERT_EQ(0, post_send(m_qa, &m_a, 1, IBV_WR_RDMA_WRITE, 0, 8, raddr_b(20),
                           rkey));
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(42u, m_b.buf[20]);
    /* the read right is gone */
    ASSERT_EQ(0, post_send(m_qa, &m_a, 2, IBV_WR_RDMA_READ, 1, 8, raddr_b(20),
                           rkey));
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
}

TEST_F(emu_rc_test, rereg_mr_translation)
{
    struct ibv_wc wc;
    uint32_t rkey = m_b.mr->rkey;

    make_pair();
    ASSERT_EQ(0, ibv_rereg_mr(m_b.mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr,
                              &m_b.buf[256], 256 * 8, 0));
    EXPECT_EQ((void *)&m_b.buf[256], m_b.mr->addr);
    EXPECT_EQ(256u * 8, m_b.mr->length);
    EXPECT_EQ(rkey, m_b.mr->rkey);
    m_a.buf[0] = 43;
    ASSERT_EQ(0, post_send(m_qa, &m_a, 1, IBV_WR_RDMA_WRITE, 0, 8, raddr_b(300),
                           rkey));
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(43u, m_b.buf[300]);
    /* the old range is not the key's any more */
    ASSERT_EQ(0, post_send(m_qa, &m_a, 2, IBV_WR_RDMA_WRITE, 0, 8, raddr_b(20),
                           rkey));
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_EQ(0u, m_b.buf[20]);
}

/* A key is good for the queues of its PD only: moved to another PD, a
 * send from it fails locally; moved back, it works again */
TEST_F(emu_rc_test, rereg_mr_pd)
{
    struct ibv_pd *pd2 = ibv_alloc_pd(m_a.ctx);
    struct ibv_wc wc;

    ASSERT_NE(nullptr, pd2);
    make_pair();
    ASSERT_EQ(0,
              ibv_rereg_mr(m_a.mr, IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0));
    EXPECT_EQ(pd2, m_a.mr->pd);
    {
        log_capture log;

        EXPECT_EQ(EBUSY, ibv_dealloc_pd(pd2)); /* the MR is on it now */
        EXPECT_EQ(1u, log.count());
    }
    ASSERT_EQ(0, ibv_rereg_mr(m_a.mr, IBV_REREG_MR_CHANGE_PD, m_a.pd, nullptr,
                              0, 0));
    ASSERT_EQ(0, post_recv(&m_b, m_qb, 10, 0));
    m_a.buf[4] = 44;
    ASSERT_EQ(0, post_send(m_qa, &m_a, 1, IBV_WR_SEND, 4, 8));
    ASSERT_TRUE(poll(m_b.rcq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(44u, m_b.buf[0]);
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);

    ASSERT_EQ(0,
              ibv_rereg_mr(m_a.mr, IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0));
    ASSERT_EQ(0, post_send(m_qa, &m_a, 2, IBV_WR_SEND, 4, 8));
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
    ASSERT_EQ(0, ibv_rereg_mr(m_a.mr, IBV_REREG_MR_CHANGE_PD, m_a.pd, nullptr,
                              0, 0));
    EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

/* A receive buffer of another PD than the receiving QP's: the receiver's
 * local protection error, the sender's remote operation error */
TEST_F(emu_rc_test, rereg_mr_pd_receiver_bad_flow)
{
    struct ibv_pd *pd2 = ibv_alloc_pd(m_b.ctx);
    struct ibv_wc wc;

    ASSERT_NE(nullptr, pd2);
    make_pair();
    ASSERT_EQ(0, post_recv(&m_b, m_qb, 10, 0));
    ASSERT_EQ(0,
              ibv_rereg_mr(m_b.mr, IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0));
    ASSERT_EQ(0, post_send(m_qa, &m_a, 1, IBV_WR_SEND, 4, 8));
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_REM_OP_ERR, wc.status);
    /* the receiver's completion, taken while the sender's was waited for */
    if (m_stray.empty()) {
        ASSERT_TRUE(poll(m_b.rcq, &wc));
    } else {
        wc = m_stray.front();
    }
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
    EXPECT_EQ(10u, wc.wr_id);
    ASSERT_EQ(0, ibv_rereg_mr(m_b.mr, IBV_REREG_MR_CHANGE_PD, m_b.pd, nullptr,
                              0, 0));
    EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

TEST_F(emu_rc_test, rereg_mr_bad_flow)
{
    struct ibv_mr *mr = m_a.mr;
    void *addr        = mr->addr;
    size_t len        = mr->length;
    struct ibv_wc wc;

    auto refused = [&](int ret, int err, int flags, struct ibv_pd *pd, void *a,
                       size_t l, int access, const char *why) {
        log_capture log;

        errno = 0;
        EXPECT_EQ(ret, ibv_rereg_mr(mr, flags, pd, a, l, access)) << why;
        EXPECT_EQ(err, errno) << why;
        EXPECT_EQ(1u, log.count()) << why;
        EXPECT_EQ(m_a.pd, mr->pd) << why;
        EXPECT_EQ(addr, mr->addr) << why;
        EXPECT_EQ(len, mr->length) << why;
    };

    /* libibverbs' input checks */
    refused(IBV_REREG_MR_ERR_INPUT, EINVAL, 1 << 3, nullptr, nullptr, 0, 0,
            "unknown flag");
    refused(IBV_REREG_MR_ERR_INPUT, EINVAL, IBV_REREG_MR_CHANGE_TRANSLATION,
            nullptr, nullptr, 64, 0, "a translation without address");
    refused(IBV_REREG_MR_ERR_INPUT, EINVAL, IBV_REREG_MR_CHANGE_TRANSLATION,
            nullptr, addr, 0, 0, "a translation without length");
    refused(IBV_REREG_MR_ERR_INPUT, EINVAL, IBV_REREG_MR_CHANGE_PD, nullptr,
            nullptr, 0, IBV_ACCESS_LOCAL_WRITE, "access without CHANGE_ACCESS");
    refused(IBV_REREG_MR_ERR_INPUT, EINVAL, IBV_REREG_MR_CHANGE_PD, nullptr,
            nullptr, 0, 0, "CHANGE_PD without a PD");
    /* the kernel's */
    refused(IBV_REREG_MR_ERR_CMD, EINVAL, 0, nullptr, nullptr, 0, 0,
            "nothing to change");
    refused(IBV_REREG_MR_ERR_CMD, EINVAL, IBV_REREG_MR_CHANGE_PD, m_b.pd,
            nullptr, 0, 0, "a PD of another context");
    refused(IBV_REREG_MR_ERR_CMD, EINVAL, IBV_REREG_MR_CHANGE_ACCESS, nullptr,
            nullptr, 0, IBV_ACCESS_REMOTE_WRITE,
            "remote write without local write");
    refused(IBV_REREG_MR_ERR_CMD, EOPNOTSUPP, IBV_REREG_MR_CHANGE_ACCESS,
            nullptr, nullptr, 0, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND,
            "ODP");
    {
        /* memory not mapped: the line is the soft device's, below */
        log_capture log;

        errno = 0;
        EXPECT_EQ(IBV_REREG_MR_ERR_CMD,
                  ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr,
                               (void *)8, 4096, 0));
        EXPECT_EQ(EFAULT, errno);
        EXPECT_EQ(0u, log.count());
        EXPECT_EQ(addr, mr->addr);
        EXPECT_EQ(len, mr->length);
    }

    /* the MR works as before */
    make_pair();
    m_a.buf[0] = 45;
    ASSERT_EQ(0, post_send(m_qa, &m_a, 1, IBV_WR_RDMA_WRITE, 0, 8, raddr_b(21),
                           m_b.mr->rkey));
    ASSERT_TRUE(poll(m_a.scq, &wc));
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(45u, m_b.buf[21]);
}

/* Moving an RC QP to RESET drops its completions not yet polled, the
 * receives' too, as libmlx5 cleans its CQs: a receive that failed before
 * the QP was reset does not show up after */
TEST_F(emu_rc_test, reset_drops_receive_completions_bad_flow)
{
    struct ibv_qp_attr a;
    struct ibv_wc wc;
    int64_t end;
    int n = 0;

    make_pair();
    ASSERT_EQ(0, post_recv(&m_b, m_qb, 10, 0, 4)); /* too short */
    ASSERT_EQ(0, post_send(m_qa, &m_a, 1, IBV_WR_SEND, 4, 8));
    /* the sender's completion, without polling the receiver's CQ */
    end = emu_now_ms() + 5000;
    while ((n == 0) && (emu_now_ms() < end)) {
        n = ibv_poll_cq(m_a.scq, 1, &wc);
        ibv_poll_cq(m_b.scq, 1, &wc); /* runs the receiver's engine */
    }
    ASSERT_EQ(1, n);
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(0, ibv_modify_qp(m_qb, &a, IBV_QP_STATE));
    EXPECT_EQ(0, ibv_poll_cq(m_b.rcq, 1, &wc));
    /* reconnected, it receives again */
    ASSERT_EQ(0, connect(m_qb, m_a.lid, m_qa->qp_num));
    a.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(0, ibv_modify_qp(m_qa, &a, IBV_QP_STATE));
    ASSERT_EQ(0, connect(m_qa, m_b.lid, m_qb->qp_num));
    ASSERT_EQ(0, post_recv(&m_b, m_qb, 11, 1));
    ASSERT_EQ(0, post_send(m_qa, &m_a, 2, IBV_WR_SEND, 4, 8));
    ASSERT_TRUE(poll(m_b.rcq, &wc));
    EXPECT_EQ(11u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

/* A QP moved into ERR flushes its own receive queue: every receive posted
 * completes with IBV_WC_WR_FLUSH_ERR, in order, with the QP's number, and
 * so does one posted while it stays there; a QP on an SRQ leaves the
 * SRQ's receives alone (the SRQ serves other QPs). */
TEST_F(emu_rc_test, err_flushes_own_receive_queue)
{
    struct ibv_srq *srq = create_srq(&m_b);
    struct ibv_qp_attr a;
    struct ibv_wc wc;

    ASSERT_NE(nullptr, srq);
    make_pair();
    struct ibv_qp *on_srq = create_rc(&m_b, srq);
    ASSERT_NE(nullptr, on_srq);
    ASSERT_EQ(0, connect(on_srq, m_a.lid, m_qa->qp_num));
    for (uint64_t id = 20; id < 23; ++id) {
        ASSERT_EQ(0, post_recv(&m_b, m_qb, id, (int)id));
    }
    ASSERT_EQ(0, post_srq_recv(&m_b, srq, 90, 40, 8));

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(0, ibv_modify_qp(m_qb, &a, IBV_QP_STATE));
    ASSERT_EQ(0, ibv_modify_qp(on_srq, &a, IBV_QP_STATE));
    for (uint64_t id = 20; id < 23; ++id) {
        ASSERT_TRUE(poll(m_b.rcq, &wc)) << "receive " << id << " not flushed";
        EXPECT_EQ(id, wc.wr_id);
        EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
        EXPECT_EQ(m_qb->qp_num, wc.qp_num);
    }
    ASSERT_EQ(0, post_recv(&m_b, m_qb, 23, 23));
    ASSERT_TRUE(poll(m_b.rcq, &wc)) << "receive posted in ERR not flushed";
    EXPECT_EQ(23u, wc.wr_id);
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
    EXPECT_EQ(0, ibv_poll_cq(m_b.rcq, 1, &wc)); /* the SRQ's stays */

    /* the SRQ's receive still takes a message, through another QP */
    struct ibv_qp *other = create_rc(&m_b, srq);
    ASSERT_NE(nullptr, other);
    a.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(0, ibv_modify_qp(m_qa, &a, IBV_QP_STATE));
    ASSERT_EQ(0, connect(other, m_a.lid, m_qa->qp_num));
    ASSERT_EQ(0, connect(m_qa, m_b.lid, other->qp_num));
    m_a.buf[4] = 61;
    ASSERT_EQ(0, post_send(m_qa, &m_a, 1, IBV_WR_SEND, 4, 8));
    ASSERT_TRUE(poll(m_b.rcq, &wc));
    EXPECT_EQ(90u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(other->qp_num, wc.qp_num);
    EXPECT_EQ(61u, m_b.buf[40]);

    EXPECT_EQ(0, destroy_qp(&m_b, on_srq));
    EXPECT_EQ(0, destroy_qp(&m_b, other));
    EXPECT_EQ(0, ibv_destroy_srq(srq));
}

/* RESET empties the QP's own receive queue without completions: after
 * reconnecting, a message lands in a receive posted since, not in one
 * posted before the reset */
TEST_F(emu_rc_test, reset_empties_own_receive_queue_bad_flow)
{
    struct ibv_qp_attr a;
    struct ibv_wc wc;

    make_pair();
    ASSERT_EQ(0, post_recv(&m_b, m_qb, 30, 0));
    ASSERT_EQ(0, post_recv(&m_b, m_qb, 31, 8));
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(0, ibv_modify_qp(m_qb, &a, IBV_QP_STATE));
    EXPECT_EQ(0, ibv_poll_cq(m_b.rcq, 1, &wc));
    ASSERT_EQ(0, ibv_modify_qp(m_qa, &a, IBV_QP_STATE));
    ASSERT_EQ(0, connect(m_qb, m_a.lid, m_qa->qp_num));
    ASSERT_EQ(0, connect(m_qa, m_b.lid, m_qb->qp_num));
    ASSERT_EQ(0, post_recv(&m_b, m_qb, 32, 16));
    m_a.buf[4] = 62;
    ASSERT_EQ(0, post_send(m_qa, &m_a, 1, IBV_WR_SEND, 4, 8));
    ASSERT_TRUE(poll(m_b.rcq, &wc));
    EXPECT_EQ(32u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    EXPECT_EQ(62u, m_b.buf[16]);
    EXPECT_EQ(0u, m_b.buf[0]);
    EXPECT_EQ(0, ibv_poll_cq(m_b.rcq, 1, &wc));
}

/* A QP that failed by itself (its requester's retries exhausted) and is
 * then moved into ERR by software gets what any move into ERR gives: its
 * own receive queue flushed, and an SRQ's QP its last-WQE event, once */
TEST_F(emu_rc_test, failed_qp_moved_to_err_flushes_bad_flow)
{
    struct ibv_srq *srq = create_srq(&m_b);
    struct ibv_async_event ev;
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr a;
    struct ibv_wc wc;

    ASSERT_NE(nullptr, srq);
    ASSERT_EQ(0, fcntl(m_b.ctx->async_fd, F_SETFL,
                       fcntl(m_b.ctx->async_fd, F_GETFL) | O_NONBLOCK));
    m_qa                  = create_rc(&m_a); /* left in RESET: drops all */
    m_qb                  = create_rc(&m_b);
    struct ibv_qp *on_srq = create_rc(&m_b, srq);
    ASSERT_NE(nullptr, m_qa);
    ASSERT_NE(nullptr, m_qb);
    ASSERT_NE(nullptr, on_srq);
    for (struct ibv_qp *qp : {m_qb, on_srq}) {
        ASSERT_EQ(0, connect(qp, m_a.lid, m_qa->qp_num, kAccess, 8, 1, 1));
    }
    ASSERT_EQ(0, post_recv(&m_b, m_qb, 70, 0));
    for (struct ibv_qp *qp : {m_qb, on_srq}) {
        ASSERT_EQ(0, post_send(qp, &m_b, 71, IBV_WR_SEND, 8, 8));
        ASSERT_TRUE(poll(m_b.scq, &wc, 20000));
        EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
        /* ibv_qp.state follows what software asked for and queried:
         * a query without IBV_QP_STATE leaves it (UCX's rc_verbs asks
         * for the peer's address after an error, then still posts its
         * flush, asserting RTS) */
        EXPECT_EQ(IBV_QPS_RTS, qp->state);
        ASSERT_EQ(0, ibv_query_qp(qp, &a, IBV_QP_AV | IBV_QP_DEST_QPN, &init));
        EXPECT_EQ(IBV_QPS_RTS, qp->state);
        ASSERT_EQ(0, ibv_query_qp(qp, &a, IBV_QP_STATE, &init));
        EXPECT_EQ(IBV_QPS_ERR, a.qp_state);
        EXPECT_EQ(IBV_QPS_ERR, qp->state);
    }

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    ASSERT_EQ(0, ibv_modify_qp(m_qb, &a, IBV_QP_STATE));
    ASSERT_TRUE(poll(m_b.rcq, &wc)) << "receive not flushed";
    EXPECT_EQ(70u, wc.wr_id);
    EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);

    ASSERT_EQ(0, ibv_modify_qp(on_srq, &a, IBV_QP_STATE));
    ASSERT_EQ(0, ibv_get_async_event(m_b.ctx, &ev));
    EXPECT_EQ(IBV_EVENT_QP_LAST_WQE_REACHED, ev.event_type);
    EXPECT_EQ(on_srq, ev.element.qp);
    ibv_ack_async_event(&ev);
    ASSERT_EQ(0, ibv_modify_qp(on_srq, &a, IBV_QP_STATE));
    EXPECT_EQ(-1, ibv_get_async_event(m_b.ctx, &ev)); /* once */
    EXPECT_EQ(EAGAIN, errno);

    EXPECT_EQ(0, destroy_qp(&m_b, on_srq));
    EXPECT_EQ(0, ibv_destroy_srq(srq));
}
