/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RDMA WRITE and READ the initiator does within its post (DCX_SEND_NOW),
 * between a child initiator and the test process as target: a READ or a
 * WRITE is done within the call only under the grant of a destination
 * checked before, anything else is declined (EAGAIN) and, posted, says
 * why; inline WRITEs from any memory; a copy in the post leaves the engine
 * idle; unsignaled inline WRITEs land within their post yet hold their
 * send-queue slot until a signaled completion is polled.
 */
#include "soft_direct_fixture.h"

#include <algorithm>
#include <errno.h>
#include <stdio.h>

/* The initiator's side of the tests of work within the call: wr, which
 * the post with DCX_SEND_NOW answered 'now' (0: done within the call; else
 * declined), is posted without the flag when it was declined and must end
 * in status (the DCI renewed after an error).  0, 1 if an answer was not
 * the one expected (said on stderr), -1 if the DCI could not be renewed. */
int post_now_then_posted(node &n, const dcx_send_wr_t &wr, const char *what,
                         int now, int now_expected, int status)
{
    int rc = 0, st;

    if (now != now_expected) {
        fprintf(stderr, "%s: within the call %d, expected %d\n", what, now,
                now_expected);
        rc = 1;
    }
    if (now == 0) {
        return rc;
    }
    st = run_one(n, wr);
    if (st != status) {
        fprintf(stderr, "%s: status %d, expected %d\n", what, st, status);
        rc = 1;
    }
    if ((st != DCX_WC_SUCCESS) && (renew_dci(n) != 0)) {
        return -1;
    }
    return rc;
}

/* A READ flagged DCX_SEND_NOW lands its bytes in the caller's buffer
 * within the call only where the grant covers it (a READ to the same DCT
 * and key that passed every check before, within the MR, a key with read
 * access): anything else declines with EAGAIN, the buffer untouched, and
 * the posted READ says why -- a range past the MR, another DC key, another
 * key, the MR deregistered.  A WRITE with a read-only key is declined
 * too. */
TEST_F(soft_direct, read_now_only_under_grant_bad_flow)
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
            bool wait_dereg; /* the target deregisters its MR first */
            int now;         /* the post's return with DCX_SEND_NOW */
            int status;      /* then the posted WR's, when it declined */
        } steps[] = {
            {"before any check", DCX_WR_RDMA_READ, in->rkey, 0, 8, in->dc_key,
             false, EAGAIN, DCX_WC_SUCCESS},
            {"granted", DCX_WR_RDMA_READ, in->rkey, 64, 16, in->dc_key, false,
             0, 0},
            {"granted, another", DCX_WR_RDMA_READ, in->rkey, 32, 8, in->dc_key,
             false, 0, 0},
            {"past the MR", DCX_WR_RDMA_READ, in->rkey, in->rlen - 4, 8,
             in->dc_key, false, EAGAIN, DCX_WC_REM_ACCESS_ERR},
            {"granted again", DCX_WR_RDMA_READ, in->rkey, 128, 8, in->dc_key,
             false, EAGAIN, DCX_WC_SUCCESS},
            {"after the refusal", DCX_WR_RDMA_READ, in->rkey, 0, 4096,
             in->dc_key, false, 0, 0},
            {"other dc key", DCX_WR_RDMA_READ, in->rkey, 0, 8, in->dc_key + 1,
             false, EAGAIN, DCX_WC_RETRY_EXC_ERR},
            {"read-only key", DCX_WR_RDMA_READ, in->rkey_ro, 0, 8, in->dc_key,
             false, EAGAIN, DCX_WC_SUCCESS},
            {"read-only key granted", DCX_WR_RDMA_READ, in->rkey_ro, 8, 8,
             in->dc_key, false, 0, 0},
            {"a write", DCX_WR_RDMA_WRITE, in->rkey_ro, 0, 8, in->dc_key, false,
             EAGAIN, DCX_WC_REM_ACCESS_ERR},
            {"write refused, read again", DCX_WR_RDMA_READ, in->rkey_ro, 8, 8,
             in->dc_key, false, EAGAIN, DCX_WC_SUCCESS},
            {"the first key again", DCX_WR_RDMA_READ, in->rkey, 8, 8,
             in->dc_key, false, EAGAIN, DCX_WC_SUCCESS},
            {"the first key granted", DCX_WR_RDMA_READ, in->rkey, 16, 8,
             in->dc_key, false, 0, 0},
            {"deregistered", DCX_WR_RDMA_READ, in->rkey, 16, 8, in->dc_key,
             true, EAGAIN, DCX_WC_REM_ACCESS_ERR},
        };
        int rc = 0;

        if (lb.reg(n, 4096) != 0) {
            return 11;
        }
        for (auto &c : steps) {
            if (c.wait_dereg && !ask_dereg(in)) {
                return 12;
            }
            memset(lb.v.data(), 0x11, 4096);
            dcx_sge_t s      = lb.sge(0, c.len);
            dcx_send_wr_t wr = wr_to(in, n, c.op, &s, c.off, c.rkey);
            wr.dest.dc_key   = c.dc_key;
            int now          = post_now(n, wr);
            bool read_now    = (now == 0) && (c.op == DCX_WR_RDMA_READ);
            if (std::count(lb.v.begin(), lb.v.end(), 0x5a) !=
                (std::ptrdiff_t)(read_now ? c.len : 0)) {
                fprintf(stderr, "%s: wrong bytes\n", c.what);
                rc = 14;
            }
            int r = post_now_then_posted(n, wr, c.what, now, c.now, c.status);
            if (r < 0) {
                return 16;
            }
            rc = (r > 0) ? 15 : rc;
        }
        return rc;
    });
    start_target();
    ASSERT_NO_FATAL_FAILURE(dereg_when_asked());
    ASSERT_TRUE(wait_done(120.0));
    EXPECT_TRUE(stop_children());
    for (size_t i = 0; i < TMEM_SIZE; ++i) {
        ASSERT_EQ(0x5a, tmem[i]) << "byte " << i; /* nothing written */
    }
    /* five posted READs and five within the call */
    EXPECT_EQ(10u, info->stats.direct_reads);
}

