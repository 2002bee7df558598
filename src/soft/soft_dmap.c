/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the initiator's cache of peers' SysV segments it attached
 * (soft_shm.c describes what a target publishes).
 *
 * A direct RDMA WRITE/READ whose target MR lies in a published segment
 * copies through an attachment of that segment instead of cross-memory
 * attach (soft_direct_exec).  The cache only saves the checks and the
 * shmat: it is never the authority on whether a copy may happen.  Every
 * chunk is checked against the target's MR entry (key, access, bounds, and
 * the segment serial the attachment was made of) under the in-flight
 * marker, exactly as a cross-memory copy is, so a segment the target
 * unpublished or replaced is never written through a stale attachment.
 *
 * A SysV segment is attached by its id (shmat, read-write) once its size,
 * creator and change time (IPC_STAT) are the published ones and our IPC
 * namespace is the target's; the slot must still hold the serial once it
 * is attached, which proves the id named the target's segment (the target
 * keeps it attached, so its id cannot be reused, while it is published).
 * A segment we may not attach or stat (its permissions, another
 * namespace, gone) is remembered as refused, in an entry that maps
 * nothing, so that its operations go by cross-memory attach or the
 * target's responder without asking the kernel again; said at debug
 * level.  Our own process's segments are attached too: the address the
 * application registered may be detached by it at any time.
 *
 * Bounds: SOFT_DMAP_ENTRIES attachments per device, least recently used
 * evicted.  An attachment keeps the target's segment alive, so stale ones
 * are dropped as soon as they are noticed: an entry whose target
 * unpublished segments since it was last validated (area->frees moved) is
 * checked against the target's allocs[] table at the next lookup for that
 * target, and every attachment of a target whose process exited is
 * dropped when an operation finds it dead.
 *
 * Liveness: a copy into an attachment would "succeed" after the target died
 * (the pages outlive it), where cross-memory attach fails with ESRCH and a
 * NIC's request times out.  So before every operation the initiator reads
 * the target's liveness lock (soft_dlife_t): held by the target's helper
 * thread, the target is alive and the copy goes ahead with no system call;
 * marked FUTEX_OWNER_DIED by the kernel, it is dead.  The kernel marks it
 * while the dying process's threads exit, before the process can be
 * reaped, so a target that anyone saw die is never taken for alive.  When
 * the lock cannot tell (not held: the target's helper has not started or
 * is stopping, or robust mutexes are not available), the entry's pidfd
 * of the target process is polled (one system call, no pid reuse race).
 * A dead target's operations take the cross-memory path, which refuses
 * them, and then its responder, which never answers.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_direct.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SOFT_DMAP_ENTRIES 16u

#ifndef SYS_pidfd_open
#if defined(__x86_64__) || defined(__aarch64__)
#define SYS_pidfd_open 434
#endif
#endif

struct soft_dmap {
    soft_dmap_ent_t e[SOFT_DMAP_ENTRIES];
    soft_dmap_ent_t *last; /* returned last by soft_dmap_get() */
    unsigned count;
};

static void soft_dmap_drop(soft_dev_t *dev, soft_dmap_ent_t *e)
{
    if (e->peer->grant.map == e) {
        /* the grant copied through it (and checks no entry: the entry is
         * reused only after this) */
        e->peer->grant.area = NULL;
    }
    if (dev->dmap->last == e) {
        dev->dmap->last = NULL;
    }
    if (e->local != NULL) {
        shmdt(e->local);
    }
    if (e->pidfd >= 0) {
        close(e->pidfd);
    }
    dcx_debug("%s: dropped %s of pid %u SysV segment %llu (%llu bytes)",
              dev->super.caps.name, e->refused ? "refusal" : "attachment",
              e->peer->pid, (unsigned long long)e->serial,
              (unsigned long long)e->len);
    if (!e->refused) {
        dev->dmap->count--;
    }
    memset(e, 0, sizeof(*e));
}

__attribute__((noinline)) static void
soft_dmap_refused(soft_dev_t *dev, soft_peer_t *peer, const char *what, int err)
{
    peer->dmap_off = 1;
    dcx_debug("%s: attaching segments of pid %u refused (%s: %s): one-sided "
              "operations to them go by cross-memory attach",
              dev->super.caps.name, peer->pid, what, strerror(err));
}

/* Reads allocs[slot] consistently; 0 if it does not hold serial. */
static int soft_dmap_read_slot(soft_direct_area_t *area, uint32_t slot,
                               uint64_t serial, soft_dalloc_t *out)
{
    soft_dalloc_t *e = &area->allocs[slot];
    uint32_t s1;

    do {
        s1          = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
        out->serial = __atomic_load_n(&e->serial, __ATOMIC_RELAXED);
        out->base   = __atomic_load_n(&e->base, __ATOMIC_RELAXED);
        out->len    = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
        out->shmid  = __atomic_load_n(&e->shmid, __ATOMIC_RELAXED);
        out->segsz  = __atomic_load_n(&e->segsz, __ATOMIC_RELAXED);
        out->ctime  = __atomic_load_n(&e->ctime, __ATOMIC_RELAXED);
        out->cpid   = __atomic_load_n(&e->cpid, __ATOMIC_RELAXED);
        out->ipcns  = __atomic_load_n(&e->ipcns, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
    } while ((s1 & 1) || (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) != s1));
    return (out->serial == serial) && (serial != 0);
}

