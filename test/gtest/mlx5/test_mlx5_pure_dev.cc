/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the mlx5 backend's pure rules of the device and its ports
 * (mlx5_pure_dev.c): the port address format and the GID choice,
 * timeouts, MTU and bandwidth, capability translation and the decoding of
 * QUERY_HCA_CAP answers; fed with synthetic rdma-core structs, no device
 * needed.
 */
#include <gtest/gtest.h>

extern "C" {
#include "mlx5/mlx5_pure.h"
}

#include <errno.h>
#include <string.h>

#include <vector>

/* ------------------------------------------------------------------------
 * Port address format
 * ------------------------------------------------------------------------ */
static dcx_mlx5_addr_t ib_addr()
{
    dcx_mlx5_addr_t a;

    memset(&a, 0, sizeof(a));
    a.lid = 0x1234;
    a.mtu = IBV_MTU_4096;
    return a;
}

static dcx_mlx5_addr_t roce_addr()
{
    dcx_mlx5_addr_t a;

    memset(&a, 0, sizeof(a));
    a.flags = DCX_MLX5_ADDR_F_ETH | DCX_MLX5_ADDR_F_GID |
              DCX_MLX5_ADDR_F_ROCEV2;
    a.mtu     = IBV_MTU_1024;
    /* ::ffff:192.168.1.7 */
    a.gid[10] = 0xff;
    a.gid[11] = 0xff;
    a.gid[12] = 192;
    a.gid[13] = 168;
    a.gid[14] = 1;
    a.gid[15] = 7;
    return a;
}

TEST(mlx5_addr, ib_wire_layout_is_fixed_little_endian)
{
    dcx_mlx5_addr_t a = ib_addr(), b;
    uint8_t buf[DCX_DEV_ADDR_MAX];
    size_t len = sizeof(buf);

    ASSERT_LE(DCX_MLX5_ADDR_LEN, (unsigned)DCX_DEV_ADDR_MAX);
    ASSERT_EQ(0, dcx_mlx5_addr_pack(&a, buf, &len));
    ASSERT_EQ((size_t)DCX_MLX5_ADDR_LEN, len);
    EXPECT_EQ(0x55, buf[0]);
    EXPECT_EQ(0xdc, buf[1]);
    EXPECT_EQ(DCX_MLX5_ADDR_VERSION, buf[2]);
    EXPECT_EQ(0, buf[3]);
    EXPECT_EQ(0x34, buf[4]);
    EXPECT_EQ(0x12, buf[5]);
    EXPECT_EQ(IBV_MTU_4096, buf[6]);
    EXPECT_EQ(0, buf[7]);

    ASSERT_EQ(0, dcx_mlx5_addr_unpack(buf, len, &b, NULL));
    EXPECT_EQ(0, memcmp(&a, &b, sizeof(a)));
}

TEST(mlx5_addr, roce_roundtrip)
{
    dcx_mlx5_addr_t a = roce_addr(), b;
    uint8_t buf[DCX_MLX5_ADDR_LEN];
    size_t len = sizeof(buf);

    ASSERT_EQ(0, dcx_mlx5_addr_pack(&a, buf, &len));
    ASSERT_EQ(0, dcx_mlx5_addr_unpack(buf, len, &b, NULL));
    EXPECT_EQ(a.flags, b.flags);
    EXPECT_EQ(0, memcmp(a.gid, b.gid, 16));
    EXPECT_EQ(0, memcmp(buf + 8, a.gid, 16));
}

TEST(mlx5_addr, pack_refuses_small_buffer_and_bad_address)
{
    dcx_mlx5_addr_t a = ib_addr();
    uint8_t buf[DCX_MLX5_ADDR_LEN];
    size_t len = DCX_MLX5_ADDR_LEN - 1;

    EXPECT_EQ(EINVAL, dcx_mlx5_addr_pack(&a, buf, &len));
    a.lid = 0;
    len   = sizeof(buf);
    EXPECT_EQ(EINVAL, dcx_mlx5_addr_pack(&a, buf, &len));
}

/* Each case corrupts a valid packed address in one way. */
struct bad_addr_case {
    const char *what;
    bool roce;
    size_t len;
    int offset; /* -1: no byte change */
    uint8_t value;
};

