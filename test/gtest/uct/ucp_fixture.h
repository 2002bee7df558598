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
