/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: the device: discovery, open (port, DC probe,
 * capabilities) and close, and its operations table.  Its objects live in
 * their own files: SRQs (mlx5_srq.c), address handles (mlx5_ah.c), the
 * atomic self-test at open (mlx5_atomic_probe.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Inline bytes asked for when probing a DCI at open; libmlx5 rounds the WQE
 * up to 64 bytes and reports what fits, which becomes caps.max_inline. */
#define DCX_MLX5_PROBE_INLINE 256
#define DCX_MLX5_PROBE_DEPTH  16

static int dcx_mlx5_quiet_reported;

/* "No mlx5 device here" is normal on most machines: say it once, at debug. */
static void dcx_mlx5_report_none(const char *why, int err)
{
    if (__atomic_exchange_n(&dcx_mlx5_quiet_reported, 1, __ATOMIC_RELAXED)) {
        return;
    }
    if (err != 0) {
        dcx_debug("mlx5: %s (%s); no mlx5 devices", why, strerror(err));
    } else {
        dcx_debug("mlx5: %s; no mlx5 devices", why);
    }
}

int dcx_mlx5_list(dcx_dev_info_t *out, unsigned max, unsigned *count_p,
                  bool raw, bool tm, bool ip)
{
    struct ibv_device **list;
    unsigned count = 0;
    int i, num = 0, err;

    *count_p = 0;
    list     = ibv_get_device_list(&num);
    if (list == NULL) {
        err = errno;
        if (err == ENOSYS) {
            dcx_mlx5_report_none("no RDMA support in the kernel", err);
        } else {
            /* Not fatal: other backends may still offer devices. */
            dcx_warn("mlx5: ibv_get_device_list failed: %s; no mlx5 devices",
                     strerror(err));
        }
        return 0;
    }

    for (i = 0; (i < num) && (count < max); ++i) {
        if (!mlx5dv_is_supported(list[i])) {
            dcx_debug("mlx5: %s is not an mlx5 device, skipped",
                      ibv_get_device_name(list[i]));
            continue;
        }
        memset(&out[count], 0, sizeof(out[count]));
        snprintf(out[count].name, sizeof(out[count].name), "%s",
                 ibv_get_device_name(list[i]));
        out[count].backend       = &dcx_mlx5_backend;
        out[count].index         = (unsigned)i;
        out[count].priv.bytes[0] = raw;
        out[count].priv.bytes[1] = tm;
        out[count].priv.bytes[2] = ip;
        ++count;
    }
    ibv_free_device_list(list);

    if (count == 0) {
        dcx_mlx5_report_none("no RDMA device is driven by mlx5", 0);
    }
    *count_p = count;
    return 0;
}

/* ------------------------------------------------------------------------
 * Open
 * ------------------------------------------------------------------------ */
static struct ibv_context *dcx_mlx5_open_context(struct ibv_device *ibdev,
                                                 bool *devx_p)
{
    struct mlx5dv_context_attr attr;
    struct ibv_context *ctx;
    int err;

    memset(&attr, 0, sizeof(attr));
    attr.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
    ctx        = mlx5dv_open_device(ibdev, &attr);
    if (ctx != NULL) {
        *devx_p = true;
        return ctx;
    }
    err = errno;
    dcx_debug("%s: DEVX context refused (%s), opening without DEVX; strided "
              "keys will not be available",
              ibv_get_device_name(ibdev), strerror(err));
    *devx_p = false;
    return ibv_open_device(ibdev);
}

static int dcx_mlx5_select_gid(dcx_mlx5_dev_t *dev, int gid_tbl_len)
{
    struct ibv_gid_entry *entries;
    unsigned n = 0;
    int i, sel;

    if (gid_tbl_len <= 0) {
        dcx_error("%s: port %u: RoCE port reports an empty GID table",
                  dev->super.caps.name, dev->port);
        return ENODEV;
    }
    entries = calloc((size_t)gid_tbl_len, sizeof(*entries));
    if (entries == NULL) {
        dcx_error("%s: port %u: no memory for the GID table",
                  dev->super.caps.name, dev->port);
        return ENOMEM;
    }
    for (i = 0; i < gid_tbl_len; ++i) {
        /* ENODATA marks an empty slot */
        if (ibv_query_gid_ex(dev->ctx, dev->port, (uint32_t)i, &entries[n],
                             0) == 0) {
            ++n;
        }
    }
    sel = dcx_mlx5_gid_select(entries, n);
    if (sel < 0) {
        free(entries);
        dcx_error("%s: port %u: RoCE port has no usable GID (no IP address "
                  "on its netdev?)",
                  dev->super.caps.name, dev->port);
        return ENODEV;
    }
    dev->gid_index = (int)entries[sel].gid_index;
    memcpy(dev->addr.gid, entries[sel].gid.raw, 16);
    dev->addr.flags |= DCX_MLX5_ADDR_F_GID;
    if (entries[sel].gid_type == IBV_GID_TYPE_ROCE_V2) {
        dev->addr.flags |= DCX_MLX5_ADDR_F_ROCEV2;
    }
    free(entries);
    return 0;
}

/* Picks the first port dcx can use and fills the port address. */
static int dcx_mlx5_setup_port(dcx_mlx5_dev_t *dev, unsigned num_ports,
                               struct ibv_port_attr *pattr)
{
    const char *why = "device has no port";
    union ibv_gid gid;
    unsigned p;
    int ret;

    for (p = 1; p <= num_ports; ++p) {
        ret = ibv_query_port(dev->ctx, (uint8_t)p, pattr);
        if (ret != 0) {
            why = "ibv_query_port failed";
            continue;
        }
        if (dcx_mlx5_port_check(pattr, &why) == 0) {
            break;
        }
    }
    if (p > num_ports) {
        dcx_error("%s: no usable port: %s", dev->super.caps.name, why);
        return ENODEV;
    }

    dev->port         = (uint8_t)p;
    dev->link_layer   = (pattr->link_layer == IBV_LINK_LAYER_ETHERNET) ?
                            IBV_LINK_LAYER_ETHERNET :
                            IBV_LINK_LAYER_INFINIBAND;
    dev->path_mtu     = pattr->active_mtu;
    dev->grh_required = !!(pattr->flags & IBV_QPF_GRH_REQUIRED);
    dev->gid_index    = -1;
    dev->addr.mtu     = (uint8_t)pattr->active_mtu;

    if (dev->link_layer == IBV_LINK_LAYER_ETHERNET) {
        dev->addr.flags = DCX_MLX5_ADDR_F_ETH;
        return dcx_mlx5_select_gid(dev, pattr->gid_tbl_len);
    }

    dev->addr.lid = pattr->lid;
    /* GID 0 lets peers on other subnets (or GRH-only fabrics) route. */
    if ((ibv_query_gid(dev->ctx, dev->port, 0, &gid) == 0) &&
        (gid.global.interface_id != 0)) {
        memcpy(dev->addr.gid, gid.raw, 16);
        dev->addr.flags |= DCX_MLX5_ADDR_F_GID;
        dev->gid_index = 0;
    } else if (dev->grh_required) {
        dcx_error("%s: port %u requires a GRH but GID 0 cannot be read",
                  dev->super.caps.name, dev->port);
        return ENODEV;
    }
    return 0;
}

/* Takes the probe DCI through RESET->INIT->RTR->RTS with the masks every
 * DCI will get, trying the largest max_rd_atomic first: the DC limit is not
 * in verbs, and the kernel refuses an RTS above it.  *rd_p gets the value
 * that worked; *why_p names the failed step. */
static int dcx_mlx5_probe_connect(dcx_mlx5_dev_t *dev, struct ibv_qp *qp,
                                  int max_qp_init_rd_atom, uint32_t *rd_p,
                                  const char **why_p)
{
    struct ibv_qp_attr attr;
    uint32_t rd;
    int ret;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state   = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num   = dev->port;
    ret             = ibv_modify_qp(qp, &attr,
                                    (int)dcx_mlx5_qp_transition_find(DCX_QPT_DCI,
                                                                     DCX_QPS_RESET,
                                                                     DCX_QPS_INIT)
                                        ->required);
    if (ret != 0) {
        *why_p = "RESET->INIT";
        return ret;
    }
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = dev->path_mtu;
    ret           = ibv_modify_qp(qp, &attr,
                                  (int)dcx_mlx5_qp_transition_find(DCX_QPT_DCI,
                                                                   DCX_QPS_INIT,
                                                                   DCX_QPS_RTR)
                                      ->required);
    if (ret != 0) {
        *why_p = "INIT->RTR";
        return ret;
    }
    rd = dcx_mlx5_rd_atomic_first(max_qp_init_rd_atom);
    do {
        memset(&attr, 0, sizeof(attr));
        attr.qp_state      = IBV_QPS_RTS;
        attr.timeout       = 14;
        attr.retry_cnt     = 7;
        attr.rnr_retry     = 7;
        attr.max_rd_atomic = (uint8_t)rd;
        attr.sq_psn        = 0;
        ret                = ibv_modify_qp(qp, &attr,
                                           (int)dcx_mlx5_qp_transition_find(DCX_QPT_DCI,
                                                                            DCX_QPS_RTR,
                                                                            DCX_QPS_RTS)
                                               ->required);
        if (ret == 0) {
            *rd_p = rd;
            return 0;
        }
        rd = dcx_mlx5_rd_atomic_next(rd);
    } while ((ret == EINVAL) && (rd != 0));
    *why_p = "RTR->RTS";
    return ret;
}

/* Tries to create a DCI with raw verbs, then takes it to RTS.  DC has no
 * capability bit: this is how rdma-core's own tests find out.  Returns 0
 * with the sizes libmlx5 granted and the max_rd_atomic RTS accepted,
 * EOPNOTSUPP when the kernel or device has no DC (*why_p left NULL), or the
 * errno of another failure (*why_p names the transition that failed, or
 * stays NULL if creation failed). */
static int dcx_mlx5_probe_dci(dcx_mlx5_dev_t *dev, struct ibv_pd *pd,
                              struct ibv_cq *cq, uint32_t max_sge,
                              int max_qp_init_rd_atom, dcx_mlx5_probe_t *probe,
                              const char **why_p)
{
    static const uint32_t inline_try[] = {DCX_MLX5_PROBE_INLINE, 0};
    struct mlx5dv_qp_init_attr dv_attr;
    struct ibv_qp_init_attr_ex attr;
    struct ibv_qp *qp;
    uint32_t sge;
    unsigned i;
    int err = EINVAL;

    for (sge = max_sge; sge >= 1; sge = (sge > 1) ? 1 : 0) {
        for (i = 0; i < sizeof(inline_try) / sizeof(inline_try[0]); ++i) {
            memset(&attr, 0, sizeof(attr));
            memset(&dv_attr, 0, sizeof(dv_attr));
            attr.qp_type   = IBV_QPT_DRIVER;
            attr.send_cq   = cq;
            attr.recv_cq   = cq;
            attr.pd        = pd;
            attr.comp_mask = IBV_QP_INIT_ATTR_PD |
                             IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
            attr.send_ops_flags          = dev->dci_send_ops;
            attr.cap.max_send_wr         = DCX_MLX5_PROBE_DEPTH;
            attr.cap.max_send_sge        = sge;
            attr.cap.max_inline_data     = inline_try[i];
            dv_attr.comp_mask            = MLX5DV_QP_INIT_ATTR_MASK_DC;
            dv_attr.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;

            errno = 0;
            qp    = mlx5dv_create_qp(dev->ctx, &attr, &dv_attr);
            if (qp != NULL) {
                probe->dc_ok          = true;
                probe->dci_max_sge    = sge;
                probe->dci_max_inline = attr.cap.max_inline_data;
                probe->dci_wqe_size   = attr.cap.max_inline_data +
                                      dcx_mlx5_dci_overhead(dev->dci_send_ops) +
                                      DCX_MLX5_INL_HDR;
                err = dcx_mlx5_probe_connect(dev, qp, max_qp_init_rd_atom,
                                             &probe->dci_max_rd_atomic, why_p);
                ibv_destroy_qp(qp);
                return err;
            }
            err = (errno != 0) ? errno : EINVAL;
            if ((err == EOPNOTSUPP) || (err == EPROTONOSUPPORT)) {
                return EOPNOTSUPP;
            }
        }
        if (sge == 1) {
            break;
        }
    }
    return err;
}

static int dcx_mlx5_probe(dcx_mlx5_dev_t *dev, const struct ibv_device_attr *a,
                          dcx_mlx5_probe_t *probe)
{
    const char *why = NULL;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    uint32_t max_sge;
    int ret;

    pd = ibv_alloc_pd(dev->ctx);
    if (pd == NULL) {
        ret = errno;
        dcx_error("%s: probe: ibv_alloc_pd failed: %s", dev->super.caps.name,
                  strerror(ret));
        return ret;
    }
    cq = ibv_create_cq(dev->ctx, DCX_MLX5_PROBE_DEPTH, NULL, NULL, 0);
    if (cq == NULL) {
        ret = errno;
        dcx_error("%s: probe: ibv_create_cq failed: %s", dev->super.caps.name,
                  strerror(ret));
        ibv_dealloc_pd(pd);
        return ret;
    }

    max_sge = (uint32_t)a->max_sge;
    if (max_sge > DCX_MLX5_MAX_SGE) {
        max_sge = DCX_MLX5_MAX_SGE;
    }
    ret = dcx_mlx5_probe_dci(dev, pd, cq, (max_sge > 0) ? max_sge : 1,
                             a->max_qp_init_rd_atom, probe, &why);
    if ((ret == EOPNOTSUPP) && (why == NULL)) {
        dcx_error("%s: device or kernel does not support DC (DCI creation "
                  "refused); dcx needs DC",
                  dev->super.caps.name);
    } else if (ret != 0) {
        dcx_error("%s: probe: dci %s failed: %s", dev->super.caps.name,
                  (why != NULL) ? why : "creation", strerror(ret));
    }
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
    return ret;
}

static void dcx_mlx5_close(dcx_dev_t *super)
{
    dcx_mlx5_dev_t *dev = dcx_mlx5_dev(super);
    int ret;

    ret = ibv_close_device(dev->ctx);
    if (ret != 0) {
        dcx_warn("%s: ibv_close_device failed: %s", super->caps.name,
                 strerror(ret));
    }
    free(dev);
}

/* Tag matching on DC, made of DEVX objects whose queues the backend
 * writes and reads (mlx5_xrq.c): where DEVX and raw queues are on, the
 * port is InfiniBand (the command QP is connected to itself, which a RoCE
 * port does through its own MAC: not done) and the firmware offers tag
 * matching with the rendezvous offload on DC */
static void dcx_mlx5_tm_probe(dcx_mlx5_dev_t *dev,
                              const struct ibv_device_attr_ex *dattr)
{
    const char *name  = dev->super.caps.name;
    const char *why   = NULL;
    uint32_t max_tags = 0, max_ops;
    uint8_t *general;

    if (!dev->tm_on) {
        dcx_debug("%s: no tag matching: switched off (MLX5_TM)", name);
        return;
    }
    if (!dev->devx || !dev->raw) {
        dcx_debug("%s: no tag matching: it needs DEVX and raw queues", name);
        return;
    }
    if (dev->link_layer != IBV_LINK_LAYER_INFINIBAND) {
        dcx_debug("%s: no tag matching on a RoCE port", name);
        return;
    }
    if (dattr->tm_caps.max_rndv_hdr_size == 0) {
        dcx_debug("%s: no tag matching: no rendezvous header size", name);
        return;
    }
    general = calloc(1, DCX_MLX5_HCA_CAP_OUT_LEN);
    if (general == NULL) {
        return;
    }
    if (dcx_mlx5_hca_query(dev, DCX_MLX5_CAP_GENERAL, general) == 0) {
        dcx_mlx5_tm_hca_parse(general, DCX_MLX5_HCA_CAP_OUT_LEN, &max_tags,
                              &why);
    } else {
        why = "QUERY_HCA_CAP failed";
    }
    free(general);
    if (max_tags == 0) {
        dcx_debug("%s: no tag matching: %s", name, why);
        return;
    }
    /* an ADD and a DEL for every entry, and a SYNC: the command QP's
     * depth, as UCX sizes it, within the device's send queues */
    max_ops = 2 * (max_tags + 1);
    while (max_ops > dev->super.caps.max_qp_wr) {
        max_ops /= 2;
    }
    dev->super.caps.flags |= DCX_CAP_TM;
    dev->super.caps.tm_max_tags     = max_tags;
    dev->super.caps.tm_max_ops      = max_ops;
    dev->super.caps.tm_max_rndv_hdr = dattr->tm_caps.max_rndv_hdr_size;
    dev->super.caps.tm_max_sge      = 1;
    /* the host writes one WQE on the command QP and later reads its CQE;
     * the NIC does the list's work */
    dev->super.caps.tm_op_ns        = 2.0 * dev->super.caps.overhead_ns;
    dcx_debug("%s: tag matching: %u tags, %u operations, rendezvous header "
              "%u bytes",
              name, max_tags, max_ops, dattr->tm_caps.max_rndv_hdr_size);
}

int dcx_mlx5_open(const dcx_dev_info_t *info, dcx_dev_t **dev_p)
{
    struct ibv_device_attr_ex dattr;
    struct mlx5dv_context dv;
    struct ibv_port_attr pattr;
    struct ibv_device **list;
    struct ibv_device *ibdev = NULL;
    dcx_mlx5_probe_t probe;
    dcx_mlx5_dev_t *dev;
    int i, num = 0, ret;

    list = ibv_get_device_list(&num);
    if (list == NULL) {
        ret = errno ? errno : ENODEV;
        dcx_error("%s: open: ibv_get_device_list failed: %s", info->name,
                  strerror(ret));
        return ret;
    }
    for (i = 0; i < num; ++i) {
        if (!strcmp(ibv_get_device_name(list[i]), info->name)) {
            ibdev = list[i];
            break;
        }
    }
    if ((ibdev == NULL) || !mlx5dv_is_supported(ibdev)) {
        ibv_free_device_list(list);
        dcx_error("%s: open: no such mlx5 device", info->name);
        return ENODEV;
    }

    dev = calloc(1, sizeof(*dev));
    if (dev == NULL) {
        ibv_free_device_list(list);
        dcx_error("%s: open: out of memory", info->name);
        return ENOMEM;
    }
    snprintf(dev->super.caps.name, sizeof(dev->super.caps.name), "%s",
             info->name);
    dev->super.ops     = &dcx_mlx5_dev_ops;
    dev->super.backend = &dcx_mlx5_backend;
    dev->raw           = info->priv.bytes[0] != 0;
    dev->tm_on         = info->priv.bytes[1] != 0;
    dev->cqe128        = dev->raw && (info->priv.bytes[2] != 0);

    dev->ctx = dcx_mlx5_open_context(ibdev, &dev->devx);
    ibv_free_device_list(list);
    if (dev->ctx == NULL) {
        ret = errno ? errno : ENODEV;
        dcx_error("%s: open: ibv_open_device failed: %s", info->name,
                  strerror(ret));
        free(dev);
        return ret;
    }

    memset(&dattr, 0, sizeof(dattr));
    ret = ibv_query_device_ex(dev->ctx, NULL, &dattr);
    if (ret != 0) {
        dcx_error("%s: open: ibv_query_device_ex failed: %s", info->name,
                  strerror(ret));
        goto err_close;
    }
    memset(&dv, 0, sizeof(dv));
    dv.comp_mask = MLX5DV_CONTEXT_MASK_DCI_STREAMS;
    ret          = mlx5dv_query_device(dev->ctx, &dv);
    if (ret != 0) {
        dcx_error("%s: open: mlx5dv_query_device failed: %s", info->name,
                  strerror(ret));
        goto err_close;
    }
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_DCI_STREAMS) {
        dcx_debug("%s: DCI streams: up to 2^%u concurrent, 2^%u errored",
                  info->name, dv.dci_streams_caps.max_log_num_concurent,
                  dv.dci_streams_caps.max_log_num_errored);
    }

    ret = dcx_mlx5_setup_port(dev, dattr.orig_attr.phys_port_cnt, &pattr);
    if (ret != 0) {
        goto err_close;
    }

    dev->dci_send_ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                        IBV_QP_EX_WITH_RDMA_WRITE |
                        IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                        IBV_QP_EX_WITH_RDMA_READ;
    if (dattr.orig_attr.atomic_cap != IBV_ATOMIC_NONE) {
        dev->dci_send_ops |= IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                             IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
    }

    memset(&probe, 0, sizeof(probe));
    ret = dcx_mlx5_probe(dev, &dattr.orig_attr, &probe);
    if (ret != 0) {
        goto err_close;
    }
    /* Provisional caps (atomics as the device reports them: the masked
     * ones through DEVX, and written by raw queues alone) so that the
     * self-test can create its QPs and post them; then the verdict, the
     * atomics that worked. */
    probe.dct_atomic_ok = true;
    dcx_mlx5_caps_translate(info->name, &dattr, &pattr, &probe,
                            &dev->super.caps);
    if ((dev->super.caps.atomic_flags != 0) && dev->raw) {
        dev->super.caps.atomic_flags |= dcx_mlx5_atomic_masked_caps(dev);
    }
    if (dev->super.caps.atomic_flags != 0) {
        /* (its CQs refuse to go while a QP uses them: nothing is left) */
        dev->super.caps.atomic_flags = dcx_mlx5_atomic_selftest(dev);
    }
    if (dev->super.caps.atomic_flags == 0) {
        dev->dci_send_ops &= ~(uint64_t)(IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                                         IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);
    }
    /* strided keys: added to the final caps */
    dcx_mlx5_umr_probe(dev, &dattr);
    /* tag matching on DC (mlx5_xrq.c) */
    dcx_mlx5_tm_probe(dev, &dattr);
    /* short SENDs completed in their CQEs (mlx5_ip_probe.c) */
    dcx_mlx5_ip_probe(dev);
    /* wake-up events where the context gives completion channels */
    if (dcx_mlx5_channel_probe(dev)) {
        dev->super.caps.flags |= DCX_CAP_CQ_EVENT;
    }
    /* DCIs with stream channels (mlx5dv_wr_set_dc_addr_stream) */
    if ((dv.comp_mask & MLX5DV_CONTEXT_MASK_DCI_STREAMS) &&
        (dv.dci_streams_caps.max_log_num_concurent > 0)) {
        dev->super.caps.flags |= DCX_CAP_DCI_STREAMS;
        dev->super.caps.dci_streams_log_max =
            dv.dci_streams_caps.max_log_num_concurent;
        dev->super.caps.dci_errored_log_max =
            dv.dci_streams_caps.max_log_num_errored;
    }

    dcx_debug("%s: port %u %s, DEVX %s, DCI depth %u, inline %u, sge %u, "
              "rd_atomic %u, atomics 0x%x, gid index %d",
              info->name, dev->port,
              (dev->link_layer == IBV_LINK_LAYER_ETHERNET) ? "RoCE" : "IB",
              dev->devx ? "yes" : "no", dev->super.caps.max_qp_wr,
              dev->super.caps.max_inline, dev->super.caps.max_sge,
              dev->super.caps.max_rd_atomic, dev->super.caps.atomic_flags,
              dev->gid_index);
    *dev_p = &dev->super;
    return 0;

err_close:
    ibv_close_device(dev->ctx);
    free(dev);
    return ret;
}

