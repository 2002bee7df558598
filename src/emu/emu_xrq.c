/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: an XRQ, the tag-matching SRQ of CREATE_XRQ
 * (emu_raw.h): the slots of its tag list, which software names entries
 * by, each holding its soft entry and the count of APPENDs into it.  It is
 * made and freed with its SRQ; the list operations of emu_raw_tm.c fill
 * and take its slots, and the completions the raw CQ writes about an entry
 * (emu_raw_cq.c) find it by the SRQ's number and let the slot go.
 */
#include "emu/emu_devx.h"
#include "emu/emu_raw.h"

#include <errno.h>
#include <stdlib.h>

int emu_xrq_init(emu_srq_t *srq, emu_cq_t *cq, uint32_t nslots, bool dc)
{
    emu_xrq_t *xrq = calloc(1, sizeof(*xrq));
    uint32_t i;

    if (xrq != NULL) {
        xrq->handle = malloc(nslots * sizeof(*xrq->handle));
        xrq->gen    = calloc(nslots, sizeof(*xrq->gen));
    }
    if ((xrq == NULL) || (xrq->handle == NULL) || (xrq->gen == NULL)) {
        if (xrq != NULL) {
            free(xrq->handle);
            free(xrq->gen);
            free(xrq);
        }
        return ENOMEM;
    }
    for (i = 0; i < nslots; ++i) {
        xrq->handle[i] = EMU_XRQ_FREE;
    }
    xrq->srq    = srq;
    xrq->cq     = cq;
    xrq->nslots = nslots;
    xrq->dc     = dc;
    __atomic_add_fetch(&cq->refs, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&emu_raw_lock);
    srq->xrq = xrq;
    pthread_mutex_unlock(&emu_raw_lock);
    return 0;
}

void emu_xrq_free(emu_srq_t *srq)
{
    emu_xrq_t *xrq = srq->xrq;

    if (xrq == NULL) {
        return;
    }
    srq->xrq = NULL;
    __atomic_sub_fetch(&xrq->cq->refs, 1, __ATOMIC_RELEASE);
    free(xrq->handle);
    free(xrq->gen);
    free(xrq);
}

emu_xrq_t *emu_xrq_of(emu_dev_t *dev, uint64_t wr_id)
{
    emu_srq_t *srq = emu_num_find(dev, EMU_NUM_SRQ,
                                  (uint32_t)(wr_id >> 32) & 0xffffff);

    return (srq != NULL) ? srq->xrq : NULL;
}

void emu_xrq_entry_done(emu_xrq_t *xrq, uint64_t wr_id, bool last)
{
    uint32_t slot = (uint16_t)wr_id;

    if (last && (slot < xrq->nslots) &&
        (xrq->gen[slot] == (uint16_t)(wr_id >> 16))) {
        xrq->handle[slot] = EMU_XRQ_FREE;
    }
}
