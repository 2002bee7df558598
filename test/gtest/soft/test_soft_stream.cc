/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: DCIs with stream channels.  Ordering within a stream only,
 * an error stopping only its stream, the errored-stream limit, stream
 * reset, whole-DCI recovery, and the refusals.
 */
#include "soft_fixture.h"

using namespace soft_test;

namespace {

const uint64_t KEY = 0x5743ea11ull;

/* A loopback node (its own DCT allows remote writes) with a region of
 * memory the DCT may write, and a DCI with streams */
struct stream_node {
    node n;
    std::vector<uint8_t> buf;
    dcx_mr_t *lmr = nullptr; /* buf: local */
    std::vector<uint8_t> dst;
    dcx_mr_t *rmr = nullptr; /* dst: the writes' target */
    std::vector<uint8_t> rbuf;
    dcx_mr_t *recv_mr = nullptr; /* rbuf: receives */
    dcx_qp_t *sdci    = nullptr;

    stream_node() : buf(1u << 16), dst(1u << 16), rbuf(1u << 16) {}

    int open(const std::string &fabric)
    {
        int ret;

        if (((ret = open_loopback(n, fabric, KEY, buf, &lmr)) != 0) ||
            ((ret = n.reg(dst.data(), dst.size(),
                          DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE,
                          &rmr)) != 0)) {
            return ret;
        }
        return n.reg(rbuf.data(), rbuf.size(), DCX_ACCESS_LOCAL_WRITE,
                     &recv_mr);
    }

    static dcx_qp_attr_t attr(dcx_cq_t *cq, uint8_t log_conc, uint8_t log_err)
    {
        dcx_qp_attr_t a;

        memset(&a, 0, sizeof(a));
        a.type               = DCX_QPT_DCI;
        a.send_cq            = cq;
        a.max_send_wr        = 64;
        a.max_send_sge       = 1;
        a.max_inline         = 64;
        a.dci_streams        = 1;
        a.log_num_concurrent = log_conc;
        a.log_num_errored    = log_err;
        return a;
    }

    int make_streams(uint8_t log_conc, uint8_t log_err, uint8_t rnr_retry = 0)
    {
        dcx_qp_attr_t a = attr(n.cq, log_conc, log_err);

        if (rnr_retry != 0) {
            a.timeout   = 14;
            a.retry_cnt = 7;
            a.rnr_retry = rnr_retry;
        }
        return dcx_qp_create(n.pd, &a, &sdci);
    }

    /* A signalled 64-byte WRITE of buf[slot] to dst[slot] on stream */
    dcx_send_wr_t write_wr(uint16_t stream, uint64_t wr_id, unsigned slot,
                           dcx_sge_t *s, bool bad_rkey = false)
    {
        s->addr         = (uintptr_t)buf.data() + slot * 64;
        s->length       = 64;
        s->lkey         = lmr->lkey;
        dcx_send_wr_t w = n.loop_wr(DCX_WR_RDMA_WRITE, KEY, s,
                                    rmr->rkey ^ (bad_rkey ? 0x7700u : 0u),
                                    (uintptr_t)dst.data() + slot * 64);
        w.wr_id         = wr_id;
        w.stream_id     = stream;
        return w;
    }

    int post_write(uint16_t stream, uint64_t wr_id, unsigned slot,
                   bool bad_rkey = false)
    {
        dcx_sge_t s;
        dcx_send_wr_t w = write_wr(stream, wr_id, slot, &s, bad_rkey);

        memset(buf.data() + slot * 64, (int)(wr_id & 0xff), 64);
        return dcx_qp_post_send(sdci, &w);
    }

    bool written(unsigned slot, uint64_t wr_id) const
    {
        for (unsigned i = 0; i < 64; ++i) {
            if (dst[slot * 64 + i] != (uint8_t)(wr_id & 0xff)) {
                return false;
            }
        }
        return true;
    }

    /* polls until the send completion of wr_id (receive completions of
     * the DCT, which shares the CQ, are skipped) */
    bool wait_wc(uint64_t wr_id, dcx_wc_t *out, double timeout_s = 20.0)
    {
        for (auto it = seen.begin(); it != seen.end(); ++it) {
            if (it->wr_id == wr_id) {
                *out = *it;
                seen.erase(it);
                return true;
            }
        }
        dcx_wc_t wc;
        while (n.poll(&wc, 1, timeout_s) == 1) {
            if ((wc.opcode == DCX_WC_RECV) || (wc.qp_num != sdci->qp_num)) {
                recvs.push_back(wc);
                continue;
            }
            if (wc.wr_id == wr_id) {
                *out = wc;
                return true;
            }
            seen.push_back(wc);
        }
        return false;
    }