TEST(mlx5_addr, malformed_addresses_are_rejected_with_a_reason)
{
    // clang-format off
    const bad_addr_case cases[] = {
        {"short",              false, DCX_MLX5_ADDR_LEN - 1, -1, 0},
        {"long",               false, DCX_MLX5_ADDR_LEN + 1, -1, 0},
        {"empty",              false, 0, -1, 0},
        {"magic lo",           false, DCX_MLX5_ADDR_LEN, 0, 0x00},
        {"magic hi",           false, DCX_MLX5_ADDR_LEN, 1, 0xcd},
        {"version 0",          false, DCX_MLX5_ADDR_LEN, 2, 0},
        {"version 2",          false, DCX_MLX5_ADDR_LEN, 2, 2},
        {"unknown flag",       false, DCX_MLX5_ADDR_LEN, 3, 0x80},
        {"reserved",           false, DCX_MLX5_ADDR_LEN, 7, 1},
        {"mtu 0",              false, DCX_MLX5_ADDR_LEN, 6, 0},
        {"mtu 6",              false, DCX_MLX5_ADDR_LEN, 6, 6},
        {"lid 0",              false, DCX_MLX5_ADDR_LEN, 4, 0x00},
        {"multicast lid",      false, DCX_MLX5_ADDR_LEN, 5, 0xc0},
        {"rocev2 flag on ib",  false, DCX_MLX5_ADDR_LEN, 3,
         DCX_MLX5_ADDR_F_ROCEV2},
        {"gid flag, zero gid", false, DCX_MLX5_ADDR_LEN, 3,
         DCX_MLX5_ADDR_F_GID},
        {"roce without gid",   true,  DCX_MLX5_ADDR_LEN, 3,
         DCX_MLX5_ADDR_F_ETH},
    };
    // clang-format on
    uint8_t buf[DCX_MLX5_ADDR_LEN + 8];

    for (const bad_addr_case &c : cases) {
        dcx_mlx5_addr_t a = c.roce ? roce_addr() : ib_addr(), out;
        size_t len        = sizeof(buf);
        const char *why   = NULL;

        memset(buf, 0, sizeof(buf));
        ASSERT_EQ(0, dcx_mlx5_addr_pack(&a, buf, &len)) << c.what;
        if (c.what[0] == 'l' && c.what[1] == 'i') {
            buf[5] = 0; /* lid 0: clear both bytes */
        }
        if (c.offset >= 0) {
            buf[c.offset] = c.value;
        }
        EXPECT_EQ(EINVAL, dcx_mlx5_addr_unpack(buf, c.len, &out, &why))
            << c.what;
        EXPECT_NE(nullptr, why) << c.what;
    }
    EXPECT_EQ(EINVAL,
              dcx_mlx5_addr_unpack(NULL, DCX_MLX5_ADDR_LEN, NULL, NULL));
}

TEST(mlx5_addr, gid_selection_prefers_rocev2)
{
    struct ibv_gid_entry e[4];

    memset(e, 0, sizeof(e));
    e[0].gid_type    = IBV_GID_TYPE_ROCE_V2; /* empty */
    e[1].gid_type    = IBV_GID_TYPE_ROCE_V1;
    e[1].gid.raw[15] = 1;
    e[2].gid_type    = IBV_GID_TYPE_IB;
    e[2].gid.raw[15] = 2;
    e[3].gid_type    = IBV_GID_TYPE_ROCE_V2;
    e[3].gid.raw[15] = 3;
    EXPECT_EQ(3, dcx_mlx5_gid_select(e, 4));
    EXPECT_EQ(1, dcx_mlx5_gid_select(e, 3));
    EXPECT_EQ(-1, dcx_mlx5_gid_select(e, 1));
    EXPECT_EQ(-1, dcx_mlx5_gid_select(&e[2], 1));
    EXPECT_EQ(-1, dcx_mlx5_gid_select(e, 0));
}

static void set_gid(struct ibv_gid_entry *e, ibv_gid_type type,
                    const uint8_t (&raw)[16], uint32_t index)
{
    memset(e, 0, sizeof(*e));
    memcpy(e->gid.raw, raw, 16);
    e->gid_type  = type;
    e->gid_index = index;
}

