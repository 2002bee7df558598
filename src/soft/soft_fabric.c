/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device fabric: the hosts and addresses of ports, peers and their
 * mapping, owner liveness, the rings' out-of-line parts and the helper
 * doorbell.  A device's own port segment (its name, creation and removal,
 * and the sweep of dead owners' segments) is in soft_seg.c, above this
 * file and direct access, whose area the segment holds.
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
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint32_t soft_fnv(uint32_t h, const void *data, size_t len)
{
    const uint8_t *c = data;
    size_t i;

    for (i = 0; i < len; ++i) {
        h = (h ^ c[i]) * 16777619u;
    }
    return h;
}

uint32_t soft_fabric_hash(const char *fabric)
{
    return soft_fnv(2166136261u, fabric, strlen(fabric));
}

/* Two ports can reach each other only through one /dev/shm of one running
 * kernel: the host identity is the kernel's boot id together with the
 * device and inode of /dev/shm (containers with private /dev/shm mounts on
 * one host are different hosts to the soft fabric). */
static uint32_t soft_host_id_value;
static pthread_once_t soft_host_id_once = PTHREAD_ONCE_INIT;

static void soft_host_id_init(void)
{
    uint32_t h = 2166136261u;
    char boot[64];
    struct stat st;
    ssize_t n;
    int fd;

    fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, boot, sizeof(boot));
        close(fd);
        if (n > 0) {
            h = soft_fnv(h, boot, (size_t)n);
        }
    }
    if (stat("/dev/shm", &st) == 0) {
        uint64_t ids[2] = {(uint64_t)st.st_dev, (uint64_t)st.st_ino};

        h = soft_fnv(h, ids, sizeof(ids));
    }
    soft_host_id_value = h ? h : 1;
}

uint32_t soft_host_id(void)
{
    pthread_once(&soft_host_id_once, soft_host_id_init);
    return soft_host_id_value;
}

/* The checks dcx_ah_create() makes, shared with dcx_dev_addr_check(): a
 * port address of this format, user, host and fabric.  Returns 0 (and the
 * decoded address in *out if not NULL) or EINVAL with the reason in why. */
int soft_addr_check(soft_dev_t *dev, const void *addr, size_t len,
                    soft_addr_t *out, char *why, size_t why_len)
{
    soft_addr_t a;

    if ((addr == NULL) || (len != SOFT_ADDR_LEN)) {
        snprintf(why, why_len,
                 "address of %zu bytes, a soft port address "
                 "has %u",
                 (addr == NULL) ? 0 : len, SOFT_ADDR_LEN);
        return EINVAL;
    }
    memcpy(&a, addr, sizeof(a));
    if (a.magic != SOFT_ADDR_MAGIC) {
        snprintf(why, why_len, "not a soft port address (magic 0x%x)",
                 (unsigned)a.magic);
        return EINVAL;
    }
    if (a.uid != dev->uid) {
        snprintf(why, why_len,
                 "port of user %u, this device belongs to user "
                 "%u",
                 a.uid, dev->uid);
        return EINVAL;
    }
    if (a.host != dev->host) {
        snprintf(why, why_len,
                 "port on another host (host id 0x%x, this one "
                 "0x%x)",
                 a.host, dev->host);
        return EINVAL;
    }
    if (a.fabric != dev->fabric_hash) {
        snprintf(why, why_len, "port of another fabric (not '%s')",
                 dev->fabric);
        return EINVAL;
    }
    if ((a.pid == 0) || (a.inst == 0) || (a.token == 0)) {
        snprintf(why, why_len, "malformed port address (pid %u, token %s)",
                 a.pid, a.token ? "set" : "zero");
        return EINVAL;
    }
    if (out != NULL) {
        *out = a;
    }
    return 0;
}

/* Makes the pages of a segment's two rings ready for use, the owner's when
 * it creates its port, a sender's when it maps a peer's: a ring spreads its
 * slots a page or more apart, so the first lap of a fresh pair of processes
 * meets a fresh page with almost every packet, on each side.  The page
 * tables are filled in one system call (no fault per page later), and,
 * unless limits.cold_rings, each page is then read once: in a virtual
 * machine the first access of a process to a page can cost microseconds
 * more than the guest's page fault (the hypervisor fills its own tables
 * then), which populating does not take.  Measured in one such VM: ~5 us a
 * page, ~5 ms for a port's two rings, where the first 128 transfers of a
 * strided key took 28 us each instead of 4.  Best effort: a kernel without
 * MADV_POPULATE_WRITE (before 5.14) takes the faults on the reads. */
