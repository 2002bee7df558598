/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The strided-key fixture of the soft device tests (test_soft_mkey.cc,
 * test_soft_mkey_batch.cc): a device that targets itself, a registered
 * target and source buffer, and the helpers that create, configure and
 * invalidate keys and run one RDMA operation through them.
 */
#ifndef SOFT_MKEY_FIXTURE_H_
#define SOFT_MKEY_FIXTURE_H_

#include "soft_fixture.h"

#include <algorithm>
#include <sys/mman.h>

using namespace soft_test;

namespace soft_mkey_test {

const uint64_t KEY  = 0x11ee5eed0000cafeull;
const uint32_t RACC = DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                      DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC;
const uint32_t LIMIT = 8; /* mkey_max_entries of the tests' devices */

/* The bytes a layout maps, in key order (reference for the checks). */
inline std::vector<uint8_t *>
layout_bytes(const std::vector<dcx_mkey_interleaved_t> &e, uint32_t repeat)
{
    std::vector<uint8_t *> out;
    for (uint32_t r = 0; r < repeat; ++r) {
        for (const auto &x : e) {
            uint8_t *p = (uint8_t *)(uintptr_t)x.addr +
                         (size_t)r * (x.bytes_count + x.bytes_skip);
            for (uint32_t b = 0; b < x.bytes_count; ++b) {
                out.push_back(p + b);
            }
        }
    }
    return out;
}

inline dcx_mkey_interleaved_t ient(const void *addr, uint32_t count,
                                   uint32_t skip, uint32_t lkey)
{
    dcx_mkey_interleaved_t e;
    memset(&e, 0, sizeof(e));
    e.addr        = (uint64_t)(uintptr_t)addr;
    e.bytes_count = count;
    e.bytes_skip  = skip;
    e.lkey        = lkey;
    return e;
}

/* An interleaved layout: entries e repeated repeat times (e must outlive
 * it) */
inline dcx_mkey_layout_t
interleaved_layout(const std::vector<dcx_mkey_interleaved_t> &e,
                   uint32_t repeat, uint32_t access)
{
    dcx_mkey_layout_t lay;
    memset(&lay, 0, sizeof(lay));
    lay.access       = access;
    lay.repeat_count = repeat;
    lay.num_entries  = (uint32_t)e.size();
    lay.interleaved  = e.data();
    return lay;
}

/* A signalled configure (op and lay) or invalidate (lay NULL) of key k */
inline dcx_send_wr_t umr_wr(dcx_wr_opcode_t op, dcx_mkey_t *k,
                            const dcx_mkey_layout_t *lay, uint64_t wr_id)
{
    dcx_send_wr_t w;
    memset(&w, 0, sizeof(w));
    w.wr_id       = wr_id;
    w.opcode      = op;
    w.flags       = DCX_SEND_SIGNALED;
    w.mkey        = k;
    w.mkey_layout = lay;
    return w;
}

} // namespace soft_mkey_test

using namespace soft_mkey_test;

/* A device that targets itself: the key's memory is in this process. */
class soft_mkey : public soft {
protected:
    void SetUp() override
    {
        soft::SetUp();
        dcx_soft_limits_t l = sh->tp.limits;
        l.mkey_max_entries  = LIMIT;
        limits(l);
        ASSERT_EQ(0, n.open(fabric.c_str(), &l));
        ASSERT_EQ(0, n.make_loopback(KEY, DCX_ACCESS_REMOTE_WRITE |
                                              DCX_ACCESS_REMOTE_READ |
                                              DCX_ACCESS_REMOTE_ATOMIC));
        ASSERT_EQ(0, n.reg(mem.data(), mem.size(), RACC, &mr));
        ASSERT_EQ(0,
                  n.reg(loc.data(), loc.size(), DCX_ACCESS_LOCAL_WRITE, &lmr));
        for (size_t i = 0; i < mem.size(); ++i) {
            mem[i] = (uint8_t)(i * 7 + 3);
        }
    }

    /* last changes to the device's limits */
    virtual void limits(dcx_soft_limits_t &l) {}

    void TearDown() override
    {
        for (dcx_mkey_t *k : keys) {
            EXPECT_EQ(0, dcx_mkey_destroy(k));
        }
        keys.clear();
        n.close();
        soft::TearDown();
    }