/* The table a ConnectX RoCE port shows with an IPv4 and a global IPv6
 * address on its netdev: the link-local pair comes first. */
TEST(mlx5_addr, gid_selection_skips_link_local_and_prefers_ipv4)
{
    const uint8_t ll[16]   = {0xfe, 0x80, 0,    0,    0,    0,    0,    0,
                              0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55};
    const uint8_t v4[16]   = {0, 0, 0,    0,    0,  0, 0, 0,
                              0, 0, 0xff, 0xff, 10, 0, 0, 7};
    const uint8_t glob[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1,
                              0,    0,    0,    0,    0, 0, 0, 7};
    struct ibv_gid_entry e[6];

    set_gid(&e[0], IBV_GID_TYPE_ROCE_V1, ll, 0);
    set_gid(&e[1], IBV_GID_TYPE_ROCE_V2, ll, 1);
    set_gid(&e[2], IBV_GID_TYPE_ROCE_V1, glob, 2);
    set_gid(&e[3], IBV_GID_TYPE_ROCE_V2, glob, 3);
    set_gid(&e[4], IBV_GID_TYPE_ROCE_V1, v4, 4);
    set_gid(&e[5], IBV_GID_TYPE_ROCE_V2, v4, 5);

    EXPECT_EQ(5, dcx_mlx5_gid_select(e, 6)); /* v2 IPv4 */
    EXPECT_EQ(3, dcx_mlx5_gid_select(e, 5)); /* v2 global IPv6 */
    EXPECT_EQ(1, dcx_mlx5_gid_select(e, 3)); /* v2 link-local beats v1 */
    EXPECT_EQ(0, dcx_mlx5_gid_select(e, 1)); /* v1 link-local, last resort */

    /* without v2, v1 follows the same order */
    struct ibv_gid_entry v1[3] = {e[0], e[2], e[4]};
    EXPECT_EQ(2, dcx_mlx5_gid_select(v1, 3));
    EXPECT_EQ(1, dcx_mlx5_gid_select(v1, 2));

    /* ties go to the lower entry; fe80::/10 covers fe80..febf */
    struct ibv_gid_entry two[2] = {e[5], e[5]};
    EXPECT_EQ(0, dcx_mlx5_gid_select(two, 2));
    uint8_t febf[16];
    memcpy(febf, ll, 16);
    febf[1] = 0xbf;
    set_gid(&two[0], IBV_GID_TYPE_ROCE_V2, febf, 0);
    set_gid(&two[1], IBV_GID_TYPE_ROCE_V2, glob, 1);
    EXPECT_EQ(1, dcx_mlx5_gid_select(two, 2));
    febf[1] = 0xc0; /* fec0::, site-local: not link-local */
    set_gid(&two[0], IBV_GID_TYPE_ROCE_V2, febf, 0);
    EXPECT_EQ(0, dcx_mlx5_gid_select(two, 2));
}

/* ------------------------------------------------------------------------
 * Timeouts, MTU, bandwidth
 * ------------------------------------------------------------------------ */
TEST(mlx5_encoding, ack_timeout)
{
    EXPECT_EQ(0u, dcx_mlx5_timeout_to_ns(0)); /* infinite */
    EXPECT_EQ(8192u, dcx_mlx5_timeout_to_ns(1));
    EXPECT_EQ(67108864u, dcx_mlx5_timeout_to_ns(14)); /* ~67 ms */
    EXPECT_EQ(4096ull << 31, dcx_mlx5_timeout_to_ns(31));
    EXPECT_EQ(0u, dcx_mlx5_timeout_to_ns(32));
    for (uint8_t t = 1; t <= 31; ++t) {
        EXPECT_EQ(t, dcx_mlx5_timeout_from_ns(dcx_mlx5_timeout_to_ns(t)));
        if (t > 1) {
            EXPECT_EQ(t,
                      dcx_mlx5_timeout_from_ns(dcx_mlx5_timeout_to_ns(t - 1) +
                                               1));
        }
    }
    EXPECT_EQ(1, dcx_mlx5_timeout_from_ns(0));
    EXPECT_EQ(31, dcx_mlx5_timeout_from_ns(UINT64_MAX));
}

