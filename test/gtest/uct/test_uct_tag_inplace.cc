/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag offload's unexpected messages lent where the device received them:
 * on a device that completes receives in place (the soft device's
 * SOFT_RECV_IN_PLACE), an unexpected eager message of 48 bytes or more
 * (64 with its TMH) and no immediate reaches the eager callback without
 * UCT_CB_PARAM_FLAG_DESC, and an AM to a tag-matching interface its
 * handler so too, their bytes intact.  A callback that keeps a lent
 * message gets one error line, and nothing breaks.
 */
#include "uct_tag_fixture.h"

#include <functional>
#include <map>
#include <string>

namespace {

const uct_tag_t TAG = 0x4400;

} // namespace

class uct_dcx_tag_in_place : public uct_dcx_tag_base {
protected:
    void SetUp() override
    {
        uct_dcx_tag_base::SetUp();
        if (!IsSkipped() && !test_on_soft()) {
            GTEST_SKIP() << "receives in place are the soft device's";
        }
    }

    void TearDown() override
    {
        for (void *d : m_kept) {
            release_desc(d);
        }
        uct_dcx_tag_base::TearDown();
    }

    void iface_params(uct_iface_params_t &params) override
    {
        uct_dcx_tag_base::iface_params(params);
        if (m_tag_params) {
            params.eager_cb = keep_eager_cb;
        }
    }

    /* the fixture's eager callback, keeping the message when m_keep says
     * so (a descriptor handed over is kept; a lent message cannot be) */
    static ucs_status_t keep_eager_cb(void *arg, void *data, size_t length,
                                      unsigned flags, uct_tag_t stag,
                                      uint64_t imm, void **context)
    {
        uct_dcx_tag_in_place *self = static_cast<uct_dcx_tag_in_place *>(arg);

        unexp_eager_cb(arg, data, length, flags, stag, imm, context);
        if (!self->m_keep) {
            return UCS_OK;
        }
        if (flags & UCT_CB_PARAM_FLAG_DESC) {
            self->m_kept.push_back((char *)data - 16);
        }
        return UCS_INPROGRESS;
    }

    /* the fixture's AM callback, counting the AMs lent */
    static ucs_status_t am_lent_cb(void *arg, void *data, size_t length,
                                   unsigned flags)
    {
        uct_dcx_tag_in_place *self = static_cast<uct_dcx_tag_in_place *>(arg);

        self->m_am_lent += !(flags & UCT_CB_PARAM_FLAG_DESC);
        return am_cb(&self->m_am, data, length, flags);
    }

    /* a sends to b, both tag-matching interfaces of one device: only b's
     * worker progresses while a's messages wait, so that b's poll serves
     * them (a's would copy them into b's receive buffers).  The first
     * message of a source takes the device's general path (copied): one is
     * sent before the counts start. */
    void open_pair(const std::map<std::string, std::string> &cfg   = {},
                   const std::map<std::string, std::string> &cfg_a = {})
    {
        std::map<std::string, std::string> ca = cfg_a.empty() ? cfg : cfg_a;
        std::map<std::string, std::string> cb = cfg;

        ca["TM_ENABLE"] = cb["TM_ENABLE"] = "y";
        m_a                               = create_entity(ca);
        m_b                               = create_entity(cb);
        ASSERT_TRUE(m_a && m_b);
        m_ab = connect(m_a, m_b);
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, AM_ID,
                                                   am_lent_cb, this, 0));
        send_tagged(1, 8);
        m_unexp.clear();
    }

    /* n unexpected eager bcopy messages of len bytes, each of its own
     * pattern, received by b; imm not 0: synchronous sends (UCP's) */
    void send_tagged(int n, size_t len, uint64_t imm = 0)
    {
        size_t before = m_unexp.size();

        for (int i = 0; i < n; ++i) {
            std::vector<char> data = pattern(len, i);
            pack_arg arg           = {data.data(), data.size()};
            ssize_t ret;

            while ((ret = uct_ep_tag_eager_bcopy(m_ab, TAG + i, imm, pack_cb,
                                                 &arg, 0)) ==
                   UCS_ERR_NO_RESOURCE) {
                uct_worker_progress(m_b->worker);
                uct_worker_progress(m_a->worker);
            }
            ASSERT_EQ((ssize_t)len, ret);
            ASSERT_TRUE(wait_progressing(m_b, [&] {
                return m_unexp.size() == before + i + 1;
            }));
            EXPECT_TRUE(m_unexp.back().data == data) << "message " << i;
            EXPECT_EQ(TAG + i, m_unexp.back().tag);
            EXPECT_EQ(imm, m_unexp.back().imm);
        }
    }

    /* n bcopy AMs of len bytes, each of its own pattern, received by b */
    void send_am(int n, size_t len)
    {
        for (int i = 0; i < n; ++i) {
            std::vector<char> data = pattern(len, 40 + i);
            pack_arg arg           = {data.data(), data.size()};
            size_t before          = m_am.size();
            ssize_t ret;

            while ((ret = uct_ep_am_bcopy(m_ab, AM_ID, pack_cb, &arg, 0)) ==
                   UCS_ERR_NO_RESOURCE) {
                uct_worker_progress(m_b->worker);
                uct_worker_progress(m_a->worker);
            }
            ASSERT_EQ((ssize_t)data.size(), ret);
            ASSERT_TRUE(wait_progressing(m_b, [&] {
                return m_am.size() == before + 1;
            }));
            EXPECT_TRUE(m_am.back() == data) << "message " << i;
        }
    }

    /* messages of m_unexp handed over without UCT_CB_PARAM_FLAG_DESC */
    int lent() const
    {
        int n = 0;

        for (const unexp_msg &m : m_unexp) {
            n += !(m.flags & UCT_CB_PARAM_FLAG_DESC);
        }
        return n;
    }

    entity *m_a = nullptr, *m_b = nullptr;
    uct_ep_h m_ab = nullptr;
    std::vector<std::vector<char>> m_am;
    std::vector<void *> m_kept;
    bool m_keep   = false;
    int m_am_lent = 0;
};

