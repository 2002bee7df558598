/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: pure rules of the device and its ports (see
 * mlx5_pure.h): the port address and the GID it publishes, the encodings
 * of the transport parameters, MTU and link speed, the capability
 * translation and the decoding of QUERY_HCA_CAP answers.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mlx5/mlx5_pure.h"

#include <errno.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Port address
 * ------------------------------------------------------------------------ */
static bool dcx_mlx5_gid_is_zero(const uint8_t *gid)
{
    unsigned i;

    for (i = 0; i < 16; ++i) {
        if (gid[i] != 0) {
            return false;
        }
    }
    return true;
}

static int dcx_mlx5_addr_check(const dcx_mlx5_addr_t *addr, const char **why)
{
    if (addr->flags & ~DCX_MLX5_ADDR_F_ALL) {
        *why = "unknown flags";
        return EINVAL;
    }
    if ((addr->mtu < IBV_MTU_256) || (addr->mtu > IBV_MTU_4096)) {
        *why = "MTU code out of range";
        return EINVAL;
    }
    if ((addr->flags & DCX_MLX5_ADDR_F_GID) &&
        dcx_mlx5_gid_is_zero(addr->gid)) {
        *why = "GID flagged but all zero";
        return EINVAL;
    }
    if (addr->flags & DCX_MLX5_ADDR_F_ETH) {
        if (!(addr->flags & DCX_MLX5_ADDR_F_GID)) {
            *why = "RoCE address without a GID";
            return EINVAL;
        }
    } else {
        if (addr->flags & DCX_MLX5_ADDR_F_ROCEV2) {
            *why = "RoCE v2 flag on an InfiniBand address";
            return EINVAL;
        }
        if ((addr->lid == 0) || (addr->lid >= 0xc000)) {
            *why = "InfiniBand LID is 0 or multicast";
            return EINVAL;
        }
    }
    return 0;
}

int dcx_mlx5_addr_pack(const dcx_mlx5_addr_t *addr, void *buf, size_t *len_p)
{
    uint8_t *p = (uint8_t *)buf;
    const char *why;

    if (*len_p < DCX_MLX5_ADDR_LEN) {
        return EINVAL;
    }
    if (dcx_mlx5_addr_check(addr, &why) != 0) {
        return EINVAL;
    }
    p[0] = DCX_MLX5_ADDR_MAGIC & 0xff;
    p[1] = DCX_MLX5_ADDR_MAGIC >> 8;
    p[2] = DCX_MLX5_ADDR_VERSION;
    p[3] = addr->flags;
    p[4] = addr->lid & 0xff;
    p[5] = addr->lid >> 8;
    p[6] = addr->mtu;
    p[7] = 0;
    memcpy(p + 8, addr->gid, 16);
    *len_p = DCX_MLX5_ADDR_LEN;
    return 0;
}

int dcx_mlx5_addr_unpack(const void *buf, size_t len, dcx_mlx5_addr_t *addr,
                         const char **why_p)
{
    const uint8_t *p = (const uint8_t *)buf;
    const char *why  = NULL;
    dcx_mlx5_addr_t a;

    if ((buf == NULL) || (len != DCX_MLX5_ADDR_LEN)) {
        why = "wrong length";
        goto bad;
    }
    if ((p[0] | (p[1] << 8)) != DCX_MLX5_ADDR_MAGIC) {
        why = "bad magic";
        goto bad;
    }
    if (p[2] != DCX_MLX5_ADDR_VERSION) {
        why = "unsupported version";
        goto bad;
    }
    if (p[7] != 0) {
        why = "reserved byte set";
        goto bad;
    }
    a.flags = p[3];
    a.lid   = (uint16_t)(p[4] | (p[5] << 8));
    a.mtu   = p[6];
    memcpy(a.gid, p + 8, 16);
    if (dcx_mlx5_addr_check(&a, &why) != 0) {
        goto bad;
    }
    *addr = a;
    return 0;

bad:
    if (why_p != NULL) {
        *why_p = why;
    }
    return EINVAL;
}

/* ::ffff:a.b.c.d, the form a RoCE GID takes for an IPv4 address */
static bool dcx_mlx5_gid_is_ipv4(const uint8_t *gid)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0,    0,
                                       0, 0, 0, 0, 0xff, 0xff};

    return memcmp(gid, prefix, sizeof(prefix)) == 0;
}

