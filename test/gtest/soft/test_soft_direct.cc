/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RDMA WRITE and READ executed by the initiator (soft_direct.c): a child
 * process is the initiator, the test process is the target, and the
 * target's memory is a shared mapping both can check byte by byte.  Writes
 * and reads of every size land while the target sleeps; refused accesses
 * take the target's responder; the grant of a checked destination is
 * checked again when the target changes; with cross-memory attach refused,
 * at open or later, writes and reads go by packets.  Work within the post
 * is tested in test_soft_direct_now.cc, races and ordering in
 * test_soft_direct_race.cc.
 */
#include "soft_direct_fixture.h"

#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>

/* Writes and reads of 1 B .. 16 MiB while the target process sleeps in a
 * blocking read: every byte lands, nothing around it changes, and the
 * target's device never saw a packet. */
TEST_F(soft_direct, write_read_target_asleep)
{
    const size_t sizes[] = {1,
                            7,
                            64,
                            4095,
                            4096,
                            65537,
                            (1u << 20) + 3,
                            4u << 20,
                            (8u << 20) - 1,
                            MAX_XFER};
    const size_t nsizes  = sizeof(sizes) / sizeof(sizes[0]);
    uint8_t *tm          = tmem;
    direct_info *in      = info;
    int wfd              = wake[1];

    memset(tmem, 0x5a, TMEM_SIZE);
    start_initiator([&sizes, nsizes, tm, in, wfd](node &n) -> int {
        local_buf lb;
        int rc = 0;

        if (lb.reg(n, MAX_XFER) != 0) {
            return 11;
        }
        for (size_t k = 0; (k < nsizes) && (rc == 0); ++k) {
            size_t sz    = sizes[k];
            size_t off   = (sz == MAX_XFER) ? 0 : (k * 3) % 64;
            uint8_t *dst = tm + PAGE + off;

            for (size_t i = 0; i < sz; ++i) {
                lb.v[i] = pattern(i, (unsigned)k);
            }
            dcx_sge_t s = lb.sge(0, (uint32_t)sz);
            if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, off,
                                 in->rkey)) != DCX_WC_SUCCESS) {
                fprintf(stderr, "write of %zu failed\n", sz);
                rc = 12;
                break;
            }
            for (size_t i = 0; i < sz; ++i) {
                if (dst[i] != pattern(i, (unsigned)k)) {
                    fprintf(stderr, "size %zu: byte %zu wrong\n", sz, i);
                    rc = 13;
                    break;
                }
            }
            for (size_t i = 0; (rc == 0) && (i < PAGE + off); ++i) {
                if (tm[i] != 0x5a) {
                    fprintf(stderr, "size %zu: byte before changed\n", sz);
                    rc = 14;
                }
            }
            for (size_t i = PAGE + off + sz; (rc == 0) && (i < TMEM_SIZE);
                 ++i) {
                if (tm[i] != 0x5a) {
                    fprintf(stderr, "size %zu: byte after changed\n", sz);
                    rc = 14;
                }
            }
            /* read back into a cleared buffer */
            memset(lb.v.data(), 0, sz);
            if ((rc == 0) && (run_one(n, wr_to(in, n, DCX_WR_RDMA_READ, &s, off,
                                               in->rkey)) != DCX_WC_SUCCESS)) {
                fprintf(stderr, "read of %zu failed\n", sz);
                rc = 15;
            }
            for (size_t i = 0; (rc == 0) && (i < sz); ++i) {
                if (lb.v[i] != pattern(i, (unsigned)k)) {
                    fprintf(stderr, "read %zu: byte %zu wrong\n", sz, i);
                    rc = 16;
                }
            }
            memset(dst, 0x5a, sz); /* restore for the next size */
        }
        if (write(wfd, "x", 1) != 1) {
            rc = 17;
        }
        return rc;
    });
    start_target();

    /* the target does nothing but wait here */
    char c;
    ASSERT_EQ(1, read(wake[0], &c, 1));
    ASSERT_TRUE(wait_done());
    dcx_soft_stats_t ts;
    ASSERT_EQ(0, dcx_soft_stats(t.dev, &ts));
    EXPECT_TRUE(stop_children());
    EXPECT_EQ(nsizes, info->stats.direct_writes);
    EXPECT_EQ(nsizes, info->stats.direct_reads);
    EXPECT_EQ(0u, info->stats.direct_fallbacks);
    EXPECT_EQ(0u, info->stats.tx_packets);
    EXPECT_EQ(0u, ts.rx_packets) << "the target's CPU served packets";
    EXPECT_EQ(0u, ts.helper_packets);
}

/* Every refused access takes the target's responder, which answers as it
 * always did: REM_ACCESS_ERR for a bad rkey, out of bounds, wrong access or
 * a deregistered key, a timeout for a wrong DC key; nothing is written. */
