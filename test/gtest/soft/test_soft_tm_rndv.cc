/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device tag matching, rendezvous (docs/device-semantics.md section
 * 9.7): the device's READ of a matched request, its FIN, unexpected
 * requests,
 * bad rkeys, wrong and dead senders, a receiver that does not poll, and
 * eager data into a strided key.  The fixture is soft_tm_fixture.h.  The
 * tests that need a receiver's helper thread or a dead sender run that peer
 * in a child process.
 */
#include "soft_tm_fixture.h"

/* ------------------------------------------------------------------------
 * Rendezvous
 * ------------------------------------------------------------------------ */
TEST_F(soft_tm, rndv_expected)
{
    open_pair();
    const uint32_t len = 300000;
    add_ok(rx, 0xabc, ~0ull, 1, 0, len);
    EXPECT_EQ(DCX_WC_SUCCESS, send_rndv(0xabc, 0x1111, len, 7).status);
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH, wc.flags);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(0xabcu, wc.tm_tag);
    EXPECT_EQ(0x1111u, wc.tm_priv);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(DCX_WC_FLAG_TM_DATA_VALID, wc.flags);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(len, wc.byte_len);
    expect_payload(0, len, 7);
    expect_fin(0xabc, 0x1111);
    EXPECT_EQ(1u, tm_stats(tx).fins_received);
    expect_quiet(rx);
    dcx_soft_tm_stats_t st = tm_stats(rx);
    EXPECT_EQ(1u, st.rndv_hw);
    EXPECT_EQ(1u, st.fins_sent);
    EXPECT_EQ(0u, st.rndv_errors);
}

TEST_F(soft_tm, rndv_fin_to_plain_srq)
{
    /* a sender whose DCT has a basic SRQ gets the FIN as a plain receive,
     * as in rdma-core's test_tm_rndv */
    open_pair(63, 256, nullptr, false);
    add_ok(rx, 5, ~0ull, 1, 0, 1000);
    send_rndv(5, 0x2222, 1000, 1);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH, pop(rx).flags);
    EXPECT_EQ(DCX_WC_FLAG_TM_DATA_VALID, pop(rx).flags);
    expect_fin(5, 0x2222, false);
    expect_payload(0, 1000, 1);
}

TEST_F(soft_tm, rndv_many)
{
    /* more rendezvous than the device reads at once: all complete, data
     * in the right buffers, a FIN for each */
    open_pair();
    const uint32_t n = 10, len = 50000;
    for (uint32_t i = 0; i < n; ++i) {
        add_ok(rx, 100 + i, ~0ull, i, (size_t)i * 65536, len);
    }
    for (uint32_t i = 0; i < n; ++i) {
        send_rndv(100 + i, 1000 + i, len, (uint8_t)i, 0, 0, 0, 16,
                  RNDV_OFF + (size_t)i * 65536);
    }
    uint32_t matched = 0, valid = 0;
    for (uint32_t k = 0; k < 2 * n; ++k) {
        dcx_wc_t wc = pop(rx);
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        if (wc.flags == DCX_WC_FLAG_TM_MATCH) {
            EXPECT_EQ(100 + wc.wr_id, wc.tm_tag);
            matched++;
        } else {
            EXPECT_EQ(DCX_WC_FLAG_TM_DATA_VALID, wc.flags);
            EXPECT_EQ(len, wc.byte_len);
            valid++;
        }
    }
    EXPECT_EQ(n, matched);
    EXPECT_EQ(n, valid);
    for (uint32_t i = 0; i < n; ++i) {
        expect_payload((size_t)i * 65536, len, (uint8_t)i);
    }
    EXPECT_TRUE(wait(tx, n));
    EXPECT_EQ(n, tm_stats(rx).rndv_hw);
}

