/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Zero-length operations: InfiniBand does not validate the R_Key (nor the
 * address) of a zero-length RDMA operation, and UCX's transports accept
 * them, so a 0-byte put/get with any rkey succeeds; a zero-length uct_iov_t
 * entry needs no memory handle (no memory is accessed).  Everything else is
 * still checked: a non-empty operation with a bad rkey fails.
 */
#include "uct_fixture.h"

#include <cstring>

using namespace dcx_test;

namespace {

const uint8_t AM_ID       = 11;
const uct_rkey_t BAD_RKEY = 0xdead0001;

size_t pack_nothing(void *dest, void *arg)
{
    return 0;
}

void unpack_nothing(void *arg, const void *data, size_t length)
{
    (*static_cast<int *>(arg))++;
}

ucs_status_t count_am(void *arg, void *data, size_t length, unsigned flags)
{
    static_cast<std::vector<size_t> *>(arg)->push_back(length);
    return UCS_OK;
}

} /* namespace */


class uct_dcx_zero_len : public uct_dcx_policy_test {
protected:
    virtual void SetUp()
    {
        uct_dcx_test::SetUp();
        m_a = create_entity();
        m_b = create_entity();
        ASSERT_TRUE(m_a && m_b);
        m_ab = connect(m_a, m_b);
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, AM_ID, count_am,
                                                   &m_am_lens, 0));
        log_counter::reset();
    }

    virtual void TearDown()
    {
        EXPECT_TRUE(m_errors.empty()) << "error handler called";
        EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
        uct_dcx_test::TearDown();
    }

    template <typename F> ucs_status_t retry(F op)
    {
        ucs_status_t status;

        while ((status = op()) == UCS_ERR_NO_RESOURCE) {
            progress();
        }
        return status;
    }

    entity *m_a, *m_b;
    uct_ep_h m_ab;
    std::vector<size_t> m_am_lens;
};

TEST_P(uct_dcx_zero_len, rma_with_invalid_rkey)
{
    uint64_t dummy = 0;
    int unpacked   = 0;
    test_comp get_comp, zget_comp, zput_comp;
    uct_iov_t iov = {&dummy, 0, UCT_MEM_HANDLE_NULL, 0, 1};

    EXPECT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(m_ab, NULL, 0, 0, BAD_RKEY);
              }));
    EXPECT_EQ(0, retry([&] {
                  ssize_t len = uct_ep_put_bcopy(m_ab, pack_nothing, NULL,
                                                 0x1000, BAD_RKEY);
                  return (len < 0) ? (ucs_status_t)len : UCS_OK;
              }));
    EXPECT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_get_bcopy(m_ab, unpack_nothing, &unpacked, 0, 0,
                                          BAD_RKEY, &get_comp.uct);
              }));
    EXPECT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_put_zcopy(m_ab, &iov, 1, 0x2000, BAD_RKEY,
                                          &zput_comp.uct);
              }));
    EXPECT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_get_zcopy(m_ab, &iov, 1, 0, BAD_RKEY,
                                          &zget_comp.uct);
              }));
    flush_ep(m_ab);
    EXPECT_EQ(1, get_comp.done);
    EXPECT_EQ(UCS_OK, get_comp.status);
    EXPECT_EQ(1, unpacked);
    EXPECT_EQ(1, zput_comp.done);
    EXPECT_EQ(UCS_OK, zput_comp.status);
    EXPECT_EQ(1, zget_comp.done);
    EXPECT_EQ(UCS_OK, zget_comp.status);

    /* the endpoint is healthy: a real put lands */
    mem m          = alloc_mem(64);
    uint64_t value = 77;
    EXPECT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(m_ab, &value, sizeof(value),
                                          (uintptr_t)m.ptr, m.rkey);
              }));
    flush_ep(m_ab);
    EXPECT_EQ(77u, *(uint64_t *)m.ptr);
}

/* Zero-length iov entries without a memory handle, among real ones */
TEST_P(uct_dcx_zero_len, iov_entries_without_memh)
{
    mem src = alloc_mem(4096);
    mem dst = alloc_mem(4096);
    test_comp pcomp, gcomp, acomp;
    uint64_t hdr = 5;

    memset(src.ptr, 'q', 100);
    uct_iov_t iov[3] = {{NULL, 0, UCT_MEM_HANDLE_NULL, 0, 1},
                        {src.ptr, 100, src.memh, 0, 1},
                        {(char *)src.ptr + 200, 0, UCT_MEM_HANDLE_NULL, 0, 1}};
    EXPECT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_put_zcopy(m_ab, iov, 3, (uintptr_t)dst.ptr,
                                          dst.rkey, &pcomp.uct);
              }));
    EXPECT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_am_zcopy(m_ab, AM_ID, &hdr, sizeof(hdr), iov, 3,
                                         0, &acomp.uct);
              }));
    /* only zero-length entries: an AM with just its header */
    uct_iov_t empty = {NULL, 0, UCT_MEM_HANDLE_NULL, 0, 1};
    EXPECT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_am_zcopy(m_ab, AM_ID, &hdr, sizeof(hdr), &empty,
                                         1, 0, NULL);
              }));
    ASSERT_TRUE(wait_for([&] { return m_am_lens.size() == 2; }));
    EXPECT_EQ(sizeof(hdr) + 100, m_am_lens[0]);
    EXPECT_EQ(sizeof(hdr), m_am_lens[1]);
    flush_ep(m_ab);
    EXPECT_EQ(0, memcmp(src.ptr, dst.ptr, 100));

    memset(dst.ptr, 'g', 100);
    uct_iov_t giov[2] = {{(char *)src.ptr + 1000, 100, src.memh, 0, 1},
                         {NULL, 0, UCT_MEM_HANDLE_NULL, 0, 1}};
    EXPECT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_get_zcopy(m_ab, giov, 2, (uintptr_t)dst.ptr,
                                          dst.rkey, &gcomp.uct);
              }));
    flush_ep(m_ab);
    EXPECT_EQ(UCS_OK, gcomp.status);
    EXPECT_EQ(std::string(100, 'g'), std::string((char *)src.ptr + 1000, 100));
}

/* A non-empty entry without a memory handle is still refused */
TEST_P(uct_dcx_zero_len, nonempty_iov_without_memh_bad_flow)
{
    char buf[8];
    uct_iov_t iov = {buf, sizeof(buf), UCT_MEM_HANDLE_NULL, 0, 1};

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_put_zcopy(m_ab, &iov, 1, 0, BAD_RKEY, NULL));
    EXPECT_EQ(1, log_counter::errors());
    log_counter::reset();
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_zero_len, UCT_DCX_POLICIES);
