/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport through the UCT API: every operation, under every DCI pool
 * policy; flush, fence, pending; flow control under a flood.
 */
#include "uct_fixture.h"
#include "dcx_ucx_features.h" /* what differs between UCX versions */

#include <cstring>
#include <algorithm>
#include <set>
#include <thread>

using namespace dcx_test;

namespace {

const uint8_t AM_ID = 5;

struct am_rx {
    int count;
    size_t bytes;
    bool keep; /* return UCS_INPROGRESS */
    std::vector<void *> kept;
    std::vector<std::string> payloads;

    am_rx() : count(0), bytes(0), keep(false) {}

    static ucs_status_t cb(void *arg, void *data, size_t length, unsigned flags)
    {
        am_rx *self = static_cast<am_rx *>(arg);

        /* a message lent where the device received it (a receive in
         * place) has no descriptor to keep; the tests that keep send
         * messages no device lends */
        EXPECT_TRUE((flags & UCT_CB_PARAM_FLAG_DESC) || !self->keep);
        self->count++;
        self->bytes += length;
        if (self->payloads.size() < 64) {
            self->payloads.push_back(std::string((char *)data, length));
        }
        if (self->keep) {
            self->kept.push_back(data);
            return UCS_INPROGRESS;
        }
        return UCS_OK;
    }
};

struct pack_arg {
    const void *data;
    size_t length;
};

size_t pack_cb(void *dest, void *arg)
{
    pack_arg *a = static_cast<pack_arg *>(arg);

    memcpy(dest, a->data, a->length);
    return a->length;
}

struct unpack_arg {
    std::string data;
};

/* pack_cb's bytes, and whether they were already in the target's memory
 * when the pack returned: packed in place */
struct probe_arg {
    const char *data;
    size_t length;
    const char *target;
    bool seen;
};

size_t probe_pack_cb(void *dest, void *arg)
{
    probe_arg *a = static_cast<probe_arg *>(arg);

    memcpy(dest, a->data, a->length);
    a->seen = (memcmp(a->target, a->data, a->length) == 0);
    return a->length;
}

void unpack_cb(void *arg, const void *data, size_t length)
{
    static_cast<unpack_arg *>(arg)->data.assign((const char *)data, length);
}

} /* namespace */


class uct_dcx_ops : public uct_dcx_policy_test {
protected:
    virtual void SetUp()
    {
        uct_dcx_test::SetUp();
        m_a = create_entity();
        m_b = create_entity();
        ASSERT_TRUE((m_a != NULL) && (m_b != NULL));
        m_ab = connect(m_a, m_b);
        m_ba = connect(m_b, m_a);
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, AM_ID, am_rx::cb,
                                                   &m_rx, 0));
    }

    virtual void TearDown()
    {
        for (size_t i = 0; i < m_rx.kept.size(); ++i) {
            uct_iface_release_desc((char *)m_rx.kept[i] - 16);
        }
        for (size_t i = 0; i < m_allocs.size(); ++i) {
            uct_rkey_release(m_component, &m_allocs[i].rkb);
            uct_iface_mem_free(&m_allocs[i].am);
        }
        uct_dcx_test::TearDown();
        EXPECT_EQ(0, log_counter::errors()) << log_counter::messages()[0];
    }

    /* The two kinds of memory a one-sided operation meets at b, len bytes
     * each with its rkey: heap memory, registered, and an allocation of
     * b's interface, which peers reach through a mapping (released at
     * TearDown) */
    struct target {
        char *ptr;
        uct_rkey_t rkey;
    };
    void two_targets(size_t len, target t[2])
    {
        std::vector<char> packed(m_md_attr.rkey_packed_size);
        mem heap = alloc_mem(len);
        alloc a;

        ASSERT_EQ(UCS_OK,
                  uct_iface_mem_alloc(m_b->iface, len, UCT_MD_MEM_ACCESS_ALL,
                                      "test target", &a.am));
        ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, a.am.memh, &packed[0]));
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, &packed[0], &a.rkb));
        m_allocs.push_back(a);
        t[0] = {(char *)heap.ptr, heap.rkey};
        t[1] = {(char *)a.am.address, a.rkb.rkey};
    }

    /* retries while the transport is out of resources */
    template <typename F> ucs_status_t retry(F op)
    {
        ucs_status_t status;

        while ((status = op()) == UCS_ERR_NO_RESOURCE) {
            progress();
        }
        return status;
    }

    entity *m_a, *m_b;
    uct_ep_h m_ab, m_ba;
    am_rx m_rx;
    struct alloc {
        uct_allocated_memory_t am;
        uct_rkey_bundle_t rkb;
    };
    std::vector<alloc> m_allocs; /* two_targets' */
};

TEST_P(uct_dcx_ops, iface_attr)
{
    const uct_iface_attr_t &a = m_a->attr;

    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_PENDING);
    EXPECT_TRUE(a.cap.flags & UCT_IFACE_FLAG_EP_CHECK);
    EXPECT_GT(a.cap.am.max_short, 8u);
    EXPECT_GT(a.cap.am.max_bcopy, a.cap.am.max_short);
    EXPECT_GE(a.cap.am.max_iov, 1u);
    EXPECT_GT(a.bandwidth.shared + a.bandwidth.dedicated, 0.0);
    EXPECT_GT(a.latency.c, 0.0);
    EXPECT_EQ(a.device_addr_len, m_a->dev_addr.size());
}

