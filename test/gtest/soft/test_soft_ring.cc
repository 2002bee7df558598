/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ring slots (soft.h, "Ring slots"): the consumer writes no line of a slot
 * it consumes, clears it later and only then gives it back to producers;
 * producers write every header field of their packet; a claim is marked
 * for the claimer's lap, and a dead claimer's slot is still skipped.
 */
#include "soft_fixture.h"

extern "C" {
#include "soft/soft.h"
}

#include <sys/wait.h>

using namespace soft_test;

namespace {

/* A port header with one ring of SOFT_RING_SLOTS slots, as soft_fabric.c
 * lays it out, in private memory: the ring functions alone. */
struct fake_ring {
    std::vector<uint64_t> mem;
    soft_port_hdr_t *hdr;
    soft_ring_t *ring;

    fake_ring()
    {
        const uint32_t payload   = 64;
        const uint32_t slot_size = SOFT_SLOT_SIZE(payload);
        mem.assign((SOFT_SEG_HDR_SIZE + (size_t)SOFT_RING_SLOTS * slot_size) /
                       8,
                   0);
        hdr             = (soft_port_hdr_t *)mem.data();
        ring            = &hdr->req;
        ring->nslots    = SOFT_RING_SLOTS;
        ring->payload   = payload;
        ring->slot_size = slot_size;
        ring->offset    = SOFT_SEG_HDR_SIZE;
        for (uint32_t i = 0; i < SOFT_RING_SLOTS; ++i) {
            slot(i)->seq = i;
        }
    }

    soft_slot_t *slot(uint64_t pos)
    {
        return (soft_slot_t *)((char *)hdr + ring->offset +
                               (pos % ring->nslots) * ring->slot_size);
    }

    /* claims and publishes a full packet whose header bytes are 'fill' */
    bool push(uint64_t *freed_seen, uint8_t fill, uint32_t owner = 0)
    {
        void *payload;
        uint64_t pos;
        soft_pkt_t *pkt = soft_ring_reserve_c(hdr, ring,
                                              owner ? owner : getpid(),
                                              freed_seen, &payload, &pos);
        if (pkt == nullptr) {
            return false;
        }
        memset(pkt, fill, sizeof(*pkt));
        pkt->flags = SOFT_PKT_FIRST | SOFT_PKT_LAST;
        soft_ring_publish(hdr, ring, pos);
        return true;
    }
};

uint8_t byte_of(unsigned m, size_t i)
{
    return (uint8_t)(m * 131 + i * 7 + 1);
}

pid_t dead_pid()
{
    pid_t pid = fork();
    if (pid == 0) {
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    return pid;
}

int claimer_gone(void *arg)
{
    return *static_cast<int *>(arg);
}

} // namespace

/* A fake ring and the consumer's stall state, looked at from t0 on */
class soft_ring_slot : public ::testing::Test {
protected:
    static const uint64_t t0 = 1000000000ull;
    fake_ring r;
    soft_stall_t st;
    void *payload = nullptr;
    uint64_t pos = 0, seen = 0;

    soft_ring_slot() { memset(&st, 0, sizeof(st)); }

    /* the consumer's look at time t; with dead, whether a peer died is
     * *dead */
    int unstick(uint64_t t, int *dead = nullptr)
    {
        return soft_ring_unstick(r.hdr, r.ring, &st, t, "t",
                                 (dead != nullptr) ? claimer_gone : nullptr,
                                 dead);
    }

