/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: strided memory keys (docs/device-semantics.md
 * section 10).
 *
 * A dcx_mkey_t is an indirect mkey (mlx5dv_create_mkey, INDIRECT), created
 * free.  Configure and invalidate requests travel on a QP of type
 * DCX_QPT_UMR: an RC QP connected to itself, because libmlx5 installs the
 * UMR builders (mlx5dv_wr_mr_interleaved, mlx5dv_wr_mr_list) on RC QPs
 * only.  Its WQEs are sized for caps.mkey_max_entries translation entries
 * inline (docs/device-semantics.md section 10.2); it completes, is
 * accounted and recovers like a DCI (the
 * same outstanding-WR ring and CQ routing).  The pure rules (sizes, entry
 * limits, layout encoding, capability translation) are in mlx5_umr.c.
 *
 * Capabilities: verbs and mlx5dv_query_device say nothing about UMR, so
 * open reads the HCA capabilities with a DEVX QUERY_HCA_CAP, creates an
 * indirect mkey and finds the largest UMR WQE an RC QP gets, taking that QP
 * to RTS.  Whatever fails leaves DCX_CAP_MKEY_STRIDE out, and mkey_create
 * then says what was missing.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_int.h"
#include "mlx5/mlx5_umr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DCX_MLX5_UMR_PROBE_DEPTH 4

static int dcx_mlx5_umr_post_send(dcx_qp_t *super, const dcx_send_wr_t *wr);

/* ------------------------------------------------------------------------
 * Keys
 * ------------------------------------------------------------------------ */
int dcx_mlx5_mkey_create(dcx_pd_t *pd, uint32_t max_entries,
                         dcx_mkey_t **mkey_p)
{
    dcx_mlx5_dev_t *dev = dcx_mlx5_dev(pd->dev);
    const char *name    = dev->super.caps.name;
    struct mlx5dv_mkey_init_attr attr;
    dcx_mlx5_mkey_t *mk;
    int ret;

    if (!(dev->super.caps.flags & DCX_CAP_MKEY_STRIDE)) {
        dcx_error("%s: mkey create: the device has no strided keys: %s", name,
                  (dev->umr_why != NULL) ? dev->umr_why : "not probed");
        return EOPNOTSUPP;
    }
    if ((max_entries == 0) ||
        (max_entries > dev->super.caps.mkey_max_entries)) {
        dcx_error("%s: mkey create: %u entries out of range [1, %u]", name,
                  max_entries, dev->super.caps.mkey_max_entries);
        return EINVAL;
    }
    mk = calloc(1, sizeof(*mk));
    if (mk == NULL) {
        dcx_error("%s: mkey create: out of memory", name);
        return ENOMEM;
    }
    memset(&attr, 0, sizeof(attr));
    attr.pd           = ((dcx_mlx5_pd_t *)pd)->pd;
    attr.create_flags = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT;
    attr.max_entries  = (uint16_t)dcx_mlx5_mkey_round_entries(max_entries);
    errno             = 0;
    mk->mkey          = mlx5dv_create_mkey(&attr);
    if (mk->mkey == NULL) {
        ret = (errno != 0) ? errno : ENOMEM;
        dcx_error("%s: mkey create: mlx5dv_create_mkey(INDIRECT, %u "
                  "entries) failed: %s",
                  name, max_entries, strerror(ret));
        free(mk);
        return ret;
    }
    mk->super.pd          = pd;
    mk->super.lkey        = mk->mkey->lkey;
    mk->super.rkey        = mk->mkey->rkey;
    /* libmlx5 writes back the rounded size */
    mk->super.max_entries = attr.max_entries;
    dcx_debug("%s: mkey 0x%x created (%u entries)", name, mk->super.lkey,
              mk->super.max_entries);
    *mkey_p = &mk->super;
    return 0;
}

/* Allowed for a configured key too (dcx_dev.h): the hardware destroys it
 * whatever its state, and accesses through it fail from then on. */
int dcx_mlx5_mkey_destroy(dcx_mkey_t *super)
{
    dcx_mlx5_mkey_t *mk = (dcx_mlx5_mkey_t *)super;
    int ret;

    ret = mlx5dv_destroy_mkey(mk->mkey);
    if (ret != 0) {
        dcx_error("%s: mkey 0x%x: mlx5dv_destroy_mkey failed: %s",
                  super->pd->dev->caps.name, super->lkey, strerror(ret));
        return ret;
    }
    free(mk);
    return 0;
}

