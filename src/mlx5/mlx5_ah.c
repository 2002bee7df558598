/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: address handles, and the checks a peer address passes
 * first (format, link layer, GRH).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The checks an address must pass before an AH is made for it: format,
 * link layer of this port, a GID when this port routes by GRH. */
static int dcx_mlx5_addr_check_peer(dcx_mlx5_dev_t *dev, const void *addr,
                                    size_t len, dcx_mlx5_addr_t *peer,
                                    char *why, size_t why_len)
{
    const char *reason = NULL;
    bool eth;

    if (dcx_mlx5_addr_unpack(addr, len, peer, &reason) != 0) {
        snprintf(why, why_len, "malformed peer address (%zu bytes): %s", len,
                 reason);
        return EINVAL;
    }
    eth = !!(peer->flags & DCX_MLX5_ADDR_F_ETH);
    if (eth != (dev->link_layer == IBV_LINK_LAYER_ETHERNET)) {
        snprintf(why, why_len, "peer address is %s but port %u is %s",
                 eth ? "RoCE" : "InfiniBand", dev->port,
                 (dev->link_layer == IBV_LINK_LAYER_ETHERNET) ? "RoCE" :
                                                                "InfiniBand");
        return EINVAL;
    }
    if (dev->grh_required && !(peer->flags & DCX_MLX5_ADDR_F_GID)) {
        snprintf(why, why_len,
                 "port %u requires a GRH and the peer address "
                 "has no GID",
                 dev->port);
        return EINVAL;
    }
    return 0;
}

int dcx_mlx5_addr_check(dcx_dev_t *super, const void *addr, size_t len,
                        char *why, size_t why_len)
{
    dcx_mlx5_addr_t peer;

    return dcx_mlx5_addr_check_peer(dcx_mlx5_dev(super), addr, len, &peer, why,
                                    why_len);
}

int dcx_mlx5_ah_create(dcx_pd_t *pd, const void *addr, size_t len,
                       dcx_ah_t **ah_p)
{
    dcx_mlx5_dev_t *dev = dcx_mlx5_dev(pd->dev);
    const char *name    = dev->super.caps.name;
    struct ibv_ah_attr ah_attr;
    char gid_str[INET6_ADDRSTRLEN];
    dcx_mlx5_addr_t peer;
    char why[160];
    dcx_mlx5_ah_t *ah;
    bool eth;
    int ret;

    ret = dcx_mlx5_addr_check_peer(dev, addr, len, &peer, why, sizeof(why));
    if (ret != 0) {
        dcx_error("%s: ah: %s", name, why);
        return ret;
    }
    eth = !!(peer.flags & DCX_MLX5_ADDR_F_ETH);
    if ((peer.mtu < dev->path_mtu) && !dev->mtu_warned) {
        /* A DCI's path MTU is set once, at RTR, for every destination (and
         * a DCT's for every READ response): packets above the peer's MTU
         * are dropped on the way and the WRs end in RETRY_EXC_ERR. */
        dcx_warn("%s: ah: a peer's port MTU is %u bytes, this port uses %u; "
                 "transfers to it may time out (set the same MTU on every "
                 "port)",
                 name, dcx_mlx5_mtu_bytes((enum ibv_mtu)peer.mtu),
                 dcx_mlx5_mtu_bytes(dev->path_mtu));
        dev->mtu_warned = true;
    }
    if (eth && ((peer.flags ^ dev->addr.flags) & DCX_MLX5_ADDR_F_ROCEV2) &&
        !dev->roce_warned) {
        /* packets take the version of the local source GID */
        dcx_warn("%s: ah: this port publishes a RoCE v%d GID, a peer a RoCE "
                 "v%d one; traffic between them may be dropped",
                 name, (dev->addr.flags & DCX_MLX5_ADDR_F_ROCEV2) ? 2 : 1,
                 (peer.flags & DCX_MLX5_ADDR_F_ROCEV2) ? 2 : 1);
        dev->roce_warned = true;
    }
    memset(&ah_attr, 0, sizeof(ah_attr));
    ah_attr.port_num = dev->port;
    ah_attr.sl       = 0;
    if (eth || dev->grh_required) {
        ah_attr.is_global      = 1;
        ah_attr.grh.sgid_index = (uint8_t)((dev->gid_index >= 0) ?
                                               dev->gid_index :
                                               0);
        ah_attr.grh.hop_limit  = 64;
        memcpy(ah_attr.grh.dgid.raw, peer.gid, 16);
    }
    if (!eth) {
        ah_attr.dlid = peer.lid;
    }

    ah = calloc(1, sizeof(*ah));
    if (ah == NULL) {
        dcx_error("%s: ah: out of memory", name);
        return ENOMEM;
    }
    errno  = 0;
    ah->ah = ibv_create_ah(((dcx_mlx5_pd_t *)pd)->pd, &ah_attr);
    if (ah->ah == NULL) {
        /* mlx5 may fail without setting errno (e.g. bad port) */
        ret = errno ? errno : EINVAL;
        if (ah_attr.is_global) {
            inet_ntop(AF_INET6, peer.gid, gid_str, sizeof(gid_str));
        } else {
            snprintf(gid_str, sizeof(gid_str), "-");
        }
        dcx_error("%s: ah: ibv_create_ah(port %u, lid 0x%x, gid %s, sgid "
                  "index %u) failed: %s",
                  name, dev->port, ah_attr.dlid, gid_str,
                  ah_attr.grh.sgid_index, strerror(ret));
        free(ah);
        return ret;
    }
    if (dev->raw) {
        /* the address vector raw WQEs copy (mlx5_raw_sq.c) */
        struct mlx5dv_ah dvah = {0};
        struct mlx5dv_obj obj;

        memset(&obj, 0, sizeof(obj));
        obj.ah.in  = ah->ah;
        obj.ah.out = &dvah;
        ret        = mlx5dv_init_obj(&obj, MLX5DV_OBJ_AH);
        if ((ret != 0) || (dvah.av == NULL)) {
            ret = (ret != 0) ? ret : EINVAL;
            dcx_error("%s: ah: mlx5dv_init_obj failed: %s", name,
                      strerror(ret));
            ibv_destroy_ah(ah->ah);
            free(ah);
            return ret;
        }
        memcpy(&ah->av, dvah.av, sizeof(ah->av));
    }
    ah->super.pd = pd;
    *ah_p        = &ah->super;
    return 0;
}

int dcx_mlx5_ah_destroy(dcx_ah_t *super)
{
    dcx_mlx5_ah_t *ah = (dcx_mlx5_ah_t *)super;
    int ret;

    ret = ibv_destroy_ah(ah->ah);
    if (ret != 0) {
        dcx_error("%s: ah: ibv_destroy_ah failed: %s",
                  super->pd->dev->caps.name, strerror(ret));
        return ret;
    }
    free(ah);
    return 0;
}
