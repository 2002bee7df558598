/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory the dcx md allocates (dcx_md_alloc.c) used as UCX uses it:
 * uct_iface_mem_alloc picks the md method first, and puts and gets into
 * such memory are copies through the soft device's mapping of it (here the
 * interfaces share one port, so the mapping is the memory itself).
 */
#include "uct_fixture.h"

#include "dcx_soft.h"
#include "log_counter.h"

#include "dcx_ucx_features.h" /* what differs between UCX versions */

#include <sys/mman.h>

extern "C" {
#include <uct/base/uct_md.h> /* uct_md_mem_alloc, uct_md_mem_free */
}

using namespace dcx_test;

/* uct_md_mem_alloc as of the UCX at hand: from 1.15 on it also takes the
 * system device the memory should be near */
static ucs_status_t md_mem_alloc(uct_md_h md, size_t *length_p,
                                 void **address_p, ucs_memory_type_t mem_type,
                                 unsigned flags, uct_mem_h *memh_p)
{
#if DCX_UCX_HAVE_MEM_ALLOC_SYS_DEV
    return uct_md_mem_alloc(md, length_p, address_p, mem_type,
                            UCS_SYS_DEVICE_ID_UNKNOWN, flags, "test", memh_p);
#else
    return uct_md_mem_alloc(md, length_p, address_p, mem_type, flags, "test",
                            memh_p);
#endif
}

class uct_dcx_alloc : public uct_dcx_test {
protected:
    virtual void SetUp()
    {
        uct_dcx_test::SetUp();
        if (!(m_md_attr.cap.flags & UCT_MD_FLAG_ALLOC)) {
            GTEST_SKIP() << "the memory domain allocates no memory";
        }
    }

    template <typename F> ucs_status_t retry(F op)
    {
        ucs_status_t status;

        while ((status = op()) == UCS_ERR_NO_RESOURCE) {
            progress();
        }
        return status;
    }

    void wait_comp(test_comp &comp, ucs_status_t status)
    {
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
            status = comp.status;
        }
        ASSERT_EQ(UCS_OK, status);
    }

    static uint8_t pattern(size_t i)
    {
        return (uint8_t)((i * 131u + (i >> 9)) | 1u);
    }
};

/* put_zcopy into and get_zcopy out of memory uct_iface_mem_alloc gave,
 * every byte checked, both executed by the initiator through the
 * allocation's mapping */
TEST_F(uct_dcx_alloc, iface_mem_alloc_put_get)
{
    const size_t len = (1u << 20) + 5;
    entity *a = create_entity(), *b = create_entity();
    uct_ep_h ep = connect(a, b);
    std::vector<char> packed(m_md_attr.rkey_packed_size);
    uct_allocated_memory_t am;
    uct_rkey_bundle_t rkb;
    dcx_soft_stats_t st0, st1;

    ASSERT_EQ(UCS_OK, uct_iface_mem_alloc(b->iface, len, UCT_MD_MEM_ACCESS_ALL,
                                          "test", &am));
    EXPECT_EQ(UCT_ALLOC_METHOD_MD, am.method);
    EXPECT_EQ(m_md, am.md);
    ASSERT_NE(nullptr, (void *)am.memh);
    ASSERT_GE(am.length, len);
    memset(am.address, 0x5a, am.length);
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, am.memh, packed.data()));
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed.data(), &rkb));

    uct_dcx_test::mem src = alloc_mem(len);
    for (size_t i = 0; i < len; ++i) {
        ((uint8_t *)src.ptr)[i] = pattern(i);
    }
    ASSERT_EQ(0, dcx_soft_stats(device(), &st0));

    test_comp put;
    uct_iov_t iov = {src.ptr, len - 3, src.memh, 0, 1};
    ASSERT_NO_FATAL_FAILURE(wait_comp(
        put, retry([&] {
            return uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)am.address + 3,
                                    rkb.rkey, &put.uct);
        })));
    flush_ep(ep);
    const uint8_t *m = (const uint8_t *)am.address;
    for (size_t i = 0; i < 3; ++i) {
        ASSERT_EQ(0x5a, m[i]);
    }
    for (size_t i = 0; i < len - 3; ++i) {
        ASSERT_EQ(pattern(i), m[3 + i]) << "byte " << i;
    }
    for (size_t i = len; i < am.length; ++i) {
        ASSERT_EQ(0x5a, m[i]);
    }

    test_comp get;
    memset(src.ptr, 0, len);
    ASSERT_NO_FATAL_FAILURE(wait_comp(
        get, retry([&] {
            return uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)am.address + 3,
                                    rkb.rkey, &get.uct);
        })));
    for (size_t i = 0; i < len - 3; ++i) {
        ASSERT_EQ(pattern(i), ((uint8_t *)src.ptr)[i]) << "byte " << i;
    }
    ASSERT_EQ(0, dcx_soft_stats(device(), &st1));
    EXPECT_EQ(st0.direct_mapped + 2, st1.direct_mapped);

    uct_rkey_release(m_component, &rkb);
    uct_iface_mem_free(&am);
}

