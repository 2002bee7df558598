/*
 * Soft device engine: the progress loop, and what lets a poll with nothing
 * to do skip it.
 *
 * An engine pass serves the response ring, then the request ring, then the
 * requester's timers and transmission of the DCIs with work outstanding
 * (the "active" list: a DCI joins it when a WQE is posted and leaves it
 * when a pass finds nothing outstanding), then device rendezvous.  At the
 * end of a pass 'engine_idle' records that nothing but new packets or new
 * posts can give the engine work.
 *
 * A poll (CQ poll, device progress) first looks without the lock: an empty
 * CQ, an idle engine and both rings empty (tail == head) mean there is
 * nothing to do; it stamps the port (the poll stamp peers and the helper
 * read) and returns.  No clock read, no lock, no shared write but the stamp.
 * Otherwise it takes the lock; the application's passes are counted, and a
 * CQ polled after a pass it did not see takes that pass's completions
 * without running another one, so the transport's progress (receive CQ,
 * then send CQ) costs one pass, not two.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft_tm.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Device rendezvous still waiting for a DCI, or completions of its DCIs
 * not taken yet. */
static int soft_engine_tm_pending(soft_dev_t *dev)
{
    soft_tm_t *tm;
    soft_cq_t *cq;

    for (tm = dev->tms; tm != NULL; tm = tm->next) {
        cq = (soft_cq_t *)tm->rcq;
        if ((tm->wait_head != SOFT_TM_NONE) || (cq->head != cq->tail)) {
            return 1;
        }
    }
    return 0;
}

void soft_engine_activate(soft_qp_t *qp)
{
    soft_dev_t *dev = qp->dev;

    __atomic_store_n(&dev->engine_idle, 0, __ATOMIC_RELAXED);
    if (!qp->active) {
        qp->active      = 1;
        qp->next_active = dev->active_dcis;
        dev->active_dcis = qp;
    }
}

void soft_engine_deactivate(soft_qp_t *qp)
{
    soft_qp_t **pp;

    if (!qp->active) {
        return;
    }
    for (pp = &qp->dev->active_dcis; *pp != NULL; pp = &(*pp)->next_active) {
        if (*pp == qp) {
            *pp = qp->next_active;
            break;
        }
    }
    qp->active = 0;
}

uint64_t soft_engine_progress(soft_dev_t *dev, int from_helper)
{
    soft_port_hdr_t *hdr = dev->hdr;
    uint64_t now         = soft_now_ns();
    soft_pkt_t *pkt;
    void *payload;
    unsigned n;

    dev->now = now;
    /* a long pass (large READ bursts) must not look like an absent
     * application to requesters deciding whether to prod */
    __atomic_store_n(&hdr->in_engine, 1, __ATOMIC_RELAXED);
    if (!dev->killed) {
        for (n = 0; n < SOFT_PROGRESS_BUDGET; ++n) {
            pkt = soft_ring_peek(hdr, &hdr->resp, &payload);
            if (pkt == NULL) {
                if ((__atomic_load_n(&hdr->resp.tail, __ATOMIC_ACQUIRE) !=
                     hdr->resp.head) &&
                    soft_ring_unstick(hdr, &hdr->resp, &dev->resp_stall,
                                      now, dev->super.caps.name)) {
                    continue;
                }
                break;
            }
            dev->stats.rx_packets++;
            dev->stats.rx_bytes += pkt->len;
            if (from_helper) {
                dev->stats.helper_packets++;
            }
            soft_comp_packet(dev, pkt, payload);
            soft_ring_pop(hdr, &hdr->resp);
        }
        for (n = 0; n < SOFT_PROGRESS_BUDGET; ++n) {
            pkt = soft_ring_peek(hdr, &hdr->req, &payload);
            if (pkt == NULL) {
                if ((__atomic_load_n(&hdr->req.tail, __ATOMIC_ACQUIRE) !=
                     hdr->req.head) &&
                    soft_ring_unstick(hdr, &hdr->req, &dev->req_stall, now,
                                      dev->super.caps.name)) {
                    continue;
                }
                break;
            }
            if (pkt->deliver_ns > now) {
                break;   /* delayed link: head of line waits */
            }
            dev->stats.rx_packets++;
            dev->stats.rx_bytes += pkt->len;
            if (from_helper) {
                dev->stats.helper_packets++;
            }
            soft_resp_packet(dev, pkt, payload);
            soft_ring_pop(hdr, &hdr->req);
        }
    }
    soft_req_timers(dev, now);
    soft_tm_progress(dev);
    __atomic_store_n(&dev->engine_idle,
                     (dev->active_dcis == NULL) &&
                     !soft_engine_tm_pending(dev), __ATOMIC_RELAXED);
    __atomic_store_n(&hdr->in_engine, 0, __ATOMIC_RELEASE);
    return now;
}

/* Packets queued in either ring (claimed slots count too). */
int soft_engine_rings_pending(soft_dev_t *dev)
{
    soft_port_hdr_t *hdr = dev->hdr;

    return !dev->killed &&
           ((__atomic_load_n(&hdr->req.tail, __ATOMIC_ACQUIRE) !=
             hdr->req.head) ||
            (__atomic_load_n(&hdr->resp.tail, __ATOMIC_ACQUIRE) !=
             hdr->resp.head));
}

/* Work the helper must keep an eye on. */
int soft_engine_busy(soft_dev_t *dev)
{
    soft_qp_t *qp;

    /* claimed slots count too: a dead claimer must be skipped in time */
    if (soft_engine_rings_pending(dev)) {
        return 1;
    }
    /* every DCI with work outstanding is on the active list */
    for (qp = dev->active_dcis; qp != NULL; qp = qp->next_active) {
        if (qp->sq_comp != qp->sq_head) {
            return 1;
        }
    }
    return 0;
}

/* An engine pass of the application (engine lock held). */
void soft_engine_progress_app(soft_dev_t *dev)
{
    soft_engine_progress(dev, 0);
    dev->app_passes++;
    soft_engine_stamp(dev);
}

/* A CQ poll under the engine lock: one application pass, unless one ran
 * since this CQ's last poll (then its completions are already queued). */
void soft_engine_poll_pass(soft_dev_t *dev, soft_cq_t *cq)
{
    if (cq->passes_seen == dev->app_passes) {
        soft_engine_progress_app(dev);
    } else {
        soft_engine_stamp(dev);
    }
    cq->passes_seen = dev->app_passes;
}

void soft_dev_progress(dcx_dev_t *dev_)
{
    soft_dev_t *dev = soft_dev(dev_);

    if (soft_engine_poll_idle(dev, NULL)) {
        return;
    }
    soft_lock(&dev->lock);
    soft_engine_progress_app(dev);
    soft_unlock(&dev->lock);
}

/* The engine lock's contended side (soft.h): spin briefly, as the holder is
 * usually an engine pass that ends within microseconds, then sleep on the
 * word, marked 2 so that the holder's release wakes us. */
void soft_lock_wait(soft_lock_t *l)
{
    unsigned spins;

    __atomic_fetch_add(&l->waits, 1, __ATOMIC_RELAXED);
    for (spins = 0; spins < 100; ++spins) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
        if ((__atomic_load_n(&l->v, __ATOMIC_RELAXED) == 0) &&
            soft_trylock(l)) {
            return;
        }
    }
    while (__atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE) != 0) {
        syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
    }
}

void soft_lock_wake(soft_lock_t *l)
{
    syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
