/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport through the UCT API, under every DCI pool policy: puts and
 * gets.  get_short is not offered; get_bcopy and put_bcopy/put_short done
 * within the call where the device can (DCX_CAP_POST_NOW), to heap memory
 * and to an interface's allocation alike, and posted otherwise; the
 * destination an endpoint's puts and gets are done to within the call, for
 * as long as that endpoint lives; put and get in each of their ways;
 * get_zcopy into memory registered without access flags.
 */
#include "uct_ops_fixture.h"
#include "dcx_ucx_features.h" /* what differs between UCX versions */

/* get_short is not offered (docs/uct-contract.md).  Before, it was, and
 * answered UCS_INPROGRESS with the data to come, which no caller can wait
 * for: UCX's uct_p2p_rma_test.get_short (sizes 0 to max_short, the data
 * expected in the buffer when the call returns UCS_OK) waited forever at
 * 0 bytes, and UCP's one caller takes anything but UCS_OK as an error.
 * Now the capability is absent, and a call anyway is refused with a status
 * and one log line, at any size, the buffer untouched; the same bytes read
 * with get_bcopy. */
TEST_P(uct_dcx_ops, get_short_not_offered)
{
    EXPECT_FALSE(m_a->attr.cap.flags & UCT_IFACE_FLAG_GET_SHORT);
    EXPECT_EQ(0u, m_a->attr.cap.get.max_short);

    mem src = alloc_mem(64);
    for (size_t i = 0; i < 64; ++i) {
        ((char *)src.ptr)[i] = (char)(i * 3 + 1);
    }
    const unsigned sizes[] = {0, 8, 64};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
        std::vector<char> buf(64, 'x');

        log_counter::reset();
        EXPECT_EQ(UCS_ERR_UNSUPPORTED,
                  uct_ep_get_short(m_ab, buf.data(), sizes[k],
                                   (uintptr_t)src.ptr, src.rkey))
            << "size " << sizes[k];
        EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
        EXPECT_TRUE(log_counter::contains("get_short"));
        EXPECT_EQ(std::vector<char>(64, 'x'), buf) << "size " << sizes[k];
    }
    log_counter::reset();

    unpack_arg got;
    ucs_status_t status = retry([&] {
        return uct_ep_get_bcopy(m_ab, unpack_cb, &got, 64, (uintptr_t)src.ptr,
                                src.rkey, NULL);
    });
    EXPECT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS))
        << ucs_status_string(status);
    flush_ep(m_ab);
    EXPECT_EQ(std::string((char *)src.ptr, 64), got.data);
}

/* get_bcopy where the device may read within the call (DCX_CAP_POST_NOW):
 * once a region was checked (the first get_bcopy to it is posted), the
 * ep's next ones unpack before returning UCS_OK, the completion untouched,
 * from heap memory and from the interface's own allocation (read through
 * its mapping) alike, and read what was stored there just before.  With a
 * fault rule armed, and under the streams policy, they are posted and
 * complete as before. */
TEST_P(uct_dcx_ops, get_bcopy_within_the_call)
{
    if (!dev_has(DCX_CAP_POST_NOW)) {
        GTEST_SKIP() << "the device does not read within the call";
    }
    const bool at_once = (GetParam() != "streams");
    dcx_soft_stats_t before, after;
    target targets[2];

    ASSERT_NO_FATAL_FAILURE(two_targets(4096, targets));

    for (size_t t = 0; t < 2; ++t) {
        char *p         = targets[t].ptr;
        uct_rkey_t rkey = targets[t].rkey;
        unpack_arg got;
        test_comp first;

        memset(p, 'a', 64);
        ucs_status_t status = retry([&] {
            return uct_ep_get_bcopy(m_ab, unpack_cb, &got, 64, (uintptr_t)p,
                                    rkey, &first.uct);
        });
        ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS));
        ASSERT_TRUE(wait_for([&] { return got.data.size() == 64; }));
        flush_ep(m_ab);

        ASSERT_EQ(0, dcx_soft_stats(device(), &before));
        for (int i = 0; i < 4; ++i) {
            test_comp comp;

            memset(p, 'b' + i, 64);
            got.data.clear();
            status = uct_ep_get_bcopy(m_ab, unpack_cb, &got, 64, (uintptr_t)p,
                                      rkey, &comp.uct);
            if (at_once) {
                ASSERT_EQ(UCS_OK, status) << "target " << t << " get " << i;
                EXPECT_EQ(std::string(64, 'b' + i), got.data);
                EXPECT_EQ(0, comp.done);
            } else {
                ASSERT_EQ(UCS_INPROGRESS, status);
                ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
                EXPECT_EQ(std::string(64, 'b' + i), got.data);
            }
        }
        ASSERT_EQ(0, dcx_soft_stats(device(), &after));
        EXPECT_EQ(4u, after.direct_reads - before.direct_reads);
        /* the allocation through its mapping, the heap by cross-memory
         * attach */
        EXPECT_EQ((t == 1) ? 4u : 0u,
                  after.direct_mapped - before.direct_mapped);

        /* a fault rule armed (on an opcode not used here): posted */
        ASSERT_EQ(0, inject_error_completion(DCX_WR_ATOMIC_CSWAP,
                                             DCX_WC_REM_OP_ERR));
        test_comp comp;
        memset(p, 'z', 64);
        ASSERT_EQ(UCS_INPROGRESS,
                  uct_ep_get_bcopy(m_ab, unpack_cb, &got, 64, (uintptr_t)p,
                                   rkey, &comp.uct));
        ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
        EXPECT_EQ(UCS_OK, comp.status);
        EXPECT_EQ(std::string(64, 'z'), got.data);
        dcx_soft_fault_clear(device());
    }
    EXPECT_TRUE(m_errors.empty());
}

