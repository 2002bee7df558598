/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tag-matching fixture of the soft device tests (test_soft_tm.cc,
 * test_soft_tm_rndv.cc, test_soft_tm_inplace.cc): a TM SRQ receiver and a sender in the test
 * process, their memory layout, and the helpers that post, match and poll.
 */
#ifndef SOFT_TM_FIXTURE_H_
#define SOFT_TM_FIXTURE_H_

#include "soft_fixture.h"

#include <deque>
#include <endian.h>
#include <sys/wait.h>

using namespace soft_test;

namespace soft_tm_test {

const size_t MEM_SIZE    = 4u << 20;
const size_t ENTRY_OFF   = 0;        /* tagged receive buffers */
const size_t SEND_OFF    = 1u << 20; /* messages being sent */
const size_t RNDV_OFF    = 2u << 20; /* rendezvous source data */
const size_t SRQ_OFF     = 3u << 20; /* unexpected-message buffers */
const uint32_t SRQ_SLOT  = 16384;
const uint32_t SRQ_SLOTS = 64;
const uint64_t SRQ_WRID  = 1ull << 40; /* SRQ wr_id = SRQ_WRID + slot */
const uint64_t KEY       = 0x7a11u;

inline void fill(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; ++i) {
        p[i] = (uint8_t)(i * 29 + seed);
    }
}

struct tm_node {
    node n;
    dcx_mr_t *mr             = nullptr;
    std::vector<uint8_t> mem = std::vector<uint8_t>(MEM_SIZE);
    std::deque<dcx_wc_t> got;  /* completions other than our sends */
    std::deque<dcx_wc_t> sent; /* our send completions */
    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t addr_len = sizeof(addr);

    uint8_t *at(size_t off) { return mem.data() + off; }
    uint64_t va(size_t off) { return (uint64_t)(uintptr_t)at(off); }
    uint8_t *srq_buf(uint64_t wr_id)
    {
        return at(SRQ_OFF + (size_t)(wr_id - SRQ_WRID) * SRQ_SLOT);
    }
    int post_srq(uint32_t slot)
    {
        dcx_sge_t s = {va(SRQ_OFF + (size_t)slot * SRQ_SLOT), SRQ_SLOT,
                       mr->lkey};
        return dcx_srq_post_recv(n.srq, SRQ_WRID + slot, &s, 1);
    }
    /* gives an SRQ buffer back once its completion was checked */
    void repost(const dcx_wc_t &wc)
    {
        ASSERT_EQ(0, post_srq((uint32_t)(wc.wr_id - SRQ_WRID)));
    }
    void poll()
    {
        dcx_wc_t wc[16];
        if (n.cq == nullptr) {
            return;
        }
        int r = dcx_cq_poll(n.cq, 16, wc);
        for (int i = 0; i < r; ++i) {
            if (wc[i].opcode & DCX_WC_RECV_BIT) {
                got.push_back(wc[i]);
            } else {
                sent.push_back(wc[i]);
            }
        }
    }
};

} // namespace soft_tm_test

using namespace soft_tm_test;

class soft_tm : public soft {
protected:
    /* opens a node with a DCT on a TM SRQ (or a basic one), a DCI, and
     * SRQ_SLOTS unexpected buffers */
    void open_node(tm_node &t, bool tm = true, uint32_t tags = 63,
                   uint32_t ops = 256, const dcx_soft_limits_t *l = nullptr)
    {
        dcx_soft_limits_t lim = (l != nullptr) ? *l : default_limits();
        ASSERT_EQ(0, t.n.open(fabric.c_str(), &lim));
        ASSERT_EQ(0, t.n.make_cq(8192));
        ASSERT_EQ(0, t.n.reg(t.mem.data(), t.mem.size(),
                             DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_READ |
                                 DCX_ACCESS_REMOTE_WRITE,
                             &t.mr));
        dcx_srq_attr_t sa;
        memset(&sa, 0, sizeof(sa));
        sa.type        = tm ? DCX_SRQ_TM : DCX_SRQ_BASIC;
        sa.max_wr      = SRQ_SLOTS;
        sa.max_sge     = 1;
        sa.cq          = t.n.cq;
        sa.tm_max_tags = tm ? tags : 0;
        sa.tm_max_ops  = tm ? ops : 0;
        sa.flags       = srq_flags;
        ASSERT_EQ(0, dcx_srq_create(t.n.pd, &sa, &t.n.srq));
        dcx_qp_attr_t qa;
        memset(&qa, 0, sizeof(qa));
        qa.type    = DCX_QPT_DCT;
        qa.recv_cq = t.n.cq;
        qa.srq     = t.n.srq;
        qa.dc_key  = KEY;
        qa.access  = DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_WRITE;
        ASSERT_EQ(0, dcx_qp_create(t.n.pd, &qa, &t.n.dct));
        ASSERT_EQ(0, t.n.make_dci());
        ASSERT_EQ(0, dcx_dev_port_addr(t.n.dev, t.addr, &t.addr_len));
        for (uint32_t i = 0; i < SRQ_SLOTS; ++i) {
            ASSERT_EQ(0, t.post_srq(i));
        }
    }

