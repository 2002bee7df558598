/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device-layer benchmark: round-trip latency (send/recv ping-pong) and
 * one-way bandwidth (RDMA write stream) between two processes over the soft
 * device, side by side with a plain shared-memory ping-pong and stream that
 * do the same copies with nothing else: the physical limit of this machine.
 *
 *   dev_pingpong [-n iters] [-w window] [-s max_size] [-R]
 *
 * Prints one table: size, latency and bandwidth of both, and the ratios.
 * Then a second one: RDMA READ median latency and READ stream bandwidth
 * while the target process computes without polling its device (only its
 * helper thread can answer), and READ median latency while it polls.
 * -R runs the READ table only.
 *
 * -T ROUNDS: the tail of the 8-byte ping-pong instead.  ROUNDS rounds of
 * -n round trips, the soft device and plain shared memory taking turns;
 * every round trip is timed on its own, and each side's involuntary
 * context switches and device counters (helper wakes and passes, futex
 * wakes, prods, retransmissions, engine lock waits) are read around each
 * dcx round.  Prints per transport the distribution (median, p90, p99,
 * p99.9, max, mean), how many round trips took more than 4x the median
 * and their share of the time, then the counters per 10 000 round trips.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RUSAGE_THREAD */
#endif
#include "dcx_dev.h"
#include "soft/dcx_soft.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BENCH_MAX_SIZE  (4u << 20)
#define BENCH_SHM_SLOTS 8
#define BENCH_DC_KEY    0x1ee7

/* Exchanged between the two processes through an anonymous shared mapping
 * created before fork(). */
typedef struct {
    uint8_t addr[2][DCX_DEV_ADDR_MAX];
    size_t addr_len[2];
    uint32_t dctn[2];
    uint32_t rkey[2];
    uint64_t buf[2];
    atomic_int ready[2];
    atomic_int phase;     /* barrier counter */
    atomic_int busy_stop; /* ends the target's compute loop */
    atomic_uint_fast64_t sink;
    /* -T: rank 1's counters around a round, for rank 0 to print */
    dcx_soft_stats_t tail_stats[2];
    long tail_ivcsw[2];
    /* plain shared-memory channel: a slot ring each way */
    atomic_uint_fast64_t seq[2]; /* messages published towards rank i */
    atomic_uint_fast64_t ack[2]; /* messages consumed by rank i */
    uint8_t slots[2][BENCH_SHM_SLOTS][BENCH_MAX_SIZE];
} bench_shared_t;

typedef struct {
    int rank;
    dcx_dev_t *dev;
    dcx_pd_t *pd;
    dcx_cq_t *scq, *rcq;
    dcx_srq_t *srq;
    dcx_qp_t *dci, *dct;
    dcx_mr_t *mr;
    dcx_ah_t *ah;
    uint8_t *buf;  /* send/recv/write buffer, BENCH_MAX_SIZE * 2 */
    uint8_t *priv; /* private buffer for the plain channel */
    uint32_t peer_dctn, peer_rkey;
    uint64_t peer_buf;
} bench_ctx_t;

static bench_shared_t *shm;
static unsigned iters  = 2000;
static unsigned window = 32;
static size_t max_size = BENCH_MAX_SIZE;
static int reads_only;
static unsigned tail_rounds;

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what, int err)
{
    fprintf(stderr, "dev_pingpong: %s failed: %s\n", what, strerror(err));
    exit(1);
}