/* ------------------------------------------------------------------------
 * The UMR QP
 * ------------------------------------------------------------------------ */
/* An RC QP whose WQEs carry 'entries' translation entries inline (both
 * layouts; 5.2).  NULL with errno on failure; *cap gets what libmlx5
 * granted. */
static struct ibv_qp *dcx_mlx5_umr_ibv_qp(dcx_mlx5_dev_t *dev,
                                          struct ibv_pd *pd, struct ibv_cq *cq,
                                          uint32_t entries, uint32_t max_wr,
                                          struct ibv_qp_cap *cap)
{
    struct mlx5dv_qp_init_attr dv_attr;
    struct ibv_qp_init_attr_ex attr;
    struct ibv_qp *qp;

    memset(&attr, 0, sizeof(attr));
    memset(&dv_attr, 0, sizeof(dv_attr));
    attr.qp_type        = IBV_QPT_RC;
    attr.send_cq        = cq;
    attr.recv_cq        = cq;
    attr.pd             = pd;
    attr.comp_mask      = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    attr.send_ops_flags = IBV_QP_EX_WITH_LOCAL_INV;
    attr.cap.max_send_wr     = max_wr;
    attr.cap.max_send_sge    = 1;
    attr.cap.max_recv_wr     = 0;
    attr.cap.max_recv_sge    = 0;
    /* the list layout's need (16 n - 4) also fits n - 1 interleaved
     * entries plus the repetition header, which the key needs anyway */
    attr.cap.max_inline_data = dcx_mlx5_umr_inline_needed(entries, 0);
    dv_attr.comp_mask        = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS;
    dv_attr.send_ops_flags   = MLX5DV_QP_EX_WITH_MR_INTERLEAVED |
                             MLX5DV_QP_EX_WITH_MR_LIST;
    errno = 0;
    qp    = mlx5dv_create_qp(dev->ctx, &attr, &dv_attr);
    if (qp != NULL) {
        *cap = attr.cap;
    } else if (errno == 0) {
        errno = EINVAL;
    }
    return qp;
}

int dcx_mlx5_umr_qp_connect(dcx_mlx5_qp_t *qp)
{
    dcx_mlx5_dev_t *dev = dcx_mlx5_dev(qp->super.dev);
    struct ibv_qp_attr attr;
    int ret;

    memset(&attr, 0, sizeof(attr));
    attr.pkey_index      = 0;
    attr.port_num        = dev->port;
    attr.qp_access_flags = 0; /* UMR requests are local */
    ret                  = dcx_mlx5_qp_modify(qp, DCX_QPS_INIT, &attr, 0);
    if (ret != 0) {
        return ret;
    }

    /* connected to itself: its own QP number on its own port address */
    memset(&attr, 0, sizeof(attr));
    attr.path_mtu           = dev->path_mtu;
    attr.dest_qp_num        = qp->qp->qp_num;
    attr.rq_psn             = 0;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer      = 12;
    attr.ah_attr.port_num   = dev->port;
    attr.ah_attr.sl         = 0;
    if (dev->link_layer != IBV_LINK_LAYER_ETHERNET) {
        attr.ah_attr.dlid = dev->addr.lid;
    }
    if ((dev->link_layer == IBV_LINK_LAYER_ETHERNET) || dev->grh_required) {
        attr.ah_attr.is_global      = 1;
        attr.ah_attr.grh.sgid_index = (uint8_t)((dev->gid_index >= 0) ?
                                                    dev->gid_index :
                                                    0);
        attr.ah_attr.grh.hop_limit  = 64;
        memcpy(attr.ah_attr.grh.dgid.raw, dev->addr.gid, 16);
    }
    ret = dcx_mlx5_qp_modify(qp, DCX_QPS_RTR, &attr, 0);
    if (ret != 0) {
        return ret;
    }

    memset(&attr, 0, sizeof(attr));
    attr.timeout       = 14;
    attr.retry_cnt     = 7;
    attr.rnr_retry     = 7;
    attr.sq_psn        = 0;
    attr.max_rd_atomic = 1;
    ret                = dcx_mlx5_qp_modify(qp, DCX_QPS_RTS, &attr, 0);
    if (ret != 0) {
        return ret;
    }
    qp->super.post_send = dcx_mlx5_umr_post_send;
    return 0;
}

