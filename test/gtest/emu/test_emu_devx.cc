/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DEVX: firmware commands on contexts opened with MLX5DV_CONTEXT_FLAGS_DEVX,
 * as UCX's mlx5 transports issue them.  Between two ports (mlx5_0 and
 * mlx5_1): RC QPs made by CREATE_QP with their send queues and doorbell
 * records in registered user memory (umem) and rung through a UAR from
 * mlx5dv_devx_alloc_uar, taken to RTS by the PRM transitions; receives
 * from an RMP (CREATE_RMP, a ring in umem); an RDMA WRITE and an atomic
 * through a KSM key (CREATE_MKEY) whose addresses start at its
 * start_addr; QUERY_QP; the last-WQE event of an SRQ-attached QP on an
 * event channel; the capabilities QUERY_HCA_CAP reports.  Bad flows: a
 * command the emulation does not model answers the PRM's status and
 * syndrome with EREMOTEIO and one log line, as do bad object numbers and
 * memory outside a umem; nothing is created by a refused command.
 */
#include "emu_devx_fixture.h"

TEST_F(emu_devx_test, capabilities)
{
    std::vector<uint8_t> out(16 + 4096);
    uint8_t in[16]     = {};
    const uint8_t *cap = out.data() + 16;

    prm_set(in, 0, 16, 0x100);
    prm_set(in, 48, 16, 1); /* general, current */
    ASSERT_EQ(0, mlx5dv_devx_general_cmd(m_a.ctx, in, sizeof(in), out.data(),
                                         out.size()));
    EXPECT_EQ(30u, prm_get(cap, 451, 5)); /* log_max_msg */
    EXPECT_EQ(1u, prm_get(cap, 538, 1));  /* dct */
    EXPECT_EQ(1u, prm_get(cap, 542, 1));  /* atomic */
    EXPECT_EQ(1u, prm_get(cap, 264, 1));  /* fixed_buffer_size: KSM */
    EXPECT_LT(0u, prm_get(cap, 899, 5));  /* log_max_rmp */
    EXPECT_EQ(0u, prm_get(cap, 551, 1));  /* pg: no ODP */
    EXPECT_GE(7u, prm_get(cap, 298, 6));  /* log_max_ra_req_dc */
    prm_set(in, 48, 16, (3u << 1) | 1);   /* atomic */
    ASSERT_EQ(0, mlx5dv_devx_general_cmd(m_a.ctx, in, sizeof(in), out.data(),
                                         out.size()));
    EXPECT_EQ(0xfu, prm_get(cap, 144, 16)); /* CS, FA and masked */
    EXPECT_EQ(0xcu, prm_get(cap, 176, 16)); /* 4- and 8-byte operands */
    EXPECT_EQ(1u, prm_get(cap, 64, 2));     /* host-order memory */
    prm_set(in, 0, 16, 0x842);              /* QUERY_LAG */
    ASSERT_EQ(0, mlx5dv_devx_general_cmd(m_a.ctx, in, sizeof(in), out.data(),
                                         out.size()));
    EXPECT_EQ(0u, prm_get(out.data(), 93, 3)); /* lag_state */
}

