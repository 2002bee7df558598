/*
 * dcx mlx5 backend: strided keys (UMR), the pure computation.  See
 * mlx5_umr.h and rdma-core-semantics.md section 5.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5_umr.h"

#include <errno.h>

#define DCX_MLX5_UMR_ALIGN(_x, _a)  ((((_x) + (_a) - 1) / (_a)) * (_a))

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
         DCX_MLX5_UMR_OVERHEAD) / DCX_MLX5_UMR_ENTRY;
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
                        struct mlx5dv_mr_interleaved *il, struct ibv_sge *sge,
                        const char **why_p)
{
    const uint32_t all = DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                         DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC;
    const dcx_mkey_layout_t *lay = wr->mkey_layout;
    int interleaved = (wr->opcode == DCX_WR_MKEY_INTERLEAVED);
    uint64_t rep_len = 0;
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
    if (lay->num_entries > dcx_mlx5_umr_entries_fit(max_inline, mkey_entries,
                                                    interleaved)) {
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
        rep_len          += e->bytes_count;
    }
    if ((rep_len == 0) || (rep_len > UINT32_MAX)) {
        *why_p = "0 or more than 2^32 - 1 bytes per repetition";
        return EINVAL;
    }
    return 0;
}
