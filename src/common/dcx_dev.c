/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx device layer: dispatch to the device's backend, logging, and the
 * tag-matching wire headers (listing and opening: dcx_backend.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx_dev.h"

#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *dcx_log_level_names[] = {[DCX_LOG_ERROR] = "error",
                                            [DCX_LOG_WARN]  = "warn",
                                            [DCX_LOG_INFO]  = "info",
                                            [DCX_LOG_DEBUG] = "debug",
                                            [DCX_LOG_TRACE] = "trace"};

static void dcx_log_stderr(dcx_log_level_t level, const char *file, int line,
                           const char *msg)
{
    const char *base = strrchr(file, '/');

    fprintf(stderr, "[dcx %s] %s:%d %s\n", dcx_log_level_names[level],
            base ? base + 1 : file, line, msg);
}

static dcx_log_handler_t dcx_log_handler = dcx_log_stderr;
dcx_log_level_t dcx_log_max_level        = DCX_LOG_WARN;
/* nonzero while this thread is in a call whose failure is logged at debug
 * level only (dcx_mr_reg_quiet) */
static __thread unsigned dcx_log_quiet;

__attribute__((constructor)) static void dcx_log_init(void)
{
    const char *env = getenv("DCX_LOG_LEVEL");
    unsigned i;

    if (env == NULL) {
        return;
    }
    for (i = 0; i <= DCX_LOG_TRACE; ++i) {
        if (!strcasecmp(env, dcx_log_level_names[i])) {
            dcx_log_max_level = (dcx_log_level_t)i;
            return;
        }
    }
    fprintf(stderr,
            "[dcx warn] DCX_LOG_LEVEL=%s is not one of "
            "error, warn, info, debug, trace; keeping warn\n",
            env);
}

void dcx_log_set_handler(dcx_log_handler_t handler, dcx_log_level_t max_level)
{
    dcx_log_handler   = (handler != NULL) ? handler : dcx_log_stderr;
    dcx_log_max_level = max_level;
}

void dcx_log_impl(dcx_log_level_t level, const char *file, int line,
                  const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    if (dcx_log_quiet && (level < DCX_LOG_DEBUG)) {
        /* inside a call whose caller reports its failure (dcx_mr_reg_quiet) */
        level = DCX_LOG_DEBUG;
        if (level > dcx_log_max_level) {
            return;
        }
    }

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    dcx_log_handler(level, file, line, msg);
}

const char *dcx_wc_status_str(dcx_wc_status_t status)
{
    static const char *names[DCX_WC_STATUS_LAST] = {
        [DCX_WC_SUCCESS]            = "success",
        [DCX_WC_LOC_LEN_ERR]        = "local length error",
        [DCX_WC_LOC_QP_OP_ERR]      = "local QP operation error",
        [DCX_WC_LOC_PROT_ERR]       = "local protection error",
        [DCX_WC_WR_FLUSH_ERR]       = "work request flushed",
        [DCX_WC_REM_INV_REQ_ERR]    = "remote invalid request",
        [DCX_WC_REM_ACCESS_ERR]     = "remote access error",
        [DCX_WC_REM_OP_ERR]         = "remote operation error",
        [DCX_WC_RETRY_EXC_ERR]      = "transport retry count exceeded",
        [DCX_WC_RNR_RETRY_EXC_ERR]  = "RNR retry count exceeded",
        [DCX_WC_GENERAL_ERR]        = "general error",
        [DCX_WC_TM_ERR]             = "tag matching error",
        [DCX_WC_TM_RNDV_INCOMPLETE] = "rendezvous incomplete"};

    return (status < DCX_WC_STATUS_LAST) ? names[status] : "unknown status";
}

int dcx_srq_tm_post_none(dcx_srq_t *srq, dcx_tm_op_t *op)
{
    dcx_error("%s: srq %p: tag-list operation %u on an SRQ that is not a "
              "tag-matching SRQ",
              srq->dev->caps.name, (void *)srq, op->opcode);
    return EINVAL;
}

/* ------------------------------------------------------------------------
 * Tag-matching wire headers: big-endian, at any alignment.
 * ------------------------------------------------------------------------ */
_Static_assert(sizeof(dcx_tmh_t) == DCX_TM_TMH_LEN, "TMH is 16 bytes");
_Static_assert(sizeof(dcx_rvh_t) == 16, "RVH is 16 bytes");
_Static_assert(sizeof(dcx_ravh_t) == 16, "RAVH is 16 bytes");
_Static_assert(offsetof(dcx_tmh_t, app_ctx) == 4, "TMH app_ctx at 4");
_Static_assert(offsetof(dcx_tmh_t, tag) == 8, "TMH tag at 8");
_Static_assert(offsetof(dcx_rvh_t, rkey) == 8, "RVH rkey at 8");
_Static_assert(offsetof(dcx_rvh_t, len) == 12, "RVH len at 12");
_Static_assert(offsetof(dcx_ravh_t, dc_key) == 8, "RAVH key at 8");

