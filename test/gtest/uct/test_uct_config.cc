/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UCX_DCX_* interface knobs: every bad value is refused when the value is
 * parsed or when the interface opens, with exactly one error line that names
 * the variable; good values at the edges of each range open an interface.
 */
#include "uct_fixture.h"

#include <algorithm>
#include <cstring>

/* dcx_config.c is compiled into this test as well (the module exports
 * only the device layer) */
extern "C" {
uint8_t uct_dcx_timeout_exp_of(double seconds);
uint8_t uct_dcx_rnr_timer_of(double seconds);
}

using namespace dcx_test;

namespace {

typedef std::map<std::string, std::string> config_t;

} /* namespace */


class uct_dcx_knobs : public uct_dcx_test {
protected:
    /* The value is refused by the parser: uct_config_modify fails with one
     * error naming the variable */
    void expect_parse_error(const std::string &var, const std::string &value)
    {
        entity *e = NULL;

        log_counter::reset();
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, try_create_entity({{var, value}}, &e))
            << var << "=" << value;
        expect_one_error_naming(var, value);
    }

    /* The value parses but is out of range: the interface does not open */
    void expect_range_error(const config_t &cfg, const std::string &var)
    {
        entity *e = NULL;

        log_counter::reset();
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, try_create_entity(cfg, &e))
            << var << "=" << cfg.begin()->second;
        expect_one_error_naming("UCX_DCX_" + var, cfg.begin()->second);
    }

    void expect_range_error(const std::string &var, const std::string &value)
    {
        expect_range_error({{var, value}}, var);
    }

    void expect_ok(const config_t &cfg)
    {
        entity *e = NULL;

        log_counter::reset();
        EXPECT_EQ(UCS_OK, try_create_entity(cfg, &e))
            << cfg.begin()->first << "=" << cfg.begin()->second << "\n"
            << log_counter::joined();
        EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
    }

    void expect_one_error_naming(const std::string &var,
                                 const std::string &value)
    {
        /* uct_config_modify itself does not log; the parser's line is one */
        EXPECT_EQ(1, log_counter::errors()) << var << "=" << value << ":\n"
                                            << log_counter::joined();
        EXPECT_TRUE(log_counter::contains(var)) << var << "=" << value << ":\n"
                                                << log_counter::joined();
        log_counter::reset();
    }
};

TEST_F(uct_dcx_knobs, dc_key_bad_flow)
{
    /* sign, trailing characters, fraction, overflow, aliasing spellings */
    const char *bad[] = {"-1",
                         "1x",
                         "0.5",
                         "18446744073709551616",
                         "99999999999999999999999",
                         "0x10",
                         "007",
                         " 7",
                         "",
                         "+7"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        expect_parse_error("DC_KEY", bad[i]);
    }
}

TEST_F(uct_dcx_knobs, dc_key_edges)
{
    expect_ok({{"DC_KEY", "0"}});
    expect_ok({{"DC_KEY", "18446744073709551615"}});
}

/* Two interfaces with different keys do not reach each other; the same
 * key written as the same number does */
TEST_F(uct_dcx_knobs, dc_key_values_are_distinct)
{
    uct_iface_attr_t attr;
    entity *a = create_entity({{"DC_KEY", "18446744073709551615"}});
    entity *b = create_entity({{"DC_KEY", "18446744073709551615"}});

    ASSERT_TRUE(a && b);
    ASSERT_EQ(UCS_OK, uct_iface_query(a->iface, &attr));
    uct_ep_h ep    = connect(a, b);
    uint64_t value = 5;
    mem m          = alloc_mem(64);
    ucs_status_t status;
    while ((status = uct_ep_put_short(ep, &value, sizeof(value),
                                      (uintptr_t)m.ptr, m.rkey)) ==
           UCS_ERR_NO_RESOURCE) {
        progress();
    }
    ASSERT_EQ(UCS_OK, status);
    flush_ep(ep);
    EXPECT_EQ(5u, *(uint64_t *)m.ptr);
}

TEST_F(uct_dcx_knobs, timeout_bad_flow)
{
    expect_range_error("TIMEOUT", "-1");
    expect_range_error("TIMEOUT", "0");
    expect_range_error("TIMEOUT", "inf");
    expect_range_error("TIMEOUT", "1e300");
    expect_range_error("TIMEOUT", "9000s");
    expect_parse_error("TIMEOUT", "1parsec");
}

