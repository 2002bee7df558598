/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UCP in wake-up mode over UCX_TLS=dcx,self, across two processes: a server
 * that sleeps in ucp_worker_arm / ucp_worker_wait whenever it has nothing to
 * do, and a client that sends tagged messages (eager and rendezvous) and
 * writes and reads the server's memory (RMA, served by the device while the
 * server sleeps), with idle gaps between rounds.  Every byte is verified.
 *
 * Sleeping is checked by structure, not by time: a process that spun
 * instead of sleeping would call ucp_worker_arm thousands of times per idle
 * gap; a sleeping one arms a handful of times per message.  The CPU and
 * wall time of the server are printed for information.
 */
#include <gtest/gtest.h>

#include <ucp/api/ucp.h>

#include "ucp_rma_probe.h"
#include "ucp_fixture.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vector>

using dcx_test::now_sec;

namespace {

const int ROUNDS          = 8;
const unsigned GAP_US     = 150000; /* idle gap before every round */
const size_t RMA_SIZE     = 256 * 1024;
const size_t SIZES[]      = {8, 4096, 1 << 20}; /* eager .. rendezvous */
const ucp_tag_t TAG_DATA  = 0x100;
const ucp_tag_t TAG_REPLY = 0x200;
/* a spinning loop would arm far more often than this per round; a
 * sleeping one arms a handful of times per message (some 5 a round), and
 * one whose fd woke it for what another thread serves, as an emulated
 * channel watching the device's wake socket did, 40 to 400 times */
const unsigned MAX_ARMS_PER_ROUND = 200;

double cpu_sec()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
           ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

bool write_all(int fd, const void *buf, size_t len)
{
    const char *p = (const char *)buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n <= 0) {
            return false;
        }
        p += n;
        len -= n;
    }
    return true;
}

bool read_all(int fd, void *buf, size_t len)
{
    char *p = (char *)buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n <= 0) {
            return false;
        }
        p += n;
        len -= n;
    }
    return true;
}

bool send_blob(int fd, const std::vector<char> &v)
{
    uint64_t len = v.size();
    return write_all(fd, &len, sizeof(len)) && write_all(fd, v.data(), len);
}

bool recv_blob(int fd, std::vector<char> &v)
{
    uint64_t len;
    if (!read_all(fd, &len, sizeof(len)) || (len > (1 << 20))) {
        return false;
    }
    v.resize(len);
    return read_all(fd, v.data(), len);
}

char pattern(int round, size_t i)
{
    return (char)(i * 13 + round * 7 + 1);
}

/* One side: context, worker, counters of its wake-up loop */
struct peer {
    ucp_context_h context = NULL;
    ucp_worker_h worker   = NULL;
    unsigned arms         = 0; /* ucp_worker_arm calls */
    unsigned sleeps       = 0; /* times it went to sleep */
    bool use_wait;             /* ucp_worker_wait, else poll on the efd */

    ucs_status_t init()
    {
        ucp_params_t params;
        ucp_worker_params_t wparams;
        ucp_config_t *config;
        ucs_status_t status;

        memset(&params, 0, sizeof(params));
        params.field_mask = UCP_PARAM_FIELD_FEATURES;
        params.features   = UCP_FEATURE_TAG | UCP_FEATURE_RMA |
                          UCP_FEATURE_WAKEUP;
        status = ucp_config_read(NULL, NULL, &config);
        if (status != UCS_OK) {
            return status;
        }
        status = ucp_init(&params, config, &context);
        ucp_config_release(config);
        if (status != UCS_OK) {
            return status;
        }
        memset(&wparams, 0, sizeof(wparams));
        wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
        return ucp_worker_create(context, &wparams, &worker);
    }

    void fini()
    {
        if (worker != NULL) {
            ucp_worker_destroy(worker);
        }
        if (context != NULL) {
            ucp_cleanup(context);
        }
    }