/* fe80::/10: usable only inside one L2 segment, never routed */
static bool dcx_mlx5_gid_is_link_local(const uint8_t *gid)
{
    return (gid[0] == 0xfe) && ((gid[1] & 0xc0) == 0x80);
}

/* Lower is better; -1 for entries that cannot be published. */
static int dcx_mlx5_gid_rank(const struct ibv_gid_entry *e)
{
    int rank;

    if (dcx_mlx5_gid_is_zero(e->gid.raw)) {
        return -1;
    }
    if (e->gid_type == IBV_GID_TYPE_ROCE_V2) {
        rank = 0;
    } else if (e->gid_type == IBV_GID_TYPE_ROCE_V1) {
        rank = 3;
    } else {
        return -1;
    }
    if (dcx_mlx5_gid_is_ipv4(e->gid.raw)) {
        return rank;
    }
    return rank + (dcx_mlx5_gid_is_link_local(e->gid.raw) ? 2 : 1);
}

int dcx_mlx5_gid_select(const struct ibv_gid_entry *entries, unsigned count)
{
    int best = -1, best_rank = INT32_MAX, rank;
    unsigned i;

    for (i = 0; i < count; ++i) {
        rank = dcx_mlx5_gid_rank(&entries[i]);
        if ((rank >= 0) && (rank < best_rank)) {
            best      = (int)i;
            best_rank = rank;
        }
    }
    return best;
}

/* ------------------------------------------------------------------------
 * Transport parameter encodings
 * ------------------------------------------------------------------------ */
uint64_t dcx_mlx5_timeout_to_ns(uint8_t timeout)
{
    if ((timeout == 0) || (timeout > 31)) {
        return 0; /* 0: infinite */
    }
    return 4096ull << timeout;
}

uint8_t dcx_mlx5_timeout_from_ns(uint64_t ns)
{
    uint8_t t;

    for (t = 1; t < 31; ++t) {
        if ((4096ull << t) >= ns) {
            return t;
        }
    }
    return 31;
}

uint64_t dcx_mlx5_rnr_timer_to_ns(uint8_t code)
{
    /* IB spec RNR NAK timer field, in units of 10 us */
    static const uint32_t units[32] = {
        65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
        48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
        2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};

    return (code < 32) ? (uint64_t)units[code] * 10000ull : 0;
}

int dcx_mlx5_transport_params_check(const dcx_qp_attr_t *attr,
                                    const char **why_p)
{
    if (attr->timeout > 31) {
        *why_p = "timeout above 31";
    } else if (attr->retry_cnt > 7) {
        *why_p = "retry_cnt above 7";
    } else if (attr->rnr_retry > 7) {
        *why_p = "rnr_retry above 7";
    } else if (attr->min_rnr_timer > 31) {
        *why_p = "min_rnr_timer above 31";
    } else {
        return 0;
    }
    return EINVAL;
}

uint32_t dcx_mlx5_mtu_bytes(enum ibv_mtu mtu)
{
    if ((mtu < IBV_MTU_256) || (mtu > IBV_MTU_4096)) {
        return 0;
    }
    return 128u << mtu;
}

enum ibv_mtu dcx_mlx5_mtu_enum(uint32_t bytes)
{
    /* clang-format off */
    switch (bytes) {
    case 256:  return IBV_MTU_256;
    case 512:  return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    case 4096: return IBV_MTU_4096;
    default:   return (enum ibv_mtu)0;
    }
    /* clang-format on */
}

double dcx_mlx5_link_bandwidth(uint8_t active_width, uint8_t active_speed)
{
    double lanes, gbps, coding;

    /* clang-format off */
    switch (active_width) {
    case 1:  lanes = 1;  break;
    case 2:  lanes = 4;  break;
    case 4:  lanes = 8;  break;
    case 8:  lanes = 12; break;
    case 16: lanes = 2;  break;
    default: return 0;
    }
    /* clang-format on */
    /* clang-format off */
    switch (active_speed) {
    case 1:   gbps = 2.5;      coding = 8.0 / 10.0; break;  /* SDR */
    case 2:   gbps = 5.0;      coding = 8.0 / 10.0; break;  /* DDR */
    case 4:   gbps = 10.0;     coding = 8.0 / 10.0; break;  /* QDR */
    case 8:   gbps = 10.3125;  coding = 64.0 / 66.0; break; /* FDR10 */
    case 16:  gbps = 14.0625;  coding = 64.0 / 66.0; break; /* FDR */
    case 32:  gbps = 25.78125; coding = 64.0 / 66.0; break; /* EDR */
    case 64:  gbps = 53.125;   coding = 64.0 / 66.0; break; /* HDR */
    case 128: gbps = 106.25;   coding = 64.0 / 66.0; break; /* NDR */
    default:  return 0;
    }
    /* clang-format on */
    return lanes * gbps * coding * 1e9 / 8.0;
}

