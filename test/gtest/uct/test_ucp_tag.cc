/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UCP tag matching over UCX_TLS=dcx,self with dcx's tag-matching offload
 * (UCX_DCX_TM_ENABLE) and UCP's offload thresholds lowered so that UCP
 * posts its receives to the device (UCX_TM_THRESH, UCX_TM_FORCE_THRESH):
 * expected and unexpected eager, device and software rendezvous, wildcard
 * receives, probe, cancel, 0 B to 16 MiB with every byte checked; the
 * per-interface counters (UCX_DCX_STATS_DIR) prove that the device
 * matched.  The same traffic with offload off, and with one side on and the
 * other off (a mixed job: they must still reach each other).
 */
#include "ucp_fixture.h"
#include "dcx_stat_file.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <time.h>
#include <unistd.h>
#include <vector>

using namespace dcx_test;

namespace {

/* Parameter: "on", "off", "mixed" (b has UCX_DCX_TM_ENABLE=n) or
 * "mixed_dev" (b's soft device has no tag matching, UCX_DCX_SOFT_TM=n, and
 * b keeps the default UCX_DCX_TM_ENABLE=try) */
class ucp_dcx_tm : public ucp_pair_test {
protected:
    ucp_dcx_tm() : ucp_pair_test(60) {}

    /* UCX_DCX_TM_SEG_SIZE of both peers; NULL: the default */
    virtual const char *tm_seg_size() const { return NULL; }

    /* UCX_DCX_TM_MIN_RECV of both peers; NULL: the default */
    virtual const char *tm_min_recv() const { return NULL; }

    /* whether UCP's offload thresholds are lowered (UCX_TM_THRESH=1,
     * UCX_TM_FORCE_THRESH=1); otherwise UCP's defaults and the interface's
     * tag.recv.min_recv apply, as for a user who sets neither */
    virtual bool forced() const { return true; }

    virtual void SetUp()
    {
        char fabric[32];

        m_ab = m_ba = NULL;
        snprintf(fabric, sizeof(fabric), "gtt%d-%d", (int)getpid(), ++s_seq);
        use_test_device(fabric);
        if ((GetParam() != "off") && !test_device_query().tag_offload) {
            GTEST_SKIP() << "the device has no tag matching";
        }
        ASSERT_FALSE(m_stats.path().empty());
        setenv("UCX_TLS", "dcx,self", 1);
        if (forced()) {
            setenv("UCX_TM_THRESH", "1", 1);
            setenv("UCX_TM_FORCE_THRESH", "1", 1);
        }
        setenv("UCX_DCX_STATS_DIR", m_stats.path().c_str(), 1);
        setenv("UCX_DCX_TM_ENABLE", (GetParam() == "off") ? "n" : "y", 1);
        if (tm_seg_size() != NULL) {
            setenv("UCX_DCX_TM_SEG_SIZE", tm_seg_size(), 1); /* both peers */
        }
        if (tm_min_recv() != NULL) {
            setenv("UCX_DCX_TM_MIN_RECV", tm_min_recv(), 1); /* both peers */
        }
        create_peer(&m_a, UCP_FEATURE_TAG);
        if (GetParam() == "mixed") {
            setenv("UCX_DCX_TM_ENABLE", "n", 1);
        } else if (GetParam() == "mixed_dev") {
            setenv("UCX_DCX_TM_ENABLE", "try", 1);
            setenv("UCX_DCX_SOFT_TM", "n", 1);
        }
        create_peer(&m_b, UCP_FEATURE_TAG);
        m_ab = connect(&m_a, &m_b);
        m_ba = connect(&m_b, &m_a);
    }

