/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the owner's side of one-sided operations executed by the
 * initiator (soft_direct.c): the tables a port publishes at the end of its
 * segment (its DCTs and plain MRs, each entry under a seqlock; the layout
 * of its vector keys) and the wait of a deregistration for the copies in
 * flight under the key (soft_direct_quiesce), the owner's half of the
 * deregistration protocol described at the top of soft_direct.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_direct.h"

#include <sched.h>

#define SOFT_DIRECT_WAIT_NS     1000000000ull
#define SOFT_DIRECT_LIVENESS_NS 1000000ull

/* The published entry of key lkey (an MR or a strided key), or NULL when
 * we publish none or the key's index is past the table */
static soft_dmr_t *soft_direct_entry(soft_dev_t *dev, uint32_t lkey)
{
    uint32_t idx = lkey >> 8;

    return ((dev->direct == NULL) || (idx >= SOFT_DIRECT_MRS)) ?
               NULL :
               &dev->direct->mrs[idx];
}

static void soft_direct_mr_set(soft_dev_t *dev, soft_mr_t *mr, int publish)
{
    soft_dmr_t *e = soft_direct_entry(dev, mr->super.lkey);

    if (e == NULL) {
        return;
    }
    soft_seq_begin(&e->seq);
    if (publish && (mr->mkey == NULL) && !mr->invalid) {
        uint64_t serial = 0;
        uint32_t alloc  = 0;

        if ((mr->shm != NULL) && (mr->shm->slot >= 0)) {
            alloc  = (uint32_t)mr->shm->slot + 1; /* a SysV segment */
            serial = mr->shm->serial;
        }

        __atomic_store_n(&e->access, mr->super.access, __ATOMIC_RELAXED);
        __atomic_store_n(&e->start, mr->start, __ATOMIC_RELAXED);
        __atomic_store_n(&e->end, mr->end, __ATOMIC_RELAXED);
        __atomic_store_n(&e->alloc, alloc, __ATOMIC_RELAXED);
        __atomic_store_n(&e->serial, serial, __ATOMIC_RELAXED);
        __atomic_store_n(&e->mr_key, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&e->key, mr->super.lkey, __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&e->key, 0, __ATOMIC_RELAXED);
    }
    soft_seq_end(&e->seq);
}

void soft_direct_mr_publish(soft_dev_t *dev, soft_mr_t *mr)
{
    soft_direct_mr_set(dev, mr, 1);
}

void soft_direct_mr_unpublish(soft_dev_t *dev, soft_mr_t *mr)
{
    soft_direct_mr_set(dev, mr, 0);
}

void soft_direct_mr_withdraw(soft_dev_t *dev, soft_mr_t *mr)
{
    if (dev->direct == NULL) {
        return;
    }
    soft_direct_mr_unpublish(dev, mr);
    /* a copy through a strided key marks the MR of its entry, not the
     * key (soft_direct_vector_exec): wait for every marked copy */
    soft_direct_quiesce(dev, (mr->mkey != NULL) ? 0 : mr->super.lkey);
}

void soft_direct_vector_set(soft_dev_t *dev, soft_mr_t *key,
                            const soft_direct_vector_t *vec)
{
    soft_dmr_t *e = soft_direct_entry(dev, key->super.lkey);

    if (e == NULL) {
        return;
    }
    soft_seq_begin(&e->seq);
    if (vec != NULL) {
        __atomic_store_n(&e->access, vec->access, __ATOMIC_RELAXED);
        __atomic_store_n(&e->alloc, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&e->start, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&e->end, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&e->serial, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&e->mr_key, vec->mr_key, __ATOMIC_RELAXED);
        __atomic_store_n(&e->count, (uint32_t)vec->count, __ATOMIC_RELAXED);
        __atomic_store_n(&e->stride, vec->stride, __ATOMIC_RELAXED);
        __atomic_store_n(&e->base, vec->base, __ATOMIC_RELAXED);
        __atomic_store_n(&e->length, vec->length, __ATOMIC_RELAXED);
        __atomic_store_n(&e->key, key->super.lkey, __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&e->key, 0, __ATOMIC_RELAXED);
    }
    soft_seq_end(&e->seq);
    if (vec == NULL) {
        soft_direct_quiesce(dev, 0);
    }
}

/* The first SOFT_DIRECT_DCTS numbers of the device are published, each at
 * its number modulo SOFT_DIRECT_DCTS: consecutive numbers take distinct
 * entries whatever the device's qpn_base, and an initiator finds the entry
 * of a number without knowing the base (soft_direct_dct_read). */
