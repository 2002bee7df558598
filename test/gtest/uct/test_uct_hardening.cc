/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport hardening through the UCT API: reachability
 * checks everything endpoint creation checks, and registered memory that
 * its owner unmaps or remaps (UCX's memory hooks tell the MD) refuses
 * remote access without crashing the target or writing the new mapping.
 */
#include "uct_fixture.h"

extern "C" {
#include "soft/soft.h"
}

#include <cstring>
#include <sys/mman.h>

using namespace dcx_test;

class uct_dcx_hardening : public uct_dcx_test {
protected:
    virtual void init_env(scoped_env &env)
    {
        /* fail fast on errors */
        env.set("UCX_DCX_TIMEOUT", "8ms");
        env.set("UCX_DCX_RETRY_COUNT", "2");
    }

    /* the device address as is_reachable gets it, for a raw port address */
    static std::vector<char> dev_addr(const void *port, size_t len)
    {
        std::vector<char> a(1 + len);
        a[0] = (char)len;
        memcpy(&a[1], port, len);
        return a;
    }

    bool reachable(entity *e, const std::vector<char> &daddr,
                   const std::vector<char> &iaddr)
    {
        return uct_iface_is_reachable(e->iface,
                                      (const uct_device_addr_t *)&daddr[0],
                                      (const uct_iface_addr_t *)&iaddr[0]);
    }

    /* memory mapped here, registered through the MD, rkey unpacked */
    struct region {
        uint8_t *ptr;
        size_t len;
        uct_mem_h memh;
        uct_rkey_bundle_t rkb;
    };

    region map_and_register(size_t len)
    {
        region r;
        std::vector<char> packed(m_md_attr.rkey_packed_size);
        r.len = len;
        r.ptr = (uint8_t *)mmap(NULL, len, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        EXPECT_NE(MAP_FAILED, (void *)r.ptr);
        memset(r.ptr, 0, len);
        EXPECT_EQ(UCS_OK, uct_md_mem_reg(m_md, r.ptr, len,
                                         UCT_MD_MEM_ACCESS_ALL, &r.memh));
        EXPECT_EQ(UCS_OK, uct_md_mkey_pack(m_md, r.memh, &packed[0]));
        EXPECT_EQ(UCS_OK, uct_rkey_unpack(m_component, &packed[0], &r.rkb));
        return r;
    }

    void release(region &r)
    {
        uct_rkey_release(m_component, &r.rkb);
        uct_md_mem_dereg(m_md, r.memh);
    }

    template <typename F> ucs_status_t retry(F op)
    {
        ucs_status_t status;

        while ((status = op()) == UCS_ERR_NO_RESOURCE) {
            progress();
        }
        return status;
    }

    /* the error an endpoint reported, after waiting for one */
    ucs_status_t ep_error(uct_ep_h ep)
    {
        ucs_status_t status = UCS_OK;
        wait_for([&] {
            for (size_t i = 0; i < m_errors.size(); ++i) {
                if (m_errors[i].ep == ep) {
                    status = m_errors[i].status;
                    return true;
                }
            }
            return false;
        });
        return status;
    }

    /* one put_zcopy and one get_zcopy of len bytes at raddr, each on a
     * fresh endpoint; returns the errors they reported */
    void put_get(region &r, size_t len, ucs_status_t *put_st,
                 ucs_status_t *get_st)
    {
        entity *a = m_entities[0], *b = m_entities[1];
        mem local = alloc_mem(len);
        memset(local.ptr, 0x77, len);
        uct_iov_t iov;
        iov.buffer = local.ptr;
        iov.length = len;
        iov.memh   = local.memh;
        iov.stride = 0;
        iov.count  = 1;

        uct_ep_h ep = connect(a, b);
        test_comp c1;
        ucs_status_t st = retry([&] {
            return uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)r.ptr, r.rkb.rkey,
                                    &c1.uct);
        });
        if (st == UCS_INPROGRESS) {
            st = UCS_OK;
        }
        EXPECT_EQ(UCS_OK, st);
        *put_st = ep_error(ep);

        ep = connect(a, b);
        test_comp c2;
        st = retry([&] {
            return uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)r.ptr, r.rkb.rkey,
                                    &c2.uct);
        });
        if (st == UCS_INPROGRESS) {
            st = UCS_OK;
        }
        EXPECT_EQ(UCS_OK, st);
        *get_st = ep_error(ep);
    }
};

