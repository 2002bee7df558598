/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx through scenarios of UCX's own UCT tests (test/gtest/uct in UCX's
 * source), which an outside tester runs on every transport: peer failure,
 * wake-up events, flush with cancel, the pending queue and completion
 * callbacks, the receive headroom, the p2p mix, memory registration with
 * threads and fork.
 */
#include "uct_contract_fixture.h"

/* UCX's test_uct_peer_failure sequences: an error handler that purges the
 * ep's pending queue (each request queued must still be there), keep-alive
 * (uct_ep_check) to a closed interface failing the ep exactly once, a
 * second pair unaffected */
class uct_dcx_contract_peer : public uct_dcx_contract {
protected:
    struct preq {
        uct_pending_req_t uct;
        uct_ep_h ep;
    };

    virtual void iface_params(uct_iface_params_t &params)
    {
        params.err_handler     = err_cb;
        params.err_handler_arg = this;
    }

    virtual void init_env(scoped_env &env)
    {
        uct_dcx_contract::init_env(env);
        env.set("UCX_DCX_TIMEOUT", "10ms");
        env.set("UCX_DCX_RETRY_COUNT", "3");
    }

    static ucs_status_t err_cb(void *arg, uct_ep_h ep, ucs_status_t status)
    {
        uct_dcx_contract_peer *self = static_cast<uct_dcx_contract_peer *>(arg);
        ep_error err                = {ep, status};

        self->m_errors.push_back(err);
        uct_ep_pending_purge(
            ep,
            [](uct_pending_req_t *, void *arg) {
                (*static_cast<int *>(arg))++;
            },
            &self->m_purged);
        EXPECT_EQ(self->m_queued, self->m_purged);
        EXPECT_TRUE((status == UCS_ERR_ENDPOINT_TIMEOUT) ||
                    (status == UCS_ERR_CONNECTION_RESET) ||
                    (status == UCS_ERR_CANCELED))
            << ucs_status_string(status);
        return UCS_OK;
    }

    static ucs_status_t pending_cb(uct_pending_req_t *self)
    {
        preq *r             = ucs_container_of(self, preq, uct);
        const uint64_t data = 0;
        ucs_status_t status;

        do {
            status = uct_ep_am_short(r->ep, AM_ID, 0, &data, sizeof(data));
        } while (status == UCS_OK);
        return status;
    }

    /* uct_test::flush: every interface flushed, progressing all */
    bool flush_all(double timeout = 30)
    {
        return wait_for(
            [&] {
                bool flushed = true;
                for (size_t i = 0; i < m_entities.size(); ++i) {
                    ucs_status_t status = uct_iface_flush(m_entities[i]->iface,
                                                          0, NULL);
                    if ((status == UCS_INPROGRESS) ||
                        (status == UCS_ERR_NO_RESOURCE)) {
                        flushed = false;
                    } else {
                        EXPECT_EQ(UCS_OK, status);
                    }
                }
                return flushed;
            },
            timeout);
    }

    virtual void SetUp()
    {
        m_queued = m_purged = 0;
        uct_dcx_contract::SetUp();
    }

    int m_queued, m_purged;
};

TEST_P(uct_dcx_contract_peer, purge_failed_peer)
{
    const uint64_t data = 0;
    std::vector<preq> reqs(64);
    ucs_status_t status;

    do {
        status = uct_ep_am_short(m_ab, AM_ID, 0, &data, sizeof(data));
    } while (status == UCS_OK);
    ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
    ASSERT_EQ(UCS_OK, invalidate(m_ab));
    for (size_t i = 0; i < reqs.size(); ++i) {
        reqs[i].uct.func = pending_cb;
        reqs[i].ep       = m_ab;
        status           = uct_ep_pending_add(m_ab, &reqs[i].uct, 0);
        if (status == UCS_ERR_BUSY) {
            break;
        }
        ASSERT_EQ(UCS_OK, status);
        m_queued++;
    }
    EXPECT_GT(m_queued, 0);
    ASSERT_TRUE(flush_all());
    ASSERT_TRUE(wait_for([&] { return !m_errors.empty(); }));
    EXPECT_EQ(1u, m_errors.size());
    EXPECT_EQ(m_queued, m_purged);
    log_counter::reset();
}

/* UCX's peer_failure: right after uct_ep_invalidate() an operation is still
 * taken (UCS_OK), as a queue pair in error takes a WR; the interfaces flush
 * and the error handler gets the endpoint once */
TEST_P(uct_dcx_contract_peer, peer_failure)
{
    ASSERT_EQ(UCS_OK, invalidate(m_ab));
    EXPECT_EQ(UCS_OK, uct_ep_put_short(m_ab, NULL, 0, 0, 0));
    ASSERT_TRUE(flush_all());
    ASSERT_TRUE(wait_for([&] { return !m_errors.empty(); }));
    for (int i = 0; i < 1000; ++i) {
        progress();
    }
    EXPECT_EQ(1u, m_errors.size());
    EXPECT_EQ(m_ab, m_errors[0].ep);
    log_counter::reset();
}