void soft_rings_warm(const soft_dev_t *dev, soft_port_hdr_t *hdr,
                     size_t map_size)
{
    uint64_t start = hdr->req.offset & ~(uint64_t)4095u;
    uint64_t end   = hdr->resp.offset +
                   (uint64_t)hdr->resp.nslots * hdr->resp.slot_size;
    const volatile uint8_t *page;
    uint64_t off;

    if ((start >= end) || (end > map_size)) {
        return; /* a peer's header that does not describe its rings */
    }
#ifdef MADV_POPULATE_WRITE
    if (madvise((char *)hdr + start, end - start, MADV_POPULATE_WRITE) != 0) {
        dcx_debug("%s: rings of pid %d's port not populated ahead (%s)",
                  dev->super.caps.name, hdr->owner_pid, strerror(errno));
    }
#endif
    if (dev->limits.cold_rings) {
        return;
    }
    page = (const volatile uint8_t *)hdr;
    for (off = start; off < end; off += 4096) {
        (void)page[off];
    }
}

/* Notes where the peer's ack table is, from its header, bounded by what we
 * mapped (the header is the peer's to write). */
static void soft_peer_set_acks(soft_peer_t *peer)
{
    soft_port_hdr_t *hdr = peer->hdr;
    uint64_t off         = __atomic_load_n(&hdr->ack_off, __ATOMIC_RELAXED);
    uint64_t count       = __atomic_load_n(&hdr->ack_count, __ATOMIC_RELAXED);

    if ((off == 0) || (off > peer->map_size) || (off % sizeof(soft_ack_t))) {
        return;
    }
    if (count > (peer->map_size - off) / sizeof(soft_ack_t)) {
        count = (peer->map_size - off) / sizeof(soft_ack_t);
    }
    peer->ack_count = (uint32_t)count;
    peer->acks      = (soft_ack_t *)((char *)hdr + off);
}

/* The longest light packet to the peer (peer->light_max), once mapped: a
 * post compares its length once, not with our MTU and its slots' payload;
 * and its slots' size for far payloads (peer->far_slot) */
static void soft_peer_set_light_max(soft_dev_t *dev, soft_peer_t *peer)
{
    uint32_t payload   = __atomic_load_n(&peer->hdr->req.payload,
                                         __ATOMIC_RELAXED);
    uint32_t slot_size = __atomic_load_n(&peer->hdr->req.slot_size,
                                         __ATOMIC_RELAXED);

    peer->light_max = (payload < dev->limits.mtu) ? payload : dev->limits.mtu;
    peer->far_slot  = (((slot_size % 64u) == 0) &&
                      soft_light_far_ok(slot_size, peer->light_max)) ?
                          slot_size :
                          0;
}

soft_peer_t *soft_peer_known(soft_dev_t *dev, uint32_t pid, uint32_t inst,
                             uint64_t token, uint64_t mask)
{
    soft_peer_t *peer;

    for (peer = dev->peers; peer != NULL; peer = peer->next) {
        if ((peer->pid == pid) && (peer->inst == inst) &&
            (((peer->token ^ token) & mask) == 0)) {
            return peer;
        }
    }
    return NULL;
}

soft_peer_t *soft_peer_get(soft_dev_t *dev, uint32_t pid, uint32_t inst,
                           uint64_t token)
{
    soft_peer_t *peer = soft_peer_known(dev, pid, inst, token, ~0ull);

    if (peer != NULL) {
        return peer;
    }
    peer = calloc(1, sizeof(*peer));
    if (peer == NULL) {
        return NULL;
    }
    peer->pid   = pid;
    peer->inst  = inst;
    peer->token = token;
    if ((pid == dev->pid) && (inst == dev->inst) && (token == dev->token)) {
        peer->own      = 1;
        peer->hdr      = dev->hdr;
        peer->map_size = dev->seg_size;
        soft_peer_set_acks(peer);
        soft_peer_set_light_max(dev, peer);
    }
    peer->next = dev->peers;
    dev->peers = peer;
    return peer;
}

