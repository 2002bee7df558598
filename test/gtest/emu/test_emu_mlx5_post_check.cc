/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx's mlx5 backend on the emulated ConnectX: a DCI's post refuses a WR
 * the DCI cannot take -- an opcode out of range, more sges than the DCI
 * has, no destination, on a DCI with streams a stream past its own -- with
 * EINVAL and one error line naming the reason, and posts nothing: the next
 * good WR is the one that completes.  A DCI without streams takes any
 * stream id (its one ring).  The checks are
 * one test on the post's path, the reason found only once it failed.
 */
#include "emu_mlx5_fixture.h"

#include <string>
#include <utility>
#include <vector>

namespace {

std::vector<std::string> g_lines;

void capture(dcx_log_level_t level, const char *, int, const char *msg)
{
    if (level <= DCX_LOG_ERROR) {
        g_lines.push_back(msg);
    }
}

} /* namespace */

class emu_mlx5_post_check : public emu_mlx5_fixture {
protected:
    /* A signalled 8-byte WRITE of m_buf to m_buf[4096] through the DCT */
    dcx_send_wr_t write_wr(uint64_t wr_id)
    {
        dcx_send_wr_t w;

        m_sge[0] = {(uint64_t)(uintptr_t)m_buf, 8, m_mr->lkey};
        m_sge[1] = m_sge[0];
        memset(&w, 0, sizeof(w));
        w.wr_id       = wr_id;
        w.opcode      = DCX_WR_RDMA_WRITE;
        w.flags       = DCX_SEND_SIGNALED;
        w.num_sge     = 1;
        w.sg_list     = m_sge;
        w.dest.ah     = m_ah;
        w.dest.dctn   = m_dct->qp_num;
        w.dest.dc_key = emu_mlx5::KEY;
        w.remote_addr = (uintptr_t)&m_buf[4096];
        w.rkey        = m_mr->rkey;
        return w;
    }

    /* w refused with EINVAL and exactly one error line holding 'why' */
    void expect_refused(const dcx_send_wr_t &w, const char *why)
    {
        g_lines.clear();
        dcx_log_set_handler(capture, DCX_LOG_WARN);
        int ret = dcx_qp_post_send(m_dci, &w);
        dcx_log_set_handler(nullptr, DCX_LOG_WARN);
        EXPECT_EQ(EINVAL, ret) << why;
        ASSERT_EQ(1u, g_lines.size()) << why;
        EXPECT_NE(std::string::npos, g_lines[0].find(why)) << g_lines[0];
    }

    /* w posted and its completion, successful, the only one: nothing
     * refused before it was posted */
    void expect_only_completion(const dcx_send_wr_t &w)
    {
        dcx_wc_t wc;

        ASSERT_EQ(0, dcx_qp_post_send(m_dci, &w));
        ASSERT_TRUE(poll_one(m_tx_cq, &wc));
        EXPECT_EQ(w.wr_id, wc.wr_id);
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        EXPECT_EQ(0, dcx_cq_poll(m_tx_cq, 1, &wc)) << "a refused WR completed";
    }

    dcx_sge_t m_sge[2];
};

TEST_F(emu_mlx5_post_check, refused_wr_posts_nothing_bad_flow)
{
    dcx_send_wr_t w;

    ASSERT_EQ(1u, m_dci->max_send_sge);
    ASSERT_EQ(0u, m_dci->num_streams);

    w        = write_wr(1);
    w.opcode = DCX_WR_OPCODE_LAST;
    expect_refused(w, "is not supported");

    w         = write_wr(2);
    w.num_sge = 2;
    expect_refused(w, "2 sge, at most 1");

    w         = write_wr(3);
    w.dest.ah = nullptr;
    expect_refused(w, "without a destination");

    /* a DCI without streams takes any stream id: its one ring */
    memset(&m_buf[4096], 0, 8);
    memset(m_buf, 0x3c, 8);
    w           = write_wr(4);
    w.stream_id = 7;
    expect_only_completion(w);
    EXPECT_EQ(0, memcmp(m_buf, &m_buf[4096], 8));
}

/* A DCI with streams refuses a stream past its own with one line */
TEST_F(emu_mlx5_post_check, stream_past_the_dcis_bad_flow)
{
    const dcx_dev_caps_t *caps = dcx_dev_caps(m_dev);
    dcx_qp_attr_t qattr;
    dcx_qp_t *dci = nullptr;
    dcx_send_wr_t w;

    if (!(caps->flags & DCX_CAP_DCI_STREAMS)) {
        GTEST_SKIP() << "the device reports no DCI streams";
    }
    memset(&qattr, 0, sizeof(qattr));
    qattr.type               = DCX_QPT_DCI;
    qattr.send_cq            = m_tx_cq;
    qattr.max_send_wr        = 16;
    qattr.max_send_sge       = 1;
    qattr.rnr_retry          = 7;
    qattr.dci_streams        = 1;
    qattr.log_num_concurrent = 1;
    ASSERT_EQ(0, dcx_qp_create(m_pd, &qattr, &dci));
    ASSERT_EQ(2u, dci->num_streams);
    std::swap(dci, m_dci);

    w           = write_wr(1);
    w.stream_id = 2;
    expect_refused(w, "stream 2, the DCI has 2 streams");

    w           = write_wr(2);
    w.stream_id = 1;
    expect_only_completion(w);

    std::swap(dci, m_dci);
    EXPECT_EQ(0, dcx_qp_destroy(dci));
}