    std::vector<dcx_wc_t> seen;
    std::vector<dcx_wc_t> recvs;

    ~stream_node()
    {
        if (sdci != nullptr) {
            dcx_qp_destroy(sdci);
        }
    }
};

} // namespace

TEST_F(soft, dci_streams_caps)
{
    node n;
    ASSERT_EQ(0, n.open(fabric.c_str()));
    const dcx_dev_caps_t *caps = dcx_dev_caps(n.dev);
    EXPECT_TRUE(caps->flags & DCX_CAP_DCI_STREAMS);
    EXPECT_EQ(6u, caps->dci_streams_log_max);
    EXPECT_EQ(6u, caps->dci_errored_log_max);
}

/* Every stream carries its writes; completions name the DCI */
TEST_F(soft, dci_streams_all_streams_write)
{
    stream_node s;
    ASSERT_EQ(0, s.open(fabric));
    ASSERT_EQ(0, s.make_streams(3, 3));
    EXPECT_EQ(8u, s.sdci->num_streams);
    EXPECT_EQ(DCX_QPS_RTS, s.sdci->state);
    for (unsigned i = 0; i < 64; ++i) {
        ASSERT_EQ(0, s.post_write(i % 8, 100 + i, i)) << i;
    }
    for (unsigned i = 0; i < 64; ++i) {
        dcx_wc_t wc;
        ASSERT_TRUE(s.wait_wc(100 + i, &wc)) << i;
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        EXPECT_EQ(DCX_WC_RDMA_WRITE, wc.opcode);
        EXPECT_EQ(s.sdci->qp_num, wc.qp_num);
        EXPECT_TRUE(s.written(i, 100 + i)) << i;
    }
}

/* Within a stream, completions come in posting order */
TEST_F(soft, dci_streams_order_within_stream)
{
    stream_node s;
    ASSERT_EQ(0, s.open(fabric));
    ASSERT_EQ(0, s.make_streams(1, 1));
    for (unsigned i = 0; i < 40; ++i) {
        ASSERT_EQ(0, s.post_write(i & 1, 200 + i, i)) << i;
    }
    uint64_t last[2] = {0, 0};
    for (unsigned got = 0; got < 40;) {
        dcx_wc_t wc;
        ASSERT_EQ(1, s.n.poll(&wc, 1, 20.0));
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
        unsigned stream = (wc.wr_id - 200) & 1;
        EXPECT_GT(wc.wr_id, last[stream]);
        last[stream] = wc.wr_id;
        ++got;
    }
}

/* A stream whose SEND waits for a receive (RNR) does not hold back the
 * others: on a DCI without streams the write would wait behind it */
TEST_F(soft, dci_streams_blocked_stream_does_not_block_others)
{
    stream_node s;
    ASSERT_EQ(0, s.open(fabric));
    ASSERT_EQ(0, s.make_streams(1, 1, 7 /* RNR retries forever */));

    dcx_sge_t sg;
    sg.addr            = (uintptr_t)s.buf.data();
    sg.length          = 16;
    sg.lkey            = s.lmr->lkey;
    dcx_send_wr_t send = s.n.loop_wr(DCX_WR_SEND, KEY, &sg, 0, 0);
    send.wr_id         = 1;
    send.stream_id     = 0;
    ASSERT_EQ(0, dcx_qp_post_send(s.sdci, &send));
    ASSERT_EQ(0, s.post_write(1, 2, 3));

    dcx_wc_t wc;
    ASSERT_TRUE(s.wait_wc(2, &wc));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_TRUE(s.written(3, 2));
    /* the SEND is still waiting for its receive */
    dcx_wc_t more;
    EXPECT_EQ(0, s.n.poll(&more, 1, 0.05));

    dcx_sge_t rs;
    rs.addr   = (uintptr_t)s.rbuf.data();
    rs.length = 64;
    rs.lkey   = s.recv_mr->lkey;
    ASSERT_EQ(0, dcx_srq_post_recv(s.n.srq, 77, &rs, 1));
    ASSERT_TRUE(s.wait_wc(1, &wc));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
}