static int dcx_mlx5_umr_post_send(dcx_qp_t *super, const dcx_send_wr_t *wr)
{
    dcx_mlx5_qp_t *qp     = (dcx_mlx5_qp_t *)super;
    dcx_mlx5_dev_t *dev   = dcx_mlx5_dev(super->dev);
    struct ibv_qp_ex *qpx = qp->qpx;
    const char *name      = dev->super.caps.name;
    const char *why       = NULL;
    const dcx_mkey_layout_t *lay;
    dcx_mlx5_mkey_t *mk;
    uint32_t access;
    int ret;

    if ((wr->opcode < DCX_WR_MKEY_FIRST) || (wr->opcode >= DCX_WR_MKEY_LAST)) {
        dcx_error("%s: umr qp 0x%x: opcode %u is not a strided-key request",
                  name, super->qp_num, wr->opcode);
        return EINVAL;
    }
    if ((wr->mkey == NULL) || (wr->mkey->pd != super->pd)) {
        dcx_error("%s: umr qp 0x%x: no mkey, or an mkey of another "
                  "protection domain",
                  name, super->qp_num);
        return EINVAL;
    }
    if (dcx_mlx5_ring_full(&qp->ring)) {
        dcx_trace("%s: umr qp 0x%x: send queue full (%u)", name, super->qp_num,
                  qp->ring.size);
        return ENOMEM;
    }
    mk = (dcx_mlx5_mkey_t *)wr->mkey;
    if (wr->opcode != DCX_WR_MKEY_INVALIDATE) {
        ret = dcx_mlx5_umr_layout(wr, wr->mkey->max_entries, super->max_inline,
                                  dev->super.caps.mkey_max_stride,
                                  dev->umr_access_ok, qp->umr_il, qp->umr_sge,
                                  &why);
        if (ret != 0) {
            dcx_error("%s: umr qp 0x%x: configure mkey 0x%x: %s", name,
                      super->qp_num, wr->mkey->lkey, why);
            return ret;
        }
    }

    lay = wr->mkey_layout;
    ibv_wr_start(qpx);
    qpx->wr_id    = qp->ring.head; /* our sequence number, see mlx5_cq.c */
    qpx->wr_flags = dcx_mlx5_send_flags(wr->flags);
    switch (wr->opcode) {
    case DCX_WR_MKEY_INTERLEAVED:
        /* the translation table travels inline in the WQE
         * (docs/device-semantics.md section 10.2) */
        qpx->wr_flags |= IBV_SEND_INLINE;
        access = dcx_mlx5_mkey_access(lay->access);
        mlx5dv_wr_mr_interleaved(qp->dvqp, mk->mkey, access, lay->repeat_count,
                                 (uint16_t)lay->num_entries, qp->umr_il);
        break;
    case DCX_WR_MKEY_LIST:
        qpx->wr_flags |= IBV_SEND_INLINE;
        access = dcx_mlx5_mkey_access(lay->access);
        mlx5dv_wr_mr_list(qp->dvqp, mk->mkey, access,
                          (uint16_t)lay->num_entries, qp->umr_sge);
        break;
    default: /* DCX_WR_MKEY_INVALIDATE */
        ibv_wr_local_inv(qpx, mk->mkey->lkey);
        break;
    }
    ret = ibv_wr_complete(qpx);
    if (ret != 0) {
        dcx_error("%s: umr qp 0x%x: posting %s of mkey 0x%x failed: %s", name,
                  super->qp_num,
                  (wr->opcode == DCX_WR_MKEY_INVALIDATE) ? "an invalidate" :
                                                           "a configure",
                  wr->mkey->lkey, strerror(ret));
        /* the contract knows EINVAL and ENOMEM; libmlx5 says EOPNOTSUPP
         * for a malformed UMR WQE */
        return (ret == ENOMEM) ? ENOMEM : EINVAL;
    }
    dcx_mlx5_ring_push(&qp->ring, wr->wr_id, wr->opcode,
                       wr->flags & DCX_SEND_SIGNALED);
    return 0;
}

