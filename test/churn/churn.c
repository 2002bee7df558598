/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * churn: one rank of a peer-churn test over UCP (test/churn/run.sh starts
 * the ranks, kills one, starts a late one and checks what they print).
 *
 * Ranks find each other through a directory: each publishes DIR/<rank>.addr
 * (written to a temporary file, then renamed) holding a random 64-bit
 * identity ("nonce"), its UCP worker address, the address of a memory
 * region and its packed rkey.  A rank connects (UCP_ERR_HANDLING_MODE_PEER)
 * to every rank whose file it finds, at start and while it runs, so a rank
 * started late is reached by the others as well as reaching them.  To each
 * live peer it runs, all the time, with a bounded number in flight:
 *   - tagged messages of 8 B, 1 KiB, 16 KiB and 256 KiB (eager, and
 *     rendezvous over both backends); the tag carries the source rank and a
 *     per-peer sequence number, the payload the destination's identity, the
 *     source's and a pattern derived from them;
 *   - active messages of the same sizes, the same checks in the header;
 *   - put of a pattern (8 B, 1 KiB, 16 KiB) into its own slot of the peer's
 *     region, flush, get of it back and of the region's first 8 bytes (the
 *     owner's identity);
 *   - 64-bit atomic fetch-add on its own counter in the peer's region.
 * What it checks, and why: a peer that dies (kill -9) must fail only its
 * own endpoints, and a process that starts afterwards -- which may get the
 * dead one's transport address (an emulated LID, a soft-device port) --
 * must be a new peer, not the dead one's heir:
 *   - a message or an identity read that reaches another process than the
 *     one it was meant for prints "MISDELIVERED" and exits 1;
 *   - every payload is checked byte for byte; tagged messages of one source
 *     match the receives in the order sent (sequence = receive index),
 *     active messages are never seen twice; the fetched counter is the
 *     number of adds this rank did before; at the end the counts each
 *     sender reports (DIR/<rank>.drained) are those received, the counters
 *     in the region are those added, and slots of ranks that never wrote
 *     here are zero;
 *   - every operation completes within the deadline (-w), and so does
 *     every wait of the teardown; an endpoint error on a rank the driver
 *     did not kill (no DIR/<rank>.dead) is "live peer failed";
 *   - after DIR/stop appears, each rank completes its operations, flushes,
 *     waits for the others (DIR/<rank>.drained), prints one summary line a
 *     peer (every type of operation must have completed with every live
 *     peer, in both directions), cancels its receives, closes its
 *     endpoints (force for failed peers), waits for the others to have
 *     closed (DIR/<rank>.closed), destroys worker and context, and exits;
 *     a receive from the killed rank that matched the first part of a
 *     message it never finished cannot be cancelled in UCP: it is left,
 *     with a note, to ucp_worker_destroy (which warns of the request).
 * Exit status: 0 if all held; 1 a check failed; 2 a set-up error; 3 a
 * wait or a UCX call did not end within the deadline (with CHURN_GDB=1 in
 * the environment, the process's stacks are printed first, by gdb).
 *
 *   churn -d DIR -r RANK -n NINIT [-w SECONDS] [-m SECONDS] [-s]
 *     -n  ranks 0..NINIT-1 start together; a rank writes DIR/<rank>.ready
 *         once it is connected to all of them that are not dead
 *     -w  deadline of every operation and wait (default 60)
 *     -m  longest run without DIR/stop (default 300)
 *     -s  an atomic fetch-add to a failed peer still pending 2 s after
 *         the failure is abandoned with a note instead of failing at the
 *         deadline: UCX 1.13 (protocols v1) completes a software atomic
 *         (AM-based: a transport without an atomic lane, as the mlx5
 *         backend over the emulated ConnectX) that waited in the pending
 *         queue never, when the endpoint fails -- ucp_ep_err_pending_purge
 *         sets its status but its completion count stays at 1
 * DIR/<rank>.dead, written by the driver when it kills a rank, holds the
 * kill's time (seconds since the epoch): the summary of a killed peer says
 * how long after the kill its endpoint failed.
 */
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
static const size_t sizes[NSIZES] = {8, 1024, MAX_SIZE, MAX_MSG};

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

static const char *op_name[] = {"tagged send to",
                                "active-message send to",
                                "tagged receive from",
                                "active-message rendezvous receive from",
                                "put to",
                                "endpoint flush of",
                                "get from",
                                "get of the identity of",
                                "atomic fetch-add on",
                                "endpoint close of"};

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

static struct {
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
} g;

static volatile uint64_t g_beat_ms;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double real_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void say(const char *fmt, ...)
{
    va_list ap;
    char line[1024];

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    printf("[%8.3f] rank %d: %s\n", now() - g.t0, g.rank, line);
    fflush(stdout);
}

static void dump_stacks(void)
{
    char cmd[128];
    const char *env = getenv("CHURN_GDB");

    if ((env == NULL) || (strcmp(env, "1") != 0)) {
        return;
    }
    snprintf(cmd, sizeof(cmd),
             "gdb -p %d -batch -ex 'thread apply all bt' </dev/null 2>&1",
             (int)getpid());
    fflush(stdout);
    if (system(cmd) == -1) {
        say("could not run gdb");
    }
    fflush(stdout);
}

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

static void beat(const char *phase)
{
    if (phase != NULL) {
        snprintf(g.phase, sizeof(g.phase), "%s", phase);
    }
    g_beat_ms = (uint64_t)(now() * 1000);
}

/* a UCX call that does not return is caught here */
static void *watchdog(void *arg)
{
    double limit = g.wait_s + 5;

    (void)arg;
    for (;;) {
        usleep(200000);
        if (now() * 1000 - g_beat_ms > limit * 1000) {
            STUCK("no return to the main loop for %.0f s (%s)", limit, g.phase);
        }
    }
    return NULL;
}

static uint64_t mix64(uint64_t x)
{
    x += GOLDEN;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t word_at(const void *buf, size_t i)
{
    uint64_t w;

    memcpy(&w, (const uint8_t *)buf + 8 * i, 8);
    return w;
}

/* payload word i: 0 the destination's identity, 1 the source's, then a
 * pattern of (destination, kind, source, sequence) */
static uint64_t expected_word(size_t i, uint64_t dst_nonce, uint64_t src_nonce,
                              int kind, int src, uint64_t seq)
{
    uint64_t key;

    if (i == 0) {
        return dst_nonce;
    } else if (i == 1) {
        return src_nonce;
    }
    key = mix64(dst_nonce ^
                mix64(((uint64_t)kind << 56) ^ ((uint64_t)src << 48) ^ seq));
    return key ^ (i * GOLDEN);
}

static void fill(void *buf, size_t len, uint64_t dst_nonce, int kind,
                 uint64_t seq)
{
    size_t i;
    uint64_t w;

    for (i = 0; i < len / 8; i++) {
        w = expected_word(i, dst_nonce, g.nonce, kind, g.rank, seq);
        memcpy((uint8_t *)buf + 8 * i, &w, 8);
    }
}

/* checks a received payload of rank SRC (KIND, SEQ) meant for this rank;
 * a wrong destination identity is a misdelivery, anything else corruption */
static void check_payload(const void *buf, size_t len, int kind, int src,
                          uint64_t seq, const char *what)
{
    struct peer *p = &g.peers[src];
    size_t i;
    uint64_t w, e;

    w = word_at(buf, 0);
    if (w != g.nonce) {
        FATAL("MISDELIVERED: %s from rank %d (sequence %" PRIu64
              ", %zu bytes) is addressed to identity 0x%016" PRIx64
              ", this process is 0x%016" PRIx64,
              what, src, seq, len, w, g.nonce);
    }
    for (i = 1; i < len / 8; i++) {
        w = word_at(buf, i);
        e = expected_word(i, g.nonce, p->nonce, kind, src, seq);
        if ((i == 1) && !p->connected) {
            continue; /* its identity is not known yet */
        }
        if (w != e) {
            FATAL("CORRUPT: %s from rank %d (sequence %" PRIu64
                  ", %zu bytes): byte %zu is 0x%016" PRIx64
                  ", expected 0x%016" PRIx64 "%s",
                  what, src, seq, len, 8 * i, w, e,
                  (i == 1) ? " (the sender's identity)" : "");
        }
    }
}

/* ---- files of DIR ---- */

static void path_of(char *buf, size_t size, int rank, const char *suffix)
{
    if (rank < 0) {
        snprintf(buf, size, "%s/%s", g.dir, suffix);
    } else {
        snprintf(buf, size, "%s/%d.%s", g.dir, rank, suffix);
    }
}

static int file_exists(int rank, const char *suffix)
{
    char path[4096];
    struct stat st;

    path_of(path, sizeof(path), rank, suffix);
    return stat(path, &st) == 0;
}

static void write_file(const char *suffix, const void *data, size_t len)
{
    char path[4096], tmp[4096];
    const uint8_t *p = data;
    ssize_t n;
    int fd;

    path_of(path, sizeof(path), g.rank, suffix);
    snprintf(tmp, sizeof(tmp), "%s/.%d.%s.tmp", g.dir, g.rank, suffix);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        say("cannot create %s: %s", tmp, strerror(errno));
        _exit(2);
    }
    while (len > 0) {
        n = write(fd, p, len);
        if (n <= 0) {
            say("cannot write %s: %s", tmp, strerror(errno));
            _exit(2);
        }
        p += n;
        len -= n;
    }
    if ((close(fd) != 0) || (rename(tmp, path) != 0)) {
        say("cannot publish %s: %s", path, strerror(errno));
        _exit(2);
    }
}

/* the whole file, or NULL; *lenp its length */
static uint8_t *read_file(int rank, const char *suffix, size_t *lenp)
{
    char path[4096];
    uint8_t *buf;
    size_t cap = 4096, len = 0;
    ssize_t n;
    int fd;

    path_of(path, sizeof(path), rank, suffix);
    fd = open(path, O_RDONLY);
    if (fd < 0) {
        return NULL;
    }
    buf = malloc(cap + 1);
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
        n = read(fd, buf + len, cap - len);
        if (n <= 0) {
            break;
        }
        len += n;
    }
    close(fd);
    buf[len] = 0;
    *lenp    = len;
    return buf;
}

