/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test fixture for the dcx transport through the public UCT API: a memory
 * domain on the device of test_md_name() (a soft device on a fabric
 * private to the test process, "soft0", unless DCX_TEST_DEVICE names
 * another), interfaces on its port 1, endpoints between them, and helpers
 * to progress and to wait.
 */
#ifndef DCX_GTEST_UCT_FIXTURE_H_
#define DCX_GTEST_UCT_FIXTURE_H_

#include <gtest/gtest.h>

extern "C" {
#include <uct/api/uct.h>
#include <ucs/async/async.h>
#include <ucs/debug/log_def.h>
#include "dcx_dev.h"
#include "dcx_soft.h"
}

#include "log_counter.h"
#include "test_device.h"

#include <cstring>
#include <sys/types.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace dcx_test {

/* Seconds of the monotonic clock (timeouts of the tests) */
double now_sec();

/* uct_iface_release_desc() without its plain load of the release pointer
 * stored before the headroom: that slot is aligned only when the payload
 * less the headroom is (not for a headroom of 5 before an aligned AM
 * payload, nor before the payload of a tag eager message, which follows
 * the tag header); UCX's inline code, UB that UBSan stops at. */
/* An endpoint left alive when its interface is closed (a test of that
 * misuse): UCT frees no endpoint of the user's at the close, and none can
 * be destroyed after it, so its memory stays; LeakSanitizer is told so. */
static inline void forget_ep(uct_ep_h ep)
{
#ifdef __SANITIZE_ADDRESS__
    __lsan_ignore_object(ep);
#else
    (void)ep;
#endif
}

static inline void release_desc(void *desc)
{
    uct_recv_desc_t *rdesc;

    memcpy(&rdesc, (char *)desc - sizeof(rdesc), sizeof(rdesc));
    rdesc->cb(rdesc, desc);
}

/* The device every test of this binary runs on: test_md_name(),
 * test_on_soft() (test_device.h) */

/* Sets environment variables for the life of the object. */
class scoped_env {
public:
    scoped_env() {}
    ~scoped_env();
    void set(const std::string &name, const std::string &value);

private:
    std::map<std::string, std::pair<bool, std::string>> m_saved;
};

/* One interface and what it needs */
struct entity {
    uct_worker_h worker;
    uct_iface_h iface;
    uct_iface_attr_t attr;
    std::vector<char> dev_addr;
    std::vector<char> iface_addr;
};

class uct_dcx_test : public ::testing::Test {
public:
    static std::string unique_fabric();

protected:
    virtual void SetUp();
    virtual void TearDown();

    /* Environment applied before the MD and interface configs are read */
    virtual void init_env(scoped_env &env) {}

    /* Last changes to the parameters of each interface opened */
    virtual void iface_params(uct_iface_params_t &params) {}

    /* Thread mode of each entity's UCT worker */
    virtual ucs_thread_mode_t worker_thread_mode()
    {
        return UCS_THREAD_MODE_SINGLE;
    }

    entity *create_entity(const std::map<std::string, std::string> &cfg =
                              std::map<std::string, std::string>());
    ucs_status_t
    try_create_entity(const std::map<std::string, std::string> &cfg,
                      entity **e_p);
    uct_ep_h connect(entity *from, entity *to);
    /* An ep to the interface of these (packed) addresses */
    uct_ep_h connect_addr(entity *from, const void *dev_addr,
                          const void *iface_addr);
    /* An ep to the interface of addr_str() text (from a peer process) */
    uct_ep_h connect_str(entity *from, const std::string &addr);
    void destroy_ep(uct_ep_h ep);

    unsigned progress();
    /* Progresses until cond() or timeout; returns cond() */
    bool wait_for(const std::function<bool()> &cond, double timeout = 10.0);
    /* The same progressing only e's worker (so that e's polls, not a
     * peer's on the same device, serve what comes to e) */
    bool wait_progressing(entity *e, const std::function<bool()> &cond,
                          double timeout = 10.0);
    void flush_ep(uct_ep_h ep);
    void flush_iface(entity *e);