TEST_F(soft_direct, refused_accesses_bad_flow)
{
    uint8_t *tm       = tmem;
    direct_info *in   = info;
    const size_t rlen = 1u << 20;

    memset(tmem, 0x5a, TMEM_SIZE);
    start_initiator([tm, in, rlen](node &n) -> int {
        local_buf lb;
        struct {
            const char *what;
            dcx_wr_opcode_t op;
            uint32_t rkey;
            uint64_t off;
            uint32_t len;
            uint64_t dc_key;
            int status;
        } cases[] = {
            {"bad rkey", DCX_WR_RDMA_WRITE, in->rkey ^ 0x100u, 0, 4096,
             in->dc_key, DCX_WC_REM_ACCESS_ERR},
            {"bad rkey read", DCX_WR_RDMA_READ, in->rkey ^ 0x100u, 0, 4096,
             in->dc_key, DCX_WC_REM_ACCESS_ERR},
            {"out of bounds", DCX_WR_RDMA_WRITE, in->rkey, rlen - 8, 16,
             in->dc_key, DCX_WC_REM_ACCESS_ERR},
            {"out of bounds read", DCX_WR_RDMA_READ, in->rkey, rlen - 8, 16,
             in->dc_key, DCX_WC_REM_ACCESS_ERR},
            {"read-only key", DCX_WR_RDMA_WRITE, in->rkey_ro, 0, 4096,
             in->dc_key, DCX_WC_REM_ACCESS_ERR},
            {"deregistered key", DCX_WR_RDMA_WRITE, in->rkey_gone, 0, 4096,
             in->dc_key, DCX_WC_REM_ACCESS_ERR},
            {"wrong dc key", DCX_WR_RDMA_WRITE, in->rkey, 0, 4096,
             in->dc_key + 1, DCX_WC_RETRY_EXC_ERR},
        };
        int rc = 0;

        if (lb.reg(n, 8192) != 0) {
            return 11;
        }
        for (auto &c : cases) {
            memset(lb.v.data(), 0xc3, lb.v.size());
            dcx_sge_t s      = lb.sge(0, c.len);
            dcx_send_wr_t wr = wr_to(in, n, c.op, &s, c.off, c.rkey);
            wr.dest.dc_key   = c.dc_key;
            int st           = run_one(n, wr);
            if (st != c.status) {
                fprintf(stderr, "%s: status %d, expected %d\n", c.what, st,
                        c.status);
                rc = 12;
            }
            for (size_t i = 0; i < TMEM_SIZE; ++i) {
                if (tm[i] != 0x5a) {
                    fprintf(stderr, "%s: target byte %zu written\n", c.what, i);
                    rc = 13;
                    break;
                }
            }
            if ((c.op == DCX_WR_RDMA_READ) && (lb.v[0] != 0xc3)) {
                fprintf(stderr, "%s: local buffer written\n", c.what);
                rc = 14;
            }
            if (renew_dci(n) != 0) {
                return 15;
            }
        }
        return rc;
    });
    start_target(rlen);
    ASSERT_TRUE(wait_done(120.0));
    EXPECT_TRUE(stop_children());
    EXPECT_EQ(0u, info->stats.direct_writes);
    EXPECT_EQ(0u, info->stats.direct_reads);
    /* one refused copy per case that got as far as its marker (all but the
     * wrong DC key): a copy the post tried is not tried again by the
     * engine */
    EXPECT_EQ(6u, info->stats.direct_fallbacks);
}

/* Small copies after a granted one (soft_dgrant_t) check only what could
 * have changed: each change below -- a range past the MR, another DC key,
 * a key without the access, the MR deregistered -- is refused as without
 * the grant, nothing is written, and a grant is made again only after a
 * copy that passed every check. */
