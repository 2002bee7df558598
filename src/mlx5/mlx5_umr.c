/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: strided keys (UMR), the pure computation.  See
 * mlx5_umr.h and docs/device-semantics.md section 10.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5_umr.h"

#include <errno.h>
#include <string.h>

#define DCX_MLX5_UMR_ALIGN(_x, _a) ((((_x) + (_a)-1) / (_a)) * (_a))

uint32_t dcx_mlx5_mkey_round_entries(uint32_t n)
{
    if ((n == 0) || (n > DCX_MLX5_MKEY_MAX_ENTRIES)) {
        return 0;
    }
    return DCX_MLX5_UMR_ALIGN(n, DCX_MLX5_MKEY_ALIGN);
}

uint32_t dcx_mlx5_umr_inline_needed(uint32_t num_entries, int interleaved)
{
    uint64_t slots = (uint64_t)num_entries + (interleaved ? 1 : 0);

    if (slots == 0) {
        return 0;
    }
    return (uint32_t)(DCX_MLX5_UMR_ENTRY * slots - DCX_MLX5_INL_HDR);
}

uint32_t dcx_mlx5_umr_entries_fit(uint32_t max_inline, uint32_t mkey_entries,
                                  int interleaved)
{
    uint32_t wqe = (uint32_t)(((uint64_t)max_inline + DCX_MLX5_INL_HDR) /
                              DCX_MLX5_UMR_ENTRY);
    uint32_t n   = (wqe < mkey_entries) ? wqe : mkey_entries;

    if (!interleaved) {
        return n;
    }
    return (n == 0) ? 0 : n - 1;
}

int dcx_mlx5_umr_sq_size(uint32_t max_entries, uint32_t max_wr,
                         uint32_t max_desc_size, uint32_t max_wqebb,
                         dcx_mlx5_sq_size_t *out)
{
    uint64_t wqe, wq = 1;

    if ((max_entries == 0) || (max_wr == 0) ||
        (max_entries > DCX_MLX5_MKEY_MAX_ENTRIES)) {
        return EINVAL;
    }
    /* overhead + align(inline header + 16 n - 4, 16) */
    wqe = DCX_MLX5_UMR_ALIGN((uint64_t)DCX_MLX5_UMR_OVERHEAD +
                                 (uint64_t)DCX_MLX5_UMR_ENTRY * max_entries,
                             DCX_MLX5_WQE_BB);
    if (wqe > max_desc_size) {
        return EINVAL;
    }
    while (wq < (uint64_t)max_wr * wqe) {
        wq <<= 1;
    }
    if (wq / DCX_MLX5_WQE_BB > max_wqebb) {
        return EINVAL;
    }
    out->wqe_size   = (uint32_t)wqe;
    out->max_inline = (uint32_t)(wqe - DCX_MLX5_UMR_OVERHEAD -
                                 DCX_MLX5_INL_HDR);
    out->max_post   = (uint32_t)(wq / wqe);
    out->wqe_bbs    = (uint32_t)(wq / DCX_MLX5_WQE_BB);
    return 0;
}

uint32_t dcx_mlx5_mkey_max_entries(uint32_t max_desc_size)
{
    uint32_t n;

    if (max_desc_size < DCX_MLX5_UMR_OVERHEAD + 4 * DCX_MLX5_UMR_ENTRY) {
        return 0;
    }
    n = (max_desc_size / DCX_MLX5_WQE_BB * DCX_MLX5_WQE_BB -
         DCX_MLX5_UMR_OVERHEAD) /
        DCX_MLX5_UMR_ENTRY;
    n -= n % DCX_MLX5_MKEY_ALIGN;
    return (n > DCX_MLX5_MKEY_MAX_ENTRIES) ? DCX_MLX5_MKEY_MAX_ENTRIES : n;
}

uint32_t dcx_mlx5_mkey_access(uint32_t access)
{
    uint32_t out = 0;

    if (access & DCX_ACCESS_LOCAL_WRITE) {
        out |= IBV_ACCESS_LOCAL_WRITE;
    }
    if (access & DCX_ACCESS_REMOTE_WRITE) {
        out |= IBV_ACCESS_REMOTE_WRITE;
    }
    if (access & DCX_ACCESS_REMOTE_READ) {
        out |= IBV_ACCESS_REMOTE_READ;
    }
    if (access & DCX_ACCESS_REMOTE_ATOMIC) {
        out |= IBV_ACCESS_REMOTE_ATOMIC;
    }
    return out;
}

int dcx_mlx5_umr_layout(const dcx_send_wr_t *wr, uint32_t mkey_entries,
                        uint32_t max_inline, uint32_t max_stride,
                        uint32_t access_ok, struct mlx5dv_mr_interleaved *il,
                        struct ibv_sge *sge, const char **why_p)
{
    const uint32_t all = DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                         DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC;
    const dcx_mkey_layout_t *lay = wr->mkey_layout;
    int interleaved              = (wr->opcode == DCX_WR_MKEY_INTERLEAVED);
    uint64_t rep_len             = 0;
    uint32_t i;