    /* Registered memory */
    struct mem {
        void *ptr;
        size_t length;
        uct_mem_h memh;
        uct_rkey_t rkey;
        uct_rkey_bundle_t rkb;
    };
    mem alloc_mem(size_t length);
    void free_mem(mem &m);

    dcx_dev_t *device() const;
    /* The next count WRs of this opcode posted on the (soft) device
     * complete with status, unexecuted: returns dcx_soft_fault_inject()'s
     * result (0: armed) */
    int inject_error_completion(int opcode, dcx_wc_status_t status,
                                unsigned count = 1);
    /* The device has every capability of caps (DCX_CAP_*).  A test that
     * needs one the device may lack (tag matching, strided keys, wake-up
     * events: the mlx5 backend has none of them) skips by it. */
    bool dev_has(uint32_t caps) const;

    /* Errors reported through the interfaces' error handler */
    struct ep_error {
        uct_ep_h ep;
        ucs_status_t status;
    };
    static ucs_status_t err_handler(void *arg, uct_ep_h ep,
                                    ucs_status_t status);
    std::vector<ep_error> m_errors;
    /* When set, the error handler destroys the endpoint and declines the
     * error (returns it), as a user may */
    bool m_err_destroys_ep = false;

    ucs_async_context_t *m_async;
    uct_component_h m_component;
    uct_md_h m_md;
    uct_md_attr_t m_md_attr;
    std::vector<entity *> m_entities;
    std::vector<uct_ep_h> m_eps;
    std::vector<mem> m_mems;
    scoped_env m_env;
};

/* A test run once per DCI pool policy: the parameter names the policy. */
class uct_dcx_policy_test :
    public uct_dcx_test,
    public ::testing::WithParamInterface<std::string> {
protected:
    virtual void init_env(scoped_env &env)
    {
        env.set("UCX_DCX_DCI_POLICY", GetParam());
    }
};

/* An AM handler that counts the messages in the int at arg */
inline ucs_status_t am_count_cb(void *arg, void *data, size_t length,
                                unsigned flags)
{
    (*static_cast<int *>(arg))++;
    return UCS_OK;
}

/*
 * Two interfaces, a sending to b: b counts the AMs of one id in m_rx, and
 * m_mem is registered memory to put into.  For the tests of endpoints that
 * fail or are invalidated, which check that the others stay healthy.
 */
class uct_dcx_pair_test : public uct_dcx_policy_test {
protected:
    void setup_pair(uint8_t am_id,
                    const std::map<std::string, std::string> &cfg_a =
                        std::map<std::string, std::string>())
    {
        m_am_id = am_id;
        m_a     = create_entity(cfg_a);
        m_b     = create_entity();
        ASSERT_TRUE(m_a && m_b);
        m_rx = 0;
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(m_b->iface, am_id,
                                                   am_count_cb, &m_rx, 0));
        m_mem = alloc_mem(65536);
    }

    /* op() again while it is refused for lack of resources */
    template <typename F> ucs_status_t retry(F op)
    {
        ucs_status_t status;

        while ((status = op()) == UCS_ERR_NO_RESOURCE) {
            progress();
        }
        return status;
    }

    /* value put at the start of m_mem with rkey, retried while refused */
    ucs_status_t put(uct_ep_h ep, uct_rkey_t rkey, uint64_t value = 1)
    {
        m_value = value;
        return retry([&] {
            return uct_ep_put_short(ep, &m_value, sizeof(m_value),
                                    (uintptr_t)m_mem.ptr, rkey);
        });
    }

    /* 50 AMs and a put of value from ep reach the peer */
    void check_healthy(uct_ep_h ep, uint64_t value = 99)
    {
        int before = m_rx;

        for (int i = 0; i < 50; ++i) {
            ASSERT_EQ(UCS_OK, retry([&] {
                          return uct_ep_am_short(ep, m_am_id, i, NULL, 0);
                      }));
        }
        ASSERT_TRUE(wait_for([&] { return m_rx == before + 50; }));
        ASSERT_EQ(UCS_OK, put(ep, m_mem.rkey, value));
        flush_ep(ep);
        EXPECT_EQ(value, *(uint64_t *)m_mem.ptr);
    }

    /* The errors reported for ep so far */
    std::vector<ucs_status_t> errors_of(uct_ep_h ep) const
    {
        std::vector<ucs_status_t> found;

        for (size_t i = 0; i < m_errors.size(); ++i) {
            if (m_errors[i].ep == ep) {
                found.push_back(m_errors[i].status);
            }
        }
        return found;
    }

    entity *m_a, *m_b;
    mem m_mem;
    int m_rx;
    uint64_t m_value;
    uint8_t m_am_id;
};

