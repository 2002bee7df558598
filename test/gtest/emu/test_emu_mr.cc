/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulation's protection domains, memory regions and address handles.
 */
#include "emu_fixture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

TEST_F(emu_test, reg_mr)
{
    std::vector<char> buf(8192);
    struct ibv_mr *mr, *mr2, *mr3;
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

    /* a constant access: the macro calls ibv_reg_mr itself */
    mr = ibv_reg_mr(m_pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(nullptr, mr) << strerror(errno);
    EXPECT_EQ(m_ctx, mr->context);
    EXPECT_EQ(m_pd, mr->pd);
    EXPECT_EQ(buf.data(), mr->addr);
    EXPECT_EQ(buf.size(), mr->length);
    /* a variable access: through ibv_reg_mr_iova2 */
    mr2 = ibv_reg_mr(m_pd, buf.data(), 4096, access);
    ASSERT_NE(nullptr, mr2) << strerror(errno);
    EXPECT_NE(mr->lkey, mr2->lkey);
    /* an optional access bit the device lacks is dropped, not refused */
    mr3 = ibv_reg_mr_iova(m_pd, buf.data(), 64, (uintptr_t)buf.data(),
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
    ASSERT_NE(nullptr, mr3) << strerror(errno);
    EXPECT_EQ(0, ibv_dereg_mr(mr3));
    EXPECT_EQ(0, ibv_dereg_mr(mr2));
    EXPECT_EQ(0, ibv_dereg_mr(mr));
}

TEST_F(emu_test, reg_mr_bad_flow)
{
    std::vector<char> buf(4096);
    static const struct {
        int access;
        int err;
        const char *why;
    } cases[] = {
        {IBV_ACCESS_REMOTE_WRITE, EINVAL, "remote write without local"},
        {IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ, EINVAL,
         "remote atomic without local write"},
        {IBV_ACCESS_LOCAL_WRITE | (1 << 12), EINVAL, "unknown bit"},
        {IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND, EOPNOTSUPP, "no ODP"},
        {IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED, EOPNOTSUPP,
         "zero-based"},
    };

    for (const auto &c : cases) {
        log_capture log;

        errno = 0;
        EXPECT_EQ(nullptr, ibv_reg_mr(m_pd, buf.data(), buf.size(), c.access))
            << c.why;
        EXPECT_EQ(c.err, errno) << c.why;
        EXPECT_EQ(1u, log.count()) << c.why;
    }
    {
        log_capture log;

        errno = 0;
        EXPECT_EQ(nullptr,
                  ibv_reg_mr(m_pd, buf.data(), 0, IBV_ACCESS_LOCAL_WRITE));
        EXPECT_EQ(EINVAL, errno);
        EXPECT_EQ(1u, log.count());
    }
    {
        log_capture log;

        errno = 0;
        EXPECT_EQ(nullptr, ibv_reg_mr_iova(m_pd, buf.data(), buf.size(), 0,
                                           IBV_ACCESS_LOCAL_WRITE));
        EXPECT_EQ(EOPNOTSUPP, errno);
        EXPECT_EQ(1u, log.count());
    }
}

TEST_F(emu_test, dealloc_pd_bad_flow)
{
    std::vector<char> buf(4096);
    struct ibv_pd *pd = ibv_alloc_pd(m_ctx);
    struct ibv_mr *mr;

    ASSERT_NE(nullptr, pd);
    mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(nullptr, mr);
    {
        log_capture log;
        EXPECT_EQ(EBUSY, ibv_dealloc_pd(pd));
        EXPECT_EQ(1u, log.count());
    }
    EXPECT_EQ(0, ibv_dereg_mr(mr));
    EXPECT_EQ(0, ibv_dealloc_pd(pd));
}

TEST_F(emu_test, create_ah)
{
    struct ibv_context *other = ibv_open_device(m_list[1]);
    struct ibv_port_attr port, oport;
    struct ibv_ah_attr attr;
    struct ibv_ah *ah;
    union ibv_gid gid;

    ASSERT_NE(nullptr, other);
    ASSERT_EQ(0, ibv_query_port(m_ctx, 1, &port));
    ASSERT_EQ(0, ibv_query_port(other, 1, &oport));

    /* by LID: our own port, and the other device's */
    memset(&attr, 0, sizeof(attr));
    attr.port_num = 1;
    for (uint16_t lid : {port.lid, oport.lid}) {
        attr.dlid = lid;
        ah        = ibv_create_ah(m_pd, &attr);
        ASSERT_NE(nullptr, ah) << strerror(errno);
        EXPECT_EQ(m_pd, ah->pd);
        EXPECT_EQ(0, ibv_destroy_ah(ah));
    }
    /* global, by the other port's GID 0 */
    ASSERT_EQ(0, ibv_query_gid(other, 1, 0, &gid));
    attr.dlid          = 0;
    attr.is_global     = 1;
    attr.grh.dgid      = gid;
    attr.grh.hop_limit = 64;
    ah                 = ibv_create_ah(m_pd, &attr);
    ASSERT_NE(nullptr, ah) << strerror(errno);
    EXPECT_EQ(0, ibv_destroy_ah(ah));
    /* a LID no port holds: accepted (sends through it time out) */
    attr.is_global = 0;
    attr.dlid      = 0xbfff;
    ah             = ibv_create_ah(m_pd, &attr);
    ASSERT_NE(nullptr, ah) << strerror(errno);
    EXPECT_EQ(0, ibv_destroy_ah(ah));
    EXPECT_EQ(0, ibv_close_device(other));
}

TEST_F(emu_test, create_ah_bad_flow)
{
    struct ibv_ah_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.dlid     = 1;
    attr.port_num = 2;
    {
        /* libmlx5 leaves errno alone here */
        log_capture log;
        errno = 12345;
        EXPECT_EQ(nullptr, ibv_create_ah(m_pd, &attr));
        EXPECT_EQ(12345, errno);
        EXPECT_EQ(1u, log.count());
    }
    attr.port_num       = 1;
    attr.is_global      = 1;
    attr.grh.sgid_index = 1;
    {
        log_capture log;
        errno = 0;
        EXPECT_EQ(nullptr, ibv_create_ah(m_pd, &attr));
        EXPECT_EQ(EINVAL, errno);
        EXPECT_EQ(1u, log.count());
    }
}