TEST_P(uct_dcx_contract_peer, keepalive_to_closed_iface)
{
    entity *c = create_entity();
    ASSERT_TRUE(c != NULL);
    uct_ep_h ac = connect(m_a, c);

    ASSERT_EQ(UCS_OK, uct_ep_check(ac, 0, NULL));
    ASSERT_TRUE(flush_all());
    for (int i = 0; i < 1000; ++i) {
        progress();
    }
    EXPECT_TRUE(m_errors.empty());

    uct_iface_close(c->iface);
    uct_worker_destroy(c->worker);
    m_entities.erase(std::find(m_entities.begin(), m_entities.end(), c));
    delete c;

    ASSERT_EQ(UCS_OK, uct_ep_check(ac, 0, NULL));
    ASSERT_TRUE(flush_all());
    ASSERT_TRUE(wait_for([&] { return !m_errors.empty(); }));
    for (int i = 0; i < 1000; ++i) {
        progress();
    }
    EXPECT_EQ(1u, m_errors.size());
    EXPECT_EQ(ac, m_errors[0].ep);
    check_ok();
    log_counter::reset();
}

TEST_P(uct_dcx_contract_peer, two_pairs_send)
{
    entity *c = create_entity();
    ASSERT_TRUE(c != NULL);
    uct_ep_h ac = connect(m_a, c);
    held_rx rx_c;

    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(c->iface, AM_ID, held_rx::cb, &rx_c, 0));
    for (int i = 0; i < 100; ++i) {
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_am_short(m_ab, AM_ID, i, NULL, 0);
                  }));
    }
    /* the first pair's peer is killed: its ep invalidated */
    ASSERT_EQ(UCS_OK, invalidate(m_ab));
    (void)uct_ep_am_short(m_ab, AM_ID, 0, NULL, 0);
    ASSERT_EQ(UCS_OK,
              retry([&] { return uct_ep_am_short(ac, AM_ID, 0, NULL, 0); }));
    ASSERT_TRUE(wait_for([&] { return rx_c.count == 1; }));
    ASSERT_TRUE(flush_all());
    for (int i = 0; i < 1000; ++i) {
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_am_short(ac, AM_ID, i, NULL, 0);
                  }));
    }
    ASSERT_TRUE(wait_for([&] { return rx_c.count == 1001; }));
    ASSERT_TRUE(flush_all());
    EXPECT_EQ(1u, m_errors.size());
    log_counter::reset();
}

/* UCX's test_uct_event loop: arm the receiver (progressing until arm
 * answers UCS_OK with nothing progressed), the fd is then not readable;
 * one AM bcopy sent without progressing the receiver makes it readable;
 * the receiver progresses the AM in; many times.  Spurious wake-ups (fd
 * readable right after a successful arm) stay under 1 in 100. */
TEST_P(uct_dcx_contract, event_arm_recv_loop)
{
    const int count = 3000;
    uct_ep_h ba     = connect(m_b, m_a);
    int fd, spurious = 0;
    uint64_t data = 0xdeadbeef;

    (void)ba;
    if (!(m_b->attr.cap.event_flags & UCT_IFACE_FLAG_EVENT_FD)) {
        GTEST_SKIP() << "the interface has no wake-up events";
    }
    ASSERT_EQ(UCS_OK, uct_iface_event_fd_get(m_b->iface, &fd));
    flush_iface(m_a);
    auto readable = [&](int timeout_ms) {
        struct pollfd pfd = {fd, POLLIN, 0};
        return poll(&pfd, 1, timeout_ms) == 1;
    };
    EXPECT_FALSE(readable(0));
    for (int i = 0; i < count; ++i) {
        ucs_status_t status;
        unsigned progressed;
        int tries = 0;
        do {
            progressed = uct_worker_progress(m_b->worker);
            status     = uct_iface_event_arm(m_b->iface, UCT_EVENT_RECV);
            ASSERT_LT(++tries, 1000000) << "never armed, " << i;
        } while ((status == UCS_ERR_BUSY) || (progressed != 0));
        ASSERT_EQ(UCS_OK, status);
        spurious += readable(0);

        int before = m_rx.count;
        ssize_t len;
        do {
            len = uct_ep_am_bcopy(
                m_ab, AM_ID,
                [](void *dest, void *arg) {
                    memcpy(dest, arg, 8);
                    return (size_t)8;
                },
                &data, 0);
            uct_worker_progress(m_a->worker);
        } while (len == UCS_ERR_NO_RESOURCE);
        ASSERT_EQ(8, len);
        ASSERT_TRUE(readable(10000)) << "no event for AM " << i;
        ASSERT_TRUE(wait_for([&] { return m_rx.count > before; }));
    }
    EXPECT_LT(spurious, count / 100) << spurious << " spurious wake-ups";
    flush_ep(m_ab);
}

/* Without the registration cache, which keeps a registration the user
 * released for reuse, its rkey valid: as UCX's IB memory domains do */
class uct_dcx_contract_nocache : public uct_dcx_contract {
protected:
    virtual void init_env(scoped_env &env)
    {
        uct_dcx_contract::init_env(env);
        env.set("UCX_DCX_RCACHE", "n");
    }
};

