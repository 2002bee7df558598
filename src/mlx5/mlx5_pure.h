/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx mlx5 backend: the parts that are pure computation.
 *
 * Everything declared here works on plain values and rdma-core structs
 * filled by the caller; nothing touches a device.  The backend uses these
 * functions on real hardware and the unit tests (test/gtest/mlx5) feed them
 * synthetic input, so the translation rules are checked on machines without
 * a ConnectX.  mlx5_pure.c defines the rules of QPs and their work (QP
 * masks, WQE sizing, completions, the WR ring, the QP-number map),
 * mlx5_pure_dev.c those of the device and its ports (port address,
 * parameter encodings, firmware and capability translation).
 */
#ifndef DCX_MLX5_PURE_H_
#define DCX_MLX5_PURE_H_

#include "dcx_dev.h"

#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest gather list a post takes (arrays on the stack of post_send and
 * post_recv); caps.max_sge and caps.max_recv_sge are clamped to it. */
#define DCX_MLX5_MAX_SGE 16

/* ------------------------------------------------------------------------
 * Modify-QP masks (docs/device-semantics.md section 3.3).  One row per
 * transition the backend may request; the kernel accepts a mask when it
 * holds every required bit and nothing outside required | optional.
 * IBV_QP_STATE is part of every required mask.
 * ------------------------------------------------------------------------ */
typedef struct dcx_mlx5_qp_transition {
    dcx_qp_type_t type;
    dcx_qp_state_t from;
    dcx_qp_state_t to;
    uint32_t required; /* enum ibv_qp_attr_mask bits */
    uint32_t optional;
} dcx_mlx5_qp_transition_t;

extern const dcx_mlx5_qp_transition_t dcx_mlx5_qp_transitions[];
extern const size_t dcx_mlx5_qp_transitions_count;

/* The table row for (type, from, to), or NULL when the transition does not
 * exist for that QP type (e.g. a DCT to ERR).  "from" of DCX_QPS_ERR rows
 * also stands for "any state but RESET" (docs/device-semantics.md
 * section 3.3: a DCI goes to ERR from any state but RESET). */
const dcx_mlx5_qp_transition_t *dcx_mlx5_qp_transition_find(dcx_qp_type_t type,
                                                            dcx_qp_state_t from,
                                                            dcx_qp_state_t to);

/* 0 when the kernel would accept "mask" for that transition, EINVAL when a
 * required bit is missing, a forbidden bit is present, or the transition
 * does not exist. */
int dcx_mlx5_qp_mask_check(dcx_qp_type_t type, dcx_qp_state_t from,
                           dcx_qp_state_t to, uint32_t mask);

enum ibv_qp_state dcx_mlx5_qp_state_to_ibv(dcx_qp_state_t state);
const char *dcx_mlx5_qp_state_str(dcx_qp_state_t state);

/* ------------------------------------------------------------------------
 * Send WQE sizing, as libmlx5 computes it for a DCI (verbs.c _sq_overhead,
 * mlx5_calc_send_wqe, mlx5_calc_sq_size), in bytes.
 * ------------------------------------------------------------------------ */
#define DCX_MLX5_WQE_BB       64u /* send WQE basic block */
#define DCX_MLX5_CTRL_SEG     16u
#define DCX_MLX5_DATAGRAM_SEG 48u /* address vector incl. DC fields */
#define DCX_MLX5_RADDR_SEG    16u
#define DCX_MLX5_ATOMIC_SEG   16u
#define DCX_MLX5_DATA_SEG     16u  /* one gather entry */
#define DCX_MLX5_INL_HDR      4u   /* inline data segment header */
#define DCX_MLX5_UMR_OVERHEAD 192u /* ctrl + UMR ctrl + mkey ctx + 64 */

/* Fixed part of every DCI WQE for the given IBV_QP_EX_WITH_* set. */
uint32_t dcx_mlx5_dci_overhead(uint64_t send_ops_flags);

typedef struct dcx_mlx5_sq_size {
    uint32_t wqe_size;   /* bytes per WQE, multiple of 64 */
    uint32_t max_inline; /* inline bytes one WQE then carries */
    uint32_t max_post;   /* WQEs the send queue holds */
    uint32_t wqe_bbs;    /* basic blocks of the whole queue */
} dcx_mlx5_sq_size_t;

/* Sizes the send queue of a DCI the way libmlx5 will: EINVAL when the
 * request cannot be created (too many sge or inline bytes for
 * max_desc_size, or more basic blocks than max_wqebb). */
