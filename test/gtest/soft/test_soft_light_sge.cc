/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the light post of a SEND of one registered sge
 * (soft_req_post_sge).  Copied from the sge straight into the target's
 * ring slot within the post, where the device copies its own sg lists
 * plainly (the consumer reports unmaps); otherwise, and for every WR it
 * does not take, the general path, with the same results: every byte at
 * every size up to the MTU, a retransmission after RNR from the sge, a bad
 * or deregistered key failing the WR, and no light post at all while
 * unmaps are not reported or a strided key exists.
 */
#include "soft_fixture.h"

extern "C" {
#include "soft/soft.h"
}

#include <algorithm>
#include <vector>

using namespace soft_test;

namespace {

const uint64_t KEY  = 0x5e9e;
const uint32_t SLOT = 20480; /* a receive: more than the MTU */

uint8_t pattern(uint64_t m, size_t i)
{
    return (uint8_t)(m * 37u + i * 11u + 3u);
}

/* the len bytes at p are message m's */
bool matches(const uint8_t *p, uint64_t m, uint32_t len)
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

    int open(const std::string &fabric, bool unmaps_reported = true,
             const dcx_soft_limits_t *blimits = nullptr)
    {
        uint8_t addr[DCX_DEV_ADDR_MAX];
        size_t len = sizeof(addr);
        int ret;

        if (((ret = a.open(fabric.c_str())) != 0) ||
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

    /* receives first..first+n-1, SLOT bytes each */
    int post(uint64_t first, unsigned n)
    {
        std::vector<dcx_recv_t> l = recv_list(bbuf, bmr, first, n, SLOT);
        unsigned posted           = 0;
        int ret = dcx_srq_post_recv_list(b.srq, l.data(), n, SLOT, &posted);

        return (ret != 0) ? ret : (posted == n) ? 0 : ENOSPC;
    }

    /* a signaled SEND of len bytes (pattern m) from abuf's slot m % 8 (at
     * byte off of it), under lkey (0: the buffer's); the pattern is
     * written where it fits in abuf */
    int send(uint64_t m, uint32_t len, uint32_t lkey = 0, size_t off = 0)
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
        return send_sges(m, &s, 1);
    }

    /* a signaled SEND of message m from a to b's DCT, of the n sges at sl */
    int send_sges(uint64_t m, dcx_sge_t *sl, uint32_t n)
    {
        dcx_send_wr_t wr;

        memset(&wr, 0, sizeof(wr));
        wr.wr_id       = m;
        wr.opcode      = DCX_WR_SEND;
        wr.flags       = DCX_SEND_SIGNALED;
        wr.num_sge     = n;
        wr.sg_list     = sl;
        wr.dest.ah     = a.ah;
        wr.dest.dctn   = b.dct->qp_num;
        wr.dest.dc_key = KEY;
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

} // namespace

/* Every size around the slot's lines and up to the MTU goes through the
 * light post, byte for byte; one byte more than the MTU is split by the
 * general path and arrives intact after them. */
TEST_F(soft, light_sge_sends_every_size)
{
    sge_pair p;
    uint32_t mtu;

    ASSERT_EQ(0, p.open(fabric));
    mtu = dcx_dev_caps(p.a.dev)->mtu;
    ASSERT_LT(mtu, SLOT);
    std::vector<uint32_t> sizes = {1,    8,    57,      64,   65,
                                   255,  256,  1000,    4095, 4096,
                                   4097, 9000, mtu - 1, mtu,  mtu + 1};
    ASSERT_EQ(0, p.post(0, sizes.size()));
    dcx_soft_stats_t before = dev_stats(p.a);
    for (unsigned m = 0; m < sizes.size(); ++m) {
        std::vector<dcx_wc_t> wa, wb;

        ASSERT_EQ(0, p.send(m, sizes[m])) << "message " << m;
        ASSERT_TRUE(p.take(wa, 1, wb, 1)) << "message " << m;
        EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status) << "message " << m;
        EXPECT_EQ(m, wa[0].wr_id);
        ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status) << "message " << m;
        EXPECT_EQ(sizes[m], wb[0].byte_len) << "message " << m;
        EXPECT_TRUE(p.holds(wb[0].wr_id, m, sizes[m])) << "message " << m;
    }
    dcx_soft_stats_t after = dev_stats(p.a);
    /* the first message maps the port and may take the light post too;
     * only the one above the MTU cannot */
    EXPECT_EQ(sizes.size() - 1, after.light_posts - before.light_posts);
}

