/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pair fixture of the soft device's light-post tests
 * (test_soft_light_sge.cc, test_soft_line.cc): node a's DCI sending to
 * node b's DCT, SENDs of registered sges or inline data with a pattern per
 * message, the receives posted by the test, and the look at b's newest
 * request slot under b's engine lock (engine_held), which nobody serves
 * meanwhile.
 */
#ifndef SOFT_PAIR_FIXTURE_H_
#define SOFT_PAIR_FIXTURE_H_

#include "soft_fixture.h"

extern "C" {
#include "soft/soft.h"
}

#include <string.h>
#include <vector>

using namespace soft_test;

namespace soft_pair_test {

const uint64_t KEY  = 0x5e9e;
const uint32_t SLOT = 20480; /* a receive: more than the MTU */

inline uint8_t pattern(uint64_t m, size_t i)
{
    return (uint8_t)(m * 37u + i * 11u + 3u);
}

/* the len bytes at p are message m's */
inline bool matches(const uint8_t *p, uint64_t m, uint32_t len)
{
    for (uint32_t i = 0; i < len; ++i) {
        if (p[i] != pattern(m, i)) {
            return false;
        }
    }
    return true;
}

/* The engine lock of a node's soft device for a scope: nobody serves its
 * rings meanwhile, and an assertion that returns early releases it too
 * (a test that failed with it held would hang in its pair's close) */
class engine_held {
public:
    explicit engine_held(dcx_dev_t *dev) : m_lock(&((soft_dev_t *)dev)->lock)
    {
        soft_lock(m_lock);
    }
    ~engine_held() { soft_unlock(m_lock); }
    engine_held(const engine_held &)            = delete;
    engine_held &operator=(const engine_held &) = delete;

private:
    soft_lock_t *m_lock;
};

/* a sends to b's DCT; the receives are posted by the test */
struct sge_pair {
    node a, b;
    std::vector<uint8_t> abuf = std::vector<uint8_t>(8 * SLOT);
    std::vector<uint8_t> bbuf = std::vector<uint8_t>(16 * SLOT);
    dcx_mr_t *amr = nullptr, *bmr = nullptr;
    /* where the SENDs go: this DC key, this DCT number (0: b's DCT) */
    uint64_t key  = KEY;
    uint32_t dctn = 0;

    int open(const std::string &fabric, bool unmaps_reported = true,
             const dcx_soft_limits_t *blimits = nullptr,
             const dcx_soft_limits_t *alimits = nullptr)
    {
        uint8_t addr[DCX_DEV_ADDR_MAX];
        size_t len = sizeof(addr);
        int ret;

        if (((ret = a.open(fabric.c_str(), alimits)) != 0) ||
            ((ret = b.open(fabric.c_str(), blimits)) != 0) ||
            ((ret = a.make_dci(128, 256, 7, 7)) != 0) ||
            ((ret = a.reg(abuf.data(), abuf.size(), DCX_ACCESS_LOCAL_WRITE,
                          &amr)) != 0) ||
            ((ret = b.make_target(KEY, 0, 64)) != 0) ||
            ((ret = b.reg(bbuf.data(), bbuf.size(), DCX_ACCESS_LOCAL_WRITE,
                          &bmr)) != 0) ||
            ((ret = dcx_dev_port_addr(b.dev, addr, &len)) != 0) ||
            ((ret = a.connect(addr, len)) != 0)) {
            return ret;
        }
        if (unmaps_reported) {
            dcx_dev_unmaps_reported(a.dev);
        }
        return 0;
    }

    /* open() with a's acknowledgement timeout (its retransmissions) of
     * ack_timeout_us */
    int open_retrying(const std::string &fabric, uint32_t ack_timeout_us)
    {
        dcx_soft_limits_t al;

        dcx_soft_limits_default(&al);
        al.ack_timeout_us = ack_timeout_us;
        return open(fabric, true, nullptr, &al);
    }

    /* another DCT of b's, on b's SRQ and CQ, under key */
    int make_dct(uint64_t dc_key, dcx_qp_t **dct_p)
    {
        dcx_qp_attr_t qattr;

        memset(&qattr, 0, sizeof(qattr));
        qattr.type    = DCX_QPT_DCT;
        qattr.recv_cq = b.cq;
        qattr.srq     = b.srq;
        qattr.dc_key  = dc_key;
        return dcx_qp_create(b.pd, &qattr, dct_p);
    }

    /* receives first..first+n-1, SLOT bytes each */
    int post(uint64_t first, unsigned n)
    {
        std::vector<dcx_recv_t> l = recv_list(bbuf, bmr, first, n, SLOT);
        unsigned posted           = 0;
        int ret = dcx_srq_post_recv_list(b.srq, l.data(), n, SLOT, &posted);

        return (ret != 0) ? ret : (posted == n) ? 0 : ENOSPC;
    }

    /* a signaled SEND (op, with flags more) of len bytes (pattern m) from
     * abuf's slot m % 8 (at byte off of it), under lkey (0: the buffer's);
     * the pattern is written where it fits in abuf */
    int send_as(uint64_t m, uint32_t len, uint32_t flags, dcx_wr_opcode_t op,
                uint32_t lkey = 0, size_t off = 0)
    {
        uint8_t *p = abuf.data() + (m % 8) * SLOT + off;
        dcx_sge_t s;

        for (uint32_t i = 0; (i < len) && (p + i < abuf.data() + abuf.size());
             ++i) {
            p[i] = pattern(m, i);
        }
        s.addr   = (uintptr_t)p;
        s.length = len;
        s.lkey   = (lkey != 0) ? lkey : amr->lkey;
        return send_sges(m, &s, 1, flags, op);
    }

