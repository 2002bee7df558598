/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx memory domain: memory the MD allocates (uct_md_mem_alloc / mem_free,
 * and through them uct_iface_mem_alloc and uct_mem_alloc's "md" method).
 *
 * Offered (UCT_MD_FLAG_ALLOC and UCT_MD_FLAG_FIXED, host memory) only
 * where the device allocates memory itself (DCX_CAP_MEM_ALLOC): the soft
 * device, whose allocations peers map so that their one-sided operations
 * into it are plain copies and their atomics CPU atomics
 * (src/soft/soft_alloc.c).  At a fixed address, OpenSHMEM's symmetric
 * heap (UCP's allocation at the address the job agreed) is one of them.
 * An mlx5 device reaches any registered memory by DMA alike, so its MD
 * allocates nothing and says so.
 *
 * An allocation is registered at once with every access its flags ask
 * for, outside the registration cache (the cache would hand the same
 * region to later registrations of the range, which must not keep it
 * after the memory is freed); its memh is released only by mem_free,
 * which deregisters (telling the interfaces, as every deregistration
 * does) and then gives the memory back to the device.
 */
#include "dcx_md.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>

#include <string.h>

/* What a uct_mem_h of an allocation points to. */
typedef struct uct_dcx_alloc_memh {
    uct_dcx_memh_t super; /* flags: UCT_DCX_MEMH_FLAG_ALLOC */
    void *address;
    size_t length;
} uct_dcx_alloc_memh_t;


ucs_status_t uct_dcx_mem_alloc(uct_md_h uct_md, size_t *length_p,
                               void **address_p, ucs_memory_type_t mem_type,
                               unsigned flags, const char *alloc_name,
                               uct_mem_h *memh_p)
{
    uct_dcx_md_t *md = ucs_derived_of(uct_md, uct_dcx_md_t);
    uct_dcx_alloc_memh_t *memh;
    ucs_status_t status;
    size_t length;
    void *address;
    int ret;

    if (!(dcx_dev_caps(md->dev)->flags & DCX_CAP_MEM_ALLOC)) {
        ucs_debug("dcx md %s: allocation is not supported by the device "
                  "(%s)",
                  md->name, alloc_name);
        return UCS_ERR_UNSUPPORTED;
    }
    if (mem_type != UCS_MEMORY_TYPE_HOST) {
        ucs_debug("dcx md %s: cannot allocate %s memory (%s)", md->name,
                  (mem_type < UCS_MEMORY_TYPE_LAST) ?
                      ucs_memory_type_names[mem_type] :
                      "unknown",
                  alloc_name);
        return UCS_ERR_UNSUPPORTED;
    }
    if ((length_p == NULL) || (address_p == NULL) || (memh_p == NULL) ||
        (*length_p == 0)) {
        ucs_error("dcx md %s: allocation of %zu bytes for %s: invalid "
                  "arguments",
                  md->name, (length_p != NULL) ? *length_p : 0, alloc_name);
        return UCS_ERR_INVALID_PARAM;
    }

    memh = ucs_malloc(sizeof(*memh), "dcx alloc memh");
    if (memh == NULL) {
        ucs_error("dcx md %s: cannot allocate a memory handle for %s", md->name,
                  alloc_name);
        return UCS_ERR_NO_MEMORY;
    }

    /* UCT_MD_MEM_FLAG_FIXED: at *address_p, over nothing mapped there
     * (as UCX's shared-memory MDs place theirs) */
    length  = *length_p;
    address = (flags & UCT_MD_MEM_FLAG_FIXED) ? *address_p : NULL;
    ret     = dcx_mem_alloc(md->dev, &length, &address,
                        (flags & UCT_MD_MEM_FLAG_FIXED) ? DCX_MEM_FIXED : 0);
    if (ret != 0) {
        /* the device layer logged the reason */
        status = (ret == EEXIST) ? UCS_ERR_NO_MEMORY :
                                   uct_dcx_status_from_errno(ret);
        goto err_free_memh;
    }

    status = uct_dcx_md_mr_reg(md, address, length, uct_dcx_md_access_of(flags),
                               0, &memh->super.mr);
    if (status != UCS_OK) {
        ucs_error("dcx md %s: cannot register %zu bytes allocated for %s: %s",
                  md->name, length, alloc_name, ucs_status_string(status));
        goto err_free_mem;
    }

    memh->super.flags = UCT_DCX_MEMH_FLAG_ALLOC;
    memh->address     = address;
    memh->length      = length;
    ucs_trace("dcx md %s: allocated %p..%p for %s, lkey 0x%x", md->name,
              address, UCS_PTR_BYTE_OFFSET(address, length), alloc_name,
              memh->super.mr->lkey);
    *length_p  = length;
    *address_p = address;
    *memh_p    = &memh->super;
    return UCS_OK;

err_free_mem:
    dcx_mem_free(md->dev, address, length);
err_free_memh:
    ucs_free(memh);
    return status;
}

ucs_status_t uct_dcx_mem_free(uct_md_h uct_md, uct_mem_h uct_memh)
{
    uct_dcx_md_t *md     = ucs_derived_of(uct_md, uct_dcx_md_t);
    uct_dcx_memh_t *base = uct_memh;
    uct_dcx_alloc_memh_t *memh;
    int ret;

    if ((base == NULL) || !(base->flags & UCT_DCX_MEMH_FLAG_ALLOC)) {
        ucs_error("dcx md %s: memh %p was not allocated by this md", md->name,
                  uct_memh);
        return UCS_ERR_INVALID_PARAM;
    }

    memh = ucs_derived_of(base, uct_dcx_alloc_memh_t);
    /* no peer reaches the memory once this returns, then it goes */
    uct_dcx_md_mr_dereg(md, memh->super.mr);
    ret = dcx_mem_free(md->dev, memh->address, memh->length);
    if (ret != 0) {
        ucs_free(memh);
        return uct_dcx_status_from_errno(ret);
    }
    ucs_trace("dcx md %s: freed %p..%p", md->name, memh->address,
              UCS_PTR_BYTE_OFFSET(memh->address, memh->length));
    ucs_free(memh);
    return UCS_OK;
}