TEST_F(soft_tm, rndv_one_read_per_pass)
{
    /* requests that arrive together are all matched by the pass that
     * serves them, but an engine pass starts the READ of one rendezvous
     * only (the device usually copies it at once, tens of us a MiB): the
     * application polls each one's completions, and may repost its
     * receive, before the device reads the next, as it would while a NIC
     * reads */
    open_pair();
    const uint32_t n = 3, len = 200000;
    for (uint32_t i = 0; i < n; ++i) {
        add_ok(rx, 300 + i, ~0ull, i, (size_t)i * 262144, len);
    }
    for (uint32_t i = 0; i < n; ++i) {
        fill(tx.at(RNDV_OFF + (size_t)i * 262144), len, (uint8_t)(40 + i));
    }
    /* a first rendezvous maps each side at the other (hundreds of us
     * once), and the buffers are touched: no pass below is that long */
    add_ok(rx, 299, ~0ull, 9, (size_t)n * 262144, 1000);
    send_rndv(299, 2999, 1000, 1, 0, 0, 0, 16, RNDV_OFF + (size_t)n * 262144);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH, pop(rx).flags);
    EXPECT_EQ(DCX_WC_FLAG_TM_DATA_VALID, pop(rx).flags);
    expect_fin(299, 2999);
    memset(rx.at(0), 0, (size_t)n * 262144);
    /* rx polls (a pass of an application that is not away), then the
     * three requests wait in its ring before it polls again */
    rx.poll();
    for (uint32_t i = 0; i < n; ++i) {
        size_t msg = SEND_OFF + (size_t)i * 128,
               src = RNDV_OFF + (size_t)i * 262144;
        uint8_t *m = tx.at(msg);
        dcx_tmh_pack(m, DCX_TMH_RNDV, 3000 + i, 300 + i);
        dcx_rvh_pack(m + 16, tx.va(src), tx.mr->rkey, len);
        dcx_ravh_pack(m + 32, tx.n.dct->qp_num, KEY);
        memset(m + 48, 0x5a, 16);
        ASSERT_EQ(0, post_to_rx(77 + i, msg, DCX_TM_RNDV_LEN + 16));
    }
    for (int k = 0; k < 3; ++k) {
        tx.poll(); /* what did not go at the post goes in tx's pass */
    }

    uint32_t matched = 0, valid = 0;
    double end = now_s() + 20.0;
    while ((valid < n) && (now_s() < end)) {
        poll_both();
        while (!rx.got.empty()) {
            dcx_wc_t wc = rx.got.front();
            rx.got.pop_front();
            EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
            if (wc.flags & DCX_WC_FLAG_TM_MATCH) {
                matched++;
            } else {
                EXPECT_EQ(len, wc.byte_len);
                valid++;
            }
        }
    }
    EXPECT_EQ(n, matched);
    EXPECT_EQ(n, valid);
    for (uint32_t i = 0; i < n; ++i) {
        expect_payload((size_t)i * 262144, len, (uint8_t)(40 + i));
    }
    EXPECT_TRUE(wait(tx, n)); /* the FINs */
    dcx_soft_tm_stats_t st = tm_stats(rx);
    EXPECT_EQ(n + 1, st.rndv_hw);
    /* passes of a polling application started one READ each (0 if this
     * thread was away long enough for every pass to count as the
     * helper's, which start more) */
    EXPECT_LE(st.rndv_pass_max, 1u);
}

TEST_F(soft_tm, rndv_incomplete)
{
    open_pair();
    /* the data does not fit, the request does: software's turn */
    add_ok(rx, 9, ~0ull, 1, 0, 100);
    send_rndv(9, 0x3333, 5000, 2);
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_TM_RNDV_INCOMPLETE, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH | DCX_WC_FLAG_TM_DATA_VALID, wc.flags);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(64u, wc.byte_len);
    EXPECT_EQ(9u, wc.tm_tag);
    EXPECT_EQ(0x3333u, wc.tm_priv);
    EXPECT_EQ(0, memcmp(rx.at(0), tx.at(SEND_OFF), 64)); /* headers */
    uint64_t va;
    uint32_t rkey, len;
    dcx_rvh_unpack(rx.at(16), &va, &rkey, &len);
    EXPECT_EQ(tx.va(RNDV_OFF), va);
    EXPECT_EQ(5000u, len);
    expect_quiet(tx); /* no device READ, no FIN */
    EXPECT_EQ(1u, tm_stats(rx).rndv_sw);

    /* not even the request fits */
    add_ok(rx, 9, ~0ull, 2, 0, 40);
    send_rndv(9, 0x3333, 5000, 2);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_LOC_LEN_ERR, wc.status);
    EXPECT_EQ(2u, wc.wr_id);
}

