/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wake-up events of the dcx transport through the UCT API: the interface's
 * event fd becomes readable when an armed interface receives an active
 * message or completes a send, also while its process does not progress at
 * all (the soft device's helper thread receives); arming with events
 * pending answers UCS_ERR_BUSY.
 */
#include "dcx_stat_file.h"
#include "uct_fixture.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <strings.h>
#include <thread>
#include <unistd.h>

using namespace dcx_test;

namespace {

const uint8_t AM_ID = 9;

bool fd_readable(int fd, int timeout_ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};

    return poll(&pfd, 1, timeout_ms) == 1;
}

/* Arms e, progressing it while events are pending (what UCP does; a new
 * interface's device may also have work of its own at first) */
void arm_progressing(entity *e, unsigned events)
{
    ucs_status_t status;
    int tries = 0;

    while ((status = uct_iface_event_arm(e->iface, events)) == UCS_ERR_BUSY) {
        uct_worker_progress(e->worker);
        ASSERT_LT(++tries, 100000) << "never armed";
    }
    ASSERT_EQ(UCS_OK, status);
}

/* Whether an arm can look at the CQs before it arms: everywhere but on
 * the mlx5 backend with its raw queues off (UCX_DCX_MLX5_RAW=n), whose CQs
 * libmlx5's poll reads, taking what it finds */
bool arm_can_look()
{
    const char *raw = getenv("UCX_DCX_MLX5_RAW");

    if (test_on_soft() || (raw == NULL)) {
        return true;
    }
    for (const char *no : {"n", "no", "off", "0"}) {
        if (!strcasecmp(raw, no)) {
            return false;
        }
    }
    return true;
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

    void arm(entity *e, unsigned events) { arm_progressing(e, events); }

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

/* An arm looks for work for ARM_POLL before it arms: an active message
 * sent meanwhile (from another thread, 50 ms into a window of 1 s) makes
 * it answer UCS_ERR_BUSY with nothing armed, so the message fired no event;
 * progress then finds it.  Without the look, the arm answered UCS_OK at
 * once and the message woke the fd. */
TEST_P(uct_dcx_events, arm_takes_work_that_comes_while_it_looks)
{
    if (!arm_can_look()) {
        GTEST_SKIP() << "libmlx5's poll cannot look at a CQ without taking "
                        "its completions: arms at once";
    }
    entity *c = create_entity({{"ARM_POLL", "1s"}});
    int rx    = 0;

    ASSERT_TRUE(c != NULL);
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(c->iface, AM_ID, count_am, &rx, 0));
    uct_ep_h ac = connect(m_a, c);
    int fd_c;
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(c->iface, &fd_c));
    /* the connection's own traffic (if any) taken before the look */
    for (int i = 0; i < 100; ++i) {
        uct_worker_progress(c->worker);
    }

    std::atomic<int> sent(0), sending(0);
    std::thread sender([&] {
        usleep(50000);
        sending = 1;
        ucs_status_t status;
        while ((status = uct_ep_am_short(ac, AM_ID, 7, NULL, 0)) ==
               UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(m_a->worker);
        }
        sent = (status == UCS_OK) ? 1 : -1;
    });
    ucs_status_t status = uct_iface_event_arm(c->iface, UCT_EVENT_RECV);
    int answered_after  = sending.load();
    sender.join();
    EXPECT_EQ(1, answered_after) << "the arm answered before the message";
    ASSERT_EQ(1, sent.load());
    EXPECT_EQ(UCS_ERR_BUSY, status);
    EXPECT_FALSE(fd_readable(fd_c, 0)) << "an event fired: the CQ was armed";
    ASSERT_TRUE(wait_for([&] {
        uct_worker_progress(c->worker);
        return rx == 1;
    }));
    flush_ep(ac);
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


/* The look's time counts from the first arm after a progress call that
 * found completions: an arm with nothing to do looks (for the whole
 * ARM_POLL), the arms after it (nothing progressed meanwhile) arm at once,
 * and so do arms with ARM_POLL=0.  Looks are counted by the interface
 * (arm.looks in its counters file), not timed. */
class uct_dcx_arm_poll : public uct_dcx_test {
protected:
    /* an interface whose device has settled: the progress calls run the
     * device's first passes, which a loaded host may leave to the arms
     * (a device whose engine has not passed yet looks busy to an arm,
     * which then answers BUSY and looks again) */
    entity *create_counted(const char *arm_poll)
    {
        EXPECT_FALSE(m_stats.path().empty());
        entity *e = create_entity({{"ARM_POLL", arm_poll},
                                   {"STATS_DIR", m_stats.path()}});
        for (int i = 0; (e != NULL) && (i < 1000); ++i) {
            uct_worker_progress(e->worker);
        }
        return e;
    }

    /* arm.looks of every counted interface */
    uint64_t looks() const { return m_stats.sum("arm.looks"); }

    /* The looks the arms of e made (arm_progressing, one per events given) */
    uint64_t arm_looks(entity *e, std::initializer_list<unsigned> events)
    {
        uint64_t before = looks();

        for (unsigned ev : events) {
            arm_progressing(e, ev);
        }
        return looks() - before;
    }

    dcx_stat_dir m_stats;
};

TEST_F(uct_dcx_arm_poll, looks_once_per_activity)
{
    if (!arm_can_look()) {
        GTEST_SKIP() << "the mlx5 backend with libmlx5's poll arms at once";
    }
    entity *c = create_counted("20ms");

    ASSERT_TRUE(c != NULL);
    EXPECT_EQ(1u, arm_looks(c, {UCT_EVENT_RECV})) << "the first arm";
    EXPECT_EQ(0u, arm_looks(c, {UCT_EVENT_RECV,
                                UCT_EVENT_RECV | UCT_EVENT_SEND_COMP}))
        << "arms with nothing progressed looked again";
    EXPECT_EQ(0u, m_stats.sum("arm.found")) << "nothing was sent";

    entity *d = create_counted("0");
    ASSERT_TRUE(d != NULL);
    EXPECT_EQ(0u, arm_looks(d, {UCT_EVENT_RECV})) << "ARM_POLL=0 looked";
}

/* Looks that find nothing stop: after four arms that each looked for the
 * whole time (a message taken by a progress call before each, so each
 * starts a look of its own), the next such arm arms at once */
TEST_F(uct_dcx_arm_poll, stops_looking_when_looks_find_nothing)
{
    if (!arm_can_look()) {
        GTEST_SKIP() << "the mlx5 backend with libmlx5's poll arms at once";
    }
    entity *a = create_entity();
    entity *c = create_counted("10ms");
    int rx    = 0;

    ASSERT_TRUE((a != NULL) && (c != NULL));
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(c->iface, 9, am_count_cb, &rx, 0));
    uct_ep_h ac = connect(a, c);
    for (int round = 0; round < 5; ++round) {
        ucs_status_t status;
        while ((status = uct_ep_am_short(ac, 9, round, NULL, 0)) ==
               UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(a->worker);
        }
        ASSERT_EQ(UCS_OK, status);
        ASSERT_TRUE(wait_for([&] { return rx == round + 1; }));
        EXPECT_EQ((round < 4) ? 1u : 0u, arm_looks(c, {UCT_EVENT_RECV}))
            << "round " << round;
    }
    flush_ep(ac);
}

/* A worker shared by threads arms at once: UCP arms its UCT worker
 * (SERIALIZED for a multi-threaded UCP worker) under its own lock, which a
 * look would hold for every other thread */
class uct_dcx_arm_poll_serialized : public uct_dcx_arm_poll {
protected:
    virtual ucs_thread_mode_t worker_thread_mode()
    {
        return UCS_THREAD_MODE_SERIALIZED;
    }
};

TEST_F(uct_dcx_arm_poll_serialized, arms_at_once)
{
    entity *c = create_counted("1s");

    ASSERT_TRUE(c != NULL);
    EXPECT_EQ(0u, arm_looks(c, {UCT_EVENT_RECV}))
        << "a shared worker's arm looked";
}