TEST_F(uct_dcx_hardening, reachability_bad_flow)
{
    entity *a = create_entity();
    ASSERT_TRUE(a != NULL);
    EXPECT_TRUE(reachable(a, a->dev_addr, a->iface_addr));

    /* a port of another fabric (same user, same host) */
    dcx_soft_params_t p;
    memset(&p, 0, sizeof(p));
    std::string other_fabric = unique_fabric() + "o";
    p.count                  = 1;
    p.fabric                 = other_fabric.c_str();
    dcx_dev_info_t *list;
    unsigned count;
    ASSERT_EQ(0, dcx_soft_list(&p, &list, &count));
    ASSERT_EQ(1u, count);
    dcx_dev_t *other;
    ASSERT_EQ(0, dcx_dev_open(&list[0], &other));
    dcx_dev_list_free(list);
    soft_addr_t port;
    size_t len = sizeof(port);
    ASSERT_EQ(0, dcx_dev_port_addr(other, &port, &len));
    dcx_dev_close(other);
    ASSERT_EQ(a->dev_addr.size(), 1 + len);
    EXPECT_FALSE(reachable(a, dev_addr(&port, len), a->iface_addr));

    /* our own port, as if on another host, or of another user */
    soft_addr_t mine;
    memcpy(&mine, &a->dev_addr[1], sizeof(mine));
    soft_addr_t bad = mine;
    bad.host ^= 0x1000;
    EXPECT_FALSE(reachable(a, dev_addr(&bad, len), a->iface_addr));
    bad = mine;
    bad.uid += 1;
    EXPECT_FALSE(reachable(a, dev_addr(&bad, len), a->iface_addr));
    /* garbage of the right length */
    std::vector<char> junk(1 + len);
    junk[0] = (char)len;
    for (size_t i = 1; i < junk.size(); ++i) {
        junk[i] = (char)(i * 29 + 3);
    }
    EXPECT_FALSE(reachable(a, junk, a->iface_addr));
    /* a wrong interface address */
    std::vector<char> iaddr = a->iface_addr;
    iaddr[0] ^= 0xff;
    EXPECT_FALSE(reachable(a, a->dev_addr, iaddr));

    /* what is reachable can be connected to; what is not would fail */
    EXPECT_TRUE(reachable(a, a->dev_addr, a->iface_addr));
    EXPECT_EQ(0, log_counter::errors());
}

/* The target unmaps registered memory without deregistering it (with the
 * registration cache, UCX deregisters lazily): puts and gets into it fail
 * with an error at the initiator, and the target process survives. */
TEST_F(uct_dcx_hardening, access_to_unmapped_memory_bad_flow)
{
    ASSERT_TRUE(create_entity() && create_entity());
    region r = map_and_register(256 * 1024);
    ASSERT_EQ(0, munmap(r.ptr, r.len));

    ucs_status_t put_st, get_st;
    put_get(r, 64 * 1024, &put_st, &get_st);
    EXPECT_NE(UCS_OK, put_st);
    EXPECT_NE(UCS_OK, get_st);
    release(r);
    log_counter::reset();
}

/* Unmapped and mapped again at the same address: the registration no
 * longer names this memory; nothing is written into the new mapping. */
TEST_F(uct_dcx_hardening, remapped_memory_not_written_bad_flow)
{
    ASSERT_TRUE(create_entity() && create_entity());
    region r = map_and_register(256 * 1024);
    ASSERT_EQ(0, munmap(r.ptr, r.len));
    void *again = mmap(r.ptr, r.len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    ASSERT_EQ((void *)r.ptr, again);

    ucs_status_t put_st, get_st;
    put_get(r, 64 * 1024, &put_st, &get_st);
    EXPECT_NE(UCS_OK, put_st);
    EXPECT_NE(UCS_OK, get_st);
    for (size_t i = 0; i < r.len; ++i) {
        ASSERT_EQ(0, r.ptr[i]) << "byte " << i << " of the new mapping";
    }
    release(r);
    munmap(r.ptr, r.len);
    log_counter::reset();
}
