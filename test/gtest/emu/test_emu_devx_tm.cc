/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag matching through DEVX, as UCX's dc_mlx5 drives it: an XRQ of the
 * tag-matching topology (CREATE_XRQ) on mlx5_1, whose tag list is changed
 * by list-operation WQEs (opcode 0x28: APPEND, REMOVE, NOP) on a command
 * QP connected to itself, and whose messages arrive on an RC QP from
 * mlx5_0.  Each completion is read from CQ memory: its app, app_op and
 * app_info, the TMH copied into a matched message's CQE, the XRQ WQE an
 * unexpected one took.  Bad flows: a list operation the device cannot
 * take (a full list, a slot that is not free, a QP with no tag list)
 * fails the command QP with one log line; a message longer than its
 * entry's buffer fails the receive and writes nothing; the commands'
 * bad parameters are refused with the PRM's status.
 */
#include "emu_devx_fixture.h"

#include <infiniband/tm_types.h>

namespace {

const uint32_t kLogList = 2; /* slots of the tag list: 4 */
const uint8_t kTmNop = 0x0, kTmAppend = 0x1, kTmRemove = 0x2;
const uint8_t kTmCqe = 0x80, kTmSwCnt = 0x40;
const uint8_t kAppConsumedMsg = 0xa, kAppUnexpected = 0x3, kAppNoTag = 0x4;
const uint8_t kAppAppend = 0x5, kAppRemove = 0x6, kAppNoop = 0x7;

} // namespace

class emu_devx_tm_test : public emu_devx_test {
protected:
    void SetUp() override
    {
        emu_devx_test::SetUp();
        make_rmp(&m_a);
        ASSERT_EQ(0u, make_xrq(&m_b, kLogList, false, 0x101, &m_b.rmpo));
        m_b.rmpn = m_xrqn;
        make_qp(&m_a);
        make_qp(&m_b);
        for (uint16_t op : {0x502, 0x503, 0x504}) {
            ASSERT_EQ(0, modify(&m_a, op, &m_b));
            ASSERT_EQ(0, modify(&m_b, op, &m_a));
        }
        /* the command QP: on the XRQ, its queue in umem of its own, its
         * record at dbr[8], connected to itself */
        m_cmd_sq.assign((64u << kLogSq) + 4096, 0);
        m_cmd_umem = mlx5dv_devx_umem_reg(m_b.ctx, m_cmd_sq.data(),
                                          m_cmd_sq.size(), kAccess);
        ASSERT_NE(nullptr, m_cmd_umem);
        create_qp(&m_b, m_cmd_umem->umem_id, 32, m_xrqn, &m_cmd, &m_cmdn);
        for (uint16_t op : {0x502, 0x503, 0x504}) {
            ASSERT_EQ(0, modify_qp(m_cmd, m_cmdn, op, m_cmdn, m_b.lid));
        }
        for (int slot : {0, 8, 16, 24}) {
            post_recv(&m_b, slot); /* XRQ WQEs 0..3 */
        }
    }

    void TearDown() override
    {
        if (m_cmd != nullptr) {
            EXPECT_EQ(0, mlx5dv_devx_obj_destroy(m_cmd));
        }
        if (m_cmd_umem != nullptr) {
            EXPECT_EQ(0, mlx5dv_devx_umem_dereg(m_cmd_umem));
        }
        emu_devx_test::TearDown();
    }

    /* CREATE_XRQ on s's CQ (or cqn) and receive ring (the RMP's
     * place), of topology topo_off >> 8 and offload topo_off & 0xf; the
     * command's status (0: made, *obj and m_xrqn set) */
    uint8_t make_xrq(side *s, uint32_t log_list, bool dc, uint32_t topo_off,
                     struct mlx5dv_devx_obj **obj, uint32_t cqn = 0)
    {
        const uint32_t wq = 1152;
        uint8_t in[336] = {}, out[16] = {};

