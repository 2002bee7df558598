/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: strided keys configured on a queue of their own
 * (UCX_DCX_STRIDED_KEY_QUEUE=own, and always on mlx5, whose UMR QP nothing
 * orders with the DCIs; docs/strided.md), and the 16-bit limits of an
 * interleaved entry on every device:
 *  - an operation over a layout not configured yet posts the configure and
 *    is refused (UCS_ERR_NO_RESOURCE) without moving a byte, again on every
 *    retry, until a progress call polls the configure's completion; then it
 *    goes at once, and so does every later operation over the layout;
 *  - such a refusal queues a pending request (not "busy"), which the
 *    progress call that sees the completion dispatches;
 *  - one key reconfigured for layout after layout moves each one's bytes,
 *    and a key configured for an operation that has not come back for it
 *    is spared once by another's miss;
 *  - a configure that fails (soft fault injection) refuses the operation
 *    waiting for it with an error and one log line, moving nothing, and
 *    the layout is configured again by the next operation;
 *  - strides and elements of 65535 bytes, and past them, move exactly
 *    their bytes (interleaved up to the limit, list entries past it), and a
 *    list layout longer than a key is refused with one error line;
 *  - configuration: "dci" where the device takes configures elsewhere, and
 *    a value that is no choice, are refused.
 */
#include "uct_strided_fixture.h"


/* The operation's data work request waits for the configure's completion */
TEST_P(uct_dcx_strided, own_queue_data_waits_for_configure)
{
    entity *a = create(), *b = create();
    uct_ep_h ep = connect(a, b);
    if (!stats(a).own_queue) {
        GTEST_SKIP() << "configures go on the DCI of the operation";
    }
    layout l = {8, 24, 100};
    mem src = strided_mem(l, 1), dst = alloc_mem(l.length * l.count + 64);
    memset(dst.ptr, GAP, dst.length);
    uct_iov_t iov = iov_of(src, l);
    test_comp comp;

    for (int n = 0; n < 3; ++n) {
        /* no progress: the configure's completion is not seen */
        EXPECT_EQ(UCS_ERR_NO_RESOURCE,
                  uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)dst.ptr, dst.rkey,
                                   &comp.uct))
            << "try " << n;
    }
    dcx_strided_stats_t s = stats(a);
    EXPECT_EQ(1u, s.misses);
    EXPECT_EQ(1u, s.configures);
    EXPECT_EQ(0u, s.cfg_done);
    EXPECT_EQ(3u, s.cfg_waits);
    EXPECT_EQ(0, comp.done);

    ASSERT_TRUE(wait_for([&]() { return stats(a).cfg_done == 1; }));
    for (size_t i = 0; i < dst.length; ++i) {
        ASSERT_EQ(GAP, ((char *)dst.ptr)[i]) << "written before the put";
    }

    /* ready: posted at the first call, now and for the same layout again */
    for (int n = 0; n < 2; ++n) {
        test_comp c;
        ASSERT_EQ(UCS_INPROGRESS,
                  uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)dst.ptr, dst.rkey,
                                   &c.uct))
            << "put " << n;
        ASSERT_TRUE(wait_for([&]() { return c.done > 0; }));
        EXPECT_EQ(UCS_OK, c.status);
        std::vector<char> exp = packed(l, 1);
        EXPECT_EQ(0, memcmp(dst.ptr, exp.data(), exp.size())) << "put " << n;
    }
    s = stats(a);
    EXPECT_EQ(1u, s.misses);
    EXPECT_EQ(1u, s.hits); /* the refused put's retry is not a hit */
    EXPECT_EQ(1u, s.configures);
    EXPECT_EQ(0u, s.cfg_failed);
}

/* What UCP does with the refusal: a pending request, queued, goes out
 * once the configure completes */
TEST_P(uct_dcx_strided, own_queue_pending_request_goes_after_configure)
{
    entity *a = create(), *b = create();
    uct_ep_h ep = connect(a, b);
    if (!stats(a).own_queue) {
        GTEST_SKIP() << "configures go on the DCI of the operation";
    }
    layout l = {13, 40, 300};
    mem src = strided_mem(l, 2), dst = alloc_mem(l.length * l.count);
    uct_iov_t iov = iov_of(src, l);
    test_comp comp;

    struct req_t {
        uct_pending_req_t uct;
        uct_ep_h ep;
        uct_iov_t *iov;
        mem *dst;
        test_comp *comp;
        int calls;
        ucs_status_t status;
        static ucs_status_t cb(uct_pending_req_t *self)
        {
            req_t *r  = ucs_container_of(self, req_t, uct);
            r->status = uct_ep_put_zcopy(r->ep, r->iov, 1,
                                         (uintptr_t)r->dst->ptr, r->dst->rkey,
                                         &r->comp->uct);
            r->calls++;
            return (r->status == UCS_ERR_NO_RESOURCE) ? r->status : UCS_OK;
        }
    } req;
    req.uct.func = req_t::cb;
    req.ep       = ep;
    req.iov      = &iov;
    req.dst      = &dst;
    req.comp     = &comp;
    req.calls    = 0;
    req.status   = UCS_ERR_NO_RESOURCE;

    ASSERT_EQ(UCS_ERR_NO_RESOURCE, req_t::cb(&req.uct));
    /* queued: a "busy" answer would make the caller retry without the
     * progress call that brings the completion */
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(ep, &req.uct, 0));
    ASSERT_TRUE(wait_for([&]() { return req.status != UCS_ERR_NO_RESOURCE; }));
    EXPECT_EQ(UCS_INPROGRESS, req.status);
    /* (dispatched by every progress call, refused until the key is
     * ready) */
    EXPECT_GE(req.calls, 2);
    ASSERT_TRUE(wait_for([&]() { return comp.done > 0; }));
    EXPECT_EQ(UCS_OK, comp.status);
    std::vector<char> exp = packed(l, 2);
    EXPECT_EQ(0, memcmp(dst.ptr, exp.data(), exp.size()));
}

