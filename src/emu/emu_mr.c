/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: protection domains and memory regions.
 *
 * Registration applies the kernel's access rules (REMOTE_WRITE or
 * REMOTE_ATOMIC need LOCAL_WRITE; unknown mandatory bits are refused;
 * optional bits, IBV_ACCESS_OPTIONAL_RANGE, are dropped) before the soft
 * device registers the range.  Not modelled, refused with EOPNOTSUPP: ODP
 * (IBV_ACCESS_ON_DEMAND; the device reports no ODP), zero-based regions
 * and an iova other than the address (the soft device keys regions by
 * address).  A PD with objects still on it is not freed (EBUSY), as the
 * kernel refuses it.
 */
#include "emu/emu_devx.h"
#include "soft/dcx_soft.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EMU_ACCESS_KNOWN                                                      \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                       \
     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | \
     IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB)

static uint32_t emu_pd_handles;

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    emu_ctx_t *ectx = emu_ctx_check(context, "ibv_alloc_pd");
    emu_pd_t *pd;
    int ret;

    if (ectx == NULL) {
        return NULL;
    }
    pd = calloc(1, sizeof(*pd));
    if (pd == NULL) {
        emu_error("%s: alloc_pd: out of memory", context->device->name);
        errno = ENOMEM;
        return NULL;
    }
    ret = dcx_pd_alloc(ectx->dev->soft, &pd->soft);
    if (ret != 0) {
        free(pd);
        errno = ret;
        return NULL;
    }
    pd->pd.context = context;
    pd->pd.handle  = __atomic_add_fetch(&emu_pd_handles, 1, __ATOMIC_RELAXED);
    pd->pdn        = pd->pd.handle & 0xffffff;
    emu_num_add(ectx->dev, EMU_NUM_PD, pd->pdn, pd);
    return &pd->pd;
}

int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
    emu_pd_t *pd = emu_pd(ibpd);
    int ret;

    if (__atomic_load_n(&pd->refs, __ATOMIC_ACQUIRE) != 0) {
        emu_error("%s: dealloc_pd %u: %u objects still use it",
                  ibpd->context->device->name, ibpd->handle, pd->refs);
        return EBUSY;
    }
    ret = dcx_pd_free(pd->soft);
    if (ret != 0) {
        return ret;
    }
    emu_num_del(emu_ctx(ibpd->context)->dev, EMU_NUM_PD, pd->pdn, pd);
    free(pd);
    return 0;
}

/* The kernel's checks of an access mask (ib_check_mr_access) and what the
 * emulation cannot model, for 'call'.  Returns the DCX_ACCESS_* mask or
 * -errno. */
static int emu_mr_access(struct ibv_pd *ibpd, unsigned access, const char *call)
{
    const char *name   = ibpd->context->device->name;
    unsigned mandatory = access & ~IBV_ACCESS_OPTIONAL_RANGE;
    int out            = 0;

    if (mandatory & ~EMU_ACCESS_KNOWN) {
        emu_error("%s: %s: unknown access bits 0x%x", name, call,
                  mandatory & ~EMU_ACCESS_KNOWN);
        return -EINVAL;
    }
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(access & IBV_ACCESS_LOCAL_WRITE)) {
        emu_error("%s: %s: access 0x%x asks for remote write or atomic "
                  "without LOCAL_WRITE",
                  name, call, access);
        return -EINVAL;
    }
    if (access & IBV_ACCESS_ON_DEMAND) {
        emu_error("%s: %s: on-demand paging is not offered (no ODP caps)", name,
                  call);
        return -EOPNOTSUPP;
    }
    if (access & IBV_ACCESS_ZERO_BASED) {
        emu_error("%s: %s: zero-based regions are not modelled", name, call);
        return -EOPNOTSUPP;
    }
    if (access & IBV_ACCESS_LOCAL_WRITE)
        out |= DCX_ACCESS_LOCAL_WRITE;
    if (access & IBV_ACCESS_REMOTE_WRITE)
        out |= DCX_ACCESS_REMOTE_WRITE;
    if (access & IBV_ACCESS_REMOTE_READ)
        out |= DCX_ACCESS_REMOTE_READ;
    if (access & IBV_ACCESS_REMOTE_ATOMIC)
        out |= DCX_ACCESS_REMOTE_ATOMIC;
    return out;
}