/* Maps the peer's segment on first use; NULL if it is not there (yet). */
soft_port_hdr_t *soft_peer_map(soft_dev_t *dev, soft_peer_t *peer)
{
    soft_port_hdr_t *hdr;
    char name[128];
    struct stat st;
    uint64_t now;
    int fd;

    if (peer->hdr != NULL) {
        return peer->hdr;
    }
    now = soft_now_ns();
    if (now < peer->next_try_ns) {
        return NULL;
    }
    peer->next_try_ns = now + 1000000ull; /* at most one try per ms */

    soft_seg_name(name, sizeof(name), dev->uid, dev->fabric, peer->pid,
                  peer->token);
    fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
        return NULL;
    }
    if ((fstat(fd, &st) != 0) || (st.st_uid != dev->uid) ||
        ((size_t)st.st_size < SOFT_SEG_HDR_SIZE)) {
        close(fd);
        return NULL;
    }
    hdr = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
               0);
    close(fd);
    if (hdr == MAP_FAILED) {
        return NULL;
    }
    /* the header must describe the port the address names */
    /* the version too: the header's layout and units (poll stamps) are
     * those of one version */
    if ((__atomic_load_n(&hdr->magic, __ATOMIC_ACQUIRE) != SOFT_MAGIC) ||
        (hdr->version != SOFT_VERSION) ||
        (hdr->seg_size != (uint64_t)st.st_size) ||
        ((uint32_t)hdr->owner_pid != peer->pid) || (hdr->inst != peer->inst) ||
        (hdr->token != peer->token) || (hdr->uid != dev->uid) ||
        (hdr->host != dev->host) ||
        strncmp(hdr->fabric, dev->fabric, sizeof(hdr->fabric))) {
        munmap(hdr, (size_t)st.st_size);
        return NULL;
    }
    peer->hdr      = hdr;
    peer->map_size = (size_t)st.st_size;
    if (peer->pid != dev->pid) {
        __atomic_store_n(&dev->remote_peers, 1, __ATOMIC_RELAXED);
    }
    soft_rings_warm(dev, hdr, peer->map_size);
    soft_peer_set_acks(peer);
    soft_peer_set_light_max(dev, peer);
    return hdr;
}

/* True if the peer cannot answer any more: process gone or port killed. */
int soft_peer_dead(soft_dev_t *dev, soft_peer_t *peer)
{
    uint64_t start = 0;
    int life;

    if (peer->own) {
        return dev->killed;
    }
    if (peer->hdr != NULL) {
        if (__atomic_load_n(&peer->hdr->killed, __ATOMIC_ACQUIRE)) {
            return 1;
        }
        /* its liveness lock, when it publishes one, tells without a
         * system call, and also tells an exec (the pid lives on in
         * another program that never serves this port) */
        life = soft_direct_peer_life(peer);
        if (life != SOFT_LIFE_UNKNOWN) {
            return life == SOFT_LIFE_DEAD;
        }
        start = peer->hdr->owner_start;
    }
    return !soft_pid_alive(peer->pid, start);
}

int soft_peers_any_dead(void *arg)
{
    soft_dev_t *dev = arg;
    soft_peer_t *peer;

    for (peer = dev->peers; peer != NULL; peer = peer->next) {
        if (!peer->own && soft_peer_dead(dev, peer)) {
            return 1;
        }
    }
    return 0;
}

void soft_peers_free(soft_dev_t *dev)
{
    soft_peer_t *peer;

    while ((peer = dev->peers) != NULL) {
        dev->peers = peer->next;
        soft_dslot_unhold(peer); /* its area is still mapped */
        if (!peer->own && (peer->hdr != NULL)) {
            munmap(peer->hdr, peer->map_size);
        }
        free(peer);
    }
}

/* ------------------------------------------------------------------------
 * Rings: bounded MPSC queues (see soft_ring.h, "Ring slots", for the lines a
 * message moves between the two processes).  A producer finds room from
 * the consumer's 'freed' (a copy it keeps, reread only when the ring looks
 * full), claims a position with a CAS on tail, marks the claim in its
 * slot with a CAS of seq to SOFT_SEQ_CLAIMED(pos, pid) (and claims again
 * if the consumer skipped the claim first), fills the header fields of
 * its packet and publishes it with seq = pos + 1.  The consumer reads the
 * head slot's seq (no line of the producers' but the slot), consumes a
 * slot by moving its own head, writing nothing in the slot, and clears
 * consumed slots later, when nothing waits on it (soft_ring_clear).
 * ------------------------------------------------------------------------ */
