/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the light small-message path (inline SENDs written straight
 * into the target's ring) and cumulative acknowledgements through the
 * requester's ack table, next to the behaviour they must keep: completion
 * order, a dead peer, RNR, and fault rules (under which the path steps
 * aside for the packet ACKs).
 */
#include "soft_fixture.h"

extern "C" {
#include "soft/soft.h"
}

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

using namespace soft_test;


class soft_fast : public soft_xproc {
protected:
    /* posts 'count' inline 8-byte SENDs, wr_id first.., payload = wr_id */
    void post_inline(uint64_t first, unsigned count)
    {
        for (unsigned i = 0; i < count; ++i) {
            uint64_t id = first + i;
            memcpy(lbuf.data() + id * 8, &id, 8);
            dcx_sge_t s      = lsge(id * 8, 8);
            dcx_send_wr_t wr = make_wr(DCX_WR_SEND, id, &s, 1, ini, sh);
            wr.flags |= DCX_SEND_INLINE;
            ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &wr)) << "wr " << id;
        }
    }

    /* polls 'count' completions, expects them successful and in order */
    void expect_in_order(uint64_t first, unsigned count)
    {
        std::vector<dcx_wc_t> wc(count);
        ASSERT_EQ((int)count, ini.poll(wc.data(), count, 20.0));
        for (unsigned i = 0; i < count; ++i) {
            EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status) << "wr " << first + i;
            EXPECT_EQ(first + i, wc[i].wr_id);
        }
    }

    /* the target received messages 0..count-1 in order, each its id */
    void expect_received(unsigned count)
    {
        ASSERT_TRUE(wait_recv(count));
        EXPECT_EQ(count, __atomic_load_n(&sh->n_wc, __ATOMIC_ACQUIRE));
        for (unsigned i = 0; i < count; ++i) {
            uint64_t v;
            EXPECT_EQ(DCX_WC_SUCCESS, sh->wc[i].status);
            ASSERT_EQ(8u, sh->wc[i].byte_len);
            memcpy(&v, recv_buf(sh, sh->wc[i].wr_id), 8);
            EXPECT_EQ((uint64_t)i, v) << "receive " << i;
        }
    }
};

/* Back-to-back inline SENDs complete from the table, in order, with no
 * response packet at all. */
TEST_F(soft_fast, table_acks_complete_in_order)
{
    const unsigned n = 64;
    sh->tp.nrecv     = n;
    start();
    post_inline(0, n);
    expect_in_order(0, n);
    expect_received(n);
    dcx_soft_stats_t st = dev_stats(ini);
    EXPECT_EQ(n, st.table_completions);
    EXPECT_EQ(n, st.tx_packets);
    EXPECT_EQ(0u, st.rx_packets) << "ACK packets came back";
    EXPECT_EQ(0u, st.retransmits);
    EXPECT_TRUE(stop_children());
    EXPECT_EQ(n, sh->stats.acks_in_table);
}

/* A READ between SENDs completes only with its data: the table's
 * acknowledgement of the later SENDs does not pass it. */
TEST_F(soft_fast, table_acks_stop_at_read)
{
    start();
    post_inline(0, 4);
    memset(lbuf.data() + (1u << 20), 0, 64);
    memset(sh->buf, 0x3c, 64);
    dcx_sge_t s      = lsge(1u << 20, 64);
    dcx_send_wr_t rd = make_wr(DCX_WR_RDMA_READ, 4, &s, 1, ini, sh);
    ASSERT_EQ(0, dcx_qp_post_send(ini.dci, &rd));
    post_inline(5, 4);
    expect_in_order(0, 9);
    EXPECT_EQ(0x3c, lbuf[(1u << 20) + 63]);
    ASSERT_TRUE(wait_recv(8));
    for (unsigned i = 0; i < 8; ++i) {
        uint64_t v;
        memcpy(&v, recv_buf(sh, sh->wc[i].wr_id), 8);
        EXPECT_EQ((uint64_t)((i < 4) ? i : i + 1), v) << "receive " << i;
    }
    EXPECT_TRUE(stop_children());
}

/* The target dies with our inline SENDs unacknowledged: the first one ends
 * with RETRY_EXC_ERR at the first timeout (liveness, not retries), the
 * rest are flushed, as on the general path. */