TEST(mlx5_encoding, rnr_timer_table)
{
    EXPECT_EQ(655360000u, dcx_mlx5_rnr_timer_to_ns(0));
    EXPECT_EQ(10000u, dcx_mlx5_rnr_timer_to_ns(1));
    EXPECT_EQ(640000u, dcx_mlx5_rnr_timer_to_ns(12));
    EXPECT_EQ(491520000u, dcx_mlx5_rnr_timer_to_ns(31));
    EXPECT_EQ(0u, dcx_mlx5_rnr_timer_to_ns(32));
    for (uint8_t c = 2; c <= 31; ++c) {
        EXPECT_GT(dcx_mlx5_rnr_timer_to_ns(c), dcx_mlx5_rnr_timer_to_ns(c - 1));
    }
}

TEST(mlx5_encoding, transport_params_check)
{
    dcx_qp_attr_t a;
    const char *why = NULL;

    memset(&a, 0, sizeof(a));
    a.timeout       = 31;
    a.retry_cnt     = 7;
    a.rnr_retry     = 7;
    a.min_rnr_timer = 31;
    EXPECT_EQ(0, dcx_mlx5_transport_params_check(&a, &why));
    a.timeout = 32;
    EXPECT_EQ(EINVAL, dcx_mlx5_transport_params_check(&a, &why));
    EXPECT_STREQ("timeout above 31", why);
    a.timeout   = 14;
    a.retry_cnt = 8;
    EXPECT_EQ(EINVAL, dcx_mlx5_transport_params_check(&a, &why));
    a.retry_cnt = 7;
    a.rnr_retry = 8;
    EXPECT_EQ(EINVAL, dcx_mlx5_transport_params_check(&a, &why));
    a.rnr_retry     = 7;
    a.min_rnr_timer = 32;
    EXPECT_EQ(EINVAL, dcx_mlx5_transport_params_check(&a, &why));
}

TEST(mlx5_encoding, mtu)
{
    EXPECT_EQ(256u, dcx_mlx5_mtu_bytes(IBV_MTU_256));
    EXPECT_EQ(4096u, dcx_mlx5_mtu_bytes(IBV_MTU_4096));
    EXPECT_EQ(0u, dcx_mlx5_mtu_bytes((ibv_mtu)0));
    EXPECT_EQ(0u, dcx_mlx5_mtu_bytes((ibv_mtu)6));
    for (int m = IBV_MTU_256; m <= IBV_MTU_4096; ++m) {
        EXPECT_EQ(m, dcx_mlx5_mtu_enum(dcx_mlx5_mtu_bytes((ibv_mtu)m)));
    }
    EXPECT_EQ(0, dcx_mlx5_mtu_enum(1500));
}

TEST(mlx5_encoding, link_bandwidth)
{
    /* 4x EDR = 100 Gb/s of data */
    EXPECT_NEAR(12.5e9, dcx_mlx5_link_bandwidth(2, 32), 1e3);
    /* 4x HDR ~ 206 Gb/s of data after 64/66 */
    EXPECT_NEAR(4 * 53.125e9 * 64 / 66 / 8, dcx_mlx5_link_bandwidth(2, 64),
                1e3);
    /* 1x SDR: 2 Gb/s after 8b/10b */
    EXPECT_NEAR(0.25e9, dcx_mlx5_link_bandwidth(1, 1), 1e3);
    EXPECT_EQ(0.0, dcx_mlx5_link_bandwidth(3, 32));
    EXPECT_EQ(0.0, dcx_mlx5_link_bandwidth(2, 3));
}

/* ------------------------------------------------------------------------
 * Capability translation
 * ------------------------------------------------------------------------ */
