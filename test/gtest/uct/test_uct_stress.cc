/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bounded stress test over several processes: every worker sends verified
 * traffic to every other one (active messages short/bcopy/zcopy carrying a
 * sequence number and a pattern, puts read back with gets, fetch-and-adds
 * whose old value is known), one worker is killed half-way, and the
 * survivors must lose and corrupt nothing among themselves, declare no live
 * peer dead, and finish (the parent gives up after a time limit rather than
 * hang).
 *
 * The workers are this binary, exec'ed on uct_dcx_stress_worker.DISABLED_run.
 * DCX_STRESS_ROUNDS and DCX_STRESS_PROCS scale the run; bench/soak.sh uses
 * them for long soaks and reads the "stress:" summary line.
 */
#include "uct_fixture.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

using namespace dcx_test;

namespace {

const uint8_t AM_ID      = 11;
const size_t SLOT        = 256; /* window bytes per writer */
const size_t MAX_PROCS   = 16;
const size_t COUNTER_OFF = SLOT * MAX_PROCS;
const size_t WINDOW      = COUNTER_OFF + 8 * MAX_PROCS;
const size_t ZCOPY_LEN   = 4096;

/* What travels in every active message: this header, then len bytes of
 * pattern(src, seq, i) */
struct msg_hdr {
    uint32_t src;
    uint32_t len;
    uint64_t seq;
};

inline uint8_t pattern(unsigned src, uint64_t seq, size_t i)
{
    return (uint8_t)(src * 131 + seq * 7 + i);
}

enum report_type {
    REPORT_INFO = 1,
    REPORT_MIDWAY,
    REPORT_DONE
};

struct report {
    uint32_t type;
    uint32_t rank;
    /* REPORT_INFO */
    char dev_addr[64];
    char iface_addr[64];
    uint32_t dev_addr_len;
    uint32_t iface_addr_len;
    uint64_t window;
    char rkey[64];
    /* REPORT_DONE */
    uint64_t ops;
    uint64_t losses;
    uint64_t corruptions;
    uint64_t false_failures;
    uint64_t incomplete; /* survivors whose messages did not all come */
};

unsigned env_uint(const char *name, unsigned def)
{
    const char *v = getenv(name);
    return (v != NULL) ? (unsigned)strtoul(v, NULL, 0) : def;
}

} /* namespace */


/* ---------------------------------------------------------------------------
 * Worker (runs in a child process)
 * ------------------------------------------------------------------------- */

class uct_dcx_stress_worker : public uct_dcx_test {
protected:
    struct peer {
        uct_ep_h ep;
        bool alive;
        bool victim;
        uint64_t window;
        uct_rkey_bundle_t rkb;
        uint64_t tx_seq; /* next AM sequence to it */
        uint64_t adds;   /* fetch-adds that succeeded */
        uint64_t rx_seq; /* next AM sequence expected from it */
        uint64_t rx_count;
    };

    static ucs_status_t am_cb(void *arg, void *data, size_t length,
                              unsigned flags)
    {
        uct_dcx_stress_worker *self = static_cast<uct_dcx_stress_worker *>(arg);
        const msg_hdr *h            = static_cast<const msg_hdr *>(data);
        const uint8_t *payload      = (const uint8_t *)(h + 1);

        if ((length < sizeof(*h)) || (h->src >= self->m_peers.size()) ||
            (h->len != length - sizeof(*h))) {
            self->m_corruptions++;
            return UCS_OK;
        }
        peer &p = self->m_peers[h->src];
        for (size_t i = 0; i < h->len; ++i) {
            if (payload[i] != pattern(h->src, h->seq, i)) {
                self->m_corruptions++;
                break;
            }
        }
        if (h->seq > p.rx_seq) {
            self->m_losses += h->seq - p.rx_seq; /* a gap */
        } else if (h->seq < p.rx_seq) {
            self->m_corruptions++; /* a duplicate, or reordered */
            return UCS_OK;
        }
        p.rx_seq = h->seq + 1;
        p.rx_count++;
        return UCS_OK;
    }

