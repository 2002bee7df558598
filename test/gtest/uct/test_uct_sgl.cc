/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Scatter-gather put and get (uct_ep_put_sgl_zcopy, uct_ep_get_sgl_zcopy;
 * src/uct/dcx/dcx_sgl.c), under every DCI pool policy: what the v2 query
 * reports, lists of contiguous and strided elements moved with every byte
 * checked (and every byte around them checked untouched), runs longer than
 * a WR's sges, the resource check, and the bad flows: too many elements,
 * strided elements needing too many work requests, a missing memory
 * handle, overlapping blocks, an invalid rkey (refused before posting) and
 * a wrong one (the peer refuses it: the completion and the error handler
 * see the error, nothing is written).  Built where configure found the
 * operations with per-element counts and strides (UCX 1.22 and later);
 * against an older UCX this file has no tests.
 */
#include "uct_fixture.h"

extern "C" {
#include <uct/api/v2/uct_v2.h>
}

#include <cstring>

using namespace dcx_test;

#if DCX_UCX_HAVE_SGL_ZCOPY

namespace {

/* One list element, on the test's side: offsets into the local and the
 * remote buffer */
struct elem {
    size_t loc;
    size_t rem;
    size_t length;
    size_t count;
    size_t stride;
};

/* The arrays of an SGL call over two registered buffers */
struct sgl_args {
    std::vector<void *> buffers;
    std::vector<size_t> lengths;
    std::vector<uct_mem_h> memhs;
    std::vector<uint64_t> remote_addrs;
    std::vector<uct_rkey_t> rkeys;
    std::vector<size_t> counts;
    std::vector<size_t> strides;
};

} /* namespace */


class uct_dcx_sgl : public uct_dcx_policy_test {
protected:
    static const size_t BUF_SIZE = 256 * 1024;

    virtual void init_env(scoped_env &env)
    {
        uct_dcx_policy_test::init_env(env);
        /* a wrong rkey fails fast: 4us * 2^11 = 8ms per try, 2 retries */
        env.set("UCX_DCX_TIMEOUT", "8ms");
        env.set("UCX_DCX_RETRY_COUNT", "2");
    }

    virtual void SetUp()
    {
        uct_dcx_policy_test::SetUp();
        m_a = create_entity();
        m_b = create_entity();
        ASSERT_TRUE((m_a != NULL) && (m_b != NULL));
        m_ab  = connect(m_a, m_b);
        m_loc = alloc_mem(BUF_SIZE);
        m_rem = alloc_mem(BUF_SIZE);
    }

    virtual void TearDown()
    {
        uct_dcx_test::TearDown();
        EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
    }

    size_t max_count(bool put)
    {
        uct_iface_attr_v2_t attr;

        memset(&attr, 0, sizeof(attr));
        attr.field_mask = put ? UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT :
                                UCT_IFACE_ATTR_FIELD_MAX_GET_SGL_ZCOPY_COUNT;
        EXPECT_EQ(UCS_OK, uct_iface_query_v2(m_a->iface, &attr));
        return put ? attr.max_put_sgl_zcopy_count :
                     attr.max_get_sgl_zcopy_count;
    }

    sgl_args make_args(const std::vector<elem> &elems, uct_rkey_t rkey)
    {
        sgl_args a;

        for (size_t i = 0; i < elems.size(); ++i) {
            a.buffers.push_back((char *)m_loc.ptr + elems[i].loc);
            a.lengths.push_back(elems[i].length);
            a.memhs.push_back(m_loc.memh);
            a.remote_addrs.push_back((uintptr_t)m_rem.ptr + elems[i].rem);
            a.rkeys.push_back(rkey);
            a.counts.push_back(elems[i].count);
            a.strides.push_back(elems[i].stride);
        }
        return a;
    }

    ucs_status_t post(bool put, sgl_args &a, bool strided,
                      uct_completion_t *comp)
    {
        const size_t *counts  = strided ? &a.counts[0] : NULL;
        const size_t *strides = strided ? &a.strides[0] : NULL;

        if (put) {
            return uct_ep_put_sgl_zcopy(m_ab, &a.buffers[0], &a.lengths[0],
                                        &a.memhs[0], &a.remote_addrs[0],
                                        &a.rkeys[0], counts, strides,
                                        a.buffers.size(), comp);
        }
        return uct_ep_get_sgl_zcopy(m_ab, &a.buffers[0], &a.lengths[0],
                                    &a.memhs[0], &a.remote_addrs[0],
                                    &a.rkeys[0], counts, strides,
                                    a.buffers.size(), comp);
    }

