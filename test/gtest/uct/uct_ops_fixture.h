/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fixture of the dcx operation tests through the UCT API
 * (test_uct_ops.cc, test_uct_ops_rma.cc, test_uct_ops_limits.cc): two
 * interfaces connected both ways with an active-message handler that
 * records what arrives, the pack and unpack callbacks of the bcopy
 * operations, the two kinds of target memory a one-sided operation meets,
 * and a retry while the transport is out of resources.
 */
#ifndef DCX_TEST_UCT_OPS_FIXTURE_H_
#define DCX_TEST_UCT_OPS_FIXTURE_H_

#include "uct_fixture.h"

#include <cstring>
#include <string>
#include <vector>

using namespace dcx_test;

/* Named, not anonymous: the fixture is the same class in every file that
 * includes it */
namespace dcx_ops_test {

const uint8_t AM_ID = 5;

struct am_rx {
    int count;
    size_t bytes;
    bool keep; /* return UCS_INPROGRESS */
    std::vector<void *> kept;
    std::vector<std::string> payloads;

    am_rx() : count(0), bytes(0), keep(false) {}

    static ucs_status_t cb(void *arg, void *data, size_t length, unsigned flags)
    {
        am_rx *self = static_cast<am_rx *>(arg);

        /* a message lent where the device received it (a receive in
         * place) has no descriptor to keep; the tests that keep send
         * messages no device lends */
        EXPECT_TRUE((flags & UCT_CB_PARAM_FLAG_DESC) || !self->keep);
        self->count++;
        self->bytes += length;
        if (self->payloads.size() < 64) {
            self->payloads.push_back(std::string((char *)data, length));
        }
        if (self->keep) {
            self->kept.push_back(data);
            return UCS_INPROGRESS;
        }
        return UCS_OK;
    }
};

struct pack_arg {
    const void *data;
    size_t length;
};

inline size_t pack_cb(void *dest, void *arg)
{
    pack_arg *a = static_cast<pack_arg *>(arg);

    memcpy(dest, a->data, a->length);
    return a->length;
}

struct unpack_arg {
    std::string data;
};

/* pack_cb's bytes, and whether they were already in the target's memory
 * when the pack returned: packed in place */
struct probe_arg {
    const char *data;
    size_t length;
    const char *target;
    bool seen;
};

inline size_t probe_pack_cb(void *dest, void *arg)
{
    probe_arg *a = static_cast<probe_arg *>(arg);

    memcpy(dest, a->data, a->length);
    a->seen = (memcmp(a->target, a->data, a->length) == 0);
    return a->length;
}

inline void unpack_cb(void *arg, const void *data, size_t length)
{
    static_cast<unpack_arg *>(arg)->data.assign((const char *)data, length);
}

} /* namespace dcx_ops_test */

using namespace dcx_ops_test;


class uct_dcx_ops : public uct_dcx_policy_test {
protected:
    virtual void SetUp()
    {
        uct_dcx_test::SetUp();
        m_a = create_entity();
        m_b = create_entity();
        ASSERT_TRUE((m_a != NULL) && (m_b != NULL));
        m_ab = connect(m_a, m_b);
        m_ba = connect(m_b, m_a);
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, AM_ID, am_rx::cb,
                                                   &m_rx, 0));
    }

    virtual void TearDown()
    {
        for (size_t i = 0; i < m_rx.kept.size(); ++i) {
            uct_iface_release_desc((char *)m_rx.kept[i] - 16);
        }
        for (size_t i = 0; i < m_allocs.size(); ++i) {
            uct_rkey_release(m_component, &m_allocs[i].rkb);
            uct_iface_mem_free(&m_allocs[i].am);
        }
        uct_dcx_test::TearDown();
        EXPECT_EQ(0, log_counter::errors()) << log_counter::messages()[0];
    }

    /* The two kinds of memory a one-sided operation meets at b, len bytes
     * each with its rkey: heap memory, registered, and an allocation of
     * b's interface, which peers reach through a mapping (released at
     * TearDown) */
    struct target {
        char *ptr;
        uct_rkey_t rkey;
    };
    void two_targets(size_t len, target t[2])
    {
        std::vector<char> packed(m_md_attr.rkey_packed_size);
        mem heap = alloc_mem(len);
        alloc a;

        ASSERT_EQ(UCS_OK,
                  uct_iface_mem_alloc(m_b->iface, len, UCT_MD_MEM_ACCESS_ALL,
                                      "test target", &a.am));
        ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, a.am.memh, &packed[0]));
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, &packed[0], &a.rkb));
        m_allocs.push_back(a);
        t[0] = {(char *)heap.ptr, heap.rkey};
        t[1] = {(char *)a.am.address, a.rkb.rkey};
    }

    /* retries while the transport is out of resources */
    template <typename F> ucs_status_t retry(F op)
    {
        ucs_status_t status;

        while ((status = op()) == UCS_ERR_NO_RESOURCE) {
            progress();
        }
        return status;
    }

    entity *m_a, *m_b;
    uct_ep_h m_ab, m_ba;
    am_rx m_rx;
    struct alloc {
        uct_allocated_memory_t am;
        uct_rkey_bundle_t rkb;
    };
    std::vector<alloc> m_allocs; /* two_targets' */
};

#endif /* DCX_TEST_UCT_OPS_FIXTURE_H_ */