TEST_F(emu_devx_test, rc_send_write_through_umem_queues)
{
    struct mlx5_wqe_data_seg d;
    struct mlx5_cqe64 cqe;
    uint8_t segs[32];
    uint16_t idx;

    connect();
    post_recv(&m_b, 0);
    m_a.buf[10] = 0x0123456789abcdefull;
    d           = dseg(&m_a, &m_a.buf[10], 8);
    idx         = post(&m_a, MLX5_OPCODE_SEND, &d, sizeof(d));
    ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(idx, be16toh(cqe.wqe_counter));
    EXPECT_EQ(m_a.qpn, be32toh(cqe.sop_drop_qpn) & 0xffffff);
    ASSERT_TRUE(raw_cq_poll(m_b.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_RESP_SEND, cqe.op_own >> 4);
    EXPECT_EQ(8u, be32toh(cqe.byte_cnt));
    EXPECT_EQ(0u, be16toh(cqe.wqe_counter)); /* the RMP ring's slot 0 */
    EXPECT_EQ(0x0123456789abcdefull, m_b.buf[0]);

    /* RDMA WRITE: a remote-address segment, then the data */
    auto *ra     = (struct mlx5_wqe_raddr_seg *)segs;
    ra->raddr    = htobe64((uintptr_t)&m_b.buf[100]);
    ra->rkey     = htobe32(m_b.mr->rkey);
    ra->reserved = 0;
    m_a.buf[11]  = 42;
    d            = dseg(&m_a, &m_a.buf[11], 8);
    memcpy(segs + 16, &d, sizeof(d));
    post(&m_a, MLX5_OPCODE_RDMA_WRITE, segs, sizeof(segs));
    ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(42u, m_b.buf[100]);

    /* QUERY_QP: RTS, and the peer it was given */
    uint8_t in[16] = {}, out[256] = {};
    prm_set(in, 0, 16, 0x50b);
    prm_set(in, 72, 24, m_a.qpn);
    ASSERT_EQ(0,
              mlx5dv_devx_obj_query(m_a.qp, in, sizeof(in), out, sizeof(out)));
    EXPECT_EQ(3u, prm_get(out, 192, 4));       /* state: RTS */
    EXPECT_EQ(m_b.qpn, prm_get(out, 360, 24)); /* remote_qpn */
    EXPECT_EQ(m_b.lid, prm_get(out, 432, 16)); /* rlid */
}

/* A KSM key as UCX makes its atomic key: one 2 GiB entry from the MR's
 * address rounded down to 2 GiB, start_addr that plus an offset (0x7b8);
 * an atomic and a WRITE at start_addr + x land at base + x */
TEST_F(emu_devx_test, ksm_key_from_start_addr)
{
    const uint64_t base  = (uintptr_t)m_b.buf.data() & ~((1ull << 31) - 1);
    const uint64_t start = base + 0x7b8;
    uint8_t segs[48];
    struct mlx5_wqe_data_seg d;
    struct mlx5_cqe64 cqe;
    uint32_t rkey;

    connect();
    struct mlx5dv_devx_obj *mk = ksm_key(&m_b, m_b.mr, 0x7b8, &rkey);
    ASSERT_NE(nullptr, mk) << strerror(errno);

    auto *ra          = (struct mlx5_wqe_raddr_seg *)segs;
    const uint64_t at = (uintptr_t)m_b.buf.data() + 0x7b8; /* buf[0] */
    ra->raddr         = htobe64(at + 16);
    ra->rkey          = htobe32(rkey);
    ra->reserved      = 0;
    uint64_t fa[2]    = {htobe64(5), 0};
    memcpy(segs + 16, fa, 16);
    d = dseg(&m_a, &m_a.buf[20], 8);
    memcpy(segs + 32, &d, sizeof(d));
    m_b.buf[2] = 100;
    post(&m_a, MLX5_OPCODE_ATOMIC_FA, segs, sizeof(segs));
    ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(105u, m_b.buf[2]);
    EXPECT_EQ(100u, m_a.buf[20]); /* fetched, in host order */

    /* an RDMA WRITE through the key (UCX's weak fence sends a fenced PUT
     * through its atomic key) */
    struct {
        struct mlx5_wqe_raddr_seg ra;
        struct mlx5_wqe_data_seg d;
    } wr;
    wr.ra.raddr    = htobe64(at + 24);
    wr.ra.rkey     = htobe32(rkey);
    wr.ra.reserved = 0;
    m_a.buf[21]    = 77;
    wr.d           = dseg(&m_a, &m_a.buf[21], 8);
    post(&m_a, MLX5_OPCODE_RDMA_WRITE, &wr, sizeof(wr));
    ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(77u, m_b.buf[3]);

    /* below start_addr: a remote access error, the QP in error */
    ra->raddr = htobe64(start - 8);
    post(&m_a, MLX5_OPCODE_ATOMIC_FA, segs, sizeof(segs));
    ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ_ERR, cqe.op_own >> 4);
    EXPECT_EQ(0, mlx5dv_devx_obj_destroy(mk));
}

