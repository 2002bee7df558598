/*
 * dcx memory domain: device listing from the MD configuration, device and
 * protection domain lifetime, memory registration (through UCX's
 * registration cache unless it is disabled) and remote keys.
 */
#include "dcx_md.h"
#include "soft/dcx_soft.h"

#include <ucm/api/ucm.h>
#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucs/time/time.h>

#include <errno.h>
#include <inttypes.h>
#include <ctype.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>

/* The device layer lists at most this many devices in all. */
#define UCT_DCX_MAX_SOFT_DEVICES  64

/* Longest soft fabric name the device layer accepts. */
#define UCT_DCX_FABRIC_NAME_MAX   32

/* What a registration allows.  Write access (local or remote) needs
 * writable memory, as with a real NIC, so memory that only peers read may be
 * read-only. */
#define UCT_DCX_ACCESS_READ_ONLY  DCX_ACCESS_REMOTE_READ
#define UCT_DCX_ACCESS_ALL \
    (DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE | \
     DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC)

#define UCT_DCX_UCT_WRITE_FLAGS \
    (UCT_MD_MEM_ACCESS_LOCAL_WRITE | UCT_MD_MEM_ACCESS_REMOTE_PUT | \
     UCT_MD_MEM_ACCESS_REMOTE_ATOMIC)

/* Cost of one uncached registration, per backend: the soft device records a
 * range in a table; hardware pins pages and writes translation entries. */
static const struct {
    double overhead;   /* seconds */
    double growth;     /* seconds per byte */
} uct_dcx_reg_cost[] = {
    [DCX_BACKEND_SOFT] = { 1e-6,  0.0     },
    [DCX_BACKEND_MLX5] = { 16e-6, 0.06e-9 }
};


/* An rcache region carries the memory handle the MD hands out. */
typedef struct uct_dcx_rcache_region {
    ucs_rcache_region_t  super;
    uct_dcx_memh_t       memh;
} uct_dcx_rcache_region_t;


