/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the liveness lock a port publishes in its direct area
 * (soft_dlife_t, soft_direct.h): a robust, process-shared mutex its
 * helper thread holds while it runs, so that peers copying into the
 * port's memory learn that its process died from one load, without a
 * system call per operation.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_direct.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Sets up the liveness lock (soft_dlife_t) of a fresh area; the helper
 * thread takes it when it starts. */
void soft_direct_life_init(soft_dev_t *dev, soft_dlife_t *l)
{
    pthread_mutexattr_t attr;
    int ret;

    l->tid    = 0;
    l->robust = 0;
    ret       = pthread_mutexattr_init(&attr);
    if (ret == 0) {
        ret = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
        if (ret == 0) {
            ret = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
        }
        if (ret == 0) {
            ret = pthread_mutex_init(&l->lock, &attr);
        }
        pthread_mutexattr_destroy(&attr);
    }
    if (ret != 0) {
        dcx_debug("%s: no robust process-shared mutex (%s): peers copying "
                  "into our allocations ask the kernel whether we are alive "
                  "on every operation",
                  dev->super.caps.name, strerror(ret));
        return;
    }
    l->robust = 1;
}

void soft_direct_life_begin(soft_dev_t *dev)
{
    soft_dlife_t *l;
    uint32_t tid, word;
    int ret;

    if ((dev->direct == NULL) || !dev->direct->life.robust) {
        return;
    }
    l   = &dev->direct->life;
    ret = pthread_mutex_lock(&l->lock);
    if (ret != 0) {
        dcx_debug("%s: liveness lock: %s", dev->super.caps.name, strerror(ret));
        l->robust = 0;
        return;
    }
    /* peers read the futex word at the start of the mutex: trust it only
     * if it names us the way the robust futex ABI says */
    tid  = (uint32_t)syscall(SYS_gettid);
    word = __atomic_load_n((uint32_t *)&l->lock, __ATOMIC_RELAXED);
    if ((word & (FUTEX_TID_MASK | FUTEX_OWNER_DIED)) != tid) {
        dcx_debug("%s: liveness lock word 0x%x does not name thread %u: "
                  "peers ask the kernel instead",
                  dev->super.caps.name, word, tid);
        pthread_mutex_unlock(&l->lock);
        l->robust = 0;
        return;
    }
    __atomic_store_n(&l->tid, tid, __ATOMIC_RELEASE);
}

void soft_direct_life_end(soft_dev_t *dev)
{
    soft_dlife_t *l;

    if ((dev->direct == NULL) || !dev->direct->life.robust ||
        (dev->direct->life.tid == 0)) {
        return;
    }
    l = &dev->direct->life;
    __atomic_store_n(&l->tid, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&l->lock);
}

/* A peer's side: what the liveness lock of the area peer publishes says,
 * read without a system call (soft_peer_dead asks it first) */
int soft_direct_peer_life(soft_peer_t *peer)
{
    soft_direct_area_t *area;

    if ((peer->hdr == NULL) ||
        ((area = soft_direct_area_of(peer->hdr, peer->map_size)) == NULL)) {
        return SOFT_LIFE_UNKNOWN;
    }
    return soft_direct_life(area);
}

int dcx_soft_direct_alive_lock(dcx_dev_t *dev)
{
    soft_dev_t *sdev;

    if (!dcx_dev_is_soft(dev)) {
        dcx_error("%s: direct alive lock: not a soft device",
                  dcx_dev_name(dev));
        return 0;
    }
    sdev = soft_dev(dev);
    return (sdev->direct != NULL) &&
           (soft_direct_life(sdev->direct) == SOFT_LIFE_ALIVE);
}