TEST_P(uct_dcx_ops, am_short)
{
    std::string payload(m_a->attr.cap.am.max_short - 8, 'x');
    uint64_t hdr = 0x1122334455667788ull;

    for (int i = 0; i < 100; ++i) {
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_am_short(m_ab, AM_ID, hdr, payload.data(),
                                             payload.size());
                  }));
    }
    ASSERT_TRUE(wait_for([&] { return m_rx.count == 100; }));
    ASSERT_EQ(8 + payload.size(), m_rx.payloads[0].size());
    EXPECT_EQ(0, memcmp(m_rx.payloads[0].data(), &hdr, 8));
    EXPECT_EQ(payload, m_rx.payloads[0].substr(8));
    flush_ep(m_ab);
}

TEST_P(uct_dcx_ops, am_short_bad_flow)
{
    std::string big(m_a->attr.cap.am.max_short, 'x');

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_am_short(m_ab, AM_ID, 0, big.data(), big.size()));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_am_short(m_ab, UCT_AM_ID_MAX, 0, NULL, 0));
    EXPECT_EQ(2, log_counter::errors());
    log_counter::reset();
}

TEST_P(uct_dcx_ops, am_short_iov)
{
    char a[] = "hello ", b[] = "dc ", c[] = "world";
    uct_iov_t iov[3];

    iov[0] = {a, 6, UCT_MEM_HANDLE_NULL, 0, 1};
    iov[1] = {b, 3, UCT_MEM_HANDLE_NULL, 0, 1};
    iov[2] = {c, 5, UCT_MEM_HANDLE_NULL, 0, 1};
    ASSERT_EQ(UCS_OK,
              retry([&] { return uct_ep_am_short_iov(m_ab, AM_ID, iov, 3); }));
    ASSERT_TRUE(wait_for([&] { return m_rx.count == 1; }));
    EXPECT_EQ("hello dc world", m_rx.payloads[0]);
}

/* Every length an inline WQE's pieces take, each byte its own: a backend
 * that copies short pieces by words (overlapping ones, or bytes under 4)
 * must place each exactly, for an AM's two pieces (header, payload) and
 * for a put's one, and write nothing past its end. */
TEST_P(uct_dcx_ops, short_ops_every_length)
{
    const size_t max_am  = std::min<size_t>(m_a->attr.cap.am.max_short - 8, 80);
    const size_t max_put = std::min<size_t>(m_a->attr.cap.put.max_short, 80);
    const size_t guard   = 16;
    mem dst              = alloc_mem(4096);
    uint8_t src[80];
    size_t len, i;

    for (i = 0; i < sizeof(src); ++i) {
        src[i] = (uint8_t)(i * 7 + 1);
    }
    for (len = 0; len <= max_am; ++len) {
        uint64_t hdr = 0x0102030405060708ull * (len + 1);

        m_rx.payloads.clear();
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_am_short(m_ab, AM_ID, hdr,
                                             (len == 0) ? NULL : src, len);
                  }));
        ASSERT_TRUE(wait_for([&] { return !m_rx.payloads.empty(); }));
        ASSERT_EQ(8 + len, m_rx.payloads[0].size()) << "payload of " << len;
        EXPECT_EQ(0, memcmp(m_rx.payloads[0].data(), &hdr, 8)) << len;
        EXPECT_EQ(0, memcmp(m_rx.payloads[0].data() + 8, src, len)) << len;
    }
    for (len = 1; len <= max_put; ++len) {
        uint8_t *at = (uint8_t *)dst.ptr + 64;

        memset(dst.ptr, 0xee, 64 + max_put + guard);
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_put_short(m_ab, src, len, (uintptr_t)at,
                                              dst.rkey);
                  }));
        flush_ep(m_ab);
        ASSERT_EQ(0, memcmp(at, src, len)) << "put of " << len;
        for (i = 0; i < 64; ++i) {
            ASSERT_EQ(0xee, ((uint8_t *)dst.ptr)[i]) << len << " before " << i;
        }
        for (i = len; i < max_put + guard; ++i) {
            ASSERT_EQ(0xee, at[i]) << len << " past " << i;
        }
    }
    flush_ep(m_ab);
}

TEST_P(uct_dcx_ops, am_bcopy_and_keep_desc)
{
    std::string payload(m_a->attr.cap.am.max_bcopy, 'b');
    pack_arg arg = {payload.data(), payload.size()};

    m_rx.keep = true;
    for (int i = 0; i < 20; ++i) {
        ssize_t len;
        do {
            len = uct_ep_am_bcopy(m_ab, AM_ID, pack_cb, &arg, 0);
            if (len == UCS_ERR_NO_RESOURCE) {
                progress();
            }
        } while (len == UCS_ERR_NO_RESOURCE);
        ASSERT_EQ((ssize_t)payload.size(), len);
    }
    ASSERT_TRUE(wait_for([&] { return m_rx.count == 20; }));
    EXPECT_EQ(payload, m_rx.payloads[19]);
    /* held descriptors still contain their data */
    EXPECT_EQ(0, memcmp(m_rx.kept[3], payload.data(), payload.size()));
    for (size_t i = 0; i < m_rx.kept.size(); ++i) {
        uct_iface_release_desc((char *)m_rx.kept[i] - 16);
    }
    m_rx.kept.clear();
    flush_ep(m_ab);
}

