/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport through the UCT API, under every DCI pool policy: the
 * interface's attributes, active messages (short, short iov, bcopy with
 * kept descriptors, zcopy) and short operations at every length, atomics
 * (64 and 32 bits, consistent with the CPU's), fence, flush and the pending
 * queue.  Puts and gets are tested in test_uct_ops_rma.cc, flow control and
 * configuration in test_uct_ops_limits.cc.
 */
#include "uct_ops_fixture.h"

#include <algorithm>
#include <thread>

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