#define CHECK(_call)         \
    do {                     \
        int _r = (_call);    \
        if (_r != 0)         \
            die(#_call, _r); \
    } while (0)

static void barrier(int rank)
{
    static int round;
    int target = 2 * (++round);

    (void)rank;
    atomic_fetch_add(&shm->phase, 1);
    while (atomic_load(&shm->phase) < target) {
        sched_yield();
    }
}

static void post_recv(bench_ctx_t *c, unsigned slot)
{
    dcx_sge_t sge = {.addr   = (uintptr_t)(c->buf + BENCH_MAX_SIZE),
                     .length = BENCH_MAX_SIZE,
                     .lkey   = c->mr->lkey};

    CHECK(dcx_srq_post_recv(c->srq, slot, &sge, 1));
}

static void wait_wc(dcx_cq_t *cq, dcx_wc_t *wc)
{
    int n;

    do {
        n = dcx_cq_poll(cq, 1, wc);
    } while (n == 0);
    if (n < 0 || wc->status != DCX_WC_SUCCESS) {
        fprintf(stderr, "dev_pingpong: completion error: %s\n",
                n < 0 ? "poll failed" :
                        dcx_wc_status_str((dcx_wc_status_t)wc->status));
        exit(1);
    }
}

static void setup(bench_ctx_t *c, const char *fabric)
{
    dcx_soft_params_t params = {.count = 1, .fabric = fabric};
    dcx_qp_attr_t dct_attr, dci_attr;
    dcx_srq_attr_t srq_attr;
    dcx_dev_info_t *list;
    unsigned count, i;

    CHECK(dcx_soft_list(&params, &list, &count));
    if (count == 0) {
        die("finding a soft device", ENODEV);
    }
    CHECK(dcx_dev_open(&list[0], &c->dev));
    dcx_dev_list_free(list);

    CHECK(dcx_pd_alloc(c->dev, &c->pd));
    CHECK(dcx_cq_create(c->dev, 4096, &c->scq));
    CHECK(dcx_cq_create(c->dev, 4096, &c->rcq));
    c->buf  = aligned_alloc(4096, 2 * BENCH_MAX_SIZE);
    c->priv = aligned_alloc(4096, BENCH_MAX_SIZE);
    memset(c->buf, c->rank + 1, 2 * BENCH_MAX_SIZE);
    memset(c->priv, 0, BENCH_MAX_SIZE);
    CHECK(dcx_mr_reg(c->pd, c->buf, 2 * BENCH_MAX_SIZE,
                     DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                         DCX_ACCESS_REMOTE_READ,
                     &c->mr));

    memset(&srq_attr, 0, sizeof(srq_attr));
    srq_attr.type    = DCX_SRQ_BASIC;
    srq_attr.max_wr  = 64;
    srq_attr.max_sge = 1;
    srq_attr.cq      = c->rcq;
    CHECK(dcx_srq_create(c->pd, &srq_attr, &c->srq));
    for (i = 0; i < 32; ++i) {
        post_recv(c, i);
    }

    memset(&dct_attr, 0, sizeof(dct_attr));
    dct_attr.type          = DCX_QPT_DCT;
    dct_attr.recv_cq       = c->rcq;
    dct_attr.send_cq       = c->rcq;
    dct_attr.srq           = c->srq;
    dct_attr.dc_key        = BENCH_DC_KEY;
    dct_attr.access        = DCX_ACCESS_REMOTE_WRITE | DCX_ACCESS_REMOTE_READ;
    dct_attr.min_rnr_timer = 1;
    CHECK(dcx_qp_create(c->pd, &dct_attr, &c->dct));

    memset(&dci_attr, 0, sizeof(dci_attr));
    dci_attr.type          = DCX_QPT_DCI;
    dci_attr.send_cq       = c->scq;
    dci_attr.recv_cq       = c->rcq;
    dci_attr.max_send_wr   = 256;
    dci_attr.max_send_sge  = 1;
    dci_attr.max_inline    = 64;
    dci_attr.max_rd_atomic = 4;
    dci_attr.timeout       = 18;
    dci_attr.retry_cnt     = 7;
    dci_attr.rnr_retry     = 7;
    CHECK(dcx_qp_create(c->pd, &dci_attr, &c->dci));

    shm->addr_len[c->rank] = sizeof(shm->addr[c->rank]);
    CHECK(dcx_dev_port_addr(c->dev, shm->addr[c->rank],
                            &shm->addr_len[c->rank]));
    shm->dctn[c->rank] = c->dct->qp_num;
    shm->rkey[c->rank] = c->mr->rkey;
    shm->buf[c->rank]  = (uintptr_t)c->buf;
    atomic_store(&shm->ready[c->rank], 1);
    while (!atomic_load(&shm->ready[!c->rank])) {
        sched_yield();
    }
    CHECK(dcx_ah_create(c->pd, shm->addr[!c->rank], shm->addr_len[!c->rank],
                        &c->ah));
    c->peer_dctn = shm->dctn[!c->rank];
    c->peer_rkey = shm->rkey[!c->rank];
    c->peer_buf  = shm->buf[!c->rank];
}

/* A WR of one sge towards the peer's DCT; RDMA opcodes target the peer's
 * registered buffer. */
static void peer_wr(bench_ctx_t *c, dcx_send_wr_t *wr, uint8_t opcode,
                    uint8_t flags, const dcx_sge_t *sge)
{
    memset(wr, 0, sizeof(*wr));
    wr->opcode      = opcode;
    wr->flags       = flags;
    wr->num_sge     = 1;
    wr->sg_list     = sge;
    wr->dest.ah     = c->ah;
    wr->dest.dctn   = c->peer_dctn;
    wr->dest.dc_key = BENCH_DC_KEY;
    if (opcode != DCX_WR_SEND) {
        wr->remote_addr = c->peer_buf;
        wr->rkey        = c->peer_rkey;
    }
}

static void send_msg(bench_ctx_t *c, size_t size, int signaled)
{
    dcx_sge_t sge = {(uintptr_t)c->buf, (uint32_t)size, c->mr->lkey};
    dcx_send_wr_t wr;

    peer_wr(c, &wr, DCX_WR_SEND,
            (signaled ? DCX_SEND_SIGNALED : 0) |
                ((size <= c->dci->max_inline) ? DCX_SEND_INLINE : 0),
            &sge);
    CHECK(dcx_qp_post_send(c->dci, &wr));
}

/* Latency: rank 0 sends, rank 1 echoes; every 64th send is signalled and
 * its completion polled, which retires the unsignalled ones before it. */
static double dev_latency(bench_ctx_t *c, size_t size)
{
    dcx_wc_t wc;
    double t0 = 0;
    unsigned i;

    for (i = 0; i < iters + 10; ++i) {
        int signaled = (i % 64) == 63;

        if (i == 10) {
            t0 = now_us();
        }
        if (c->rank == 0) {
            send_msg(c, size, signaled);
            wait_wc(c->rcq, &wc);
            post_recv(c, wc.wr_id);
        } else {
            wait_wc(c->rcq, &wc);
            post_recv(c, wc.wr_id);
            send_msg(c, size, signaled);
        }
        if (signaled) {
            wait_wc(c->scq, &wc);
        }
    }
    return (now_us() - t0) / iters / 2;
}

/* Bandwidth: rank 0 streams RDMA writes with a window of outstanding WRs,
 * then a send tells rank 1 the stream is over. */
static double dev_bandwidth(bench_ctx_t *c, size_t size, unsigned count)
{
    dcx_sge_t sge   = {(uintptr_t)c->buf, (uint32_t)size, c->mr->lkey};
    unsigned posted = 0, completed = 0;
    dcx_send_wr_t wr;
    dcx_wc_t wc[16];
    double t0, t;
    int n, i;

    t0 = now_us();
    if (c->rank == 1) {
        wait_wc(c->rcq, wc); /* end-of-stream marker */
        post_recv(c, wc[0].wr_id);
        send_msg(c, 0, 1); /* ack, so rank 0 times the whole transfer */
        wait_wc(c->scq, wc);
        return 0;
    }

    peer_wr(c, &wr, DCX_WR_RDMA_WRITE, DCX_SEND_SIGNALED, &sge);
    while (completed < count) {
        while ((posted < count) && (posted - completed < window)) {
            CHECK(dcx_qp_post_send(c->dci, &wr));
            ++posted;
        }
        n = dcx_cq_poll(c->scq, 16, wc);
        for (i = 0; i < n; ++i) {
            if (wc[i].status != DCX_WC_SUCCESS) {
                die("RDMA write", EIO);
            }
        }
        completed += n;
    }
    send_msg(c, 0, 1);
    wait_wc(c->scq, wc);
    wait_wc(c->rcq, wc);
    post_recv(c, wc[0].wr_id);
    t = now_us() - t0;
    return (double)size * count / t; /* bytes per us = MB/s */
}

/* Plain shared memory: the sender copies into a slot and publishes it, the
 * receiver copies it out into a private buffer and acknowledges. */
static void shm_send(bench_ctx_t *c, int to, size_t size)
{
    uint64_t s = atomic_load_explicit(&shm->seq[to], memory_order_relaxed);

    while (s - atomic_load_explicit(&shm->ack[to], memory_order_acquire) >=
           BENCH_SHM_SLOTS) {
        /* ring full */
    }
    memcpy(shm->slots[to][s % BENCH_SHM_SLOTS], c->buf, size);
    atomic_store_explicit(&shm->seq[to], s + 1, memory_order_release);
}

static void shm_recv(bench_ctx_t *c, size_t size)
{
    int me     = c->rank;
    uint64_t a = atomic_load_explicit(&shm->ack[me], memory_order_relaxed);

    while (atomic_load_explicit(&shm->seq[me], memory_order_acquire) == a) {
        /* wait */
    }
    memcpy(c->priv, shm->slots[me][a % BENCH_SHM_SLOTS], size);
    atomic_store_explicit(&shm->ack[me], a + 1, memory_order_release);
}

static double shm_latency(bench_ctx_t *c, size_t size)
{
    double t0 = 0;
    unsigned i;

    for (i = 0; i < iters + 10; ++i) {
        if (i == 10) {
            t0 = now_us();
        }
        if (c->rank == 0) {
            shm_send(c, 1, size);
            shm_recv(c, size);
        } else {
            shm_recv(c, size);
            shm_send(c, 0, size);
        }
    }
    return (now_us() - t0) / iters / 2;
}

static double shm_bandwidth(bench_ctx_t *c, size_t size, unsigned count)
{
    double t0 = now_us();
    unsigned i;

    for (i = 0; i < count; ++i) {
        if (c->rank == 0) {
            shm_send(c, 1, size);
        } else {
            shm_recv(c, size);
        }
    }
    if (c->rank == 0) {
        shm_recv(c, 0);
        return (double)size * count / (now_us() - t0);
    }
    shm_send(c, 0, 0);
    return 0;
}

static unsigned bw_count(size_t size);

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* -T: one round trip of 8 bytes, timed on its own (ns) */
static void tail_dev_rounds(bench_ctx_t *c, double *lat, unsigned n)
{
    dcx_wc_t wc;
    double t;
    unsigned i;

    for (i = 0; i < n; ++i) {
        int signaled = (i % 64) == 63;

        t = now_us();
        if (c->rank == 0) {
            send_msg(c, 8, signaled);
            wait_wc(c->rcq, &wc);
            post_recv(c, wc.wr_id);
        } else {
            wait_wc(c->rcq, &wc);
            post_recv(c, wc.wr_id);
            send_msg(c, 8, signaled);
        }
        if (signaled) {
            wait_wc(c->scq, &wc);
        }
        lat[i] = (now_us() - t) * 1e3;
    }
}

static void tail_shm_rounds(bench_ctx_t *c, double *lat, unsigned n)
{
    double t;
    unsigned i;

    for (i = 0; i < n; ++i) {
        t = now_us();
        if (c->rank == 0) {
            shm_send(c, 1, 8);
            shm_recv(c, 8);
        } else {
            shm_recv(c, 8);
            shm_send(c, 0, 8);
        }
        lat[i] = (now_us() - t) * 1e3;
    }
}

static long tail_ivcsw(void)
{
    struct rusage ru;

    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_nivcsw;
}

typedef struct {
    double *lat; /* every round trip of every round, ns */
    unsigned count;
    long ivcsw[2]; /* involuntary context switches, rank 0 and 1 */
} tail_result_t;

static void tail_print(const char *name, tail_result_t *r)
{
    double sum = 0, slow_sum = 0, med;
    unsigned i, slow = 0, n = r->count;

    qsort(r->lat, n, sizeof(double), cmp_double);
    med = r->lat[n / 2];
    for (i = 0; i < n; ++i) {
        sum += r->lat[i];
        if (r->lat[i] > 4 * med) {
            slow++;
            slow_sum += r->lat[i];
        }
    }
    printf("%-6s %8.0f %8.0f %8.0f %8.0f %9.0f %8.0f %7.2f %9.1f %7.1f%% "
           "%7.1f %7.1f\n",
           name, med, r->lat[n * 9 / 10], r->lat[n * 99 / 100],
           r->lat[n * 999 / 1000], r->lat[n - 1], sum / n, sum / n / med,
           1e4 * slow / n, 100 * slow_sum / sum, 1e4 * r->ivcsw[0] / n,
           1e4 * r->ivcsw[1] / n);
}

#define TAIL_COUNTERS(_x)                                                \
    _x(futex_wakes) _x(helper_wakeups) _x(helper_naps) _x(helper_passes) \
        _x(helper_packets) _x(prods) _x(retransmits) _x(rnr_naks_sent)   \
            _x(lock_waits) _x(tx_packets)

static void tail_counters(const dcx_soft_stats_t *d, unsigned n)
{
#define TAIL_PRINT(_f)                                        \
    printf("  %-16s %10.1f %10.1f\n", #_f, 1e4 * d[0]._f / n, \
           1e4 * d[1]._f / n);
    printf("# device counters per 10 000 round trips     rank 0     rank 1\n");
    TAIL_COUNTERS(TAIL_PRINT)
#undef TAIL_PRINT
}

/* Both sides' counters (rank 1's through the shared page) into s */
static void tail_stats(bench_ctx_t *c, dcx_soft_stats_t *s)
{
    barrier(c->rank);
    CHECK(dcx_soft_stats(c->dev, &shm->tail_stats[c->rank]));
    barrier(c->rank);
    s[0] = shm->tail_stats[0];
    s[1] = shm->tail_stats[1];
    barrier(c->rank);
}

/* Per round: dcx then plain shared memory (alternating, so that load on the
 * machine hits both alike). */
static void tail_run(bench_ctx_t *c)
{
    unsigned total = tail_rounds * iters, round, r;
    dcx_soft_stats_t before[2], after[2], delta[2];
    tail_result_t dev = {0}, plain = {0};
    long iv0, iv1;

    dev.lat   = calloc(total, sizeof(double));
    plain.lat = calloc(total, sizeof(double));
    if ((dev.lat == NULL) || (plain.lat == NULL)) {
        die("calloc", ENOMEM);
    }
    memset(delta, 0, sizeof(delta));
    /* warm-up: both sides polling, every resource touched once */
    barrier(c->rank);
    tail_dev_rounds(c, dev.lat, iters < 1000 ? iters : 1000);
    tail_shm_rounds(c, plain.lat, iters < 1000 ? iters : 1000);
    for (round = 0; round < tail_rounds; ++round) {
        tail_stats(c, before);
        iv0 = tail_ivcsw();
        tail_dev_rounds(c, dev.lat + dev.count, iters);
        iv1                      = tail_ivcsw();
        shm->tail_ivcsw[c->rank] = iv1 - iv0;
        tail_stats(c, after);
        for (r = 0; r < 2; ++r) {
#define TAIL_ADD(_f) delta[r]._f += after[r]._f - before[r]._f;
            TAIL_COUNTERS(TAIL_ADD)
#undef TAIL_ADD
            dev.ivcsw[r] += shm->tail_ivcsw[r];
        }
        dev.count += iters;
        barrier(c->rank);
        iv0 = tail_ivcsw();
        tail_shm_rounds(c, plain.lat + plain.count, iters);
        iv1                      = tail_ivcsw();
        shm->tail_ivcsw[c->rank] = iv1 - iv0;
        barrier(c->rank);
        plain.ivcsw[0] += shm->tail_ivcsw[0];
        plain.ivcsw[1] += shm->tail_ivcsw[1];
        plain.count += iters;
        barrier(c->rank);
    }
    if (c->rank == 0) {
        printf("# 8-byte ping-pong, %u rounds of %u round trips, alternating;"
               " round trip in ns; slow: > 4x the median\n",
               tail_rounds, iters);
        printf("%-6s %8s %8s %8s %8s %9s %8s %7s %9s %8s %7s %7s\n", "tl",
               "p50", "p90", "p99", "p99.9", "max", "mean", "mean/50",
               "slow/10k", "slow%t", "ivcs0", "ivcs1");
        tail_print("soft", &dev);
        tail_print("shm", &plain);
        printf("# ivcs0/1: involuntary context switches of each side's "
               "polling thread per 10 000 round trips\n");
        tail_counters(delta, dev.count);
        fflush(stdout);
    }
    free(dev.lat);
    free(plain.lat);
}

/* The target side of the READ tests until rank 0 is done: poll the device
 * (mode 1), compute without touching it (0), or compute and poll every
 * 150 us (2), as an application that calls progress now and then. */
static void read_target(bench_ctx_t *c, int poll)
{
    double next = now_us() + 150;
    uint64_t x  = 1;
    dcx_wc_t wc;

    while (!atomic_load_explicit(&shm->busy_stop, memory_order_acquire)) {
        if (poll == 1) {
            dcx_cq_poll(c->rcq, 1, &wc);
        } else {
            if ((poll == 2) && (now_us() >= next)) {
                dcx_cq_poll(c->rcq, 1, &wc);
                next = now_us() + 150;
            }
            for (int k = 0; k < 1000; ++k) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
            }
        }
    }
    atomic_store(&shm->sink, x);
}