TEST_F(soft_tm, rndv_unexpected)
{
    open_pair();
    send_rndv(0x44, 0x4444, 8000, 3, 0, 0, 0, 0);
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(0, wc.flags);
    EXPECT_EQ(SRQ_WRID, wc.wr_id);
    EXPECT_EQ(DCX_TM_RNDV_LEN, wc.byte_len);
    EXPECT_EQ(0, memcmp(rx.srq_buf(wc.wr_id), tx.at(SEND_OFF), 48));
    uint32_t dctn;
    uint64_t key;
    dcx_ravh_unpack(rx.srq_buf(wc.wr_id) + 32, &dctn, &key);
    EXPECT_EQ(tx.n.dct->qp_num, dctn);
    EXPECT_EQ(KEY, key);
    expect_quiet(tx);
    EXPECT_EQ(1u, tm_stats(rx).unexp_rndv);
}

/* A request whose rkey is bad: the device's READ gets REM_ACCESS_ERR, the
 * receive ends with that status in its second completion, no FIN is sent,
 * and the device's next rendezvous works. */
TEST_F(soft_tm, rndv_bad_rkey_bad_flow)
{
    open_pair();
    add_ok(rx, 1, ~0ull, 1, 0, 4096);
    EXPECT_EQ(DCX_WC_SUCCESS, send_rndv(1, 0x5555, 4096, 4, 0x3300).status);
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH, wc.flags);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(0, rx.at(0)[0] | rx.at(4095)[0]);
    expect_quiet(tx);
    EXPECT_EQ(1u, tm_stats(rx).rndv_errors);
    EXPECT_EQ(0u, tm_stats(rx).fins_sent);

    add_ok(rx, 2, ~0ull, 2, 0, 4096);
    send_rndv(2, 0x6666, 4096, 5);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH, pop(rx).flags);
    EXPECT_EQ(DCX_WC_SUCCESS, pop(rx).status);
    expect_payload(0, 4096, 5);
    expect_fin(2, 0x6666);
}

/* The RAVH names a DCT that does not exist, or the wrong DC key: the
 * sender's port never answers the READ (a key mismatch is dropped
 * silently), so it ends with RETRY_EXC_ERR after the retries. */
TEST_F(soft_tm, rndv_wrong_sender_bad_flow)
{
    dcx_soft_limits_t l = fast_limits();
    open_pair(63, 256, &l);
    add_ok(rx, 1, ~0ull, 1, 0, 4096);
    add_ok(rx, 2, ~0ull, 2, 8192, 4096);
    send_rndv(1, 0x7777, 4096, 4, 0, 0x40);   /* wrong DCT */
    send_rndv(2, 0x8888, 4096, 4, 0, 0, 0x1); /* wrong DC key */
    int retry_exc = 0;
    for (int i = 0; i < 4; ++i) {
        dcx_wc_t wc = pop(rx);
        if (wc.flags == DCX_WC_FLAG_TM_MATCH) {
            continue;
        }
        EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, wc.status);
        EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
        retry_exc++;
    }
    EXPECT_EQ(2, retry_exc);
    expect_quiet(tx);
    dcx_soft_stats_t ts;
    ASSERT_EQ(0, dcx_soft_stats(tx.n.dev, &ts));
    EXPECT_GE(ts.dc_key_violations, 1u);
    EXPECT_GE(ts.bad_dctn_drops, 1u);
    EXPECT_EQ(2u, tm_stats(rx).rndv_errors);
}

/* The data was read, then the sender vanished before the FIN reached it:
 * the receive has completed with its data; the FIN ends with RETRY_EXC on
 * the device's DCI and is only counted. */
TEST_F(soft_tm, rndv_fin_to_dead_sender_bad_flow)
{
    dcx_soft_limits_t l = fast_limits();
    open_pair(63, 256, &l);
    dcx_soft_fault_t f;
    memset(&f, 0, sizeof(f));
    f.type   = DCX_SOFT_FAULT_DROP;
    f.opcode = DCX_WR_SEND; /* the receiver's FINs get lost */
    f.count  = 0;
    ASSERT_EQ(0, dcx_soft_fault_inject(rx.n.dev, &f));
    add_ok(rx, 1, ~0ull, 1, 0, 4096);
    send_rndv(1, 0x9999, 4096, 6);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH, pop(rx).flags);
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_FLAG_TM_DATA_VALID, wc.flags);
    expect_payload(0, 4096, 6);
    memset(&f, 0, sizeof(f));
    f.type   = DCX_SOFT_FAULT_KILL_PORT;
    f.opcode = -1;
    ASSERT_EQ(0, dcx_soft_fault_inject(tx.n.dev, &f));
    double end = now_s() + 20.0;
    while ((tm_stats(rx).fin_errors == 0) && (now_s() < end)) {
        rx.poll();
    }
    EXPECT_EQ(1u, tm_stats(rx).fin_errors);
    EXPECT_EQ(0u, tm_stats(rx).fins_sent);
    EXPECT_EQ(0u, rx.got.size());
}

