/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the device's own port segment in /dev/shm: its name, its
 * creation (the header, the two rings, the direct-access area, the ack
 * table) and removal, and the sweep of the segments whose owner died.
 * Above the fabric and direct access (soft_direct_init sets the area up).
 *
 * Segment name: /dcx-soft.<uid>.<fabric>.<pid>.<token>, mode 0600, where the
 * token is 64 random bits carried in the port address: a name cannot be
 * guessed (so not pre-created by someone else to deny us the fabric), and
 * one that exists anyway makes the opener draw another token.  The owner
 * unlinks it on close; segments whose owner died are swept by the next open
 * (owner pid + start time, so a recycled pid does not keep a segment alive).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_direct.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* 64 unpredictable bits for a port name (the kernel's random source; the
 * clock and a counter only if that fails, which is logged). */
static uint64_t soft_test_tokens[SOFT_NAME_TRIES];
static unsigned soft_test_ntokens;
static pthread_mutex_t soft_token_lock = PTHREAD_MUTEX_INITIALIZER;

void dcx_soft_test_set_tokens(const uint64_t *tokens, unsigned count)
{
    unsigned i;

    pthread_mutex_lock(&soft_token_lock);
    soft_test_ntokens = (count < SOFT_NAME_TRIES) ? count : SOFT_NAME_TRIES;
    for (i = 0; i < soft_test_ntokens; ++i) {
        soft_test_tokens[soft_test_ntokens - 1 - i] = tokens[i];
    }
    pthread_mutex_unlock(&soft_token_lock);
}

static uint64_t soft_random_token(const char *name)
{
    static uint64_t fallback;
    uint64_t token = 0;
    ssize_t n      = -1;
    int fd;

    pthread_mutex_lock(&soft_token_lock);
    if (soft_test_ntokens > 0) {
        token = soft_test_tokens[--soft_test_ntokens];
        pthread_mutex_unlock(&soft_token_lock);
        return token;
    }
    pthread_mutex_unlock(&soft_token_lock);

    n = syscall(SYS_getrandom, &token, sizeof(token), 0);
    if (n != (ssize_t)sizeof(token)) {
        fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            n = read(fd, &token, sizeof(token));
            close(fd);
        }
    }
    if (n != (ssize_t)sizeof(token)) {
        dcx_warn("%s: no kernel random source: port name derived from the "
                 "clock (guessable)",
                 name);
        token = soft_now_ns() ^ ((uint64_t)getpid() << 32) ^
                (__atomic_add_fetch(&fallback, 1, __ATOMIC_RELAXED) *
                 0x9e3779b97f4a7c15ull);
    }
    return token ? token : 1;
}

static void soft_ring_init(soft_ring_t *ring, void *base, uint64_t offset,
                           uint32_t payload)
{
    uint32_t i;

    ring->nslots    = SOFT_RING_SLOTS;
    ring->payload   = payload;
    ring->slot_size = SOFT_SLOT_SIZE(payload);
    ring->offset    = offset;
    ring->tail      = 0;
    ring->head      = 0;
    ring->freed     = 0;
    for (i = 0; i < ring->nslots; ++i) {
        soft_slot_t *slot = (soft_slot_t *)((char *)base + offset +
                                            (uint64_t)i * ring->slot_size);
        slot->seq         = i;
    }
}

/* Ports this process owns, unlinked at exit if the application did not
 * close its devices (a crash leaves them to the next open's sweep). */
#define SOFT_OWNED_MAX 64
static pthread_mutex_t soft_owned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    pid_t pid;
    char name[128];
} soft_owned[SOFT_OWNED_MAX];

static void soft_owned_set(const char *name, int add)
{
    int i;

    pthread_mutex_lock(&soft_owned_lock);
    for (i = 0; i < SOFT_OWNED_MAX; ++i) {
        if (add && (soft_owned[i].pid == 0)) {
            soft_owned[i].pid = getpid();
            snprintf(soft_owned[i].name, sizeof(soft_owned[i].name), "%s",
                     name);
            break;
        }
        if (!add && (soft_owned[i].pid != 0) &&
            !strcmp(soft_owned[i].name, name)) {
            soft_owned[i].pid = 0;
            break;
        }
    }
    pthread_mutex_unlock(&soft_owned_lock);
}

