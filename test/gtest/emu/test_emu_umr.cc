/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulation's indirect memory keys: mlx5dv_create_mkey and
 * mlx5dv_destroy_mkey, the UMR builders on a loopback RC QP, DEVX
 * QUERY_HCA_CAP, and DCI RDMA through configured keys.  Each rule with
 * a good case and a *_bad_flow case (src/emu/emu_mkey.c, emu_umr.c,
 * emu_devx.c say what rdma-core and the HCA do).
 */
#include "emu_qp_fixture.h"

#include <errno.h>
#include <string.h>

#include <algorithm>
#include <functional>
#include <numeric>

namespace {

#define EMU_UMR_ACCESS                                  \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define EMU_UMR_DV_OPS \
    (MLX5DV_QP_EX_WITH_MR_INTERLEAVED | MLX5DV_QP_EX_WITH_MR_LIST)

/* A field of 'width' bits at big-endian bit offset 'bit' */
uint32_t prm_get(const uint8_t *buf, uint32_t bit, uint32_t width)
{
    const uint8_t *d = buf + (bit / 32) * 4;
    uint32_t dword   = ((uint32_t)d[0] << 24) | ((uint32_t)d[1] << 16) |
                     ((uint32_t)d[2] << 8) | d[3];

    /* a mask of width bits, 32 included */
    return (dword >> (32 - (bit % 32) - width)) &
           (uint32_t)((1ull << width) - 1);
}

/* QUERY_HCA_CAP's input: opcode, op_mod */
void hca_cap_in(uint8_t *in, uint16_t opcode, uint16_t op_mod)
{
    memset(in, 0, 16);
    in[0] = (uint8_t)(opcode >> 8);
    in[1] = (uint8_t)opcode;
    in[6] = (uint8_t)(op_mod >> 8);
    in[7] = (uint8_t)op_mod;
}

} // namespace

class emu_umr_test : public emu_qp_test {
protected:
    void SetUp() override
    {
        emu_qp_test::SetUp();
        if (HasFatalFailure()) {
            return;
        }
        for (auto &t : m_tgt) {
            t.assign(4096, 0);
        }
        for (size_t i = 0; i < 2; ++i) {
            m_tgt_mr[i] = ibv_reg_mr(m_pd, m_tgt[i].data(), m_tgt[i].size(),
                                     EMU_UMR_ACCESS);
            ASSERT_NE(nullptr, m_tgt_mr[i]);
        }
        m_dci = make_dci();
        ASSERT_NE(nullptr, m_dci);
    }

    void TearDown() override
    {
        for (struct mlx5dv_mkey *mk : m_mkeys) {
            EXPECT_EQ(0, mlx5dv_destroy_mkey(mk));
        }
        for (struct ibv_mr *mr : m_tgt_mr) {
            if (mr != nullptr) {
                EXPECT_EQ(0, ibv_dereg_mr(mr));
            }
        }
        emu_qp_test::TearDown();
    }

    /* An RC QP for UMR requests carrying 'entries' list entries inline;
     * connected to itself and taken to RTS when 'rts'. */
    struct ibv_qp *make_rc(uint32_t entries, uint64_t dv_ops = EMU_UMR_DV_OPS,
                           uint64_t ops = IBV_QP_EX_WITH_LOCAL_INV,
                           bool rts     = true)
    {
        struct mlx5dv_qp_init_attr dv;
        struct ibv_qp_init_attr_ex attr;
        struct ibv_qp_attr qa;
        struct ibv_qp *qp;

        memset(&attr, 0, sizeof(attr));
        memset(&dv, 0, sizeof(dv));
        attr.qp_type   = IBV_QPT_RC;
        attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        attr.send_ops_flags      = ops;
        attr.pd                  = m_pd;
        attr.send_cq             = ibv_cq_ex_to_cq(m_tx_cq);
        attr.recv_cq             = ibv_cq_ex_to_cq(m_tx_cq);
        attr.cap.max_send_wr     = 8;
        attr.cap.max_send_sge    = 1;
        attr.cap.max_inline_data = 16 * entries - 4;
        dv.comp_mask             = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS;
        dv.send_ops_flags        = dv_ops;
        qp                       = mlx5dv_create_qp(m_ctx, &attr, &dv);
        if (qp == nullptr) {
            return nullptr;
        }
        m_qps.push_back(qp);
        if (!rts) {
            return qp;
        }
        memset(&qa, 0, sizeof(qa));
        qa.qp_state = IBV_QPS_INIT;
        qa.port_num = 1;
        if (ibv_modify_qp(qp, &qa,
                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                              IBV_QP_ACCESS_FLAGS) != 0) {
            return nullptr;
        }
        memset(&qa, 0, sizeof(qa));
        qa.qp_state           = IBV_QPS_RTR;
        qa.path_mtu           = IBV_MTU_4096;
        qa.dest_qp_num        = qp->qp_num;
        qa.max_dest_rd_atomic = 1;
        qa.min_rnr_timer      = 12;
        qa.ah_attr.port_num   = 1;
        qa.ah_attr.dlid       = m_lid;
        if (ibv_modify_qp(qp, &qa,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                              IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                              IBV_QP_MAX_DEST_RD_ATOMIC |
                              IBV_QP_MIN_RNR_TIMER) != 0) {
            return nullptr;
        }
        memset(&qa, 0, sizeof(qa));
        qa.qp_state      = IBV_QPS_RTS;
        qa.timeout       = 14;
        qa.retry_cnt     = 7;
        qa.rnr_retry     = 7;
        qa.max_rd_atomic = 1;
        if (ibv_modify_qp(qp, &qa,
                          IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                              IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                              IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
            return nullptr;
        }
        return qp;
    }

    struct mlx5dv_mkey *make_mkey(uint16_t entries)
    {
        struct mlx5dv_mkey_init_attr attr;
        struct mlx5dv_mkey *mk;

        memset(&attr, 0, sizeof(attr));
        attr.pd           = m_pd;
        attr.create_flags = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT;
        attr.max_entries  = entries;
        mk                = mlx5dv_create_mkey(&attr);
        if (mk != nullptr) {
            m_mkeys.push_back(mk);
        }
        return mk;
    }

    void forget_mkey(struct mlx5dv_mkey *mk)
    {
        m_mkeys.erase(std::find(m_mkeys.begin(), m_mkeys.end(), mk));
    }

    int umr_il(struct ibv_qp *qp, struct mlx5dv_mkey *mk, uint32_t access,
               uint32_t repeat, uint16_t n, struct mlx5dv_mr_interleaved *e,
               unsigned flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE)
    {
        struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);

        ibv_wr_start(qpx);
        qpx->wr_id    = 100;
        qpx->wr_flags = flags;
        mlx5dv_wr_mr_interleaved(mlx5dv_qp_ex_from_ibv_qp_ex(qpx), mk, access,
                                 repeat, n, e);
        return ibv_wr_complete(qpx);
    }

