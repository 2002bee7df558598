/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: state and counters of the DCI pool of one interface, the
 * DCI an endpoint holds, and the interface's receive buffers (read by
 * dcx_diag.c).  Plain C, no UCX internals, so that tests and
 * diagnostics can read them through the loaded module.
 */
#ifndef UCT_DCX_DCI_STATS_H_
#define UCT_DCX_DCI_STATS_H_

#include <uct/api/uct_def.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dcx_dci_stats {
    uint64_t gets;        /* DCIs taken from the free stack by an ep */
    uint64_t take_backs;  /* idle DCIs kept by an ep, taken for another */
    uint64_t releases;    /* DCIs given back to the free stack */
    uint64_t refusals;    /* an ep asked for a DCI and none was free: it
                            waits */
    uint64_t wait_ns;     /* time eps spent waiting for a DCI, summed */
    uint64_t drains;      /* signalled no-ops posted so that a DCI's
                              unsignalled last WRs report (it had to go
                              back to the pool, or their send buffers
                              were needed) */
    uint64_t creates;     /* data DCIs created (on first need) */
    uint64_t destroys;    /* ... destroyed after idling (the pool shrank) */
    uint64_t errors;      /* error completions on DCIs (each recovered or
                            retried, or the DCI taken out) */
    uint64_t ep_failures; /* eps reported failed (peer unreachable, ...) */
    uint64_t shared_wrs;  /* hybrid: WRs endpoints posted on the shared
                             DCI (the pool had no DCI to lend them) */
    /* gauges: now (live counters file: as of the pool's last change) */
    uint64_t num_dci;       /* data DCIs the pool may hold (NUM_DCI) */
    uint64_t created;       /* data DCIs that exist now */
    uint64_t in_use;        /* ... lent to an ep, or shared (rand) */
    uint64_t high_water;    /* most data DCIs that existed at once */
    uint64_t free;          /* DCIs an ep may get now without waiting: on
                              the free stack, or not created yet (dcs) */
    uint64_t kept;          /* flagged as kept by their owner (pool.kept) */
    uint64_t waiters;       /* eps refused a DCI, still waiting */
    uint64_t sig_period;    /* a completion requested every this many WRs
                              now (1 while eps wait for a DCI) */
    uint64_t sq_len;        /* WRs a DCI's send queue holds: what the device
                              granted for UCX_DCX_TX_QUEUE_LEN (a ConnectX
                              may grant more than asked) */
    uint64_t stream_resets; /* streams policy: streams of the DCI reset
                                after an error on them (the others went
                                on) */
} dcx_dci_stats_t;

/* Fills *stats for a dcx interface.  Returns 0, or -1 if iface is not a dcx
 * interface. */
int dcx_dci_iface_stats(uct_iface_h iface, dcx_dci_stats_t *stats);

/* The receive side: buffers posted to the SRQ and their reposting */
typedef struct dcx_rx_stats {
    uint64_t reposts;  /* calls that posted receive buffers */
    uint64_t reposted; /* receive buffers they posted */
    uint32_t posted;   /* posted now */
    uint32_t target;   /* the goal (grows with the load) */
    uint32_t batch;    /* reposted once this many are missing */
} dcx_rx_stats_t;

/* Fills *stats for a dcx interface.  Returns 0, or -1 if iface is not a dcx
 * interface. */
int dcx_rx_iface_stats(uct_iface_h iface, dcx_rx_stats_t *stats);

/* Flow control of a dcx interface: credit requests and grants it sent,
 * how many of those went through a send buffer (the rest were inline
 * sends from the stack), grants received and sends stalled for credits. */
typedef struct dcx_fc_stats {
    uint64_t reqs_sent;
    uint64_t grants_sent;
    uint64_t bufs_sent;
    uint64_t grants_recvd; /* grants that reached one of its eps */
    uint64_t stalls;       /* AM sends refused: the ep was out of credits */
} dcx_fc_stats_t;

/* Fills *stats for a dcx interface.  Returns 0, or -1 if iface is not a dcx
 * interface. */
int dcx_fc_iface_stats(uct_iface_h iface, dcx_fc_stats_t *stats);

/* The index of the DCI ep holds now, -1 if none, -2 if ep is not a dcx
 * endpoint.  Data DCIs are 0 .. NUM_DCI - 1, the control DCI NUM_DCI, and
 * the shared DCI of the hybrid policy NUM_DCI + 1. */
int dcx_dci_ep_index(uct_ep_h ep);

#ifdef __cplusplus
}
#endif

#endif /* UCT_DCX_DCI_STATS_H_ */
