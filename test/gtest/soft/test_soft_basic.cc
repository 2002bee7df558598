/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: capabilities, control-path validation, and the two-process
 * data path (send/recv, RDMA write/read, atomics).
 */
#include "soft_fixture.h"

#include <string.h>
#include <unistd.h>

using namespace soft_test;


TEST_F(soft, caps)
{
    node n;
    ASSERT_EQ(0, n.open(fabric.c_str()));
    const dcx_dev_caps_t *caps = dcx_dev_caps(n.dev);
    EXPECT_EQ(&dcx_soft_backend, dcx_dev_backend(n.dev));
    EXPECT_TRUE(dcx_dev_is_soft(n.dev));
    EXPECT_TRUE(caps->flags & DCX_CAP_DC);
    EXPECT_TRUE(caps->flags & DCX_CAP_HELPER);
    EXPECT_TRUE(caps->flags & DCX_CAP_NO_PIN);
    EXPECT_TRUE(caps->atomic_flags & DCX_ATOMIC_FADD64);
    EXPECT_TRUE(caps->atomic_flags & DCX_ATOMIC_MASKED_CSWAP32);
    EXPECT_EQ(28u, caps->addr_len);
    EXPECT_GE(caps->max_inline, 256u);
    EXPECT_EQ(30u, caps->max_sge);
    EXPECT_EQ(1ull << 30, caps->max_msg_size);
    EXPECT_GT(caps->latency_ns, 0.0);
    EXPECT_GT(caps->bandwidth_Bps, 0.0);
    EXPECT_STREQ("soft0", dcx_dev_name(n.dev));

    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t len = sizeof(addr);
    EXPECT_EQ(0, dcx_dev_port_addr(n.dev, addr, &len));
    EXPECT_EQ(caps->addr_len, len);
}

TEST_F(soft, limits_default)
{
    dcx_soft_limits_t l;
    dcx_soft_limits_default(&l);
    EXPECT_GT(l.max_qp_wr, 0u);
    EXPECT_GT(l.mtu, 0u);
    EXPECT_LE(l.retry_cnt, 7u);
}

TEST_F(soft, list_bad_flow)
{
    log_counter logs;
    dcx_soft_params_t params;
    dcx_dev_info_t *list;
    unsigned count;

    memset(&params, 0, sizeof(params));
    params.count  = 1;
    params.fabric = "bad/name";
    EXPECT_EQ(EINVAL, dcx_soft_list(&params, &list, &count));
    EXPECT_EQ(1, logs.lines());

    params.fabric     = "fine";
    params.limits.mtu = 100;
    {
        log_counter logs2;
        EXPECT_EQ(EINVAL, dcx_soft_list(&params, &list, &count));
        params.limits.mtu       = 0;
        params.limits.retry_cnt = 8;
        EXPECT_EQ(EINVAL, dcx_soft_list(&params, &list, &count));
        EXPECT_EQ(2, logs2.lines());
    }
    params.limits.retry_cnt = 0;

    /* every limit has a ceiling; the largest values wrapped sizes before */
    {
        const size_t offsets[] = {offsetof(dcx_soft_limits_t, max_qp_wr),
                                  offsetof(dcx_soft_limits_t, max_srq_wr),
                                  offsetof(dcx_soft_limits_t, max_cqe),
                                  offsetof(dcx_soft_limits_t, max_sge),
                                  offsetof(dcx_soft_limits_t, max_inline),
                                  offsetof(dcx_soft_limits_t, max_rd_atomic),
                                  offsetof(dcx_soft_limits_t, max_dci),
                                  offsetof(dcx_soft_limits_t, mtu),
                                  offsetof(dcx_soft_limits_t, rnr_retry)};
        for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); ++i) {
            log_counter logs3;
            dcx_soft_limits_t saved                            = params.limits;
            *(uint32_t *)((char *)&params.limits + offsets[i]) = UINT32_MAX;
            EXPECT_EQ(EINVAL, dcx_soft_list(&params, &list, &count)) << i;
            EXPECT_EQ(1, logs3.lines()) << i;
            params.limits = saved;
        }
        log_counter logs4;
        params.limits.max_msg_size = UINT64_MAX;
        EXPECT_EQ(EINVAL, dcx_soft_list(&params, &list, &count));
        EXPECT_EQ(1, logs4.lines());
        params.limits.max_msg_size = 0;
    }

    params.count  = 0;
    params.fabric = nullptr;
    ASSERT_EQ(0, dcx_soft_list(&params, &list, &count));
    EXPECT_EQ(0u, count);
    dcx_dev_list_free(list);
}

