/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: one-sided operations executed by the initiator
 * (soft_direct.c).  The layout of the tables a port publishes at the end
 * of its segment, and the hooks the rest of the device calls.
 */
#ifndef DCX_SOFT_DIRECT_H_
#define DCX_SOFT_DIRECT_H_

#include "soft_dev.h"

#include <linux/futex.h>
#include <stdio.h>

#define SOFT_DIRECT_VERSION 9u
#define SOFT_DIRECT_MRS     4096u /* keys with index below are published */
#define SOFT_DIRECT_DCTS    256u  /* DCTs with qpn - qpn_base below */
#define SOFT_DIRECT_SLOTS   64u   /* writers' in-flight markers */
#define SOFT_DIRECT_CHUNK   (512u * 1024u) /* bytes per marked copy */
#define SOFT_DIRECT_ALLOCS  256u           /* SysV segments peers may attach */

/* A published MR: seqlock-protected copy of what the responder checks.
 * key 0: nothing published (no key, a strided key that is no vector, or
 * invalidated).
 * alloc: 1 + index in allocs[] of the SysV segment (soft_shm.c) holding
 * the whole region, whose serial is 'serial'; 0: none (the region is
 * reached by cross-memory attach only).
 * mr_key != 0: a strided key that is a vector (soft_vector.h, one
 * interleaved entry or a list of equal entries at one distance):
 * byte off of the key is in element off / count, at base + element *
 * stride, in the MR mr_key (whose own entry gives its region and
 * allocation); start, end, alloc and serial are not used. */
typedef struct soft_dmr {
    uint32_t seq; /* odd while being changed */
    uint32_t key;
    uint32_t access;
    uint32_t alloc;
    uint64_t start;
    uint64_t end;
    uint64_t serial;
    uint32_t mr_key;
    uint32_t count;
    uint64_t stride;
    uint64_t base;
    uint64_t length;
} soft_dmr_t;

/* What a strided key that is a vector publishes (soft_direct_vector_set) */
typedef struct soft_direct_vector {
    uint64_t base, count, stride, length;
    uint32_t mr_key, access;
} soft_direct_vector_t;

/* A published SysV segment, whose bytes [0, len) are at base in the
 * owner's process.  A peer attaches segment shmid after checking it is
 * this one (size, creator and change time, in the IPC namespace ipcns),
 * and that serial is still published once attached (the owner keeps the
 * segment attached, and so its id taken, while the slot holds serial).
 * serial 0: slot free. */
typedef struct soft_dalloc {
    uint32_t seq;
    int32_t shmid;   /* the segment */
    uint64_t serial; /* unique per owning device, never reused */
    uint64_t base;   /* address in the owner's process */
    uint64_t len;
    uint32_t cpid; /* its shm_cpid, shm_segsz, shm_ctime */
    uint32_t pad;
    uint64_t segsz;
    uint64_t ctime;
    uint64_t ipcns; /* inode of the owner's IPC namespace */
} soft_dalloc_t;

/* A published DCT; ok 0: absent or in error.  ext_max: the largest
 * masked atomic it executes, in bytes (0, 4 or 8). */
typedef struct soft_ddct {
    uint32_t seq;
    uint32_t qpn;
    uint32_t access;
    uint32_t ok;
    uint64_t dc_key;
    uint32_t ext_max;
    uint32_t pad;
} soft_ddct_t;

/* The owner's liveness, readable with one load and no system call: a
 * robust, process-shared mutex that the owner's helper thread holds for as
 * long as it runs.  When that thread dies with its process (killed, exec),
 * the kernel marks the lock's futex word FUTEX_OWNER_DIED before the
 * process can be reaped or its pidfd reports it gone (the robust futex
 * ABI): a peer that sees the word hold 'tid' knows the owner had not
 * died when it looked, and one that sees FUTEX_OWNER_DIED knows it has.
 * tid 0: not held (no helper yet, closing, or robust mutexes not available
 * here): a peer asks the kernel instead (soft_dmap_alive).  A line of its
 * own, written only when the helper starts and stops. */
typedef struct soft_dlife {
    pthread_mutex_t lock;
    uint32_t tid;    /* the holder, as the futex word names it */
    uint32_t robust; /* owner only: lock set up as a robust one */
    uint8_t pad[64 - sizeof(pthread_mutex_t) - 2 * sizeof(uint32_t)];
} soft_dlife_t;