    virtual void TearDown()
    {
        close_ep(m_ab);
        close_ep(m_ba);
        destroy_peer(&m_a);
        destroy_peer(&m_b);
        unsetenv("UCX_TM_THRESH");
        unsetenv("UCX_TM_FORCE_THRESH");
        unsetenv("UCX_DCX_STATS_DIR");
        unsetenv("UCX_DCX_TM_ENABLE");
        unsetenv("UCX_DCX_SOFT_TM");
        unsetenv("UCX_DCX_TM_SEG_SIZE");
        unsetenv("UCX_DCX_TM_MIN_RECV");
    }

    /* Sum of one tag-matching counter over the interfaces' counters
     * files */
    uint64_t tm_counter(const char *name)
    {
        return m_stats.sum(std::string("tm.") + name);
    }

    ucp_ep_h connect(ucp_peer *from, ucp_peer *to)
    {
        ucp_ep_params_t params;
        ucp_ep_h ep = NULL;

        memset(&params, 0, sizeof(params));
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = (const ucp_address_t *)&to->address[0];
        EXPECT_EQ(UCS_OK, ucp_ep_create(from->worker, &params, &ep));
        return ep;
    }

    /* a receive: its status and, when it was not done at once, its info */
    ucs_status_t wait_recv(void *req, ucp_tag_recv_info_t *info)
    {
        ucs_status_t status;

        if ((req == NULL) || UCS_PTR_IS_ERR(req)) {
            return UCS_PTR_STATUS(req);
        }
        wait_for([&] {
            return ucp_request_check_status(req) != UCS_INPROGRESS;
        });
        status = ucp_tag_recv_request_test(req, info);
        ucp_request_free(req);
        return status;
    }

    void close_ep(ucp_ep_h ep)
    {
        ucp_request_param_t param;

        if (ep == NULL) {
            return;
        }
        memset(&param, 0, sizeof(param));
        EXPECT_EQ(UCS_OK, wait_req(ucp_ep_close_nbx(ep, &param)));
    }

    static std::vector<char> pattern(size_t size, unsigned seed)
    {
        std::vector<char> v(size);
        for (size_t i = 0; i < size; ++i) {
            v[i] = (char)(i * 31 + seed + (i >> 12));
        }
        return v;
    }

    /* One message a -> b; the receive posted first or last */
    void transfer(size_t size, bool expected, ucp_tag_t tag,
                  ucp_tag_t mask = (ucp_tag_t)-1, bool sync = false)
    {
        std::vector<char> sbuf = pattern(size, (unsigned)size + tag);
        std::vector<char> rbuf(size + 1, 0);
        ucp_request_param_t param;
        ucp_tag_recv_info_t info;
        void *rreq = NULL, *sreq;

        memset(&param, 0, sizeof(param));
        param.op_attr_mask       = UCP_OP_ATTR_FIELD_RECV_INFO;
        param.recv_info.tag_info = &info;
        if (expected) {
            rreq = ucp_tag_recv_nbx(m_b.worker, &rbuf[0], size, tag, mask,
                                    &param);
        }
        memset(&param, 0, sizeof(param));
        sreq = sync ? ucp_tag_send_sync_nbx(m_ab, size ? &sbuf[0] : NULL, size,
                                            tag, &param) :
                      ucp_tag_send_nbx(m_ab, size ? &sbuf[0] : NULL, size, tag,
                                       &param);
        if (!expected) {
            /* let it arrive unexpected: until UCP holds it as such (a
             * count of progress calls is no bound on a device that works
             * in a thread of its own, as the emulated ConnectX does) */
            ucp_tag_recv_info_t probed;
            EXPECT_TRUE(wait_for([&] {
                return ucp_tag_probe_nb(m_b.worker, tag, mask, 0, &probed) !=
                       NULL;
            })) << "size "
                << size << ": never arrived unexpected";
            param.op_attr_mask       = UCP_OP_ATTR_FIELD_RECV_INFO;
            param.recv_info.tag_info = &info;
            rreq = ucp_tag_recv_nbx(m_b.worker, &rbuf[0], size, tag, mask,
                                    &param);
        }
        EXPECT_EQ(UCS_OK, wait_req(sreq)) << "size " << size;
        bool have_info = (rreq != NULL) && !UCS_PTR_IS_ERR(rreq);
        EXPECT_EQ(UCS_OK, wait_recv(rreq, &info)) << "size " << size;
        if (have_info) {
            EXPECT_EQ(size, info.length);
            EXPECT_EQ(tag, info.sender_tag);
        }
        EXPECT_EQ(0, memcmp(&rbuf[0], size ? &sbuf[0] : "", size))
            << "size " << size << (expected ? " expected" : " unexpected");
        EXPECT_EQ(0, rbuf[size]) << "written past the message";
    }