        prm_set(in, 0, 16, 0x717);
        prm_set(in, 148, 4, topo_off >> 8);  /* topology */
        prm_set(in, 156, 4, topo_off & 0xf); /* offload */
        prm_set(in, 255, 1, dc);             /* dc */
        prm_set(in, 200, 24, cqn ? cqn : s->cq.dv.cqn);
        prm_set(in, 384, 4, log_list);     /* log_matching_list_sz */
        prm_set(in, wq, 4, 1);             /* wq_type: cyclic */
        prm_set(in, wq + 72, 24, s->pdn);  /* pd */
        prm_set64(in, wq + 128, 16);       /* dbr_addr: dbr[4] */
        prm_set(in, wq + 268, 4, 5);       /* log_wq_stride: 32 */
        prm_set(in, wq + 283, 5, kLogRmp); /* log_wq_sz */
        prm_set(in, wq + 320, 32, s->dbr_umem->umem_id);
        prm_set(in, wq + 352, 32, s->rmp_umem->umem_id);
        memset(out, 0xee, sizeof(out));
        *obj = mlx5dv_devx_obj_create(s->ctx, in, sizeof(in), out, sizeof(out));
        if (*obj != nullptr) {
            m_xrqn = prm_get(out, 72, 24);
            return 0;
        }
        EXPECT_EQ(EREMOTEIO, errno);
        return out[0];
    }

    /* A list operation on the command QP (no CQE of the send queue's) */
    void tm_op(uint8_t op, uint8_t flags, uint16_t index, uint16_t sw_cnt,
               uint64_t tag = 0, uint64_t mask = 0, const void *buf = nullptr,
               uint32_t len = 0)
    {
        uint8_t segs[48] = {};
        auto *seg        = (struct mlx5_wqe_tm_seg *)segs;

        seg->opcode      = (uint8_t)(op << 4);
        seg->flags       = flags;
        seg->index       = htobe16(index);
        seg->sw_cnt      = htobe16(sw_cnt);
        seg->append_tag  = htobe64(tag);
        seg->append_mask = htobe64(mask);
        if (op == kTmAppend) {
            struct mlx5_wqe_data_seg d = dseg(&m_b, buf, len);
            memcpy(segs + 32, &d, sizeof(d));
        }
        post_on(m_cmd_sq.data(), &m_cmd_pi, m_cmdn, &m_b.dbr[8], m_b.uar,
                MLX5_OPCODE_TAG_MATCHING, segs, (op == kTmAppend) ? 48 : 32, 0);
    }

    /* APPEND of tag/mask over len bytes at buf, naming the next head; its
     * CQE (app_op APPEND) checked, its phase count returned */
    uint16_t append(uint16_t next, uint64_t tag, uint64_t mask, void *buf,
                    uint32_t len, uint16_t sw_cnt = 0)
    {
        struct mlx5_cqe64 cqe;

        tm_op(kTmAppend, kTmCqe | kTmSwCnt, next, sw_cnt, tag, mask, buf, len);
        EXPECT_TRUE(raw_cq_poll(m_b.cq, &cqe));
        EXPECT_EQ(MLX5_CQE_NO_PACKET, cqe.op_own >> 4);
        EXPECT_EQ(1u, cqe.app);
        EXPECT_EQ(kAppAppend, cqe.app_op);
        EXPECT_EQ(m_xrqn, be32toh(cqe.srqn_uidx) & 0xffffff);
        return be16toh(cqe.tm_cqe.hw_phase_cnt);
    }

    /* a message from mlx5_0: TMH(opcode, app_ctx, tag) and len payload
     * bytes of value fill; its send completes */
    void send_tagged(uint8_t opcode, uint64_t tag, uint32_t app_ctx,
                     uint32_t len, uint8_t fill)
    {
        auto *msg = (uint8_t *)&m_a.buf[200];
        struct ibv_tmh tmh;
        struct mlx5_cqe64 cqe;

        memset(&tmh, 0, sizeof(tmh));
        tmh.opcode  = opcode;
        tmh.app_ctx = htobe32(app_ctx);
        tmh.tag     = htobe64(tag);
        memcpy(msg, &tmh, sizeof(tmh));
        memset(msg + sizeof(tmh), fill, len);
        struct mlx5_wqe_data_seg d = dseg(&m_a, msg, sizeof(tmh) + len);
        post(&m_a, MLX5_OPCODE_SEND, &d, sizeof(d));
        ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
        EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    }