    int umr_list(struct ibv_qp *qp, struct mlx5dv_mkey *mk, uint32_t access,
                 uint16_t n, struct ibv_sge *sge,
                 unsigned flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE)
    {
        struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);

        ibv_wr_start(qpx);
        qpx->wr_id    = 101;
        qpx->wr_flags = flags;
        mlx5dv_wr_mr_list(mlx5dv_qp_ex_from_ibv_qp_ex(qpx), mk, access, n, sge);
        return ibv_wr_complete(qpx);
    }

    int local_inv(struct ibv_qp *qp, uint32_t key)
    {
        struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);

        ibv_wr_start(qpx);
        qpx->wr_id    = 102;
        qpx->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_local_inv(qpx, key);
        return ibv_wr_complete(qpx);
    }

    /* mlx5dv_wr_mkey_configure declaring n setters, then 'setters' (the
     * setters to call); ibv_wr_complete's result */
    int configure(struct ibv_qp *qp, struct mlx5dv_mkey *mk, uint8_t n,
                  const std::function<void(struct mlx5dv_qp_ex *)> &setters,
                  unsigned flags      = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
                  uint32_t conf_flags = 0)
    {
        struct ibv_qp_ex *qpx   = ibv_qp_to_qp_ex(qp);
        struct mlx5dv_qp_ex *dv = mlx5dv_qp_ex_from_ibv_qp_ex(qpx);
        struct mlx5dv_mkey_conf_attr attr;

        memset(&attr, 0, sizeof(attr));
        attr.conf_flags = conf_flags;
        ibv_wr_start(qpx);
        qpx->wr_id    = 104;
        qpx->wr_flags = flags;
        mlx5dv_wr_mkey_configure(dv, mk, n, &attr);
        setters(dv);
        return ibv_wr_complete(qpx);
    }

    /* The completion of a request expected to work */
    void expect_done(uint64_t wr_id, int opcode)
    {
        emu_wc wc;

        ASSERT_TRUE(poll_one(m_tx_cq, &wc));
        EXPECT_EQ(wr_id, wc.wr_id);
        EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
        EXPECT_EQ(opcode, (int)wc.opcode);
    }

    /* A DCI RDMA through a key; the completion's status */
    enum ibv_wc_status rdma(struct ibv_qp *dci, int opcode, void *buf,
                            uint32_t len, uint64_t raddr, uint32_t rkey)
    {
        emu_wc wc;

        if (post(dci, 7, opcode, buf, len, m_mr->lkey, raddr, rkey) != 0) {
            ADD_FAILURE() << "post refused";
            return IBV_WC_GENERAL_ERR;
        }
        if (!poll_one(m_tx_cq, &wc)) {
            ADD_FAILURE() << "no completion";
            return IBV_WC_GENERAL_ERR;
        }
        return wc.status;
    }

    /* A request refused at ibv_wr_complete with err and one log line */
    void refused(int err, const std::function<int()> &call, const char *why)
    {
        log_capture log;

        EXPECT_EQ(err, call()) << why;
        EXPECT_EQ(1u, log.count()) << why;
    }

    enum ibv_qp_state qp_state(struct ibv_qp *qp)
    {
        struct ibv_qp_init_attr init;
        struct ibv_qp_attr qa;

        EXPECT_EQ(0, ibv_query_qp(qp, &qa, IBV_QP_STATE, &init));
        return qa.qp_state;
    }

    std::vector<char> m_tgt[2];
    struct ibv_mr *m_tgt_mr[2] = {nullptr, nullptr};
    struct ibv_qp *m_dci       = nullptr;
    std::vector<struct mlx5dv_mkey *> m_mkeys;
};

TEST_F(emu_umr_test, mkey_create)
{
    struct mlx5dv_mkey_init_attr attr;
    struct mlx5dv_mkey *mk;

    memset(&attr, 0, sizeof(attr));
    attr.pd           = m_pd;
    attr.create_flags = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT;
    attr.max_entries  = 5;
    mk                = mlx5dv_create_mkey(&attr);
    ASSERT_NE(nullptr, mk) << strerror(errno);
    EXPECT_EQ(8u, attr.max_entries); /* rounded to 4, written back */
    EXPECT_EQ(mk->lkey, mk->rkey);
    EXPECT_NE(0u, mk->lkey);
    EXPECT_EQ(0, mlx5dv_destroy_mkey(mk));
}

