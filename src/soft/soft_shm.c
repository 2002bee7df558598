/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: System V shared memory segments registered as ordinary
 * memory, published so that peers attach them (the owner's side; the
 * initiator's is soft_dmap.c).
 *
 * An application that attaches a segment (shmget/shmat, the dcx md's
 * allocations, or UCX's sysv allocator) and registers memory inside it has
 * memory every process could map.  Published in allocs[] (soft_direct.h),
 * it lets an initiator attach the segment once and then copy, and execute
 * atomics, with plain CPU instructions instead of cross-memory attach or
 * the target's responder.  Why SysV qualifies:
 * a segment's size is fixed at shmget, it cannot shrink, so a peer's
 * attachment can never fault.  A file mapping (/dev/shm, a tmpfs or any
 * other file) can be truncated under a peer's mapping, which then dies of
 * SIGBUS at its next access: those stay on cross-memory attach.
 *
 * How a registration finds its segment: the pass over /proc/self/maps
 * that checks its range is mapped (soft_mr.c) feeds every line over the
 * range to soft_shm_scan_line.  A SysV attachment shows there with the
 * path "/SYSV<8 hex digits: the key> (deleted)", the segment's id as its
 * inode and its offset in the segment as the mapping's offset.  The range
 * qualifies when lines of one such attachment (one id, one address of
 * byte 0) cover it all.  The segment's record (soft_shm_prepare) then
 * needs, before any lock is taken:
 *
 *  - a second attachment of our own, the hold (read-only: nothing writes
 *    through it), whose mapping's device and inode must be those of the
 *    range's (a deleted regular file named /SYSV... is no segment).
 *    While the segment is published, the hold keeps it in existence, so
 *    its id cannot be given to another segment: a peer that attaches the
 *    id and then still finds the slot's serial published has attached
 *    this segment.  It also keeps the pages while an MR is registered, as
 *    a NIC's pinning does, and counts in the segment's shm_nattch;
 *  - its size, creator and change time (IPC_STAT), which a peer checks
 *    before it attaches, and the inode of our IPC namespace, without
 *    which the id means nothing to a peer (a container's processes share
 *    the machine but not their segments).
 *
 * Every MR in the segment is bound to its record (under mr_lock; one per
 * attachment of a segment in our process), which the first one publishes
 * in a slot of allocs[] and the last one's deregistration unpublishes
 * (bumping 'frees', so peers drop their attachments).  An MR carries slot
 * and serial in its entry, and peers check them under the deregistration
 * protocol before every access (soft_direct.c).
 *
 * A segment removed (IPC_RMID) while attached can still be attached by
 * its id on Linux until its last attachment goes (UCX's sysv allocator
 * removes its segments at once, and its sysv transport relies on this):
 * it qualifies as well, and the hold keeps it while it is published.
 * What does not qualify (no /proc, no slot free, a segment we cannot
 * attach or stat) is reached by cross-memory attach and the responder,
 * said at debug level.  Only a range that lies in a SysV attachment costs
 * more than the registration's one pass over the maps: the hold's
 * attachment, a second pass to check it, and two stats.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_direct.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

void soft_shm_scan_init(soft_shm_scan_t *sc, uint64_t start, uint64_t end)
{
    memset(sc, 0, sizeof(*sc));
    sc->start = start;
    sc->end   = end;
}

/* path (what follows the inode field) names a SysV attachment */
static int soft_shm_is_sysv(const char *path)
{
    unsigned i;

    while (*path == ' ') {
        ++path;
    }
    if (strncmp(path, "/SYSV", 5) != 0) {
        return 0;
    }
    for (i = 5; i < 13; ++i) {
        if (!((path[i] >= '0') && (path[i] <= '9')) &&
            !((path[i] >= 'a') && (path[i] <= 'f'))) {
            return 0;
        }
    }
    return (strcmp(path + 13, " (deleted)\n") == 0) ||
           (strcmp(path + 13, " (deleted)") == 0);
}

void soft_shm_scan_line(soft_shm_scan_t *sc, const char *line)
{
    unsigned long lo, hi, off, ino;
    unsigned maj, mnr;
    char perms[8];
    int n = 0;

    if ((sscanf(line, "%lx-%lx %7s %lx %x:%x %lu%n", &lo, &hi, perms, &off,
                &maj, &mnr, &ino, &n) != 7) ||
        (n <= 0) || (hi <= sc->start) || (lo >= sc->end)) {
        return; /* not a line over the range */
    }
    if (!soft_shm_is_sysv(line + n) || (lo < off)) {
        sc->bad = 1;
        return;
    }
    if (sc->cur == 0) {
        /* the first line over the range must hold its start */
        sc->bad   = sc->bad || (lo > sc->start);
        sc->base  = lo - off;
        sc->shmid = ino;
        sc->devno = ((uint64_t)maj << 32) | mnr;
    } else if ((lo != sc->cur) || (ino != sc->shmid) ||
               (lo - off != sc->base) ||
               (sc->devno != (((uint64_t)maj << 32) | mnr))) {
        sc->bad = 1; /* a hole, or another segment or attachment */
    }
    sc->cur = hi;
}

/* The range lies in one SysV attachment */
static int soft_shm_scan_ok(const soft_shm_scan_t *sc)
{
    return !sc->bad && (sc->cur != 0) && (sc->cur >= sc->end) &&
           (sc->shmid <= (unsigned long)INT32_MAX);
}

char *soft_maps_line(FILE *f, char *line, int size)
{
    char rest[256];

    if (fgets(line, size, f) == NULL) {
        return NULL;
    }
    if (strchr(line, '\n') == NULL) {
        /* a long path: the rest of its line, in pieces, skipped */
        while ((fgets(rest, sizeof(rest), f) != NULL) &&
               (strchr(rest, '\n') == NULL)) {
        }
    }
    return line;
}

/* The device and inode of our mapping at addr (a scan of /proc/self/maps
 * for that one byte); 0 if it is no SysV attachment */
static int soft_shm_mapping_of(const void *addr, soft_shm_scan_t *sc)
{
    uint64_t a = (uint64_t)(uintptr_t)addr;
    char line[256];
    FILE *f;

    soft_shm_scan_init(sc, a, a + 1);
    f = fopen("/proc/self/maps", "re");
    if (f == NULL) {
        return 0;
    }
    while ((sc->cur == 0) && (soft_maps_line(f, line, sizeof(line)) != NULL)) {
        soft_shm_scan_line(sc, line);
    }
    fclose(f);
    return soft_shm_scan_ok(sc);
}

soft_shm_t *soft_shm_prepare(soft_dev_t *dev, const soft_shm_scan_t *sc)
{
    const char *name = dev->super.caps.name;
    size_t page      = (size_t)sysconf(_SC_PAGESIZE);
    soft_shm_scan_t hs;
    struct shmid_ds ds;
    struct stat ns;
    soft_shm_t *s;
    void *hold;
    int shmid;

    if ((dev->direct == NULL) || !soft_shm_scan_ok(sc)) {
        return NULL;
    }
    shmid = (int)sc->shmid;
    hold  = shmat(shmid, NULL, SHM_RDONLY);
    if (hold == (void *)-1) {
        dcx_debug("%s: mr reg 0x%llx/%llu: SysV segment %d not attached "
                  "again (%s): peers reach it by cross-memory attach",
                  name, (unsigned long long)sc->start,
                  (unsigned long long)(sc->end - sc->start), shmid,
                  strerror(errno));
        return NULL;
    }
    if (!soft_shm_mapping_of(hold, &hs) || (hs.shmid != sc->shmid) ||
        (hs.devno != sc->devno) || (hs.base != (uint64_t)(uintptr_t)hold)) {
        dcx_debug("%s: mr reg 0x%llx/%llu: the mapping named /SYSV with "
                  "inode %d is not segment %d: not published",
                  name, (unsigned long long)sc->start,
                  (unsigned long long)(sc->end - sc->start), shmid, shmid);
        goto err;
    }
    if ((shmctl(shmid, IPC_STAT, &ds) != 0) ||
        (stat("/proc/self/ns/ipc", &ns) != 0)) {
        dcx_debug("%s: mr reg 0x%llx/%llu: SysV segment %d: %s failed (%s): "
                  "not published",
                  name, (unsigned long long)sc->start,
                  (unsigned long long)(sc->end - sc->start), shmid,
                  "IPC_STAT or the IPC namespace's stat", strerror(errno));
        goto err;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        goto err;
    }
    s->shmid = shmid;
    s->slot  = -1;
    s->base  = sc->base;
    s->segsz = (uint64_t)ds.shm_segsz;
    s->len   = (s->segsz + page - 1) & ~(uint64_t)(page - 1);
    s->ctime = (uint64_t)ds.shm_ctime;
    s->cpid  = (uint32_t)ds.shm_cpid;
    s->ipcns = (uint64_t)ns.st_ino;
    s->hold  = hold;
    if ((sc->end > s->base + s->len) || (s->base + s->len < s->base)) {
        free(s);
        goto err; /* (the kernel maps no more than the segment) */
    }
    return s;

err:
    shmdt(hold);
    return NULL;
}

static void soft_shm_publish(soft_dev_t *dev, soft_shm_t *s)
{
    soft_dalloc_t *e = &dev->direct->allocs[s->slot];

    soft_seq_begin(&e->seq);
    __atomic_store_n(&e->shmid, s->shmid, __ATOMIC_RELAXED);
    __atomic_store_n(&e->base, s->base, __ATOMIC_RELAXED);
    __atomic_store_n(&e->len, s->len, __ATOMIC_RELAXED);
    __atomic_store_n(&e->segsz, s->segsz, __ATOMIC_RELAXED);
    __atomic_store_n(&e->ctime, s->ctime, __ATOMIC_RELAXED);
    __atomic_store_n(&e->cpid, s->cpid, __ATOMIC_RELAXED);
    __atomic_store_n(&e->ipcns, s->ipcns, __ATOMIC_RELAXED);
    __atomic_store_n(&e->serial, s->serial, __ATOMIC_RELAXED);
    soft_seq_end(&e->seq);
}

soft_shm_t *soft_shm_bind(soft_dev_t *dev, soft_mr_t *mr)
{
    soft_shm_t *cand = mr->shm, *s;

    mr->shm = NULL;
    if (cand == NULL) {
        return NULL;
    }
    /* the same attachment of the same segment: the holds keep its id */
    for (s = dev->shms; s != NULL; s = s->next) {
        if ((s->shmid == cand->shmid) && (s->base == cand->base) &&
            (s->segsz == cand->segsz) && (s->ctime == cand->ctime) &&
            (s->cpid == cand->cpid)) {
            s->refs++;
            mr->shm = s;
            return cand;
        }
    }
    cand->slot = soft_dalloc_free_slot(dev);
    if (cand->slot < 0) {
        dcx_debug("%s: %u allocations and segments published already: SysV "
                  "segment %d is reached by cross-memory attach",
                  dev->super.caps.name, SOFT_DIRECT_ALLOCS, cand->shmid);
        return cand;
    }
    cand->serial = ++dev->alloc_serial;
    cand->refs   = 1;
    soft_shm_publish(dev, cand);
    cand->next = dev->shms;
    dev->shms  = cand;
    mr->shm    = cand;
    dcx_debug("%s: SysV segment %d (%llu bytes at 0x%llx) published, serial "
              "%llu",
              dev->super.caps.name, cand->shmid, (unsigned long long)cand->len,
              (unsigned long long)cand->base, (unsigned long long)cand->serial);
    return NULL;
}

soft_shm_t *soft_shm_unbind(soft_dev_t *dev, soft_mr_t *mr)
{
    soft_shm_t *s = mr->shm, **pp;

    mr->shm = NULL;
    if ((s == NULL) || (--s->refs > 0)) {
        return NULL;
    }
    for (pp = &dev->shms; *pp != s; pp = &(*pp)->next) {
    }
    *pp = s->next;
    soft_dalloc_unpublish(dev, s->slot);
    s->slot = -1;
    return s;
}

void soft_shm_release(soft_shm_t *s)
{
    if (s == NULL) {
        return;
    }
    shmdt(s->hold);
    free(s);
}

/* Device close: MRs not deregistered leave their segments' records */
void soft_shm_cleanup(soft_dev_t *dev)
{
    soft_shm_t *s;

    while ((s = dev->shms) != NULL) {
        dev->shms = s->next;
        soft_shm_release(s);
    }
}
