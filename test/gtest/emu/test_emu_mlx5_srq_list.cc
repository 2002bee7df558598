/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A list post (dcx_srq_post_recv_list) to an SRQ of dcx's mlx5 backend over
 * the emulated ConnectX, its queues written raw or through libmlx5, one or
 * two buffers per WQE: the receives complete in list order with their
 * wr_ids, each message lands in its receive's buffer (at most the list's
 * length), and a list longer than the room is posted up to the room, with
 * ENOMEM and the count said.
 */
#include "emu_mlx5_fixture.h"

#include <tuple>
#include <vector>

namespace {

const uint32_t SLOT     = 32; /* bytes per receive buffer */
const uint32_t SLOTS    = 32; /* of m_buf, from RECV_OFF */
const size_t RECV_OFF   = 6144;
const uint32_t MAX_WR   = 16;
const uint64_t WR_BASE  = 1000;
const uint32_t SEND_LEN = 16;

} /* namespace */

/* (raw queues, max_sge of the SRQ) */
class emu_mlx5_srq_list :
    public emu_mlx5_fixture,
    public ::testing::WithParamInterface<std::tuple<bool, uint32_t>> {
protected:
    void configure(dcx_dev_config_t *config) override
    {
        ASSERT_EQ(0, dcx_dev_config_set_num(config, "MLX5_RAW",
                                            std::get<0>(GetParam())));
    }

    void SetUp() override
    {
        emu_mlx5_fixture::SetUp();
        if (HasFatalFailure()) {
            return;
        }
        ASSERT_EQ(0, dcx_cq_create(m_dev, 64, &m_list_cq));
        ASSERT_NO_FATAL_FAILURE(srq_create(m_list_cq, MAX_WR,
                                           std::get<1>(GetParam()), 0,
                                           &m_list_srq));
        ASSERT_NO_FATAL_FAILURE(dct_create(m_list_cq, m_list_srq, &m_list_dct));
    }

    void TearDown() override
    {
        recv_side_destroy(m_list_cq, m_list_srq, m_list_dct);
        emu_mlx5_fixture::TearDown();
    }

    /* receive n's buffer: slot n % SLOTS from RECV_OFF */
    char *rbuf(uint64_t n) { return m_buf + RECV_OFF + SLOT * (n % SLOTS); }

    /* count receives n = first.., wr_id WR_BASE + n, buffers of 0xee */
    std::vector<dcx_recv_t> recvs(uint64_t first, unsigned count)
    {
        std::vector<dcx_recv_t> list(count);

        for (unsigned i = 0; i < count; ++i) {
            memset(rbuf(first + i), 0xee, SLOT);
            list[i].wr_id = WR_BASE + first + i;
            list[i].addr  = (uint64_t)(uintptr_t)rbuf(first + i);
            list[i].lkey  = m_mr->lkey;
        }
        return list;
    }

    /* A SEND of SEND_LEN bytes 0x40 + n + j to the list's DCT, completed,
     * and its receive: receive n, the bytes in its buffer, the rest of
     * the buffer untouched */
    void exchange(uint64_t n)
    {
        dcx_wc_t wc;

        for (uint32_t j = 0; j < SEND_LEN; ++j) {
            m_buf[j] = (char)(0x40 + n + j);
        }
        ASSERT_EQ(0, send(77, emu_mlx5::KEY, SEND_LEN, m_list_dct));
        ASSERT_TRUE(poll_one(m_tx_cq, &wc));
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
        ASSERT_TRUE(poll_one(m_list_cq, &wc));
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
        EXPECT_EQ(DCX_WC_RECV, wc.opcode);
        EXPECT_EQ(WR_BASE + n, wc.wr_id);
        EXPECT_EQ(SEND_LEN, wc.byte_len);
        EXPECT_EQ(0, memcmp(rbuf(n), m_buf, SEND_LEN)) << "receive " << n;
        for (uint32_t j = SEND_LEN; j < SLOT; ++j) {
            ASSERT_EQ((char)0xee, rbuf(n)[j]) << "receive " << n;
        }
    }

    dcx_cq_t *m_list_cq   = nullptr;
    dcx_srq_t *m_list_srq = nullptr;
    dcx_qp_t *m_list_dct  = nullptr;
};

/* Receives posted as lists, in several posts, complete in order */
TEST_P(emu_mlx5_srq_list, receives_complete_in_list_order)
{
    unsigned posted = 0;
    uint64_t n      = 0;

    for (unsigned count : {1u, 5u, 8u}) {
        std::vector<dcx_recv_t> list = recvs(n, count);

        ASSERT_EQ(0, dcx_srq_post_recv_list(m_list_srq, list.data(), count,
                                            SLOT, &posted));
        ASSERT_EQ(count, posted);
        for (unsigned i = 0; i < count; ++i) {
            ASSERT_NO_FATAL_FAILURE(exchange(n++));
        }
    }
}

/* A list past the room is posted up to it; a receive that completed
 * makes room for one more */
TEST_P(emu_mlx5_srq_list, full_queue_takes_the_list_up_to_its_room)
{
    std::vector<dcx_recv_t> list = recvs(0, SLOTS);
    unsigned posted              = 0, room;

    ASSERT_EQ(ENOMEM, dcx_srq_post_recv_list(m_list_srq, list.data(), SLOTS,
                                             SLOT, &posted));
    ASSERT_GE(posted, m_list_srq->max_wr);
    ASSERT_LT(posted, SLOTS);
    room = posted;
    list = recvs(room, 1);
    EXPECT_EQ(ENOMEM, dcx_srq_post_recv_list(m_list_srq, list.data(), 1, SLOT,
                                             &posted));
    EXPECT_EQ(0u, posted);

    ASSERT_NO_FATAL_FAILURE(exchange(0));
    list = recvs(room, 2);
    EXPECT_EQ(ENOMEM, dcx_srq_post_recv_list(m_list_srq, list.data(), 2, SLOT,
                                             &posted));
    EXPECT_EQ(1u, posted);
    for (uint64_t n = 1; n <= room; ++n) {
        ASSERT_NO_FATAL_FAILURE(exchange(n));
    }
}

INSTANTIATE_TEST_SUITE_P(queues, emu_mlx5_srq_list,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(1u, 2u)));