/* put_bcopy where the device may write within the call (DCX_CAP_POST_NOW):
 * once the target region was checked (the first put_bcopy to it), the
 * bytes are in the target's memory when the ep's next put_bcopy returns,
 * before any progress or flush, and no WR is left to complete; the
 * interface's allocation (through its mapping) and heap memory alike.
 * With a fault rule armed, and under streams, the put is posted as
 * before and lands by the flush. */
TEST_P(uct_dcx_ops, put_bcopy_within_the_call)
{
    if (!dev_has(DCX_CAP_POST_NOW)) {
        GTEST_SKIP() << "the device does not write within the call";
    }
    const bool at_once = (GetParam() != "streams");
    dcx_soft_stats_t before, after;
    target targets[2];

    ASSERT_NO_FATAL_FAILURE(two_targets(8192, targets));
    const size_t len = 4096;

    for (size_t t = 0; t < 2; ++t) {
        char *p         = targets[t].ptr;
        uct_rkey_t rkey = targets[t].rkey;
        std::string data(len, 'a');
        pack_arg arg = {data.data(), len};

        memset(p, 0, 8192);
        ASSERT_EQ((ssize_t)len,
                  uct_ep_put_bcopy(m_ab, pack_cb, &arg, (uintptr_t)p, rkey));
        flush_ep(m_ab);
        ASSERT_EQ(0, memcmp(p, data.data(), len));

        ASSERT_EQ(0, dcx_soft_stats(device(), &before));
        for (int i = 0; i < 4; ++i) {
            data.assign(len, 'b' + i);
            ASSERT_EQ((ssize_t)len,
                      uct_ep_put_bcopy(m_ab, pack_cb, &arg, (uintptr_t)p + 1000,
                                       rkey));
            if (at_once) {
                EXPECT_EQ(0, memcmp(p + 1000, data.data(), len))
                    << "target " << t << " put " << i;
                EXPECT_EQ(UCS_OK, uct_ep_flush(m_ab, 0, NULL));
            } else {
                flush_ep(m_ab);
                EXPECT_EQ(0, memcmp(p + 1000, data.data(), len));
            }
        }
        ASSERT_EQ(0, dcx_soft_stats(device(), &after));
        EXPECT_EQ(4u, after.direct_writes - before.direct_writes);
        EXPECT_EQ((t == 1) ? 4u : 0u,
                  after.direct_mapped - before.direct_mapped);
        EXPECT_EQ('a', p[999]); /* the first put's, untouched */
        EXPECT_EQ(0, p[1000 + len]);

        /* a fault rule armed (on an opcode not used here): posted */
        ASSERT_EQ(0, inject_error_completion(DCX_WR_ATOMIC_CSWAP,
                                             DCX_WC_REM_OP_ERR));
        data.assign(len, 'z');
        ASSERT_EQ((ssize_t)len,
                  uct_ep_put_bcopy(m_ab, pack_cb, &arg, (uintptr_t)p, rkey));
        flush_ep(m_ab);
        EXPECT_EQ(0, memcmp(p, data.data(), len));
        dcx_soft_fault_clear(device());
    }
    EXPECT_TRUE(m_errors.empty());
}

/* put_short where the device writes within the call carries up to
 * seg_size bytes: past an inline WRITE's size, once the target was
 * checked, they are in the target's memory when the call returns (one copy
 * from the caller's buffer, nothing left in flight); a put the device
 * declines (the first to
 * a target, a fault rule armed) goes through a bounce buffer and lands by
 * the flush.  Heap memory and the interface's allocation alike.  Under
 * streams, whose DCIs the device never does this for, put_short keeps an
 * inline WRITE's size. */