__attribute__((destructor)) static void soft_owned_cleanup(void)
{
    pid_t self = getpid();
    int i;

    for (i = 0; i < SOFT_OWNED_MAX; ++i) {
        /* a forked child inherits the table: only the owner unlinks */
        if (soft_owned[i].pid == self) {
            shm_unlink(soft_owned[i].name);
        }
    }
}

int soft_port_create(soft_dev_t *dev)
{
    uint64_t ring_bytes, size, ack_off;
    uint32_t payload = dev->limits.mtu;
    soft_port_hdr_t *hdr;
    unsigned tries;
    int fd = -1;

    ring_bytes = (uint64_t)SOFT_RING_SLOTS * SOFT_SLOT_SIZE(payload);
    size    = SOFT_SEG_HDR_SIZE + 2 * ring_bytes + soft_direct_area_size(dev);
    /* the ack table last, on a line boundary (pages are touched only for
     * the DCIs that are used) */
    ack_off = (size + 63u) & ~(uint64_t)63u;
    size    = ack_off + (uint64_t)dev->max_qps * sizeof(soft_ack_t);

    /* The name carries a random token: nobody can predict it, and a name
     * that exists already (a collision, or someone who guessed it) only
     * makes us draw another one. */
    for (tries = 0; tries < SOFT_NAME_TRIES; ++tries) {
        dev->token = soft_random_token(dev->super.caps.name);
        soft_seg_name(dev->seg_name, sizeof(dev->seg_name), dev->uid,
                      dev->fabric, dev->pid, dev->token);
        fd = shm_open(dev->seg_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
                      0600);
        if ((fd >= 0) || (errno != EEXIST)) {
            break;
        }
        dcx_debug("%s: port segment name %s is taken, drawing another",
                  dev->super.caps.name, dev->seg_name);
    }
    if (fd < 0) {
        int err = errno;
        if (err == EEXIST) {
            dcx_error("%s: cannot create a port segment: %u random names "
                      "under /dev/shm/" SOFT_SEG_PREFIX "%u.%s.%u.* all exist "
                      "(someone is creating them)",
                      dev->super.caps.name, SOFT_NAME_TRIES, dev->uid,
                      dev->fabric, dev->pid);
        } else {
            dcx_error("%s: cannot create port segment %s: %s",
                      dev->super.caps.name, dev->seg_name, strerror(err));
        }
        return err;
    }
    if ((fchmod(fd, 0600) != 0) || (ftruncate(fd, (off_t)size) != 0)) {
        int err = errno;
        dcx_error("%s: cannot size port segment %s: %s", dev->super.caps.name,
                  dev->seg_name, strerror(err));
        close(fd);
        shm_unlink(dev->seg_name);
        return err;
    }
    hdr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (hdr == MAP_FAILED) {
        int err = errno;
        dcx_error("%s: cannot map port segment %s: %s", dev->super.caps.name,
                  dev->seg_name, strerror(err));
        shm_unlink(dev->seg_name);
        return err;
    }

    hdr->version     = SOFT_VERSION;
    hdr->fence_hint  = 1; /* senders fence until the owner clears it */
    hdr->qpn_base    = dev->qpn_base;
    hdr->clock_kind  = (uint32_t)soft_clock_kind;
    hdr->last_poll   = soft_clock_now();
    hdr->owner_pid   = (int32_t)dev->pid;
    hdr->inst        = dev->inst;
    hdr->owner_start = soft_proc_start_time(dev->pid);
    hdr->seg_size    = size;
    hdr->uid         = dev->uid;
    hdr->host        = dev->host;
    hdr->token       = dev->token;
    snprintf(hdr->fabric, sizeof(hdr->fabric), "%s", dev->fabric);
    soft_ring_init(&hdr->req, hdr, SOFT_SEG_HDR_SIZE, payload);
    soft_ring_init(&hdr->resp, hdr, SOFT_SEG_HDR_SIZE + ring_bytes, payload);
    soft_direct_init(dev, hdr, SOFT_SEG_HDR_SIZE + 2 * ring_bytes);
    soft_rings_warm(dev, hdr, size);
    hdr->ack_off   = ack_off;
    hdr->ack_count = dev->max_qps;
    dev->acks      = (soft_ack_t *)((char *)hdr + ack_off);
    __atomic_store_n(&hdr->ready, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&hdr->magic, SOFT_MAGIC, __ATOMIC_RELEASE);

    dev->hdr      = hdr;
    dev->seg_size = size;
    soft_ring_view(hdr, &hdr->req, &dev->req_stall);
    soft_ring_view(hdr, &hdr->resp, &dev->resp_stall);
    dev->req_stall.slot_size  = SOFT_SLOT_SIZE(payload);
    dev->resp_stall.slot_size = SOFT_SLOT_SIZE(payload);
    soft_owned_set(dev->seg_name, 1);
    return 0;
}

