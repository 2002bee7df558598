/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: mlx5dv_devx_general_cmd, the object-less firmware
 * commands, and what every DEVX command shares (emu_devx.h).
 *
 * Modelled:
 *  - QUERY_HCA_CAP of the general capabilities and of the atomic ones
 *    (op_mod 0 maximum or 1 current; both answer the same): the values of
 *    the device the emulation is, a ConnectX-6 port with DC (dct), RC and
 *    UD, indirect mkeys (log_max_klm_list_size 16, UMR on them allowed,
 *    KSM keys of fixed-size entries: fixed_buffer_size), RMPs (shared
 *    receive queues made through DEVX),
 *    messages of up to 2^30 bytes, compact address vectors, 16 READs or
 *    atomics outstanding per DCI, 8-byte atomics (compare-swap, fetch-add
 *    and their masked forms) whose operand and result are in host order
 *    in memory (atomic_req_8B_endianness_mode 1), and 4-byte masked ones,
 *    whose operand is in host order and whose fetched value is written in
 *    network order (that mode is for 8-byte operands).  Not claimed:
 *    ODP (pg), XRQs and tag matching, CQE compression, CQE version 1,
 *    LAG, multi-packet receive queues;
 *  - QUERY_HCA_CAP of the device memory capabilities: every field 0, no
 *    MEMIC and no device memory (ibv_query_device_ex's max_dm_size is 0
 *    too), so that a program asking learns there is none;
 *  - QUERY_LAG: LAG off (lag_state 0), as on a single port.
 *
 * Refused as the kernel and rdma-core refuse: a context that is not of the
 * emulation or has no DEVX (EOPNOTSUPP), buffers shorter than the command
 * header (EINVAL).  Any other command or capability type is answered as
 * firmware answers one it does not know (status BAD_OP or BAD_PARAM,
 * EREMOTEIO).  Failures return the errno value and set errno.
 */
#include "emu/emu_devx.h"
#include "emu/emu_dv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Capability types (op_mod >> 1) */
#define EMU_CAP_GENERAL 0u
#define EMU_CAP_ATOMIC  3u
#define EMU_CAP_DEV_MEM 0xfu

/* Fields of cmd_hca_cap (bit offset, width from the capability's start) */
#define EMU_CAP_LOG_MAX_QP_SZ   136u, 8u
#define EMU_CAP_FIXED_BUF_SIZE  264u, 1u
#define EMU_CAP_UMR_EXT_XLT_OFF 280u, 1u
#define EMU_CAP_LOG_MAX_KLM     282u, 6u
#define EMU_CAP_LOG_MAX_RA_DC   298u, 6u
#define EMU_CAP_NUM_PORTS       440u, 8u
#define EMU_CAP_LOG_MAX_MSG     451u, 5u
#define EMU_CAP_COMPACT_AV      512u, 1u
#define EMU_CAP_DCT             538u, 1u
#define EMU_CAP_ATOMIC_FLAG     542u, 1u
#define EMU_CAP_LOG_MAX_RMP     899u, 5u
#define EMU_CAP_TAG_MATCHING    1520u, 1u
#define EMU_CAP_RNDV_OFFLOAD_DC 1522u, 1u
#define EMU_CAP_LOG_TM_LIST     1523u, 5u

/* Fields of atomic_caps */
#define EMU_ATOMIC_8B_MODE     64u, 2u
#define EMU_ATOMIC_8B_MODE1_OK 70u, 1u
#define EMU_ATOMIC_OPS         144u, 16u
#define EMU_ATOMIC_SIZE_QP     176u, 16u
#define EMU_ATOMIC_SIZE_DC     208u, 16u

#define EMU_LOG_MAX_KLM    16u
#define EMU_LOG_MAX_MSG    30u
#define EMU_LOG_MAX_RMP    16u
#define EMU_ATOMIC_OPS_ALL 0xfu /* CS, FA, masked CS, masked FA */
#define EMU_ATOMIC_SIZES   0xcu /* 4- and 8-byte operands */

uint32_t emu_prm_get(const void *buf, uint32_t bit, uint32_t width)
{
    const uint8_t *d = (const uint8_t *)buf + (bit / 32) * 4;
    uint32_t shift   = 32 - (bit % 32) - width;
    uint32_t mask    = (width == 32) ? ~0u : ((1u << width) - 1);
    uint32_t dword   = ((uint32_t)d[0] << 24) | ((uint32_t)d[1] << 16) |
                     ((uint32_t)d[2] << 8) | d[3];

    return (dword >> shift) & mask;
}