    /* len bytes of a fresh anonymous mapping filled with fill and
     * registered (RACC) in *mr_p, for the tests that report it unmapped;
     * NULL if a step failed */
    uint8_t *mapped(size_t len, uint8_t fill, dcx_mr_t **mr_p)
    {
        void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        EXPECT_NE(MAP_FAILED, p);
        if (p == MAP_FAILED) {
            return nullptr;
        }
        memset(p, fill, len);
        EXPECT_EQ(0, dcx_mr_reg(n.pd, p, len, RACC, mr_p));
        return (uint8_t *)p;
    }

    dcx_mkey_t *create(uint32_t entries = LIMIT)
    {
        dcx_mkey_t *k = nullptr;
        EXPECT_EQ(0, dcx_mkey_create(n.pd, entries, &k));
        if (k != nullptr) {
            keys.push_back(k);
        }
        return k;
    }

    dcx_send_wr_t mkey_wr(dcx_wr_opcode_t op, dcx_mkey_t *k,
                          const dcx_mkey_layout_t *lay)
    {
        return umr_wr(op, k, lay, 0x77);
    }

    /* posts a configure/invalidate and waits for its completion */
    void exec(const dcx_send_wr_t &w, uint8_t wc_opcode)
    {
        dcx_wc_t wc;
        ASSERT_EQ(0, dcx_qp_post_send(n.dci, &w));
        ASSERT_EQ(1, n.poll(&wc, 1, 20.0));
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        EXPECT_EQ(wc_opcode, wc.opcode);
        EXPECT_EQ(0x77u, wc.wr_id);
    }

    void interleaved(dcx_mkey_t *k,
                     const std::vector<dcx_mkey_interleaved_t> &e,
                     uint32_t repeat, uint32_t access = RACC)
    {
        dcx_mkey_layout_t lay = interleaved_layout(e, repeat, access);
        exec(mkey_wr(DCX_WR_MKEY_INTERLEAVED, k, &lay), DCX_WC_UMR);
    }

    void list(dcx_mkey_t *k, const std::vector<dcx_sge_t> &s,
              uint32_t access = RACC)
    {
        dcx_mkey_layout_t lay;
        memset(&lay, 0, sizeof(lay));
        lay.access      = access;
        lay.num_entries = (uint32_t)s.size();
        lay.list        = s.data();
        exec(mkey_wr(DCX_WR_MKEY_LIST, k, &lay), DCX_WC_UMR);
    }

    void invalidate(dcx_mkey_t *k)
    {
        exec(mkey_wr(DCX_WR_MKEY_INVALIDATE, k, nullptr), DCX_WC_LOCAL_INV);
    }

    /* one RDMA/atomic WR from loc[loff..] against (rkey, raddr) */
    uint8_t rdma(dcx_wr_opcode_t op, uint32_t rkey, uint64_t raddr, size_t loff,
                 uint32_t len, uint32_t lkey = 0)
    {
        dcx_sge_t s;
        s.addr   = (uint64_t)(uintptr_t)(loc.data() + loff);
        s.length = len;
        s.lkey   = lkey ? lkey : lmr->lkey;
        return run(op, &s, rkey, raddr);
    }

    uint8_t run(dcx_wr_opcode_t op, const dcx_sge_t *s, uint32_t rkey,
                uint64_t raddr)
    {
        dcx_send_wr_t w = n.loop_wr(op, KEY, s, rkey, raddr);

        w.wr_id = 5;
        return n.run(w);
    }

    int post_bad(const dcx_send_wr_t &w)
    {
        log_counter logs;
        int ret = dcx_qp_post_send(n.dci, &w);
        EXPECT_EQ(1, logs.lines());
        return ret;
    }

    /* a column of a rows x cols matrix of 8-byte elements in mem */
    std::vector<dcx_mkey_interleaved_t> column(size_t col, size_t cols)
    {
        return {
            ient(mem.data() + col * 8, 8, (uint32_t)(cols - 1) * 8, mr->lkey)};
    }

    node n;
    dcx_mr_t *mr             = nullptr;
    dcx_mr_t *lmr            = nullptr;
    std::vector<uint8_t> mem = std::vector<uint8_t>(1u << 20);
    std::vector<uint8_t> loc = std::vector<uint8_t>(1u << 20);
    std::vector<dcx_mkey_t *> keys;
};

#endif
