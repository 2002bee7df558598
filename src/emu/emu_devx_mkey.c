/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: DEVX CREATE_MKEY of indirect keys (emu_devx.h).
 *
 * A KSM key (access mode 3) maps its address range [start_addr, start_addr
 * + len) onto its entries, 2^log_entity_size bytes each; a KLM key (mode
 * 2) onto entries of their own byte_count.  Each entry names an address
 * and the key of an MR that covers it.  The key is a strided key of the
 * soft device, given its layout at once, its byte 0 at start_addr and the
 * low byte the command asks for (mkey_7_0): the key a program builds from
 * the answer's mkey_index and its own low byte is the one that works.
 * Direct (PA, MTT) keys, keys tied to a QP and entries past the device's
 * count are refused.
 */
#include "emu/emu_devx.h"
#include "soft/dcx_soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* create_mkey_in: the mkc at byte 16, the entries at byte 272 */
#define EMU_MKEY_IN_LEN    272u
#define EMU_MKEY_ENT_LEN   16u
#define EMU_MKC_A          145u, 1u
#define EMU_MKC_RW         146u, 1u
#define EMU_MKC_RR         147u, 1u
#define EMU_MKC_LW         148u, 1u
#define EMU_MKC_MODE       150u, 2u
#define EMU_MKC_QPN        160u, 24u
#define EMU_MKC_VARIANT    184u, 8u
#define EMU_MKC_PD         232u, 24u
#define EMU_MKC_START      256u
#define EMU_MKC_LEN        320u
#define EMU_MKC_XLT_SIZE   544u, 32u
#define EMU_MKC_LOG_ENTITY 603u, 5u
#define EMU_MKEY_XLT_ACT   768u, 32u
#define EMU_MODE_KLM       2u
#define EMU_MODE_KSM       3u

int emu_devx_mkey_create(emu_ctx_t *ctx, const uint8_t *in, size_t inlen,
                         uint8_t *out, size_t outlen,
                         struct mlx5dv_devx_obj *obj)
{
    static const char call[] = "mlx5dv_devx_obj_create(CREATE_MKEY)";
    const char *name         = ctx->vctx.context.device->name;
    const uint16_t op        = EMU_CMD_CREATE_MKEY;
    uint32_t mode            = EMU_PRM_GET(in, EMU_MKC_MODE);
    uint32_t n               = EMU_PRM_GET(in, EMU_MKEY_XLT_ACT);
    uint32_t log_ent         = EMU_PRM_GET(in, EMU_MKC_LOG_ENTITY);
    dcx_mkey_layout_t lay;
    const uint8_t *e;
    dcx_mkey_t *mkey;
    dcx_sge_t *list;
    emu_pd_t *pd;
    uint32_t i;
    int ret;

    if ((mode != EMU_MODE_KLM) && (mode != EMU_MODE_KSM)) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_PARAM,
                               0x50u,
                               "access mode %u is not modelled (KLM "
                               "2 and KSM 3)",
                               mode);
    }
    if ((n == 0) || (n > EMU_PRM_GET(in, EMU_MKC_XLT_SIZE)) ||
        (inlen < EMU_MKEY_IN_LEN + (size_t)n * EMU_MKEY_ENT_LEN) ||
        ((mode == EMU_MODE_KSM) && (log_ent > 31))) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_PARAM,
                               0x51u,
                               "%u entries (table of %u) in %zu "
                               "input bytes, or entity size 2^%u",
                               n, EMU_PRM_GET(in, EMU_MKC_XLT_SIZE), inlen,
                               log_ent);
    }
    if (EMU_PRM_GET(in, EMU_MKC_QPN) != 0xffffffu) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_PARAM,
                               0x52u, "a key tied to QP 0x%x is not modelled",
                               EMU_PRM_GET(in, EMU_MKC_QPN));
    }
    pd = emu_num_find(ctx->dev, EMU_NUM_PD, EMU_PRM_GET(in, EMU_MKC_PD));
    if (pd == NULL) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_BAD_RES,
                               0x53u, "no PD 0x%x on the device",
                               EMU_PRM_GET(in, EMU_MKC_PD));
    }
    list = calloc(n, sizeof(*list));
    if (list == NULL) {
        return emu_devx_refuse(name, call, op, out, outlen, EMU_STAT_LIM, 0x54u,
                               "out of memory");
    }
    for (i = 0, e = in + EMU_MKEY_IN_LEN; i < n; ++i, e += EMU_MKEY_ENT_LEN) {
        list[i].length = (mode == EMU_MODE_KSM) ? (uint32_t)(1ull << log_ent) :
                                                  emu_prm_get(e, 0, 32);
        list[i].lkey   = emu_prm_get(e, 32, 32);
        list[i].addr   = emu_prm_get64(e, 64);
    }
    memset(&lay, 0, sizeof(lay));
    lay.num_entries  = n;
    lay.repeat_count = 1;
    lay.list         = list;
    lay.access = (EMU_PRM_GET(in, EMU_MKC_LW) ? DCX_ACCESS_LOCAL_WRITE : 0) |
                 (EMU_PRM_GET(in, EMU_MKC_RW) ? DCX_ACCESS_REMOTE_WRITE : 0) |
                 (EMU_PRM_GET(in, EMU_MKC_RR) ? DCX_ACCESS_REMOTE_READ : 0) |
                 (EMU_PRM_GET(in, EMU_MKC_A) ? DCX_ACCESS_REMOTE_ATOMIC : 0);
    ret = dcx_mkey_create(pd->soft, n, &mkey);
    if (ret == 0) {
        ret = dcx_soft_mkey_configure(mkey, &lay,
                                      emu_prm_get64(in, EMU_MKC_START),
                                      (uint8_t)EMU_PRM_GET(in,
                                                           EMU_MKC_VARIANT));
        if (ret != 0) {
            dcx_mkey_destroy(mkey);
        }
    }
    free(list);
    if (ret != 0) {
        return emu_devx_answer(out, outlen, EMU_STAT_LIM,
                               0x55u); /* logged by the call */
    }
    __atomic_add_fetch(&pd->refs, 1, __ATOMIC_RELEASE);
    obj->kind = EMU_DEVX_MKEY;
    obj->mkey = mkey;
    obj->pd   = pd;
    obj->id   = mkey->lkey >> 8;
    return 0;
}

int emu_devx_mkey_free(struct mlx5dv_devx_obj *obj)
{
    int ret = dcx_mkey_destroy(obj->mkey);

    if (ret == 0) {
        __atomic_sub_fetch(&obj->pd->refs, 1, __ATOMIC_RELEASE);
    }
    return ret;
}