ucs_config_field_t uct_dcx_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_dcx_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"RCACHE", "try",
     "Keep memory registrations in UCX's registration cache: yes, no, or try\n"
     "(use the cache when UCX's memory event hooks are available).",
     ucs_offsetof(uct_dcx_md_config_t, rcache_enable), UCS_CONFIG_TYPE_TERNARY},

    {"", "", NULL,
     ucs_offsetof(uct_dcx_md_config_t, rcache),
     UCS_CONFIG_TYPE_TABLE(UCT_DCX_RCACHE_CONFIG_TABLE)},

    {"SOFT_DEVICES", "0",
     "Number of soft devices to offer (soft0, soft1, ...). A soft device is a\n"
     "software model of a DC-capable NIC that connects the processes of one host\n"
     "through shared memory. 0 offers none.",
     ucs_offsetof(uct_dcx_md_config_t, soft_devices),
     UCT_DCX_CONFIG_TYPE_COUNT},

    {"SOFT_FABRIC", "default",
     "Fabric the soft devices join. Processes reach each other only on the same\n"
     "fabric. Letters, digits, '_', '.' and '-', at most 32 characters; empty\n"
     "means \"default\".",
     ucs_offsetof(uct_dcx_md_config_t, soft_fabric), UCS_CONFIG_TYPE_STRING},

    {"MLX5", "y",
     "Offer NVIDIA/Mellanox devices through rdma-core mlx5 (ConnectX-5 or newer).\n"
     "Has no effect if dcx was built without the mlx5 backend.",
     ucs_offsetof(uct_dcx_md_config_t, mlx5_enable), UCS_CONFIG_TYPE_BOOL},

    {"SOFT_MAX_QP_WR", "auto",
     "Soft device: send queue depth of one DCI, 1..65536 (auto: device\n"
     "default).",
     ucs_offsetof(uct_dcx_md_config_t, soft.max_qp_wr), UCT_DCX_CONFIG_TYPE_LIMIT},

    {"SOFT_MAX_SRQ_WR", "auto",
     "Soft device: receives a shared receive queue holds, 1..65536 (auto:\n"
     "device default).",
     ucs_offsetof(uct_dcx_md_config_t, soft.max_srq_wr), UCT_DCX_CONFIG_TYPE_LIMIT},

    {"SOFT_MAX_CQE", "auto",
     "Soft device: entries of one completion queue, 1..4194304 (auto: device\n"
     "default).",
     ucs_offsetof(uct_dcx_md_config_t, soft.max_cqe), UCT_DCX_CONFIG_TYPE_LIMIT},

    {"SOFT_MAX_SGE", "auto",
     "Soft device: scatter/gather entries of one send, 1..30 (auto: device\n"
     "default).",
     ucs_offsetof(uct_dcx_md_config_t, soft.max_sge), UCT_DCX_CONFIG_TYPE_LIMIT},

    {"SOFT_MAX_INLINE", "auto",
     "Soft device: bytes a send can carry inline, 1..65536 (auto: device\n"
     "default).",
     ucs_offsetof(uct_dcx_md_config_t, soft.max_inline), UCT_DCX_CONFIG_TYPE_LIMIT},

    {"SOFT_MAX_RD_ATOMIC", "auto",
     "Soft device: outstanding RDMA reads and atomics per DCI, 1..16 (auto:\n"
     "device default).",
     ucs_offsetof(uct_dcx_md_config_t, soft.max_rd_atomic),
     UCT_DCX_CONFIG_TYPE_LIMIT},

    {"SOFT_MAX_DCI", "auto",
     "Soft device: DCIs the device provides, 1..65536 (auto: device default).",
     ucs_offsetof(uct_dcx_md_config_t, soft.max_dci), UCT_DCX_CONFIG_TYPE_LIMIT},

    {"SOFT_MAX_MSG_SIZE", "auto",
     "Soft device: largest message (send, RDMA write or read), 1..2G (auto:\n"
     "device default).",
     ucs_offsetof(uct_dcx_md_config_t, soft.max_msg_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"SOFT_MTU", "auto",
     "Soft device: bytes per packet on the wire, 256..1M (auto: device default).",
     ucs_offsetof(uct_dcx_md_config_t, soft.mtu), UCT_DCX_CONFIG_TYPE_LIMIT},

    {"SOFT_ACK_TIMEOUT", "auto",
     "Soft device: time a requester waits for an acknowledgement before it\n"
     "retransmits (auto: device default).",
     ucs_offsetof(uct_dcx_md_config_t, soft.ack_timeout),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"SOFT_RETRY_COUNT", "auto",
     "Soft device: retransmissions before a send fails with 'retry count\n"
     "exceeded', 1..7 (auto: device default).",
     ucs_offsetof(uct_dcx_md_config_t, soft.retry_cnt),
     UCT_DCX_CONFIG_TYPE_LIMIT},

    {"SOFT_RNR_TIMER", "auto",
     "Soft device: delay before a send refused for lack of a receive buffer is\n"
     "retried (auto: device default).",
     ucs_offsetof(uct_dcx_md_config_t, soft.rnr_timer),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"SOFT_RNR_RETRY", "auto",
     "Soft device: retries of a send refused for lack of a receive buffer,\n"
     "1..6, or 7 to retry forever (auto: device default).",
     ucs_offsetof(uct_dcx_md_config_t, soft.rnr_retry),
     UCT_DCX_CONFIG_TYPE_LIMIT},

    {"SOFT_MKEY_MAX_ENTRIES", "auto",
     "Soft device: translation entries of one strided memory key, 4..65535\n"
     "(auto: device default, 256).",
     ucs_offsetof(uct_dcx_md_config_t, soft.mkey_max_entries),
     UCT_DCX_CONFIG_TYPE_LIMIT},

    {"SOFT_TM", "y",
     "Soft device: offer hardware tag matching. With n the device has none,\n"
     "like a NIC without it: UCX_DCX_TM_ENABLE=try then gives a plain SRQ and\n"
     "=y fails, so a job can mix processes with and without offload.",
     ucs_offsetof(uct_dcx_md_config_t, soft.tm), UCS_CONFIG_TYPE_BOOL},

    {"SOFT_DIRECT", "y",
     "Soft device: RDMA writes and reads (put/get zcopy and bcopy) are\n"
     "executed by the initiator, copying directly between the two processes'\n"
     "registered memory with cross-memory attach, without the target's CPU, as\n"
     "a NIC does by DMA.  Where cross-memory attach is refused (ptrace policy,\n"
     "seccomp, containers), with fault injection, or when disabled here, the\n"
     "target's responder executes them.",
     ucs_offsetof(uct_dcx_md_config_t, soft.direct), UCS_CONFIG_TYPE_BOOL},

    {NULL}
};


