/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Adapters between the operations dcx implements and the forms in which
 * each supported UCX calls them (see dcx_compat.h).  Every #if tests a
 * DCX_UCX_HAVE_* feature macro from configure.
 */
#include "dcx.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucs/time/time.h>

#include <string.h>


/* ------------------------------------------------------------------------
 * Configuration, memory pools, registration cache
 * ------------------------------------------------------------------------ */

ucs_status_t uct_dcx_md_config_fill(uct_component_t *component, void *opts)
{
#if DCX_UCX_HAVE_CONFIG_FILL_ENTRY
    return ucs_config_parser_fill_opts(opts, &component->md_config,
                                       UCS_DEFAULT_ENV_PREFIX, 0);
#else
    return ucs_config_parser_fill_opts(opts, component->md_config.table,
                                       UCS_DEFAULT_ENV_PREFIX,
                                       component->md_config.prefix, 0);
#endif
}

ucs_status_t uct_dcx_mpool_init(ucs_mpool_t *mp, size_t priv_size,
                                size_t elem_size, size_t align_offset,
                                size_t alignment, unsigned elems_per_chunk,
                                unsigned max_elems, ucs_mpool_ops_t *ops,
                                const char *name)
{
#if DCX_UCX_HAVE_MPOOL_PARAMS
    ucs_mpool_params_t params;

    ucs_mpool_params_reset(&params);
    params.priv_size       = priv_size;
    params.elem_size       = elem_size;
    params.align_offset    = align_offset;
    params.alignment       = alignment;
    params.elems_per_chunk = elems_per_chunk;
    params.max_elems       = max_elems;
    params.ops             = ops;
    params.name            = name;
    return ucs_mpool_init(&params, mp);
#else
    return ucs_mpool_init(mp, priv_size, elem_size, align_offset, alignment,
                          elems_per_chunk, max_elems, ops, name);
#endif
}

void uct_dcx_rcache_params_init(ucs_rcache_params_t *params,
                                const uct_dcx_rcache_config_t *config)
{
#if DCX_UCX_HAVE_UCS_RCACHE_CONFIG
    /* the alignment is given with each lookup (uct_dcx_rcache_get) */
    ucs_rcache_set_params(params, config);
#else
    uct_md_set_rcache_params(params, config);
    params->max_alignment = ucs_get_page_size();
#endif
}

double uct_dcx_rcache_overhead(const uct_dcx_rcache_config_t *config)
{
#if DCX_UCX_HAVE_UCS_RCACHE_CONFIG
    /* "auto": a hash-and-tree lookup in the page table, a few hundred ns */
    return (config->overhead == UCS_TIME_AUTO) ?
               200e-9 :
               ucs_time_to_sec(config->overhead);
#else
    return uct_md_rcache_overhead(config);
#endif
}

ucs_status_t uct_dcx_rcache_get(ucs_rcache_t *rcache, void *address,
                                size_t length, int prot, void *arg,
                                ucs_rcache_region_t **region_p)
{
#if DCX_UCX_HAVE_RCACHE_GET_ALIGNMENT
    return ucs_rcache_get(rcache, address, length, ucs_get_page_size(), prot,
                          arg, region_p);
#else
    return ucs_rcache_get(rcache, address, length, prot, arg, region_p);
#endif
}

#if DCX_UCX_HAVE_RCACHE_OPS_MERGE
void uct_dcx_rcache_merge(void *context, ucs_rcache_t *rcache, void *arg,
                          ucs_rcache_region_t *region)
{
}
#endif


/* ------------------------------------------------------------------------
 * Memory domain and component operations
 * ------------------------------------------------------------------------ */