    /* Peers reported failed since the last look (the fixture's error
     * handler collects them) */
    void refresh_alive()
    {
        for (; m_errors_seen < m_errors.size(); ++m_errors_seen) {
            for (size_t i = 0; i < m_peers.size(); ++i) {
                peer &p = m_peers[i];
                if ((p.ep != NULL) && (p.ep == m_errors[m_errors_seen].ep)) {
                    if (!p.victim) {
                        m_false_failures++;
                    }
                    p.alive = false;
                }
            }
        }
    }

    static size_t pack_msg(void *dest, void *arg)
    {
        const std::vector<uint8_t> *msg =
            static_cast<std::vector<uint8_t> *>(arg);
        memcpy(dest, &(*msg)[0], msg->size());
        return msg->size();
    }

    void build_msg(std::vector<uint8_t> &msg, uint64_t seq, size_t len)
    {
        msg_hdr h = {m_rank, (uint32_t)len, seq};

        msg.resize(sizeof(h) + len);
        memcpy(&msg[0], &h, sizeof(h));
        for (size_t i = 0; i < len; ++i) {
            msg[sizeof(h) + i] = pattern(m_rank, seq, i);
        }
    }

    /* Retries op while the transport has no resources; false if the peer
     * failed (or the op did) */
    template <typename F> bool post(peer &p, F op, ucs_status_t *status_p)
    {
        ucs_status_t status;

        for (;;) {
            refresh_alive();
            if (!p.alive) {
                return false;
            }
            status = op();
            if (status != UCS_ERR_NO_RESOURCE) {
                break;
            }
            progress();
        }
        *status_p = status;
        if (UCS_STATUS_IS_ERR(status)) {
            p.alive = false;
            return false;
        }
        return true;
    }

    bool wait_comp(peer &p, test_comp &comp)
    {
        if (!wait_for([&] { return comp.done > 0; }, 60)) {
            m_stuck = true;
            return false;
        }
        return comp.status == UCS_OK;
    }

    void send_am(peer &p, int kind)
    {
        std::vector<uint8_t> msg;
        uint64_t seq = p.tx_seq;
        ucs_status_t status;
        size_t len;

        if (kind == 0) { /* short */
            len = 8 + seq % (m_max_short - sizeof(msg_hdr) - 8 + 1);
            build_msg(msg, seq, len);
            uint64_t hdr;
            memcpy(&hdr, &msg[0], sizeof(hdr));
            if (!post(
                    p,
                    [&] {
                        return uct_ep_am_short(p.ep, AM_ID, hdr, &msg[8],
                                               msg.size() - 8);
                    },
                    &status)) {
                return;
            }
        } else if (kind == 1) { /* bcopy */
            len = 100 + (seq * 37) % 1900;
            build_msg(msg, seq, len);
            ssize_t ret = 0;
            if (!post(
                    p,
                    [&] {
                        ret = uct_ep_am_bcopy(p.ep, AM_ID, pack_msg, &msg, 0);
                        return (ret < 0) ? (ucs_status_t)ret : UCS_OK;
                    },
                    &status)) {
                return;
            }
        } else { /* zcopy: the payload from registered memory */
            build_msg(msg, seq, ZCOPY_LEN);
            memcpy(m_zbuf.ptr, &msg[sizeof(msg_hdr)], ZCOPY_LEN);
            uct_iov_t iov = {m_zbuf.ptr, ZCOPY_LEN, m_zbuf.memh, 0, 1};
            test_comp comp;
            if (!post(
                    p,
                    [&] {
                        return uct_ep_am_zcopy(p.ep, AM_ID, &msg[0],
                                               sizeof(msg_hdr), &iov, 1, 0,
                                               &comp.uct);
                    },
                    &status)) {
                return;
            }
            if ((status == UCS_INPROGRESS) && !wait_comp(p, comp)) {
                p.tx_seq++; /* posted: it may have arrived */
                return;
            }
        }
        p.tx_seq++;
        m_ops++;
    }

