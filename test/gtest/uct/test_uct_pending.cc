/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pending queue as UCX's test_uct_pending drives it (test/gtest/uct in
 * UCX's source): the resources filled with am_short, requests queued with
 * uct_ep_pending_add, progressed until all are sent.  A request whose
 * callback returns UCS_OK is the user's from that moment: UCX's users free
 * it in the callback, or queue it again; the transport must not read it
 * after the callback.
 */
#include "uct_contract_fixture.h"

namespace {

const uint8_t SEQ_AM_ID = AM_ID + 3;
const uint64_t SEQ_BASE = 0xdeadbeefull;

/* AMs of SEQ_AM_ID carry SEQ_BASE + their rank in the stream */
struct seq_counter {
    unsigned count;
    unsigned out_of_order;

    static ucs_status_t cb(void *arg, void *data, size_t length, unsigned flags)
    {
        seq_counter *self = static_cast<seq_counter *>(arg);
        uint64_t value;

        memcpy(&value, data, sizeof(value));
        if (value != SEQ_BASE + self->count) {
            self->out_of_order++;
        }
        self->count++;
        return UCS_OK;
    }
};

/* A request as UCX's test allocates it: answers UCS_INPROGRESS `countdown`
 * times, then sends its value; deleted by its own callback once sent.  With
 * `requeue`, its first run queues it again on its ep (as UCX's
 * pending_send_op_add_pending does when the send is refused) and answers
 * UCS_OK. */
struct send_req {
    uct_pending_req_t uct;
    uct_ep_h ep;
    uint8_t am_id;
    uint64_t value;
    int countdown;
    bool requeue;
    int *live; /* requests not yet sent */

    static ucs_status_t cb(uct_pending_req_t *self)
    {
        send_req *r = ucs_container_of(self, send_req, uct);
        ucs_status_t status;

        if (r->countdown > 0) {
            --r->countdown;
            return UCS_INPROGRESS;
        }
        if (r->requeue) {
            r->requeue = false;
            status     = uct_ep_pending_add(r->ep, &r->uct, 0);
            if (status == UCS_OK) {
                return UCS_OK; /* queued again: no longer this run's */
            }
            EXPECT_EQ(UCS_ERR_BUSY, status);
        }
        status = uct_ep_am_short(r->ep, r->am_id, r->value, NULL, 0);
        if (status == UCS_OK) {
            --*r->live;
            delete r; /* the user's memory from now on */
        }
        return status;
    }
};

} /* namespace */

class uct_dcx_pending : public uct_dcx_contract {
protected:
    virtual void SetUp()
    {
        uct_dcx_contract::SetUp();
        m_live = 0;
        memset(&m_rx_seq, 0, sizeof(m_rx_seq));
        ASSERT_EQ(UCS_OK,
                  uct_iface_set_am_handler(m_b->iface, SEQ_AM_ID,
                                           seq_counter::cb, &m_rx_seq, 0));
    }

    /* One more value of the stream of AM id am_id on ep: sent at once or,
     * refused for lack of resources, queued in a new request (as UCX's
     * send_am_or_add_pending).  Returns whether it was queued. */
    bool send_or_queue(uct_ep_h ep, uint8_t am_id, uint64_t value,
                       int countdown, bool requeue)
    {
        ucs_status_t status;

        for (;;) {
            status = uct_ep_am_short(ep, am_id, value, NULL, 0);
            if (status == UCS_OK) {
                return false;
            }
            EXPECT_EQ(UCS_ERR_NO_RESOURCE, status);
            send_req *r  = new send_req;
            r->uct.func  = send_req::cb;
            r->ep        = ep;
            r->am_id     = am_id;
            r->value     = value;
            r->countdown = countdown;
            r->requeue   = requeue;
            r->live      = &m_live;
            status       = uct_ep_pending_add(ep, &r->uct, 0);
            if (status == UCS_OK) {
                ++m_live;
                return true;
            }
            /* resources came back: send again */
            EXPECT_EQ(UCS_ERR_BUSY, status);
            delete r;
        }
    }

    int m_live;
    seq_counter m_rx_seq;
};

/* UCX's pending_op: sends until refused, then every later value of the
 * stream in a request of its own (the endpoint keeps refusing while any is
 * queued); each request answers UCS_INPROGRESS a few times, then sends and
 * frees itself in its callback.  Every value arrives, in order. */
TEST_P(uct_dcx_pending, requests_freed_by_their_callback)
{
    const int max_queued = 300;
    uint64_t value       = SEQ_BASE;
    int queued           = 0;

    while (queued < max_queued) {
        queued += send_or_queue(m_ab, SEQ_AM_ID, value++, 5, false);
    }
    EXPECT_EQ(max_queued, m_live);

    ASSERT_TRUE(wait_for([&] { return m_live == 0; }))
        << m_live << " requests never sent";
    ASSERT_TRUE(wait_for([&] { return m_rx_seq.count == value - SEQ_BASE; }));
    EXPECT_EQ(0u, m_rx_seq.out_of_order);
    flush_ep(m_ab);
}

/* UCX's send_ooo_with_pending_another_ep: two endpoints of one interface,
 * each sending until refused, then one request each whose callback queues
 * it again on its endpoint and answers UCS_OK (so the request, alone in its
 * queue, is both run and queued).  Every request is sent and frees itself;
 * each endpoint's messages all arrive, in order. */
TEST_P(uct_dcx_pending, request_queued_again_by_its_callback)
{
    uct_ep_h eps[2]      = {m_ab, connect(m_a, m_b)};
    const uint8_t ids[2] = {SEQ_AM_ID, SEQ_AM_ID + 1};
    seq_counter rx2      = {0, 0};
    uint64_t values[2]   = {SEQ_BASE, SEQ_BASE};

    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, ids[1],
                                               seq_counter::cb, &rx2, 0));
    for (int k = 0; k < 2; ++k) {
        while (!send_or_queue(eps[k], ids[k], values[k]++, 0, true)) {
        }
    }
    EXPECT_EQ(2, m_live);

    ASSERT_TRUE(wait_for([&] { return m_live == 0; }))
        << m_live << " requests never sent";
    ASSERT_TRUE(wait_for([&] {
        return (m_rx_seq.count == values[0] - SEQ_BASE) &&
               (rx2.count == values[1] - SEQ_BASE);
    }));
    EXPECT_EQ(0u, m_rx_seq.out_of_order);
    EXPECT_EQ(0u, rx2.out_of_order);
    flush_ep(eps[0]);
    flush_ep(eps[1]);
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_pending, UCT_DCX_POLICIES);