int soft_ring_publish(soft_port_hdr_t *hdr, soft_ring_t *ring, uint64_t pos)
{
    soft_ring_publish_quiet(hdr, ring, pos);
    return soft_port_kick(hdr);
}

/* Consumer side: clears the slots consumed since the last call and frees
 * them (soft_ring_clear_inline, soft_ring.h, says how); out of line for
 * every caller but the end of an engine pass */
unsigned soft_ring_clear(soft_port_hdr_t *hdr, soft_ring_t *ring, uint64_t end)
{
    return soft_ring_clear_inline(hdr, ring, end);
}

/* 1 if a slot of the ring is claimed at the head but not published: its
 * claim mark, or the tail (read at most once per SOFT_RING_TAIL_NS of
 * 'now' per stall watch: the tail is the producers' line, and a producer
 * that died between its CAS and its mark leaves nothing else). */
static int soft_ring_claimed(soft_ring_t *ring, soft_slot_t *slot, uint64_t pos,
                             soft_stall_t *st, uint64_t now)
{
    if (soft_seq_marks(__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE), pos)) {
        return 1;
    }
    if ((st->since_ns != 0) && (st->pos == pos)) {
        return 1; /* seen claimed before: the watch goes on */
    }
    if (now < st->tail_look_ns) {
        return 0;
    }
    st->tail_look_ns = now + SOFT_RING_TAIL_NS;
    return __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE) != pos;
}

/* Called when the head slot is not ready.  A producer that died between
 * claiming a slot and publishing it would block the ring for good: once the
 * head has been stuck for 1 ms, look at the claimer (its pid is in its
 * mark) and skip the slot if that process is gone.  A claim without mark
 * names nobody: a producer killed between its claim and its mark (seen
 * when a peer is killed mid-traffic: its claim blocked our response ring,
 * and our live endpoints' requests ran out of retries behind it) is
 * skipped after SOFT_RING_GONE_NS once gone() says a process that may
 * have claimed it has died, after 2 s otherwise.  Its claimer may be alive
 * all the same, descheduled between its claim and its mark for longer
 * than that (a starved VM): the skip is a CAS of seq from the state this
 * look found to pos + 1, and the claimer's mark, a CAS from a state of an
 * older lap, then fails and it claims again (soft_ring_mark_c); if its
 * mark came first, the skip fails and the claim, named now, is kept.
 * Returns 1 if a slot was skipped. */