/* A registration and its rkey: puts and atomics inside it land whole;
 * one-sided operations one byte past either end of it, and any through
 * its rkey once it is deregistered, fail their endpoint and write
 * nothing */
TEST_P(uct_dcx_contract_nocache, registration_bounds_and_dereg)
{
    std::vector<char> packed(m_md_attr.rkey_packed_size);
    std::vector<char> backing(4 * 4096);
    char *page = (char *)(((uintptr_t)backing.data() + 4095) &
                          ~(uintptr_t)4095) +
                 4096;
    char *reg  = page;
    size_t len = 2048;
    uct_rkey_bundle_t rkb;
    uct_mem_h memh;

    memset(page - 4096, '.', 3 * 4096);
    ASSERT_EQ(UCS_OK,
              uct_md_mem_reg(m_md, reg, len, UCT_MD_MEM_ACCESS_ALL, &memh));
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, &packed[0]));
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, &packed[0], &rkb));

    /* whole range, with put_bcopy and an atomic at its last word */
    std::string whole(ucs_min(len, (size_t)m_a->attr.cap.put.max_bcopy), 'P');
    ASSERT_EQ((ssize_t)whole.size(), retry_len([&] {
                  return uct_ep_put_bcopy(m_ab, pack_str, &whole,
                                          (uintptr_t)reg, rkb.rkey);
              }));
    uintptr_t last8 = ((uintptr_t)reg + len - 8) & ~(uintptr_t)7;
    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_atomic64_post(m_ab, UCT_ATOMIC_OP_ADD, 0, last8,
                                              rkb.rkey);
              }));
    flush_ep(m_ab);
    EXPECT_TRUE(m_errors.empty());
    EXPECT_EQ('.', reg[-1]);
    EXPECT_EQ('P', reg[0]);

    /* one byte before, one byte past the end */
    uct_ep_h before = connect(m_a, m_b), past = connect(m_a, m_b);
    char v = 'X';
    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(before, &v, 1, (uintptr_t)reg - 1,
                                          rkb.rkey);
              }));
    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(past, &v, 1, (uintptr_t)reg + len,
                                          rkb.rkey);
              }));
    EXPECT_TRUE(wait_for([&] { return m_errors.size() >= 2; }))
        << m_errors.size() << " errors";
    EXPECT_EQ('.', reg[-1]);
    EXPECT_EQ('.', reg[len]);

    /* deregistered: the rkey is stale */
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    uct_ep_h stale = connect(m_a, m_b);
    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(stale, &v, 1, (uintptr_t)reg,
                                          rkb.rkey);
              }));
    EXPECT_TRUE(wait_for([&] { return m_errors.size() >= 3; }));
    EXPECT_EQ('P', reg[0]);
    uct_rkey_release(m_component, &rkb);
    check_ok();
    for (uct_ep_h ep : {before, past, stale}) {
        uct_ep_flush(ep, UCT_FLUSH_FLAG_CANCEL, NULL);
        destroy_ep(ep);
    }
    log_counter::reset();
}

/* UCX's test_md.reg_multi_thread: registrations and deregistrations of
 * malloc'ed buffers (UCT_MD_MEM_FLAG_NONBLOCK) while another thread
 * mallocs and frees large blocks (mmap/munmap: the registration cache's
 * memory events), for a quarter second; then a put through a registration
 * made last still lands */
TEST_P(uct_dcx_contract, reg_while_another_thread_maps_and_unmaps)
{
    volatile bool stop = false;
    std::thread churn([&] {
        unsigned seed = 1;
        while (!stop) {
            std::vector<void *> v;
            int count = rand_r(&seed) % 100;
            for (int i = 0; i < count; ++i) {
                v.push_back(malloc(rand_r(&seed) % (256 * 1024)));
            }
            for (size_t i = 0; i < v.size(); ++i) {
                free(v[i]);
            }
        }
    });
    unsigned seed = 2;
    double end    = ucs_get_accurate_time() + 0.25;
    int n         = 0;
    while (ucs_get_accurate_time() < end) {
        size_t size = (rand_r(&seed) % 65536) + 1;
        void *buf   = malloc(size);
        uct_mem_h memh;
        ASSERT_TRUE(buf != NULL);
        ucs_status_t status = uct_md_mem_reg(m_md, buf, size,
                                             UCT_MD_MEM_FLAG_NONBLOCK |
                                                 UCT_MD_MEM_ACCESS_ALL,
                                             &memh);
        EXPECT_EQ(UCS_OK, status) << size;
        if (status == UCS_OK) {
            EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
        }
        free(buf);
        ++n;
    }
    stop = true;
    churn.join();
    EXPECT_GT(n, 0);

    mem m      = alloc_mem(4096);
    uint64_t v = 0x77;
    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(m_ab, &v, 8, (uintptr_t)m.ptr,
                                          m.rkey);
              }));
    flush_ep(m_ab);
    EXPECT_EQ(0x77u, *(uint64_t *)m.ptr);
}

/* UCX's test_md_fork, and more: a registration released, the process
 * forks, the child reads the page and leaves with exit() (running the
 * libraries' destructors); the parent registers the page again, and its
 * interfaces, endpoints and registrations all keep working */