void dcx_rvh_pack(void *buf, uint64_t va, uint32_t rkey, uint32_t len)
{
    dcx_rvh_t h;

    h.va   = htobe64(va);
    h.rkey = htobe32(rkey);
    h.len  = htobe32(len);
    memcpy(buf, &h, sizeof(h));
}

void dcx_rvh_unpack(const void *buf, uint64_t *va_p, uint32_t *rkey_p,
                    uint32_t *len_p)
{
    dcx_rvh_t h;

    memcpy(&h, buf, sizeof(h));
    *va_p   = be64toh(h.va);
    *rkey_p = be32toh(h.rkey);
    *len_p  = be32toh(h.len);
}

void dcx_ravh_pack(void *buf, uint32_t dctn, uint64_t dc_key)
{
    dcx_ravh_t h;

    h.sl_dct   = htobe32(dctn);
    h.reserved = 0;
    h.dc_key   = htobe64(dc_key);
    memcpy(buf, &h, sizeof(h));
}

void dcx_ravh_unpack(const void *buf, uint32_t *dctn_p, uint64_t *dc_key_p)
{
    dcx_ravh_t h;

    memcpy(&h, buf, sizeof(h));
    *dctn_p   = be32toh(h.sl_dct);
    *dc_key_p = be64toh(h.dc_key);
}

void dcx_dev_close(dcx_dev_t *dev)
{
    dev->ops->close(dev);
}

const dcx_dev_caps_t *dcx_dev_caps(const dcx_dev_t *dev)
{
    return &dev->caps;
}

const char *dcx_dev_name(const dcx_dev_t *dev)
{
    return dev->caps.name;
}

const dcx_backend_t *dcx_dev_backend(const dcx_dev_t *dev)
{
    return dev->backend;
}

int dcx_dev_port_addr(dcx_dev_t *dev, void *addr, size_t *len_p)
{
    return dev->ops->port_addr(dev, addr, len_p);
}

int dcx_dev_addr_check(dcx_dev_t *dev, const void *addr, size_t len, char *why,
                       size_t why_len)
{
    return dev->ops->addr_check(dev, addr, len, why, why_len);
}

void dcx_dev_progress(dcx_dev_t *dev)
{
    dev->ops->progress(dev);
}

int dcx_pd_alloc(dcx_dev_t *dev, dcx_pd_t **pd_p)
{
    return dev->ops->pd_alloc(dev, pd_p);
}

int dcx_pd_free(dcx_pd_t *pd)
{
    return pd->dev->ops->pd_free(pd);
}

int dcx_mr_reg(dcx_pd_t *pd, void *addr, size_t length, uint32_t access,
               dcx_mr_t **mr_p)
{
    return pd->dev->ops->mr_reg(pd, addr, length, access, mr_p);
}

int dcx_mr_reg_quiet(dcx_pd_t *pd, void *addr, size_t length, uint32_t access,
                     dcx_mr_t **mr_p)
{
    int ret;

    dcx_log_quiet++;
    ret = dcx_mr_reg(pd, addr, length, access, mr_p);
    dcx_log_quiet--;
    return ret;
}

int dcx_mr_dereg(dcx_mr_t *mr)
{
    return mr->pd->dev->ops->mr_dereg(mr);
}

int dcx_mkey_create(dcx_pd_t *pd, uint32_t max_entries, dcx_mkey_t **mkey_p)
{
    dcx_dev_t *dev = pd->dev;

    if (dev->ops->mkey_create == NULL) {
        dcx_error("%s: mkey create: device has no strided mkeys",
                  dev->caps.name);
        return EOPNOTSUPP;
    }
    /* A backend whose devices may lack them (no DCX_CAP_MKEY_STRIDE)
     * refuses with EOPNOTSUPP and names what the device is missing. */
    return dev->ops->mkey_create(pd, max_entries, mkey_p);
}

int dcx_mkey_destroy(dcx_mkey_t *mkey)
{
    return mkey->pd->dev->ops->mkey_destroy(mkey);
}

void dcx_dev_mem_unmapped(dcx_dev_t *dev, const void *addr, size_t len)
{
    dev->ops->mem_unmapped(dev, addr, len);
}

void dcx_dev_unmaps_reported(dcx_dev_t *dev)
{
    dev->ops->unmaps_reported(dev);
}

int dcx_cq_create(dcx_dev_t *dev, uint32_t cqe, dcx_cq_t **cq_p)
{
    return dev->ops->cq_create(dev, cqe, cq_p);
}

int dcx_cq_destroy(dcx_cq_t *cq)
{
    return cq->dev->ops->cq_destroy(cq);
}