    /* Progress until done(); sleep on the worker's events whenever
     * progress finds nothing.  false on error or a lost wake-up (no event
     * for 20 s while something was awaited). */
    template <typename F> bool wait_until(F done)
    {
        while (!done()) {
            if (ucp_worker_progress(worker) != 0) {
                continue;
            }
            ++arms;
            ucs_status_t status = ucp_worker_arm(worker);
            if (status == UCS_ERR_BUSY) {
                continue;
            }
            if (status != UCS_OK) {
                fprintf(stderr, "ucp_worker_arm: %s\n",
                        ucs_status_string(status));
                return false;
            }
            ++sleeps;
            if (use_wait) {
                if (ucp_worker_wait(worker) != UCS_OK) {
                    return false;
                }
            } else {
                int efd;
                if (ucp_worker_get_efd(worker, &efd) != UCS_OK) {
                    return false;
                }
                struct pollfd pfd = {efd, POLLIN, 0};
                int ret           = poll(&pfd, 1, 20000);
                if (ret == 0) {
                    fprintf(stderr, "no wake-up for 20 s\n");
                    return false;
                }
                if ((ret < 0) && (errno != EINTR)) {
                    return false;
                }
            }
        }
        return true;
    }

    /* Waits for a request (NULL, pointer, or error) */
    bool wait_req(void *req)
    {
        if (req == NULL) {
            return true;
        }
        if (UCS_PTR_IS_ERR(req)) {
            fprintf(stderr, "request failed: %s\n",
                    ucs_status_string(UCS_PTR_STATUS(req)));
            return false;
        }
        bool ok             = wait_until([&] {
            return ucp_request_check_status(req) != UCS_INPROGRESS;
        });
        ucs_status_t status = ucp_request_check_status(req);
        ucp_request_free(req);
        if (status != UCS_OK) {
            fprintf(stderr, "request completed with %s\n",
                    ucs_status_string(status));
        }
        return ok && (status == UCS_OK);
    }

    bool tag_recv(void *buf, size_t len, ucp_tag_t tag)
    {
        ucp_request_param_t prm;
        memset(&prm, 0, sizeof(prm));
        return wait_req(ucp_tag_recv_nbx(worker, buf, len, tag, (ucp_tag_t)-1,
                                         &prm));
    }

    bool tag_send(ucp_ep_h ep, const void *buf, size_t len, ucp_tag_t tag)
    {
        ucp_request_param_t prm;
        memset(&prm, 0, sizeof(prm));
        return wait_req(ucp_tag_send_nbx(ep, buf, len, tag, &prm));
    }

    ucp_ep_h connect(const std::vector<char> &addr)
    {
        ucp_ep_params_t params;
        ucp_ep_h ep = NULL;

        memset(&params, 0, sizeof(params));
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = (const ucp_address_t *)addr.data();
        return (ucp_ep_create(worker, &params, &ep) == UCS_OK) ? ep : NULL;
    }

    bool close(ucp_ep_h ep)
    {
        ucp_request_param_t prm;
        memset(&prm, 0, sizeof(prm));
        return wait_req(ucp_ep_close_nbx(ep, &prm));
    }

    std::vector<char> address()
    {
        ucp_address_t *addr;
        size_t len;
        std::vector<char> v;
        if (ucp_worker_get_address(worker, &addr, &len) == UCS_OK) {
            v.assign((char *)addr, (char *)addr + len);
            ucp_worker_release_address(worker, addr);
        }
        return v;
    }
};

/* What the server reports at the end */
struct server_report {
    int ok;
    unsigned arms, sleeps;
    double cpu, wall;
};

/* Server: publishes its address, memory and rkey; then per round waits for
 * the client's data messages (asleep between them), checks them and the
 * memory the client wrote, and answers. */
