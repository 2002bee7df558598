/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: open/close, capabilities, PD, MR, SRQ and AH (the backend's
 * knobs and listing are in soft_backend.c, CQs in soft_cq.c, the engine's
 * progress loop in soft_engine.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_direct.h"
#include "soft_tm.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint32_t soft_inst_counter;

/* ------------------------------------------------------------------------
 * PD and MR
 * ------------------------------------------------------------------------ */
static int soft_pd_alloc(dcx_dev_t *dev_, dcx_pd_t **pd_p)
{
    soft_dev_t *dev = soft_dev(dev_);
    dcx_pd_t *pd    = calloc(1, sizeof(*pd));

    if (pd == NULL) {
        dcx_error("%s: pd alloc: out of memory", dev->super.caps.name);
        return ENOMEM;
    }
    pd->dev = dev_;
    soft_lock(&dev->lock);
    dev->num_pds++;
    soft_unlock(&dev->lock);
    *pd_p = pd;
    return 0;
}

static int soft_pd_free(dcx_pd_t *pd)
{
    soft_dev_t *dev = soft_dev(pd->dev);

    soft_lock(&dev->lock);
    dev->num_pds--;
    soft_unlock(&dev->lock);
    free(pd);
    return 0;
}

soft_mr_t *soft_key_lookup(soft_dev_t *dev, uint32_t key)
{
    return soft_key_find(dev, key);
}

soft_mr_t *soft_mr_lookup(soft_dev_t *dev, uint32_t key)
{
    soft_mr_t *mr = soft_key_lookup(dev, key);

    return ((mr != NULL) && (mr->mkey == NULL)) ? mr : NULL;
}

/* The kernel pins the pages of a registration (write-faulting them in when
 * any write access is asked for) and fails with EFAULT if it cannot.  The
 * same verdict without touching the memory: walk /proc/self/maps over
 * [start, end) and require every byte mapped, readable, and writable if
 * 'write'.  Returns 0, or EFAULT after logging one line.  Control path only:
 * one pass over the maps file (a few microseconds per hundred mappings). */
static int soft_mr_check_mapping(const char *name, uintptr_t start,
                                 uintptr_t end, int write)
{
    const char *what = NULL;
    uintptr_t cur    = start;
    char line[256];
    unsigned long lo, hi;
    char perms[8];
    FILE *f;
    int eol = 1;

    f = fopen("/proc/self/maps", "re");
    if (f == NULL) {
        dcx_debug("%s: mr reg: cannot read /proc/self/maps (%s): mapping "
                  "not checked",
                  name, strerror(errno));
        return 0;
    }
    while ((cur < end) && (fgets(line, sizeof(line), f) != NULL)) {
        int start_of_line = eol;

        eol = (strchr(line, '\n') != NULL); /* long paths: many pieces */
        if (!start_of_line ||
            (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) ||
            (hi <= cur)) {
            continue;
        }
        if (lo > cur) {
            break; /* a hole at cur */
        }
        if (perms[0] != 'r') {
            what = "is not readable";
            break;
        }
        if (write && (perms[1] != 'w')) {
            what = "is read-only and write or atomic access was asked for";
            break;
        }
        cur = hi;
    }
    fclose(f);
    if (cur >= end) {
        return 0;
    }
    dcx_error("%s: mr reg 0x%lx/%lu: memory at 0x%lx %s", name,
              (unsigned long)start, (unsigned long)(end - start),
              (unsigned long)cur, (what != NULL) ? what : "is not mapped");
    return EFAULT;
}

/* Gives mr (a plain MR, or the table entry of a strided key) a key in the
 * device's table; sets super.lkey/rkey.  0 or ENOMEM (logged). */
int soft_key_insert(soft_dev_t *dev, soft_mr_t *mr, const char *what)
{
    const char *name = dev->super.caps.name;
    uint32_t idx;

    soft_lock(&dev->lock);
    for (idx = 1; idx < dev->num_mrs; ++idx) {
        if (dev->mrs[idx] == NULL) {
            break;
        }
    }
    if (idx >= dev->num_mrs) {
        uint32_t nsize = dev->num_mrs ? dev->num_mrs * 2 : 64;
        soft_mr_t **tbl, **old;

        if (nsize > (1u << 24)) {
            soft_unlock(&dev->lock);
            dcx_error("%s: %s: too many keys", name, what);
            return ENOMEM;
        }
        /* no realloc: freeing may unmap, and the unmap hook takes mr_lock */
        tbl = calloc(nsize, sizeof(*tbl));
        if (tbl == NULL) {
            soft_unlock(&dev->lock);
            dcx_error("%s: %s: out of memory", name, what);
            return ENOMEM;
        }
        if (dev->num_mrs != 0) {
            memcpy(tbl, dev->mrs, dev->num_mrs * sizeof(*tbl));
        }
        idx = (dev->num_mrs == 0) ? 1 : dev->num_mrs;
        pthread_mutex_lock(&dev->mr_lock);
        old          = dev->mrs;
        dev->mrs     = tbl;
        dev->num_mrs = nsize;
        pthread_mutex_unlock(&dev->mr_lock);
        free(old);
    }
    dev->mr_gen    = (dev->mr_gen + 1) & 0xff;
    mr->super.lkey = (idx << 8) | dev->mr_gen;
    mr->super.rkey = mr->super.lkey;
    pthread_mutex_lock(&dev->mr_lock);
    dev->mrs[idx] = mr;
    if (mr->mkey == NULL) {
        mr->mapped = soft_alloc_holds(dev, mr->start, mr->end);
        if ((dev->mr_hi == 0) || (mr->start < dev->mr_lo)) {
            __atomic_store_n(&dev->mr_lo, mr->start, __ATOMIC_RELEASE);
        }
        if (mr->end > dev->mr_hi) {
            __atomic_store_n(&dev->mr_hi, mr->end, __ATOMIC_RELEASE);
        }
    } else {
        dev->num_mkeys++;
    }
    soft_direct_mr_publish(dev, mr);
    pthread_mutex_unlock(&dev->mr_lock);
    dev->num_mr_used++;
    soft_unlock(&dev->lock);
    return 0;
}

/* Takes mr's key out of the table.  Holding the engine lock, no engine
 * pass (and so no access on behalf of a peer) is in flight: once it
 * returns, nothing reaches the key any more. */
void soft_key_remove(soft_dev_t *dev, soft_mr_t *mr)
{
    soft_lock(&dev->lock);
    pthread_mutex_lock(&dev->mr_lock);
    dev->mrs[mr->super.lkey >> 8] = NULL;
    if (mr->mkey != NULL) {
        dev->num_mkeys--;
    }
    /* initiators copying into it directly finish their chunk first */
    soft_direct_mr_withdraw(dev, mr);
    pthread_mutex_unlock(&dev->mr_lock);
    dev->num_mr_used--;
    soft_unlock(&dev->lock);
}

static int soft_mr_reg(dcx_pd_t *pd, void *addr, size_t length, uint32_t access,
                       dcx_mr_t **mr_p)
{
    const uint32_t all = DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                         DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC;
    soft_dev_t *dev  = soft_dev(pd->dev);
    const char *name = dev->super.caps.name;
    soft_mr_t *mr;

    if (access & ~all) {
        dcx_error("%s: mr reg %p/%zu: unknown access bits 0x%x", name, addr,
                  length, access & ~all);
        return EINVAL;
    }
    if ((access & (DCX_ACCESS_REMOTE_WRITE | DCX_ACCESS_REMOTE_ATOMIC)) &&
        !(access & DCX_ACCESS_LOCAL_WRITE)) {
        dcx_error("%s: mr reg %p/%zu: remote write/atomic needs local write",
                  name, addr, length);
        return EINVAL;
    }
    if ((addr == NULL) && (length != 0)) {
        dcx_error("%s: mr reg: NULL address with length %zu", name, length);
        return EINVAL;
    }
    if ((uintptr_t)addr + length < (uintptr_t)addr) {
        dcx_error("%s: mr reg %p/%zu: range wraps around", name, addr, length);
        return EINVAL;
    }
    if ((length != 0) &&
        (soft_mr_check_mapping(name, (uintptr_t)addr, (uintptr_t)addr + length,
                               !!(access & (DCX_ACCESS_LOCAL_WRITE |
                                            DCX_ACCESS_REMOTE_WRITE |
                                            DCX_ACCESS_REMOTE_ATOMIC))) != 0)) {
        return EFAULT;
    }
    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        dcx_error("%s: mr reg %p/%zu: out of memory", name, addr, length);
        return ENOMEM;
    }

    mr->super.pd     = pd;
    mr->super.addr   = addr;
    mr->super.length = length;
    mr->super.access = access;
    mr->start        = (uint64_t)(uintptr_t)addr;
    mr->end          = mr->start + length;
    if (soft_key_insert(dev, mr, "mr reg") != 0) {
        free(mr);
        return ENOMEM;
    }
    *mr_p = &mr->super;
    return 0;
}

