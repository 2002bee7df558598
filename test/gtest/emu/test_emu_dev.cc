/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulation's devices: listing, contexts, device/port/GID queries and
 * the mlx5dv device calls.
 */
#include "emu_fixture.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <fstream>
#include <string>

/* The libraries this process runs on are the emulation's */
TEST(emu_load, libraries_are_the_emulation)
{
    std::ifstream maps("/proc/self/maps");
    std::string line;
    bool verbs = false, mlx5 = false;

    /* both are NEEDED by this binary, so mapped at start */
    while (std::getline(maps, line)) {
        if (line.find("libibverbs.so") != std::string::npos) {
            EXPECT_NE(std::string::npos, line.find(EMU_LIB_DIR "/")) << line;
            verbs = true;
        }
        if (line.find("libmlx5.so") != std::string::npos) {
            EXPECT_NE(std::string::npos, line.find(EMU_LIB_DIR "/")) << line;
            mlx5 = true;
        }
    }
    EXPECT_TRUE(verbs);
    EXPECT_TRUE(mlx5);
}

TEST(emu_dev, list)
{
    struct ibv_device **list;
    int num = -1;

    list = ibv_get_device_list(&num);
    ASSERT_NE(nullptr, list);
    ASSERT_EQ(EMU_TEST_DEVICES, num);
    EXPECT_EQ(nullptr, list[num]);
    for (int i = 0; i < num; ++i) {
        EXPECT_EQ("mlx5_" + std::to_string(i),
                  std::string(ibv_get_device_name(list[i])));
        EXPECT_EQ(IBV_NODE_CA, list[i]->node_type);
        EXPECT_EQ(IBV_TRANSPORT_IB, list[i]->transport_type);
        EXPECT_TRUE(mlx5dv_is_supported(list[i]));
        EXPECT_EQ(i, ibv_get_device_index(list[i]));
        EXPECT_NE(0u, ibv_get_device_guid(list[i]));
    }
    ibv_free_device_list(list);
}

TEST(emu_dev, list_bad_flow)
{
    struct ibv_device fake;
    struct ibv_context *ctx;

    memset(&fake, 0, sizeof(fake));
    strcpy(fake.name, "mlx5_9");
    /* a device that is not the emulation's is no mlx5 device */
    EXPECT_FALSE(mlx5dv_is_supported(&fake));
    {
        log_capture log;

        errno = 0;
        ctx   = ibv_open_device(&fake);
        EXPECT_EQ(nullptr, ctx);
        EXPECT_EQ(EINVAL, errno);
        EXPECT_EQ(1u, log.count());
    }
    {
        log_capture log;

        errno = 0;
        EXPECT_EQ(nullptr, mlx5dv_open_device(&fake, nullptr));
        EXPECT_EQ(EOPNOTSUPP, errno);
        EXPECT_EQ(1u, log.count());
    }
}

TEST_F(emu_test, query_device)
{
    struct ibv_device_attr_ex ex;
    struct ibv_device_attr a;

    ASSERT_EQ(0, ibv_query_device(m_ctx, &a));
    EXPECT_EQ(0x02c9u, a.vendor_id);
    EXPECT_EQ(1, a.phys_port_cnt);
    EXPECT_EQ(IBV_ATOMIC_HCA, a.atomic_cap);
    EXPECT_GT(a.max_qp_wr, 0);
    EXPECT_GT(a.max_sge, 0);
    EXPECT_GT(a.max_cqe, 0);
    EXPECT_GT(a.max_srq_wr, 0);
    EXPECT_GE(a.max_qp_init_rd_atom, 1);
    /* the backend's UMR probe needs this bit */
    EXPECT_TRUE(a.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS);
    EXPECT_STRNE("", a.fw_ver);

    /* the extended query goes through the context's op */
    ASSERT_EQ(0, ibv_query_device_ex(m_ctx, nullptr, &ex));
    EXPECT_EQ(0, memcmp(&a, &ex.orig_attr, sizeof(a)));
    EXPECT_EQ(1u, ex.phys_port_cnt_ex);
    EXPECT_EQ(0u, ex.tm_caps.flags); /* no tag matching modelled */
    EXPECT_EQ(0u, ex.odp_caps.general_caps);
}

TEST_F(emu_test, query_device_bad_flow)
{
    struct ibv_query_device_ex_input in = {1};
    struct ibv_device_attr_ex ex;

    EXPECT_EQ(EINVAL, ibv_query_device_ex(m_ctx, &in, &ex));
}

