/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx device layer: the tag-matching wire headers (included by dcx_dev.h).
 */
#ifndef DCX_TM_WIRE_H_
#define DCX_TM_WIRE_H_

#include <endian.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Tag-matching wire headers (rdma-core <infiniband/tm_types.h>, and UCX's
 * DC address header).  Every field is big-endian on the wire; the pack and
 * unpack helpers take and give host order.
 *   eager:      TMH(EAGER) | payload
 *   rendezvous: TMH(RNDV) | RVH | RAVH | metadata, at most
 *               caps.tm_max_rndv_hdr bytes in all
 *   FIN:        TMH(FIN) (the device copies the request's TMH)
 *   no tag:     TMH(NO_TAG) | anything
 * ------------------------------------------------------------------------ */
enum {
    DCX_TMH_NO_TAG = 0,
    DCX_TMH_RNDV   = 1,
    DCX_TMH_FIN    = 2,
    DCX_TMH_EAGER  = 3
};

typedef struct dcx_tmh {
    uint8_t opcode;      /* DCX_TMH_* */
    uint8_t reserved[3]; /* 0 */
    uint32_t app_ctx;    /* big-endian */
    uint64_t tag;        /* big-endian */
} dcx_tmh_t;

typedef struct dcx_rvh {
    uint64_t va;   /* big-endian: sender's data */
    uint32_t rkey; /* big-endian */
    uint32_t len;  /* big-endian */
} dcx_rvh_t;

/* DC address of the sender, for the device's READ and FIN. */
typedef struct dcx_ravh {
    uint32_t sl_dct;   /* big-endian: sender's DCT number */
    uint32_t reserved; /* 0 */
    uint64_t dc_key;   /* big-endian: sender's DC key */
} dcx_ravh_t;

#define DCX_TM_TMH_LEN  16u
#define DCX_TM_RNDV_LEN 48u /* TMH + RVH + RAVH */

/* The TMH, at any alignment.  Inline: every tagged message and every
 * receive of a tag-matching SRQ packs or reads one. */
static inline void dcx_tmh_pack(void *buf, uint8_t opcode, uint32_t app_ctx,
                                uint64_t tag)
{
    dcx_tmh_t h;

    memset(&h, 0, sizeof(h));
    h.opcode  = opcode;
    h.app_ctx = htobe32(app_ctx);
    h.tag     = htobe64(tag);
    memcpy(buf, &h, sizeof(h));
}

static inline void dcx_tmh_unpack(const void *buf, uint8_t *opcode_p,
                                  uint32_t *app_ctx_p, uint64_t *tag_p)
{
    dcx_tmh_t h;

    memcpy(&h, buf, sizeof(h));
    *opcode_p  = h.opcode;
    *app_ctx_p = be32toh(h.app_ctx);
    *tag_p     = be64toh(h.tag);
}

void dcx_rvh_pack(void *buf, uint64_t va, uint32_t rkey, uint32_t len);
void dcx_rvh_unpack(const void *buf, uint64_t *va_p, uint32_t *rkey_p,
                    uint32_t *len_p);
void dcx_ravh_pack(void *buf, uint32_t dctn, uint64_t dc_key);
void dcx_ravh_unpack(const void *buf, uint32_t *dctn_p, uint64_t *dc_key_p);

#ifdef __cplusplus
}
#endif

#endif
