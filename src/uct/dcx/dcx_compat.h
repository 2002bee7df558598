/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What differs between the UCX versions dcx builds against (1.13 to 1.23),
 * behind one set of names.
 *
 * Every choice here follows a feature test that configure ran against the
 * headers of the UCX being built for (config/m4/ucx.m4); the results are
 * the DCX_UCX_HAVE_* macros of the generated ucx_build_config.h, which is
 * force-included before any UCX header.  No choice depends on a version
 * number.
 *
 * The transport keeps its operations in the form of the oldest UCX
 * (uct_md_attr_t queries, flag-word registrations, ...); where a newer UCX
 * changed an operation's signature, dcx_compat.c adapts the call, and the
 * UCT_DCX_MD_OP_* names below pick the function the ops tables point at.
 */
#ifndef UCT_DCX_COMPAT_H_
#define UCT_DCX_COMPAT_H_

#ifndef DCX_UCX_FEATURES_TESTED
#error "compile with the ucx_build_config.h that dcx's configure generates"
#endif

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/config/parser.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/memory/rcache.h>
#if DCX_UCX_HAVE_PTR_ARITH_H
#include <ucs/sys/ptr_arith.h> /* ucs_align_up() and friends moved here */
#endif


/* UCX's "not supported" stub as an operation of type _type.  The cast goes
 * through the generic function type: newer UCX declares the stub with a
 * prototype, and a direct cast then draws -Wcast-function-type. */
#define UCT_DCX_OP_UNSUPPORTED(_type) \
    ((_type)(void (*)(void))ucs_empty_function_return_unsupported)


/* ------------------------------------------------------------------------
 * Configuration, memory pools, registration cache
 * ------------------------------------------------------------------------ */

/* Fills an MD configuration of the component from the environment. */
ucs_status_t uct_dcx_md_config_fill(uct_component_t *component, void *opts);

ucs_status_t uct_dcx_mpool_init(ucs_mpool_t *mp, size_t priv_size,
                                size_t elem_size, size_t align_offset,
                                size_t alignment, unsigned elems_per_chunk,
                                unsigned max_elems, ucs_mpool_ops_t *ops,
                                const char *name);

#if DCX_UCX_HAVE_UCS_RCACHE_CONFIG
typedef ucs_rcache_config_t uct_dcx_rcache_config_t;
#define UCT_DCX_RCACHE_CONFIG_TABLE ucs_config_rcache_table
#else
typedef uct_md_rcache_config_t uct_dcx_rcache_config_t;
#define UCT_DCX_RCACHE_CONFIG_TABLE uct_md_config_rcache_table
#endif

/* Registration cache parameters from its configuration (regions aligned
 * to pages at most). */
void uct_dcx_rcache_params_init(ucs_rcache_params_t *params,
                                const uct_dcx_rcache_config_t *config);

/* Estimated cost of one cache lookup, in seconds. */
double uct_dcx_rcache_overhead(const uct_dcx_rcache_config_t *config);

ucs_status_t uct_dcx_rcache_get(ucs_rcache_t *rcache, void *address,
                                size_t length, int prot, void *arg,
                                ucs_rcache_region_t **region_p);

/* Newer UCX calls a merge operation, without checking for NULL, when a
 * new region swallows cached ones; a dcx region holds nothing to carry
 * over (the swallowed regions are deregistered as usual).  Written first
 * in the registration cache's ops table. */
#if DCX_UCX_HAVE_RCACHE_OPS_MERGE
void uct_dcx_rcache_merge(void *context, ucs_rcache_t *rcache, void *arg,
                          ucs_rcache_region_t *region);
#define UCT_DCX_RCACHE_OPS_VERSIONED .merge = uct_dcx_rcache_merge,
#else
#define UCT_DCX_RCACHE_OPS_VERSIONED
#endif


/* ------------------------------------------------------------------------
 * Memory domain and component operations
 * ------------------------------------------------------------------------ */

/* Packing flags that ask for an rkey that can be invalidated */
#if DCX_UCX_HAVE_MKEY_PACK_FLAG_INVALIDATE_RMA
#define UCT_DCX_MKEY_PACK_FLAGS_INVALIDATE  \
    (UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA | \
     UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO)