static int soft_mr_dereg(dcx_mr_t *mr_)
{
    soft_mr_t *mr   = (soft_mr_t *)mr_;
    soft_dev_t *dev = soft_dev(mr_->pd->dev);

    soft_key_remove(dev, mr);
    free(mr);
    return 0;
}

/* ------------------------------------------------------------------------
 * SRQ
 * ------------------------------------------------------------------------ */
/* Engine lock held: 1 if the queue has room for one more receive. */
static inline int soft_srq_room(soft_srq_t *srq)
{
    return (srq->tail - srq->head) < srq->super.max_wr;
}

/* Engine lock held, room checked: queues one receive. */
static inline void soft_srq_push(soft_srq_t *srq, uint64_t wr_id,
                                 const dcx_sge_t *sg_list, unsigned num_sge)
{
    soft_rwqe_t *wqe = &srq->q[srq->tpos];

    wqe->wr_id   = wr_id;
    wqe->num_sge = num_sge;
    if (num_sge == 1) {
        wqe->sge[0] = sg_list[0]; /* the transport's one buffer: no call */
    } else {
        memcpy(wqe->sge, sg_list, num_sge * sizeof(*sg_list));
    }
    srq->tpos = (srq->tpos + 1 == srq->size) ? 0 : srq->tpos + 1;
    srq->tail++;
}

