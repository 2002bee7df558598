/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx memory domain: device listing from the MD configuration, device and
 * protection domain lifetime, memory registration (through UCX's
 * registration cache unless it is disabled) and remote keys.
 */
#include "dcx_md.h"

#include <ucm/api/ucm.h>
#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucs/time/time.h>

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>

/* What a registration allows.  Write access (local or remote) needs
 * writable memory, as with a real NIC, so memory that only peers read may be
 * read-only. */
#define UCT_DCX_ACCESS_READ_ONLY DCX_ACCESS_REMOTE_READ
#define UCT_DCX_ACCESS_ALL                              \
    (DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE | \
     DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC)

#define UCT_DCX_UCT_WRITE_FLAGS                                     \
    (UCT_MD_MEM_ACCESS_LOCAL_WRITE | UCT_MD_MEM_ACCESS_REMOTE_PUT | \
     UCT_MD_MEM_ACCESS_REMOTE_ATOMIC)

/* An rcache region carries the memory handle the MD hands out. */
typedef struct uct_dcx_rcache_region {
    ucs_rcache_region_t super;
    uct_dcx_memh_t memh;
} uct_dcx_rcache_region_t;


/* Lists the devices the configuration asks for.  Free with
 * dcx_dev_list_free(). */
static ucs_status_t uct_dcx_md_dev_list(const uct_dcx_md_config_t *config,
                                        dcx_dev_info_t **list_p,
                                        unsigned *count_p)
{
    dcx_dev_config_t *dev_config;
    int ret;

    ret = uct_dcx_md_dev_config(config, &dev_config);
    if (ret != 0) {
        return uct_dcx_status_from_errno(ret);
    }

    ret = dcx_dev_list(dev_config, list_p, count_p);
    dcx_dev_config_destroy(dev_config);
    if (ret != 0) {
        /* the device layer has logged the reason */
        return uct_dcx_status_from_errno(ret);
    }

    return UCS_OK;
}

ucs_status_t uct_dcx_query_md_resources(uct_component_t *component,
                                        uct_md_resource_desc_t **resources_p,
                                        unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resources = NULL;
    uct_dcx_md_config_t config;
    dcx_dev_info_t *list;
    unsigned i, count;
    ucs_status_t status;

    status = uct_dcx_md_config_fill(component, &config);
    if (status != UCS_OK) {
        /* the parser has logged the variable and its bad value */
        return status;
    }

    status = uct_dcx_md_dev_list(&config, &list, &count);
    if (status != UCS_OK) {
        goto out_release_config;
    }

    if (count > 0) {
        resources = ucs_calloc(count, sizeof(*resources), "dcx md resources");
        if (resources == NULL) {
            ucs_error("dcx: cannot allocate %u md resources", count);
            status = UCS_ERR_NO_MEMORY;
            goto out_free_list;
        }
    }

    for (i = 0; i < count; ++i) {
        ucs_strncpy_zero(resources[i].md_name, list[i].name,
                         sizeof(resources[i].md_name));
    }

    *resources_p     = resources;
    *num_resources_p = count;

out_free_list:
    dcx_dev_list_free(list);
out_release_config:
    ucs_config_parser_release_opts(&config, uct_dcx_md_config_table);
    return status;
}


/* ------------------------------------------------------------------------
 * Registration
 * ------------------------------------------------------------------------ */

/* Registrations that need no write access ask only for remote reads;
 * the others get every access, so that one registration (and one cache
 * region) serves every later use of the range. */
static uint32_t uct_dcx_md_access(int writable)
{
    return writable ? UCT_DCX_ACCESS_ALL : UCT_DCX_ACCESS_READ_ONLY;
}