TEST_P(uct_dcx_contract, fork_child_exits)
{
    mem m      = alloc_mem(4096);
    char *page = NULL;
    uct_mem_h memh;
    int child_status;

    ASSERT_EQ(0, posix_memalign((void **)&page, 4096, 100));
    memset(page, 42, 100);
    ASSERT_EQ(UCS_OK,
              uct_md_mem_reg(m_md, page, 100, UCT_MD_MEM_ACCESS_ALL, &memh));
    ASSERT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    check_ok();

    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        char buf[100];
        memset(buf, 42, sizeof(buf));
        /* _exit: no atexit handler (nor LeakSanitizer's) of the parent's
         * state runs in the child */
        _exit(memcmp(page, buf, sizeof(buf)) ? 3 : 0);
    }
    ASSERT_NE(-1, pid);
    memset(page, 42, 100);
    ASSERT_EQ(pid, waitpid(pid, &child_status, 0));
    EXPECT_TRUE(WIFEXITED(child_status));
    EXPECT_EQ(0, WEXITSTATUS(child_status));

    ASSERT_EQ(UCS_OK,
              uct_md_mem_reg(m_md, page, 100, UCT_MD_MEM_ACCESS_ALL, &memh));
    ASSERT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    free(page);

    check_ok();
    uint64_t v = 0x99;
    ASSERT_EQ(UCS_OK, retry([&] {
                  return uct_ep_put_short(m_ab, &v, 8, (uintptr_t)m.ptr,
                                          m.rkey);
              }));
    flush_ep(m_ab);
    EXPECT_EQ(0x99u, *(uint64_t *)m.ptr);
    /* a new interface on the same device, and traffic to it */
    entity *c = create_entity();
    ASSERT_TRUE(c != NULL);
    uct_ep_h ac = connect(m_a, c);
    held_rx rx;
    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(c->iface, AM_ID, held_rx::cb, &rx, 0));
    ASSERT_EQ(UCS_OK,
              retry([&] { return uct_ep_am_short(ac, AM_ID, 1, NULL, 0); }));
    ASSERT_TRUE(wait_for([&] { return rx.count == 1; }));
    EXPECT_TRUE(m_errors.empty());
}

/* UCX's send_ooo_with_comp: an AM sent from a send completion callback,
 * while the endpoint has a request in its pending queue (added when its
 * resources ran out), must not overtake that request: the pending AM
 * arrives first (the one from the callback may be refused) */
struct order_rx {
    int pend_first; /* the pending AM came before the callback's */
    int comp_first;
    bool pend, comp;

    static ucs_status_t cb(void *arg, void *data, size_t length, unsigned flags)
    {
        order_rx *self = static_cast<order_rx *>(arg);
        uint64_t hdr;

        memcpy(&hdr, data, sizeof(hdr));
        if (hdr == 0x9e9e) {
            self->pend = true;
            self->pend_first += !self->comp;
        } else if (hdr == 0xc0c0) {
            self->comp = true;
            self->comp_first += !self->pend;
        }
        return UCS_OK;
    }
};

struct comp_sender {
    uct_completion_t uct;
    uct_ep_h ep;
    ucs_status_t status;

    static void cb(uct_completion_t *self)
    {
        comp_sender *c = ucs_container_of(self, comp_sender, uct);
        c->status      = uct_ep_am_short(c->ep, AM_ID + 4, 0xc0c0, NULL, 0);
    }
};

struct pend_sender {
    uct_pending_req_t uct;
    uct_ep_h ep;

    static ucs_status_t cb(uct_pending_req_t *self)
    {
        pend_sender *r = ucs_container_of(self, pend_sender, uct);
        return uct_ep_am_short(r->ep, AM_ID + 4, 0x9e9e, NULL, 0);
    }
};

TEST_P(uct_dcx_contract, completion_send_does_not_overtake_pending)
{
    std::map<std::string, std::string> cfg;
    mem m        = alloc_mem(4096);
    uint64_t hdr = 0x1234;

    /* the endpoint runs out of credits (default), or of slots on its DCI
     * (a send queue shorter than the credit window) */
    cfg["TX_QUEUE_LEN"] = "8";
    entity *s = create_entity(cfg), *r = create_entity();
    ASSERT_TRUE(s && r);
    uct_ep_h eps[2]    = {m_ab, connect(s, r)};
    entity *targets[2] = {m_b, r};

    for (int k = 0; k < 2; ++k) {
        uct_ep_h ep = eps[k];
        order_rx rx = {0, 0, false, false};
        comp_sender cs;
        pend_sender ps;
        ucs_status_t status;

        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(targets[k]->iface, AM_ID + 4,
                                                   order_rx::cb, &rx, 0));
        for (int round = 0; round < 20; ++round) {
            rx.pend = rx.comp = false;
            cs.uct.func       = comp_sender::cb;
            cs.uct.count      = 1;
            cs.uct.status     = UCS_OK;
            cs.ep             = ep;
            cs.status         = UCS_ERR_LAST;
            uct_iov_t iov     = {m.ptr, 32, m.memh, 0, 1};
            status            = retry([&] {
                return uct_ep_am_zcopy(ep, AM_ID + 4, &hdr, sizeof(hdr), &iov,
                                                  1, 0, &cs.uct);
            });
            ASSERT_FALSE(UCS_STATUS_IS_ERR(status));
            if (status == UCS_OK) {
                continue;
            }
            /* fill, then one request into the pending queue */
            while ((status = uct_ep_am_short(ep, AM_ID + 4, hdr, NULL, 0)) ==
                   UCS_OK) {
            }
            ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
            ps.uct.func = pend_sender::cb;
            ps.ep       = ep;
            status      = uct_ep_pending_add(ep, &ps.uct, 0);
            if (status == UCS_ERR_BUSY) {
                ASSERT_EQ(UCS_OK, pend_sender::cb(&ps.uct));
            } else {
                ASSERT_EQ(UCS_OK, status);
            }
            ASSERT_TRUE(wait_for([&] { return rx.pend; }));
            ASSERT_TRUE(wait_for([&] {
                return (cs.status != UCS_ERR_LAST) &&
                       ((cs.status != UCS_OK) || rx.comp);
            }));
            flush_ep(ep);
        }
        EXPECT_GT(rx.pend_first, 0) << k;
        EXPECT_EQ(0, rx.comp_first)
            << k << ": " << rx.pend_first << " in order";
    }
}