/* A tiny timeout is a tiny timeout (the shortest one), not the device
 * default of seconds */
TEST_F(uct_dcx_knobs, timeout_tiny_is_shortest)
{
    EXPECT_EQ(1, uct_dcx_timeout_exp_of(4e-6));
    EXPECT_EQ(1, uct_dcx_timeout_exp_of(1e-9));
    EXPECT_EQ(1, uct_dcx_timeout_exp_of(8.192e-6));
    EXPECT_EQ(2, uct_dcx_timeout_exp_of(8.2e-6));
    EXPECT_EQ(18, uct_dcx_timeout_exp_of(1.0));
    EXPECT_EQ(31, uct_dcx_timeout_exp_of(8796.0));
    expect_ok({{"TIMEOUT", "4us"}});
    expect_ok({{"TIMEOUT", "8796s"}});
}

TEST_F(uct_dcx_knobs, rnr_timer_bad_flow)
{
    expect_range_error("RNR_TIMER", "0");
    expect_range_error("RNR_TIMER", "-1ms");
    expect_range_error("RNR_TIMER", "inf");
    expect_range_error("RNR_TIMER", "1s");
    EXPECT_EQ(1, uct_dcx_rnr_timer_of(1e-9));
    EXPECT_EQ(31, uct_dcx_rnr_timer_of(0.49152));
    expect_ok({{"RNR_TIMER", "491ms"}});
}

TEST_F(uct_dcx_knobs, arm_poll_bad_flow)
{
    expect_range_error("ARM_POLL", "-1us");
    expect_range_error("ARM_POLL", "2s");
    expect_range_error("ARM_POLL", "inf");
    expect_parse_error("ARM_POLL", "soon");
    expect_ok({{"ARM_POLL", "0"}});
    expect_ok({{"ARM_POLL", "1s"}});
}

TEST_F(uct_dcx_knobs, counts_bad_flow)
{
    const char *vars[] = {"NUM_DCI",         "QUOTA",         "TX_QUEUE_LEN",
                          "RX_QUEUE_LEN",    "FC_WND",        "RETRY_COUNT",
                          "RNR_RETRY_COUNT", "SIGNAL_PERIOD", "TX_MAX_BUFS",
                          "NUM_DCI_STREAMS"};
    const char *bad[]  = {"-1", "1x", "0.5", "4294967296", ""};

    for (size_t v = 0; v < sizeof(vars) / sizeof(vars[0]); ++v) {
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
            expect_parse_error(vars[v], bad[i]);
        }
    }
}

TEST_F(uct_dcx_knobs, ranges_bad_flow)
{
    expect_range_error("NUM_DCI", "0");
    expect_range_error("NUM_DCI", "4096");
    expect_range_error("DCI_IDLE_TIMEOUT", "0");
    expect_range_error("DCI_IDLE_TIMEOUT", "auto");
    expect_parse_error("DCI_IDLE_TIMEOUT", "soon");
    expect_range_error("QUOTA", "0");
    expect_range_error("QUOTA", "4294967295");
    expect_range_error("TX_QUEUE_LEN", "1");
    expect_range_error("TX_QUEUE_LEN", "65536");
    expect_range_error("RX_QUEUE_LEN", "1");
    expect_range_error("RX_QUEUE_LEN", "4000000000");
    expect_range_error("SEG_SIZE", "255");
    expect_range_error("SEG_SIZE", "inf");
    expect_range_error("TM_SEG_SIZE", "255");
    expect_range_error("TM_SEG_SIZE", "inf");
    expect_parse_error("TM_SEG_SIZE", "64q");
    expect_range_error("FC_WND", "0");
    expect_range_error("FC_WND", "32768");
    expect_range_error("RETRY_COUNT", "8");
    expect_range_error("RNR_RETRY_COUNT", "8");
    expect_range_error("SIGNAL_PERIOD", "65536");
    expect_range_error("TX_MAX_BUFS", "0");
    /* TX_MAX_BUFS=4294967295 would be "inf" in disguise */
    expect_parse_error("TX_MAX_BUFS", "4294967295");
}

/* TM_SEG_SIZE at its edges, on a TM interface (where the device has tag
 * matching) and a plain one */