    void rma(peer &p, unsigned round)
    {
        uint8_t data[SLOT];
        uint64_t old = 0;
        ucs_status_t status;
        test_comp get_comp, add_comp;

        for (size_t i = 0; i < SLOT; ++i) {
            data[i] = pattern(m_rank, round, i);
        }
        if (!post(
                p,
                [&] {
                    return uct_ep_put_short(p.ep, data, 64,
                                            p.window + m_rank * SLOT,
                                            p.rkb.rkey);
                },
                &status)) {
            return;
        }
        m_ops++;

        /* read it back (same ep: after the put) */
        memset(m_gbuf.ptr, 0, SLOT);
        uct_iov_t iov = {m_gbuf.ptr, 64, m_gbuf.memh, 0, 1};
        if (!post(
                p,
                [&] {
                    return uct_ep_get_zcopy(p.ep, &iov, 1,
                                            p.window + m_rank * SLOT,
                                            p.rkb.rkey, &get_comp.uct);
                },
                &status) ||
            !wait_comp(p, get_comp)) {
            return;
        }
        m_ops++;
        if (memcmp(m_gbuf.ptr, data, 64)) {
            m_corruptions++;
        }

        if (!post(
                p,
                [&] {
                    return uct_ep_atomic64_fetch(p.ep, UCT_ATOMIC_OP_ADD, 1,
                                                 &old,
                                                 p.window + COUNTER_OFF +
                                                     m_rank * 8,
                                                 p.rkb.rkey, &add_comp.uct);
                },
                &status)) {
            return;
        }
        if ((status == UCS_INPROGRESS) && !wait_comp(p, add_comp)) {
            return;
        }
        m_ops++;
        if (old != p.adds) {
            m_corruptions++;
        }
        p.adds = old + 1;
    }

    void run();

    unsigned m_rank;
    std::vector<peer> m_peers;
    size_t m_max_short;
    mem m_zbuf, m_gbuf;
    uint64_t m_ops, m_losses, m_corruptions, m_false_failures;
    bool m_stuck;
    size_t m_errors_seen;
};

