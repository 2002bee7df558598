/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device strided memory keys (docs/device-semantics.md
 * section 10): creation limits, interleaved and list layouts, zero-based
 * addressing, local gather/scatter, remote READ/WRITE/atomics through the
 * key, in one process (loopback) and across processes, and every way a key
 * must refuse an access as the hardware does.
 */
#include "soft_mkey_fixture.h"

TEST_F(soft_mkey, caps)
{
    const dcx_dev_caps_t *caps = dcx_dev_caps(n.dev);
    EXPECT_TRUE(caps->flags & DCX_CAP_MKEY_STRIDE);
    EXPECT_EQ(LIMIT, caps->mkey_max_entries);
    EXPECT_EQ(0xffffu, caps->mkey_max_stride);
    EXPECT_EQ((uint32_t)DCX_QPT_DCI, caps->mkey_qp_type);
}

TEST_F(soft_mkey, create_limits_bad_flow)
{
    dcx_mkey_t *k = nullptr;
    {
        log_counter logs;
        EXPECT_EQ(EINVAL, dcx_mkey_create(n.pd, 0, &k));
        EXPECT_EQ(EINVAL, dcx_mkey_create(n.pd, LIMIT + 1, &k));
        EXPECT_EQ(2, logs.lines());
    }
    EXPECT_EQ(LIMIT, create(LIMIT)->max_entries);
    EXPECT_EQ(4u, create(1)->max_entries); /* rounded to 4 */
    EXPECT_EQ(8u, create(5)->max_entries);
    /* keys are distinct from each other and from MRs */
    EXPECT_NE(keys[0]->rkey, keys[1]->rkey);
    EXPECT_NE(keys[0]->rkey, mr->rkey);
}

TEST_F(soft_mkey, interleaved_column_read_write)
{
    const size_t rows = 64, cols = 16, col = 5;
    dcx_mkey_t *k = create();
    interleaved(k, column(col, cols), rows);

    /* READ gathers the column */
    ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, rows * 8));
    for (size_t r = 0; r < rows; ++r) {
        ASSERT_EQ(0, memcmp(&loc[r * 8], &mem[(r * cols + col) * 8], 8))
            << "row " << r;
    }

    /* WRITE scatters into the column and nowhere else */
    std::vector<uint8_t> before(mem);
    for (size_t i = 0; i < rows * 8; ++i) {
        loc[i] = (uint8_t)(0xa0 ^ i);
    }
    ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, rows * 8));
    for (size_t i = 0; i < mem.size(); ++i) {
        size_t el = i / 8, r = el / cols;
        if ((el % cols == col) && (r < rows)) {
            ASSERT_EQ((uint8_t)(0xa0 ^ (r * 8 + i % 8)), mem[i]) << i;
        } else {
            ASSERT_EQ(before[i], mem[i]) << i;
        }
    }
}

/* Single-byte and unaligned elements, several entries, repetitions, and
 * accesses starting and ending inside entries. */
TEST_F(soft_mkey, unaligned_single_byte_entries)
{
    std::vector<dcx_mkey_interleaved_t> e = {
        ient(mem.data() + 1, 1, 2, mr->lkey),     /* 1 byte, stride 3 */
        ient(mem.data() + 4097, 13, 4, mr->lkey), /* 13 bytes, stride 17 */
        ient(mem.data() + 65537, 5, 0, mr->lkey)  /* contiguous */
    };
    const uint32_t repeat = 37;
    dcx_mkey_t *k         = create();
    interleaved(k, e, repeat);
    std::vector<uint8_t *> ref = layout_bytes(e, repeat);
    ASSERT_EQ((size_t)repeat * 19, ref.size());

    for (auto range :
         std::vector<std::pair<size_t, size_t>>{{0, ref.size()},
                                                {0, 1},
                                                {1, 1},
                                                {7, 30},
                                                {ref.size() - 3, 3},
                                                {19 * 5 + 2, 19 * 7 + 11}}) {
        memset(loc.data(), 0, range.second);
        ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k->rkey, range.first,
                                       0, (uint32_t)range.second));
        for (size_t i = 0; i < range.second; ++i) {
            ASSERT_EQ(*ref[range.first + i], loc[i])
                << "offset " << range.first + i;
        }
    }
    /* write a middle range, check exactly those bytes changed */
    std::vector<uint8_t> before(mem);
    const size_t off = 19 * 3 + 4, len = 19 * 20 + 9;
    for (size_t i = 0; i < len; ++i) {
        loc[i] = (uint8_t) ~*ref[off + i];
    }
    ASSERT_EQ(DCX_WC_SUCCESS,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, off, 0, (uint32_t)len));
    size_t changed = 0;
    for (size_t i = 0; i < mem.size(); ++i) {
        changed += (mem[i] != before[i]);
    }
    EXPECT_EQ(len, changed);
    for (size_t i = 0; i < len; ++i) {
        ASSERT_EQ((uint8_t)~before[ref[off + i] - mem.data()], *ref[off + i]);
    }
}