TEST_F(uct_dcx_knobs, tm_seg_size_edges)
{
    const char *tm = dev_has(DCX_CAP_TM) ? "y" : "n";

    expect_ok({{"TM_SEG_SIZE", "256"}, {"TM_ENABLE", tm}});
    expect_ok({{"TM_SEG_SIZE", "256"}, {"TM_ENABLE", "n"}});
    expect_ok({{"TM_SEG_SIZE", "1m"},
               {"TM_ENABLE", tm},
               {"RX_QUEUE_LEN", "16"},
               {"FC_WND", "8"}});
    expect_range_error({{"TM_SEG_SIZE", "100"}, {"TM_ENABLE", "n"}},
                       "TM_SEG_SIZE");
}

/* The streams policy: NUM_DCI_STREAMS 1 .. the device's streams (the soft
 * device: 64); more is refused at open, naming the variable; a device
 * without streams refuses the policy */
TEST_F(uct_dcx_knobs, num_dci_streams_bad_flow)
{
    const dcx_dev_caps_t &caps = device()->caps;
    const unsigned max         = 1u << caps.dci_streams_log_max;

    if (!(caps.flags & DCX_CAP_DCI_STREAMS)) {
        /* a device without streams (the mlx5 backend): the policy is
         * refused at open, with one line saying why */
        entity *e = NULL;

        log_counter::reset();
        EXPECT_EQ(UCS_ERR_UNSUPPORTED,
                  try_create_entity({{"DCI_POLICY", "streams"}}, &e));
        EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
        EXPECT_TRUE(log_counter::contains("no DCI streams"))
            << log_counter::joined();
        log_counter::reset();
        return;
    }
    expect_range_error("NUM_DCI_STREAMS", "0");
    expect_range_error("NUM_DCI_STREAMS", "4096");
    expect_range_error({{"NUM_DCI_STREAMS", std::to_string(max + 1)},
                        {"DCI_POLICY", "streams"}},
                       "NUM_DCI_STREAMS");
    /* another policy does not look at it */
    expect_ok({{"NUM_DCI_STREAMS", std::to_string(max + 1)},
               {"DCI_POLICY", "rand"}});
    expect_ok({{"NUM_DCI_STREAMS", "1"}, {"DCI_POLICY", "streams"}});
    expect_ok({{"NUM_DCI_STREAMS", "3"}, {"DCI_POLICY", "streams"}});
    expect_ok({{"NUM_DCI_STREAMS", std::to_string(max)},
               {"DCI_POLICY", "streams"}});
}

/* The device layer: a DCI with streams where the device has them, a
 * refusal naming what is missing where it has not (the mlx5 backend) */
TEST_F(uct_dcx_knobs, dci_streams_by_capability)
{
    dcx_dev_t *dev = device();
    dcx_pd_t *pd   = NULL;
    dcx_cq_t *cq   = NULL;
    dcx_qp_t *qp   = NULL;
    dcx_qp_attr_t a;
    int ret;

    ASSERT_EQ(0, dcx_pd_alloc(dev, &pd));
    ASSERT_EQ(0, dcx_cq_create(dev, 256, &cq));
    memset(&a, 0, sizeof(a));
    a.type               = DCX_QPT_DCI;
    a.send_cq            = cq;
    a.max_send_wr        = 16;
    a.max_send_sge       = 1;
    a.dci_streams        = 1;
    a.log_num_concurrent = 1;
    a.log_num_errored    = 1;
    log_counter::reset();
    ret = dcx_qp_create(pd, &a, &qp);
    if (dev->caps.flags & DCX_CAP_DCI_STREAMS) {
        ASSERT_EQ(0, ret);
        EXPECT_EQ(2u, qp->num_streams);
        EXPECT_EQ(DCX_QPS_RTS, qp->state);
        EXPECT_EQ(0, dcx_qp_stream_reset(qp, 1)); /* healthy: nothing */
        EXPECT_EQ(EINVAL, dcx_qp_stream_reset(qp, 2));
        EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
        EXPECT_EQ(0, dcx_qp_destroy(qp));
    } else {
        EXPECT_EQ(EOPNOTSUPP, ret);
        EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
        EXPECT_TRUE(log_counter::contains("no DCI streams"))
            << log_counter::joined();
    }
    log_counter::reset();

    /* a DCI without streams has no stream to reset */
    a.dci_streams = 0;
    ASSERT_EQ(0, dcx_qp_create(pd, &a, &qp));
    EXPECT_EQ(0u, qp->num_streams);
    EXPECT_NE(0, dcx_qp_stream_reset(qp, 0));
    EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
    log_counter::reset();
    EXPECT_EQ(0, dcx_qp_destroy(qp));
    EXPECT_EQ(0, dcx_cq_destroy(cq));
    EXPECT_EQ(0, dcx_pd_free(pd));
}