int dcx_mlx5_dci_sq_size(uint64_t send_ops_flags, uint32_t max_send_wr,
                         uint32_t max_send_sge, uint32_t max_inline,
                         uint32_t max_desc_size, uint32_t max_wqebb,
                         dcx_mlx5_sq_size_t *out);

/* The deepest DCI send queue with WQEs of wqe_size bytes when the device
 * allows max_wqebb basic blocks per queue. */
uint32_t dcx_mlx5_dci_max_wr(uint32_t wqe_size, uint32_t max_wqebb);

/* Total bytes of a gather list (saturates at UINT32_MAX); inline, as
 * every post asks */
static inline uint32_t dcx_mlx5_sge_total(const dcx_sge_t *sg_list,
                                          unsigned num_sge)
{
    uint64_t total = 0;
    unsigned i;

    for (i = 0; i < num_sge; ++i) {
        total += sg_list[i].length;
    }
    return (total > UINT32_MAX) ? UINT32_MAX : (uint32_t)total;
}

/* ------------------------------------------------------------------------
 * Port address: what a peer needs to build an address handle.  Fixed
 * 24-byte wire format, all multi-byte fields little-endian, independent of
 * either host's byte order:
 *
 *   0  u16 magic   DCX_MLX5_ADDR_MAGIC
 *   2  u8  version DCX_MLX5_ADDR_VERSION
 *   3  u8  flags   DCX_MLX5_ADDR_F_*
 *   4  u16 lid     InfiniBand LID (0 on RoCE)
 *   6  u8  mtu     enum ibv_mtu of the port (1..5)
 *   7  u8  reserved, 0
 *   8  16 bytes GID (all zero when DCX_MLX5_ADDR_F_GID is clear)
 * ------------------------------------------------------------------------ */
#define DCX_MLX5_ADDR_MAGIC   0xdc55u
#define DCX_MLX5_ADDR_VERSION 1u
#define DCX_MLX5_ADDR_LEN     24u

enum {
    DCX_MLX5_ADDR_F_ETH    = 1u << 0, /* RoCE port: route by GID */
    DCX_MLX5_ADDR_F_GID    = 1u << 1, /* GID field is meaningful */
    DCX_MLX5_ADDR_F_ROCEV2 = 1u << 2, /* the GID is a RoCE v2 one */
    DCX_MLX5_ADDR_F_ALL    = 0x7u
};

typedef struct dcx_mlx5_addr {
    uint8_t flags;
    uint8_t mtu; /* enum ibv_mtu */
    uint16_t lid;
    uint8_t gid[16];
} dcx_mlx5_addr_t;

/* Writes DCX_MLX5_ADDR_LEN bytes; EINVAL if *len_p is too small or the
 * address is not valid (see decode).  *len_p is set to the length. */
int dcx_mlx5_addr_pack(const dcx_mlx5_addr_t *addr, void *buf, size_t *len_p);

/* Validates and decodes a packed address.  EINVAL, with a short reason in
 * *why_p, for a wrong length, magic or version, unknown flags, a non-zero
 * reserved byte, an MTU out of range, a RoCE address without a GID, or an
 * InfiniBand address with a LID that is 0 or multicast. */
int dcx_mlx5_addr_unpack(const void *buf, size_t len, dcx_mlx5_addr_t *addr,
                         const char **why_p);

/* Picks the GID table entry a RoCE port publishes.  RoCE v2 beats v1; within
 * a version an IPv4-mapped GID beats any other, and a link-local (fe80::/10)
 * GID comes last because it is not routable (mlx5 lists the link-local GIDs
 * first, so "the first v2 GID" would be one).  Ties go to the lower entry.
 * Returns the position in entries[], or -1 if none is usable. */
int dcx_mlx5_gid_select(const struct ibv_gid_entry *entries, unsigned count);

/* ------------------------------------------------------------------------
 * Completions
 * ------------------------------------------------------------------------ */
dcx_wc_status_t dcx_mlx5_wc_status(enum ibv_wc_status status);
/* The verbs status of a CQE's PRM syndrome, as libmlx5 translates it */
enum ibv_wc_status dcx_mlx5_syndrome_status(uint8_t syndrome);

/* Maps a verbs completion opcode; EINVAL for opcodes dcx never produces
 * (BIND_MW, TSO, RAW WQE, MEMCPY). */
