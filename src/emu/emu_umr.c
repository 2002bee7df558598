/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the memory-key work requests of an RC QP
 * (mlx5dv_wr_mr_interleaved, mlx5dv_wr_mr_list, mlx5dv_wr_mkey_configure
 * with its access and layout setters, ibv_wr_local_inv), executed
 * by the soft device's strided keys (src/soft/soft_mkey.c) on the QP's soft
 * send queue, in order with its other work.
 *
 * What libmlx5 refuses fails the batch at ibv_wr_complete (emu_wr.c):
 *  - a builder on a QP that is not RC, or whose send_ops_flags (mlx5 ones
 *    for the UMR builders, IBV_QP_EX_WITH_LOCAL_INV for the invalidation)
 *    do not declare it: EOPNOTSUPP (libmlx5 leaves the pointer NULL);
 *    IBV_WR_LOCAL_INV through ibv_post_send needs no declaration (libmlx5
 *    takes it on any RC QP);
 *  - a configure request without IBV_SEND_INLINE in wr_flags: EOPNOTSUPP;
 *  - access flags other than LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ and
 *    REMOTE_ATOMIC, no key or a key of another device: EINVAL;
 *  - more entries than the WQE holds inline ((max_inline_data + 4) / 16,
 *    one less for the repetition header of an interleaved layout) or than
 *    the key's translation entries: ENOMEM.
 * What the HCA does with a WQE libmlx5 let through:
 *  - an interleaved layout that leaves no translation entry for its
 *    repetition header (num_interleaved == the key's entries) fails in the
 *    HCA: the request completes with IBV_WC_LOC_QP_OP_ERR and the QP goes
 *    to ERR;
 *  - an entry's byte count and stride (bytes_count + bytes_skip) travel in
 *    16-bit fields: the HCA sees the low 16 bits, silently, and the key
 *    maps repeat_count times the truncated counts at the truncated strides
 *    (a stride below its count makes repetitions overlap, as on the HCA);
 *  - a layout of no bytes (repeat count 0, every count 0, no entries) makes
 *    a key of length 0, through which every access fails;
 *  - the entries' keys are not checked at configure: an access through the
 *    key fails where an entry's MR is missing or refuses the access
 *    (local protection error, remote access error at the requester);
 *  - ibv_wr_local_inv of a key that is not an indirect mkey completes with
 *    IBV_WC_LOC_PROT_ERR.
 * mlx5dv_wr_mkey_configure is mr_list/mr_interleaved in parts, with
 * libmlx5's rules: IBV_SEND_INLINE (EOPNOTSUPP), no comp_mask and no
 * conf_flags but RESET_SIG_ATTR (EOPNOTSUPP), each setter at most once
 * (EINVAL), a setter without a configure expecting one (EINVAL); the
 * request is complete when its declared number of setters came (fewer at
 * the next builder or ibv_wr_complete: EINVAL, as a malformed WQE).
 * Without the access setter the key keeps the access flags it had (local
 * read from creation, as libmlx5 creates it); without a layout setter it
 * would keep its translation, which is not modelled (EOPNOTSUPP).  The
 * signature and crypto setters fail as libmlx5 fails them on a key made
 * without those engines (EINVAL): the emulation makes no such keys.
 */
#include "emu/emu.h"
#include "soft/dcx_soft.h"

#include <errno.h>
#include <string.h>

#define EMU_UMR_ENTRY   16u /* bytes of one translation entry in the WQE */
#define EMU_UMR_INL_HDR 4u
#define EMU_UMR_16BIT   0xffffu
#define EMU_UMR_ACCESS                                  \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static inline emu_qp_t *emu_umr_dv_qp(struct mlx5dv_qp_ex *dv)
{
    return (emu_qp_t *)((char *)dv - offsetof(emu_qp_t, dv));
}

static uint32_t emu_umr_access(uint32_t access)
{
    return ((access & IBV_ACCESS_LOCAL_WRITE) ? DCX_ACCESS_LOCAL_WRITE : 0) |
           ((access & IBV_ACCESS_REMOTE_WRITE) ? DCX_ACCESS_REMOTE_WRITE : 0) |
           ((access & IBV_ACCESS_REMOTE_READ) ? DCX_ACCESS_REMOTE_READ : 0) |
           ((access & IBV_ACCESS_REMOTE_ATOMIC) ? DCX_ACCESS_REMOTE_ATOMIC : 0);
}

/* A memory-key WR appended to the batch; NULL if a rule refused it. */
static emu_wr_t *emu_umr_new(emu_qp_t *qp, uint8_t opcode, const char *name,
                             bool declared)
{
    emu_wr_t *w;

    if (qp->batch_err != 0) {
        return NULL;
    }
    if (qp->kind != EMU_QP_RC) {
        emu_wr_fail(qp, EOPNOTSUPP,
                    "%s on a %s: the emulation models memory-key requests "
                    "on RC QPs (libmlx5 gives the UMR builders to RC QPs "
                    "only)",
                    name,
                    (qp->kind == EMU_QP_DCI) ? "DCI" :
                    (qp->kind == EMU_QP_UD)  ? "UD QP" :
                                               "DCT");
        return NULL;
    }
    if (!declared) {
        emu_wr_fail(qp, EOPNOTSUPP,
                    "%s is not in the QP's send_ops_flags (libmlx5 "
                    "installs no builder for it)",
                    name);
        return NULL;
    }
    w = emu_wr_push(qp, opcode, name);
    if (w != NULL) {
        w->has_data = 1; /* nothing to set after the builder */
        ++w->setters;
    }
    return w;
}

/* The checks of a configure request, as libmlx5 makes them: each false
 * (or NULL) when it failed the batch. */
static bool emu_umr_inline_ok(emu_qp_t *qp, const char *name)
{
    if (!(qp->qpx.wr_flags & IBV_SEND_INLINE)) {
        emu_wr_fail(qp, EOPNOTSUPP,
                    "%s without IBV_SEND_INLINE in wr_flags (the "
                    "translation table must travel inline)",
                    name);
        return false;
    }
    return true;
}

static bool emu_umr_access_ok(emu_qp_t *qp, uint32_t access, const char *name)
{
    if (access & ~(uint32_t)EMU_UMR_ACCESS) {
        emu_wr_fail(qp, EINVAL,
                    "%s: access flags 0x%x outside LOCAL_WRITE, "
                    "REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC",
                    name, access);
        return false;
    }
    return true;
}

static emu_mkey_t *emu_umr_key(emu_qp_t *qp, struct mlx5dv_mkey *mkey,
                               const char *name)
{
    emu_mkey_t *mk = (mkey != NULL) ? emu_mkey(mkey) : NULL;

    if ((mk == NULL) ||
        (mk->pd->pd.context->device != qp->qpx.qp_base.context->device)) {
        emu_wr_fail(qp, EINVAL, "%s: no mkey, or an mkey of another device",
                    name);
        return NULL;
    }
    return mk;
}

/* n entries in the WQE (its inline room, less the repetition header of an
 * interleaved layout) and in the key */
static bool emu_umr_fits(emu_qp_t *qp, const emu_mkey_t *mk, uint32_t n,
                         bool il, const char *name)
{
    uint32_t fit = (qp->max_inline + EMU_UMR_INL_HDR) / EMU_UMR_ENTRY;

    if (il) {
        fit = (fit > 0) ? fit - 1 : 0;
    }
    if (fit > mk->num_desc) {
        fit = mk->num_desc;
    }
    if (n > fit) {
        emu_wr_fail(qp, ENOMEM,
                    "%s: %u entries, the WQE (max_inline_data %u%s) and "
                    "the key (%u entries) hold %u",
                    name, n, qp->max_inline,
                    il ? ", less the repetition header" : "", mk->num_desc,
                    fit);
        return false;
    }
    return true;
}

static emu_mkey_t *emu_umr_check(emu_qp_t *qp, struct mlx5dv_mkey *mkey,
                                 uint32_t access, uint32_t n, bool il,
                                 const char *name)
{
    emu_mkey_t *mk;

    if (!emu_umr_inline_ok(qp, name) || !emu_umr_access_ok(qp, access, name)) {
        return NULL;
    }
    mk = emu_umr_key(qp, mkey, name);
    if ((mk == NULL) || !emu_umr_fits(qp, mk, n, il, name)) {
        return NULL;
    }
    return mk;
}

/* Turns w into a list of one entry of no bytes: a key of length 0 (or the
 * carrier of a request that fails in the HCA).  ENOMEM if out of memory. */
static int emu_umr_empty(emu_qp_t *qp, emu_wr_t *w)
{
    dcx_sge_t *sge;

    if (emu_grow((void **)&qp->batch_sge, &qp->batch_sge_cap,
                 qp->batch_sge_n + 1, sizeof(*qp->batch_sge)) != 0) {
        emu_wr_fail(qp, ENOMEM, "out of memory");
        return ENOMEM;
    }
    w->wr.opcode        = DCX_WR_MKEY_LIST;
    w->sge_off          = qp->batch_sge_n;
    sge                 = &qp->batch_sge[qp->batch_sge_n++];
    sge->addr           = 0;
    sge->length         = 0;
    sge->lkey           = 0;
    w->lay.num_entries  = 1;
    w->lay.repeat_count = 1;
    return 0;
}

/* An interleaved layout whose truncated strides overlap: the same
 * translation as a list of repeat x n pieces, if the soft key holds them.
 * False if it does not (w then fails in the HCA). */
static bool emu_umr_unroll(emu_qp_t *qp, emu_wr_t *w, emu_mkey_t *mk,
                           uint32_t repeat, uint16_t n,
                           const struct mlx5dv_mr_interleaved *data,
                           const char *name)
{
    uint64_t pieces = (uint64_t)repeat * n;
    uint32_t r, i, stride;
    dcx_sge_t *sge;

    if (pieces > mk->soft->max_entries) {
        emu_error("%s: rc qp 0x%x: mr_interleaved: overlapping strides after "
                  "the 16-bit truncation over %llu pieces are not modelled "
                  "(at most %u): the request fails",
                  qp->qpx.qp_base.context->device->name, qp->qpx.qp_base.qp_num,
                  (unsigned long long)pieces, mk->soft->max_entries);
        w->fail_status = DCX_WC_LOC_QP_OP_ERR;
        return false;
    }
    if (emu_grow((void **)&qp->batch_sge, &qp->batch_sge_cap,
                 qp->batch_sge_n + (uint32_t)pieces,
                 sizeof(*qp->batch_sge)) != 0) {
        emu_wr_fail(qp, ENOMEM, "%s: out of memory", name);
        return true;
    }
    w->wr.opcode       = DCX_WR_MKEY_LIST;
    w->sge_off         = qp->batch_sge_n;
    w->lay.num_entries = (uint32_t)pieces;
    for (r = 0; r < repeat; ++r) {
        for (i = 0; i < n; ++i) {
            stride = (data[i].bytes_count + data[i].bytes_skip) & EMU_UMR_16BIT;
            sge    = &qp->batch_sge[qp->batch_sge_n++];
            sge->addr   = data[i].addr + (uint64_t)r * stride;
            sge->length = data[i].bytes_count & EMU_UMR_16BIT;
            sge->lkey   = data[i].lkey;
        }
    }
    qp->batch_il_n = w->il_off; /* the entries are in the list now */
    return true;
}

/* w's layout: an interleaved one of n entries repeated 'repeat' times,
 * on a key that holds them (access flags apart) */
static void emu_umr_fill_il(emu_qp_t *qp, emu_wr_t *w, emu_mkey_t *mk,
                            uint32_t repeat, uint16_t n,
                            const struct mlx5dv_mr_interleaved *data,
                            const char *name)
{
    bool truncated = false, overlap = false;
    dcx_mkey_interleaved_t *e;
    uint32_t i, count, stride;
    uint64_t rep_len = 0;

    w->wr.opcode = DCX_WR_MKEY_INTERLEAVED;
    if (emu_grow((void **)&qp->batch_il, &qp->batch_il_cap, qp->batch_il_n + n,
                 sizeof(*qp->batch_il)) != 0) {
        emu_wr_fail(qp, ENOMEM, "%s: out of memory", name);
        return;
    }
    w->wr.mkey          = mk->soft;
    w->lay.repeat_count = repeat;
    w->lay.num_entries  = n;
    for (i = 0; i < n; ++i) {
        /* what the WQE's 16-bit fields carry */
        count  = data[i].bytes_count & EMU_UMR_16BIT;
        stride = (data[i].bytes_count + data[i].bytes_skip) & EMU_UMR_16BIT;
        truncated |= (count != data[i].bytes_count) ||
                     (stride != data[i].bytes_count + data[i].bytes_skip) ||
                     ((uint64_t)data[i].bytes_count + data[i].bytes_skip >
                      UINT32_MAX);
        overlap |= (stride < count);
        e              = &qp->batch_il[qp->batch_il_n++];
        e->addr        = data[i].addr;
        e->bytes_count = count;
        e->bytes_skip  = (stride >= count) ? stride - count : 0;
        e->lkey        = data[i].lkey;
        e->reserved    = 0;
        rep_len += count;
    }
    if (truncated) {
        /* silent on the HCA: said at debug level only */
        emu_debug("%s: rc qp 0x%x: %s on mkey 0x%x: byte counts or strides "
                  "of 64 KiB or more keep their low 16 bits, as in the WQE",
                  qp->qpx.qp_base.context->device->name, qp->qpx.qp_base.qp_num,
                  name, mk->mkey.lkey);
    }
    if (n + 1u > mk->num_desc) {
        emu_error("%s: rc qp 0x%x: %s on mkey 0x%x: %u entries and the "
                  "repetition header need %u translation entries, the key "
                  "has %u: the HCA fails the request (IBV_WC_LOC_QP_OP_ERR)",
                  qp->qpx.qp_base.context->device->name, qp->qpx.qp_base.qp_num,
                  name, mk->mkey.lkey, n, n + 1, mk->num_desc);
        w->fail_status = DCX_WC_LOC_QP_OP_ERR;
    } else if ((repeat == 0) || (rep_len == 0)) {
        emu_debug("%s: rc qp 0x%x: %s on mkey 0x%x maps no bytes (repeat "
                  "count %u): every access through it will fail",
                  qp->qpx.qp_base.context->device->name, qp->qpx.qp_base.qp_num,
                  name, mk->mkey.lkey, repeat);
    } else if (overlap) {
        if (emu_umr_unroll(qp, w, mk, repeat, n, data, name)) {
            return;
        }
    } else {
        return;
    }
    qp->batch_il_n = w->il_off;
    emu_umr_empty(qp, w);
}

static void emu_umr_mr_interleaved(struct mlx5dv_qp_ex *dv,
                                   struct mlx5dv_mkey *mkey, uint32_t access,
                                   uint32_t repeat, uint16_t n,
                                   struct mlx5dv_mr_interleaved *data)
{
    static const char name[] = "mr_interleaved";
    emu_qp_t *qp             = emu_umr_dv_qp(dv);
    emu_mkey_t *mk;
    emu_wr_t *w;

    w = emu_umr_new(qp, DCX_WR_MKEY_INTERLEAVED, name,
                    qp->dv_ops & MLX5DV_QP_EX_WITH_MR_INTERLEAVED);
    if (w == NULL) {
        return;
    }
    mk = emu_umr_check(qp, mkey, access, n, true, name);
    if (mk == NULL) {
        return;
    }
    w->cfg_mk         = mk;
    w->cfg_access_set = 1;
    w->lay.access     = emu_umr_access(access);
    emu_umr_fill_il(qp, w, mk, repeat, n, data, name);
}

/* w's layout: the concatenation of n sges, on a key that holds them
 * (access flags apart) */
static void emu_umr_fill_list(emu_qp_t *qp, emu_wr_t *w, emu_mkey_t *mk,
                              uint16_t n, const struct ibv_sge *sge,
                              const char *name)
{
    uint64_t len = 0;
    uint32_t i;

    w->wr.opcode        = DCX_WR_MKEY_LIST;
    w->wr.mkey          = mk->soft;
    w->lay.repeat_count = 1;
    w->lay.num_entries  = n;
    for (i = 0; i < n; ++i) {
        len += sge[i].length;
    }
    if (len == 0) {
        emu_debug("%s: rc qp 0x%x: %s on mkey 0x%x maps no bytes: every "
                  "access through it will fail",
                  qp->qpx.qp_base.context->device->name, qp->qpx.qp_base.qp_num,
                  name, mk->mkey.lkey);
        emu_umr_empty(qp, w);
        return;
    }
    if (emu_grow((void **)&qp->batch_sge, &qp->batch_sge_cap,
                 qp->batch_sge_n + n, sizeof(*qp->batch_sge)) != 0) {
        emu_wr_fail(qp, ENOMEM, "%s: out of memory", name);
        return;
    }
    for (i = 0; i < n; ++i) {
        qp->batch_sge[qp->batch_sge_n].addr   = sge[i].addr;
        qp->batch_sge[qp->batch_sge_n].length = sge[i].length;
        qp->batch_sge[qp->batch_sge_n].lkey   = sge[i].lkey;
        ++qp->batch_sge_n;
    }
}

static void emu_umr_mr_list(struct mlx5dv_qp_ex *dv, struct mlx5dv_mkey *mkey,
                            uint32_t access, uint16_t n, struct ibv_sge *sge)
{
    static const char name[] = "mr_list";
    emu_qp_t *qp             = emu_umr_dv_qp(dv);
    emu_mkey_t *mk;
    emu_wr_t *w;

    w = emu_umr_new(qp, DCX_WR_MKEY_LIST, name,
                    qp->dv_ops & MLX5DV_QP_EX_WITH_MR_LIST);
    if (w == NULL) {
        return;
    }
    mk = emu_umr_check(qp, mkey, access, n, false, name);
    if (mk == NULL) {
        return;
    }
    w->cfg_mk         = mk;
    w->cfg_access_set = 1;
    w->lay.access     = emu_umr_access(access);
    emu_umr_fill_list(qp, w, mk, n, sge, name);
}

/* ------------------------------------------------------------------------
 * mlx5dv_wr_mkey_configure and its setters
 * ------------------------------------------------------------------------ */
/* The configure whose setters are being called; NULL (batch failed) if
 * the last WR is none, or has had all the setters it declared */
static emu_wr_t *emu_umr_cfg_cur(emu_qp_t *qp, const char *setter)
{
    emu_wr_t *w = (qp->batch_n > 0) ? &qp->batch[qp->batch_n - 1] : NULL;

    if (qp->batch_err != 0) {
        return NULL;
    }
    if ((w == NULL) || (w->cfg_mk == NULL) || w->has_data) {
        emu_wr_fail(qp, EINVAL,
                    "%s without an mkey_configure expecting it (none "
                    "before it, or its declared setters all called)",
                    setter);
        return NULL;
    }
    return w;
}

/* All declared setters are in: the WR is complete.  The HCA changes only
 * what the setters gave; a key whose layout stays is not modelled. */
static void emu_umr_cfg_done(emu_qp_t *qp, emu_wr_t *w)
{
    if (!w->cfg_layout_set) {
        emu_wr_fail(qp, EOPNOTSUPP,
                    "mkey_configure of mkey 0x%x without a layout setter "
                    "(the key keeping its translation) is not modelled",
                    w->cfg_mk->mkey.lkey);
        return;
    }
    w->has_data = 1;
}

static void emu_umr_cfg_setter(emu_qp_t *qp, emu_wr_t *w)
{
    if (++w->cfg_called == w->cfg_setters) {
        emu_umr_cfg_done(qp, w);
    }
}

static void emu_umr_mkey_configure(struct mlx5dv_qp_ex *dv,
                                   struct mlx5dv_mkey *mkey, uint8_t n,
                                   struct mlx5dv_mkey_conf_attr *attr)
{
    static const char name[] = "mkey_configure";
    emu_qp_t *qp             = emu_umr_dv_qp(dv);
    emu_mkey_t *mk;
    emu_wr_t *w;

    w = emu_umr_new(qp, DCX_WR_MKEY_LIST, name,
                    qp->dv_ops & MLX5DV_QP_EX_WITH_MKEY_CONFIGURE);
    if ((w == NULL) || !emu_umr_inline_ok(qp, name)) {
        return;
    }
    if (attr == NULL) {
        emu_wr_fail(qp, EINVAL, "%s without its attributes", name);
        return;
    }
    if ((attr->comp_mask != 0) ||
        (attr->conf_flags & ~(uint32_t)MLX5DV_MKEY_CONF_FLAG_RESET_SIG_ATTR)) {
        emu_wr_fail(qp, EOPNOTSUPP,
                    "%s: unknown conf_flags 0x%x or comp_mask "
                    "0x%llx",
                    name, attr->conf_flags,
                    (unsigned long long)attr->comp_mask);
        return;
    }
    mk = emu_umr_key(qp, mkey, name);
    if (mk == NULL) {
        return;
    }
    /* the key's signature attributes to reset (RESET_SIG_ATTR): it has
     * none, the emulation makes no signature keys */
    w->wr.mkey     = mk->soft;
    w->cfg_mk      = mk;
    w->cfg_setters = n;
    w->has_data    = 0;
    if (n == 0) {
        emu_umr_cfg_done(qp, w);
    }
}

static void emu_umr_set_access(struct mlx5dv_qp_ex *dv, uint32_t access)
{
    static const char name[] = "set_mkey_access_flags";
    emu_qp_t *qp             = emu_umr_dv_qp(dv);
    emu_wr_t *w              = emu_umr_cfg_cur(qp, name);

    if ((w == NULL) || !emu_umr_access_ok(qp, access, name)) {
        return;
    }
    if (w->cfg_access_set) {
        emu_wr_fail(qp, EINVAL, "%s twice for one mkey_configure", name);
        return;
    }
    w->cfg_access_set = 1;
    w->lay.access     = emu_umr_access(access);
    emu_umr_cfg_setter(qp, w);
}

static void emu_umr_set_layout(emu_qp_t *qp, uint32_t repeat, uint16_t n,
                               const struct mlx5dv_mr_interleaved *data,
                               const struct ibv_sge *sge, const char *name)
{
    emu_wr_t *w = emu_umr_cfg_cur(qp, name);

    if (w == NULL) {
        return;
    }
    if (w->cfg_layout_set) {
        emu_wr_fail(qp, EINVAL,
                    "%s: a layout was already set for this "
                    "mkey_configure",
                    name);
        return;
    }
    if (((data == NULL) && (sge == NULL) && (n > 0)) ||
        !emu_umr_fits(qp, w->cfg_mk, n, data != NULL, name)) {
        if (qp->batch_err == 0) {
            emu_wr_fail(qp, EINVAL, "%s: %u entries and no array", name, n);
        }
        return;
    }
    w->cfg_layout_set = 1;
    if (data != NULL) {
        emu_umr_fill_il(qp, w, w->cfg_mk, repeat, n, data, name);
    } else {
        emu_umr_fill_list(qp, w, w->cfg_mk, n, sge, name);
    }
    if (qp->batch_err == 0) {
        emu_umr_cfg_setter(qp, w);
    }
}

static void emu_umr_set_layout_list(struct mlx5dv_qp_ex *dv, uint16_t n,
                                    const struct ibv_sge *sge)
{
    emu_umr_set_layout(emu_umr_dv_qp(dv), 0, n, NULL, sge,
                       "set_mkey_layout_list");
}

static void emu_umr_set_layout_il(struct mlx5dv_qp_ex *dv, uint32_t repeat,
                                  uint16_t n,
                                  const struct mlx5dv_mr_interleaved *data)
{
    static const struct mlx5dv_mr_interleaved none;

    /* an interleaved layout of no entries still names its array */
    emu_umr_set_layout(emu_umr_dv_qp(dv), repeat, n,
                       (data != NULL) ? data : ((n == 0) ? &none : NULL), NULL,
                       "set_mkey_layout_interleaved");
}

/* Signature and crypto setters: libmlx5 refuses them on a key created
 * without those engines, and the emulation creates none with them. */
static void emu_umr_set_sig_block(struct mlx5dv_qp_ex *dv,
                                  const struct mlx5dv_sig_block_attr *attr)
{
    emu_qp_t *qp = emu_umr_dv_qp(dv);
    emu_wr_t *w  = emu_umr_cfg_cur(qp, "set_mkey_sig_block");

    (void)attr;
    if (w != NULL) {
        emu_wr_fail(qp, EINVAL,
                    "set_mkey_sig_block: mkey 0x%x has no signature "
                    "(signature keys are not modelled)",
                    w->cfg_mk->mkey.lkey);
    }
}

static void emu_umr_set_crypto(struct mlx5dv_qp_ex *dv,
                               const struct mlx5dv_crypto_attr *attr)
{
    emu_qp_t *qp = emu_umr_dv_qp(dv);
    emu_wr_t *w  = emu_umr_cfg_cur(qp, "set_mkey_crypto");

    (void)attr;
    if (w != NULL) {
        emu_wr_fail(qp, EINVAL,
                    "set_mkey_crypto: mkey 0x%x has no crypto engine "
                    "(crypto keys are not modelled)",
                    w->cfg_mk->mkey.lkey);
    }
}

static void emu_umr_inv(emu_qp_t *qp, uint32_t rkey, bool declared)
{
    emu_wr_t *w;

    w = emu_umr_new(qp, DCX_WR_MKEY_INVALIDATE, "local_inv", declared);
    if (w != NULL) {
        /* the key is found by its number when the request executes */
        w->inv_key.lkey = rkey;
        w->inv_key.rkey = rkey;
    }
}

static void emu_umr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
    emu_qp_t *qp = (emu_qp_t *)qpx;

    emu_umr_inv(qp, rkey, qp->send_ops & IBV_QP_EX_WITH_LOCAL_INV);
}