TEST_F(emu_umr_test, mkey_create_bad_flow)
{
    struct mlx5dv_mkey_init_attr attr;
    struct mlx5dv_context_attr dattr;
    struct ibv_context *ctx;
    struct ibv_pd *pd;

    auto refused = [&](int err, const char *why) {
        log_capture log;

        errno = 0;
        EXPECT_EQ(nullptr, mlx5dv_create_mkey(&attr)) << why;
        EXPECT_EQ(err, errno) << why;
        EXPECT_EQ(1u, log.count()) << why;
    };

    memset(&attr, 0, sizeof(attr));
    attr.pd          = m_pd;
    attr.max_entries = 4;
    refused(EOPNOTSUPP, "no create flag");
    attr.create_flags = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT | (1u << 7);
    refused(EOPNOTSUPP, "unknown create flag");
    attr.create_flags = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT |
                        MLX5DV_MKEY_INIT_ATTR_FLAGS_BLOCK_SIGNATURE;
    refused(EOPNOTSUPP, "signature (no signature engine)");

    /* a context opened without DEVX makes one too (rdma-core's own
     * tests do, on a ConnectX) */
    memset(&dattr, 0, sizeof(dattr));
    ctx = mlx5dv_open_device(m_list[0], &dattr);
    ASSERT_NE(nullptr, ctx);
    pd = ibv_alloc_pd(ctx);
    ASSERT_NE(nullptr, pd);
    attr.pd                 = pd;
    attr.create_flags       = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT;
    struct mlx5dv_mkey *mk0 = mlx5dv_create_mkey(&attr);
    ASSERT_NE(nullptr, mk0);
    EXPECT_EQ(0, mlx5dv_destroy_mkey(mk0));
    EXPECT_EQ(0, ibv_dealloc_pd(pd));
    EXPECT_EQ(0, ibv_close_device(ctx));

    /* a key holds its PD */
    struct ibv_pd *pd2 = ibv_alloc_pd(m_ctx);
    ASSERT_NE(nullptr, pd2);
    attr.pd                 = pd2;
    struct mlx5dv_mkey *mk2 = mlx5dv_create_mkey(&attr);
    ASSERT_NE(nullptr, mk2);
    {
        log_capture log;

        EXPECT_EQ(EBUSY, ibv_dealloc_pd(pd2));
        EXPECT_EQ(1u, log.count());
    }
    EXPECT_EQ(0, mlx5dv_destroy_mkey(mk2));
    EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

TEST_F(emu_umr_test, devx_query_hca_cap)
{
    std::vector<uint8_t> out(16 + 4096, 0xee);
    uint8_t in[16];

    for (uint16_t op_mod : {0, 1}) { /* maximum, current */
        hca_cap_in(in, 0x100, op_mod);
        ASSERT_EQ(0, mlx5dv_devx_general_cmd(m_ctx, in, sizeof(in), out.data(),
                                             out.size()));
        EXPECT_EQ(0u, out[0]); /* status */
        const uint8_t *cap = out.data() + 16;
        EXPECT_EQ(16u, prm_get(cap, 0x11a, 6)); /* log_max_klm_list_size */
        EXPECT_EQ(1u, prm_get(cap, 0x118, 1));  /* umr_extended_xlt_off */
        EXPECT_EQ(0u, prm_get(cap, 0x206, 1));  /* repeated_block_disabled */
        EXPECT_EQ(0u, prm_get(cap, 0x208, 1));  /* umr_modify_atomic_dis. */
        EXPECT_EQ(0u, prm_get(cap, 0x209, 1));  /* umr_indirect_mkey_dis. */
        EXPECT_EQ(30u, prm_get(cap, 0x1c3, 5)); /* log_max_msg */
        EXPECT_EQ(0u, out.back());
    }
    /* the device memory capabilities: none (max_dm_size is 0 too) */
    hca_cap_in(in, 0x100, (0xfu << 1) | 1);
    ASSERT_EQ(0, mlx5dv_devx_general_cmd(m_ctx, in, sizeof(in), out.data(),
                                         out.size()));
    EXPECT_EQ(0u, out[0]); /* status */
    const uint8_t *dm = out.data() + 16;
    EXPECT_EQ(0u, prm_get(dm, 0, 1));      /* memic */
    EXPECT_EQ(0u, prm_get(dm, 0x20, 8));   /* atomic increment sizes */
    EXPECT_EQ(0u, prm_get(dm, 0x30, 8));   /* atomic test-and-set sizes */
    EXPECT_EQ(0u, prm_get(dm, 0xa0, 32));  /* max_memic_size */
    EXPECT_EQ(0u, prm_get(dm, 0x200, 32)); /* memic operations */
}

TEST_F(emu_umr_test, devx_query_hca_cap_bad_flow)
{
    std::vector<uint8_t> out(16 + 4096);
    struct mlx5dv_context_attr dattr;
    struct ibv_context *ctx;
    uint8_t in[16];

    auto refused = [&](struct ibv_context *c, size_t inlen, size_t outlen,
                       int err, const char *why) {
        log_capture log;

        errno = 0;
        EXPECT_EQ(err, mlx5dv_devx_general_cmd(c, in, inlen, out.data(), outlen))
            << why;
        EXPECT_EQ(err, errno) << why;
        EXPECT_EQ(1u, log.count()) << why;
    };

    hca_cap_in(in, 0x100, 1);
    refused(m_ctx, 8, out.size(), EINVAL, "input shorter than the header");
    refused(m_ctx, sizeof(in), 8, EINVAL, "output shorter than the header");
    /* as firmware answers: a status in the output, EREMOTEIO */
    hca_cap_in(in, 0x101, 0);
    refused(m_ctx, sizeof(in), out.size(), EREMOTEIO, "another command");
    EXPECT_EQ(0x02u, out[0]);             /* BAD_OP */
    hca_cap_in(in, 0x100, (2u << 1) | 1); /* the ODP capabilities */
    refused(m_ctx, sizeof(in), out.size(), EREMOTEIO, "another cap type");
    EXPECT_EQ(0x03u, out[0]); /* BAD_PARAM */

    memset(&dattr, 0, sizeof(dattr));
    ctx = mlx5dv_open_device(m_list[0], &dattr);
    ASSERT_NE(nullptr, ctx);
    hca_cap_in(in, 0x100, 1);
    refused(ctx, sizeof(in), out.size(), EOPNOTSUPP, "no DEVX");
    EXPECT_EQ(0, ibv_close_device(ctx));
}

/* Interleaved: repetition r takes 8 bytes at tgt0 + 32 r and 4 bytes at
 * tgt1 + 8 r; a DCI writes through the key (scatter) and reads back
 * (gather). */
TEST_F(emu_umr_test, interleaved_write_read)
{
    struct ibv_qp *rc      = make_rc(4);
    struct mlx5dv_mkey *mk = make_mkey(4);
    char *src              = m_buf.data();
    char *dst              = m_buf.data() + 4096;
    const uint32_t repeat = 4, len = repeat * 12;
    struct mlx5dv_mr_interleaved e[2];
    uint32_t r;

    ASSERT_NE(nullptr, rc);
    ASSERT_NE(nullptr, mk);
    e[0] = {(uintptr_t)m_tgt[0].data(), 8, 24, m_tgt_mr[0]->lkey};
    e[1] = {(uintptr_t)m_tgt[1].data(), 4, 4, m_tgt_mr[1]->lkey};
    ASSERT_EQ(0, umr_il(rc, mk, EMU_UMR_ACCESS, repeat, 2, e));
    expect_done(100, MLX5DV_WC_UMR);

    std::iota(src, src + len, 1);
    ASSERT_EQ(IBV_WC_SUCCESS,
              rdma(m_dci, IBV_WR_RDMA_WRITE, src, len, 0, mk->rkey));
    for (r = 0; r < repeat; ++r) {
        EXPECT_EQ(0, memcmp(&m_tgt[0][32 * r], src + 12 * r, 8)) << r;
        EXPECT_EQ(0, memcmp(&m_tgt[1][8 * r], src + 12 * r + 8, 4)) << r;
        EXPECT_EQ(0, m_tgt[0][32 * r + 8]) << "skipped bytes untouched";
    }
    memset(dst, 0, len);
    ASSERT_EQ(IBV_WC_SUCCESS,
              rdma(m_dci, IBV_WR_RDMA_READ, dst, len, 0, mk->rkey));
    EXPECT_EQ(0, memcmp(src, dst, len));
    /* past the layout's length */
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(m_dci, IBV_WR_RDMA_WRITE, src, 8, len - 4, mk->rkey));
}