    if ((!interleaved && (wr->opcode != DCX_WR_MKEY_LIST)) || (lay == NULL) ||
        (lay->num_entries == 0) ||
        (interleaved ? (lay->interleaved == NULL) : (lay->list == NULL))) {
        *why_p = "not a configure request, or no layout or entries";
        return EINVAL;
    }
    if (lay->access & ~all) {
        *why_p = "unknown access bits";
        return EINVAL;
    }
    if (lay->access & ~access_ok) {
        *why_p = "an access the device does not let an indirect key grant "
                 "(REMOTE_ATOMIC with umr_modify_atomic_disabled)";
        return EINVAL;
    }
    if (lay->num_entries >
        dcx_mlx5_umr_entries_fit(max_inline, mkey_entries, interleaved)) {
        *why_p = interleaved ? "more entries (+1 repetition header) than the "
                               "key or the UMR WQE holds" :
                               "more entries than the key or the UMR WQE "
                               "holds";
        return ENOMEM;
    }
    if (!interleaved) {
        for (i = 0; i < lay->num_entries; ++i) {
            sge[i].addr   = lay->list[i].addr;
            sge[i].length = lay->list[i].length;
            sge[i].lkey   = lay->list[i].lkey;
        }
        return 0;
    }
    if (lay->repeat_count == 0) {
        *why_p = "repeat count 0";
        return EINVAL;
    }
    for (i = 0; i < lay->num_entries; ++i) {
        const dcx_mkey_interleaved_t *e = &lay->interleaved[i];

        if ((e->bytes_count > max_stride) ||
            ((uint64_t)e->bytes_count + e->bytes_skip > max_stride)) {
            *why_p = "byte count or stride over the 16-bit WQE fields";
            return EINVAL;
        }
        il[i].addr        = e->addr;
        il[i].bytes_count = e->bytes_count;
        il[i].bytes_skip  = e->bytes_skip;
        il[i].lkey        = e->lkey;
        rep_len += e->bytes_count;
    }
    if ((rep_len == 0) || (rep_len > UINT32_MAX)) {
        *why_p = "0 or more than 2^32 - 1 bytes per repetition";
        return EINVAL;
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * Capabilities
 * ------------------------------------------------------------------------ */
int dcx_mlx5_umr_hca_parse(const void *out, size_t len, dcx_mlx5_umr_hca_t *hca,
                           const char **why_p)
{
    const uint8_t *b   = out;
    const uint8_t *cap = b + 16;

    if (len < DCX_MLX5_HCA_CAP_OUT_LEN) {
        *why_p = "QUERY_HCA_CAP answer too short";
        return EPROTO;
    }
    if (b[0] != 0) {
        *why_p = "QUERY_HCA_CAP failed in firmware (non-zero status)";
        return EPROTO;
    }
    hca->log_max_klm = (uint8_t)dcx_mlx5_prm_get(cap,
                                                 DCX_MLX5_CAP_LOG_MAX_KLM_BIT,
                                                 6);
    hca->repeated_block_disabled =
        !!dcx_mlx5_prm_get(cap, DCX_MLX5_CAP_REPEATED_BLOCK_DIS, 1);
    hca->atomic_disabled = !!dcx_mlx5_prm_get(cap, DCX_MLX5_CAP_UMR_ATOMIC_DIS,
                                              1);
    hca->indirect_disabled = !!dcx_mlx5_prm_get(cap,
                                                DCX_MLX5_CAP_UMR_INDIRECT_DIS,
                                                1);
    return 0;
}

int dcx_mlx5_umr_caps_translate(const dcx_mlx5_umr_probe_t *probe,
                                dcx_dev_caps_t *caps, uint32_t *max_wr_p,
                                uint32_t *access_ok_p, const char **why_p)
{
    uint64_t klm;
    uint32_t n, max_wr;

    if (!probe->devx) {
        *why_p = "no DEVX context (mlx5dv_create_mkey needs one)";
    } else if (!probe->mem_mgt_ext) {
        *why_p = "the device does not report memory management extensions "
                 "(IBV_DEVICE_MEM_MGT_EXTENSIONS)";
    } else if (!probe->hca_ok) {
        *why_p = "the HCA capabilities could not be read (QUERY_HCA_CAP)";
    } else if (probe->hca.indirect_disabled) {
        *why_p = "firmware disables UMR on indirect mkeys "
                 "(umr_indirect_mkey_disabled)";
    } else if (probe->hca.repeated_block_disabled) {
        *why_p = "firmware disables repeated-block (interleaved) layouts "
                 "(repeated_block_disabled)";
    } else if (probe->hca.log_max_klm < 2) {
        *why_p = "indirect mkeys hold fewer than 4 entries "
                 "(log_max_klm_list_size)";
    } else if (!probe->mkey_ok) {
        *why_p = "an indirect mkey could not be created (mlx5dv_create_mkey)";
    } else if (probe->qp_entries < DCX_MLX5_MKEY_ALIGN) {
        *why_p = "no RC QP with UMR support could be created and connected "
                 "to itself";
    } else {
        *why_p = NULL;
    }
    if (*why_p != NULL) {
        return EOPNOTSUPP;
    }
    klm = 1ull << probe->hca.log_max_klm;
    n   = probe->qp_entries;
    if (n > klm) {
        n = (uint32_t)klm;
    }
    if (n > DCX_MLX5_MKEY_MAX_ENTRIES) {
        n = DCX_MLX5_MKEY_MAX_ENTRIES;
    }
    n -= n % DCX_MLX5_MKEY_ALIGN;
    max_wr = dcx_mlx5_dci_max_wr(probe->qp_wqe_size, probe->max_qp_wr);
    if (max_wr == 0) {
        *why_p = "the UMR WQE does not fit the device's send queue";
        return EOPNOTSUPP;
    }
    caps->flags |= DCX_CAP_MKEY_STRIDE;
    caps->mkey_max_entries = n;
    caps->mkey_max_stride  = DCX_MLX5_MKEY_MAX_STRIDE;
    caps->mkey_qp_type     = DCX_QPT_UMR;
    *max_wr_p              = max_wr;
    *access_ok_p           = DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                   DCX_ACCESS_REMOTE_READ;
    if (!probe->hca.atomic_disabled) {
        *access_ok_p |= DCX_ACCESS_REMOTE_ATOMIC;
    }
    return 0;
}