/* ------------------------------------------------------------------------
 * Across processes
 * ------------------------------------------------------------------------ */
namespace {

const size_t XP_ENTRY = 1u << 20; /* entry i at i MiB of sh->buf */
const uint32_t XP_SRQ = 64;

/* A receiver child: TM SRQ, entries for tags 1..nrecv posted, then it
 * computes without ever polling until told to stop; then it polls and
 * records its completions and counters. */
int tm_receiver_main(shared_area *sh)
{
    node n;
    dcx_mr_t *mr;
    size_t len = sizeof(sh->addr);
    int ret;

    ret = n.open(sh->fabric, &sh->tp.limits);
    if (ret == 0) {
        ret = n.reg(sh->buf, BUF_SIZE, sh->tp.mr_access, &mr);
    }
    if (ret == 0) {
        ret = n.make_cq(4096);
    }
    if (ret == 0) {
        dcx_srq_attr_t sa;
        memset(&sa, 0, sizeof(sa));
        sa.type        = DCX_SRQ_TM;
        sa.max_wr      = XP_SRQ;
        sa.max_sge     = 1;
        sa.cq          = n.cq;
        sa.tm_max_tags = 63;
        sa.tm_max_ops  = 64;
        ret            = dcx_srq_create(n.pd, &sa, &n.srq);
    }
    if (ret == 0) {
        dcx_qp_attr_t qa;
        memset(&qa, 0, sizeof(qa));
        qa.type    = DCX_QPT_DCT;
        qa.recv_cq = n.cq;
        qa.srq     = n.srq;
        qa.dc_key  = sh->tp.dc_key;
        qa.access  = sh->tp.dct_access;
        ret        = dcx_qp_create(n.pd, &qa, &n.dct);
    }
    for (uint32_t i = 0; (ret == 0) && (i < XP_SRQ); ++i) {
        dcx_sge_t s = {(uint64_t)(uintptr_t)(sh->buf + RECV_OFF +
                                             (size_t)i * 4096),
                       4096, mr->lkey};
        ret         = dcx_srq_post_recv(n.srq, 1000 + i, &s, 1);
    }
    for (uint32_t i = 1; (ret == 0) && (i <= sh->tp.nrecv); ++i) {
        dcx_tm_op_t op;
        memset(&op, 0, sizeof(op));
        op.opcode     = DCX_TM_OP_ADD;
        op.num_sge    = 1;
        op.recv_wr_id = i;
        op.tag        = i;
        op.mask       = ~0ull;
        op.sge.addr   = (uint64_t)(uintptr_t)(sh->buf + i * XP_ENTRY);
        op.sge.length = XP_ENTRY;
        op.sge.lkey   = mr->lkey;
        ret           = dcx_srq_tm_post(n.srq, &op);
    }
    if (ret == 0) {
        ret = dcx_dev_port_addr(n.dev, sh->addr, &len);
    }
    if (ret != 0) {
        fprintf(stderr, "tm receiver setup failed: %d\n", ret);
        return 1;
    }
    sh->addr_len = (uint32_t)len;
    sh->dctn     = n.dct->qp_num;
    __atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);

    uint64_t x = 1;
    while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
        for (int k = 0; k < 1000; ++k) { /* busy elsewhere */
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        }
    }
    volatile uint64_t sink = x;
    (void)sink;
    dcx_wc_t wc[16];
    int r;
    while ((r = dcx_cq_poll(n.cq, 16, wc)) > 0) {
        for (int i = 0; (i < r) && (sh->n_wc < MAX_WC); ++i) {
            sh->wc[sh->n_wc++] = wc[i];
        }
    }
    dcx_soft_stats(n.dev, &sh->stats);
    n.close();
    return 0;
}

} // namespace

