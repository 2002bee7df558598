/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx's mlx5 backend's tag matching (src/mlx5/mlx5_xrq.c) through the
 * device layer, on the emulated ConnectX: a DCX_SRQ_TM SRQ (a DEVX XRQ, its
 * command QP and a DEVX DCT) whose list is changed by dcx_srq_tm_post and
 * whose completions are read from CQ memory.  Good flows: an expected eager
 * message into its entry's buffer, tag and context in the completion; a
 * delete; unsignalled operations retiring behind signalled ones; slots
 * reused once their CQEs are polled.  Bad flows: a full list (ENOMEM), a
 * delete of a handle the device does not own (EINVAL), too many
 * operations outstanding (ENOMEM), a message longer than its entry's
 * buffer (LOC_LEN_ERR, nothing written), a DCT whose receive CQ is not
 * the SRQ's (EINVAL); and an unexpected message holding back a receive
 * posted after it until a SYNC brings software's count to the device's.
 */
#include "emu_mlx5_fixture.h"

#include <vector>

class emu_mlx5_tm : public emu_mlx5_fixture {
protected:
    enum {
        TAGS = 3, /* a list of 4 slots */
        OPS  = 8
    };

    void SetUp() override
    {
        emu_mlx5_fixture::SetUp();
        if (HasFatalFailure()) {
            return;
        }
        const dcx_dev_caps_t *caps = dcx_dev_caps(m_dev);
        ASSERT_TRUE(caps->flags & DCX_CAP_TM);
        EXPECT_EQ(1023u, caps->tm_max_tags);
        EXPECT_EQ(64u, caps->tm_max_rndv_hdr);
        EXPECT_EQ(1u, caps->tm_max_sge);
        EXPECT_LE((uint32_t)OPS, caps->tm_max_ops);

        ASSERT_EQ(0, dcx_cq_create(m_dev, 256, &m_tm_cq));
        dcx_srq_attr_t sattr;
        memset(&sattr, 0, sizeof(sattr));
        sattr.type        = DCX_SRQ_TM;
        sattr.max_wr      = 16;
        sattr.max_sge     = 1;
        sattr.cq          = m_tm_cq;
        sattr.tm_max_tags = TAGS;
        sattr.tm_max_ops  = OPS;
        ASSERT_EQ(0, dcx_srq_create(m_pd, &sattr, &m_tm_srq));
        EXPECT_EQ((uint32_t)TAGS, m_tm_srq->tm_max_tags);
        EXPECT_EQ((uint32_t)OPS, m_tm_srq->tm_max_ops);
        for (uint64_t i = 0; i < 8; ++i) {
            dcx_sge_t s = {(uint64_t)(uintptr_t)unexp_buf(i), 256, m_mr->lkey};
            ASSERT_EQ(0, dcx_srq_post_recv(m_tm_srq, 1000 + i, &s, 1));
        }

        ASSERT_NO_FATAL_FAILURE(dct_create(m_tm_cq, m_tm_srq, &m_tm_dct,
                                           DCX_ACCESS_REMOTE_WRITE));
    }

    void TearDown() override
    {
        recv_side_destroy(m_tm_cq, m_tm_srq, m_tm_dct);
        emu_mlx5_fixture::TearDown();
    }

    char *unexp_buf(uint64_t i) { return m_buf + 2048 + 256 * i; }
    char *entry_buf(uint32_t i) { return m_buf + 6144 + 256 * i; }

    /* An operation; its return (the ADD's handle in *handle_p) */
    int op(uint8_t opcode, uint64_t wr_id, uint8_t flags, uint64_t tag = 0,
           uint32_t len = 0, uint32_t *handle_p = nullptr,
           uint16_t unexp_cnt = 0, uint32_t entry = 0)
    {
        dcx_tm_op_t o;
        int ret;

        memset(&o, 0, sizeof(o));
        o.wr_id          = wr_id;
        o.opcode         = opcode;
        o.flags          = flags;
        o.unexpected_cnt = unexp_cnt;
        o.handle         = (handle_p != nullptr) ? *handle_p : 0;
        if (opcode == DCX_TM_OP_ADD) {
            o.num_sge    = 1;
            o.recv_wr_id = 0x500 + entry;
            o.tag        = tag;
            o.mask       = ~0ull;
            o.sge = {(uint64_t)(uintptr_t)entry_buf(entry), len, m_mr->lkey};
        }
        ret = dcx_srq_tm_post(m_tm_srq, &o);
        if ((ret == 0) && (handle_p != nullptr)) {
            *handle_p = o.handle;
        }
        return ret;
    }

    /* A signalled ADD of tag over entry buffer 'entry', its completion
     * polled; the handle */
    uint32_t add(uint64_t tag, uint32_t entry, uint32_t len = 256,
                 uint16_t unexp_cnt = 0)
    {
        uint32_t handle = ~0u;
        dcx_wc_t wc;

        EXPECT_EQ(0, op(DCX_TM_OP_ADD, 0x900 + entry,
                        DCX_TM_OPF_SIGNALED | DCX_TM_OPF_SYNC, tag, len,
                        &handle, unexp_cnt, entry));
        EXPECT_TRUE(poll_one(m_tm_cq, &wc));
        EXPECT_EQ(DCX_WC_TM_ADD, wc.opcode);
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        EXPECT_EQ(0x900u + entry, wc.wr_id);
        return handle;
    }