TEST_F(emu_umr_test, list_write_read)
{
    struct ibv_qp *rc      = make_rc(4);
    struct mlx5dv_mkey *mk = make_mkey(4);
    char *src              = m_buf.data();
    char *dst              = m_buf.data() + 4096;
    struct ibv_sge sge[3];

    ASSERT_NE(nullptr, rc);
    ASSERT_NE(nullptr, mk);
    sge[0] = {(uintptr_t)m_tgt[0].data() + 100, 10, m_tgt_mr[0]->lkey};
    sge[1] = {(uintptr_t)m_tgt[1].data(), 20, m_tgt_mr[1]->lkey};
    sge[2] = {(uintptr_t)m_tgt[0].data() + 1000, 30, m_tgt_mr[0]->lkey};
    ASSERT_EQ(0, umr_list(rc, mk, EMU_UMR_ACCESS, 3, sge));
    expect_done(101, MLX5DV_WC_UMR);

    std::iota(src, src + 60, 1);
    ASSERT_EQ(IBV_WC_SUCCESS,
              rdma(m_dci, IBV_WR_RDMA_WRITE, src, 60, 0, mk->rkey));
    EXPECT_EQ(0, memcmp(&m_tgt[0][100], src, 10));
    EXPECT_EQ(0, memcmp(&m_tgt[1][0], src + 10, 20));
    EXPECT_EQ(0, memcmp(&m_tgt[0][1000], src + 30, 30));
    memset(dst, 0, 60);
    ASSERT_EQ(IBV_WC_SUCCESS,
              rdma(m_dci, IBV_WR_RDMA_READ, dst, 60, 0, mk->rkey));
    EXPECT_EQ(0, memcmp(src, dst, 60));
}

/* What libmlx5 refuses at ibv_wr_complete, one log line each */
TEST_F(emu_umr_test, umr_rules_bad_flow)
{
    struct ibv_qp *rc      = make_rc(4);
    struct mlx5dv_mkey *mk = make_mkey(8);
    struct mlx5dv_mr_interleaved e[4];
    struct ibv_sge sge[5];
    int i;

    ASSERT_NE(nullptr, rc);
    ASSERT_NE(nullptr, mk);
    for (i = 0; i < 4; ++i) {
        e[i] = {(uintptr_t)m_tgt[0].data() + 64 * i, 8, 8, m_tgt_mr[0]->lkey};
    }
    for (i = 0; i < 5; ++i) {
        sge[i] = {(uintptr_t)m_tgt[0].data() + 64 * i, 8, m_tgt_mr[0]->lkey};
    }
    refused(
        EOPNOTSUPP,
        [&] {
            return umr_il(rc, mk, EMU_UMR_ACCESS, 1, 1, e, IBV_SEND_SIGNALED);
        },
        "no IBV_SEND_INLINE");
    refused(
        EINVAL, [&] { return umr_list(rc, mk, IBV_ACCESS_MW_BIND, 1, sge); },
        "access flags outside the four");
    /* 4 entries + header: 80 bytes, the WQE carries 4 slots */
    refused(
        ENOMEM, [&] { return umr_il(rc, mk, EMU_UMR_ACCESS, 1, 4, e); },
        "interleaved over the WQE");
    refused(
        ENOMEM, [&] { return umr_list(rc, mk, EMU_UMR_ACCESS, 5, sge); },
        "list over the WQE");
    refused(
        EINVAL, [&] { return umr_list(rc, nullptr, EMU_UMR_ACCESS, 1, sge); },
        "no key");
    /* the good cases on the same QP: the refusals posted nothing */
    ASSERT_EQ(0, umr_il(rc, mk, EMU_UMR_ACCESS, 1, 3, e));
    expect_done(100, MLX5DV_WC_UMR);
    ASSERT_EQ(0, umr_list(rc, mk, EMU_UMR_ACCESS, 4, sge));
    expect_done(101, MLX5DV_WC_UMR);

    /* more entries than the key holds: 5 list entries fit the WQE of
     * rc8, not a key of 4 */
    struct ibv_qp *rc8      = make_rc(8);
    struct mlx5dv_mkey *mk4 = make_mkey(4);
    struct ibv_sge many[5];
    ASSERT_NE(nullptr, rc8);
    ASSERT_NE(nullptr, mk4);
    for (i = 0; i < 5; ++i) {
        many[i] = sge[i];
    }
    refused(
        ENOMEM, [&] { return umr_list(rc8, mk4, EMU_UMR_ACCESS, 5, many); },
        "list over the key");
    ASSERT_EQ(0, umr_list(rc8, mk4, EMU_UMR_ACCESS, 4, many));
    expect_done(101, MLX5DV_WC_UMR);
}

