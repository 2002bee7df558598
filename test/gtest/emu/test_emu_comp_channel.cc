/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulation's completion channels and CQ events: the fd, arming (one
 * event per arm, at once over completions not yet polled), collecting,
 * acknowledging, and the destruction rules.
 */
#include "emu_qp_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <vector>

/* The bound of a wait for an event: a safety net, not a timing
 * assertion */
#define EMU_EVENT_WAIT_MS 20000

static void set_nonblock(struct ibv_comp_channel *ch)
{
    int flags = fcntl(ch->fd, F_GETFL);

    ASSERT_GE(flags, 0);
    ASSERT_EQ(0, fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK));
}

static bool fd_readable(int fd, int timeout_ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};

    return (poll(&pfd, 1, timeout_ms) == 1) && (pfd.revents & POLLIN);
}

class emu_channel_test : public emu_qp_test {
protected:
    emu_channel_test() { m_with_channel = true; }

    void SetUp() override
    {
        emu_qp_test::SetUp();
        if (!HasFatalFailure()) {
            set_nonblock(m_channel);
        }
    }

    /* The next event within the bound: its CQ, or nullptr */
    struct ibv_cq *wait_event()
    {
        struct ibv_cq *cq;
        void *cq_ctx;

        for (;;) {
            if (ibv_get_cq_event(m_channel, &cq, &cq_ctx) == 0) {
                EXPECT_EQ(cq->cq_context, cq_ctx);
                return cq;
            }
            EXPECT_EQ(EAGAIN, errno);
            if (!fd_readable(m_channel->fd, EMU_EVENT_WAIT_MS)) {
                return nullptr;
            }
        }
    }

    /* true if no event waits (one found is acknowledged) */
    bool no_event()
    {
        struct ibv_cq *cq;
        void *cq_ctx;

        if (ibv_get_cq_event(m_channel, &cq, &cq_ctx) == 0) {
            ibv_ack_cq_events(cq, 1);
            return false;
        }
        return errno == EAGAIN;
    }

    struct ibv_cq *rx() { return ibv_cq_ex_to_cq(m_rx_cq); }
    struct ibv_cq *tx() { return ibv_cq_ex_to_cq(m_tx_cq); }

    int send(struct ibv_qp *dci, uint64_t wr_id)
    {
        return post(dci, wr_id, IBV_WR_SEND, m_buf.data(), 8, m_mr->lkey, 0, 0);
    }
};

TEST_F(emu_channel_test, create)
{
    struct ibv_cq *cq;
    void *cq_ctx;
    int marker;

    EXPECT_EQ(m_ctx, m_channel->context);
    EXPECT_GE(m_channel->fd, 0);
    EXPECT_EQ(2, m_channel->refcnt); /* the fixture's two CQs */
    EXPECT_EQ(m_channel, rx()->channel);
    EXPECT_FALSE(fd_readable(m_channel->fd, 0));
    EXPECT_EQ(-1, ibv_get_cq_event(m_channel, &cq, &cq_ctx));
    EXPECT_EQ(EAGAIN, errno);

    /* the basic ibv_create_cq takes a channel and a cq_context too */
    cq = ibv_create_cq(m_ctx, 8, &marker, m_channel, 0);
    ASSERT_NE(nullptr, cq) << strerror(errno);
    EXPECT_EQ(m_channel, cq->channel);
    EXPECT_EQ(&marker, cq->cq_context);
    EXPECT_EQ(3, m_channel->refcnt);
    EXPECT_EQ(0, ibv_req_notify_cq(cq, 0));
    EXPECT_EQ(0, ibv_destroy_cq(cq));
    EXPECT_EQ(2, m_channel->refcnt);

    /* a channel without CQs */
    struct ibv_comp_channel *ch = ibv_create_comp_channel(m_ctx);
    ASSERT_NE(nullptr, ch);
    EXPECT_EQ(0, ch->refcnt);
    EXPECT_EQ(0, ibv_destroy_comp_channel(ch));
}