/* The man page example: repeat 2, {512, skip 4}, {8, skip 0}. */
TEST_F(soft_mkey, man_page_example)
{
    std::vector<dcx_mkey_interleaved_t> e = {ient(mem.data(), 512, 4, mr->lkey),
                                             ient(mem.data() + 8192, 8, 0,
                                                  mr->lkey)};
    dcx_mkey_t *k                         = create();
    interleaved(k, e, 2);
    ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, 1040));
    EXPECT_EQ(0, memcmp(&loc[0], &mem[0], 512));
    EXPECT_EQ(0, memcmp(&loc[512], &mem[8192], 8));
    EXPECT_EQ(0, memcmp(&loc[520], &mem[516], 512));
    EXPECT_EQ(0, memcmp(&loc[1032], &mem[8200], 8));
    /* one past the end of the layout */
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_READ, k->rkey, 1, 0, 1040));
}

TEST_F(soft_mkey, entry_limit_bad_flow)
{
    dcx_mkey_t *k = create(LIMIT);
    std::vector<dcx_mkey_interleaved_t> e;
    for (uint32_t i = 0; i < LIMIT; ++i) {
        e.push_back(ient(mem.data() + i * 1000, 10, 90, mr->lkey));
    }
    dcx_mkey_layout_t lay;
    memset(&lay, 0, sizeof(lay));
    lay.access       = RACC;
    lay.repeat_count = 3;
    lay.interleaved  = e.data();

    /* interleaved: the repetition header takes one entry */
    lay.num_entries = LIMIT;
    EXPECT_EQ(ENOMEM, post_bad(mkey_wr(DCX_WR_MKEY_INTERLEAVED, k, &lay)));
    e.pop_back();
    interleaved(k, e, 3);
    ASSERT_EQ(DCX_WC_SUCCESS,
              rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, (LIMIT - 1) * 10 * 3));
    std::vector<uint8_t *> ref = layout_bytes(e, 3);
    for (size_t i = 0; i < ref.size(); ++i) {
        ASSERT_EQ(*ref[i], loc[i]) << i;
    }

    /* list: all entries are data */
    std::vector<dcx_sge_t> s;
    for (uint32_t i = 0; i <= LIMIT; ++i) {
        s.push_back({(uint64_t)(uintptr_t)(mem.data() + 3 * i * i), i + 1,
                     mr->lkey});
    }
    memset(&lay, 0, sizeof(lay));
    lay.access      = RACC;
    lay.list        = s.data();
    lay.num_entries = LIMIT + 1;
    EXPECT_EQ(ENOMEM, post_bad(mkey_wr(DCX_WR_MKEY_LIST, k, &lay)));
    s.pop_back();
    list(k, s);
    size_t total = 0;
    for (auto &x : s) {
        total += x.length;
    }
    ASSERT_EQ(DCX_WC_SUCCESS,
              rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, (uint32_t)total));
    size_t off = 0;
    for (auto &x : s) {
        ASSERT_EQ(0, memcmp(&loc[off], (void *)(uintptr_t)x.addr, x.length));
        off += x.length;
    }
}

