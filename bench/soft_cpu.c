/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soft_cpu: one operation of a UCT transport (or of UCP over it) repeated
 * N times, for instruction counting under callgrind.  bench/soft-cpu.sh runs
 * it with --toggle-collect=bench_op so that only the measured calls count:
 * everything else (setup, waiting for the other side to drain) runs with
 * collection off.
 *
 *   soft_cpu TL DEV OP [N [SETTLE_US]]
 *
 * TL/DEV as in ucx_perftest (-x dcx -d soft0:1, -x posix -d memory).  Two
 * interfaces (or, for ucp_tag, two UCP workers with UCX_TLS=TL) in one
 * process talk to each other; a single thread drives both.
 *
 * OP:
 *   nop        nothing (the cost of the measuring call itself)
 *   progress   uct_iface_progress() with nothing to do
 *   am_short   uct_ep_am_short() with an 8-byte header (the receiver is
 *              drained outside the measured region)
 *   am_bcopy   uct_ep_am_bcopy() of 4 KiB (the packer's memcpy counted;
 *              the receiver is drained outside the measured region)
 *   put_short  uct_ep_put_short() of 8 bytes
 *   put_bcopy  uct_ep_put_bcopy() of 4 KiB (the packer's memcpy counted)
 *   get_bcopy  uct_ep_get_bcopy() of 8 bytes and the sender's progress
 *              calls until its completion (ucx_perftest's get latency);
 *              posix completes it in the call; "calls" counts the progress
 *              calls
 *   fadd       uct_ep_atomic64_fetch() of an add, and the sender's progress
 *              calls until its completion (ucx_perftest's fadd); posix,
 *              and dcx where the device executes it within the call,
 *              complete it in the call
 *   cswap      the same with uct_ep_atomic_cswap64()
 *   am_lat     one round trip as am_lat does it: A sends 8 bytes, B polls
 *              until it has them and answers, A polls until it has the
 *              answer; both sides' instructions, every poll included
 *   tag_send   ucp_tag_send_nbx() of 8 bytes (receive posted beforehand and
 *              completed outside the measured region)
 *   tag_lat    one UCP tag round trip as ucx_perftest -t tag_lat does it:
 *              both workers post their receive, worker 0 sends 8 bytes,
 *              worker 1 progresses until it has them and answers, worker 0
 *              progresses until it has the answer; both sides' calls, every
 *              ucp_worker_progress included
 *   rx_poll    the receiver's uct_iface_progress() calls, from the first
 *              after an 8-byte am_short was posted (unmeasured) to the one
 *              that delivers it: one receive completion polled, handler
 *              and receive buffer repost included
 *   tx_poll    the sender's uct_iface_progress() calls, from the first
 *              after a put_short was posted (unmeasured) to the one that
 *              reports a send completion; run it with the transport told
 *              to signal every work request (dcx: UCX_DCX_SIGNAL_PERIOD=1).
 *              A transport without send completions (posix) fails it,
 *              and so does the soft device, which executes an 8-byte put
 *              within the call (no completion follows).
 *   tx_poll_am the same for an 8-byte am_short, a SEND that every device
 *              completes later: the receiver polls until it has the
 *              message (unmeasured, so that its acknowledgement is on its
 *              way), then the sender's calls are counted up to the one
 *              that reports the send completion.
 *
 * Prints "ops N" on success, and for rx_poll/tx_poll/tx_poll_am/get_bcopy
 * "calls C": the number of measured progress calls (for the polls, C - N of
 * them found nothing).
 *
 * SETTLE_US (default 0): before the progress calls of rx_poll, tx_poll,
 * tx_poll_am and get_bcopy, sleep that long outside the measured region,
 * so that a device that works in a thread of its own (the emulated
 * ConnectX's raw queues) has written the completion by the first measured
 * poll; the polls that would only have found it still in flight are not
 * counted.
 */
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BENCH_WARMUP 200

typedef struct {
    uct_component_h comp;
    uct_md_h md;
    uct_iface_h iface;
    uct_worker_h worker;
    uct_ep_h ep; /* to the other side */
    uct_allocated_memory_t mem;
    volatile unsigned rx;
} bench_side_t;

static ucs_async_context_t *async;
static bench_side_t side[2];
static unsigned settle_us;

/* outside the measured region: let an asynchronous device catch up */
static void bench_settle(void)
{
    if (settle_us != 0) {
        usleep(settle_us);
    }
}

#define CHECK(_cond, _what)                                                   \
    do {                                                                      \
        if (!(_cond)) {                                                       \
            fprintf(stderr, "soft_cpu: %s failed (%s:%d)\n", _what, __FILE__, \
                    __LINE__);                                                \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static ucs_status_t bench_am_cb(void *arg, void *data, size_t length,
                                unsigned flags)
{
    ((bench_side_t *)arg)->rx++;
    return UCS_OK;
}

static void bench_open(bench_side_t *s, const char *tl, const char *dev)
{
    uct_component_h *comps;
    unsigned ncomps, c, m, i, nres;
    uct_component_attr_t cattr;
    uct_md_resource_desc_t *mds;
    uct_tl_resource_desc_t *res;
    uct_md_config_t *md_cfg;
    uct_iface_config_t *if_cfg;
    uct_iface_params_t params;
    ucs_status_t st;
    int found = 0;

    st = uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &s->worker);
    CHECK(st == UCS_OK, "uct_worker_create");
    st = uct_query_components(&comps, &ncomps);
    CHECK(st == UCS_OK, "uct_query_components");
    for (c = 0; (c < ncomps) && !found; ++c) {
        memset(&cattr, 0, sizeof(cattr));
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        uct_component_query(comps[c], &cattr);
        mds                = calloc(cattr.md_resource_count + 1, sizeof(*mds));
        cattr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        cattr.md_resources = mds;
        uct_component_query(comps[c], &cattr);
        for (m = 0; (m < cattr.md_resource_count) && !found; ++m) {
            if (uct_md_config_read(comps[c], NULL, NULL, &md_cfg) != UCS_OK) {
                continue;
            }
            st = uct_md_open(comps[c], mds[m].md_name, md_cfg, &s->md);
            uct_config_release(md_cfg);
            if (st != UCS_OK) {
                continue;
            }
            if (uct_md_query_tl_resources(s->md, &res, &nres) == UCS_OK) {
                for (i = 0; i < nres; ++i) {
                    if (!strcmp(res[i].tl_name, tl) &&
                        !strcmp(res[i].dev_name, dev)) {
                        found = 1;
                    }
                }
                uct_release_tl_resource_list(res);
            }
            if (found) {
                s->comp = comps[c];
            } else {
                uct_md_close(s->md);
            }
        }
        free(mds);
    }
    CHECK(found, "finding the transport/device");

    st = uct_md_iface_config_read(s->md, tl, NULL, NULL, &if_cfg);
    CHECK(st == UCS_OK, "uct_md_iface_config_read");
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                        UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = tl;
    params.mode.device.dev_name = dev;
    st = uct_iface_open(s->md, s->worker, &params, if_cfg, &s->iface);
    uct_config_release(if_cfg);
    CHECK(st == UCS_OK, "uct_iface_open");
    st = uct_iface_set_am_handler(s->iface, 1, bench_am_cb, s, 0);
    CHECK(st == UCS_OK, "uct_iface_set_am_handler");
    uct_iface_progress_enable(s->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    st = uct_iface_mem_alloc(s->iface, 4096, UCT_MD_MEM_ACCESS_ALL, "bench",
                             &s->mem);
    CHECK(st == UCS_OK, "uct_iface_mem_alloc");
}

static void bench_connect(bench_side_t *from, bench_side_t *to)
{
    uct_iface_attr_t attr;
    uct_ep_params_t params;
    void *dev_addr, *if_addr;
    ucs_status_t st;

    st = uct_iface_query(to->iface, &attr);
    CHECK(st == UCS_OK, "uct_iface_query");
    CHECK(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE,
          "a transport that connects to interfaces");
    dev_addr = calloc(1, attr.device_addr_len + 1);
    if_addr  = calloc(1, attr.iface_addr_len + 1);
    uct_iface_get_device_address(to->iface, dev_addr);
    uct_iface_get_address(to->iface, if_addr);
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = from->iface;
    params.dev_addr   = dev_addr;
    params.iface_addr = if_addr;
    st                = uct_ep_create(&params, &from->ep);
    CHECK(st == UCS_OK, "uct_ep_create");
    free(dev_addr);
    free(if_addr);
}

static void bench_wait_rx(bench_side_t *s, unsigned n)
{
    while (s->rx < n) {
        uct_iface_progress(side[0].iface);
        uct_iface_progress(side[1].iface);
    }
}

static void bench_flush(bench_side_t *s)
{
    while (uct_ep_flush(s->ep, 0, NULL) == UCS_INPROGRESS) {
        uct_iface_progress(side[0].iface);
        uct_iface_progress(side[1].iface);
    }
}

/* The measured region: callgrind --toggle-collect=bench_op. */
typedef void (*bench_fn_t)(void *arg);

static __attribute__((noinline)) void bench_op(bench_fn_t fn, void *arg)
{
    fn(arg);
    __asm__ volatile("" ::: "memory");
}

static void op_nop(void *arg)
{
}

static void op_progress(void *arg)
{
    uct_iface_progress(side[0].iface);
}

static void op_am_short(void *arg)
{
    ucs_status_t st = uct_ep_am_short(side[0].ep, 1, 0x1122334455667788ull,
                                      NULL, 0);

    CHECK(st == UCS_OK, "uct_ep_am_short");
}

static uint8_t put_src[4096];

static size_t put_pack(void *dest, void *arg)
{
    memcpy(dest, put_src, sizeof(put_src));
    return sizeof(put_src);
}

static void op_am_bcopy(void *arg)
{
    ssize_t len = uct_ep_am_bcopy(side[0].ep, 1, put_pack, NULL, 0);

    CHECK(len == (ssize_t)sizeof(put_src), "uct_ep_am_bcopy");
}

static void op_put_short(void *arg)
{
    uint64_t value = 42;
    ucs_status_t st;

    st = uct_ep_put_short(side[0].ep, &value, sizeof(value),
                          (uintptr_t)side[1].mem.address, *(uct_rkey_t *)arg);
    CHECK(st == UCS_OK, "uct_ep_put_short");
}

static void op_put_bcopy(void *arg)
{
    ssize_t len;

    len = uct_ep_put_bcopy(side[0].ep, put_pack, NULL,
                           (uintptr_t)side[1].mem.address, *(uct_rkey_t *)arg);
    CHECK(len == (ssize_t)sizeof(put_src), "uct_ep_put_bcopy");
}

static int get_done;

static void get_unpack(void *arg, const void *data, size_t length)
{
    memcpy(arg, data, length);
}

static void get_comp(uct_completion_t *self)
{
    get_done = 1;
}

static uct_completion_t get_comp_obj;
static uint64_t get_value;
static ucs_status_t get_status;

static void op_get_post(void *arg)
{
    get_status = uct_ep_get_bcopy(side[0].ep, get_unpack, &get_value,
                                  sizeof(get_value),
                                  (uintptr_t)side[1].mem.address,
                                  *(uct_rkey_t *)arg, &get_comp_obj);
}

static void bench_poll(bench_side_t *s, int measure, unsigned target_rx);

static int amo_cswap; /* the op: cswap, else fadd */

static void op_amo_post(void *arg)
{
    uint64_t raddr  = (uintptr_t)side[1].mem.address;
    uct_rkey_t rkey = *(uct_rkey_t *)arg;

    if (amo_cswap) {
        /* swaps the word with itself: every call compares equal */
        get_status = uct_ep_atomic_cswap64(side[0].ep, 42, 42, raddr, rkey,
                                           &get_value, &get_comp_obj);
    } else {
        get_status = uct_ep_atomic64_fetch(side[0].ep, UCT_ATOMIC_OP_ADD, 0,
                                           &get_value, raddr, rkey,
                                           &get_comp_obj);
    }
}

/* One operation that fetches the target's word (42) into get_value, posted
 * by post (measured or not), then the progress calls until its
 * completion */
static void bench_fetch(bench_fn_t post, uct_rkey_t *rkey, int measure,
                        const char *what)
{
    get_done     = 0;
    get_value    = 0;
    get_comp_obj = (uct_completion_t){get_comp, 1, UCS_OK};
    if (measure) {
        bench_op(post, rkey);
    } else {
        post(rkey);
    }
    if (get_status == UCS_INPROGRESS) {
        bench_settle();
        while (!get_done) {
            bench_poll(&side[0], measure, 0);
        }
        get_status = get_comp_obj.status;
    }
    CHECK((get_status == UCS_OK) && (get_value == 42), what);
}

static void op_am_lat(void *arg)
{
    unsigned target = side[0].rx + 1;
    ucs_status_t st;

    do {
        st = uct_ep_am_short(side[0].ep, 1, 8, NULL, 0);
        uct_iface_progress(side[0].iface);
    } while (st == UCS_ERR_NO_RESOURCE);
    while (side[1].rx < target) {
        uct_iface_progress(side[1].iface);
    }
    do {
        st = uct_ep_am_short(side[1].ep, 1, 8, NULL, 0);
        uct_iface_progress(side[1].iface);
    } while (st == UCS_ERR_NO_RESOURCE);
    while (side[0].rx < target) {
        uct_iface_progress(side[0].iface);
    }
}

/* progress calls until something completes, each one measured */
#define BENCH_POLL_LIMIT 10000000ul

static unsigned long poll_calls;
static unsigned poll_done;

static void op_poll(void *arg)
{
    poll_done = uct_iface_progress(((bench_side_t *)arg)->iface);
}

static void bench_poll(bench_side_t *s, int measure, unsigned target_rx)
{
    unsigned long i;

    for (i = 0; i < BENCH_POLL_LIMIT; ++i) {
        if (measure) {
            bench_op(op_poll, s);
            ++poll_calls;
        } else {
            op_poll(s);
        }
        if ((target_rx != 0) ? (s->rx >= target_rx) : (poll_done > 0)) {
            return;
        }
    }
    fprintf(stderr, "soft_cpu: nothing completed in %lu progress calls\n", i);
    exit(1);
}

static void bench_send_am(void)
{
    ucs_status_t st;

    while ((st = uct_ep_am_short(side[0].ep, 1, 8, NULL, 0)) ==
           UCS_ERR_NO_RESOURCE) {
        uct_iface_progress(side[0].iface);
    }
    CHECK(st == UCS_OK, "uct_ep_am_short");
}

static void bench_rkey(uct_rkey_bundle_t *rkey)
{
    uct_md_attr_t attr;
    void *buf;
    ucs_status_t st;

    st = uct_md_query(side[1].md, &attr);
    CHECK(st == UCS_OK, "uct_md_query");
    buf = calloc(1, attr.rkey_packed_size + 1);
    st  = uct_md_mkey_pack(side[1].md, side[1].mem.memh, buf);
    CHECK(st == UCS_OK, "uct_md_mkey_pack");
    st = uct_rkey_unpack(side[1].comp, buf, rkey);
    CHECK(st == UCS_OK, "uct_rkey_unpack");
    free(buf);
}

static void run_uct(const char *tl, const char *dev, const char *op, unsigned n)
{
    uct_rkey_bundle_t rkey;
    unsigned i;

    CHECK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) ==
              UCS_OK,
          "async context");
    bench_open(&side[0], tl, dev);
    bench_open(&side[1], tl, dev);
    bench_connect(&side[0], &side[1]);
    bench_connect(&side[1], &side[0]);

    if (!strcmp(op, "nop")) {
        for (i = 0; i < n; ++i) {
            bench_op(op_nop, NULL);
        }
    } else if (!strcmp(op, "progress")) {
        for (i = 0; i < BENCH_WARMUP; ++i) {
            op_progress(NULL);
        }
        for (i = 0; i < n; ++i) {
            bench_op(op_progress, NULL);
        }
    } else if (!strcmp(op, "am_short")) {
        for (i = 0; i < BENCH_WARMUP + n; ++i) {
            if (i < BENCH_WARMUP) {
                op_am_short(NULL);
            } else {
                bench_op(op_am_short, NULL);
            }
            bench_wait_rx(&side[1], i + 1);
            bench_flush(&side[0]);
        }
    } else if (!strcmp(op, "am_bcopy")) {
        memset(put_src, 42, sizeof(put_src));
        for (i = 0; i < BENCH_WARMUP + n; ++i) {
            if (i < BENCH_WARMUP) {
                op_am_bcopy(NULL);
            } else {
                bench_op(op_am_bcopy, NULL);
            }
            bench_wait_rx(&side[1], i + 1);
            bench_flush(&side[0]);
        }
    } else if (!strcmp(op, "put_short")) {
        bench_rkey(&rkey);
        for (i = 0; i < BENCH_WARMUP + n; ++i) {
            if (i < BENCH_WARMUP) {
                op_put_short(&rkey.rkey);
            } else {
                bench_op(op_put_short, &rkey.rkey);
            }
            bench_flush(&side[0]);
        }
        CHECK(*(volatile uint64_t *)side[1].mem.address == 42, "put data");
        uct_rkey_release(side[1].comp, &rkey);
    } else if (!strcmp(op, "put_bcopy")) {
        bench_rkey(&rkey);
        memset(put_src, 42, sizeof(put_src));
        for (i = 0; i < BENCH_WARMUP + n; ++i) {
            if (i < BENCH_WARMUP) {
                op_put_bcopy(&rkey.rkey);
            } else {
                bench_op(op_put_bcopy, &rkey.rkey);
            }
            bench_flush(&side[0]);
        }
        CHECK(*(volatile uint8_t *)side[1].mem.address == 42, "put data");
        uct_rkey_release(side[1].comp, &rkey);
    } else if (!strcmp(op, "get_bcopy")) {
        bench_rkey(&rkey);
        *(volatile uint64_t *)side[1].mem.address = 42;
        for (i = 0; i < BENCH_WARMUP + n; ++i) {
            bench_fetch(op_get_post, &rkey.rkey, i >= BENCH_WARMUP,
                        "uct_ep_get_bcopy");
        }
        printf("calls %lu\n", poll_calls);
        uct_rkey_release(side[1].comp, &rkey);
    } else if (!strcmp(op, "fadd") || !strcmp(op, "cswap")) {
        bench_rkey(&rkey);
        amo_cswap                                 = !strcmp(op, "cswap");
        *(volatile uint64_t *)side[1].mem.address = 42;
        for (i = 0; i < BENCH_WARMUP + n; ++i) {
            bench_fetch(op_amo_post, &rkey.rkey, i >= BENCH_WARMUP,
                        "uct atomic");
        }
        printf("calls %lu\n", poll_calls);
        uct_rkey_release(side[1].comp, &rkey);
    } else if (!strcmp(op, "rx_poll")) {
        for (i = 0; i < BENCH_WARMUP + n; ++i) {
            bench_send_am();
            bench_settle();
            bench_poll(&side[1], i >= BENCH_WARMUP, side[1].rx + 1);
            bench_flush(&side[0]);
        }
        printf("calls %lu\n", poll_calls);
    } else if (!strcmp(op, "tx_poll")) {
        bench_rkey(&rkey);
        for (i = 0; i < BENCH_WARMUP + n; ++i) {
            op_put_short(&rkey.rkey);
            bench_settle();
            bench_poll(&side[0], i >= BENCH_WARMUP, 0);
            bench_flush(&side[0]);
        }
        printf("calls %lu\n", poll_calls);
        uct_rkey_release(side[1].comp, &rkey);
    } else if (!strcmp(op, "tx_poll_am")) {
        for (i = 0; i < BENCH_WARMUP + n; ++i) {
            bench_send_am();
            bench_poll(&side[1], 0, side[1].rx + 1);
            bench_settle();
            bench_poll(&side[0], i >= BENCH_WARMUP, 0);
            bench_flush(&side[0]);
        }
        printf("calls %lu\n", poll_calls);
    } else if (!strcmp(op, "am_lat")) {
        for (i = 0; i < BENCH_WARMUP; ++i) {
            op_am_lat(NULL);
        }
        for (i = 0; i < n; ++i) {
            bench_op(op_am_lat, NULL);
        }
    } else {
        fprintf(stderr, "soft_cpu: unknown UCT operation '%s'\n", op);
        exit(2);
    }
    printf("ops %u\n", n);
    /* exit without teardown: nothing measured happens there */
    fflush(stdout);
}

/* ------------------------------------------------------------------------
 * UCP: ucp_tag_send_nbx between two workers of one process
 * ------------------------------------------------------------------------ */
static ucp_worker_h ucp_w[2];
static ucp_ep_h ucp_ep01, ucp_ep10;
static uint64_t tag_sbuf, tag_rbuf, tag_rbuf0;

static void tag_wait(void *req)
{
    if (req == NULL) {
        return;
    }
    CHECK(!UCS_PTR_IS_ERR(req), "ucp request");
    while (ucp_request_check_status(req) == UCS_INPROGRESS) {
        ucp_worker_progress(ucp_w[0]);
        ucp_worker_progress(ucp_w[1]);
    }
    ucp_request_free(req);
}

static void op_tag_send(void *arg)
{
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    *(void **)arg = ucp_tag_send_nbx(ucp_ep01, &tag_sbuf, sizeof(tag_sbuf), 7,
                                     &param);
}

/* Progresses worker w until req (from an _nbx call) completes, frees it */
static void tag_wait_one(unsigned w, void *req)
{
    if (req == NULL) {
        return;
    }
    CHECK(!UCS_PTR_IS_ERR(req), "ucp request");
    while (ucp_request_check_status(req) == UCS_INPROGRESS) {
        ucp_worker_progress(ucp_w[w]);
    }
    ucp_request_free(req);
}

static void op_tag_lat(void *arg)
{
    ucp_request_param_t param;
    void *rreq0, *rreq1, *sreq0, *sreq1;

    memset(&param, 0, sizeof(param));
    rreq1 = ucp_tag_recv_nbx(ucp_w[1], &tag_rbuf, sizeof(tag_rbuf), 7,
                             UINT64_MAX, &param);
    rreq0 = ucp_tag_recv_nbx(ucp_w[0], &tag_rbuf0, sizeof(tag_rbuf0), 8,
                             UINT64_MAX, &param);
    sreq0 = ucp_tag_send_nbx(ucp_ep01, &tag_sbuf, sizeof(tag_sbuf), 7, &param);
    ucp_worker_progress(ucp_w[0]);
    tag_wait_one(1, rreq1);
    sreq1 = ucp_tag_send_nbx(ucp_ep10, &tag_rbuf, sizeof(tag_rbuf), 8, &param);
    ucp_worker_progress(ucp_w[1]);
    tag_wait_one(0, rreq0);
    tag_wait_one(0, sreq0);
    tag_wait_one(1, sreq1);
}

static ucp_ep_h ucp_connect(unsigned from, unsigned to)
{
    ucp_ep_params_t eparams;
    ucp_address_t *addr;
    size_t addr_len;
    ucp_ep_h ep;

    CHECK(ucp_worker_get_address(ucp_w[to], &addr, &addr_len) == UCS_OK,
          "ucp_worker_get_address");
    memset(&eparams, 0, sizeof(eparams));
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = addr;
    CHECK(ucp_ep_create(ucp_w[from], &eparams, &ep) == UCS_OK, "ucp_ep_create");
    ucp_worker_release_address(ucp_w[to], addr);
    return ep;
}

static void run_ucp_lat(unsigned n)
{
    unsigned i;

    for (i = 0; i < BENCH_WARMUP + n; ++i) {
        tag_sbuf = i;
        if (i < BENCH_WARMUP) {
            op_tag_lat(NULL);
        } else {
            bench_op(op_tag_lat, NULL);
        }
        CHECK((tag_rbuf == i) && (tag_rbuf0 == i), "tag data");
    }
}

static void run_ucp(const char *op, unsigned n)
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_request_param_t rparam;
    ucp_context_h ctx;
    void *sreq, *rreq;
    unsigned i;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    CHECK(ucp_init(&params, NULL, &ctx) == UCS_OK, "ucp_init");
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    CHECK(ucp_worker_create(ctx, &wparams, &ucp_w[0]) == UCS_OK, "worker 0");
    CHECK(ucp_worker_create(ctx, &wparams, &ucp_w[1]) == UCS_OK, "worker 1");
    ucp_ep01 = ucp_connect(0, 1);

    if (!strcmp(op, "tag_lat")) {
        ucp_ep10 = ucp_connect(1, 0);
        run_ucp_lat(n);
        printf("ops %u\n", n);
        fflush(stdout);
        return;
    }

    memset(&rparam, 0, sizeof(rparam));
    for (i = 0; i < BENCH_WARMUP + n; ++i) {
        rreq = ucp_tag_recv_nbx(ucp_w[1], &tag_rbuf, sizeof(tag_rbuf), 7,
                                UINT64_MAX, &rparam);
        CHECK(!UCS_PTR_IS_ERR(rreq), "ucp_tag_recv_nbx");
        tag_sbuf = i;
        if (i < BENCH_WARMUP) {
            op_tag_send(&sreq);
        } else {
            bench_op(op_tag_send, &sreq);
        }
        tag_wait(sreq);
        tag_wait(rreq);
        CHECK(tag_rbuf == i, "tag data");
    }
    printf("ops %u\n", n);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    unsigned n;

    if (argc < 4) {
        fprintf(stderr, "usage: soft_cpu TL DEV OP [N [SETTLE_US]]\n");
        return 2;
    }
    n         = (argc > 4) ? (unsigned)strtoul(argv[4], NULL, 0) : 1000;
    settle_us = (argc > 5) ? (unsigned)strtoul(argv[5], NULL, 0) : 0;
    if (!strcmp(argv[3], "tag_send") || !strcmp(argv[3], "tag_lat")) {
        run_ucp(argv[3], n);
    } else {
        run_uct(argv[1], argv[2], argv[3], n);
    }
    _exit(0);
}