int server_main(int rfd, int wfd)
{
    peer s;
    server_report rep = {0, 0, 0, 0, 0};
    std::vector<char> caddr, rkey_buf;
    std::vector<char> mem(RMA_SIZE, 0), buf(1 << 20);
    ucp_mem_map_params_t mp;
    ucp_mem_h memh;
    void *rkey_packed;
    size_t rkey_len;
    uint64_t base;
    ucp_ep_h ep;
    double t0, c0;

    alarm(120); /* a lost wake-up must not hang the test */
    s.use_wait = true;
    if (s.init() != UCS_OK) {
        return 1;
    }
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                    UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = mem.data();
    mp.length  = mem.size();
    if ((ucp_mem_map(s.context, &mp, &memh) != UCS_OK) ||
        (ucp_rkey_pack(s.context, memh, &rkey_packed, &rkey_len) != UCS_OK)) {
        return 2;
    }
    rkey_buf.assign((char *)rkey_packed, (char *)rkey_packed + rkey_len);
    ucp_rkey_buffer_release(rkey_packed);
    base = (uintptr_t)mem.data();
    if (!send_blob(wfd, s.address()) || !send_blob(wfd, rkey_buf) ||
        !write_all(wfd, &base, sizeof(base)) || !recv_blob(rfd, caddr) ||
        ((ep = s.connect(caddr)) == NULL)) {
        return 3;
    }

    /* the client writes our memory only where UCP does RMA at all */
    const bool rma_ok = !dcx_test::ucp_rma_refused_by_ucp();

    t0 = now_sec();
    c0 = cpu_sec();
    for (int round = 0; round < ROUNDS; ++round) {
        for (size_t k = 0; k < sizeof(SIZES) / sizeof(SIZES[0]); ++k) {
            if (!s.tag_recv(buf.data(), SIZES[k], TAG_DATA + round)) {
                return 10;
            }
            for (size_t i = 0; i < SIZES[k]; ++i) {
                if (buf[i] != pattern(round + (int)k, i)) {
                    fprintf(stderr, "round %d size %zu: byte %zu differs\n",
                            round, SIZES[k], i);
                    return 11;
                }
            }
        }
        /* the client wrote our memory before its last message */
        for (size_t i = 0; rma_ok && (i < RMA_SIZE); ++i) {
            if (mem[i] != pattern(round, i)) {
                fprintf(stderr, "round %d: memory byte %zu differs\n", round,
                        i);
                return 12;
            }
        }
        uint64_t reply = round;
        if (!s.tag_send(ep, &reply, sizeof(reply), TAG_REPLY + round)) {
            return 13;
        }
    }
    rep.wall   = now_sec() - t0;
    rep.cpu    = cpu_sec() - c0;
    rep.arms   = s.arms;
    rep.sleeps = s.sleeps;
    rep.ok     = 1;

    /* wait for the client to finish its reads before going away */
    uint64_t bye;
    if (!s.tag_recv(&bye, sizeof(bye), TAG_DATA + ROUNDS)) {
        return 14;
    }
    write_all(wfd, &rep, sizeof(rep));
    if (!s.close(ep)) {
        return 15;
    }
    ucp_mem_unmap(s.context, memh);
    s.fini();
    return 0;
}

} /* namespace */


class ucp_dcx_wakeup : public ::testing::Test {
protected:
    virtual void SetUp()
    {
        char fabric[32];

        snprintf(fabric, sizeof(fabric), "gtw%d", (int)getpid());
        dcx_test::use_test_device(fabric);
        setenv("UCX_TLS", "dcx,self", 1);
        if (!dcx_test::test_device_query().wakeup) {
            GTEST_SKIP() << "the device has no wake-up events";
        }
    }
};