void uct_dcx_stress_worker::run()
{
    int in_fd = -1, out_fd = -1;
    bool is_peer    = peer_fds(&in_fd, &out_fd);
    unsigned nprocs = env_uint("DCX_STRESS_PROCS", 4);
    unsigned rounds = env_uint("DCX_STRESS_ROUNDS", 100);
    unsigned victim = nprocs - 1;
    std::vector<report> infos(nprocs);
    report rep;

    ASSERT_TRUE(is_peer);
    m_rank = env_uint("DCX_STRESS_RANK", 0);
    m_ops = m_losses = m_corruptions = m_false_failures = 0;
    m_stuck                                             = false;
    m_errors_seen                                       = 0;

    entity *e = create_entity();
    ASSERT_TRUE(e != NULL);
    m_max_short = ucs_min(e->attr.cap.am.max_short, (size_t)64);
    ASSERT_GE(m_max_short, sizeof(msg_hdr) + 8);

    m_peers.resize(nprocs);
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(e->iface, AM_ID, am_cb, this, 0));
    mem window = alloc_mem(WINDOW);
    m_zbuf     = alloc_mem(ZCOPY_LEN);
    m_gbuf     = alloc_mem(SLOT);

    memset(&rep, 0, sizeof(rep));
    rep.type           = REPORT_INFO;
    rep.rank           = m_rank;
    rep.dev_addr_len   = e->dev_addr.size();
    rep.iface_addr_len = e->iface_addr.size();
    memcpy(rep.dev_addr, &e->dev_addr[0], e->dev_addr.size());
    memcpy(rep.iface_addr, &e->iface_addr[0], e->iface_addr.size());
    rep.window = (uintptr_t)window.ptr;
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, window.memh, rep.rkey));
    ASSERT_EQ((ssize_t)sizeof(rep), write(out_fd, &rep, sizeof(rep)));

    /* everybody's addresses */
    ASSERT_TRUE(read_full(in_fd, &infos[0], sizeof(report) * nprocs, 60000));
    for (unsigned i = 0; i < nprocs; ++i) {
        peer &p  = m_peers[i];
        p.alive  = (i != m_rank);
        p.victim = (i == victim);
        p.tx_seq = p.adds = p.rx_seq = p.rx_count = 0;
        p.ep                                      = NULL;
        if (i == m_rank) {
            continue;
        }
        uct_ep_params_t params;
        memset(&params, 0, sizeof(params));
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                            UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.iface      = e->iface;
        params.dev_addr   = (uct_device_addr_t *)infos[i].dev_addr;
        params.iface_addr = (uct_iface_addr_t *)infos[i].iface_addr;
        ASSERT_EQ(UCS_OK, uct_ep_create(&params, &p.ep));
        m_eps.push_back(p.ep);
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, infos[i].rkey, &p.rkb));
        p.window = infos[i].window;
    }

    for (unsigned r = 0; (r < rounds) && !m_stuck; ++r) {
        if ((m_rank == victim) && (r == rounds / 2)) {
            memset(&rep, 0, sizeof(rep));
            rep.type = REPORT_MIDWAY;
            rep.rank = m_rank;
            ASSERT_EQ((ssize_t)sizeof(rep), write(out_fd, &rep, sizeof(rep)));
        }
        for (unsigned i = 0; i < nprocs; ++i) {
            if (!m_peers[i].alive) {
                continue;
            }
            refresh_alive();
            if (!m_peers[i].alive) {
                continue;
            }
            send_am(m_peers[i], r % 3);
            send_am(m_peers[i], (r + 1) % 3);
            rma(m_peers[i], r);
        }
        progress();
    }

    /* every survivor's messages must all come: 2 per round */
    bool all = wait_for(
        [&] {
            for (unsigned i = 0; i < nprocs; ++i) {
                if ((i != m_rank) && (i != victim) &&
                    (m_peers[i].rx_count < 2ull * rounds)) {
                    return false;
                }
            }
            return true;
        },
        120);

    memset(&rep, 0, sizeof(rep));
    rep.type           = REPORT_DONE;
    rep.rank           = m_rank;
    rep.ops            = m_ops;
    rep.losses         = m_losses;
    rep.corruptions    = m_corruptions;
    rep.false_failures = m_false_failures;
    for (unsigned i = 0; i < nprocs; ++i) {
        if ((i != m_rank) && (i != victim) &&
            (m_peers[i].rx_count < 2ull * rounds)) {
            rep.incomplete++;
            rep.losses += 2ull * rounds - m_peers[i].rx_count;
        }
    }
    (void)all;
    ASSERT_EQ((ssize_t)sizeof(rep), write(out_fd, &rep, sizeof(rep)));

    /* serve the others (grants, gets) until the parent says so */
    for (;;) {
        struct pollfd pfd = {in_fd, POLLIN, 0};
        if (poll(&pfd, 1, 0) != 0) {
            break;
        }
        progress();
    }
    for (unsigned i = 0; i < nprocs; ++i) {
        if (i != m_rank) {
            uct_ep_pending_purge(m_peers[i].ep, NULL, NULL);
            uct_rkey_release(m_component, &m_peers[i].rkb);
        }
    }
    log_counter::reset();
    _exit(0); /* no teardown: peers may be gone */
}

TEST_F(uct_dcx_stress_worker, DISABLED_run)
{
    int in_fd, out_fd;

    if (!peer_fds(&in_fd, &out_fd)) {
        GTEST_SKIP() << "run by uct_dcx_stress only";
    }
    run();
}


/* ---------------------------------------------------------------------------
 * The test: starts the workers, kills one half-way, checks the survivors
 * ------------------------------------------------------------------------- */

class uct_dcx_stress : public uct_dcx_policy_test {
protected:
    virtual void init_env(scoped_env &env)
    {
        uct_dcx_policy_test::init_env(env);
        /* generous transport timeouts: a busy live peer must not look dead;
         * a dead one is seen at the first timeout */
        env.set("UCX_DCX_TIMEOUT", "100ms");
        env.set("UCX_DCX_RETRY_COUNT", "7");
        env.set("UCX_DCX_FC_WND", "16");
        env.set("UCX_DCX_FC_REQ_TIMEOUT", "200ms");
        env.set("UCX_DCX_NUM_DCI", "2"); /* DCIs shared and lent often */
    }
};

