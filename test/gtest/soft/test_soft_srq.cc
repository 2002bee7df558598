/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device shared receive queue: a list post (dcx_srq_post_recv_list)
 * takes receives in order, stops at the first that does not fit, says how
 * many it took, and the messages that follow land in those buffers in the
 * order they were posted; the send and receive queues keep their order
 * when their 32-bit counters wrap.
 */
#include "soft_fixture.h"

#include "soft/soft.h"

#include <stdint.h>
#include <vector>

using namespace soft_test;

namespace {

const uint64_t KEY  = 0x5e9;
const uint32_t CAP  = 8;  /* receives the SRQ holds */
const unsigned SLOT = 64; /* bytes per receive buffer */

struct srq_pair {
    node a, b;
    std::vector<uint8_t> buf = std::vector<uint8_t>(4 * CAP * SLOT, 0xee);
    dcx_mr_t *mr             = nullptr;

    int open(const std::string &fabric, uint32_t cap = CAP)
    {
        return open_sender_target(a, b, fabric, KEY, DCX_ACCESS_REMOTE_WRITE,
                                  cap, buf, &mr);
    }

    /* receives with wr_ids first.. into buffer slots first.. */
    std::vector<dcx_recv_t> recvs(uint64_t first, unsigned count) const
    {
        return recv_list(buf, mr, first, count, SLOT);
    }

    /* n SENDs of values first.., each received: checks the receive
     * completions' wr_ids and where each value landed */
    void exchange(uint64_t first, unsigned n)
    {
        std::vector<dcx_wc_t> wc(n);

        for (unsigned i = 0; i < n; ++i) {
            ASSERT_EQ(0, post_inline_value(a, a.dci, b.dct->qp_num, KEY,
                                           DCX_WR_SEND, 1000 + first + i));
        }
        ASSERT_EQ((int)n, b.poll(wc.data(), n));
        for (unsigned i = 0; i < n; ++i) {
            uint64_t v = 0;

            EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status) << i;
            EXPECT_EQ(DCX_WC_RECV, wc[i].opcode) << i;
            EXPECT_EQ(first + i, wc[i].wr_id) << i;
            memcpy(&v, buf.data() + (first + i) * SLOT, sizeof(v));
            EXPECT_EQ(1000 + first + i, v) << i;
        }
        ASSERT_EQ((int)n, a.poll(wc.data(), n));
        for (unsigned i = 0; i < n; ++i) {
            EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status) << i;
        }
    }
};

} // namespace

/* A list longer than the room left: the SRQ takes what fits, in order, and
 * refuses the rest with ENOMEM; the count it reports is exact, and the
 * buffers it did not take are never written. */
TEST_F(soft, srq_list_post_takes_what_fits_bad_flow)
{
    srq_pair p;
    unsigned posted = ~0u;

    ASSERT_EQ(0, p.open(fabric));
    std::vector<dcx_recv_t> list = p.recvs(0, CAP + 3);
    EXPECT_EQ(ENOMEM, dcx_srq_post_recv_list(p.b.srq, list.data(), list.size(),
                                             SLOT, &posted));
    EXPECT_EQ(CAP, posted);
    p.exchange(0, CAP);

    /* consumed: room for CAP again; the refused ones were not written */
    for (unsigned i = CAP; i < CAP + 3; ++i) {
        EXPECT_EQ(0xee, p.buf[i * SLOT]) << i;
    }
    list   = p.recvs(CAP, CAP);
    posted = ~0u;
    EXPECT_EQ(0, dcx_srq_post_recv_list(p.b.srq, list.data(), list.size(), SLOT,
                                        &posted));
    EXPECT_EQ(CAP, posted);
    p.exchange(CAP, CAP);

    /* two lists that together overfill it: the second stops where the
     * queue is full; a list posted to a full queue takes nothing */
    list = p.recvs(2 * CAP, CAP);
    list.resize(CAP / 2);
    EXPECT_EQ(0, dcx_srq_post_recv_list(p.b.srq, list.data(), list.size(), SLOT,
                                        &posted));
    EXPECT_EQ(CAP / 2, posted);
    list = p.recvs(2 * CAP + CAP / 2, CAP);
    EXPECT_EQ(ENOMEM, dcx_srq_post_recv_list(p.b.srq, list.data(), list.size(),
                                             SLOT, &posted));
    EXPECT_EQ(CAP / 2, posted);
    list = p.recvs(3 * CAP, 1);
    EXPECT_EQ(ENOMEM,
              dcx_srq_post_recv_list(p.b.srq, list.data(), 1, SLOT, &posted));
    EXPECT_EQ(0u, posted);
    p.exchange(2 * CAP, CAP);
}