/* A writer's in-flight marker, one cache line. */
typedef struct soft_dslot {
    uint64_t owner; /* claiming device's token; 0: free */
    uint32_t pid;   /* claiming process */
    uint32_t key;   /* rkey being accessed right now; 0: between chunks */
    uint64_t start; /* claiming process's start time (liveness) */
    uint64_t gen;   /* bumped at the end of every marked copy */
    uint8_t pad[32];
} soft_dslot_t;

typedef struct soft_direct_area {
    uint32_t version;
    uint32_t enabled; /* the owner accepts initiator-side access */
    /* allocations freed so far: a peer holding mappings of ours looks
     * for stale ones when it changes */
    uint64_t frees;
    uint32_t asym;      /* the owner fences for plain intents (soft_dslot.c) */
    uint32_t short_gen; /* bumped by a writer that found no free marker */
    /* bumped by the owner after each change of 'enabled', of a DCT entry,
     * of 'frees', of its port's 'killed' and of 'asym': a grant
     * (soft_direct.c) made when it read so checks this one word for all */
    uint32_t gen;
    uint8_t pad[36];
    soft_dlife_t life;
    soft_ddct_t dcts[SOFT_DIRECT_DCTS];
    soft_dmr_t mrs[SOFT_DIRECT_MRS];
    soft_dslot_t slots[SOFT_DIRECT_SLOTS];
    soft_dalloc_t allocs[SOFT_DIRECT_ALLOCS];
} soft_direct_area_t;

/* The direct area a peer's mapped header (map_size bytes) publishes, or
 * NULL: none, out of the mapping, of another version or disabled */
static inline soft_direct_area_t *soft_direct_area_of(soft_port_hdr_t *hdr,
                                                      size_t map_size)
{
    uint64_t off = __atomic_load_n(&hdr->direct_off, __ATOMIC_ACQUIRE);
    soft_direct_area_t *area;

    if ((off == 0) || (off > map_size) ||
        (map_size - off < sizeof(soft_direct_area_t))) {
        return NULL;
    }
    area = (soft_direct_area_t *)((char *)hdr + off);
    if ((area->version != SOFT_DIRECT_VERSION) ||
        !__atomic_load_n(&area->enabled, __ATOMIC_ACQUIRE)) {
        return NULL;
    }
    return area;
}

/* Bytes the port segment reserves for the tables (0 when disabled). */
size_t soft_direct_area_size(const soft_dev_t *dev);
/* Sets up our tables at 'offset' of the fresh segment and chooses the
 * device's one-sided function (probe of cross-memory attach). */
void soft_direct_init(soft_dev_t *dev, soft_port_hdr_t *hdr, uint64_t offset);
void soft_direct_mr_publish(soft_dev_t *dev, soft_mr_t *mr);
/* Publishes the layout of strided key 'key' (vec), or withdraws it (vec
 * NULL) and waits (bounded) until no initiator copies through it. */
void soft_direct_vector_set(soft_dev_t *dev, soft_mr_t *key,
                            const soft_direct_vector_t *vec);
/* Unpublishes and waits (bounded) until no initiator copies into it. */
void soft_direct_mr_withdraw(soft_dev_t *dev, soft_mr_t *mr);
/* Unpublishes only (mr_lock held); soft_direct_quiesce() waits after. */
void soft_direct_mr_unpublish(soft_dev_t *dev, soft_mr_t *mr);
void soft_direct_quiesce(soft_dev_t *dev, uint32_t key);
void soft_direct_dct_publish(soft_dev_t *dev, soft_qp_t *dct, int ok);
void soft_direct_fault_changed(soft_dev_t *dev);
/* Bumps our area's gen (after a change it covers; engine or mr lock held).
 * Inline, below its callers: the allocator, the slots, the fabric and the
 * publishing of keys each bump it after a change. */
static inline void soft_direct_gen_bump(soft_dev_t *dev)
{
    if (dev->direct != NULL) {
        __atomic_add_fetch(&dev->direct->gen, 1, __ATOMIC_SEQ_CST);
    }
}
/* soft_dlife.c: sets up the liveness lock of a fresh area (soft_direct_init);
 * the helper thread takes it when it starts and gives it back before it
 * returns (soft_helper.c). */