TEST_P(uct_dcx_stress, peer_killed_mid_run)
{
    unsigned nprocs    = env_uint("DCX_STRESS_PROCS", 4);
    unsigned rounds    = env_uint("DCX_STRESS_ROUNDS", 100);
    unsigned limit_sec = env_uint("DCX_STRESS_TIME_LIMIT", 120);
    const char *policy = getenv("UCX_DCX_DCI_POLICY");
    std::vector<pid_t> pids(nprocs, -1);
    std::vector<int> out(nprocs, -1), in(nprocs, -1);
    std::vector<report> infos(nprocs);
    uint64_t ops = 0, losses = 0, corruptions = 0, false_failures = 0;
    unsigned done = 0, incomplete = 0;
    report rep;

    ASSERT_GE(nprocs, 3u);
    ASSERT_LE(nprocs, MAX_PROCS);
    for (unsigned i = 0; i < nprocs; ++i) {
        std::map<std::string, std::string> env;
        char buf[3][32];

        snprintf(buf[0], sizeof(buf[0]), "%u", i);
        snprintf(buf[1], sizeof(buf[1]), "%u", nprocs);
        snprintf(buf[2], sizeof(buf[2]), "%u", rounds);
        env["DCX_STRESS_RANK"]   = buf[0];
        env["DCX_STRESS_PROCS"]  = buf[1];
        env["DCX_STRESS_ROUNDS"] = buf[2];
        peer_proc p = spawn_peer("uct_dcx_stress_worker.DISABLED_run", env);
        ASSERT_GT(p.pid, 0);
        pids[i] = p.pid;
        out[i]  = p.from;
        in[i]   = p.to;
    }

    const int limit_ms = limit_sec * 1000;
    for (unsigned i = 0; i < nprocs; ++i) {
        ASSERT_TRUE(read_full(out[i], &infos[i], sizeof(report), limit_ms))
            << "worker " << i << " did not start";
        ASSERT_EQ((uint32_t)REPORT_INFO, infos[i].type);
    }
    for (unsigned i = 0; i < nprocs; ++i) {
        ASSERT_EQ((ssize_t)(sizeof(report) * nprocs),
                  write(in[i], &infos[0], sizeof(report) * nprocs));
    }

    /* the victim says when it is half-way: kill it there */
    unsigned victim = nprocs - 1;
    EXPECT_TRUE(read_full(out[victim], &rep, sizeof(rep), limit_ms));
    EXPECT_EQ((uint32_t)REPORT_MIDWAY, rep.type);
    kill(pids[victim], SIGKILL);
    waitpid(pids[victim], NULL, 0);
    pids[victim] = -1;

    for (unsigned i = 0; i < victim; ++i) {
        if (!read_full(out[i], &rep, sizeof(rep), limit_ms) ||
            (rep.type != REPORT_DONE)) {
            ADD_FAILURE() << "worker " << i << " did not finish within "
                          << limit_sec << " s";
            continue;
        }
        done++;
        ops += rep.ops;
        losses += rep.losses;
        corruptions += rep.corruptions;
        false_failures += rep.false_failures;
        incomplete += rep.incomplete;
    }
    for (unsigned i = 0; i < nprocs; ++i) {
        if (pids[i] > 0) {
            if (write(in[i], "x", 1) != 1) {
                kill(pids[i], SIGKILL);
            }
        }
    }
    for (unsigned i = 0; i < nprocs; ++i) {
        if (pids[i] > 0) {
            int st;
            bool exited = false;
            for (int t = 0; t < 1000; ++t) { /* up to ~10 s */
                if (waitpid(pids[i], &st, WNOHANG) == pids[i]) {
                    exited = true;
                    break;
                }
                usleep(10000);
            }
            if (!exited) {
                kill(pids[i], SIGKILL);
                waitpid(pids[i], &st, 0);
                ADD_FAILURE() << "worker " << i << " did not exit";
            }
        }
        close(out[i]);
        close(in[i]);
    }

    printf("stress: policy %s, %u processes (1 killed), %u rounds: %llu "
           "operations, %llu losses, %llu corruptions, %llu live peers "
           "declared dead, %u survivors finished\n",
           policy ? policy : "default", nprocs, rounds, (unsigned long long)ops,
           (unsigned long long)losses, (unsigned long long)corruptions,
           (unsigned long long)false_failures, done);
    EXPECT_EQ(victim, done);
    EXPECT_EQ(0u, losses);
    EXPECT_EQ(0u, corruptions);
    EXPECT_EQ(0u, false_failures);
    EXPECT_EQ(0u, incomplete);
    EXPECT_GT(ops, 0u);
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_stress, UCT_DCX_POLICIES);