/* A registration keeps its pages, as a ConnectX's pins them: UCX's
 * uct_p2p_rma_test_xfer.fence frees its buffers (munmap) while its fenced
 * PUT, through the KSM key, is still on its way.  The PUT completes; the
 * write into the page still mapped lands, the one into the page that went
 * nowhere, and a read of that page gives zeros. */
TEST_F(emu_devx_test, write_into_pages_unmapped_since_registration)
{
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    struct mlx5_cqe64 cqe;
    uint32_t rkey;
    struct {
        struct mlx5_wqe_raddr_seg ra;
        struct mlx5_wqe_data_seg d;
    } wr;

    connect();
    auto *m = (uint8_t *)mmap(nullptr, 2 * pg, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void *)m);
    struct ibv_mr *mr = ibv_reg_mr(m_b.pd, m, 2 * pg, kAccess);
    ASSERT_NE(nullptr, mr);
    struct mlx5dv_devx_obj *mk = ksm_key(&m_b, mr, 0x418, &rkey);
    ASSERT_NE(nullptr, mk) << strerror(errno);
    /* page 0 goes: an inaccessible reservation in its place, so that no
     * other mapping takes the address while the test runs */
    ASSERT_EQ((void *)m,
              mmap(m, pg, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
                   0));

    /* 64 bytes into page 0, then 128 across into page 1 */
    memset(&m_a.buf[24], 0x6b, 128);
    for (uint64_t at :
         {(uint64_t)(uintptr_t)m + 64, (uint64_t)(uintptr_t)m + pg - 64}) {
        wr.ra.raddr    = htobe64(at + 0x418);
        wr.ra.rkey     = htobe32(rkey);
        wr.ra.reserved = 0;
        wr.d = dseg(&m_a, &m_a.buf[24], (at == (uintptr_t)m + 64) ? 64 : 128);
        post(&m_a, MLX5_OPCODE_RDMA_WRITE, &wr, sizeof(wr));
        ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
        EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    }
    EXPECT_EQ(0x6b, m[pg]);
    EXPECT_EQ(0x6b, m[pg + 63]);
    EXPECT_EQ(0, m[pg + 64]);

    /* a read across both pages through the plain key */
    m[pg]       = 0x2c;
    wr.ra.raddr = htobe64((uintptr_t)m + pg - 8);
    wr.ra.rkey  = htobe32(mr->rkey);
    wr.d        = dseg(&m_a, &m_a.buf[40], 16);
    m_a.buf[40] = m_a.buf[41] = ~0ull;
    post(&m_a, MLX5_OPCODE_RDMA_READ, &wr, sizeof(wr));
    ASSERT_TRUE(raw_cq_poll(m_a.cq, &cqe));
    EXPECT_EQ(MLX5_CQE_REQ, cqe.op_own >> 4);
    EXPECT_EQ(0u, m_a.buf[40]);
    EXPECT_EQ(0x2cu, m_a.buf[41] & 0xff);
    EXPECT_EQ(0x6b6b6b6b6b6b6b00ull, m_a.buf[41] & ~0xffull);

    EXPECT_EQ(0, mlx5dv_devx_obj_destroy(mk));
    EXPECT_EQ(0, ibv_dereg_mr(mr));
    munmap(m, 2 * pg);
}

TEST_F(emu_devx_test, last_wqe_event_on_channel)
{
    struct mlx5dv_devx_event_channel *ch;
    struct mlx5dv_devx_async_event_hdr ev;
    uint16_t type = 0x13;
    struct pollfd pfd;

    connect();
    ch = mlx5dv_devx_create_event_channel(
        m_a.ctx, MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA);
    ASSERT_NE(nullptr, ch);
    ASSERT_EQ(0, mlx5dv_devx_subscribe_devx_event(ch, m_a.qp, sizeof(type),
                                                  &type, 0x1234));
    pfd = {ch->fd, POLLIN, 0};
    EXPECT_EQ(0, ::poll(&pfd, 1, 0));        /* nothing yet */
    ASSERT_EQ(0, modify(&m_a, 0x507, &m_b)); /* 2ERR */
    ASSERT_EQ(1, ::poll(&pfd, 1, 5000));
    ASSERT_EQ((ssize_t)sizeof(ev), mlx5dv_devx_get_event(ch, &ev, sizeof(ev)));
    EXPECT_EQ(0x1234u, ev.cookie);
    /* once: a QP already in ERR moved there again raises nothing (UCX
     * asserts one event per QP) */
    ASSERT_EQ(0, modify(&m_a, 0x507, &m_b));
    EXPECT_EQ(0, ::poll(&pfd, 1, 100));
    ASSERT_EQ(0, modify(&m_a, 0x50a, &m_b)); /* 2RST */
    mlx5dv_devx_destroy_event_channel(ch);
}