/* uct_md_mem_alloc gives zeroed, writable memory of at least the length
 * asked for, registered (its rkey packs); mem_free releases it. */
TEST_F(uct_dcx_alloc, md_mem_alloc_free)
{
    std::vector<char> packed(m_md_attr.rkey_packed_size);
    size_t length = 10000;
    void *address = nullptr;
    uct_mem_h memh;

    ASSERT_EQ(UCS_OK,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                           UCT_MD_MEM_ACCESS_ALL, &memh));
    EXPECT_GE(length, 10000u);
    ASSERT_NE(nullptr, address);
    for (size_t i = 0; i < length; ++i) {
        ASSERT_EQ(0, ((char *)address)[i]);
    }
    memset(address, 0x7e, length);
    EXPECT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, packed.data()));
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
}

/* An allocation's memh is not a registration's and vice versa (one error
 * line each); what the md cannot allocate is refused quietly. */
TEST_F(uct_dcx_alloc, md_mem_alloc_bad_flow)
{
    std::vector<char> buf(4096);
    size_t length = 4096;
    void *address = nullptr;
    uct_mem_h memh, reg;

    ASSERT_EQ(UCS_OK,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                           UCT_MD_MEM_ACCESS_ALL, &memh));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &reg));
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_dereg(m_md, memh));
    EXPECT_EQ(1, log_counter::errors());
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_free(m_md, reg));
    EXPECT_EQ(2, log_counter::errors());
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, reg));
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));

    length = 4096;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_CUDA,
                           UCT_MD_MEM_ACCESS_ALL, &memh));
    /* at a fixed address that is not a page's: refused, one line */
    address = (char *)buf.data() + 1;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                           UCT_MD_MEM_ACCESS_ALL | UCT_MD_MEM_FLAG_FIXED,
                           &memh));
    EXPECT_EQ(3, log_counter::errors());
    length = 0;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                           UCT_MD_MEM_ACCESS_ALL, &memh));
    EXPECT_EQ(4, log_counter::errors());
    log_counter::reset();
}

/* UCT_MD_MEM_FLAG_FIXED (as OpenSHMEM's symmetric heap asks UCP): the
 * allocation lies at the address asked, and peers map it as any other; a
 * range already mapped is never replaced: refused quietly (the caller's
 * next allocator may try), what was there untouched. */
TEST_F(uct_dcx_alloc, fixed_address)
{
    const size_t len = 4 * 4096;
    size_t length    = len - 10;
    uct_mem_h memh;
    void *address;
    char *hole;

    EXPECT_TRUE(m_md_attr.cap.flags & UCT_MD_FLAG_FIXED);
    hole = (char *)mmap(nullptr, len, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void *)hole);
    memset(hole, 0x3c, len);
    log_counter::reset();
    address = hole + 4096;
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                           UCT_MD_MEM_ACCESS_ALL | UCT_MD_MEM_FLAG_FIXED,
                           &memh));
    EXPECT_EQ(0, log_counter::errors());
    for (size_t i = 0; i < len; ++i) {
        ASSERT_EQ(0x3c, hole[i]) << "byte " << i << " of the mapping changed";
    }

    ASSERT_EQ(0, munmap(hole, len)); /* the range is free now */
    address = hole;
    length  = len - 10;
    ASSERT_EQ(UCS_OK,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                           UCT_MD_MEM_ACCESS_ALL | UCT_MD_MEM_FLAG_FIXED,
                           &memh));
    EXPECT_EQ((void *)hole, address);
    EXPECT_EQ(len, length);
    for (size_t i = 0; i < len; ++i) {
        ASSERT_EQ(0, hole[i]);
    }
    memset(hole, 0x7e, len);
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
    EXPECT_EQ(0, log_counter::errors());
}
