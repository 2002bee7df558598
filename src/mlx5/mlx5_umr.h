/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: strided keys (UMR), the pure computation
 * (docs/device-semantics.md section 10).  Nothing here touches a device:
 * the rules are checked by test/gtest/mlx5/test_mlx5_umr.cc.
 *
 * On hardware a strided key is an indirect mkey (mlx5dv_create_mkey,
 * INDIRECT) configured by mlx5dv_wr_mr_interleaved / mlx5dv_wr_mr_list on
 * an RC QP (libmlx5 installs the UMR builders on RC QPs only,
 * docs/device-semantics.md section 10.2), whose
 * WQEs carry the translation table inline: the QP's WQE size bounds the
 * entries one request can carry.
 */
#ifndef DCX_MLX5_UMR_H_
#define DCX_MLX5_UMR_H_

#include "mlx5_pure.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DCX_MLX5_UMR_ENTRY        16u     /* one translation entry inline */
#define DCX_MLX5_MKEY_ALIGN       4u      /* mkey tables round to 4 */
#define DCX_MLX5_MKEY_MAX_ENTRIES 0xfffcu /* 16-bit max_entries, rounded */
#define DCX_MLX5_MKEY_MAX_STRIDE  0xffffu /* 16-bit byte count and stride */

/* The translation entries mlx5dv_create_mkey gives for a request of n
 * (rounded up to 4); 0 when n is 0 or more than DCX_MLX5_MKEY_MAX_ENTRIES. */
uint32_t dcx_mlx5_mkey_round_entries(uint32_t n);

/* max_inline_data a UMR QP needs for one request of num_entries entries:
 * 16 * (n + 1) - 4 interleaved (the repetition header takes a slot),
 * 16 * n - 4 list. */
uint32_t dcx_mlx5_umr_inline_needed(uint32_t num_entries, int interleaved);

/* Entries one request may carry on a QP with max_inline_data max_inline
 * into an mkey of mkey_entries (rounded) entries: libmlx5's software
 * limit, plus for interleaved layouts the repetition header's slot in the
 * mkey, which libmlx5 does not check and the hardware fails with an error
 * completion (docs/device-semantics.md section 10.3). */
uint32_t dcx_mlx5_umr_entries_fit(uint32_t max_inline, uint32_t mkey_entries,
                                  int interleaved);

/* Sizes the send queue of the loopback RC QP that carries UMR work
 * requests able to configure keys of up to max_entries entries (both
 * layouts), with max_wr requests outstanding: WQEs of align(192 + 16 *
 * max_entries, 64) bytes (docs/device-semantics.md section 10.2),
 * requested max_inline_data 16 * max_entries
 * - 4.  EINVAL when a WQE would exceed max_desc_size or the queue
 * max_wqebb basic blocks.  out->max_inline is what the QP then reports. */
int dcx_mlx5_umr_sq_size(uint32_t max_entries, uint32_t max_wr,
                         uint32_t max_desc_size, uint32_t max_wqebb,
                         dcx_mlx5_sq_size_t *out);

/* The largest key (entries) a device whose send WQEs may be max_desc_size
 * bytes can configure in one request: what caps.mkey_max_entries says on
 * mlx5 (a multiple of 4; 0 when not even 4 fit). */
uint32_t dcx_mlx5_mkey_max_entries(uint32_t max_desc_size);

/* DCX_ACCESS_* to IBV_ACCESS_* (the four a key may grant). */
uint32_t dcx_mlx5_mkey_access(uint32_t access);

/* Checks a configure request (DCX_WR_MKEY_INTERLEAVED or _LIST) against a
 * key of mkey_entries entries, a QP carrying max_inline inline bytes and
 * max_stride, with the same verdicts as the soft device: EINVAL (no layout
 * or entries, unknown access bits, an access the device does not let an
 * indirect key grant (access_ok: the DCX_ACCESS_* it does), repeat count
 * 0, byte count or stride over max_stride, 0 or more than 2^32 - 1 bytes
 * per repetition), ENOMEM (more entries than the key or the WQE holds).
 * On success fills il[] or sge[] (num_entries of them; the caller's arrays
 * hold at least as many).  *why_p gets a short reason on failure. */
