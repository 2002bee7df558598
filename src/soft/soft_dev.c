/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: open/close (with the line of what it carried), capabilities,
 * port address and the operations table (the backend's knobs and listing are in
 * soft_backend.c; the device's objects in their own files: PDs soft_pd.c,
 * MRs and the key table soft_mr.c, SRQs soft_srq.c, AHs soft_ah.c, CQs
 * soft_cq.c; the engine's progress loop in soft_engine.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_channel.h"
#include "soft_stream.h"
#include "soft_direct.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static inline const soft_dev_info_t *soft_dev_info(const dcx_dev_info_t *info)
{
    return (const soft_dev_info_t *)info->priv.bytes;
}
static uint32_t soft_inst_counter;

/* ------------------------------------------------------------------------
 * Device
 * ------------------------------------------------------------------------ */
static int soft_port_addr(dcx_dev_t *dev_, void *addr, size_t *len_p)
{
    soft_dev_t *dev = soft_dev(dev_);
    soft_addr_t a;

    if (*len_p < SOFT_ADDR_LEN) {
        dcx_error("%s: port addr: buffer of %zu bytes, need %u",
                  dev->super.caps.name, *len_p, SOFT_ADDR_LEN);
        return EINVAL;
    }
    memset(&a, 0, sizeof(a));
    a.magic  = SOFT_ADDR_MAGIC;
    a.uid    = dev->uid;
    a.host   = dev->host;
    a.fabric = dev->fabric_hash;
    a.pid    = dev->pid;
    a.inst   = (uint16_t)dev->inst;
    a.token  = dev->token;
    memcpy(addr, &a, sizeof(a));
    *len_p = SOFT_ADDR_LEN;
    return 0;
}

int dcx_soft_addr_nowhere(dcx_dev_t *dev_, void *addr, size_t *len_p)
{
    soft_addr_t a;
    int ret;

    ret = soft_port_addr(dev_, &a, len_p);
    if (ret == 0) {
        /* no process has this pid (above any pid_max), so the port is
         * dead from the first look: no segment is ever searched for */
        a.pid   = SOFT_PID_NOWHERE;
        a.token = 1;
        memcpy(addr, &a, sizeof(a));
    }
    return ret;
}

int dcx_soft_dev_set_lid(dcx_dev_t *dev_, uint16_t lid)
{
    if (!dcx_dev_is_soft(dev_)) {
        dcx_error("%s: set LID: not a soft device", dcx_dev_name(dev_));
        return EINVAL;
    }
    __atomic_store_n(&soft_dev(dev_)->hdr->lid, lid, __ATOMIC_RELEASE);
    return 0;
}

int dcx_soft_dev_rndv_live(dcx_dev_t *dev_)
{
    return dcx_dev_is_soft(dev_) &&
           (__atomic_load_n(&soft_dev(dev_)->tm_rndv_live, __ATOMIC_RELAXED) !=
            0);
}

int dcx_soft_dev_remote_peers(dcx_dev_t *dev_)
{
    return dcx_dev_is_soft(dev_) &&
           (__atomic_load_n(&soft_dev(dev_)->remote_peers, __ATOMIC_RELAXED) !=
            0);
}

int dcx_soft_dev_set_rx_hold(dcx_dev_t *dev_, dcx_soft_rx_hold_t hold,
                             void *arg)
{
    soft_dev_t *dev;

    if (!dcx_dev_is_soft(dev_)) {
        dcx_error("%s: set rx hold: not a soft device", dcx_dev_name(dev_));
        return EINVAL;
    }
    dev = soft_dev(dev_);
    soft_lock(&dev->lock);
    dev->rx_hold_arg = arg;
    dev->rx_hold     = hold;
    soft_unlock(&dev->lock);
    return 0;
}

int dcx_soft_dev_set_qpn_base(dcx_dev_t *dev_, uint32_t first)
{
    soft_dev_t *dev;
    int ret = 0;

    if (!dcx_dev_is_soft(dev_)) {
        dcx_error("%s: set QP number base: not a soft device",
                  dcx_dev_name(dev_));
        return EINVAL;
    }
    dev = soft_dev(dev_);
    if ((first == 0) ||
        ((uint64_t)first + dev->max_qps - 1 > DCX_SOFT_QPN_MAX)) {
        dcx_error("%s: set QP number base: 0x%x + %u QPs does not fit "
                  "[1, 0x%x]",
                  dev->super.caps.name, first, dev->max_qps, DCX_SOFT_QPN_MAX);
        return EINVAL;
    }
    soft_lock(&dev->lock);
    if (dev->qp_gen != 0) {
        /* numbers of the old base may be known to peers already */
        ret = EBUSY;
    } else {
        dev->qpn_base = first;
        __atomic_store_n(&dev->hdr->qpn_base, first, __ATOMIC_RELEASE);
    }
    soft_unlock(&dev->lock);
    if (ret != 0) {
        dcx_error("%s: set QP number base: the device has made QPs already",
                  dev->super.caps.name);
    }
    return ret;
}

/* One info line, when the device closes, with what it carried: a job run
 * with UCX_LOG_LEVEL=info shows that its traffic really crossed the soft
 * device (test/mpi/run.sh reads it) */
static void soft_dev_log_traffic(dcx_dev_t *dev)
{
    dcx_soft_stats_t st;

    if ((dcx_log_max_level < DCX_LOG_INFO) || (dcx_soft_stats(dev, &st) != 0)) {
        return;
    }
    dcx_info("soft device %s: traffic: tx %" PRIu64 " packets %" PRIu64
             " bytes, rx %" PRIu64 " packets %" PRIu64 " bytes, %" PRIu64
             " retransmits, %" PRIu64 " rnr naks, %" PRIu64
             " remote access errors; direct %" PRIu64 " writes %" PRIu64
             " reads (%" PRIu64 " through "
             "mappings) %" PRIu64 " atomics",
             dev->caps.name, st.tx_packets, st.tx_bytes, st.rx_packets,
             st.rx_bytes, st.retransmits, st.rnr_naks_sent,
             st.remote_access_errors, st.direct_writes, st.direct_reads,
             st.direct_mapped, st.direct_atomics);
}

static void soft_close(dcx_dev_t *dev_)
{
    soft_dev_t *dev = soft_dev(dev_);

    soft_helper_stop(dev);
    soft_dev_log_traffic(dev_);
    if (dev->num_objs || dev->num_pds || dev->num_mr_used) {
        dcx_warn("%s: closed with %d objects, %d PDs, %d MRs still open",
                 dev->super.caps.name, dev->num_objs, dev->num_pds,
                 dev->num_mr_used);
    }
    soft_dmap_cleanup(dev); /* peers' segments we attached */
    soft_shm_cleanup(dev);  /* SysV segments of MRs not deregistered */
    free(dev->mvec);
    soft_peers_free(dev);
    soft_wake_close(dev);
    soft_port_destroy(dev);
    pthread_mutex_destroy(&dev->mr_lock);
    free(dev->qps);
    free(dev->mrs);
    free(dev->rstate);
    free(dev);
}

static const dcx_dev_ops_t soft_dev_ops = {
    .close                  = soft_close,
    .port_addr              = soft_port_addr,
    .addr_check             = soft_addr_check_op,
    .progress               = soft_dev_progress,
    .pd_alloc               = soft_pd_alloc,
    .pd_free                = soft_pd_free,
    .mr_reg                 = soft_mr_reg,
    .mr_dereg               = soft_mr_dereg,
    .mkey_create            = soft_mkey_create,
    .mkey_destroy           = soft_mkey_destroy,
    .mem_unmapped           = soft_mem_unmapped,
    .unmaps_reported        = soft_mem_unmaps_reported,
    .cq_create              = soft_cq_create,
    .cq_destroy             = soft_cq_destroy,
    .srq_create             = soft_srq_create,
    .srq_destroy            = soft_srq_destroy,
    .ah_create              = soft_ah_create,
    .ah_destroy             = soft_ah_destroy,
    .qp_create              = soft_qp_create,
    .qp_destroy             = soft_qp_destroy,
    .qp_set_error           = soft_qp_set_error,
    .qp_recover             = soft_qp_recover,
    .qp_stream_reset        = soft_stream_reset,
    .comp_channel_create    = soft_channel_create,
    .comp_channel_destroy   = soft_channel_destroy,
    .cq_create_ch           = soft_cq_create_ch,
    .cq_req_notify          = soft_cq_req_notify,
    .comp_channel_get_event = soft_channel_get_event};

static void soft_fill_caps(soft_dev_t *dev, const dcx_dev_info_t *info)
{
    dcx_dev_caps_t *caps       = &dev->super.caps;
    const dcx_soft_limits_t *l = &dev->limits;

    snprintf(caps->name, sizeof(caps->name), "%s", info->name);
    snprintf(caps->fw_ver, sizeof(caps->fw_ver), "soft-%u.0", SOFT_VERSION);
    /* the responder runs in the target process and executes atomics with
     * the CPU's atomic instructions on the target's memory */
    caps->flags = DCX_CAP_DC | DCX_CAP_HELPER | DCX_CAP_ATOMIC_HOST |
                  DCX_CAP_NO_PIN | DCX_CAP_CQ_EVENT | DCX_CAP_MKEY_STRIDE |
                  DCX_CAP_SHM_PEERS | DCX_CAP_DCI_STREAMS |
                  (l->tm_off ? 0 : DCX_CAP_TM) |
                  (l->recv_copy ? 0 : DCX_CAP_RECV_IN_PLACE);
    caps->atomic_flags = DCX_ATOMIC_FADD64 | DCX_ATOMIC_CSWAP64 |
                         DCX_ATOMIC_MASKED_FADD32 | DCX_ATOMIC_MASKED_FADD64 |
                         DCX_ATOMIC_MASKED_CSWAP32 | DCX_ATOMIC_MASKED_CSWAP64;
    caps->vendor_id        = 0x02c9; /* Mellanox */
    caps->vendor_part_id   = 0xd5f0; /* not a real part: "soft" */
    caps->max_qp_wr        = l->max_qp_wr;
    caps->max_srq_wr       = l->max_srq_wr;
    caps->max_cqe          = l->max_cqe;
    caps->max_sge          = l->max_sge;
    caps->max_recv_sge     = l->max_sge;
    caps->max_inline       = l->max_inline;
    caps->max_rd_atomic    = l->max_rd_atomic;
    caps->max_dci          = l->max_dci;
    caps->max_mr           = 1u << 24;
    caps->max_mr_size      = UINT64_MAX;
    caps->max_msg_size     = l->max_msg_size;
    caps->mtu              = l->mtu;
    caps->addr_len         = SOFT_ADDR_LEN;
    caps->tm_max_tags      = l->tm_off ? 0 : l->tm_max_tags;
    caps->tm_max_ops       = l->tm_off ? 0 : l->max_qp_wr;
    caps->tm_max_rndv_hdr  = 64;
    caps->tm_max_sge       = 1;
    caps->mkey_max_entries = l->mkey_max_entries;
    caps->mkey_max_stride  = 0xffff;
    caps->mkey_qp_type     = DCX_QPT_DCI;

    /* DCI streams: channel DCIs (soft_stream.c) */
    caps->dci_streams_log_max = SOFT_STREAMS_LOG_MAX;
    caps->dci_errored_log_max = SOFT_STREAMS_LOG_MAX;

    /* Measured with gtest_soft --gtest_also_run_disabled_tests
     * --gtest_filter='*perf*' on a 2-core VM: ~1 us one way (8-byte send
     * ping-pong, both sides polling, idle machine), 16 GB/s cache-hot
     * loopback writes; cross-process cache-cold copies are slower, hence the
     * lower bandwidth figure. */
    caps->latency_ns      = 1000.0;
    caps->bandwidth_Bps   = 6.0e9;
    caps->overhead_ns     = 150.0;
    /* a registration records a range in the device's table */
    caps->reg_overhead_ns = 1000.0;
    caps->reg_growth_ns   = 0.0;
    /* the host CPU is the device: a tag-list operation is done within its
     * post, under the device's lock, and writes a completion that a later
     * poll takes, as a message's delivery does; the model counts it at a
     * message's one-way cost */
    caps->tm_op_ns        = l->tm_off ? 0.0 : caps->latency_ns;
}

int soft_dev_open(const dcx_dev_info_t *info, dcx_dev_t **dev_p)
{
    const soft_dev_info_t *si = soft_dev_info(info);
    soft_dev_t *dev;
    int ret;

    if ((info->backend != &dcx_soft_backend) ||
        !soft_fabric_name_ok(si->fabric)) {
        dcx_error("%s: open: not a soft device or bad fabric name '%.40s'",
                  info->name, si->fabric);
        return EINVAL;
    }
    if (!soft_limits_ok(&si->limits, info->name)) {
        return EINVAL;
    }
    dev = calloc(1, sizeof(*dev));
    if (dev == NULL) {
        dcx_error("%s: open: out of memory", info->name);
        return ENOMEM;
    }
    soft_limits_merge(&dev->limits, &si->limits);
    dev->super.ops     = &soft_dev_ops;
    dev->super.backend = &dcx_soft_backend;
    soft_fill_caps(dev, info);
    /* the whole field: soft_fabric_name_ok checked the name it holds (1..32
     * characters and its NUL); a string copy through si would be bounded
     * by info->priv, which the compiler sees as larger than the field */
    _Static_assert(sizeof(dev->fabric) == sizeof(si->fabric),
                   "the device keeps the listed fabric name whole");
    memcpy(dev->fabric, si->fabric, sizeof(dev->fabric));
    dev->pid         = (uint32_t)getpid();
    dev->uid         = (uint32_t)getuid();
    dev->host        = soft_host_id();
    dev->fabric_hash = soft_fabric_hash(dev->fabric);
    /* 16 bits in the address; the token tells reused numbers apart */
    dev->inst = (__atomic_add_fetch(&soft_inst_counter, 1, __ATOMIC_RELAXED) %
                 0xffffu) +
                1;
    dev->max_qps      = dev->limits.max_dci + 1024;
    dev->qpn_base     = SOFT_QPN_BASE;
    dev->resp_credits = SOFT_RING_SLOTS - 1;
    dev->wake_fd      = -1;
    soft_lock_init(&dev->lock);
    pthread_mutex_init(&dev->mr_lock, NULL);
    soft_mem_init(dev);
    soft_clock_init();

    dev->qps    = calloc(dev->max_qps, sizeof(*dev->qps));
    dev->rstate = calloc(SOFT_RSTATE_SLOTS, sizeof(*dev->rstate));
    if ((dev->qps == NULL) || (dev->rstate == NULL)) {
        dcx_error("%s: open: out of memory", info->name);
        ret = ENOMEM;
        goto err_free;
    }

    soft_fabric_sweep(dev->uid);
    ret = soft_port_create(dev);
    if (ret != 0) {
        goto err_free;
    }
    soft_wake_open(dev);
    soft_wake_asym_init(dev);
    dev->self = soft_peer_get(dev, dev->pid, dev->inst, dev->token);
    if (dev->self == NULL) {
        dcx_error("%s: open: out of memory", info->name);
        ret = ENOMEM;
        goto err_port;
    }
    ret = soft_helper_start(dev);
    if (ret != 0) {
        goto err_port;
    }
    *dev_p = &dev->super;
    return 0;

err_port:
    soft_peers_free(dev);
    soft_wake_close(dev);
    soft_port_destroy(dev);
err_free:
    pthread_mutex_destroy(&dev->mr_lock);
    free(dev->qps);
    free(dev->rstate);
    free(dev);
    return ret;
}

int dcx_soft_stats(dcx_dev_t *dev_, dcx_soft_stats_t *stats)
{
    soft_dev_t *dev;

    if (!dcx_dev_is_soft(dev_)) {
        dcx_error("%s: stats: not a soft device", dcx_dev_name(dev_));
        return EINVAL;
    }
    dev = soft_dev(dev_);
    soft_lock(&dev->lock);
    *stats               = dev->stats;
    stats->direct_mapped = stats->direct_writes + stats->direct_reads -
                           dev->direct_attached;
    soft_unlock(&dev->lock);
    stats->helper_wakeups = __atomic_load_n(&dev->helper_wakeups,
                                            __ATOMIC_RELAXED);
    stats->futex_wakes += __atomic_load_n(&dev->futex_wakes, __ATOMIC_RELAXED);
    stats->wake_pokes    = __atomic_load_n(&dev->wake_pokes, __ATOMIC_RELAXED);
    stats->helper_naps   = __atomic_load_n(&dev->helper_naps, __ATOMIC_RELAXED);
    stats->helper_passes = __atomic_load_n(&dev->helper_passes,
                                           __ATOMIC_RELAXED);
    stats->lock_waits    = __atomic_load_n(&dev->lock.waits, __ATOMIC_RELAXED);
    return 0;
}