/* The receiver never polls: its device still reads the rendezvous data and
 * sends the FINs (through its helper thread), as hardware does while the
 * application computes. */
TEST_F(soft_tm, rndv_receiver_not_polling)
{
    const uint32_t n = 3, len = 300000;
    sh->tp.nrecv = n;
    pid_t pid    = spawn([this]() { return tm_receiver_main(sh); });
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(wait_flag(&sh->ready, 1, 20.0));
    open_node(tx);
    ASSERT_EQ(0, tx.n.connect(sh->addr, sh->addr_len));
    for (uint32_t i = 1; i <= n; ++i) {
        EXPECT_EQ(DCX_WC_SUCCESS,
                  send_rndv(i, 0x100 + i, len, (uint8_t)i, 0, 0, 0, 16,
                            RNDV_OFF + (size_t)(i - 1) * len, sh->dctn,
                            sh->tp.dc_key)
                      .status);
    }
    /* every FIN arrives while the receiver computes */
    ASSERT_TRUE(wait(tx, n));
    EXPECT_EQ(0u, __atomic_load_n(&sh->n_wc, __ATOMIC_ACQUIRE));
    for (uint32_t i = 1; i <= n; ++i) {
        std::vector<uint8_t> want(len);
        fill(want.data(), len, (uint8_t)i);
        EXPECT_EQ(0, memcmp(sh->buf + i * XP_ENTRY, want.data(), len)) << i;
    }
    EXPECT_TRUE(stop_children());
    uint32_t matched = 0, valid = 0;
    for (uint32_t k = 0; k < sh->n_wc; ++k) {
        const dcx_wc_t &wc = sh->wc[k];
        EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
        if (wc.flags == DCX_WC_FLAG_TM_MATCH) {
            EXPECT_EQ(wc.wr_id, wc.tm_tag);
            EXPECT_EQ(0x100 + wc.wr_id, (uint64_t)wc.tm_priv);
            matched++;
        } else if (wc.flags == DCX_WC_FLAG_TM_DATA_VALID) {
            EXPECT_EQ(len, wc.byte_len);
            valid++;
        }
    }
    EXPECT_EQ(n, matched);
    EXPECT_EQ(n, valid);
    EXPECT_GT(sh->stats.helper_packets, 0u);
}

/* The sender is gone when the device would read its data: the READ ends
 * with RETRY_EXC_ERR (a dead peer is detected at the first timeout) and
 * the receive completes with it. */
TEST_F(soft_tm, rndv_dead_sender_bad_flow)
{
    open_node(rx);
    add_ok(rx, 3, ~0ull, 1, 0, 65536);
    memcpy(sh->addr2, rx.addr, rx.addr_len);
    sh->dctn2               = rx.n.dct->qp_num;
    const uint32_t addr_len = (uint32_t)rx.addr_len;
    pid_t pid               = spawn([this, addr_len]() {
        node s;
        dcx_mr_t *mr;
        if ((s.open(sh->fabric, &sh->tp.limits) != 0) ||
            (s.reg(sh->buf, BUF_SIZE, sh->tp.mr_access, &mr) != 0) ||
            (s.make_target(KEY, DCX_ACCESS_REMOTE_READ) != 0) ||
            (s.make_dci() != 0) || (s.connect(sh->addr2, addr_len) != 0)) {
            return 1;
        }
        /* the request reaches the receiver 2 s late; we exit right after
         * posting it, and the test reaps us before polling */
        dcx_soft_fault_t f;
        memset(&f, 0, sizeof(f));
        f.type     = DCX_SOFT_FAULT_DELAY;
        f.opcode   = DCX_WR_SEND;
        f.delay_us = 2000000;
        if (dcx_soft_fault_inject(s.dev, &f) != 0) {
            return 1;
        }
        uint8_t *m = sh->buf;
        dcx_tmh_pack(m, DCX_TMH_RNDV, 0xdead, 3);
        dcx_rvh_pack(m + 16, (uint64_t)(uintptr_t)(sh->buf + 4096), mr->rkey,
                                   65536);
        dcx_ravh_pack(m + 32, s.dct->qp_num, KEY);
        dcx_sge_t sge = {(uint64_t)(uintptr_t)m, 48, mr->lkey};
        dcx_send_wr_t wr;
        memset(&wr, 0, sizeof(wr));
        wr.opcode      = DCX_WR_SEND;
        wr.num_sge     = 1;
        wr.sg_list     = &sge;
        wr.dest.ah     = s.ah;
        wr.dest.dctn   = sh->dctn2;
        wr.dest.dc_key = KEY;
        if (dcx_qp_post_send(s.dci, &wr) != 0) {
            return 1;
        }
        _exit(0); /* without closing: the port stays, its owner dies */
    });
    ASSERT_GT(pid, 0);
    int status = 0;
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    children.clear();
    ASSERT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0));
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_FLAG_TM_MATCH, wc.flags);
    EXPECT_EQ(0xdeadu, wc.tm_priv);
    wc = pop(rx);
    EXPECT_EQ(DCX_WC_RETRY_EXC_ERR, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(1u, wc.wr_id);
    EXPECT_EQ(1u, tm_stats(rx).rndv_errors);
}