/* The receive headroom is the user's (UCP writes its receive descriptor
 * there): a handler that fills all of it and keeps the descriptor, for
 * headrooms of 0, 5 and 200 bytes; the kept data stay intact, the
 * descriptors go back with uct_iface_release_desc, receiving goes on */
class uct_dcx_contract_headroom : public uct_dcx_contract {
protected:
    virtual void iface_params(uct_iface_params_t &params)
    {
        params.rx_headroom = s_headroom;
    }

    static size_t s_headroom;
};

size_t uct_dcx_contract_headroom::s_headroom = 16;

struct scribble_rx {
    size_t headroom;
    std::vector<void *> kept;
    std::vector<std::string> data;
    int count;

    static ucs_status_t cb(void *arg, void *data, size_t length, unsigned flags)
    {
        scribble_rx *self = static_cast<scribble_rx *>(arg);

        self->count++;
        if (!(flags & UCT_CB_PARAM_FLAG_DESC)) {
            return UCS_OK; /* lent in place: no headroom, nothing to keep */
        }
        memset((char *)data - self->headroom, 0xee, self->headroom);
        if ((self->count % 2) == 0) {
            self->kept.push_back((char *)data - self->headroom);
            self->data.push_back(std::string((char *)data, length));
            return UCS_INPROGRESS;
        }
        return UCS_OK;
    }
};

TEST_P(uct_dcx_contract_headroom, user_fills_headroom)
{
    const size_t headrooms[] = {0, 5, 200};

    for (size_t h = 0; h < 3; ++h) {
        s_headroom = headrooms[h];
        entity *s = create_entity(), *r = create_entity();
        ASSERT_TRUE(s && r);
        uct_ep_h ep = connect(s, r);
        scribble_rx rx;
        rx.headroom = s_headroom;
        rx.count    = 0;
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(r->iface, AM_ID,
                                                   scribble_rx::cb, &rx, 0));
        for (int i = 0; i < 600; ++i) {
            std::string p(1 + (i % 300), (char)('A' + (i % 26)));
            ASSERT_NO_FATAL_FAILURE(send_mixed(ep, i, p));
        }
        ASSERT_TRUE(wait_for([&] { return rx.count == 600; }));
        for (size_t k = 0; k < rx.kept.size(); ++k) {
            EXPECT_EQ(0, memcmp((char *)rx.kept[k] + rx.headroom,
                                rx.data[k].data(), rx.data[k].size()))
                << k;
            release_desc(rx.kept[k]); /* headroom 5: uct_fixture.h */
        }
        flush_ep(ep);
    }
    s_headroom = 16;
}

/* UCX's uct_p2p_mix_test: a random mix of every operation at random sizes
 * up to its limit, on endpoints to two interfaces, with fences and flushes
 * in between; every AM arrives whole, every get reads what is there, every
 * put lands, every atomic counts */