#if DCX_UCX_HAVE_MD_QUERY_V2
ucs_status_t uct_dcx_md_query_v2(uct_md_h uct_md, uct_md_attr_v2_t *attr)
{
    uct_md_attr_t v1;
    ucs_status_t status;

    memset(&v1, 0, sizeof(v1));
    status = uct_dcx_md_query(uct_md, &v1);
    if (status != UCS_OK) {
        return status;
    }

    /* what the v2 attributes add (non-blocking and cached registration,
     * dma-buf, exported keys, ...) dcx does not offer */
    uct_md_base_md_query(attr);
    attr->flags            = v1.cap.flags;
    attr->max_alloc        = v1.cap.max_alloc;
    attr->max_reg          = v1.cap.max_reg;
    attr->reg_mem_types    = v1.cap.reg_mem_types;
    /* UCP may keep registrations of those types in its own cache, as
     * older UCP does for every memory domain */
    attr->cache_mem_types  = v1.cap.reg_mem_types;
    attr->alloc_mem_types  = v1.cap.alloc_mem_types;
    attr->access_mem_types = v1.cap.access_mem_types;
    attr->detect_mem_types = v1.cap.detect_mem_types;
    attr->reg_cost         = v1.reg_cost;
    attr->rkey_packed_size = v1.rkey_packed_size;
    attr->local_cpus       = v1.local_cpus;
    return UCS_OK;
}
#endif

#if DCX_UCX_HAVE_MEM_ALLOC_SYS_DEV
ucs_status_t uct_dcx_mem_alloc_sys_dev(uct_md_h uct_md, size_t *length_p,
                                       void **address_p,
                                       ucs_memory_type_t mem_type,
                                       ucs_sys_device_t sys_dev, unsigned flags,
                                       const char *alloc_name,
                                       uct_mem_h *memh_p)
{
    return uct_dcx_mem_alloc(uct_md, length_p, address_p, mem_type, flags,
                             alloc_name, memh_p);
}
#endif

#if DCX_UCX_HAVE_MEM_REG_PARAMS
ucs_status_t uct_dcx_mem_reg_v2(uct_md_h uct_md, void *address, size_t length,
                                const uct_md_mem_reg_params_t *params,
                                uct_mem_h *memh_p)
{
    uint64_t flags = UCT_MD_MEM_REG_FIELD_VALUE(params, flags, FIELD_FLAGS, 0);

    if (flags > UINT_MAX) {
        ucs_error("dcx: registration flags 0x%" PRIx64 " are not supported",
                  flags);
        return UCS_ERR_UNSUPPORTED;
    }

    return uct_dcx_mem_reg(uct_md, address, length, (unsigned)flags, memh_p);
}
#endif

#if DCX_UCX_HAVE_MEM_QUERY_V2
ucs_status_t uct_dcx_mem_query_v2(uct_md_h uct_md, const void *address,
                                  size_t length, uct_md_mem_attr_v2_t *mem_attr)
{
    static const uint64_t v1_fields = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE |
                                      UCT_MD_MEM_ATTR_FIELD_SYS_DEV |
                                      UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS |
                                      UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH |
                                      UCT_MD_MEM_ATTR_FIELD_DMABUF_FD |
                                      UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET;
    uct_md_mem_attr_t v1;
    ucs_status_t status;

    if (mem_attr->field_mask & ~v1_fields) {
        ucs_debug("dcx: memory attributes 0x%" PRIx64 " are not supported",
                  mem_attr->field_mask & ~v1_fields);
        return UCS_ERR_UNSUPPORTED;
    }

    memset(&v1, 0, sizeof(v1));
    v1.field_mask = mem_attr->field_mask;
    status        = uct_dcx_mem_query(uct_md, address, length, &v1);
    if (status != UCS_OK) {
        return status;
    }

    mem_attr->mem_type      = v1.mem_type;
    mem_attr->sys_dev       = v1.sys_dev;
    mem_attr->base_address  = v1.base_address;
    mem_attr->alloc_length  = v1.alloc_length;
    mem_attr->dmabuf_fd     = v1.dmabuf_fd;
    mem_attr->dmabuf_offset = v1.dmabuf_offset;
    return UCS_OK;
}
#endif