/* A tag-list entry over a strided key: a matched eager payload
 * scatters through the key's layout and nowhere else. */
TEST_F(soft_tm, eager_into_strided_key)
{
    open_pair();
    const size_t base = 65536, n = 100, el = 6, skip = 4;
    dcx_mkey_t *k;
    ASSERT_EQ(0, dcx_mkey_create(rx.n.pd, 4, &k));
    dcx_mkey_interleaved_t e;
    memset(&e, 0, sizeof(e));
    e.addr        = rx.va(base);
    e.bytes_count = el;
    e.bytes_skip  = skip;
    e.lkey        = rx.mr->lkey;
    dcx_mkey_layout_t lay;
    memset(&lay, 0, sizeof(lay));
    lay.access       = DCX_ACCESS_LOCAL_WRITE;
    lay.repeat_count = n;
    lay.num_entries  = 1;
    lay.interleaved  = &e;
    dcx_send_wr_t w;
    memset(&w, 0, sizeof(w));
    w.wr_id       = 0x11;
    w.opcode      = DCX_WR_MKEY_INTERLEAVED;
    w.flags       = DCX_SEND_SIGNALED;
    w.mkey        = k;
    w.mkey_layout = &lay;
    ASSERT_EQ(0, dcx_qp_post_send(rx.n.dci, &w));
    double end = now_s() + 20.0;
    while (rx.sent.empty() && (now_s() < end)) {
        poll_both();
    }
    ASSERT_EQ(1u, rx.sent.size());
    EXPECT_EQ(DCX_WC_UMR, rx.sent.front().opcode);
    EXPECT_EQ(DCX_WC_SUCCESS, rx.sent.front().status);

    dcx_tm_op_t op;
    memset(&op, 0, sizeof(op));
    op.wr_id      = 0xadd00001ull;
    op.opcode     = DCX_TM_OP_ADD;
    op.flags      = DCX_TM_OPF_SIGNALED;
    op.num_sge    = 1;
    op.recv_wr_id = 1;
    op.tag        = 0x99;
    op.mask       = ~0ull;
    op.sge.addr   = 0; /* zero-based */
    op.sge.length = (uint32_t)(n * el);
    op.sge.lkey   = k->lkey;
    ASSERT_EQ(0, dcx_srq_tm_post(rx.n.srq, &op));
    EXPECT_EQ(DCX_WC_TM_ADD, pop(rx).opcode);
    std::vector<uint8_t> before(rx.mem);
    EXPECT_EQ(DCX_WC_SUCCESS,
              send_msg(DCX_TMH_EAGER, 0x99, 1, (uint32_t)(n * el), 7).status);
    dcx_wc_t wc = pop(rx);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_TM_RECV, wc.opcode);
    EXPECT_EQ(n * el, wc.byte_len);
    const uint8_t *payload = tx.at(SEND_OFF + DCX_TM_TMH_LEN);
    size_t changed         = 0;
    for (size_t i = 0; i < n * el; ++i) {
        ASSERT_EQ(payload[i], rx.mem[base + (i / el) * (el + skip) + i % el])
            << i;
    }
    for (size_t i = 0; i < rx.mem.size(); ++i) {
        changed += (rx.mem[i] != before[i]);
    }
    EXPECT_GE(n * el, changed);
    EXPECT_EQ(0, dcx_mkey_destroy(k));
}
