/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receives in place on dcx's mlx5 backend (DCX_CAP_RECV_IN_PLACE) over the
 * emulated ConnectX: CQs of 128-byte CQEs, into which the DCT of an SRQ
 * created with DCX_SRQ_F_IN_PLACE scatters a SEND of up to 64 bytes; the
 * completion points at the CQE, and the CQ's doorbell record stays at the
 * oldest such CQE the caller has not released (dcx_cq_release, or its
 * next poll), so that the HCA cannot write the slot while it is read.  A
 * longer message, or one to an SRQ that did not ask, is in its buffer.
 */
#include "emu_mlx5_fixture.h"
#include "emu_mlx5_peek.h"

#include <stdlib.h>

#include <vector>

class emu_mlx5_in_place : public emu_mlx5_fixture {
protected:
    void configure(dcx_dev_config_t *config) override
    {
        ASSERT_EQ(0, dcx_dev_config_set_num(config, "MLX5_RECV_IN_PLACE", 1));
    }

    void SetUp() override
    {
        emu_mlx5_fixture::SetUp();
        if (HasFatalFailure()) {
            return;
        }
        ASSERT_TRUE(dcx_dev_caps(m_dev)->flags & DCX_CAP_RECV_IN_PLACE);
        ASSERT_NE(nullptr, m_rx_cq->release);
        ASSERT_EQ(0, dcx_cq_create(m_dev, 64, &m_ip_cq));
        ASSERT_NO_FATAL_FAILURE(srq_create(m_ip_cq, 16, 1, DCX_SRQ_F_IN_PLACE,
                                           &m_ip_srq));
        for (uint64_t i = 0; i < 16; ++i) {
            post_recv(i);
        }
        ASSERT_NO_FATAL_FAILURE(dct_create(m_ip_cq, m_ip_srq, &m_ip_dct));
    }

    void TearDown() override
    {
        recv_side_destroy(m_ip_cq, m_ip_srq, m_ip_dct);
        emu_mlx5_fixture::TearDown();
    }

    /* receive i: 128 bytes of m_buf from 4096 + 128 * i, holding 0xee */
    char *rbuf(uint64_t i) { return m_buf + 4096 + 128 * (i % 16); }

    void post_recv(uint64_t i)
    {
        dcx_sge_t s = {(uint64_t)(uintptr_t)rbuf(i), 128, m_mr->lkey};

        memset(rbuf(i), 0xee, 128);
        ASSERT_EQ(0, dcx_srq_post_recv(m_ip_srq, i, &s, 1));
    }

    /* A SEND of len bytes (0x30 + j, from m_buf) to dct, completed */
    void send_len(uint32_t len, dcx_qp_t *dct)
    {
        dcx_wc_t wc;

        for (uint32_t j = 0; j < len; ++j) {
            m_buf[j] = (char)(0x30 + j);
        }
        ASSERT_EQ(0, send(77, emu_mlx5::KEY, len, dct));
        ASSERT_TRUE(poll_one(m_tx_cq, &wc));
        ASSERT_EQ(DCX_WC_SUCCESS, wc.status);
    }

    /* Waits (bounded) until the engine wrote n CQEs to cq, then takes
     * them in one poll */
    int poll_n(dcx_cq_t *cq, dcx_wc_t *wc, int n)
    {
        double deadline = emu_mlx5::now_sec() + emu_mlx5::WAIT_MS / 1000.0;

        while (!emu_mlx5_cq_written(cq, (uint32_t)n)) {
            if (emu_mlx5::now_sec() > deadline) {
                return 0;
            }
        }
        return dcx_cq_poll(cq, n, wc);
    }

    static uint32_t cq_ci(dcx_cq_t *cq) { return emu_mlx5_cq_ci(cq); }

    /* The consumer index the CQ's doorbell record gives the HCA */
    static uint32_t set_ci(dcx_cq_t *cq) { return emu_mlx5_cq_set_ci(cq); }