static int soft_dmap_pidfd(soft_dev_t *dev, soft_peer_t *peer)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)peer->pid, 0);

    if (fd < 0) {
        if ((errno == ENOSYS) || (errno == EPERM) || (errno == EINVAL)) {
            soft_dmap_refused(dev, peer, "pidfd_open", errno);
        }
        return -1;
    }
    /* the pidfd is of the process that has the pid now: the port's
     * owner, if that one is still alive */
    if ((peer->hdr == NULL) ||
        !soft_pid_alive(peer->pid, peer->hdr->owner_start)) {
        close(fd);
        return -1;
    }
    return fd;
#else
    soft_dmap_refused(dev, peer, "pidfd_open", ENOSYS);
    return -1;
#endif
}

/* The target's SysV segment d (of slot 'slot') attached: 0, -1 if it
 * cannot be now, 1 if it cannot be at all (said at debug level) */
static int soft_dmap_attach(soft_dev_t *dev, soft_peer_t *peer,
                            soft_direct_area_t *area, uint32_t slot,
                            const soft_dalloc_t *d, soft_dmap_ent_t *e)
{
    const char *what = NULL;
    struct shmid_ds ds;
    soft_dalloc_t again;
    struct stat ns;
    int err = 0;
    void *p;

    if ((stat("/proc/self/ns/ipc", &ns) != 0) || (d->ipcns == 0) ||
        ((uint64_t)ns.st_ino != d->ipcns)) {
        what = "its IPC namespace is not ours";
    } else if (shmctl(d->shmid, IPC_STAT, &ds) != 0) {
        what = "IPC_STAT";
        err  = errno;
    } else if (((uint64_t)ds.shm_segsz != d->segsz) ||
               ((uint64_t)ds.shm_ctime != d->ctime) ||
               ((uint32_t)ds.shm_cpid != d->cpid)) {
        what = "the id names another segment now";
    } else if ((p = shmat(d->shmid, NULL, 0)) == (void *)-1) {
        what = "shmat";
        err  = errno;
    } else if (!soft_dmap_read_slot(area, slot, d->serial, &again)) {
        /* unpublished meanwhile: the id may name another segment */
        shmdt(p);
        return -1;
    } else {
        e->local = p;
        return 0;
    }
    dcx_debug("%s: SysV segment %d of pid %u not attached (%s%s%s): "
              "one-sided operations to it go the way of unmapped memory",
              dev->super.caps.name, d->shmid, peer->pid, what, err ? ": " : "",
              err ? strerror(err) : "");
    return 1;
}

/* Attaches the target's segment: 0 on success, -1 if it cannot be now,
 * 1 if this one cannot be at all. */
static int soft_dmap_map(soft_dev_t *dev, soft_peer_t *peer,
                         soft_direct_area_t *area, uint32_t slot,
                         const soft_dalloc_t *d, soft_dmap_ent_t *e)
{
    int ret;

    e->pidfd = -1;
    if (!peer->own && (peer->pid != dev->pid)) {
        e->pidfd = soft_dmap_pidfd(dev, peer);
        if (e->pidfd < 0) {
            return -1;
        }
    }
    ret = soft_dmap_attach(dev, peer, area, slot, d, e);
    if ((ret != 0) && (e->pidfd >= 0)) {
        close(e->pidfd);
        e->pidfd = -1;
    }
    return ret;
}