    /* a claim by a CAS on the tail only: no mark, no owner */
    void claim_unmarked()
    {
        uint64_t tail = r.ring->tail;
        ASSERT_TRUE(__atomic_compare_exchange_n(&r.ring->tail, &tail, tail + 1,
                                                0, __ATOMIC_RELAXED,
                                                __ATOMIC_RELAXED));
    }
};

/* Consuming a packet writes nothing in its slot (no line the producer
 * holds): only the consumer's head moves; the clear comes later and frees
 * the slot then. */
TEST_F(soft_ring_slot, pop_writes_no_slot_line)
{
    ASSERT_TRUE(r.push(&seen, 0x5a));
    std::vector<uint8_t> before(r.ring->slot_size);
    memcpy(before.data(), r.slot(0), before.size());

    ASSERT_NE(nullptr, soft_ring_peek(r.hdr, r.ring, &payload));
    soft_ring_pop(r.hdr, r.ring);
    EXPECT_EQ(1u, r.ring->head);
    EXPECT_EQ(0u, r.ring->freed) << "freed before its clear";
    EXPECT_EQ(0, memcmp(before.data(), r.slot(0), before.size()))
        << "the pop wrote in the consumed slot";

    EXPECT_EQ(1u, soft_ring_clear(r.hdr, r.ring, r.ring->head));
    EXPECT_EQ(1u, r.ring->freed);
    const uint8_t *pkt = (const uint8_t *)&r.slot(0)->pkt;
    size_t dirty       = 0;
    for (size_t b = 0; b < sizeof(soft_pkt_t); ++b) {
        dirty += (pkt[b] != 0);
    }
    EXPECT_EQ(0u, dirty) << "bytes of the packet left after its clear";
    EXPECT_EQ(0u, soft_ring_clear(r.hdr, r.ring, r.ring->head));
}

/* Slots consumed but not cleared yet are not given to producers; once
 * cleared, a producer fills the whole ring again, reading 'freed' only
 * when its copy says the ring is full. */
TEST_F(soft_ring_slot, deferred_free_still_fills_whole_ring)
{
    for (uint32_t i = 0; i < SOFT_RING_SLOTS; ++i) {
        ASSERT_TRUE(r.push(&seen, (uint8_t)i)) << "slot " << i;
    }
    EXPECT_FALSE(r.push(&seen, 1)) << "a full ring took one more";

    for (uint32_t i = 0; i < SOFT_RING_SLOTS; ++i) {
        ASSERT_NE(nullptr, soft_ring_peek(r.hdr, r.ring, &payload));
        soft_ring_pop(r.hdr, r.ring);
    }
    EXPECT_EQ(nullptr, soft_ring_peek(r.hdr, r.ring, &payload));
    EXPECT_FALSE(r.push(&seen, 1)) << "a consumed slot reused before its "
                                      "clear";
    EXPECT_EQ(SOFT_RING_SLOTS, soft_ring_clear(r.hdr, r.ring, r.ring->head));

    for (uint32_t i = 0; i < SOFT_RING_SLOTS; ++i) {
        ASSERT_TRUE(r.push(&seen, 0x77)) << "slot " << i << " of lap 2";
        if (i == 0) {
            EXPECT_EQ(SOFT_RING_SLOTS, seen) << "freed read again";
        }
    }
    EXPECT_EQ(SOFT_RING_SLOTS, seen) << "freed read while there was room";
    EXPECT_FALSE(r.push(&seen, 1));
    /* the second lap is there to be consumed, in order */
    for (uint32_t i = 0; i < SOFT_RING_SLOTS; ++i) {
        soft_pkt_t *pkt = soft_ring_peek(r.hdr, r.ring, &payload);
        ASSERT_NE(nullptr, pkt) << "slot " << i << " of lap 2";
        EXPECT_EQ(0x77, pkt->op);
        soft_ring_pop(r.hdr, r.ring);
    }
}

/* A claim is marked for its lap: a slot claimed by a process that died
 * after its mark is skipped after 1 ms; one claimed by a process that died
 * before (only the tail shows it) waits 2 s, as its claimer is unknown.
 * The consumer reads the tail only at the claim's watch, not per look. */
TEST_F(soft_ring_slot, dead_claimer_skipped_marked_or_not_bad_flow)
{
    log_counter logs; /* the skips are warnings */

    /* claimed and marked by a dead process, never published */
    const pid_t dead = dead_pid();
    ASSERT_NE(nullptr,
              soft_ring_reserve_c(r.hdr, r.ring, dead, &seen, &payload, &pos));
    EXPECT_EQ(SOFT_SEQ_CLAIMED(pos, dead), r.slot(pos)->seq);
    EXPECT_EQ(nullptr, soft_ring_peek(r.hdr, r.ring, &payload));
    EXPECT_EQ(0, unstick(t0));
    EXPECT_EQ(0, unstick(t0 + 500000));
    EXPECT_EQ(1, unstick(t0 + 1100000));
    EXPECT_EQ(1u, r.ring->head);

    /* claimed by a CAS on the tail only: no mark, no owner */
    claim_unmarked();
    uint64_t t1 = t0 + 2 * SOFT_RING_TAIL_NS;
    EXPECT_EQ(0, unstick(t1));
    EXPECT_NE(0u, st.since_ns) << "the tail did not show the claim";
    EXPECT_EQ(0, unstick(t1 + 1100000));
    EXPECT_EQ(0, unstick(t1 + 1500000000ull));
    EXPECT_EQ(1u, r.ring->head) << "an unknown claimer skipped early";
    EXPECT_EQ(1, unstick(t1 + 2100000000ull));
    EXPECT_EQ(2u, r.ring->head);
    EXPECT_EQ(2, logs.lines());

    /* empty now: nothing claimed, nothing skipped */
    EXPECT_EQ(0, unstick(t1 + 3000000000ull));
    EXPECT_EQ(2u, soft_ring_clear(r.hdr, r.ring, r.ring->head));
    EXPECT_TRUE(r.push(&seen, 3));
    EXPECT_NE(nullptr, soft_ring_peek(r.hdr, r.ring, &payload));
}

/* A claim without mark, when a process that may have made it is known to
 * have died: skipped after SOFT_RING_GONE_NS, not 2 s (the response ring of
 * a process whose peer was killed mid-traffic stayed blocked that long,
 * longer than its requests' retries: live endpoints failed); while no
 * process is known dead, the 2 s rule holds. */
TEST_F(soft_ring_slot, unmarked_claim_skipped_once_a_peer_died_bad_flow)
{
    log_counter logs; /* the skip is a warning */
    int dead = 0;

    claim_unmarked();
    EXPECT_EQ(0, unstick(t0, &dead));
    EXPECT_NE(0u, st.since_ns) << "the tail did not show the claim";
    /* nobody known dead: no skip before 2 s */
    EXPECT_EQ(0, unstick(t0 + 5 * SOFT_RING_GONE_NS, &dead));
    EXPECT_EQ(0u, r.ring->head);
    /* a peer died: skipped, but not before SOFT_RING_GONE_NS of stall */
    dead = 1;
    memset(&st, 0, sizeof(st));
    const uint64_t t1 = t0 + 10 * SOFT_RING_GONE_NS;
    EXPECT_EQ(0, unstick(t1, &dead));
    EXPECT_EQ(0, unstick(t1 + SOFT_RING_GONE_NS / 2, &dead));
    EXPECT_EQ(0u, r.ring->head) << "skipped before SOFT_RING_GONE_NS";
    EXPECT_EQ(1, unstick(t1 + SOFT_RING_GONE_NS + 1000000, &dead));
    EXPECT_EQ(1u, r.ring->head);
    EXPECT_EQ(1, logs.lines());
}

/* A live producer descheduled between its claim and its mark (a starved
 * VM can hold a runnable thread for tens of seconds) finds its claim
 * skipped when it resumes: the consumer took it for a dead claimer's
 * (after 2 s, or SOFT_RING_GONE_NS once a peer died), cleared and freed
 * the slot, and another producer's packet of the next lap may be there
 * by then.  The late mark writes nothing in the slot; its producer claims
 * again and its packet comes after the others, none lost. */
TEST_F(soft_ring_slot, late_mark_after_skip_bad_flow)
{
    log_counter logs; /* the skip is a warning */
    const uint64_t n = r.ring->nslots;
    uint64_t late_pos, late_seen = 0;

    /* the late producer's claim: the tail moved, no mark yet */
    ASSERT_EQ(1, soft_ring_claim_c(r.ring, &late_seen, &late_pos));
    ASSERT_EQ(0u, late_pos);
    EXPECT_EQ(0, unstick(t0));
    EXPECT_EQ(1, unstick(t0 + 2100000000ull));
    ASSERT_EQ(1u, r.ring->head);
    ASSERT_EQ(1u, soft_ring_clear(r.hdr, r.ring, r.ring->head));

    /* another producer fills the ring: its last packet, of the next lap,
     * lands in the late claim's slot */
    for (uint64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(r.push(&seen, (uint8_t)(0x40 + (i & 0x3f))));
    }
    ASSERT_EQ(n + 1, r.ring->tail);
    ASSERT_EQ(r.slot(late_pos), r.slot(n));
    std::vector<uint8_t> before(r.ring->slot_size);
    memcpy(before.data(), r.slot(n), before.size());

    /* the late producer resumes */
    EXPECT_EQ(nullptr, soft_ring_mark_c(r.hdr, r.ring, (uint32_t)getpid(),
                                        late_pos, &payload))
        << "a skipped claim was marked";
    EXPECT_EQ(0, memcmp(before.data(), r.slot(n), before.size()))
        << "the late mark wrote into the next lap's packet";

    /* every packet of the other producer is there, in order */
    for (uint64_t i = 0; i < n; ++i) {
        soft_pkt_t *pkt = soft_ring_peek(r.hdr, r.ring, &payload);
        ASSERT_NE(nullptr, pkt) << "position " << (i + 1);
        EXPECT_EQ((uint8_t)(0x40 + (i & 0x3f)), pkt->op);
        soft_ring_pop(r.hdr, r.ring);
    }
    /* the late producer claims again; its packet comes next */
    EXPECT_EQ(n, soft_ring_clear(r.hdr, r.ring, r.ring->head));
    soft_pkt_t *pkt = soft_ring_reserve_c(r.hdr, r.ring, (uint32_t)getpid(),
                                          &late_seen, &payload, &pos);
    ASSERT_NE(nullptr, pkt);
    EXPECT_EQ(n + 1, pos);
    memset(pkt, 0x3c, sizeof(*pkt));
    pkt->flags = SOFT_PKT_FIRST | SOFT_PKT_LAST;
    soft_ring_publish_quiet(r.hdr, r.ring, pos);
    pkt = soft_ring_peek(r.hdr, r.ring, &payload);
    ASSERT_NE(nullptr, pkt);
    EXPECT_EQ(0x3c, pkt->op);
    EXPECT_EQ(1, logs.lines());
}

/* A claim marked by a live producer is never skipped, however long it
 * stays unpublished and whoever else died: its claimer will write it. */
TEST_F(soft_ring_slot, live_marked_claim_never_skipped)
{
    int dead = 1;

    ASSERT_NE(nullptr, soft_ring_reserve_c(r.hdr, r.ring, (uint32_t)getpid(),
                                           &seen, &payload, &pos));
    for (uint64_t t = t0; t < t0 + 10000000000ull; t += 500000000ull) {
        EXPECT_EQ(0, unstick(t, &dead));
    }
    EXPECT_EQ(0u, r.ring->head);
}

/* A claim watched without mark (its claimer unknown) and marked before
 * the consumer's skip is kept once the mark names a live claimer, however
 * long it stays unpublished: the skip and the mark cannot both take it. */
TEST_F(soft_ring_slot, mark_before_skip_keeps_claim)
{
    int dead = 1;

    ASSERT_EQ(1, soft_ring_claim_c(r.ring, &seen, &pos));
    EXPECT_EQ(0, unstick(t0, &dead));
    EXPECT_NE(0u, st.since_ns) << "the tail did not show the claim";
    soft_pkt_t *pkt = soft_ring_mark_c(r.hdr, r.ring, (uint32_t)getpid(), pos,
                                       &payload);
    ASSERT_NE(nullptr, pkt);
    EXPECT_EQ(SOFT_SEQ_CLAIMED(pos, getpid()), r.slot(pos)->seq);
    EXPECT_EQ((uint32_t)getpid(), pkt->src_pid);
    EXPECT_EQ(0, unstick(t0 + 3000000000ull, &dead));
    EXPECT_EQ(0u, r.ring->head);
    memset(pkt, 0x21, sizeof(*pkt));
    pkt->flags = SOFT_PKT_FIRST | SOFT_PKT_LAST;
    soft_ring_publish_quiet(r.hdr, r.ring, pos);
    pkt = soft_ring_peek(r.hdr, r.ring, &payload);
    ASSERT_NE(nullptr, pkt);
    EXPECT_EQ(0x21, pkt->op);
}

/* Light packets do not rely on a zeroed header: into free request slots
 * full of stale bytes (as a slot's last packet may leave them), light
 * SENDs with and without immediate are delivered as posted (a stale
 * deliver time would hold them, a stale immediate would be reported). */
TEST_F(soft, light_packets_write_every_header_field)
{
    const uint64_t key = 0x5107f1e1dull;
    node n;
    std::vector<uint8_t> buf(1u << 16, 0);
    dcx_mr_t *mr;
    ASSERT_EQ(0, open_loopback(n, fabric, key, buf, &mr));
    soft_dev_t *dev      = (soft_dev_t *)n.dev;
    soft_port_hdr_t *hdr = dev->hdr;

    for (unsigned m = 0; m < 2 * SOFT_RING_SLOTS; ++m) {
        /* the free slots (from the tail up to a lap past 'freed') get
         * stale bytes */
        soft_lock(&dev->lock);
        soft_ring_clear(hdr, &hdr->req, hdr->req.head);
        for (uint64_t p = hdr->req.tail; p < hdr->req.freed + hdr->req.nslots;
             ++p) {
            soft_slot_t *s = soft_ring_slot(hdr, &hdr->req, p);
            memset(&s->pkt, 0xff, sizeof(s->pkt));
        }
        soft_unlock(&dev->lock);

        for (uint32_t i = 0; i < 8; ++i) {
            buf[i] = byte_of(m, i);
        }
        dcx_sge_t s, r;
        s.addr   = (uint64_t)(uintptr_t)buf.data();
        s.length = 8;
        s.lkey   = mr->lkey;
        r.addr   = (uint64_t)(uintptr_t)buf.data() + 4096;
        r.length = 4096;
        r.lkey   = mr->lkey;
        ASSERT_EQ(0, dcx_srq_post_recv(n.srq, m, &r, 1));
        dcx_send_wr_t w = n.loop_wr((m % 2) ? DCX_WR_SEND_IMM : DCX_WR_SEND,
                                    key, &s, 0, 0);
        w.imm = 0x1000 + m;
        w.flags |= DCX_SEND_INLINE;
        ASSERT_EQ(0, dcx_qp_post_send(n.dci, &w));
        dcx_wc_t wc[2];
        ASSERT_EQ(2, n.poll(wc, 2, 20.0)) << "message " << m;
        for (int i = 0; i < 2; ++i) {
            EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status) << "message " << m;
            if (wc[i].opcode != DCX_WC_RECV) {
                continue;
            }
            EXPECT_EQ(8u, wc[i].byte_len);
            EXPECT_EQ(0, memcmp(buf.data(), buf.data() + 4096, 8))
                << "message " << m;
            if (m % 2) {
                EXPECT_TRUE(wc[i].flags & DCX_WC_FLAG_WITH_IMM);
                EXPECT_EQ(0x1000u + m, wc[i].imm);
            } else {
                EXPECT_FALSE(wc[i].flags & DCX_WC_FLAG_WITH_IMM);
            }
        }
    }
    EXPECT_EQ(2 * SOFT_RING_SLOTS, dev_stats(n).table_completions)
        << "not on the light path";
}

