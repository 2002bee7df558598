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
#include "churn.h"

const size_t sizes[NSIZES] = {8, 1024, MAX_SIZE, MAX_MSG};

const char *const op_name[] = {"tagged send to",
                               "active-message send to",
                               "tagged receive from",
                               "active-message rendezvous receive from",
                               "put to",
                               "endpoint flush of",
                               "get from",
                               "get of the identity of",
                               "atomic fetch-add on",
                               "endpoint close of"};

struct churn_state g;
volatile uint64_t g_beat_ms;

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
