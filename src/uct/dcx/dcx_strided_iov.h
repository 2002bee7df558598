/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: strided uct_iov_t entries (stride, count) in zero-copy
 * operations, through a per-interface pool of indirect memory keys and a
 * cache keyed by layout (docs/strided.md).
 *
 * An iov entry with count > 1 and stride != length is strided: element k
 * is the length bytes at buffer + k * stride.  An operation whose strided
 * entries have few elements in all sends them as one sge per element;
 * otherwise each strided entry becomes one sge over a key whose zero-based
 * address space is the concatenation of the elements.  A key is configured
 * by a work request either on the DCI of the operation, just before the
 * data work request (the device executes them in order), or on a queue of
 * its own (dcx_cfg_queue.h), and then the data work request waits for the
 * configure's completion; the key stays cached for the same layout until
 * it is evicted or a registration under it goes away.
 */
#ifndef UCT_DCX_STRIDED_IOV_H_
#define UCT_DCX_STRIDED_IOV_H_

#include "dcx_cfg_queue.h"
#include "dcx_dev.h"
#include "dcx_md.h"
#include "dcx_strided_stats.h"

#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>

#define UCT_DCX_SKEY_NONE UINT16_MAX
#define UCT_DCX_SKEYS_MAX 4096 /* UCX_DCX_STRIDED_KEYS at most */

/* What a cached key describes: one strided iov entry */
typedef struct uct_dcx_skey_lay {
    uint64_t addr;
    uint64_t length;
    uint64_t stride;
    uint32_t count;
    uint32_t lkey; /* of the registration under the elements */
} uct_dcx_skey_lay_t;

enum {
    UCT_DCX_SKEY_UNSET, /* no layout (never configured, or dropped) */
    UCT_DCX_SKEY_CFG,   /* configure posted (on cfg_dci, or on the
                            configure queue: cfg_dci NONE), not completed */
    UCT_DCX_SKEY_READY, /* configured */
    UCT_DCX_SKEY_FAILED /* its configure failed: the next operation over
                            the layout gets the error, then it is dropped */
};

typedef struct uct_dcx_skey {
    dcx_mkey_t *mkey; /* NULL: not created yet */
    uct_dcx_skey_lay_t lay;
    dcx_mkey_layout_t layout;   /* what the configure WR reads */
    dcx_mkey_interleaved_t ent; /* interleaved: the one entry */
    dcx_sge_t *list;            /* list layout: key_entries sges */
    uint32_t refs;              /* WRs, receives, rendezvous using it */
    uint16_t cfg_dci;
    uint8_t state;        /* UCT_DCX_SKEY_* */
    uint8_t cached;       /* in the hash */
    uint8_t fresh;        /* configured for an operation that was refused
                             until it completed: that operation's retry is
                             its first use, not a cache hit */
    ucs_list_link_t idle; /* on free or lru while refs == 0 */
} uct_dcx_skey_t;

static inline khint32_t uct_dcx_skey_lay_hash(uct_dcx_skey_lay_t lay)
{
    uint64_t h = (lay.addr * 0x9e3779b97f4a7c15ull) ^
                 (lay.length * 0xc2b2ae3d27d4eb4full) ^
                 (lay.stride * 0x165667b19e3779f9ull) ^
                 ((uint64_t)lay.count << 32) ^ lay.lkey;

    return (khint32_t)(h ^ (h >> 29) ^ (h >> 47));
}

#define uct_dcx_skey_lay_equal(_a, _b)                             \
    (((_a).addr == (_b).addr) && ((_a).length == (_b).length) &&   \
     ((_a).stride == (_b).stride) && ((_a).count == (_b).count) && \
     ((_a).lkey == (_b).lkey))

KHASH_INIT(uct_dcx_skeys, uct_dcx_skey_lay_t, uint16_t, 1,
           uct_dcx_skey_lay_hash, uct_dcx_skey_lay_equal)

typedef struct uct_dcx_strided uct_dcx_strided_t;
struct uct_dcx_iface;
struct uct_dcx_dci;
struct uct_dcx_ep;

/* Posts the configure of key idx (its layout set) for an operation of ep
 * on dci (ep NULL, dci NULL: a tag-list receive).  UCS_OK: a data work
 * request posted next on dci may use the key; UCS_INPROGRESS: posted, the
 * key is usable once the configure completes; or an error. */
typedef ucs_status_t (*uct_dcx_strided_post_cfg_t)(struct uct_dcx_iface *iface,
                                                   struct uct_dcx_dci *dci,
                                                   struct uct_dcx_ep *ep,
                                                   uint16_t idx);

/* Per-interface state */
struct uct_dcx_strided {
    uct_dcx_skey_t *keys; /* [keys_max] */
    uint16_t keys_max;
    uint16_t keys_created;
    uint32_t key_entries;
    uint32_t sge_max;     /* expand to sges up to this */
    uint32_t max_stride;  /* device: bytes_count + skip */
    ucs_list_link_t free; /* refs 0, no layout */
    ucs_list_link_t lru;  /* refs 0, cached; oldest first */
    khash_t(uct_dcx_skeys) hash;
    ucs_mpool_t op_mp; /* uct_dcx_strided_op_t */
    uct_dcx_md_dereg_cb_t dereg_cb;
    /* Where configures go, chosen at creation: the DCI of the operation,
     * or cfgq */
    uct_dcx_strided_post_cfg_t post_cfg;
    uint8_t own_queue; /* post_cfg posts on cfgq */
    /* an operation was refused (UCS_ERR_NO_RESOURCE) until a configure
     * completes or a key comes back, which no DCI slot announces: a pending
     * request is queued then (uct_dcx_ep_pending_add), not answered
     * "busy", and the progress call that sees either dispatches it */
    uint8_t key_wait;
    uint32_t cfg_out; /* configures in flight (either way) */
    uct_dcx_cfg_queue_t cfgq;
    dcx_strided_stats_t stats;
};

/* uct_dcx_strided_iov() flags */
enum {
    UCT_DCX_STRIDED_SCATTER  = UCS_BIT(0), /* the WR writes the buffers */
    UCT_DCX_STRIDED_KEY_ONLY = UCS_BIT(1)  /* never expand to sges */
};

/* Keys one operation holds until its data WR (or receive, rendezvous)
 * completes; filled by uct_dcx_strided_iov() */
typedef struct uct_dcx_strided_use {
    void *op; /* uct_dcx_strided_op_t, NULL: no key */
    unsigned num_keys;
} uct_dcx_strided_use_t;

#endif /* UCT_DCX_STRIDED_IOV_H_ */