static void post_read(bench_ctx_t *c, size_t size)
{
    dcx_sge_t sge = {(uintptr_t)c->buf, (uint32_t)size, c->mr->lkey};
    dcx_send_wr_t wr;

    peer_wr(c, &wr, DCX_WR_RDMA_READ, DCX_SEND_SIGNALED, &sge);
    CHECK(dcx_qp_post_send(c->dci, &wr));
}

/* Median latency of 'count' READs issued one at a time. */
static double read_latency(bench_ctx_t *c, size_t size, unsigned count,
                           int poll)
{
    double *t, med;
    dcx_wc_t wc;
    unsigned i;

    if (c->rank == 1) {
        read_target(c, poll);
        return 0;
    }
    t = calloc(count, sizeof(*t));
    for (i = 0; i < count; ++i) {
        double t0 = now_us();

        post_read(c, size);
        wait_wc(c->scq, &wc);
        t[i] = now_us() - t0;
    }
    atomic_store(&shm->busy_stop, 1);
    qsort(t, count, sizeof(*t), cmp_double);
    med = t[count / 2];
    free(t);
    return med;
}

/* READ stream with a window of outstanding READs; the target computes. */
static double read_bandwidth(bench_ctx_t *c, size_t size, unsigned count)
{
    unsigned posted = 0, completed = 0;
    dcx_wc_t wc[16];
    double t0;
    int n, i;

    if (c->rank == 1) {
        read_target(c, 0);
        return 0;
    }
    t0 = now_us();
    while (completed < count) {
        while ((posted < count) && (posted - completed < window)) {
            post_read(c, size);
            ++posted;
        }
        n = dcx_cq_poll(c->scq, 16, wc);
        for (i = 0; i < n; ++i) {
            if (wc[i].status != DCX_WC_SUCCESS) {
                die("RDMA read", EIO);
            }
        }
        completed += n;
    }
    t0 = now_us() - t0;
    atomic_store(&shm->busy_stop, 1);
    return (double)size * count / t0;
}