/* One key, reconfigured for each layout in turn: each put moves the bytes
 * of its own layout, never those of the key's layout before */
TEST_P(uct_dcx_strided, one_key_reconfigured_per_layout)
{
    entity *a = create("STRIDED_KEYS", "1"), *b = create();
    uct_ep_h ep = connect(a, b);

    for (unsigned round = 0; round < 2; ++round) {
        for (unsigned i = 0; i < 3; ++i) {
            layout l = {4 + 2 * i, 16 + 5 * i, 64 + 16 * i};
            put_check(a, ep, l, 10 * round + i);
        }
    }
    dcx_strided_stats_t s = stats(a);
    EXPECT_EQ(1u, s.keys_created);
    EXPECT_EQ(6u, s.misses);
    EXPECT_EQ(6u, s.configures);
    EXPECT_EQ(5u, s.evictions);
}

/* The interleaved entry's byte count and stride are 16-bit fields on a
 * ConnectX (caps.mkey_max_stride: 65535 on both devices): layouts at the
 * limit go interleaved, past it as list entries, and each moves exactly
 * its bytes both ways */
TEST_P(uct_dcx_strided, interleave_limits_both_ways)
{
    entity *a = create(), *b = create();
    uct_ep_h ep            = connect(a, b);
    const unsigned n       = std::min(9u, stats(a).key_entries);
    const layout layouts[] = {
        {65534, 65535, n}, /* stride at the limit: interleaved */
        {2, 65535, 200},   /* interleaved: more elements than a key's
                              entries */
        {65535, 65536, n}, /* stride past the limit: list */
        {1, 65536, n},     /* list */
        {65535, 70000, n}, /* element at the limit, stride past it: list */
        {65536, 65600, n}, /* element past the limit: list */
        {100, 65536, n}    /* list */
    };

    ASSERT_GE(n, 5u);
    for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); ++i) {
        const layout &l = layouts[i];
        SCOPED_TRACE("length " + std::to_string(l.length) + " stride " +
                     std::to_string(l.stride) + " count " +
                     std::to_string(l.count));
        put_check(a, ep, l, i);

        std::vector<char> data = packed(l, 50 + i);
        mem src                = alloc_mem(data.size());
        mem dst                = strided_mem(l, 0, false);
        memcpy(src.ptr, data.data(), data.size());
        uct_iov_t iov = iov_of(dst, l);
        run_zcopy([&](uct_completion_t *c) {
            return uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)src.ptr, src.rkey,
                                    c);
        });
        check_strided(dst, l, 50 + i);
    }
    EXPECT_EQ(0u, stats(a).sge_expanded);
}

/* A stride past the limit needs one entry per element: more elements than
 * a key's entries are refused with one error line, not truncated */
TEST_P(uct_dcx_strided, stride_past_limit_too_many_elements_bad_flow)
{
    entity *a = create("STRIDED_KEY_ENTRIES", "8"), *b = create();
    uct_ep_h ep = connect(a, b);
    layout at = {2, 65535, 9}, past = {2, 65536, 9};
    mem src = strided_mem(past, 1), dst = alloc_mem(64);
    uct_iov_t iov = iov_of(src, past);

    log_counter::reset();
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT,
              uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)dst.ptr, dst.rkey,
                               NULL));
    EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
    log_counter::reset();
    EXPECT_EQ(0u, stats(a).configures);
    put_check(a, ep, at, 2); /* interleaved: 9 elements in 2 entries */
}

TEST_P(uct_dcx_strided, key_queue_config_bad_flow)
{
    std::vector<std::string> bad = {"bogus"};
    if (device()->caps.mkey_qp_type != DCX_QPT_DCI) {
        bad.push_back("dci"); /* the device takes configures elsewhere */
    }

    for (size_t i = 0; i < bad.size(); ++i) {
        std::map<std::string, std::string> cfg;
        entity *e                = NULL;
        cfg["STRIDED_KEY_QUEUE"] = bad[i];
        log_counter::reset();
        EXPECT_NE(UCS_OK, try_create_entity(cfg, &e)) << bad[i];
        EXPECT_GE(log_counter::errors(), 1) << bad[i];
        log_counter::reset();
    }
}