    /* the next CQE of mlx5_1, a message's on the XRQ */
    struct mlx5_cqe64 msg_cqe(uint8_t app_op)
    {
        struct mlx5_cqe64 cqe;

        memset(&cqe, 0, sizeof(cqe));
        EXPECT_TRUE(raw_cq_poll(m_b.cq, &cqe));
        EXPECT_EQ(MLX5_CQE_RESP_SEND, cqe.op_own >> 4);
        EXPECT_EQ(1u, cqe.app);
        EXPECT_EQ(app_op, cqe.app_op);
        EXPECT_EQ(m_b.qpn, be32toh(cqe.sop_drop_qpn) & 0xffffff);
        /* the sender's LID, as in every receive CQE: UCX's DC flow
         * control answers a credit request to it */
        EXPECT_EQ(m_a.lid, be16toh(cqe.slid));
        EXPECT_NE(0u, be32toh(cqe.flags_rqpn) & 0xffffff);
        return cqe;
    }

    /* a failed list operation: the command QP's error CQE, one line */
    void expect_op_refused(const char *why)
    {
        struct mlx5_cqe64 cqe;

        ASSERT_TRUE(raw_cq_poll(m_b.cq, &cqe)) << why;
        EXPECT_EQ(MLX5_CQE_REQ_ERR, cqe.op_own >> 4) << why;
        EXPECT_EQ(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR,
                  ((struct mlx5_err_cqe *)&cqe)->syndrome)
            << why;
        EXPECT_EQ(m_cmdn, be32toh(cqe.sop_drop_qpn) & 0xffffff) << why;
    }

    std::vector<uint8_t> m_cmd_sq;
    struct mlx5dv_devx_umem *m_cmd_umem = nullptr;
    struct mlx5dv_devx_obj *m_cmd       = nullptr;
    uint32_t m_cmdn = 0, m_xrqn = 0;
    uint16_t m_cmd_pi = 0;
};

TEST_F(emu_devx_tm_test, capabilities)
{
    std::vector<uint8_t> out(16 + 4096);
    uint8_t in[16]     = {};
    const uint8_t *cap = out.data() + 16;
    struct ibv_device_attr_ex attr;

    prm_set(in, 0, 16, 0x100);
    prm_set(in, 48, 16, 1); /* general, current */
    ASSERT_EQ(0, mlx5dv_devx_general_cmd(m_b.ctx, in, sizeof(in), out.data(),
                                         out.size()));
    EXPECT_EQ(1u, prm_get(cap, 1520, 1));  /* tag_matching */
    EXPECT_EQ(0u, prm_get(cap, 1521, 1));  /* rndv_offload_rc */
    EXPECT_EQ(1u, prm_get(cap, 1522, 1));  /* rndv_offload_dc */
    EXPECT_EQ(10u, prm_get(cap, 1523, 5)); /* log_tag_matching_list_sz */
    ASSERT_EQ(0, ibv_query_device_ex(m_b.ctx, nullptr, &attr));
    EXPECT_EQ(1023u, attr.tm_caps.max_num_tags);
    EXPECT_EQ(64u, attr.tm_caps.max_rndv_hdr_size);
    EXPECT_EQ(1u, attr.tm_caps.max_sge);
    EXPECT_EQ(0u, attr.tm_caps.flags); /* no RC tag matching */
}

/* Matched eager messages go into their entries' buffers, the first
 * listed eligible entry first, masks applied; the CQE carries the TMH,
 * the slot and the payload's length */