/* The builders belong to RC QPs that declared them */
TEST_F(emu_umr_test, umr_qp_requirements_bad_flow)
{
    struct mlx5dv_mkey *mk = make_mkey(4);
    struct ibv_sge sge     = {(uintptr_t)m_tgt[0].data(), 8, m_tgt_mr[0]->lkey};
    struct ibv_qp *qp;

    ASSERT_NE(nullptr, mk);
    refused(
        EOPNOTSUPP,
        [&] { return umr_list(m_dci, mk, EMU_UMR_ACCESS, 1, &sge); },
        "a UMR builder on a DCI");
    qp = make_rc(4, MLX5DV_QP_EX_WITH_MR_INTERLEAVED, 0);
    ASSERT_NE(nullptr, qp);
    refused(
        EOPNOTSUPP, [&] { return umr_list(qp, mk, EMU_UMR_ACCESS, 1, &sge); },
        "mr_list not declared");
    refused(
        EOPNOTSUPP, [&] { return local_inv(qp, mk->lkey); },
        "local_inv not declared");
    qp = make_rc(4, EMU_UMR_DV_OPS, IBV_QP_EX_WITH_LOCAL_INV, false);
    ASSERT_NE(nullptr, qp);
    refused(
        EINVAL, [&] { return umr_list(qp, mk, EMU_UMR_ACCESS, 1, &sge); },
        "before RTS");
    /* good: the declared builder on an RC in RTS */
    qp = make_rc(4, MLX5DV_QP_EX_WITH_MR_LIST, 0);
    ASSERT_NE(nullptr, qp);
    ASSERT_EQ(0, umr_list(qp, mk, EMU_UMR_ACCESS, 1, &sge));
    expect_done(101, MLX5DV_WC_UMR);
}

/* An interleaved layout must leave its key one translation entry for the
 * repetition header: libmlx5 does not check it, the HCA fails the WQE. */
TEST_F(emu_umr_test, interleaved_header_slot_bad_flow)
{
    struct ibv_qp *rc      = make_rc(8);
    struct mlx5dv_mkey *mk = make_mkey(4);
    struct mlx5dv_mr_interleaved e[4];
    emu_wc wc;
    int i;

    ASSERT_NE(nullptr, rc);
    ASSERT_NE(nullptr, mk);
    for (i = 0; i < 4; ++i) {
        e[i] = {(uintptr_t)m_tgt[0].data() + 64 * i, 8, 8, m_tgt_mr[0]->lkey};
    }
    /* good: 3 entries + header in 4 */
    ASSERT_EQ(0, umr_il(rc, mk, EMU_UMR_ACCESS, 2, 3, e));
    expect_done(100, MLX5DV_WC_UMR);
    {
        log_capture log;
        ASSERT_EQ(0, umr_il(rc, mk, EMU_UMR_ACCESS, 2, 4, e));
        ASSERT_TRUE(poll_one(m_tx_cq, &wc));
        EXPECT_EQ(100u, wc.wr_id);
        EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, wc.status);
        EXPECT_EQ(1u, log.count());
    }
    EXPECT_EQ(IBV_QPS_ERR, qp_state(rc));
}

/* The 16-bit byte count and stride fields: the low 16 bits are what the
 * key maps, silently. */
TEST_F(emu_umr_test, interleaved_16bit_fields)
{
    struct ibv_qp *rc      = make_rc(4);
    struct mlx5dv_mkey *mk = make_mkey(4);
    char *src              = m_buf.data();
    char *dst              = m_buf.data() + 4096;
    struct mlx5dv_mr_interleaved e;

    ASSERT_NE(nullptr, rc);
    ASSERT_NE(nullptr, mk);
    /* count 65536 + 16 -> 16, stride 65536 + 16 -> 16: contiguous */
    e = {(uintptr_t)m_tgt[0].data(), 65536 + 16, 0, m_tgt_mr[0]->lkey};
    {
        log_capture log;
        ASSERT_EQ(0, umr_il(rc, mk, EMU_UMR_ACCESS, 2, 1, &e));
        EXPECT_EQ(0u, log.count()) << "the HCA says nothing";
    }
    expect_done(100, MLX5DV_WC_UMR);
    std::iota(src, src + 32, 1);
    ASSERT_EQ(IBV_WC_SUCCESS,
              rdma(m_dci, IBV_WR_RDMA_WRITE, src, 32, 0, mk->rkey));
    EXPECT_EQ(0, memcmp(m_tgt[0].data(), src, 32));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(m_dci, IBV_WR_RDMA_WRITE, src, 1, 32, mk->rkey))
        << "the key is 2 x 16 bytes long";

    /* count 16, skip 65528: stride 65544 -> 8, the repetitions overlap */
    m_dci = make_dci();
    ASSERT_NE(nullptr, m_dci);
    memset(m_tgt[0].data(), 0, 64);
    e = {(uintptr_t)m_tgt[0].data(), 16, 65528, m_tgt_mr[0]->lkey};
    ASSERT_EQ(0, umr_il(rc, mk, EMU_UMR_ACCESS, 2, 1, &e));
    expect_done(100, MLX5DV_WC_UMR);
    ASSERT_EQ(IBV_WC_SUCCESS,
              rdma(m_dci, IBV_WR_RDMA_WRITE, src, 32, 0, mk->rkey));
    EXPECT_EQ(0, memcmp(&m_tgt[0][0], src, 8));
    EXPECT_EQ(0, memcmp(&m_tgt[0][8], src + 16, 16));
    memset(dst, 0, 32);
    ASSERT_EQ(IBV_WC_SUCCESS,
              rdma(m_dci, IBV_WR_RDMA_READ, dst, 32, 0, mk->rkey));
    EXPECT_EQ(0, memcmp(dst, m_tgt[0].data(), 16));
    EXPECT_EQ(0, memcmp(dst + 16, &m_tgt[0][8], 16));
}

