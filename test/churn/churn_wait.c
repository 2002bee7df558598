/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peer-churn test: completions, deadlines and the waits of the phases
 * (churn.h).
 */
#include "churn.h"

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

int progress(void)
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


/* the peer's operations but its tagged receives, I = 0 .. PEER_OPS - 1 */
struct op *peer_op(struct peer *p, int i)
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
void check_deadlines(void)
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
int top_up(struct peer *p)
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
int expected(struct peer *p)
{
    return p->connected && !p->dead;
}

/* progresses until COND(p) holds for every expected peer (with ALL, every
 * connected peer, the killed one included) */
void wait_all(int (*cond)(struct peer *), int all_peers, const char *what)
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

int c_idle(struct peer *p)
{
    int i, n = 0;

    for (i = 0; i < PEER_OPS; i++) {
        n += peer_op(p, i)->busy;
    }
    return n == 0;
}

int c_drained(struct peer *p)
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

int c_received(struct peer *p)
{
    return (p->failed || p->dead) ||
           ((p->n_tag_rx >= p->their_tag) && (p->n_am_rx >= p->their_am));
}

int c_closed(struct peer *p)
{
    if (!p->closed && file_exists(p->rank, "closed")) {
        p->closed = 1;
    }
    return p->closed;
}
