/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx UCT component and memory domain.
 *
 * One MD per device the device layer lists (whatever its backend).  Memory is
 * registered through the device layer, behind UCX's registration cache.
 *
 * Contract with the rest of the transport (dcx_iface.c, dcx_ep.c, ...):
 *  - uct_dcx_md_t: the opened MD, its device and protection domain;
 *  - uct_dcx_memh_mr(memh): the device MR (lkey) behind a uct_mem_h;
 *  - uct_dcx_rkey(rkey): the 32-bit device rkey behind an unpacked uct_rkey_t;
 *  - uct_dcx_component: the "dcx" component, to which the transport adds its
 *    tl with UCT_TL_DEFINE.
 */
#ifndef UCT_DCX_MD_H_
#define UCT_DCX_MD_H_

#include <uct/base/uct_md.h>
#include <ucs/memory/rcache.h>
#include <ucs/datastruct/list.h>
#include <ucs/type/status.h>

#include <errno.h>
#include <pthread.h>

#include "dcx_dev.h"
#include "dcx_compat.h"

#define UCT_DCX_COMPONENT_NAME "dcx"
#define UCT_DCX_CONFIG_PREFIX  "DCX_"

/* Packed rkey: what uct_md_mkey_pack() writes and uct_rkey_unpack() reads. */
#define UCT_DCX_RKEY_MAGIC   0x52584344u /* "DCXR" little-endian */
#define UCT_DCX_RKEY_VERSION 1

typedef struct UCS_S_PACKED uct_dcx_packed_rkey {
    uint32_t magic;  /* UCT_DCX_RKEY_MAGIC */
    uint8_t version; /* UCT_DCX_RKEY_VERSION */
    uint8_t flags;   /* none defined yet; must be 0 */
    uint16_t check;  /* uct_dcx_rkey_check() of the fields above + rkey */
    uint32_t rkey;   /* device rkey, host order */
} uct_dcx_packed_rkey_t;

#define UCT_DCX_PACKED_RKEY_SIZE sizeof(uct_dcx_packed_rkey_t)

/* Packs a device rkey received from a peer (tag rendezvous) as mkey_pack
 * would pack it */
void uct_dcx_rkey_pack_raw(uint32_t rkey, void *rkey_buffer);


/* The value of one of the device layer's knobs (dcx_param_t: the backends'
 * UCX_DCX_<name> variables, dcx_md_config.c), as UCX's parser of its type
 * writes it. */
typedef union uct_dcx_md_knob {
    unsigned count;      /* DCX_PARAM_UINT */
    unsigned long limit; /* DCX_PARAM_LIMIT, UCS_ULUNITS_AUTO */
    size_t size;         /* DCX_PARAM_SIZE, UCS_MEMUNITS_AUTO */
    ucs_time_t time;     /* DCX_PARAM_TIME, UCS_TIME_AUTO */
    int flag;            /* DCX_PARAM_BOOL, DCX_PARAM_BOOL_NOT */
    char *str;           /* DCX_PARAM_STRING */
} uct_dcx_md_knob_t;

/* Knobs all backends together may have */
#define UCT_DCX_MD_KNOBS_MAX 64

typedef struct uct_dcx_md_config {
    uct_md_config_t super;
    /* Registration cache */
    int rcache_enable; /* UCS_YES / UCS_NO / UCS_TRY */
    uct_dcx_rcache_config_t rcache;
    /* Devices: the backends' knobs, in the order of dcx_backend_at() and of
     * each backend's params */
    uct_dcx_md_knob_t knobs[UCT_DCX_MD_KNOBS_MAX];
} uct_dcx_md_config_t;


typedef struct uct_dcx_md_strided uct_dcx_md_strided_t;
/* Told about each deregistration, before the device forgets the MR (the
 * strided-key cache of each interface: dcx_strided.c; its DCI pool:
 * dcx_dci_comp.c).  One of them may keep the MR (nonzero return, when
 * 'kept' says none did yet): it deregisters the MR itself later. */
typedef struct uct_dcx_md_dereg_cb {
    ucs_list_link_t list;
    int (*cb)(void *arg, dcx_mr_t *mr, int kept);
    void *arg;
} uct_dcx_md_dereg_cb_t;