TEST_P(uct_dcx_ops, am_zcopy)
{
    mem m        = alloc_mem(4096);
    uint64_t hdr = 0xabcdef;
    test_comp comp;
    uct_iov_t iov[2];

    memset(m.ptr, 'z', 4096);
    iov[0]              = {m.ptr, 1000, m.memh, 0, 1};
    iov[1]              = {(char *)m.ptr + 2000, 2000, m.memh, 0, 1};
    ucs_status_t status = retry([&] {
        return uct_ep_am_zcopy(m_ab, AM_ID, &hdr, sizeof(hdr), iov, 2, 0,
                               &comp.uct);
    });
    ASSERT_EQ(UCS_INPROGRESS, status);
    ASSERT_TRUE(wait_for([&] { return (m_rx.count == 1) && comp.done; }));
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_EQ(8u + 3000u, m_rx.payloads[0].size());
    EXPECT_EQ(std::string(3000, 'z'), m_rx.payloads[0].substr(8));
}

TEST_P(uct_dcx_ops, am_zcopy_bad_flow)
{
    uct_iov_t iov[1] = {{NULL, 10, UCT_MEM_HANDLE_NULL, 0, 1}};

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_am_zcopy(m_ab, AM_ID, NULL, 0, iov, 1, 0, NULL));
    EXPECT_EQ(1, log_counter::errors());
    log_counter::reset();
}

/* The user header is limited to cap.am.max_hdr like the payload to
 * max_zcopy: one byte more is refused, not truncated on the wire */
TEST_P(uct_dcx_ops, am_zcopy_header_length_bad_flow)
{
    size_t max_hdr = m_a->attr.cap.am.max_hdr;
    mem m          = alloc_mem(4096);
    std::vector<char> hdr(max_hdr + 1, 'h');
    uct_iov_t iov = {m.ptr, 1, m.memh, 0, 1};
    test_comp comp;

    ASSERT_LE(max_hdr + 2, m_a->attr.cap.am.max_zcopy);
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_am_zcopy(m_ab, AM_ID, hdr.data(), max_hdr + 1, &iov, 1, 0,
                              NULL));
    EXPECT_EQ(1, log_counter::errors());
    EXPECT_TRUE(log_counter::contains("length")) << log_counter::joined();
    log_counter::reset();

    /* max_hdr itself goes through whole */
    memset(m.ptr, 'p', 1);
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_am_zcopy(m_ab, AM_ID, hdr.data(), max_hdr, &iov,
                                         1, 0, &comp.uct);
              }));
    ASSERT_TRUE(wait_for([&] { return (m_rx.count == 1) && comp.done; }));
    EXPECT_EQ(std::string(max_hdr, 'h') + "p", m_rx.payloads[0]);
}

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

/* The interface offers, at one width, every atomic the two tests below
 * use: post ADD/AND/OR/XOR, fetch those and SWAP and CSWAP */
static bool offers_all_atomics(uint64_t op_flags, uint64_t fop_flags)
{
    const uint64_t ops = UCS_BIT(UCT_ATOMIC_OP_ADD) |
                         UCS_BIT(UCT_ATOMIC_OP_AND) |
                         UCS_BIT(UCT_ATOMIC_OP_OR) | UCS_BIT(UCT_ATOMIC_OP_XOR);
    const uint64_t fops = ops | UCS_BIT(UCT_ATOMIC_OP_SWAP) |
                          UCS_BIT(UCT_ATOMIC_OP_CSWAP);

    return ((op_flags & ops) == ops) && ((fop_flags & fops) == fops);
}