/* A layout of no bytes configures a key through which nothing goes */
TEST_F(emu_umr_test, empty_layout_bad_flow)
{
    struct ibv_qp *rc              = make_rc(4);
    struct mlx5dv_mkey *mk         = make_mkey(4);
    struct mlx5dv_mr_interleaved e = {(uintptr_t)m_tgt[0].data(), 8, 0,
                                      m_tgt_mr[0]->lkey};

    ASSERT_NE(nullptr, rc);
    ASSERT_NE(nullptr, mk);
    ASSERT_EQ(0, umr_il(rc, mk, EMU_UMR_ACCESS, 0, 1, &e));
    expect_done(100, MLX5DV_WC_UMR);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(m_dci, IBV_WR_RDMA_WRITE, m_buf.data(), 1, 0, mk->rkey));
}

/* The key grants what it was configured with, and each entry's MR must
 * grant it too (checked at the access, not at the configure). */
TEST_F(emu_umr_test, entry_access_bad_flow)
{
    struct ibv_qp *rc      = make_rc(4);
    struct mlx5dv_mkey *mk = make_mkey(4);
    std::vector<char> ro_buf(256);
    struct ibv_mr *ro = ibv_reg_mr(m_pd, ro_buf.data(), ro_buf.size(),
                                   IBV_ACCESS_LOCAL_WRITE |
                                       IBV_ACCESS_REMOTE_READ);
    struct ibv_sge sge;

    ASSERT_NE(nullptr, rc);
    ASSERT_NE(nullptr, mk);
    ASSERT_NE(nullptr, ro);
    /* the key grants remote write, its entry's MR does not */
    sge = {(uintptr_t)ro_buf.data(), 64, ro->lkey};
    ASSERT_EQ(0, umr_list(rc, mk, EMU_UMR_ACCESS, 1, &sge));
    expect_done(101, MLX5DV_WC_UMR);
    EXPECT_EQ(IBV_WC_SUCCESS,
              rdma(m_dci, IBV_WR_RDMA_READ, m_buf.data(), 8, 0, mk->rkey));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(m_dci, IBV_WR_RDMA_WRITE, m_buf.data(), 8, 0, mk->rkey));

    /* the MR grants remote write, the key only remote read */
    m_dci = make_dci();
    ASSERT_NE(nullptr, m_dci);
    sge = {(uintptr_t)m_tgt[0].data(), 64, m_tgt_mr[0]->lkey};
    ASSERT_EQ(0, umr_list(rc, mk, IBV_ACCESS_REMOTE_READ, 1, &sge));
    expect_done(101, MLX5DV_WC_UMR);
    EXPECT_EQ(IBV_WC_SUCCESS,
              rdma(m_dci, IBV_WR_RDMA_READ, m_buf.data(), 8, 0, mk->rkey));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(m_dci, IBV_WR_RDMA_WRITE, m_buf.data(), 8, 0, mk->rkey));
    EXPECT_EQ(0, ibv_dereg_mr(ro));
}

TEST_F(emu_umr_test, local_inv)
{
    struct ibv_qp *rc      = make_rc(4);
    struct mlx5dv_mkey *mk = make_mkey(4);
    struct ibv_sge sge = {(uintptr_t)m_tgt[0].data(), 64, m_tgt_mr[0]->lkey};

    ASSERT_NE(nullptr, rc);
    ASSERT_NE(nullptr, mk);
    ASSERT_EQ(0, umr_list(rc, mk, EMU_UMR_ACCESS, 1, &sge));
    expect_done(101, MLX5DV_WC_UMR);
    EXPECT_EQ(IBV_WC_SUCCESS,
              rdma(m_dci, IBV_WR_RDMA_WRITE, m_buf.data(), 8, 0, mk->rkey));
    ASSERT_EQ(0, local_inv(rc, mk->lkey));
    expect_done(102, IBV_WC_LOCAL_INV);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(m_dci, IBV_WR_RDMA_WRITE, m_buf.data(), 8, 0, mk->rkey));
    /* configured again after the invalidation */
    m_dci = make_dci();
    ASSERT_NE(nullptr, m_dci);
    ASSERT_EQ(0, umr_list(rc, mk, EMU_UMR_ACCESS, 1, &sge));
    expect_done(101, MLX5DV_WC_UMR);
    EXPECT_EQ(IBV_WC_SUCCESS,
              rdma(m_dci, IBV_WR_RDMA_WRITE, m_buf.data(), 8, 0, mk->rkey));
}

TEST_F(emu_umr_test, local_inv_bad_flow)
{
    struct ibv_qp *rc = make_rc(4);
    emu_wc wc;

    ASSERT_NE(nullptr, rc);
    /* a plain MR's key is not an indirect mkey */
    ASSERT_EQ(0, local_inv(rc, m_tgt_mr[0]->lkey));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(102u, wc.wr_id);
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
    EXPECT_EQ(IBV_QPS_ERR, qp_state(rc));
}

/* mlx5dv_wr_mkey_configure with its access and layout setters, in either
 * order: the same keys as mr_list and mr_interleaved */