/* The largest pool opens (its DCIs come when needed) */
TEST_F(uct_dcx_knobs, num_dci_4095)
{
    expect_ok({{"NUM_DCI", "4095"}, {"TX_QUEUE_LEN", "8"}});
    expect_ok({{"DCI_IDLE_TIMEOUT", "inf"}});
    expect_ok({{"DCI_IDLE_TIMEOUT", "1ms"}});
}

/* The send CQ must hold every DCI's queue: both variables are named */
TEST_F(uct_dcx_knobs, send_cq_size_bad_flow)
{
    const dcx_dev_caps_t &caps = device()->caps;
    /* the longest send queue the device takes, and enough DCIs that their
     * queues with the control DCI's overflow the largest CQ */
    const unsigned txq         = std::min(caps.max_qp_wr, 32768u);
    const unsigned dci         = caps.max_cqe / txq;
    entity *e                  = NULL;

    ASSERT_GE(dci, 1u);
    ASSERT_LT(dci, std::min(caps.max_dci, 1024u));
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              try_create_entity({{"NUM_DCI", std::to_string(dci)},
                                 {"TX_QUEUE_LEN", std::to_string(txq)}},
                                &e));
    EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
    EXPECT_TRUE(log_counter::contains("UCX_DCX_NUM_DCI"));
    EXPECT_TRUE(log_counter::contains("UCX_DCX_TX_QUEUE_LEN"));
}

/* hybrid has one DCI more (the shared one): the largest pool is 4094, and
 * the send CQ holds NUM_DCI + 2 queues; a size the other policies take is
 * refused with one error naming both variables */
TEST_F(uct_dcx_knobs, hybrid_one_dci_more_bad_flow)
{
    const dcx_dev_caps_t &caps = device()->caps;
    const unsigned txq         = std::min(caps.max_qp_wr, 32768u);
    const unsigned dci         = caps.max_cqe / txq - 1; /* fits + 1 */
    entity *e                  = NULL;

    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              try_create_entity({{"DCI_POLICY", "hybrid"},
                                 {"NUM_DCI", "4095"},
                                 {"TX_QUEUE_LEN", "8"}},
                                &e));
    EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
    EXPECT_TRUE(log_counter::contains("UCX_DCX_NUM_DCI"));
    expect_ok({{"DCI_POLICY", "hybrid"},
               {"NUM_DCI", "4094"},
               {"TX_QUEUE_LEN", "8"}});

    ASSERT_GE(dci, 1u);
    expect_ok({{"NUM_DCI", std::to_string(dci)},
               {"TX_QUEUE_LEN", std::to_string(txq)}});
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              try_create_entity({{"DCI_POLICY", "hybrid"},
                                 {"NUM_DCI", std::to_string(dci)},
                                 {"TX_QUEUE_LEN", std::to_string(txq)}},
                                &e));
    EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
    EXPECT_TRUE(log_counter::contains("UCX_DCX_TX_QUEUE_LEN"));
    log_counter::reset();
}

/* Any TX_MAX_BUFS >= 1 opens an interface, and the interface works with
 * that few send buffers: bcopy messages and fetching atomics go through */