TEST_P(uct_dcx_ops, atomics64)
{
    mem m                     = alloc_mem(64);
    uint64_t *v               = (uint64_t *)m.ptr;
    uint64_t result           = 0;
    uintptr_t addr            = (uintptr_t)m.ptr;
    const uct_iface_attr_t &a = m_a->attr;

    if (!offers_all_atomics(a.cap.atomic64.op_flags,
                            a.cap.atomic64.fop_flags)) {
        GTEST_SKIP() << "the device lacks some 64-bit atomic operations "
                        "(uct_dcx_atomic.advertised covers those it has)";
    }

    auto post = [&](uct_atomic_op_t op, uint64_t value) {
        ASSERT_TRUE(a.cap.atomic64.op_flags & UCS_BIT(op));
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_atomic64_post(m_ab, op, value, addr,
                                                  m.rkey);
                  }));
        flush_ep(m_ab);
    };
    auto fetch = [&](uct_atomic_op_t op, uint64_t value) {
        test_comp comp;
        ASSERT_TRUE(a.cap.atomic64.fop_flags & UCS_BIT(op));
        ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                      return uct_ep_atomic64_fetch(m_ab, op, value, &result,
                                                   addr, m.rkey, &comp.uct);
                  }));
        ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
        ASSERT_EQ(UCS_OK, comp.status);
    };

    *v = 10;
    post(UCT_ATOMIC_OP_ADD, 5);
    EXPECT_EQ(15u, *v);
    post(UCT_ATOMIC_OP_AND, 0x0c);
    EXPECT_EQ(12u, *v);
    post(UCT_ATOMIC_OP_OR, 0xf000000000000000ull);
    EXPECT_EQ(0xf00000000000000cull, *v);
    post(UCT_ATOMIC_OP_XOR, 0xff0000000000000full);
    EXPECT_EQ(0x0f00000000000003ull, *v);

    *v = 100;
    fetch(UCT_ATOMIC_OP_ADD, 1);
    EXPECT_EQ(100u, result);
    EXPECT_EQ(101u, *v);
    fetch(UCT_ATOMIC_OP_AND, 0xf);
    EXPECT_EQ(101u, result);
    EXPECT_EQ(5u, *v);
    fetch(UCT_ATOMIC_OP_OR, 0x30);
    EXPECT_EQ(5u, result);
    EXPECT_EQ(0x35u, *v);
    fetch(UCT_ATOMIC_OP_XOR, 0x1);
    EXPECT_EQ(0x35u, result);
    EXPECT_EQ(0x34u, *v);
    fetch(UCT_ATOMIC_OP_SWAP, ~0ull);
    EXPECT_EQ(0x34u, result);
    EXPECT_EQ(~0ull, *v);

    test_comp c1, c2;
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_atomic_cswap64(m_ab, 1, 2, addr, m.rkey,
                                                    &result, &c1.uct));
    ASSERT_TRUE(wait_for([&] { return c1.done > 0; }));
    EXPECT_EQ(~0ull, result);
    EXPECT_EQ(~0ull, *v); /* compare failed */
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_atomic_cswap64(m_ab, ~0ull, 7, addr, m.rkey,
                                               &result, &c2.uct);
              }));
    ASSERT_TRUE(wait_for([&] { return c2.done > 0; }));
    EXPECT_EQ(~0ull, result);
    EXPECT_EQ(7u, *v);
}

TEST_P(uct_dcx_ops, atomics32)
{
    mem m           = alloc_mem(64);
    uint32_t *v     = (uint32_t *)m.ptr + 1; /* neighbour must not change */
    uint32_t result = 0;
    uintptr_t addr  = (uintptr_t)v;
    const uct_iface_attr_t &a = m_a->attr;

    if (!offers_all_atomics(a.cap.atomic32.op_flags,
                            a.cap.atomic32.fop_flags)) {
        GTEST_SKIP() << "the device lacks some 32-bit atomic operations "
                        "(uct_dcx_atomic.advertised covers those it has)";
    }

    auto post = [&](uct_atomic_op_t op, uint32_t value) {
        ASSERT_TRUE(a.cap.atomic32.op_flags & UCS_BIT(op));
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_atomic32_post(m_ab, op, value, addr,
                                                  m.rkey);
                  }));
        flush_ep(m_ab);
    };
    auto fetch = [&](uct_atomic_op_t op, uint32_t value) {
        test_comp comp;
        ASSERT_TRUE(a.cap.atomic32.fop_flags & UCS_BIT(op));
        ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                      return uct_ep_atomic32_fetch(m_ab, op, value, &result,
                                                   addr, m.rkey, &comp.uct);
                  }));
        ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
        ASSERT_EQ(UCS_OK, comp.status);
    };

    ((uint32_t *)m.ptr)[0] = 0xdeadbeef;
    *v                     = 0xfffffff0u;
    // clang-format off
    post(UCT_ATOMIC_OP_ADD, 0x20);   EXPECT_EQ(0x10u, *v);  /* wraps */
    post(UCT_ATOMIC_OP_OR, 0x101);   EXPECT_EQ(0x111u, *v);
    post(UCT_ATOMIC_OP_AND, 0x0ff);  EXPECT_EQ(0x11u, *v);
    post(UCT_ATOMIC_OP_XOR, 0x13);   EXPECT_EQ(0x2u, *v);
    fetch(UCT_ATOMIC_OP_ADD, 3);     EXPECT_EQ(2u, result); EXPECT_EQ(5u, *v);
    fetch(UCT_ATOMIC_OP_SWAP, 9);    EXPECT_EQ(5u, result); EXPECT_EQ(9u, *v);
    fetch(UCT_ATOMIC_OP_XOR, 1);     EXPECT_EQ(9u, result); EXPECT_EQ(8u, *v);
    fetch(UCT_ATOMIC_OP_OR, 1);      EXPECT_EQ(8u, result); EXPECT_EQ(9u, *v);
    fetch(UCT_ATOMIC_OP_AND, 1);     EXPECT_EQ(9u, result); EXPECT_EQ(1u, *v);
    // clang-format on

    test_comp comp;
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_atomic_cswap32(m_ab, 1, 77, addr, m.rkey,
                                               &result, &comp.uct);
              }));
    ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
    EXPECT_EQ(1u, result);
    EXPECT_EQ(77u, *v);
    EXPECT_EQ(0xdeadbeefu, ((uint32_t *)m.ptr)[0]);
}