TEST_F(uct_dcx_tag_in_place, unexpected_eager_lent_small_handed_over)
{
    open_pair();
    send_tagged(20, 4000);
    /* all but those a pass of the device's helper thread took (copied:
     * only a poll of b's lends) */
    EXPECT_GT(lent(), 10) << "unexpected 4000-byte messages were not lent";
    for (const unexp_msg &m : m_unexp) {
        EXPECT_TRUE(m.flags & UCT_CB_PARAM_FLAG_FIRST);
        EXPECT_FALSE(m.flags & UCT_CB_PARAM_FLAG_MORE);
    }
    m_unexp.clear();
    send_tagged(20, 32);
    EXPECT_EQ(0, lent()) << "a 32-byte message (48 with its TMH) was lent";
    flush_iface(m_a);
}

/* A message with an immediate (UCP's synchronous send) is handed over in
 * a descriptor all the same: UCP writes a header of its own before its
 * data, and without the flag copies it onto its stack to do so (UCP 1.13
 * asserts there for one of more than ~1 KiB, and its debug build aborts) */
TEST_F(uct_dcx_tag_in_place, sync_eager_handed_over)
{
    open_pair();
    send_tagged(10, 4000, 0x1234567800000001ull);
    EXPECT_EQ(0, lent()) << "a message with an immediate was lent";
    for (const unexp_msg &m : m_unexp) {
        EXPECT_TRUE(m.flags & UCT_CB_PARAM_FLAG_DESC);
    }
    m_unexp.clear();
    send_tagged(10, 4000);
    EXPECT_GT(lent(), 5) << "those without were not lent";
    flush_iface(m_a);
}

/* A message longer than an AM (receive buffers of TM_SEG_SIZE above
 * SEG_SIZE) is handed over in a descriptor: UCP copies a lent one into a
 * buffer of its AM pool, whose buffers are as long as the longest AM of
 * its interfaces */
TEST_F(uct_dcx_tag_in_place, longer_than_an_am_handed_over)
{
    open_pair({{"SEG_SIZE", "8k"}, {"TM_SEG_SIZE", "16k"}});
    ASSERT_GE(m_b->attr.cap.tag.eager.max_bcopy, 12000u);
    ASSERT_LT(m_b->attr.cap.am.max_bcopy, 12000u);
    send_tagged(10, 12000);
    EXPECT_EQ(0, lent()) << "a message longer than an AM was lent";
    m_unexp.clear();
    send_tagged(10, m_b->attr.cap.am.max_bcopy);
    EXPECT_GT(lent(), 5) << "those as long as an AM were not lent";
    flush_iface(m_a);
}

/* An AM to a tag-matching interface travels behind a NO_TAG TMH: lent to
 * its handler as on a plain interface */
TEST_F(uct_dcx_tag_in_place, am_to_tm_interface_lent)
{
    open_pair();
    send_am(10, 3000);
    EXPECT_GT(m_am_lent, 5) << "3000-byte AMs were not lent";
    flush_iface(m_a);
}

/* An AM longer than the receiver's own, from a peer with a larger
 * SEG_SIZE into receive buffers of TM_SEG_SIZE, is handed over in a
 * descriptor (UCP would copy a lent one into a buffer of its AM pool) */
TEST_F(uct_dcx_tag_in_place, am_longer_than_own_handed_over)
{
    open_pair({{"SEG_SIZE", "8k"}, {"TM_SEG_SIZE", "16k"}},
              {{"SEG_SIZE", "16k"}, {"TM_SEG_SIZE", "16k"}});
    ASSERT_GE(m_a->attr.cap.am.max_bcopy, 12000u);
    ASSERT_LT(m_b->attr.cap.am.max_bcopy, 12000u);
    send_am(10, 12000);
    EXPECT_EQ(0, m_am_lent) << "an AM longer than the receiver's was lent";
    send_am(10, 3000);
    EXPECT_GT(m_am_lent, 5) << "3000-byte AMs were not lent";
    flush_iface(m_a);
}

/* An eager callback that keeps a lent message (UCS_INPROGRESS without the
 * flag): one error line each, the message is not kept, later messages
 * arrive intact */
TEST_F(uct_dcx_tag_in_place, keeping_a_lent_message_bad_flow)
{
    open_pair();
    log_counter::reset();
    m_keep = true;
    send_tagged(10, 2048);
    m_keep = false;
    ASSERT_GT(lent(), 0);
    EXPECT_EQ(10 - lent(), (int)m_kept.size()) << "copied ones are kept";
    EXPECT_EQ(lent(), log_counter::errors());
    ASSERT_FALSE(log_counter::messages().empty());
    EXPECT_NE(std::string::npos,
              log_counter::messages()[0].find("UCT_CB_PARAM_FLAG_DESC"));
    log_counter::reset();
    send_tagged(10, 3000);
    EXPECT_EQ(0, log_counter::errors());
    flush_iface(m_a);
}