TEST_F(soft, mr_reg_bad_flow)
{
    node n;
    dcx_mr_t *mr;
    char buf[64];

    ASSERT_EQ(0, n.open(fabric.c_str()));
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, dcx_mr_reg(n.pd, buf, sizeof(buf), 1u << 7, &mr));
        EXPECT_EQ(1, logs.lines());
    }
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, dcx_mr_reg(n.pd, buf, sizeof(buf),
                                     DCX_ACCESS_REMOTE_WRITE, &mr));
        EXPECT_EQ(EINVAL, dcx_mr_reg(n.pd, buf, sizeof(buf),
                                     DCX_ACCESS_REMOTE_ATOMIC, &mr));
        EXPECT_EQ(2, logs.lines());
    }
    ASSERT_EQ(0,
              dcx_mr_reg(n.pd, buf, sizeof(buf),
                         DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_READ, &mr));
    EXPECT_EQ(buf, mr->addr);
    EXPECT_NE(0u, mr->lkey);
    EXPECT_EQ(0, dcx_mr_dereg(mr));
}

TEST_F(soft, cq_srq_qp_bad_flow)
{
    node n;
    dcx_cq_t *cq;
    ASSERT_EQ(0, n.open(fabric.c_str()));
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, dcx_cq_create(n.dev, 0, &cq));
        EXPECT_EQ(1, logs.lines());
    }
    ASSERT_EQ(0, n.make_cq(16));
    EXPECT_GE(n.cq->cqe, 16u);

    dcx_srq_attr_t sattr;
    memset(&sattr, 0, sizeof(sattr));
    sattr.max_wr = 0;
    sattr.cq     = n.cq;
    dcx_srq_t *srq;
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, dcx_srq_create(n.pd, &sattr, &srq));
        EXPECT_EQ(1, logs.lines());
    }

    dcx_qp_attr_t qattr;
    memset(&qattr, 0, sizeof(qattr));
    qattr.type    = DCX_QPT_DCT;
    qattr.recv_cq = n.cq;
    dcx_qp_t *qp;
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, dcx_qp_create(n.pd, &qattr, &qp)); /* no srq */
        EXPECT_EQ(1, logs.lines());
    }
    memset(&qattr, 0, sizeof(qattr));
    qattr.type        = DCX_QPT_DCI;
    qattr.send_cq     = n.cq;
    qattr.max_send_wr = 16;
    qattr.max_inline  = 100000;
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, dcx_qp_create(n.pd, &qattr, &qp));
        EXPECT_EQ(1, logs.lines());
    }
    /* the transport parameters out of their verbs ranges */
    qattr.max_inline = 0;
    {
        const uint8_t dci_bad[][3] = {{32, 7, 7},
                                      {255, 7, 7},
                                      {18, 8, 7},
                                      {18, 255, 7},
                                      {18, 7, 8}};
        for (size_t i = 0; i < sizeof(dci_bad) / sizeof(dci_bad[0]); ++i) {
            log_counter logs;
            qattr.timeout   = dci_bad[i][0];
            qattr.retry_cnt = dci_bad[i][1];
            qattr.rnr_retry = dci_bad[i][2];
            EXPECT_EQ(EINVAL, dcx_qp_create(n.pd, &qattr, &qp)) << i;
            EXPECT_EQ(1, logs.lines()) << i;
        }
        qattr.timeout = qattr.retry_cnt = qattr.rnr_retry = 0;
    }
    /* a DCI that is not in error cannot be recovered */
    ASSERT_EQ(0, n.make_dci());
    EXPECT_EQ(DCX_QPS_RTS, n.dci->state);
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, dcx_qp_recover(n.dci));
        EXPECT_EQ(1, logs.lines());
    }
    /* CQ in use */
    {
        log_counter logs;
        EXPECT_EQ(EBUSY, dcx_cq_destroy(n.cq));
        EXPECT_EQ(1, logs.lines());
    }
}

TEST_F(soft, ah_bad_flow)
{
    node a, b;
    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t len = sizeof(addr);
    dcx_ah_t *ah;

    ASSERT_EQ(0, a.open(fabric.c_str()));
    ASSERT_EQ(0, dcx_dev_port_addr(a.dev, addr, &len));
    ASSERT_EQ(0, dcx_ah_create(a.pd, addr, len, &ah));
    EXPECT_EQ(0, dcx_ah_destroy(ah));
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, dcx_ah_create(a.pd, addr, len - 1, &ah));
        addr[5] ^= 0xff;
        EXPECT_EQ(EINVAL, dcx_ah_create(a.pd, addr, len, &ah));
        EXPECT_EQ(2, logs.lines());
    }
    addr[5] ^= 0xff;
    /* an address from another fabric is malformed here */
    ASSERT_EQ(0, b.open((fabric + "x").c_str()));
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, dcx_ah_create(b.pd, addr, len, &ah));
        EXPECT_EQ(1, logs.lines());
    }
}

/* ------------------------------------------------------------------------
 * Two processes
 * ------------------------------------------------------------------------ */