#else
#define UCT_DCX_MKEY_PACK_FLAGS_INVALIDATE UCT_MD_MKEY_PACK_FLAG_INVALIDATE
#endif

/* The MD operations in their oldest form, implemented in dcx_md.c */
ucs_status_t uct_dcx_md_query(uct_md_h uct_md, uct_md_attr_t *attr);
ucs_status_t uct_dcx_mem_alloc(uct_md_h uct_md, size_t *length_p,
                               void **address_p, ucs_memory_type_t mem_type,
                               unsigned flags, const char *alloc_name,
                               uct_mem_h *memh_p);
ucs_status_t uct_dcx_mem_reg(uct_md_h uct_md, void *address, size_t length,
                             unsigned flags, uct_mem_h *memh_p);
ucs_status_t uct_dcx_mem_query(uct_md_h uct_md, const void *address,
                               size_t length, uct_md_mem_attr_t *mem_attr);
ucs_status_t uct_dcx_mkey_pack(uct_md_h uct_md, uct_mem_h uct_memh,
                               const uct_md_mkey_pack_params_t *params,
                               void *rkey_buffer);
ucs_status_t uct_dcx_rkey_unpack(uct_component_t *component,
                                 const void *rkey_buffer, uct_rkey_t *rkey_p,
                                 void **handle_p);

/* What the ops tables point at, in the form this UCX calls */
#if DCX_UCX_HAVE_MD_QUERY_V2
ucs_status_t uct_dcx_md_query_v2(uct_md_h uct_md, uct_md_attr_v2_t *attr);
#define UCT_DCX_MD_OP_QUERY uct_dcx_md_query_v2
#else
#define UCT_DCX_MD_OP_QUERY uct_dcx_md_query
#endif

#if DCX_UCX_HAVE_MEM_ALLOC_SYS_DEV
ucs_status_t uct_dcx_mem_alloc_sys_dev(uct_md_h uct_md, size_t *length_p,
                                       void **address_p,
                                       ucs_memory_type_t mem_type,
                                       ucs_sys_device_t sys_dev, unsigned flags,
                                       const char *alloc_name,
                                       uct_mem_h *memh_p);
#define UCT_DCX_MD_OP_MEM_ALLOC uct_dcx_mem_alloc_sys_dev
#else
#define UCT_DCX_MD_OP_MEM_ALLOC uct_dcx_mem_alloc
#endif

#if DCX_UCX_HAVE_MEM_REG_PARAMS
ucs_status_t uct_dcx_mem_reg_v2(uct_md_h uct_md, void *address, size_t length,
                                const uct_md_mem_reg_params_t *params,
                                uct_mem_h *memh_p);
#define UCT_DCX_MD_OP_MEM_REG uct_dcx_mem_reg_v2
#else
#define UCT_DCX_MD_OP_MEM_REG uct_dcx_mem_reg
#endif

#if DCX_UCX_HAVE_MEM_QUERY_V2
ucs_status_t uct_dcx_mem_query_v2(uct_md_h uct_md, const void *address,
                                  size_t length,
                                  uct_md_mem_attr_v2_t *mem_attr);
#define UCT_DCX_MD_OP_MEM_QUERY uct_dcx_mem_query_v2
#else
#define UCT_DCX_MD_OP_MEM_QUERY uct_dcx_mem_query
#endif

#if DCX_UCX_HAVE_MKEY_PACK_ADDRESS
ucs_status_t uct_dcx_mkey_pack_v2(uct_md_h uct_md, uct_mem_h uct_memh,
                                  void *address, size_t length,
                                  const uct_md_mkey_pack_params_t *params,
                                  void *rkey_buffer);
#define UCT_DCX_MD_OP_MKEY_PACK uct_dcx_mkey_pack_v2
#else
#define UCT_DCX_MD_OP_MKEY_PACK uct_dcx_mkey_pack
#endif

