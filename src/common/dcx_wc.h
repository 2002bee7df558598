/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx device layer: one work completion (dcx_wc_t), as a CQ poll returns
 * it (dcx_dev.h: dcx_cq_poll), with its status and opcode values.
 */
#ifndef DCX_WC_H_
#define DCX_WC_H_

#include <stdint.h>

typedef enum {
    DCX_WC_SUCCESS = 0,
    DCX_WC_LOC_LEN_ERR,       /* receive buffer too small */
    DCX_WC_LOC_QP_OP_ERR,     /* malformed WR for this QP */
    DCX_WC_LOC_PROT_ERR,      /* bad lkey / local access */
    DCX_WC_WR_FLUSH_ERR,      /* QP in error: WR flushed */
    DCX_WC_REM_INV_REQ_ERR,   /* too long for the receive, misaligned atomic */
    DCX_WC_REM_ACCESS_ERR,    /* bad rkey, access or bounds at the target */
    DCX_WC_REM_OP_ERR,        /* target could not execute */
    DCX_WC_RETRY_EXC_ERR,     /* no answer: dead peer, wrong DCT, bad DC key */
    DCX_WC_RNR_RETRY_EXC_ERR, /* no receive posted at the target */
    DCX_WC_GENERAL_ERR,
    DCX_WC_TM_ERR,
    DCX_WC_TM_RNDV_INCOMPLETE,
    DCX_WC_STATUS_LAST
} dcx_wc_status_t;

typedef enum {
    /* requester */
    DCX_WC_SEND = 0,
    DCX_WC_RDMA_WRITE,
    DCX_WC_RDMA_READ,
    DCX_WC_COMP_SWAP,
    DCX_WC_FETCH_ADD,
    DCX_WC_MASKED_COMP_SWAP,
    DCX_WC_MASKED_FETCH_ADD,
    DCX_WC_LOCAL_INV,
    DCX_WC_UMR,
    /* responder: all have DCX_WC_RECV_BIT set */
    DCX_WC_RECV_BIT = 0x80,
    DCX_WC_RECV     = 0x80,
    DCX_WC_RECV_RDMA_WITH_IMM,
    DCX_WC_TM_ADD,
    DCX_WC_TM_DEL,
    DCX_WC_TM_SYNC,
    DCX_WC_TM_RECV,
    DCX_WC_TM_NO_TAG
} dcx_wc_opcode_t;

enum {
    DCX_WC_FLAG_WITH_IMM      = 1u << 0,
    DCX_WC_FLAG_TM_SYNC_REQ   = 1u << 1,
    DCX_WC_FLAG_TM_MATCH      = 1u << 2,
    DCX_WC_FLAG_TM_DATA_VALID = 1u << 3,
    /* a receive of a DCX_SRQ_F_IN_PLACE SRQ whose bytes are at 'data', not
     * in the receive's buffer (which was taken and holds nothing new) */
    DCX_WC_FLAG_IN_PLACE      = 1u << 4
};

/* One completion.  When status != SUCCESS only wr_id, status, qp_num and
 * vendor_err are meaningful (as with verbs), except for tag-matching
 * receives completing with DCX_WC_TM_RNDV_INCOMPLETE, whose flags, tag,
 * app context and byte_len are valid as for a success.
 *
 * Tag-matching completions, all on the TM SRQ's CQ
 * (docs/device-semantics.md section 9.8):
 *  - TM_ADD / TM_DEL / TM_SYNC: only for DCX_TM_OPF_SIGNALED operations;
 *    wr_id of the operation; TM_DEL fails with DCX_WC_TM_ERR when the entry
 *    was consumed first (its receive completion arrives instead).  ADD and
 *    DEL carry TM_SYNC_REQ when the device's unexpected count at the
 *    operation differed from the count software gave with the entry's ADD.
 *  - TM_RECV with TM_MATCH|TM_DATA_VALID: expected eager in one packet;
 *    wr_id = the entry's recv_wr_id, payload without the TMH in the
 *    entry's buffer, byte_len = payload bytes, tm_tag/tm_priv valid.
 *    LOC_LEN_ERR when the payload does not fit (nothing written).
 *  - TM_RECV with TM_MATCH then TM_RECV with TM_DATA_VALID: expected eager
 *    of several packets, or rendezvous read by the device; the first has
 *    tm_tag/tm_priv (byte_len 0), the second byte_len (tm_* are 0).
 *  - TM_RECV, status TM_RNDV_INCOMPLETE, TM_MATCH|TM_DATA_VALID: matched
 *    rendezvous whose data does not fit the entry: the request (TMH, RVH,
 *    RAVH, metadata) is in the entry's buffer, byte_len = its length;
 *    software reads the data and sends the FIN itself.
 *  - TM_RECV without TM_MATCH/TM_DATA_VALID: unexpected EAGER or RNDV; whole
 *    message with headers in an SRQ buffer, wr_id of that buffer, tm_* are
 *    0; TM_SYNC_REQ when more than 0x3fff unexpected messages were polled
 *    since the count software last gave with an ADD.
 *  - TM_NO_TAG: NO_TAG and FIN messages, whole, in an SRQ buffer.
 * On a TM SRQ created with DCX_SRQ_F_IN_PLACE, an unexpected EAGER and a
 * NO_TAG message may complete in place instead (DCX_WC_FLAG_IN_PLACE: the
 * SRQ buffer of wr_id taken and left as it was, the whole message with its
 * TMH at 'data'); an expected message never does. */
typedef struct dcx_wc {
    uint64_t wr_id;
    uint8_t status; /* dcx_wc_status_t */
    uint8_t opcode; /* dcx_wc_opcode_t */
    uint16_t flags; /* DCX_WC_FLAG_* */
    uint32_t byte_len;
    uint32_t imm;    /* host order */
    uint32_t qp_num; /* local QP (DCI number, or DCT number) */
    uint32_t src_qp; /* receive: sender's DCI number */
    uint32_t vendor_err;
    union {
        uint64_t tm_tag; /* tag matching: tag (TM_MATCH) */
        /* DCX_WC_FLAG_IN_PLACE (never with tm_tag): the message's byte_len
         * bytes, readable until its dcx_cq_release(cq) or the next poll */
        const void *data;
    };
    uint32_t tm_priv; /* tag matching: sender's app context */
    uint16_t slid;    /* receive: the sender port's LID (0: none; TM) */
    uint16_t reserved;
} dcx_wc_t;

const char *dcx_wc_status_str(dcx_wc_status_t status);

#endif