typedef struct uct_dcx_md {
    uct_md_t super;
    ucs_list_link_t dereg_cbs; /* uct_dcx_md_dereg_cb_t */
    dcx_dev_t *dev;            /* opened device */
    dcx_pd_t *pd;
    ucs_rcache_t *rcache;     /* NULL when the cache is disabled */
    double reg_cost_overhead; /* seconds per registration */
    double reg_cost_growth;   /* seconds per byte */
    double rcache_overhead;   /* seconds per cache lookup */
    dcx_dev_info_t info;      /* what the device was opened from */
    int unmap_hook;           /* a UCM VM_UNMAPPED handler is set */
    /* strided registration (dcx_md_strided.c): created on first use */
    pthread_mutex_t strided_lock;
    uct_dcx_md_strided_t *strided;
    char name[UCT_MD_NAME_MAX];
} uct_dcx_md_t;


enum {
    UCT_DCX_MEMH_FLAG_RCACHE  = UCS_BIT(0), /* lives in an rcache region */
    UCT_DCX_MEMH_FLAG_STRIDED = UCS_BIT(1), /* a strided registration
                                               (uct_dcx_md_strided_memh_t):
                                               mr is a view of its mkey */
    UCT_DCX_MEMH_FLAG_ALLOC   = UCS_BIT(2)  /* memory the md allocated
                                               (uct_dcx_alloc_memh_t) */
};

/* What a uct_mem_h of the dcx MD points to. */
typedef struct uct_dcx_memh {
    dcx_mr_t *mr;
    uint32_t flags; /* UCT_DCX_MEMH_FLAG_* */
} uct_dcx_memh_t;


extern uct_component_t uct_dcx_component;


/* dcx_config.c: strict parsers for ucs_config_field_t tables (decimal
 * digits only, no overflow): counts, counts or "inf", DC keys,
 * soft device limits ("auto" or a count) */
int uct_dcx_config_sscanf_count(const char *buf, void *dest, const void *arg);
int uct_dcx_config_sprintf_count(char *buf, size_t max, const void *src,
                                 const void *arg);
int uct_dcx_config_sscanf_count_inf(const char *buf, void *dest,
                                    const void *arg);
int uct_dcx_config_sprintf_count_inf(char *buf, size_t max, const void *src,
                                     const void *arg);
int uct_dcx_config_sscanf_dc_key(const char *buf, void *dest, const void *arg);
int uct_dcx_config_sprintf_dc_key(char *buf, size_t max, const void *src,
                                  const void *arg);
int uct_dcx_config_sscanf_limit(const char *buf, void *dest, const void *arg);
int uct_dcx_config_sprintf_limit(char *buf, size_t max, const void *src,
                                 const void *arg);
/* UCX 1.18 and later give a parser a documentation writer too */
#if DCX_UCX_HAVE_CONFIG_PARSER_DOC
#define UCT_DCX_CONFIG_HELP ucs_config_help_generic, ucs_config_doc_nop
#else
#define UCT_DCX_CONFIG_HELP ucs_config_help_generic
#endif
#define UCT_DCX_CONFIG_TYPE_COUNT                                  \
    {                                                              \
        uct_dcx_config_sscanf_count, uct_dcx_config_sprintf_count, \
            ucs_config_clone_uint, ucs_config_release_nop,         \
            UCT_DCX_CONFIG_HELP, "unsigned decimal integer"        \
    }
#define UCT_DCX_CONFIG_TYPE_COUNT_INF                                      \
    {                                                                      \
        uct_dcx_config_sscanf_count_inf, uct_dcx_config_sprintf_count_inf, \
            ucs_config_clone_uint, ucs_config_release_nop,                 \
            UCT_DCX_CONFIG_HELP,                                           \
            "unsigned decimal integer below 4294967295, or \"inf\""        \
    }
#define UCT_DCX_CONFIG_TYPE_DC_KEY                                             \
    {                                                                          \
        uct_dcx_config_sscanf_dc_key, uct_dcx_config_sprintf_dc_key,           \
            ucs_config_clone_ulong, ucs_config_release_nop,                    \
            UCT_DCX_CONFIG_HELP,                                               \
            "decimal number 0..18446744073709551615 (digits only, no leading " \
            "zeros)"                                                           \
    }
