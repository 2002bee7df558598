/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: flush after floods of small puts, the way UCP drives it
 * (OpenSHMEM's put_nbi ... quiet): refused puts wait in the pending queue,
 * a refused flush waits there too, and every flush completes.  Also the
 * bookkeeping corners behind it: a flush completion on a DCI shared with
 * other endpoints, and a DCI taken for a pending request that posts
 * nothing.
 */
#include "uct_fixture.h"

#include <cstring>

using namespace dcx_test;

namespace {

const uint8_t AM_ID = 7;

size_t pack_byte(void *dest, void *arg)
{
    memset(dest, 'p', 16);
    return 16;
}

/* A put that was refused, queued the way UCP queues it */
struct put_req {
    uct_pending_req_t uct;
    uct_ep_h ep;
    uint64_t value;
    uint64_t raddr;
    uct_rkey_t rkey;
    int *done;

    static ucs_status_t cb(uct_pending_req_t *self)
    {
        put_req *r          = ucs_container_of(self, put_req, uct);
        ucs_status_t status = uct_ep_put_short(r->ep, &r->value,
                                               sizeof(r->value), r->raddr,
                                               r->rkey);
        if (status == UCS_OK) {
            (*r->done)++;
        }
        return status;
    }
};

} /* namespace */


class uct_dcx_flush : public uct_dcx_policy_test {
protected:
    virtual void TearDown()
    {
        uct_dcx_test::TearDown();
        EXPECT_EQ(0, log_counter::errors());
    }

    /* Starts a flush of ep the way UCP does: refused -> pending queue;
     * refused by pending_add (the ep can send now) -> try again */
    void start_flush(flush_req &req, uct_ep_h ep)
    {
        req.ep = ep;
        for (;;) {
            req.status = uct_ep_flush(ep, 0, &req.comp.uct);
            if (req.status != UCS_ERR_NO_RESOURCE) {
                ASSERT_TRUE((req.status == UCS_OK) ||
                            (req.status == UCS_INPROGRESS))
                    << ucs_status_string(req.status);
                return;
            }
            req.status = UCS_ERR_NO_RESOURCE;
            if (uct_ep_pending_add(ep, &req.uct, 0) == UCS_OK) {
                return;
            }
        }
    }

    /* From one interface, n 8-byte puts to each of the targets (the peer
     * and itself), refused ones through the pending queue, then a flush of
     * every ep; all flushes complete and every value landed. */
    void put_flood_flush(const std::map<std::string, std::string> &cfg, int n)
    {
        entity *a = create_entity(cfg);
        entity *b = create_entity(cfg);
        ASSERT_TRUE(a && b);

        mem rb = alloc_mem(n * sizeof(uint64_t));
        mem ra = alloc_mem(n * sizeof(uint64_t));
        memset(rb.ptr, 0, rb.length);
        memset(ra.ptr, 0, ra.length);

        uct_ep_h eps[] = {connect(a, b), connect(a, a)};
        mem *targets[] = {&rb, &ra};
        const int neps = 2;
        std::vector<put_req> reqs(neps * n);
        int done = 0, queued = 0;
        bool waiting[neps] = {false, false};

        for (int i = 0; i < n; ++i) {
            for (int e = 0; e < neps; ++e) {
                put_req &r = reqs[e * n + i];
                r.uct.func = put_req::cb;
                r.ep       = eps[e];
                r.value    = 0x1000000ull * (e + 1) + i + 1;
                r.raddr    = (uintptr_t)targets[e]->ptr + i * sizeof(uint64_t);
                r.rkey     = targets[e]->rkey;
                r.done     = &done;
                /* once one put of an ep waits, the later ones wait too */
                if (!waiting[e] && (put_req::cb(&r.uct) == UCS_OK)) {
                    continue;
                }
                ucs_status_t status;
                while ((status = uct_ep_pending_add(eps[e], &r.uct, 0)) ==
                       UCS_ERR_BUSY) {
                    if (put_req::cb(&r.uct) == UCS_OK) {
                        break;
                    }
                }
                if (status == UCS_OK) {
                    waiting[e] = true;
                    queued++;
                }
            }
        }

        /* quiet: flush every ep while puts may still be pending */
        flush_req flushes[neps];
        for (int e = 0; e < neps; ++e) {
            start_flush(flushes[e], eps[e]);
        }
        for (int e = 0; e < neps; ++e) {
            ASSERT_TRUE(wait_for([&] { return flushes[e].done(); }))
                << "flush of ep " << e << " never completed (status "
                << ucs_status_string(flushes[e].status) << ")";
        }

        /* the flushes covered the puts that were pending when they began:
         * all were posted before, and all have landed */
        EXPECT_EQ(neps * n, done) << queued << " puts were queued";
        for (int i = 0; i < n; ++i) {
            ASSERT_EQ(0x1000000ull + i + 1, ((uint64_t *)rb.ptr)[i]) << i;
            ASSERT_EQ(0x2000000ull + i + 1, ((uint64_t *)ra.ptr)[i]) << i;
        }
    }
};

/* The pattern of OpenSHMEM's test_quiet: 256 small put_nbi to every PE,
 * then shmem_quiet (a flush of every ep) */
TEST_P(uct_dcx_flush, small_puts_then_flush_defaults)
{
    put_flood_flush(std::map<std::string, std::string>(), 256);
}

/* Same, with one small DCI: every put beyond a few waits, and with the dcs
 * policies both eps compete for the one DCI */
TEST_P(uct_dcx_flush, small_puts_then_flush_one_small_dci)
{
    std::map<std::string, std::string> cfg;

    cfg["NUM_DCI"]      = "1";
    cfg["TX_QUEUE_LEN"] = "16";
    cfg["QUOTA"]        = "4";
    put_flood_flush(cfg, 1000);
}

/* Same, with the packet of every put late on the wire (a soft fault rule;
 * the puts then all go by packets): a flush that completed before its puts
 * completed at the target, or before the pending ones were posted, finds
 * values missing every time, not only when the machine is slow */
TEST_P(uct_dcx_flush, small_puts_late_on_the_wire_then_flush)
{
    dcx_soft_fault_t fault;

    memset(&fault, 0, sizeof(fault));
    fault.type     = DCX_SOFT_FAULT_DELAY;
    fault.opcode   = DCX_WR_RDMA_WRITE;
    fault.delay_us = 2000;
    ASSERT_EQ(0, dcx_soft_fault_inject(device(), &fault));
    put_flood_flush(std::map<std::string, std::string>(), 256);
    dcx_soft_fault_clear(device());
}

/* A flush requested from the pending queue when the ep has nothing in
 * flight: the DCI that the dispatcher lent it for the request goes back to
 * the pool, so another endpoint can send. */
TEST_P(uct_dcx_flush, pending_flush_gives_dci_back)
{
    std::map<std::string, std::string> cfg;
    uint64_t x = 11;

    cfg["NUM_DCI"] = "1";
    entity *a      = create_entity(cfg);
    entity *b      = create_entity(cfg);
    ASSERT_TRUE(a && b);
    mem rb      = alloc_mem(4096);
    uct_ep_h e1 = connect(a, b);
    uct_ep_h e2 = connect(a, b);

    ASSERT_EQ(UCS_OK, uct_ep_put_short(e1, &x, 8, (uintptr_t)rb.ptr, rb.rkey));
    flush_ep(e1);

    flush_req req;
    req.ep              = e1;
    ucs_status_t status = uct_ep_pending_add(e1, &req.uct, 0);
    if (status == UCS_ERR_BUSY) {
        GTEST_SKIP() << "the ep keeps its DCI under this policy";
    }
    ASSERT_EQ(UCS_OK, status);
    ASSERT_TRUE(wait_for([&] { return req.done(); }));

    x = 12;
    ASSERT_TRUE(wait_for([&] {
        return uct_ep_put_short(e2, &x, 8, (uintptr_t)rb.ptr + 8, rb.rkey) ==
               UCS_OK;
    })) << "the other ep never got the DCI";
    flush_ep(e2);
    EXPECT_EQ(12u, ((uint64_t *)rb.ptr)[1]);
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_flush, UCT_DCX_POLICIES);


/* Two endpoints on one shared DCI (rand): ep 1's last WR is signalled, then
 * ep 2 queues an operation on a later, unsignalled WR.  The flush of ep 1
 * completes with ep 1's WR; it does not wait behind ep 2's operation. */
class uct_dcx_flush_shared : public uct_dcx_test {};

TEST_F(uct_dcx_flush_shared, flush_not_held_by_later_op)
{
    std::map<std::string, std::string> cfg;
    int received = 0;
    uint64_t x   = 21;

    cfg["DCI_POLICY"]    = "rand";
    cfg["NUM_DCI"]       = "1";
    cfg["SIGNAL_PERIOD"] = "2";
    entity *a            = create_entity(cfg);
    entity *b            = create_entity(cfg);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(b->iface, AM_ID, am_count_cb,
                                               &received, 0));
    mem rb      = alloc_mem(4096);
    uct_ep_h e1 = connect(a, b);
    uct_ep_h e2 = connect(a, b);

    /* WR 1 unsignalled, WR 2 signalled (period 2) */
    ASSERT_EQ(UCS_OK, uct_ep_put_short(e1, &x, 8, (uintptr_t)rb.ptr, rb.rkey));
    ASSERT_EQ(UCS_OK,
              uct_ep_put_short(e1, &x, 8, (uintptr_t)rb.ptr + 8, rb.rkey));
    /* WR 3, unsignalled, with an operation (its buffer goes back later) */
    ASSERT_EQ(16, uct_ep_am_bcopy(e2, AM_ID, pack_byte, NULL, 0));

    test_comp comp;
    ucs_status_t status = uct_ep_flush(e1, 0, &comp.uct);
    if (status == UCS_INPROGRESS) {
        EXPECT_TRUE(wait_for([&] { return comp.done > 0; }))
            << "the flush waited for another endpoint's work request";
        EXPECT_EQ(UCS_OK, comp.status);
    } else {
        EXPECT_EQ(UCS_OK, status);
    }
    flush_ep(e2);
    EXPECT_TRUE(wait_for([&] { return received == 1; }));
    EXPECT_EQ(0, log_counter::errors());
}
