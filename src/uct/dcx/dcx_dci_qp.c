/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the device queue pair behind a DCI of the pool.  Under
 * every policy but streams it is the DCI's own; under streams
 * (DCX_CAP_DCI_STREAMS) every data DCI of the pool is one stream channel
 * of a single shared queue pair, created with the first of them and
 * destroyed with the last (iface->pool.stream_qp, stream_refs).  Here: the
 * attributes the data DCIs are created with, their creation and
 * destruction, and the restart of a DCI after an error completion (its
 * stream only, when the shared queue pair is still up).  The pool
 * (dcx_dci.c), its completions (dcx_dci_comp.c) and the streams policy
 * (dcx_dci_streams.c) use it; it calls none of them.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <string.h>

/* (uct_dcx_iface_check_config refused a device without DCI streams and a
 * NUM_DCI_STREAMS above its streams before the pool is set up) */
void uct_dcx_streams_attr(uct_dcx_iface_t *iface,
                          const uct_dcx_iface_config_t *config)
{
    const dcx_dev_caps_t *caps = iface->caps;
    dcx_qp_attr_t *attr        = &iface->pool.attr;
    unsigned log;

    if (config->policy != UCT_DCX_POLICY_STREAMS) {
        return;
    }
    for (log = 0; (1u << log) < config->num_dci_streams; ++log) {
    }
    /* Every stream may be in error at once without taking the DCI down
     * (each is reset as soon as its error is seen): a limit above the
     * streams where the device allows it.  A dead peer whose endpoints
     * are on every stream would otherwise fail the whole DCI, and the
     * work in flight on the other streams with it. */
    attr->dci_streams        = 1;
    attr->log_num_concurrent = (uint8_t)log;
    attr->log_num_errored    = (uint8_t)ucs_min(log + 1,
                                                caps->dci_errored_log_max);
}

int uct_dcx_dci_qp_create(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
    int ret;

    if (!iface->pool.attr.dci_streams) {
        return dcx_qp_create(iface->pd, &iface->pool.attr, &dci->qp);
    }
    if (iface->pool.stream_qp == NULL) {
        ret = dcx_qp_create(iface->pd, &iface->pool.attr,
                            &iface->pool.stream_qp);
        if (ret != 0) {
            iface->pool.stream_qp = NULL;
            return ret;
        }
        ucs_debug("dcx: %s: DCI 0x%x created with %u streams",
                  dcx_dev_name(iface->dev), iface->pool.stream_qp->qp_num,
                  iface->pool.stream_qp->num_streams);
    }
    dci->qp = iface->pool.stream_qp;
    iface->pool.stream_refs++;
    return 0;
}

void uct_dcx_dci_qp_destroy(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci)
{
    if ((iface->pool.stream_qp == NULL) || (dci->qp != iface->pool.stream_qp)) {
        dcx_qp_destroy(dci->qp);
        return;
    }
    ucs_assert(iface->pool.stream_refs > 0);
    if (--iface->pool.stream_refs == 0) {
        dcx_qp_destroy(iface->pool.stream_qp);
        iface->pool.stream_qp = NULL;
    }
}

/* The whole DCI went to ERR (not one stream): it is recovered, and the
 * work other streams had in flight, whose completions the recovery
 * discards, ends: its operations go to cancelled (completed by the
 * caller, once its own bookkeeping is done) */
static int uct_dcx_streams_recover_all(uct_dcx_iface_t *iface,
                                       uct_dcx_dci_t *dci,
                                       ucs_queue_head_t *cancelled)
{
    uct_dcx_dci_t *other;
    unsigned i, lost = 0;
    int ret;

    ret = dcx_qp_recover(dci->qp);
    for (i = 0; i < iface->pool.num; ++i) {
        other = &iface->pool.dcis[i];
        if ((other == dci) || (other->qp != dci->qp) ||
            (other->sn == other->done_sn)) {
            continue;
        }
        lost += (unsigned)(other->sn - other->done_sn);
        ucs_queue_splice(cancelled, &other->ops);
        other->done_sn    = other->sn;
        other->sig_sn     = other->sn;
        other->unsig      = 0;
        other->next_flags = 0;
        other->avail      = (ret == 0) ? iface->pool.sq_len : 0;
        other->flags &= ~UCT_DCX_DCI_FLAG_ERR;
    }
    ucs_error("dcx: %s: DCI 0x%x with streams failed as a whole (more "
              "streams in error at once than it tolerates); %u work requests "
              "of its other streams were cancelled",
              dcx_dev_name(iface->dev), dci->qp->qp_num, lost);
    return ret;
}

int uct_dcx_dci_restart(uct_dcx_iface_t *iface, uct_dcx_dci_t *dci,
                        ucs_queue_head_t *cancelled)
{
    int ret;

    if (!uct_dcx_dci_is_stream(iface, dci)) {
        return dcx_qp_recover(dci->qp);
    }
    if (dci->qp->state != DCX_QPS_RTS) {
        return uct_dcx_streams_recover_all(iface, dci, cancelled);
    }
    ret = dcx_qp_stream_reset(dci->qp, dci->index);
    if (ret == 0) {
        iface->cnt->dci.stream_resets++;
        ucs_debug("dcx: %s: DCI 0x%x stream %u reset after an error",
                  dcx_dev_name(iface->dev), dci->qp->qp_num, dci->index);
    }
    return ret;
}