/* b consumed a's packets but has not cleared their slots yet (a ring pass
 * clears nothing); c's packets fill the rest of b's ring.  a's next SEND
 * then finds the ring full, with none of its own packets left in it: a
 * live target that has not got to it yet, so a's ack timeouts are not
 * losses (with one retry allowed, they used to fail the SEND with
 * RETRY_EXC_ERR).  Once b runs, the SEND goes through. */
TEST_F(soft, ring_full_of_unfreed_slots_is_a_busy_target_bad_flow)
{
    const uint64_t KEY = 0xb5;
    const unsigned own = 5;
    node a, b, c;
    std::vector<uint8_t> buf(256 * 64);
    std::vector<dcx_wc_t> wc(256);
    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t len = sizeof(addr);
    dcx_mr_t *mr;

    ASSERT_EQ(0, a.open(fabric.c_str()));
    ASSERT_EQ(0, b.open(fabric.c_str()));
    ASSERT_EQ(0, c.open(fabric.c_str()));
    /* timeout 15 (134 ms) and one retry */
    ASSERT_EQ(0, a.make_dci(128, 256, 1, 0));
    ASSERT_EQ(0, c.make_dci(SOFT_RING_SLOTS));
    ASSERT_EQ(0, b.make_target(KEY, 0, 256));
    ASSERT_EQ(0, b.reg(buf.data(), buf.size(), DCX_ACCESS_LOCAL_WRITE, &mr));
    std::vector<dcx_recv_t> recvs = recv_list(buf, mr, 0, 256);
    unsigned posted;
    ASSERT_EQ(0, dcx_srq_post_recv_list(b.srq, recvs.data(), recvs.size(),
                                        RECV_SLOT, &posted));
    ASSERT_EQ(0, dcx_dev_port_addr(b.dev, addr, &len));
    ASSERT_EQ(0, a.connect(addr, len));
    ASSERT_EQ(0, c.connect(addr, len));
    soft_helper_stop(soft_dev(a.dev));
    soft_helper_stop(soft_dev(b.dev));
    soft_helper_stop(soft_dev(c.dev));

    /* both sources known to b, their first slots cleared by whole passes */
    ASSERT_EQ(0,
              post_inline_value(a, a.dci, b.dct->qp_num, KEY, DCX_WR_SEND, 1));
    ASSERT_EQ(0,
              post_inline_value(c, c.dci, b.dct->qp_num, KEY, DCX_WR_SEND, 2));
    ASSERT_EQ(2, b.poll(wc.data(), 2));
    ASSERT_EQ(1, a.poll(wc.data(), 1));
    ASSERT_EQ(1, c.poll(wc.data(), 1));
    ASSERT_EQ(0, dcx_cq_poll(b.cq, 1, wc.data()));

    /* a's packets consumed by a ring pass: slots not given back yet */
    for (unsigned i = 0; i < own; ++i) {
        ASSERT_EQ(0, post_inline_value(a, a.dci, b.dct->qp_num, KEY,
                                       DCX_WR_SEND, 10 + i));
    }
    ASSERT_EQ((int)own, dcx_cq_poll(b.cq, 16, wc.data()));
    soft_ring_t *ring = &soft_dev(b.dev)->hdr->req;
    ASSERT_NE(ring->head, ring->freed) << "consumed slots were cleared";
    ASSERT_EQ((int)own, a.poll(wc.data(), own));

    /* c fills the ring as producers see it */
    unsigned room = SOFT_RING_SLOTS - (unsigned)(ring->head - ring->freed);
    for (unsigned i = 0; i < room; ++i) {
        ASSERT_EQ(0, post_inline_value(c, c.dci, b.dct->qp_num, KEY,
                                       DCX_WR_SEND, 100 + i));
    }
    ASSERT_EQ(ring->freed + SOFT_RING_SLOTS, ring->tail);

    /* a's SEND waits for room past its ack timeout and its retry */
    ASSERT_EQ(0,
              post_inline_value(a, a.dci, b.dct->qp_num, KEY, DCX_WR_SEND, 99));
    EXPECT_EQ(0, a.poll(wc.data(), 1, 0.8)) << "status " << (int)wc[0].status;

    /* b runs: c's SENDs arrive, then a's, which its next progress posts */
    ASSERT_EQ((int)room, b.poll(wc.data(), room));
    ASSERT_EQ(0, dcx_cq_poll(a.cq, 1, wc.data()));
    ASSERT_EQ(1, b.poll(wc.data(), 1));
    uint64_t v = 0;
    memcpy(&v, buf.data() + wc[0].wr_id * 64, sizeof(v));
    EXPECT_EQ(99u, v);
    ASSERT_EQ(1, a.poll(wc.data(), 1));
    EXPECT_EQ(DCX_WC_SUCCESS, wc[0].status);
    EXPECT_EQ(99u, wc[0].wr_id);
    ASSERT_EQ((int)room, c.poll(wc.data(), room));
    for (unsigned i = 0; i < room; ++i) {
        EXPECT_EQ(DCX_WC_SUCCESS, wc[i].status) << i;
    }
}