TEST_F(soft_mkey, post_checks_bad_flow)
{
    dcx_mkey_t *k                         = create(4);
    std::vector<dcx_mkey_interleaved_t> e = {ient(mem.data(), 8, 8, mr->lkey)};
    dcx_mkey_layout_t lay;
    memset(&lay, 0, sizeof(lay));
    lay.access       = RACC;
    lay.repeat_count = 2;
    lay.num_entries  = 1;
    lay.interleaved  = e.data();

    dcx_send_wr_t w = mkey_wr(DCX_WR_MKEY_INTERLEAVED, nullptr, &lay);
    EXPECT_EQ(EINVAL, post_bad(w)); /* no key */
    w = mkey_wr(DCX_WR_MKEY_INTERLEAVED, k, nullptr);
    EXPECT_EQ(EINVAL, post_bad(w)); /* no layout */
    lay.access = RACC | 0x100;
    w          = mkey_wr(DCX_WR_MKEY_INTERLEAVED, k, &lay);
    EXPECT_EQ(EINVAL, post_bad(w)); /* access */
    lay.access       = RACC;
    lay.repeat_count = 0;
    EXPECT_EQ(EINVAL, post_bad(w)); /* repeat 0 */
    lay.repeat_count = 2;
    e[0].bytes_count = 0x10000; /* 16-bit field */
    e[0].bytes_skip  = 0;
    EXPECT_EQ(EINVAL, post_bad(w));
    e[0].bytes_count = 0x8000;
    e[0].bytes_skip  = 0x8000; /* stride 64 KiB */
    EXPECT_EQ(EINVAL, post_bad(w));
    e[0].bytes_count = 0;
    e[0].bytes_skip  = 8;
    EXPECT_EQ(EINVAL, post_bad(w)); /* 0 bytes */
    lay.num_entries = 0;
    EXPECT_EQ(EINVAL, post_bad(w)); /* no entries */
    /* a key of another device */
    node other;
    ASSERT_EQ(0, other.open(fabric.c_str()));
    dcx_mkey_t *ok = nullptr;
    ASSERT_EQ(0, dcx_mkey_create(other.pd, 4, &ok));
    lay.num_entries  = 1;
    e[0].bytes_count = 8;
    w                = mkey_wr(DCX_WR_MKEY_INTERLEAVED, ok, &lay);
    EXPECT_EQ(EINVAL, post_bad(w));
    EXPECT_EQ(0, dcx_mkey_destroy(ok));
    /* after all that the DCI still works and the key configures */
    e[0].bytes_count = 8;
    interleaved(k, e, 2);
    EXPECT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, 16));
}

TEST_F(soft_mkey, list_layout_over_two_mrs)
{
    std::vector<uint8_t> other(4096, 0x5c);
    dcx_mr_t *omr;
    ASSERT_EQ(0, n.reg(other.data(), other.size(), RACC, &omr));
    std::vector<dcx_sge_t> s = {
        {(uint64_t)(uintptr_t)(mem.data() + 100), 33, mr->lkey},
        {(uint64_t)(uintptr_t)(other.data() + 7), 1, omr->lkey},
        {(uint64_t)(uintptr_t)(mem.data() + 50000), 4000, mr->lkey}};
    dcx_mkey_t *k = create(4);
    list(k, s);
    for (size_t i = 0; i < 4034; ++i) {
        loc[i] = (uint8_t)(i + 1);
    }
    ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, 4034));
    EXPECT_EQ(0, memcmp(&mem[100], &loc[0], 33));
    EXPECT_EQ(loc[33], other[7]);
    EXPECT_EQ(0x5c, other[6]);
    EXPECT_EQ(0x5c, other[8]);
    EXPECT_EQ(0, memcmp(&mem[50000], &loc[34], 4000));
    memset(loc.data(), 0, 8192);
    ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k->rkey, 30, 4096, 10));
    EXPECT_EQ(0, memcmp(&loc[4096], &mem[130], 3));
    EXPECT_EQ(other[7], loc[4099]);
    EXPECT_EQ(0, memcmp(&loc[4100], &mem[50000], 6));
}

/* The key as an lkey: a SEND gathers a strided source; a receive scatters
 * into a strided buffer. */
TEST_F(soft_mkey, local_gather_send_scatter_recv)
{
    const size_t rows = 100, cols = 9;
    dcx_mkey_t *src = create(4), *dst = create(4);
    interleaved(src, column(2, cols), rows);
    std::vector<dcx_mkey_interleaved_t> dcol = {
        ient(mem.data() + 500000 + 3, 8, 24, mr->lkey)};
    interleaved(dst, dcol, rows);
    std::vector<uint8_t> before(mem);

    dcx_sge_t rs = {0, (uint32_t)rows * 8, dst->lkey};
    ASSERT_EQ(0, dcx_srq_post_recv(n.srq, 42, &rs, 1));
    dcx_sge_t ss = {0, (uint32_t)rows * 8, src->lkey};
    dcx_wc_t wc[2];
    dcx_send_wr_t w;
    memset(&w, 0, sizeof(w));
    w.wr_id       = 9;
    w.opcode      = DCX_WR_SEND;
    w.flags       = DCX_SEND_SIGNALED;
    w.num_sge     = 1;
    w.sg_list     = &ss;
    w.dest.ah     = n.ah;
    w.dest.dctn   = n.dct->qp_num;
    w.dest.dc_key = KEY;
    ASSERT_EQ(0, dcx_qp_post_send(n.dci, &w));
    ASSERT_EQ(2, n.poll(wc, 2, 20.0));
    for (auto &c : wc) {
        EXPECT_EQ(DCX_WC_SUCCESS, c.status);
        if (c.opcode == DCX_WC_RECV) {
            EXPECT_EQ(42u, c.wr_id);
            EXPECT_EQ(rows * 8, c.byte_len);
        }
    }
    for (size_t r = 0; r < rows; ++r) {
        ASSERT_EQ(0, memcmp(&mem[500000 + 3 + r * 32],
                            &before[(r * cols + 2) * 8], 8))
            << r;
    }
    /* and nothing between the elements */
    for (size_t r = 0; r < rows; ++r) {
        ASSERT_EQ(0, memcmp(&mem[500000 + 3 + r * 32 + 8],
                            &before[500000 + 3 + r * 32 + 8], 24));
    }

    /* READ into a strided local buffer (lkey of the key) */
    dcx_sge_t ls = {0, (uint32_t)rows * 8, dst->lkey};
    memset(&mem[500000], 0, rows * 32 + 8);
    ASSERT_EQ(DCX_WC_SUCCESS, run(DCX_WR_RDMA_READ, &ls, mr->rkey,
                                  (uint64_t)(uintptr_t)(mem.data() + 700000)));
    for (size_t r = 0; r < rows; ++r) {
        ASSERT_EQ(0, memcmp(&mem[500000 + 3 + r * 32], &mem[700000 + r * 8], 8))
            << r;
    }
}

