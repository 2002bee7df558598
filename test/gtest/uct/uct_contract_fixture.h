/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fixture of the probes of dcx against the UCT contract
 * (test_uct_contract.cc, test_uct_contract_ucx.cc): two interfaces, a
 * sending to b, b's AMs of one id recorded, and helpers to retry refused
 * operations and to check a refusal.
 */
#ifndef DCX_GTEST_UCT_CONTRACT_FIXTURE_H_
#define DCX_GTEST_UCT_CONTRACT_FIXTURE_H_

#include "uct_fixture.h"
#include "uct_invalidate.h"
#include "dcx_ucx_features.h" /* what differs between UCX versions */

#include <ucs/time/time.h>

extern "C" {
#include <uct/base/uct_iface.h>
#include <uct/api/v2/uct_v2.h>
}

#include <algorithm>
#include <climits>
#include <cstring>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#include <thread>

using namespace dcx_test;

namespace dcx_contract_test {

const uint8_t AM_ID = 7;

struct held_rx {
    int count;
    int keep_every;               /* keep one in n handed over (0: none) */
    int desc_count;               /* handed over with UCT_CB_PARAM_FLAG_DESC */
    std::vector<size_t> kept_idx; /* in data, the messages kept */
    size_t headroom;
    std::vector<void *> kept;
    std::vector<std::string> data;

    held_rx() : count(0), keep_every(0), desc_count(0), headroom(16) {}

    static ucs_status_t cb(void *arg, void *data, size_t length, unsigned flags)
    {
        held_rx *self = static_cast<held_rx *>(arg);

        self->count++;
        self->data.push_back(std::string((char *)data, length));
        self->desc_count += !!(flags & UCT_CB_PARAM_FLAG_DESC);
        if ((self->keep_every > 0) && (flags & UCT_CB_PARAM_FLAG_DESC) &&
            ((self->desc_count % self->keep_every) == 0)) {
            self->kept.push_back((char *)data - self->headroom);
            self->kept_idx.push_back(self->data.size() - 1);
            return UCS_INPROGRESS;
        }
        return UCS_OK;
    }

    void release()
    {
        for (size_t i = 0; i < kept.size(); ++i) {
            uct_iface_release_desc(kept[i]);
        }
        kept.clear();
    }
};

inline size_t pack_str(void *dest, void *arg)
{
    const std::string *s = static_cast<const std::string *>(arg);

    memcpy(dest, s->data(), s->size());
    return s->size();
}

inline void unpack_raw(void *arg, const void *data, size_t length)
{
    memcpy(arg, data, length);
}

inline void unpack_str(void *arg, const void *data, size_t length)
{
    static_cast<std::string *>(arg)->assign((const char *)data, length);
}

} /* namespace dcx_contract_test */

using namespace dcx_contract_test;


class uct_dcx_contract : public uct_dcx_policy_test {
protected:
    virtual void SetUp()
    {
        uct_dcx_test::SetUp();
        m_a = create_entity();
        m_b = create_entity();
        ASSERT_TRUE((m_a != NULL) && (m_b != NULL));
        m_ab = connect(m_a, m_b);
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, AM_ID,
                                                   held_rx::cb, &m_rx, 0));
        log_counter::reset();
    }

    virtual void TearDown()
    {
        m_rx.release();
        uct_dcx_test::TearDown();
        EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
    }

    template <typename F> ucs_status_t retry(F op)
    {
        ucs_status_t status;

        while ((status = op()) == UCS_ERR_NO_RESOURCE) {
            progress();
        }
        return status;
    }

    ssize_t retry_len(const std::function<ssize_t()> &op)
    {
        ssize_t len;

        while ((len = op()) == UCS_ERR_NO_RESOURCE) {
            progress();
        }
        return len;
    }

    /* m_ab still carries AMs and flushes */
    void check_ok()
    {
        int before = m_rx.count;

        for (int i = 0; i < 10; ++i) {
            ASSERT_EQ(UCS_OK, retry([&] {
                          return uct_ep_am_short(m_ab, AM_ID, i, NULL, 0);
                      }));
        }
        /* (late messages of earlier tests may still come in) */
        ASSERT_TRUE(wait_for([&] { return m_rx.count >= before + 10; }));
        flush_ep(m_ab);
    }

    /* Message i of a mixed stream carrying p: bcopy when i is odd, short
     * (the first 40 bytes, header i) when even */
    void send_mixed(uct_ep_h ep, int i, const std::string &p)
    {
        if (i % 2) {
            ASSERT_EQ((ssize_t)p.size(), retry_len([&] {
                          return uct_ep_am_bcopy(ep, AM_ID, pack_str,
                                                 (void *)&p, 0);
                      }));
        } else {
            ASSERT_EQ(UCS_OK, retry([&] {
                          return uct_ep_am_short(ep, AM_ID, i, p.data(),
                                                 ucs_min(p.size(), (size_t)40));
                      }));
        }
    }

    /* status is the refusal of a parameter, logged once */
    void expect_refused(ucs_status_t status)
    {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, status);
        EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
        log_counter::reset();
    }

    entity *m_a, *m_b;
    uct_ep_h m_ab;
    held_rx m_rx;
};

#endif