TEST_F(emu_umr_test, mkey_configure)
{
    struct ibv_qp *rc      = make_rc(8, MLX5DV_QP_EX_WITH_MKEY_CONFIGURE, 0);
    struct mlx5dv_mkey *mk = make_mkey(4);
    char *src              = m_buf.data();
    char *dst              = m_buf.data() + 4096;
    struct mlx5dv_mr_interleaved e[2];
    struct ibv_sge sge[2];
    uint32_t r;

    ASSERT_NE(nullptr, rc);
    ASSERT_NE(nullptr, mk);
    sge[0] = {(uintptr_t)m_tgt[0].data() + 100, 10, m_tgt_mr[0]->lkey};
    sge[1] = {(uintptr_t)m_tgt[1].data(), 20, m_tgt_mr[1]->lkey};
    ASSERT_EQ(0, configure(rc, mk, 2, [&](struct mlx5dv_qp_ex *dv) {
                  mlx5dv_wr_set_mkey_access_flags(dv, EMU_UMR_ACCESS);
                  mlx5dv_wr_set_mkey_layout_list(dv, 2, sge);
              }));
    expect_done(104, MLX5DV_WC_UMR);
    std::iota(src, src + 30, 1);
    ASSERT_EQ(IBV_WC_SUCCESS,
              rdma(m_dci, IBV_WR_RDMA_WRITE, src, 30, 0, mk->rkey));
    EXPECT_EQ(0, memcmp(&m_tgt[0][100], src, 10));
    EXPECT_EQ(0, memcmp(&m_tgt[1][0], src + 10, 20));

    /* layout first; then a layout alone keeps the access flags */
    e[0] = {(uintptr_t)m_tgt[0].data(), 8, 24, m_tgt_mr[0]->lkey};
    e[1] = {(uintptr_t)m_tgt[1].data(), 4, 4, m_tgt_mr[1]->lkey};
    ASSERT_EQ(0, configure(rc, mk, 2, [&](struct mlx5dv_qp_ex *dv) {
                  mlx5dv_wr_set_mkey_layout_interleaved(dv, 3, 2, e);
                  mlx5dv_wr_set_mkey_access_flags(dv,
                                                  IBV_ACCESS_LOCAL_WRITE |
                                                      IBV_ACCESS_REMOTE_READ);
              }));
    expect_done(104, MLX5DV_WC_UMR);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(m_dci, IBV_WR_RDMA_WRITE, src, 36, 0, mk->rkey));
    m_dci = make_dci();
    ASSERT_NE(nullptr, m_dci);
    ASSERT_EQ(0, configure(rc, mk, 1, [&](struct mlx5dv_qp_ex *dv) {
                  mlx5dv_wr_set_mkey_layout_interleaved(dv, 3, 2, e);
              }));
    expect_done(104, MLX5DV_WC_UMR);
    memset(dst, 0, 36);
    ASSERT_EQ(IBV_WC_SUCCESS,
              rdma(m_dci, IBV_WR_RDMA_READ, dst, 36, 0, mk->rkey));
    for (r = 0; r < 3; ++r) {
        EXPECT_EQ(0, memcmp(&m_tgt[0][32 * r], dst + 12 * r, 8)) << r;
        EXPECT_EQ(0, memcmp(&m_tgt[1][8 * r], dst + 12 * r + 8, 4)) << r;
    }
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(m_dci, IBV_WR_RDMA_WRITE, src, 36, 0, mk->rkey));
}

/* A key created and configured with a layout only has the access libmlx5
 * creates it with: local read, no remote access */
TEST_F(emu_umr_test, mkey_configure_layout_only_bad_flow)
{
    struct ibv_qp *rc      = make_rc(4, MLX5DV_QP_EX_WITH_MKEY_CONFIGURE, 0);
    struct mlx5dv_mkey *mk = make_mkey(4);
    struct ibv_sge sge = {(uintptr_t)m_tgt[0].data(), 64, m_tgt_mr[0]->lkey};

    ASSERT_NE(nullptr, rc);
    ASSERT_NE(nullptr, mk);
    ASSERT_EQ(0, configure(rc, mk, 1, [&](struct mlx5dv_qp_ex *dv) {
                  mlx5dv_wr_set_mkey_layout_list(dv, 1, &sge);
              }));
    expect_done(104, MLX5DV_WC_UMR);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(m_dci, IBV_WR_RDMA_READ, m_buf.data(), 8, 0, mk->rkey));
}