class mlx5_caps : public ::testing::Test {
protected:
    void SetUp() override
    {
        memset(&dattr, 0, sizeof(dattr));
        memset(&pattr, 0, sizeof(pattr));
        memset(&probe, 0, sizeof(probe));
        /* a ConnectX-5 as rdma-core reports it */
        strcpy(dattr.orig_attr.fw_ver, "16.35.2000");
        dattr.orig_attr.vendor_id           = 0x02c9;
        dattr.orig_attr.vendor_part_id      = 4119;
        dattr.orig_attr.max_qp              = 262144;
        dattr.orig_attr.max_qp_wr           = 32768;
        dattr.orig_attr.max_sge             = 30;
        dattr.orig_attr.max_cqe             = 4194303;
        dattr.orig_attr.max_mr              = 16777216;
        dattr.orig_attr.max_mr_size         = ~0ull;
        dattr.orig_attr.max_qp_init_rd_atom = 16;
        dattr.orig_attr.atomic_cap          = IBV_ATOMIC_HCA;
        dattr.orig_attr.max_srq_wr          = 32767;
        dattr.orig_attr.max_srq_sge         = 31;
        dattr.orig_attr.phys_port_cnt       = 1;
        /* TM is present on the device; the backend must not offer it */
        dattr.tm_caps.max_num_tags          = 127;
        dattr.tm_caps.flags                 = IBV_TM_CAP_RC;
        dattr.tm_caps.max_rndv_hdr_size     = 64;

        pattr.state        = IBV_PORT_ACTIVE;
        pattr.link_layer   = IBV_LINK_LAYER_INFINIBAND;
        pattr.lid          = 7;
        pattr.active_mtu   = IBV_MTU_4096;
        pattr.max_msg_sz   = 1u << 30;
        pattr.active_width = 2;
        pattr.active_speed = 32;

        probe.dc_ok          = true;
        probe.dct_atomic_ok  = true;
        probe.dci_max_inline = 284;
        probe.dci_max_sge    = 16;
        probe.dci_wqe_size   = 384;
    }

    ibv_device_attr_ex dattr;
    ibv_port_attr pattr;
    dcx_mlx5_probe_t probe;
    dcx_dev_caps_t caps;
};

TEST_F(mlx5_caps, connectx5_infiniband)
{
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_STREQ("mlx5_0", caps.name);
    EXPECT_STREQ("16.35.2000", caps.fw_ver);
    EXPECT_EQ((uint32_t)(DCX_CAP_DC | DCX_CAP_HELPER), caps.flags);
    EXPECT_EQ((uint32_t)(DCX_ATOMIC_FADD64 | DCX_ATOMIC_CSWAP64),
              caps.atomic_flags);
    EXPECT_EQ(0x02c9u, caps.vendor_id);
    EXPECT_EQ(4119u, caps.vendor_part_id);
    EXPECT_EQ(5461u, caps.max_qp_wr);
    EXPECT_EQ(32767u, caps.max_srq_wr);
    EXPECT_EQ(4194303u, caps.max_cqe);
    EXPECT_EQ(16u, caps.max_sge);
    /* the device takes 31, the SRQ post path at most DCX_MLX5_MAX_SGE */
    EXPECT_EQ((uint32_t)DCX_MLX5_MAX_SGE, caps.max_recv_sge);
    EXPECT_EQ(284u, caps.max_inline);
    EXPECT_EQ(16u, caps.max_rd_atomic);
    EXPECT_EQ(262144u, caps.max_dci);
    EXPECT_EQ(16777216u, caps.max_mr);
    EXPECT_EQ(~0ull, caps.max_mr_size);
    EXPECT_EQ(1ull << 30, caps.max_msg_size);
    EXPECT_EQ(4096u, caps.mtu);
    EXPECT_EQ((uint32_t)DCX_MLX5_ADDR_LEN, caps.addr_len);
    EXPECT_EQ(0u, caps.tm_max_tags);
    EXPECT_EQ(0u, caps.tm_max_rndv_hdr);
    EXPECT_EQ(0u, caps.mkey_max_entries);
    EXPECT_NEAR(12.5e9, caps.bandwidth_Bps, 1e3);
    EXPECT_GT(caps.latency_ns, 0.0);
    EXPECT_GT(caps.overhead_ns, 0.0);
}