    /* An eager message TMH(EAGER, ctx, tag) + len bytes of 'fill' to the
     * TM DCT; its send completes */
    void send_eager(uint64_t tag, uint32_t ctx, uint32_t len, char fill)
    {
        char *msg   = m_buf + 1024;
        dcx_sge_t s = {(uint64_t)(uintptr_t)msg, DCX_TM_TMH_LEN + len,
                       m_mr->lkey};
        dcx_send_wr_t wr;
        dcx_wc_t wc;

        dcx_tmh_pack(msg, DCX_TMH_EAGER, ctx, tag);
        memset(msg + DCX_TM_TMH_LEN, fill, len);
        memset(&wr, 0, sizeof(wr));
        wr.wr_id       = 77;
        wr.opcode      = DCX_WR_SEND;
        wr.flags       = DCX_SEND_SIGNALED;
        wr.num_sge     = 1;
        wr.sg_list     = &s;
        wr.dest.ah     = m_ah;
        wr.dest.dctn   = m_tm_dct->qp_num;
        wr.dest.dc_key = emu_mlx5::KEY;
        ASSERT_EQ(0, dcx_qp_post_send(m_dci, &wr));
        ASSERT_TRUE(poll_one(m_tx_cq, &wc));
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    }

    dcx_cq_t *m_tm_cq   = nullptr;
    dcx_srq_t *m_tm_srq = nullptr;
    dcx_qp_t *m_tm_dct  = nullptr;
};

TEST_F(emu_mlx5_tm, expected_eager_into_entry_buffer)
{
    dcx_wc_t wc;

    memset(entry_buf(0), 0, 256);
    add(0x1234, 0);
    send_eager(0x1234, 0xc0de, 40, 'e');
    ASSERT_TRUE(poll_one(m_tm_cq, &wc));
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID, wc.flags);
    EXPECT_EQ(0x500u, wc.wr_id);
    EXPECT_EQ(40u, wc.byte_len);
    EXPECT_EQ(0x1234u, wc.tm_tag);
    EXPECT_EQ(0xc0deu, wc.tm_priv);
    EXPECT_EQ(m_tm_dct->qp_num, wc.qp_num);
    EXPECT_EQ('e', entry_buf(0)[0]);
    EXPECT_EQ('e', entry_buf(0)[39]);
    EXPECT_EQ(0, entry_buf(0)[40]);
}

/* The list holds tm_max_tags entries: the next ADD is ENOMEM; a slot
 * whose entry was consumed is free again once its completion is polled */
TEST_F(emu_mlx5_tm, full_list_bad_flow)
{
    dcx_wc_t wc;
    uint32_t h = 0;

    for (uint32_t i = 0; i < TAGS; ++i) {
        add(0x100 + i, i);
    }
    EXPECT_EQ(ENOMEM,
              op(DCX_TM_OP_ADD, 1, DCX_TM_OPF_SIGNALED, 0x200, 64, &h, 0, 3));
    send_eager(0x101, 1, 8, 'x');
    ASSERT_TRUE(poll_one(m_tm_cq, &wc));
    EXPECT_EQ(0x501u, wc.wr_id);
    /* entry 1's slot is free again: one ADD fits, then the list is full */
    add(0x200, 3);
    EXPECT_EQ(ENOMEM,
              op(DCX_TM_OP_ADD, 1, DCX_TM_OPF_SIGNALED, 0x300, 64, &h, 0, 1));
    send_eager(0x200, 2, 8, 'y');
    ASSERT_TRUE(poll_one(m_tm_cq, &wc));
    EXPECT_EQ(0x503u, wc.wr_id);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID, wc.flags);
}

/* DEL of a listed entry succeeds and the message goes unexpected; DEL of
 * a handle removed, consumed or never given is EINVAL */
TEST_F(emu_mlx5_tm, delete_and_unowned_handle_bad_flow)
{
    dcx_wc_t wc;
    uint32_t h = add(0x77, 0), h2, bad = TAGS + 7;

    ASSERT_EQ(0, op(DCX_TM_OP_DEL, 0x44, DCX_TM_OPF_SIGNALED, 0, 0, &h));
    EXPECT_EQ(EINVAL, op(DCX_TM_OP_DEL, 0x45, DCX_TM_OPF_SIGNALED, 0, 0, &h))
        << "a second DEL of one entry";
    ASSERT_TRUE(poll_one(m_tm_cq, &wc));
    EXPECT_EQ(DCX_WC_TM_DEL, wc.opcode);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(0x44u, wc.wr_id);
    EXPECT_EQ(EINVAL, op(DCX_TM_OP_DEL, 0x46, DCX_TM_OPF_SIGNALED, 0, 0, &h))
        << "a removed entry";
    EXPECT_EQ(EINVAL, op(DCX_TM_OP_DEL, 0x47, DCX_TM_OPF_SIGNALED, 0, 0, &bad))
        << "a handle out of the list";

    send_eager(0x77, 3, 16, 'u');
    ASSERT_TRUE(poll_one(m_tm_cq, &wc));
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(0, wc.flags & (DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID));
    EXPECT_EQ(1000u, wc.wr_id); /* the first unexpected buffer */
    EXPECT_EQ(DCX_TM_TMH_LEN + 16, wc.byte_len);

    h2 = add(0x78, 1, 256, 1);
    send_eager(0x78, 4, 8, 'c');
    ASSERT_TRUE(poll_one(m_tm_cq, &wc));
    EXPECT_EQ(0x501u, wc.wr_id);
    EXPECT_EQ(EINVAL, op(DCX_TM_OP_DEL, 0x48, DCX_TM_OPF_SIGNALED, 0, 0, &h2))
        << "a consumed entry";
}