uint32_t uct_dcx_md_access_of(unsigned flags)
{
    /* Flags naming no access at all ask for every access, as with UCX's own
     * memory domains: UCP 1.18 registers tag-offload receive buffers with
     * UCT_MD_MEM_FLAG_HIDE_ERRORS alone, and the device writes them */
    return uct_dcx_md_access(!(flags & UCT_MD_MEM_ACCESS_ALL) ||
                             (flags & UCT_DCX_UCT_WRITE_FLAGS));
}

ucs_status_t uct_dcx_md_mr_reg(uct_dcx_md_t *md, void *address, size_t length,
                               uint32_t access, unsigned flags, dcx_mr_t **mr_p)
{
    int ret;

    ret = (flags & UCT_MD_MEM_FLAG_HIDE_ERRORS) ?
              dcx_mr_reg_quiet(md->pd, address, length, access, mr_p) :
              dcx_mr_reg(md->pd, address, length, access, mr_p);
    if (ret != 0) {
        /* the device layer logged the failure: as an error, or at debug
         * level when the caller hides registration errors */
        ucs_debug("dcx md %s: registration of %p..%p failed: %s", md->name,
                  address, UCS_PTR_BYTE_OFFSET(address, length), strerror(ret));
        return uct_dcx_status_from_errno(ret);
    }

    ucs_trace("dcx md %s: registered %p..%p lkey 0x%x rkey 0x%x", md->name,
              address, UCS_PTR_BYTE_OFFSET(address, length), (*mr_p)->lkey,
              (*mr_p)->rkey);
    return UCS_OK;
}

void uct_dcx_md_mr_dereg(uct_dcx_md_t *md, dcx_mr_t *mr)
{
    uct_dcx_md_dereg_cb_t *dcb;
    int ret, kept = 0;

    ucs_list_for_each(dcb, &md->dereg_cbs, list) {
        kept |= dcb->cb(dcb->arg, mr, kept);
    }
    if (kept) {
        ucs_trace("dcx md %s: lkey 0x%x deregistered once its last WR is done",
                  md->name, mr->lkey);
        return;
    }

    ucs_trace("dcx md %s: deregistering lkey 0x%x", md->name, mr->lkey);
    ret = dcx_mr_dereg(mr);
    if (ret != 0) {
        ucs_warn("dcx md %s: deregistration of lkey 0x%x failed: %s", md->name,
                 mr->lkey, strerror(ret));
    }
}

static ucs_status_t uct_dcx_rcache_mem_reg_cb(void *context,
                                              ucs_rcache_t *rcache, void *arg,
                                              ucs_rcache_region_t *rregion,
                                              uint16_t rcache_flags)
{
    uct_dcx_md_t *md                = context;
    uct_dcx_rcache_region_t *region = ucs_derived_of(rregion,
                                                     uct_dcx_rcache_region_t);
    /* the caller's registration flags (uct_dcx_mem_reg); a region merged
     * with cached neighbours, which the cache tries first and, refused,
     * gives up for the caller's range alone, may fail where the caller's
     * would not: quietly */
    unsigned flags                  = *(const unsigned *)arg;

    if (rcache_flags & UCS_RCACHE_MEM_REG_HIDE_ERRORS) {
        flags |= UCT_MD_MEM_FLAG_HIDE_ERRORS;
    }
    /* the region's protection is the union of what its users asked for */
    region->memh.flags = UCT_DCX_MEMH_FLAG_RCACHE;
    return uct_dcx_md_mr_reg(md, (void *)region->super.super.start,
                             region->super.super.end -
                                 region->super.super.start,
                             uct_dcx_md_access(region->super.prot & PROT_WRITE),
                             flags, &region->memh.mr);
}

static void uct_dcx_rcache_mem_dereg_cb(void *context, ucs_rcache_t *rcache,
                                        ucs_rcache_region_t *rregion)
{
    uct_dcx_rcache_region_t *region = ucs_derived_of(rregion,
                                                     uct_dcx_rcache_region_t);

    uct_dcx_md_mr_dereg(context, region->memh.mr);
    region->memh.mr = NULL;
}

