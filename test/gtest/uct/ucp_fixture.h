/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UCP test fixture: two UCP contexts and workers in this process (a and b),
 * each with its worker address, progressed together; waiting for a
 * condition or a request.  Each test class names the features its
 * contexts get and how long a wait may take before it counts as a hang.
 */
#ifndef UCP_FIXTURE_H_
#define UCP_FIXTURE_H_

#include <gtest/gtest.h>

#include <ucp/api/ucp.h>

#include <functional>
#include <string>
#include <vector>

namespace dcx_test {

/* CLOCK_MONOTONIC in seconds */
double now_sec();

/*
 * The device of the UCP tests: test_md_name() (test_device.h).  On a soft
 * device, sets UCX_DCX_SOFT_DEVICES=1 and UCX_DCX_SOFT_FABRIC=fabric (the
 * test's own); on another, keeps the environment the test command gave
 * (dcx-run --mlx5-emu: soft devices off, the emulated devices' fabric,
 * which is the process's) and sets UCX_NET_DEVICES to its port 1.
 */
void use_test_device(const char *fabric);

/* What the dcx interface on the test device offers, from uct_iface_query
 * (asked once, the interface opened as UCP opens it for tags) */
struct test_device_caps {
    bool tag_offload;    /* UCT_IFACE_FLAG_TAG_EAGER_BCOPY */
    bool wakeup;         /* UCT_IFACE_FLAG_EVENT_RECV and EVENT_FD */
    bool dci_streams;    /* an interface opens with DCI_POLICY=streams */
    bool cpu_atomics;    /* UCT_IFACE_FLAG_ATOMIC_CPU */
    size_t tag_min_recv; /* cap.tag.recv.min_recv with TM_MIN_RECV=auto */
};
const test_device_caps &test_device_query();

struct ucp_peer {
    ucp_context_h context;
    ucp_worker_h worker;
    std::vector<char> address;
};

/* The parameter is the test class's own (a DCI policy, an offload mode) */
class ucp_pair_test : public ::testing::TestWithParam<std::string> {
protected:
    /* wait_timeout: the default bound of wait_for() and wait_req(), which
     * only keeps a hang from blocking the run */
    explicit ucp_pair_test(double wait_timeout) : m_wait_timeout(wait_timeout)
    {
        m_a.context = m_b.context = NULL;
        m_a.worker = m_b.worker = NULL;
    }

    /* A context with these UCP_FEATURE_* bits and a single-threaded worker */
    static void create_peer(ucp_peer *p, uint64_t features);
    static void destroy_peer(ucp_peer *p);

    void progress();
    /* Progresses both workers until cond() or timeout (seconds; < 0: the
     * class's default); returns cond() */
    bool wait_for(const std::function<bool()> &cond, double timeout = -1);
    /* Waits for a request and frees it; NULL is done, an error pointer is
     * its status */
    ucs_status_t wait_req(void *req);

    ucp_peer m_a, m_b;

private:
    double m_wait_timeout;
};

} /* namespace dcx_test */

#endif