TEST_F(emu_devx_tm_test, expected_eager_into_entry_buffers)
{
    struct mlx5_cqe64 cqe;
    auto *dst = (uint8_t *)&m_b.buf[100];

    memset(dst, 0, 256);
    EXPECT_EQ(0u, append(1, 0x11, ~0ull, dst, 64));          /* slot 0 */
    EXPECT_EQ(0u, append(2, 0x1200, 0xff00, dst + 64, 64));  /* slot 1 */
    EXPECT_EQ(0u, append(3, 0x1200, 0xff00, dst + 128, 64)); /* slot 2 */

    send_tagged(IBV_TMH_EAGER, 0x12ab, 0xc0de, 24, 0x5a);
    cqe = msg_cqe(kAppConsumedMsg);
    EXPECT_EQ(1u, be16toh(cqe.app_info)); /* the first of the two */
    EXPECT_EQ(24u, be32toh(cqe.byte_cnt));
    EXPECT_EQ(IBV_TMH_EAGER, cqe.tmh.opcode);
    EXPECT_EQ(0x12abull, be64toh(cqe.tmh.tag));
    EXPECT_EQ(0xc0deu, be32toh(cqe.tmh.app_ctx));
    EXPECT_EQ(0x5a, dst[64]);
    EXPECT_EQ(0x5a, dst[64 + 23]);
    EXPECT_EQ(0, dst[64 + 24]);

    send_tagged(IBV_TMH_EAGER, 0x11, 7, 40, 0x3c);
    cqe = msg_cqe(kAppConsumedMsg);
    EXPECT_EQ(0u, be16toh(cqe.app_info));
    EXPECT_EQ(40u, be32toh(cqe.byte_cnt));
    EXPECT_EQ(0x3c, dst[39]);

    send_tagged(IBV_TMH_EAGER, 0x12cd, 8, 8, 0x77);
    cqe = msg_cqe(kAppConsumedMsg);
    EXPECT_EQ(2u, be16toh(cqe.app_info));
    EXPECT_EQ(0x77, dst[128]);

    /* the consumed slots are free again: APPEND into the head (3),
     * naming slot 0 next */
    EXPECT_EQ(0u, append(0, 0x99, ~0ull, dst, 64));
    send_tagged(IBV_TMH_EAGER, 0x99, 9, 4, 0x21);
    cqe = msg_cqe(kAppConsumedMsg);
    EXPECT_EQ(3u, be16toh(cqe.app_info));
}

/* Unexpected and untagged messages take XRQ WQEs, whole; an entry added
 * while software's count lags the device's does not match until a NOP
 * brings the counts together */