    /* rx receives, tx sends (and receives FINs) */
    void open_pair(uint32_t tags = 63, uint32_t ops = 256,
                   const dcx_soft_limits_t *l = nullptr, bool tx_tm = true)
    {
        open_node(rx, true, tags, ops, l);
        open_node(tx, tx_tm, tags, ops, l);
        ASSERT_EQ(0, tx.n.connect(rx.addr, rx.addr_len));
        ASSERT_EQ(0, rx.n.connect(tx.addr, tx.addr_len));
    }

    void poll_both()
    {
        rx.poll();
        tx.poll();
    }

    bool wait(tm_node &t, size_t n, double timeout = 20.0)
    {
        double end = now_s() + timeout;
        while (t.got.size() < n) {
            if (now_s() > end) {
                return false;
            }
            poll_both();
        }
        return true;
    }

    dcx_wc_t pop(tm_node &t)
    {
        dcx_wc_t wc;
        memset(&wc, 0xee, sizeof(wc));
        EXPECT_TRUE(wait(t, 1));
        if (!t.got.empty()) {
            wc = t.got.front();
            t.got.pop_front();
        }
        return wc;
    }

    /* polls both sides for a while: nothing more may arrive at t */
    void expect_quiet(tm_node &t, double secs = 0.05)
    {
        double end = now_s() + secs;
        while (now_s() < end) {
            poll_both();
        }
        EXPECT_EQ(0u, t.got.size());
    }

    int add(tm_node &t, uint64_t tag, uint64_t mask, uint64_t wr_id, size_t off,
            uint32_t len, uint8_t flags = DCX_TM_OPF_SIGNALED, uint16_t cnt = 0,
            uint32_t *handle = nullptr, uint32_t num_sge = 1)
    {
        dcx_tm_op_t op;
        memset(&op, 0, sizeof(op));
        op.wr_id          = 0xadd00000ull + wr_id;
        op.opcode         = DCX_TM_OP_ADD;
        op.flags          = flags;
        op.unexpected_cnt = cnt;
        op.num_sge        = num_sge;
        op.recv_wr_id     = wr_id;
        op.tag            = tag;
        op.mask           = mask;
        op.sge.addr       = t.va(off);
        op.sge.length     = len;
        op.sge.lkey       = t.mr->lkey;
        op.handle         = 0xdead;
        int ret           = dcx_srq_tm_post(t.n.srq, &op);
        if (handle != nullptr) {
            *handle = op.handle;
        }
        return ret;
    }

    /* ADD, signalled, and checks its completion */
    uint32_t add_ok(tm_node &t, uint64_t tag, uint64_t mask, uint64_t wr_id,
                    size_t off, uint32_t len, uint16_t *sync_req = nullptr)
    {
        uint32_t h = 0;
        EXPECT_EQ(0, add(t, tag, mask, wr_id, off, len, DCX_TM_OPF_SIGNALED, 0,
                         &h));
        dcx_wc_t wc = pop(t);
        EXPECT_EQ(DCX_WC_TM_ADD, wc.opcode);
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        EXPECT_EQ(0xadd00000ull + wr_id, wc.wr_id);
        if (sync_req != nullptr) {
            *sync_req = wc.flags & DCX_WC_FLAG_TM_SYNC_REQ;
        } else {
            EXPECT_EQ(0, wc.flags & DCX_WC_FLAG_TM_SYNC_REQ);
        }
        return h;
    }

    int op(tm_node &t, uint8_t opcode, uint8_t flags, uint32_t handle,
           uint64_t wr_id, uint16_t cnt = 0)
    {
        dcx_tm_op_t o;
        memset(&o, 0, sizeof(o));
        o.wr_id          = wr_id;
        o.opcode         = opcode;
        o.flags          = flags;
        o.handle         = handle;
        o.unexpected_cnt = cnt;
        return dcx_srq_tm_post(t.n.srq, &o);
    }

    /* builds TMH | payload in tx's memory and sends it to rx's DCT;
     * returns the sender's completion */
    dcx_wc_t send_msg(uint8_t tmh_op, uint64_t tag, uint32_t app_ctx,
                      uint32_t payload, uint8_t seed, bool with_imm = false,
                      uint32_t dctn = 0, uint64_t key = KEY)
    {
        uint8_t *m = tx.at(SEND_OFF);
        dcx_tmh_pack(m, tmh_op, app_ctx, tag);
        fill(m + DCX_TM_TMH_LEN, payload, seed);
        return post_send(DCX_TM_TMH_LEN + payload, with_imm, dctn, key);
    }