static void soft_srq_full(soft_srq_t *srq)
{
    dcx_debug("%s: srq %p post recv: full (%u receives)",
              srq->dev->super.caps.name, (void *)srq, srq->super.max_wr);
}

static int soft_srq_post_recv(dcx_srq_t *srq_, uint64_t wr_id,
                              const dcx_sge_t *sg_list, unsigned num_sge)
{
    soft_srq_t *srq = (soft_srq_t *)srq_;
    soft_dev_t *dev = srq->dev;

    if (num_sge > srq->super.max_sge) {
        dcx_error("%s: srq %p post recv: %u sge > max %u", dev->super.caps.name,
                  (void *)srq, num_sge, srq->super.max_sge);
        return EINVAL;
    }
    soft_lock(&dev->lock);
    if (!soft_srq_room(srq)) {
        soft_unlock(&dev->lock);
        soft_srq_full(srq);
        return ENOMEM;
    }
    soft_srq_push(srq, wr_id, sg_list, num_sge);
    soft_unlock(&dev->lock);
    return 0;
}

/* A batch of single-buffer receives in one lock round: a receive queue
 * refilled after a burst costs one lock round, not one per buffer. */
static int soft_srq_post_recv_list(dcx_srq_t *srq_, const dcx_recv_t *list,
                                   unsigned count, unsigned *posted_p)
{
    soft_srq_t *srq = (soft_srq_t *)srq_;
    soft_rwqe_t *wqe;
    uint32_t tpos, room;
    unsigned i, n;

    soft_lock(&srq->dev->lock);
    /* the queue's position in locals: the stores into its entries do not
     * make the compiler read it again per receive */
    room = srq->super.max_wr - (srq->tail - srq->head);
    n    = (count < room) ? count : room;
    tpos = srq->tpos;
    for (i = 0; i < n; ++i) {
        wqe          = &srq->q[tpos];
        wqe->wr_id   = list[i].wr_id;
        wqe->num_sge = 1;
        wqe->sge[0]  = list[i].sge;
        tpos         = (tpos + 1 == srq->size) ? 0 : tpos + 1;
    }
    srq->tpos = tpos;
    srq->tail += n;
    soft_unlock(&srq->dev->lock);
    *posted_p = n;
    if (n < count) {
        soft_srq_full(srq);
        return ENOMEM;
    }
    return 0;
}