TEST_P(uct_dcx_ops, put_short_beyond_inline)
{
    if (!dev_has(DCX_CAP_POST_NOW)) {
        GTEST_SKIP() << "the device does not write within the call";
    }
    const uct_iface_attr_t &a = m_a->attr;
    if (GetParam() == "streams") {
        EXPECT_LT(a.cap.put.max_short, a.cap.put.max_bcopy);
        return;
    }
    ASSERT_EQ(a.cap.put.max_bcopy, a.cap.put.max_short);
    const size_t len  = a.cap.put.max_short;
    const size_t size = 2 * len + 4096;
    target targets[2];

    ASSERT_NO_FATAL_FAILURE(two_targets(size, targets));
    for (size_t t = 0; t < 2; ++t) {
        char *p         = targets[t].ptr;
        uct_rkey_t rkey = targets[t].rkey;
        std::string data(len, 'a');

        memset(p, 0, size);
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_put_short(m_ab, data.data(), len,
                                              (uintptr_t)p + 64, rkey);
                  }));
        flush_ep(m_ab);
        ASSERT_EQ(0, memcmp(p + 64, data.data(), len));
        for (int i = 0; i < 3; ++i) {
            data.assign(len, 'b' + i);
            ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ab, data.data(), len,
                                               (uintptr_t)p + 64, rkey));
            EXPECT_EQ(0, memcmp(p + 64, data.data(), len))
                << "target " << t << " put " << i;
            EXPECT_EQ(UCS_OK, uct_ep_flush(m_ab, 0, NULL));
        }
        EXPECT_EQ(0, p[63]);
        EXPECT_EQ(0, p[64 + len]);

        /* a fault rule armed (on an opcode not used here): declined,
         * posted from a bounce buffer */
        ASSERT_EQ(0, inject_error_completion(DCX_WR_ATOMIC_CSWAP,
                                             DCX_WC_REM_OP_ERR));
        data.assign(len, 'z');
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_put_short(m_ab, data.data(), len,
                                              (uintptr_t)p + 64, rkey);
                  }));
        flush_ep(m_ab);
        EXPECT_EQ(0, memcmp(p + 64, data.data(), len));
        EXPECT_EQ(0, p[64 + len]);
        dcx_soft_fault_clear(device());
    }
    EXPECT_TRUE(m_errors.empty());
}

/* put_bcopy where the device writes within the call: the user's pack
 * fills the bounce buffer (never the target's memory), and once the
 * target was checked, the bytes are in the target's memory when the call
 * returns, nothing left in flight -- mapped allocation and heap memory
 * (cross-memory attach) alike, and a put ending a few bytes short of the
 * registration's end too.  Nothing around them is written; under streams
 * every put is posted, and lands by the flush. */
TEST_P(uct_dcx_ops, put_bcopy_lands_within_call)
{
    if (!dev_has(DCX_CAP_POST_NOW)) {
        GTEST_SKIP() << "the device does not write within the call";
    }
    const bool at_once = (GetParam() != "streams");
    const size_t seg   = m_a->attr.cap.put.max_bcopy;
    const size_t size  = 2 * seg + 4096;
    const size_t len   = 1000;
    target targets[2];

    ASSERT_NO_FATAL_FAILURE(two_targets(size, targets));
    for (size_t t = 0; t < 2; ++t) {
        char *p         = targets[t].ptr;
        uct_rkey_t rkey = targets[t].rkey;
        std::string data(len, 'a');
        probe_arg arg = {data.data(), len, p + 64, false};

        memset(p, 0, size);
        /* the first put to the region checks it */
        ASSERT_EQ((ssize_t)len, uct_ep_put_bcopy(m_ab, probe_pack_cb, &arg,
                                                 (uintptr_t)p + 64, rkey));
        flush_ep(m_ab);
        for (int i = 0; i < 3; ++i) {
            data.assign(len, 'b' + i);
            arg.seen = false;
            ASSERT_EQ((ssize_t)len, uct_ep_put_bcopy(m_ab, probe_pack_cb, &arg,
                                                     (uintptr_t)p + 64, rkey));
            EXPECT_FALSE(arg.seen) << "target " << t << " put " << i;
            if (at_once) {
                EXPECT_EQ(0, memcmp(p + 64, data.data(), len))
                    << "target " << t << " put " << i;
                EXPECT_EQ(UCS_OK, uct_ep_flush(m_ab, 0, NULL));
            }
            flush_ep(m_ab);
            EXPECT_EQ(0, memcmp(p + 64, data.data(), len));
        }
        EXPECT_EQ(0, p[63]);
        EXPECT_EQ(0, p[64 + len]);

        /* a few bytes short of the registration's end */
        data.assign(len, 't');
        arg.target = p + size - len - 8;
        arg.seen   = false;
        ASSERT_EQ((ssize_t)len, uct_ep_put_bcopy(m_ab, probe_pack_cb, &arg,
                                                 (uintptr_t)arg.target, rkey));
        EXPECT_FALSE(arg.seen) << "target " << t;
        flush_ep(m_ab);
        EXPECT_EQ(0, memcmp(arg.target, data.data(), len));
        EXPECT_EQ(0, p[size - 8]);
        EXPECT_EQ(0, p[size - len - 9]);
    }
    EXPECT_TRUE(m_errors.empty());
}