void soft_port_destroy(soft_dev_t *dev)
{
    if (dev->hdr != NULL) {
        __atomic_store_n(&dev->hdr->killed, 1, __ATOMIC_RELEASE);
        soft_direct_gen_bump(dev);
        munmap(dev->hdr, dev->seg_size);
        dev->hdr  = NULL;
        dev->acks = NULL;
    }
    shm_unlink(dev->seg_name);
    soft_owned_set(dev->seg_name, 0);
}

/* Removes segments of this user whose owner is gone. */
void soft_fabric_sweep(uint32_t uid)
{
    char prefix[64], path[320], fabric[64];
    unsigned long long token;
    unsigned pid, suid;
    struct dirent *de;
    DIR *dir;

    snprintf(prefix, sizeof(prefix), SOFT_SEG_PREFIX "%u.", uid);
    dir = opendir("/dev/shm");
    if (dir == NULL) {
        return;
    }
    while ((de = readdir(dir)) != NULL) {
        soft_port_hdr_t *hdr;
        uint64_t start = 0;
        struct stat st;
        const char *tail;
        int fd, dead;

        if (strncmp(de->d_name, prefix, strlen(prefix)) != 0) {
            continue;
        }
        /* <uid>.<fabric>.<pid>.<token>: parse pid from the end */
        tail = strrchr(de->d_name, '.');
        if ((tail == NULL) || (sscanf(tail + 1, "%llx", &token) != 1)) {
            continue;
        }
        {
            const char *p = tail - 1;
            while ((p > de->d_name) && (*p != '.')) {
                --p;
            }
            if ((sscanf(p + 1, "%u", &pid) != 1) ||
                (sscanf(de->d_name + strlen(SOFT_SEG_PREFIX), "%u.%63[^.]",
                        &suid, fabric) != 2)) {
                continue;
            }
        }
        snprintf(path, sizeof(path), "/%s", de->d_name);
        fd = shm_open(path, O_RDONLY | O_CLOEXEC, 0);
        if (fd < 0) {
            continue;
        }
        if ((fstat(fd, &st) == 0) && (st.st_uid == uid) &&
            ((size_t)st.st_size >= sizeof(*hdr))) {
            hdr = mmap(NULL, sizeof(*hdr), PROT_READ, MAP_SHARED, fd, 0);
            if (hdr != MAP_FAILED) {
                if ((hdr->magic == SOFT_MAGIC) &&
                    ((uint32_t)hdr->owner_pid == pid)) {
                    start = hdr->owner_start;
                }
                munmap(hdr, sizeof(*hdr));
            }
        }
        close(fd);
        dead = !soft_pid_alive(pid, start);
        if (dead) {
            dcx_debug("soft fabric: removing stale segment %s (owner %u gone)",
                      path, pid);
            shm_unlink(path);
        }
    }
    closedir(dir);
}