void soft_direct_dct_publish(soft_dev_t *dev, soft_qp_t *dct, int ok)
{
    uint32_t idx = dct->super.qp_num - dev->qpn_base;
    soft_ddct_t *e;

    if ((dev->direct == NULL) || (idx >= SOFT_DIRECT_DCTS)) {
        return;
    }
    e = &dev->direct->dcts[dct->super.qp_num % SOFT_DIRECT_DCTS];
    soft_seq_begin(&e->seq);
    __atomic_store_n(&e->qpn, dct->super.qp_num, __ATOMIC_RELAXED);
    __atomic_store_n(&e->access, dct->access, __ATOMIC_RELAXED);
    __atomic_store_n(&e->dc_key, dct->dc_key, __ATOMIC_RELAXED);
    __atomic_store_n(&e->ok, (uint32_t)ok, __ATOMIC_RELAXED);
    __atomic_store_n(&e->ext_max, dct->ext_atomic_max, __ATOMIC_RELAXED);
    soft_seq_end(&e->seq);
    soft_direct_gen_bump(dev);
}

void soft_direct_fault_changed(soft_dev_t *dev)
{
    if (dev->direct == NULL) {
        return;
    }
    /* our responder must see the packets a fault rule is about */
    __atomic_store_n(&dev->direct->enabled,
                     (dev->fault.rule.type == DCX_SOFT_FAULT_NONE) &&
                         !dev->killed,
                     __ATOMIC_RELEASE);
    soft_direct_gen_bump(dev);
}

/* Waits until no initiator is copying under key (0: any key) in a chunk
 * that began before this call; see the protocol at the top. */
void soft_direct_quiesce(soft_dev_t *dev, uint32_t key)
{
    soft_direct_area_t *area = dev->direct;
    uint64_t gen[SOFT_DIRECT_SLOTS];
    uint32_t busy[SOFT_DIRECT_SLOTS];
    uint64_t start_ns = 0, check_ns = 0, now;
    unsigned i, pending             = 0;

    if (area == NULL) {
        return;
    }
    soft_dslot_owner_fence(dev, area);
    for (i = 0; i < SOFT_DIRECT_SLOTS; ++i) {
        uint32_t k = __atomic_load_n(&area->slots[i].key, __ATOMIC_SEQ_CST);

        busy[i] = (k != 0) && ((key == 0) || (k == key));
        gen[i]  = __atomic_load_n(&area->slots[i].gen, __ATOMIC_SEQ_CST);
        pending += busy[i];
    }
    while (pending > 0) {
        now = soft_now_ns();
        if (start_ns == 0) {
            start_ns = now;
        }
        pending = 0;
        for (i = 0; i < SOFT_DIRECT_SLOTS; ++i) {
            soft_dslot_t *s = &area->slots[i];
            uint32_t k;

            if (!busy[i]) {
                continue;
            }
            k = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
            if ((k == 0) || ((key != 0) && (k != key)) ||
                (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != gen[i])) {
                busy[i] = 0;
                continue;
            }
            if ((now >= check_ns) &&
                !soft_pid_alive(__atomic_load_n(&s->pid, __ATOMIC_RELAXED),
                                __atomic_load_n(&s->start, __ATOMIC_RELAXED))) {
                uint64_t owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);

                dcx_debug("%s: initiator pid %u died copying under key 0x%x:"
                          " marker reclaimed",
                          dev->super.caps.name, s->pid, k);
                __atomic_store_n(&s->key, 0, __ATOMIC_RELAXED);
                __atomic_compare_exchange_n(&s->owner, &owner, 0, 0,
                                            __ATOMIC_RELEASE, __ATOMIC_RELAXED);
                busy[i] = 0;
                continue;
            }
            if (now - start_ns > SOFT_DIRECT_WAIT_NS) {
                dcx_warn("%s: initiator pid %u holds a copy under key 0x%x "
                         "for over %llu ms (stopped?): not waiting longer",
                         dev->super.caps.name, s->pid, k,
                         SOFT_DIRECT_WAIT_NS / 1000000ull);
                busy[i] = 0;
                continue;
            }
            ++pending;
        }
        if (now >= check_ns) {
            check_ns = now + SOFT_DIRECT_LIVENESS_NS;
        }
        if (pending > 0) {
            sched_yield();
        }
    }
}

unsigned soft_direct_inflight(soft_dev_t *dev)
{
    unsigned i, n = 0;

    if (dev->direct == NULL) {
        return 0;
    }
    for (i = 0; i < SOFT_DIRECT_SLOTS; ++i) {
        n += (__atomic_load_n(&dev->direct->slots[i].key, __ATOMIC_ACQUIRE) !=
              0);
    }
    return n;
}
