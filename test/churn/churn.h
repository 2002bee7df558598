/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peer-churn test (churn.c): what its parts share.  churn_util.c keeps the
 * clock, the log, the watchdog, the payload patterns and the files of the
 * rank directory; churn_ops.c posts the UCP operations and connects to the
 * peers; churn_wait.c handles their completions and waits for the phases'
 * conditions; churn.c has the phases and main.
 */
#ifndef DCX_CHURN_H_
#define DCX_CHURN_H_

#define _GNU_SOURCE
#include <ucp/api/ucp.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS  64
#define MAX_MSG    262144 /* messages: up to rendezvous on either backend */
#define NSIZES     4
#define MAX_SIZE   16384 /* put/get: a region slot */
#define NRMA_SIZES 3
#define TX_DEPTH   4  /* tagged and active-message sends in flight a peer */
#define RX_DEPTH   4  /* tagged receives posted a source */
#define AM_RX_POOL 64 /* rendezvous active-message receives a source */
#define AM_ID      7
#define ADDR_MAGIC 0x31726863786364ull /* "dcxchr1" */

/* the region: identity, a counter a source, a put slot a source; at the
 * same address in every process, so that an operation that reaches the
 * wrong process lands in its region and is seen there */
#define REG_HINT ((void *)0x5dc000000000ull)
#define REG_CNT  64
#define REG_SLOT 4096
#define REG_SIZE (REG_SLOT + MAX_RANKS * MAX_SIZE)

#define TAG_KIND      (0xd1ull << 56)
#define TAG_SRC_SHIFT 48
#define TAG_SEQ_MASK  ((1ull << TAG_SRC_SHIFT) - 1)
#define TAG_MASK      (~TAG_SEQ_MASK)

#define GOLDEN 0x9e3779b97f4a7c15ull

/* message sizes; put/get take the first NRMA_SIZES */
extern const size_t sizes[NSIZES];

enum {
    K_TAG = 1,
    K_AM,
    K_PUT
};

enum op_type {
    OP_TAG_TX,
    OP_AM_TX,
    OP_TAG_RX,
    OP_AM_RX,
    OP_PUT,
    OP_FLUSH,
    OP_GET,
    OP_GET_ID,
    OP_AMO,
    OP_CLOSE
};

extern const char *const op_name[];

enum {
    RMA_IDLE,
    RMA_PUT,
    RMA_FLUSH,
    RMA_GET
};

/* active-message header */
struct am_hdr {
    uint64_t dst_nonce;
    uint64_t src_nonce;
    uint64_t seq;
    uint32_t src;
    uint32_t len;
};

struct peer;

/* one UCP operation; its callback queues it on g.done_list, the main loop
 * handles it there (no UCP call from a callback but ucp_am_recv_data_nbx) */
struct op {
    struct peer *peer;
    int type;
    int busy;
    int abandoned; /* given up (-s): its completion, if any, is dropped */
    ucs_status_t status;
    void *req;
    double t_post;
    uint64_t seq;
    size_t len;
    ucp_tag_recv_info_t info;
    uint64_t operand; /* of the atomic */
    uint64_t val;     /* the atomic's fetched value; the identity read */
    struct am_hdr hdr;
    uint8_t *buf;
    struct op *next_done;
};

struct peer {
    int rank;
    int connected;
    int failed;
    int dead; /* the driver killed it (DIR/<rank>.dead) */
    ucs_status_t fail_status;
    double failed_at;   /* CLOCK_MONOTONIC */
    double failed_real; /* CLOCK_REALTIME, against the kill time */
    uint64_t nonce;
    uint64_t base;
    ucp_ep_h ep;
    ucp_rkey_h rkey;
    struct op tag_tx[TX_DEPTH], am_tx[TX_DEPTH], tag_rx[RX_DEPTH];
    struct op am_rx[AM_RX_POOL];
    struct op put, flush, get, get_id, amo, close;
    int rma_state;
    uint64_t tag_seq, am_seq, rx_next, rma_seq;
    uint64_t n_tag_tx, n_tag_rx, n_am_tx, n_am_rx, n_rma, n_amo;
    uint64_t n_am_rndv; /* of n_am_rx, those fetched by rendezvous */
    uint64_t amo_adds;
    uint8_t *am_seen; /* bitmap of the active-message sequences seen */
    size_t am_seen_len;
    uint64_t am_seq_end; /* 1 + highest sequence seen */
    /* what it says it sent us (DIR/<rank>.drained) */
    int drained, closed;
    uint64_t their_tag, their_am, their_amo;
};