/* An error stops only its stream: its later WR is flushed, the other
 * streams go on, the DCI stays in RTS; a reset returns the stream */
TEST_F(soft, dci_streams_error_stops_one_stream_bad_flow)
{
    stream_node s;
    ASSERT_EQ(0, s.open(fabric));
    ASSERT_EQ(0, s.make_streams(2, 1)); /* 4 streams, 2 errored allowed */

    ASSERT_EQ(0, s.post_write(1, 10, 0, true /* bad rkey */));
    ASSERT_EQ(0, s.post_write(1, 11, 1));
    dcx_wc_t wc;
    ASSERT_TRUE(s.wait_wc(10, &wc));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, wc.status);
    ASSERT_TRUE(s.wait_wc(11, &wc));
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc.status);
    EXPECT_EQ(DCX_QPS_RTS, s.sdci->state);

    /* the stream stays stopped: a later post to it is flushed */
    ASSERT_EQ(0, s.post_write(1, 12, 2));
    ASSERT_TRUE(s.wait_wc(12, &wc));
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc.status);

    /* others go on */
    for (uint16_t st : {0, 2, 3}) {
        ASSERT_EQ(0, s.post_write(st, 20 + st, 10 + st));
        ASSERT_TRUE(s.wait_wc(20 + st, &wc));
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status) << st;
        EXPECT_TRUE(s.written(10 + st, 20 + st));
    }

    /* reset: the stream works again; a healthy stream's reset is a no-op */
    ASSERT_EQ(0, dcx_qp_stream_reset(s.sdci, 1));
    ASSERT_EQ(0, dcx_qp_stream_reset(s.sdci, 0));
    ASSERT_EQ(0, s.post_write(1, 30, 20));
    ASSERT_TRUE(s.wait_wc(30, &wc));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_TRUE(s.written(20, 30));

    /* a reset stream no longer counts: two more single errors stay below
     * the limit of 2 as long as each is reset */
    for (unsigned k = 0; k < 2; ++k) {
        ASSERT_EQ(0, s.post_write(3, 40 + k, 30, true));
        ASSERT_TRUE(s.wait_wc(40 + k, &wc));
        EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, wc.status);
        EXPECT_EQ(DCX_QPS_RTS, s.sdci->state);
        ASSERT_EQ(0, dcx_qp_stream_reset(s.sdci, 3));
    }
}

/* 2^log_num_errored streams in error at once: the whole DCI fails, every
 * stream flushes, a stream reset is refused, recovery brings all back */
TEST_F(soft, dci_streams_errored_limit_bad_flow)
{
    stream_node s;
    ASSERT_EQ(0, s.open(fabric));
    ASSERT_EQ(0, s.make_streams(2, 1)); /* the DCI fails at 2 errored */

    dcx_wc_t wc;
    ASSERT_EQ(0, s.post_write(0, 1, 0, true));
    ASSERT_TRUE(s.wait_wc(1, &wc));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_EQ(DCX_QPS_RTS, s.sdci->state);

    ASSERT_EQ(0, s.post_write(2, 2, 1, true));
    ASSERT_TRUE(s.wait_wc(2, &wc));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_EQ(DCX_QPS_ERR, s.sdci->state);

    /* every stream flushes now */
    ASSERT_EQ(0, s.post_write(3, 3, 2));
    ASSERT_TRUE(s.wait_wc(3, &wc));
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc.status);
    EXPECT_EQ(EOPNOTSUPP, dcx_qp_stream_reset(s.sdci, 0));

    ASSERT_EQ(0, dcx_qp_recover(s.sdci));
    EXPECT_EQ(DCX_QPS_RTS, s.sdci->state);
    for (uint16_t st = 0; st < 4; ++st) {
        ASSERT_EQ(0, s.post_write(st, 50 + st, 40 + st));
        ASSERT_TRUE(s.wait_wc(50 + st, &wc));
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status) << st;
    }
    /* the errored count started again: one error is a stream's only */
    ASSERT_EQ(0, s.post_write(1, 60, 50, true));
    ASSERT_TRUE(s.wait_wc(60, &wc));
    EXPECT_EQ(DCX_QPS_RTS, s.sdci->state);
}

/* log_num_errored 0: the first stream error fails the DCI */
TEST_F(soft, dci_streams_no_errored_stream_bad_flow)
{
    stream_node s;
    ASSERT_EQ(0, s.open(fabric));
    ASSERT_EQ(0, s.make_streams(1, 0));
    dcx_wc_t wc;
    ASSERT_EQ(0, s.post_write(1, 1, 0, true));
    ASSERT_TRUE(s.wait_wc(1, &wc));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_EQ(DCX_QPS_ERR, s.sdci->state);
}