/* A consumer that only polls (no post of its own, no whole pass) still
 * clears the slots it consumed: once SOFT_CLEAR_POLLS polls found nothing
 * else to do, one takes the lock and clears them, so no DC key stays in
 * the ring of an application that stopped sending. */
TEST_F(soft, idle_polls_clear_consumed_slots)
{
    const uint64_t KEY = 0x1d1ec1ea5ull;
    const unsigned n   = 3;
    node a, b;
    std::vector<uint8_t> buf(64 * 64);
    std::vector<dcx_wc_t> wc(16);
    dcx_mr_t *mr;

    ASSERT_EQ(0, open_sender_target(a, b, fabric, KEY, 0, 64, buf, &mr));
    std::vector<dcx_recv_t> recvs = recv_list(buf, mr, 0, 64);
    unsigned posted;
    ASSERT_EQ(0, dcx_srq_post_recv_list(b.srq, recvs.data(), recvs.size(),
                                        RECV_SLOT, &posted));
    soft_helper_stop(soft_dev(a.dev));
    soft_helper_stop(soft_dev(b.dev));

    /* a known to b */
    ASSERT_EQ(0,
              post_inline_value(a, a.dci, b.dct->qp_num, KEY, DCX_WR_SEND, 1));
    ASSERT_EQ(1, b.poll(wc.data(), 1));
    ASSERT_EQ(1, a.poll(wc.data(), 1));
    ASSERT_EQ(0, dcx_cq_poll(b.cq, 1, wc.data()));

    /* consumed by a ring pass: not cleared yet, the DC keys still there */
    for (unsigned i = 0; i < n; ++i) {
        ASSERT_EQ(0, post_inline_value(a, a.dci, b.dct->qp_num, KEY,
                                       DCX_WR_SEND, 10 + i));
    }
    ASSERT_EQ((int)n, dcx_cq_poll(b.cq, wc.size(), wc.data()));
    ASSERT_EQ((int)n, a.poll(wc.data(), n));
    soft_port_hdr_t *hdr = soft_dev(b.dev)->hdr;
    soft_ring_t *ring    = &hdr->req;
    uint64_t head        = ring->head;
    uint64_t from        = ring->freed;
    ASSERT_GE(head - from, (uint64_t)n) << "consumed slots were cleared";
    for (uint64_t pos = head - n; pos != head; ++pos) {
        ASSERT_EQ(KEY, soft_ring_slot(hdr, ring, pos)->pkt.dc_key) << pos;
    }

    /* polls that find nothing clear them, within SOFT_CLEAR_POLLS or so */
    unsigned polls = 0;
    while ((ring->freed != head) && (polls < 4 * SOFT_CLEAR_POLLS)) {
        ASSERT_EQ(0, dcx_cq_poll(b.cq, 1, wc.data()));
        ++polls;
    }
    EXPECT_EQ(head, ring->freed) << "after " << polls << " idle polls";
    EXPECT_GE(polls, 1u);
    for (uint64_t pos = from; pos != head; ++pos) {
        EXPECT_EQ(0u, soft_ring_slot(hdr, ring, pos)->pkt.dc_key) << pos;
    }
}