/* ------------------------------------------------------------------------
 * Capabilities
 * ------------------------------------------------------------------------ */
/* Performance model: a ConnectX DC round trip costs a little more than RC
 * (the DCI connects per destination); RoCE adds switch/NIC Ethernet
 * latency.  Used only for UCX's transport selection, not for behaviour. */
#define DCX_MLX5_LATENCY_IB_NS   800.0
#define DCX_MLX5_LATENCY_ROCE_NS 1100.0
#define DCX_MLX5_OVERHEAD_NS     40.0
/* One registration: the NIC pins the pages and writes their translation
 * entries (the defaults of UCX's ib md, UCX_IB_MEM_REG_OVERHEAD/GROWTH). */
#define DCX_MLX5_REG_OVERHEAD_NS 16000.0
#define DCX_MLX5_REG_GROWTH_NS   0.06
#define DCX_MLX5_BW_UNKNOWN_BPS  (100e9 / 8.0)

static void dcx_mlx5_strlcpy(char *dst, const char *src, size_t size)
{
    size_t n = strnlen(src, size - 1);

    memcpy(dst, src, n);
    dst[n] = '\0';
}

uint32_t dcx_mlx5_rd_atomic_first(int max_qp_init_rd_atom)
{
    uint32_t p = 1;

    if (max_qp_init_rd_atom <= 0) {
        return 0;
    }
    /* The kernel programs 2^ceil(log2(n)); a power of two never asks for
     * more than n.  128 is the largest power of two the u8 field holds. */
    while ((p < 128) && ((int)(p * 2) <= max_qp_init_rd_atom)) {
        p *= 2;
    }
    return p;
}

uint32_t dcx_mlx5_rd_atomic_next(uint32_t cur)
{
    return cur / 2;
}

/* ------------------------------------------------------------------------
 * Firmware capabilities
 * ------------------------------------------------------------------------ */
/* cmd_hca_cap: atomic; atomic_caps: operations and operand sizes (bitmaps
 * of sizes in bytes) of RC and DC */
#define DCX_MLX5_CAP_ATOMIC_BIT     542u
#define DCX_MLX5_ATOMIC_OPS_BIT     144u
#define DCX_MLX5_ATOMIC_SIZE_QP_BIT 176u
#define DCX_MLX5_ATOMIC_SIZE_DC_BIT 208u
#define DCX_MLX5_ATOMIC_OPS_ALL     0xfu /* CS, FA, masked CS, masked FA */
/* cmd_hca_cap: tag_matching, rndv_offload_dc, log_tag_matching_list_sz */
#define DCX_MLX5_CAP_TM_BIT          1520u
#define DCX_MLX5_CAP_TM_RNDV_DC_BIT  1522u
#define DCX_MLX5_CAP_TM_LOG_LIST_BIT 1523u

void dcx_mlx5_hca_cap_query_in(void *in, unsigned type)
{
    uint8_t *b = in;

    memset(b, 0, DCX_MLX5_HCA_CAP_IN_LEN);
    /* opcode: bits 0..15; op_mod: bits 48..63 = type << 1 | current (1) */
    b[0] = (uint8_t)(DCX_MLX5_QUERY_HCA_CAP_OP >> 8);
    b[1] = (uint8_t)(DCX_MLX5_QUERY_HCA_CAP_OP & 0xff);
    b[6] = (uint8_t)(type >> 7);
    b[7] = (uint8_t)((type << 1) | 1);
}

uint32_t dcx_mlx5_prm_get(const void *buf, uint32_t bit, uint32_t width)
{
    const uint8_t *d = (const uint8_t *)buf + (bit / 32) * 4;
    uint32_t dword   = ((uint32_t)d[0] << 24) | ((uint32_t)d[1] << 16) |
                     ((uint32_t)d[2] << 8) | d[3];

    return (dword >> (32 - (bit % 32) - width)) & ((1u << width) - 1);
}