void emu_prm_set(void *buf, uint32_t bit, uint32_t width, uint32_t val)
{
    uint8_t *d     = (uint8_t *)buf + (bit / 32) * 4;
    uint32_t shift = 32 - (bit % 32) - width;
    uint32_t mask  = ((width == 32) ? ~0u : ((1u << width) - 1)) << shift;
    uint32_t dword = ((uint32_t)d[0] << 24) | ((uint32_t)d[1] << 16) |
                     ((uint32_t)d[2] << 8) | d[3];

    dword = (dword & ~mask) | ((val << shift) & mask);
    d[0]  = (uint8_t)(dword >> 24);
    d[1]  = (uint8_t)(dword >> 16);
    d[2]  = (uint8_t)(dword >> 8);
    d[3]  = (uint8_t)dword;
}

uint64_t emu_prm_get64(const void *buf, uint32_t bit)
{
    return ((uint64_t)emu_prm_get(buf, bit, 32) << 32) |
           emu_prm_get(buf, bit + 32, 32);
}

int emu_devx_refuse(const char *name, const char *call, uint16_t opcode,
                    void *out, size_t outlen, uint8_t status, uint32_t syndrome,
                    const char *fmt, ...)
{
    char why[160];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    emu_error("%s: %s: opcode 0x%x refused (status 0x%x, syndrome 0x%x): %s",
              name, call, opcode, status, syndrome, why);
    return emu_devx_answer(out, outlen, status, syndrome);
}

int emu_devx_answer(void *out, size_t outlen, uint8_t status, uint32_t syndrome)
{
    if ((out != NULL) && (outlen >= 8)) {
        memset(out, 0, (outlen < EMU_CMD_HDR) ? outlen : EMU_CMD_HDR);
        emu_prm_set(out, 0, 8, status);
        emu_prm_set(out, 32, 32, syndrome);
    }
    errno = EREMOTEIO;
    return EREMOTEIO;
}

emu_ctx_t *emu_devx_ctx(struct ibv_context *context, const char *call,
                        const void *in, size_t inlen, const void *out,
                        size_t outlen)
{
    emu_ctx_t *ectx;

    if ((context == NULL) || (emu_dev_of(context->device) == NULL)) {
        emu_error("%s: context %p is not of the emulation", call,
                  (void *)context);
        errno = EOPNOTSUPP;
        return NULL;
    }
    ectx = emu_ctx(context);
    if (!ectx->devx) {
        emu_error("%s: %s: the context has no DEVX "
                  "(MLX5DV_CONTEXT_FLAGS_DEVX)",
                  context->device->name, call);
        errno = EOPNOTSUPP;
        return NULL;
    }
    if ((in == NULL) || (out == NULL) || (inlen < EMU_CMD_HDR) ||
        (outlen < EMU_CMD_HDR)) {
        emu_error("%s: %s: in (%zu bytes) or out (%zu bytes) shorter than "
                  "the %u-byte command header",
                  context->device->name, call, inlen, outlen, EMU_CMD_HDR);
        errno = EINVAL;
        return NULL;
    }
    return ectx;
}

uint32_t emu_log2(uint32_t v)
{
    uint32_t l = 0;

    while ((1u << (l + 1)) <= v) {
        ++l;
    }
    return l;
}