TEST_F(soft_direct, grant_rechecks_target_changes_bad_flow)
{
    direct_info *in = info;

    memset(tmem, 0x5a, TMEM_SIZE);
    start_initiator([in](node &n) -> int {
        local_buf lb;
        struct {
            const char *what;
            dcx_wr_opcode_t op;
            uint32_t rkey;
            uint64_t off;
            uint32_t len;
            uint64_t dc_key;
            int status;
            bool wait_dereg; /* the target deregisters its MR first */
        } steps[] = {
            {"first write", DCX_WR_RDMA_WRITE, in->rkey, 0, 8, in->dc_key,
             DCX_WC_SUCCESS, false},
            {"granted write", DCX_WR_RDMA_WRITE, in->rkey, 64, 8, in->dc_key,
             DCX_WC_SUCCESS, false},
            {"granted read", DCX_WR_RDMA_READ, in->rkey, 0, 8, in->dc_key,
             DCX_WC_SUCCESS, false},
            {"past the MR", DCX_WR_RDMA_WRITE, in->rkey, in->rlen - 4, 8,
             in->dc_key, DCX_WC_REM_ACCESS_ERR, false},
            {"write granted again", DCX_WR_RDMA_WRITE, in->rkey, 128, 8,
             in->dc_key, DCX_WC_SUCCESS, false},
            {"other dc key", DCX_WR_RDMA_WRITE, in->rkey, 4096, 8,
             in->dc_key + 1, DCX_WC_RETRY_EXC_ERR, false},
            {"write after the dc key", DCX_WR_RDMA_WRITE, in->rkey, 192, 8,
             in->dc_key, DCX_WC_SUCCESS, false},
            {"read-only key read", DCX_WR_RDMA_READ, in->rkey_ro, 64, 8,
             in->dc_key, DCX_WC_SUCCESS, false},
            {"read-only key write", DCX_WR_RDMA_WRITE, in->rkey_ro, 4096, 8,
             in->dc_key, DCX_WC_REM_ACCESS_ERR, false},
            {"last granted write", DCX_WR_RDMA_WRITE, in->rkey, 256, 8,
             in->dc_key, DCX_WC_SUCCESS, false},
            {"deregistered", DCX_WR_RDMA_WRITE, in->rkey, 4096, 8, in->dc_key,
             DCX_WC_REM_ACCESS_ERR, true},
        };
        int rc = 0;

        if (lb.reg(n, 64) != 0) {
            return 11;
        }
        for (auto &c : steps) {
            if (c.wait_dereg) {
                if (!ask_dereg(in)) {
                    return 12;
                }
            }
            memset(lb.v.data(), (c.op == DCX_WR_RDMA_READ) ? 0 : 0x11, 64);
            dcx_sge_t s      = lb.sge(0, c.len);
            dcx_send_wr_t wr = wr_to(in, n, c.op, &s, c.off, c.rkey);
            wr.dest.dc_key   = c.dc_key;
            int st           = run_one(n, wr);
            if (st != c.status) {
                fprintf(stderr, "%s: status %d, expected %d\n", c.what, st,
                        c.status);
                rc = 13;
            }
            if ((c.op == DCX_WR_RDMA_READ) && (c.status == DCX_WC_SUCCESS) &&
                (lb.v[0] != 0x11)) {
                fprintf(stderr, "%s: read 0x%x\n", c.what, lb.v[0]);
                rc = 14;
            }
            if ((st != DCX_WC_SUCCESS) && (renew_dci(n) != 0)) {
                return 15;
            }
        }
        return rc;
    });
    start_target();
    ASSERT_NO_FATAL_FAILURE(dereg_when_asked());
    ASSERT_TRUE(wait_done(120.0));
    EXPECT_TRUE(stop_children());
    ASSERT_NO_FATAL_FAILURE(expect_eight_every_64(5));
    /* made at the first write and again after each refusal; the copies
     * between took it */
    EXPECT_EQ(5u, info->stats.direct_grants);
    EXPECT_EQ(5u, info->stats.direct_writes);
    EXPECT_EQ(2u, info->stats.direct_reads);
}

/* A grant follows what its target changes in one word, the target's gen:
 * a fault rule there (its responder must see the packets), the rule
 * cleared, its DCT destroyed.  Each change is made while the initiator
 * holds a grant, and the next write must not take it: by packets while the
 * rule stands, direct again after it is cleared, and no write at all once
 * the DCT is gone (the write times out, the target's memory unchanged). */