void dcx_mlx5_umr_qp_cleanup(dcx_mlx5_qp_t *qp)
{
    free(qp->umr_il);
    free(qp->umr_sge);
    qp->umr_il  = NULL;
    qp->umr_sge = NULL;
}

int dcx_mlx5_umr_qp_create(dcx_mlx5_qp_t *qp, dcx_mlx5_pd_t *pd)
{
    dcx_mlx5_dev_t *dev = dcx_mlx5_dev(pd->super.dev);
    const char *name    = dev->super.caps.name;
    uint32_t entries    = dev->super.caps.mkey_max_entries;
    struct ibv_qp_cap cap;
    int ret;

    qp->umr_il  = calloc(entries, sizeof(*qp->umr_il));
    qp->umr_sge = calloc(entries, sizeof(*qp->umr_sge));
    if ((qp->umr_il == NULL) || (qp->umr_sge == NULL)) {
        dcx_error("%s: umr qp: out of memory", name);
        ret = ENOMEM;
        goto err_free;
    }
    qp->qp = dcx_mlx5_umr_ibv_qp(dev, pd->pd, ibv_cq_ex_to_cq(qp->send_cq->cq),
                                 entries, qp->attr.max_send_wr, &cap);
    if (qp->qp == NULL) {
        ret = errno;
        dcx_error("%s: umr qp: mlx5dv_create_qp(RC, depth %u, %u entries) "
                  "failed: %s",
                  name, qp->attr.max_send_wr, entries, strerror(ret));
        goto err_free;
    }
    qp->qpx  = ibv_qp_to_qp_ex(qp->qp);
    qp->dvqp = mlx5dv_qp_ex_from_ibv_qp_ex(qp->qpx);

    qp->super.qp_num        = qp->qp->qp_num;
    qp->super.max_send_wr   = cap.max_send_wr;
    qp->super.max_send_sge  = 0;
    qp->super.max_inline    = cap.max_inline_data;
    qp->super.max_rd_atomic = 0;

    ret = dcx_mlx5_qp_start(dev, qp, "umr qp", cap.max_send_wr,
                            dcx_mlx5_umr_qp_connect);
    if (ret != 0) {
        goto err_destroy;
    }
    return 0;

err_destroy:
    ibv_destroy_qp(qp->qp);
err_free:
    dcx_mlx5_umr_qp_cleanup(qp);
    return ret;
}

/* ------------------------------------------------------------------------
 * Open-time probe
 * ------------------------------------------------------------------------ */
static void dcx_mlx5_umr_probe_hca(dcx_mlx5_dev_t *dev,
                                   dcx_mlx5_umr_probe_t *probe)
{
    const char *why = NULL;
    uint8_t *out;

    out = calloc(1, DCX_MLX5_HCA_CAP_OUT_LEN);
    if (out == NULL) {
        return;
    }
    if (dcx_mlx5_hca_query(dev, DCX_MLX5_CAP_GENERAL, out) != 0) {
        /* logged */
    } else if (dcx_mlx5_umr_hca_parse(out, DCX_MLX5_HCA_CAP_OUT_LEN,
                                      &probe->hca, &why) != 0) {
        dcx_debug("%s: %s", dev->super.caps.name, why);
    } else {
        probe->hca_ok = true;
    }
    free(out);
}

/* Finds the largest key whose configure WQE an RC QP carries: libmlx5
 * refuses (EINVAL, in software) a WQE above the device's max_desc_sz_sq,
 * which verbs does not report.  The QP found is taken to RTS, looped back,
 * as every UMR QP will be. */