/* A WRITE flagged DCX_SEND_NOW, not inline, copies its one registered sge
 * to the target within the call only where the grant covers it and the
 * sge passes a posted WRITE's checks: a range past the MR, a key without
 * write access, a bad local key, a local range past its MR, the MR
 * deregistered -- each declined with nothing written, and the posted
 * WRITE says why. */
TEST_F(soft_direct, write_now_only_under_grant_bad_flow)
{
    uint8_t *tm     = tmem;
    direct_info *in = info;

    memset(tmem, 0x5a, TMEM_SIZE);
    start_initiator([in](node &n) -> int {
        local_buf lb;
        struct {
            const char *what;
            uint32_t rkey;
            uint64_t off;
            uint32_t len;
            int bad_lkey;    /* 1: no such key; 2: the range past its MR */
            bool wait_dereg; /* the target deregisters its MR first */
            int now;         /* the post's return with DCX_SEND_NOW */
            int status;      /* then the posted WR's, when it declined */
        } steps[] = {
            {"before any check", in->rkey, 0, 8, 0, false, EAGAIN,
             DCX_WC_SUCCESS},
            {"granted", in->rkey, 64, 16, 0, false, 0, 0},
            {"granted, 4 KiB", in->rkey, 4096, 4096, 0, false, 0, 0},
            {"past the MR", in->rkey, in->rlen - 4, 8, 0, false, EAGAIN,
             DCX_WC_REM_ACCESS_ERR},
            {"granted again", in->rkey, 128, 8, 0, false, EAGAIN,
             DCX_WC_SUCCESS},
            {"read-only key", in->rkey_ro, 192, 8, 0, false, EAGAIN,
             DCX_WC_REM_ACCESS_ERR},
            {"after the refusal", in->rkey, 256, 8, 0, false, EAGAIN,
             DCX_WC_SUCCESS},
            {"bad local key", in->rkey, 320, 8, 1, false, EAGAIN,
             DCX_WC_LOC_PROT_ERR},
            {"local range past its MR", in->rkey, 384, 8, 2, false, EAGAIN,
             DCX_WC_LOC_PROT_ERR},
            /* the grant is the peer's: the renewed DCI's first WR */
            {"granted, renewed DCI", in->rkey, 448, 8, 0, false, 0, 0},
            {"granted last", in->rkey, 512, 8, 0, false, 0, 0},
            {"deregistered", in->rkey, 576, 8, 0, true, EAGAIN,
             DCX_WC_REM_ACCESS_ERR},
        };
        int rc = 0;

        if (lb.reg(n, 8192) != 0) {
            return 11;
        }
        memset(lb.v.data(), 0x11, lb.v.size());
        for (auto &c : steps) {
            if (c.wait_dereg && !ask_dereg(in)) {
                return 12;
            }
            dcx_sge_t sg = lb.sge(0, c.len);
            if (c.bad_lkey == 1) {
                sg.lkey ^= 0x5a5a00;
            } else if (c.bad_lkey == 2) {
                sg = lb.sge(8192 - 4, c.len);
            }
            dcx_send_wr_t wr = wr_to(in, n, DCX_WR_RDMA_WRITE, &sg, c.off,
                                     c.rkey);
            int now          = post_now(n, wr);
            int r = post_now_then_posted(n, wr, c.what, now, c.now, c.status);
            if (r < 0) {
                return 15;
            }
            rc = (r > 0) ? 14 : rc;
        }
        return rc;
    });
    start_target();
    ASSERT_NO_FATAL_FAILURE(dereg_when_asked());
    ASSERT_TRUE(wait_done(120.0));
    EXPECT_TRUE(stop_children());
    /* written: the granted and the posted successes, nothing else */
    const struct {
        uint64_t off, len;
    } written[] = {{0, 8},   {64, 16}, {4096, 4096}, {128, 8},
                   {256, 8}, {448, 8}, {512, 8}};
    for (size_t i = 0; i < TMEM_SIZE; ++i) {
        bool w = false;

        for (auto &r : written) {
            w |= (i >= PAGE + r.off) && (i < PAGE + r.off + r.len);
        }
        ASSERT_EQ(w ? 0x11 : 0x5a, tm[i]) << "byte " << i;
    }
    /* three posted and four copied within the call */
    EXPECT_EQ(7u, info->stats.direct_writes);
}