TEST_F(mlx5_caps, never_advertises_what_is_not_implemented)
{
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(0u, caps.flags & (DCX_CAP_TM | DCX_CAP_MKEY_STRIDE));
    EXPECT_EQ(0u, caps.atomic_flags &
                      (DCX_ATOMIC_MASKED_FADD32 | DCX_ATOMIC_MASKED_FADD64 |
                       DCX_ATOMIC_MASKED_CSWAP32 | DCX_ATOMIC_MASKED_CSWAP64));
}

/* QUERY_HCA_CAP answers as the firmware gives them: the capability from
 * byte 16, fields at PRM bit offsets */
class mlx5_atomic_hca : public ::testing::Test {
protected:
    void SetUp() override
    {
        general.assign(DCX_MLX5_HCA_CAP_OUT_LEN, 0);
        atomic.assign(DCX_MLX5_HCA_CAP_OUT_LEN, 0);
        set(general, 542, 1, 1);   /* atomic */
        set(atomic, 144, 16, 0xf); /* CS, FA, masked CS, masked FA */
        set(atomic, 176, 16, 0xc); /* RC: 4 and 8 bytes */
        set(atomic, 208, 16, 0xc); /* DC: 4 and 8 bytes */
    }

    static void set(std::vector<uint8_t> &out, uint32_t bit, uint32_t width,
                    uint32_t v)
    {
        uint8_t *d     = out.data() + 16 + (bit / 32) * 4;
        uint32_t shift = 32 - (bit % 32) - width;
        uint32_t dw    = ((uint32_t)d[0] << 24) | ((uint32_t)d[1] << 16) |
                      ((uint32_t)d[2] << 8) | d[3];

        dw   = (dw & ~(((1u << width) - 1) << shift)) | (v << shift);
        d[0] = (uint8_t)(dw >> 24);
        d[1] = (uint8_t)(dw >> 16);
        d[2] = (uint8_t)(dw >> 8);
        d[3] = (uint8_t)dw;
    }

    uint32_t parse(int expect_ret = 0)
    {
        const char *why = nullptr;
        uint32_t masked = 0xdead;

        EXPECT_EQ(expect_ret,
                  dcx_mlx5_atomic_hca_parse(general.data(), atomic.data(),
                                            general.size(), &masked, &why));
        EXPECT_EQ(expect_ret == 0, why == nullptr);
        return masked;
    }

    std::vector<uint8_t> general, atomic;
};

TEST_F(mlx5_atomic_hca, masked_sizes_of_both_rc_and_dc)
{
    const uint32_t m32 = DCX_ATOMIC_MASKED_FADD32 | DCX_ATOMIC_MASKED_CSWAP32;
    const uint32_t m64 = DCX_ATOMIC_MASKED_FADD64 | DCX_ATOMIC_MASKED_CSWAP64;

    EXPECT_EQ(m32 | m64, parse());
    set(atomic, 208, 16, 0x8); /* DC: 8 bytes only */
    EXPECT_EQ(m64, parse());
    set(atomic, 176, 16, 0x4); /* RC: 4 bytes only: none on both */
    EXPECT_EQ(0u, parse());
}

TEST_F(mlx5_atomic_hca, none_without_every_operation_or_atomics)
{
    set(atomic, 144, 16, 0x7); /* no masked fetch-add */
    EXPECT_EQ(0u, parse());
    set(atomic, 144, 16, 0xf);
    set(general, 542, 1, 0); /* no atomics at all: the atomic answer unread */
    atomic[0] = 1;
    EXPECT_EQ(0u, parse());
}

TEST_F(mlx5_atomic_hca, failed_answers_bad_flow)
{
    atomic[0] = 0x2; /* status BAD_OP */
    EXPECT_EQ(0u, parse(EPROTO));
    atomic[0]  = 0;
    general[0] = 0x3;
    EXPECT_EQ(0u, parse(EPROTO));
}

/* Tag matching on DC: tag_matching (bit 1520) and rndv_offload_dc (1522)
 * of the general capabilities, the list of 2^log_tag_matching_list_sz
 * slots (bits 1523, 5 wide), one always free */
class mlx5_tm_hca : public mlx5_atomic_hca {
protected:
    void SetUp() override
    {
        mlx5_atomic_hca::SetUp();
        set(general, 1520, 1, 1);
        set(general, 1521, 1, 0); /* no RC rendezvous offload: not needed */
        set(general, 1522, 1, 1);
        set(general, 1523, 5, 10);
    }