TEST_F(emu_devx_tm_test, unexpected_no_tag_and_phase)
{
    struct mlx5_cqe64 cqe;
    auto *dst = (uint8_t *)&m_b.buf[100];

    send_tagged(IBV_TMH_EAGER, 0x404, 1, 20, 0x11);
    cqe = msg_cqe(kAppUnexpected);
    EXPECT_EQ(0u, be16toh(cqe.wqe_counter)); /* the XRQ's WQE 0 */
    EXPECT_EQ(36u, be32toh(cqe.byte_cnt));   /* TMH and payload */
    EXPECT_EQ(0ull, cqe.tmh.tag);            /* no TMH in the CQE */
    auto *got = (const struct ibv_tmh *)&m_b.buf[0];
    EXPECT_EQ(IBV_TMH_EAGER, got->opcode);
    EXPECT_EQ(0x404ull, be64toh(got->tag));
    EXPECT_EQ(0x11, ((const uint8_t *)&m_b.buf[0])[16]);

    send_tagged(IBV_TMH_NO_TAG, 0, 0, 8, 0x22);
    cqe = msg_cqe(kAppNoTag);
    EXPECT_EQ(1u, be16toh(cqe.wqe_counter));
    EXPECT_EQ(24u, be32toh(cqe.byte_cnt));

    /* software says it has seen no unexpected message; the device has
     * delivered one: the entry is held */
    EXPECT_EQ(1u, append(1, 0x55, ~0ull, dst, 64, 0));
    send_tagged(IBV_TMH_EAGER, 0x55, 2, 8, 0x33);
    cqe = msg_cqe(kAppUnexpected);
    EXPECT_EQ(2u, be16toh(cqe.wqe_counter));

    /* both seen: a NOP with the count releases the entry */
    tm_op(kTmNop, kTmCqe | kTmSwCnt, 0, 2);
    ASSERT_TRUE(raw_cq_poll(m_b.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_NO_PACKET, cqe.op_own >> 4);
    EXPECT_EQ(kAppNoop, cqe.app_op);
    EXPECT_EQ(2u, be16toh(cqe.tm_cqe.hw_phase_cnt));
    send_tagged(IBV_TMH_EAGER, 0x55, 3, 8, 0x44);
    cqe = msg_cqe(kAppConsumedMsg);
    EXPECT_EQ(0u, be16toh(cqe.app_info));
    EXPECT_EQ(0x44, dst[0]);
}

/* REMOVE takes a listed entry (success in its CQE), finds nothing in a
 * free or consumed slot (no success), and without TM_CQE_REQ completes
 * silently, the slot free for the next APPEND */
TEST_F(emu_devx_tm_test, remove_and_reuse_slots)
{
    struct mlx5_cqe64 cqe;
    auto *dst = (uint8_t *)&m_b.buf[100];

    append(1, 0x77, ~0ull, dst, 64); /* slot 0 */
    tm_op(kTmRemove, kTmCqe, 0, 0);
    ASSERT_TRUE(raw_cq_poll(m_b.cq, &cqe));
    EXPECT_EQ(kAppRemove, cqe.app_op);
    EXPECT_EQ(MLX5_TMC_SUCCESS, be32toh(cqe.tm_cqe.success));
    EXPECT_EQ(0u, be16toh(cqe.app_info));
    send_tagged(IBV_TMH_EAGER, 0x77, 1, 8, 0x10);
    msg_cqe(kAppUnexpected); /* nothing listed for it */

    tm_op(kTmRemove, kTmCqe, 0, 0); /* slot 0 again: empty */
    ASSERT_TRUE(raw_cq_poll(m_b.cq, &cqe));
    EXPECT_EQ(kAppRemove, cqe.app_op);
    EXPECT_EQ(0u, be32toh(cqe.tm_cqe.success));

    /* slot 1 (the head) filled, then removed without a CQE; the head
     * goes back to 0 and then to 1 again */
    append(0, 0x78, ~0ull, dst, 64, 1); /* slot 1 */
    tm_op(kTmRemove, kTmSwCnt, 1, 1);
    append(1, 0x79, ~0ull, dst, 64, 1); /* slot 0 */
    EXPECT_EQ(nullptr, cqe_at(m_b.cq)); /* no CQE for the REMOVE */
    send_tagged(IBV_TMH_EAGER, 0x78, 2, 8, 0x20);
    msg_cqe(kAppUnexpected);
    send_tagged(IBV_TMH_EAGER, 0x79, 3, 8, 0x30);
    cqe = msg_cqe(kAppConsumedMsg);
    EXPECT_EQ(0u, be16toh(cqe.app_info));
}

/* A message longer than its entry's buffer fails that receive (a local
 * length error) and writes nothing; the sender's SEND completes */
TEST_F(emu_devx_tm_test, message_longer_than_buffer_bad_flow)
{
    struct mlx5_cqe64 cqe;
    auto *dst = (uint8_t *)&m_b.buf[100];

    memset(dst, 0xee, 64);
    append(1, 0x31, ~0ull, dst, 8);
    send_tagged(IBV_TMH_EAGER, 0x31, 1, 32, 0x42);
    ASSERT_TRUE(raw_cq_poll(m_b.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_RESP_ERR, cqe.op_own >> 4);
    EXPECT_EQ(MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR,
              ((struct mlx5_err_cqe *)&cqe)->syndrome);
    EXPECT_EQ(1u, cqe.app); /* the entry's receive, in slot 0 */
    EXPECT_EQ(kAppConsumedMsg, cqe.app_op);
    EXPECT_EQ(0u, be16toh(cqe.app_info));
    for (int i = 0; i < 64; ++i) {
        ASSERT_EQ(0xee, dst[i]) << i;
    }
    /* the entry is gone and its slot free: APPEND at the head (1) */
    append(0, 0x32, ~0ull, dst, 64);
    send_tagged(IBV_TMH_EAGER, 0x32, 2, 16, 0x43);
    cqe = msg_cqe(kAppConsumedMsg);
    EXPECT_EQ(1u, be16toh(cqe.app_info));
}

/* A full list: the fourth APPEND of a 4-slot list can name no free slot
 * as the next head; the device does not take it */
TEST_F(emu_devx_tm_test, full_list_bad_flow)
{
    auto *dst = (uint8_t *)&m_b.buf[100];
    log_capture log;

    append(1, 1, ~0ull, dst, 8);
    append(2, 2, ~0ull, dst + 8, 8);
    append(3, 3, ~0ull, dst + 16, 8);
    tm_op(kTmAppend, kTmCqe, 0, 0, 4, ~0ull, dst + 24, 8);
    expect_op_refused("APPEND naming a listed slot");
    EXPECT_EQ(1u, log.count());
    /* what was listed still matches */
    send_tagged(IBV_TMH_EAGER, 2, 1, 8, 0x61);
    EXPECT_EQ(1u, be16toh(msg_cqe(kAppConsumedMsg).app_info));
}

TEST_F(emu_devx_tm_test, list_operation_without_tag_list_bad_flow)
{
    struct mlx5_cqe64 cqe;
    uint8_t segs[32] = {};
    log_capture log;

    /* mlx5_0's QP takes its receives from an RMP */
    ((struct mlx5_wqe_tm_seg *)segs)->opcode = kTmNop << 4;
    post(&m_a, MLX5_OPCODE_TAG_MATCHING, segs, sizeof(segs));
    ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ_ERR, cqe.op_own >> 4);
    EXPECT_EQ(1u, log.count());

    /* an unknown list operation on the command QP */
    tm_op(0x7, kTmCqe, 0, 0);
    expect_op_refused("list operation 7");
}

TEST_F(emu_devx_tm_test, xrq_commands_bad_flow)
{
    struct mlx5dv_devx_obj *obj = nullptr;
    uint8_t in[48]              = {}, out[16];

    struct {
        uint32_t log_list, topo_off, cqn;
        uint8_t status;
        const char *why;
    } bad[] = {
        {2, 0x201, 0, 0x03, "topology 2"},
        {2, 0x100, 0, 0x03, "tag matching without rendezvous offload"},
        {11, 0x101, 0, 0x03, "a list larger than the device's"},
        {0, 0x101, 0, 0x03, "a list of one slot"},
        {2, 0x101, 0xabcdef, 0x05, "a CQ nobody has"},
    };
    for (const auto &b : bad) {
        log_capture log;

        EXPECT_EQ(b.status,
                  make_xrq(&m_b, b.log_list, true, b.topo_off, &obj, b.cqn))
            << b.why;
        EXPECT_EQ(nullptr, obj) << b.why;
        EXPECT_EQ(1u, log.count()) << b.why;
    }

    /* DC parameters: refused on the XRQ made for RC, taken on one for DC */
    prm_set(in, 0, 16, 0x726);
    prm_set(in, 72, 24, m_xrqn);
    refused(
        [&](uint8_t *o) {
            return mlx5dv_devx_obj_modify(m_b.rmpo, in, sizeof(in), o, 16) == 0;
        },
        0x09, "DC parameters of an XRQ made for RC");
    prm_set(in, 0, 16, 0x727);
    refused(
        [&](uint8_t *o) {
            return mlx5dv_devx_obj_modify(m_b.rmpo, in, sizeof(in), o, 16) == 0;
        },
        0x02, "a command on an XRQ that is not modelled");
    ASSERT_EQ(0u, make_xrq(&m_a, kLogList, true, 0x101, &obj));
    prm_set(in, 0, 16, 0x726);
    prm_set(in, 72, 24, m_xrqn);
    memset(out, 0xee, sizeof(out));
    EXPECT_EQ(0, mlx5dv_devx_obj_modify(obj, in, sizeof(in), out, sizeof(out)));
    EXPECT_EQ(0u, out[0]);
    EXPECT_EQ(0, mlx5dv_devx_obj_destroy(obj));
}