static void emu_devx_cap_general(emu_ctx_t *ectx, uint8_t *cap)
{
    const dcx_dev_caps_t *caps = dcx_dev_caps(ectx->dev->soft);
    uint32_t ra = emu_log2(caps->max_rd_atomic ? caps->max_rd_atomic : 1);

    EMU_PRM_SET(cap, EMU_CAP_LOG_MAX_QP_SZ, emu_log2(caps->max_qp_wr));
    EMU_PRM_SET(cap, EMU_CAP_FIXED_BUF_SIZE, 1);
    EMU_PRM_SET(cap, EMU_CAP_UMR_EXT_XLT_OFF, 1);
    EMU_PRM_SET(cap, EMU_CAP_LOG_MAX_KLM, EMU_LOG_MAX_KLM);
    EMU_PRM_SET(cap, EMU_CAP_LOG_MAX_RA_DC, ra);
    EMU_PRM_SET(cap, EMU_CAP_NUM_PORTS, 1);
    EMU_PRM_SET(cap, EMU_CAP_LOG_MAX_MSG, EMU_LOG_MAX_MSG);
    EMU_PRM_SET(cap, EMU_CAP_COMPACT_AV, 1);
    EMU_PRM_SET(cap, EMU_CAP_DCT, 1);
    EMU_PRM_SET(cap, EMU_CAP_ATOMIC_FLAG, 1);
    EMU_PRM_SET(cap, EMU_CAP_LOG_MAX_RMP, EMU_LOG_MAX_RMP);
    if (caps->flags & DCX_CAP_TM) {
        /* XRQs with tag matching, their rendezvous fetched over DC; not
         * over RC (rndv_offload_rc 0): the soft device's rendezvous go
         * back through the DCT that the request's RAVH names */
        EMU_PRM_SET(cap, EMU_CAP_TAG_MATCHING, 1);
        EMU_PRM_SET(cap, EMU_CAP_RNDV_OFFLOAD_DC, 1);
        EMU_PRM_SET(cap, EMU_CAP_LOG_TM_LIST, emu_log2(caps->tm_max_tags + 1));
    }
}

static void emu_devx_cap_atomic(uint8_t *cap)
{
    EMU_PRM_SET(cap, EMU_ATOMIC_8B_MODE, 1);
    EMU_PRM_SET(cap, EMU_ATOMIC_8B_MODE1_OK, 1);
    EMU_PRM_SET(cap, EMU_ATOMIC_OPS, EMU_ATOMIC_OPS_ALL);
    EMU_PRM_SET(cap, EMU_ATOMIC_SIZE_QP, EMU_ATOMIC_SIZES);
    EMU_PRM_SET(cap, EMU_ATOMIC_SIZE_DC, EMU_ATOMIC_SIZES);
}

int dcx_emu_mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in,
                                    size_t inlen, void *out, size_t outlen)
{
    static const char call[] = "mlx5dv_devx_general_cmd";
    uint8_t reply[EMU_CMD_HDR + 4096];
    emu_ctx_t *ectx;
    uint16_t opcode, op_mod;
    const char *name;

    ectx = emu_devx_ctx(context, call, in, inlen, out, outlen);
    if (ectx == NULL) {
        return errno;
    }
    name   = context->device->name;
    opcode = (uint16_t)EMU_PRM_GET(in, EMU_PRM_OPCODE);
    op_mod = (uint16_t)EMU_PRM_GET(in, EMU_PRM_OPMOD);
    memset(reply, 0, sizeof(reply));
    switch (opcode) {
    case EMU_CMD_QUERY_HCA_CAP:
        if ((op_mod >> 1) == EMU_CAP_GENERAL) {
            emu_devx_cap_general(ectx, reply + EMU_CMD_HDR);
        } else if ((op_mod >> 1) == EMU_CAP_ATOMIC) {
            emu_devx_cap_atomic(reply + EMU_CMD_HDR);
        } else if ((op_mod >> 1) == EMU_CAP_DEV_MEM) {
            /* every field 0: no device memory (MEMIC), as
             * ibv_query_device_ex's max_dm_size 0 says */
        } else {
            return emu_devx_refuse(name, call, opcode, out, outlen,
                                   EMU_STAT_BAD_PARAM, 0x100u | (op_mod >> 1),
                                   "capability type 0x%x is not modelled "
                                   "(general, atomic, device memory only)",
                                   op_mod >> 1);
        }
        break;
    case EMU_CMD_QUERY_LAG:
        break; /* lag_state 0: no LAG */
    default:
        return emu_devx_refuse(name, call, opcode, out, outlen, EMU_STAT_BAD_OP,
                               0x1u, "not a command the emulation models");
    }
    /* the firmware writes what the output buffer takes */
    memcpy(out, reply, (outlen < sizeof(reply)) ? outlen : sizeof(reply));
    if (outlen > sizeof(reply)) {
        memset((uint8_t *)out + sizeof(reply), 0, outlen - sizeof(reply));
    }
    emu_debug("%s: %s opcode 0x%x op_mod 0x%x answered", name, call, opcode,
              op_mod);
    return 0;
}
