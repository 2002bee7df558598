/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Operations that only newer UCX versions call, which dcx implements in
 * dcx_compat.c: the v2 reachability check, which says why a peer is
 * unreachable, and ep_is_connected, with which UCP's wireup finds the
 * endpoint already connected to an address.  Each test is built where
 * configure found the operation in the UCX (DCX_UCX_HAVE_*); against a UCX
 * without them this file has no tests.
 */
#include "uct_fixture.h"

extern "C" {
#include <uct/api/v2/uct_v2.h>
}

#include <cstring>

using namespace dcx_test;

#if DCX_UCX_HAVE_IFACE_IS_REACHABLE_V2

namespace {

/* uct_iface_is_reachable_v2() of the given addresses, with its reason */
int is_reachable_v2(uct_iface_h iface, const std::vector<char> &dev_addr,
                    const std::vector<char> *iface_addr, std::string &reason,
                    uct_iface_reachability_scope_t scope =
                        UCT_IFACE_REACHABILITY_SCOPE_NETWORK)
{
    uct_iface_is_reachable_params_t params;
    char info[256];
    int ret;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR |
                        UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING |
                        UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH |
                        UCT_IFACE_IS_REACHABLE_FIELD_SCOPE;
    params.device_addr        = (const uct_device_addr_t *)&dev_addr[0];
    params.info_string        = info;
    params.info_string_length = sizeof(info);
    params.scope              = scope;
    if (iface_addr != NULL) {
        params.field_mask |= UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR;
        params.iface_addr = (const uct_iface_addr_t *)&(*iface_addr)[0];
    }

    strcpy(info, "(not written)");
    ret    = uct_iface_is_reachable_v2(iface, &params);
    reason = info;
    return ret;
}

} // namespace

TEST_F(uct_dcx_test, reachable_v2_peer)
{
    entity *a = create_entity();
    entity *b = create_entity();
    std::string reason;

    EXPECT_TRUE(is_reachable_v2(a->iface, b->dev_addr, &b->iface_addr, reason))
        << reason;
    EXPECT_EQ("", reason);
    /* the device address alone names a usable port */
    EXPECT_TRUE(is_reachable_v2(a->iface, b->dev_addr, NULL, reason)) << reason;
    /* the same device, in the device scope */
    EXPECT_TRUE(is_reachable_v2(a->iface, a->dev_addr, &a->iface_addr, reason,
                                UCT_IFACE_REACHABILITY_SCOPE_DEVICE))
        << reason;
    /* and the older call agrees */
    EXPECT_TRUE(uct_iface_is_reachable(
        a->iface, (const uct_device_addr_t *)&b->dev_addr[0],
        (const uct_iface_addr_t *)&b->iface_addr[0]));
}

TEST_F(uct_dcx_test, reachable_v2_bad_flow_reasons)
{
    entity *a                    = create_entity();
    entity *b                    = create_entity();
    std::vector<char> iface_addr = b->iface_addr;
    std::vector<char> dev_addr   = b->dev_addr;
    std::string reason;

    /* not a dcx interface address: its magic is wrong */
    iface_addr[0] ^= 0x5a;
    EXPECT_FALSE(is_reachable_v2(a->iface, b->dev_addr, &iface_addr, reason));
    EXPECT_NE(std::string::npos, reason.find("not a dcx")) << reason;
    EXPECT_FALSE(uct_iface_is_reachable(
        a->iface, (const uct_device_addr_t *)&b->dev_addr[0],
        (const uct_iface_addr_t *)&iface_addr[0]));

    /* a port address of another length than this device's */
    dev_addr[0] = (char)(dev_addr[0] + 1);
    EXPECT_FALSE(is_reachable_v2(a->iface, dev_addr, &b->iface_addr, reason));
    EXPECT_NE(std::string::npos, reason.find("port address of")) << reason;
    EXPECT_FALSE(is_reachable_v2(a->iface, dev_addr, NULL, reason));
}

/* A port of another soft fabric is unreachable through the v2 call too, so
 * that UCP picks another transport for it (before: only the older call
 * checked the port, UCP 1.18 chose dcx for a peer on another fabric and
 * ucp_ep_create failed with "Destination is unreachable"). */
TEST_F(uct_dcx_test, reachable_v2_other_fabric_bad_flow)
{
    /* the soft port address after the length byte: magic 2, instance 2,
     * user 4, host 4, then the fabric's hash */
    const size_t fabric_off    = 1 + 2 + 2 + 4 + 4;
    entity *a                  = create_entity();
    entity *b                  = create_entity();
    std::vector<char> dev_addr = b->dev_addr;
    std::string reason;

    ASSERT_GT(dev_addr.size(), fabric_off + 4);
    dev_addr[fabric_off] ^= 0x5a;
    EXPECT_FALSE(is_reachable_v2(a->iface, dev_addr, &b->iface_addr, reason));
    EXPECT_NE(std::string::npos, reason.find("another fabric")) << reason;
    EXPECT_FALSE(is_reachable_v2(a->iface, dev_addr, NULL, reason));
    EXPECT_FALSE(uct_iface_is_reachable(
        a->iface, (const uct_device_addr_t *)&dev_addr[0],
        (const uct_iface_addr_t *)&b->iface_addr[0]));
}

#endif /* DCX_UCX_HAVE_IFACE_IS_REACHABLE_V2 */

#if DCX_UCX_HAVE_EP_IS_CONNECTED

namespace {

int ep_is_connected(uct_ep_h ep, const std::vector<char> &dev_addr,
                    const std::vector<char> &iface_addr)
{
    uct_ep_is_connected_params_t params;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR |
                        UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR;
    params.device_addr = (const uct_device_addr_t *)&dev_addr[0];
    params.iface_addr  = (const uct_iface_addr_t *)&iface_addr[0];
    return uct_ep_is_connected(ep, &params);
}

} // namespace

TEST_F(uct_dcx_test, ep_is_connected)
{
    entity *a             = create_entity();
    entity *b             = create_entity();
    entity *c             = create_entity();
    uct_ep_h ab           = connect(a, b);
    uct_ep_h ac           = connect(a, c);
    std::vector<char> bad = b->iface_addr;

    EXPECT_TRUE(ep_is_connected(ab, b->dev_addr, b->iface_addr));
    EXPECT_TRUE(ep_is_connected(ac, c->dev_addr, c->iface_addr));
    /* the same port, another interface (DCT) */
    EXPECT_FALSE(ep_is_connected(ab, c->dev_addr, c->iface_addr));
    EXPECT_FALSE(ep_is_connected(ac, b->dev_addr, b->iface_addr));
    /* an address that is no dcx address */
    bad[0] ^= 0x5a;
    EXPECT_FALSE(ep_is_connected(ab, b->dev_addr, bad));
}

#endif /* DCX_UCX_HAVE_EP_IS_CONNECTED */