TEST_F(soft_fast, peer_dies_with_unacked_inline_bad_flow)
{
    pid_t target = start_target();
    ASSERT_EQ(0, open_initiator(ini));
    ASSERT_EQ(0,
              ini.reg(lbuf.data(), lbuf.size(), DCX_ACCESS_LOCAL_WRITE, &lmr));
    post_inline(0, 1);
    expect_in_order(0, 1);
    EXPECT_EQ(1u, dev_stats(ini).table_completions);
    uint64_t rexmit = dev_stats(ini).retransmits;

    kill_child(target);
    int status;
    EXPECT_EQ(target, waitpid(target, &status, 0));
    children.clear();

    double t0   = now_s();
    uint64_t tx = dev_stats(ini).tx_packets;
    post_inline(1, 3);
    EXPECT_EQ(tx + 3, dev_stats(ini).tx_packets) << "not on the light path";
    dcx_wc_t wc[3];
    ASSERT_EQ(3, ini.poll(wc, 3, 20.0));
    EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, wc[0].status);
    EXPECT_EQ(1u, wc[0].wr_id);
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc[1].status);
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc[2].status);
    EXPECT_LT(now_s() - t0, 5.0);
    EXPECT_EQ(rexmit, dev_stats(ini).retransmits);
    EXPECT_EQ(1u, dev_stats(ini).table_completions);
}

/* The target stops with our inline SENDs unserved and our polls wait for
 * its ack line without the engine lock (soft_engine_poll_idle); then it
 * dies.  The ack timer still runs for those polls (our helper is stopped:
 * only they run our engine): the first SEND ends with RETRY_EXC_ERR at a
 * timeout (liveness, not retries), the rest are flushed, as when the
 * requester polls with the lock. */
TEST_F(soft_fast, peer_dies_while_polls_wait_bad_flow)
{
    const int polls = 2000;
    pid_t target    = start_target();
    ASSERT_EQ(0, open_initiator(ini));
    ASSERT_EQ(0,
              ini.reg(lbuf.data(), lbuf.size(), DCX_ACCESS_LOCAL_WRITE, &lmr));
    /* only our polls run our engine */
    soft_helper_stop(soft_dev(ini.dev));
    stop_child(target);
    uint64_t rexmit = dev_stats(ini).retransmits;
    post_inline(0, 3);
    dcx_wc_t wc[3];
    uint64_t locked = dev_stats(ini).locked_polls;
    for (int k = 0; k < polls; ++k) {
        ASSERT_EQ(0, dcx_cq_poll(ini.cq, 3, wc)) << "poll " << k;
    }
    /* a poll takes the lock for the first pass (the ack timer starts) and
     * when a timer (the prod of the stopped target) is due: a few, never
     * most of them */
    EXPECT_LT(dev_stats(ini).locked_polls - locked, (uint64_t)polls / 4);

    kill_child(target);
    int status;
    EXPECT_EQ(target, waitpid(target, &status, 0));
    children.clear();
    ASSERT_EQ(3, ini.poll(wc, 3, 20.0));
    EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, wc[0].status);
    EXPECT_EQ(0u, wc[0].wr_id);
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc[1].status);
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc[2].status);
    EXPECT_EQ(rexmit, dev_stats(ini).retransmits);
    EXPECT_EQ(0u, dev_stats(ini).table_completions);
}

/* A fault rule set in the middle of a stream: the light path steps aside
 * (the dropped SEND is retransmitted, acknowledged by packet), nothing is
 * lost or reordered, and once the rule is cleared the table is used
 * again. */
TEST_F(soft_fast, fault_rule_mid_stream)
{
    sh->tp.nrecv = 48;
    start();
    post_inline(0, 16);
    dcx_soft_fault_t f;
    memset(&f, 0, sizeof(f));
    f.type   = DCX_SOFT_FAULT_DROP;
    f.opcode = DCX_WR_SEND;
    f.count  = 1;
    ASSERT_EQ(0, dcx_soft_fault_inject(ini.dev, &f));
    post_inline(16, 16);
    expect_in_order(0, 32);
    dcx_soft_stats_t st = dev_stats(ini);
    EXPECT_GE(st.retransmits, 1u);
    EXPECT_GE(st.rx_packets, 1u) << "no ACK packet under the rule";
    EXPECT_LE(st.table_completions, 16u);

    dcx_soft_fault_clear(ini.dev);
    post_inline(32, 16);
    expect_in_order(32, 16);
    EXPECT_EQ(st.table_completions + 16, dev_stats(ini).table_completions);
    expect_received(48);
    EXPECT_TRUE(stop_children());
}

/* RNR on the light path: the target has no receive; the SENDs wait, are
 * retried and complete in order once receives come. */
TEST_F(soft_fast, rnr_then_table_acks)
{
    sh->tp.nrecv = 0;
    start();
    post_inline(0, 4);
    dcx_wc_t wc;
    EXPECT_EQ(0, ini.poll(&wc, 1, 0.1)); /* RNR: retried, not done */
    __atomic_store_n(&sh->post_more, 8, __ATOMIC_RELEASE);
    expect_in_order(0, 4);
    dcx_soft_stats_t st = dev_stats(ini);
    EXPECT_GE(st.rnr_retries, 1u);
    /* the retried ones went by the general path (ACK packets); once the
     * RNR wait is over, the light path is back */
    post_inline(4, 4);
    expect_in_order(4, 4);
    expect_received(8);
    EXPECT_EQ(st.table_completions + 4, dev_stats(ini).table_completions);
    EXPECT_TRUE(stop_children());
}