TEST_F(emu_channel_test, create_bad_flow)
{
    struct ibv_context *other;
    struct ibv_comp_channel *ch;
    struct ibv_cq *cq;

    {
        log_capture log;
        /* CQs still use it */
        EXPECT_EQ(EBUSY, ibv_destroy_comp_channel(m_channel));
        EXPECT_EQ(1u, log.count());
    }

    /* a channel of another context of the same device */
    other = ibv_open_device(m_list[0]);
    ASSERT_NE(nullptr, other);
    ch = ibv_create_comp_channel(other);
    ASSERT_NE(nullptr, ch);
    {
        log_capture log;
        cq = ibv_create_cq(m_ctx, 8, nullptr, ch, 0);
        EXPECT_EQ(nullptr, cq);
        EXPECT_EQ(EBADF, errno);
        EXPECT_EQ(1u, log.count());
    }
    EXPECT_EQ(0, ch->refcnt);
    EXPECT_EQ(0, ibv_destroy_comp_channel(ch));
    EXPECT_EQ(0, ibv_close_device(other));
}

/* One event per arm; nothing without an arm */
TEST_F(emu_channel_test, arm_once)
{
    struct ibv_qp *dci = make_dci();
    emu_wc wc;

    ASSERT_NE(nullptr, dci);
    post_recvs(8);

    /* not armed: a completion makes no event */
    ASSERT_EQ(0, send(dci, 1));
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_TRUE(no_event());

    /* armed: one event, for the armed CQ only, with its context */
    ASSERT_EQ(0, ibv_req_notify_cq(rx(), 0));
    ASSERT_EQ(0, send(dci, 2));
    EXPECT_EQ(rx(), wait_event());
    EXPECT_TRUE(no_event());
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));

    /* the arm was used up: the next completion makes none */
    ASSERT_EQ(0, send(dci, 3));
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    EXPECT_TRUE(no_event());
    EXPECT_FALSE(fd_readable(m_channel->fd, 0));

    /* both CQs armed: one event each */
    ASSERT_EQ(0, ibv_req_notify_cq(rx(), 0));
    ASSERT_EQ(0, ibv_req_notify_cq(tx(), 0));
    ASSERT_EQ(0, send(dci, 4));
    struct ibv_cq *a = wait_event();
    struct ibv_cq *b = wait_event();
    EXPECT_TRUE(((a == rx()) && (b == tx())) || ((a == tx()) && (b == rx())));
    EXPECT_TRUE(no_event());
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    ibv_ack_cq_events(rx(), 2);
    ibv_ack_cq_events(tx(), 1);
}

/* An arm over completions not polled yet fires at once: those still in
 * the device, and those a poll already took into the CQ's buffer and has
 * not handed out */
TEST_F(emu_channel_test, arm_over_pending)
{
    struct ibv_qp *dci = make_dci();
    struct ibv_wc wc[4];
    emu_wc ewc;
    int n;

    ASSERT_NE(nullptr, dci);
    post_recvs(8);
    ASSERT_EQ(0, send(dci, 1));
    ASSERT_EQ(0, send(dci, 2));
    /* both acknowledged: both receive completions are made */
    ASSERT_TRUE(poll_one(m_tx_cq, &ewc));
    ASSERT_TRUE(poll_one(m_tx_cq, &ewc));

    ASSERT_EQ(0, ibv_req_notify_cq(rx(), 0));
    EXPECT_EQ(rx(), wait_event());
    /* one handed out, the other left behind it */
    ASSERT_EQ(1, ibv_poll_cq(rx(), 1, wc));
    EXPECT_TRUE(no_event());
    ASSERT_EQ(0, ibv_req_notify_cq(rx(), 0));
    struct ibv_cq *cq;
    void *cq_ctx;
    EXPECT_EQ(0, ibv_get_cq_event(m_channel, &cq, &cq_ctx)) << "not at once";
    EXPECT_EQ(rx(), cq);
    EXPECT_EQ(this, cq_ctx);
    EXPECT_TRUE(no_event()) << "one arm, one event";
    n = ibv_poll_cq(rx(), 4, wc);
    EXPECT_EQ(1, n);
    ibv_ack_cq_events(rx(), 2);

    /* solicited_only: the emulation's responder completions carry no
     * solicited flag; the arm fires on the next completion all the same
     * (a wake-up more than hardware gives, never one less) */
    ASSERT_EQ(0, ibv_req_notify_cq(rx(), 1));
    ASSERT_EQ(0, send(dci, 3));
    EXPECT_EQ(rx(), wait_event());
    ASSERT_TRUE(poll_one(m_rx_cq, &ewc));
    ASSERT_TRUE(poll_one(m_tx_cq, &ewc));
    ibv_ack_cq_events(rx(), 1);
}