void dcx_mlx5_prm_set(void *buf, uint32_t bit, uint32_t width, uint32_t val)
{
    uint8_t *b = buf;
    uint32_t i, pos;
    uint8_t mask;

    for (i = 0; i < width; ++i) {
        pos  = bit + width - 1 - i; /* the value's bit i */
        mask = (uint8_t)(0x80u >> (pos % 8));
        if ((val >> i) & 1) {
            b[pos / 8] |= mask;
        } else {
            b[pos / 8] &= (uint8_t)~mask;
        }
    }
}

void dcx_mlx5_prm_set64(void *buf, uint32_t bit, uint64_t val)
{
    dcx_mlx5_prm_set(buf, bit, 32, (uint32_t)(val >> 32));
    dcx_mlx5_prm_set(buf, bit + 32, 32, (uint32_t)val);
}

/* A QUERY_HCA_CAP answer that can be read: its capability, or NULL */
static const uint8_t *dcx_mlx5_hca_cap(const void *out, size_t len)
{
    const uint8_t *b = out;

    return ((len >= DCX_MLX5_HCA_CAP_OUT_LEN) && (b[0] == 0)) ? b + 16 : NULL;
}

int dcx_mlx5_atomic_hca_parse(const void *general, const void *atomic,
                              size_t len, uint32_t *masked_p,
                              const char **why_p)
{
    const uint8_t *gen = dcx_mlx5_hca_cap(general, len);
    const uint8_t *at  = dcx_mlx5_hca_cap(atomic, len);
    uint32_t sizes;

    *masked_p = 0;
    if (gen == NULL) {
        *why_p = "QUERY_HCA_CAP (general) failed or answered short";
        return EPROTO;
    }
    if (!dcx_mlx5_prm_get(gen, DCX_MLX5_CAP_ATOMIC_BIT, 1)) {
        return 0;
    }
    if (at == NULL) {
        *why_p = "QUERY_HCA_CAP (atomic) failed or answered short";
        return EPROTO;
    }
    if ((dcx_mlx5_prm_get(at, DCX_MLX5_ATOMIC_OPS_BIT, 16) &
         DCX_MLX5_ATOMIC_OPS_ALL) != DCX_MLX5_ATOMIC_OPS_ALL) {
        return 0;
    }
    sizes = dcx_mlx5_prm_get(at, DCX_MLX5_ATOMIC_SIZE_QP_BIT, 16) &
            dcx_mlx5_prm_get(at, DCX_MLX5_ATOMIC_SIZE_DC_BIT, 16);
    if (sizes & sizeof(uint32_t)) {
        *masked_p |= DCX_ATOMIC_MASKED_FADD32 | DCX_ATOMIC_MASKED_CSWAP32;
    }
    if (sizes & sizeof(uint64_t)) {
        *masked_p |= DCX_ATOMIC_MASKED_FADD64 | DCX_ATOMIC_MASKED_CSWAP64;
    }
    return 0;
}

int dcx_mlx5_tm_hca_parse(const void *general, size_t len, uint32_t *max_tags_p,
                          const char **why_p)
{
    const uint8_t *gen = dcx_mlx5_hca_cap(general, len);
    uint32_t log_sz;

    *max_tags_p = 0;
    if (gen == NULL) {
        *why_p = "QUERY_HCA_CAP (general) failed or answered short";
        return EPROTO;
    }
    log_sz = dcx_mlx5_prm_get(gen, DCX_MLX5_CAP_TM_LOG_LIST_BIT, 5);
    if (!dcx_mlx5_prm_get(gen, DCX_MLX5_CAP_TM_BIT, 1)) {
        *why_p = "the firmware has no tag matching";
    } else if (!dcx_mlx5_prm_get(gen, DCX_MLX5_CAP_TM_RNDV_DC_BIT, 1)) {
        *why_p = "the firmware has no rendezvous offload on DC";
    } else if (log_sz < 1) {
        *why_p = "the tag list has no room for an entry";
    } else {
        /* an XRQ's log_matching_list_sz has 4 bits */
        *max_tags_p = (1u << ((log_sz < 15) ? log_sz : 15)) - 1;
    }
    return 0;
}