static int dcx_dev_no_channels(const dcx_dev_t *dev, const char *what)
{
    dcx_error("%s: %s: the device has no completion channels", dev->caps.name,
              what);
    return EOPNOTSUPP;
}

int dcx_comp_channel_create(dcx_dev_t *dev, dcx_comp_channel_t **ch_p)
{
    if (dev->ops->comp_channel_create == NULL) {
        return dcx_dev_no_channels(dev, "comp channel create");
    }
    return dev->ops->comp_channel_create(dev, ch_p);
}

int dcx_comp_channel_destroy(dcx_comp_channel_t *ch)
{
    return ch->dev->ops->comp_channel_destroy(ch);
}

int dcx_cq_create_ch(dcx_dev_t *dev, uint32_t cqe, dcx_comp_channel_t *ch,
                     dcx_cq_t **cq_p)
{
    if (ch == NULL) {
        return dcx_cq_create(dev, cqe, cq_p);
    }
    if (ch->dev != dev) {
        dcx_error("%s: cq create: the channel belongs to device %s",
                  dev->caps.name, ch->dev->caps.name);
        return EINVAL;
    }
    return dev->ops->cq_create_ch(dev, cqe, ch, cq_p);
}

int dcx_cq_req_notify(dcx_cq_t *cq)
{
    if (cq->dev->ops->cq_req_notify == NULL) {
        return dcx_dev_no_channels(cq->dev, "cq arm");
    }
    return cq->dev->ops->cq_req_notify(cq);
}

int dcx_comp_channel_get_event(dcx_comp_channel_t *ch, dcx_cq_t **cq_p)
{
    return ch->dev->ops->comp_channel_get_event(ch, cq_p);
}

int dcx_srq_create(dcx_pd_t *pd, const dcx_srq_attr_t *attr, dcx_srq_t **srq_p)
{
    if (attr->flags & ~(uint32_t)DCX_SRQ_F_IN_PLACE) {
        dcx_error("%s: srq create: unknown flags 0x%x", pd->dev->caps.name,
                  attr->flags);
        return EINVAL;
    }
    if ((attr->flags & DCX_SRQ_F_IN_PLACE) &&
        !(pd->dev->caps.flags & DCX_CAP_RECV_IN_PLACE)) {
        dcx_error("%s: srq create: receives in place asked of a device "
                  "that has none",
                  pd->dev->caps.name);
        return EOPNOTSUPP;
    }
    return pd->dev->ops->srq_create(pd, attr, srq_p);
}

int dcx_srq_destroy(dcx_srq_t *srq)
{
    return srq->dev->ops->srq_destroy(srq);
}

int dcx_ah_create(dcx_pd_t *pd, const void *addr, size_t len, dcx_ah_t **ah_p)
{
    return pd->dev->ops->ah_create(pd, addr, len, ah_p);
}

int dcx_ah_destroy(dcx_ah_t *ah)
{
    return ah->pd->dev->ops->ah_destroy(ah);
}

int dcx_qp_create(dcx_pd_t *pd, const dcx_qp_attr_t *attr, dcx_qp_t **qp_p)
{
    const dcx_dev_caps_t *caps = &pd->dev->caps;

    if ((attr->type == DCX_QPT_DCI) && attr->dci_streams) {
        if (!(caps->flags & DCX_CAP_DCI_STREAMS) ||
            (pd->dev->ops->qp_stream_reset == NULL)) {
            dcx_error("%s: dci create: the device has no DCI streams",
                      caps->name);
            return EOPNOTSUPP;
        }
        if ((attr->log_num_concurrent > caps->dci_streams_log_max) ||
            (attr->log_num_errored > caps->dci_errored_log_max)) {
            dcx_error("%s: dci create: 2^%u streams, 2^%u errored asked, "
                      "the device has at most 2^%u and 2^%u",
                      caps->name, attr->log_num_concurrent,
                      attr->log_num_errored, caps->dci_streams_log_max,
                      caps->dci_errored_log_max);
            return EINVAL;
        }
    }
    return pd->dev->ops->qp_create(pd, attr, qp_p);
}

int dcx_qp_destroy(dcx_qp_t *qp)
{
    return qp->dev->ops->qp_destroy(qp);
}

int dcx_qp_set_error(dcx_qp_t *qp)
{
    return qp->dev->ops->qp_set_error(qp);
}

int dcx_qp_recover(dcx_qp_t *qp)
{
    return qp->dev->ops->qp_recover(qp);
}

int dcx_qp_stream_reset(dcx_qp_t *qp, uint16_t stream_id)
{
    if (qp->dev->ops->qp_stream_reset == NULL) {
        dcx_error("%s: qp 0x%x stream %u reset: the device has no DCI "
                  "streams",
                  qp->dev->caps.name, qp->qp_num, stream_id);
        return EOPNOTSUPP;
    }
    return qp->dev->ops->qp_stream_reset(qp, stream_id);
}