TEST_F(emu_devx_test, refused_commands_bad_flow)
{
    uint8_t in[272] = {};

    /* an object-less command nobody models */
    prm_set(in, 0, 16, 0x101);
    refused(
        [&](uint8_t *out) {
            return mlx5dv_devx_general_cmd(m_a.ctx, in, 16, out, 16) == 0;
        },
        0x02, "QUERY_ADAPTER is not modelled");
    /* an object the emulation does not create: CREATE_CQ */
    prm_set(in, 0, 16, 0x400);
    refused(
        [&](uint8_t *out) {
            return mlx5dv_devx_obj_create(m_a.ctx, in, sizeof(in), out, 16) !=
                   nullptr;
        },
        0x02, "CREATE_CQ is not modelled");
    /* a QP on a PD, CQ or umem that does not exist */
    make_rmp(&m_a);
    make_qp(&m_a);
    uint8_t qp[272] = {};
    prm_set(qp, 0, 16, 0x500);
    prm_set(qp, 232, 24, 0xabcdef); /* no such PD */
    prm_set(qp, 296, 24, 1);
    refused(
        [&](uint8_t *out) {
            return mlx5dv_devx_obj_create(m_a.ctx, qp, sizeof(qp), out, 16) !=
                   nullptr;
        },
        0x05, "a PD number nobody has");
    prm_set(qp, 232, 24, m_a.pdn);
    prm_set(qp, 1192, 24, m_a.cq.dv.cqn);
    prm_set(qp, 1448, 24, m_a.cq.dv.cqn);
    prm_set(qp, 273, 4, 12); /* 4096 basic blocks: past the umem */
    prm_set(qp, 2016, 32, m_a.dbr_umem->umem_id);
    prm_set(qp, 2112, 32, m_a.sq_umem->umem_id);
    refused(
        [&](uint8_t *out) {
            return mlx5dv_devx_obj_create(m_a.ctx, qp, sizeof(qp), out, 16) !=
                   nullptr;
        },
        0x03, "a send queue larger than its umem");
    prm_set(qp, 200, 8, 0x2); /* UD */
    prm_set(qp, 273, 4, kLogSq);
    refused(
        [&](uint8_t *out) {
            return mlx5dv_devx_obj_create(m_a.ctx, qp, sizeof(qp), out, 16) !=
                   nullptr;
        },
        0x03, "a UD QP through DEVX is not modelled");
    /* a transition the QP's state does not allow: RESET -> RTS */
    refused(
        [&](uint8_t *out) {
            uint8_t m[272] = {};
            prm_set(m, 0, 16, 0x504);
            prm_set(m, 72, 24, m_a.qpn);
            return mlx5dv_devx_obj_modify(m_a.qp, m, sizeof(m), out, 16) == 0;
        },
        0x09, "RTR2RTS from RESET");
    /* a command naming another QP than the object */
    refused(
        [&](uint8_t *out) {
            uint8_t m[272] = {};
            prm_set(m, 0, 16, 0x502);
            prm_set(m, 72, 24, m_a.qpn + 1);
            return mlx5dv_devx_obj_modify(m_a.qp, m, sizeof(m), out, 16) == 0;
        },
        0x03, "another QP's number");

    /* the calls' own checks: no DEVX, not an object of the emulation */
    struct mlx5dv_context_attr attr;
    memset(&attr, 0, sizeof(attr));
    struct ibv_context *plain = mlx5dv_open_device(m_list[0], &attr);
    ASSERT_NE(nullptr, plain);
    {
        log_capture log;
        int dummy;
        EXPECT_EQ(nullptr,
                  mlx5dv_devx_umem_reg(plain, &dummy, sizeof(dummy), 0));
        EXPECT_EQ(EOPNOTSUPP, errno);
        EXPECT_EQ(nullptr, mlx5dv_devx_alloc_uar(m_a.ctx, 7));
        EXPECT_EQ(EINVAL, errno);
        EXPECT_EQ(EINVAL,
                  mlx5dv_devx_obj_destroy((struct mlx5dv_devx_obj *)&dummy));
        EXPECT_EQ(3u, log.count());
    }
    EXPECT_EQ(0, ibv_close_device(plain));
}