    uint32_t tm_parse(int expect_ret, const char **why_p)
    {
        uint32_t max_tags = 0xdead;

        *why_p = nullptr;
        EXPECT_EQ(expect_ret,
                  dcx_mlx5_tm_hca_parse(general.data(), general.size(),
                                        &max_tags, why_p));
        return max_tags;
    }
};

TEST_F(mlx5_tm_hca, list_size_from_log)
{
    const char *why;

    EXPECT_EQ(1023u, tm_parse(0, &why));
    EXPECT_EQ(nullptr, why);
    set(general, 1523, 5, 1);
    EXPECT_EQ(1u, tm_parse(0, &why));
    set(general, 1523, 5, 16); /* an XRQ's list takes 2^15 slots */
    EXPECT_EQ(32767u, tm_parse(0, &why));
}

TEST_F(mlx5_tm_hca, none_without_dc_offload_bad_flow)
{
    const char *why;

    set(general, 1522, 1, 0); /* RC only */
    EXPECT_EQ(0u, tm_parse(0, &why));
    EXPECT_NE(nullptr, why);
    set(general, 1522, 1, 1);
    set(general, 1520, 1, 0);
    EXPECT_EQ(0u, tm_parse(0, &why));
    EXPECT_NE(nullptr, why);
    set(general, 1520, 1, 1);
    set(general, 1523, 5, 0); /* a list of one slot holds no entry */
    EXPECT_EQ(0u, tm_parse(0, &why));
    EXPECT_NE(nullptr, why);
}

TEST_F(mlx5_tm_hca, failed_answer_bad_flow)
{
    const char *why;

    general[0] = 0x3;
    EXPECT_EQ(0u, tm_parse(EPROTO, &why));
    EXPECT_NE(nullptr, why);
    general[0] = 0;
    general.resize(100);
    EXPECT_EQ(0u, tm_parse(EPROTO, &why));
}

TEST(mlx5_prm, set_writes_only_its_field)
{
    uint8_t b[16];

    memset(b, 0xff, sizeof(b));
    dcx_mlx5_prm_set(b, 13, 7, 0);
    EXPECT_EQ(0u, dcx_mlx5_prm_get(b, 13, 7));
    EXPECT_EQ(1u, dcx_mlx5_prm_get(b, 12, 1));
    EXPECT_EQ(1u, dcx_mlx5_prm_get(b, 20, 1));
    dcx_mlx5_prm_set(b, 13, 7, 0x55);
    EXPECT_EQ(0x55u, dcx_mlx5_prm_get(b, 13, 7));
    memset(b, 0, sizeof(b));
    dcx_mlx5_prm_set(b, 32, 32, 0x12345678u);
    EXPECT_EQ(0x12, b[4]);
    EXPECT_EQ(0x78, b[7]);
    dcx_mlx5_prm_set64(b, 64, 0x0102030405060708ull);
    EXPECT_EQ(0x01, b[8]);
    EXPECT_EQ(0x08, b[15]);
    EXPECT_EQ(0, b[3]);
}

TEST(mlx5_hca, query_command_names_its_type)
{
    uint8_t in[DCX_MLX5_HCA_CAP_IN_LEN];

    dcx_mlx5_hca_cap_query_in(in, DCX_MLX5_CAP_ATOMIC);
    EXPECT_EQ(0x01, in[0]);
    EXPECT_EQ(0x00, in[1]);
    EXPECT_EQ(0x00, in[6]);
    EXPECT_EQ(0x07, in[7]); /* atomic (3) << 1 | current */
}

TEST_F(mlx5_caps, atomics_need_device_and_dct_support)
{
    dattr.orig_attr.atomic_cap = IBV_ATOMIC_NONE;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(0u, caps.atomic_flags);

    dattr.orig_attr.atomic_cap = IBV_ATOMIC_GLOB;
    probe.dct_atomic_ok        = false;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(0u, caps.atomic_flags);
}

