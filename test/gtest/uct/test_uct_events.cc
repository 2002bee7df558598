/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wake-up events of the dcx transport through the UCT API: the interface's
 * event fd becomes readable when an armed interface receives an active
 * message or completes a send, also while its process does not progress at
 * all (the soft device's helper thread receives); arming with events
 * pending answers UCS_ERR_BUSY.
 */
#include "uct_fixture.h"

#include <cstring>
#include <poll.h>

using namespace dcx_test;

namespace {

const uint8_t AM_ID = 9;

bool fd_readable(int fd, int timeout_ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};

    return poll(&pfd, 1, timeout_ms) == 1;
}

ucs_status_t count_am(void *arg, void *data, size_t length, unsigned flags)
{
    (*static_cast<int *>(arg))++;
    return UCS_OK;
}

} /* namespace */


class uct_dcx_events : public uct_dcx_policy_test {
protected:
    virtual void SetUp()
    {
        uct_dcx_test::SetUp();
        m_a = create_entity();
        m_b = create_entity();
        ASSERT_TRUE(m_a && m_b);
        if (!(m_a->attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_FD)) {
            GTEST_SKIP() << "the interface has no wake-up events";
        }
        m_rx = 0;
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, AM_ID, count_am,
                                                   &m_rx, 0));
        m_ab = connect(m_a, m_b);
        ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_b->iface, &m_fd_b));
        ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_a->iface, &m_fd_a));
    }

    /* Arms e, progressing it while events are pending (what UCP does) */
    void arm(entity *e, unsigned events)
    {
        ucs_status_t status;
        int tries = 0;

        while ((status = uct_iface_event_arm(e->iface, events)) ==
               UCS_ERR_BUSY) {
            uct_worker_progress(e->worker);
            ASSERT_LT(++tries, 100000) << "never armed";
        }
        ASSERT_EQ(UCS_OK, status);
    }

    /* Progresses only the sender until op() stops asking for resources */
    template <typename F> ucs_status_t send_from_a(F op)
    {
        ucs_status_t status;

        while ((status = op()) == UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(m_a->worker);
        }
        return status;
    }

    entity *m_a, *m_b;
    uct_ep_h m_ab;
    int m_rx;
    int m_fd_a, m_fd_b;
};

TEST_P(uct_dcx_events, caps)
{
    EXPECT_EQ(UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV |
                  UCT_IFACE_FLAG_EVENT_FD,
              m_a->attr.cap.event_flags &
                  (UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV |
                   UCT_IFACE_FLAG_EVENT_FD | UCT_IFACE_FLAG_EVENT_RECV_SIG));
    EXPECT_GE(m_fd_a, 0);
    EXPECT_NE(m_fd_a, m_fd_b);
}

/* The receiver is armed and does not progress; an AM makes its fd readable
 * (the device delivers it meanwhile), and the AM is there once it does */
TEST_P(uct_dcx_events, recv_wakes_receiver)
{
    arm(m_b, UCT_EVENT_RECV);
    EXPECT_FALSE(fd_readable(m_fd_b, 0));

    ASSERT_EQ(UCS_OK, send_from_a([&] {
                  return uct_ep_am_short(m_ab, AM_ID, 42, NULL, 0);
              }));
    /* the sender completes on its own */
    test_comp comp;
    ucs_status_t status;
    while ((status = uct_ep_flush(m_ab, 0, &comp.uct)) == UCS_ERR_NO_RESOURCE) {
        uct_worker_progress(m_a->worker);
    }
    while ((status == UCS_INPROGRESS) && (comp.done == 0)) {
        uct_worker_progress(m_a->worker);
    }

    ASSERT_TRUE(fd_readable(m_fd_b, 10000));
    EXPECT_EQ(0, m_rx);
    /* an event is pending: not armed */
    EXPECT_EQ(UCS_ERR_BUSY, uct_iface_event_arm(m_b->iface, UCT_EVENT_RECV));
    EXPECT_FALSE(fd_readable(m_fd_b, 0));
    ASSERT_TRUE(wait_for([&] { return m_rx == 1; }));
    arm(m_b, UCT_EVENT_RECV);
    EXPECT_FALSE(fd_readable(m_fd_b, 0));
}

/* Many messages, more than the flow control window, to a receiver that
 * sleeps on its fd whenever it has nothing to do: it wakes up for each
 * batch, grants credits, sleeps again; nothing is lost */
TEST_P(uct_dcx_events, recv_burst_while_asleep)
{
    const int count = 500;
    int sent = 0, wakeups = 0, rounds = 0;

    arm(m_b, UCT_EVENT_RECV);
    while (m_rx < count) {
        ASSERT_LT(++rounds, 100000);
        /* the sender: as much as its credits allow */
        while ((sent < count) &&
               (uct_ep_am_short(m_ab, AM_ID, sent, NULL, 0) == UCS_OK)) {
            ++sent;
        }
        uct_worker_progress(m_a->worker);
        /* the receiver: asleep until woken, then works until it can arm */
        if (fd_readable(m_fd_b, 1)) {
            ++wakeups;
            arm(m_b, UCT_EVENT_RECV);
        }
    }
    EXPECT_EQ(count, sent);
    EXPECT_GT(wakeups, 0);
    flush_ep(m_ab);
}

/* The sender is armed for send completions and sleeps: a zero-copy put's
 * completion makes its fd readable */
TEST_P(uct_dcx_events, send_completion_wakes_sender)
{
    mem src = alloc_mem(65536);
    mem dst = alloc_mem(65536);
    test_comp comp;

    memset(src.ptr, 's', src.length);
    uct_iov_t iov = {src.ptr, src.length, src.memh, 0, 1};
    ASSERT_EQ(UCS_INPROGRESS, send_from_a([&] {
                  return uct_ep_put_zcopy(m_ab, &iov, 1, (uintptr_t)dst.ptr,
                                          dst.rkey, &comp.uct);
              }));
    ucs_status_t status = uct_iface_event_arm(m_a->iface, UCT_EVENT_SEND_COMP);
    if (status == UCS_OK) {
        /* the completion had not arrived yet: it wakes us */
        ASSERT_TRUE(fd_readable(m_fd_a, 10000));
        EXPECT_EQ(0, comp.done);
    } else {
        ASSERT_EQ(UCS_ERR_BUSY, status);
    }
    ASSERT_TRUE(wait_for([&] { return comp.done == 1; }));
    EXPECT_EQ(UCS_OK, comp.status);
    EXPECT_EQ(0, memcmp(src.ptr, dst.ptr, src.length));
}

TEST_P(uct_dcx_events, arm_bad_flow)
{
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_iface_event_arm(m_a->iface, UCS_BIT(7)));
    EXPECT_EQ(1, log_counter::errors());
    log_counter::reset();
    /* no events asked for: nothing to arm, nothing pending */
    EXPECT_EQ(UCS_OK, uct_iface_event_arm(m_a->iface, 0));
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_events, UCT_DCX_POLICIES);