TEST_F(soft_mkey, local_key_errors_bad_flow)
{
    dcx_mkey_t *k = create(4);
    dcx_sge_t s   = {0, 8, k->lkey};
    /* before configure */
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, run(DCX_WR_RDMA_WRITE, &s, mr->rkey,
                                       (uint64_t)(uintptr_t)mem.data()));
    interleaved(k, column(0, 4), 4, DCX_ACCESS_REMOTE_READ);
    /* past the end */
    s.addr = 28;
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, run(DCX_WR_RDMA_WRITE, &s, mr->rkey,
                                       (uint64_t)(uintptr_t)mem.data()));
    s.addr = 24;
    EXPECT_EQ(DCX_WC_SUCCESS, run(DCX_WR_RDMA_WRITE, &s, mr->rkey,
                                  (uint64_t)(uintptr_t)mem.data()));
    /* a READ writes locally: the key was configured without local write */
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, run(DCX_WR_RDMA_READ, &s, mr->rkey,
                                       (uint64_t)(uintptr_t)mem.data()));
    invalidate(k);
    s.addr = 0;
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, run(DCX_WR_RDMA_WRITE, &s, mr->rkey,
                                       (uint64_t)(uintptr_t)mem.data()));
}

TEST_F(soft_mkey, remote_key_states_bad_flow)
{
    const size_t rows = 32, cols = 4;
    dcx_mkey_t *k = create(4);
    std::vector<uint8_t> before(mem);
    /* before configure: nothing written */
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, 64));
    EXPECT_EQ(before, mem);
    interleaved(k, column(1, cols), rows);
    /* past the end, and straddling it */
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_READ, k->rkey, rows * 8, 0, 1));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, rows * 8 - 4, 0, 8));
    EXPECT_EQ(before, mem);
    EXPECT_EQ(DCX_WC_SUCCESS,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, rows * 8 - 8, 0, 8));
    before = mem;
    /* invalidated: error, 0 bytes written */
    invalidate(k);
    memset(loc.data(), 0xee, rows * 8);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, rows * 8));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, 8));
    EXPECT_EQ(before, mem);
    /* configured again it works again (new layout) */
    interleaved(k, column(3, cols), rows);
    EXPECT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, 8));
    EXPECT_EQ(0, memcmp(&mem[3 * 8], loc.data(), 8));
}

/* A configure forced to fail (fault injection, as a UMR the HCA rejects)
 * completes with the error, puts the DCI in error and leaves the key as it
 * was: free, every access through it refused; configured again after the
 * recovery it works */
TEST_F(soft_mkey, configure_error_completion_bad_flow)
{
    const size_t rows = 16, cols = 4;
    dcx_mkey_t *k = create(4);
    dcx_soft_fault_t f;
    dcx_wc_t wc;

    memset(&f, 0, sizeof(f));
    f.type   = DCX_SOFT_FAULT_ERROR_CQE;
    f.opcode = DCX_WR_MKEY_INTERLEAVED;
    f.count  = 1;
    f.status = DCX_WC_LOC_QP_OP_ERR;
    ASSERT_EQ(0, dcx_soft_fault_inject(n.dev, &f));
    std::vector<dcx_mkey_interleaved_t> e = column(1, cols);
    dcx_mkey_layout_t lay                 = interleaved_layout(e, rows, RACC);
    dcx_send_wr_t w = mkey_wr(DCX_WR_MKEY_INTERLEAVED, k, &lay);
    ASSERT_EQ(0, dcx_qp_post_send(n.dci, &w));
    ASSERT_EQ(1, n.poll(&wc, 1, 20.0));
    EXPECT_EQ(DCX_WC_LOC_QP_OP_ERR, wc.status);
    dcx_soft_fault_clear(n.dev);
    EXPECT_EQ(DCX_QPS_ERR, n.dci->state);
    ASSERT_EQ(0, dcx_qp_recover(n.dci));

    std::vector<uint8_t> before(mem);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, rows * 8));
    EXPECT_EQ(before, mem);
    interleaved(k, column(1, cols), rows);
    EXPECT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, 8));
    EXPECT_EQ(0, memcmp(&mem[8], loc.data(), 8));
}