TEST_F(mlx5_caps, receive_sge_is_what_srq_create_accepts)
{
    dattr.orig_attr.max_srq_sge = 4;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(4u, caps.max_recv_sge);
    dattr.orig_attr.max_srq_sge = DCX_MLX5_MAX_SGE + 1;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ((uint32_t)DCX_MLX5_MAX_SGE, caps.max_recv_sge);
    EXPECT_LE(caps.max_sge, (uint32_t)DCX_MLX5_MAX_SGE);
}

TEST_F(mlx5_caps, rd_atomic_is_what_a_dci_reached_rts_with)
{
    /* not probed: the RC limit verbs reports */
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(16u, caps.max_rd_atomic);
    /* the DC limit is lower on this device */
    probe.dci_max_rd_atomic = 4;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(4u, caps.max_rd_atomic);
    /* never above what verbs reports */
    probe.dci_max_rd_atomic = 64;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(16u, caps.max_rd_atomic);
}

TEST(mlx5_rd_atomic, probe_sequence_is_powers_of_two_down_to_one)
{
    std::vector<uint32_t> seq;

    for (uint32_t rd = dcx_mlx5_rd_atomic_first(16); rd != 0;
         rd          = dcx_mlx5_rd_atomic_next(rd)) {
        seq.push_back(rd);
    }
    EXPECT_EQ((std::vector<uint32_t>{16, 8, 4, 2, 1}), seq);
    /* the kernel rounds up to a power of two: never start above the limit */
    EXPECT_EQ(16u, dcx_mlx5_rd_atomic_first(24));
    EXPECT_EQ(1u, dcx_mlx5_rd_atomic_first(1));
    EXPECT_EQ(0u, dcx_mlx5_rd_atomic_first(0));
    EXPECT_EQ(0u, dcx_mlx5_rd_atomic_first(-1));
    /* the verbs field is 8 bits */
    EXPECT_EQ(128u, dcx_mlx5_rd_atomic_first(1 << 20));
    EXPECT_EQ(0u, dcx_mlx5_rd_atomic_next(1));
}

TEST_F(mlx5_caps, no_dc_without_a_dci)
{
    probe.dc_ok = false;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(0u, caps.flags & DCX_CAP_DC);
}

TEST_F(mlx5_caps, roce_port_and_long_names)
{
    std::string name(100, 'x');

    pattr.link_layer = IBV_LINK_LAYER_ETHERNET;
    pattr.lid        = 0;
    pattr.active_mtu = IBV_MTU_1024;
    dcx_mlx5_caps_translate(name.c_str(), &dattr, &pattr, &probe, &caps);
    EXPECT_EQ(1024u, caps.mtu);
    EXPECT_EQ(DCX_DEV_NAME_MAX - 1, (int)strlen(caps.name));

    ibv_port_attr ib = pattr;
    ib.link_layer    = IBV_LINK_LAYER_INFINIBAND;
    dcx_dev_caps_t ib_caps;
    dcx_mlx5_caps_translate("mlx5_0", &dattr, &ib, &probe, &ib_caps);
    EXPECT_GT(caps.latency_ns, ib_caps.latency_ns);
}

TEST_F(mlx5_caps, port_check)
{
    const char *why = NULL;

    EXPECT_EQ(0, dcx_mlx5_port_check(&pattr, &why));
    pattr.state = IBV_PORT_DOWN;
    EXPECT_EQ(ENODEV, dcx_mlx5_port_check(&pattr, &why));
    pattr.state = IBV_PORT_ACTIVE;
    pattr.lid   = 0;
    EXPECT_EQ(ENODEV, dcx_mlx5_port_check(&pattr, &why));
    pattr.link_layer = IBV_LINK_LAYER_ETHERNET; /* RoCE: no LID needed */
    EXPECT_EQ(0, dcx_mlx5_port_check(&pattr, &why));
    pattr.link_layer = 7;
    EXPECT_EQ(ENODEV, dcx_mlx5_port_check(&pattr, &why));
    pattr.link_layer = IBV_LINK_LAYER_ETHERNET;
    pattr.active_mtu = (ibv_mtu)0;
    EXPECT_EQ(ENODEV, dcx_mlx5_port_check(&pattr, &why));
    EXPECT_NE(nullptr, why);
}