struct addr_hdr {
    uint64_t magic;
    uint64_t nonce;
    uint64_t base;
    uint32_t rank;
    uint32_t addr_len;
    uint32_t rkey_len;
    uint32_t pad;
};

static void publish_address(void)
{
    struct addr_hdr h = {0};
    size_t len        = sizeof(h) + g.addr_len + g.rkey_len;
    uint8_t *buf      = malloc(len);

    h.magic    = ADDR_MAGIC;
    h.nonce    = g.nonce;
    h.base     = (uintptr_t)g.region;
    h.rank     = g.rank;
    h.addr_len = g.addr_len;
    h.rkey_len = g.rkey_len;
    memcpy(buf, &h, sizeof(h));
    memcpy(buf + sizeof(h), g.addr, g.addr_len);
    memcpy(buf + sizeof(h) + g.addr_len, g.rkey_buf, g.rkey_len);
    write_file("addr", buf, len);
    free(buf);
}

/* ---- operations ---- */

static void op_done(struct op *op, ucs_status_t status)
{
    op->status    = status;
    op->next_done = g.done_list;
    g.done_list   = op;
}

static void send_cb(void *request, ucs_status_t status, void *user_data)
{
    (void)request;
    op_done(user_data, status);
}

static void recv_cb(void *request, ucs_status_t status,
                    const ucp_tag_recv_info_t *info, void *user_data)
{
    struct op *op = user_data;

    (void)request;
    if (status == UCS_OK) {
        op->info = *info;
    }
    op_done(op, status);
}