    static int s_seq;
    ucp_ep_h m_ab, m_ba;
    dcx_test::dcx_stat_dir m_stats; /* UCX_DCX_STATS_DIR of both peers */
};

int ucp_dcx_tm::s_seq = 0;

const size_t SIZES[] = {0,     1,     100,        1024,    4000,
                        16384, 65536, 300 * 1024, 4 << 20, 16 << 20};

} /* namespace */


TEST_P(ucp_dcx_tm, expected_all_sizes)
{
    for (size_t i = 0; i < sizeof(SIZES) / sizeof(SIZES[0]); ++i) {
        transfer(SIZES[i], true, 0x1000 + i);
    }
    if (GetParam() == "on") {
        EXPECT_GT(tm_counter("posted"), 0u);
        EXPECT_GT(tm_counter("matched"), 0u);
        EXPECT_GT(tm_counter("rndv_hw"), 0u);
    } else {
        EXPECT_EQ(0u, tm_counter("matched"));
    }
}

TEST_P(ucp_dcx_tm, unexpected_all_sizes)
{
    for (size_t i = 0; i < sizeof(SIZES) / sizeof(SIZES[0]); ++i) {
        transfer(SIZES[i], false, 0x2000 + i);
    }
    if (GetParam() == "on") {
        EXPECT_GT(tm_counter("unexp_eager"), 0u);
        EXPECT_GT(tm_counter("unexp_rndv"), 0u);
    }
}

/* Synchronous sends that arrive unexpected (the eager ones carry an
 * immediate, for which UCP writes a header before the data) */
TEST_P(ucp_dcx_tm, unexpected_sync_sizes)
{
    const size_t sizes[] = {0, 100, 1024, 4000, 8000, 65536};

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        transfer(sizes[i], false, 0x3000 + i, (ucp_tag_t)-1, true);
    }
}

/* The pair with UCX_DCX_TM_SEG_SIZE=65k on both peers */
class ucp_dcx_tm_seg64k : public ucp_dcx_tm {
protected:
    virtual const char *tm_seg_size() const { return "65k"; }
};

/* Offload eager reaches 64 KiB with UCX_DCX_TM_SEG_SIZE=65k: UCP sends a
 * 64 KiB message eager, expected and unexpected, not by rendezvous (before
 * the knob the receive buffers, and so the eager maximum, were SEG_SIZE,
 * 8 KiB, and both went by rendezvous) */
TEST_P(ucp_dcx_tm_seg64k, eager_up_to_64k)
{
    /* the first tagged message activates the offload in UCP: later
     * receives are posted to the device */
    transfer(65536, false, 0x3001);
    transfer(65536, true, 0x3002);
    transfer(40000, false, 0x3003);
    if (GetParam() == "on") {
        EXPECT_EQ(0u, tm_counter("unexp_rndv"));
        EXPECT_EQ(0u, tm_counter("rndv_hw"));
        EXPECT_EQ(0u, tm_counter("rndv_sw"));
        EXPECT_GT(tm_counter("matched"), 0u);
        EXPECT_GE(tm_counter("unexp_eager"), 2u);
    }
}

/* The pair with UCP's default offload thresholds and the interface's
 * min_recv from the device's model (UCX_DCX_TM_MIN_RECV=auto): the larger
 * decides which receives UCP posts */