TEST_F(soft_xproc, send_recv_sizes)
{
    sh->tp.recv_size = (4u << 20) + 64;
    sh->tp.nrecv     = 1;
    start();
    const uint32_t mtu     = dcx_dev_caps(ini.dev)->mtu;
    const uint32_t inl     = 200;
    const uint32_t sizes[] = {0, 1, inl, mtu - 1, mtu, mtu + 1, 4u << 20};
    uint32_t n             = 0;

    for (uint32_t size : sizes) {
        __atomic_store_n(&sh->post_more, n + 1, __ATOMIC_RELEASE);
        for (uint32_t i = 0; i < size; ++i) {
            lbuf[i] = (uint8_t)(i * 7 + size);
        }
        dcx_sge_t s      = lsge(0, size);
        dcx_send_wr_t wr = make_wr(DCX_WR_SEND, size, &s, 1, ini, sh);
        if (size == inl) {
            wr.flags |= DCX_SEND_INLINE;
        }
        dcx_wc_t wc = run(wr);
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status) << "size " << size;
        EXPECT_EQ(DCX_WC_SEND, wc.opcode);
        EXPECT_EQ((uint64_t)size, wc.wr_id);
        EXPECT_EQ(ini.dci->qp_num, wc.qp_num);
        ASSERT_TRUE(wait_recv(n + 1)) << "size " << size;
        const dcx_wc_t &rwc = sh->wc[n];
        EXPECT_EQ(DCX_WC_SUCCESS, rwc.status);
        EXPECT_EQ(DCX_WC_RECV, rwc.opcode);
        EXPECT_EQ(size, rwc.byte_len);
        EXPECT_EQ(0, rwc.flags & DCX_WC_FLAG_WITH_IMM);
        EXPECT_EQ(ini.dci->qp_num, rwc.src_qp);
        EXPECT_EQ(sh->dctn, rwc.qp_num);
        const uint8_t *rb = recv_buf(sh, rwc.wr_id);
        EXPECT_EQ(0, memcmp(rb, lbuf.data(), size)) << "size " << size;
        ++n;
    }
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, send_imm)
{
    start();
    dcx_sge_t s = lsge(0, 10);
    memcpy(lbuf.data(), "0123456789", 10);
    dcx_send_wr_t wr = make_wr(DCX_WR_SEND_IMM, 1, &s, 1, ini, sh);
    wr.imm           = 0xdeadbeef;
    dcx_wc_t wc      = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    ASSERT_TRUE(wait_recv(1));
    EXPECT_EQ(DCX_WC_RECV, sh->wc[0].opcode);
    EXPECT_TRUE(sh->wc[0].flags & DCX_WC_FLAG_WITH_IMM);
    EXPECT_EQ(0xdeadbeefu, sh->wc[0].imm);
    EXPECT_EQ(10u, sh->wc[0].byte_len);
    EXPECT_EQ(0, memcmp(recv_buf(sh, sh->wc[0].wr_id), "0123456789", 10));
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, write_read)
{
    start();
    const uint32_t size = 100000;
    for (uint32_t i = 0; i < size; ++i) {
        lbuf[i] = (uint8_t)(i * 13);
    }
    dcx_sge_t s      = lsge(0, size);
    dcx_send_wr_t wr = make_wr(DCX_WR_RDMA_WRITE, 1, &s, 1, ini, sh);
    wr.remote_addr += 4096;
    dcx_wc_t wc = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_RDMA_WRITE, wc.opcode);
    EXPECT_EQ(0, memcmp(sh->buf + 4096, lbuf.data(), size));

    s  = lsge(1u << 20, size);
    wr = make_wr(DCX_WR_RDMA_READ, 2, &s, 1, ini, sh);
    wr.remote_addr += 4096;
    wc = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_RDMA_READ, wc.opcode);
    EXPECT_EQ(size, wc.byte_len);
    EXPECT_EQ(0, memcmp(lbuf.data() + (1u << 20), lbuf.data(), size));
    /* no receive completion for plain write/read */
    usleep(10000);
    EXPECT_EQ(0u, sh->n_wc);
    EXPECT_TRUE(stop_children());
}

TEST_F(soft_xproc, atomics)
{
    start();
    uint64_t *target = (uint64_t *)(sh->buf + 64);
    *target          = 100;
    uint64_t *res    = (uint64_t *)lbuf.data();

    dcx_sge_t s      = lsge(0, 8);
    dcx_send_wr_t wr = make_wr(DCX_WR_ATOMIC_FADD, 1, &s, 1, ini, sh);
    wr.remote_addr += 64;
    wr.compare_add = 5;
    dcx_wc_t wc    = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_FETCH_ADD, wc.opcode);
    EXPECT_EQ(8u, wc.byte_len);
    EXPECT_EQ(100u, *res);
    EXPECT_EQ(105u, *target);

    wr = make_wr(DCX_WR_ATOMIC_CSWAP, 2, &s, 1, ini, sh);
    wr.remote_addr += 64;
    wr.compare_add = 105;
    wr.swap        = 7;
    wc             = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_COMP_SWAP, wc.opcode);
    EXPECT_EQ(105u, *res);
    EXPECT_EQ(7u, *target);

    /* compare fails: value unchanged, old value returned */
    wr.compare_add = 1;
    wr.swap        = 9;
    wc             = run(wr);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(7u, *res);
    EXPECT_EQ(7u, *target);
    EXPECT_TRUE(stop_children());
}
