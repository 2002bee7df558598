/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: indirect memory keys (mlx5dv_create_mkey,
 * mlx5dv_destroy_mkey), each a strided key of the soft device
 * (src/soft/soft_mkey.c) that UMR requests on an RC QP configure
 * (emu_umr.c).
 *
 * As rdma-core and the HCA:
 *  - create_flags must be non-zero and known (EOPNOTSUPP); INDIRECT is the
 *    one modelled, the others (block signature, crypto, tag update, remote
 *    invalidation) are refused with EOPNOTSUPP, as on a device without
 *    those engines;
 *  - the key is created by a DEVX command: a context without DEVX is
 *    refused by the kernel (EINVAL);
 *  - max_entries is rounded up to a multiple of 4 and written back; the key
 *    starts free (every access through it fails until a UMR configures it);
 *  - lkey == rkey;
 *  - destroying a key works in any state (configured or not): accesses
 *    through it fail from then on, and a request naming it that has not
 *    executed yet completes with a local protection error.
 * A key holds the PD (ibv_dealloc_pd: EBUSY while keys are on it).
 */
#include "emu/emu.h"
#include "emu/emu_dv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EMU_MKEY_FLAGS_KNOWN                       \
    (MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT |        \
     MLX5DV_MKEY_INIT_ATTR_FLAGS_BLOCK_SIGNATURE | \
     MLX5DV_MKEY_INIT_ATTR_FLAGS_CRYPTO |          \
     MLX5DV_MKEY_INIT_ATTR_FLAGS_UPDATE_TAG |      \
     MLX5DV_MKEY_INIT_ATTR_FLAGS_REMOTE_INVALIDATE)

struct mlx5dv_mkey *
dcx_emu_mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *attr)
{
    const dcx_dev_caps_t *caps;
    emu_ctx_t *ectx;
    const char *name;
    emu_mkey_t *mk;
    uint32_t n;
    int ret;

    if ((attr == NULL) || (attr->pd == NULL)) {
        emu_error("mlx5dv_create_mkey: no attributes or no PD");
        errno = EINVAL;
        return NULL;
    }
    if (emu_dev_of(attr->pd->context->device) == NULL) {
        emu_error("mlx5dv_create_mkey: PD %p is not of the emulation",
                  (void *)attr->pd);
        errno = EOPNOTSUPP;
        return NULL;
    }
    ectx = emu_ctx(attr->pd->context);
    name = attr->pd->context->device->name;
    if ((attr->create_flags == 0) ||
        (attr->create_flags & ~(uint32_t)EMU_MKEY_FLAGS_KNOWN)) {
        emu_error("%s: mlx5dv_create_mkey: create_flags 0x%x must be "
                  "non-zero and known",
                  name, attr->create_flags);
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (attr->create_flags != MLX5DV_MKEY_INIT_ATTR_FLAGS_INDIRECT) {
        emu_error("%s: mlx5dv_create_mkey: create_flags 0x%x: only "
                  "INDIRECT is modelled (no signature, crypto, tag update "
                  "or remote invalidation)",
                  name, attr->create_flags);
        errno = EOPNOTSUPP;
        return NULL;
    }
    mk = calloc(1, sizeof(*mk));
    if (mk == NULL) {
        emu_error("%s: mlx5dv_create_mkey: out of memory", name);
        errno = ENOMEM;
        return NULL;
    }
    /* the soft key is as large as the soft device allows: the layouts a
     * WQE carries fit, and an overlapping interleaved one can be unrolled
     * (emu_umr.c); the key's own size is num_desc */
    caps = dcx_dev_caps(ectx->dev->soft);
    ret  = dcx_mkey_create(emu_pd(attr->pd)->soft, caps->mkey_max_entries,
                           &mk->soft);
    if (ret != 0) {
        emu_error("%s: mlx5dv_create_mkey: the soft device refused the key "
                  "(%s)",
                  name, strerror(ret));
        free(mk);
        errno = ret;
        return NULL;
    }
    n                 = ((uint32_t)attr->max_entries + 3u) & ~3u;
    mk->pd            = emu_pd(attr->pd);
    mk->num_desc      = n;
    mk->mkey.lkey     = mk->soft->lkey;
    mk->mkey.rkey     = mk->soft->rkey;
    attr->max_entries = (uint16_t)((n > 0xffffu) ? 0 : n);
    __atomic_add_fetch(&mk->pd->refs, 1, __ATOMIC_RELEASE);
    emu_debug("%s: mkey 0x%x created (%u translation entries)", name,
              mk->mkey.lkey, n);
    return &mk->mkey;
}

int dcx_emu_mlx5dv_destroy_mkey(struct mlx5dv_mkey *mkey)
{
    emu_mkey_t *mk = emu_mkey(mkey);
    int ret;

    if (mkey == NULL) {
        emu_error("mlx5dv_destroy_mkey: no key");
        return EINVAL;
    }
    ret = dcx_mkey_destroy(mk->soft);
    if (ret != 0) {
        emu_error("%s: mlx5dv_destroy_mkey 0x%x: the soft device refused "
                  "(%s)",
                  mk->pd->pd.context->device->name, mkey->lkey, strerror(ret));
        return ret;
    }
    __atomic_sub_fetch(&mk->pd->refs, 1, __ATOMIC_RELEASE);
    free(mk);
    return 0;
}
