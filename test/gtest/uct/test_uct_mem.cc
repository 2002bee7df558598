/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Heap an interface open and an endpoint take: malloc'd
 * bytes counted by mallinfo2, which is deterministic for a given sequence of
 * allocations.  Targets: an interface open at most 2 MB of dcx's own (plus,
 * on a ConnectX, the queue memory libmlx5 allocates), an endpoint at most
 * 64 B at 10 000 endpoints; and endpoints that queued pending requests
 * or asked for credits give that state back when destroyed.
 */
#include "uct_fixture.h"

#include <malloc.h>

using namespace dcx_test;

namespace {

size_t heap_now()
{
    struct mallinfo2 mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
}

const size_t iface_heap_max  = 2 * 1024 * 1024;
/* On a ConnectX, libmlx5 allocates the queues' memory from the heap: the
 * interface's CQs (the receive CQ's CQEs alone are about 2 MB: 128 bytes
 * each for receives in place), its SRQ and its first DCI's send queue; the
 * emulated ConnectX allocates it as libmlx5 does, once the backend takes
 * the queues in memory */
const size_t iface_queue_max = 3 * 1024 * 1024;
const size_t ep_heap_max     = 64;
const unsigned num_eps       = 10000;
/* what malloc's own state (tcache, bins left by earlier tests) adds once to
 * a count of 10 000 endpoints: 32 B when this suite runs alone, 0 in the
 * whole gtest_uct; not a per-endpoint cost (0.1 B per endpoint at most) */
const size_t heap_once       = 1024;

} /* namespace */


class uct_dcx_mem : public uct_dcx_test {
protected:
    /* Creates n eps from e to itself into eps (reserved by the caller) */
    void create_eps(entity *e, unsigned n, std::vector<uct_ep_h> &eps)
    {
        uct_ep_params_t params;
        uct_ep_h ep;

        for (unsigned i = 0; i < n; ++i) {
            memset(&params, 0, sizeof(params));
            params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                                UCT_EP_PARAM_FIELD_DEV_ADDR |
                                UCT_EP_PARAM_FIELD_IFACE_ADDR;
            params.iface      = e->iface;
            params.dev_addr   = (const uct_device_addr_t *)e->dev_addr.data();
            params.iface_addr = (const uct_iface_addr_t *)e->iface_addr.data();
            ep                = NULL;
            ASSERT_EQ(UCS_OK, uct_ep_create(&params, &ep));
            eps.push_back(ep);
        }
    }
};

/* The whole entity (worker, interface, its addresses) is counted: the
 * interface alone takes less */
TEST_F(uct_dcx_mem, iface_open_heap)
{
    size_t before = heap_now();
    entity *e     = create_entity();
    size_t used   = heap_now() - before;

    ASSERT_TRUE(e != NULL);
    EXPECT_LE(used, iface_heap_max + (test_on_soft() ? 0 : iface_queue_max))
        << "interface open took " << used << " bytes of heap";
}

TEST_F(uct_dcx_mem, heap_per_ep)
{
    entity *e = create_entity();
    std::vector<uct_ep_h> eps;
    size_t before, used;
    double per_ep;

    /* The first ep to a peer port also makes what every later ep to that
     * port shares (its address handle, the peer table): not a per-ep cost,
     * and what malloc accounts for it depends on what earlier tests left
     * in the heap (tcache, bins), so it is made before counting */
    eps.reserve(num_eps + 1);
    create_eps(e, 1, eps);
    before = heap_now();
    create_eps(e, num_eps, eps);
    used   = heap_now() - before;
    per_ep = (double)used / num_eps;
    EXPECT_LE(used, num_eps * ep_heap_max + heap_once)
        << per_ep << " bytes per ep";

    for (size_t i = 0; i < eps.size(); ++i) {
        uct_ep_destroy(eps[i]);
    }
}

/* An ep that ran out of credits (and so asked for more) and queued a pending
 * request has its side state; purge and destroy work on it, and ASan finds
 * nothing of it left behind */
TEST_F(uct_dcx_mem, pending_state_released)
{
    entity *e = create_entity();
    std::vector<uct_ep_h> eps;
    uct_pending_req_t req;
    ucs_status_t status = UCS_OK;
    unsigned sent, purged = 0;

    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(
                  e->iface, 1,
                  [](void *, void *, size_t, unsigned) { return UCS_OK; }, NULL,
                  0));
    eps.reserve(1);
    create_eps(e, 1, eps);
    for (sent = 0; sent < 100000; ++sent) {
        status = uct_ep_am_short(eps[0], 1, 0, NULL, 0);
        if (status != UCS_OK) {
            break;
        }
    }
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, status) << "after " << sent << " sends";

    memset(&req, 0, sizeof(req));
    req.func = [](uct_pending_req_t *) { return UCS_OK; };
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(eps[0], &req, 0));
    uct_ep_pending_purge(
        eps[0], [](uct_pending_req_t *, void *arg) { ++*(unsigned *)arg; },
        &purged);
    EXPECT_EQ(1u, purged);
    uct_ep_destroy(eps[0]);
    progress();
}