    /* Posts (retrying while out of resources) and waits for completion */
    ucs_status_t run(bool put, sgl_args &a, bool strided)
    {
        test_comp comp;
        ucs_status_t status;

        while ((status = post(put, a, strided, &comp.uct)) ==
               UCS_ERR_NO_RESOURCE) {
            progress();
        }
        if (status != UCS_INPROGRESS) {
            return status;
        }
        if (!wait_for([&] { return comp.done > 0; })) {
            return UCS_ERR_TIMED_OUT;
        }
        EXPECT_EQ(1, comp.done);
        return comp.status;
    }

    /* Fills both buffers with distinct patterns, moves the list one way,
     * and checks every byte of the destination buffer against what the
     * list says (copied bytes) and the old pattern (every other byte) */
    void check_moved(bool put, const std::vector<elem> &elems, bool strided)
    {
        std::vector<uint8_t> expect(BUF_SIZE);
        uint8_t *src, *dst;
        size_t i, k, sbase, dbase, mismatches = 0;
        sgl_args a = make_args(elems, m_rem.rkey);

        for (i = 0; i < BUF_SIZE; ++i) {
            ((uint8_t *)m_loc.ptr)[i] = (uint8_t)(i * 7 + 1);
            ((uint8_t *)m_rem.ptr)[i] = (uint8_t)(i * 13 + 5);
        }
        src = (uint8_t *)(put ? m_loc.ptr : m_rem.ptr);
        dst = (uint8_t *)(put ? m_rem.ptr : m_loc.ptr);
        memcpy(&expect[0], dst, BUF_SIZE);
        for (i = 0; i < elems.size(); ++i) {
            size_t n = strided ? elems[i].count : 1;

            for (k = 0; k < n; ++k) {
                sbase = (put ? elems[i].loc : elems[i].rem) +
                        k * elems[i].stride;
                dbase = (put ? elems[i].rem : elems[i].loc) +
                        k * elems[i].stride;
                memcpy(&expect[dbase], src + sbase, elems[i].length);
            }
        }

        ASSERT_EQ(UCS_OK, run(put, a, strided));
        flush_ep(m_ab);
        for (i = 0; i < BUF_SIZE; ++i) {
            if ((dst[i] != expect[i]) && (mismatches++ < 8)) {
                ADD_FAILURE() << "byte " << i << ": " << (int)dst[i]
                              << ", expected " << (int)expect[i];
            }
        }
        EXPECT_EQ(0u, mismatches);
    }

    entity *m_a, *m_b;
    uct_ep_h m_ab;
    mem m_loc, m_rem;
};

TEST_P(uct_dcx_sgl, query_v2)
{
    uct_iface_attr_v2_t attr;

    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_IFACE_ATTR_FIELD_CAP_FLAGS |
                      UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT |
                      UCT_IFACE_ATTR_FIELD_MAX_GET_SGL_ZCOPY_COUNT;
    ASSERT_EQ(UCS_OK, uct_iface_query_v2(m_a->iface, &attr));
    EXPECT_TRUE(attr.cap.flags & UCT_IFACE_FLAG_V2_PUT_SGL_ZCOPY);
    EXPECT_TRUE(attr.cap.flags & UCT_IFACE_FLAG_V2_GET_SGL_ZCOPY);
    /* half the send queue of a DCI (UCX_DCX_TX_QUEUE_LEN, 128) */
    EXPECT_EQ(64u, attr.max_put_sgl_zcopy_count);
    EXPECT_EQ(64u, attr.max_get_sgl_zcopy_count);

    /* the token queries stay refused, as for any transport without them */
    attr.field_mask = UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_iface_query_v2(m_a->iface, &attr));
}

/* Contiguous elements: a run the remote side sees as one range (one WR,
 * local pieces gathered), pieces touching on both sides (one sge),
 * scattered remote pieces (one WR each), single and odd-sized bytes, an
 * empty element */
static std::vector<elem> contig_list()
{
    std::vector<elem> e;

    // clang-format off
    e.push_back({0,      1000,   100,  1, 100});  /* run of 3 */
    e.push_back({5000,   1100,   17,   1, 17});
    e.push_back({333,    1117,   1,    1, 1});
    e.push_back({9000,   4096,   4096, 1, 4096}); /* touching: one sge */
    e.push_back({13096,  8192,   4096, 1, 4096});
    e.push_back({20000,  30000,  0,    1, 0});    /* empty */
    e.push_back({21001,  50001,  65535, 1, 65535});
    e.push_back({100,    200,    3,    1, 3});    /* remote before */
    return e;
    // clang-format on
}

TEST_P(uct_dcx_sgl, put_every_byte)
{
    check_moved(true, contig_list(), false);
}

TEST_P(uct_dcx_sgl, get_every_byte)
{
    check_moved(false, contig_list(), false);
}