TEST_F(soft_mkey, remote_access_rights_bad_flow)
{
    std::vector<uint8_t> ro(8192, 0x33);
    dcx_mr_t *romr;
    ASSERT_EQ(0, n.reg(ro.data(), ro.size(), DCX_ACCESS_REMOTE_READ, &romr));
    /* the key grants write, its entry's MR does not */
    dcx_mkey_t *k = create(4);
    interleaved(k, {ient(ro.data(), 16, 16, romr->lkey)}, 8);
    EXPECT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, 128));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, 16));
    EXPECT_EQ(std::vector<uint8_t>(8192, 0x33), ro);
    /* the MR grants write, the key does not */
    dcx_mkey_t *k2 = create(4);
    interleaved(k2, column(0, 2), 8, DCX_ACCESS_REMOTE_READ);
    std::vector<uint8_t> before(mem);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k2->rkey, 0, 0, 8));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_ATOMIC_FADD, k2->rkey, 0, 0, 8));
    EXPECT_EQ(before, mem);
    /* an entry over memory no MR covers (its lkey's MR ends before) */
    dcx_mkey_t *k3 = create(4);
    interleaved(k3, {ient(ro.data() + 8192 - 64, 16, 16, romr->lkey)}, 4);
    EXPECT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k3->rkey, 0, 0, 32));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_READ, k3->rkey, 0, 0, 64));
    /* an entry whose lkey names nothing (or another key) */
    dcx_mkey_t *k4 = create(4);
    interleaved(k4,
                {ient(mem.data(), 8, 0, mr->lkey ^ 0x100),
                 ient(mem.data(), 8, 0, k->lkey)},
                1);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, rdma(DCX_WR_RDMA_READ, k4->rkey, 0, 0, 8));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, rdma(DCX_WR_RDMA_READ, k4->rkey, 8, 0, 8));
}

TEST_F(soft_mkey, mr_deregistered_under_key_bad_flow)
{
    std::vector<uint8_t> other(65536, 0x21);
    dcx_mr_t *omr;
    ASSERT_EQ(0, dcx_mr_reg(n.pd, other.data(), other.size(), RACC, &omr));
    dcx_mkey_t *k = create(4);
    interleaved(k,
                {ient(mem.data(), 8, 0, mr->lkey),
                 ient(other.data(), 8, 24, omr->lkey)},
                100);
    ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, 1600));
    ASSERT_EQ(0, dcx_mr_dereg(omr));
    /* the entries over the deregistered MR refuse; nothing is written */
    memset(loc.data(), 0x99, 1600);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, 1600));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, rdma(DCX_WR_RDMA_READ, k->rkey, 8, 0, 8));
    EXPECT_EQ(std::vector<uint8_t>(65536, 0x21), other);
    /* a new MR over the same memory does not revive the old key's entry */
    dcx_mr_t *again;
    ASSERT_EQ(0, n.reg(other.data(), other.size(), RACC, &again));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, rdma(DCX_WR_RDMA_READ, k->rkey, 8, 0, 8));
}

TEST_F(soft_mkey, memory_unmapped_under_key_bad_flow)
{
    size_t len = 2 * 4096;
    dcx_mr_t *pmr;
    uint8_t *p = mapped(len, 0x44, &pmr);
    ASSERT_NE(nullptr, p);
    dcx_mkey_t *k = create(4);
    interleaved(k, {ient(p, 16, 48, pmr->lkey)}, 64);
    ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, 1024));
    dcx_dev_mem_unmapped(n.dev, p, len);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, 16));
    for (size_t i = 0; i < len; ++i) {
        ASSERT_EQ(0x44, p[i]);
    }
    EXPECT_EQ(0, dcx_mr_dereg(pmr));
    munmap(p, len);
}