int dcx_mlx5_wc_opcode(enum ibv_wc_opcode opcode, dcx_wc_opcode_t *out);

/* Requester completion opcode of a dcx work request opcode. */
dcx_wc_opcode_t dcx_mlx5_wr_wc_opcode(dcx_wr_opcode_t opcode);
/* The same for the opcodes below DCX_WR_OPCODE_LAST, as a table */
extern const uint8_t dcx_mlx5_wc_op[DCX_WR_OPCODE_LAST];

/* Not a verbs flag: the masked atomics, which raw WQEs alone carry */
#define DCX_MLX5_SEND_OP_MASKED (1ull << 63)

/* Verbs send_ops_flags bit a dcx opcode needs (DCX_MLX5_SEND_OP_MASKED
 * for the masked atomics, 0 for unknown opcodes); inline, as every post
 * asks */
static inline uint64_t dcx_mlx5_wr_send_op(dcx_wr_opcode_t opcode)
{
    static const uint64_t op[DCX_WR_OPCODE_LAST] = {
        [DCX_WR_SEND]                = IBV_QP_EX_WITH_SEND,
        [DCX_WR_SEND_IMM]            = IBV_QP_EX_WITH_SEND_WITH_IMM,
        [DCX_WR_RDMA_WRITE]          = IBV_QP_EX_WITH_RDMA_WRITE,
        [DCX_WR_RDMA_WRITE_IMM]      = IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
        [DCX_WR_RDMA_READ]           = IBV_QP_EX_WITH_RDMA_READ,
        [DCX_WR_ATOMIC_FADD]         = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
        [DCX_WR_ATOMIC_CSWAP]        = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
        [DCX_WR_ATOMIC_MASKED_FADD]  = DCX_MLX5_SEND_OP_MASKED,
        [DCX_WR_ATOMIC_MASKED_CSWAP] = DCX_MLX5_SEND_OP_MASKED};

    return ((unsigned)opcode < DCX_WR_OPCODE_LAST) ? op[opcode] : 0;
}

/* IBV_SEND_* flags for DCX_SEND_* flags (INLINE is carried by the data
 * setter, not by the flags). */
unsigned dcx_mlx5_send_flags(unsigned dcx_flags);

/* IBV_ACCESS_* for DCX_ACCESS_*. */
unsigned dcx_mlx5_access_flags(uint32_t dcx_access);

/* ------------------------------------------------------------------------
 * Encodings of the transport parameters
 * ------------------------------------------------------------------------ */
/* Local ACK timeout: 4.096 us * 2^t; t = 0 means "wait forever". */
uint64_t dcx_mlx5_timeout_to_ns(uint8_t timeout);
/* Smallest encoding whose timeout is at least ns (1..31). */
uint8_t dcx_mlx5_timeout_from_ns(uint64_t ns);
/* RNR NAK timer (IB spec table): code 0 = 655.36 ms, 1 = 0.01 ms ... 31 =
 * 491.52 ms; in nanoseconds.  Codes above 31 give 0. */
uint64_t dcx_mlx5_rnr_timer_to_ns(uint8_t code);
/* EINVAL if timeout > 31, retry_cnt > 7, rnr_retry > 7 or
 * min_rnr_timer > 31; *why_p names the field. */
int dcx_mlx5_transport_params_check(const dcx_qp_attr_t *attr,
                                    const char **why_p);

/* enum ibv_mtu <-> bytes; 0 / (enum ibv_mtu)0 when out of range. */
uint32_t dcx_mlx5_mtu_bytes(enum ibv_mtu mtu);
enum ibv_mtu dcx_mlx5_mtu_enum(uint32_t bytes);

/* Link bandwidth in bytes/s after line coding, from the port's
 * active_width and active_speed codes; 0 when a code is unknown. */
double dcx_mlx5_link_bandwidth(uint8_t active_width, uint8_t active_speed);

/* ------------------------------------------------------------------------
 * Firmware capabilities: QUERY_HCA_CAP through DEVX
 * ------------------------------------------------------------------------ */
#define DCX_MLX5_QUERY_HCA_CAP_OP 0x100u
#define DCX_MLX5_HCA_CAP_IN_LEN   16u
#define DCX_MLX5_HCA_CAP_OUT_LEN  (16u + 4096u)

/* Capability types a query names */
enum {
    DCX_MLX5_CAP_GENERAL = 0,
    DCX_MLX5_CAP_ATOMIC  = 3
};