struct churn_state {
    int rank, ninit;
    const char *dir;
    double wait_s, max_run_s;
    uint64_t nonce;
    double t0;
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_mem_h memh;
    uint8_t *region;
    void *rkey_buf;
    size_t rkey_len;
    ucp_address_t *addr;
    size_t addr_len;
    struct peer peers[MAX_RANKS];
    struct op *done_list;
    int sw_amo_bug; /* -s */
    int stopping;   /* no new operations */
    int canceling;  /* no new receives */
    int nfail;
    char phase[128];
};

extern struct churn_state g;

/* what DIR/<rank>.addr starts with (publish_address) */
struct addr_hdr {
    uint64_t magic;
    uint64_t nonce;
    uint64_t base;
    uint32_t rank;
    uint32_t addr_len;
    uint32_t rkey_len;
    uint32_t pad;
};

extern volatile uint64_t g_beat_ms;

double now(void);
double real_now(void);
void say(const char *fmt, ...);
void dump_stacks(void);
void beat(const char *phase);
void *watchdog(void *arg);
uint64_t word_at(const void *buf, size_t i);
void fill(void *buf, size_t len, uint64_t dst_nonce, int kind, uint64_t seq);
void check_payload(const void *buf, size_t len, int kind, int src, uint64_t seq,
                   const char *what);
int file_exists(int rank, const char *suffix);
void write_file(const char *suffix, const void *data, size_t len);
uint8_t *read_file(int rank, const char *suffix, size_t *lenp);
void publish_address(void);
ucp_request_param_t op_param(struct op *op);
void op_start(struct op *op, int type);
void op_posted(struct op *op, ucs_status_ptr_t sp);
void peer_failed(struct peer *p, ucs_status_t status, const char *how);
void err_cb(void *arg, ucp_ep_h ep, ucs_status_t status);
void post_tag_recv(struct peer *p, struct op *op);
void post_tag_send(struct peer *p, struct op *op);
void post_am_send(struct peer *p, struct op *op);
void post_put(struct peer *p);
void post_flush(struct peer *p);
void post_gets(struct peer *p);
void post_amo(struct peer *p);
void am_seen(struct peer *p, uint64_t seq);
ucs_status_t am_cb(void *arg, const void *header, size_t header_length,
                   void *data, size_t length,
                   const ucp_am_recv_param_t *rparam);
int scan(void);
int progress(void);
struct op *peer_op(struct peer *p, int i);
void check_deadlines(void);
int top_up(struct peer *p);
int expected(struct peer *p);
void wait_all(int (*cond)(struct peer *), int all_peers, const char *what);
int c_idle(struct peer *p);
int c_drained(struct peer *p);
int c_received(struct peer *p);
int c_closed(struct peer *p);

/* a check failed: nothing more to learn here */
#define FATAL(...)                  \
    do {                            \
        say("ERROR: " __VA_ARGS__); \
        say("FAIL");                \
        _exit(1);                   \
    } while (0)

/* a wait did not end */
#define STUCK(...)                  \
    do {                            \
        say("ERROR: " __VA_ARGS__); \
        dump_stacks();              \
        say("FAIL (stuck)");        \
        _exit(3);                   \
    } while (0)

/* a check failed, but the run goes on to its end */
#define FAILED(...)                 \
    do {                            \
        say("ERROR: " __VA_ARGS__); \
        g.nfail++;                  \
    } while (0)

#define PEER_OPS (2 * TX_DEPTH + AM_RX_POOL + 6)

#endif