/* A peer process: this test binary run again with one (DISABLED_) test, on
 * the parent's soft fabric, with a pipe each way.  In the child,
 * DCX_PEER_FABRIC names the fabric (uct_dcx_test::SetUp uses it) and
 * DCX_PEER_IN / DCX_PEER_OUT the child's ends of the pipes. */
struct peer_proc {
    pid_t pid;
    int from; /* parent reads what the child writes */
    int to;   /* parent writes what the child reads */

    peer_proc() : pid(-1), from(-1), to(-1) {}
};

/* Starts the peer; env is set in the child only.  pid < 0 on failure. */
peer_proc spawn_peer(const std::string &gtest_filter,
                     const std::map<std::string, std::string> &env =
                         std::map<std::string, std::string>());
/* SIGKILLs the peer (if alive) and closes its pipes */
void kill_peer(peer_proc &p);
/* The child's ends: false when not run as a peer */
bool peer_fds(int *in_fd, int *out_fd);
/* Whole reads and writes on the pipes; timeout_ms < 0 waits forever */
bool read_full(int fd, void *buf, size_t len, int timeout_ms = -1);
bool write_full(int fd, const void *buf, size_t len);
/* An interface's addresses as text, "<device hex>/<interface hex>", to pass
 * to a peer process in its environment (uct_dcx_test::connect_str) */
std::string addr_str(const entity *e);

/* Gives an interface its unexpected-tag callbacks (an interface with tag
 * matching offload needs both), both with arg */
void set_tm_callbacks(uct_iface_params_t &params,
                      uct_tag_unexp_eager_cb_t eager_cb,
                      uct_tag_unexp_rndv_cb_t rndv_cb, void *arg);

/* Every DCI pool policy, for INSTANTIATE_TEST_SUITE_P */
#define UCT_DCX_POLICIES \
    ::testing::Values("dcs", "dcs_quota", "rand", "hybrid", "streams")

/* Completion that counts */
struct test_comp {
    uct_completion_t uct;
    int done;
    ucs_status_t status;

    test_comp(int count = 1) : done(0), status(UCS_OK)
    {
        uct.func   = callback;
        uct.count  = count;
        uct.status = UCS_OK;
    }

    static void callback(uct_completion_t *self)
    {
        test_comp *c = reinterpret_cast<test_comp *>(self);
        c->done++;
        c->status = self->status;
    }
};

/* A flush that was refused, queued in the pending queue and retried from
 * there (as UCP's ucp_ep_flush_progress_pending does) */
struct flush_req {
    uct_pending_req_t uct;
    uct_ep_h ep;
    test_comp comp;
    ucs_status_t status;

    flush_req() : ep(NULL), status(UCS_ERR_NO_MESSAGE) { uct.func = cb; }

    bool done() const
    {
        return (status == UCS_OK) ||
               ((status == UCS_INPROGRESS) && (comp.done > 0));
    }

    static ucs_status_t cb(uct_pending_req_t *self)
    {
        flush_req *r = ucs_container_of(self, flush_req, uct);

        r->status = uct_ep_flush(r->ep, 0, &r->comp.uct);
        return (r->status == UCS_ERR_NO_RESOURCE) ? r->status : UCS_OK;
    }
};

} /* namespace dcx_test */

#endif