static void read_tests(bench_ctx_t *c)
{
    size_t size;

    if (c->rank == 0) {
        printf("# RDMA READ: median latency with the target computing "
               "(no polling), computing and polling every 150 us, and polling;"
               "\n# READ stream bandwidth, window %u, target computing\n",
               window);
        printf("%10s %14s %14s %14s %12s\n", "size", "busy_lat_us",
               "150us_poll_lat", "poll_lat_us", "read_MB/s");
    }
    for (size = 8; size <= max_size; size *= 8) {
        unsigned lat_n = size > 65536 ? 50 : iters;
        double bl, il, pl, bw;

        barrier(c->rank);
        atomic_store(&shm->busy_stop, 0);
        barrier(c->rank);
        bl = read_latency(c, size, lat_n, 0);
        barrier(c->rank);
        atomic_store(&shm->busy_stop, 0);
        barrier(c->rank);
        il = read_latency(c, size, lat_n, 2);
        barrier(c->rank);
        atomic_store(&shm->busy_stop, 0);
        barrier(c->rank);
        pl = read_latency(c, size, lat_n, 1);
        barrier(c->rank);
        atomic_store(&shm->busy_stop, 0);
        barrier(c->rank);
        bw = read_bandwidth(c, size, bw_count(size) / 4 + 1);
        barrier(c->rank);
        if (c->rank == 0) {
            printf("%10zu %14.2f %14.2f %14.2f %12.1f\n", size, bl, il, pl, bw);
            fflush(stdout);
        }
        if (size == 4096) {
            size = 8192; /* then 64 KiB, 512 KiB, 4 MiB */
        }
    }
}