int soft_ring_unstick(soft_port_hdr_t *hdr, soft_ring_t *ring, soft_stall_t *st,
                      uint64_t now, const char *name, int (*gone)(void *arg),
                      void *arg)
{
    uint64_t pos      = ring->head;
    soft_slot_t *slot = soft_ring_slot(hdr, ring, pos);
    uint64_t seq;
    uint32_t owner;

    if (!soft_ring_claimed(ring, slot, pos, st, now)) {
        st->since_ns = 0;
        return 0; /* empty, nothing claimed (that we know of) */
    }
    if ((st->since_ns == 0) || (st->pos != pos)) {
        st->pos           = pos;
        st->since_ns      = now;
        st->next_check_ns = now + 1000000ull;
        return 0;
    }
    if (now < st->next_check_ns) {
        return 0;
    }
    st->next_check_ns = now + 1000000ull;
    seq               = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
    if (seq == pos + 1) {
        st->since_ns = 0;
        return 0; /* published since the caller's look */
    }
    owner = soft_seq_marks(seq, pos) ? SOFT_SEQ_OWNER(seq) : 0;
    if (((owner != 0) && !soft_pid_alive(owner, 0)) ||
        ((owner == 0) && ((now - st->since_ns > 2000000000ull) ||
                          ((now - st->since_ns >= SOFT_RING_GONE_NS) &&
                           (gone != NULL) && gone(arg))))) {
        if (!__atomic_compare_exchange_n(&slot->seq, &seq, pos + 1, 0,
                                         __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            return 0; /* marked since the load: its claimer is named */
        }
        if (owner != 0) {
            dcx_warn("%s: port %s ring: skipping a slot claimed by dead "
                     "process %u",
                     name, (ring == &hdr->req) ? "request" : "response", owner);
        } else {
            dcx_warn("%s: port %s ring: skipping a claim without mark "
                     "(claimer unknown, stalled %llu ms)",
                     name, (ring == &hdr->req) ? "request" : "response",
                     (unsigned long long)((now - st->since_ns) / 1000000ull));
        }
        /* cleared and freed with the consumed ones (soft_ring_clear) */
        __atomic_store_n(&ring->head, pos + 1, __ATOMIC_RELAXED);
        soft_ring_view(hdr, ring, st);
        st->since_ns = 0;
        return 1;
    }
    return 0;
}

uint32_t soft_pkt_csum(const soft_pkt_t *pkt)
{
    const uint64_t *w = (const uint64_t *)pkt;
    size_t i, n = offsetof(soft_pkt_t, csum) / sizeof(uint64_t);
    uint64_t h = 0x9e3779b97f4a7c15ull;
    uint32_t tail;

    for (i = 0; i < n; ++i) {
        h = (h ^ w[i]) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    /* the 4 bytes between the last whole word and csum (status, ...) */
    memcpy(&tail, (const char *)pkt + n * sizeof(uint64_t), sizeof(tail));
    h = (h ^ tail) * 0x100000001b3ull;
    h ^= h >> 29;
    return (uint32_t)(h ^ (h >> 32));
}

/* ------------------------------------------------------------------------
 * Doorbell: wake the port owner's helper only if it is in deep sleep.
 * ------------------------------------------------------------------------ */
int soft_futex_wait(uint32_t *addr, uint32_t val, uint64_t timeout_ns)
{
    struct timespec ts, *tsp = NULL;

    if (timeout_ns != 0) {
        ts.tv_sec  = (time_t)(timeout_ns / 1000000000ull);
        ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
        tsp        = &ts;
    }
    return (int)syscall(SYS_futex, addr, FUTEX_WAIT, val, tsp, NULL, 0);
}

/* Rings the doorbell unless another sender did since the helper last
 * woke up (the helper has not run yet: one wake serves them all).  The
 * doorbell moved since the helper read it, so its wait cannot miss this.
 * 1 if it made the syscall. */
int soft_port_wake_once(soft_port_hdr_t *hdr)
{
    if (__atomic_exchange_n(&hdr->woken, 1, __ATOMIC_SEQ_CST)) {
        return 0;
    }
    __atomic_fetch_add(&hdr->doorbell, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, &hdr->doorbell, FUTEX_WAKE, 1, NULL, NULL, 0);
    return 1;
}

/* Wakes the port's helper if it is in deep sleep; 1 if it rang. */
int soft_port_kick_sleeping(soft_port_hdr_t *hdr)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return soft_port_kick_sleeping_seen(hdr);
}

/* The same after a full barrier (soft_fence_after_locked) */
int soft_port_kick_sleeping_seen(soft_port_hdr_t *hdr)
{
    if (__atomic_load_n(&hdr->sleeping, __ATOMIC_RELAXED) == SOFT_HELPER_DEEP) {
        return soft_port_wake_once(hdr);
    }
    return 0;
}

/* Rings the doorbell unconditionally: the helper wakes from a nap or a deep
 * sleep alike. */
void soft_port_ring(soft_port_hdr_t *hdr)
{
    __atomic_fetch_add(&hdr->doorbell, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, &hdr->doorbell, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* After queueing a packet: wakes the port's helper if it is in deep sleep,
 * or if it naps and the owner application is not polling (then the helper
 * does the work now rather than at the end of its nap).  A helper parked
 * behind a polling application costs a sender one read of a line the
 * owner does not write per poll (SOFT_HELPER_PARKED).  1 if it rang. */
int soft_port_kick(soft_port_hdr_t *hdr)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return soft_port_kick_seen(hdr);
}

/* The same after a full barrier between the packet's publish and this
 * read of 'sleeping' (soft_fence_after_locked): the light post kicks after
 * its unlock, whose xchg is that barrier on x86 */
int soft_port_kick_seen(soft_port_hdr_t *hdr)
{
    return soft_port_kick_due(hdr) ? soft_port_wake_once(hdr) : 0;
}