#define UCT_DCX_CONFIG_TYPE_LIMIT                                          \
    {                                                                      \
        uct_dcx_config_sscanf_limit, uct_dcx_config_sprintf_limit,         \
            ucs_config_clone_ulong, ucs_config_release_nop,                \
            UCT_DCX_CONFIG_HELP, "\"auto\" or an unsigned decimal integer" \
    }

/* dcx_md_config.c: the MD's configuration table, used by the component
 * definition (dcx_component.c), whose constructor first adds the knobs of
 * every registered backend to it (uct_dcx_md_config_init); and the knobs'
 * values of a parsed configuration, as the device layer takes them (0, or
 * an errno, the refused value logged) */
extern ucs_config_field_t uct_dcx_md_config_table[];
void uct_dcx_md_config_init(void);
int uct_dcx_md_dev_config(const uct_dcx_md_config_t *config,
                          dcx_dev_config_t **dev_config_p);

ucs_status_t uct_dcx_query_md_resources(uct_component_t *component,
                                        uct_md_resource_desc_t **resources_p,
                                        unsigned *num_resources_p);
ucs_status_t uct_dcx_md_open(uct_component_t *component, const char *md_name,
                             const uct_md_config_t *config, uct_md_h *md_p);
ucs_status_t uct_dcx_rkey_unpack(uct_component_t *component,
                                 const void *rkey_buffer, uct_rkey_t *rkey_p,
                                 void **handle_p);
ucs_status_t uct_dcx_rkey_release(uct_component_t *component, uct_rkey_t rkey,
                                  void *handle);


/* dcx_md_strided.c: strided registration (public API in
 * include/uct/dcx/dcx_strided.h); hooks of the MD's open, close and
 * mem_dereg */
void uct_dcx_md_strided_init(uct_dcx_md_t *md);
void uct_dcx_md_strided_cleanup(uct_dcx_md_t *md);
ucs_status_t uct_dcx_md_strided_dereg(uct_dcx_md_t *md, uct_dcx_memh_t *memh);

/* A device layer errno as a UCX status */
static inline ucs_status_t uct_dcx_status_from_errno(int err)
{
    switch (err) {
    case 0:
        return UCS_OK;
    case ENOMEM:
    case ENOSPC:
        return UCS_ERR_NO_MEMORY;
    case EINVAL:
        return UCS_ERR_INVALID_PARAM;
    case EFAULT:
        return UCS_ERR_INVALID_ADDR;
    case ENODEV:
    case ENOENT:
    case ENXIO:
        return UCS_ERR_NO_DEVICE;
    case EPERM:
    case EACCES:
        return UCS_ERR_REJECTED;
    case EBUSY:
    case EAGAIN:
        return UCS_ERR_BUSY;
    case EOPNOTSUPP:
        return UCS_ERR_UNSUPPORTED;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

/* dcx_md.c: registration without the cache, for dcx_md_alloc.c (flags:
 * the uct registration's, UCT_MD_MEM_FLAG_HIDE_ERRORS makes a failure's
 * line a debug one); the device access a uct registration's flags ask
 * for */
ucs_status_t uct_dcx_md_mr_reg(uct_dcx_md_t *md, void *address, size_t length,
                               uint32_t access, unsigned flags,
                               dcx_mr_t **mr_p);
void uct_dcx_md_mr_dereg(uct_dcx_md_t *md, dcx_mr_t *mr);
uint32_t uct_dcx_md_access_of(unsigned flags);

/* dcx_md_alloc.c: memory the md allocates (UCT_MD_FLAG_ALLOC where the
 * device has DCX_CAP_SHM_PEERS) */
ucs_status_t uct_dcx_mem_free(uct_md_h uct_md, uct_mem_h memh);


/* The device MR (lkey, rkey, bounds) of a registered memory handle. */
static inline dcx_mr_t *uct_dcx_memh_mr(uct_mem_h memh)
{
    return ((uct_dcx_memh_t *)memh)->mr;
}

/* The device rkey of an unpacked remote key. */
static inline uint32_t uct_dcx_rkey(uct_rkey_t rkey)
{
    return (uint32_t)rkey;
}

#endif /* UCT_DCX_MD_H_ */