/* Fills the DCX_MLX5_HCA_CAP_IN_LEN bytes of a QUERY_HCA_CAP command for
 * the current capabilities of the given type. */
void dcx_mlx5_hca_cap_query_in(void *in, unsigned type);

/* A field of 'width' bits (1..31) at bit offset 'bit' of buf, counted from
 * the most significant bit of its first big-endian dword (the PRM's). */
uint32_t dcx_mlx5_prm_get(const void *buf, uint32_t bit, uint32_t width);

/* Writes 'width' bits (1..32) of val at bit offset 'bit' of buf, counted
 * as dcx_mlx5_prm_get counts them; the other bits are kept. */
void dcx_mlx5_prm_set(void *buf, uint32_t bit, uint32_t width, uint32_t val);
/* The 64 bits at bit offset 'bit' (a multiple of 32), big-endian */
void dcx_mlx5_prm_set64(void *buf, uint32_t bit, uint64_t val);

/* Tag matching on DC, from the answer to the general QUERY_HCA_CAP: the
 * list entries one tag-matching XRQ offers (2^log_tag_matching_list_sz -
 * 1, at most 2^15 - 1: the XRQ's list size field has 4 bits) into
 * *max_tags_p when the firmware has tag matching with the rendezvous
 * offload on DC, else 0 and the reason in *why_p.  EPROTO with
 * *why_p for an answer shorter than DCX_MLX5_HCA_CAP_OUT_LEN or with a
 * non-zero status. */
int dcx_mlx5_tm_hca_parse(const void *general, size_t len, uint32_t *max_tags_p,
                          const char **why_p);

/* The masked atomics DC offers (DCX_ATOMIC_MASKED_*), from the answers to
 * the general and the atomic QUERY_HCA_CAP: both masked operations (and
 * compare-swap and fetch-add), for each operand size (4 and 8 bytes)
 * that both RC and DC take; 0 when the general capabilities have no
 * atomics.  EPROTO with *why_p for an answer shorter than
 * DCX_MLX5_HCA_CAP_OUT_LEN or with a non-zero status. */
int dcx_mlx5_atomic_hca_parse(const void *general, const void *atomic,
                              size_t len, uint32_t *masked_p,
                              const char **why_p);

/* ------------------------------------------------------------------------
 * Capability translation
 * ------------------------------------------------------------------------ */
/* What the open-time probe learnt: a DCI could be created (with the sizes
 * libmlx5 returned) and, if atomics were tried, whether a DCT accepted
 * REMOTE_ATOMIC. */
typedef struct dcx_mlx5_probe {
    bool dc_ok;
    bool dct_atomic_ok;
    uint32_t dci_max_inline; /* cap.max_inline_data returned */
    uint32_t dci_max_sge;    /* cap.max_send_sge granted */
    uint32_t dci_wqe_size;   /* bytes per DCI WQE */
    /* Largest max_rd_atomic the probe DCI reached RTS with (the DC limit,
     * 2^log_max_ra_req_dc, is not in verbs); 0 = not probed. */
    uint32_t dci_max_rd_atomic;
} dcx_mlx5_probe_t;

/* max_rd_atomic values the open-time probe tries at RTR->RTS, largest
 * first: the largest power of two within the device's RC limit (and the
 * 8-bit verbs field), then halved down to 1.  Returns the next value to try after "cur" (0 = none
 * left); dcx_mlx5_rd_atomic_first gives the first. */
uint32_t dcx_mlx5_rd_atomic_first(int max_qp_init_rd_atom);
uint32_t dcx_mlx5_rd_atomic_next(uint32_t cur);

/* Fills caps from the device and port attributes plus the probe result
 * (mlx5dv_query_device adds nothing dcx_dev_caps_t has a field for: DC
 * support is not in it, and the DCI stream and ODP fields are not used).
 * Never advertises tag matching (the open adds it where the firmware and
 * the port offer it), nor
 * masked atomics (the open adds those its self-test found), nor strided
 * mkeys (dcx_mlx5_umr_caps_translate adds those);
 * DC only when the probe created a DCI; 64-bit atomics only when the
 * device reports HCA/GLOB atomics and the DCT accepted REMOTE_ATOMIC. */
void dcx_mlx5_caps_translate(const char *name,
                             const struct ibv_device_attr_ex *dattr,
                             const struct ibv_port_attr *pattr,
                             const dcx_mlx5_probe_t *probe,
                             dcx_dev_caps_t *caps);