    void expect_in_place(const dcx_wc_t &wc, uint32_t len)
    {
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        EXPECT_EQ(DCX_WC_RECV, wc.opcode);
        ASSERT_TRUE(wc.flags & DCX_WC_FLAG_IN_PLACE) << len;
        EXPECT_EQ(len, wc.byte_len);
        EXPECT_EQ(0, memcmp(wc.data, m_buf, len)) << len;
        for (uint32_t j = 0; j < 128; ++j) {
            ASSERT_EQ((char)0xee, rbuf(wc.wr_id)[j]) << "buffer byte " << j;
        }
    }

    dcx_cq_t *m_ip_cq   = nullptr;
    dcx_srq_t *m_ip_srq = nullptr;
    dcx_qp_t *m_ip_dct  = nullptr;
};

/* An AM of 8 to 64 bytes arrives in place; the doorbell record stays at
 * its CQE until the release */
TEST_F(emu_mlx5_in_place, short_sends_complete_in_the_cqe)
{
    uint64_t next = 0;
    dcx_wc_t wc;

    for (uint32_t len : {8u, 16u, 32u, 33u, 64u}) {
        send_len(len, m_ip_dct);
        ASSERT_EQ(1, poll_n(m_ip_cq, &wc, 1));
        EXPECT_EQ(next, wc.wr_id);
        expect_in_place(wc, len);
        EXPECT_EQ(cq_ci(m_ip_cq) - 1, set_ci(m_ip_cq)) << len;
        dcx_cq_release(m_ip_cq);
        EXPECT_EQ(cq_ci(m_ip_cq), set_ci(m_ip_cq)) << len;
        dcx_cq_release(m_ip_cq); /* none left: nothing */
        EXPECT_EQ(cq_ci(m_ip_cq), set_ci(m_ip_cq)) << len;
        post_recv(next++);
    }
}

/* Two in one poll: released oldest first; the record moves one CQE each */
TEST_F(emu_mlx5_in_place, releases_move_the_doorbell_in_order)
{
    dcx_wc_t wc[2];
    uint32_t ci;

    send_len(8, m_ip_dct);
    send_len(24, m_ip_dct);
    ASSERT_EQ(2, poll_n(m_ip_cq, wc, 2));
    ci = cq_ci(m_ip_cq);
    expect_in_place(wc[0], 8);
    EXPECT_EQ(0, memcmp(wc[1].data, m_buf, 24));
    EXPECT_EQ(ci - 2, set_ci(m_ip_cq));
    dcx_cq_release(m_ip_cq);
    EXPECT_EQ(ci - 1, set_ci(m_ip_cq));
    dcx_cq_release(m_ip_cq);
    EXPECT_EQ(ci, set_ci(m_ip_cq));
}

/* The next poll releases what the last one returned, empty or not */
TEST_F(emu_mlx5_in_place, next_poll_releases)
{
    dcx_wc_t wc;

    send_len(8, m_ip_dct);
    ASSERT_EQ(1, poll_n(m_ip_cq, &wc, 1));
    expect_in_place(wc, 8);
    EXPECT_EQ(cq_ci(m_ip_cq) - 1, set_ci(m_ip_cq));
    EXPECT_EQ(0, dcx_cq_poll(m_ip_cq, 1, &wc));
    EXPECT_EQ(cq_ci(m_ip_cq), set_ci(m_ip_cq));
    dcx_cq_release(m_ip_cq); /* none left: nothing */
    EXPECT_EQ(cq_ci(m_ip_cq), set_ci(m_ip_cq));

    send_len(16, m_ip_dct);
    ASSERT_EQ(1, poll_n(m_ip_cq, &wc, 1));
    expect_in_place(wc, 16);
    send_len(65, m_ip_dct);
    ASSERT_EQ(1, poll_n(m_ip_cq, &wc, 1)); /* releases the 16 */
    EXPECT_FALSE(wc.flags & DCX_WC_FLAG_IN_PLACE);
    EXPECT_EQ(cq_ci(m_ip_cq), set_ci(m_ip_cq));
}