TEST_F(soft_direct, grant_follows_target_gen_bad_flow)
{
    direct_info *in = info;

    memset(tmem, 0x5a, TMEM_SIZE);
    start_initiator([in](node &n) -> int {
        local_buf lb;
        struct {
            const char *what;
            uint32_t action; /* the target's change first (0: none) */
            int status;
            uint64_t direct; /* the write went direct */
        } steps[] = {
            {"first write", 0, DCX_WC_SUCCESS, 1},
            {"granted write", 0, DCX_WC_SUCCESS, 1},
            {"under a fault rule", 1, DCX_WC_SUCCESS, 0},
            {"rule cleared", 2, DCX_WC_SUCCESS, 1},
            {"granted again", 0, DCX_WC_SUCCESS, 1},
            {"DCT destroyed", 3, DCX_WC_RETRY_EXC_ERR, 0},
        };
        dcx_soft_stats_t before, after;
        uint64_t off = 0;
        int rc       = 0;

        if (lb.reg(n, 64) != 0) {
            return 11;
        }
        memset(lb.v.data(), 0x11, 64);
        for (auto &c : steps) {
            if ((c.action != 0) && !ask_target(in, c.action)) {
                return 12;
            }
            dcx_sge_t s      = lb.sge(0, 8);
            dcx_send_wr_t wr = wr_to(in, n, DCX_WR_RDMA_WRITE, &s, off,
                                     in->rkey);
            dcx_soft_stats(n.dev, &before);
            int st = run_one(n, wr);
            dcx_soft_stats(n.dev, &after);
            if ((st != c.status) ||
                (after.direct_writes - before.direct_writes != c.direct)) {
                fprintf(stderr,
                        "%s: status %d, expected %d; direct %llu, "
                        "expected %llu\n",
                        c.what, st, c.status,
                        (unsigned long long)(after.direct_writes -
                                             before.direct_writes),
                        (unsigned long long)c.direct);
                rc = 13;
            }
            if ((st != DCX_WC_SUCCESS) && (renew_dci(n) != 0)) {
                return 15;
            }
            off += 64;
        }
        return rc;
    });
    start_target();
    ASSERT_NO_FATAL_FAILURE(act_when_asked(3, [this](uint32_t action) {
        dcx_soft_fault_t f = {};

        switch (action) {
        case 1: /* a rule for packets this test never sends */
            f.type     = DCX_SOFT_FAULT_DELAY;
            f.opcode   = DCX_WR_SEND;
            f.delay_us = 1;
            ASSERT_EQ(0, dcx_soft_fault_inject(t.dev, &f));
            break;
        case 2:
            dcx_soft_fault_clear(t.dev);
            break;
        default:
            ASSERT_EQ(0, dcx_qp_destroy(t.dct));
            t.dct = nullptr;
            break;
        }
    }));
    ASSERT_TRUE(wait_done(120.0));
    EXPECT_TRUE(stop_children());
    ASSERT_NO_FATAL_FAILURE(expect_eight_every_64(5));
}

namespace {

/* makes process_vm_readv/writev fail with EPERM in this process, as a
 * container's or a sandbox's policy does */
bool refuse_cross_memory_attach()
{
    return refuse_syscalls({__NR_process_vm_readv, __NR_process_vm_writev},
                           EPERM);
}

int write_read_check(node &n, const direct_info *in, uint8_t *tm, unsigned seed)
{
    local_buf lb;
    const size_t sz = 100000;

    if (lb.reg(n, sz) != 0) {
        return 21;
    }
    for (size_t i = 0; i < sz; ++i) {
        lb.v[i] = pattern(i, seed);
    }
    dcx_sge_t s = lb.sge(0, (uint32_t)sz);
    if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, 0, in->rkey)) !=
        DCX_WC_SUCCESS) {
        return 22;
    }
    for (size_t i = 0; i < sz; ++i) {
        if (tm[PAGE + i] != pattern(i, seed)) {
            return 23;
        }
    }
    memset(lb.v.data(), 0, sz);
    if (run_one(n, wr_to(in, n, DCX_WR_RDMA_READ, &s, 0, in->rkey)) !=
        DCX_WC_SUCCESS) {
        return 24;
    }
    for (size_t i = 0; i < sz; ++i) {
        if (lb.v[i] != pattern(i, seed)) {
            return 25;
        }
    }
    return 0;
}

} // namespace

/* Cross-memory attach refused from the start (the probe at open fails):
 * writes and reads go through the target's responder and still work. */
TEST_F(soft_direct, refused_at_open_falls_back)
{
    direct_info *in = info;
    uint8_t *tm     = tmem;
    std::string fab = fabric;

    spawn([in, tm, fab]() -> int {
        dcx_soft_limits_t l = limits(true);
        node n;
        int rc;

        if (!refuse_cross_memory_attach()) {
            fprintf(stderr, "seccomp filter refused\n");
            return 30;
        }
        if (!wait_flag(&in->ready, 1, 20.0) || (n.open(fab.c_str(), &l) != 0) ||
            (n.make_dci() != 0) || (n.connect(in->addr, in->addr_len) != 0)) {
            return 10;
        }
        rc = write_read_check(n, in, tm, 1);
        dcx_soft_stats(n.dev, &in->stats);
        n.close();
        __atomic_store_n(&in->done, 1, __ATOMIC_RELEASE);
        return rc;
    });
    ASSERT_NO_FATAL_FAILURE(run_target());
    expect_by_packets(0);
}

/* Refused towards this target after the device opened (EPERM at the first
 * copy): that operation and the later ones go by packets, once noticed. */
TEST_F(soft_direct, refused_later_falls_back)
{
    direct_info *in = info;
    uint8_t *tm     = tmem;

    start_initiator([in, tm](node &n) -> int {
        int rc = write_read_check(n, in, tm, 2);

        if (rc != 0) {
            return rc;
        }
        if (!refuse_cross_memory_attach()) {
            return 30;
        }
        rc = write_read_check(n, in, tm, 3);
        return rc ? rc : write_read_check(n, in, tm, 4);
    });
    ASSERT_NO_FATAL_FAILURE(run_target());
    expect_by_packets(1);
}