/* Checks that a port can carry dcx: EINVAL/ENODEV plus *why_p for a link
 * layer other than InfiniBand or Ethernet, or an InfiniBand port without a
 * LID. */
int dcx_mlx5_port_check(const struct ibv_port_attr *pattr, const char **why_p);

/* ------------------------------------------------------------------------
 * Completion routing.  A CQ that serves no DCI needs no decision: every
 * completion on it is a receive.  Otherwise the CQE's QP number is looked
 * up; this says what to do with the result.
 * ------------------------------------------------------------------------ */
typedef enum {
    DCX_MLX5_ROUTE_DCI,  /* requester completion of the DCI (or UMR QP)
                           * found */
    DCX_MLX5_ROUTE_RECV, /* receive on an SRQ (wr_id is the SRQ's) */
    DCX_MLX5_ROUTE_DROP  /* nothing on this CQ can own it */
} dcx_mlx5_route_t;

/* found: whether the QP number is in the map, and then its type; num_dct:
 * DCTs completing on this CQ.  libmlx5 purges a destroyed DCI's CQEs, so an
 * unknown number on a CQ that also serves DCTs is taken as a receive. */
static inline dcx_mlx5_route_t dcx_mlx5_cq_route(bool found, dcx_qp_type_t type,
                                                 unsigned num_dct)
{
    if (found) {
        /* DCIs and UMR QPs complete as requesters */
        return (type == DCX_QPT_DCT) ? DCX_MLX5_ROUTE_RECV : DCX_MLX5_ROUTE_DCI;
    }
    return (num_dct != 0) ? DCX_MLX5_ROUTE_RECV : DCX_MLX5_ROUTE_DROP;
}

/* ------------------------------------------------------------------------
 * Outstanding-WR ring of a DCI.  The hardware wr_id of a WR is its post
 * sequence number; its record sits in slot seq & mask, among size rounded
 * up to a power of two slots (no division on the fast path).  WRs with seq in
 * [tail, head) are outstanding: posted and not yet retired by a polled
 * completion, which is what bounds post_send (ENOMEM when size are
 * outstanding), as libmlx5 bounds its own send queue.
 * ------------------------------------------------------------------------ */
typedef struct dcx_mlx5_wr_slot {
    uint64_t wr_id;
    uint8_t opcode; /* dcx_wr_opcode_t */
    uint8_t signaled;
} dcx_mlx5_wr_slot_t;

typedef struct dcx_mlx5_ring {
    dcx_mlx5_wr_slot_t *slots;
    uint32_t size; /* at most this many outstanding */
    uint32_t mask; /* slots - 1, slots a power of two >= size */
    uint64_t head;
    uint64_t tail;
} dcx_mlx5_ring_t;

/* What a polled DCI completion means for the ring. */
typedef enum {
    DCX_MLX5_CQE_DROP,   /* stale: already reported, or before a reset */
    DCX_MLX5_CQE_REPORT, /* report *wc; the DCI is fine */
    DCX_MLX5_CQE_FAILED, /* report *wc; the DCI is now in ERR */
    DCX_MLX5_CQE_FLUSHED /* the DCI is in ERR; report nothing now, the
                           * ring's remaining WRs are flushed in order */
} dcx_mlx5_cqe_action_t;

/* ENOMEM if the slots cannot be allocated, EINVAL for size 0.  Sequence
 * numbers start at base. */
int dcx_mlx5_ring_init(dcx_mlx5_ring_t *ring, uint32_t size, uint64_t base);
void dcx_mlx5_ring_cleanup(dcx_mlx5_ring_t *ring);

static inline uint32_t dcx_mlx5_ring_outstanding(const dcx_mlx5_ring_t *ring)
{
    return (uint32_t)(ring->head - ring->tail);
}

static inline int dcx_mlx5_ring_full(const dcx_mlx5_ring_t *ring)
{
    return ring->head - ring->tail >= ring->size;
}

/* Records a WR (the caller checked ring_full); returns its sequence. */
static inline uint64_t dcx_mlx5_ring_push(dcx_mlx5_ring_t *ring, uint64_t wr_id,
                                          uint8_t opcode, int signaled)
{
    dcx_mlx5_wr_slot_t *slot = &ring->slots[ring->head & ring->mask];

    slot->wr_id    = wr_id;
    slot->opcode   = opcode;
    slot->signaled = (uint8_t) !!signaled;
    return ring->head++;
}