/* Strided elements: blocks apart (one WR each), blocks touching (one
 * piece), count 1, count 0 (moves nothing) */
static std::vector<elem> strided_list()
{
    std::vector<elem> e;

    // clang-format off
    e.push_back({0,      0,      8,    16, 24});  /* column of doubles */
    e.push_back({4000,   6000,   1,    9,  7});   /* single bytes */
    e.push_back({10000,  20000,  512,  8,  512}); /* touching: 4 KiB */
    e.push_back({30000,  40000,  100,  1,  0});
    e.push_back({50000,  60000,  100,  0,  200});
    e.push_back({70000,  80000,  33,   5,  1000});
    return e;
    // clang-format on
}

TEST_P(uct_dcx_sgl, put_strided_every_byte)
{
    check_moved(true, strided_list(), true);
}

TEST_P(uct_dcx_sgl, get_strided_every_byte)
{
    check_moved(false, strided_list(), true);
}

/* More local pieces than a WR takes sges, all to one remote range: the
 * run is cut into WRs of max_sge pieces */
TEST_P(uct_dcx_sgl, run_longer_than_sges)
{
    std::vector<elem> e;
    size_t i;

    for (i = 0; i < 60; ++i) {
        /* local pieces 3 bytes apart, remote ones back to back */
        e.push_back({i * 16, 500 + i * 13, 13, 1, 13});
    }
    check_moved(true, e, false);
    check_moved(false, e, false);
}

/* As many elements as the query says, each its own WR */
TEST_P(uct_dcx_sgl, max_count)
{
    std::vector<elem> e;
    size_t i, max = max_count(true);

    ASSERT_GT(max, 0u);
    ASSERT_EQ(max, max_count(false));
    for (i = 0; i < max; ++i) {
        e.push_back({i * 512, i * 700, 256 + i, 1, 256 + i});
    }
    check_moved(true, e, false);
    check_moved(false, e, false);
}

/* Nothing to move: UCS_OK, the completion is never called */
TEST_P(uct_dcx_sgl, zero_length)
{
    std::vector<elem> e;
    test_comp comp;

    e.push_back({0, 0, 0, 1, 0});
    e.push_back({0, 0, 64, 0, 64});
    sgl_args a = make_args(e, m_rem.rkey);
    EXPECT_EQ(UCS_OK, post(true, a, true, &comp.uct));
    EXPECT_EQ(UCS_OK, post(false, a, true, &comp.uct));
    progress();
    EXPECT_EQ(0, comp.done);
}

/* Without free slots on the DCI for all of its WRs an operation posts
 * nothing and says UCS_ERR_NO_RESOURCE; once the queue drains it goes */
TEST_P(uct_dcx_sgl, no_resource_posts_nothing)
{
    std::vector<elem> e;
    std::vector<test_comp> comps(64);
    size_t i, posted = 0;
    ucs_status_t status = UCS_OK;

    for (i = 0; i < 8; ++i) {
        e.push_back({i * 64, i * 128, 64, 1, 64}); /* 8 WRs */
    }
    sgl_args a = make_args(e, m_rem.rkey);
    for (i = 0;
         (i < comps.size()) &&
         ((status = post(true, a, false, &comps[i].uct)) == UCS_INPROGRESS);
         ++i) {
        ++posted;
    }
    /* 128 slots: at most 16 lists of 8 fit before anything completes */
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, status);
    EXPECT_LE(posted, 16u);
    EXPECT_GT(posted, 0u);
    ASSERT_TRUE(wait_for([&] {
        for (size_t j = 0; j < posted; ++j) {
            if (comps[j].done == 0) {
                return false;
            }
        }
        return true;
    }));
    for (i = 0; i < posted; ++i) {
        EXPECT_EQ(1, comps[i].done);
        EXPECT_EQ(UCS_OK, comps[i].status);
    }
    check_moved(true, e, false);
}

TEST_P(uct_dcx_sgl, too_many_elements_bad_flow)
{
    std::vector<elem> e;
    test_comp comp;
    size_t i, max = max_count(true);

    for (i = 0; i <= max; ++i) {
        e.push_back({i, i, 1, 1, 1});
    }
    sgl_args a = make_args(e, m_rem.rkey);
    memset(m_rem.ptr, 0x11, BUF_SIZE);
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT, post(true, a, false, &comp.uct));
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT, post(false, a, false, &comp.uct));
    EXPECT_EQ(2, log_counter::errors()) << log_counter::joined();
    EXPECT_TRUE(log_counter::contains("exceed the maximum"))
        << log_counter::joined();
    log_counter::reset();
    flush_ep(m_ab);
    EXPECT_EQ(0, comp.done);
    for (i = 0; i < BUF_SIZE; ++i) {
        ASSERT_EQ(0x11, ((uint8_t *)m_rem.ptr)[i]) << "byte " << i;
    }
}