/* The soft device executes atomics with the CPU's atomic instructions in the
 * target process, so dcx advertises UCT_IFACE_FLAG_ATOMIC_CPU (not
 * ATOMIC_DEVICE): UCP may then mix them with its software atomics and with
 * the application's own.  Checked: a thread adding to the same words with
 * CPU atomics while dcx adds to them loses no update. */
TEST_P(uct_dcx_ops, atomics_consistent_with_cpu_atomics)
{
    const int n               = 2000;
    mem m                     = alloc_mem(64);
    uint64_t *v64             = (uint64_t *)m.ptr;
    uint32_t *v32             = (uint32_t *)m.ptr + 2;
    const uct_iface_attr_t &a = m_a->attr;

    if (!(a.cap.flags & UCT_IFACE_FLAG_ATOMIC_CPU)) {
        /* a NIC's atomics are not atomic with the CPU's */
        GTEST_SKIP() << "the interface's atomics are not CPU atomics";
    }
    EXPECT_FALSE(a.cap.flags & UCT_IFACE_FLAG_ATOMIC_DEVICE);

    *v64 = 0;
    *v32 = 0;
    std::thread cpu([&] {
        for (int i = 0; i < n; ++i) {
            __atomic_fetch_add(v64, 1, __ATOMIC_SEQ_CST);
            __atomic_fetch_add(v32, 1, __ATOMIC_SEQ_CST);
        }
    });
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_atomic64_post(m_ab, UCT_ATOMIC_OP_ADD, 1,
                                                  (uintptr_t)v64, m.rkey);
                  }));
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_atomic32_post(m_ab, UCT_ATOMIC_OP_ADD, 1,
                                                  (uintptr_t)v32, m.rkey);
                  }));
    }
    flush_ep(m_ab);
    cpu.join();
    EXPECT_EQ((uint64_t)(2 * n), __atomic_load_n(v64, __ATOMIC_SEQ_CST));
    EXPECT_EQ((uint32_t)(2 * n), __atomic_load_n(v32, __ATOMIC_SEQ_CST));
}

TEST_P(uct_dcx_ops, fence_orders_put_after_get)
{
    mem rem      = alloc_mem(4096);
    mem loc      = alloc_mem(4096);
    uint64_t one = 1;
    test_comp comp;

    *(uint64_t *)rem.ptr = 42;
    uct_iov_t iov        = {loc.ptr, 8, loc.memh, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                  return uct_ep_get_zcopy(m_ab, &iov, 1, (uintptr_t)rem.ptr,
                                          rem.rkey, &comp.uct);
              }));
    ASSERT_EQ(UCS_OK, uct_ep_fence(m_ab, 0));
    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(m_ab, &one, 8, (uintptr_t)rem.ptr,
                                          rem.rkey);
              }));
    ASSERT_EQ(UCS_OK, uct_iface_fence(m_a->iface, 0));
    flush_ep(m_ab);
    ASSERT_TRUE(comp.done);
    EXPECT_EQ(42u, *(uint64_t *)loc.ptr);
    EXPECT_EQ(1u, *(uint64_t *)rem.ptr);
}

TEST_P(uct_dcx_ops, flush_iface_and_ep)
{
    mem rem    = alloc_mem(4096);
    uint64_t x = 5;

    flush_ep(m_ab); /* nothing outstanding */
    for (int i = 0; i < 300; ++i) {
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_put_short(m_ab, &x, 8, (uintptr_t)rem.ptr,
                                              rem.rkey);
                  }));
    }
    flush_iface(m_a);
    flush_ep(m_ab);
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_iface_flush(m_a->iface, 0, (uct_completion_t *)&x));
    EXPECT_EQ(1, log_counter::errors());
    log_counter::reset();
}

struct pending_req {
    uct_pending_req_t uct;
    uct_ep_h ep;
    int *sent;
    int id;
    std::vector<int> *order;

    static ucs_status_t cb(uct_pending_req_t *self)
    {
        pending_req *r      = ucs_container_of(self, pending_req, uct);
        ucs_status_t status = uct_ep_am_short(r->ep, AM_ID, r->id, NULL, 0);
        if (status == UCS_OK) {
            (*r->sent)++;
            r->order->push_back(r->id);
        }
        return status;
    }

    static void purge(uct_pending_req_t *self, void *arg)
    {
        (*static_cast<int *>(arg))++;
    }
};