/* Where a slot's payload is: after the whole header, after the light one,
 * or (SOFT_PKT_FAR) in the first line for a length the one-line form
 * takes (from dc_key's first byte for the keyless form's), else ending by
 * the slot's end, 7 bytes short of an 8-byte boundary; a far length no
 * slot of this size holds is read after the light header, never before it
 * or past the slot. */
TEST(soft_slot_payload, far_within_the_slot)
{
    const uint32_t payload = 16384;
    const uint32_t size    = SOFT_SLOT_SIZE(payload);
    std::vector<uint64_t> mem(size / 8);
    soft_slot_t *slot     = (soft_slot_t *)mem.data();
    uint8_t *base         = (uint8_t *)slot;
    const uint32_t lens[] = {0,
                             1,
                             SOFT_LINE_MAX,
                             SOFT_LINE_MAX + 1,
                             SOFT_LINE_WIDE_MAX,
                             SOFT_LINE_WIDE_MAX + 1,
                             SOFT_LIGHT_LINE2,
                             4096,
                             payload,
                             payload + 1,
                             size - 96,
                             size - 95,
                             size,
                             UINT32_MAX - 7,
                             UINT32_MAX};

    slot->pkt.flags = 0;
    slot->pkt.len   = 8;
    EXPECT_EQ(base + SOFT_SLOT_DATA, soft_slot_payload(slot, size));
    slot->pkt.flags = SOFT_PKT_LIGHT;
    EXPECT_EQ(base + SOFT_LIGHT_OFF, soft_slot_payload(slot, size));
    for (uint32_t len : lens) {
        slot->pkt.flags = SOFT_PKT_LIGHT | SOFT_PKT_FAR;
        slot->pkt.len   = len;
        uint8_t *p      = (uint8_t *)soft_slot_payload(slot, size);
        if (len <= SOFT_LINE_MAX) {
            EXPECT_EQ(base + SOFT_LINE_OFF, p) << len;
            EXPECT_EQ(7u, (uintptr_t)(p - base) % 8) << len;
            EXPECT_LE((uint64_t)(p - base) + len, 64u) << len;
            continue;
        }
        if (len <= SOFT_LINE_WIDE_MAX) {
            EXPECT_EQ(base + offsetof(soft_slot_t, pkt.dc_key), p) << len;
            EXPECT_LE((uint64_t)(p - base) + len, 64u) << len;
            continue;
        }
        EXPECT_EQ(7u, (uintptr_t)(p - base) % 8) << len;
        EXPECT_GE(p, base + SOFT_LIGHT_OFF) << len;
        if (soft_light_far_ok(size, len)) {
            EXPECT_LE((uint64_t)(p - base) + len, (uint64_t)size) << len;
        } else {
            EXPECT_EQ(base + SOFT_LIGHT_OFF, p) << len;
        }
    }
    EXPECT_TRUE(soft_light_far_ok(size, payload));
    EXPECT_FALSE(soft_light_far_ok(size, size));
}