TEST_F(emu_umr_test, mkey_configure_bad_flow)
{
    struct ibv_qp *rc      = make_rc(4, MLX5DV_QP_EX_WITH_MKEY_CONFIGURE, 0);
    struct mlx5dv_mkey *mk = make_mkey(4);
    struct ibv_sge sge[8];
    struct mlx5dv_sig_block_attr sig;
    struct mlx5dv_crypto_attr crypto;
    struct ibv_qp *other;
    int i;

    ASSERT_NE(nullptr, rc);
    ASSERT_NE(nullptr, mk);
    for (i = 0; i < 8; ++i) {
        sge[i] = {(uintptr_t)m_tgt[0].data() + 64 * i, 8, m_tgt_mr[0]->lkey};
    }
    memset(&sig, 0, sizeof(sig));
    memset(&crypto, 0, sizeof(crypto));
    auto access = [](struct mlx5dv_qp_ex *dv) {
        mlx5dv_wr_set_mkey_access_flags(dv, IBV_ACCESS_LOCAL_WRITE);
    };
    auto list = [&](struct mlx5dv_qp_ex *dv) {
        mlx5dv_wr_set_mkey_layout_list(dv, 1, sge);
    };
    auto both = [&](struct mlx5dv_qp_ex *dv) {
        access(dv);
        list(dv);
    };

    other = make_rc(4, MLX5DV_QP_EX_WITH_MR_LIST, 0);
    ASSERT_NE(nullptr, other);
    refused(
        EOPNOTSUPP, [&] { return configure(other, mk, 2, both); },
        "mkey_configure not declared");
    refused(
        EOPNOTSUPP,
        [&] { return configure(rc, mk, 2, both, IBV_SEND_SIGNALED); },
        "without IBV_SEND_INLINE");
    refused(
        EOPNOTSUPP,
        [&] {
            return configure(rc, mk, 2, both,
                             IBV_SEND_SIGNALED | IBV_SEND_INLINE, 1u << 5);
        },
        "unknown conf_flags");
    refused(
        EINVAL,
        [&] {
            struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(rc);

            ibv_wr_start(qpx);
            qpx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
            list(mlx5dv_qp_ex_from_ibv_qp_ex(qpx));
            return ibv_wr_complete(qpx);
        },
        "a setter without mkey_configure");
    refused(
        EINVAL,
        [&] {
            return configure(rc, mk, 3, [&](struct mlx5dv_qp_ex *dv) {
                access(dv);
                access(dv);
            });
        },
        "access flags twice");
    refused(
        EINVAL,
        [&] {
            return configure(rc, mk, 3, [&](struct mlx5dv_qp_ex *dv) {
                list(dv);
                list(dv);
            });
        },
        "a layout twice");
    refused(
        EINVAL,
        [&] {
            return configure(rc, mk, 2, [&](struct mlx5dv_qp_ex *dv) {
                mlx5dv_wr_set_mkey_access_flags(dv, IBV_ACCESS_MW_BIND);
            });
        },
        "access flags outside the four");
    refused(
        EINVAL, [&] { return configure(rc, mk, 2, list); },
        "fewer setters than declared at ibv_wr_complete");
    refused(
        EINVAL,
        [&] {
            return configure(rc, mk, 1, [&](struct mlx5dv_qp_ex *dv) {
                list(dv);
                access(dv);
            });
        },
        "more setters than declared");
    refused(
        EOPNOTSUPP, [&] { return configure(rc, mk, 1, access); },
        "no layout: the key keeping its translation is not modelled");
    refused(
        EOPNOTSUPP,
        [&] { return configure(rc, mk, 0, [](struct mlx5dv_qp_ex *) {}); },
        "no setters");
    refused(
        ENOMEM,
        [&] {
            return configure(rc, mk, 1, [&](struct mlx5dv_qp_ex *dv) {
                mlx5dv_wr_set_mkey_layout_list(dv, 5, sge);
            });
        },
        "more entries than the key");
    refused(
        EINVAL,
        [&] {
            return configure(rc, mk, 3, [&](struct mlx5dv_qp_ex *dv) {
                both(dv);
                mlx5dv_wr_set_mkey_sig_block(dv, &sig);
            });
        },
        "a signature on a key without one");
    refused(
        EINVAL,
        [&] {
            return configure(rc, mk, 3, [&](struct mlx5dv_qp_ex *dv) {
                both(dv);
                mlx5dv_wr_set_mkey_crypto(dv, &crypto);
            });
        },
        "crypto on a key without it");
    /* nothing was posted; the QP still takes a good request */
    ASSERT_EQ(0, configure(rc, mk, 2, both));
    expect_done(104, MLX5DV_WC_UMR);
}

/* ibv_post_send takes IBV_WR_LOCAL_INV on any RC QP, whatever its
 * send_ops_flags declare (they choose the ibv_wr_* builders only) */
TEST_F(emu_umr_test, post_send_local_inv)
{
    struct ibv_qp *rc      = make_rc(4, MLX5DV_QP_EX_WITH_MR_LIST, 0);
    struct mlx5dv_mkey *mk = make_mkey(4);
    struct ibv_sge sge = {(uintptr_t)m_tgt[0].data(), 64, m_tgt_mr[0]->lkey};
    struct ibv_send_wr wr, *bad = nullptr;

    ASSERT_NE(nullptr, rc);
    ASSERT_NE(nullptr, mk);
    ASSERT_EQ(0, umr_list(rc, mk, EMU_UMR_ACCESS, 1, &sge));
    expect_done(101, MLX5DV_WC_UMR);
    EXPECT_EQ(IBV_WC_SUCCESS,
              rdma(m_dci, IBV_WR_RDMA_WRITE, m_buf.data(), 8, 0, mk->rkey));
    memset(&wr, 0, sizeof(wr));
    wr.wr_id           = 103;
    wr.opcode          = IBV_WR_LOCAL_INV;
    wr.send_flags      = IBV_SEND_SIGNALED;
    wr.invalidate_rkey = mk->lkey;
    ASSERT_EQ(0, ibv_post_send(rc, &wr, &bad));
    expect_done(103, IBV_WC_LOCAL_INV);
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(m_dci, IBV_WR_RDMA_WRITE, m_buf.data(), 8, 0, mk->rkey));
}

TEST_F(emu_umr_test, post_send_local_inv_bad_flow)
{
    struct ibv_qp *rc = make_rc(4, MLX5DV_QP_EX_WITH_MR_LIST, 0);
    struct ibv_send_wr wr, *bad = nullptr;
    emu_wc wc;

    ASSERT_NE(nullptr, rc);
    /* a plain MR's key is not an indirect mkey: as through the builder */
    memset(&wr, 0, sizeof(wr));
    wr.wr_id           = 103;
    wr.opcode          = IBV_WR_LOCAL_INV;
    wr.send_flags      = IBV_SEND_SIGNALED;
    wr.invalidate_rkey = m_tgt_mr[0]->lkey;
    ASSERT_EQ(0, ibv_post_send(rc, &wr, &bad));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_EQ(103u, wc.wr_id);
    EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
    EXPECT_EQ(IBV_QPS_ERR, qp_state(rc));
}

/* Destroying a configured key works; accesses through it fail after. */
TEST_F(emu_umr_test, mkey_destroy_in_use_bad_flow)
{
    struct ibv_qp *rc      = make_rc(4);
    struct mlx5dv_mkey *mk = make_mkey(4);
    struct ibv_sge sge = {(uintptr_t)m_tgt[0].data(), 64, m_tgt_mr[0]->lkey};
    uint32_t rkey;

    ASSERT_NE(nullptr, rc);
    ASSERT_NE(nullptr, mk);
    ASSERT_EQ(0, umr_list(rc, mk, EMU_UMR_ACCESS, 1, &sge));
    expect_done(101, MLX5DV_WC_UMR);
    rkey = mk->rkey;
    forget_mkey(mk);
    EXPECT_EQ(0, mlx5dv_destroy_mkey(mk));
    EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
              rdma(m_dci, IBV_WR_RDMA_WRITE, m_buf.data(), 8, 0, rkey));
}