    /* send_as(): a SEND of the sge */
    int send(uint64_t m, uint32_t len, uint32_t lkey = 0, size_t off = 0)
    {
        return send_as(m, len, 0, DCX_WR_SEND, lkey, off);
    }

    /* send_as(): the data inline (an am_short's) */
    int send_inline(uint64_t m, uint32_t len, dcx_wr_opcode_t op = DCX_WR_SEND)
    {
        return send_as(m, len, DCX_SEND_INLINE, op);
    }

    /* a signaled SEND (op) of message m from a to b's DCT, of the n sges
     * at sl, with flags more */
    int send_sges(uint64_t m, dcx_sge_t *sl, uint32_t n, uint32_t flags = 0,
                  dcx_wr_opcode_t op = DCX_WR_SEND)
    {
        dcx_send_wr_t wr;

        memset(&wr, 0, sizeof(wr));
        wr.wr_id       = m;
        wr.opcode      = op;
        wr.imm         = (uint32_t)m;
        wr.flags       = DCX_SEND_SIGNALED | flags;
        wr.num_sge     = n;
        wr.sg_list     = sl;
        wr.dest.ah     = a.ah;
        wr.dest.dctn   = (dctn != 0) ? dctn : b.dct->qp_num;
        wr.dest.dc_key = key;
        return dcx_qp_post_send(a.dci, &wr);
    }

    /* a signaled SEND of message m gathered from pieces of abuf's slot
     * m % 8, each {offset, length} (a zero length included), the pattern
     * running on across them; lkeys[i], where given and not 0, replaces
     * the buffer's for piece i */
    int send_list(uint64_t m,
                  const std::vector<std::pair<size_t, uint32_t>> &pieces,
                  const std::vector<uint32_t> &lkeys = {})
    {
        uint8_t *base = abuf.data() + (m % 8) * SLOT;
        std::vector<dcx_sge_t> sl(pieces.size());
        size_t k = 0;

        for (size_t i = 0; i < pieces.size(); ++i) {
            for (uint32_t j = 0; j < pieces[i].second; ++j) {
                base[pieces[i].first + j] = pattern(m, k++);
            }
            sl[i].addr   = (uintptr_t)(base + pieces[i].first);
            sl[i].length = pieces[i].second;
            sl[i].lkey   = ((i < lkeys.size()) && (lkeys[i] != 0)) ? lkeys[i] :
                                                                     amr->lkey;
        }
        return send_sges(m, sl.data(), (uint32_t)sl.size());
    }

    /* polls both CQs until a has na completions and b nb; false on timeout */
    bool take(std::vector<dcx_wc_t> &wa, unsigned na, std::vector<dcx_wc_t> &wb,
              unsigned nb)
    {
        double end = now_s() + 20.0;
        dcx_wc_t wc;

        while ((wa.size() < na) || (wb.size() < nb)) {
            if (now_s() > end) {
                return false;
            }
            if (dcx_cq_poll(a.cq, 1, &wc) == 1) {
                wa.push_back(wc);
            }
            if (dcx_cq_poll(b.cq, 1, &wc) == 1) {
                wb.push_back(wc);
            }
        }
        return true;
    }

    /* n receives posted, then message 0 (64 bytes) sent and received: b's
     * port mapped, a known to b */
    void introduce(unsigned n)
    {
        std::vector<dcx_wc_t> wa, wb;

        ASSERT_EQ(0, post(0, n));
        ASSERT_EQ(0, send(0, 64));
        ASSERT_TRUE(take(wa, 1, wb, 1));
        ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status);
    }

    /* polls both (nothing completes) until a retried an RNR since 'before' */
    void wait_rnr(const dcx_soft_stats_t &before)
    {
        double end = now_s() + 10.0;
        dcx_wc_t wc;

        while ((dev_stats(a).rnr_retries == before.rnr_retries) &&
               (now_s() < end)) {
            ASSERT_EQ(0, dcx_cq_poll(b.cq, 1, &wc));
            ASSERT_EQ(0, dcx_cq_poll(a.cq, 1, &wc));
        }
        ASSERT_GT(dev_stats(a).rnr_retries, before.rnr_retries);
    }

    /* message m, 4 KiB, posted light to b, which has no receive for it:
     * returns once a retried the RNR; 'before' is a's counters before */
    void send_into_rnr(uint64_t m, dcx_soft_stats_t &before)
    {
        before = dev_stats(a);
        ASSERT_EQ(0, send(m, 4096));
        ASSERT_EQ(1u, dev_stats(a).light_posts - before.light_posts);
        wait_rnr(before);
    }

    /* receive wr_id holds message m's len bytes */
    bool holds(uint64_t wr_id, uint64_t m, uint32_t len) const
    {
        return matches(bbuf.data() + wr_id * SLOT, m, len);
    }

    /* the slot of b's request ring that the newest packet claimed (b's
     * engine lock held by the caller, so that nobody serves it) */
    soft_slot_t *newest_slot() const
    {
        soft_port_hdr_t *hdr = ((soft_dev_t *)b.dev)->hdr;
        uint64_t pos = __atomic_load_n(&hdr->req.tail, __ATOMIC_ACQUIRE) - 1;

        return soft_ring_slot(hdr, &hdr->req, pos);
    }
};

} // namespace soft_pair_test

#endif