/* Applies a completion with hardware wr_id "seq" and verbs status.  For
 * REPORT and FAILED, fills wr_id, status, opcode and qp_num of *wc and
 * retires the WR and every earlier one (unsignalled WRs before a
 * completion executed and complete silently). */
dcx_mlx5_cqe_action_t dcx_mlx5_ring_cqe(dcx_mlx5_ring_t *ring, uint64_t seq,
                                        enum ibv_wc_status status,
                                        uint32_t qp_num, dcx_wc_t *wc);

/* A successful completion's common case, inline where it is polled: the
 * WR of sequence seq is outstanding and of an opcode the table maps.  Then
 * it and every earlier WR are retired, *wc is filled as dcx_mlx5_ring_cqe
 * fills it for REPORT (byte_len included), and 1 is returned; else nothing
 * changes and 0 is returned, for the general path. */
static inline int dcx_mlx5_ring_retire_ok(dcx_mlx5_ring_t *ring, uint64_t seq,
                                          uint32_t qp_num, uint32_t byte_len,
                                          dcx_wc_t *wc)
{
    const dcx_mlx5_wr_slot_t *slot = &ring->slots[seq & ring->mask];

    if ((seq < ring->tail) || (seq >= ring->head) ||
        (slot->opcode >= DCX_WR_OPCODE_LAST)) {
        return 0;
    }
    ring->tail = seq + 1;
    *wc        = (dcx_wc_t){.wr_id    = slot->wr_id,
                            .status   = DCX_WC_SUCCESS,
                            .opcode   = dcx_mlx5_wc_op[slot->opcode],
                            .byte_len = byte_len,
                            .qp_num   = qp_num};
    return 1;
}

/* Retires the WR of a completion with hardware wr_id "seq", whatever its
 * status, and every earlier one: 1 with wr_id, status, opcode and qp_num
 * of *wc filled, or 0 for a stale one (already retired, or before a
 * reset).  A DCI with streams has a ring per stream, whose completions,
 * flushed ones too, each come on their own. */
int dcx_mlx5_ring_take(dcx_mlx5_ring_t *ring, uint64_t seq,
                       enum ibv_wc_status status, uint32_t qp_num,
                       dcx_wc_t *wc);

/* Retires the oldest outstanding WR as DCX_WC_WR_FLUSH_ERR into *wc;
 * 0 when the ring is empty. */
int dcx_mlx5_ring_flush_one(dcx_mlx5_ring_t *ring, uint32_t qp_num,
                            dcx_wc_t *wc);

/* Forgets every outstanding WR (a reset purged their completions). */
static inline void dcx_mlx5_ring_reset(dcx_mlx5_ring_t *ring)
{
    ring->tail = ring->head;
}

/* ------------------------------------------------------------------------
 * QP-number map: finds the dcx QP of a completion from its qp_num.
 * Open addressing with linear probing; grows on the control path only.
 * ------------------------------------------------------------------------ */
typedef struct dcx_mlx5_qpmap_entry {
    uint32_t qpn;
    void *obj; /* NULL = free slot */
} dcx_mlx5_qpmap_entry_t;

typedef struct dcx_mlx5_qpmap {
    dcx_mlx5_qpmap_entry_t *slots;
    uint32_t mask; /* capacity - 1; capacity power of 2 */
    uint32_t count;
} dcx_mlx5_qpmap_t;

void dcx_mlx5_qpmap_init(dcx_mlx5_qpmap_t *map);
void dcx_mlx5_qpmap_cleanup(dcx_mlx5_qpmap_t *map);
/* ENOMEM if it cannot grow, EEXIST if qpn is present, EINVAL for obj NULL. */
int dcx_mlx5_qpmap_insert(dcx_mlx5_qpmap_t *map, uint32_t qpn, void *obj);
/* ENOENT if absent. */
int dcx_mlx5_qpmap_remove(dcx_mlx5_qpmap_t *map, uint32_t qpn);

static inline void *dcx_mlx5_qpmap_find(const dcx_mlx5_qpmap_t *map,
                                        uint32_t qpn)
{
    uint32_t i;

    if (map->slots == NULL) {
        return NULL;
    }
    for (i = (qpn * 2654435761u) & map->mask; map->slots[i].obj != NULL;
         i = (i + 1) & map->mask) {
        if (map->slots[i].qpn == qpn) {
            return map->slots[i].obj;
        }
    }
    return NULL;
}

#ifdef __cplusplus
}
#endif

#endif /* DCX_MLX5_PURE_H_ */