    /* a rendezvous request for len bytes at tx's RNDV_OFF */
    dcx_wc_t send_rndv(uint64_t tag, uint32_t app_ctx, uint32_t len,
                       uint8_t seed, uint32_t rkey_xor = 0,
                       uint32_t ravh_dctn_xor = 0, uint64_t ravh_key_xor = 0,
                       uint32_t meta = 16, size_t src_off = RNDV_OFF,
                       uint32_t dctn = 0, uint64_t key = KEY)
    {
        uint8_t *m = tx.at(SEND_OFF);
        fill(tx.at(src_off), len, seed);
        dcx_tmh_pack(m, DCX_TMH_RNDV, app_ctx, tag);
        dcx_rvh_pack(m + 16, tx.va(src_off), tx.mr->rkey ^ rkey_xor, len);
        dcx_ravh_pack(m + 32, tx.n.dct->qp_num ^ ravh_dctn_xor,
                      KEY ^ ravh_key_xor);
        memset(m + 48, 0x5a, meta);
        return post_send(DCX_TM_RNDV_LEN + meta, false, dctn, key);
    }

    /* the FIN a rendezvous ends with, at the sender */
    void expect_fin(uint64_t tag, uint32_t app_ctx, bool tm_sender = true)
    {
        dcx_wc_t wc = pop(tx);
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        EXPECT_EQ(tm_sender ? DCX_WC_TM_NO_TAG : DCX_WC_RECV, wc.opcode);
        EXPECT_EQ((uint32_t)DCX_TM_TMH_LEN, wc.byte_len);
        uint8_t opc;
        uint32_t ctx;
        uint64_t t;
        dcx_tmh_unpack(tx.srq_buf(wc.wr_id), &opc, &ctx, &t);
        EXPECT_EQ(DCX_TMH_FIN, opc);
        EXPECT_EQ(app_ctx, ctx);
        EXPECT_EQ(tag, t);
        tx.repost(wc);
    }

    dcx_soft_limits_t fast_limits()
    {
        dcx_soft_limits_t l = default_limits();
        l.ack_timeout_us    = 20000;
        l.retry_cnt         = 2;
        return l;
    }

    /* Posts a signalled SEND of len bytes at tx's off to rx's DCT (or DCT
     * dctn with key); polls nothing.  dcx_qp_post_send's result. */
    int post_to_rx(uint64_t wr_id, size_t off, uint32_t len,
                   bool with_imm = false, uint32_t dctn = 0, uint64_t key = KEY)
    {
        dcx_sge_t s = {tx.va(off), len, tx.mr->lkey};
        dcx_send_wr_t wr;
        memset(&wr, 0, sizeof(wr));
        wr.wr_id       = wr_id;
        wr.opcode      = with_imm ? DCX_WR_SEND_IMM : DCX_WR_SEND;
        wr.flags       = DCX_SEND_SIGNALED;
        wr.imm         = 0x1234beef;
        wr.num_sge     = 1;
        wr.sg_list     = &s;
        wr.dest.ah     = tx.n.ah;
        wr.dest.dctn   = dctn ? dctn : rx.n.dct->qp_num;
        wr.dest.dc_key = key;
        return dcx_qp_post_send(tx.n.dci, &wr);
    }

    dcx_wc_t post_send(uint32_t len, bool with_imm = false, uint32_t dctn = 0,
                       uint64_t key = KEY)
    {
        dcx_wc_t wc;
        memset(&wc, 0xee, sizeof(wc));
        EXPECT_EQ(0, post_to_rx(++send_id, SEND_OFF, len, with_imm, dctn, key));
        double end = now_s() + 20.0;
        while (tx.sent.empty() && (now_s() < end)) {
            if (rx_unpolled) {
                /* the receiving device runs, its CQ is not polled */
                dcx_dev_progress(rx.n.dev);
                tx.poll();
            } else {
                poll_both();
            }
        }
        EXPECT_FALSE(tx.sent.empty());
        if (!tx.sent.empty()) {
            wc = tx.sent.front();
            tx.sent.pop_front();
            EXPECT_EQ(send_id, wc.wr_id);
        }
        return wc;
    }

    void expect_payload(size_t off, uint32_t len, uint8_t seed)
    {
        std::vector<uint8_t> want(len);
        fill(want.data(), len, seed);
        EXPECT_EQ(0, memcmp(rx.at(off), want.data(), len));
    }

    dcx_soft_tm_stats_t tm_stats(tm_node &t)
    {
        dcx_soft_tm_stats_t s;
        memset(&s, 0, sizeof(s));
        EXPECT_EQ(0, dcx_soft_tm_stats(t.n.srq, &s));
        return s;
    }

    tm_node rx, tx;
    uint64_t send_id   = 0;
    bool rx_unpolled   = false;
    uint32_t srq_flags = 0; /* of the SRQs open_node creates */
};

#endif