#if DCX_UCX_HAVE_MKEY_PACK_ADDRESS
ucs_status_t uct_dcx_mkey_pack_v2(uct_md_h uct_md, uct_mem_h uct_memh,
                                  void *address, size_t length,
                                  const uct_md_mkey_pack_params_t *params,
                                  void *rkey_buffer)
{
    /* the key covers the whole registration, whatever part is packed */
    return uct_dcx_mkey_pack(uct_md, uct_memh, params, rkey_buffer);
}
#endif

#if DCX_UCX_HAVE_MD_MEM_ATTACH
ucs_status_t uct_dcx_mem_attach(uct_md_h uct_md, const void *mkey_buffer,
                                uct_md_mem_attach_params_t *params,
                                uct_mem_h *memh_p)
{
    ucs_debug("dcx md %s: attaching an exported key is not supported "
              "(UCT_MD_FLAG_EXPORTED_MKEY is not set)",
              ucs_derived_of(uct_md, uct_dcx_md_t)->name);
    return UCS_ERR_UNSUPPORTED;
}
#elif DCX_UCX_HAVE_MD_SOCKADDR_ACCESSIBLE
int uct_dcx_is_sockaddr_accessible(uct_md_h uct_md,
                                   const ucs_sock_addr_t *sockaddr,
                                   uct_sockaddr_accessibility_t mode)
{
    return 0;
}
#endif

#if DCX_UCX_HAVE_RKEY_UNPACK_PARAMS
ucs_status_t uct_dcx_rkey_unpack_v2(uct_component_t *component,
                                    const void *rkey_buffer,
                                    const uct_rkey_unpack_params_t *params,
                                    uct_rkey_t *rkey_p, void **handle_p)
{
    /* a dcx rkey means the same on every system device */
    return uct_dcx_rkey_unpack(component, rkey_buffer, rkey_p, handle_p);
}
#endif


/* ------------------------------------------------------------------------
 * Interface internal operations
 * ------------------------------------------------------------------------ */

#if DCX_UCX_HAVE_IFACE_IS_REACHABLE_V2
/* Why the peer's addresses are unusable here, or NULL if they are usable.
 * The same checks as the interface's uct_iface_is_reachable(). */
static const char *
uct_dcx_iface_unreachable_reason(uct_dcx_iface_t *iface,
                                 const uct_dcx_dev_addr_t *daddr,
                                 const uct_dcx_iface_addr_t *iaddr, char *buf,
                                 size_t max)
{
    if (daddr == NULL) {
        return "no device address";
    }

    if (daddr->len != iface->config.port_len) {
        ucs_snprintf_zero(buf, max, "port address of %u bytes, %s uses %u",
                          daddr->len, dcx_dev_name(iface->dev),
                          iface->config.port_len);
        return buf;
    }

    /* what endpoint creation checks (fabric, user, host, link layer): a
     * peer that fails it must not be offered, so that UCP picks another
     * transport for it */
    if (dcx_dev_addr_check(iface->dev, daddr->port, daddr->len, buf, max) !=
        0) {
        return buf;
    }

    if (iaddr == NULL) {
        return NULL; /* a device address alone: the port is usable */
    }

    if ((iaddr->magic != UCT_DCX_ADDR_MAGIC) ||
        (iaddr->version != UCT_DCX_ADDR_VERSION)) {
        ucs_snprintf_zero(buf, max,
                          "not a dcx v%u interface address "
                          "(magic 0x%x version %u)",
                          UCT_DCX_ADDR_VERSION, iaddr->magic, iaddr->version);
        return buf;
    }

    return NULL;
}

