/*
 * Soft-device-only interface: fault injection and counters, for tests,
 * benchmarks and diagnostics.  Everything else goes through dcx_dev.h.
 */
#ifndef DCX_SOFT_H_
#define DCX_SOFT_H_

#include "dcx_dev.h"

#ifdef __cplusplus
extern "C" {
#endif

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
} dcx_soft_stats_t;

int  dcx_soft_stats(dcx_dev_t *dev, dcx_soft_stats_t *stats);

/* True if dev is a soft device. */
int  dcx_dev_is_soft(const dcx_dev_t *dev);

#ifdef __cplusplus
}
#endif

#endif /* DCX_SOFT_H_ */