/* Unsignalled operations complete nothing; they retire in order, so that
 * tm_max_ops of them outstanding is ENOMEM until their CQEs are polled */
TEST_F(emu_mlx5_tm, operations_outstanding_bad_flow)
{
    dcx_wc_t wc;
    int i;

    for (i = 0; i < OPS; ++i) {
        ASSERT_EQ(0, op(DCX_TM_OP_SYNC, i, 0));
    }
    EXPECT_EQ(ENOMEM, op(DCX_TM_OP_SYNC, 99, DCX_TM_OPF_SIGNALED));
    /* their CQEs retire them and report nothing */
    for (int tries = 0; tries < 1000000; ++tries) {
        EXPECT_EQ(0, dcx_cq_poll(m_tm_cq, 1, &wc));
        if (op(DCX_TM_OP_SYNC, 100, DCX_TM_OPF_SIGNALED) == 0) {
            break;
        }
    }
    ASSERT_TRUE(poll_one(m_tm_cq, &wc));
    EXPECT_EQ(DCX_WC_TM_SYNC, wc.opcode);
    EXPECT_EQ(100u, wc.wr_id);
}

/* A message longer than its entry's buffer fails that receive and writes
 * nothing; the entry's slot is free again */
TEST_F(emu_mlx5_tm, message_longer_than_entry_bad_flow)
{
    dcx_wc_t wc;

    memset(entry_buf(0), 0x11, 256);
    add(0x31, 0, 8);
    send_eager(0x31, 1, 64, 'L');
    ASSERT_TRUE(poll_one(m_tm_cq, &wc));
    EXPECT_EQ(DCX_WC_LOC_LEN_ERR, wc.status);
    EXPECT_EQ(0x500u, wc.wr_id);
    for (int i = 0; i < 256; ++i) {
        ASSERT_EQ(0x11, entry_buf(0)[i]) << i;
    }
    for (uint32_t i = 0; i < TAGS; ++i) {
        add(0x40 + i, i);
    }
}

/* An unexpected message counted by the device holds back a receive
 * added with an older count; a SYNC with the count releases it */
TEST_F(emu_mlx5_tm, unexpected_then_phase_sync)
{
    dcx_wc_t wc;

    send_eager(0x55, 1, 8, 'a');
    ASSERT_TRUE(poll_one(m_tm_cq, &wc));
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(0, wc.flags & (DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID));
    EXPECT_EQ(1000u, wc.wr_id);

    add(0x55, 0, 256, 0); /* software's count 0, the device's 1 */
    send_eager(0x55, 2, 8, 'b');
    ASSERT_TRUE(poll_one(m_tm_cq, &wc));
    EXPECT_EQ(1001u, wc.wr_id) << "the held entry took the message";

    ASSERT_EQ(0, op(DCX_TM_OP_SYNC, 0x5, DCX_TM_OPF_SIGNALED | DCX_TM_OPF_SYNC,
                    0, 0, nullptr, 2));
    ASSERT_TRUE(poll_one(m_tm_cq, &wc));
    EXPECT_EQ(DCX_WC_TM_SYNC, wc.opcode);
    EXPECT_EQ(0, wc.flags & DCX_WC_FLAG_TM_SYNC_REQ);
    send_eager(0x55, 3, 8, 'c');
    ASSERT_TRUE(poll_one(m_tm_cq, &wc));
    EXPECT_EQ(0x500u, wc.wr_id);
    EXPECT_EQ(3u, wc.tm_priv);
    EXPECT_EQ('c', entry_buf(0)[0]);
}

TEST_F(emu_mlx5_tm, dct_on_another_cq_bad_flow)
{
    dcx_qp_attr_t qattr;
    dcx_qp_t *dct = nullptr;

    memset(&qattr, 0, sizeof(qattr));
    qattr.type    = DCX_QPT_DCT;
    qattr.recv_cq = m_rx_cq;
    qattr.srq     = m_tm_srq;
    qattr.dc_key  = emu_mlx5::KEY;
    EXPECT_EQ(EINVAL, dcx_qp_create(m_pd, &qattr, &dct));
    EXPECT_EQ(nullptr, dct);
}
