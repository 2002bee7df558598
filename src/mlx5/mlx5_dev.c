/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: discovery, open/close, capabilities, shared receive
 * queues and address handles.
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
#include <time.h>

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

int dcx_mlx5_list(dcx_dev_info_t *out, unsigned max, unsigned *count_p)
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
        out[count].backend = &dcx_mlx5_backend;
        out[count].index   = (unsigned)i;
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

/* Loopback self-test of 64-bit atomics through this backend's own objects:
 * a DCT that allows REMOTE_ATOMIC (the kernel refuses it with EOPNOTSUPP
 * when the HCA has no DC atomics), then one FETCH_ADD of 0 from a DCI to
 * that DCT on a known word.  The fetched value tells the byte order the
 * device uses for atomic results: host order (what upstream mlx5_core
 * selects whenever the firmware offers it) keeps the atomics; big-endian
 * mode, an error or no answer drops them from the caps. */
#define DCX_MLX5_ATOMIC_PATTERN 0x0102030405060708ull
#define DCX_MLX5_SELFTEST_NS    2000000000ll /* > 4 retries of ~67 ms */

static int64_t dcx_mlx5_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static bool dcx_mlx5_atomic_selftest(dcx_mlx5_dev_t *dev)
{
    const char *name = dev->super.caps.name;
    uint64_t words[2] __attribute__((aligned(8)));
    dcx_pd_t *pd   = NULL;
    dcx_cq_t *cq   = NULL;
    dcx_srq_t *srq = NULL;
    dcx_qp_t *dct = NULL, *dci = NULL;
    dcx_mr_t *mr = NULL;
    dcx_ah_t *ah = NULL;
    dcx_srq_attr_t srq_attr;
    dcx_qp_attr_t qp_attr;
    dcx_send_wr_t wr;
    dcx_sge_t sge;
    dcx_wc_t wc;
    uint8_t addr[DCX_MLX5_ADDR_LEN];
    size_t addr_len = sizeof(addr);
    bool ok = false, reported = false;
    int64_t deadline;
    int n = 0, ret;

    words[0] = DCX_MLX5_ATOMIC_PATTERN; /* target */
    words[1] = 0;                       /* fetched value */

    if ((dcx_pd_alloc(&dev->super, &pd) != 0) ||
        (dcx_cq_create(&dev->super, 4, &cq) != 0) ||
        (dcx_mr_reg(pd, words, sizeof(words),
                    DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_ATOMIC,
                    &mr) != 0)) {
        goto out;
    }
    memset(&srq_attr, 0, sizeof(srq_attr));
    srq_attr.type    = DCX_SRQ_BASIC;
    srq_attr.max_wr  = 1;
    srq_attr.max_sge = 1;
    srq_attr.cq      = cq;
    if (dcx_srq_create(pd, &srq_attr, &srq) != 0) {
        goto out;
    }

    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.type          = DCX_QPT_DCT;
    qp_attr.recv_cq       = cq;
    qp_attr.send_cq       = cq;
    qp_attr.srq           = srq;
    qp_attr.dc_key        = 0x5e1f7e57ull;
    qp_attr.access        = DCX_ACCESS_REMOTE_ATOMIC;
    qp_attr.min_rnr_timer = 12;
    dev->selftest         = true;
    ret                   = dcx_qp_create(pd, &qp_attr, &dct);
    dev->selftest         = false;
    if (ret == EOPNOTSUPP) {
        dcx_info("%s: the device has no DC atomics (a DCT refuses "
                 "REMOTE_ATOMIC); atomics disabled",
                 name);
        reported = true;
        goto out;
    } else if (ret != 0) {
        goto out;
    }
    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.type          = DCX_QPT_DCI;
    qp_attr.send_cq       = cq;
    qp_attr.max_send_wr   = 2;
    qp_attr.max_send_sge  = 1;
    qp_attr.max_rd_atomic = 1;
    qp_attr.timeout       = 14; /* ~67 ms per retry */
    qp_attr.retry_cnt     = 3;
    qp_attr.rnr_retry     = 3;
    if ((dcx_qp_create(pd, &qp_attr, &dci) != 0) ||
        (dcx_dev_port_addr(&dev->super, addr, &addr_len) != 0) ||
        (dcx_ah_create(pd, addr, addr_len, &ah) != 0)) {
        goto out;
    }

    sge.addr   = (uintptr_t)&words[1];
    sge.length = 8;
    sge.lkey   = mr->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id       = 1;
    wr.opcode      = DCX_WR_ATOMIC_FADD;
    wr.flags       = DCX_SEND_SIGNALED;
    wr.num_sge     = 1;
    wr.sg_list     = &sge;
    wr.dest.ah     = ah;
    wr.dest.dctn   = dct->qp_num;
    wr.dest.dc_key = 0x5e1f7e57ull;
    wr.remote_addr = (uintptr_t)&words[0];
    wr.rkey        = mr->rkey;
    wr.compare_add = 0;
    if (dcx_qp_post_send(dci, &wr) != 0) {
        goto out;
    }
    reported = true;
    deadline = dcx_mlx5_now_ns() + DCX_MLX5_SELFTEST_NS;
    do {
        n = dcx_cq_poll(cq, 1, &wc);
    } while ((n == 0) && (dcx_mlx5_now_ns() < deadline));
    if (n <= 0) {
        dcx_warn("%s: atomic self-test: no completion; atomics disabled", name);
    } else if (wc.status != DCX_WC_SUCCESS) {
        dcx_warn("%s: atomic self-test: %s; atomics disabled", name,
                 dcx_wc_status_str((dcx_wc_status_t)wc.status));
    } else if (words[1] == DCX_MLX5_ATOMIC_PATTERN) {
        ok = true;
    } else if (words[1] == __builtin_bswap64(DCX_MLX5_ATOMIC_PATTERN)) {
        dcx_warn("%s: atomics run in big-endian mode on this device "
                 "(firmware without host-endian atomics); dcx needs host "
                 "order, atomics disabled",
                 name);
    } else {
        dcx_warn("%s: atomic self-test fetched 0x%llx, expected 0x%llx; "
                 "atomics disabled",
                 name, (unsigned long long)words[1],
                 (unsigned long long)DCX_MLX5_ATOMIC_PATTERN);
    }

out:
    if (!reported) {
        dcx_info("%s: DC atomics disabled: the self-test could not be set "
                 "up (reason logged above)",
                 name);
    }
    if (ah != NULL)
        dcx_ah_destroy(ah);
    if (dci != NULL)
        dcx_qp_destroy(dci);
    if (dct != NULL)
        dcx_qp_destroy(dct);
    if (srq != NULL)
        dcx_srq_destroy(srq);
    if (mr != NULL)
        dcx_mr_dereg(mr);
    if (cq != NULL)
        dcx_cq_destroy(cq);
    if (pd != NULL)
        dcx_pd_free(pd);
    return ok;
}