/* Without O_NONBLOCK, ibv_get_cq_event sleeps until an event comes (the
 * soft device's helper thread makes the completion meanwhile) */
TEST_F(emu_channel_test, get_event_blocks)
{
    struct ibv_qp *dci = make_dci();
    struct ibv_cq *cq;
    void *cq_ctx;
    emu_wc wc;
    int flags;

    ASSERT_NE(nullptr, dci);
    flags = fcntl(m_channel->fd, F_GETFL);
    ASSERT_EQ(0, fcntl(m_channel->fd, F_SETFL, flags & ~O_NONBLOCK));
    post_recvs(2);
    ASSERT_EQ(0, ibv_req_notify_cq(tx(), 0));
    ASSERT_EQ(0, send(dci, 1));
    ASSERT_EQ(0, ibv_get_cq_event(m_channel, &cq, &cq_ctx));
    EXPECT_EQ(tx(), cq);
    ibv_ack_cq_events(cq, 1);
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
}

/* A CQ with events not collected is destroyed with them; the channel
 * forgets them */
TEST_F(emu_channel_test, destroy_drops_uncollected)
{
    struct ibv_qp *dci = make_dci();
    emu_wc wc;

    ASSERT_NE(nullptr, dci);
    post_recvs(2);
    ASSERT_EQ(0, ibv_req_notify_cq(tx(), 0));
    ASSERT_EQ(0, send(dci, 1));
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    ASSERT_TRUE(fd_readable(m_channel->fd, EMU_EVENT_WAIT_MS));
    ASSERT_EQ(0, ibv_destroy_qp(dci));
    m_qps.erase(m_qps.end() - 1);
    EXPECT_EQ(0, ibv_destroy_cq(tx())); /* nothing handed out: no wait */
    m_tx_cq = nullptr;
    EXPECT_FALSE(fd_readable(m_channel->fd, 0));
    EXPECT_TRUE(no_event());
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
}

struct destroy_arg {
    struct ibv_cq *cq;
    int ret;
    volatile bool done;
};

static void *destroy_thread(void *p)
{
    destroy_arg *arg = (destroy_arg *)p;

    arg->ret = ibv_destroy_cq(arg->cq);
    __atomic_store_n(&arg->done, true, __ATOMIC_RELEASE);
    return nullptr;
}

/* ibv_destroy_cq waits until every event handed out is acknowledged */
TEST_F(emu_channel_test, destroy_waits_for_acks_bad_flow)
{
    struct ibv_qp *dci = make_dci();
    destroy_arg arg;
    pthread_t thread;
    emu_wc wc;

    ASSERT_NE(nullptr, dci);
    post_recvs(2);
    ASSERT_EQ(0, ibv_req_notify_cq(tx(), 0));
    ASSERT_EQ(0, send(dci, 1));
    ASSERT_EQ(tx(), wait_event());
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    ASSERT_EQ(0, ibv_destroy_qp(dci));
    m_qps.erase(m_qps.end() - 1);

    arg.cq   = tx();
    arg.ret  = -1;
    arg.done = false;
    {
        log_capture log;
        ASSERT_EQ(0, pthread_create(&thread, nullptr, destroy_thread, &arg));
        usleep(100000); /* lets the destroy reach its wait, if it waits */
        EXPECT_FALSE(__atomic_load_n(&arg.done, __ATOMIC_ACQUIRE))
            << "destroyed with an event not acknowledged";
        ibv_ack_cq_events(tx(), 1);
        pthread_join(thread, nullptr);
        EXPECT_EQ(1u, log.count()); /* the wait is said */
    }
    EXPECT_EQ(0, arg.ret);
    m_tx_cq = nullptr;
    EXPECT_EQ(1, m_channel->refcnt);
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
}

