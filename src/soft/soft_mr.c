/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: memory regions and the key table their keys (and strided
 * keys' table entries, soft_mkey.c) live in, with what taking a key out of
 * the table does to the send WQEs that name it (soft_req_key_gone: they
 * read only the requester's inline accessors, so the table stays below
 * the requester).  Looking keys up is soft_mem.c's.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"

#include "soft_direct.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel pins the pages of a registration (write-faulting them in when
 * any write access is asked for) and fails with EFAULT if it cannot.  The
 * same verdict without touching the memory: walk /proc/self/maps over
 * [start, end) and require every byte mapped, readable, and writable if
 * 'write'.  Returns 0, or EFAULT after logging one line.  Control path only:
 * one pass over the maps file (a few microseconds per hundred mappings),
 * whose lines over the range also go to sc, which tells whether the range
 * lies in a SysV segment (soft_shm.c). */
static int soft_mr_check_mapping(const char *name, uintptr_t start,
                                 uintptr_t end, int write, soft_shm_scan_t *sc)
{
    const char *what = NULL;
    uintptr_t cur    = start;
    char line[256];
    unsigned long lo, hi;
    char perms[8];
    FILE *f;

    f = fopen("/proc/self/maps", "re");
    if (f == NULL) {
        dcx_debug("%s: mr reg: cannot read /proc/self/maps (%s): mapping "
                  "not checked",
                  name, strerror(errno));
        return 0;
    }
    while ((cur < end) && (soft_maps_line(f, line, sizeof(line)) != NULL)) {
        soft_shm_scan_line(sc, line);
        if ((sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) ||
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
    const char *name  = dev->super.caps.name;
    soft_shm_t *spare = NULL;
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
        if ((dev->mr_hi == 0) || (mr->start < dev->mr_lo)) {
            __atomic_store_n(&dev->mr_lo, mr->start, __ATOMIC_RELEASE);
        }
        if (mr->end > dev->mr_hi) {
            __atomic_store_n(&dev->mr_hi, mr->end, __ATOMIC_RELEASE);
        }
        spare = soft_shm_bind(dev, mr);
    } else {
        dev->num_mkeys++;
    }
    soft_direct_mr_publish(dev, mr);
    pthread_mutex_unlock(&dev->mr_lock);
    dev->num_mr_used++;
    soft_unlock(&dev->lock);
    soft_shm_release(spare); /* (detaches: no lock held) */
    return 0;
}

/* The key 'lkey' was just taken out of the table (soft_key_remove, engine
 * lock held): as on a NIC, whose access through a destroyed key fails, a
 * WQE not yet completed that names it in its sg list will not touch that
 * memory again (the caller may unmap it once this returns).  It completes,
 * in its turn, with a local protection error: one not started yet through
 * its forced status, one on the wire, which sends no more packets and
 * takes no more response data, when it is the oldest (soft_req_mem_gone). */
void soft_req_key_gone(soft_dev_t *dev, uint32_t lkey)
{
    soft_swqe_t *w;
    soft_qp_t *qp;
    uint32_t idx;
    unsigned i;

    for (qp = dev->dcis; qp != NULL; qp = qp->next_dci) {
        for (idx = qp->sq_comp; idx != qp->sq_head; ++idx) {
            w = soft_wqe(qp, idx);
            if ((w->wr.flags & DCX_SEND_INLINE) ||
                (w->forced != SOFT_NO_STATUS)) {
                continue;
            }
            for (i = 0; i < w->wr.num_sge; ++i) {
                if (w->sge[i].lkey == lkey) {
                    dcx_debug("%s: dci 0x%x wr 0x%llx: its memory key 0x%x "
                              "was deregistered",
                              soft_qp_dev_name(qp), qp->super.qp_num,
                              (unsigned long long)w->wr.wr_id, lkey);
                    w->forced = DCX_WC_LOC_PROT_ERR;
                    break;
                }
            }
        }
    }
}

/* Takes mr's key out of the table.  Holding the engine lock, no engine
 * pass (and so no access on behalf of a peer) is in flight: once it
 * returns, nothing reaches the key any more. */
void soft_key_remove(soft_dev_t *dev, soft_mr_t *mr)
{
    soft_shm_t *gone;

    soft_lock(&dev->lock);
    pthread_mutex_lock(&dev->mr_lock);
    dev->mrs[mr->super.lkey >> 8] = NULL;
    if (mr->mkey != NULL) {
        dev->num_mkeys--;
    }
    /* initiators copying into it directly finish their chunk first */
    soft_direct_mr_withdraw(dev, mr);
    /* the last MR in its SysV segment unpublishes the segment */
    gone = soft_shm_unbind(dev, mr);
    pthread_mutex_unlock(&dev->mr_lock);
    /* our WQEs that name it touch it no more */
    soft_req_key_gone(dev, mr->super.lkey);
    dev->num_mr_used--;
    soft_unlock(&dev->lock);
    soft_shm_release(gone);
}

/* The checks of a registration's arguments (the kernel's): 0, or EINVAL or
 * EFAULT after one line. */
static int soft_mr_check_args(const char *name, void *addr, size_t length,
                              uint32_t access, soft_shm_scan_t *sc)
{
    const uint32_t all = DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                         DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC;

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
                                            DCX_ACCESS_REMOTE_ATOMIC)),
                               sc) != 0)) {
        return EFAULT;
    }
    return 0;
}