static void am_data_cb(void *request, ucs_status_t status, size_t length,
                       void *user_data)
{
    struct op *op = user_data;

    (void)request;
    op->info.length = length;
    op_done(op, status);
}

static ucp_request_param_t op_param(struct op *op)
{
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.send   = send_cb;
    param.user_data = op;
    return param;
}

static void op_start(struct op *op, int type)
{
    op->type   = type;
    op->busy   = 1;
    op->req    = NULL;
    op->t_post = now();
}

/* what a posting call returned */
static void op_posted(struct op *op, ucs_status_ptr_t sp)
{
    if (sp == NULL) {
        op_done(op, UCS_OK);
    } else if (UCS_PTR_IS_ERR(sp)) {
        op_done(op, UCS_PTR_STATUS(sp));
    } else {
        op->req = sp;
    }
}

static void peer_failed(struct peer *p, ucs_status_t status, const char *how)
{
    if (p->failed) {
        return;
    }
    p->failed      = 1;
    p->fail_status = status;
    p->failed_at   = now();
    p->failed_real = real_now();
    say("peer %d failed: %s (%s; at %.3f s since the epoch)", p->rank,
        ucs_status_string(status), how, p->failed_real);
}

static void err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    peer_failed(arg, status, "endpoint error callback");
}

static void post_tag_recv(struct peer *p, struct op *op)
{
    ucp_request_param_t param = op_param(op);
    ucp_tag_t tag             = TAG_KIND | ((uint64_t)p->rank << TAG_SRC_SHIFT);

    param.cb.recv = recv_cb;
    op_start(op, OP_TAG_RX);
    op->seq = p->rx_next++;
    op_posted(op, ucp_tag_recv_nbx(g.worker, op->buf, MAX_MSG, tag, TAG_MASK,
                                   &param));
}

static void post_tag_send(struct peer *p, struct op *op)
{
    ucp_request_param_t param = op_param(op);
    ucp_tag_t tag;

    op_start(op, OP_TAG_TX);
    op->seq = p->tag_seq++;
    op->len = sizes[op->seq % NSIZES];
    tag     = TAG_KIND | ((uint64_t)g.rank << TAG_SRC_SHIFT) | op->seq;
    fill(op->buf, op->len, p->nonce, K_TAG, op->seq);
    op_posted(op, ucp_tag_send_nbx(p->ep, op->buf, op->len, tag, &param));
}

static void post_am_send(struct peer *p, struct op *op)
{
    ucp_request_param_t param = op_param(op);

    op_start(op, OP_AM_TX);
    op->seq           = p->am_seq++;
    op->len           = sizes[op->seq % NSIZES];
    op->hdr.dst_nonce = p->nonce;
    op->hdr.src_nonce = g.nonce;
    op->hdr.seq       = op->seq;
    op->hdr.src       = g.rank;
    op->hdr.len       = op->len;
    fill(op->buf, op->len, p->nonce, K_AM, op->seq);
    op_posted(op, ucp_am_send_nbx(p->ep, AM_ID, &op->hdr, sizeof(op->hdr),
                                  op->buf, op->len, &param));
}

static uint64_t slot_addr(struct peer *p)
{
    return p->base + REG_SLOT + (uint64_t)g.rank * MAX_SIZE;
}

static void post_put(struct peer *p)
{
    struct op *op             = &p->put;
    ucp_request_param_t param = op_param(op);

    op_start(op, OP_PUT);
    op->seq = p->rma_seq++;
    op->len = sizes[op->seq % NRMA_SIZES];
    fill(op->buf, op->len, p->nonce, K_PUT, op->seq);
    op_posted(op, ucp_put_nbx(p->ep, op->buf, op->len, slot_addr(p), p->rkey,
                              &param));
    p->rma_state = RMA_PUT;
}

static void post_flush(struct peer *p)
{
    struct op *op             = &p->flush;
    ucp_request_param_t param = op_param(op);

    op_start(op, OP_FLUSH);
    op->seq = p->put.seq;
    op_posted(op, ucp_ep_flush_nbx(p->ep, &param));
    p->rma_state = RMA_FLUSH;
}

static void post_gets(struct peer *p)
{
    struct op *op             = &p->get;
    ucp_request_param_t param = op_param(op);

    op_start(op, OP_GET);
    op->seq = p->put.seq;
    op->len = p->put.len;
    memset(op->buf, 0, op->len);
    op_posted(op, ucp_get_nbx(p->ep, op->buf, op->len, slot_addr(p), p->rkey,
                              &param));

    op    = &p->get_id;
    param = op_param(op);
    op_start(op, OP_GET_ID);
    op->seq = p->put.seq;
    op->len = 8;
    op->val = 0;
    op_posted(op, ucp_get_nbx(p->ep, &op->val, 8, p->base, p->rkey, &param));
    p->rma_state = RMA_GET;
}

static void post_amo(struct peer *p)
{
    struct op *op             = &p->amo;
    ucp_request_param_t param = op_param(op);

    op_start(op, OP_AMO);
    op->seq     = p->amo_adds;
    op->len     = 8;
    op->operand = 1;
    op->val     = 0;
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE |
                          UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype     = ucp_dt_make_contig(8);
    param.reply_buffer = &op->val;
    op_posted(op, ucp_atomic_op_nbx(p->ep, UCP_ATOMIC_OP_ADD, &op->operand, 1,
                                    p->base + REG_CNT + 8 * (uint64_t)g.rank,
                                    p->rkey, &param));
}

static void am_seen(struct peer *p, uint64_t seq)
{
    size_t need = seq / 8 + 1, n;

    if (need > p->am_seen_len) {
        n = p->am_seen_len ? p->am_seen_len : 1024;
        while (n < need) {
            n *= 2;
        }
        p->am_seen = realloc(p->am_seen, n);
        memset(p->am_seen + p->am_seen_len, 0, n - p->am_seen_len);
        p->am_seen_len = n;
    }
    if (p->am_seen[seq / 8] & (1u << (seq % 8))) {
        FATAL("DUPLICATE: active message %" PRIu64 " of rank %d seen twice",
              seq, p->rank);
    }
    p->am_seen[seq / 8] |= 1u << (seq % 8);
    if (seq + 1 > p->am_seq_end) {
        p->am_seq_end = seq + 1;
    }
    p->n_am_rx++;
}