/* A light SEND of one sge is a light packet as an inline one is: the
 * header and up to 41 bytes (SOFT_LIGHT_LINE2) in the slot's first two
 * cache lines, the payload 7 bytes past imm, nothing written past them.
 * A longer one is flagged SOFT_PKT_FAR and ends at the slot's end
 * (soft_light_far_off): nothing is written between the header's lines
 * and it.  (A full header put its payload's first byte on the fourth
 * line, and the lines after the header's.) */
TEST_F(soft, light_sge_send_layout)
{
    sge_pair p;
    const uint32_t lens[] = {8, SOFT_LIGHT_LINE2, SOFT_LIGHT_LINE2 + 1, 4096};

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(1 + sizeof(lens) / sizeof(lens[0]));
    soft_port_hdr_t *hdr = ((soft_dev_t *)p.b.dev)->hdr;
    for (unsigned k = 0; k < sizeof(lens) / sizeof(lens[0]); ++k) {
        const uint64_t m   = 1 + k;
        const uint32_t len = lens[k];
        const bool far     = len > SOFT_LIGHT_LINE2;
        std::vector<dcx_wc_t> wa, wb;

        {
            /* nobody serves the slot while we look */
            engine_held held(p.b.dev);
            dcx_soft_stats_t before = dev_stats(p.a);
            ASSERT_EQ(0, p.send(m, len));
            ASSERT_EQ(1u, dev_stats(p.a).light_posts - before.light_posts);
            uint64_t pos = __atomic_load_n(&hdr->req.tail, __ATOMIC_ACQUIRE) -
                           1;
            ASSERT_LT(pos, (uint64_t)SOFT_RING_SLOTS)
                << "a slot written before";
            const uint32_t size   = hdr->req.slot_size;
            const soft_slot_t *ss = p.newest_slot();
            const uint8_t *slot   = (const uint8_t *)ss;
            const size_t off      = far ? soft_light_far_off(size, len) :
                                          SOFT_LIGHT_OFF;
            EXPECT_EQ(pos + 1, __atomic_load_n(&ss->seq, __ATOMIC_ACQUIRE));
            EXPECT_TRUE(ss->pkt.flags & SOFT_PKT_LIGHT) << len << " B";
            EXPECT_EQ(far, !!(ss->pkt.flags & SOFT_PKT_FAR)) << len << " B";
            EXPECT_EQ(len, ss->pkt.len);
            EXPECT_EQ(7u, off % 8) << len << " B";
            EXPECT_LE(off + len, size) << len << " B";
            size_t stray = 0;
            for (size_t b = far ? 128 : SOFT_LIGHT_OFF + len; b < size; ++b) {
                stray += ((b < off) || (b >= off + len)) && (slot[b] != 0);
            }
            EXPECT_TRUE(matches(slot + off, m, len))
                << len << " B: payload not at " << off;
            EXPECT_EQ(0u, stray)
                << len << " B: bytes outside header and payload";
        }

        ASSERT_TRUE(p.take(wa, 1, wb, 1)) << "message " << m;
        EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
        ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status);
        EXPECT_EQ(len, wb[0].byte_len);
        EXPECT_TRUE(p.holds(wb[0].wr_id, m, len)) << "message " << m;
    }
}

/* A far packet whose length was changed in the slot to one no slot holds
 * (a corrupted or forged packet) is read after the light header, where
 * the responder drops it as malformed, reading nothing past the slot; the
 * requester's retransmission, gathered from the sge again, delivers the
 * message intact. */