TEST_F(soft_mkey, atomics_inside_one_entry)
{
    dcx_mkey_t *k = create(4);
    /* per repetition (20 bytes): 8 bytes at an aligned address, then 12
     * bytes at an address that is 4 mod 8 */
    interleaved(k,
                {ient(mem.data() + 64, 8, 8, mr->lkey),
                 ient(mem.data() + 4100, 12, 4, mr->lkey)},
                4);
    /* offset 40 = repetition 2, entry 0: mem + 64 + 2 * 16 */
    uint64_t v, old, now;
    memcpy(&v, &mem[96], 8);
    ASSERT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_ATOMIC_FADD, k->rkey, 40, 0, 8));
    memcpy(&old, &loc[0], 8);
    memcpy(&now, &mem[96], 8);
    EXPECT_EQ(v, old);
    EXPECT_EQ(v + 1, now);
    std::vector<uint8_t> before(mem);
    /* a word split between two entries (offset 16: 4 bytes of entry 1,
     * 4 of the next repetition's entry 0) */
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR,
              rdma(DCX_WR_ATOMIC_FADD, k->rkey, 16, 0, 8));
    /* inside entry 1, aligned offset, unaligned translated address */
    EXPECT_EQ(DCX_WC_REM_INV_REQ_ERR,
              rdma(DCX_WR_ATOMIC_FADD, k->rkey, 8, 0, 8));
    EXPECT_EQ(before, mem);
}

/* ------------------------------------------------------------------------
 * Across processes: the owner configures a key over a matrix column and
 * publishes its rkey; the peer writes and reads the column through it; the
 * owner invalidates it; the peer's next write fails and writes nothing.
 * ------------------------------------------------------------------------ */
namespace {

const size_t XROWS = 128, XCOLS = 16, XCOL = 7;

uint8_t xpattern(size_t i)
{
    return (uint8_t)(i * 3 + 1);
}

uint8_t xcolumn_value(size_t i) /* what the peer writes: byte i of col */
{
    return (uint8_t)(0xc0 ^ i);
}

int owner_exec(node &t, dcx_send_wr_t &w, uint8_t opcode)
{
    dcx_wc_t wc;
    if ((dcx_qp_post_send(t.dci, &w) != 0) || (t.poll(&wc, 1, 20.0) != 1) ||
        (wc.status != DCX_WC_SUCCESS) || (wc.opcode != opcode)) {
        return 1;
    }
    return 0;
}

int mkey_owner_main(shared_area *sh)
{
    dcx_soft_limits_t l = sh->tp.limits;
    l.mkey_max_entries  = LIMIT;
    node t;
    dcx_mr_t *mr;
    dcx_mkey_t *k;
    size_t len = sizeof(sh->addr);

    if ((t.open(sh->fabric, &l) != 0) || (t.make_cq(256) != 0) ||
        (t.make_target(sh->tp.dc_key, DCX_ACCESS_REMOTE_WRITE |
                                          DCX_ACCESS_REMOTE_READ) != 0) ||
        (t.make_dci() != 0) ||
        (t.reg(sh->buf, XROWS * XCOLS * 8, RACC, &mr) != 0) ||
        (dcx_mkey_create(t.pd, 4, &k) != 0)) {
        return 10;
    }
    for (size_t i = 0; i < XROWS * XCOLS * 8; ++i) {
        sh->buf[i] = xpattern(i);
    }
    dcx_mkey_interleaved_t e = ient(sh->buf + XCOL * 8, 8, (XCOLS - 1) * 8,
                                    mr->lkey);
    dcx_mkey_layout_t lay;
    memset(&lay, 0, sizeof(lay));
    lay.access       = RACC;
    lay.repeat_count = XROWS;
    lay.num_entries  = 1;
    lay.interleaved  = &e;
    dcx_send_wr_t w;
    memset(&w, 0, sizeof(w));
    w.opcode      = DCX_WR_MKEY_INTERLEAVED;
    w.flags       = DCX_SEND_SIGNALED;
    w.mkey        = k;
    w.mkey_layout = &lay;
    if ((owner_exec(t, w, DCX_WC_UMR) != 0) ||
        (dcx_dev_port_addr(t.dev, sh->addr, &len) != 0)) {
        return 11;
    }
    sh->addr_len = (uint32_t)len;
    sh->dctn     = t.dct->qp_num;
    sh->rkey     = k->rkey;
    sh->raddr    = 0; /* zero-based */
    __atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);