/* One poll returns at most emu_mlx5_ip_max() receives in place; the
 * short messages after them are copied from their CQEs into their
 * receives' buffers, each into its own */
TEST_F(emu_mlx5_in_place, past_the_most_in_place_copies_bad_flow)
{
    const uint32_t ip_max = emu_mlx5_ip_max();
    const uint32_t n = ip_max + 3, len = 8, blen = 16;
    std::vector<char> bufs(n * blen, (char)0xee);
    std::vector<dcx_wc_t> wc(n);
    dcx_cq_t *cq   = nullptr;
    dcx_srq_t *srq = nullptr;
    dcx_qp_t *dct  = nullptr;
    dcx_mr_t *mr   = nullptr;
    uint32_t i, j;

    ASSERT_EQ(0, dcx_cq_create(m_dev, 2 * n, &cq));
    ASSERT_NO_FATAL_FAILURE(srq_create(cq, n, 1, DCX_SRQ_F_IN_PLACE, &srq));
    ASSERT_EQ(0, dcx_mr_reg(m_pd, bufs.data(), bufs.size(),
                            DCX_ACCESS_LOCAL_WRITE, &mr));
    for (i = 0; i < n; ++i) {
        dcx_sge_t s = {(uint64_t)(uintptr_t)&bufs[i * blen], blen, mr->lkey};

        ASSERT_EQ(0, dcx_srq_post_recv(srq, i, &s, 1));
    }
    ASSERT_NO_FATAL_FAILURE(dct_create(cq, srq, &dct));

    for (i = 0; i < n; ++i) {
        m_buf[0] = (char)i; /* each message its own first byte */
        ASSERT_EQ(0, send(i, emu_mlx5::KEY, len, dct));
        ASSERT_TRUE(poll_one(m_tx_cq, &wc[0]));
        ASSERT_EQ(DCX_WC_SUCCESS, wc[0].status);
    }
    ASSERT_EQ((int)n, poll_n(cq, wc.data(), (int)n));
    for (i = 0; i < n; ++i) {
        const char *buf = &bufs[wc[i].wr_id * blen];

        ASSERT_EQ(DCX_WC_SUCCESS, wc[i].status) << i;
        ASSERT_EQ(len, wc[i].byte_len) << i;
        ASSERT_EQ(i, wc[i].wr_id);
        if (i < ip_max) {
            ASSERT_TRUE(wc[i].flags & DCX_WC_FLAG_IN_PLACE) << i;
            EXPECT_EQ((char)i, ((const char *)wc[i].data)[0]) << i;
            EXPECT_EQ((char)0xee, buf[0]) << "buffer of " << i << " written";
            continue;
        }
        ASSERT_FALSE(wc[i].flags & DCX_WC_FLAG_IN_PLACE) << i;
        EXPECT_EQ((char)i, buf[0]) << i;
        EXPECT_EQ(0, memcmp(buf + 1, m_buf + 1, len - 1)) << i;
        for (j = len; j < blen; ++j) {
            EXPECT_EQ((char)0xee, buf[j]) << "byte " << j << " of " << i;
        }
    }
    recv_side_destroy(nullptr, nullptr, dct);
    EXPECT_EQ(0, dcx_mr_dereg(mr));
    recv_side_destroy(cq, srq, nullptr);
}

/* Longer than a CQE holds: in the receive's buffer */
TEST_F(emu_mlx5_in_place, long_send_goes_to_the_buffer_bad_flow)
{
    dcx_wc_t wc;

    for (uint32_t len : {65u, 128u}) {
        send_len(len, m_ip_dct);
        ASSERT_EQ(1, poll_n(m_ip_cq, &wc, 1));
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        EXPECT_FALSE(wc.flags & DCX_WC_FLAG_IN_PLACE) << len;
        EXPECT_EQ(len, wc.byte_len);
        EXPECT_EQ(0, memcmp(rbuf(wc.wr_id), m_buf, len)) << len;
        EXPECT_EQ(cq_ci(m_ip_cq), set_ci(m_ip_cq));
    }
}

