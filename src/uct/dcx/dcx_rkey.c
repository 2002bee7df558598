/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx remote keys: what uct_md_mkey_pack() writes for a dcx memory handle
 * (plain or strided: both carry the device rkey in their MR view) and what
 * uct_rkey_unpack() reads back, with a magic, a version and a check word so
 * that a foreign or corrupt buffer is refused with an error.
 */
#include "dcx_md.h"

#include <ucs/debug/log.h>

#include <inttypes.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Remote keys
 * ------------------------------------------------------------------------ */

static uint16_t uct_dcx_rkey_check(const uct_dcx_packed_rkey_t *packed)
{
    uint32_t sum = packed->magic ^ packed->rkey ^
                   ((uint32_t)packed->version << 8) ^ packed->flags;

    return (uint16_t)(sum ^ (sum >> 16) ^ 0xdc58);
}

ucs_status_t uct_dcx_mkey_pack(uct_md_h uct_md, uct_mem_h uct_memh,
                               const uct_md_mkey_pack_params_t *params,
                               void *rkey_buffer)
{
    uct_dcx_md_t *md     = ucs_derived_of(uct_md, uct_dcx_md_t);
    uct_dcx_memh_t *memh = uct_memh;
    uct_dcx_packed_rkey_t packed;

    if ((memh == NULL) || (memh->mr == NULL) || (rkey_buffer == NULL)) {
        ucs_error("dcx md %s: cannot pack an rkey of memh %p into %p", md->name,
                  memh, rkey_buffer);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((params != NULL) &&
        (params->field_mask & UCT_MD_MKEY_PACK_FIELD_FLAGS) &&
        (params->flags & UCT_DCX_MKEY_PACK_FLAGS_INVALIDATE)) {
        ucs_debug("dcx md %s: rkeys for invalidation are not supported "
                  "(UCT_MD_FLAG_INVALIDATE is not set)",
                  md->name);
        return UCS_ERR_UNSUPPORTED;
    }

    packed.magic   = UCT_DCX_RKEY_MAGIC;
    packed.version = UCT_DCX_RKEY_VERSION;
    packed.flags   = 0;
    packed.rkey    = memh->mr->rkey;
    packed.check   = uct_dcx_rkey_check(&packed);
    /* the buffer has no alignment guarantee */
    memcpy(rkey_buffer, &packed, sizeof(packed));
    return UCS_OK;
}

void uct_dcx_rkey_pack_raw(uint32_t rkey, void *rkey_buffer)
{
    uct_dcx_packed_rkey_t packed;

    packed.magic   = UCT_DCX_RKEY_MAGIC;
    packed.version = UCT_DCX_RKEY_VERSION;
    packed.flags   = 0;
    packed.rkey    = rkey;
    packed.check   = uct_dcx_rkey_check(&packed);
    memcpy(rkey_buffer, &packed, sizeof(packed));
}

ucs_status_t uct_dcx_rkey_unpack(uct_component_t *component,
                                 const void *rkey_buffer, uct_rkey_t *rkey_p,
                                 void **handle_p)
{
    uct_dcx_packed_rkey_t packed;

    if (rkey_buffer == NULL) {
        ucs_error("dcx: cannot unpack an rkey from a NULL buffer");
        return UCS_ERR_INVALID_PARAM;
    }

    memcpy(&packed, rkey_buffer, sizeof(packed));
    if (packed.magic != UCT_DCX_RKEY_MAGIC) {
        ucs_error("dcx: packed rkey at %p is not a dcx rkey (magic 0x%08x, "
                  "expected 0x%08x)",
                  rkey_buffer, packed.magic, UCT_DCX_RKEY_MAGIC);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((packed.version != UCT_DCX_RKEY_VERSION) || (packed.flags != 0)) {
        ucs_error("dcx: packed rkey at %p has version %u flags 0x%x, this dcx "
                  "reads version %u flags 0",
                  rkey_buffer, packed.version, packed.flags,
                  UCT_DCX_RKEY_VERSION);
        return UCS_ERR_INVALID_PARAM;
    }

    if (packed.check != uct_dcx_rkey_check(&packed)) {
        ucs_error("dcx: packed rkey at %p is corrupt (rkey 0x%x check 0x%04x, "
                  "expected 0x%04x)",
                  rkey_buffer, packed.rkey, packed.check,
                  uct_dcx_rkey_check(&packed));
        return UCS_ERR_INVALID_PARAM;
    }

    *rkey_p   = packed.rkey;
    *handle_p = NULL;
    return UCS_OK;
}

ucs_status_t uct_dcx_rkey_release(uct_component_t *component, uct_rkey_t rkey,
                                  void *handle)
{
    if ((handle != NULL) || (rkey > UINT32_MAX)) {
        ucs_error("dcx: rkey 0x%" PRIx64 " handle %p was not unpacked by dcx",
                  (uint64_t)rkey, handle);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}