TEST_P(uct_dcx_ops, pending_add_dispatch_purge)
{
    const int n = 2000;
    std::vector<pending_req> reqs(n);
    std::vector<int> order;
    int sent = 0, queued = 0, purged = 0;

    /* send until the transport pushes back, then queue the rest */
    for (int i = 0; i < n; ++i) {
        reqs[i].uct.func = pending_req::cb;
        reqs[i].ep       = m_ab;
        reqs[i].sent     = &sent;
        reqs[i].id       = i;
        reqs[i].order    = &order;
        if (queued == 0) {
            ucs_status_t status = uct_ep_am_short(m_ab, AM_ID, i, NULL, 0);
            if (status == UCS_OK) {
                sent++;
                order.push_back(i);
                continue;
            }
            ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
        }
        ucs_status_t status = uct_ep_pending_add(m_ab, &reqs[i].uct, 0);
        if (status == UCS_ERR_BUSY) {
            ASSERT_EQ(UCS_OK, uct_ep_am_short(m_ab, AM_ID, i, NULL, 0));
            sent++;
            order.push_back(i);
            continue;
        }
        ASSERT_EQ(UCS_OK, status);
        queued++;
    }
    EXPECT_GT(queued, 0) << "the flood never hit a resource limit";

    /* a flush with requests still pending is refused (it must cover them
     * too); queued behind them, it goes through when its turn comes */
    flush_req freq;
    freq.ep = m_ab;
    test_comp fcomp;
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_flush(m_ab, 0, &fcomp.uct));
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_ab, &freq.uct, 0));

    ASSERT_TRUE(wait_for([&] { return sent == n; }));
    ASSERT_TRUE(wait_for([&] { return freq.done(); }));
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(i, order[i]); /* pending kept the order */
    }
    ASSERT_TRUE(wait_for([&] { return m_rx.count == n; }));

    /* purge: nothing left */
    uct_ep_pending_purge(m_ab, pending_req::purge, &purged);
    EXPECT_EQ(0, purged);
}

TEST_P(uct_dcx_ops, flush_cancel)
{
    mem rem = alloc_mem(1 << 20);
    mem loc = alloc_mem(1 << 20);
    std::vector<test_comp> comps(8);
    test_comp fcomp;
    ucs_status_t status;

    for (size_t i = 0; i < comps.size(); ++i) {
        uct_iov_t iov = {loc.ptr, 1 << 20, loc.memh, 0, 1};
        ASSERT_EQ(UCS_INPROGRESS, retry([&] {
                      return uct_ep_put_zcopy(m_ab, &iov, 1, (uintptr_t)rem.ptr,
                                              rem.rkey, &comps[i].uct);
                  }));
    }
    status = uct_ep_flush(m_ab, UCT_FLUSH_FLAG_CANCEL, &fcomp.uct);
    if (status == UCS_INPROGRESS) {
        ASSERT_TRUE(wait_for([&] { return fcomp.done > 0; }));
    } else {
        ASSERT_EQ(UCS_OK, status);
    }
    for (size_t i = 0; i < comps.size(); ++i) {
        ASSERT_TRUE(wait_for([&] { return comps[i].done > 0; }));
        EXPECT_TRUE((comps[i].status == UCS_OK) ||
                    (comps[i].status == UCS_ERR_CANCELED));
    }
    /* the ep and its DCI still work */
    uint64_t x = 3;
    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(m_ab, &x, 8, (uintptr_t)rem.ptr,
                                          rem.rkey);
              }));
    flush_ep(m_ab);
    EXPECT_EQ(3u, *(uint64_t *)rem.ptr);
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_ops, UCT_DCX_POLICIES);


/* ---------------------------------------------------------------------------
 * Flow control and many endpoints over a small pool
 * ------------------------------------------------------------------------- */

class uct_dcx_flood : public uct_dcx_policy_test {
protected:
    virtual void TearDown()
    {
        uct_dcx_test::TearDown();
        EXPECT_EQ(0, log_counter::errors());
    }
};

/* One sender floods a receiver whose receive queue is tiny: every message
 * arrives, none needs a receiver-not-ready retry, nothing deadlocks. */
TEST_P(uct_dcx_flood, one_dci_tiny_rx_queue)
{
    std::map<std::string, std::string> cfg;
    const int n = 5000;
    dcx_soft_stats_t before, after;
    am_rx rx;

    cfg["NUM_DCI"]      = "1";
    cfg["RX_QUEUE_LEN"] = "16";
    cfg["FC_WND"]       = "8";
    cfg["TX_QUEUE_LEN"] = "16";
    entity *a           = create_entity(cfg);
    entity *b           = create_entity(cfg);
    ASSERT_TRUE(a && b);
    uct_ep_h ab = connect(a, b);
    connect(b, a);
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(b->iface, AM_ID, am_rx::cb, &rx, 0));
    ASSERT_EQ(0, dcx_soft_stats(device(), &before));

    std::string payload(200, 'f');
    pack_arg arg   = {payload.data(), payload.size()};
    unsigned spins = 0;
    for (int i = 0; i < n; ++i) {
        ssize_t len;
        while ((len = uct_ep_am_bcopy(ab, AM_ID, pack_cb, &arg, 0)) ==
               UCS_ERR_NO_RESOURCE) {
            /* the receiver is slow: it progresses once in 7 times */
            uct_worker_progress(a->worker);
            if ((++spins % 7) == 0) {
                uct_worker_progress(b->worker);
            }
        }
        ASSERT_EQ((ssize_t)payload.size(), len);
    }
    ASSERT_TRUE(wait_for([&] { return rx.count == n; }, 30));
    flush_ep(ab);
    ASSERT_EQ(0, dcx_soft_stats(device(), &after));
    EXPECT_EQ(before.rnr_naks_sent, after.rnr_naks_sent)
        << "flow control let the receive queue overflow";
}