/* An empty list posts nothing and succeeds. */
TEST_F(soft, srq_list_post_empty)
{
    srq_pair p;
    unsigned posted = ~0u;
    dcx_recv_t none;

    ASSERT_EQ(0, p.open(fabric));
    EXPECT_EQ(0, dcx_srq_post_recv_list(p.b.srq, &none, 0, SLOT, &posted));
    EXPECT_EQ(0u, posted);
    std::vector<dcx_recv_t> list = p.recvs(0, 2);
    EXPECT_EQ(0,
              dcx_srq_post_recv_list(p.b.srq, list.data(), 2, SLOT, &posted));
    EXPECT_EQ(2u, posted);
    p.exchange(0, 2);
}

/* An SRQ whose size is not a power of 2, with its receive counters about
 * to wrap around 2^32 (as after 4 billion receives): every receive is
 * still taken once, in the order posted.  A slot chosen as counter % size
 * maps counters 2^32 - 1 and 0 to one slot when 2^32 % size != 0, so a
 * post there overwrote a queued receive (completions 0, 2, 2). */
TEST_F(soft, srq_counters_wrap_keep_receive_order)
{
    const uint32_t cap = 3;
    srq_pair p;
    unsigned posted = ~0u;

    ASSERT_EQ(0, p.open(fabric, cap));
    soft_srq_t *srq = (soft_srq_t *)p.b.srq;
    srq->head       = UINT32_MAX - 1; /* empty: nothing posted yet */
    srq->tail       = UINT32_MAX - 1;
    for (uint64_t first = 0; first < 4 * cap; first += cap) {
        std::vector<dcx_recv_t> list = p.recvs(first, cap);
        ASSERT_EQ(0, dcx_srq_post_recv_list(p.b.srq, list.data(), cap, SLOT,
                                            &posted));
        ASSERT_EQ(cap, posted);
        p.exchange(first, cap);
    }
    EXPECT_EQ(4 * cap - 2, srq->head); /* wrapped */
}

/* The send queue's counters wrap too: a DCI of 3 WRs (not a power of two)
 * whose counters are put just before 2^32, full at every round, sends every
 * message in order with its own data across the wrap.  Slots taken as
 * counter % depth (before soft_wqe masked) gave the WRs at 2^32 - 1 and 0
 * the same slot. */
TEST_F(soft, sq_counters_wrap_keep_send_order)
{
    const uint32_t depth = 3;
    srq_pair p;
    unsigned posted = ~0u;

    ASSERT_EQ(0, p.open(fabric));
    ASSERT_EQ(0, dcx_qp_destroy(p.a.dci));
    p.a.dci = nullptr;
    ASSERT_EQ(0, p.a.make_dci(depth));
    std::vector<dcx_recv_t> list = p.recvs(0, 1);
    ASSERT_EQ(0,
              dcx_srq_post_recv_list(p.b.srq, list.data(), 1, SLOT, &posted));
    p.exchange(0, 1); /* the first post sets the queue up */
    soft_qp_t *qp = (soft_qp_t *)p.a.dci;
    ASSERT_EQ(qp->sq_head, qp->sq_tail) << "the queue is not empty";
    qp->sq_head = qp->sq_tail = qp->sq_comp = qp->sq_send = UINT32_MAX - 1;
    for (uint64_t first = 1; first < 1 + 4 * depth; first += depth) {
        std::vector<dcx_wc_t> wc(depth);

        list = p.recvs(first, depth);
        ASSERT_EQ(0, dcx_srq_post_recv_list(p.b.srq, list.data(), depth, SLOT,
                                            &posted));
        ASSERT_EQ(depth, posted);
        for (unsigned i = 0; i < depth; ++i) {
            ASSERT_EQ(0, post_inline_value(p.a, p.a.dci, p.b.dct->qp_num, KEY,
                                           DCX_WR_SEND, 1000 + first + i));
        }
        ASSERT_EQ((int)depth, p.b.poll(wc.data(), depth));
        for (unsigned i = 0; i < depth; ++i) {
            uint64_t v = 0;

            EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status) << first + i;
            EXPECT_EQ(first + i, wc[i].wr_id) << first + i;
            memcpy(&v, p.buf.data() + (first + i) * SLOT, sizeof(v));
            EXPECT_EQ(1000 + first + i, v) << first + i;
        }
        /* each send completes once, in order, with its own wr_id */
        ASSERT_EQ((int)depth, p.a.poll(wc.data(), depth));
        for (unsigned i = 0; i < depth; ++i) {
            EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status) << first + i;
            EXPECT_EQ(1000 + first + i, wc[i].wr_id) << first + i;
        }
    }
    EXPECT_EQ(4 * depth - 2, qp->sq_head); /* wrapped */
}