/* One strided element whose blocks take more WRs than an operation may */
TEST_P(uct_dcx_sgl, too_many_blocks_bad_flow)
{
    std::vector<elem> e;
    test_comp comp;
    size_t i, max = max_count(true);

    e.push_back({0, 0, 4, max + 1, 8});
    sgl_args a = make_args(e, m_rem.rkey);
    memset(m_rem.ptr, 0x22, BUF_SIZE);
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT, post(true, a, true, &comp.uct));
    EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
    log_counter::reset();

    /* max blocks are fine */
    a.counts[0] = max;
    EXPECT_EQ(UCS_OK, run(true, a, true));
    flush_ep(m_ab);
    EXPECT_EQ(0, comp.done);
    for (i = 0; i < max * 8; ++i) {
        EXPECT_EQ((i % 8 < 4) ? ((uint8_t *)m_loc.ptr)[i] : 0x22,
                  ((uint8_t *)m_rem.ptr)[i])
            << "byte " << i;
    }
}

/* Arguments refused before anything is posted, each with one error line */
TEST_P(uct_dcx_sgl, bad_args_bad_flow)
{
    std::vector<elem> e;
    test_comp comp;
    size_t i;

    e.push_back({0, 0, 64, 1, 64});
    e.push_back({64, 4096, 64, 2, 128});
    memset(m_rem.ptr, 0x33, BUF_SIZE);

    for (int put = 0; put < 2; ++put) {
        sgl_args a = make_args(e, m_rem.rkey);

        /* no memory handle on the second element */
        a.memhs[1] = UCT_MEM_HANDLE_NULL;
        log_counter::reset();
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, post(put, a, true, &comp.uct));
        EXPECT_TRUE(log_counter::contains("no memory handle"))
            << log_counter::joined();
        a.memhs[1] = m_loc.memh;

        /* blocks overlapping */
        a.strides[1] = 32;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, post(put, a, true, &comp.uct));
        EXPECT_TRUE(log_counter::contains("overlap")) << log_counter::joined();
        a.strides[1] = 128;

        /* counts without strides */
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_ep_put_sgl_zcopy(m_ab, &a.buffers[0], &a.lengths[0],
                                       &a.memhs[0], &a.remote_addrs[0],
                                       &a.rkeys[0], &a.counts[0], NULL, 2,
                                       &comp.uct));

        /* an rkey that was never unpacked */
        a.rkeys[0] = UCT_INVALID_RKEY;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, post(put, a, true, &comp.uct));
        EXPECT_TRUE(log_counter::contains("invalid remote key"))
            << log_counter::joined();
        EXPECT_EQ(4, log_counter::errors()) << log_counter::joined();
        log_counter::reset();
    }

    flush_ep(m_ab);
    EXPECT_EQ(0, comp.done);
    for (i = 0; i < BUF_SIZE; ++i) {
        ASSERT_EQ(0x33, ((uint8_t *)m_rem.ptr)[i]) << "byte " << i;
    }
}

/* A wrong rkey on the last element: the peer refuses it, the operation
 * completes with an error, the endpoint's error handler is called, and no
 * byte of that element is written; another endpoint keeps working */
TEST_P(uct_dcx_sgl, wrong_rkey_bad_flow)
{
    std::vector<elem> e;
    test_comp comp;
    ucs_status_t status;
    size_t i;

    e.push_back({0, 0, 64, 1, 64});
    e.push_back({64, 4096, 256, 1, 256});
    sgl_args a = make_args(e, m_rem.rkey);
    a.rkeys[1] = m_rem.rkey ^ 0x777700;
    memset(m_rem.ptr, 0x44, BUF_SIZE);

    while ((status = post(true, a, false, &comp.uct)) == UCS_ERR_NO_RESOURCE) {
        progress();
    }
    ASSERT_EQ(UCS_INPROGRESS, status);
    ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
    EXPECT_EQ(1, comp.done);
    EXPECT_NE(UCS_OK, comp.status);
    ASSERT_TRUE(wait_for([&] { return !m_errors.empty(); }));
    EXPECT_EQ(m_ab, m_errors[0].ep);
    for (i = 4096; i < 4096 + 256; ++i) {
        ASSERT_EQ(0x44, ((uint8_t *)m_rem.ptr)[i]) << "byte " << i;
    }
    log_counter::reset();

    /* a new endpoint to the same peer moves a list */
    m_ab = connect(m_a, m_b);
    check_moved(true, contig_list(), false);
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_sgl, UCT_DCX_POLICIES);

#endif /* DCX_UCX_HAVE_SGL_ZCOPY */