static struct ibv_mr *emu_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
                                 uint64_t iova, unsigned access)
{
    emu_pd_t *pd = emu_pd(ibpd);
    const char *name;
    emu_mr_t *mr;
    int acc, ret;

    if ((ibpd == NULL) ||
        (emu_ctx_check(ibpd->context, "ibv_reg_mr") == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    name = ibpd->context->device->name;
    if (length == 0) {
        emu_error("%s: reg_mr %p: zero length", name, addr);
        errno = EINVAL;
        return NULL;
    }
    if (iova != (uintptr_t)addr) {
        emu_error("%s: reg_mr %p+%zu: iova 0x%llx differs from the address, "
                  "not modelled",
                  name, addr, length, (unsigned long long)iova);
        errno = EOPNOTSUPP;
        return NULL;
    }
    acc = emu_mr_access(ibpd, access, "reg_mr");
    if (acc < 0) {
        errno = -acc;
        return NULL;
    }
    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        emu_error("%s: reg_mr: out of memory", name);
        errno = ENOMEM;
        return NULL;
    }
    ret = dcx_mr_reg(pd->soft, addr, length, (uint32_t)acc, &mr->soft);
    if (ret != 0) {
        free(mr);
        errno = ret;
        return NULL;
    }
    mr->mr.context = ibpd->context;
    mr->mr.pd      = ibpd;
    mr->mr.addr    = addr;
    mr->mr.length  = length;
    mr->mr.handle  = mr->soft->lkey;
    mr->mr.lkey    = mr->soft->lkey;
    mr->mr.rkey    = mr->soft->rkey;
    __atomic_add_fetch(&pd->refs, 1, __ATOMIC_RELEASE);
    return &mr->mr;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
                          int access)
{
    return emu_reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned)access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
                               uint64_t iova, int access)
{
    return emu_reg_mr(pd, addr, length, iova, (unsigned)access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
                                uint64_t iova, unsigned int access)
{
    return emu_reg_mr(pd, addr, length, iova, access);
}

int ibv_dereg_mr(struct ibv_mr *ibmr)
{
    emu_mr_t *mr = (emu_mr_t *)ibmr;
    emu_pd_t *pd = emu_pd(ibmr->pd);
    int ret;

    ret = dcx_mr_dereg(mr->soft);
    if (ret != 0) {
        return ret;
    }
    __atomic_sub_fetch(&pd->refs, 1, __ATOMIC_RELEASE);
    free(mr);
    return 0;
}

/* ibv_rereg_mr: libibverbs' input checks (IBV_REREG_MR_ERR_INPUT), then
 * the kernel's (IBV_REREG_MR_ERR_CMD), errno saying why; on success the MR
 * keeps its lkey and rkey, as mlx5 keeps them when it can change the key
 * in place.  Unchanged properties stay as they were: the access flags of
 * a rereg without CHANGE_ACCESS, and so on. */
int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd,
                 void *addr, size_t length, int access)
{
    emu_mr_t *mr = (emu_mr_t *)ibmr;
    emu_pd_t *old_pd, *new_pd;
    const char *why = NULL;
    const char *name;
    int acc, ret;

    if ((ibmr == NULL) ||
        (emu_ctx_check(ibmr->context, "ibv_rereg_mr") == NULL)) {
        errno = EINVAL;
        return IBV_REREG_MR_ERR_INPUT;
    }
    name = ibmr->context->device->name;
    if (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) {
        why = "unknown flags";
    } else if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) &&
               ((length == 0) || (addr == NULL))) {
        why = "CHANGE_TRANSLATION without an address or a length";
    } else if ((access != 0) && !(flags & IBV_REREG_MR_CHANGE_ACCESS)) {
        why = "access flags without CHANGE_ACCESS";
    } else if ((flags & IBV_REREG_MR_CHANGE_PD) && (ibpd == NULL)) {
        why = "CHANGE_PD without a PD";
    }
    if (why != NULL) {
        emu_error("%s: rereg_mr 0x%x: flags 0x%x, %p/%zu, access 0x%x: %s",
                  name, ibmr->lkey, flags, addr, length, access, why);
        errno = EINVAL;
        return IBV_REREG_MR_ERR_INPUT;
    }
    /* the kernel's checks */
    if (flags == 0) {
        emu_error("%s: rereg_mr 0x%x: no property to change", name, ibmr->lkey);
        errno = EINVAL;
        return IBV_REREG_MR_ERR_CMD;
    }
    old_pd = emu_pd(ibmr->pd);
    new_pd = (flags & IBV_REREG_MR_CHANGE_PD) ? emu_pd(ibpd) : old_pd;
    if (new_pd->pd.context != ibmr->context) {
        emu_error("%s: rereg_mr 0x%x: the new PD is of another context", name,
                  ibmr->lkey);
        errno = EINVAL;
        return IBV_REREG_MR_ERR_CMD;
    }
    if (!(flags & IBV_REREG_MR_CHANGE_TRANSLATION)) {
        addr   = ibmr->addr;
        length = ibmr->length;
    }
    acc = (flags & IBV_REREG_MR_CHANGE_ACCESS) ?
              emu_mr_access(&new_pd->pd, (unsigned)access, "rereg_mr") :
              (int)mr->soft->access;
    if (acc < 0) {
        errno = -acc;
        return IBV_REREG_MR_ERR_CMD;
    }
    ret = dcx_soft_mr_rereg(mr->soft, new_pd->soft, addr, length,
                            (uint32_t)acc);
    if (ret != 0) { /* the soft device said why */
        errno = ret;
        return IBV_REREG_MR_ERR_CMD;
    }
    if (new_pd != old_pd) {
        __atomic_add_fetch(&new_pd->refs, 1, __ATOMIC_RELEASE);
        __atomic_sub_fetch(&old_pd->refs, 1, __ATOMIC_RELEASE);
        ibmr->pd = &new_pd->pd;
    }
    ibmr->addr   = addr;
    ibmr->length = length;
    return 0;
}

/* The soft device does not pin pages (it copies through the owner's
 * address space), so a fork never breaks a registration: nothing to
 * protect, as rdma-core reports for kernels with fork-safe pinning. */
int ibv_fork_init(void)
{
    return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
    return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size)
{
    return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
    return 0;
}
