/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the soft device's one-sided transfer tests
 * (test_soft_direct*.cc: cross-memory attach; test_soft_dmap.cc and
 * test_soft_dmap_cache.cc: mapped device allocations): a child initiator
 * that posts RDMA WRITE/READ to the test process's target and checks every
 * byte.
 */
#ifndef DCX_TEST_SOFT_XFER_H
#define DCX_TEST_SOFT_XFER_H

#include "soft_fixture.h"

#include <functional>
#include <stdint.h>
#include <stdio.h>
#include <string>
#include <vector>

namespace soft_test {

/* The fixture's limits for transfer tests (100 ms ack timeout, 7 retries,
 * 1 ms RNR timer), the initiator-side path on or off */
dcx_soft_limits_t xfer_limits(bool direct);

/* Waits until *v >= n; false after timeout_s */
bool wait_at_least(volatile uint32_t *v, uint32_t n, double timeout_s);

/* Byte i of test pattern 'seed' (never 0) */
static inline uint8_t pattern(size_t i, unsigned seed)
{
    return (uint8_t)((i * 131u + seed * 7u + (i >> 9)) | 1u);
}

/* A signalled one-sge (or, sge NULL, zero-sge) RDMA WR from n to the DCT
 * dctn/dc_key, at raddr under rkey */
dcx_send_wr_t rdma_wr(const node &n, uint32_t dctn, uint64_t dc_key,
                      dcx_wr_opcode_t op, const dcx_sge_t *sge, uint64_t raddr,
                      uint32_t rkey);

/* Posts one WR and waits for its completion: its status, or -1 */
int run_one(node &n, const dcx_send_wr_t &wr);

/* wr, flagged DCX_SEND_NOW, through n's DCI: the post's return (0 done
 * within the call, else declined) */
int post_now(node &n, const dcx_send_wr_t &wr);

/* Posts wr (its sge replaced by a registered buffer of len bytes of 0xab)
 * again and again, counting each success in *progress, until one fails;
 * its status goes to *status.  11 if the buffer cannot be registered,
 * else 0. */
int write_until_error(node &n, size_t len, dcx_send_wr_t wr,
                      volatile uint32_t *progress, volatile uint32_t *status);

/* A fresh DCI after an error completion */
int renew_dci(node &n);

/* Makes the given system calls fail with err in this process, as a
 * container's or a sandbox's policy does; false if the filter could not be
 * installed */
bool refuse_syscalls(const std::vector<int> &nrs, int err);

/* The initiator child's body: waits for the target (in->ready), opens a
 * device on fab with limits l, a DCI and an AH to in->addr, runs fn, leaves
 * its counters in in->stats and sets in->done.  fn's result, or 10 if the
 * setup failed.  Info: the test's shared area (direct_info, dmap_info). */
template <typename Info>
int xfer_initiator(Info *in, const std::string &fab, dcx_soft_limits_t l,
                   const std::function<int(node &)> &fn)
{
    node n;
    int rc;

    if (!wait_flag(&in->ready, 1, 20.0) || (n.open(fab.c_str(), &l) != 0) ||
        (n.make_dci() != 0) || (n.connect(in->addr, in->addr_len) != 0)) {
        fprintf(stderr, "initiator setup failed\n");
        return 10;
    }
    rc = fn(n);
    dcx_soft_stats(n.dev, &in->stats);
    n.close();
    __atomic_store_n(&in->done, 1, __ATOMIC_RELEASE);
    return rc;
}

/* A registered local buffer */
struct local_buf {
    std::vector<uint8_t> v;
    dcx_mr_t *mr = nullptr;

    int reg(node &n, size_t size);
    dcx_sge_t sge(size_t off, size_t len);
};

} // namespace soft_test

#endif