/* put_short's and get_bcopy's device calls keep the destination they were
 * last asked for in the interface, for as long as that ep lives: an ep
 * destroyed and another made (at the same address, where the allocator
 * gives it back) to a third interface has its puts land there, and once
 * granted, within the call (flush right after: nothing in flight), and its
 * get within the call too -- with the former destination kept, every one
 * would be declined and posted.  b's allocation is never written by the
 * second ep. */
TEST_P(uct_dcx_ops, put_short_now_after_ep_replaced)
{
    if (!dev_has(DCX_CAP_POST_NOW) || (GetParam() == "streams")) {
        GTEST_SKIP() << "the device does not write within the call here";
    }
    entity *c = create_entity();
    ASSERT_TRUE(c != NULL);
    target tb[2];
    ASSERT_NO_FATAL_FAILURE(two_targets(4096, tb));
    std::vector<char> packed(m_md_attr.rkey_packed_size);
    alloc ca;
    ASSERT_EQ(UCS_OK, uct_iface_mem_alloc(c->iface, 4096, UCT_MD_MEM_ACCESS_ALL,
                                          "test target c", &ca.am));
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, ca.am.memh, &packed[0]));
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, &packed[0], &ca.rkb));
    m_allocs.push_back(ca);
    char *cp = (char *)ca.am.address;
    memset(tb[1].ptr, 0, 4096);
    memset(cp, 0, 4096);

    uint64_t x     = 0x1111111111111111ull;
    uct_ep_h first = connect(m_a, m_b);
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_put_short(first, &x, 8,
                                              (uintptr_t)tb[1].ptr + 8 * i,
                                              tb[1].rkey);
                  }));
    }
    flush_ep(first);
    unpack_arg got;
    test_comp gcomp;
    ucs_status_t gst = uct_ep_get_bcopy(first, unpack_cb, &got, 8,
                                        (uintptr_t)tb[1].ptr, tb[1].rkey,
                                        &gcomp.uct);
    ASSERT_TRUE((gst == UCS_OK) || (gst == UCS_INPROGRESS));
    ASSERT_TRUE(wait_for([&] { return got.data.size() == 8; }));
    flush_ep(first);
    destroy_ep(first);

    uint64_t y      = 0x2222222222222222ull;
    uct_ep_h second = connect(m_a, c);
    if (second != first) { /* e.g. ASan's quarantine */
        destroy_ep(second);
        GTEST_SKIP() << "the allocator did not give the ep's address back";
    }
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_put_short(second, &y, 8,
                                              (uintptr_t)cp + 8 * i,
                                              ca.rkb.rkey);
                  }));
        if (i == 0) {
            flush_ep(second); /* the grant towards c made */
        } else {
            EXPECT_EQ(UCS_OK, uct_ep_flush(second, 0, NULL)) << "put " << i;
        }
    }
    flush_ep(second);
    /* get_bcopy's the same: within the call, from c, once granted */
    got.data.clear();
    test_comp comp2;
    EXPECT_EQ(UCS_OK, uct_ep_get_bcopy(second, unpack_cb, &got, 8,
                                       (uintptr_t)cp, ca.rkb.rkey, &comp2.uct));
    EXPECT_EQ(std::string((const char *)&y, 8), got.data);
    flush_ep(second);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(0, memcmp(cp + 8 * i, &y, 8)) << "c's word " << i;
        EXPECT_EQ(0, memcmp(tb[1].ptr + 8 * i, &x, 8)) << "b's word " << i;
    }
    EXPECT_EQ(0, cp[32]);
    EXPECT_EQ(0, tb[1].ptr[32]);
    destroy_ep(second);
}