int dcx_mlx5_umr_layout(const dcx_send_wr_t *wr, uint32_t mkey_entries,
                        uint32_t max_inline, uint32_t max_stride,
                        uint32_t access_ok, struct mlx5dv_mr_interleaved *il,
                        struct ibv_sge *sge, const char **why_p);

/* ------------------------------------------------------------------------
 * Capabilities.  Verbs and mlx5dv_query_device say nothing about UMR: the
 * HCA capabilities that matter are read with a DEVX QUERY_HCA_CAP (general
 * device caps, current values), and the rest is learnt by creating the
 * objects (an indirect mkey; the loopback RC QP with the WQE size for the
 * largest key), as rdma-core's own tests do.
 * ------------------------------------------------------------------------ */
/* Bit offsets in the general capability layout (PRM cmd_hca_cap), counted
 * from the most significant bit of its first big-endian dword. */
#define DCX_MLX5_CAP_LOG_MAX_KLM_BIT    0x11au /* 6 bits */
#define DCX_MLX5_CAP_REPEATED_BLOCK_DIS 0x206u
#define DCX_MLX5_CAP_UMR_ATOMIC_DIS     0x208u
#define DCX_MLX5_CAP_UMR_INDIRECT_DIS   0x209u
/* Largest WQE tried when probing the loopback RC QP (libmlx5 refuses a
 * larger one than the device's max_desc_sz_sq with EINVAL, in software). */
#define DCX_MLX5_UMR_PROBE_WQE_MAX 4096u
#define DCX_MLX5_UMR_PROBE_WQE_MIN 256u /* 4 entries */

/* What QUERY_HCA_CAP says about UMR. */
typedef struct dcx_mlx5_umr_hca {
    bool indirect_disabled;       /* umr_indirect_mkey_disabled */
    bool atomic_disabled;         /* umr_modify_atomic_disabled */
    bool repeated_block_disabled; /* no interleaved layouts */
    uint8_t log_max_klm;          /* log_max_klm_list_size */
} dcx_mlx5_umr_hca_t;

/* Decodes a QUERY_HCA_CAP answer: EPROTO with *why_p when it is shorter
 * than DCX_MLX5_HCA_CAP_OUT_LEN or its status byte is not 0. */
int dcx_mlx5_umr_hca_parse(const void *out, size_t len, dcx_mlx5_umr_hca_t *hca,
                           const char **why_p);

/* Everything the open-time UMR probe learnt. */
typedef struct dcx_mlx5_umr_probe {
    bool devx;        /* DEVX context granted */
    bool mem_mgt_ext; /* IBV_DEVICE_MEM_MGT_EXTENSIONS */
    bool hca_ok;      /* QUERY_HCA_CAP answered */
    dcx_mlx5_umr_hca_t hca;
    bool mkey_ok; /* an indirect mkey was created */
    /* Entries of the largest key whose configure WQE the loopback RC QP
     * carried (created and taken to RTS); 0 = no such QP. */
    uint32_t qp_entries;
    uint32_t qp_wqe_size; /* bytes per WQE of that QP */
    uint32_t max_qp_wr;   /* device: basic blocks per SQ */
} dcx_mlx5_umr_probe_t;

/* The strided-key capabilities of a probed device.  0 with, in caps,
 * DCX_CAP_MKEY_STRIDE, mkey_max_entries (the QP's entries, bounded by
 * 2^log_max_klm and DCX_MLX5_MKEY_MAX_ENTRIES, a multiple of 4),
 * mkey_max_stride and mkey_qp_type (DCX_QPT_UMR); *max_wr_p gets the
 * deepest UMR queue and *access_ok_p what a key may grant.  EOPNOTSUPP,
 * with caps untouched and *why_p naming the first thing missing,
 * otherwise. */
int dcx_mlx5_umr_caps_translate(const dcx_mlx5_umr_probe_t *probe,
                                dcx_dev_caps_t *caps, uint32_t *max_wr_p,
                                uint32_t *access_ok_p, const char **why_p);

#ifdef __cplusplus
}
#endif

#endif
