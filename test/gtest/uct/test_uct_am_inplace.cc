/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Active messages lent where the device received them: on a device that
 * completes receives in place (the soft device's SOFT_RECV_IN_PLACE), an
 * AM of 256 bytes or more reaches its handler without
 * UCT_CB_PARAM_FLAG_DESC, its bytes intact; smaller ones, interfaces that
 * ask for an AM alignment, and devices told not to, keep handing over
 * descriptors.  A handler that keeps a lent message gets one error line
 * and nothing breaks.
 */
#include "uct_fixture.h"

#include <cstring>
#include <string>
#include <vector>

using namespace dcx_test;

namespace {

const uint8_t AM_ID = 9;

struct lent_rx {
    int count      = 0;
    int lent       = 0; /* without UCT_CB_PARAM_FLAG_DESC */
    int misaligned = 0; /* payloads off an 8-byte boundary */
    bool keep      = false;
    std::vector<std::string> data;
    std::vector<void *> kept;

    static ucs_status_t cb(void *arg, void *data, size_t length, unsigned flags)
    {
        lent_rx *self = static_cast<lent_rx *>(arg);

        self->count++;
        self->lent += !(flags & UCT_CB_PARAM_FLAG_DESC);
        self->misaligned += ((uintptr_t)data % 8) != 0;
        self->data.push_back(std::string((char *)data, length));
        if (self->keep) {
            if (flags & UCT_CB_PARAM_FLAG_DESC) {
                self->kept.push_back((char *)data - 16);
            }
            return UCS_INPROGRESS;
        }
        return UCS_OK;
    }
};

size_t pack_str(void *dest, void *arg)
{
    const std::string *s = static_cast<const std::string *>(arg);

    memcpy(dest, s->data(), s->size());
    return s->size();
}

} // namespace

class uct_dcx_am_in_place : public uct_dcx_test {
protected:
    void SetUp() override
    {
        uct_dcx_test::SetUp();
        if (!test_on_soft()) {
            GTEST_SKIP() << "receives in place are the soft device's";
        }
    }

    void TearDown() override
    {
        for (void *d : m_rx.kept) {
            uct_iface_release_desc(d);
        }
        uct_dcx_test::TearDown();
    }

    /* a and b on the same device: only b's worker progresses while a's
     * AMs wait, so that b's poll serves them (a's would serve them into
     * receive buffers).  The first message of a source takes the device's
     * general path (copied): one is sent before the counts start. */
    void open_pair()
    {
        m_a = create_entity();
        m_b = create_entity();
        ASSERT_TRUE(m_a && m_b);
        m_ab = connect(m_a, m_b);
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, AM_ID,
                                                   lent_rx::cb, &m_rx, 0));
        send(1, 8);
        m_rx.lent = 0;
    }

    /* n bcopy AMs of len bytes, each of its own byte, received by b */
    void send(int n, size_t len)
    {
        int before = m_rx.count;

        for (int i = 0; i < n; ++i) {
            std::string s(len, (char)('a' + i % 26));
            ssize_t ret;

            while ((ret = uct_ep_am_bcopy(m_ab, AM_ID, pack_str, &s, 0)) ==
                   UCS_ERR_NO_RESOURCE) {
                uct_worker_progress(m_b->worker);
                uct_worker_progress(m_a->worker);
            }
            ASSERT_EQ((ssize_t)len, ret);
            ASSERT_TRUE(wait_progressing(m_b, [&] {
                return m_rx.count == before + i + 1;
            }));
            EXPECT_EQ(s, m_rx.data.back()) << "message " << i;
        }
    }

    entity *m_a = nullptr, *m_b = nullptr;
    uct_ep_h m_ab = nullptr;
    lent_rx m_rx;
};

TEST_F(uct_dcx_am_in_place, large_am_lent_small_handed_over)
{
    open_pair();
    send(20, 4000);
    /* all but those a pass of the device's helper thread took (copied:
     * only a poll of b's lends), which a loaded machine makes happen */
    EXPECT_GT(m_rx.lent, 10) << "4000-byte AMs were not lent";
    EXPECT_EQ(0, m_rx.misaligned) << "lent payloads not 8-byte aligned";
    int lent = m_rx.lent;
    send(20, 32);
    EXPECT_EQ(lent, m_rx.lent) << "a 32-byte AM was lent";
    flush_iface(m_a);
}

/* am_short of a few hundred bytes goes inline, in the device's compact
 * packet: it is lent too, aligned as a bcopy's is */
TEST_F(uct_dcx_am_in_place, short_am_aligned)
{
    std::vector<uint8_t> payload(504);
    uint64_t hdr = 0x1122334455667788ull;

    open_pair();
    for (size_t i = 0; i < payload.size(); ++i) {
        payload[i] = (uint8_t)i;
    }
    for (int i = 0; i < 20; ++i) {
        int before = m_rx.count;
        ucs_status_t status;

        while ((status = uct_ep_am_short(m_ab, AM_ID, hdr, payload.data(),
                                         payload.size())) ==
               UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(m_b->worker);
            uct_worker_progress(m_a->worker);
        }
        ASSERT_EQ(UCS_OK, status);
        ASSERT_TRUE(wait_progressing(m_b,
                                     [&] { return m_rx.count == before + 1; }));
        ASSERT_EQ(sizeof(hdr) + payload.size(), m_rx.data.back().size());
        EXPECT_EQ(0, memcmp(m_rx.data.back().data() + sizeof(hdr),
                            payload.data(), payload.size()));
    }
    EXPECT_GT(m_rx.lent, 10) << "512-byte am_shorts were not lent";
    EXPECT_EQ(0, m_rx.misaligned) << "lent payloads not 8-byte aligned";
    flush_iface(m_a);
}

/* A handler that keeps a lent AM (UCS_INPROGRESS without the flag): one
 * error line each, the message is not kept, later AMs arrive intact */
TEST_F(uct_dcx_am_in_place, keeping_a_lent_am_bad_flow)
{
    open_pair();
    log_counter::reset();
    m_rx.keep = true;
    send(10, 2048);
    m_rx.keep = false;
    ASSERT_GT(m_rx.lent, 0);
    EXPECT_EQ(10 - m_rx.lent, (int)m_rx.kept.size()) << "copied ones are kept";
    EXPECT_EQ(m_rx.lent, log_counter::errors());
    EXPECT_NE(std::string::npos,
              log_counter::messages()[0].find("UCT_CB_PARAM_FLAG_DESC"));
    log_counter::reset();
    send(10, 3000);
    EXPECT_EQ(0, log_counter::errors());
    flush_iface(m_a);
}

class uct_dcx_am_in_place_off : public uct_dcx_am_in_place {
protected:
    void init_env(scoped_env &env) override
    {
        env.set("UCX_DCX_SOFT_RECV_IN_PLACE", "n");
    }
};

TEST_F(uct_dcx_am_in_place_off, every_am_handed_over)
{
    open_pair();
    send(20, 4000);
    EXPECT_EQ(0, m_rx.lent);
    flush_iface(m_a);
}

/* An interface that asks for an AM alignment gets descriptors (aligned)
 * at every size */
class uct_dcx_am_in_place_aligned : public uct_dcx_am_in_place {
protected:
    void iface_params(uct_iface_params_t &params) override
    {
        params.field_mask |= UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT;
        params.am_alignment = 64;
    }
};

TEST_F(uct_dcx_am_in_place_aligned, aligned_am_handed_over)
{
    open_pair();
    send(20, 4000);
    EXPECT_EQ(0, m_rx.lent);
    flush_iface(m_a);
}