static unsigned bw_count(size_t size)
{
    size_t total = (size_t)iters * 4096;
    unsigned n;

    if (total < 64 * size) {
        total = 64 * size;
    }
    n = total / size;
    return n > 20000 ? 20000 : n;
}

static void run(int rank, const char *fabric)
{
    bench_ctx_t c = {.rank = rank};
    dcx_soft_stats_t stats;
    size_t size;

    setup(&c, fabric);
    if (tail_rounds != 0) {
        tail_run(&c);
        goto out;
    }
    if (rank == 0) {
        printf("# dcx device layer on the soft device vs plain shared memory"
               " (%u iterations)\n",
               iters);
        printf("# latency: one-way, half a send/recv round trip; bandwidth:"
               " RDMA write stream, window %u\n",
               window);
        printf("%10s %12s %12s %8s %12s %12s %8s\n", "size", "soft_lat_us",
               "shm_lat_us", "ratio", "soft_MB/s", "shm_MB/s", "ratio");
    }
    for (size = 8; !reads_only && (size <= max_size); size *= 8) {
        double dl, sl, dbw, sbw;

        barrier(rank);
        dl = dev_latency(&c, size);
        barrier(rank);
        sl = shm_latency(&c, size);
        barrier(rank);
        dbw = dev_bandwidth(&c, size, bw_count(size));
        barrier(rank);
        sbw = shm_bandwidth(&c, size, bw_count(size));
        barrier(rank);
        if (rank == 0) {
            printf("%10zu %12.2f %12.2f %8.2f %12.1f %12.1f %8.2f\n", size, dl,
                   sl, dl / sl, dbw, sbw, dbw / sbw);
            fflush(stdout);
        }
    }
    read_tests(&c);
    barrier(rank);
    if (rank == 1 && dcx_soft_stats(c.dev, &stats) == 0) {
        printf("# rank 1 soft device: %" PRIu64 " packets out, %" PRIu64
               " in, %" PRIu64 " retransmits, helper woke %" PRIu64
               " times, %" PRIu64 " responses dropped\n",
               stats.tx_packets, stats.rx_packets, stats.retransmits,
               stats.helper_wakeups, stats.resp_drops);
        fflush(stdout);
    }
    barrier(rank);
    if (rank == 0 && dcx_soft_stats(c.dev, &stats) == 0) {
        printf("# rank 0 soft device: %" PRIu64 " packets out, %" PRIu64
               " in, %" PRIu64 " retransmits, helper woke %" PRIu64
               " times, %" PRIu64 " responses dropped\n",
               stats.tx_packets, stats.rx_packets, stats.retransmits,
               stats.helper_wakeups, stats.resp_drops);
    }
out:
    barrier(rank);
    dcx_qp_destroy(c.dci);
    dcx_qp_destroy(c.dct);
    dcx_ah_destroy(c.ah);
    dcx_srq_destroy(c.srq);
    dcx_mr_dereg(c.mr);
    dcx_cq_destroy(c.scq);
    dcx_cq_destroy(c.rcq);
    dcx_pd_free(c.pd);
    dcx_dev_close(c.dev);
    free(c.buf);
    free(c.priv);
}