class ucp_dcx_tm_model : public ucp_dcx_tm {
protected:
    virtual bool forced() const { return false; }

    virtual const char *tm_min_recv() const { return "auto"; }
};

/* With UCP's defaults and the model's min_recv, a receive between UCP's
 * own threshold (1 KiB) and min_recv stays in software, and one above both
 * is posted to the device; every byte arrives either way.  UCP's threshold
 * alone (min_recv 0, the default) is the subject of the other fixtures. */
TEST_P(ucp_dcx_tm_model, receives_posted_where_offload_pays)
{
    const size_t min_recv = test_device_query().tag_min_recv;

    /* UCP posts to the device once a message of at least its threshold
     * arrived unexpected through the interface (it activates the offload
     * and, with the self transport active as well, tells UCP which
     * interface the sender's tags come through) */
    transfer(100000, false, 0x4000);
    const uint64_t posted0 = tm_counter("posted");
    if (min_recv > 1025) {
        transfer(1024, true, 0x4001);
        transfer((1024 + min_recv) / 2, true, 0x4002);
        transfer(min_recv - 1, true, 0x4003);
        if (GetParam() == "on") {
            EXPECT_EQ(posted0, tm_counter("posted"))
                << "a receive below min_recv " << min_recv
                << " went to the device";
        }
    }
    transfer(std::max<size_t>(min_recv, 1024), true, 0x4004);
    transfer(200000, true, 0x4005);
    if (GetParam() == "on") {
        EXPECT_GE(tm_counter("posted"), posted0 + 2);
        EXPECT_GT(tm_counter("rndv_hw"), 0u);
    }
    transfer(4000, false, 0x4006);
    transfer(200000, false, 0x4007);
}

TEST_P(ucp_dcx_tm, wildcard_receives)
{
    transfer(2000, true, 0xabcd0001, 0xffff0000);
    transfer(200000, true, 0x12345678, 0);
    transfer(50, false, 0x99, 0);
}

TEST_P(ucp_dcx_tm, probe_then_receive)
{
    std::vector<char> sbuf = pattern(70000, 3), rbuf(70000);
    ucp_request_param_t param;
    ucp_tag_recv_info_t info;
    ucp_tag_message_h msg = NULL;

    memset(&param, 0, sizeof(param));
    void *sreq = ucp_tag_send_nbx(m_ab, &sbuf[0], sbuf.size(), 0x77, &param);
    ASSERT_TRUE(wait_for([&]() {
        msg = ucp_tag_probe_nb(m_b.worker, 0x77, (ucp_tag_t)-1, 1, &info);
        return msg != NULL;
    }));
    EXPECT_EQ(sbuf.size(), info.length);
    void *rreq = ucp_tag_msg_recv_nbx(m_b.worker, &rbuf[0], rbuf.size(), msg,
                                      &param);
    EXPECT_EQ(UCS_OK, wait_req(sreq));
    EXPECT_EQ(UCS_OK, wait_req(rreq));
    EXPECT_TRUE(sbuf == rbuf);
}

TEST_P(ucp_dcx_tm, cancel_posted_receive)
{
    std::vector<char> rbuf(100000);
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    void *rreq = ucp_tag_recv_nbx(m_b.worker, &rbuf[0], rbuf.size(), 0x55,
                                  (ucp_tag_t)-1, &param);
    ASSERT_FALSE(UCS_PTR_IS_ERR(rreq));
    progress();
    ucp_request_cancel(m_b.worker, rreq);
    EXPECT_EQ(UCS_ERR_CANCELED, wait_req(rreq));
    /* the tag is free again: a new message goes to a new receive */
    transfer(3000, true, 0x55);
}

