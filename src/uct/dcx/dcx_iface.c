/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the interface (DCT, SRQ, CQs, registered pools, flush,
 * attributes, configuration) and the registration of the "dcx" tl.  The
 * receive path and progress are in dcx_rx.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucs/arch/cpu.h>
#include <uct/base/uct_worker.h>
#include <string.h>
#include <stdlib.h>


static ucs_config_field_t uct_dcx_iface_config_table[] = {
    /* memory the md allocates first (uct_iface_mem_alloc): on the soft
     * device peers map it, so one-sided operations into it are plain
     * copies; an md that allocates nothing (mlx5) is skipped */
    {"", "ALLOC=md,huge,thp,mmap,heap", NULL,
     ucs_offsetof(uct_dcx_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"NUM_DCI", "32",
     "Most DCIs (initiator queues) in the pool of each interface. They are\n"
     "created when first needed, so a process that talks to few peers at once\n"
     "has few; one more, created at open, carries control messages (and\n"
     "with DCI_POLICY=hybrid one more, the shared DCI, when first needed).\n"
     "1 .. 4095 (4094 with hybrid), and less than what the device offers.",
     ucs_offsetof(uct_dcx_iface_config_t, num_dci), UCT_DCX_CONFIG_TYPE_COUNT},

    {"NUM_DCI_STREAMS", "32",
     "With DCI_POLICY=streams: stream channels of the one DCI that carries the\n"
     "work of every endpoint (endpoints are hashed onto them). 1 .. what the\n"
     "device offers (rounded up to a power of 2 there).",
     ucs_offsetof(uct_dcx_iface_config_t, num_dci_streams),
     UCT_DCX_CONFIG_TYPE_COUNT},

    {"DCI_IDLE_TIMEOUT", "5s",
     "With DCI_POLICY=dcs, dcs_quota or hybrid: a DCI that stayed this long in\n"
     "the pool unused is destroyed, and created again when needed (looked at\n"
     "whenever a DCI goes back to the pool). \"inf\": the pool never shrinks.\n"
     "rand keeps every DCI it created, hybrid its shared DCI.",
     ucs_offsetof(uct_dcx_iface_config_t, dci_idle_timeout),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"DCI_POLICY", "dcs_quota",
     "How endpoints get a DCI:\n"
     " dcs       - an endpoint holds a DCI from the pool while it has work in\n"
     "             flight. When everything completed it keeps the DCI for its\n"
     "             next sends as long as no other endpoint needs one; a DCI\n"
     "             kept idle is taken back as soon as one does.\n"
     " dcs_quota - like dcs, but an endpoint that sent QUOTA operations gives\n"
     "             its DCI up when other endpoints wait for one.\n"
     " rand      - every endpoint is hashed onto a fixed DCI that it shares\n"
     "             with others.\n"
     " hybrid    - like dcs_quota, but an endpoint for which the pool has no\n"
     "             DCI sends on one more DCI, shared, instead of waiting, and\n"
     "             takes a DCI of the pool again once its work on the shared\n"
     "             one completed (its operations stay in order); a peer's\n"
     "             failure there fails that peer's endpoints only.\n"
     " streams   - one DCI with NUM_DCI_STREAMS stream channels (a device with\n"
     "             DCI streams); every endpoint is hashed onto a stream. Order\n"
     "             is kept within a stream only, and an error stops only its\n"
     "             stream, which is reset while the others go on.",
     ucs_offsetof(uct_dcx_iface_config_t, policy),
     UCS_CONFIG_TYPE_ENUM(uct_dcx_policy_names)},

    {"QUOTA", "32",
     "With DCI_POLICY=dcs_quota or hybrid: operations an endpoint may post on\n"
     "its DCI before yielding it to a waiting endpoint (hybrid: to the\n"
     "endpoints on the shared DCI). 1 .. 32767.",
     ucs_offsetof(uct_dcx_iface_config_t, quota), UCT_DCX_CONFIG_TYPE_COUNT},

    {"TX_QUEUE_LEN", "128",
     "Send queue length of each DCI (work requests in flight). 2 .. 65535, at\n"
     "most what the device offers, and (NUM_DCI + 1) * TX_QUEUE_LEN (NUM_DCI +\n"
     "2 with hybrid) at most the completions of one device CQ.",
     ucs_offsetof(uct_dcx_iface_config_t, tx_queue_len),
     UCT_DCX_CONFIG_TYPE_COUNT},

    {"RX_QUEUE_LEN", "512",
     "Receive buffers posted to the shared receive queue of the DCT, at most:\n"
     "64 are posted at open (FC_WND and a quarter when that is more), and more\n"
     "as the receive load needs them. 2 .. the device's receive queue and CQ\n"
     "sizes.",
     ucs_offsetof(uct_dcx_iface_config_t, rx_queue_len),
     UCT_DCX_CONFIG_TYPE_COUNT},

    {"SEG_SIZE", "8k",
     "Size of a send/receive buffer: the largest bcopy message, and the largest\n"
     "active message of any kind. 256 .. the device's largest message.",
     ucs_offsetof(uct_dcx_iface_config_t, seg_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"FC_WND", "64",
     "Flow control window: active messages an endpoint may have unconsumed at\n"
     "its peer. With a quarter of it left it asks the peer for the other three\n"
     "quarters (one request and grant per three quarters of a window). Should be\n"
     "at most RX_QUEUE_LEN of the peer divided by the number of senders to\n"
     "rule out receiver-not-ready retries. 1 .. 32767.",
     ucs_offsetof(uct_dcx_iface_config_t, fc_wnd), UCT_DCX_CONFIG_TYPE_COUNT},

    {"FC_REQ_TIMEOUT", "5s",
     "How long an endpoint that asked its peer for credits waits for the grant\n"
     "before asking again. A request or grant lost to a peer's failure is made\n"
     "up for this way, and a peer that died before granting is detected (the\n"
     "repeated request fails and reaches the error handler). More than 0, at\n"
     "most 3600s.",
     ucs_offsetof(uct_dcx_iface_config_t, fc_req_timeout),
     UCS_CONFIG_TYPE_TIME},

    {"DC_KEY", "2019836",
     "DC access key, a decimal number 0 .. 18446744073709551615 (digits only,\n"
     "no leading zeros). The DCT of an interface accepts only\n"
     "requests carrying the same key; peers with another key see a transport\n"
     "retry timeout. Give every job its own key to keep jobs apart.",
     ucs_offsetof(uct_dcx_iface_config_t, dc_key), UCT_DCX_CONFIG_TYPE_DC_KEY},

    {"TIMEOUT", "1s",
     "Transport retry timeout of a DCI, more than 0 and at most 8796s (rounded\n"
     "up to 4.096us * 2^n, n = 1 .. 31).",
     ucs_offsetof(uct_dcx_iface_config_t, timeout), UCS_CONFIG_TYPE_TIME},

    {"RETRY_COUNT", "7",
     "Transport retries before a DCI reports the peer unreachable (0 .. 7).",
     ucs_offsetof(uct_dcx_iface_config_t, retry_count),
     UCT_DCX_CONFIG_TYPE_COUNT},

    {"RNR_RETRY_COUNT", "7",
     "Retries when the peer has no receive buffer (0 .. 7; 7 = forever).\n"
     "Flow control normally keeps this from happening.",
     ucs_offsetof(uct_dcx_iface_config_t, rnr_retry),
     UCT_DCX_CONFIG_TYPE_COUNT},

    {"RNR_TIMER", "1ms",
     "How long a sender waits before retrying a receiver-not-ready request\n"
     "(minimum RNR NAK timer of the DCT), more than 0 and at most 491.52ms\n"
     "(rounded up to the next verbs timer value).",
     ucs_offsetof(uct_dcx_iface_config_t, rnr_timer), UCS_CONFIG_TYPE_TIME},

    {"SIGNAL_PERIOD", "0",
     "Request a send completion every this many work requests of a DCI; the\n"
     "others complete with the next one reported. 0 = half the send queue with\n"
     "DCI_POLICY=rand, 16 (at most half the send queue) with the dcs policies,\n"
     "whose DCIs then report their last work requests with a no-op when they\n"
     "must go back to the pool, and signal every work request while endpoints\n"
     "wait for a DCI. 0 .. 65535 (values above the send queue length mean every\n"
     "TX_QUEUE_LEN; 1 signals every work request).",
     ucs_offsetof(uct_dcx_iface_config_t, sig_period),
     UCT_DCX_CONFIG_TYPE_COUNT},

    {"TX_MAX_BUFS", "inf",
     "Maximum number of registered send buffers (bcopy, fetch results, control\n"
     "messages): 1 or more, or inf.",
     ucs_offsetof(uct_dcx_iface_config_t, tx_max_bufs),
     UCT_DCX_CONFIG_TYPE_COUNT_INF},

    {"TM_ENABLE", "try",
     "Feed the DCT from a tag-matching SRQ (the device matches tags):\n"
     " y   - required; interface creation fails where the device has none\n"
     " try - where the device has it\n"
     " n   - never\n"
     "Interfaces with and without it talk to each other.",
     ucs_offsetof(uct_dcx_iface_config_t, tm_enable), UCS_CONFIG_TYPE_TERNARY},

    {"TM_SEG_SIZE", "auto",
     "With tag-matching offload: size of the receive buffers (the larger of\n"
     "this and SEG_SIZE). It is the largest eager tagged message, since an\n"
     "unexpected one lands whole in one buffer; UCP sends larger ones by\n"
     "rendezvous, which the device fetches. auto: where the device's model\n"
     "puts the break-even of the two (docs/tag-matching.md), at most 64k.\n"
     "Each posted receive holds this much registered memory (see\n"
     "RX_QUEUE_LEN). Every process of a job needs the same value.\n"
     "256 .. the device's largest message, or auto.",
     ucs_offsetof(uct_dcx_iface_config_t, tm_seg_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"TM_MIN_RECV", "0",
     "With tag-matching offload: the smallest receive UCP posts to the device\n"
     "(the interface's tag.recv.min_recv; UCP takes the larger of it and\n"
     "UCX_TM_THRESH). 0: UCX_TM_THRESH alone decides, as with UCX's own\n"
     "transports. auto: where the device's model says a posted receive pays\n"
     "(docs/tag-matching.md); a smaller UCX_TM_THRESH then has no effect.",
     ucs_offsetof(uct_dcx_iface_config_t, tm_min_recv),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"STATS_DIR", "",
     "Directory where each interface keeps its counters (DCI pool, flow\n"
     "control, failures, tag matching) in a file dcx.<pid>.<dct>[.<n>], updated\n"
     "live; contrib/dcx-stat prints them. Empty: no file (the tag-matching\n"
     "counters are logged at close with UCX_LOG_LEVEL=info).",
     ucs_offsetof(uct_dcx_iface_config_t, stats_dir), UCS_CONFIG_TYPE_STRING},

    {"TM_STATS_DIR", "",
     "The former name of STATS_DIR, used when STATS_DIR is empty.",
     ucs_offsetof(uct_dcx_iface_config_t, tm_stats_dir),
     UCS_CONFIG_TYPE_STRING},

    {"STRIDED_KEYS", "64",
     "Strided uct_iov_t entries (count > 1, stride != length) in zero-copy\n"
     "operations: how many indirect memory keys the interface may create,\n"
     "which is also how many layouts it keeps cached (least recently used\n"
     "evicted first). 0 .. 4096; 0 = no keys: strided entries are only sent\n"
     "as one sge per element (STRIDED_SGE_MAX). See docs/strided.md.",
     ucs_offsetof(uct_dcx_iface_config_t, strided_keys),
     UCT_DCX_CONFIG_TYPE_COUNT},

    {"STRIDED_KEY_ENTRIES", "0",
     "Translation entries of each strided key: a layout whose element or\n"
     "stride is over the device's interleave limit takes one entry per\n"
     "element. 0 = the device's maximum; else 2 .. the device's maximum.",
     ucs_offsetof(uct_dcx_iface_config_t, strided_key_entries),
     UCT_DCX_CONFIG_TYPE_COUNT},

    {"STRIDED_SGE_MAX", "32",
     "An operation whose strided entries have at most this many elements in\n"
     "all sends them as one sge per element, if they fit the work request\n"
     "with its other sges, instead of through a strided key. 0 .. 32; 0 =\n"
     "always through keys. Measured with callgrind (docs/strided.md): plain\n"
     "sges cost less than a cached key up to the work request's limit.",
     ucs_offsetof(uct_dcx_iface_config_t, strided_sge_max),
     UCT_DCX_CONFIG_TYPE_COUNT},

    {"STRIDED_KEY_QUEUE", "auto",
     "Where the configure of a strided key goes: \"dci\", on the DCI of the\n"
     "operation just before its data work request (the device executes them\n"
     "in order; only where the device takes configures on a DCI); \"own\", on\n"
     "a queue of its own, the operation waiting (UCS_ERR_NO_RESOURCE) until\n"
     "the configure completes; \"auto\", dci where the device allows it, own\n"
     "otherwise (mlx5). See docs/strided.md.",
     ucs_offsetof(uct_dcx_iface_config_t, strided_key_queue),
     UCS_CONFIG_TYPE_ENUM(uct_dcx_strided_queue_names)},

    {"ARM_POLL", "20us",
     "How long arming the interface's wake-up events (what ucp_worker_wait\n"
     "does before it sleeps) first looks for work without sleeping: a message\n"
     "that comes meanwhile, such as the answer of a peer that is awake, is\n"
     "taken at once instead of after a wake-up. Longer than a wake-up takes,\n"
     "a ping-pong in which one side slept once goes back to not sleeping.\n"
     "The time counts from the first arm after a progress call that found\n"
     "completions, so a process with nothing to do spends it once, then\n"
     "sleeps. 0 .. 1s; 0 = arm at once. Where the device cannot look at its\n"
     "completion queues without taking their completions (the mlx5 backend\n"
     "with its raw queues off), or on a worker shared by threads (not\n"
     "UCS_THREAD_MODE_SINGLE), arming is at once whatever the value.",
     ucs_offsetof(uct_dcx_iface_config_t, arm_poll), UCS_CONFIG_TYPE_TIME},

    {NULL}};


/* ---------------------------------------------------------------------------
 * Flush, fence
 * ------------------------------------------------------------------------- */

static ucs_status_t uct_dcx_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                        uct_completion_t *comp)
{
    uct_dcx_iface_t *iface = ucs_derived_of(tl_iface, uct_dcx_iface_t);
    int in_progress        = 0;
    uct_dcx_dci_t *dci;
    unsigned i;

    if (comp != NULL) {
        ucs_error("dcx: iface_flush with a completion is not supported");
        return UCS_ERR_UNSUPPORTED;
    }

    for (i = 0; i < iface->pool.total; ++i) {
        dci = &iface->pool.dcis[i];
        if (uct_dcx_dci_is_drained(dci)) {
            continue;
        }
        /* the control DCI: below */
        in_progress |= (i != iface->pool.ctl);
        if (dci->sig_sn < dci->sn) {
            /* unsignalled tail: a signalled no-op behind it (none posted
             * when the DCI is full: a full queue holds a signalled WR) */
            uct_dcx_dci_post_nop(iface, dci, NULL, NULL);
        }
    }

    /* the control DCI and the control messages still to post, but for
     * credit grants; endpoints waiting for
     * a grant (they may have requests pending that their flush must
     * cover); invalidated endpoints whose operations end when their
     * failure is reported */
    if (uct_dcx_iface_ctl_busy(iface) ||
        !ucs_list_is_empty(&iface->fc.waiters) || (iface->invalidated > 0)) {
        in_progress = 1;
    }

    if (in_progress) {
        UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
        return UCS_INPROGRESS;
    }
    UCT_TL_IFACE_STAT_FLUSH(&iface->super);
    return UCS_OK;
}

static ucs_status_t uct_dcx_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    uct_dcx_iface_t *iface = ucs_derived_of(tl_iface, uct_dcx_iface_t);
    unsigned i;

    for (i = 0; i < iface->pool.total; ++i) {
        if (i != iface->pool.ctl) {
            iface->pool.dcis[i].next_flags |= DCX_SEND_FENCE;
        }
    }
    UCT_TL_IFACE_STAT_FENCE(&iface->super);
    return UCS_OK;
}


/* ---------------------------------------------------------------------------
 * Addresses and attributes
 * ------------------------------------------------------------------------- */

static ucs_status_t uct_dcx_iface_get_device_address(uct_iface_h tl_iface,
                                                     uct_device_addr_t *addr)
{
    uct_dcx_iface_t *iface    = ucs_derived_of(tl_iface, uct_dcx_iface_t);
    uct_dcx_dev_addr_t *daddr = (uct_dcx_dev_addr_t *)addr;

    daddr->len = iface->config.port_len;
    memcpy(daddr->port, iface->config.port, iface->config.port_len);
    return UCS_OK;
}

static ucs_status_t uct_dcx_iface_get_address(uct_iface_h tl_iface,
                                              uct_iface_addr_t *addr)
{
    uct_dcx_iface_t *iface      = ucs_derived_of(tl_iface, uct_dcx_iface_t);
    uct_dcx_iface_addr_t *iaddr = (uct_dcx_iface_addr_t *)addr;

    iaddr->magic   = UCT_DCX_ADDR_MAGIC;
    iaddr->version = UCT_DCX_ADDR_VERSION;
    iaddr->dctn[0] = iface->config.dctn & 0xff;
    iaddr->dctn[1] = (iface->config.dctn >> 8) & 0xff;
    iaddr->dctn[2] = (iface->config.dctn >> 16) & 0xff;
    iaddr->flags   = iface->rx.tmh_len ? UCT_DCX_ADDR_FLAG_TM : 0;
    return UCS_OK;
}

static int uct_dcx_iface_is_reachable(const uct_iface_h tl_iface,
                                      const uct_device_addr_t *dev_addr,
                                      const uct_iface_addr_t *iface_addr)
{
    uct_dcx_iface_t *iface          = ucs_derived_of(tl_iface, uct_dcx_iface_t);
    const uct_dcx_dev_addr_t *daddr = (const uct_dcx_dev_addr_t *)dev_addr;
    const uct_dcx_iface_addr_t *iaddr = (const uct_dcx_iface_addr_t *)iface_addr;
    char why[160];

    if ((daddr == NULL) || (iaddr == NULL)) {
        ucs_debug("dcx: unreachable: no device or interface address");
        return 0;
    }
    if ((iaddr->magic != UCT_DCX_ADDR_MAGIC) ||
        (iaddr->version != UCT_DCX_ADDR_VERSION)) {
        ucs_debug("dcx: unreachable: not a dcx v%u interface address "
                  "(magic 0x%x version %u)",
                  UCT_DCX_ADDR_VERSION, iaddr->magic, iaddr->version);
        return 0;
    }
    if (daddr->len != iface->config.port_len) {
        ucs_debug("dcx: unreachable: port address of %u bytes, %s uses %u",
                  daddr->len, dcx_dev_name(iface->dev), iface->config.port_len);
        return 0;
    }
    /* what endpoint creation will check (fabric, user, host, link layer):
     * a peer that fails it must not be offered, so that UCP picks another
     * transport for it */
    if (dcx_dev_addr_check(iface->dev, daddr->port, daddr->len, why,
                           sizeof(why)) != 0) {
        ucs_debug("dcx: %s: unreachable: %s", dcx_dev_name(iface->dev), why);
        return 0;
    }
    return 1;
}

static void uct_dcx_iface_atomic_caps(uct_dcx_iface_t *iface)
{
    uint32_t f   = iface->caps->atomic_flags;
    uint32_t a32 = 0, a64 = 0;

    if (f & DCX_ATOMIC_MASKED_FADD32) {
        a32 |= UCS_BIT(UCT_ATOMIC_OP_ADD) | UCS_BIT(UCT_ATOMIC_OP_XOR);
    }
    if (f & DCX_ATOMIC_MASKED_CSWAP32) {
        a32 |= UCS_BIT(UCT_ATOMIC_OP_AND) | UCS_BIT(UCT_ATOMIC_OP_OR) |
               UCS_BIT(UCT_ATOMIC_OP_SWAP) | UCS_BIT(UCT_ATOMIC_OP_CSWAP);
    }
    if (f & (DCX_ATOMIC_FADD64 | DCX_ATOMIC_MASKED_FADD64)) {
        a64 |= UCS_BIT(UCT_ATOMIC_OP_ADD);
    }
    if (f & DCX_ATOMIC_MASKED_FADD64) {
        a64 |= UCS_BIT(UCT_ATOMIC_OP_XOR);
    }
    if (f & DCX_ATOMIC_MASKED_CSWAP64) {
        a64 |= UCS_BIT(UCT_ATOMIC_OP_AND) | UCS_BIT(UCT_ATOMIC_OP_OR) |
               UCS_BIT(UCT_ATOMIC_OP_SWAP);
    }
    if (f & (DCX_ATOMIC_CSWAP64 | DCX_ATOMIC_MASKED_CSWAP64)) {
        a64 |= UCS_BIT(UCT_ATOMIC_OP_CSWAP);
    }

    /* swap and cswap exist only as fetching operations in UCT */
    iface->config.atomic32_fetch = a32;
    iface->config.atomic64_fetch = a64;
    iface->config.atomic32_post  = a32 & ~(UCS_BIT(UCT_ATOMIC_OP_SWAP) |
                                          UCS_BIT(UCT_ATOMIC_OP_CSWAP));
    iface->config.atomic64_post  = a64 & ~(UCS_BIT(UCT_ATOMIC_OP_SWAP) |
                                          UCS_BIT(UCT_ATOMIC_OP_CSWAP));
}

static ucs_status_t uct_dcx_iface_query(uct_iface_h tl_iface,
                                        uct_iface_attr_t *attr)
{
    uct_dcx_iface_t *iface     = ucs_derived_of(tl_iface, uct_dcx_iface_t);
    const dcx_dev_caps_t *caps = iface->caps;
    size_t seg                 = iface->config.seg_size;
    size_t max_inline          = iface->config.max_inline;

    uct_base_iface_query(&iface->super, attr);

    attr->device_addr_len = sizeof(uct_dcx_dev_addr_t) + iface->config.port_len;
    attr->iface_addr_len  = sizeof(uct_dcx_iface_addr_t);
    attr->ep_addr_len     = 0;
    attr->max_conn_priv   = 0;

    attr->cap.flags = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                      UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_AM_ZCOPY |
                      UCT_IFACE_FLAG_PUT_BCOPY | UCT_IFACE_FLAG_PUT_ZCOPY |
                      UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                      UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CB_SYNC |
                      UCT_IFACE_FLAG_EP_CHECK |
                      UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                      /* the device checks both sides of a zero-copy
                       * operation against their regions; a failure goes
                       * to the error handler (see docs/uct-contract.md) */
                      UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF |
                      UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM;
    /* atomics run by the target's CPU (soft device) are CPU atomics, which
     * UCP may mix with its software ones (docs/mpi-rma.md); a NIC's are not */
    if (iface->config.atomic64_fetch | iface->config.atomic32_fetch) {
        attr->cap.flags |= (caps->flags & DCX_CAP_ATOMIC_HOST) ?
                               UCT_IFACE_FLAG_ATOMIC_CPU :
                               UCT_IFACE_FLAG_ATOMIC_DEVICE;
    }
    /* wake-up: send completions (and flow control grants, which arrive as
     * receives) and receives make the channel's fd readable */
    if (iface->channel != NULL) {
        attr->cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP |
                                UCT_IFACE_FLAG_EVENT_RECV |
                                UCT_IFACE_FLAG_EVENT_FD;
    }
    /* short operations are inline work requests */
    if (max_inline > 0) {
        attr->cap.flags |= UCT_IFACE_FLAG_PUT_SHORT;
    }
    /* an AM to a TM peer carries a TMH too (dcx.h) */
    if (max_inline >= DCX_TM_TMH_LEN + UCT_DCX_AM_HDR_LEN + sizeof(uint64_t)) {
        attr->cap.flags |= UCT_IFACE_FLAG_AM_SHORT;
    }

    attr->cap.atomic32.op_flags  = iface->config.atomic32_post;
    attr->cap.atomic32.fop_flags = iface->config.atomic32_fetch;
    attr->cap.atomic64.op_flags  = iface->config.atomic64_post;
    attr->cap.atomic64.fop_flags = iface->config.atomic64_fetch;

    attr->cap.put.max_short       = iface->config.max_put_short;
    attr->cap.put.max_bcopy       = seg;
    attr->cap.put.min_zcopy       = 0;
    attr->cap.put.max_zcopy       = caps->max_msg_size;
    attr->cap.put.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.put.align_mtu       = caps->mtu;
    attr->cap.put.max_iov         = iface->config.max_iov;

    /* no GET_SHORT, as UCX's rc/dc: docs/uct-contract.md says why */
    attr->cap.get.max_short       = 0;
    attr->cap.get.max_bcopy       = seg;
    attr->cap.get.min_zcopy       = 0;
    attr->cap.get.max_zcopy       = caps->max_msg_size;
    attr->cap.get.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.get.align_mtu       = caps->mtu;
    attr->cap.get.max_iov         = iface->config.max_iov;

    attr->cap.am.max_short       = (attr->cap.flags & UCT_IFACE_FLAG_AM_SHORT) ?
                                       ucs_min(max_inline - DCX_TM_TMH_LEN, seg) -
                                     UCT_DCX_AM_HDR_LEN :
                                       0;
    attr->cap.am.max_bcopy       = seg - UCT_DCX_AM_HDR_LEN;
    attr->cap.am.min_zcopy       = 0;
    attr->cap.am.max_zcopy       = seg - UCT_DCX_AM_HDR_LEN;
    attr->cap.am.opt_zcopy_align = UCS_SYS_PCI_MAX_PAYLOAD;
    attr->cap.am.align_mtu       = caps->mtu;
    attr->cap.am.max_hdr         = UCT_DCX_AM_MAX_HDR;
    attr->cap.am.max_iov         = iface->config.max_iov;

    /* Model of the device in use: its one-way latency plus the cost of
     * looking up the DC destination, its bandwidth, and its posting cost */
    attr->latency = ucs_linear_func_make(caps->latency_ns * 1e-9, 0);
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared    = caps->bandwidth_Bps;
    attr->overhead            = caps->overhead_ns * 1e-9;
    attr->priority            = 0;
    uct_dcx_iface_tag_query(iface, attr);
    return UCS_OK;
}


/* ---------------------------------------------------------------------------
 * Interface object
 * ------------------------------------------------------------------------- */

static ucs_status_t
uct_dcx_iface_create_queues(uct_dcx_iface_t *iface,
                            const uct_dcx_iface_config_t *cfg, int tag_used)
{
    const char *dev = dcx_dev_name(iface->dev);
    dcx_qp_attr_t dct_attr;
    size_t port_len;
    unsigned rx_cqe;
    int ret, tm;

    /* wake-up events where the device has completion channels */
    iface->channel = NULL;
    if (iface->caps->flags & DCX_CAP_CQ_EVENT) {
        ret = dcx_comp_channel_create(iface->dev, &iface->channel);
        if (ret != 0) {
            ucs_error("dcx: %s: failed to create a completion channel: %s", dev,
                      strerror(ret));
            return UCS_ERR_IO_ERROR;
        }
    }

    ret = dcx_cq_create_ch(iface->dev,
                           uct_dcx_config_dci_total(cfg) * cfg->tx_queue_len,
                           iface->channel, &iface->tx_cq);
    if (ret != 0) {
        ucs_error("dcx: %s: failed to create the send CQ: %s", dev,
                  strerror(ret));
        goto err_channel;
    }

    tm = tag_used ? uct_dcx_iface_tm_wanted(iface, cfg) : 0;
    if (tm < 0) {
        goto err_tx_cq;
    }
    rx_cqe = uct_dcx_iface_tm_rx_cqe(iface, tm, cfg->rx_queue_len);
    ret = dcx_cq_create_ch(iface->dev, rx_cqe, iface->channel, &iface->rx_cq);
    if (ret != 0) {
        ucs_error("dcx: %s: failed to create the receive CQ: %s", dev,
                  strerror(ret));
        goto err_tx_cq;
    }

    uct_dcx_iface_arm_init(iface, cfg);

    if (uct_dcx_iface_srq_create(iface, cfg, tm) != UCS_OK) {
        goto err_rx_cq;
    }
    uct_dcx_iface_progress_choose(iface);

    memset(&dct_attr, 0, sizeof(dct_attr));
    dct_attr.type    = DCX_QPT_DCT;
    dct_attr.recv_cq = iface->rx_cq;
    dct_attr.srq     = iface->srq;
    dct_attr.dc_key  = iface->config.dc_key;
    dct_attr.access  = DCX_ACCESS_REMOTE_WRITE | DCX_ACCESS_REMOTE_READ |
                      DCX_ACCESS_REMOTE_ATOMIC;
    dct_attr.min_rnr_timer = iface->config.rnr_timer;
    ret                    = dcx_qp_create(iface->pd, &dct_attr, &iface->dct);
    if (ret != 0) {
        ucs_error("dcx: %s: failed to create the DCT: %s", dev, strerror(ret));
        goto err_srq;
    }
    iface->config.dctn = iface->dct->qp_num;

    port_len = sizeof(iface->config.port);
    ret      = dcx_dev_port_addr(iface->dev, iface->config.port, &port_len);
    if ((ret != 0) || (port_len > UINT8_MAX)) {
        ucs_error("dcx: %s: failed to read the port address: %s", dev,
                  strerror(ret ? ret : EINVAL));
        goto err_dct;
    }
    iface->config.port_len = port_len;

    ret = dcx_ah_create(iface->pd, iface->config.port, port_len,
                        &iface->self_ah);
    if (ret != 0) {
        ucs_error("dcx: %s: failed to create an address handle to itself: %s",
                  dev, strerror(ret));
        goto err_dct;
    }
    return UCS_OK;

err_dct:
    dcx_qp_destroy(iface->dct);
err_srq:
    dcx_srq_destroy(iface->srq);
err_rx_cq:
    dcx_cq_destroy(iface->rx_cq);
err_tx_cq:
    dcx_cq_destroy(iface->tx_cq);
err_channel:
    if (iface->channel != NULL) {
        dcx_comp_channel_destroy(iface->channel);
    }
    return UCS_ERR_IO_ERROR;
}

static void uct_dcx_iface_destroy_queues(uct_dcx_iface_t *iface)
{
    dcx_ah_destroy(iface->self_ah);
    dcx_qp_destroy(iface->dct);
    dcx_srq_destroy(iface->srq);
    dcx_cq_destroy(iface->rx_cq);
    dcx_cq_destroy(iface->tx_cq);
    if (iface->channel != NULL) {
        dcx_comp_channel_destroy(iface->channel);
    }
}

static uct_iface_internal_ops_t uct_dcx_iface_internal_ops = {
    UCT_DCX_IFACE_INTERNAL_OPS_VERSIONED.iface_estimate_perf =
        uct_base_iface_estimate_perf,
    .iface_vfs_refresh = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query          = UCT_DCX_OP_UNSUPPORTED(uct_ep_query_func_t),
    .ep_invalidate     = UCT_DCX_EP_OP_INVALIDATE};

/* What the interface is asked to open on: a device of this memory domain,
 * opened as a device, by a worker that is not multi-threaded */
static ucs_status_t uct_dcx_iface_check_params(uct_dcx_md_t *md,
                                               uct_worker_h worker,
                                               const uct_iface_params_t *params)
{
    char expected[UCT_DEVICE_NAME_MAX];

    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) ||
        !(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("dcx: only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return UCS_ERR_UNSUPPORTED;
    }

    if (ucs_derived_of(worker, uct_priv_worker_t)->thread_mode ==
        UCS_THREAD_MODE_MULTI) {
        ucs_error("dcx: a worker in UCS_THREAD_MODE_MULTI is not supported");
        return UCS_ERR_UNSUPPORTED;
    }

    ucs_snprintf_zero(expected, sizeof(expected), "%s:1", md->name);
    if (strcmp(params->mode.device.dev_name, expected)) {
        ucs_error("dcx: no device '%s' on memory domain %s (it has '%s')",
                  params->mode.device.dev_name, md->name, expected);
        return UCS_ERR_NO_DEVICE;
    }
    return UCS_OK;
}

/* The settings of a checked configuration, and the state of every object
 * of the interface before any device resource exists (nothing to undo but
 * the endpoint index and the arbiter) */
static void uct_dcx_iface_init_state(uct_dcx_iface_t *self,
                                     const uct_dcx_iface_config_t *cfg)
{
    self->policy             = &uct_dcx_policy_ops[cfg->policy];
    self->config.seg_size    = cfg->seg_size;
    self->config.rx_seg_size = cfg->seg_size;
    self->config.quota       = cfg->quota;
    self->config.dc_key      = cfg->dc_key;
    self->config.timeout     = uct_dcx_timeout_exp_of(cfg->timeout);
    self->config.retry_count = cfg->retry_count;
    self->config.rnr_retry   = cfg->rnr_retry;
    self->config.rnr_timer   = uct_dcx_rnr_timer_of(cfg->rnr_timer);
    /* am_short_iov: TMH, AM byte and the iovs */
    self->config.max_iov     = ucs_min((uint32_t)UCT_DCX_MAX_IOV,
                                       self->caps->max_sge - 2);
    uct_dcx_iface_rx_init(self, cfg);
    self->next_ep_id  = 0;
    self->next_ep_seq = 0;
    self->num_eps     = 0;
    uct_dcx_iface_peers_init(self);
    self->release_desc.cb = uct_dcx_iface_release_desc;
    ucs_list_head_init(&self->chunks);
    ucs_queue_head_init(&self->grant_q);
    uct_dcx_stats_init(self);
    uct_dcx_iface_fc_init(self, cfg);
    ucs_arbiter_init(&self->arbiter);
    self->ep_failed   = uct_dcx_ep_handle_failure;
    self->dispatch_ep = NULL;
    self->invalidated = 0;
    kh_init_inplace(uct_dcx_eps, &self->eps);
    uct_dcx_iface_atomic_caps(self);
}

/* The registered cache line where the results of atomics the user does not
 * want land, and with get_bcopy's READs within the call
 * (uct_dcx_ep_get_bcopy_now), the buffer their bytes land in for the
 * unpack callback: seg_size bytes, any memory */
static ucs_status_t uct_dcx_iface_scratch_init(uct_dcx_iface_t *self)
{
    int ret;

    self->now_buf = NULL;
    if ((self->super.super.ops.ep_get_bcopy == uct_dcx_ep_get_bcopy_now) &&
        (posix_memalign(&self->now_buf, UCS_SYS_CACHE_LINE_SIZE,
                        self->config.seg_size) != 0)) {
        ucs_error("dcx: failed to allocate the %zu-byte READ buffer",
                  self->config.seg_size);
        return UCS_ERR_NO_MEMORY;
    }
    ret = posix_memalign((void **)&self->scratch, UCS_SYS_CACHE_LINE_SIZE,
                         UCS_SYS_CACHE_LINE_SIZE);
    if (ret != 0) {
        ucs_error("dcx: failed to allocate the atomic scratch buffer");
        free(self->now_buf);
        return UCS_ERR_NO_MEMORY;
    }
    ret = dcx_mr_reg(self->pd, self->scratch, UCS_SYS_CACHE_LINE_SIZE,
                     DCX_ACCESS_LOCAL_WRITE, &self->scratch_mr);
    if (ret != 0) {
        ucs_error("dcx: %s: failed to register the atomic scratch buffer: %s",
                  dcx_dev_name(self->dev), strerror(ret));
        free(self->scratch);
        free(self->now_buf);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

static void uct_dcx_iface_scratch_cleanup(uct_dcx_iface_t *self)
{
    dcx_mr_dereg(self->scratch_mr);
    free(self->scratch);
    free(self->now_buf);
}

static UCS_CLASS_INIT_FUNC(uct_dcx_iface_t, uct_md_h tl_md, uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_dcx_md_t *md                  = ucs_derived_of(tl_md, uct_dcx_md_t);
    const uct_dcx_iface_config_t *cfg = ucs_derived_of(tl_config,
                                                       uct_dcx_iface_config_t);
    ucs_status_t status;

    status = uct_dcx_iface_check_params(md, worker, params);
    if (status != UCS_OK) {
        return status;
    }

    UCS_CLASS_CALL_SUPER_INIT(
        uct_base_iface_t, &uct_dcx_iface_ops, &uct_dcx_iface_internal_ops,
        tl_md, worker, params,
        tl_config UCS_STATS_ARG((params->field_mask &
                                 UCT_IFACE_PARAM_FIELD_STATS_ROOT) ?
                                    params->stats_root :
                                    NULL)
            UCS_STATS_ARG(params->mode.device.dev_name));

    self->dev  = md->dev;
    self->pd   = md->pd;
    self->caps = dcx_dev_caps(md->dev);
    /* a device that may execute a small READ or WRITE, or an atomic,
     * within the call (DCX_SEND_NOW): get_bcopy's bytes are read for the
     * unpack callback, put_short's bytes and put_bcopy's bounce buffer are
     * copied, an atomic's old value stored in the caller's result, at once
     * where it can (not under the streams policy, whose DCIs the device
     * never does this for) */
    if ((self->caps->flags & DCX_CAP_POST_NOW) &&
        (cfg->policy != UCT_DCX_POLICY_STREAMS)) {
        self->super.super.ops.ep_put_short      = uct_dcx_ep_put_short_now;
        self->super.super.ops.ep_get_bcopy      = uct_dcx_ep_get_bcopy_now;
        self->super.super.ops.ep_put_bcopy      = uct_dcx_ep_put_bcopy_now;
        self->super.super.ops.ep_atomic32_post  = uct_dcx_ep_atomic32_post_now;
        self->super.super.ops.ep_atomic64_post  = uct_dcx_ep_atomic64_post_now;
        self->super.super.ops.ep_atomic32_fetch = uct_dcx_ep_atomic32_fetch_now;
        self->super.super.ops.ep_atomic64_fetch = uct_dcx_ep_atomic64_fetch_now;
        self->super.super.ops.ep_atomic_cswap32 = uct_dcx_ep_atomic_cswap32_now;
        self->super.super.ops.ep_atomic_cswap64 = uct_dcx_ep_atomic_cswap64_now;
    }

    status = uct_dcx_iface_check_config(cfg, self->caps,
                                        dcx_dev_name(self->dev));
    if (status != UCS_OK) {
        return status;
    }

    uct_dcx_iface_init_state(self, cfg);
    self->rx.in_place = (self->caps->flags & DCX_CAP_RECV_IN_PLACE) &&
                        (!(params->field_mask &
                           UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT) ||
                         (params->am_alignment <= 1));

    status = uct_dcx_iface_create_queues(self, cfg,
                                         uct_dcx_iface_tag_params(self, params,
                                                                  cfg));
    if (status != UCS_OK) {
        goto err;
    }
    if (self->rx.tmh_len != 0) {
        /* an unexpected eager message lands whole in one receive buffer */
        self->config.rx_seg_size = uct_dcx_tm_seg_size(cfg, self->caps);
        self->tm.min_recv        = uct_dcx_tm_min_recv(cfg, self->caps,
                                                       self->config.rx_seg_size);
    }

    /* (the file is named after the DCT) */
    uct_dcx_stats_open(self, (cfg->stats_dir[0] != '\0') ? cfg->stats_dir :
                                                           cfg->tm_stats_dir);

    status = uct_dcx_iface_mpools_init(self, params, cfg);
    if (status != UCS_OK) {
        goto err_queues;
    }

    status = uct_dcx_iface_scratch_init(self);
    if (status != UCS_OK) {
        goto err_mpools;
    }

    status = uct_dcx_iface_tag_init(self, cfg);
    if (status != UCS_OK) {
        goto err_scratch;
    }

    status = uct_dcx_strided_init(self, cfg);
    if (status != UCS_OK) {
        goto err_tag;
    }

    status = uct_dcx_dci_pool_init(self, cfg);
    if (status != UCS_OK) {
        goto err_strided;
    }
    /* a put_short within the call carries up to a bounce buffer's bytes,
     * and one the device declines goes through one
     * (uct_dcx_ep_put_short_now) */
    self->config.max_put_short = (self->super.super.ops.ep_put_short ==
                                  uct_dcx_ep_put_short_now) ?
                                     ucs_max(self->config.seg_size,
                                             self->config.max_inline) :
                                     self->config.max_inline;
    uct_dcx_dci_keep_init(self);

    uct_dcx_iface_post_recv(self);
    if (self->rx.posted < self->rx.target) {
        ucs_error("dcx: %s: posted only %u of %u receive buffers",
                  dcx_dev_name(self->dev), self->rx.posted, self->rx.target);
        status = UCS_ERR_NO_MEMORY;
        goto err_pool;
    }

    ucs_debug("dcx: %s: iface %p DCT 0x%x, %u DCIs x %u WRs, policy %s, "
              "seg %zu, rx %u x %zu, fc window %d",
              dcx_dev_name(self->dev), self, self->config.dctn, self->pool.num,
              self->pool.sq_len, self->policy->name, self->config.seg_size,
              self->rx.queue_len, self->config.rx_seg_size, self->fc.wnd);
    return UCS_OK;

err_pool:
    uct_dcx_dci_keep_cleanup(self);
    uct_dcx_dci_pool_cleanup(self);
err_strided:
    uct_dcx_strided_cleanup(self);
err_tag:
    uct_dcx_iface_tag_cleanup(self);
err_scratch:
    uct_dcx_iface_scratch_cleanup(self);
err_mpools:
    if (self->rx.tmh_len != 0) {
        ucs_mpool_cleanup(&self->tag_tx_mp, 0);
    }
    ucs_mpool_cleanup(&self->rx_mp, 0);
    ucs_mpool_cleanup(&self->op_mp, 0);
    ucs_mpool_cleanup(&self->tx_mp, 0);
err_queues:
    uct_dcx_stats_close(self);
    uct_dcx_iface_destroy_queues(self);
err:
    kh_destroy_inplace(uct_dcx_eps, &self->eps);
    ucs_arbiter_cleanup(&self->arbiter);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_dcx_iface_t)
{
    uct_dcx_grant_t *grant;

    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);

    if (self->num_eps != 0) {
        ucs_warn("dcx: %s: closing iface %p with %u endpoints still open",
                 dcx_dev_name(self->dev), self, self->num_eps);
    }

    uct_dcx_iface_fc_cleanup(self);
    /* cancelling the control DCI's operations may queue grants again;
     * the deregistrations held for orphans are done as their DCIs go */
    uct_dcx_dci_keep_cleanup(self);
    uct_dcx_dci_pool_cleanup(self);
    uct_dcx_strided_cleanup(self);
    while (!ucs_queue_is_empty(&self->grant_q)) {
        grant = ucs_queue_pull_elem_non_empty(&self->grant_q, uct_dcx_grant_t,
                                              queue);
        ucs_mpool_put_inline(grant);
    }
    dcx_qp_destroy(self->dct);
    dcx_srq_destroy(self->srq);
    uct_dcx_iface_peers_cleanup(self);
    dcx_ah_destroy(self->self_ah);
    dcx_cq_destroy(self->rx_cq);
    dcx_cq_destroy(self->tx_cq);
    if (self->channel != NULL) {
        dcx_comp_channel_destroy(self->channel);
    }

    uct_dcx_iface_tag_cleanup(self);
    uct_dcx_stats_close(self);
    uct_dcx_iface_scratch_cleanup(self);
    if (self->rx.tmh_len != 0) {
        ucs_mpool_cleanup(&self->tag_tx_mp, 1);
    }
    ucs_mpool_cleanup(&self->rx_mp, 0);
    ucs_mpool_cleanup(&self->op_mp, 1);
    ucs_mpool_cleanup(&self->tx_mp, 1);
    kh_destroy_inplace(uct_dcx_eps, &self->eps);
    ucs_arbiter_cleanup(&self->arbiter);
}

UCS_CLASS_DEFINE(uct_dcx_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_dcx_iface_t, uct_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_dcx_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t *,
                                 const uct_iface_config_t *);


uct_iface_ops_t uct_dcx_iface_ops = {
    .ep_am_short              = uct_dcx_ep_am_short,
    .ep_am_short_iov          = uct_dcx_ep_am_short_iov,
    .ep_am_bcopy              = uct_dcx_ep_am_bcopy,
    .ep_am_zcopy              = uct_dcx_ep_am_zcopy,
    .ep_put_short             = uct_dcx_ep_put_short,
    .ep_put_bcopy             = uct_dcx_ep_put_bcopy,
    .ep_put_zcopy             = uct_dcx_ep_put_zcopy,
    .ep_get_short             = uct_dcx_ep_get_short,
    .ep_get_bcopy             = uct_dcx_ep_get_bcopy,
    .ep_get_zcopy             = uct_dcx_ep_get_zcopy,
    .ep_atomic_cswap64        = uct_dcx_ep_atomic_cswap64,
    .ep_atomic_cswap32        = uct_dcx_ep_atomic_cswap32,
    .ep_atomic32_post         = uct_dcx_ep_atomic32_post,
    .ep_atomic64_post         = uct_dcx_ep_atomic64_post,
    .ep_atomic32_fetch        = uct_dcx_ep_atomic32_fetch,
    .ep_atomic64_fetch        = uct_dcx_ep_atomic64_fetch,
    .ep_pending_add           = uct_dcx_ep_pending_add,
    .ep_pending_purge         = uct_dcx_ep_pending_purge,
    .ep_flush                 = uct_dcx_ep_flush,
    .ep_fence                 = uct_dcx_ep_fence,
    .ep_check                 = uct_dcx_ep_check,
    .ep_tag_eager_short       = uct_dcx_ep_tag_eager_short,
    .ep_tag_eager_bcopy       = uct_dcx_ep_tag_eager_bcopy,
    .ep_tag_eager_zcopy       = uct_dcx_ep_tag_eager_zcopy,
    .ep_tag_rndv_request      = uct_dcx_ep_tag_rndv_request,
    .ep_tag_rndv_zcopy        = uct_dcx_ep_tag_rndv_zcopy,
    .ep_tag_rndv_cancel       = uct_dcx_ep_tag_rndv_cancel,
    .iface_tag_recv_zcopy     = uct_dcx_iface_tag_recv_zcopy,
    .iface_tag_recv_cancel    = uct_dcx_iface_tag_recv_cancel,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_dcx_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_dcx_ep_t),
    .iface_flush              = uct_dcx_iface_flush,
    .iface_fence              = uct_dcx_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_dcx_iface_progress,
    .iface_event_fd_get       = uct_dcx_iface_event_fd_get,
    .iface_event_arm          = uct_dcx_iface_event_arm,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_dcx_iface_t),
    .iface_query              = uct_dcx_iface_query,
    .iface_get_device_address = uct_dcx_iface_get_device_address,
    .iface_get_address        = uct_dcx_iface_get_address,
    .iface_is_reachable       = uct_dcx_iface_is_reachable};


static ucs_status_t
uct_dcx_query_tl_devices(uct_md_h tl_md, uct_tl_device_resource_t **devices_p,
                         unsigned *num_devices_p)
{
    uct_dcx_md_t *md = ucs_derived_of(tl_md, uct_dcx_md_t);
    char name[UCT_DEVICE_NAME_MAX];

    /* One port per device: "<device>:1", as users pass it to -d */
    ucs_snprintf_zero(name, sizeof(name), "%s:1", md->name);
    return uct_single_device_resource(tl_md, name, UCT_DEVICE_TYPE_NET,
                                      UCS_SYS_DEVICE_ID_UNKNOWN, devices_p,
                                      num_devices_p);
}

UCT_TL_DEFINE(&uct_dcx_component, dcx, uct_dcx_query_tl_devices,
              uct_dcx_iface_t, UCT_DCX_CONFIG_PREFIX,
              uct_dcx_iface_config_table, uct_dcx_iface_config_t);