static void dcx_mlx5_close(dcx_dev_t *super)
{
    dcx_mlx5_dev_t *dev = dcx_mlx5_dev(super);
    int ret;

    if (dev->qpmap.count != 0) {
        dcx_warn("%s: closed with %u QPs still open", super->caps.name,
                 dev->qpmap.count);
    }
    dcx_mlx5_qpmap_cleanup(&dev->qpmap);
    ret = ibv_close_device(dev->ctx);
    if (ret != 0) {
        dcx_warn("%s: ibv_close_device failed: %s", super->caps.name,
                 strerror(ret));
    }
    free(dev);
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
    dcx_mlx5_qpmap_init(&dev->qpmap);

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
    /* Provisional caps (atomics as the device reports them) so that the
     * self-test can create its QPs; then the verdict. */
    probe.dct_atomic_ok = true;
    dcx_mlx5_caps_translate(info->name, &dattr, &pattr, &probe,
                            &dev->super.caps);
    if (dev->super.caps.atomic_flags != 0) {
        probe.dct_atomic_ok = dcx_mlx5_atomic_selftest(dev);
        if (dev->qpmap.count != 0) {
            dcx_error("%s: open: self-test left QPs behind", info->name);
            ret = EIO;
            goto err_close;
        }
        dcx_mlx5_caps_translate(info->name, &dattr, &pattr, &probe,
                                &dev->super.caps);
    }
    if (!probe.dct_atomic_ok || (dev->super.caps.atomic_flags == 0)) {
        dev->dci_send_ops &= ~(uint64_t)(IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                                         IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);
    }
    /* strided keys: added to the final caps */
    dcx_mlx5_umr_probe(dev, &dattr);

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
    dcx_mlx5_qpmap_cleanup(&dev->qpmap);
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

/* The NIC needs no software progress. */
static void dcx_mlx5_progress(dcx_dev_t *dev)
{
}

/* ------------------------------------------------------------------------
 * Shared receive queues
 * ------------------------------------------------------------------------ */
static int dcx_mlx5_srq_post_recv(dcx_srq_t *super, uint64_t wr_id,
                                  const dcx_sge_t *sg_list, unsigned num_sge)
{
    dcx_mlx5_srq_t *srq = (dcx_mlx5_srq_t *)super;
    struct ibv_sge sge[DCX_MLX5_MAX_SGE];
    struct ibv_recv_wr wr, *bad;
    unsigned i;
    int ret;

    if (num_sge > super->max_sge) {
        dcx_error("%s: srq %u: %u sge, at most %u", super->dev->caps.name,
                  srq->srq->handle, num_sge, super->max_sge);
        return EINVAL;
    }
    for (i = 0; i < num_sge; ++i) {
        sge[i].addr   = sg_list[i].addr;
        sge[i].length = sg_list[i].length;
        sge[i].lkey   = sg_list[i].lkey;
    }
    wr.wr_id   = wr_id;
    wr.next    = NULL;
    wr.sg_list = sge;
    wr.num_sge = (int)num_sge;
    ret        = ibv_post_srq_recv(srq->srq, &wr, &bad);
    if (ret == ENOMEM) {
        /* full: normal back-pressure, the caller retries later */
        dcx_trace("%s: srq %u: full", super->dev->caps.name, srq->srq->handle);
    } else if (ret != 0) {
        dcx_error("%s: srq %u: ibv_post_srq_recv failed: %s",
                  super->dev->caps.name, srq->srq->handle, strerror(ret));
    }
    return ret;
}

/* Single-buffer receives chained into one ibv_post_srq_recv per chunk, so
 * that the provider writes the WQEs and rings the doorbell once. */
static int dcx_mlx5_srq_post_recv_list(dcx_srq_t *super, const dcx_recv_t *list,
                                       unsigned count, unsigned *posted_p)
{
    enum {
        CHUNK = 32
    };
    dcx_mlx5_srq_t *srq = (dcx_mlx5_srq_t *)super;
    struct ibv_recv_wr wr[CHUNK], *bad;
    struct ibv_sge sge[CHUNK];
    unsigned done, n, i;
    int ret = 0;

    for (done = 0; done < count; done += n) {
        n = (count - done < CHUNK) ? (count - done) : CHUNK;
        for (i = 0; i < n; ++i) {
            sge[i].addr   = list[done + i].sge.addr;
            sge[i].length = list[done + i].sge.length;
            sge[i].lkey   = list[done + i].sge.lkey;
            wr[i].wr_id   = list[done + i].wr_id;
            wr[i].sg_list = &sge[i];
            wr[i].num_sge = 1;
            wr[i].next    = (i + 1 < n) ? &wr[i + 1] : NULL;
        }
        bad = NULL;
        ret = ibv_post_srq_recv(srq->srq, wr, &bad);
        if (ret != 0) {
            /* the provider posted the WRs before the one it returns */
            done += (bad != NULL) ? (unsigned)(bad - wr) : 0;
            break;
        }
    }
    *posted_p = done;
    if (ret == ENOMEM) {
        dcx_trace("%s: srq %u: full", super->dev->caps.name, srq->srq->handle);
    } else if (ret != 0) {
        dcx_error("%s: srq %u: ibv_post_srq_recv failed at receive %u of %u: "
                  "%s",
                  super->dev->caps.name, srq->srq->handle, done, count,
                  strerror(ret));
    }
    return ret;
}

static int dcx_mlx5_srq_create(dcx_pd_t *pd, const dcx_srq_attr_t *attr,
                               dcx_srq_t **srq_p)
{
    const char *name = pd->dev->caps.name;
    struct ibv_srq_init_attr init;
    dcx_mlx5_srq_t *srq;
    int ret;

    if (attr->type != DCX_SRQ_BASIC) {
        /* DC tag matching needs DEVX XRQ/DCT objects
         * (docs/device-semantics.md section 9.9);
         * caps carry no DCX_CAP_TM and tm_* limits of 0 */
        dcx_error("%s: srq: tag-matching SRQs are not supported by the mlx5 "
                  "backend (DC tag matching needs DEVX objects)",
                  name);
        return EOPNOTSUPP;
    }
    if ((attr->max_sge == 0) || (attr->max_sge > DCX_MLX5_MAX_SGE) ||
        (attr->max_sge > pd->dev->caps.max_recv_sge) || (attr->max_wr == 0) ||
        (attr->max_wr > pd->dev->caps.max_srq_wr) || (attr->cq == NULL)) {
        dcx_error("%s: srq: invalid attributes (max_wr %u, max_sge %u, "
                  "cq %p)",
                  name, attr->max_wr, attr->max_sge, (void *)attr->cq);
        return EINVAL;
    }
    srq = calloc(1, sizeof(*srq));
    if (srq == NULL) {
        dcx_error("%s: srq: out of memory", name);
        return ENOMEM;
    }
    memset(&init, 0, sizeof(init));
    init.attr.max_wr  = attr->max_wr;
    init.attr.max_sge = attr->max_sge;
    srq->srq          = ibv_create_srq(((dcx_mlx5_pd_t *)pd)->pd, &init);
    if (srq->srq == NULL) {
        ret = errno ? errno : ENOMEM;
        dcx_error("%s: srq: ibv_create_srq(max_wr %u, max_sge %u) failed: "
                  "%s",
                  name, attr->max_wr, attr->max_sge, strerror(ret));
        free(srq);
        return ret;
    }
    srq->cq                   = (dcx_mlx5_cq_t *)attr->cq;
    srq->super.dev            = pd->dev;
    srq->super.pd             = pd;
    srq->super.max_wr         = init.attr.max_wr;
    srq->super.max_sge        = attr->max_sge;
    srq->super.post_recv      = dcx_mlx5_srq_post_recv;
    srq->super.post_recv_list = dcx_mlx5_srq_post_recv_list;
    srq->super.tm_post        = dcx_srq_tm_post_none;
    *srq_p                    = &srq->super;
    return 0;
}

static int dcx_mlx5_srq_destroy(dcx_srq_t *super)
{
    dcx_mlx5_srq_t *srq = (dcx_mlx5_srq_t *)super;
    int ret;

    ret = ibv_destroy_srq(srq->srq);
    if (ret != 0) {
        dcx_error("%s: srq: ibv_destroy_srq failed: %s", super->dev->caps.name,
                  strerror(ret));
        return ret;
    }
    free(srq);
    return 0;
}

/* ------------------------------------------------------------------------
 * Address handles
 * ------------------------------------------------------------------------ */
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

static int dcx_mlx5_addr_check(dcx_dev_t *super, const void *addr, size_t len,
                               char *why, size_t why_len)
{
    dcx_mlx5_addr_t peer;

    return dcx_mlx5_addr_check_peer(dcx_mlx5_dev(super), addr, len, &peer, why,
                                    why_len);
}

static int dcx_mlx5_ah_create(dcx_pd_t *pd, const void *addr, size_t len,
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
    ah->super.pd = pd;
    *ah_p        = &ah->super;
    return 0;
}

static int dcx_mlx5_ah_destroy(dcx_ah_t *super)
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

const dcx_dev_ops_t dcx_mlx5_dev_ops = {
    .close        = dcx_mlx5_close,
    .port_addr    = dcx_mlx5_port_addr,
    .mem_unmapped = dcx_mlx5_mem_unmapped,
    .addr_check   = dcx_mlx5_addr_check,
    .progress     = dcx_mlx5_progress,
    .pd_alloc     = dcx_mlx5_pd_alloc,
    .pd_free      = dcx_mlx5_pd_free,
    .mr_reg       = dcx_mlx5_mr_reg,
    .mr_dereg     = dcx_mlx5_mr_dereg,
    .mkey_create  = dcx_mlx5_mkey_create,
    .mkey_destroy = dcx_mlx5_mkey_destroy,
    .cq_create    = dcx_mlx5_cq_create,
    .cq_destroy   = dcx_mlx5_cq_destroy,
    .srq_create   = dcx_mlx5_srq_create,
    .srq_destroy  = dcx_mlx5_srq_destroy,
    .ah_create    = dcx_mlx5_ah_create,
    .ah_destroy   = dcx_mlx5_ah_destroy,
    .qp_create    = dcx_mlx5_qp_create,
    .qp_destroy   = dcx_mlx5_qp_destroy,
    .qp_set_error = dcx_mlx5_qp_set_error,
    .qp_recover   = dcx_mlx5_qp_recover,
};
