/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Atomic operations of the dcx transport by what the interface advertises:
 * on the soft device every operation, on the mlx5 backend those its
 * self-test found (test/gtest/emu/test_uct_emu.sh runs this over the
 * emulated ConnectX).
 */
#include "uct_fixture.h"

using namespace dcx_test;

class uct_dcx_atomic : public uct_dcx_pair_test {
protected:
    virtual void SetUp()
    {
        uct_dcx_pair_test::SetUp();
        setup_pair(3);
        m_ab = connect(m_a, m_b);
    }

    uct_ep_h m_ab;
};

/* The word an atomic op leaves: old combined with value */
static uint64_t atomic_result(uct_atomic_op_t op, uint64_t old, uint64_t value)
{
    switch (op) {
    case UCT_ATOMIC_OP_ADD:
        return old + value;
    case UCT_ATOMIC_OP_AND:
        return old & value;
    case UCT_ATOMIC_OP_OR:
        return old | value;
    case UCT_ATOMIC_OP_XOR:
        return old ^ value;
    default:
        return value; /* SWAP */
    }
}

/* Every atomic operation, 32- and 64-bit, posted and fetching: what the
 * interface advertises does what it says, next to a neighbour that must
 * not change; what it does not advertise is refused with
 * UCS_ERR_UNSUPPORTED and one error line.  On any device (the mlx5
 * backend offers what its self-test found, fewer than the soft device). */
TEST_P(uct_dcx_atomic, advertised)
{
    static const uct_atomic_op_t ops[] = {UCT_ATOMIC_OP_ADD, UCT_ATOMIC_OP_AND,
                                          UCT_ATOMIC_OP_OR, UCT_ATOMIC_OP_XOR,
                                          UCT_ATOMIC_OP_SWAP};
    const uint64_t init = 0x8000000f0000f0f0ull, value = 0x00000001f0f0ffffull;
    const uct_iface_attr_t &a = m_a->attr;
    mem m                     = alloc_mem(64);
    uint64_t *words           = (uint64_t *)m.ptr;
    uint64_t result;
    unsigned done = 0;

    for (int bits = 32; bits <= 64; bits += 32) {
        const decltype(a.cap.atomic64) &c = (bits == 64) ? a.cap.atomic64 :
                                                           a.cap.atomic32;
        const uint64_t mask = (bits == 64) ? ~0ull : 0xffffffffull;
        uint32_t *w32       = (uint32_t *)&words[1];

        for (int fetch = 0; fetch <= 1; ++fetch) {
            for (uct_atomic_op_t op : ops) {
                const bool has = (fetch ? c.fop_flags : c.op_flags) &
                                 UCS_BIT(op);
                test_comp comp;
                ucs_status_t st;

                if ((op == UCT_ATOMIC_OP_SWAP) && !fetch) {
                    continue; /* UCT has no posted swap */
                }
                words[0] = words[2] = 0x5555555555555555ull;
                words[1] = (bits == 64) ? init : 0x5555555555555555ull;
                if (bits == 32) {
                    w32[1] = (uint32_t)init; /* the upper half of words[1] */
                }
                uintptr_t addr = (bits == 64) ? (uintptr_t)&words[1] :
                                                (uintptr_t)&w32[1];
                result         = 0;
                log_counter::reset();
                st = retry([&] {
                    if (bits == 64) {
                        return fetch ?
                                   uct_ep_atomic64_fetch(m_ab, op, value,
                                                         &result, addr, m.rkey,
                                                         &comp.uct) :
                                   uct_ep_atomic64_post(m_ab, op, value, addr,
                                                        m.rkey);
                    }
                    return fetch ?
                               uct_ep_atomic32_fetch(m_ab, op, (uint32_t)value,
                                                     (uint32_t *)&result, addr,
                                                     m.rkey, &comp.uct) :
                               uct_ep_atomic32_post(m_ab, op, (uint32_t)value,
                                                    addr, m.rkey);
                });
                if (!has) {
                    EXPECT_EQ(UCS_ERR_UNSUPPORTED, st)
                        << bits << "-bit op " << op << " fetch " << fetch;
                    EXPECT_EQ(1, log_counter::errors());
                    log_counter::reset();
                    continue;
                }
                if (st == UCS_INPROGRESS) {
                    ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
                    EXPECT_EQ(UCS_OK, comp.status);
                } else {
                    ASSERT_EQ(UCS_OK, st);
                }
                flush_ep(m_ab);
                uint64_t now = (bits == 64) ? words[1] : w32[1];
                EXPECT_EQ(atomic_result(op, init & mask, value & mask) & mask,
                          now)
                    << bits << "-bit op " << op << " fetch " << fetch;
                if (fetch) {
                    EXPECT_EQ(init & mask, result & mask);
                }
                EXPECT_EQ(0x5555555555555555ull, words[0]);
                EXPECT_EQ(0x5555555555555555ull, words[2]);
                if (bits == 32) {
                    EXPECT_EQ(0x55555555u, w32[0]);
                }
                ++done;
            }
        }
    }
    /* a device with atomics offers at least the 64-bit fetch-add */
    if (a.cap.atomic64.fop_flags != 0) {
        EXPECT_TRUE(a.cap.atomic64.fop_flags & UCS_BIT(UCT_ATOMIC_OP_ADD));
    }
    EXPECT_GT(done, 0u);
}


INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_atomic, UCT_DCX_POLICIES);