/* More endpoints than DCIs, all sending: each gets its turn. */
TEST_P(uct_dcx_flood, many_eps_few_dcis)
{
    std::map<std::string, std::string> cfg;
    const int num_eps = 12, per_ep = 300;
    std::vector<entity *> senders;
    std::vector<uct_ep_h> eps;
    std::vector<int> sent(num_eps, 0);
    am_rx rx;

    cfg["NUM_DCI"] = "2";
    cfg["QUOTA"]   = "4";
    entity *target = create_entity(cfg);
    ASSERT_TRUE(target != NULL);
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(target->iface, AM_ID, am_rx::cb,
                                               &rx, 0));
    entity *src = create_entity(cfg);
    for (int i = 0; i < num_eps; ++i) {
        eps.push_back(connect(src, target));
    }

    int total = 0;
    while (total < num_eps * per_ep) {
        for (int i = 0; i < num_eps; ++i) {
            if (sent[i] < per_ep) {
                ucs_status_t status = uct_ep_am_short(eps[i], AM_ID, i, NULL,
                                                      0);
                if (status == UCS_OK) {
                    sent[i]++;
                    total++;
                } else {
                    ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
                }
            }
        }
        progress();
    }
    ASSERT_TRUE(wait_for([&] { return rx.count == num_eps * per_ep; }, 30));
    for (int i = 0; i < num_eps; ++i) {
        flush_ep(eps[i]);
    }
}

/* Endpoints that queue their sends in the pending queue when refused: with
 * dcs_quota and rand every ep keeps moving while the others are busy (no
 * starvation); with dcs an ep may keep its DCI, but all finish. */
struct fair_req {
    uct_pending_req_t uct;
    uct_ep_h ep;
    int ep_index;
    std::vector<int> *done;
    std::vector<int> *progress_when_first_done;

    static ucs_status_t cb(uct_pending_req_t *self)
    {
        fair_req *r         = ucs_container_of(self, fair_req, uct);
        ucs_status_t status = uct_ep_am_short(r->ep, AM_ID, r->ep_index, NULL,
                                              0);
        if (status == UCS_OK) {
            (*r->done)[r->ep_index]++;
        }
        return status;
    }
};

TEST_P(uct_dcx_flood, pending_fairness)
{
    std::map<std::string, std::string> cfg;
    const int num_eps = 8, per_ep = 400;
    std::vector<uct_ep_h> eps;
    std::vector<int> done(num_eps, 0);
    std::vector<fair_req> reqs(num_eps * per_ep);
    am_rx rx;

    cfg["NUM_DCI"]      = "2";
    cfg["QUOTA"]        = "8";
    cfg["TX_QUEUE_LEN"] = "16";
    entity *target      = create_entity(cfg);
    entity *src         = create_entity(cfg);
    ASSERT_TRUE(target && src);
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(target->iface, AM_ID, am_rx::cb,
                                               &rx, 0));
    for (int i = 0; i < num_eps; ++i) {
        eps.push_back(connect(src, target));
    }

    /* everything goes through the pending queue, round robin */
    for (int k = 0; k < per_ep; ++k) {
        for (int i = 0; i < num_eps; ++i) {
            fair_req &r         = reqs[k * num_eps + i];
            r.uct.func          = fair_req::cb;
            r.ep                = eps[i];
            r.ep_index          = i;
            r.done              = &done;
            ucs_status_t status = uct_ep_pending_add(eps[i], &r.uct, 0);
            if (status == UCS_ERR_BUSY) {
                ASSERT_EQ(UCS_OK, fair_req::cb(&r.uct));
            } else {
                ASSERT_EQ(UCS_OK, status);
            }
        }
    }

    int min_when_first_done = -1;
    ASSERT_TRUE(wait_for(
        [&] {
            int total = 0, lo = per_ep;
            for (int i = 0; i < num_eps; ++i) {
                total += done[i];
                lo = std::min(lo, done[i]);
                if ((done[i] == per_ep) && (min_when_first_done < 0)) {
                    min_when_first_done = *std::min_element(done.begin(),
                                                            done.end());
                }
            }
            return total == num_eps * per_ep;
        },
        30));
    ASSERT_TRUE(wait_for([&] { return rx.count == num_eps * per_ep; }));
    if (GetParam() != "dcs") {
        /* when the fastest finished, the slowest had done a fair share */
        EXPECT_GE(min_when_first_done, per_ep / 4);
    }
    for (int i = 0; i < num_eps; ++i) {
        flush_ep(eps[i]);
    }
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_flood, UCT_DCX_POLICIES);


/* ---------------------------------------------------------------------------
 * Configuration and addresses
 * ------------------------------------------------------------------------- */

class uct_dcx_config : public uct_dcx_test {};

