/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peer-churn test: posting the UCP operations, and connecting to the
 * peers (churn.h).
 */
#include "churn.h"

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

ucp_request_param_t op_param(struct op *op)
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

void op_start(struct op *op, int type)
{
    op->type   = type;
    op->busy   = 1;
    op->req    = NULL;
    op->t_post = now();
}

/* what a posting call returned */
void op_posted(struct op *op, ucs_status_ptr_t sp)
{
    if (sp == NULL) {
        op_done(op, UCS_OK);
    } else if (UCS_PTR_IS_ERR(sp)) {
        op_done(op, UCS_PTR_STATUS(sp));
    } else {
        op->req = sp;
    }
}

void peer_failed(struct peer *p, ucs_status_t status, const char *how)
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

void err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    peer_failed(arg, status, "endpoint error callback");
}

void post_tag_recv(struct peer *p, struct op *op)
{
    ucp_request_param_t param = op_param(op);
    ucp_tag_t tag             = TAG_KIND | ((uint64_t)p->rank << TAG_SRC_SHIFT);

    param.cb.recv = recv_cb;
    op_start(op, OP_TAG_RX);
    op->seq = p->rx_next++;
    op_posted(op, ucp_tag_recv_nbx(g.worker, op->buf, MAX_MSG, tag, TAG_MASK,
                                   &param));
}

void post_tag_send(struct peer *p, struct op *op)
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

void post_am_send(struct peer *p, struct op *op)
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

void post_put(struct peer *p)
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

void post_flush(struct peer *p)
{
    struct op *op             = &p->flush;
    ucp_request_param_t param = op_param(op);

    op_start(op, OP_FLUSH);
    op->seq = p->put.seq;
    op_posted(op, ucp_ep_flush_nbx(p->ep, &param));
    p->rma_state = RMA_FLUSH;
}

void post_gets(struct peer *p)
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

void post_amo(struct peer *p)
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

void am_seen(struct peer *p, uint64_t seq)
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

ucs_status_t am_cb(void *arg, const void *header, size_t header_length,
                   void *data, size_t length, const ucp_am_recv_param_t *rparam)
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
int scan(void)
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