    dcx_wc_t wc;
    while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE)) {
        dcx_cq_poll(t.cq, 1, &wc); /* serves the peer */
    }
    w.opcode      = DCX_WR_MKEY_INVALIDATE;
    w.mkey_layout = nullptr;
    if (owner_exec(t, w, DCX_WC_LOCAL_INV) != 0) {
        return 12;
    }
    __atomic_store_n(&sh->ready2, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
        dcx_cq_poll(t.cq, 1, &wc);
    }
    /* the column holds what the peer wrote through the key before the
     * invalidation, and nothing else changed */
    for (size_t i = 0; i < XROWS * XCOLS * 8; ++i) {
        size_t el    = i / 8;
        uint8_t want = ((el % XCOLS) == XCOL) ?
                           xcolumn_value((el / XCOLS) * 8 + i % 8) :
                           xpattern(i);
        if (sh->buf[i] != want) {
            return 20;
        }
    }
    if (dcx_mkey_destroy(k) != 0) {
        return 13;
    }
    return 0;
}

} // namespace

TEST_F(soft, mkey_xproc_rkey_invalidated_bad_flow)
{
    shared_area *s = sh;
    ASSERT_GT(spawn([s]() { return mkey_owner_main(s); }), 0);
    ASSERT_TRUE(wait_flag(&sh->ready, 1, 20.0));
    node ini;
    ASSERT_EQ(0, open_initiator(ini));
    std::vector<uint8_t> lbuf(XROWS * 8 * 2);
    dcx_mr_t *lmr;
    ASSERT_EQ(0,
              ini.reg(lbuf.data(), lbuf.size(), DCX_ACCESS_LOCAL_WRITE, &lmr));
    for (size_t i = 0; i < XROWS * 8; ++i) {
        lbuf[i] = xcolumn_value(i);
    }
    auto run = [&](dcx_wr_opcode_t op, size_t loff, uint64_t raddr,
                   uint32_t len) {
        dcx_sge_t sge   = {(uint64_t)(uintptr_t)(lbuf.data() + loff), len,
                           lmr->lkey};
        dcx_send_wr_t w = make_wr(op, 1, &sge, 1, ini, sh);
        w.remote_addr   = raddr;
        dcx_wc_t wc;
        memset(&wc, 0xff, sizeof(wc));
        EXPECT_EQ(0, dcx_qp_post_send(ini.dci, &w));
        EXPECT_EQ(1, ini.poll(&wc, 1, 20.0));
        if (wc.status != DCX_WC_SUCCESS) {
            EXPECT_EQ(0, dcx_qp_recover(ini.dci));
        }
        return wc.status;
    };
    /* the column, written and read back through the key */
    ASSERT_EQ(DCX_WC_SUCCESS, run(DCX_WR_RDMA_WRITE, 0, 0, XROWS * 8));
    ASSERT_EQ(DCX_WC_SUCCESS, run(DCX_WR_RDMA_READ, XROWS * 8, 0, XROWS * 8));
    EXPECT_EQ(0, memcmp(&lbuf[0], &lbuf[XROWS * 8], XROWS * 8));
    /* past the layout's end */
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR,
              run(DCX_WR_RDMA_READ, 0, XROWS * 8 - 4, 8));
    /* the owner invalidates: error, 0 bytes written (checked by the owner) */
    __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
    ASSERT_TRUE(wait_flag(&sh->ready2, 1, 20.0));
    memset(lbuf.data(), 0x11, XROWS * 8);
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, run(DCX_WR_RDMA_WRITE, 0, 0, XROWS * 8));
    EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, run(DCX_WR_RDMA_READ, 0, 0, 8));
    EXPECT_TRUE(stop_children());
}

/* dcx_soft_qp_post_failing (dcx_soft.h): the WR completes in order with
 * the status given, unexecuted, and the DCI goes to ERR. */
TEST_F(soft_mkey, post_failing)
{
    const size_t rows = 8, cols = 4;
    dcx_mkey_t *k   = create(4);
    dcx_send_wr_t w = mkey_wr(DCX_WR_MKEY_INVALIDATE, k, nullptr);
    dcx_wc_t wc;

    interleaved(k, column(1, cols), rows);
    ASSERT_EQ(0, dcx_soft_qp_post_failing(n.dci, &w, DCX_WC_LOC_QP_OP_ERR));
    ASSERT_EQ(1, n.poll(&wc, 1, 20.0));
    EXPECT_EQ(0x77u, wc.wr_id);
    EXPECT_EQ(DCX_WC_LOC_QP_OP_ERR, wc.status);
    EXPECT_EQ(DCX_QPS_ERR, n.dci->state);
    /* the invalidation did not execute: the key still works */
    ASSERT_EQ(0, dcx_qp_recover(n.dci));
    EXPECT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_READ, k->rkey, 0, 0, 8));
}