TEST_F(ucp_dcx_wakeup, tag_and_rma_with_idle_gaps)
{
    int to_srv[2], from_srv[2];
    ASSERT_EQ(0, pipe(to_srv));
    ASSERT_EQ(0, pipe(from_srv));

    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        close(to_srv[1]);
        close(from_srv[0]);
        _exit(server_main(to_srv[0], from_srv[1]));
    }
    close(to_srv[0]);
    close(from_srv[1]);

    peer c;
    std::vector<char> saddr, rkey_buf;
    uint64_t base   = 0;
    ucp_rkey_h rkey = NULL;
    ucp_ep_h ep     = NULL;
    std::vector<char> buf(1 << 20), rma(RMA_SIZE), back(RMA_SIZE);
    unsigned max_client_arms = 0;

    c.use_wait = false;
    ASSERT_EQ(UCS_OK, c.init());
    ASSERT_TRUE(recv_blob(from_srv[0], saddr));
    ASSERT_TRUE(recv_blob(from_srv[0], rkey_buf));
    ASSERT_TRUE(read_all(from_srv[0], &base, sizeof(base)));
    ASSERT_TRUE(send_blob(to_srv[1], c.address()));
    ep = c.connect(saddr);
    ASSERT_TRUE(ep != NULL);
    ASSERT_EQ(UCS_OK, ucp_ep_rkey_unpack(ep, rkey_buf.data(), &rkey));

    /* the probe runs in this process, after the fork */
    bool rma_ok = !dcx_test::ucp_rma_refused_by_ucp();
    if (!rma_ok) {
        printf("[     INFO ] put/get not tested: %s\n",
               DCX_UCP_RMA_SKIP_REASON);
    }

    for (int round = 0; round < ROUNDS; ++round) {
        unsigned arms_before = c.arms;

        usleep(GAP_US); /* both sides idle: the server sleeps */
        for (size_t i = 0; i < RMA_SIZE; ++i) {
            rma[i] = pattern(round, i);
        }
        ucp_request_param_t prm;
        memset(&prm, 0, sizeof(prm));
        if (rma_ok) {
            ASSERT_TRUE(c.wait_req(ucp_put_nbx(ep, rma.data(), RMA_SIZE, base,
                                               rkey, &prm)));
            ASSERT_TRUE(c.wait_req(ucp_ep_flush_nbx(ep, &prm)));
            /* read it back while the server sleeps: served by its device */
            ASSERT_TRUE(c.wait_req(ucp_get_nbx(ep, back.data(), RMA_SIZE, base,
                                               rkey, &prm)));
            ASSERT_EQ(0, memcmp(rma.data(), back.data(), RMA_SIZE))
                << "round " << round;
        }

        for (size_t k = 0; k < sizeof(SIZES) / sizeof(SIZES[0]); ++k) {
            for (size_t i = 0; i < SIZES[k]; ++i) {
                buf[i] = pattern(round + (int)k, i);
            }
            ASSERT_TRUE(c.tag_send(ep, buf.data(), SIZES[k], TAG_DATA + round))
                << "round " << round << " size " << SIZES[k];
        }
        uint64_t reply = ~0ull;
        ASSERT_TRUE(c.tag_recv(&reply, sizeof(reply), TAG_REPLY + round));
        EXPECT_EQ((uint64_t)round, reply);
        max_client_arms = std::max(max_client_arms, c.arms - arms_before);
    }
    uint64_t bye = 0;
    ASSERT_TRUE(c.tag_send(ep, &bye, sizeof(bye), TAG_DATA + ROUNDS));

    server_report rep;
    memset(&rep, 0, sizeof(rep));
    bool got    = read_all(from_srv[0], &rep, sizeof(rep));
    int wstatus = 0;
    ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
    EXPECT_TRUE(WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 0))
        << "server exit status " << wstatus;
    ASSERT_TRUE(got && rep.ok);

    printf("[ wakeup   ] server: %u sleeps, %u arms in %d rounds; cpu %.3f s "
           "of %.3f s wall (%.0f%%); client: at most %u arms a round\n",
           rep.sleeps, rep.arms, ROUNDS, rep.cpu, rep.wall,
           100.0 * rep.cpu / rep.wall, max_client_arms);
    /* it slept in every idle gap at least (how often it also sleeps
     * within a round depends on how its messages arrive, and on how many
     * of its sends request a completion, which wakes it) */
    EXPECT_GE(rep.sleeps, (unsigned)ROUNDS);
    EXPECT_LT(rep.arms, MAX_ARMS_PER_ROUND * ROUNDS);
    EXPECT_LT(max_client_arms, MAX_ARMS_PER_ROUND);

    ucp_rkey_destroy(rkey);
    EXPECT_TRUE(c.close(ep));
    c.fini();
    close(to_srv[1]);
    close(from_srv[0]);
}