TEST_F(soft, light_sge_far_length_forged_bad_flow)
{
    sge_pair p;
    std::vector<dcx_wc_t> wa, wb;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(2);
    soft_port_hdr_t *hdr = ((soft_dev_t *)p.b.dev)->hdr;

    {
        engine_held held(p.b.dev);
        ASSERT_EQ(0, p.send(1, 4096));
        soft_slot_t *ss = p.newest_slot();
        ASSERT_TRUE(ss->pkt.flags & SOFT_PKT_FAR);
        ss->pkt.len   = hdr->req.slot_size; /* no slot holds that far */
        void *payload = soft_slot_payload(ss, hdr->req.slot_size);
        EXPECT_EQ((uint8_t *)ss + SOFT_LIGHT_OFF, payload);
    }

    ASSERT_TRUE(p.take(wa, 1, wb, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
    ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status);
    EXPECT_EQ(4096u, wb[0].byte_len);
    EXPECT_TRUE(p.holds(wb[0].wr_id, 1, 4096));
}

/* A SEND of an sg list (an am_zcopy's header and iov) takes the light
 * post too, gathered into the slot in order, a zero-length piece
 * included; after an RNR it is gathered again from the same list. */
TEST_F(soft, light_sge_gathers_an_sg_list)
{
    sge_pair p;
    const std::vector<std::pair<size_t, uint32_t>> pieces = {{0, 8},
                                                             {64, 0},
                                                             {1000, 100},
                                                             {5000, 4000}};
    const uint32_t len                                    = 8 + 100 + 4000;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(3);
    for (uint64_t m = 1; m <= 2; ++m) {
        std::vector<dcx_wc_t> wa, wb;
        dcx_soft_stats_t before = dev_stats(p.a);

        ASSERT_EQ(0, p.send_list(m, pieces));
        EXPECT_EQ(1u, dev_stats(p.a).light_posts - before.light_posts);
        ASSERT_TRUE(p.take(wa, 1, wb, 1)) << "message " << m;
        EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
        ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status);
        EXPECT_EQ(len, wb[0].byte_len);
        EXPECT_TRUE(p.holds(wb[0].wr_id, m, len)) << "message " << m;
    }

    /* no receive posted: refused, then sent again from the list */
    std::vector<dcx_wc_t> wa, wb;
    dcx_soft_stats_t before = dev_stats(p.a);
    ASSERT_EQ(0, p.send_list(3, pieces));
    EXPECT_EQ(1u, dev_stats(p.a).light_posts - before.light_posts);
    p.wait_rnr(before);
    ASSERT_EQ(0, p.post(3, 1));
    ASSERT_TRUE(p.take(wa, 1, wb, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
    ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status);
    EXPECT_TRUE(p.holds(wb[0].wr_id, 3, len));
}

/* One piece of the list under a key that is not ours: the light post
 * does not take the SEND, whose WR fails with a local protection error
 * on the general path, nothing of it delivered. */
TEST_F(soft, light_sge_list_bad_key_bad_flow)
{
    sge_pair p;
    std::vector<dcx_wc_t> wa, wb;
    dcx_wc_t wc;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(2);
    dcx_soft_stats_t before = dev_stats(p.a);
    ASSERT_EQ(0, p.send_list(1, {{0, 8}, {1000, 100}, {5000, 4000}},
                             {0, p.amr->lkey ^ 0x5500, 0}));
    ASSERT_TRUE(p.take(wa, 1, wb, 0));
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, wa[0].status);
    EXPECT_EQ(1u, wa[0].wr_id);
    EXPECT_EQ(before.light_posts, dev_stats(p.a).light_posts);
    EXPECT_EQ(0, dcx_cq_poll(p.b.cq, 1, &wc));
}

/* To a peer of a smaller MTU, whose slots are smaller: a far payload ends
 * by the end of the peer's slot, as the peer computes it from its own
 * geometry; every size up to that MTU goes light and arrives intact, one
 * byte more takes the general path. */
TEST_F(soft, light_sge_far_in_a_smaller_peer_slot)
{
    sge_pair p;
    dcx_soft_limits_t bl;

    memset(&bl, 0, sizeof(bl));
    bl.mtu = 1024;
    ASSERT_EQ(0, p.open(fabric, true, &bl));
    ASSERT_EQ(1024u, dcx_dev_caps(p.b.dev)->mtu);
    const std::vector<uint32_t> sizes = {41, 42, 500, 1023, 1024, 1025};
    p.introduce((unsigned)sizes.size() + 1);
    const uint32_t size = ((soft_dev_t *)p.b.dev)->hdr->req.slot_size;
    ASSERT_EQ(SOFT_SLOT_SIZE(1024), size);
    for (unsigned k = 0; k < sizes.size(); ++k) {
        const uint64_t m   = 1 + k;
        const uint32_t len = sizes[k];
        std::vector<dcx_wc_t> wa, wb;

        {
            engine_held held(p.b.dev);
            dcx_soft_stats_t before = dev_stats(p.a);
            ASSERT_EQ(0, p.send(m, len));
            const bool light = dev_stats(p.a).light_posts != before.light_posts;
            EXPECT_EQ(len <= 1024, light) << len << " B";
            if (light && (len > SOFT_LIGHT_LINE2)) {
                const soft_slot_t *ss = p.newest_slot();
                EXPECT_TRUE(ss->pkt.flags & SOFT_PKT_FAR) << len << " B";
                EXPECT_TRUE(matches((const uint8_t *)ss +
                                        soft_light_far_off(size, len),
                                    m, len))
                    << len << " B";
            }
        }

        ASSERT_TRUE(p.take(wa, 1, wb, 1)) << "message " << m;
        EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
        ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status) << len << " B";
        EXPECT_EQ(len, wb[0].byte_len);
        EXPECT_TRUE(p.holds(wb[0].wr_id, m, len)) << "message " << m;
    }
}

