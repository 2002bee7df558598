/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DCI streams on the emulated ConnectX (mlx5dv_create_qp with
 * MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS, mlx5dv_wr_set_dc_addr_stream,
 * mlx5dv_dci_stream_id_reset), modelled by the soft device's stream
 * channels: order within a stream only, an error that stops its stream
 * alone, the one send queue the streams share.
 */
#include "emu_qp_fixture.h"

#include <errno.h>
#include <string.h>

namespace {

const struct mlx5dv_dci_streams four_streams = {2, 2}; /* 4, 4 errored */

} /* namespace */

class emu_streams_test : public emu_qp_test {
protected:
    struct ibv_qp *make_stream_dci(uint32_t max_send_wr = 64,
                                   uint8_t rnr_retry    = 7)
    {
        struct ibv_qp_cap cap = {max_send_wr, 0, 1, 0, 0};
        struct ibv_qp *qp     = create_dci(&cap, EMU_DCI_OPS, &four_streams);

        if ((qp != nullptr) &&
            (connect_dci(qp, IBV_QPS_RTS, 14, 7, rnr_retry) != 0)) {
            return nullptr;
        }
        return qp;
    }

    int post_on(struct ibv_qp *dci, uint64_t wr_id, int stream, int opcode,
                uint32_t rkey = 0, bool signaled = true)
    {
        return post(dci, wr_id, opcode, m_buf.data(), 8, m_mr->lkey,
                    (uintptr_t)m_buf.data() + 2048,
                    (rkey != 0) ? rkey : m_mr->rkey, EMU_DCT_KEY, false,
                    nullptr, 0, stream, signaled);
    }

    /* A signaled RDMA write on stream (to rkey, default the buffer's) and
     * its completion, which must have that status */
    void write_expect(struct ibv_qp *dci, uint64_t wr_id, int stream,
                      enum ibv_wc_status status, uint32_t rkey = 0)
    {
        emu_wc wc;

        ASSERT_EQ(0, post_on(dci, wr_id, stream, IBV_WR_RDMA_WRITE, rkey));
        ASSERT_TRUE(poll_one(m_tx_cq, &wc)) << wr_id;
        EXPECT_EQ(wr_id, wc.wr_id);
        EXPECT_EQ(status, wc.status) << wr_id;
    }

    int state(struct ibv_qp *qp)
    {
        struct ibv_qp_attr qa;
        struct ibv_qp_init_attr qi;

        return (ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi) == 0) ?
                   (int)qa.qp_state :
                   -1;
    }
};

TEST_F(emu_streams_test, create_bad_flow)
{
    struct mlx5dv_dci_streams too_many    = {7, 0}; /* the device has 2^6 */
    struct mlx5dv_dci_streams too_errored = {2, 7};
    struct ibv_qp_cap cap                 = {16, 0, 1, 0, 0};

    for (const struct mlx5dv_dci_streams *s : {&too_many, &too_errored}) {
        log_capture log;

        errno = 0;
        EXPECT_EQ(nullptr, create_dci(&cap, EMU_DCI_OPS, s));
        EXPECT_EQ(EINVAL, errno);
        EXPECT_EQ(1u, log.count());
    }
}

/* A stream that waits (RNR: no receive at the DCT, retried forever) does
 * not hold another stream's WRs, nor their completions or send queue
 * slots; it completes once receives come */