int main(int argc, char **argv)
{
    char fabric[40];
    int opt, status;
    pid_t child;

    while ((opt = getopt(argc, argv, "n:w:s:RT:")) != -1) {
        switch (opt) {
        case 'n':
            iters = strtoul(optarg, NULL, 0);
            break;
        case 'w':
            window = strtoul(optarg, NULL, 0);
            break;
        case 's':
            max_size = strtoul(optarg, NULL, 0);
            break;
        case 'R':
            reads_only = 1;
            break;
        case 'T':
            tail_rounds = strtoul(optarg, NULL, 0);
            break;
        default:
            fprintf(stderr,
                    "usage: %s [-n iters] [-w window] [-s max_size] [-R] "
                    "[-T rounds]\n",
                    argv[0]);
            return 2;
        }
    }
    if (iters == 0 || window == 0 || max_size < 8 ||
        max_size > BENCH_MAX_SIZE) {
        fprintf(stderr,
                "dev_pingpong: need iters > 0, window > 0 and "
                "8 <= max_size <= %u\n",
                BENCH_MAX_SIZE);
        return 2;
    }

    shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED) {
        die("mmap", errno);
    }
    snprintf(fabric, sizeof(fabric), "bench-%d", (int)getpid());

    child = fork();
    if (child < 0) {
        die("fork", errno);
    }
    if (child == 0) {
        run(1, fabric);
        _exit(0);
    }
    run(0, fabric);
    if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "dev_pingpong: peer process failed\n");
        return 1;
    }
    return 0;
}