/* A configure that fails (its completion forced to an error on the soft
 * device, as a UMR the HCA rejects): the operation waiting for it is
 * refused with UCS_ERR_IO_ERROR and one error line, having moved nothing;
 * the queue recovers and the next operation over the layout configures it
 * again and moves it */
TEST_P(uct_dcx_strided, own_queue_configure_failure_bad_flow)
{
    /* (the emulation's script leaves it out, SOFT_ONLY; a filter given
     * to the script replaces that exclusion) */
    if (!dcx_dev_is_soft(device())) {
        GTEST_SKIP() << "soft fault injection";
    }
    entity *a = create("STRIDED_KEY_QUEUE", "own"), *b = create();
    uct_ep_h ep = connect(a, b);
    layout l    = {8, 24, 100};
    mem src = strided_mem(l, 3), dst = alloc_mem(l.length * l.count);
    memset(dst.ptr, GAP, dst.length);
    uct_iov_t iov = iov_of(src, l);
    dcx_soft_fault_t f;
    test_comp comp;

    memset(&f, 0, sizeof(f));
    f.type   = DCX_SOFT_FAULT_ERROR_CQE;
    f.opcode = DCX_WR_MKEY_INTERLEAVED;
    f.count  = 1;
    f.status = DCX_WC_LOC_QP_OP_ERR;
    ASSERT_EQ(0, dcx_soft_fault_inject(device(), &f));
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_NO_RESOURCE,
              uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)dst.ptr, dst.rkey,
                               &comp.uct));
    ASSERT_TRUE(wait_for([&]() { return stats(a).cfg_failed == 1; }));
    EXPECT_EQ(UCS_ERR_IO_ERROR,
              uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)dst.ptr, dst.rkey,
                               &comp.uct));
    EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
    log_counter::reset();
    dcx_soft_fault_clear(device());
    EXPECT_EQ(0, comp.done);
    for (size_t i = 0; i < dst.length; ++i) {
        ASSERT_EQ(GAP, ((char *)dst.ptr)[i]) << "written by a failed put";
    }

    put(ep, &iov, 1, dst);
    std::vector<char> exp = packed(l, 3);
    EXPECT_EQ(0, memcmp(dst.ptr, exp.data(), exp.size()));
    dcx_strided_stats_t s = stats(a);
    EXPECT_EQ(2u, s.misses);
    EXPECT_EQ(2u, s.configures);
    EXPECT_EQ(1u, s.cfg_failed);
    EXPECT_EQ(1u, s.cfg_done);
}

/* One key, two layouts whose operations wait for it in turn: the key
 * configured for the first is not evicted by the second's retry before the
 * first came back for it (spared once), so neither waits for ever */
TEST_P(uct_dcx_strided, own_queue_fresh_key_spared_once)
{
    entity *a = create("STRIDED_KEYS", "1"), *b = create();
    uct_ep_h ep = connect(a, b);
    if (!stats(a).own_queue) {
        GTEST_SKIP() << "configures go on the DCI of the operation";
    }
    const layout l1 = {8, 20, 100}, l2 = {8, 30, 100};
    mem s1 = strided_mem(l1, 1), s2 = strided_mem(l2, 2);
    mem d1 = alloc_mem(1000), d2 = alloc_mem(1000);
    uct_iov_t i1 = iov_of(s1, l1), i2 = iov_of(s2, l2);
    test_comp c1, c2;

    auto put1 = [&]() {
        return uct_ep_put_zcopy(ep, &i1, 1, (uintptr_t)d1.ptr, d1.rkey,
                                &c1.uct);
    };
    auto put2 = [&]() {
        return uct_ep_put_zcopy(ep, &i2, 1, (uintptr_t)d2.ptr, d2.rkey,
                                &c2.uct);
    };

    EXPECT_EQ(UCS_ERR_NO_RESOURCE, put1()); /* configures the key */
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, put2()); /* the key is held */
    ASSERT_TRUE(wait_for([&]() { return stats(a).cfg_done == 1; }));
    /* the second comes back first: the first's key is spared */
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, put2());
    EXPECT_EQ(0u, stats(a).evictions);
    EXPECT_EQ(UCS_INPROGRESS, put1());
    ASSERT_TRUE(wait_for([&]() { return c1.done > 0; }));
    ucs_status_t status = UCS_OK;
    ASSERT_TRUE(wait_for([&]() {
        status = put2();
        return status != UCS_ERR_NO_RESOURCE;
    }));
    EXPECT_EQ(UCS_INPROGRESS, status);
    ASSERT_TRUE(wait_for([&]() { return c2.done > 0; }));
    std::vector<char> e1 = packed(l1, 1), e2 = packed(l2, 2);
    EXPECT_EQ(0, memcmp(d1.ptr, e1.data(), e1.size()));
    EXPECT_EQ(0, memcmp(d2.ptr, e2.data(), e2.size()));
    EXPECT_EQ(1u, stats(a).evictions);
}