/* The MD operation that one UCX has and another has not: attaching an
 * exported key (newer; dcx exports none) or the sockaddr check (older;
 * dcx is no sockaddr transport). */
#if DCX_UCX_HAVE_MD_MEM_ATTACH
ucs_status_t uct_dcx_mem_attach(uct_md_h uct_md, const void *mkey_buffer,
                                uct_md_mem_attach_params_t *params,
                                uct_mem_h *memh_p);
#define UCT_DCX_MD_OPS_VERSIONED .mem_attach = uct_dcx_mem_attach,
#elif DCX_UCX_HAVE_MD_SOCKADDR_ACCESSIBLE
int uct_dcx_is_sockaddr_accessible(uct_md_h uct_md,
                                   const ucs_sock_addr_t *sockaddr,
                                   uct_sockaddr_accessibility_t mode);
#define UCT_DCX_MD_OPS_VERSIONED \
    .is_sockaddr_accessible = uct_dcx_is_sockaddr_accessible,
#else
#define UCT_DCX_MD_OPS_VERSIONED
#endif

#if DCX_UCX_HAVE_RKEY_UNPACK_PARAMS
ucs_status_t uct_dcx_rkey_unpack_v2(uct_component_t *component,
                                    const void *rkey_buffer,
                                    const uct_rkey_unpack_params_t *params,
                                    uct_rkey_t *rkey_p, void **handle_p);
#define UCT_DCX_COMPONENT_OP_RKEY_UNPACK uct_dcx_rkey_unpack_v2
#else
#define UCT_DCX_COMPONENT_OP_RKEY_UNPACK uct_dcx_rkey_unpack
#endif

/* Component members only newer UCX has: an rkey is its 32-bit key, so two
 * rkeys compare as numbers. */
#if DCX_UCX_HAVE_RKEY_COMPARE
#define UCT_DCX_COMPONENT_OPS_VERSIONED .rkey_compare = uct_base_rkey_compare,
#else
#define UCT_DCX_COMPONENT_OPS_VERSIONED
#endif


/* ------------------------------------------------------------------------
 * Interface internal operations
 * ------------------------------------------------------------------------ */

/* The internal operations a newer UCX calls without checking for NULL.
 * Written first in uct_dcx_iface_internal_ops; each is there only when
 * the UCX has it. */
#if DCX_UCX_HAVE_IFACE_IS_REACHABLE_V2
int uct_dcx_iface_is_reachable_v2(const uct_iface_h tl_iface,
                                  const uct_iface_is_reachable_params_t *params);
#define UCT_DCX_IOPS_IS_REACHABLE_V2 \
    .iface_is_reachable_v2 = uct_dcx_iface_is_reachable_v2,
#else
#define UCT_DCX_IOPS_IS_REACHABLE_V2
#endif

#if DCX_UCX_HAVE_EP_IS_CONNECTED
int uct_dcx_ep_is_connected(const uct_ep_h tl_ep,
                            const uct_ep_is_connected_params_t *params);
#define UCT_DCX_IOPS_EP_IS_CONNECTED .ep_is_connected = uct_dcx_ep_is_connected,
#else
#define UCT_DCX_IOPS_EP_IS_CONNECTED
#endif

/* Endpoint invalidation (dcx_ep_invalidate.c): the internal operation
 * takes a flags word, or from UCX 1.23 on a parameter struct (public there
 * as uct_ep_invalidate(), whose callers may pass NULL). */
#if DCX_UCX_HAVE_EP_INVALIDATE_PARAMS
ucs_status_t uct_dcx_ep_invalidate_v2(uct_ep_h tl_ep,
                                      const uct_ep_invalidate_params_t *params);
#define UCT_DCX_EP_OP_INVALIDATE uct_dcx_ep_invalidate_v2
#else
#define UCT_DCX_EP_OP_INVALIDATE uct_dcx_ep_invalidate
#endif

/* DC connects to interfaces, never endpoint to endpoint */
#if DCX_UCX_HAVE_EP_CONNECT_TO_EP_V2
#define UCT_DCX_IOPS_CONNECT_TO_EP_V2 \
    .ep_connect_to_ep_v2 =            \
        UCT_DCX_OP_UNSUPPORTED(uct_ep_connect_to_ep_v2_func_t),