static int soft_srq_create(dcx_pd_t *pd, const dcx_srq_attr_t *attr,
                           dcx_srq_t **srq_p)
{
    soft_dev_t *dev  = soft_dev(pd->dev);
    const char *name = dev->super.caps.name;
    soft_srq_t *srq;

    if ((attr->type != DCX_SRQ_BASIC) && (attr->type != DCX_SRQ_TM)) {
        dcx_error("%s: srq create: type %d not supported", name,
                  (int)attr->type);
        return EINVAL;
    }
    if ((attr->max_wr == 0) || (attr->max_wr > dev->limits.max_srq_wr) ||
        (attr->max_sge > dev->limits.max_sge) || (attr->cq == NULL)) {
        dcx_error("%s: srq create: max_wr %u (1..%u), max_sge %u (<= %u), "
                  "cq %p: invalid",
                  name, attr->max_wr, dev->limits.max_srq_wr, attr->max_sge,
                  dev->limits.max_sge, (void *)attr->cq);
        return EINVAL;
    }
    srq = calloc(1, sizeof(*srq));
    if (srq != NULL) {
        srq->q = calloc(attr->max_wr, sizeof(*srq->q));
    }
    if ((srq == NULL) || (srq->q == NULL)) {
        free(srq);
        dcx_error("%s: srq create: out of memory", name);
        return ENOMEM;
    }
    srq->super.dev            = pd->dev;
    srq->super.pd             = pd;
    srq->super.max_wr         = attr->max_wr;
    srq->super.max_sge        = attr->max_sge ? attr->max_sge : 1;
    srq->super.post_recv      = soft_srq_post_recv;
    srq->super.post_recv_list = soft_srq_post_recv_list;
    srq->super.tm_post        = dcx_srq_tm_post_none;
    srq->dev                  = dev;
    srq->cq                   = (soft_cq_t *)attr->cq;
    srq->size                 = attr->max_wr;
    if (attr->type == DCX_SRQ_TM) {
        int ret = soft_tm_create(srq, attr);

        if (ret != 0) {
            free(srq->q);
            free(srq);
            return ret;
        }
    }
    soft_lock(&dev->lock);
    srq->cq->refs++;
    dev->num_objs++;
    soft_unlock(&dev->lock);
    *srq_p = &srq->super;
    return 0;
}

static int soft_srq_destroy(dcx_srq_t *srq_)
{
    soft_srq_t *srq = (soft_srq_t *)srq_;
    soft_dev_t *dev = srq->dev;

    soft_lock(&dev->lock);
    if (srq->refs != 0) {
        soft_unlock(&dev->lock);
        dcx_error("%s: srq %p destroy: still used by %d DCT",
                  dev->super.caps.name, (void *)srq, srq->refs);
        return EBUSY;
    }
    srq->cq->refs--;
    dev->num_objs--;
    soft_unlock(&dev->lock);
    if (srq->tm != NULL) {
        soft_tm_destroy(srq);
    }
    free(srq->q);
    free(srq);
    return 0;
}

/* ------------------------------------------------------------------------
 * AH
 * ------------------------------------------------------------------------ */
static int soft_addr_check_op(dcx_dev_t *dev_, const void *addr, size_t len,
                              char *why, size_t why_len)
{
    return soft_addr_check(soft_dev(dev_), addr, len, NULL, why, why_len);
}