/* A context's UAR page goes back when it closes: a program that opens
 * and closes contexts (UCX's tests, one per entity) never runs out */
TEST_F(emu_devx_test, uar_pages_come_back)
{
    for (int i = 0; i < 200; ++i) {
        struct ibv_context *ctx = devx_open(m_list[0]);

        ASSERT_NE(nullptr, ctx);
        struct mlx5dv_devx_uar *uar = mlx5dv_devx_alloc_uar(ctx, 0);
        ASSERT_NE(nullptr, uar) << "context " << i;
        mlx5dv_devx_free_uar(uar);
        EXPECT_EQ(0, ibv_close_device(ctx));
    }
}

/* Contexts with raw queues at once: UCX's peer-failure tests hold more
 * than a hundred */
TEST_F(emu_devx_test, many_contexts_with_uar_pages)
{
    std::vector<struct ibv_context *> ctxs;
    std::vector<struct mlx5dv_devx_uar *> uars;

    for (int i = 0; i < 200; ++i) {
        ctxs.push_back(devx_open(m_list[i % 2]));
        ASSERT_NE(nullptr, ctxs.back());
        uars.push_back(mlx5dv_devx_alloc_uar(ctxs.back(), 0));
        ASSERT_NE(nullptr, uars.back()) << "context " << i;
    }
    for (size_t i = 0; i < ctxs.size(); ++i) {
        mlx5dv_devx_free_uar(uars[i]);
        EXPECT_EQ(0, ibv_close_device(ctxs[i]));
    }
}

/* A QP whose send queue is as deep as the device takes (UCX's command QP
 * of a tag list of 1023 entries has 8192 basic blocks): made without an
 * error line, however the emulation sizes the QP behind it */
TEST_F(emu_devx_test, deep_send_queue_without_error_lines)
{
    const uint32_t log_sq = 13;
    std::vector<uint8_t> sq((64u << log_sq) + 4096, 0);
    struct mlx5dv_devx_umem *umem;
    struct mlx5dv_devx_obj *qp = nullptr;
    uint32_t qpn               = 0;

    make_rmp(&m_a);
    umem = mlx5dv_devx_umem_reg(m_a.ctx, sq.data(), sq.size(), kAccess);
    ASSERT_NE(nullptr, umem);
    {
        log_capture log;
        uint8_t in[272] = {}, out[16] = {};

        prm_set(in, 0, 16, 0x500);
        prm_set(in, 200, 8, 0x0); /* st: RC */
        prm_set(in, 232, 24, m_a.pdn);
        prm_set(in, 273, 4, log_sq);
        prm_set(in, 296, 24, m_a.uar->page_id);
        prm_set(in, 1192, 24, m_a.cq.dv.cqn);
        prm_set(in, 1448, 24, m_a.cq.dv.cqn);
        prm_set(in, 1573, 3, 1);
        prm_set(in, 1576, 24, m_a.rmpn);
        prm_set(in, 2016, 32, m_a.dbr_umem->umem_id);
        prm_set(in, 2112, 32, umem->umem_id);
        qp = mlx5dv_devx_obj_create(m_a.ctx, in, sizeof(in), out, sizeof(out));
        ASSERT_NE(nullptr, qp) << strerror(errno);
        qpn = prm_get(out, 72, 24);
        EXPECT_EQ(0u, log.count());
    }
    EXPECT_NE(0u, qpn);
    EXPECT_EQ(0, mlx5dv_devx_obj_destroy(qp));
    EXPECT_EQ(0, mlx5dv_devx_umem_dereg(umem));
}