soft_dmap_ent_t *soft_dmap_get(soft_dev_t *dev, soft_peer_t *peer,
                               soft_direct_area_t *area, uint32_t slot,
                               uint64_t serial)
{
    soft_dmap_ent_t *e, *hit = NULL, *victim = NULL;
    soft_dalloc_t d;
    uint64_t frees;
    unsigned i;
    int ret;

    if (peer->dmap_off || (slot >= SOFT_DIRECT_ALLOCS)) {
        return NULL;
    }
    if (dev->dmap == NULL) {
        dev->dmap = calloc(1, sizeof(*dev->dmap));
        if (dev->dmap == NULL) {
            return NULL;
        }
        /* past every entry's stamp: the first touch stores (soft_dmap_touch) */
        dev->dmap_clock = 1;
    }
    frees = __atomic_load_n(&area->frees, __ATOMIC_ACQUIRE);
    for (i = 0; i < SOFT_DMAP_ENTRIES; ++i) {
        e = &dev->dmap->e[i];
        if (e->peer != peer) {
            continue;
        }
        if (e->frees != frees) {
            /* the target freed something: is this one still there? */
            if (!soft_dmap_read_slot(area, e->slot, e->serial, &d)) {
                soft_dmap_drop(dev, e);
                continue;
            }
            e->frees = frees;
        }
        if (e->serial == serial) {
            hit = e;
        }
    }
    if ((hit != NULL) && hit->refused) {
        soft_dmap_touch(dev, hit);
        return NULL;
    }
    if (hit != NULL) {
        soft_dmap_touch(dev, hit);
        dev->dmap->last = hit;
        return hit;
    }

    if (!soft_dmap_read_slot(area, slot, serial, &d) || (d.len == 0) ||
        (d.base + d.len < d.base)) {
        return NULL;
    }
    /* a free entry, else the least recently used one */
    for (i = 0; i < SOFT_DMAP_ENTRIES; ++i) {
        e = &dev->dmap->e[i];
        if (e->peer == NULL) {
            victim = e;
            break;
        }
        if ((victim == NULL) || (e->used < victim->used)) {
            victim = e;
        }
    }
    if (victim->peer != NULL) {
        soft_dmap_drop(dev, victim);
    }
    e   = victim;
    ret = soft_dmap_map(dev, peer, area, slot, &d, e);
    if (ret < 0) {
        memset(e, 0, sizeof(*e));
        return NULL;
    }
    e->peer    = peer;
    e->serial  = serial;
    e->slot    = slot;
    e->rbase   = d.base;
    e->len     = d.len;
    e->frees   = frees;
    e->refused = (ret > 0); /* maps nothing: remembered until dropped */
    soft_dmap_touch(dev, e);
    if (e->refused) {
        return NULL;
    }
    dev->dmap->last = e;
    dev->dmap->count++;
    dev->stats.direct_maps++;
    dcx_debug("%s: attached pid %u SysV segment %llu (%llu bytes at 0x%llx)",
              dev->super.caps.name, peer->pid, (unsigned long long)serial,
              (unsigned long long)d.len, (unsigned long long)d.base);
    return e;
}

soft_dmap_ent_t *soft_dmap_last(soft_dev_t *dev, const soft_peer_t *peer,
                                const soft_direct_area_t *area, uint32_t rkey)
{
    soft_dmap_ent_t *e;

    if ((dev->dmap == NULL) || ((e = dev->dmap->last) == NULL) ||
        (e->peer != peer) || (e->rkey != rkey) ||
        (e->frees != __atomic_load_n(&area->frees, __ATOMIC_ACQUIRE))) {
        return NULL;
    }
    soft_dmap_touch(dev, e);
    return e;
}

int soft_dmap_alive(soft_dev_t *dev, soft_dmap_ent_t *e,
                    const soft_direct_area_t *area)
{
    struct pollfd pfd;
    int life;

    if (e->pidfd < 0) {
        return 1; /* our own process */
    }
    life = soft_direct_life(area);
    if (life == SOFT_LIFE_ALIVE) {
        return 1;
    }
    if (life == SOFT_LIFE_UNKNOWN) {
        pfd.fd      = e->pidfd;
        pfd.events  = POLLIN;
        pfd.revents = 0;
        if (poll(&pfd, 1, 0) == 0) {
            return 1;
        }
    }
    /* exited (or the pidfd is unusable): drop every mapping of it */
    soft_dmap_forget(dev, e->peer);
    return 0;
}

void soft_dmap_forget(soft_dev_t *dev, const soft_peer_t *peer)
{
    unsigned i;

    if (dev->dmap == NULL) {
        return;
    }
    for (i = 0; i < SOFT_DMAP_ENTRIES; ++i) {
        if (dev->dmap->e[i].peer == peer) {
            soft_dmap_drop(dev, &dev->dmap->e[i]);
        }
    }
}

void soft_dmap_cleanup(soft_dev_t *dev)
{
    unsigned i;

    if (dev->dmap == NULL) {
        return;
    }
    for (i = 0; i < SOFT_DMAP_ENTRIES; ++i) {
        if (dev->dmap->e[i].peer != NULL) {
            soft_dmap_drop(dev, &dev->dmap->e[i]);
        }
    }
    free(dev->dmap);
    dev->dmap = NULL;
}

unsigned soft_dmap_count(soft_dev_t *dev)
{
    return (dev->dmap == NULL) ? 0 : dev->dmap->count;
}

unsigned dcx_soft_direct_mappings(dcx_dev_t *dev)
{
    unsigned n;

    if (!dcx_dev_is_soft(dev)) {
        dcx_error("%s: direct mappings: not a soft device", dcx_dev_name(dev));
        return 0;
    }
    soft_lock(&soft_dev(dev)->lock);
    n = soft_dmap_count(soft_dev(dev));
    soft_unlock(&soft_dev(dev)->lock);
    return n;
}