TEST_P(ucp_dcx_tm, many_in_flight_both_ways)
{
    const int n = 64;
    std::vector<std::vector<char>> sb(n), rb(n);
    std::vector<void *> reqs;
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    for (int i = 0; i < n; ++i) {
        size_t size = (i % 4 == 0) ? 200000 : 100 * i;
        sb[i]       = pattern(size, i);
        rb[i].assign(size, 0);
        ucp_peer *dst = (i & 1) ? &m_a : &m_b;
        reqs.push_back(ucp_tag_recv_nbx(dst->worker, &rb[i][0], size, 0x300 + i,
                                        (ucp_tag_t)-1, &param));
    }
    for (int i = 0; i < n; ++i) {
        reqs.push_back(ucp_tag_send_nbx((i & 1) ? m_ba : m_ab, &sb[i][0],
                                        sb[i].size(), 0x300 + i, &param));
    }
    for (size_t i = 0; i < reqs.size(); ++i) {
        EXPECT_EQ(UCS_OK, wait_req(reqs[i])) << i;
    }
    for (int i = 0; i < n; ++i) {
        EXPECT_TRUE(sb[i] == rb[i]) << i;
    }
}

/* Two receives into one buffer under two tags: dcx refuses the second
 * buffer (UCS_ERR_ALREADY_EXISTS, as UCX's rc/dc), which UCP then matches
 * in software; each message lands whole, the first by the device, eager
 * and rendezvous */
TEST_P(ucp_dcx_tm, two_receives_one_buffer)
{
    const size_t sizes[] = {4000, 200000};

    /* UCP offloads once a tagged message came through the interface */
    transfer(100, false, 0x40ff);
    for (size_t k = 0; k < 2; ++k) {
        size_t size          = sizes[k];
        std::vector<char> s1 = pattern(size, 1), s2 = pattern(size, 2);
        std::vector<char> rbuf(size);
        ucp_request_param_t param;
        ucp_tag_t t1 = 0x4100 + k, t2 = 0x4200 + k;
        void *r1, *r2, *sreq;

        memset(&param, 0, sizeof(param));
        r1 = ucp_tag_recv_nbx(m_b.worker, &rbuf[0], size, t1, (ucp_tag_t)-1,
                              &param);
        r2 = ucp_tag_recv_nbx(m_b.worker, &rbuf[0], size, t2, (ucp_tag_t)-1,
                              &param);
        ASSERT_FALSE(UCS_PTR_IS_ERR(r1));
        ASSERT_FALSE(UCS_PTR_IS_ERR(r2));
        sreq = ucp_tag_send_nbx(m_ab, &s2[0], size, t2, &param);
        EXPECT_EQ(UCS_OK, wait_req(sreq)) << size;
        EXPECT_EQ(UCS_OK, wait_req(r2)) << size;
        EXPECT_TRUE(rbuf == s2) << size;
        sreq = ucp_tag_send_nbx(m_ab, &s1[0], size, t1, &param);
        EXPECT_EQ(UCS_OK, wait_req(sreq)) << size;
        EXPECT_EQ(UCS_OK, wait_req(r1)) << size;
        EXPECT_TRUE(rbuf == s1) << size;
    }
    if (GetParam() == "on") {
        /* only the first receive of each pair went to the device */
        EXPECT_EQ(2u, tm_counter("posted"));
        EXPECT_EQ(2u, tm_counter("matched"));
    }
}

/* named by the mode (offload/ucp_dcx_tm.NAME/mixed_dev), which the test
 * command's lists can name */
static std::string tm_mode(const ::testing::TestParamInfo<std::string> &info)
{
    return info.param;
}

INSTANTIATE_TEST_SUITE_P(offload, ucp_dcx_tm,
                         ::testing::Values("on", "off", "mixed", "mixed_dev"),
                         tm_mode);
INSTANTIATE_TEST_SUITE_P(offload, ucp_dcx_tm_seg64k,
                         ::testing::Values("on", "off", "mixed", "mixed_dev"),
                         tm_mode);
INSTANTIATE_TEST_SUITE_P(offload, ucp_dcx_tm_model,
                         ::testing::Values("on", "off"), tm_mode);