/* More acknowledgements than events: said at the ack and at the destroy
 * (where rdma-core would wait forever), which goes on */
TEST_F(emu_channel_test, ack_too_many_bad_flow)
{
    struct ibv_cq *cq = ibv_create_cq(m_ctx, 8, nullptr, m_channel, 0);

    ASSERT_NE(nullptr, cq);
    {
        log_capture log;
        ibv_ack_cq_events(cq, 1);
        EXPECT_EQ(1u, log.count());
    }
    {
        log_capture log;
        EXPECT_EQ(0, ibv_destroy_cq(cq));
        EXPECT_EQ(1u, log.count());
    }
}

/* Arming a CQ created without a channel is accepted (as by libmlx5) and
 * can never make an event */
TEST_F(emu_qp_test, arm_without_channel)
{
    EXPECT_EQ(0, ibv_req_notify_cq(ibv_cq_ex_to_cq(m_tx_cq), 0));
}

/* Many channels of one device, each watched through an epoll set of the
 * application's (as dcx's mlx5 backend and UCX wrap theirs), on contexts
 * of their own (as UCX's memory domains open them): every one is created
 * and added; the fixture's channel, in a set too, still wakes its set for
 * an event of the device (a completion on an armed CQ) and for one of the
 * emulation's own (an arm over a completion not polled).  Each emulated
 * channel once was a set over the soft channel's set, itself over the
 * device's wake socket, and epoll_ctl refused the 100th with EINVAL. */
TEST_F(emu_channel_test, many_channels_in_sets_of_their_own)
{
    const int n = 256;
    std::vector<struct ibv_context *> ctxs;
    std::vector<struct ibv_comp_channel *> chs;
    std::vector<int> sets;
    struct epoll_event ev;
    bool ok = true;

    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    for (int i = 0; (i < n) && ok; ++i) {
        struct ibv_context *ctx = ibv_open_device(m_list[0]);
        ASSERT_NE(nullptr, ctx) << i << ": " << strerror(errno);
        ctxs.push_back(ctx);
        struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
        ASSERT_NE(nullptr, ch) << i << ": " << strerror(errno);
        chs.push_back(ch);
        int set = epoll_create1(EPOLL_CLOEXEC);
        ASSERT_GE(set, 0) << strerror(errno);
        sets.push_back(set);
        ok = (epoll_ctl(set, EPOLL_CTL_ADD, ch->fd, &ev) == 0);
        EXPECT_TRUE(ok) << "channel " << i << ": " << strerror(errno);
    }

    int set = epoll_create1(EPOLL_CLOEXEC);
    ASSERT_GE(set, 0) << strerror(errno);
    ASSERT_EQ(0, epoll_ctl(set, EPOLL_CTL_ADD, m_channel->fd, &ev))
        << strerror(errno);
    struct ibv_qp *dci = make_dci();
    ASSERT_NE(nullptr, dci);
    post_recvs(8);
    emu_wc wc;
    /* the device's event */
    ASSERT_EQ(0, ibv_req_notify_cq(rx(), 0));
    ASSERT_EQ(0, send(dci, 1));
    EXPECT_TRUE(fd_readable(set, EMU_EVENT_WAIT_MS));
    EXPECT_EQ(rx(), wait_event());
    ASSERT_TRUE(poll_one(m_tx_cq, &wc));
    /* the emulation's own: the receive completion is made, not polled */
    EXPECT_FALSE(fd_readable(set, 0));
    ASSERT_EQ(0, ibv_req_notify_cq(rx(), 0));
    EXPECT_TRUE(fd_readable(set, 0)) << "an arm over a completion";
    EXPECT_EQ(rx(), wait_event());
    ASSERT_TRUE(poll_one(m_rx_cq, &wc));
    ibv_ack_cq_events(rx(), 2);
    close(set);

    for (size_t i = 0; i < chs.size(); ++i) {
        close(sets[i]);
        EXPECT_EQ(0, ibv_destroy_comp_channel(chs[i]));
        EXPECT_EQ(0, ibv_close_device(ctxs[i]));
    }
}