static void dcx_mlx5_umr_probe_qp(dcx_mlx5_dev_t *dev, struct ibv_pd *pd,
                                  struct ibv_cq *cq,
                                  dcx_mlx5_umr_probe_t *probe)
{
    uint32_t klm = (probe->hca.log_max_klm >= 16) ?
                       0xffffu :
                       (1u << probe->hca.log_max_klm);
    dcx_mlx5_qp_t tmp;
    struct ibv_qp_cap cap;
    struct ibv_qp *qp;
    uint32_t wqe, n;
    int ret;

    for (wqe = DCX_MLX5_UMR_PROBE_WQE_MAX; wqe >= DCX_MLX5_UMR_PROBE_WQE_MIN;
         wqe -= DCX_MLX5_WQE_BB) {
        n = dcx_mlx5_mkey_max_entries(wqe);
        if ((n == 0) || ((n > klm) && (wqe > DCX_MLX5_UMR_PROBE_WQE_MIN))) {
            continue; /* bigger than any key the HCA makes */
        }
        qp = dcx_mlx5_umr_ibv_qp(dev, pd, cq, n, DCX_MLX5_UMR_PROBE_DEPTH,
                                 &cap);
        if (qp == NULL) {
            dcx_debug("%s: RC QP with %u-byte UMR WQEs refused: %s",
                      dev->super.caps.name, wqe, strerror(errno));
            continue;
        }
        memset(&tmp, 0, sizeof(tmp));
        tmp.super.dev    = &dev->super;
        tmp.super.type   = DCX_QPT_UMR;
        tmp.super.state  = DCX_QPS_RESET;
        tmp.super.qp_num = qp->qp_num;
        tmp.qp           = qp;
        ret              = dcx_mlx5_umr_qp_connect(&tmp);
        ibv_destroy_qp(qp);
        if (ret == 0) {
            probe->qp_entries  = n;
            probe->qp_wqe_size = cap.max_inline_data + DCX_MLX5_UMR_OVERHEAD +
                                 DCX_MLX5_INL_HDR;
        }
        return; /* a connect failure is not a size problem */
    }
}

void dcx_mlx5_umr_probe(dcx_mlx5_dev_t *dev,
                        const struct ibv_device_attr_ex *dattr)
{
    const char *name = dev->super.caps.name;
    struct mlx5dv_mkey_init_attr mattr;
    dcx_mlx5_umr_probe_t probe;
    struct mlx5dv_mkey *mkey;
    struct ibv_pd *pd = NULL;
    struct ibv_cq *cq = NULL;
    const char *why   = NULL;

    memset(&probe, 0, sizeof(probe));
    probe.devx        = dev->devx;
    probe.mem_mgt_ext = !!(dattr->orig_attr.device_cap_flags &
                           IBV_DEVICE_MEM_MGT_EXTENSIONS);
    probe.max_qp_wr   = (uint32_t)dattr->orig_attr.max_qp_wr;
    if (!probe.devx || !probe.mem_mgt_ext) {
        goto out; /* nothing else can be tried */
    }
    dcx_mlx5_umr_probe_hca(dev, &probe);
    if (!probe.hca_ok || probe.hca.indirect_disabled ||
        probe.hca.repeated_block_disabled) {
        goto out;
    }
    pd = ibv_alloc_pd(dev->ctx);
    cq = ibv_create_cq(dev->ctx, DCX_MLX5_UMR_PROBE_DEPTH, NULL, NULL, 0);
    if ((pd == NULL) || (cq == NULL)) {
        dcx_debug("%s: UMR probe: no PD or CQ: %s", name, strerror(errno));
        goto out;
    }
    memset(&mattr, 0, sizeof(mattr));
    mattr.pd           = pd;
    mattr.create_flags = MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT;
    mattr.max_entries  = DCX_MLX5_MKEY_ALIGN;
    mkey               = mlx5dv_create_mkey(&mattr);
    if (mkey == NULL) {
        dcx_debug("%s: UMR probe: mlx5dv_create_mkey(INDIRECT) failed: %s",
                  name, strerror(errno));
        goto out;
    }
    mlx5dv_destroy_mkey(mkey);
    probe.mkey_ok = true;
    dev->selftest = true;
    dcx_mlx5_umr_probe_qp(dev, pd, cq, &probe);
    dev->selftest = false;

out:
    if (cq != NULL)
        ibv_destroy_cq(cq);
    if (pd != NULL)
        ibv_dealloc_pd(pd);
    if (dcx_mlx5_umr_caps_translate(&probe, &dev->super.caps, &dev->umr_max_wr,
                                    &dev->umr_access_ok, &why) != 0) {
        dev->umr_why = why;
        dcx_info("%s: strided keys not offered: %s", name, why);
        return;
    }
    dev->umr_why = NULL;
    dcx_debug("%s: strided keys: up to %u entries, UMR queue depth up to "
              "%u, remote atomics through keys %s",
              name, dev->super.caps.mkey_max_entries, dev->umr_max_wr,
              (dev->umr_access_ok & DCX_ACCESS_REMOTE_ATOMIC) ? "yes" : "no");
}