TEST_P(uct_dcx_contract, random_mix)
{
    const int n = 6000;
    entity *c   = create_entity();
    ASSERT_TRUE(c != NULL);
    uct_ep_h eps[3] = {m_ab, connect(m_a, c), connect(m_a, m_b)};
    entity *tgt[3]  = {m_b, c, m_b};
    held_rx rx_c;
    const uct_iface_attr_t &a = m_a->attr;
    size_t big                = ucs_max(a.cap.am.max_zcopy, (size_t)65536);
    mem src = alloc_mem(big), rem = alloc_mem(2 * big + 4096);
    mem loc = alloc_mem(big);
    std::string payload(big, 0);
    uint64_t *counter64 = (uint64_t *)((char *)rem.ptr + 2 * big);
    uint32_t *counter32 = (uint32_t *)(counter64 + 1);
    uint64_t expect64 = 0, fetched64 = 0;
    uint32_t expect32 = 0, fetched32 = 0;
    std::vector<test_comp> comps(n);
    std::vector<std::string> gets(n);
    size_t am_sent[2] = {0, 0};
    unsigned seed     = 12345;

    ASSERT_EQ(UCS_OK,
              uct_iface_set_am_handler(c->iface, AM_ID, held_rx::cb, &rx_c, 0));
    for (size_t i = 0; i < big; ++i) {
        payload[i]                 = (char)(i * 7 + 3);
        ((char *)src.ptr)[i]       = payload[i];
        ((char *)rem.ptr)[big + i] = (char)(i * 5 + 1); /* get area */
    }
    for (int i = 0; i < n; ++i) {
        int e = rand_r(&seed) % 3, op = rand_r(&seed) % 12;
        uct_ep_h ep = eps[e];

        /* an atomic the interface does not offer: a fence or flush */
        if (((op == 8) &&
             !(a.cap.atomic64.op_flags & UCS_BIT(UCT_ATOMIC_OP_ADD))) ||
            ((op == 9) &&
             !(a.cap.atomic32.fop_flags & UCS_BIT(UCT_ATOMIC_OP_ADD))) ||
            ((op == 10) &&
             !(a.cap.atomic64.fop_flags & UCS_BIT(UCT_ATOMIC_OP_ADD)))) {
            op = 11;
        }
        size_t len;
        ucs_status_t status = UCS_OK;
        uct_iov_t iov;
        uint64_t hdr = i;

        switch (op) {
        case 0:
            len    = rand_r(&seed) % (a.cap.am.max_short - 7);
            status = retry([&] {
                return uct_ep_am_short(ep, AM_ID, hdr, payload.data(), len);
            });
            am_sent[tgt[e] == c]++;
            break;
        case 1: {
            std::string p = payload.substr(0, rand_r(&seed) %
                                                  (a.cap.am.max_bcopy + 1));
            ASSERT_EQ((ssize_t)p.size(), retry_len([&] {
                          return uct_ep_am_bcopy(ep, AM_ID, pack_str, &p, 0);
                      }));
            am_sent[tgt[e] == c]++;
            break;
        }
        case 2:
            len    = rand_r(&seed) % (a.cap.am.max_zcopy - 8 + 1);
            iov    = {src.ptr, len, src.memh, 0, 1};
            status = retry([&] {
                return uct_ep_am_zcopy(ep, AM_ID, &hdr, 8, &iov, 1, 0,
                                       &comps[i].uct);
            });
            am_sent[tgt[e] == c]++;
            break;
        case 3:
            len    = rand_r(&seed) % (a.cap.put.max_short + 1);
            status = retry([&] {
                return uct_ep_put_short(ep, payload.data(), len,
                                        (uintptr_t)rem.ptr, rem.rkey);
            });
            break;
        case 4: {
            std::string p = payload.substr(0, rand_r(&seed) %
                                                  (a.cap.put.max_bcopy + 1));
            ASSERT_EQ((ssize_t)p.size(), retry_len([&] {
                          return uct_ep_put_bcopy(ep, pack_str, &p,
                                                  (uintptr_t)rem.ptr, rem.rkey);
                      }));
            break;
        }
        case 5:
            len    = rand_r(&seed) % (big + 1);
            iov    = {src.ptr, len, src.memh, 0, 1};
            status = retry([&] {
                return uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)rem.ptr,
                                        rem.rkey, &comps[i].uct);
            });
            break;
        case 6:
            len    = rand_r(&seed) % (a.cap.get.max_bcopy + 1);
            status = retry([&] {
                return uct_ep_get_bcopy(ep, unpack_str, &gets[i], len,
                                        (uintptr_t)rem.ptr + big, rem.rkey,
                                        &comps[i].uct);
            });
            break;
        case 7:
            len    = rand_r(&seed) % (big + 1);
            iov    = {loc.ptr, len, loc.memh, 0, 1};
            status = retry([&] {
                return uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)rem.ptr + big,
                                        rem.rkey, &comps[i].uct);
            });
            break;
        case 8:
            expect64 += 3;
            status = retry([&] {
                return uct_ep_atomic64_post(ep, UCT_ATOMIC_OP_ADD, 3,
                                            (uintptr_t)counter64, rem.rkey);
            });
            break;
        case 9:
            expect32 += 5;
            status = retry([&] {
                return uct_ep_atomic32_fetch(ep, UCT_ATOMIC_OP_ADD, 5,
                                             &fetched32, (uintptr_t)counter32,
                                             rem.rkey, &comps[i].uct);
            });
            break;
        case 10:
            expect64 += 1;
            status = retry([&] {
                return uct_ep_atomic64_fetch(ep, UCT_ATOMIC_OP_ADD, 1,
                                             &fetched64, (uintptr_t)counter64,
                                             rem.rkey, &comps[i].uct);
            });
            break;
        default:
            if (rand_r(&seed) % 2) {
                EXPECT_EQ(UCS_OK, uct_ep_fence(ep, 0));
            } else {
                flush_ep(ep);
            }
            break;
        }
        ASSERT_FALSE(UCS_STATUS_IS_ERR(status))
            << i << " op " << op << ": " << ucs_status_string(status);
        if (status == UCS_OK) {
            comps[i].done = 1; /* completed at once, nothing to call */
        }
        if ((i % 50) == 0) {
            progress();
        }
    }
    for (int e = 0; e < 3; ++e) {
        flush_ep(eps[e]);
    }
    for (int i = 0; i < n; ++i) {
        ASSERT_TRUE(wait_for([&] { return comps[i].done > 0; })) << i;
        EXPECT_EQ(UCS_OK, comps[i].status) << i;
        EXPECT_EQ(0,
                  memcmp(gets[i].data(), (char *)rem.ptr + big, gets[i].size()))
            << i;
    }
    ASSERT_TRUE(wait_for([&] {
        return ((size_t)m_rx.count == am_sent[0]) &&
               ((size_t)rx_c.count == am_sent[1]);
    })) << m_rx.count
        << "/" << am_sent[0] << " " << rx_c.count << "/" << am_sent[1];
    EXPECT_EQ(expect64, *counter64);
    EXPECT_EQ(expect32, *counter32);
    EXPECT_TRUE(m_errors.empty());
}