static void uct_dcx_rcache_dump_region_cb(void *context, ucs_rcache_t *rcache,
                                          ucs_rcache_region_t *rregion,
                                          char *buf, size_t max)
{
    uct_dcx_rcache_region_t *region = ucs_derived_of(rregion,
                                                     uct_dcx_rcache_region_t);

    if (region->memh.mr == NULL) {
        snprintf(buf, max, "not registered");
    } else {
        snprintf(buf, max, "lkey 0x%x rkey 0x%x", region->memh.mr->lkey,
                 region->memh.mr->rkey);
    }
}

static ucs_rcache_ops_t uct_dcx_rcache_ops = {
    UCT_DCX_RCACHE_OPS_VERSIONED.mem_reg = uct_dcx_rcache_mem_reg_cb,
    .mem_dereg                           = uct_dcx_rcache_mem_dereg_cb,
    .dump_region                         = uct_dcx_rcache_dump_region_cb};

ucs_status_t uct_dcx_mem_reg(uct_md_h uct_md, void *address, size_t length,
                             unsigned flags, uct_mem_h *memh_p)
{
    uct_dcx_md_t *md = ucs_derived_of(uct_md, uct_dcx_md_t);
    uint32_t access  = uct_dcx_md_access_of(flags);
    int writable     = (access != UCT_DCX_ACCESS_READ_ONLY);
    ucs_rcache_region_t *rregion;
    uct_dcx_memh_t *memh;
    ucs_status_t status;

    if ((address == NULL) || (length == 0)) {
        uct_md_log_mem_reg_error(flags,
                                 "dcx md %s: cannot register %p length "
                                 "%zu",
                                 md->name, address, length);
        return UCS_ERR_INVALID_PARAM;
    }

    if (md->rcache != NULL) {
        status = uct_dcx_rcache_get(md->rcache, address, length,
                                    writable ? (PROT_READ | PROT_WRITE) :
                                               PROT_READ,
                                    &flags, &rregion);
        if (status != UCS_OK) {
            /* the device layer logged why (as the direct path's) */
            ucs_debug("dcx md %s: registration of %p..%p failed: %s", md->name,
                      address, UCS_PTR_BYTE_OFFSET(address, length),
                      ucs_status_string(status));
            return status;
        }

        *memh_p = &ucs_derived_of(rregion, uct_dcx_rcache_region_t)->memh;
        return UCS_OK;
    }

    memh = ucs_malloc(sizeof(*memh), "dcx memh");
    if (memh == NULL) {
        uct_md_log_mem_reg_error(flags,
                                 "dcx md %s: cannot allocate a memory "
                                 "handle",
                                 md->name);
        return UCS_ERR_NO_MEMORY;
    }

    memh->flags = 0;
    status = uct_dcx_md_mr_reg(md, address, length, access, flags, &memh->mr);
    if (status != UCS_OK) {
        ucs_free(memh);
        return status;
    }

    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t uct_dcx_mem_dereg(uct_md_h uct_md,
                                      const uct_md_mem_dereg_params_t *params)
{
    uct_dcx_md_t *md = ucs_derived_of(uct_md, uct_dcx_md_t);
    uct_dcx_rcache_region_t *region;
    uct_dcx_memh_t *memh;
    unsigned flags;

    memh  = UCT_MD_MEM_DEREG_FIELD_VALUE(params, memh, FIELD_MEMH, NULL);
    flags = UCT_MD_MEM_DEREG_FIELD_VALUE(params, flags, FIELD_FLAGS, 0);

    if (memh == NULL) {
        ucs_error("dcx md %s: deregistration without a memory handle",
                  md->name);
        return UCS_ERR_INVALID_PARAM;
    }

    if (flags & UCT_MD_MEM_DEREG_FLAG_INVALIDATE) {
        /* a refusal of an unadvertised feature, not an error (as UCX's
         * memory domains do) */
        ucs_debug("dcx md %s: deregistration with invalidation is not "
                  "supported (UCT_MD_FLAG_INVALIDATE is not set)",
                  md->name);
        return UCS_ERR_UNSUPPORTED;
    }

    if (memh->flags & UCT_DCX_MEMH_FLAG_STRIDED) {
        return uct_dcx_md_strided_dereg(md, memh);
    }

    if (memh->flags & UCT_DCX_MEMH_FLAG_ALLOC) {
        ucs_error("dcx md %s: memh %p is of memory this md allocated: "
                  "release it with uct_md_mem_free()",
                  md->name, memh);
        return UCS_ERR_INVALID_PARAM;
    }

    if (memh->flags & UCT_DCX_MEMH_FLAG_RCACHE) {
        region = ucs_container_of(memh, uct_dcx_rcache_region_t, memh);
        ucs_rcache_region_put(md->rcache, &region->super);
        return UCS_OK;
    }

    uct_dcx_md_mr_dereg(md, memh->mr);
    ucs_free(memh);
    return UCS_OK;
}


/* ------------------------------------------------------------------------
 * MD query, lifetime
 * ------------------------------------------------------------------------ */

ucs_status_t uct_dcx_md_query(uct_md_h uct_md, uct_md_attr_t *attr)
{
    uct_dcx_md_t *md           = ucs_derived_of(uct_md, uct_dcx_md_t);
    const dcx_dev_caps_t *caps = dcx_dev_caps(md->dev);

    /* zero-copy operations need the lkey of a registration, remote access
     * the rkey */
    attr->cap.flags = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH |
                      UCT_MD_FLAG_NEED_RKEY;
    attr->cap.max_reg         = (caps->max_mr_size > SIZE_MAX) ? SIZE_MAX :
                                                                 caps->max_mr_size;
    /* without UCT_MD_FLAG_ALLOC nothing allocates through us (UCP picks
     * allocating MDs by the flag); the size is the largest buffer this MD
     * serves, as UCX's ib MD reports for the same NICs, which UCX's tests
     * size their transfers by */
    attr->cap.max_alloc       = attr->cap.max_reg;
    attr->cap.reg_mem_types   = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.alloc_mem_types = 0;
    if (caps->flags & DCX_CAP_SHM_PEERS) {
        /* SysV segments, which peers of such a device map (dcx_md_alloc.c);
         * one allocation is one registration */
        attr->cap.flags |= UCT_MD_FLAG_ALLOC | UCT_MD_FLAG_FIXED;
        attr->cap.alloc_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    }
    attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.detect_mem_types = 0;
    attr->rkey_packed_size     = UCT_DCX_PACKED_RKEY_SIZE;

    if (md->rcache != NULL) {
        attr->reg_cost = ucs_linear_func_make(md->rcache_overhead, 0);
    } else {
        attr->reg_cost = ucs_linear_func_make(md->reg_cost_overhead,
                                              md->reg_cost_growth);
    }

    /* a device model is equally near every CPU; hardware locality is not
     * known to the device layer */
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}

/* Operations the MD's flags do not promise.  UCX calls MD operations
 * without NULL checks, so each one answers. */
static ucs_status_t uct_dcx_mem_advise(uct_md_h uct_md, uct_mem_h memh,
                                       void *addr, size_t length,
                                       unsigned advice)
{
    ucs_debug("dcx md %s: memory advice is not supported",
              ucs_derived_of(uct_md, uct_dcx_md_t)->name);
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t uct_dcx_mem_query(uct_md_h uct_md, const void *address,
                               size_t length, uct_md_mem_attr_t *mem_attr)
{
    ucs_debug("dcx md %s: memory type detection is not supported",
              ucs_derived_of(uct_md, uct_dcx_md_t)->name);
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t uct_dcx_detect_memory_type(uct_md_h uct_md,
                                               const void *address,
                                               size_t length,
                                               ucs_memory_type_t *mem_type_p)
{
    ucs_debug("dcx md %s: memory type detection is not supported",
              ucs_derived_of(uct_md, uct_dcx_md_t)->name);
    return UCS_ERR_UNSUPPORTED;
}

/* UCX's memory hooks call this before memory is unmapped or remapped: a
 * device that does not pin registered pages must stop touching them before
 * the mapping changes (see dcx_dev_mem_unmapped). */
static void uct_dcx_md_unmapped_cb(ucm_event_type_t event_type,
                                   ucm_event_t *event, void *arg)
{
    uct_dcx_md_t *md = arg;

    dcx_dev_mem_unmapped(md->dev, event->vm_unmapped.address,
                         event->vm_unmapped.size);
}

static void uct_dcx_md_unmap_hook_init(uct_dcx_md_t *md)
{
    ucs_status_t status;

    md->unmap_hook = 0;
    if (!(dcx_dev_caps(md->dev)->flags & DCX_CAP_NO_PIN)) {
        return;
    }
    status = ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, 1000,
                                   uct_dcx_md_unmapped_cb, md);
    if (status != UCS_OK) {
        /* the device's fault-safe copies still keep the process safe; a
         * region remapped at the same address cannot be told apart */
        ucs_diag("dcx md %s: no memory unmap events (%s): the device cannot "
                 "tell memory remapped under a registration",
                 md->name, ucs_status_string(status));
        return;
    }
    md->unmap_hook = 1;
    dcx_dev_unmaps_reported(md->dev);
}

static void uct_dcx_md_close(uct_md_h uct_md)
{
    uct_dcx_md_t *md = ucs_derived_of(uct_md, uct_dcx_md_t);
    int ret;

    uct_dcx_md_strided_cleanup(md);

    if (md->rcache != NULL) {
        ucs_rcache_destroy(md->rcache);
    }

    if (md->unmap_hook) {
        ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, uct_dcx_md_unmapped_cb,
                                md);
    }

    ret = dcx_pd_free(md->pd);
    if (ret != 0) {
        ucs_warn("dcx md %s: freeing the protection domain failed: %s "
                 "(memory still registered?)",
                 md->name, strerror(ret));
    }

    dcx_dev_close(md->dev);
    ucs_debug("dcx md %s: closed", md->name);
    ucs_free(md);
}

static uct_md_ops_t uct_dcx_md_ops = {
    .close                                      = uct_dcx_md_close,
    .query                                      = UCT_DCX_MD_OP_QUERY,
    .mem_alloc                                  = UCT_DCX_MD_OP_MEM_ALLOC,
    .mem_free                                   = uct_dcx_mem_free,
    .mem_advise                                 = uct_dcx_mem_advise,
    .mem_reg                                    = UCT_DCX_MD_OP_MEM_REG,
    .mem_dereg                                  = uct_dcx_mem_dereg,
    .mem_query                                  = UCT_DCX_MD_OP_MEM_QUERY,
    .mkey_pack                                  = UCT_DCX_MD_OP_MKEY_PACK,
    UCT_DCX_MD_OPS_VERSIONED.detect_memory_type = uct_dcx_detect_memory_type};

static ucs_status_t uct_dcx_md_rcache_init(uct_dcx_md_t *md,
                                           const uct_dcx_md_config_t *config)
{
    ucs_rcache_params_t params;
    ucs_status_t status;

    md->rcache = NULL;
    if (config->rcache_enable == UCS_NO) {
        ucs_debug("dcx md %s: registration cache disabled", md->name);
        return UCS_OK;
    }

    uct_dcx_rcache_params_init(&params, &config->rcache);
    params.region_struct_size = sizeof(uct_dcx_rcache_region_t);
    params.ucm_events         = UCM_EVENT_VM_UNMAPPED;
    params.context            = md;
    params.ops                = &uct_dcx_rcache_ops;

    status = ucs_rcache_create(&params, md->name, ucs_stats_get_root(),
                               &md->rcache);
    if (status == UCS_OK) {
        md->rcache_overhead = uct_dcx_rcache_overhead(&config->rcache);
        return UCS_OK;
    }

    md->rcache = NULL;
    if (config->rcache_enable == UCS_YES) {
        ucs_error("dcx md %s: cannot create the registration cache: %s "
                  "(UCX_DCX_RCACHE=yes)",
                  md->name, ucs_status_string(status));
        return status;
    }

    ucs_debug("dcx md %s: registration cache unavailable (%s), registering "
              "directly",
              md->name, ucs_status_string(status));
    return UCS_OK;
}

ucs_status_t uct_dcx_md_open(uct_component_t *component, const char *md_name,
                             const uct_md_config_t *uct_config, uct_md_h *md_p)
{
    const uct_dcx_md_config_t *config = ucs_derived_of(uct_config,
                                                       uct_dcx_md_config_t);
    dcx_dev_info_t *list;
    unsigned i, count;
    uct_dcx_md_t *md;
    ucs_status_t status;
    int ret;

    status = uct_dcx_md_dev_list(config, &list, &count);
    if (status != UCS_OK) {
        return status;
    }

    for (i = 0; i < count; ++i) {
        if (!strcmp(list[i].name, md_name)) {
            break;
        }
    }

    if (i == count) {
        ucs_error("dcx: no device '%s' (%u device(s) configured by the "
                  "backends' UCX_DCX_ variables, see ucx_info -c)",
                  md_name, count);
        status = UCS_ERR_NO_DEVICE;
        goto out_free_list;
    }

    md = ucs_calloc(1, sizeof(*md), "dcx md");
    if (md == NULL) {
        ucs_error("dcx: cannot allocate md %s", md_name);
        status = UCS_ERR_NO_MEMORY;
        goto out_free_list;
    }

    md->super.ops       = &uct_dcx_md_ops;
    md->super.component = component;
    md->info            = list[i];
    ucs_list_head_init(&md->dereg_cbs);
    ucs_strncpy_zero(md->name, md_name, sizeof(md->name));

    ret = dcx_dev_open(&md->info, &md->dev);
    if (ret != 0) {
        status = uct_dcx_status_from_errno(ret);
        ucs_debug("dcx md %s: cannot open the device: %s", md_name,
                  strerror(ret));
        goto err_free_md;
    }

    ret = dcx_pd_alloc(md->dev, &md->pd);
    if (ret != 0) {
        status = uct_dcx_status_from_errno(ret);
        ucs_debug("dcx md %s: cannot allocate a protection domain: %s", md_name,
                  strerror(ret));
        goto err_close_dev;
    }

    md->reg_cost_overhead = dcx_dev_caps(md->dev)->reg_overhead_ns / 1e9;
    md->reg_cost_growth   = dcx_dev_caps(md->dev)->reg_growth_ns / 1e9;

    uct_dcx_md_unmap_hook_init(md);
    uct_dcx_md_strided_init(md);

    status = uct_dcx_md_rcache_init(md, config);
    if (status != UCS_OK) {
        goto err_unset_hook;
    }

    ucs_debug("dcx md %s: opened (%s backend, registration cache %s)", md_name,
              md->info.backend->name, (md->rcache != NULL) ? "on" : "off");
    *md_p = &md->super;
    dcx_dev_list_free(list);
    return UCS_OK;

err_unset_hook:
    uct_dcx_md_strided_cleanup(md);
    if (md->unmap_hook) {
        ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, uct_dcx_md_unmapped_cb,
                                md);
    }
    dcx_pd_free(md->pd);
err_close_dev:
    dcx_dev_close(md->dev);
err_free_md:
    ucs_free(md);
out_free_list:
    dcx_dev_list_free(list);
    return status;
}