/* Without the consumer's unmap reports our sg lists are copied by the
 * kernel (fault-safe): the general path takes every such SEND. */
TEST_F(soft, light_sge_needs_reported_unmaps)
{
    sge_pair p;
    std::vector<dcx_wc_t> wa, wb;

    ASSERT_EQ(0, p.open(fabric, false));
    ASSERT_EQ(0, p.post(0, 4));
    for (unsigned m = 0; m < 4; ++m) {
        ASSERT_EQ(0, p.send(m, 4096));
    }
    ASSERT_TRUE(p.take(wa, 4, wb, 4));
    for (unsigned m = 0; m < 4; ++m) {
        EXPECT_EQ(DCX_WC_SUCCESS, wa[m].status);
        ASSERT_EQ(DCX_WC_SUCCESS, wb[m].status);
        EXPECT_TRUE(p.holds(wb[m].wr_id, wb[m].wr_id, 4096));
    }
    EXPECT_EQ(0u, dev_stats(p.a).light_posts);
}

/* A light SEND refused for want of a receive (RNR) is sent again after
 * the RNR timer, its bytes gathered from the sge again: they arrive
 * intact once a receive is posted, and the WR completes successfully. */
TEST_F(soft, light_sge_rnr_resends_from_the_sge_bad_flow)
{
    sge_pair p;
    std::vector<dcx_wc_t> wa, wb;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(1);

    dcx_soft_stats_t before;
    /* b serves it with no receive: RNR, a waits for its timer */
    p.send_into_rnr(1, before);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(0, p.post(1, 1));
    ASSERT_TRUE(p.take(wa, 1, wb, 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wa[0].status);
    EXPECT_EQ(1u, wa[0].wr_id);
    ASSERT_EQ(DCX_WC_SUCCESS, wb[0].status);
    EXPECT_EQ(4096u, wb[0].byte_len);
    EXPECT_TRUE(p.holds(1, 1, 4096));
}

/* A key that names nothing, or an sge past its region's end: the light
 * post leaves the WR to the general path, which fails it with a local
 * protection error; nothing reaches the target. */
TEST_F(soft, light_sge_bad_key_bad_flow)
{
    sge_pair p;
    dcx_wc_t wc;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(4);
    for (int past_end = 0; past_end <= 1; ++past_end) {
        std::vector<dcx_wc_t> wa, wb;
        dcx_soft_stats_t before = dev_stats(p.a);

        /* message 7 sits in abuf's last slot: 4096 bytes from 16 bytes
         * before its end reach past the region */
        ASSERT_EQ(0, past_end ? p.send(7, 4096, 0, SLOT - 16) :
                                p.send(1, 4096, p.amr->lkey ^ 0x5500));
        ASSERT_TRUE(p.take(wa, 1, wb, 0));
        EXPECT_EQ(DCX_WC_LOC_PROT_ERR, wa[0].status) << past_end;
        EXPECT_EQ(past_end ? 7u : 1u, wa[0].wr_id);
        EXPECT_EQ(before.light_posts, dev_stats(p.a).light_posts);
        EXPECT_EQ(0, dcx_cq_poll(p.b.cq, 1, &wc));
        /* the DCI went to ERR: back to RTS for the next one */
        ASSERT_EQ(0, dcx_qp_recover(p.a.dci));
    }
}

/* The region under a light SEND's sge is deregistered while the SEND
 * waits out an RNR: it completes with a local protection error and
 * sends nothing more, as a WQE of the general path does. */
TEST_F(soft, light_sge_key_deregistered_outstanding_bad_flow)
{
    sge_pair p;
    std::vector<dcx_wc_t> wa, wb;
    dcx_wc_t wc;

    ASSERT_EQ(0, p.open(fabric));
    p.introduce(1);

    dcx_soft_stats_t before;
    p.send_into_rnr(1, before);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(0, dcx_mr_dereg(p.amr));
    p.a.mrs.erase(std::remove(p.a.mrs.begin(), p.a.mrs.end(), p.amr),
                  p.a.mrs.end());
    p.amr = nullptr;
    ASSERT_EQ(0, p.post(1, 1));
    ASSERT_TRUE(p.take(wa, 1, wb, 0));
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, wa[0].status);
    EXPECT_EQ(1u, wa[0].wr_id);
    /* nothing arrives for the receive posted after */
    double end = now_s() + 0.2;
    while (now_s() < end) {
        ASSERT_EQ(0, dcx_cq_poll(p.b.cq, 1, &wc));
    }
}