/* The same from an AM handler, after a credit grant: an endpoint out of
 * credits queues a request; its peer grants credits and sends it an AM
 * whose handler sends on that endpoint; the handler's AM must not pass the
 * queued one.  (It failed in 20 of 20 rounds on every policy while the
 * grant gave the credits back at once, inside the progress: the handler's
 * send took them before the pending requests were dispatched at the end of
 * that progress.  The credits of an endpoint with pending requests are now
 * held until its dispatch: uct_dcx_ep_fc_grant, dcx_fc.c.) */
struct reply_rx {
    uct_ep_h ep;
    ucs_status_t status;
    int count;

    static ucs_status_t cb(void *arg, void *data, size_t length, unsigned flags)
    {
        reply_rx *self = static_cast<reply_rx *>(arg);

        self->count++;
        self->status = uct_ep_am_short(self->ep, AM_ID + 4, 0xc0c0, NULL, 0);
        return UCS_OK;
    }
};

TEST_P(uct_dcx_contract, handler_send_after_grant_does_not_overtake_pending)
{
    uct_ep_h ba  = connect(m_b, m_a);
    order_rx rx  = {0, 0, false, false};
    reply_rx rep = {m_ab, UCS_ERR_LAST, 0};
    pend_sender ps;
    ucs_status_t status;
    int overtaken = 0, rounds = 0;

    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, AM_ID + 4,
                                               order_rx::cb, &rx, 0));
    ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_a->iface, AM_ID + 5,
                                               reply_rx::cb, &rep, 0));
    for (int round = 0; round < 20; ++round) {
        rx.pend = rx.comp = false;
        rep.status        = UCS_ERR_LAST;
        /* a out of credits (nobody progresses), one request queued */
        while ((status = uct_ep_am_short(m_ab, AM_ID + 4, 1, NULL, 0)) ==
               UCS_OK) {
        }
        ASSERT_EQ(UCS_ERR_NO_RESOURCE, status);
        ps.uct.func = pend_sender::cb;
        ps.ep       = m_ab;
        status      = uct_ep_pending_add(m_ab, &ps.uct, 0);
        if (status == UCS_ERR_BUSY) {
            ASSERT_EQ(UCS_OK, pend_sender::cb(&ps.uct));
            continue;
        }
        ASSERT_EQ(UCS_OK, status);
        /* b takes a's AMs in (and grants), then sends a an AM */
        for (int i = 0; i < 200; ++i) {
            uct_worker_progress(m_b->worker);
        }
        ASSERT_EQ(UCS_OK, retry([&] {
                      return uct_ep_am_short(ba, AM_ID + 5, 0, NULL, 0);
                  }));
        ASSERT_TRUE(wait_for([&] {
            return rx.pend && (rep.status != UCS_ERR_LAST) &&
                   ((rep.status != UCS_OK) || rx.comp);
        }));
        ++rounds;
        overtaken += rx.comp_first;
        rx.comp_first = 0;
        flush_ep(m_ab);
    }
    EXPECT_GT(rounds, 0);
    EXPECT_EQ(0, overtaken) << "of " << rounds << " rounds";
}

/* UCX's uct_cancel_test: two interfaces fill their endpoints to each other
 * until refused (AM zcopy/bcopy, get zcopy/bcopy, no completions), flush
 * both with UCT_FLUSH_FLAG_CANCEL under one shared completion, destroy the
 * endpoints and connect again, many times: every flush completes, at most
 * one error reaches the handler, traffic goes on */
class uct_dcx_contract_cancel : public uct_dcx_contract {
protected:
    enum op_t {
        AM_ZCOPY,
        AM_BCOPY,
        GET_ZCOPY,
        GET_BCOPY
    };