/* An SRQ that did not ask for receives in place: its DCT does not
 * scatter, the message is in the buffer */
TEST_F(emu_mlx5_in_place, srq_without_the_flag_bad_flow)
{
    dcx_wc_t wc;

    send_len(8, m_dct);
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_FALSE(wc.flags & DCX_WC_FLAG_IN_PLACE);
    EXPECT_EQ(8u, wc.byte_len);
    EXPECT_EQ(0, memcmp(m_buf + 4096 + 64 * wc.wr_id, m_buf, 8));
}

/* A message the DCT refuses (wrong DC key): the DCI's error, no receive
 * completion and no receive taken */
TEST_F(emu_mlx5_in_place, wrong_key_brings_no_receive_bad_flow)
{
    dcx_wc_t wc;

    ASSERT_EQ(0, send(5, emu_mlx5::KEY + 1, 8, m_ip_dct));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_NE(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(0, dcx_cq_poll(m_ip_cq, 1, &wc));
}

/* The capability only where the self-test at open sees the scatter:
 * neither with the knob off nor with libmlx5 told not to scatter; the
 * flag is then refused and CQs have no release */
static void expect_no_in_place(const char *knob, uint64_t value)
{
    dcx_dev_config_t *config;
    dcx_dev_info_t *list;
    dcx_dev_t *dev = nullptr;
    dcx_srq_attr_t sattr;
    unsigned count, i;
    dcx_srq_t *srq;
    dcx_pd_t *pd;
    dcx_cq_t *cq;

    ASSERT_EQ(0, dcx_dev_config_create(NULL, &config));
    ASSERT_EQ(0, dcx_dev_config_set_num(config, "SOFT_DEVICES", 0));
    if (knob != nullptr) {
        ASSERT_EQ(0, dcx_dev_config_set_num(config, knob, value));
    }
    ASSERT_EQ(0, dcx_dev_list(config, &list, &count));
    dcx_dev_config_destroy(config);
    for (i = 0; i < count; ++i) {
        if (!strcmp(list[i].name, "mlx5_0")) {
            EXPECT_EQ(0, dcx_dev_open(&list[i], &dev));
        }
    }
    dcx_dev_list_free(list);
    ASSERT_NE(nullptr, dev);
    EXPECT_FALSE(dcx_dev_caps(dev)->flags & DCX_CAP_RECV_IN_PLACE);
    ASSERT_EQ(0, dcx_pd_alloc(dev, &pd));
    ASSERT_EQ(0, dcx_cq_create(dev, 16, &cq));
    EXPECT_EQ(nullptr, cq->release);
    memset(&sattr, 0, sizeof(sattr));
    sattr.type    = DCX_SRQ_BASIC;
    sattr.max_wr  = 4;
    sattr.max_sge = 1;
    sattr.cq      = cq;
    sattr.flags   = DCX_SRQ_F_IN_PLACE;
    EXPECT_EQ(EOPNOTSUPP, dcx_srq_create(pd, &sattr, &srq));
    EXPECT_EQ(0, dcx_cq_destroy(cq));
    EXPECT_EQ(0, dcx_pd_free(pd));
    dcx_dev_close(dev);
}

TEST(emu_mlx5_in_place_off, knob_off_bad_flow)
{
    expect_no_in_place("MLX5_RECV_IN_PLACE", 0);
    expect_no_in_place(nullptr, 0); /* the default */
}

TEST(emu_mlx5_in_place_off, libmlx5_told_not_to_scatter_bad_flow)
{
    ASSERT_EQ(0, setenv("MLX5_SCATTER_TO_CQE", "0", 1));
    expect_no_in_place("MLX5_RECV_IN_PLACE", 1);
    unsetenv("MLX5_SCATTER_TO_CQE");
}