TEST_F(uct_dcx_knobs, tx_max_bufs_small)
{
    const char *values[] = {"1", "2", "3", "127", "inf"};
    static int rx;

    for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); ++v) {
        entity *a = NULL, *b = NULL;

        log_counter::reset();
        ASSERT_EQ(UCS_OK, try_create_entity({{"TX_MAX_BUFS", values[v]}}, &a))
            << values[v] << ": " << log_counter::joined();
        ASSERT_EQ(UCS_OK, try_create_entity({}, &b));
        rx = 0;
        ASSERT_EQ(UCS_OK,
                  uct_iface_set_am_handler(
                      b->iface, 3,
                      [](void *arg, void *data, size_t len, unsigned flags) {
                          ++rx;
                          return UCS_OK;
                      },
                      NULL, 0));
        uct_ep_h ep = connect(a, b);
        for (int i = 0; i < 20; ++i) {
            ssize_t len;
            while ((len = uct_ep_am_bcopy(
                        ep, 3,
                        [](void *dest, void *arg) {
                            memset(dest, 1, 100);
                            return (size_t)100;
                        },
                        NULL, 0)) == UCS_ERR_NO_RESOURCE) {
                progress();
            }
            ASSERT_EQ(100, len);
        }
        EXPECT_TRUE(wait_for([&] { return rx == 20; }));
        flush_ep(ep);
        destroy_ep(ep);
        EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
    }
}

/* TM_SEG_SIZE and TM_MIN_RECV: TM_SEG_SIZE is "auto" by default and follows
 * the device's model; TM_MIN_RECV is 0 by default (UCP's own threshold
 * decides alone) and "auto" follows the model; explicit values hold.  UCP's
 * threshold in the environment changes nothing here. */
TEST_F(uct_dcx_knobs, tm_model_thresholds)
{
    if (!dev_has(DCX_CAP_TM)) {
        GTEST_SKIP() << "the device has no tag matching";
    }
    const dcx_dev_caps_t &caps = device()->caps;
    const double bpn           = caps.bandwidth_Bps / 1e9;
    size_t eager = (size_t)(2.0 * (caps.latency_ns + caps.overhead_ns) * bpn);
    eager        = std::min<size_t>((eager + 1023) & ~(size_t)1023, 65536);
    eager        = std::max<size_t>(eager, 8192); /* SEG_SIZE's default */
    const size_t min_recv =
        std::min<size_t>((size_t)(2.0 * caps.tm_op_ns * bpn), eager + 1);
    ASSERT_GT(caps.tm_op_ns, 0.0);

    struct {
        config_t cfg;
        const char *env; /* NAME=value put in the environment, or NULL */
        size_t eager, min_recv;
    } cases[] = {
        {{{"TM_ENABLE", "y"}}, NULL, eager, 0},
        {{{"TM_ENABLE", "y"}, {"TM_MIN_RECV", "auto"}}, NULL, eager, min_recv},
        {{{"TM_ENABLE", "y"}, {"TM_SEG_SIZE", "8k"}, {"TM_MIN_RECV", "auto"}},
         NULL,
         8192,
         std::min<size_t>(min_recv, 8193)},
        {{{"TM_ENABLE", "y"}, {"TM_SEG_SIZE", "4k"}, {"TM_MIN_RECV", "auto"}},
         NULL,
         8192,
         std::min<size_t>(min_recv, 8193)}, /* SEG_SIZE: floor */
        {{{"TM_ENABLE", "y"}, {"TM_MIN_RECV", "2k"}}, NULL, eager, 2048},
        {{{"TM_ENABLE", "y"}, {"TM_MIN_RECV", "auto"}},
         "UCX_TM_THRESH=1",
         eager,
         min_recv},
        {{{"TM_ENABLE", "y"}}, "UCX_TM_THRESH=100000", eager, 0}};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        entity *e = NULL;
        std::string name, value;

        if (cases[i].env != NULL) {
            name  = cases[i].env;
            value = name.substr(name.find('=') + 1);
            name  = name.substr(0, name.find('='));
            setenv(name.c_str(), value.c_str(), 1);
        }
        log_counter::reset();
        ASSERT_EQ(UCS_OK, try_create_entity(cases[i].cfg, &e))
            << i << ": " << log_counter::joined();
        EXPECT_EQ(cases[i].eager, e->attr.cap.tag.eager.max_zcopy) << i;
        EXPECT_EQ(cases[i].eager, e->attr.cap.tag.eager.max_bcopy) << i;
        EXPECT_EQ(cases[i].min_recv, e->attr.cap.tag.recv.min_recv) << i;
        if (cases[i].env != NULL) {
            unsetenv(name.c_str());
        }
    }
    expect_range_error({{"TM_MIN_RECV", "inf"}, {"TM_ENABLE", "y"}},
                       "TM_MIN_RECV");
    expect_parse_error("TM_MIN_RECV", "3q");
}