void soft_direct_life_init(soft_dev_t *dev, soft_dlife_t *l);
void soft_direct_life_begin(soft_dev_t *dev);
void soft_direct_life_end(soft_dev_t *dev);
/* What the liveness lock of a target says, read without a system call */
enum {
    SOFT_LIFE_UNKNOWN = 0, /* not held: ask the kernel */
    SOFT_LIFE_ALIVE,       /* held by the owner's helper thread */
    SOFT_LIFE_DEAD         /* its holder died without giving it back */
};
/* soft_dslot.c: the in-flight markers.  claim: a free one of area (from
 * slot 'first' on), or a dead holder's, or NULL (then the holders give
 * theirs back); put: gives it back.  hold: claims one for peer's grant to
 * keep; unhold: gives that back.  plain_intent: whether this process may
 * set intents with a plain store (where the owner fences for it);
 * area_init: says in a fresh area whether we can; owner_fence: the
 * owner's fence between unpublishing and reading the markers. */
soft_dslot_t *soft_dslot_claim(soft_dev_t *dev, soft_direct_area_t *area,
                               unsigned first);
void soft_dslot_put(soft_dslot_t *s);
soft_dslot_t *soft_dslot_hold(soft_dev_t *dev, soft_peer_t *peer,
                              soft_direct_area_t *area);
void soft_dslot_unhold(soft_peer_t *peer);
int soft_dslot_plain_intent(void);
void soft_dslot_area_init(soft_dev_t *dev, soft_direct_area_t *area);
void soft_dslot_owner_fence(soft_dev_t *dev, soft_direct_area_t *area);
/* Held in-flight markers in our tables (tests). */
unsigned soft_direct_inflight(soft_dev_t *dev);

/* What the liveness lock of area says (SOFT_LIFE_*), with the lock's word
 * it read (*word_p) */
static inline int soft_direct_life_word(const soft_direct_area_t *area,
                                        uint32_t *word_p)
{
    uint32_t tid  = __atomic_load_n(&area->life.tid, __ATOMIC_ACQUIRE);
    uint32_t word = __atomic_load_n((const uint32_t *)&area->life.lock,
                                    __ATOMIC_ACQUIRE);

    *word_p = word;
    if (tid == 0) {
        return SOFT_LIFE_UNKNOWN;
    }
    if (word & FUTEX_OWNER_DIED) {
        return SOFT_LIFE_DEAD;
    }
    return ((word & FUTEX_TID_MASK) == tid) ? SOFT_LIFE_ALIVE :
                                              SOFT_LIFE_UNKNOWN;
}

static inline int soft_direct_life(const soft_direct_area_t *area)
{
    uint32_t word;

    return soft_direct_life_word(area, &word);
}

/* soft_dlife.c: what the liveness lock of the area peer publishes says
 * (SOFT_LIFE_*; UNKNOWN when it publishes none). */
int soft_direct_peer_life(soft_peer_t *peer);