TEST_F(emu_streams_test, streams_do_not_wait_for_each_other)
{
    struct ibv_qp *dci = make_stream_dci();
    emu_wc wc;

    ASSERT_NE(nullptr, dci);
    ASSERT_EQ(0, post_on(dci, 1, 0, IBV_WR_SEND));
    /* stream 1: unsignaled writes, then a signaled one */
    for (uint64_t i = 0; i < 3; ++i) {
        ASSERT_EQ(0, post_on(dci, 10 + i, 1, IBV_WR_RDMA_WRITE, 0, false));
    }
    ASSERT_EQ(0, post_on(dci, 13, 1, IBV_WR_RDMA_WRITE));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(13u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
    post_recvs(1);
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

/* An error stops its stream only: the DCI stays in RTS, the stream's later
 * WRs are flushed, the other streams go on; mlx5dv_dci_stream_id_reset
 * returns the stream to service */
TEST_F(emu_streams_test, error_stops_its_stream_only)
{
    struct ibv_qp *dci = make_stream_dci();

    ASSERT_NE(nullptr, dci);
    {
        log_capture log; /* the soft device may say why it failed */
        write_expect(dci, 1, 2, IBV_WC_REM_ACCESS_ERR, m_mr->rkey + 77);
    }
    EXPECT_EQ(IBV_QPS_RTS, state(dci));
    write_expect(dci, 2, 2, IBV_WC_WR_FLUSH_ERR);
    write_expect(dci, 3, 3, IBV_WC_SUCCESS);
    EXPECT_EQ(0, mlx5dv_dci_stream_id_reset(dci, 2));
    write_expect(dci, 4, 2, IBV_WC_SUCCESS);
    /* the reset takes the id's low bits, as a WQE's: 7 is stream 3 of 4 */
    {
        log_capture log;
        write_expect(dci, 5, 7, IBV_WC_REM_ACCESS_ERR, m_mr->rkey + 77);
    }
    EXPECT_EQ(0, mlx5dv_dci_stream_id_reset(dci, 7));
    write_expect(dci, 6, 3, IBV_WC_SUCCESS);
}

/* Once 2^log_num_errored streams are in error at once the DCI goes to
 * ERR, and every stream flushes */
TEST_F(emu_streams_test, errored_streams_limit_fails_the_dci)
{
    struct ibv_qp *dci = make_stream_dci();

    ASSERT_NE(nullptr, dci);
    log_capture log;
    for (int s = 0; s < 4; ++s) {
        write_expect(dci, 1 + s, s, IBV_WC_REM_ACCESS_ERR, m_mr->rkey + 77);
        EXPECT_EQ((s < 3) ? IBV_QPS_RTS : IBV_QPS_ERR, state(dci)) << s;
    }
}

/* Each stream has its share of the send queue (max_send_wr / streams):
 * a full stream meets ENOMEM, the others still post */
TEST_F(emu_streams_test, each_stream_has_its_share_of_the_send_queue)
{
    struct ibv_qp *dci = make_stream_dci(8); /* 2 slots a stream */

    ASSERT_NE(nullptr, dci);
    ASSERT_EQ(0, post_on(dci, 1, 0, IBV_WR_RDMA_WRITE, 0, false));
    ASSERT_EQ(0, post_on(dci, 2, 0, IBV_WR_RDMA_WRITE, 0, false));
    EXPECT_EQ(ENOMEM, post_on(dci, 3, 0, IBV_WR_RDMA_WRITE));
    for (int s = 1; s < 4; ++s) {
        ASSERT_EQ(0, post_on(dci, 10 + s, s, IBV_WR_RDMA_WRITE, 0, false)) << s;
    }
}

/* An idle stream's last unsignaled WR, which nothing retires until that
 * stream signals again, holds no slot of another stream: with one send
 * queue freed up to the oldest outstanding WR, stream 0 ran out of slots
 * after a queue's worth of writes */
TEST_F(emu_streams_test, idle_stream_holds_no_other_streams_slots)
{
    struct ibv_qp *dci = make_stream_dci(8);

    ASSERT_NE(nullptr, dci);
    ASSERT_EQ(0, post_on(dci, 1, 1, IBV_WR_RDMA_WRITE, 0, false));
    for (uint64_t i = 0; i < 32; ++i) {
        write_expect(dci, 100 + i, 0, IBV_WC_SUCCESS);
    }
}

TEST_F(emu_streams_test, stream_rules_bad_flow)
{
    struct ibv_qp *dci   = make_stream_dci();
    struct ibv_qp *plain = make_dci();

    ASSERT_NE(nullptr, dci);
    ASSERT_NE(nullptr, plain);
    {
        /* an id past the DCI's streams: the HCA takes its low bits (stream
         * 4 of 4 is stream 0) */
        log_capture log;
        write_expect(dci, 1, 4, IBV_WC_SUCCESS);
        EXPECT_EQ(0u, log.count());
    }
    {
        /* a stream named on a DCI without streams: ignored, as the HCA
         * does with the control segment's field (perftest names them) */
        log_capture log;
        write_expect(plain, 2, 1, IBV_WC_SUCCESS);
        EXPECT_EQ(0u, log.count());
    }
    {
        /* a stream not in error: the HCA refuses its reset (4 is 0) */
        log_capture log;
        EXPECT_EQ(EINVAL, mlx5dv_dci_stream_id_reset(dci, 1));
        EXPECT_EQ(EINVAL, mlx5dv_dci_stream_id_reset(dci, 4));
        EXPECT_EQ(EOPNOTSUPP, mlx5dv_dci_stream_id_reset(plain, 0));
        EXPECT_EQ(EINVAL, mlx5dv_dci_stream_id_reset(m_dct, 0));
        EXPECT_EQ(4u, log.count());
    }
    /* stream 0 through the stream setter on a plain DCI is plain */
    write_expect(plain, 3, 0, IBV_WC_SUCCESS);
}