/* An inline WRITE flagged DCX_SEND_NOW takes its bytes from any memory,
 * registered or not, and not only up to max_inline (within the call it is
 * no post); done only under the grant, like any WRITE there.  One past the
 * MR is declined and, posted, fails.  A WR with no destination is
 * declined, a WRITE and a READ alike, the READ's buffer untouched. */
TEST_F(soft_direct, inline_write_now_bad_flow)
{
    uint8_t *tm     = tmem;
    direct_info *in = info;

    memset(tmem, 0x5a, TMEM_SIZE);
    start_initiator([in](node &n) -> int {
        std::vector<uint8_t> plain(n.dci->max_inline + 1, 0x22);
        local_buf reg; /* registered bytes: as good as any */
        if (reg.reg(n, 64) != 0) {
            return 17;
        }
        memset(reg.v.data(), 0x22, 64);
        in->max_inline = n.dci->max_inline;
        struct {
            const char *what;
            uint64_t off;
            uint32_t len;
            bool registered; /* from reg, not plain */
            int now;         /* the post's return with DCX_SEND_NOW */
            int status;      /* then the posted WR's */
        } steps[] = {
            {"before any check", 0, 8, false, EAGAIN, DCX_WC_SUCCESS},
            {"granted", 64, 16, false, 0, 0},
            {"granted, max_inline", 4096, n.dci->max_inline, false, 0, 0},
            {"granted, registered bytes", 128, 16, true, 0, 0},
            {"longer than max_inline", 8192, n.dci->max_inline + 1, false, 0,
             0},
            {"past the MR", in->rlen - 4, 8, false, EAGAIN,
             DCX_WC_REM_ACCESS_ERR},
            {"after the refusal", 192, 8, false, EAGAIN, DCX_WC_SUCCESS},
            {"granted last", 256, 8, false, 0, 0},
        };
        int rc = 0;

        for (auto &c : steps) {
            dcx_sge_t sg     = c.registered ?
                                   reg.sge(0, c.len) :
                                   dcx_sge_t{(uint64_t)(uintptr_t)plain.data(),
                                         c.len, 0};
            dcx_send_wr_t wr = wr_to(in, n, DCX_WR_RDMA_WRITE, &sg, c.off,
                                     in->rkey);
            wr.flags |= DCX_SEND_INLINE;
            int now = post_now(n, wr);
            int r   = post_now_then_posted(n, wr, c.what, now, c.now, c.status);
            if (r < 0) {
                return 15;
            }
            if (r > 0) {
                fprintf(stderr, "%s: now %d, expected %d\n", c.what, now,
                        c.now);
                rc = 14;
            }
        }
        /* no destination: declined, for a WRITE and a READ alike, with the
         * grant in place (it was dereferenced) */
        dcx_sge_t sg     = {(uint64_t)(uintptr_t)plain.data(), 8, 0};
        dcx_send_wr_t wr = wr_to(in, n, DCX_WR_RDMA_READ, &sg, 320, in->rkey);
        wr.dest.ah       = nullptr;
        if ((post_now(n, wr) != EAGAIN) ||
            (std::count(plain.begin(), plain.end(), 0x22) !=
             (std::ptrdiff_t)plain.size())) {
            fprintf(stderr, "no destination: READ not declined\n");
            rc = 16;
        }
        wr.opcode = DCX_WR_RDMA_WRITE;
        wr.flags |= DCX_SEND_INLINE;
        if (post_now(n, wr) != EAGAIN) {
            fprintf(stderr, "no destination: WRITE not declined\n");
            rc = 16;
        }
        return rc;
    });
    run_target();
    const struct {
        uint64_t off, len;
    } written[] = {{0, 8}, {64, 16}, {128, 16}, {192, 8}, {256, 8}};
    for (size_t i = 0; i < TMEM_SIZE; ++i) {
        bool w = ((i >= PAGE + 4096) && (i < PAGE + 4096 + info->max_inline)) ||
                 ((i >= PAGE + 8192) &&
                  (i < PAGE + 8192 + info->max_inline + 1));
        for (auto &r : written) {
            w |= (i >= PAGE + r.off) && (i < PAGE + r.off + r.len);
        }
        ASSERT_EQ(w ? 0x22 : 0x5a, tm[i]) << "byte " << i;
    }
}