/* Seqlock helpers of the published tables (owner writes, peers read) */
static inline void soft_seq_begin(uint32_t *seq)
{
    __atomic_store_n(seq, *seq + 1, __ATOMIC_SEQ_CST); /* odd */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static inline void soft_seq_end(uint32_t *seq)
{
    __atomic_store_n(seq, *seq + 1, __ATOMIC_SEQ_CST); /* even */
}

/* A free slot of our allocs[] table, or -1 (mr_lock held). */
static inline int soft_dalloc_free_slot(soft_dev_t *dev)
{
    uint32_t i;

    if (dev->direct == NULL) {
        return -1;
    }
    for (i = 0; i < SOFT_DIRECT_ALLOCS; ++i) {
        if (__atomic_load_n(&dev->direct->allocs[i].serial, __ATOMIC_RELAXED) ==
            0) {
            return (int)i;
        }
    }
    return -1;
}

/* Frees our published slot (mr_lock held): peers holding a mapping of it
 * drop it at their next look (area->frees moved). */
static inline void soft_dalloc_unpublish(soft_dev_t *dev, int slot)
{
    soft_dalloc_t *e = &dev->direct->allocs[slot];

    soft_seq_begin(&e->seq);
    __atomic_store_n(&e->serial, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->shmid, -1, __ATOMIC_RELAXED);
    soft_seq_end(&e->seq);
    __atomic_add_fetch(&dev->direct->frees, 1, __ATOMIC_RELEASE);
    soft_direct_gen_bump(dev);
}

/* A SysV segment of ours that registered MRs lie in (soft_shm.c; under
 * mr_lock once on dev->shms).  hold: our own second attachment of it,
 * kept while it is published so that its id names it and nothing else. */
typedef struct soft_shm {
    struct soft_shm *next;
    int shmid;
    int slot;      /* published in allocs[slot]; -1: not */
    uint64_t base; /* the address of its byte 0 in our process */
    uint64_t len;  /* its size, in whole pages */
    uint64_t segsz, ctime, ipcns;
    uint32_t cpid;
    uint32_t refs; /* MRs bound to it */
    uint64_t serial;
    void *hold;
} soft_shm_t;

/* soft_shm.c, the owner's side.  Before a registration takes its locks:
 * soft_shm_scan, fed every line of /proc/self/maps that overlaps the
 * range, tells whether it lies in one SysV attachment; soft_shm_prepare
 * then makes the segment's record (NULL: the range is not in one, or
 * the segment cannot be published; said at debug level).  Under mr_lock:
 * soft_shm_bind binds mr to its prepared record (mr->shm), or to the
 * published one of the same segment, and returns what is left over;
 * soft_shm_unbind unbinds it, freeing the slot with the last MR, and
 * returns the record to release.  soft_shm_release (no lock held: it
 * detaches, and the memory hooks take mr_lock) releases either. */
typedef struct soft_shm_scan {
    uint64_t start, end; /* the range */
    uint64_t cur;        /* covered up to here by one segment's lines */
    uint64_t base;       /* that segment's byte 0 */
    unsigned long shmid; /* its id (the lines' inode) */
    uint64_t devno;      /* the lines' device, major << 32 | minor */
    int bad;             /* a line of something else overlaps the range */
} soft_shm_scan_t;

/* The next line of a /proc/<pid>/maps file f, at most size - 1 bytes of
 * it (the rest of a longer one, a long path, read and dropped); NULL at
 * its end.  Its address range and fields come first, whole. */
char *soft_maps_line(FILE *f, char *line, int size);
void soft_shm_scan_init(soft_shm_scan_t *sc, uint64_t start, uint64_t end);
void soft_shm_scan_line(soft_shm_scan_t *sc, const char *line);
soft_shm_t *soft_shm_prepare(soft_dev_t *dev, const soft_shm_scan_t *sc);
soft_shm_t *soft_shm_bind(soft_dev_t *dev, soft_mr_t *mr);
soft_shm_t *soft_shm_unbind(soft_dev_t *dev, soft_mr_t *mr);
void soft_shm_release(soft_shm_t *shm);
void soft_shm_cleanup(soft_dev_t *dev);

/* soft_dmap.c: the initiator's cache of peers' SysV segments it
 * attached. */
typedef struct soft_dmap_ent {
    soft_peer_t *peer; /* NULL: free entry */
    uint64_t serial;   /* the target's segment */
    uint32_t slot;     /* its index in the target's allocs[] */
    int pidfd;         /* the target process; -1: our own process */
    uint64_t rbase;    /* its address in the target */
    uint64_t len;
    uint8_t *local; /* our attachment of it */
    uint64_t frees; /* target's area->frees when last validated */
    uint64_t used;  /* LRU stamp */
    uint32_t rkey;  /* the key last found in it (a hint) */
    int vector;     /* and whether it was a vector key's (a hint) */
    int refused;    /* one we cannot attach: local NULL, never returned */
} soft_dmap_ent_t;

/* The attachment of the target segment slot+serial, made if needed; NULL
 * if it cannot be made now (the caller copies by cross-memory attach). */
soft_dmap_ent_t *soft_dmap_get(soft_dev_t *dev, soft_peer_t *peer,
                               soft_direct_area_t *area, uint32_t slot,
                               uint64_t serial);
/* The mapping used last, if it is of peer, was last found for rkey and
 * nothing of the target was freed since: a hint the caller's entry check
 * confirms (allocation slot and serial), found with a few loads.  NULL:
 * look the entry up and call soft_dmap_get(). */
soft_dmap_ent_t *soft_dmap_last(soft_dev_t *dev, const soft_peer_t *peer,
                                const soft_direct_area_t *area, uint32_t rkey);
/* Marks e used now (its place in the LRU order; inline for the copy under
 * a grant).  The entry stamped last keeps its stamp: the order is the same,
 * and a run of copies to one target stores nothing here. */
static inline void soft_dmap_touch(soft_dev_t *dev, soft_dmap_ent_t *e)
{
    if (e->used != dev->dmap_clock) {
        e->used = ++dev->dmap_clock;
    }
}
/* 0 if the mapping's process (the owner of area) has exited (its mappings
 * are dropped then). */
int soft_dmap_alive(soft_dev_t *dev, soft_dmap_ent_t *e,
                    const soft_direct_area_t *area);
/* Drops every mapping of peer (its process is gone). */
void soft_dmap_forget(soft_dev_t *dev, const soft_peer_t *peer);
void soft_dmap_cleanup(soft_dev_t *dev);
unsigned soft_dmap_count(soft_dev_t *dev);

#endif
