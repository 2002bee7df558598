/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: mlx5dv_devx_general_cmd, answering the one firmware
 * command modelled, QUERY_HCA_CAP of the general device capabilities
 * (op_mod 0 maximum or 1 current; both answer the same).
 *
 * The answer is the command's output layout (status, syndrome, then the
 * cmd_hca_cap structure at byte 16, big-endian bit fields) with the UMR
 * capabilities of a ConnectX-6 set:
 *  - log_max_klm_list_size 16 (an indirect key of up to 65536 entries),
 *  - umr_extended_translation_offset 1,
 *  - repeated_block_disabled, umr_modify_entity_size_disabled,
 *    umr_modify_atomic_disabled and umr_indirect_mkey_disabled 0 (repeated
 *    blocks, atomics through indirect keys and UMR on them allowed).
 * Every other field reads 0: the emulation models no DEVX object, so it
 * does not claim what a program would go on to use through DEVX (UCX's ib
 * module, seeing log_max_msg 0, keeps to verbs).
 *
 * Refused as the kernel and rdma-core refuse: a context that is not of the
 * emulation or has no DEVX (EOPNOTSUPP), buffers shorter than the command
 * header (EINVAL); any other command or capability type is not modelled
 * (EOPNOTSUPP).  Failures return the errno value and set errno.
 */
#include "emu/emu.h"
#include "emu/emu_dv.h"

#include <errno.h>
#include <string.h>

#define EMU_CMD_HDR             16u    /* bytes of a command's in/out header */
#define EMU_QUERY_HCA_CAP       0x100u /* opcode */
#define EMU_HCA_CAP_GENERAL     0u     /* op_mod >> 1 */
#define EMU_CAP_UMR_EXT_XLT_OFF 0x118u /* bit offsets in cmd_hca_cap */
#define EMU_CAP_LOG_MAX_KLM     0x11au /* 6 bits */
#define EMU_CAP_LOG_MAX_KLM_W   6u
#define EMU_LOG_MAX_KLM         16u

/* Sets a field of 'width' bits at big-endian bit offset 'bit' of buf. */
static void emu_devx_set(uint8_t *buf, uint32_t bit, uint32_t width,
                         uint32_t val)
{
    uint8_t *d     = buf + (bit / 32) * 4;
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

static int emu_devx_fail(int err)
{
    errno = err;
    return err;
}

int dcx_emu_mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in,
                                    size_t inlen, void *out, size_t outlen)
{
    const uint8_t *cmd = in;
    uint8_t cap[EMU_CMD_HDR + 4096];
    uint16_t opcode, op_mod;
    const char *name;

    if ((context == NULL) || (emu_dev_of(context->device) == NULL)) {
        emu_error("mlx5dv_devx_general_cmd: context %p is not of the "
                  "emulation",
                  (void *)context);
        return emu_devx_fail(EOPNOTSUPP);
    }
    name = context->device->name;
    if (!emu_ctx(context)->devx) {
        emu_error("%s: mlx5dv_devx_general_cmd: the context has no DEVX "
                  "(MLX5DV_CONTEXT_FLAGS_DEVX)",
                  name);
        return emu_devx_fail(EOPNOTSUPP);
    }
    if ((in == NULL) || (out == NULL) || (inlen < EMU_CMD_HDR) ||
        (outlen < EMU_CMD_HDR)) {
        emu_error("%s: mlx5dv_devx_general_cmd: in (%zu bytes) or out (%zu "
                  "bytes) shorter than the %u-byte command header",
                  name, inlen, outlen, EMU_CMD_HDR);
        return emu_devx_fail(EINVAL);
    }
    opcode = (uint16_t)((cmd[0] << 8) | cmd[1]);
    op_mod = (uint16_t)((cmd[6] << 8) | cmd[7]);
    if ((opcode != EMU_QUERY_HCA_CAP) ||
        ((op_mod >> 1) != EMU_HCA_CAP_GENERAL)) {
        emu_error("%s: mlx5dv_devx_general_cmd: opcode 0x%x op_mod 0x%x is "
                  "not modelled (QUERY_HCA_CAP of the general capabilities "
                  "only)",
                  name, opcode, op_mod);
        return emu_devx_fail(EOPNOTSUPP);
    }
    memset(cap, 0, sizeof(cap));
    emu_devx_set(cap + EMU_CMD_HDR, EMU_CAP_UMR_EXT_XLT_OFF, 1, 1);
    emu_devx_set(cap + EMU_CMD_HDR, EMU_CAP_LOG_MAX_KLM, EMU_CAP_LOG_MAX_KLM_W,
                 EMU_LOG_MAX_KLM);
    /* the firmware writes what the output buffer takes */
    memcpy(out, cap, (outlen < sizeof(cap)) ? outlen : sizeof(cap));
    if (outlen > sizeof(cap)) {
        memset((uint8_t *)out + sizeof(cap), 0, outlen - sizeof(cap));
    }
    emu_debug("%s: QUERY_HCA_CAP (general, op_mod 0x%x) answered", name,
              op_mod);
    return 0;
}