static int dcx_mlx5_port_addr(dcx_dev_t *super, void *addr, size_t *len_p)
{
    dcx_mlx5_dev_t *dev = dcx_mlx5_dev(super);
    int ret;

    ret = dcx_mlx5_addr_pack(&dev->addr, addr, len_p);
    if (ret != 0) {
        dcx_error("%s: port address: buffer of %zu bytes, need %u",
                  super->caps.name, *len_p, DCX_MLX5_ADDR_LEN);
    }
    return ret;
}

/* The HCA pins registered pages: an rkey keeps naming them whatever the
 * process does to its mappings, so an unmap needs no action here. */
static void dcx_mlx5_mem_unmapped(dcx_dev_t *dev, const void *addr, size_t len)
{
}

/* Nor does knowing that unmaps will be reported. */
static void dcx_mlx5_unmaps_reported(dcx_dev_t *dev)
{
}

/* The NIC needs no software progress. */
static void dcx_mlx5_progress(dcx_dev_t *dev)
{
}

const dcx_dev_ops_t dcx_mlx5_dev_ops = {
    .close                  = dcx_mlx5_close,
    .port_addr              = dcx_mlx5_port_addr,
    .mem_unmapped           = dcx_mlx5_mem_unmapped,
    .unmaps_reported        = dcx_mlx5_unmaps_reported,
    .addr_check             = dcx_mlx5_addr_check,
    .progress               = dcx_mlx5_progress,
    .pd_alloc               = dcx_mlx5_pd_alloc,
    .pd_free                = dcx_mlx5_pd_free,
    .mr_reg                 = dcx_mlx5_mr_reg,
    .mr_dereg               = dcx_mlx5_mr_dereg,
    .mkey_create            = dcx_mlx5_mkey_create,
    .mkey_destroy           = dcx_mlx5_mkey_destroy,
    .cq_create              = dcx_mlx5_cq_create,
    .cq_destroy             = dcx_mlx5_cq_destroy,
    .srq_create             = dcx_mlx5_srq_create,
    .srq_destroy            = dcx_mlx5_srq_destroy,
    .ah_create              = dcx_mlx5_ah_create,
    .ah_destroy             = dcx_mlx5_ah_destroy,
    .qp_create              = dcx_mlx5_qp_create,
    .qp_destroy             = dcx_mlx5_qp_destroy,
    .qp_set_error           = dcx_mlx5_qp_set_error,
    .qp_recover             = dcx_mlx5_qp_recover,
    .qp_stream_reset        = dcx_mlx5_qp_stream_reset,
    /* completion channels (mlx5_channel.c) */
    .comp_channel_create    = dcx_mlx5_channel_create,
    .comp_channel_destroy   = dcx_mlx5_channel_destroy,
    .cq_create_ch           = dcx_mlx5_cq_create_ch,
    .cq_req_notify          = dcx_mlx5_cq_req_notify,
    .comp_channel_get_event = dcx_mlx5_channel_get_event,
};