int soft_mr_reg(dcx_pd_t *pd, void *addr, size_t length, uint32_t access,
                dcx_mr_t **mr_p)
{
    soft_dev_t *dev  = soft_dev(pd->dev);
    const char *name = dev->super.caps.name;
    soft_shm_scan_t sc;
    soft_mr_t *mr;
    int ret;

    soft_shm_scan_init(&sc, (uintptr_t)addr, (uintptr_t)addr + length);
    ret = soft_mr_check_args(name, addr, length, access, &sc);
    if (ret != 0) {
        return ret;
    }
    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        dcx_error("%s: mr reg %p/%zu: out of memory", name, addr, length);
        return ENOMEM;
    }
    /* its SysV segment's record, bound under the lock (soft_key_insert) */
    mr->shm = soft_shm_prepare(dev, &sc);

    mr->super.pd     = pd;
    mr->super.addr   = addr;
    mr->super.length = length;
    mr->super.access = access;
    mr->start        = (uint64_t)(uintptr_t)addr;
    mr->end          = mr->start + length;
    if (soft_key_insert(dev, mr, "mr reg") != 0) {
        soft_shm_release(mr->shm);
        free(mr);
        return ENOMEM;
    }
    *mr_p = &mr->super;
    return 0;
}

int dcx_soft_mr_rereg(dcx_mr_t *mr_, dcx_pd_t *pd, void *addr, size_t length,
                      uint32_t access)
{
    soft_mr_t *mr    = (soft_mr_t *)mr_;
    soft_dev_t *dev  = soft_dev(mr_->pd->dev);
    const char *name = dev->super.caps.name;
    uint64_t start   = (uint64_t)(uintptr_t)addr;
    soft_shm_t *gone, *spare;
    soft_shm_scan_t sc;
    int ret;

    if ((pd == NULL) || (pd->dev != mr_->pd->dev) || (mr->mkey != NULL)) {
        dcx_error("%s: mr rereg 0x%x: %s", name, mr_->lkey,
                  (mr->mkey != NULL) ? "the key of a strided key, not an MR" :
                                       "a PD of another device");
        return EINVAL;
    }
    soft_shm_scan_init(&sc, start, start + length);
    ret = soft_mr_check_args(name, addr, length, access, &sc);
    if (ret != 0) {
        return ret;
    }
    spare = soft_shm_prepare(dev, &sc); /* the new range's segment */
    /* out of the table, as a deregistration takes it (no engine pass in
     * flight, direct copiers done, our WQEs naming it failed), changed,
     * and back in its slot under the same key; the engine lock held
     * throughout, so no registration takes the slot meanwhile */
    soft_lock(&dev->lock);
    pthread_mutex_lock(&dev->mr_lock);
    dev->mrs[mr_->lkey >> 8] = NULL;
    soft_direct_mr_withdraw(dev, mr);
    gone = soft_shm_unbind(dev, mr);
    pthread_mutex_unlock(&dev->mr_lock);
    soft_req_key_gone(dev, mr_->lkey);
    if ((start != mr->start) || (start + length != mr->end)) {
        mr->invalid = 0; /* new pages, checked mapped above */
    }
    mr->super.pd     = pd;
    mr->super.addr   = addr;
    mr->super.length = length;
    mr->super.access = access;
    mr->start        = start;
    mr->end          = start + length;
    pthread_mutex_lock(&dev->mr_lock);
    dev->mrs[mr_->lkey >> 8] = mr;
    mr->shm                  = spare;
    spare                    = soft_shm_bind(dev, mr);
    if (mr->start < dev->mr_lo) {
        __atomic_store_n(&dev->mr_lo, mr->start, __ATOMIC_RELEASE);
    }
    if (mr->end > dev->mr_hi) {
        __atomic_store_n(&dev->mr_hi, mr->end, __ATOMIC_RELEASE);
    }
    soft_direct_mr_publish(dev, mr);
    pthread_mutex_unlock(&dev->mr_lock);
    soft_unlock(&dev->lock);
    soft_shm_release(gone); /* (detaches: no lock held) */
    soft_shm_release(spare);
    dcx_debug("%s: mr 0x%x re-registered: %p/%zu, access 0x%x", name, mr_->lkey,
              addr, length, access);
    return 0;
}

int soft_mr_dereg(dcx_mr_t *mr_)
{
    soft_mr_t *mr   = (soft_mr_t *)mr_;
    soft_dev_t *dev = soft_dev(mr_->pd->dev);

    soft_key_remove(dev, mr);
    free(mr);
    return 0;
}