static ucs_status_t am_cb(void *arg, const void *header, size_t header_length,
                          void *data, size_t length,
                          const ucp_am_recv_param_t *rparam)
{
    struct am_hdr h;
    struct peer *p;
    struct op *op = NULL;
    ucp_request_param_t param;
    int i;

    (void)arg;
    if (header_length != sizeof(h)) {
        FATAL("CORRUPT: active message with a header of %zu bytes",
              header_length);
    }
    memcpy(&h, header, sizeof(h));
    if (h.dst_nonce != g.nonce) {
        FATAL("MISDELIVERED: active message from rank %u (sequence %" PRIu64
              ", %zu bytes) is addressed to identity 0x%016" PRIx64
              ", this process is 0x%016" PRIx64,
              h.src, h.seq, length, h.dst_nonce, g.nonce);
    }
    if ((h.src >= MAX_RANKS) || ((int)h.src == g.rank) || (h.len != length) ||
        (h.len != sizes[h.seq % NSIZES])) {
        FATAL("CORRUPT: active message header: source %u, sequence %" PRIu64
              ", length %u, %zu bytes came",
              h.src, h.seq, h.len, length);
    }
    p = &g.peers[h.src];
    if (p->connected && (h.src_nonce != p->nonce)) {
        FATAL("CORRUPT: active message from rank %u carries identity "
              "0x%016" PRIx64 ", that rank's is 0x%016" PRIx64,
              h.src, h.src_nonce, p->nonce);
    }
    if (!(rparam->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        check_payload(data, length, K_AM, h.src, h.seq, "active message");
        am_seen(p, h.seq);
        return UCS_OK;
    }
    for (i = 0; i < AM_RX_POOL; i++) {
        if (!p->am_rx[i].busy) {
            op = &p->am_rx[i];
            break;
        }
    }
    if (op == NULL) {
        FATAL("more than %d rendezvous active messages of rank %u at once",
              AM_RX_POOL, h.src);
    }
    op_start(op, OP_AM_RX);
    op->hdr          = h;
    op->seq          = h.seq;
    op->len          = length;
    op->buf          = malloc(length);
    param            = op_param(op);
    param.cb.recv_am = am_data_cb;
    op_posted(op,
              ucp_am_recv_data_nbx(g.worker, data, op->buf, length, &param));
    return UCS_OK;
}

/* ---- connections ---- */

static void connect_peer(int rank)
{
    struct peer *p = &g.peers[rank];
    struct addr_hdr h;
    ucp_ep_params_t ep_params;
    ucs_status_t status;
    uint8_t *buf;
    size_t len;
    int i;

    buf = read_file(rank, "addr", &len);
    if (buf == NULL) {
        return; /* removed meanwhile */
    }
    memcpy(&h, buf, (len < sizeof(h)) ? len : sizeof(h));
    if ((len < sizeof(h)) || (h.magic != ADDR_MAGIC) ||
        (h.rank != (uint32_t)rank) ||
        (len != sizeof(h) + h.addr_len + h.rkey_len)) {
        say("bad address file of rank %d (%zu bytes)", rank, len);
        _exit(2);
    }
    p->nonce = h.nonce;
    p->base  = h.base;

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                           UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                           UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep_params.address         = (ucp_address_t *)(buf + sizeof(h));
    ep_params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
    ep_params.err_handler.cb  = err_cb;
    ep_params.err_handler.arg = p;
    status                    = ucp_ep_create(g.worker, &ep_params, &p->ep);
    if (status != UCS_OK) {
        FATAL("ucp_ep_create to rank %d: %s", rank, ucs_status_string(status));
    }
    status = ucp_ep_rkey_unpack(p->ep, buf + sizeof(h) + h.addr_len, &p->rkey);
    if (status != UCS_OK) {
        FATAL("ucp_ep_rkey_unpack of rank %d: %s", rank,
              ucs_status_string(status));
    }
    free(buf);

    for (i = 0; i < TX_DEPTH; i++) {
        p->tag_tx[i].buf = malloc(MAX_MSG);
        p->am_tx[i].buf  = malloc(MAX_MSG);
    }
    for (i = 0; i < RX_DEPTH; i++) {
        p->tag_rx[i].buf = malloc(MAX_MSG);
    }
    p->put.buf   = malloc(MAX_SIZE);
    p->get.buf   = malloc(MAX_SIZE);
    p->connected = 1;
    say("connected to rank %d (identity 0x%016" PRIx64 ")", rank, p->nonce);
    for (i = 0; i < RX_DEPTH; i++) {
        post_tag_recv(p, &p->tag_rx[i]);
    }
}

/* connects to ranks whose address appeared; 1 if connected to all of
 * 0..ninit-1 that are not dead */
static int scan(void)
{
    struct peer *p;
    int r, all = 1;

    for (r = 0; r < MAX_RANKS; r++) {
        p = &g.peers[r];
        if (r == g.rank) {
            continue;
        }
        if (!p->dead && file_exists(r, "dead")) {
            p->dead = 1;
        }
        if (!p->connected && !p->dead && file_exists(r, "addr")) {
            connect_peer(r);
        }
        if ((r < g.ninit) && !p->connected && !p->dead) {
            all = 0;
        }
    }
    return all;
}

/* ---- completions ---- */

static void rma_complete(struct peer *p)
{
    long i;

    if (p->get_id.val != p->nonce) {
        FATAL("MISDELIVERED: the region of rank %d (sequence %" PRIu64
              ") holds identity 0x%016" PRIx64 ", rank %d is 0x%016" PRIx64,
              p->rank, p->get.seq, p->get_id.val, p->rank, p->nonce);
    }
    if (memcmp(p->get.buf, p->put.buf, p->get.len) != 0) {
        for (i = 0; i < (long)p->get.len / 8; i++) {
            if (word_at(p->get.buf, i) != word_at(p->put.buf, i)) {
                break;
            }
        }
        FATAL("CORRUPT: get from rank %d (sequence %" PRIu64
              ", %zu bytes) after put: byte %ld is 0x%016" PRIx64
              ", put 0x%016" PRIx64,
              p->rank, p->get.seq, p->get.len, 8 * i, word_at(p->get.buf, i),
              word_at(p->put.buf, i));
    }
    p->n_rma++;
    p->rma_state = RMA_IDLE;
}

static void handle(struct op *op)
{
    struct peer *p = op->peer;
    uint64_t seq, src;

    op->busy = 0;
    if (op->req != NULL) {
        ucp_request_free(op->req);
        op->req = NULL;
    }
    if (op->abandoned) {
        op->abandoned = 0;
        return;
    }
    if ((op->type == OP_TAG_RX) && (op->status == UCS_ERR_CANCELED) &&
        g.canceling) {
        return;
    }
    if (op->type == OP_CLOSE) {
        if ((op->status != UCS_OK) && !p->failed) {
            say("note: close of the endpoint to live peer %d: %s", p->rank,
                ucs_status_string(op->status));
        }
        return;
    }
    if (op->status != UCS_OK) {
        /* a receive too: a rendezvous from a peer that died */
        peer_failed(p, op->status, op_name[op->type]);
        if (op->type >= OP_PUT) {
            p->rma_state = RMA_IDLE;
        }
        return;
    }
    switch (op->type) {
    case OP_TAG_TX:
        p->n_tag_tx++;
        break;
    case OP_AM_TX:
        p->n_am_tx++;
        break;
    case OP_TAG_RX:
        seq = op->info.sender_tag & TAG_SEQ_MASK;
        src = (op->info.sender_tag >> TAG_SRC_SHIFT) & 0xff;
        if (op->info.length >= 8) {
            check_payload(op->buf, 8, K_TAG, p->rank, seq, "tagged message");
        }
        if ((src != (uint64_t)p->rank) || (seq != op->seq) ||
            (op->info.length != sizes[seq % NSIZES])) {
            FATAL("ORDER: tagged receive %" PRIu64 " from rank %d got tag "
                  "0x%016" PRIx64 " (source %" PRIu64 ", sequence %" PRIu64
                  "), %zu bytes: lost, duplicate or out of order",
                  op->seq, p->rank, op->info.sender_tag, src, seq,
                  op->info.length);
        }
        check_payload(op->buf, op->info.length, K_TAG, p->rank, seq,
                      "tagged message");
        p->n_tag_rx++;
        if (!g.canceling) {
            post_tag_recv(p, op);
        }
        break;
    case OP_AM_RX:
        check_payload(op->buf, op->len, K_AM, p->rank, op->seq,
                      "active message (rendezvous)");
        free(op->buf);
        op->buf = NULL;
        am_seen(p, op->seq);
        p->n_am_rndv++;
        break;
    case OP_PUT:
        if (!p->failed && (p->rma_state == RMA_PUT)) {
            post_flush(p);
        }
        break;
    case OP_FLUSH:
        if (!p->failed && (p->rma_state == RMA_FLUSH)) {
            post_gets(p);
        }
        break;
    case OP_GET:
    case OP_GET_ID:
        if (!p->failed && !p->get.busy && !p->get_id.busy) {
            rma_complete(p);
        }
        break;
    case OP_AMO:
        if (op->val != p->amo_adds) {
            FATAL("%s: fetch-add %" PRIu64 " on rank %d fetched %" PRIu64
                  ", this rank had added %" PRIu64 " there",
                  (op->val > p->amo_adds) ? "MISDELIVERED or CORRUPT" :
                                            "CORRUPT",
                  op->seq, p->rank, op->val, p->amo_adds);
        }
        p->amo_adds++;
        p->n_amo++;
        break;
    }
}

static int progress(void)
{
    struct op *op;
    int n = 0, k;

    for (k = 0; k < 16; k++) {
        if (ucp_worker_progress(g.worker) == 0) {
            break;
        }
        n++;
    }
    while (g.done_list != NULL) {
        op          = g.done_list;
        g.done_list = op->next_done;
        handle(op);
        n++;
    }
    return n;
}

#define PEER_OPS (2 * TX_DEPTH + AM_RX_POOL + 6)

/* the peer's operations but its tagged receives, I = 0 .. PEER_OPS - 1 */
static struct op *peer_op(struct peer *p, int i)
{
    struct op *last[] = {&p->put,    &p->flush, &p->get,
                         &p->get_id, &p->amo,   &p->close};

    if (i < TX_DEPTH) {
        return &p->tag_tx[i];
    } else if ((i -= TX_DEPTH) < TX_DEPTH) {
        return &p->am_tx[i];
    } else if ((i -= TX_DEPTH) < AM_RX_POOL) {
        return &p->am_rx[i];
    }
    return last[i - AM_RX_POOL];
}

/* every operation (but a receive waiting for a message) ends in time */
static void check_deadlines(void)
{
    char fail[64] = "not failed";
    double t      = now();
    struct peer *p;
    struct op *op;
    int r, i, k;

    for (r = 0; r < MAX_RANKS; r++) {
        p = &g.peers[r];
        for (i = 0; i < PEER_OPS; i++) {
            op = peer_op(p, i);
            if (op->busy && (op->type == OP_AMO) && g.sw_amo_bug && p->failed &&
                (t - p->failed_at > 2)) {
                say("note: atomic fetch-add on rank %d (sequence %" PRIu64
                    "), posted at %.3f s, still pending %.1f s after the "
                    "peer failed: abandoned (-s; UCX 1.13 does not complete "
                    "a software atomic purged from the pending queue)",
                    r, op->seq, op->t_post - g.t0, t - p->failed_at);
                op->busy      = 0;
                op->abandoned = 1;
                continue;
            }
            if (!op->busy || (t - op->t_post <= g.wait_s)) {
                continue;
            }
            if (p->failed) {
                snprintf(fail, sizeof(fail), "failed at %.3f s: %s",
                         p->failed_at - g.t0,
                         ucs_status_string(p->fail_status));
            }
            say("ERROR: %s rank %d (sequence %" PRIu64 ", %zu bytes), posted "
                "at %.3f s, not done after %.0f s (peer %s, %s)",
                op_name[op->type], r, op->seq, op->len, op->t_post - g.t0,
                g.wait_s, fail, p->dead ? "killed" : "not killed");
            for (k = 0; k < PEER_OPS; k++) {
                op = peer_op(p, k);
                if (op->busy && (k != i)) {
                    say("  in flight too: %s rank %d (sequence %" PRIu64
                        ", %zu bytes), posted at %.3f s",
                        op_name[op->type], r, op->seq, op->len,
                        op->t_post - g.t0);
                }
            }
            dump_stacks();
            say("FAIL (stuck)");
            _exit(3);
        }
    }
}

/* keeps the peer's traffic going */
static int top_up(struct peer *p)
{
    int i, n = 0;

    if (!p->connected || p->failed || g.stopping) {
        return 0;
    }
    for (i = 0; i < TX_DEPTH; i++) {
        if (!p->tag_tx[i].busy) {
            post_tag_send(p, &p->tag_tx[i]);
            n++;
        }
        if (!p->failed && !p->am_tx[i].busy) {
            post_am_send(p, &p->am_tx[i]);
            n++;
        }
    }
    if (!p->failed && (p->rma_state == RMA_IDLE)) {
        post_put(p);
        n++;
    }
    if (!p->failed && !p->amo.busy) {
        post_amo(p);
        n++;
    }
    return n;
}

/* a peer this rank waits for at the end: connected and not killed */
static int expected(struct peer *p)
{
    return p->connected && !p->dead;
}

/* progresses until COND(p) holds for every expected peer (with ALL, every
 * connected peer, the killed one included) */
static void wait_all(int (*cond)(struct peer *), int all_peers,
                     const char *what)
{
    double deadline = now() + g.wait_s, next = 0;
    char missing[512];
    struct peer *p;
    int r, all, len;

    beat(what);
    for (;;) {
        progress();
        beat(NULL);
        if (now() < next) {
            sched_yield();
            continue;
        }
        next = now() + 0.01;
        check_deadlines();
        all        = 1;
        len        = 0;
        missing[0] = 0;
        for (r = 0; r < MAX_RANKS; r++) {
            p = &g.peers[r];
            if ((r != g.rank) && (all_peers ? p->connected : expected(p)) &&
                !cond(p)) {
                all = 0;
                if (len < (int)sizeof(missing) - 8) {
                    len += snprintf(missing + len, sizeof(missing) - len, " %d",
                                    r);
                }
            }
        }
        if (all) {
            return;
        }
        if (now() > deadline) {
            STUCK("%s: not done after %.0f s, missing peers:%s", what, g.wait_s,
                  missing);
        }
    }
}

static int c_idle(struct peer *p)
{
    int i, n = 0;

    for (i = 0; i < PEER_OPS; i++) {
        n += peer_op(p, i)->busy;
    }
    return n == 0;
}

static int c_drained(struct peer *p)
{
    uint8_t *buf;
    char *line, *save;
    size_t len;
    int r, n;
    unsigned long long t, a, m;

    if (p->drained) {
        return 1;
    }
    buf = read_file(p->rank, "drained", &len);
    if (buf == NULL) {
        return 0;
    }
    /* lines "DST tag N am N amo N", one a peer it reached */
    p->their_tag = p->their_am = p->their_amo = 0;
    for (line = strtok_r((char *)buf, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        n = sscanf(line, "%d tag %llu am %llu amo %llu", &r, &t, &a, &m);
        if ((n == 4) && (r == g.rank)) {
            p->their_tag = t;
            p->their_am  = a;
            p->their_amo = m;
        }
    }
    free(buf);
    p->drained = 1;
    return 1;
}

static int c_received(struct peer *p)
{
    return (p->failed || p->dead) ||
           ((p->n_tag_rx >= p->their_tag) && (p->n_am_rx >= p->their_am));
}

static int c_closed(struct peer *p)
{
    if (!p->closed && file_exists(p->rank, "closed")) {
        p->closed = 1;
    }
    return p->closed;
}

/* ---- the phases ---- */

static void setup(void)
{
    ucp_params_t params;
    ucp_config_t *config;
    ucp_worker_params_t wparams;
    ucp_mem_map_params_t mparams;
    ucp_am_handler_param_t aparams;
    ucs_status_t status;
    void *mem;

#define SETUP_OK(_call)                                       \
    do {                                                      \
        status = (_call);                                     \
        if (status != UCS_OK) {                               \
            say("%s: %s", #_call, ucs_status_string(status)); \
            _exit(2);                                         \
        }                                                     \
    } while (0)

    SETUP_OK(ucp_config_read(NULL, NULL, &config));
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA |
                      UCP_FEATURE_AMO64;
    SETUP_OK(ucp_init(&params, config, &g.ctx));
    ucp_config_release(config);

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    SETUP_OK(ucp_worker_create(g.ctx, &wparams, &g.worker));
    SETUP_OK(ucp_worker_get_address(g.worker, &g.addr, &g.addr_len));

    memset(&aparams, 0, sizeof(aparams));
    aparams.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                         UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                         UCP_AM_HANDLER_PARAM_FIELD_CB |
                         UCP_AM_HANDLER_PARAM_FIELD_ARG;
    aparams.id    = AM_ID;
    aparams.flags = UCP_AM_FLAG_WHOLE_MSG;
    aparams.cb    = am_cb;
    aparams.arg   = NULL;
    SETUP_OK(ucp_worker_set_am_recv_handler(g.worker, &aparams));

    mem = mmap(REG_HINT, REG_SIZE, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (mem == MAP_FAILED) {
        mem = mmap(NULL, REG_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    if (mem == MAP_FAILED) {
        say("mmap of %d bytes: %s", REG_SIZE, strerror(errno));
        _exit(2);
    }
    g.region = mem;
    memcpy(g.region, &g.nonce, 8);
    memset(&mparams, 0, sizeof(mparams));
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address = g.region;
    mparams.length  = REG_SIZE;
    SETUP_OK(ucp_mem_map(g.ctx, &mparams, &g.memh));
    SETUP_OK(ucp_rkey_pack(g.ctx, g.memh, &g.rkey_buf, &g.rkey_len));
#undef SETUP_OK
}

static void run(void)
{
    double start = now(), next_scan = 0, t;
    int ready = 0, r, n;

    beat("traffic");
    for (;;) {
        n = progress();
        beat(NULL);
        t = now();
        if (t >= next_scan) {
            next_scan = t + 0.05;
            if (scan() && !ready) {
                ready = 1;
                write_file("ready", "", 0);
                say("ready");
            }
            check_deadlines();
            if (file_exists(-1, "stop")) {
                break;
            }
            if (t - start > g.max_run_s) {
                STUCK("no %s/stop after %.0f s", g.dir, g.max_run_s);
            }
        }
        for (r = 0; r < MAX_RANKS; r++) {
            n += top_up(&g.peers[r]);
        }
        if (n == 0) {
            sched_yield();
        }
    }
    say("stop: draining");
    g.stopping = 1;
}

static void drain(void)
{
    ucp_request_param_t param;
    struct peer *p;
    char buf[MAX_RANKS * 96];
    int r, len = 0;

    wait_all(c_idle, 1, "operations in flight to complete");
    /* remote completion of all this rank sent (rma_state is RMA_IDLE: the
     * flush completion starts no get) */
    for (r = 0; r < MAX_RANKS; r++) {
        p = &g.peers[r];
        if (expected(p) && !p->failed) {
            op_start(&p->flush, OP_FLUSH);
            param = op_param(&p->flush);
            op_posted(&p->flush, ucp_ep_flush_nbx(p->ep, &param));
        }
    }
    wait_all(c_idle, 1, "final endpoint flushes");
    for (r = 0; r < MAX_RANKS; r++) {
        p = &g.peers[r];
        if (p->connected) {
            len += snprintf(buf + len, sizeof(buf) - len,
                            "%d tag %" PRIu64 " am %" PRIu64 " amo %" PRIu64
                            "\n",
                            r, p->n_tag_tx, p->n_am_tx, p->amo_adds);
        }
    }
    write_file("drained", buf, len);
    wait_all(c_drained, 0, "the peers' drained files");
    wait_all(c_received, 0, "the messages the peers sent");
}

/* the region: identity intact, counters as added, slots written by their
 * owners only */
static void check_region(void)
{
    struct peer *p;
    uint64_t id, cnt, hdr;
    int r;

    memcpy(&id, g.region, 8);
    if (id != g.nonce) {
        FAILED("CORRUPT: the identity in this rank's region is 0x%016" PRIx64,
               id);
    }
    for (r = 0; r < MAX_RANKS; r++) {
        p = &g.peers[r];
        memcpy(&cnt, g.region + REG_CNT + 8 * r, 8);
        memcpy(&hdr, g.region + REG_SLOT + (size_t)r * MAX_SIZE, 8);
        if ((hdr != 0) && (hdr != g.nonce)) {
            FAILED("MISDELIVERED: the put slot of rank %d here holds a put "
                   "addressed to identity 0x%016" PRIx64,
                   r, hdr);
        }
        if (p->drained && (cnt != p->their_amo)) {
            FAILED("%s: the counter of rank %d here is %" PRIu64
                   ", it says it added %" PRIu64,
                   (cnt > p->their_amo) ? "MISDELIVERED" : "CORRUPT", r, cnt,
                   p->their_amo);
        } else if (!p->connected && ((cnt != 0) || (hdr != 0))) {
            FAILED("MISDELIVERED: rank %d never knew this rank, but its "
                   "counter here is %" PRIu64 " and its slot starts "
                   "0x%016" PRIx64,
                   r, cnt, hdr);
        }
    }
}

static void summarize(void)
{
    char detect[64];
    struct peer *p;
    uint8_t *buf;
    double killed;
    size_t len;
    int r, live = 0;

    for (r = 0; r < MAX_RANKS; r++) {
        p = &g.peers[r];
        if (!p->dead && file_exists(r, "dead")) {
            p->dead = 1;
        }
        if (!p->connected) {
            continue;
        }
        detect[0] = 0;
        if (p->dead && p->failed) {
            /* DIR/<rank>.dead holds the kill's time (seconds since the
             * epoch) */
            buf = read_file(r, "dead", &len);
            if ((buf != NULL) && (sscanf((char *)buf, "%lf", &killed) == 1)) {
                snprintf(detect, sizeof(detect), ", %.3f s after the kill",
                         p->failed_real - killed);
            }
            free(buf);
        }
        say("summary peer %d: tag tx %" PRIu64 " rx %" PRIu64 ", am tx %" PRIu64
            " rx %" PRIu64 " (rndv %" PRIu64 "), put/get %" PRIu64
            ", amo %" PRIu64 ", %s%s%s%s",
            r, p->n_tag_tx, p->n_tag_rx, p->n_am_tx, p->n_am_rx, p->n_am_rndv,
            p->n_rma, p->n_amo, p->failed ? "failed: " : "live",
            p->failed ? ucs_status_string(p->fail_status) : "", detect,
            p->dead ? " (killed)" : "");
        if (p->dead) {
            continue;
        }
        live++;
        if (p->failed) {
            FAILED("live peer failed: rank %d (%s)", r,
                   ucs_status_string(p->fail_status));
            continue;
        }
        if (!p->n_tag_tx || !p->n_tag_rx || !p->n_am_tx || !p->n_am_rx ||
            !p->n_rma || !p->n_amo) {
            FAILED("not every type of operation completed with rank %d", r);
        }
        if ((p->n_tag_rx != p->their_tag) || (p->n_am_rx != p->their_am) ||
            (p->am_seq_end != p->n_am_rx)) {
            FAILED("rank %d says it sent %" PRIu64 " tagged and %" PRIu64
                   " active messages, %" PRIu64 " and %" PRIu64
                   " came (active-message sequences up to %" PRIu64 ")",
                   r, p->their_tag, p->their_am, p->n_tag_rx, p->n_am_rx,
                   p->am_seq_end);
        }
    }
    for (r = 0; r < MAX_RANKS; r++) {
        if ((r != g.rank) && !g.peers[r].connected && !g.peers[r].dead &&
            file_exists(r, "addr")) {
            FAILED("rank %d published its address but was never reached", r);
        }
    }
    say("peers live at the end: %d", live);
}

static void teardown(void)
{
    ucp_request_param_t param;
    struct peer *p;
    struct op *op;
    double t0;
    int r, i;

    beat("cancelling receives");
    g.canceling = 1;
    for (r = 0; r < MAX_RANKS; r++) {
        p = &g.peers[r];
        for (i = 0; i < RX_DEPTH; i++) {
            if (p->tag_rx[i].busy && (p->tag_rx[i].req != NULL)) {
                ucp_request_cancel(g.worker, p->tag_rx[i].req);
            }
        }
    }
    /* a receive from a peer that died may have matched the first part of
     * a message it did not finish sending: UCP cannot cancel it, and does
     * not end it; it is left to ucp_worker_destroy */
    t0 = now();
    for (r = 0; r < MAX_RANKS; r++) {
        p = &g.peers[r];
        for (i = 0; i < RX_DEPTH; i++) {
            op = &p->tag_rx[i];
            while (op->busy) {
                progress();
                beat(NULL);
                if ((p->failed || p->dead) && (now() > t0 + 1)) {
                    say("note: tagged receive %" PRIu64 " from rank %d, "
                        "which failed, cannot be cancelled (a message it "
                        "did not finish): left to ucp_worker_destroy",
                        op->seq, r);
                    op->busy = 0;
                } else if (now() > t0 + g.wait_s) {
                    STUCK("cancelled tagged receive %" PRIu64 " from rank "
                          "%d not done after %.0f s",
                          op->seq, r, g.wait_s);
                }
            }
        }
    }

    beat("closing endpoints");
    for (r = 0; r < MAX_RANKS; r++) {
        p = &g.peers[r];
        if (!p->connected) {
            continue;
        }
        ucp_rkey_destroy(p->rkey);
        op_start(&p->close, OP_CLOSE);
        param = op_param(&p->close);
        if (p->failed) {
            param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
            param.flags = UCP_EP_CLOSE_FLAG_FORCE;
        }
        op_posted(&p->close, ucp_ep_close_nbx(p->ep, &param));
    }
    wait_all(c_idle, 1, "endpoint closes");
    /* nobody destroys its worker while a peer may still close towards it */
    write_file("closed", "", 0);
    wait_all(c_closed, 0, "the peers' closed files");
    /* from here on no peer is expected */
    for (r = 0; r < MAX_RANKS; r++) {
        g.peers[r].connected = 0;
    }

    beat("destroying the worker");
    ucp_rkey_buffer_release(g.rkey_buf);
    ucp_mem_unmap(g.ctx, g.memh);
    ucp_worker_release_address(g.worker, g.addr);
    ucp_worker_destroy(g.worker);
    beat("ucp_cleanup");
    ucp_cleanup(g.ctx);
    munmap(g.region, REG_SIZE);
    beat("exit");
}

static void usage(void)
{
    fprintf(stderr, "usage: churn -d DIR -r RANK -n NINIT [-w SECONDS] "
                    "[-m SECONDS] [-s]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    pthread_t thread;
    int c, r, i;

    g.t0        = now();
    g.rank      = -1;
    g.wait_s    = 60;
    g.max_run_s = 300;
    while ((c = getopt(argc, argv, "d:r:n:w:m:sh")) != -1) {
        switch (c) {
        case 'd':
            g.dir = optarg;
            break;
        case 'r':
            g.rank = atoi(optarg);
            break;
        case 'n':
            g.ninit = atoi(optarg);
            break;
        case 'w':
            g.wait_s = atof(optarg);
            break;
        case 'm':
            g.max_run_s = atof(optarg);
            break;
        case 's':
            g.sw_amo_bug = 1;
            break;
        default:
            usage();
        }
    }
    if ((g.dir == NULL) || (g.rank < 0) || (g.rank >= MAX_RANKS) ||
        (g.ninit < 1) || (g.ninit > MAX_RANKS) || (g.wait_s <= 0)) {
        usage();
    }
    for (r = 0; r < MAX_RANKS; r++) {
        g.peers[r].rank = r;
        for (i = 0; i < PEER_OPS; i++) {
            peer_op(&g.peers[r], i)->peer = &g.peers[r];
        }
        for (i = 0; i < RX_DEPTH; i++) {
            g.peers[r].tag_rx[i].peer = &g.peers[r];
        }
    }
    while (g.nonce == 0) {
        if (getrandom(&g.nonce, sizeof(g.nonce), 0) != sizeof(g.nonce)) {
            say("getrandom: %s", strerror(errno));
            return 2;
        }
    }
#ifdef PR_SET_PTRACER
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* CHURN_GDB */
#endif
    beat("set-up");
    pthread_create(&thread, NULL, watchdog, NULL);

    setup();
    publish_address();
    say("pid %d, identity 0x%016" PRIx64 ", region at %p", (int)getpid(),
        g.nonce, (void *)g.region);

    run();
    drain();
    check_region();
    summarize();
    teardown();
    if (g.nfail != 0) {
        say("FAIL (%d checks)", g.nfail);
        return 1;
    }
    say("PASS");
    return 0;
}
