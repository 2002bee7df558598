/*
 * Soft-device-only interface: fault injection and counters, for tests,
 * benchmarks and diagnostics.  Everything else goes through dcx_dev.h.
 *
 * Behaviour of the soft device worth knowing when building on it:
 *  - A port is a shared-memory segment /dev/shm/dcx-soft.<uid>.<fabric>.
 *    <pid>.<n> (mode 0600), unlinked by dcx_dev_close(); segments of dead
 *    owners are swept by the next open on any fabric of the same user.
 *  - caps.addr_len is 16; dcx_ah_create() rejects anything else, and
 *    addresses of another fabric or user, with EINVAL.
 *  - caps.mtu (default 16 KiB) is the packet payload; longer messages are
 *    split and reassembled.
 *  - Transport timers of a DCI: with a nonzero qp_attr.timeout the verbs
 *    parameters (4.096us << timeout, retry_cnt, rnr_retry) are used as
 *    given; with timeout 0 the device's limits (ack_timeout_us, retry_cnt,
 *    rnr_retry) apply.  A DCT's min_rnr_timer uses the verbs table, except
 *    0 which means limits.rnr_timer_us (not 655 ms).
 *  - A dead peer (process gone, zombie, or killed port) is reported as
 *    RETRY_EXC_ERR at the first ack timeout; an unreachable but live one
 *    after (retry_cnt + 1) timeouts.
 *  - qp->post_send, srq->post_recv and cq->poll take the device's engine
 *    lock and are thread-safe; a full send queue or SRQ returns ENOMEM with
 *    a debug-level log line only (it is flow control, not an error).
 *  - Each device runs a helper thread that executes inbound operations when
 *    the application has not polled for 200 us, and sleeps on a futex when
 *    nothing is outstanding.
 */
#ifndef DCX_SOFT_H_
#define DCX_SOFT_H_

#include "dcx_dev.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest limits (dcx_soft_limits_t) a soft device accepts; a list
 * request asking for more fails with EINVAL.  The minimum of each count is
 * 1 (0 means "default"), of the MTU 256. */
#define DCX_SOFT_LIMIT_MAX_QP_WR      65536u
#define DCX_SOFT_LIMIT_MAX_SRQ_WR     65536u
#define DCX_SOFT_LIMIT_MAX_CQE        (1u << 22)
#define DCX_SOFT_LIMIT_MAX_SGE        30u
#define DCX_SOFT_LIMIT_MAX_INLINE     65536u
#define DCX_SOFT_LIMIT_MAX_RD_ATOMIC  16u
#define DCX_SOFT_LIMIT_MAX_DCI        65536u
#define DCX_SOFT_LIMIT_MIN_MTU        256u
#define DCX_SOFT_LIMIT_MAX_MTU        (1u << 20)
#define DCX_SOFT_LIMIT_MAX_MSG_SIZE   (1ull << 31)

typedef enum {
    DCX_SOFT_FAULT_NONE,
    /* Outbound request packets of this device matching the filter are lost
     * on the wire: the requester retransmits after its ack timeout and
     * fails with RETRY_EXC_ERR once retry_cnt is exhausted. */
    DCX_SOFT_FAULT_DROP,
    /* Matching outbound packets reach the target delay_us late. */
    DCX_SOFT_FAULT_DELAY,
    /* Matching outbound packets arrive with a bad checksum: the target
     * discards them (counted) and the requester retransmits, as with DROP. */
    DCX_SOFT_FAULT_CORRUPT,
    /* Matching WRs posted on this device complete with 'status' (the DCI
     * then goes to ERR as with any error completion). */
    DCX_SOFT_FAULT_ERROR_CQE,
    /* This device's port goes dark: it stops answering and accepting
     * packets; peers see RETRY_EXC_ERR.  Irreversible for the device. */
    DCX_SOFT_FAULT_KILL_PORT
} dcx_soft_fault_type_t;

typedef struct dcx_soft_fault {
    dcx_soft_fault_type_t type;
    int                   opcode;    /* dcx_wr_opcode_t, or -1 for any */
    uint32_t              skip;      /* let this many matches pass first */
    uint32_t              count;     /* matches affected; 0 = until cleared */
    uint32_t              delay_us;  /* DELAY */
    dcx_wc_status_t       status;    /* ERROR_CQE */
} dcx_soft_fault_t;

/* One fault rule per device at a time; a new one replaces the old. */
int  dcx_soft_fault_inject(dcx_dev_t *dev, const dcx_soft_fault_t *fault);
void dcx_soft_fault_clear(dcx_dev_t *dev);

typedef struct dcx_soft_stats {
    uint64_t tx_packets;
    uint64_t tx_bytes;
    uint64_t rx_packets;
    uint64_t rx_bytes;
    uint64_t retransmits;
    uint64_t rnr_naks_sent;
    uint64_t rnr_retries;
    uint64_t dc_key_violations;   /* requests dropped for a wrong DC key */
    uint64_t bad_dctn_drops;      /* requests for a DCT that does not exist */
    uint64_t corrupt_drops;
    uint64_t remote_access_errors;
    uint64_t helper_wakeups;      /* helper thread woke up */
    uint64_t helper_packets;      /* packets the helper thread processed */
    uint64_t resp_drops;          /* responses dropped: requester ring full */
    uint64_t prods;               /* peer helpers woken for unserved requests */
} dcx_soft_stats_t;

int  dcx_soft_stats(dcx_dev_t *dev, dcx_soft_stats_t *stats);

/* True if dev is a soft device. */
int  dcx_dev_is_soft(const dcx_dev_t *dev);

#ifdef __cplusplus
}
#endif

#endif /* DCX_SOFT_H_ */