int uct_dcx_iface_is_reachable_v2(const uct_iface_h tl_iface,
                                  const uct_iface_is_reachable_params_t *params)
{
    uct_dcx_iface_t *iface = ucs_derived_of(tl_iface, uct_dcx_iface_t);
    const uct_dcx_iface_addr_t *iaddr = NULL;
    const char *reason;
    char buf[192];

    if (!uct_iface_is_reachable_params_valid(
            params, UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR)) {
        return 0;
    }

    if (params->field_mask & UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR) {
        iaddr = (const uct_dcx_iface_addr_t *)params->iface_addr;
        if (iaddr == NULL) {
            uct_iface_fill_info_str_buf(params, "no interface address");
            return 0;
        }
    }

    reason = uct_dcx_iface_unreachable_reason(iface,
                                              (const uct_dcx_dev_addr_t *)
                                                  params->device_addr,
                                              iaddr, buf, sizeof(buf));
    if (reason != NULL) {
        ucs_debug("dcx: %s: unreachable: %s", dcx_dev_name(iface->dev), reason);
        uct_iface_fill_info_str_buf(params, "%s", reason);
        return 0;
    }

    /* device scope: the same soft device or port */
    return uct_iface_scope_is_reachable(tl_iface, params);
}
#endif

#if DCX_UCX_HAVE_EP_IS_CONNECTED
/* The address handle the interface holds for a peer port, or NULL. */
static dcx_ah_t *uct_dcx_iface_find_ah(uct_dcx_iface_t *iface,
                                       const uct_dcx_dev_addr_t *daddr)
{
    unsigned i;

    for (i = 0; i < iface->num_peers; ++i) {
        if ((iface->peers[i].len == daddr->len) &&
            !memcmp(iface->peers[i].addr, daddr->port, daddr->len)) {
            return iface->peers[i].ah;
        }
    }

    return NULL;
}

int uct_dcx_ep_is_connected(const uct_ep_h tl_ep,
                            const uct_ep_is_connected_params_t *params)
{
    uct_dcx_ep_t *ep       = ucs_derived_of(tl_ep, uct_dcx_ep_t);
    uct_dcx_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_dcx_iface_t);
    const uct_dcx_dev_addr_t *daddr;
    const uct_dcx_iface_addr_t *iaddr;
    uint32_t dctn;

    if (!ucs_test_all_flags(params->field_mask,
                            UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR |
                                UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR) ||
        (params->device_addr == NULL) || (params->iface_addr == NULL)) {
        ucs_error("dcx: %s: ep_is_connected needs a device and an interface "
                  "address (field_mask 0x%" PRIx64 ")",
                  dcx_dev_name(iface->dev), params->field_mask);
        return 0;
    }

    daddr = (const uct_dcx_dev_addr_t *)params->device_addr;
    iaddr = (const uct_dcx_iface_addr_t *)params->iface_addr;
    if ((iaddr->magic != UCT_DCX_ADDR_MAGIC) ||
        (iaddr->version != UCT_DCX_ADDR_VERSION) ||
        (daddr->len != iface->config.port_len)) {
        return 0;
    }

    dctn = iaddr->dctn[0] | ((uint32_t)iaddr->dctn[1] << 8) |
           ((uint32_t)iaddr->dctn[2] << 16);
    return (dctn == ep->dctn) &&
           (uct_dcx_iface_find_ah(iface, daddr) == ep->ah);
}
#endif

#if DCX_UCX_HAVE_EP_INVALIDATE_PARAMS
ucs_status_t uct_dcx_ep_invalidate_v2(uct_ep_h tl_ep,
                                      const uct_ep_invalidate_params_t *params)
{
    uct_dcx_iface_t *iface = ucs_derived_of(tl_ep->iface, uct_dcx_iface_t);

    /* no field is defined: NULL (as UCX's own callers pass) or an empty
     * mask */
    if ((params != NULL) && (params->field_mask != 0)) {
        ucs_error("dcx: %s: ep_invalidate: parameter fields 0x%" PRIx64
                  " not supported (none is defined)",
                  dcx_dev_name(iface->dev), params->field_mask);
        return UCS_ERR_INVALID_PARAM;
    }

    return uct_dcx_ep_invalidate(tl_ep, 0);
}
#endif