static int soft_ah_create(dcx_pd_t *pd, const void *addr, size_t len,
                          dcx_ah_t **ah_p)
{
    soft_dev_t *dev = soft_dev(pd->dev);
    char why[128];
    soft_addr_t a;
    soft_ah_t *ah;

    if (soft_addr_check(dev, addr, len, &a, why, sizeof(why)) != 0) {
        dcx_error("%s: ah create: %s", dev->super.caps.name, why);
        return EINVAL;
    }
    ah = calloc(1, sizeof(*ah));
    if (ah == NULL) {
        dcx_error("%s: ah create: out of memory", dev->super.caps.name);
        return ENOMEM;
    }
    soft_lock(&dev->lock);
    ah->peer = soft_peer_get(dev, a.pid, a.inst, a.token);
    if (ah->peer != NULL) {
        dev->num_objs++;
    }
    soft_unlock(&dev->lock);
    if (ah->peer == NULL) {
        free(ah);
        dcx_error("%s: ah create: out of memory", dev->super.caps.name);
        return ENOMEM;
    }
    ah->super.pd = pd;
    *ah_p        = &ah->super;
    return 0;
}

static int soft_ah_destroy(dcx_ah_t *ah)
{
    soft_dev_t *dev = soft_dev(ah->pd->dev);

    soft_lock(&dev->lock);
    dev->num_objs--;
    soft_unlock(&dev->lock);
    free(ah);
    return 0;
}

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

static void soft_close(dcx_dev_t *dev_)
{
    soft_dev_t *dev = soft_dev(dev_);

    soft_helper_stop(dev);
    if (dev->num_objs || dev->num_pds || dev->num_mr_used) {
        dcx_warn("%s: closed with %d objects, %d PDs, %d MRs still open",
                 dev->super.caps.name, dev->num_objs, dev->num_pds,
                 dev->num_mr_used);
    }
    soft_dmap_cleanup(dev); /* peers' allocations we mapped */
    soft_alloc_cleanup(dev);
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

/* dcx_dev_traffic: the counters a run with UCX_LOG_LEVEL=info shows per
 * device, to tell that its traffic really crossed the device */
static int soft_dev_traffic(dcx_dev_t *dev, char *buf, size_t len)
{
    dcx_soft_stats_t st;
    int ret;

    ret = dcx_soft_stats(dev, &st);
    if (ret != 0) {
        return ret;
    }
    snprintf(buf, len,
             "tx %" PRIu64 " packets %" PRIu64 " bytes, rx %" PRIu64
             " packets %" PRIu64 " bytes, %" PRIu64 " retransmits, %" PRIu64
             " rnr naks, %" PRIu64 " remote access errors; direct %" PRIu64
             " writes %" PRIu64 " reads (%" PRIu64 " through "
             "mappings)",
             st.tx_packets, st.tx_bytes, st.rx_packets, st.rx_bytes,
             st.retransmits, st.rnr_naks_sent, st.remote_access_errors,
             st.direct_writes, st.direct_reads, st.direct_mapped);
    return 0;
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
    .comp_channel_create    = soft_channel_create,
    .comp_channel_destroy   = soft_channel_destroy,
    .cq_create_ch           = soft_cq_create_ch,
    .cq_req_notify          = soft_cq_req_notify,
    .comp_channel_get_event = soft_channel_get_event,
    .mem_alloc              = soft_alloc_mem,
    .mem_free               = soft_alloc_free,
    .traffic                = soft_dev_traffic};

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
                  DCX_CAP_MEM_ALLOC | (l->tm_off ? 0 : DCX_CAP_TM);
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
    /* Measured with gtest_soft --gtest_also_run_disabled_tests
     * --gtest_filter='*perf*' on a 2-core VM: ~1 us one way (8-byte send
     * ping-pong, both sides polling, idle machine), 16 GB/s cache-hot
     * loopback writes; cross-process cache-cold copies are slower, hence the
     * lower bandwidth figure. */
    caps->latency_ns       = 1000.0;
    caps->bandwidth_Bps    = 6.0e9;
    caps->overhead_ns      = 150.0;
    /* a registration records a range in the device's table */
    caps->reg_overhead_ns  = 1000.0;
    caps->reg_growth_ns    = 0.0;
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
    *stats = dev->stats;
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