ucs_status_t uct_dcx_status_from_errno(int err)
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


/* One soft limit: "auto" keeps the device default (0 in the device layer),
 * anything else must lie in [min, max]. */
static ucs_status_t uct_dcx_soft_limit(const char *name, unsigned long value,
                                       unsigned long auto_value,
                                       unsigned long min, unsigned long max,
                                       uint32_t *limit_p)
{
    if (value == auto_value) {
        *limit_p = 0;
        return UCS_OK;
    }

    if ((value < min) || (value > max)) {
        ucs_error("dcx: UCX_DCX_%s=%lu is out of range [%lu, %lu]", name,
                  value, min, max);
        return UCS_ERR_INVALID_PARAM;
    }

    *limit_p = value;
    return UCS_OK;
}

static ucs_status_t uct_dcx_soft_time_limit(const char *name, ucs_time_t value,
                                            uint32_t *limit_us_p)
{
    double usec;

    if (value == UCS_TIME_AUTO) {
        *limit_us_p = 0;
        return UCS_OK;
    }

    usec = ucs_time_to_usec(value);
    if ((value == UCS_TIME_INFINITY) || (usec < 1.0) || (usec > UINT32_MAX)) {
        ucs_error("dcx: UCX_DCX_%s must be between 1us and %uus", name,
                  UINT32_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    *limit_us_p = (uint32_t)(usec + 0.5);
    return UCS_OK;
}

static int uct_dcx_fabric_name_is_valid(const char *name)
{
    size_t len = strlen(name);
    size_t i;

    if ((len == 0) || (len > UCT_DCX_FABRIC_NAME_MAX)) {
        return 0;
    }

    for (i = 0; i < len; ++i) {
        if (!isalnum((unsigned char)name[i]) && (strchr("_.-", name[i]) == NULL)) {
            return 0;
        }
    }

    return 1;
}

/* The soft limits that are counts: variable, where the value is in the
 * configuration and in dcx_soft_limits_t, allowed range. */
typedef struct uct_dcx_soft_count_limit {
    const char *var;
    size_t      config_offset;
    size_t      limit_offset;
    uint32_t    min;
    uint32_t    max;
} uct_dcx_soft_count_limit_t;

#define UCT_DCX_SOFT_COUNT_LIMIT(_var, _field, _min, _max) \
    { _var, ucs_offsetof(uct_dcx_md_config_t, soft._field), \
      ucs_offsetof(dcx_soft_limits_t, _field), _min, _max }

static const uct_dcx_soft_count_limit_t uct_dcx_soft_count_limits[] = {
    UCT_DCX_SOFT_COUNT_LIMIT("SOFT_MAX_QP_WR",     max_qp_wr,     1,
                             DCX_SOFT_LIMIT_MAX_QP_WR),
    UCT_DCX_SOFT_COUNT_LIMIT("SOFT_MAX_SRQ_WR",    max_srq_wr,    1,
                             DCX_SOFT_LIMIT_MAX_SRQ_WR),
    UCT_DCX_SOFT_COUNT_LIMIT("SOFT_MAX_CQE",       max_cqe,       1,
                             DCX_SOFT_LIMIT_MAX_CQE),
    UCT_DCX_SOFT_COUNT_LIMIT("SOFT_MAX_SGE",       max_sge,       1,
                             DCX_SOFT_LIMIT_MAX_SGE),
    UCT_DCX_SOFT_COUNT_LIMIT("SOFT_MAX_INLINE",    max_inline,    1,
                             DCX_SOFT_LIMIT_MAX_INLINE),
    UCT_DCX_SOFT_COUNT_LIMIT("SOFT_MAX_RD_ATOMIC", max_rd_atomic, 1,
                             DCX_SOFT_LIMIT_MAX_RD_ATOMIC),
    UCT_DCX_SOFT_COUNT_LIMIT("SOFT_MAX_DCI",       max_dci,       1,
                             DCX_SOFT_LIMIT_MAX_DCI),
    UCT_DCX_SOFT_COUNT_LIMIT("SOFT_MTU",           mtu,
                             DCX_SOFT_LIMIT_MIN_MTU, DCX_SOFT_LIMIT_MAX_MTU),
    /* 0 means "device default" in the device layer, so 0 retries cannot be
     * asked for */
    UCT_DCX_SOFT_COUNT_LIMIT("SOFT_RETRY_COUNT",   retry_cnt,     1, 7),
    UCT_DCX_SOFT_COUNT_LIMIT("SOFT_RNR_RETRY",     rnr_retry,     1, 7),
    UCT_DCX_SOFT_COUNT_LIMIT("SOFT_MKEY_MAX_ENTRIES", mkey_max_entries, 4,
                             0xffff)
};

/* Turns the MD configuration into device listing parameters; rejects bad
 * values with one error line naming the variable. */
static ucs_status_t
uct_dcx_md_list_params(const uct_dcx_md_config_t *config,
                       dcx_dev_list_params_t *params)
{
    const unsigned long auto_ul = UCS_ULUNITS_AUTO;
    dcx_soft_limits_t *limits   = &params->soft_limits;
    const uct_dcx_soft_count_limit_t *entry;
    ucs_status_t status;
    unsigned i;

    memset(params, 0, sizeof(*params));
    params->mlx5_enable = config->mlx5_enable;
    params->soft_count  = config->soft_devices;
    params->soft_fabric = config->soft_fabric;
    limits->tm_off      = !config->soft.tm;
    limits->direct      = !!config->soft.direct;

    if (config->soft_devices > UCT_DCX_MAX_SOFT_DEVICES) {
        ucs_error("dcx: UCX_DCX_SOFT_DEVICES=%u is more than %u",
                  config->soft_devices, UCT_DCX_MAX_SOFT_DEVICES);
        return UCS_ERR_INVALID_PARAM;
    }

    /* an empty name selects the default fabric */
    if ((config->soft_fabric[0] != '\0') &&
        !uct_dcx_fabric_name_is_valid(config->soft_fabric)) {
        ucs_error("dcx: UCX_DCX_SOFT_FABRIC='%s' is not a fabric name (1..%d "
                  "letters, digits, '_', '.', '-')", config->soft_fabric,
                  UCT_DCX_FABRIC_NAME_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    for (i = 0; i < ucs_static_array_size(uct_dcx_soft_count_limits); ++i) {
        entry  = &uct_dcx_soft_count_limits[i];
        status = uct_dcx_soft_limit(entry->var,
                                    *(const unsigned long*)
                                    UCS_PTR_BYTE_OFFSET(config,
                                                        entry->config_offset),
                                    auto_ul, entry->min, entry->max,
                                    UCS_PTR_BYTE_OFFSET(limits,
                                                        entry->limit_offset));
        if (status != UCS_OK) {
            return status;
        }
    }

    if (config->soft.max_msg_size == UCS_MEMUNITS_AUTO) {
        limits->max_msg_size = 0;
    } else if ((config->soft.max_msg_size == 0) ||
               (config->soft.max_msg_size > DCX_SOFT_LIMIT_MAX_MSG_SIZE)) {
        ucs_error("dcx: UCX_DCX_SOFT_MAX_MSG_SIZE=%zu is out of range [1, "
                  "%llu]", config->soft.max_msg_size,
                  DCX_SOFT_LIMIT_MAX_MSG_SIZE);
        return UCS_ERR_INVALID_PARAM;
    } else {
        limits->max_msg_size = config->soft.max_msg_size;
    }

    status = uct_dcx_soft_time_limit("SOFT_ACK_TIMEOUT",
                                     config->soft.ack_timeout,
                                     &limits->ack_timeout_us);
    if (status != UCS_OK) {
        return status;
    }

    return uct_dcx_soft_time_limit("SOFT_RNR_TIMER", config->soft.rnr_timer,
                                   &limits->rnr_timer_us);
}

/* Lists the devices the configuration asks for.  Free with
 * dcx_dev_list_free(). */
static ucs_status_t uct_dcx_md_dev_list(const uct_dcx_md_config_t *config,
                                        dcx_dev_info_t **list_p,
                                        unsigned *count_p)
{
    dcx_dev_list_params_t params;
    ucs_status_t status;
    int ret;

    status = uct_dcx_md_list_params(config, &params);
    if (status != UCS_OK) {
        return status;
    }

    ret = dcx_dev_list(&params, list_p, count_p);
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

ucs_status_t uct_dcx_md_mr_reg(uct_dcx_md_t *md, void *address,
                                      size_t length, uint32_t access,
                                      dcx_mr_t **mr_p)
{
    int ret;

    ret = dcx_mr_reg(md->pd, address, length, access, mr_p);
    if (ret != 0) {
        /* the device layer logged the failure as an error */
        ucs_debug("dcx md %s: registration of %p..%p failed: %s", md->name,
                  address, UCS_PTR_BYTE_OFFSET(address, length),
                  strerror(ret));
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
    int ret;

    ucs_list_for_each(dcb, &md->dereg_cbs, list) {
        dcb->cb(dcb->arg, mr);
    }

    ucs_trace("dcx md %s: deregistering lkey 0x%x", md->name, mr->lkey);
    ret = dcx_mr_dereg(mr);
    if (ret != 0) {
        ucs_warn("dcx md %s: deregistration of lkey 0x%x failed: %s",
                 md->name, mr->lkey, strerror(ret));
    }
}

static ucs_status_t
uct_dcx_rcache_mem_reg_cb(void *context, ucs_rcache_t *rcache, void *arg,
                          ucs_rcache_region_t *rregion, uint16_t rcache_flags)
{
    uct_dcx_md_t *md                = context;
    uct_dcx_rcache_region_t *region = ucs_derived_of(rregion,
                                                     uct_dcx_rcache_region_t);

    /* the region's protection is the union of what its users asked for */
    region->memh.flags = UCT_DCX_MEMH_FLAG_RCACHE;
    return uct_dcx_md_mr_reg(md, (void*)region->super.super.start,
                             region->super.super.end - region->super.super.start,
                             uct_dcx_md_access(region->super.prot & PROT_WRITE),
                             &region->memh.mr);
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
    UCT_DCX_RCACHE_OPS_VERSIONED
    .mem_reg     = uct_dcx_rcache_mem_reg_cb,
    .mem_dereg   = uct_dcx_rcache_mem_dereg_cb,
    .dump_region = uct_dcx_rcache_dump_region_cb
};

ucs_status_t uct_dcx_mem_reg(uct_md_h uct_md, void *address,
                                    size_t length, unsigned flags,
                                    uct_mem_h *memh_p)
{
    uct_dcx_md_t *md = ucs_derived_of(uct_md, uct_dcx_md_t);
    uint32_t access  = uct_dcx_md_access_of(flags);
    int writable     = (access != UCT_DCX_ACCESS_READ_ONLY);
    ucs_rcache_region_t *rregion;
    uct_dcx_memh_t *memh;
    ucs_status_t status;

    if ((address == NULL) || (length == 0)) {
        uct_md_log_mem_reg_error(flags, "dcx md %s: cannot register %p length "
                                 "%zu", md->name, address, length);
        return UCS_ERR_INVALID_PARAM;
    }

    if (md->rcache != NULL) {
        status = uct_dcx_rcache_get(md->rcache, address, length,
                                writable ? (PROT_READ | PROT_WRITE) : PROT_READ,
                                NULL, &rregion);
        if (status != UCS_OK) {
            uct_md_log_mem_reg_error(flags, "dcx md %s: registration of "
                                     "%p..%p failed: %s", md->name, address,
                                     UCS_PTR_BYTE_OFFSET(address, length),
                                     ucs_status_string(status));
            return status;
        }

        *memh_p = &ucs_derived_of(rregion, uct_dcx_rcache_region_t)->memh;
        return UCS_OK;
    }

    memh = ucs_malloc(sizeof(*memh), "dcx memh");
    if (memh == NULL) {
        uct_md_log_mem_reg_error(flags, "dcx md %s: cannot allocate a memory "
                                 "handle", md->name);
        return UCS_ERR_NO_MEMORY;
    }

    memh->flags = 0;
    status      = uct_dcx_md_mr_reg(md, address, length, access, &memh->mr);
    if (status != UCS_OK) {
        ucs_free(memh);
        return status;
    }

    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t
uct_dcx_mem_dereg(uct_md_h uct_md, const uct_md_mem_dereg_params_t *params)
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
                  "supported (UCT_MD_FLAG_INVALIDATE is not set)", md->name);
        return UCS_ERR_UNSUPPORTED;
    }

    if (memh->flags & UCT_DCX_MEMH_FLAG_STRIDED) {
        return uct_dcx_md_strided_dereg(md, memh);
    }

    if (memh->flags & UCT_DCX_MEMH_FLAG_ALLOC) {
        ucs_error("dcx md %s: memh %p is of memory this md allocated: "
                  "release it with uct_md_mem_free()", md->name, memh);
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
    uct_dcx_md_t *md            = ucs_derived_of(uct_md, uct_dcx_md_t);
    const dcx_dev_caps_t *caps  = dcx_dev_caps(md->dev);

    /* zero-copy operations need the lkey of a registration, remote access
     * the rkey */
    attr->cap.flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH |
                                 UCT_MD_FLAG_NEED_RKEY;
    attr->cap.max_alloc        = 0;
    attr->cap.max_reg          = (caps->max_mr_size > SIZE_MAX) ?
                                 SIZE_MAX : caps->max_mr_size;
    attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.alloc_mem_types  = 0;
    if (caps->flags & DCX_CAP_MEM_ALLOC) {
        /* host memory the device can hand peers directly (dcx_md_alloc.c);
         * one allocation is one registration */
        attr->cap.flags          |= UCT_MD_FLAG_ALLOC;
        attr->cap.max_alloc       = attr->cap.max_reg;
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

    /* a soft device is equally near every CPU; hardware locality is not
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
                                      size_t length,
                                      uct_md_mem_attr_t *mem_attr)
{
    ucs_debug("dcx md %s: memory type detection is not supported",
              ucs_derived_of(uct_md, uct_dcx_md_t)->name);
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t
uct_dcx_detect_memory_type(uct_md_h uct_md, const void *address,
                           size_t length, ucs_memory_type_t *mem_type_p)
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
}

/* One line per device with what went through it, so that a job run with
 * UCX_LOG_LEVEL=info shows its traffic really crossed dcx.  The soft device
 * counts packets itself; a ConnectX keeps its counters in the kernel. */
static void uct_dcx_md_report_traffic(uct_dcx_md_t *md)
{
    dcx_soft_stats_t st;

    if (!dcx_dev_is_soft(md->dev) || (dcx_soft_stats(md->dev, &st) != 0)) {
        return;
    }
    ucs_info("dcx md %s: traffic: tx %" PRIu64 " packets %" PRIu64
             " bytes, rx %" PRIu64 " packets %" PRIu64 " bytes, "
             "%" PRIu64 " retransmits, %" PRIu64 " rnr naks, "
             "%" PRIu64 " remote access errors; direct %" PRIu64 " writes %"
             PRIu64 " reads (%" PRIu64 " through mappings)", md->name,
             st.tx_packets, st.tx_bytes, st.rx_packets, st.rx_bytes,
             st.retransmits, st.rnr_naks_sent, st.remote_access_errors,
             st.direct_writes, st.direct_reads, st.direct_mapped);
}

static void uct_dcx_md_close(uct_md_h uct_md)
{
    uct_dcx_md_t *md = ucs_derived_of(uct_md, uct_dcx_md_t);
    int ret;

    uct_dcx_md_report_traffic(md);
    uct_dcx_md_strided_cleanup(md);

    if (md->rcache != NULL) {
        ucs_rcache_destroy(md->rcache);
    }

    if (md->unmap_hook) {
        ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED,
                                uct_dcx_md_unmapped_cb, md);
    }

    ret = dcx_pd_free(md->pd);
    if (ret != 0) {
        ucs_warn("dcx md %s: freeing the protection domain failed: %s "
                 "(memory still registered?)", md->name, strerror(ret));
    }

    dcx_dev_close(md->dev);
    ucs_debug("dcx md %s: closed", md->name);
    ucs_free(md);
}

static uct_md_ops_t uct_dcx_md_ops = {
    .close                  = uct_dcx_md_close,
    .query                  = UCT_DCX_MD_OP_QUERY,
    .mem_alloc              = UCT_DCX_MD_OP_MEM_ALLOC,
    .mem_free               = uct_dcx_mem_free,
    .mem_advise             = uct_dcx_mem_advise,
    .mem_reg                = UCT_DCX_MD_OP_MEM_REG,
    .mem_dereg              = uct_dcx_mem_dereg,
    .mem_query              = UCT_DCX_MD_OP_MEM_QUERY,
    .mkey_pack              = UCT_DCX_MD_OP_MKEY_PACK,
    UCT_DCX_MD_OPS_VERSIONED
    .detect_memory_type     = uct_dcx_detect_memory_type
};

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
                  "(UCX_DCX_RCACHE=yes)", md->name, ucs_status_string(status));
        return status;
    }

    ucs_debug("dcx md %s: registration cache unavailable (%s), registering "
              "directly", md->name, ucs_status_string(status));
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
        ucs_error("dcx: no device '%s' (%u device(s) configured; soft devices "
                  "come from UCX_DCX_SOFT_DEVICES)", md_name, count);
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
        ucs_debug("dcx md %s: cannot allocate a protection domain: %s",
                  md_name, strerror(ret));
        goto err_close_dev;
    }

    md->reg_cost_overhead = uct_dcx_reg_cost[md->info.backend].overhead;
    md->reg_cost_growth   = uct_dcx_reg_cost[md->info.backend].growth;

    uct_dcx_md_unmap_hook_init(md);
    uct_dcx_md_strided_init(md);

    status = uct_dcx_md_rcache_init(md, config);
    if (status != UCS_OK) {
        goto err_unset_hook;
    }

    ucs_debug("dcx md %s: opened (%s backend, registration cache %s)",
              md_name, (md->info.backend == DCX_BACKEND_SOFT) ? "soft" : "mlx5",
              (md->rcache != NULL) ? "on" : "off");
    *md_p = &md->super;
    dcx_dev_list_free(list);
    return UCS_OK;

err_unset_hook:
    uct_dcx_md_strided_cleanup(md);
    if (md->unmap_hook) {
        ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED,
                                uct_dcx_md_unmapped_cb, md);
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