/* dcx_qp_set_error on a DCI with streams flushes every stream; the
 * failing post of the soft device fails one stream only */
TEST_F(soft, dci_streams_set_error_and_failing_post_bad_flow)
{
    stream_node s;
    ASSERT_EQ(0, s.open(fabric));
    ASSERT_EQ(0, s.make_streams(1, 1));

    dcx_sge_t sg;
    dcx_send_wr_t w = s.write_wr(1, 7, 0, &sg);
    ASSERT_EQ(0, dcx_soft_qp_post_failing(s.sdci, &w, DCX_WC_REM_OP_ERR));
    dcx_wc_t wc;
    ASSERT_TRUE(s.wait_wc(7, &wc));
    EXPECT_EQ(DCX_WC_REM_OP_ERR, wc.status);
    EXPECT_EQ(DCX_QPS_RTS, s.sdci->state);
    ASSERT_EQ(0, s.post_write(0, 8, 1));
    ASSERT_TRUE(s.wait_wc(8, &wc));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);

    ASSERT_EQ(0, dcx_qp_set_error(s.sdci));
    EXPECT_EQ(DCX_QPS_ERR, s.sdci->state);
    ASSERT_EQ(0, s.post_write(0, 9, 2));
    ASSERT_TRUE(s.wait_wc(9, &wc));
    EXPECT_EQ(DCX_WC_WR_FLUSH_ERR, wc.status);
    ASSERT_EQ(0, dcx_qp_recover(s.sdci));
    ASSERT_EQ(0, s.post_write(1, 10, 3));
    ASSERT_TRUE(s.wait_wc(10, &wc));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
}

/* Refusals: each bad input gets an error, nothing crashes */
TEST_F(soft, dci_streams_refusals_bad_flow)
{
    stream_node s;
    ASSERT_EQ(0, s.open(fabric));

    /* more streams than the device has */
    dcx_qp_attr_t a = stream_node::attr(s.n.cq, 7, 0);
    dcx_qp_t *qp    = nullptr;
    EXPECT_EQ(EINVAL, dcx_qp_create(s.n.pd, &a, &qp));
    a = stream_node::attr(s.n.cq, 2, 7);
    EXPECT_EQ(EINVAL, dcx_qp_create(s.n.pd, &a, &qp));

    ASSERT_EQ(0, s.make_streams(2, 2));
    /* a stream the DCI does not have */
    EXPECT_EQ(EINVAL, s.post_write(4, 1, 0));
    EXPECT_EQ(EINVAL, dcx_qp_stream_reset(s.sdci, 4));
    /* a DCI without streams, a DCT */
    EXPECT_EQ(EINVAL, dcx_qp_stream_reset(s.n.dci, 0));
    EXPECT_EQ(EINVAL, dcx_qp_stream_reset(s.n.dct, 0));
    EXPECT_EQ(0u, s.n.dci->num_streams);
    /* recovering a DCI with streams that is not in error */
    EXPECT_EQ(EINVAL, dcx_qp_recover(s.sdci));
    /* the stream DCI still works */
    dcx_wc_t wc;
    ASSERT_EQ(0, s.post_write(3, 2, 0));
    ASSERT_TRUE(s.wait_wc(2, &wc));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
}

/* Each stream has a send queue of its own */
TEST_F(soft, dci_streams_queue_per_stream)
{
    stream_node s;
    ASSERT_EQ(0, s.open(fabric));
    ASSERT_EQ(0, s.make_streams(1, 1));
    unsigned posted[2] = {0, 0};
    for (uint16_t st = 0; st < 2; ++st) {
        for (unsigned i = 0; i < 64; ++i) {
            ASSERT_EQ(0, s.post_write(st, 1000 * (st + 1) + i, st * 64 + i))
                << st << " " << i;
            posted[st]++;
        }
        /* (completions are not polled: the queue stays full) */
        EXPECT_EQ(ENOMEM, s.post_write(st, 9999, 200));
    }
    std::vector<dcx_wc_t> wcs(128);
    ASSERT_EQ(128, s.n.poll(wcs.data(), 128, 20.0));
    for (auto &wc : wcs) {
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    }
}
