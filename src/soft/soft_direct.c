/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: RDMA WRITE and READ executed by the initiator, as a NIC
 * executes them by DMA: one copy between the two processes' registered
 * memory (process_vm_writev / process_vm_readv on the target's pid), with
 * no target CPU involved, and a completion generated locally.
 *
 * Tables.  A port whose device was opened with limits.direct publishes, at
 * the end of its segment (soft_direct_area_t), a copy of what its responder
 * checks: per DCT (number, DC key, access, not in error) and per plain MR
 * (key, access, [start, end)), each entry under a seqlock (seq odd while it
 * changes).  Only the owner writes them, under its mr_lock / engine lock
 * (soft_dpublish.c, with the owner's wait of the protocol below).
 *
 * When the initiator goes direct (soft_direct_exec): only for RDMA_WRITE /
 * RDMA_READ of at least one byte, when the DCI has nothing else on the
 * wire (so an atomic or any earlier operation of the DCI completes first:
 * per-DCI order is kept; a later AM's packet is queued only after the
 * write's data is in place), no fault injection is configured here, the
 * target is not killed and publishes its tables, the local sges are plain
 * MRs, the target's DCT and MR entries grant the access over the whole
 * range, and cross-memory attach works towards that target.  In every
 * other case, and on every check that fails, the WQE takes the packet path
 * unchanged: the target's responder then produces exactly today's outcome
 * (REM_ACCESS_ERR NAK, DC key drop and timeout, its counters).  Nothing was
 * written by then except when a deregistration raced a transfer in
 * progress, as it may with a NIC.
 *
 * A WRITE or READ of at least one packet's data (an MTU) whose DCI still
 * has earlier work on the wire does not go in packets when it could go
 * direct (soft_direct_ready, asked by soft_req_run): it waits in the send
 * queue until that work completed, then copies.  The earlier work needs
 * the target's responder once for its acknowledgement; the packets would
 * need it once per MTU, and copy their data twice (into the ring and out
 * of it).  UCP's software rendezvous posts exactly that: the ATS of one
 * message and the READ of the next on one endpoint.
 *
 * Memory that cannot be mapped (heap: what MPI passes) is copied by
 * process_vm_writev / readv even when the target polls and a small WRITE
 * could go as a light packet: measured with ucx_perftest at 8 B on the
 * development VM (pinned, alternating), the system call (~1.4 us there)
 * still beat the light packet, put_lat p50 1.7-2.1 us against 3.1-3.8 us
 * and put_bw 9-13 us a message against 34-41 us, and it needs no target
 * CPU.
 *
 * Deregistration protocol (no write after mr_dereg / an unmap hook returns):
 *  writer, per chunk of at most SOFT_DIRECT_CHUNK bytes, with a slot of the
 *  target's marker table claimed for the operation (owner = our device
 *  token, pid and process start time for liveness):
 *    1. slot.key = rkey                      (seq_cst store: intent)
 *    2. read the MR entry under its seqlock (seq_cst loads) and check it
 *    3. process_vm_writev / readv of the chunk
 *    4. slot.gen++; slot.key = 0             (release)
 *  owner, deregistering or invalidating key K:
 *    1. entry: seq odd, key = 0, seq even    (seq_cst stores)
 *    2. for every slot with key == K: wait until its key changes or its
 *       gen moves on (that chunk is over; the writer's next step 2 sees the
 *       entry gone), or its process is dead (the slot is reclaimed).
 *  Either the writer's step 2 follows the owner's step 1 in the single
 *  total order of seq_cst operations, and it sees the entry gone, or its
 *  step 1 precedes the owner's step 2, which then sees the intent and
 *  waits.  The wait is bounded by one chunk's copy; a writer that is alive
 *  but stopped (SIGSTOP, a debugger) with its intent set holds the owner
 *  at most SOFT_DIRECT_WAIT_NS, after which the owner gives up with a
 *  warning (a stopped process has no copy in progress in the kernel: its
 *  pending copy ended before it stopped, so only its *next* chunk could
 *  still run, and that one re-checks the entry first).
 *
 * Copies through a mapping (soft_dmap.c: the target MR lies in a SysV
 * segment the target registered memory in, soft_shm.c, attached by the
 * initiator) follow the same protocol, with a memcpy as step 3, and the
 * entry check of step 2 also requires the segment's serial to be the one
 * the attachment was made of.  One difference: a memcpy is
 * user-space work, so a writer stopped (SIGSTOP, a debugger) in the
 * middle of one holds the owner for SOFT_DIRECT_WAIT_NS and, if it is
 * resumed after the owner gave up, finishes that chunk (at most
 * SOFT_DIRECT_CHUNK bytes) after mr_dereg returned.  Into the same
 * pages: a SysV segment's are still the application's, but the bytes are
 * the chunk's, within the range that was registered.  A writer that dies
 * mid-copy is reclaimed as above.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_dgrant.h"
#include "soft_vector.h"
#include "soft_atomic.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static int soft_direct_none(soft_qp_t *qp, soft_swqe_t *w)
{
    return 0;
}

size_t soft_direct_area_size(const soft_dev_t *dev)
{
    return dev->limits.direct ?
               ((sizeof(soft_direct_area_t) + 4095u) & ~(size_t)4095u) :
               0;
}

/* ------------------------------------------------------------------------
 * Initiator side
 * ------------------------------------------------------------------------ */
/* The target's DCT entry, read consistently: 1 if it is DCT dctn, not in
 * error, with DC key dc_key, with its seq count and access in *seq_p and
 * *acc_p.  The entry of a number is at the number modulo the table's size
 * (soft_direct_dct_publish): any number finds an entry, and only the one
 * published for it has its qpn. */
static inline int soft_direct_dct_read(soft_direct_area_t *area, uint32_t dctn,
                                       uint64_t dc_key, uint32_t *seq_p,
                                       uint32_t *acc_p, uint32_t *ext_p)
{
    soft_ddct_t *e = &area->dcts[dctn % SOFT_DIRECT_DCTS];
    uint32_t s1, qpn, acc, ok, ext;
    uint64_t key;

    do {
        s1  = __atomic_load_n(&e->seq, __ATOMIC_SEQ_CST);
        qpn = __atomic_load_n(&e->qpn, __ATOMIC_RELAXED);
        acc = __atomic_load_n(&e->access, __ATOMIC_RELAXED);
        ok  = __atomic_load_n(&e->ok, __ATOMIC_RELAXED);
        key = __atomic_load_n(&e->dc_key, __ATOMIC_RELAXED);
        ext = __atomic_load_n(&e->ext_max, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
    } while ((s1 & 1) || (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) != s1));
    *seq_p = s1;
    *acc_p = acc;
    *ext_p = ext;
    return ok && (qpn == dctn) && (key == dc_key);
}

/* The target's DCT entry allows 'access' with our DC key (and, for an
 * atomic, executes it: soft_atomic_valid). */
static inline int soft_direct_dct_ok(soft_direct_area_t *area,
                                     const soft_swqe_t *w, uint32_t access)
{
    uint32_t seq, acc, ext;

    return soft_direct_dct_read(area, w->wr.dest.dctn, w->wr.dest.dc_key, &seq,
                                &acc, &ext) &&
           (acc & access) &&
           ((access != DCX_ACCESS_REMOTE_ATOMIC) ||
            soft_atomic_valid(w->wr.opcode, (unsigned)w->total_len, ext));
}

/* The remote access w (RDMA WRITE, READ or an atomic) needs */
static inline uint32_t soft_direct_access(const soft_swqe_t *w)
{
    return soft_opinfo[w->wr.opcode].access;
}

/* The target's MR entry for rkey, read consistently (seq_cst loads: called
 * after our intent is published, see the protocol at the top). */
typedef struct soft_dmr_view {
    uint32_t seq, key, access, alloc, mr_key, count;
    uint64_t start, end, serial, stride, base, length;
} soft_dmr_view_t;

static inline __attribute__((always_inline)) void
soft_direct_entry_read(soft_direct_area_t *area, uint32_t rkey,
                       soft_dmr_view_t *v, int layout)
{
    soft_dmr_t *e = &area->mrs[rkey >> 8];
    uint32_t s1;

    do {
        s1        = __atomic_load_n(&e->seq, __ATOMIC_SEQ_CST);
        v->key    = __atomic_load_n(&e->key, __ATOMIC_SEQ_CST);
        v->access = __atomic_load_n(&e->access, __ATOMIC_RELAXED);
        v->mr_key = __atomic_load_n(&e->mr_key, __ATOMIC_RELAXED);
        if (layout) {
            v->count  = __atomic_load_n(&e->count, __ATOMIC_RELAXED);
            v->stride = __atomic_load_n(&e->stride, __ATOMIC_RELAXED);
            v->base   = __atomic_load_n(&e->base, __ATOMIC_RELAXED);
            v->length = __atomic_load_n(&e->length, __ATOMIC_RELAXED);
        } else {
            v->alloc  = __atomic_load_n(&e->alloc, __ATOMIC_RELAXED);
            v->start  = __atomic_load_n(&e->start, __ATOMIC_RELAXED);
            v->end    = __atomic_load_n(&e->end, __ATOMIC_RELAXED);
            v->serial = __atomic_load_n(&e->serial, __ATOMIC_RELAXED);
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
    } while ((s1 & 1) || (__atomic_load_n(&e->seq, __ATOMIC_SEQ_CST) != s1));
    v->seq = s1;
}

/* A plain MR's fields (and mr_key, which says whether it is one) */
static void soft_direct_mr_read(soft_direct_area_t *area, uint32_t rkey,
                                soft_dmr_view_t *v)
{
    soft_direct_entry_read(area, rkey, v, 0);
}

/* A vector key's layout (mr_key != 0) */
static void soft_direct_vector_read(soft_direct_area_t *area, uint32_t rkey,
                                    soft_dmr_view_t *v)
{
    soft_direct_entry_read(area, rkey, v, 1);
}

/* The entry of a plain MR grants 'access' over [addr, addr + len) (and,
 * for a copy through a mapping, still lies in the allocation the mapping
 * is of). */
static inline int soft_direct_mr_ok(soft_direct_area_t *area, uint32_t rkey,
                                    uint32_t access, uint64_t addr,
                                    uint64_t len, const soft_dmap_ent_t *map)
{
    soft_dmr_view_t v;

    soft_direct_mr_read(area, rkey, &v);
    return (v.key == rkey) && (v.mr_key == 0) && (v.access & access) &&
           (addr >= v.start) && (addr <= v.end) && (len <= v.end - addr) &&
           ((map == NULL) ||
            ((v.alloc == map->slot + 1) && (v.serial == map->serial)));
}

/* The entry of vector key rkey (the layout over MR mr_key, read into *v)
 * grants 'access' over bytes [off, off + len) of the key, and the MR's
 * entry over their addresses, which lie in the mapping: *span gives
 * them. */
static int soft_direct_vector_ok(soft_direct_area_t *area, uint32_t rkey,
                                 uint32_t mr_key, uint32_t access, uint64_t off,
                                 uint64_t len, const soft_dmap_ent_t *map,
                                 soft_dmr_view_t *v, soft_vector_span_t *span)
{
    soft_direct_vector_read(area, rkey, v);
    if ((v->key != rkey) || (v->mr_key != mr_key) || !(v->access & access) ||
        (v->count == 0) || (len == 0) || (off > v->length) ||
        (len > v->length - off) ||
        !soft_vector_span(v->base, v->count, v->stride, off, len, span)) {
        return 0;
    }
    return soft_direct_mr_ok(area, mr_key, access, span->lo,
                             span->hi - span->lo + 1, map) &&
           (span->lo >= map->rbase) && (span->hi - map->rbase < map->len);
}

/* The MR under vector key rkey as its entry says now (a hint: the copy
 * checks it again with soft_direct_vector_ok), or 0 if rkey is published
 * as no vector. */
static uint32_t soft_direct_vector_mr(soft_direct_area_t *area, uint32_t rkey)
{
    soft_dmr_view_t v;

    soft_direct_mr_read(area, rkey, &v);
    return (v.key == rkey) ? v.mr_key : 0;
}

/* iovecs of our side for bytes [off, off + len) of the WQE's data. */
static unsigned soft_direct_local_iov(soft_swqe_t *w, uint64_t off,
                                      uint64_t len, struct iovec *iov)
{
    unsigned i, n = 0;

    if (w->wr.flags & DCX_SEND_INLINE) {
        iov[0].iov_base = w->inl + off;
        iov[0].iov_len  = len;
        return 1;
    }
    for (i = 0; (i < w->wr.num_sge) && (len > 0); ++i) {
        uint64_t chunk;

        if (off >= w->sge[i].length) {
            off -= w->sge[i].length;
            continue;
        }
        chunk = w->sge[i].length - off;
        if (chunk > len) {
            chunk = len;
        }
        iov[n].iov_base = (void *)(uintptr_t)(w->sge[i].addr + off);
        iov[n].iov_len  = chunk;
        ++n;
        len -= chunk;
        off = 0;
    }
    return n;
}

static int soft_direct_local_plain(soft_dev_t *dev, soft_swqe_t *w)
{
    soft_mr_t *key;
    unsigned i;

    if ((dev->num_mkeys == 0) || (w->wr.flags & DCX_SEND_INLINE)) {
        return 1;
    }
    for (i = 0; i < w->wr.num_sge; ++i) {
        key = soft_key_lookup(dev, w->sge[i].lkey);
        if ((key != NULL) && (key->mkey != NULL)) {
            return 0;
        }
    }
    return 1;
}

__attribute__((noinline)) static void
soft_direct_refused(soft_dev_t *dev, soft_peer_t *peer, int err)
{
    peer->direct_off = 1;
    dcx_debug("%s: cross-memory attach to pid %u refused (%s): one-sided "
              "operations to it go through its responder",
              dev->super.caps.name, peer->pid, strerror(err));
}

/* The mapping to copy through for w, or NULL for cross-memory attach: the
 * target MR lies in a SysV segment of the target (soft_shm.c) that we have
 * attached or can attach, the target is alive, and the whole range lies in the
 * mapping.  The entry is only a hint here; every chunk checks it again
 * (so does the mapping used last for the same key, taken without looking
 * at the entry). */
static inline soft_dmap_ent_t *soft_direct_map_for(soft_dev_t *dev,
                                                   soft_peer_t *peer,
                                                   soft_direct_area_t *area,
                                                   const soft_swqe_t *w,
                                                   int *vector_p)
{
    uint64_t raddr = w->wr.remote_addr;
    uint32_t vector;
    soft_dmap_ent_t *map;
    soft_dmr_view_t v;

    map = soft_dmap_last(dev, peer, area, w->wr.rkey);
    if (map == NULL) {
        if (peer->dmap_off) {
            return NULL;
        }
        soft_direct_mr_read(area, w->wr.rkey, &v);
        if (v.key != w->wr.rkey) {
            return NULL;
        }
        vector    = v.mr_key;
        *vector_p = (vector != 0);
        if (vector != 0) {
            /* a vector key: the allocation is its entry's MR's */
            soft_direct_mr_read(area, vector, &v);
            if ((v.key != vector) || (v.mr_key != 0)) {
                return NULL;
            }
        }
        if (v.alloc == 0) {
            return NULL;
        }
        map = soft_dmap_get(dev, peer, area, v.alloc - 1, v.serial);
        if (map == NULL) {
            return NULL;
        }
        map->rkey   = w->wr.rkey;
        map->vector = (vector != 0);
    }
    if (!soft_dmap_alive(dev, map, area)) {
        return NULL;
    }
    /* a vector key's raddr is an offset in its layout: the copy checks
     * the addresses it maps to (soft_direct_vector_ok) */
    if (!map->vector &&
        ((raddr < map->rbase) || (raddr - map->rbase > map->len) ||
         (w->total_len > map->len - (raddr - map->rbase)))) {
        return NULL;
    }
    return map;
}

/* Copies bytes [off, off + len) of w between our iovecs and the mapping. */
static void soft_direct_map_copy(const soft_dmap_ent_t *map, soft_swqe_t *w,
                                 int is_write, uint64_t off,
                                 const struct iovec *liov, unsigned niov)
{
    uint8_t *r = map->local + (w->wr.remote_addr - map->rbase) + off;
    unsigned i;

    for (i = 0; i < niov; ++i) {
        if (is_write) {
            soft_copy_small(r, liov[i].iov_base, liov[i].iov_len);
        } else {
            soft_copy_small(liov[i].iov_base, r, liov[i].iov_len);
        }
        r += liov[i].iov_len;
    }
}

/* Bytes [off, off + len) of w copied between our side and the target:
 * through the mapping map, or (NULL) by cross-memory attach into peer's
 * process.  Returns the bytes copied, or -1 with errno set when the
 * system call failed. */
static inline ssize_t soft_direct_copy(const soft_peer_t *peer,
                                       const soft_dmap_ent_t *map,
                                       soft_swqe_t *w, int is_write,
                                       uint64_t off, uint64_t len)
{
    struct iovec liov[SOFT_MAX_RECV_SGE + 1], riov;
    unsigned niov = soft_direct_local_iov(w, off, len, liov);

    if (map != NULL) {
        soft_direct_map_copy(map, w, is_write, off, liov, niov);
        return (ssize_t)len;
    }
    riov.iov_base = (void *)(uintptr_t)(w->wr.remote_addr + off);
    riov.iov_len  = len;
    return is_write ?
               process_vm_writev((pid_t)peer->pid, liov, niov, &riov, 1, 0) :
               process_vm_readv((pid_t)peer->pid, liov, niov, &riov, 1, 0);
}

/* The checks made before a direct copy of w (RDMA_WRITE or RDMA_READ)
 * claims a marker slot: 1 with the target's area and the mapping to copy
 * through (NULL: cross-memory attach) if w can go direct, 0 if it takes
 * the packet path. */
static inline __attribute__((always_inline)) int
soft_direct_plan(soft_qp_t *qp, soft_swqe_t *w, soft_direct_area_t **areap,
                 soft_dmap_ent_t **mapp)
{
    soft_dev_t *dev   = qp->dev;
    soft_peer_t *peer = w->peer;
    uint32_t access   = soft_direct_access(w);
    uint32_t rkey     = w->wr.rkey;
    int vector        = 0;
    soft_direct_area_t *area;
    soft_port_hdr_t *hdr;
    soft_dmap_ent_t *map;

    if ((w->total_len == 0) || dev->killed ||
        (dev->fault.rule.type != DCX_SOFT_FAULT_NONE) ||
        (w->wr.num_sge > SOFT_MAX_RECV_SGE) ||
        ((rkey >> 8) >= SOFT_DIRECT_MRS) ||
        ((hdr = soft_peer_map(dev, peer)) == NULL) ||
        __atomic_load_n(&hdr->killed, __ATOMIC_ACQUIRE) ||
        ((area = soft_direct_area_of(hdr, peer->map_size)) == NULL) ||
        !soft_direct_dct_ok(area, w, access) ||
        !soft_direct_local_plain(dev, w)) {
        return 0;
    }
    if (soft_direct_life(area) == SOFT_LIFE_DEAD) {
        /* its process died, or exec'd (then the pid lives on with other
         * memory at our addresses): no copy, by any means; its responder
         * never answers the packets */
        soft_dmap_forget(dev, peer);
        return 0;
    }
    map = soft_direct_map_for(dev, peer, area, w, &vector);
    if ((map == NULL) && (peer->direct_off || vector)) {
        /* cross-memory attach refused, or a vector key outside the
         * target's allocations, which only its responder walks */
        return 0;
    }
    *areap = area;
    *mapp  = map;
    return 1;
}

/* Whether w (RDMA_WRITE or RDMA_READ) would be copied directly if its DCI
 * had nothing else outstanding: the checks of soft_direct_exec, and the
 * target's entries read once without our intent (a hint: the copy checks
 * them again). */
static int soft_direct_ready(soft_qp_t *qp, soft_swqe_t *w)
{
    uint32_t access = (w->wr.opcode == DCX_WR_RDMA_WRITE) ?
                          DCX_ACCESS_REMOTE_WRITE :
                          DCX_ACCESS_REMOTE_READ;
    soft_direct_area_t *area;
    soft_vector_span_t span;
    soft_dmap_ent_t *map;
    soft_dmr_view_t v;
    uint32_t mr_key;

    if (!soft_direct_plan(qp, w, &area, &map)) {
        return 0;
    }
    if ((map != NULL) && map->vector) {
        mr_key = soft_direct_vector_mr(area, w->wr.rkey);
        return (mr_key != 0) &&
               soft_direct_vector_ok(area, w->wr.rkey, mr_key, access,
                                     w->wr.remote_addr, w->total_len, map, &v,
                                     &span);
    }
    return soft_direct_mr_ok(area, w->wr.rkey, access, w->wr.remote_addr,
                             w->total_len, map);
}

/* w through a vector key, into or out of the mapping of the target's
 * memory (the copy's target is claimed in slot): chunk by chunk, each
 * under the marker of the key's MR (a deregistration of the MR waits for
 * it; a change of the key's layout waits for every marked copy,
 * soft_direct_vector_set), the layout and the MR checked under the mark,
 * the elements copied with the geometry checked.  1 if done, 0 if a check
 * failed (the caller releases the slot and takes the packet path).  Out
 * of line: inlined, it changed how the plain MR's copy in
 * soft_direct_exec was compiled (put_short 807 -> 814 instructions). */
static __attribute__((noinline)) int
soft_direct_vector_exec(soft_direct_area_t *area, soft_dslot_t *slot,
                        const soft_dmap_ent_t *map, soft_swqe_t *w,
                        int is_write, uint32_t access)
{
    struct iovec liov[SOFT_MAX_RECV_SGE + 1];
    soft_vector_span_t span;
    soft_dmr_view_t v;
    uint32_t mr_key;
    uint64_t off, len;

    mr_key = soft_direct_vector_mr(area, w->wr.rkey);
    if (mr_key == 0) {
        return 0;
    }
    for (off = 0; off < w->total_len; off += len) {
        len = w->total_len - off;
        if (len > SOFT_DIRECT_CHUNK) {
            len = SOFT_DIRECT_CHUNK;
        }
        if (soft_direct_local_iov(w, off, len, liov) != 1) {
            return 0; /* our side in pieces: the responder's walk */
        }
        __atomic_store_n(&slot->key, mr_key, __ATOMIC_SEQ_CST); /* intent */
        if (!soft_direct_vector_ok(area, w->wr.rkey, mr_key, access,
                                   w->wr.remote_addr + off, len, map, &v,
                                   &span)) {
            return 0;
        }
        soft_vector_copy(map->local + (span.lo - map->rbase), span.inoff,
                         v.count, v.stride, liov[0].iov_base, len, is_write);
        __atomic_store_n(&slot->gen, slot->gen + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&slot->key, 0, __ATOMIC_RELEASE);
    }
    return 1;
}

/* ------------------------------------------------------------------------
 * The grant (soft_dgrant_t in the peer): the next small copy to the same
 * DCT and key after one that passed every check of soft_direct_plan and
 * soft_direct_mr_ok checks only what could have changed since, each with a
 * load and a compare: the port's gen (which its owner bumps after any
 * change of its enabled flag, its DCT entries, its count of freed
 * allocations, its killed flag or its fencing for plain intents, which
 * fixed the grant's intent mode), the MR entry's seqlock count (any
 * change of the entry moves it for good), the liveness lock's word (the
 * same holder, not dead), our light path's word (fault rules, our port
 * killed), and its own range; the mapping it copies through is not
 * dropped without it (soft_dmap.c).  The deregistration
 * protocol is the same: the MR entry's count is read after our intent, as
 * the full check reads it.
 * ------------------------------------------------------------------------ */
/* Records the grant for w, just copied by the full checks (map: the
 * mapping it went through, NULL: cross-memory attach); no grant when what
 * is read now does not allow the copy (it changed meanwhile), the target's
 * liveness is not what the copy needs, or the key is a vector's.  The gen
 * is read first: a change after it moves it. */
static void soft_direct_grant_make(soft_dev_t *dev, soft_direct_area_t *area,
                                   const soft_dmap_ent_t *map,
                                   const soft_swqe_t *w, uint32_t access)
{
    soft_peer_t *peer = w->peer;
    soft_dgrant_t *g  = &peer->grant;
    uint32_t gen      = __atomic_load_n(&area->gen, __ATOMIC_ACQUIRE);
    uint32_t dseq, dacc, dext, word;
    soft_dmr_view_t v;
    int life;

    g->area = NULL;
    if (((map != NULL) && map->vector) ||
        !__atomic_load_n(&area->enabled, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&peer->hdr->killed, __ATOMIC_ACQUIRE) ||
        !soft_direct_dct_read(area, w->wr.dest.dctn, w->wr.dest.dc_key, &dseq,
                              &dacc, &dext)) {
        return;
    }
    soft_direct_mr_read(area, w->wr.rkey, &v);
    if ((v.key != w->wr.rkey) || (v.mr_key != 0) ||
        !(v.access & dacc & access)) {
        return;
    }
    g->start = v.start;
    g->end   = v.end;
    if (map != NULL) {
        if ((v.alloc != map->slot + 1) || (v.serial != map->serial) ||
            (map->frees != __atomic_load_n(&area->frees, __ATOMIC_ACQUIRE))) {
            return;
        }
        g->start = (map->rbase > g->start) ? map->rbase : g->start;
        g->end   = (map->rbase + map->len < g->end) ? map->rbase + map->len :
                                                      g->end;
    }
    life = soft_direct_life_word(area, &word);
    if ((g->start >= g->end) || (life == SOFT_LIFE_DEAD) ||
        ((map != NULL) && (map->pidfd >= 0) && (life != SOFT_LIFE_ALIVE))) {
        return;
    }
    g->map     = (soft_dmap_ent_t *)map;
    g->dc_key  = w->wr.dest.dc_key;
    g->rkey    = w->wr.rkey;
    g->dctn    = w->wr.dest.dctn;
    g->access  = v.access & dacc;
    g->ext_max = dext;
    g->gen     = gen;
    g->mr_seq  = v.seq;
    g->life    = (life == SOFT_LIFE_ALIVE) ? word : 0;
    g->plain   = dev->plain_intent &&
               __atomic_load_n(&area->asym, __ATOMIC_RELAXED);
    g->area = area;
    dev->stats.direct_grants++;
}

/* The grant's liveness check where its liveness lock was not held when it
 * was made (robust mutexes not available, its helper not started): a copy
 * through a mapping of another process needs it held (that one made no
 * grant); cross-memory attach needs the target not known dead. */
int soft_dgrant_life_unknown(soft_peer_t *peer, const soft_dmap_ent_t *map)
{
    if (map != NULL) {
        return map->pidfd < 0;
    }
    return (soft_direct_life(peer->grant.area) != SOFT_LIFE_DEAD) &&
           !peer->direct_off;
}

/* w (RDMA_WRITE or RDMA_READ of at most an MTU) copied under the grant
 * towards its peer: 1 if done, 0 if the grant does not cover it (nothing
 * was copied; the caller makes the full checks). */
static inline __attribute__((always_inline)) int
soft_direct_grant_exec(soft_dev_t *dev, soft_swqe_t *w, int is_write,
                       uint32_t access)
{
    soft_peer_t *peer = w->peer;
    uint64_t len      = w->total_len;
    soft_dslot_t *slot;
    ssize_t ret;

    slot = soft_dgrant_take(dev, peer, &w->wr.dest, w->wr.rkey,
                            w->wr.remote_addr, len, access,
                            (w->wr.num_sge <= SOFT_MAX_RECV_SGE) &&
                                ((dev->num_mkeys == 0) ||
                                 (w->wr.flags & DCX_SEND_INLINE)),
                            0);
    if (slot == NULL) {
        return 0;
    }
    if (w->wr.num_sge <= 1) {
        /* one piece on our side: inline data or one sge */
        ret = soft_dgrant_copy1(peer,
                                (w->wr.flags & DCX_SEND_INLINE) ?
                                    w->inl :
                                    (uint8_t *)(uintptr_t)w->sge[0].addr,
                                w->wr.remote_addr, len, is_write);
    } else {
        ret = soft_direct_copy(peer, peer->grant.map, w, is_write, 0, len);
    }
    return soft_dgrant_give(dev, peer, slot, ret, len, is_write);
}

/* dev->write_now and dev->atomic_now where nothing is done within a call */
static int soft_direct_now_none(soft_qp_t *qp, const dcx_send_wr_t *wr)
{
    return 1;
}

/* dev->write_now: an RDMA WRITE of wr's one registered sge (at most an
 * MTU) on a DCI with nothing outstanding: soft_dgrant_write's copy, with
 * the sge checked as a posted WRITE's (soft_sge_ok) and its region marked
 * in use during the copy (soft_mem_local_begin).  0 if done, 1 if the
 * checks or the grant do not allow it (nothing was copied). */
static int soft_direct_write_now(soft_qp_t *qp, const dcx_send_wr_t *wr)
{
    soft_dev_t *dev = qp->dev;
    int ret;

    /* (a local strided key would need its layout walked) */
    if ((wr->num_sge != 1) || (dev->num_mkeys != 0) ||
        !soft_sge_ok(dev, wr->sg_list, 0, qp->super.pd) ||
        (soft_mem_local_begin(dev, wr->sg_list, 1) != 0)) {
        return 1;
    }
    ret = soft_dgrant_write_wr(dev, wr);
    soft_mem_local_end(dev);
    return ret;
}

#define SOFT_DIRECT_NO_MARK UINT32_MAX

/* A long copy (tens of us for a MiB) keeps our polls out like a long
 * engine pass (both hold the engine lock): peers waiting for us to consume
 * their packets must not take us for absent and prod our helper, which
 * could only wait for the lock, on our CPU.  Marks our port as in an
 * engine pass for a copy longer than a packet; returns what to restore. */
static inline uint32_t soft_direct_mark(soft_dev_t *dev, const soft_swqe_t *w)
{
    uint32_t in_engine;

    if (w->total_len <= dev->limits.mtu) {
        return SOFT_DIRECT_NO_MARK;
    }
    in_engine = dev->hdr->in_engine;
    __atomic_store_n(&dev->hdr->in_engine, 1, __ATOMIC_RELAXED);
    return in_engine;
}

/* Ends what soft_direct_mark marked: our poll stamp is now (the copy kept
 * us busy until here), in_engine as it was. */
static inline void soft_direct_unmark(soft_dev_t *dev, uint32_t in_engine)
{
    if (in_engine != SOFT_DIRECT_NO_MARK) {
        soft_engine_stamp(dev);
        __atomic_store_n(&dev->hdr->in_engine, in_engine, __ATOMIC_RELEASE);
    }
}

/* Executes w (RDMA_WRITE or RDMA_READ) by copying directly; 1 if done
 * (the caller completes it successfully), 0 to use the packet path. */
static int soft_direct_exec(soft_qp_t *qp, soft_swqe_t *w)
{
    soft_dev_t *dev   = qp->dev;
    soft_peer_t *peer = w->peer;
    int is_write      = (w->wr.opcode == DCX_WR_RDMA_WRITE);
    uint32_t access   = is_write ? DCX_ACCESS_REMOTE_WRITE :
                                   DCX_ACCESS_REMOTE_READ;
    uint32_t rkey     = w->wr.rkey;
    soft_dmap_ent_t *map;
    soft_direct_area_t *area;
    soft_dslot_t *slot;
    uint64_t off, len;
    uint32_t in_engine;
    ssize_t ret;
    int err;

    if (w->total_len == 0) {
        /* nothing to copy, but the target must still answer (a probe of a
         * peer, a no-op behind other work): the packet path, the grant to
         * this peer kept for the copies that follow */
        return 0;
    }
    if (soft_direct_grant_exec(dev, w, is_write, access)) {
        return 1;
    }
    if (!soft_direct_plan(qp, w, &area, &map)) {
        goto fallback;
    }
    in_engine = soft_direct_mark(dev, w); /* marked while a slot is ours */
    if ((slot = soft_dslot_claim(dev, area, (unsigned)dev->token)) == NULL) {
        soft_direct_unmark(dev, in_engine);
        goto fallback;
    }
    if ((map != NULL) && map->vector) {
        if (!soft_direct_vector_exec(area, slot, map, w, is_write, access)) {
            goto release;
        }
        goto done;
    }
    for (off = 0; off < w->total_len; off += len) {
        len = w->total_len - off;
        if (len > SOFT_DIRECT_CHUNK) {
            len = SOFT_DIRECT_CHUNK;
        }
        __atomic_store_n(&slot->key, rkey, __ATOMIC_SEQ_CST); /* intent */
        if (!soft_direct_mr_ok(area, rkey, access, w->wr.remote_addr,
                               w->total_len, map)) {
            goto release;
        }
        ret = soft_direct_copy(peer, map, w, is_write, off, len);
        err = (ret < 0) ? errno : 0;
        __atomic_store_n(&slot->gen, slot->gen + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&slot->key, 0, __ATOMIC_RELEASE);
        if (ret != (ssize_t)len) {
            if ((err == EPERM) || (err == ESRCH) || (err == ENOSYS)) {
                soft_direct_refused(dev, peer, err);
            }
            goto release;
        }
    }
    soft_direct_grant_make(dev, area, map, w, access);
done:
    soft_dslot_put(slot);
    soft_direct_unmark(dev, in_engine);
    soft_dgrant_count(dev, is_write, map != NULL, w->total_len);
    return 1;

release:
    __atomic_store_n(&slot->key, 0, __ATOMIC_RELAXED);
    soft_dslot_put(slot);
    soft_direct_unmark(dev, in_engine);
    dev->stats.direct_fallbacks++;
fallback:
    peer->grant.area = NULL;
    return 0;
}

/* ------------------------------------------------------------------------
 * Atomics.  Where the target's MR lies in a SysV segment we attached, the
 * initiator executes an atomic itself,
 * with the CPU atomic the target's responder would use (soft_atomic.c) on
 * the same physical word, so atomics of both paths, of every initiator
 * and of the target's own CPU serialize.  The checks are a WRITE's (DCT
 * and MR entries grant REMOTE_ATOMIC, the deregistration protocol at the
 * top, the grant), with what the target's responder refuses as an
 * invalid request (an unaligned word, a size or masked operation its DCT
 * does not execute) left to it.  Memory only the target maps (cross-memory attach) keeps
 * the responder's round trip: a system call cannot be atomic.
 * ------------------------------------------------------------------------ */
/* dev->atomic_now (an atomic flagged DCX_SEND_NOW): under the grant only;
 * the result goes straight to sg_list[0].addr, any memory of the caller
 * (lkey not used: nothing is written by the device after the call) */
static int soft_direct_atomic_now(soft_qp_t *qp, const dcx_send_wr_t *wr)
{
    unsigned size = soft_atomic_size(wr);
    uint64_t args[4];

    if ((wr->num_sge != 1) || (wr->sg_list[0].length < size)) {
        return 1;
    }
    soft_atomic_args(wr, args);
    return soft_dgrant_atomic(qp->dev, &wr->dest, wr->opcode, size,
                              wr->remote_addr, wr->rkey, args,
                              (void *)(uintptr_t)wr->sg_list[0].addr);
}

/* The posted atomic w on the target's mapping under the full checks (no
 * grant covered it): 1 if executed, its old value's size bytes at *res */
static int soft_direct_atomic_full(soft_qp_t *qp, soft_swqe_t *w,
                                   const uint64_t *args, uint64_t *res)
{
    soft_dev_t *dev = qp->dev;
    unsigned size   = (unsigned)w->total_len;
    uint32_t rkey   = w->wr.rkey;
    uint64_t raddr  = w->wr.remote_addr;
    soft_direct_area_t *area;
    soft_dmap_ent_t *map;
    soft_dslot_t *slot;
    uint64_t old;

    if (!soft_direct_plan(qp, w, &area, &map) || (map == NULL) || map->vector) {
        return 0;
    }
    if ((slot = soft_dslot_claim(dev, area, (unsigned)dev->token)) == NULL) {
        return 0;
    }
    __atomic_store_n(&slot->key, rkey, __ATOMIC_SEQ_CST); /* intent */
    if (!soft_direct_mr_ok(area, rkey, DCX_ACCESS_REMOTE_ATOMIC, raddr, size,
                           map)) {
        __atomic_store_n(&slot->key, 0, __ATOMIC_RELAXED);
        soft_dslot_put(slot);
        dev->stats.direct_fallbacks++;
        return 0;
    }
    old = soft_atomic_apply(map->local + (raddr - map->rbase), w->wr.opcode,
                            size, args);
    __atomic_store_n(&slot->gen, slot->gen + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&slot->key, 0, __ATOMIC_RELEASE);
    soft_dslot_put(slot);
    soft_atomic_result(res, old, size);
    soft_direct_grant_make(dev, area, map, w, DCX_ACCESS_REMOTE_ATOMIC);
    soft_dmap_touch(dev, map);
    dev->stats.direct_atomics++;
    return 1;
}

/* dev->atomic_direct: the posted atomic w (its result sge checked) on a
 * DCI with nothing on the wire; 1 if executed (the caller completes it),
 * 0 for the packet path.  The result sge is marked in use from before the
 * atomic until its value is in place, as a response's scatter is
 * (soft_mem_local_begin): a deregistered or unmapped result buffer sends
 * the WQE on the packet path, whose completion says what happened, before
 * anything was done at the target. */
static int soft_direct_atomic_exec(soft_qp_t *qp, soft_swqe_t *w)
{
    soft_dev_t *dev = qp->dev;
    unsigned size   = (unsigned)w->total_len;
    uint64_t args[4], res = 0;
    int done;

    if ((w->wr.num_sge != 1) || (w->wr.flags & DCX_SEND_INLINE) ||
        ((size != 4) && (size != 8)) || (w->wr.remote_addr % size) ||
        (soft_mem_local_begin(dev, w->sge, 1) != 0)) {
        return 0;
    }
    soft_atomic_args(&w->wr, args);
    done = (soft_dgrant_atomic(dev, &w->wr.dest, w->wr.opcode, size,
                               w->wr.remote_addr, w->wr.rkey, args,
                               &res) == 0) ||
           soft_direct_atomic_full(qp, w, args, &res);
    if (done) {
        (void)soft_sge_scatter(dev, &res, w->sge, 1, 0, size);
    }
    soft_mem_local_end(dev);
    return done;
}

static int soft_direct_probe(soft_dev_t *dev)
{
    uint64_t src = 0x6469726563740a00ull, dst = 0;
    struct iovec l = {&dst, sizeof(dst)}, r = {&src, sizeof(src)};

    if ((process_vm_readv((pid_t)dev->pid, &l, 1, &r, 1, 0) !=
         (ssize_t)sizeof(dst)) ||
        (dst != src)) {
        dcx_debug("%s: cross-memory attach is not available (%s): RDMA "
                  "WRITE/READ go through the target's responder",
                  dev->super.caps.name, strerror(errno));
        return 0;
    }
    l.iov_base = &src;
    r.iov_base = &dst;
    dst        = 0;
    if ((process_vm_writev((pid_t)dev->pid, &l, 1, &r, 1, 0) !=
         (ssize_t)sizeof(dst)) ||
        (dst != src)) {
        dcx_debug("%s: process_vm_writev is not available (%s): RDMA "
                  "WRITE/READ go through the target's responder",
                  dev->super.caps.name, strerror(errno));
        return 0;
    }
    return 1;
}

void soft_direct_init(soft_dev_t *dev, soft_port_hdr_t *hdr, uint64_t offset)
{
    soft_direct_area_t *area;

    dev->one_sided       = soft_direct_none;
    dev->one_sided_ready = soft_direct_none;
    dev->write_now       = soft_direct_now_none;
    dev->atomic_direct   = soft_direct_none;
    dev->atomic_now      = soft_direct_now_none;
    dev->direct          = NULL;
    if (!dev->limits.direct) {
        return;
    }
    area          = (soft_direct_area_t *)((char *)hdr + offset);
    area->version = SOFT_DIRECT_VERSION;
    soft_dslot_area_init(dev, area);
    dev->plain_intent = soft_dslot_plain_intent();
    soft_direct_life_init(dev, &area->life);
    dev->direct       = area;
    dev->direct_start = soft_proc_start_time(dev->pid);
    __atomic_store_n(&area->enabled, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&hdr->direct_off, offset, __ATOMIC_RELEASE);
    /* (no grant is made where the device copies nothing directly, so a
     * WRITE or READ within the call needs no choice: soft_dgrant_write,
     * soft_dgrant_read) */
    if (soft_direct_probe(dev)) {
        dev->one_sided       = soft_direct_exec;
        dev->one_sided_ready = soft_direct_ready;
        dev->write_now       = soft_direct_write_now;
        dev->atomic_direct   = soft_direct_atomic_exec;
        dev->atomic_now      = soft_direct_atomic_now;
        dev->super.caps.flags |= DCX_CAP_POST_NOW;
    }
}

unsigned dcx_soft_direct_inflight(dcx_dev_t *dev)
{
    if (!dcx_dev_is_soft(dev)) {
        dcx_error("%s: direct inflight: not a soft device", dcx_dev_name(dev));
        return 0;
    }
    return soft_direct_inflight(soft_dev(dev));
}