TEST_F(uct_dcx_config, bad_values_bad_flow)
{
    const char *bad[][2] = {{"NUM_DCI", "0"},     {"NUM_DCI", "5000"},
                            {"QUOTA", "0"},       {"RX_QUEUE_LEN", "1"},
                            {"SEG_SIZE", "16"},   {"FC_WND", "0"},
                            {"RETRY_COUNT", "9"}, {"RNR_RETRY_COUNT", "8"},
                            {"TX_QUEUE_LEN", "1"}};
    entity *e;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        std::map<std::string, std::string> cfg;
        cfg[bad[i][0]] = bad[i][1];
        log_counter::reset();
        EXPECT_NE(UCS_OK, try_create_entity(cfg, &e)) << bad[i][0];
        EXPECT_EQ(1, log_counter::errors()) << bad[i][0];
        EXPECT_TRUE(log_counter::contains(bad[i][0])) << bad[i][0];
    }
    std::map<std::string, std::string> cfg;
    cfg["DCI_POLICY"] = "nonsense";
    EXPECT_NE(UCS_OK, try_create_entity(cfg, &e));
    log_counter::reset();
}

/* A device with little inline space: no AM short is advertised (its
 * header does not fit), put short only as far as it fits, the rest works */
class uct_dcx_no_inline : public uct_dcx_test {
protected:
    virtual void init_env(scoped_env &env)
    {
        env.set("UCX_DCX_SOFT_MAX_INLINE", "4");
    }
};

TEST_F(uct_dcx_no_inline, no_short_ops)
{
    entity *a = create_entity();
    entity *b = create_entity();
    ASSERT_TRUE(a && b);
    if (a->attr.cap.put.max_short > 8) {
        GTEST_SKIP() << "the device keeps more inline space";
    }
    EXPECT_FALSE(a->attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT);
    EXPECT_TRUE(a->attr.cap.flags & UCT_IFACE_FLAG_PUT_SHORT);
    EXPECT_EQ(0u, a->attr.cap.am.max_short);

    uct_ep_h ab = connect(a, b);
    am_rx rx;
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(b->iface, AM_ID, am_rx::cb, &rx, 0));
    std::string payload(100, 'n');
    pack_arg arg = {payload.data(), payload.size()};
    ssize_t len;
    while ((len = uct_ep_am_bcopy(ab, AM_ID, pack_cb, &arg, 0)) ==
           UCS_ERR_NO_RESOURCE) {
        progress();
    }
    ASSERT_EQ((ssize_t)payload.size(), len);
    ASSERT_TRUE(wait_for([&] { return rx.count == 1; }));
    flush_ep(ab);

    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_ep_am_short(ab, AM_ID, 0, NULL, 0));
    EXPECT_EQ(1, log_counter::errors());
    log_counter::reset();
}

TEST_F(uct_dcx_config, hundreds_of_dcis)
{
    std::map<std::string, std::string> cfg;
    cfg["NUM_DCI"]      = "300";
    cfg["TX_QUEUE_LEN"] = "8";
    entity *a           = create_entity(cfg);
    entity *b           = create_entity();
    ASSERT_TRUE(a && b);
    std::vector<uct_ep_h> eps;
    am_rx rx;
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(b->iface, AM_ID, am_rx::cb, &rx, 0));
    /* 280 eps each hold a DCI of their own (dcs_quota) at once */
    for (int i = 0; i < 280; ++i) {
        eps.push_back(connect(a, b));
        ASSERT_EQ(UCS_OK, uct_ep_am_short(eps.back(), AM_ID, i, NULL, 0));
    }
    ASSERT_TRUE(wait_for([&] { return rx.count == 280; }));
    EXPECT_EQ(0, log_counter::errors());
}

TEST_F(uct_dcx_config, malformed_address_bad_flow)
{
    entity *a = create_entity();
    entity *b = create_entity();
    ASSERT_TRUE(a && b);
    std::vector<char> iaddr = b->iface_addr, daddr = b->dev_addr;
    uct_ep_params_t params;
    uct_ep_h ep;

    EXPECT_TRUE(uct_iface_is_reachable(a->iface, (uct_device_addr_t *)&daddr[0],
                                       (uct_iface_addr_t *)&iaddr[0]));
    iaddr[0] ^= 0xff;
    EXPECT_FALSE(uct_iface_is_reachable(a->iface,
                                        (uct_device_addr_t *)&daddr[0],
                                        (uct_iface_addr_t *)&iaddr[0]));

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = a->iface;
    params.dev_addr   = (uct_device_addr_t *)&daddr[0];
    params.iface_addr = (uct_iface_addr_t *)&iaddr[0];
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, uct_ep_create(&params, &ep));
    EXPECT_EQ(1, log_counter::errors());

    iaddr = b->iface_addr;
    daddr[0] += 1; /* port length */
    EXPECT_FALSE(uct_iface_is_reachable(a->iface,
                                        (uct_device_addr_t *)&daddr[0],
                                        (uct_iface_addr_t *)&iaddr[0]));
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, uct_ep_create(&params, &ep));
    EXPECT_EQ(1, log_counter::errors());

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_ep_create(&params, &ep));
    EXPECT_EQ(1, log_counter::errors());
    log_counter::reset();
}