TEST_P(uct_dcx_ops, put_short_bcopy_zcopy)
{
    mem dst = alloc_mem(1 << 20);
    mem src = alloc_mem(1 << 20);
    char small[64];
    test_comp comp;

    memset(small, 's', sizeof(small));
    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(m_ab, small, sizeof(small),
                                          (uintptr_t)dst.ptr, dst.rkey);
              }));

    std::string bc(m_a->attr.cap.put.max_bcopy, 'c');
    pack_arg arg = {bc.data(), bc.size()};
    ssize_t len;
    do {
        len = uct_ep_put_bcopy(m_ab, pack_cb, &arg, (uintptr_t)dst.ptr + 4096,
                               dst.rkey);
        if (len == UCS_ERR_NO_RESOURCE) {
            progress();
        }
    } while (len == UCS_ERR_NO_RESOURCE);
    ASSERT_EQ((ssize_t)bc.size(), len);

    memset(src.ptr, 'Z', src.length);
    uct_iov_t iov = {src.ptr, 512 * 1024, src.memh, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_put_zcopy(m_ab, &iov, 1,
                                          (uintptr_t)dst.ptr + 65536, dst.rkey,
                                          &comp.uct);
              }));
    ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
    EXPECT_EQ(UCS_OK, comp.status);
    flush_ep(m_ab);

    EXPECT_EQ(0, memcmp(dst.ptr, small, sizeof(small)));
    EXPECT_EQ(0, memcmp((char *)dst.ptr + 4096, bc.data(), bc.size()));
    EXPECT_EQ(0, memcmp((char *)dst.ptr + 65536, src.ptr, 512 * 1024));
}

TEST_P(uct_dcx_ops, get_bcopy_zcopy)
{
    mem rem = alloc_mem(1 << 20);
    mem loc = alloc_mem(1 << 20);
    unpack_arg ua;
    test_comp c1, c2;

    for (size_t i = 0; i < rem.length; ++i) {
        ((char *)rem.ptr)[i] = (char)(i * 7);
    }

    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_get_bcopy(m_ab, unpack_cb, &ua, 3000,
                                          (uintptr_t)rem.ptr + 100, rem.rkey,
                                          &c1.uct);
              }));
    uct_iov_t iov = {loc.ptr, 1 << 20, loc.memh, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_get_zcopy(m_ab, &iov, 1, (uintptr_t)rem.ptr,
                                          rem.rkey, &c2.uct);
              }));
    ASSERT_TRUE(wait_for([&] { return c1.done && c2.done; }));
    EXPECT_EQ(UCS_OK, c1.status);
    EXPECT_EQ(UCS_OK, c2.status);
    EXPECT_EQ(std::string((char *)rem.ptr + 100, 3000), ua.data);
    EXPECT_EQ(0, memcmp(loc.ptr, rem.ptr, 1 << 20));
}

/* A registration whose flags name no access at all gets every access, as
 * with UCX's own memory domains: UCP 1.18 registers the receive buffers of
 * tag-matching offload with UCT_MD_MEM_FLAG_HIDE_ERRORS alone, and the device
 * writes them.  (Before: dcx registered them read-only, the device refused
 * the write, and the sender's endpoint failed with a remote operation
 * error.) */
TEST_P(uct_dcx_ops, get_zcopy_into_reg_without_access_flags)
{
    const size_t len = 64 * 1024;
    mem rem          = alloc_mem(len);
    std::vector<char> loc(len + 4096);
    char *buf = (char *)(((uintptr_t)loc.data() + 4095) & ~(uintptr_t)4095);
    uct_mem_h memh;
    test_comp c;

#if !DCX_UCX_HAVE_MEM_REG_PARAMS
    /* UCX without uct_md_mem_reg_v2 (1.13) refuses flags without access
     * bits in uct_md_mem_reg itself, before any memory domain sees them */
    GTEST_SKIP() << "this UCX's uct_md_mem_reg refuses flags without "
                    "access bits";
#endif
    for (size_t i = 0; i < len; ++i) {
        ((char *)rem.ptr)[i] = (char)(i * 13 + 1);
    }
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf, len,
                                     UCT_MD_MEM_FLAG_HIDE_ERRORS, &memh));
    uct_iov_t iov = {buf, len, memh, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_get_zcopy(m_ab, &iov, 1, (uintptr_t)rem.ptr,
                                          rem.rkey, &c.uct);
              }));
    ASSERT_TRUE(wait_for([&] { return c.done > 0; }));
    EXPECT_EQ(UCS_OK, c.status);
    EXPECT_EQ(0, memcmp(buf, rem.ptr, len));
    EXPECT_TRUE(m_errors.empty());
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
}