TEST_F(soft_mkey, post_failing_bad_flow)
{
    dcx_mkey_t *k   = create(4);
    dcx_send_wr_t w = mkey_wr(DCX_WR_MKEY_INVALIDATE, k, nullptr);
    dcx_wc_t wc;

    for (int st : {(int)DCX_WC_SUCCESS, (int)DCX_WC_STATUS_LAST}) {
        log_counter logs;
        EXPECT_EQ(EINVAL,
                  dcx_soft_qp_post_failing(n.dci, &w, (dcx_wc_status_t)st));
        EXPECT_EQ(1, logs.lines()) << st;
    }
    {
        /* what any post refuses: a configure without a layout */
        dcx_send_wr_t c = mkey_wr(DCX_WR_MKEY_LIST, k, nullptr);
        log_counter logs;
        EXPECT_EQ(EINVAL,
                  dcx_soft_qp_post_failing(n.dci, &c, DCX_WC_LOC_QP_OP_ERR));
        EXPECT_EQ(1, logs.lines());
    }
    /* nothing was posted: the DCI still works */
    EXPECT_EQ(0, n.poll(&wc, 1, 0.0));
    invalidate(k);
}

/* limits.mkey_late: a configure is not executed by its own post but by a
 * later run of its QP, so work posted on another QP right after it may not
 * see the key yet (as on a ConnectX, where the UMR QP and a DCI are not
 * ordered); its completion says it is done; on its own QP the work after
 * it waits for it */
class soft_mkey_late : public soft_mkey {
protected:
    void limits(dcx_soft_limits_t &l) override { l.mkey_late = 1; }
};

TEST_F(soft_mkey_late, configure_runs_after_its_post)
{
    const size_t rows = 16, cols = 4;
    dcx_mkey_t *k = create(4);
    dcx_cq_t *ucq = nullptr;
    dcx_qp_t *uqp = nullptr;
    dcx_qp_attr_t a;
    dcx_wc_t wc;

    ASSERT_EQ(0, dcx_cq_create(n.dev, 16, &ucq));
    memset(&a, 0, sizeof(a));
    a.type          = DCX_QPT_DCI;
    a.send_cq       = ucq;
    a.max_send_wr   = 4;
    a.max_send_sge  = 1;
    a.max_rd_atomic = 1;
    ASSERT_EQ(0, dcx_qp_create(n.pd, &a, &uqp));

    std::vector<dcx_mkey_interleaved_t> e = column(1, cols);
    dcx_mkey_layout_t lay                 = interleaved_layout(e, rows, RACC);
    dcx_send_wr_t w = mkey_wr(DCX_WR_MKEY_INTERLEAVED, k, &lay);
    ASSERT_EQ(0, dcx_qp_post_send(uqp, &w));
    /* another QP, right after: the key is free unless a pass of the
     * device ran the configure meanwhile (the poll that completes this
     * WRITE runs every QP's requester, and the device's helper thread may
     * too), as a ConnectX may run the UMR before a later WRITE of another
     * QP or not; when refused, nothing was written */
    std::vector<uint8_t> before(mem);
    uint8_t st = rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, rows * 8);
    if (st == DCX_WC_REM_ACCESS_ERR) {
        EXPECT_EQ(before, mem);
    } else {
        EXPECT_EQ(DCX_WC_SUCCESS, st);
    }
    /* its completion: configured */
    double end = now_s() + 20.0;
    int got    = 0;
    while ((got == 0) && (now_s() < end)) {
        got = dcx_cq_poll(ucq, 1, &wc);
    }
    ASSERT_EQ(1, got);
    EXPECT_EQ(DCX_WC_SUCCESS, wc.status);
    EXPECT_EQ(DCX_WC_UMR, wc.opcode);
    for (size_t i = 0; i < rows * 8; ++i) {
        loc[i] = (uint8_t)(0x30 ^ i);
    }
    EXPECT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, 8));
    EXPECT_EQ(0, memcmp(&mem[8], loc.data(), 8));

    /* on one QP: an unsignalled configure, then a WRITE through the new
     * layout, which runs after it */
    std::vector<dcx_mkey_interleaved_t> e3 = column(3, cols);
    dcx_mkey_layout_t lay3                 = interleaved_layout(e3, rows, RACC);
    dcx_send_wr_t w3 = mkey_wr(DCX_WR_MKEY_INTERLEAVED, k, &lay3);
    w3.flags         = 0;
    ASSERT_EQ(0, dcx_qp_post_send(n.dci, &w3));
    EXPECT_EQ(DCX_WC_SUCCESS, rdma(DCX_WR_RDMA_WRITE, k->rkey, 0, 0, 8));
    EXPECT_EQ(0, memcmp(&mem[3 * 8], loc.data(), 8));

    EXPECT_EQ(0, dcx_qp_destroy(uqp));
    EXPECT_EQ(0, dcx_cq_destroy(ucq));
}