#else
#define UCT_DCX_IOPS_CONNECT_TO_EP_V2
#endif

/* Scatter-gather put/get (dcx_sgl.c) where the UCX has them with
 * per-element counts and strides; the v2 query then reports them.  Where
 * it has the operations in another form, the v2 query reports none. */
#if DCX_UCX_HAVE_SGL_ZCOPY
ucs_status_t uct_dcx_iface_query_v2(uct_iface_h tl_iface,
                                    uct_iface_attr_v2_t *attr);
ucs_status_t
uct_dcx_ep_put_sgl_zcopy(uct_ep_h tl_ep, void *const *buffers,
                         const size_t *lengths, uct_mem_h const *memhs,
                         const uint64_t *remote_addrs, uct_rkey_t const *rkeys,
                         const size_t *counts, const size_t *strides,
                         size_t count, uct_completion_t *comp);
ucs_status_t
uct_dcx_ep_get_sgl_zcopy(uct_ep_h tl_ep, void *const *buffers,
                         const size_t *lengths, uct_mem_h const *memhs,
                         const uint64_t *remote_addrs, uct_rkey_t const *rkeys,
                         const size_t *counts, const size_t *strides,
                         size_t count, uct_completion_t *comp);
#define UCT_DCX_IOPS_QUERY_V2 .iface_query_v2 = uct_dcx_iface_query_v2,
#define UCT_DCX_IOPS_SGL_ZCOPY                    \
    .ep_put_sgl_zcopy = uct_dcx_ep_put_sgl_zcopy, \
    .ep_get_sgl_zcopy = uct_dcx_ep_get_sgl_zcopy,
#elif DCX_UCX_HAVE_IFACE_QUERY_V2
#define UCT_DCX_IOPS_QUERY_V2 .iface_query_v2 = uct_iface_base_query_v2,
#else
#define UCT_DCX_IOPS_QUERY_V2
#endif

#if DCX_UCX_HAVE_SGL_ZCOPY
/* UCT_DCX_IOPS_SGL_ZCOPY is defined above */
#elif DCX_UCX_HAVE_EP_SGL_ZCOPY
#define UCT_DCX_IOPS_SGL_ZCOPY                                               \
    .ep_put_sgl_zcopy = UCT_DCX_OP_UNSUPPORTED(uct_ep_put_sgl_zcopy_func_t), \
    .ep_get_sgl_zcopy = UCT_DCX_OP_UNSUPPORTED(uct_ep_get_sgl_zcopy_func_t),
#else
#define UCT_DCX_IOPS_SGL_ZCOPY
#endif

/* GPU-initiated operations: dcx has no device endpoint */
#if DCX_UCX_HAVE_EP_GET_DEVICE_EP
#define UCT_DCX_IOPS_DEVICE_EP \
    .ep_get_device_ep = UCT_DCX_OP_UNSUPPORTED(uct_ep_get_device_ep_func_t),
#else
#define UCT_DCX_IOPS_DEVICE_EP
#endif

#if DCX_UCX_HAVE_EP_OUTSTANDING_PURGE
#define UCT_DCX_IOPS_OUTSTANDING_PURGE \
    .ep_outstanding_purge =            \
        UCT_DCX_OP_UNSUPPORTED(uct_ep_outstanding_purge_func_t),
#else
#define UCT_DCX_IOPS_OUTSTANDING_PURGE
#endif

#define UCT_DCX_IFACE_INTERNAL_OPS_VERSIONED \
    UCT_DCX_IOPS_IS_REACHABLE_V2             \
    UCT_DCX_IOPS_EP_IS_CONNECTED             \
    UCT_DCX_IOPS_CONNECT_TO_EP_V2            \
    UCT_DCX_IOPS_QUERY_V2                    \
    UCT_DCX_IOPS_SGL_ZCOPY                   \
    UCT_DCX_IOPS_DEVICE_EP                   \
    UCT_DCX_IOPS_OUTSTANDING_PURGE

#endif