/* A WRITE or READ the initiator copies while posting (the general path:
 * data in an sge) completes in the post and leaves the engine as it found
 * it: idle, the DCI not active, so the poll that takes the completion
 * runs no engine pass for it. */
TEST_F(soft_direct, copy_in_post_leaves_engine_idle)
{
    direct_info *in = info;

    memset(tmem, 0, TMEM_SIZE);
    start_initiator([in](node &n) -> int {
        soft_dev_t *sdev            = soft_dev(n.dev);
        soft_qp_t *dci              = (soft_qp_t *)n.dci;
        const dcx_wr_opcode_t ops[] = {DCX_WR_RDMA_WRITE, DCX_WR_RDMA_READ,
                                       DCX_WR_RDMA_WRITE, DCX_WR_RDMA_READ};
        local_buf lb;
        dcx_wc_t wc;

        if (lb.reg(n, 4096) != 0) {
            return 11;
        }
        for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i) {
            dcx_sge_t s      = lb.sge(0, 64);
            dcx_send_wr_t wr = wr_to(in, n, ops[i], &s, 64 * i, in->rkey);

            /* the engine settled first (the helper may hold a pass) */
            if (n.poll(&wc, 1, 0.05) != 0) {
                return 12;
            }
            if (dcx_qp_post_send(n.dci, &wr) != 0) {
                return 13;
            }
            if ((__atomic_load_n(&sdev->engine_idle, __ATOMIC_RELAXED) !=
                 SOFT_ENGINE_IDLE) ||
                dci->active) {
                fprintf(stderr, "op %zu: engine %d, dci active %d\n", i,
                        sdev->engine_idle, dci->active);
                return 14;
            }
            if ((n.poll(&wc, 1, 30.0) != 1) || (wc.status != DCX_WC_SUCCESS)) {
                return 15;
            }
        }
        return 0;
    });
    ASSERT_NO_FATAL_FAILURE(run_target());
    EXPECT_EQ(2u, info->stats.direct_writes);
    EXPECT_EQ(2u, info->stats.direct_reads);
}