TEST_F(emu_test, query_port_gid)
{
    struct ibv_context *ctx2, *other;
    struct ibv_port_attr p, p2, po;
    struct ibv_gid_entry entry;
    union ibv_gid gid;
    __be16 pkey;

    ASSERT_EQ(0, ibv_query_port(m_ctx, 1, &p));
    EXPECT_EQ(IBV_PORT_ACTIVE, p.state);
    EXPECT_EQ(IBV_LINK_LAYER_INFINIBAND, p.link_layer);
    EXPECT_EQ(IBV_MTU_4096, p.active_mtu);
    EXPECT_NE(0, p.lid);
    EXPECT_GE(p.gid_tbl_len, 1);
    EXPECT_EQ(1u << 30, p.max_msg_sz);

    /* one port, one LID, whatever the number of contexts */
    ctx2 = ibv_open_device(m_list[0]);
    ASSERT_NE(nullptr, ctx2);
    ASSERT_EQ(0, ibv_query_port(ctx2, 1, &p2));
    EXPECT_EQ(p.lid, p2.lid);
    EXPECT_EQ(0, ibv_close_device(ctx2));
    /* another device, another port */
    other = ibv_open_device(m_list[1]);
    ASSERT_NE(nullptr, other);
    ASSERT_EQ(0, ibv_query_port(other, 1, &po));
    EXPECT_NE(p.lid, po.lid);
    EXPECT_EQ(0, ibv_close_device(other));

    ASSERT_EQ(0, ibv_query_gid(m_ctx, 1, 0, &gid));
    EXPECT_EQ(0xfe80000000000000ull, be64toh(gid.global.subnet_prefix));
    EXPECT_NE(0u, gid.global.interface_id);
    ASSERT_EQ(0, ibv_query_gid_ex(m_ctx, 1, 0, &entry, 0));
    EXPECT_EQ(IBV_GID_TYPE_IB, entry.gid_type);
    EXPECT_EQ(0, memcmp(&gid, &entry.gid, sizeof(gid)));
    ASSERT_EQ(0, ibv_query_pkey(m_ctx, 1, 0, &pkey));
    EXPECT_EQ(0xffff, be16toh(pkey));
    EXPECT_EQ(0, ibv_get_pkey_index(m_ctx, 1, pkey));
}

TEST_F(emu_test, query_port_gid_bad_flow)
{
    struct ibv_gid_entry entry;
    struct ibv_port_attr p;
    union ibv_gid gid;

    {
        log_capture log;
        EXPECT_EQ(EINVAL, ibv_query_port(m_ctx, 2, &p));
        EXPECT_EQ(1u, log.count());
    }
    {
        /* -1, not an errno, as rdma-core */
        log_capture log;
        EXPECT_EQ(-1, ibv_query_gid(m_ctx, 1, 1, &gid));
        EXPECT_EQ(1u, log.count());
    }
    {
        log_capture log;
        EXPECT_EQ(EINVAL, ibv_query_gid_ex(m_ctx, 1, 0, &entry, 1));
        EXPECT_EQ(1u, log.count());
    }
    {
        log_capture log;
        EXPECT_EQ(EINVAL, ibv_query_gid_ex(m_ctx, 1, 3, &entry, 0));
        EXPECT_EQ(1u, log.count());
    }
}

TEST_F(emu_test, dv_query_device)
{
    struct mlx5dv_context dv;

    memset(&dv, 0xa5, sizeof(dv));
    dv.comp_mask = MLX5DV_CONTEXT_MASK_DCI_STREAMS |
                   MLX5DV_CONTEXT_MASK_HCA_CORE_CLOCK;
    ASSERT_EQ(0, mlx5dv_query_device(m_ctx, &dv));
    EXPECT_EQ(0u, dv.version);
    EXPECT_TRUE(dv.flags & MLX5DV_CONTEXT_FLAGS_CQE_V1);
    /* in/out: what was filled, and the core clock is not */
    EXPECT_EQ((uint64_t)MLX5DV_CONTEXT_MASK_DCI_STREAMS, dv.comp_mask);
    /* the soft device's stream channels: 64 per DCI, as many errored */
    EXPECT_EQ(6, dv.dci_streams_caps.max_log_num_concurent);
    EXPECT_EQ(6, dv.dci_streams_caps.max_log_num_errored);
    /* a field not asked for is left alone */
    EXPECT_EQ(0xa5a5a5a5u, dv.max_dynamic_bfregs);
}

TEST_F(emu_test, dv_open_device)
{
    struct mlx5dv_context_attr attr;
    struct ibv_context *ctx;

    memset(&attr, 0, sizeof(attr));
    attr.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
    ctx        = mlx5dv_open_device(m_list[0], &attr);
    ASSERT_NE(nullptr, ctx) << strerror(errno);
    EXPECT_EQ(m_list[0], ctx->device);
    EXPECT_EQ(0, ibv_close_device(ctx));
}

TEST_F(emu_test, dv_open_device_bad_flow)
{
    struct mlx5dv_context_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.comp_mask = 1;
    {
        log_capture log;
        errno = 0;
        EXPECT_EQ(nullptr, mlx5dv_open_device(m_list[0], &attr));
        EXPECT_EQ(EINVAL, errno);
        EXPECT_EQ(1u, log.count());
    }
    attr.comp_mask = 0;
    attr.flags     = 1u << 5;
    {
        log_capture log;
        errno = 0;
        EXPECT_EQ(nullptr, mlx5dv_open_device(m_list[0], &attr));
        EXPECT_EQ(EINVAL, errno);
        EXPECT_EQ(1u, log.count());
    }
}

/* The verbs_context contract (rdma-core's inline functions rely on it) */
TEST_F(emu_test, verbs_context_layout)
{
    struct verbs_context *vctx = verbs_get_ctx(m_ctx);

    ASSERT_NE(nullptr, vctx);
    EXPECT_EQ(__VERBS_ABI_IS_EXTENDED, m_ctx->abi_compat);
    EXPECT_GE(vctx->sz, sizeof(*vctx));
    EXPECT_NE(nullptr, verbs_get_ctx_op(m_ctx, create_cq_ex));
    EXPECT_NE(nullptr, verbs_get_ctx_op(m_ctx, query_port));
    EXPECT_NE(nullptr, verbs_get_ctx_op(m_ctx, query_device_ex));
    EXPECT_NE(nullptr, m_ctx->ops.poll_cq);
    EXPECT_NE(nullptr, m_ctx->ops.post_srq_recv);
    EXPECT_GE(m_ctx->async_fd, 0);
    EXPECT_GE(m_ctx->num_comp_vectors, 1);
}