void dcx_mlx5_caps_translate(const char *name,
                             const struct ibv_device_attr_ex *dattr,
                             const struct ibv_port_attr *pattr,
                             const dcx_mlx5_probe_t *probe,
                             dcx_dev_caps_t *caps)
{
    const struct ibv_device_attr *a = &dattr->orig_attr;
    uint32_t dci_wr;
    double bw;

    memset(caps, 0, sizeof(*caps));
    dcx_mlx5_strlcpy(caps->name, name, sizeof(caps->name));
    dcx_mlx5_strlcpy(caps->fw_ver, a->fw_ver, sizeof(caps->fw_ver));
    caps->vendor_id      = a->vendor_id;
    caps->vendor_part_id = a->vendor_part_id;

    /* The NIC executes one-sided operations without the target's CPU. */
    caps->flags = DCX_CAP_HELPER;
    if (probe->dc_ok) {
        caps->flags |= DCX_CAP_DC;
    }
    if ((a->atomic_cap != IBV_ATOMIC_NONE) && probe->dct_atomic_ok) {
        caps->atomic_flags = DCX_ATOMIC_FADD64 | DCX_ATOMIC_CSWAP64;
    }

    /* max_qp_wr counts 64-byte basic blocks for libmlx5; a DCI WQE takes
     * several of them. */
    dci_wr = dcx_mlx5_dci_max_wr(probe->dci_wqe_size, (uint32_t)a->max_qp_wr);
    caps->max_qp_wr     = (dci_wr > 0) ? dci_wr : (uint32_t)a->max_qp_wr;
    caps->max_srq_wr    = (uint32_t)a->max_srq_wr;
    caps->max_cqe       = (uint32_t)a->max_cqe;
    caps->max_sge       = probe->dci_max_sge;
    /* SRQ receives go through a stack array of DCX_MLX5_MAX_SGE entries */
    caps->max_recv_sge  = ((uint32_t)a->max_srq_sge < DCX_MLX5_MAX_SGE) ?
                              (uint32_t)a->max_srq_sge :
                              DCX_MLX5_MAX_SGE;
    caps->max_inline    = probe->dci_max_inline;
    /* The DC limit (2^log_max_ra_req_dc) is visible only through DEVX;
     * verbs reports the RC one.  The probe found what a DCI's RTS accepts. */
    caps->max_rd_atomic = dcx_mlx5_rd_atomic_first(a->max_qp_init_rd_atom);
    if ((probe->dci_max_rd_atomic != 0) &&
        (probe->dci_max_rd_atomic < caps->max_rd_atomic)) {
        caps->max_rd_atomic = probe->dci_max_rd_atomic;
    }
    caps->max_dci      = (uint32_t)a->max_qp;
    caps->max_mr       = (uint32_t)a->max_mr;
    caps->max_mr_size  = a->max_mr_size;
    caps->max_msg_size = pattr->max_msg_sz;
    caps->mtu          = dcx_mlx5_mtu_bytes(pattr->active_mtu);
    caps->addr_len     = DCX_MLX5_ADDR_LEN;

    caps->latency_ns = (pattr->link_layer == IBV_LINK_LAYER_ETHERNET) ?
                           DCX_MLX5_LATENCY_ROCE_NS :
                           DCX_MLX5_LATENCY_IB_NS;
    bw = dcx_mlx5_link_bandwidth(pattr->active_width, pattr->active_speed);
    caps->bandwidth_Bps   = (bw > 0) ? bw : DCX_MLX5_BW_UNKNOWN_BPS;
    caps->overhead_ns     = DCX_MLX5_OVERHEAD_NS;
    caps->reg_overhead_ns = DCX_MLX5_REG_OVERHEAD_NS;
    caps->reg_growth_ns   = DCX_MLX5_REG_GROWTH_NS;
}

int dcx_mlx5_port_check(const struct ibv_port_attr *pattr, const char **why_p)
{
    if ((pattr->link_layer != IBV_LINK_LAYER_UNSPECIFIED) &&
        (pattr->link_layer != IBV_LINK_LAYER_INFINIBAND) &&
        (pattr->link_layer != IBV_LINK_LAYER_ETHERNET)) {
        *why_p = "unknown link layer";
        return ENODEV;
    }
    if (pattr->state != IBV_PORT_ACTIVE) {
        *why_p = "port is not active";
        return ENODEV;
    }
    if ((pattr->link_layer != IBV_LINK_LAYER_ETHERNET) &&
        ((pattr->lid == 0) || (pattr->lid >= 0xc000))) {
        *why_p = "InfiniBand port without a unicast LID (no subnet manager?)";
        return ENODEV;
    }
    if (dcx_mlx5_mtu_bytes(pattr->active_mtu) == 0) {
        *why_p = "active MTU code out of range";
        return ENODEV;
    }
    return 0;
}
