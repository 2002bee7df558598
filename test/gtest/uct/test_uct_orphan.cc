/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An endpoint destroyed with zero-copy operations in flight, whose memory
 * the user then deregisters and unmaps (as UCX's
 * test_uct_ep.destroy_entity_after_send does): on every policy the
 * operations complete at the destroy, the device touches the memory no
 * more once it is unmapped or deregistered (a WR of that endpoint still on
 * a shared DCI fails alone, unseen, or has its response dropped: nothing
 * crashes, nothing is written there), and an endpoint of the same
 * interface to the same peer goes on, losing nothing and receiving
 * nothing twice.
 */
#include "uct_fixture.h"

#include "log_counter.h"

#include <sys/mman.h>

using namespace dcx_test;

class uct_dcx_orphan : public uct_dcx_policy_test {
protected:
    /* without the registration cache a deregistration reaches the device
     * at once; with it, the device learns of the unmap first (the memory
     * domain's hook) and of the deregistration when the cache lets the
     * region go */
    virtual const char *rcache() { return "n"; }

    virtual void init_env(scoped_env &env)
    {
        uct_dcx_policy_test::init_env(env);
        env.set("UCX_DCX_RCACHE", rcache());
        /* one DCI: with rand and streams, the live endpoint's WRs share it
         * with the destroyed one's */
        env.set("UCX_DCX_NUM_DCI", "1");
    }

    /* The user's memory: mapped, filled and registered */
    void *map_user(size_t len, uct_mem_h *memh_p)
    {
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        EXPECT_NE(MAP_FAILED, p);
        memset(p, 'u', len);
        EXPECT_EQ(UCS_OK,
                  uct_md_mem_reg(m_md, p, len, UCT_MD_MEM_ACCESS_ALL, memh_p));
        return p;
    }

    void destroy_then_unmap();
};

/* The same through the registration cache */
class uct_dcx_orphan_rcache : public uct_dcx_orphan {
protected:
    virtual const char *rcache() { return "y"; }
};

void uct_dcx_orphan::destroy_then_unmap()
{
    const size_t len    = 4u << 20;
    const uint8_t am_id = 7;
    entity *a = create_entity(), *b = create_entity();
    ASSERT_TRUE((a != NULL) && (b != NULL));
    int rx = 0, live_rx = 0, live_sent = 0;
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(b->iface, am_id, am_count_cb, &rx, 0));
    /* an endpoint that lives on, sending to the same interface between
     * the others' operations: the sends of it that executed behind a get
     * of the destroyed endpoint are not posted again (the
     * registration of the get is held until its response came:
     * uct_dcx_dci_keep_mr)
     */
    entity *c = b;
    ASSERT_TRUE(c != NULL);
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(c->iface, am_id + 1, am_count_cb,
                                               &live_rx, 0));
    uct_ep_h live = connect(a, c);
    mem rem       = alloc_mem(len);
    std::vector<void *> holes;
    const size_t seg     = a->attr.cap.am.max_zcopy;
    const size_t rma_seg = 256u << 10;
    log_counter::reset();

    for (int round = 0; round < 4; ++round) {
        uct_mem_h memh;
        char *buf    = (char *)map_user(len, &memh);
        uct_ep_h ep  = connect(a, b);
        int inflight = 0;
        test_comp comp(1 << 30);

        /* sends, puts and gets until the DCI is full; nobody progresses */
        for (int i = 0; i < 200; ++i) {
            size_t off        = ((size_t)i * rma_seg) % len;
            uct_iov_t am_iov  = {buf + (i % 16) * seg, seg, memh, 0, 1};
            uct_iov_t put_iov = {buf + off, rma_seg, memh, 0, 1};
            ucs_status_t status;

            switch (i % 3) {
            case 0:
                status = uct_ep_am_zcopy(ep, am_id, NULL, 0, &am_iov, 1, 0,
                                         &comp.uct);
                break;
            case 1:
                status = uct_ep_put_zcopy(ep, &put_iov, 1,
                                          (uintptr_t)rem.ptr + off, rem.rkey,
                                          &comp.uct);
                break;
            default:
                status = uct_ep_get_zcopy(ep, &put_iov, 1,
                                          (uintptr_t)rem.ptr + off, rem.rkey,
                                          &comp.uct);
                break;
            }
            if (status == UCS_ERR_NO_RESOURCE) {
                break;
            }
            ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS))
                << ucs_status_string(status);
            inflight += (status == UCS_INPROGRESS);
            live_sent += (uct_ep_am_short(live, am_id + 1, i, NULL, 0) ==
                          UCS_OK);
        }
        ASSERT_GT(inflight, 0);

        destroy_ep(ep);
        /* each operation completed (or was completed) by the destroy */
        EXPECT_EQ((1 << 30) - inflight, comp.uct.count);
        ASSERT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
        ASSERT_EQ(0, munmap(buf, len));
        /* the range stays unmapped, not reused, while the device may still
         * reach it: the emulated ConnectX cannot pin pages, and a WR it
         * still holds would read whatever the process mapped there next
         * (docs/mlx5-emulation.md) */
        void *hole = mmap(buf, len, PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
                          0);
        if (hole != MAP_FAILED) {
            holes.push_back(hole);
        }
        /* the device goes on with what is still queued */
        wait_for([] { return false; }, 0.3);
    }

    /* a new endpoint of the same interface loses nothing */
    uct_ep_h ep = connect(a, b);
    int before  = rx;
    for (int i = 0; i < 50; ++i) {
        ucs_status_t status;
        while ((status = uct_ep_am_short(ep, am_id, i, NULL, 0)) ==
               UCS_ERR_NO_RESOURCE) {
            progress();
        }
        ASSERT_EQ(UCS_OK, status);
    }
    uint64_t value = 0x0123456789abcdefull;
    ucs_status_t status;
    while ((status = uct_ep_put_short(ep, &value, sizeof(value),
                                      (uintptr_t)rem.ptr, rem.rkey)) ==
           UCS_ERR_NO_RESOURCE) {
        progress();
    }
    ASSERT_EQ(UCS_OK, status);
    flush_ep(ep);
    EXPECT_TRUE(wait_for([&] { return rx - before >= 50; }));
    EXPECT_EQ(value, *(uint64_t *)rem.ptr);
    flush_ep(live);
    EXPECT_TRUE(wait_for([&] { return live_rx == live_sent; }))
        << live_rx << " of " << live_sent;
    EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
    for (void *hole : holes) {
        munmap(hole, len);
    }
}

TEST_P(uct_dcx_orphan, destroy_then_unmap_zcopy_memory)
{
    destroy_then_unmap();
}

TEST_P(uct_dcx_orphan_rcache, destroy_then_unmap_zcopy_memory)
{
    destroy_then_unmap();
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_orphan, UCT_DCX_POLICIES);
INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_orphan_rcache, UCT_DCX_POLICIES);