    ucs_status_t send(op_t op, uct_ep_h ep, mem &loc, mem &rem)
    {
        static const std::string payload(32, 'c');
        uct_iov_t iov = {loc.ptr, 1024, loc.memh, 0, 1};
        ssize_t len;

        switch (op) {
        case AM_ZCOPY:
            return uct_ep_am_zcopy(ep, AM_ID, NULL, 0, &iov, 1, 0, NULL);
        case AM_BCOPY:
            len = uct_ep_am_bcopy(ep, AM_ID, pack_str, (void *)&payload, 0);
            return (len >= 0) ? UCS_OK : (ucs_status_t)len;
        case GET_ZCOPY:
            return uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)rem.ptr, rem.rkey,
                                    NULL);
        default:
            return uct_ep_get_bcopy(ep, unpack_raw, loc.ptr, 32,
                                    (uintptr_t)rem.ptr, rem.rkey, NULL);
        }
    }

    void run(op_t op)
    {
        mem l0 = alloc_mem(8192), l1 = alloc_mem(8192);
        uct_ep_h e0 = m_ab, e1 = connect(m_b, m_a);
        held_rx rx_a;

        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_a->iface, AM_ID,
                                                   held_rx::cb, &rx_a, 0));
        for (int round = 0; round < 30; ++round) {
            bool full0 = false, full1 = false;
            while (!full0 || !full1) {
                ucs_status_t status;
                if (!full0) {
                    status = send(op, e0, l0, l1);
                    full0  = (status == UCS_ERR_NO_RESOURCE);
                    ASSERT_TRUE(full0 || !UCS_STATUS_IS_ERR(status))
                        << ucs_status_string(status);
                }
                if (!full1) {
                    status = send(op, e1, l1, l0);
                    full1  = (status == UCS_ERR_NO_RESOURCE);
                    ASSERT_TRUE(full1 || !UCS_STATUS_IS_ERR(status))
                        << ucs_status_string(status);
                }
            }

            uct_completion_t done          = {NULL, 3, UCS_OK};
            std::vector<uct_ep_h> flushing = {e0, e1};
            m_errors.clear();
            ASSERT_TRUE(wait_for(
                [&] {
                    for (size_t i = 0; i < flushing.size();) {
                        ucs_status_t status =
                            uct_ep_flush(flushing[i], UCT_FLUSH_FLAG_CANCEL,
                                         &done);
                        if (status == UCS_ERR_NO_RESOURCE) {
                            ++i;
                            continue;
                        }
                        EXPECT_TRUE((status == UCS_OK) ||
                                    (status == UCS_INPROGRESS))
                            << ucs_status_string(status);
                        if (status == UCS_OK) {
                            done.count--;
                        }
                        flushing.erase(flushing.begin() + i);
                    }
                    return flushing.empty();
                },
                20))
                << "round " << round;
            ASSERT_TRUE(wait_for([&] { return done.count == 1; }, 20))
                << "round " << round;
            destroy_ep(e0);
            destroy_ep(e1);
            EXPECT_LE(m_errors.size(), 1u) << "round " << round;
            e0 = connect(m_a, m_b);
            e1 = connect(m_b, m_a);
        }
        m_ab = e0;
        check_ok();
        log_counter::reset();
    }
};

TEST_P(uct_dcx_contract_cancel, am_zcopy)
{
    run(AM_ZCOPY);
}
TEST_P(uct_dcx_contract_cancel, am_bcopy)
{
    run(AM_BCOPY);
}
TEST_P(uct_dcx_contract_cancel, get_zcopy)
{
    run(GET_ZCOPY);
}
TEST_P(uct_dcx_contract_cancel, get_bcopy)
{
    run(GET_BCOPY);
}

/* UCX's uct_flush_test with UCT_FLUSH_FLAG_CANCEL and no completion: the
 * flush is called again while it answers "in progress" or "no resource",
 * until it answers UCS_OK; then the ep is destroyed */
TEST_P(uct_dcx_contract_cancel, flush_cancel_no_comp_until_ok)
{
    mem l = alloc_mem(8192), r = alloc_mem(8192);

    for (int round = 0; round < 20; ++round) {
        uct_ep_h ep            = connect(m_a, m_b);
        uct_completion_t zcomp = {NULL, 2, UCS_OK};
        uct_iov_t iov          = {l.ptr, 8, l.memh, 0, 1};
        ucs_status_t status;

        if (round % 2) {
            status = retry([&] {
                return uct_ep_am_zcopy(ep, AM_ID, NULL, 0, &iov, 1, 0, &zcomp);
            });
        } else {
            status = retry([&] {
                return uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)r.ptr, r.rkey,
                                        &zcomp);
            });
        }
        ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS));
        if (status == UCS_OK) {
            zcomp.count--;
        }
        ASSERT_TRUE(wait_for(
            [&] {
                progress();
                status = uct_ep_flush(ep,
                                      UCT_FLUSH_FLAG_LOCAL |
                                          UCT_FLUSH_FLAG_CANCEL,
                                      NULL);
                return (status != UCS_ERR_NO_RESOURCE) &&
                       (status != UCS_INPROGRESS);
            },
            20))
            << "round " << round;
        EXPECT_EQ(UCS_OK, status);
        EXPECT_EQ(1, zcomp.count) << "round " << round;
        destroy_ep(ep);
    }
    EXPECT_TRUE(m_errors.empty());
    check_ok();
    log_counter::reset();
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_contract_cancel, UCT_DCX_POLICIES);
INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_contract_peer, UCT_DCX_POLICIES);
INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_contract_nocache, UCT_DCX_POLICIES);
INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_contract_headroom, UCT_DCX_POLICIES);