void emu_umr_post_local_inv(emu_qp_t *qp, uint32_t rkey)
{
    /* libmlx5's ibv_post_send takes IBV_WR_LOCAL_INV on every RC QP: its
     * send_ops_flags choose the ibv_wr_* builders only */
    emu_umr_inv(qp, rkey, true);
}


int emu_umr_post(emu_qp_t *qp, emu_wr_t *w)
{
    w->wr.sg_list = NULL;
    w->wr.num_sge = 0;
    if (w->wr.opcode == DCX_WR_MKEY_INVALIDATE) {
        w->inv_key.pd = qp->pd->soft;
        w->wr.mkey    = &w->inv_key;
    } else {
        /* a configure without the access setter keeps the key's flags;
         * the key takes those of the request as it is posted, in order */
        if (w->cfg_access_set) {
            w->cfg_mk->access = w->lay.access;
        } else {
            w->lay.access = w->cfg_mk->access;
        }
        w->lay.interleaved = (w->wr.opcode == DCX_WR_MKEY_INTERLEAVED) ?
                                 qp->batch_il + w->il_off :
                                 NULL;
        w->lay.list        = (w->wr.opcode == DCX_WR_MKEY_LIST) ?
                                 qp->batch_sge + w->sge_off :
                                 NULL;
        w->wr.mkey_layout  = &w->lay;
    }
    if (w->fail_status != 0) {
        return dcx_soft_qp_post_failing(qp->soft, &w->wr,
                                        (dcx_wc_status_t)w->fail_status);
    }
    return dcx_qp_post_send(qp->soft, &w->wr);
}

void emu_umr_init(emu_qp_t *qp)
{
    qp->qpx.wr_local_inv                  = emu_umr_local_inv;
    qp->dv.wr_mr_interleaved              = emu_umr_mr_interleaved;
    qp->dv.wr_mr_list                     = emu_umr_mr_list;
    qp->dv.wr_mkey_configure              = emu_umr_mkey_configure;
    qp->dv.wr_set_mkey_access_flags       = emu_umr_set_access;
    qp->dv.wr_set_mkey_layout_list        = emu_umr_set_layout_list;
    qp->dv.wr_set_mkey_layout_interleaved = emu_umr_set_layout_il;
    qp->dv.wr_set_mkey_sig_block          = emu_umr_set_sig_block;
    qp->dv.wr_set_mkey_crypto             = emu_umr_set_crypto;
}