/* Unsignaled inline WRITEs to a granted target, on a DCI with nothing
 * outstanding, are copied from the caller's buffer while posting, with no
 * WQE written: each lands before its post returns and completes at once,
 * but still takes its send-queue slot until a signaled completion is
 * polled, so the queue overflows (ENOMEM) after as many as it holds, as
 * on the hardware.  Once the target deregisters its MR, the next one is
 * refused as any: an error completion, unsignaled or not, and nothing
 * written. */
TEST_F(soft_direct, unsignaled_inline_write_bad_flow)
{
    uint8_t *tm     = tmem;
    direct_info *in = info;

    memset(tmem, 0, TMEM_SIZE);
    start_initiator([in, tm](node &n) -> int {
        soft_qp_t *dci = (soft_qp_t *)n.dci;
        uint32_t size  = dci->sq_size;
        local_buf lb;
        dcx_wc_t wc;
        uint64_t v;

        if (lb.reg(n, 64) != 0) {
            return 11;
        }
        memset(lb.v.data(), 0x11, 64);
        dcx_sge_t s = lb.sge(0, 8);
        if (run_one(n, wr_to(in, n, DCX_WR_RDMA_WRITE, &s, 0, in->rkey)) !=
            DCX_WC_SUCCESS) {
            return 12;
        }
        for (v = 1; v <= size + 1; ++v) {
            dcx_sge_t vs     = {(uint64_t)(uintptr_t)&v, sizeof(v), 0};
            dcx_send_wr_t wr = wr_to(in, n, DCX_WR_RDMA_WRITE, &vs,
                                     64 + 8 * (v % 8), in->rkey);
            uint64_t got;
            int ret;

            wr.flags = DCX_SEND_INLINE;
            ret      = dcx_qp_post_send(n.dci, &wr);
            if (v == size + 1) {
                /* every slot taken, none retired by a polled completion */
                if (ret != ENOMEM) {
                    fprintf(stderr, "post %llu past %u slots: %d\n",
                            (unsigned long long)v, size, ret);
                    return 13;
                }
                break;
            }
            memcpy(&got, tm + PAGE + 64 + 8 * (v % 8), sizeof(got));
            if ((ret != 0) || (got != v) || (dci->sq_comp != dci->sq_head)) {
                fprintf(stderr, "write %llu: %d, read %llu, sq %u/%u\n",
                        (unsigned long long)v, ret, (unsigned long long)got,
                        dci->sq_comp, dci->sq_head);
                return 14;
            }
        }
        if (n.poll(&wc, 1, 0.05) != 0) {
            return 15; /* nothing to complete */
        }
        if (renew_dci(n) != 0) {
            return 16;
        }
        if (!ask_dereg(in)) {
            return 17;
        }
        dcx_sge_t vs     = {(uint64_t)(uintptr_t)&v, sizeof(v), 0};
        dcx_send_wr_t wr = wr_to(in, n, DCX_WR_RDMA_WRITE, &vs, 4096, in->rkey);
        wr.flags         = DCX_SEND_INLINE;
        if ((dcx_qp_post_send(n.dci, &wr) != 0) ||
            (n.poll(&wc, 1, 30.0) != 1)) {
            return 18;
        }
        in->status = wc.status;
        in->rlen   = size; /* reported back */
        return 0;
    });
    start_target();
    ASSERT_NO_FATAL_FAILURE(dereg_when_asked());
    ASSERT_TRUE(wait_done());
    EXPECT_TRUE(stop_children());
    EXPECT_EQ((uint32_t)DCX_WC_REM_ACCESS_ERR, info->status);
    for (size_t i = PAGE + 4096; i < PAGE + 4104; ++i) {
        ASSERT_EQ(0, tmem[i]) << "byte " << i;
    }
    EXPECT_EQ(1u + info->rlen, info->stats.direct_writes);
    EXPECT_EQ(1u, info->stats.direct_grants);
}
