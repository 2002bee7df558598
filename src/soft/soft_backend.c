/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The soft backend: its knobs, the listing of soft devices, and its
 * registration with the device layer (opening a device is soft_dev.c's).
 *
 * The knobs are the soft device's limits and how many devices to offer on
 * which fabric; the UCX transport offers each as UCX_DCX_<name> with the
 * help and default given here.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Soft devices one listing offers at most. */
#define SOFT_DEVICES_MAX 64

_Static_assert(sizeof(soft_dev_info_t) <= DCX_DEV_INFO_PRIV,
               "a soft device's listing fits dcx_dev_info_t.priv");

void dcx_soft_limits_default(dcx_soft_limits_t *limits)
{
    memset(limits, 0, sizeof(*limits));
    limits->max_qp_wr        = 32768;
    limits->max_srq_wr       = 32767;
    limits->max_cqe          = 4194303;
    limits->max_sge          = 30;
    limits->max_inline       = 828;
    limits->max_rd_atomic    = 16;
    limits->max_dci          = 4096;
    limits->max_msg_size     = 1ull << 30;
    limits->mtu              = 16384;
    limits->tm_max_tags      = 1023;
    limits->mkey_max_entries = 256;
    limits->ack_timeout_us   = 500000;
    limits->retry_cnt        = 7;
    limits->rnr_timer_us     = 1000;
    limits->rnr_retry        = 7;
}

void soft_limits_merge(dcx_soft_limits_t *out, const dcx_soft_limits_t *in)
{
    dcx_soft_limits_t def;

    dcx_soft_limits_default(&def);
    *out = *in;
#define SOFT_DEF(_f)      \
    if (out->_f == 0) {   \
        out->_f = def._f; \
    }
    SOFT_DEF(max_qp_wr);
    SOFT_DEF(max_srq_wr);
    SOFT_DEF(max_cqe);
    SOFT_DEF(max_sge);
    SOFT_DEF(max_inline);
    SOFT_DEF(max_rd_atomic);
    SOFT_DEF(max_dci);
    SOFT_DEF(max_msg_size);
    SOFT_DEF(mtu);
    SOFT_DEF(tm_max_tags);
    SOFT_DEF(mkey_max_entries);
    SOFT_DEF(ack_timeout_us);
    SOFT_DEF(retry_cnt);
    SOFT_DEF(rnr_timer_us);
    SOFT_DEF(rnr_retry);
#undef SOFT_DEF
}

int soft_fabric_name_ok(const char *name)
{
    size_t len = strlen(name);
    const char *c;

    if ((len == 0) || (len > 32)) {
        return 0;
    }
    for (c = name; *c != '\0'; ++c) {
        if (!(((*c >= 'a') && (*c <= 'z')) || ((*c >= 'A') && (*c <= 'Z')) ||
              ((*c >= '0') && (*c <= '9')) || (*c == '_') || (*c == '-') ||
              (*c == '.'))) {
            return 0;
        }
    }
    return 1;
}

int soft_limits_ok(const dcx_soft_limits_t *l, const char *who)
{
    /* clang-format off */
    const struct {
        const char *name;
        uint64_t    value, max;
    } counts[] = {
        {"max_qp_wr",     l->max_qp_wr,     DCX_SOFT_LIMIT_MAX_QP_WR},
        {"max_srq_wr",    l->max_srq_wr,    DCX_SOFT_LIMIT_MAX_SRQ_WR},
        {"max_cqe",       l->max_cqe,       DCX_SOFT_LIMIT_MAX_CQE},
        {"max_sge",       l->max_sge,       DCX_SOFT_LIMIT_MAX_SGE},
        {"max_inline",    l->max_inline,    DCX_SOFT_LIMIT_MAX_INLINE},
        {"max_rd_atomic", l->max_rd_atomic, DCX_SOFT_LIMIT_MAX_RD_ATOMIC},
        {"max_dci",       l->max_dci,       DCX_SOFT_LIMIT_MAX_DCI},
        {"max_msg_size",  l->max_msg_size,  DCX_SOFT_LIMIT_MAX_MSG_SIZE},
        {"mtu",           l->mtu,           DCX_SOFT_LIMIT_MAX_MTU},
        {"retry_cnt",     l->retry_cnt,     7},
        {"rnr_retry",     l->rnr_retry,     7},
        {"direct",        l->direct,        1},
        {"cold_rings",    l->cold_rings,    1},
        {"recv_copy",     l->recv_copy,     1},
        {"pinned",        l->pinned,        1}
    };
    /* clang-format on */
    unsigned i;

    /* 0 everywhere means "the default" */
    for (i = 0; i < sizeof(counts) / sizeof(counts[0]); ++i) {
        if (counts[i].value > counts[i].max) {
            dcx_error("soft %s: %s %llu out of range [1, %llu]", who,
                      counts[i].name, (unsigned long long)counts[i].value,
                      (unsigned long long)counts[i].max);
            return 0;
        }
    }
    if ((l->mtu != 0) && (l->mtu < DCX_SOFT_LIMIT_MIN_MTU)) {
        dcx_error("soft %s: mtu %u out of range [%u, %u]", who, l->mtu,
                  DCX_SOFT_LIMIT_MIN_MTU, DCX_SOFT_LIMIT_MAX_MTU);
        return 0;
    }
    if ((l->tm_max_tags > 0xffff) || (l->tm_max_tags & (l->tm_max_tags + 1))) {
        dcx_error("soft %s: tm_max_tags %u is not 2^n - 1 (at most 65535)", who,
                  l->tm_max_tags);
        return 0;
    }
    if ((l->mkey_max_entries != 0) &&
        ((l->mkey_max_entries < 4) || (l->mkey_max_entries > 0xffff))) {
        dcx_error("soft %s: mkey_max_entries %u out of range [4, 65535]", who,
                  l->mkey_max_entries);
        return 0;
    }
    return 1;
}


static const char *soft_fabric_check(const char *name)
{
    /* an empty name selects the default fabric */
    if ((name[0] == '\0') || soft_fabric_name_ok(name)) {
        return NULL;
    }
    return "is not a fabric name (1..32 letters, digits, '_', '.', '-')";
}

static int soft_backend_list(const void *block, dcx_dev_info_t *out,
                             unsigned max, unsigned *count_p)
{
    const dcx_soft_params_t *params = block;
    const char *fabric              = params->fabric;
    soft_dev_info_t *si;
    unsigned i, n;

    if ((fabric == NULL) || (fabric[0] == '\0')) {
        fabric = "default";
    }
    if (!soft_fabric_name_ok(fabric)) {
        dcx_error("soft: fabric name '%s' invalid (1-32 of [A-Za-z0-9_.-])",
                  fabric);
        return EINVAL;
    }
    if (!soft_limits_ok(&params->limits, fabric)) {
        return EINVAL;
    }
    n = (params->count < max) ? params->count : max;
    for (i = 0; i < n; ++i) {
        memset(&out[i], 0, sizeof(out[i]));
        snprintf(out[i].name, sizeof(out[i].name), "soft%u", i);
        out[i].backend = &dcx_soft_backend;
        out[i].index   = i;
        si             = (soft_dev_info_t *)out[i].priv.bytes;
        snprintf(si->fabric, sizeof(si->fabric), "%s", fabric);
        soft_limits_merge(&si->limits, &params->limits);
    }
    *count_p = n;
    return 0;
}

int dcx_soft_list(const dcx_soft_params_t *params, dcx_dev_info_t **list_p,
                  unsigned *count_p)
{
    dcx_dev_info_t *list;
    unsigned n;
    int ret;

    n = (params->count < SOFT_DEVICES_MAX) ? params->count : SOFT_DEVICES_MAX;
    list = calloc((n > 0) ? n : 1, sizeof(*list));
    if (list == NULL) {
        dcx_error("soft: device list: out of memory");
        return ENOMEM;
    }
    ret = soft_backend_list(params, list, n, count_p);
    if (ret != 0) {
        free(list);
        return ret;
    }
    *list_p = list;
    return 0;
}

int dcx_dev_is_soft(const dcx_dev_t *dev)
{
    return (dev != NULL) && (dev->backend == &dcx_soft_backend);
}

/* ------------------------------------------------------------------------
 * Knobs (UCX_DCX_<name>), in the order ucx_info -c shows them
 * ------------------------------------------------------------------------ */

#define SOFT_PARAM(_name, _dflt, _doc, _type, _field, _min, _max)         \
    {                                                                     \
        .name = _name, .dflt = _dflt, .doc = _doc, .type = _type,         \
        .offset = offsetof(dcx_soft_params_t, _field),                    \
        .size = sizeof(((dcx_soft_params_t *)NULL)->_field), .min = _min, \
        .max = _max                                                       \
    }

static const dcx_param_t soft_params[] = {
    SOFT_PARAM(
        "SOFT_DEVICES", "0",
        "Number of soft devices to offer (soft0, soft1, ...). A soft device is a\n"
        "software model of a DC-capable NIC that connects the processes of one host\n"
        "through shared memory. 0 offers none.",
        DCX_PARAM_UINT, count, 0, SOFT_DEVICES_MAX),

    {.name = "SOFT_FABRIC",
     .dflt = "default",
     .doc =
         "Fabric the soft devices join. Processes reach each other only on the same\n"
         "fabric. Letters, digits, '_', '.' and '-', at most 32 characters; empty\n"
         "means \"default\".",
     .type   = DCX_PARAM_STRING,
     .offset = offsetof(dcx_soft_params_t, fabric),
     .size   = sizeof(const char *),
     .check  = soft_fabric_check},

    SOFT_PARAM(
        "SOFT_MAX_QP_WR", "auto",
        "Soft device: send queue depth of one DCI, 1..65536 (auto: device\n"
        "default).",
        DCX_PARAM_LIMIT, limits.max_qp_wr, 1, DCX_SOFT_LIMIT_MAX_QP_WR),

    SOFT_PARAM(
        "SOFT_MAX_SRQ_WR", "auto",
        "Soft device: receives a shared receive queue holds, 1..65536 (auto:\n"
        "device default).",
        DCX_PARAM_LIMIT, limits.max_srq_wr, 1, DCX_SOFT_LIMIT_MAX_SRQ_WR),

    SOFT_PARAM(
        "SOFT_MAX_CQE", "auto",
        "Soft device: entries of one completion queue, 1..4194304 (auto: device\n"
        "default).",
        DCX_PARAM_LIMIT, limits.max_cqe, 1, DCX_SOFT_LIMIT_MAX_CQE),

    SOFT_PARAM(
        "SOFT_MAX_SGE", "auto",
        "Soft device: scatter/gather entries of one send, 1..30 (auto: device\n"
        "default).",
        DCX_PARAM_LIMIT, limits.max_sge, 1, DCX_SOFT_LIMIT_MAX_SGE),

    SOFT_PARAM(
        "SOFT_MAX_INLINE", "auto",
        "Soft device: bytes a send can carry inline, 1..65536 (auto: device\n"
        "default).",
        DCX_PARAM_LIMIT, limits.max_inline, 1, DCX_SOFT_LIMIT_MAX_INLINE),

    SOFT_PARAM(
        "SOFT_MAX_RD_ATOMIC", "auto",
        "Soft device: outstanding RDMA reads and atomics per DCI, 1..16 (auto:\n"
        "device default).",
        DCX_PARAM_LIMIT, limits.max_rd_atomic, 1, DCX_SOFT_LIMIT_MAX_RD_ATOMIC),

    SOFT_PARAM(
        "SOFT_MAX_DCI", "auto",
        "Soft device: DCIs the device provides, 1..65536 (auto: device default).",
        DCX_PARAM_LIMIT, limits.max_dci, 1, DCX_SOFT_LIMIT_MAX_DCI),

    SOFT_PARAM(
        "SOFT_MAX_MSG_SIZE", "auto",
        "Soft device: largest message (send, RDMA write or read), 1..2G (auto:\n"
        "device default).",
        DCX_PARAM_SIZE, limits.max_msg_size, 1, DCX_SOFT_LIMIT_MAX_MSG_SIZE),

    SOFT_PARAM(
        "SOFT_MTU", "auto",
        "Soft device: bytes per packet on the wire, 256..1M (auto: device default).",
        DCX_PARAM_LIMIT, limits.mtu, DCX_SOFT_LIMIT_MIN_MTU,
        DCX_SOFT_LIMIT_MAX_MTU),

    SOFT_PARAM(
        "SOFT_ACK_TIMEOUT", "auto",
        "Soft device: time a requester waits for an acknowledgement before it\n"
        "retransmits (auto: device default).",
        DCX_PARAM_TIME, limits.ack_timeout_us, 1, UINT32_MAX),

    /* 0 means "device default" in a zeroed block, so 0 retries cannot be
     * asked for */
    SOFT_PARAM(
        "SOFT_RETRY_COUNT", "auto",
        "Soft device: retransmissions before a send fails with 'retry count\n"
        "exceeded', 1..7 (auto: device default).",
        DCX_PARAM_LIMIT, limits.retry_cnt, 1, 7),

    SOFT_PARAM(
        "SOFT_RNR_TIMER", "auto",
        "Soft device: delay before a send refused for lack of a receive buffer is\n"
        "retried (auto: device default).",
        DCX_PARAM_TIME, limits.rnr_timer_us, 1, UINT32_MAX),

    SOFT_PARAM(
        "SOFT_RNR_RETRY", "auto",
        "Soft device: retries of a send refused for lack of a receive buffer,\n"
        "1..6, or 7 to retry forever (auto: device default).",
        DCX_PARAM_LIMIT, limits.rnr_retry, 1, 7),

    SOFT_PARAM(
        "SOFT_MKEY_MAX_ENTRIES", "auto",
        "Soft device: translation entries of one strided memory key, 4..65535\n"
        "(auto: device default, 256).",
        DCX_PARAM_LIMIT, limits.mkey_max_entries, 4, 0xffff),

    SOFT_PARAM(
        "SOFT_TM", "y",
        "Soft device: offer hardware tag matching. With n the device has none,\n"
        "like a NIC without it: UCX_DCX_TM_ENABLE=try then gives a plain SRQ and\n"
        "=y fails, so a job can mix processes with and without offload.",
        DCX_PARAM_BOOL_NOT, limits.tm_off, 0, 1),

    SOFT_PARAM(
        "SOFT_DIRECT", "y",
        "Soft device: RDMA writes and reads (put/get zcopy and bcopy) are\n"
        "executed by the initiator, copying directly between the two processes'\n"
        "registered memory with cross-memory attach, without the target's CPU, as\n"
        "a NIC does by DMA.  Where cross-memory attach is refused (ptrace policy,\n"
        "seccomp, containers), with fault injection, or when disabled here, the\n"
        "target's responder executes them.",
        DCX_PARAM_BOOL, limits.direct, 0, 1),

    SOFT_PARAM(
        "SOFT_WARM_RINGS", "y",
        "Soft device: touch every page of the port's message rings when the port\n"
        "is created, and of a peer's when it is first reached, so that the first\n"
        "packets through each ring slot meet no first-access cost (page faults;\n"
        "in a virtual machine also the hypervisor's, ~5 us a page). Costs that\n"
        "time once per port and per peer reached (~1000 pages each with the\n"
        "default MTU). n: pages are touched by the packets that first use them.",
        DCX_PARAM_BOOL_NOT, limits.cold_rings, 0, 1),

    SOFT_PARAM(
        "SOFT_RECV_IN_PLACE", "y",
        "Soft device: a message of 64 bytes or more is handed to the receiver\n"
        "where it arrived, in the port's message ring, instead of being copied\n"
        "into a receive buffer first, when the receiver's poll takes it (the\n"
        "UCX transport's active messages). n: every message is copied.",
        DCX_PARAM_BOOL_NOT, limits.recv_copy, 0, 1),

    SOFT_PARAM(
        "SOFT_PINNED", "n",
        "Soft device: registered memory keeps its pages, as a NIC's registration\n"
        "pins them: an RDMA write, read or atomic, a send or a receive that\n"
        "reaches pages their owner unmapped after registering them succeeds, the\n"
        "data written landing nowhere and reads returning zeros (a NIC returns\n"
        "what the pages last held). n: such an access fails with a remote access\n"
        "or local protection error.",
        DCX_PARAM_BOOL, limits.pinned, 0, 1),

    SOFT_PARAM(
        "SOFT_MKEY_LATE", "n",
        "Soft device: a strided-key configure or invalidate is executed by a\n"
        "later run of its queue (the device's pass at the next poll, or the\n"
        "next post on that queue), never within its own post, as a NIC\n"
        "executes a UMR some time after the doorbell: work posted on another\n"
        "queue right after it may run first, as on hardware. n: executed\n"
        "within the post where nothing precedes it.",
        DCX_PARAM_BOOL, limits.mkey_late, 0, 1)};

/* Listed after the backends of NICs. */
const dcx_backend_t dcx_soft_backend = {
    .name        = "soft",
    .order       = 100,
    .params      = soft_params,
    .num_params  = sizeof(soft_params) / sizeof(soft_params[0]),
    .params_size = sizeof(dcx_soft_params_t),
    .list        = soft_backend_list,
    .open        = soft_dev_open};

DCX_BACKEND_REGISTER(dcx_soft_backend)
