/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device strided memory keys (dcx_mkey_t, docs/device-semantics.md
 * section 10): indirect keys whose zero-based address space maps, entry by
 * entry, onto plain MRs.
 *
 * A key lives in the device's key table like an MR (its table entry is a
 * soft_mr_t whose 'mkey' points here), so an lkey or rkey names either.
 * It is created free; a configure work request (interleaved or list
 * layout) posted on a DCI gives it a layout when the DCI executes the
 * request, in order with the DCI's other work; an invalidate request makes
 * it free again.  The layout is copied at post, as the hardware inlines it
 * into the WQE.
 *
 * Every access through a key walks the layout over the bytes it touches
 * and checks each piece as the hardware's translation would: the key is
 * configured and grants the access, the piece is inside the layout, and
 * the entry's lkey names a live plain MR (not deregistered, not
 * invalidated by an unmap) that covers the piece and grants the access.
 * Remote accesses are checked and copied per packet under the engine lock,
 * so a key stops working the moment an MR under it is deregistered or its
 * memory is unmapped, and the moment it is invalidated or destroyed.  The
 * copy is not made piece by piece: the walk fills a batch of up to
 * SOFT_MEM_VEC_MAX pieces (adjacent ones merged), copied by one vectored
 * cross-memory call (soft_mem_vec_write).  Every piece is checked by the walk
 * before it joins the batch, and every region of the batch is checked for
 * invalidation under the in-flight marker right before the copy.  A column
 * of N doubles thus costs one system call per SOFT_MEM_VEC_MAX elements,
 * not one per element (bench/strided.sh).  Where the consumer reports
 * unmaps (soft_mem.c) our own memory is copied with memcpy under the
 * in-flight mark instead, piece by piece as the walk finds them; and a
 * layout that is a vector (a matrix column, every k-th block: one
 * interleaved entry, or a list of equal entries at one distance,
 * soft_mkey_as_vector) is not walked at all: its addresses grow with the
 * offset, so an access is checked once by its first and last bytes
 * (soft_mkey_vector) and copied element after element with no check
 * each.
 *
 * What the post checks (the hardware's software checks,
 * docs/device-semantics.md sections 10.3, 10.4 and 10.8):
 *  - access only the four DCX_ACCESS_* bits (EINVAL);
 *  - interleaved: num_entries + 1 <= max_entries (ENOMEM; the hardware
 *    needs the slot for the repetition header and would fail the WQE),
 *    repeat_count >= 1, bytes_count and bytes_count + bytes_skip at most
 *    caps.mkey_max_stride (EINVAL: 16-bit fields the hardware would
 *    truncate);
 *  - list: num_entries <= max_entries (ENOMEM).
 * Entries are not checked against their MRs at configure (the hardware
 * does not either): an entry over unregistered memory fails the access.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_direct.h"
#include "soft_vector.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct soft_mkey_ent {
    uint64_t addr;   /* of repetition 0 */
    uint64_t pre;    /* bytes of the entries before, in one repetition */
    uint32_t count;  /* bytes per repetition */
    uint32_t stride; /* count + skip */
    uint32_t lkey;
    uint32_t pad;
} soft_mkey_ent_t;

struct soft_mkey {
    dcx_mkey_t super;
    soft_mr_t key; /* its entry in the device's table */
    soft_dev_t *dev;
    int configured;
    uint32_t access;
    uint32_t num; /* entries of the layout */
    uint64_t repeat;
    uint64_t rep_len;     /* bytes of one repetition */
    uint64_t length;      /* of the whole layout */
    uint64_t base;        /* the address of byte 0 (0: zero-based) */
    soft_mkey_ent_t *ent; /* max_entries */
    /* the layout as a vector (soft_vector.h: element r at addr + r *
     * stride, count bytes each, in the MR lkey) where it is one
     * (soft_mkey_as_vector), else is_vec 0 */
    soft_mkey_ent_t vec;
    int is_vec;
    int published; /* as a vector, for initiators (soft_direct.c) */
};

/* A configure or invalidate request, copied at post. */
struct soft_mkey_wr {
    uint32_t lkey; /* of the key (looked up at execution) */
    uint32_t access;
    uint32_t num;
    uint32_t pad;
    uint64_t repeat;
    uint64_t rep_len;
    soft_mkey_ent_t ent[];
};

#define SOFT_MKEY_ACCESS_ALL                            \
    (DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE | \
     DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC)

/* The device's batch for remote accesses through keys (dev->mvec), made
 * with its first key and kept until it closes.  0 or ENOMEM. */
static int soft_mkey_vec_alloc(soft_dev_t *dev)
{
    soft_mem_vec_t *v;
    int have;

    soft_lock(&dev->lock);
    have = (dev->mvec != NULL);
    soft_unlock(&dev->lock);
    if (have) {
        return 0;
    }
    v = calloc(1, sizeof(*v));
    if (v == NULL) {
        return ENOMEM;
    }
    soft_lock(&dev->lock);
    if (dev->mvec == NULL) {
        dev->mvec = v;
        v         = NULL;
    }
    soft_unlock(&dev->lock);
    free(v); /* another thread's key made it first */
    return 0;
}

int soft_mkey_create(dcx_pd_t *pd, uint32_t max_entries, dcx_mkey_t **mkey_p)
{
    soft_dev_t *dev  = soft_dev(pd->dev);
    const char *name = dev->super.caps.name;
    uint32_t limit   = dev->limits.mkey_max_entries;
    soft_mkey_t *mk;
    uint32_t n;

    if ((max_entries == 0) || (max_entries > limit)) {
        dcx_error("%s: mkey create: %u entries out of range [1, %u]", name,
                  max_entries, limit);
        return EINVAL;
    }
    /* the hardware rounds the translation table to 4 entries */
    n = (max_entries + 3u) & ~3u;
    if (n > limit) {
        n = limit;
    }
    mk = calloc(1, sizeof(*mk));
    if (mk == NULL) {
        goto err_nomem;
    }
    mk->ent = calloc(n, sizeof(*mk->ent));
    if (mk->ent == NULL) {
        goto err_free_mk;
    }
    if (soft_mkey_vec_alloc(dev) != 0) {
        free(mk->ent);
        goto err_free_mk;
    }
    mk->dev          = dev;
    mk->key.super.pd = pd;
    mk->key.mkey     = mk;
    if (soft_key_insert(dev, &mk->key, "mkey create") != 0) {
        free(mk->ent);
        free(mk);
        return ENOMEM;
    }
    mk->super.pd          = pd;
    mk->super.lkey        = mk->key.super.lkey;
    mk->super.rkey        = mk->key.super.rkey;
    mk->super.max_entries = n;
    dcx_debug("%s: mkey 0x%x created (%u entries)", name, mk->super.lkey, n);
    *mkey_p = &mk->super;
    return 0;

err_free_mk:
    free(mk);
err_nomem:
    dcx_error("%s: mkey create: out of memory", name);
    return ENOMEM;
}

int soft_mkey_destroy(dcx_mkey_t *mkey)
{
    soft_mkey_t *mk = (soft_mkey_t *)mkey; /* super comes first */

    soft_key_remove(mk->dev, &mk->key);
    free(mk->ent);
    free(mk);
    return 0;
}

/* ------------------------------------------------------------------------
 * Work requests
 * ------------------------------------------------------------------------ */
static inline int soft_mkey_is_cfg(unsigned opcode)
{
    return (opcode == DCX_WR_MKEY_INTERLEAVED) || (opcode == DCX_WR_MKEY_LIST);
}

int soft_mkey_post_check(soft_qp_t *qp, const dcx_send_wr_t *wr)
{
    const char *name             = soft_qp_dev_name(qp);
    const char *opname           = soft_opinfo[wr->opcode].name;
    const dcx_mkey_layout_t *lay = wr->mkey_layout;
    uint64_t rep_len             = 0;
    uint32_t i, max;

    if ((wr->mkey == NULL) || (wr->mkey->pd->dev != qp->super.dev)) {
        dcx_error("%s: dci 0x%x post %s: no mkey, or an mkey of another "
                  "device",
                  name, qp->super.qp_num, opname);
        return EINVAL;
    }
    if (!soft_mkey_is_cfg(wr->opcode)) {
        return 0; /* invalidate: nothing more to check */
    }
    max = wr->mkey->max_entries;
    if ((lay == NULL) || (lay->num_entries == 0) ||
        ((wr->opcode == DCX_WR_MKEY_INTERLEAVED) ? (lay->interleaved == NULL) :
                                                   (lay->list == NULL))) {
        dcx_error("%s: dci 0x%x post %s mkey 0x%x: no layout or no entries",
                  name, qp->super.qp_num, opname, wr->mkey->lkey);
        return EINVAL;
    }
    if (lay->access & ~SOFT_MKEY_ACCESS_ALL) {
        dcx_error("%s: dci 0x%x post %s mkey 0x%x: unknown access bits 0x%x",
                  name, qp->super.qp_num, opname, wr->mkey->lkey,
                  lay->access & ~SOFT_MKEY_ACCESS_ALL);
        return EINVAL;
    }
    if (wr->opcode == DCX_WR_MKEY_LIST) {
        if (lay->num_entries > max) {
            dcx_error("%s: dci 0x%x post %s mkey 0x%x: %u entries > %u the "
                      "key holds",
                      name, qp->super.qp_num, opname, wr->mkey->lkey,
                      lay->num_entries, max);
            return ENOMEM;
        }
        return 0;
    }
    if (lay->num_entries + 1ull > max) {
        dcx_error("%s: dci 0x%x post %s mkey 0x%x: %u entries + 1 repetition "
                  "header > %u the key holds",
                  name, qp->super.qp_num, opname, wr->mkey->lkey,
                  lay->num_entries, max);
        return ENOMEM;
    }
    if (lay->repeat_count == 0) {
        dcx_error("%s: dci 0x%x post %s mkey 0x%x: repeat count 0", name,
                  qp->super.qp_num, opname, wr->mkey->lkey);
        return EINVAL;
    }
    for (i = 0; i < lay->num_entries; ++i) {
        const dcx_mkey_interleaved_t *e = &lay->interleaved[i];

        if ((e->bytes_count > qp->dev->super.caps.mkey_max_stride) ||
            ((uint64_t)e->bytes_count + e->bytes_skip >
             qp->dev->super.caps.mkey_max_stride)) {
            dcx_error("%s: dci 0x%x post %s mkey 0x%x: entry %u: byte count "
                      "%u + skip %u over the limit %u",
                      name, qp->super.qp_num, opname, wr->mkey->lkey, i,
                      e->bytes_count, e->bytes_skip,
                      qp->dev->super.caps.mkey_max_stride);
            return EINVAL;
        }
        rep_len += e->bytes_count;
    }
    if ((rep_len == 0) || (rep_len > UINT32_MAX)) {
        dcx_error("%s: dci 0x%x post %s mkey 0x%x: %llu bytes per repetition "
                  "(1 .. 2^32 - 1)",
                  name, qp->super.qp_num, opname, wr->mkey->lkey,
                  (unsigned long long)rep_len);
        return EINVAL;
    }
    return 0;
}

/* Copies a checked request into w (engine lock held).  Out of memory makes
 * the request fail at execution, with the DCI, as a hardware error would. */
/* The request of a layout (none for an invalidation); NULL without
 * memory */
static soft_mkey_wr_t *soft_mkey_wr_make(unsigned opcode, uint32_t lkey,
                                         const dcx_mkey_layout_t *lay)
{
    uint32_t num = soft_mkey_is_cfg(opcode) ? lay->num_entries : 0;
    soft_mkey_wr_t *m;
    uint64_t pre = 0;
    uint32_t i;

    m = malloc(sizeof(*m) + num * sizeof(m->ent[0]));
    if (m == NULL) {
        return NULL;
    }
    m->lkey   = lkey;
    m->num    = num;
    m->access = (num != 0) ? lay->access : 0;
    m->repeat = (opcode == DCX_WR_MKEY_INTERLEAVED) ? lay->repeat_count : 1;
    for (i = 0; i < num; ++i) {
        soft_mkey_ent_t *e = &m->ent[i];

        if (opcode == DCX_WR_MKEY_INTERLEAVED) {
            e->addr   = lay->interleaved[i].addr;
            e->count  = lay->interleaved[i].bytes_count;
            e->stride = lay->interleaved[i].bytes_count +
                        lay->interleaved[i].bytes_skip;
            e->lkey = lay->interleaved[i].lkey;
        } else {
            e->addr   = lay->list[i].addr;
            e->count  = lay->list[i].length;
            e->stride = 0;
            e->lkey   = lay->list[i].lkey;
        }
        e->pre = pre;
        pre += e->count;
    }
    m->rep_len = pre;
    return m;
}

void soft_mkey_wr_copy(soft_qp_t *qp, soft_swqe_t *w, const dcx_send_wr_t *wr)
{
    w->mkw = soft_mkey_wr_make(wr->opcode, wr->mkey->lkey, wr->mkey_layout);
    if (w->mkw == NULL) {
        dcx_error("%s: dci 0x%x post %s: out of memory for the layout",
                  soft_qp_dev_name(qp), qp->super.qp_num,
                  soft_opinfo[wr->opcode].name);
        w->forced = DCX_WC_GENERAL_ERR;
    }
}

void soft_mkey_wr_free(soft_swqe_t *w)
{
    free(w->mkw);
    w->mkw = NULL;
}

/* Whether mk's layout is a vector, and which (*v): one entry (a column,
 * every k-th block of an array), or a list whose entries are of one
 * length, in one MR, each a fixed distance past the one before and not
 * touching it: the layout a consumer registers as a list when the
 * stride is past the interleaved one's 16-bit field (a column of N = 8192
 * doubles: one entry per element).  Either way byte off of the key is
 * byte off % count of element off / count, so both are checked and
 * copied as one vector; a list that is anything else is walked. */
static int soft_mkey_as_vector(const soft_mkey_t *mk, soft_mkey_ent_t *v)
{
    const soft_mkey_ent_t *e = mk->ent;
    uint64_t step;
    uint32_t i;

    if (mk->num == 1) {
        *v = e[0];
        return 1;
    }
    if ((mk->num == 0) || (mk->repeat != 1) || (e[0].stride != 0) ||
        (e[0].count == 0) || (e[1].addr <= e[0].addr)) {
        return 0; /* interleaved with several entries, or not a list */
    }
    step = e[1].addr - e[0].addr;
    if ((step <= e[0].count) || (step > UINT32_MAX)) {
        return 0;
    }
    for (i = 1; i < mk->num; ++i) {
        if ((e[i].count != e[0].count) || (e[i].lkey != e[0].lkey) ||
            (e[i].addr <= e[i - 1].addr) ||
            (e[i].addr - e[i - 1].addr != step)) {
            return 0;
        }
    }
    *v        = e[0];
    v->stride = (uint32_t)step;
    return 1;
}

/* A layout that is a vector is published in the port's tables, so that an
 * initiator whose copy of the target memory is mapped executes a WRITE or
 * READ through the key itself (soft_direct.c); any other is not.  The
 * layout published before is withdrawn first, the copies through it
 * waited for: a layout changes only once no initiator uses it. */
static void soft_mkey_publish(soft_mkey_t *mk, int publish)
{
    soft_direct_vector_t vec;

    if (mk->published) {
        soft_direct_vector_set(mk->dev, &mk->key, NULL);
        mk->published = 0;
    }
    if (!publish || !mk->is_vec) {
        return;
    }
    vec.base   = mk->vec.addr;
    vec.count  = mk->vec.count;
    vec.stride = mk->vec.stride;
    vec.length = mk->length;
    vec.mr_key = mk->vec.lkey;
    vec.access = mk->access;
    soft_direct_vector_set(mk->dev, &mk->key, &vec);
    mk->published = 1;
}

/* Gives mk the layout of configure request m, byte 0 at address base */
static void soft_mkey_apply(soft_mkey_t *mk, const soft_mkey_wr_t *m,
                            uint64_t base)
{
    memcpy(mk->ent, m->ent, m->num * sizeof(m->ent[0]));
    mk->num        = m->num;
    mk->access     = m->access;
    mk->repeat     = m->repeat;
    mk->rep_len    = m->rep_len;
    mk->length     = m->repeat * m->rep_len;
    mk->base       = base;
    /* an initiator's direct copy through a published vector knows no
     * base: a key that has one is walked by its owner */
    mk->is_vec     = (base == 0) && soft_mkey_as_vector(mk, &mk->vec);
    mk->configured = 1;
    soft_mkey_publish(mk, 1);
}

int dcx_soft_mkey_configure(dcx_mkey_t *mkey, const dcx_mkey_layout_t *lay,
                            uint64_t base, uint8_t variant)
{
    soft_mkey_t *mk = (soft_mkey_t *)mkey; /* super comes first */
    soft_dev_t *dev = mk->dev;
    soft_mkey_wr_t *m;
    uint32_t key;

    if ((lay == NULL) || (lay->num_entries == 0) ||
        (lay->num_entries > mkey->max_entries) ||
        (lay->access & ~SOFT_MKEY_ACCESS_ALL) || (base + 1 < base)) {
        dcx_error("%s: mkey 0x%x configure: %u entries (1..%u), access 0x%x "
                  "or base 0x%llx refused",
                  dev->super.caps.name, mkey->lkey,
                  (lay != NULL) ? lay->num_entries : 0, mkey->max_entries,
                  (lay != NULL) ? lay->access : 0, (unsigned long long)base);
        return EINVAL;
    }
    m = soft_mkey_wr_make(DCX_WR_MKEY_LIST, mkey->lkey, lay);
    if (m == NULL) {
        return ENOMEM;
    }
    soft_lock(&dev->lock);
    soft_mkey_publish(mk, 0);
    key                = (mk->key.super.lkey & ~0xffu) | variant;
    mk->key.super.lkey = mk->key.super.rkey = key;
    mk->super.lkey = mk->super.rkey = key;
    soft_mkey_apply(mk, m, base);
    soft_unlock(&dev->lock);
    free(m);
    dcx_debug("%s: mkey 0x%x configured at once: %u entries from 0x%llx",
              dev->super.caps.name, key, lay->num_entries,
              (unsigned long long)base);
    return 0;
}

/* Executes a request that reached the head of its DCI; returns the status
 * of its completion. */
uint8_t soft_mkey_wr_exec(soft_qp_t *qp, soft_swqe_t *w)
{
    soft_mkey_wr_t *m = w->mkw;
    soft_mkey_t *mk;
    soft_mr_t *key;

    if (w->forced != SOFT_NO_STATUS) {
        return w->forced;
    }
    if (m == NULL) {
        return DCX_WC_GENERAL_ERR; /* logged when the copy failed */
    }
    key = soft_key_lookup(qp->dev, m->lkey);
    if ((key == NULL) || (key->mkey == NULL)) {
        dcx_error("%s: dci 0x%x %s: key 0x%x is not a strided key when "
                  "the request executes (destroyed, or the key of an MR)",
                  soft_qp_dev_name(qp), qp->super.qp_num,
                  soft_opinfo[w->wr.opcode].name, m->lkey);
        return DCX_WC_LOC_PROT_ERR;
    }
    mk = key->mkey;
    soft_mkey_publish(mk, 0);
    if (w->wr.opcode == DCX_WR_MKEY_INVALIDATE) {
        mk->configured = 0;
        dcx_debug("%s: mkey 0x%x invalidated", soft_qp_dev_name(qp), m->lkey);
        return DCX_WC_SUCCESS;
    }
    soft_mkey_apply(mk, m, 0);
    dcx_debug("%s: mkey 0x%x configured: %u entries x %llu, %llu bytes",
              soft_qp_dev_name(qp), m->lkey, m->num,
              (unsigned long long)m->repeat, (unsigned long long)mk->length);
    return DCX_WC_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Translation
 * ------------------------------------------------------------------------ */
typedef int (*soft_mkey_piece_cb_t)(soft_dev_t *dev, soft_mr_t *mr,
                                    uint64_t addr, uint64_t len, uint64_t done,
                                    void *arg);

/* Walks the pieces of [off, off + len) of the key's layout, checking each
 * against its MR for 'access' (and the key itself), and calls cb (if not
 * NULL) for each.  0, EACCES (key free, access or an entry's MR refuses),
 * ERANGE (outside the layout), or what cb returned. */
static inline __attribute__((always_inline)) int
soft_mkey_walk(soft_dev_t *dev, soft_mkey_t *mk, uint64_t off, uint64_t len,
               uint32_t access, soft_mkey_piece_cb_t cb, void *arg)
{
    uint64_t done = 0, r, within, inoff, chunk, addr;
    uint32_t i, lo, hi, mid, mr_lkey = 0;
    soft_mr_t *mr = NULL;
    soft_mkey_ent_t *e;
    int ret;

    if (!mk->configured || (access & ~mk->access)) {
        return EACCES;
    }
    if (off < mk->base) {
        return ERANGE;
    }
    off -= mk->base;
    if ((off > mk->length) || (len > mk->length - off)) {
        return ERANGE;
    }
    if (len == 0) {
        return 0;
    }
    r      = off / mk->rep_len;
    within = off % mk->rep_len;
    lo     = 0;
    hi     = mk->num - 1;
    while (lo < hi) { /* the last entry starting at or before 'within' */
        mid = (lo + hi + 1) / 2;
        if (mk->ent[mid].pre <= within) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    i     = lo;
    inoff = within - mk->ent[i].pre;
    while (len > 0) {
        e     = &mk->ent[i];
        chunk = e->count - inoff;
        if (chunk > len) {
            chunk = len;
        }
        if (chunk > 0) {
            addr = e->addr + r * e->stride + inoff;
            if ((mr == NULL) || (e->lkey != mr_lkey)) {
                /* the table does not change during a walk (engine lock
                 * or the caller's own sges) */
                mr      = soft_mr_lookup(dev, e->lkey);
                mr_lkey = e->lkey;
            }
            if ((mr == NULL) || (access & ~mr->super.access) ||
                (addr < mr->start) || (addr > mr->end) ||
                (chunk > mr->end - addr)) {
                dcx_debug("%s: mkey 0x%x offset %llu: entry %u (lkey 0x%x, "
                          "0x%llx/%llu) not registered for access 0x%x",
                          dev->super.caps.name, mk->super.lkey,
                          (unsigned long long)(off + done), i, e->lkey,
                          (unsigned long long)addr, (unsigned long long)chunk,
                          access);
                return EACCES;
            }
            if (cb != NULL) {
                ret = cb(dev, mr, addr, chunk, done, arg);
                if (ret != 0) {
                    return ret;
                }
            }
            done += chunk;
            len -= chunk;
        }
        inoff = 0;
        if (++i == mk->num) {
            i = 0;
            ++r;
        }
    }
    return 0;
}

/* An access to a layout that is a vector (soft_vector.h), allowed as a
 * whole when its first and last bytes lie in the vector's MR with the rights
 * asked for: one check, where the walk checks each piece. */
typedef struct soft_mkey_vector {
    soft_mr_t *mr;
    soft_vector_span_t span;
} soft_mkey_vector_t;

/* 1 with *v filled if [off, off + len) of mk is such an access and is
 * allowed; 0 if the layout is no vector, or for anything the walk
 * must look at piece by piece (it finds the piece refused, for the error
 * and its log line). */
static inline int soft_mkey_vector(soft_dev_t *dev, const soft_mkey_t *mk,
                                   uint64_t off, uint64_t len, uint32_t access,
                                   soft_mkey_vector_t *v)
{
    const soft_mkey_ent_t *e = &mk->vec;
    soft_mr_t *mr;

    if (!mk->is_vec || !mk->configured || (access & ~mk->access) ||
        (len == 0) || (off > mk->length) || (len > mk->length - off) ||
        !soft_vector_span(e->addr, e->count, e->stride, off, len, &v->span)) {
        return 0;
    }
    mr = soft_mr_lookup(dev, e->lkey);
    if ((mr == NULL) || (access & ~mr->super.access) ||
        (v->span.lo < mr->start) || (v->span.hi >= mr->end)) {
        return 0;
    }
    v->mr = mr;
    return 1;
}

int soft_mkey_check(soft_dev_t *dev, soft_mr_t *key, uint64_t off, uint64_t len,
                    uint32_t access)
{
    soft_mkey_vector_t v;

    if (soft_mkey_vector(dev, key->mkey, off, len, access, &v)) {
        return 0;
    }
    return soft_mkey_walk(dev, key->mkey, off, len, access, NULL, NULL);
}

static int soft_mkey_copy_to(soft_dev_t *dev, soft_mr_t *mr, uint64_t addr,
                             uint64_t len, uint64_t done, void *arg)
{
    memcpy((void *)(uintptr_t)addr, (const uint8_t *)arg + done, len);
    return 0;
}

static int soft_mkey_copy_from(soft_dev_t *dev, soft_mr_t *mr, uint64_t addr,
                               uint64_t len, uint64_t done, void *arg)
{
    memcpy((uint8_t *)arg + done, (const void *)(uintptr_t)addr, len);
    return 0;
}

/* Local use of a key (lkey in an sge): gather from it or scatter into it,
 * as the soft device does for plain local sges. */
int soft_mkey_local_copy(soft_dev_t *dev, soft_mr_t *key, uint64_t off,
                         void *buf, uint64_t len, int to_key)
{
    return soft_mkey_walk(dev, key->mkey, off, len,
                          to_key ? DCX_ACCESS_LOCAL_WRITE : 0,
                          to_key ? soft_mkey_copy_to : soft_mkey_copy_from,
                          buf);
}

/* A remote access through a key: the walk appends its pieces to the
 * device's batch, which is copied whenever it is full and at the end. */
typedef struct soft_mkey_xfer {
    soft_mem_vec_t *v;
    uint8_t *buf;
    int out; /* 1: buf to the key (WRITE), 0: the key to buf (READ) */
} soft_mkey_xfer_t;

static int soft_mkey_vec_flush(soft_dev_t *dev, soft_mkey_xfer_t *x)
{
    if (x->v->n == 0) {
        return 0;
    }
    return x->out ? soft_mem_vec_write(dev, x->v, x->buf) :
                    soft_mem_vec_read(dev, x->v, x->buf);
}

static int soft_mkey_remote_piece(soft_dev_t *dev, soft_mr_t *mr, uint64_t addr,
                                  uint64_t len, uint64_t done, void *arg)
{
    soft_mkey_xfer_t *x = arg;
    soft_mem_vec_t *v   = x->v;
    struct iovec *last;
    int ret;

    if (v->n != 0) {
        last = &v->iov[v->n - 1];
        if ((v->mr[v->nmr - 1] == mr) &&
            ((uintptr_t)last->iov_base + last->iov_len == addr)) {
            last->iov_len += len; /* adjacent: one piece */
            v->len += len;
            return 0;
        }
        if (v->n == SOFT_MEM_VEC_MAX) {
            ret = soft_mkey_vec_flush(dev, x);
            if (ret != 0) {
                return ret;
            }
        }
    }
    if (v->n == 0) {
        v->off = done;
    }
    if ((v->nmr == 0) || (v->mr[v->nmr - 1] != mr)) {
        v->mr[v->nmr++] = mr;
    }
    v->iov[v->n].iov_base = (void *)(uintptr_t)addr;
    v->iov[v->n].iov_len  = len;
    v->n++;
    v->len += len;
    return 0;
}

/* Where our own memory is copied plainly (the consumer reports unmaps,
 * soft_mem.c), no batch: each piece is copied as the walk finds it, under
 * the in-flight mark set once for the walk, and each region's
 * invalidation is looked at when the walk first meets it after the mark
 * (as soft_mem_vec_copy does per batch). */
typedef struct soft_mkey_direct {
    uint8_t *buf;
    int out;
    soft_mr_t *seen; /* the last region looked at */
    uint64_t pieces;
} soft_mkey_direct_t;

static int soft_mkey_direct_piece(soft_dev_t *dev, soft_mr_t *mr, uint64_t addr,
                                  uint64_t len, uint64_t done, void *arg)
{
    soft_mkey_direct_t *d = arg;

    if (mr != d->seen) {
        if (__atomic_load_n(&mr->invalid, __ATOMIC_SEQ_CST)) {
            return EFAULT;
        }
        d->seen = mr;
    }
    d->pieces++;
    if (len == sizeof(uint64_t)) {
        /* a column of doubles or words: one load and one store, inlined
         * (the walk is: the callback is known where it is called) */
        memcpy(d->out ? (void *)(uintptr_t)addr : d->buf + done,
               d->out ? (const void *)(d->buf + done) :
                        (const void *)(uintptr_t)addr,
               sizeof(uint64_t));
    } else if (d->out) {
        memcpy((void *)(uintptr_t)addr, d->buf + done, len);
    } else {
        memcpy(d->buf + done, (const void *)(uintptr_t)addr, len);
    }
    return 0;
}

/* Copies an allowed vector access (soft_mkey_vector) between buf and the
 * key, under the in-flight mark (soft_mkey_remote): the region's
 * invalidation looked at once, then the elements with no check each.
 * Returns 0, or EFAULT (the region was unmapped: nothing copied). */
static int soft_mkey_vector_copy(soft_dev_t *dev, const soft_mkey_t *mk,
                                 const soft_mkey_vector_t *v, uint8_t *buf,
                                 uint64_t len, int out)
{
    if (__atomic_load_n(&v->mr->invalid, __ATOMIC_SEQ_CST)) {
        return EFAULT;
    }
    dev->stats.mkey_pieces += soft_vector_copy((uint8_t *)(uintptr_t)v->span.lo,
                                               v->span.inoff, mk->vec.count,
                                               mk->vec.stride, buf, len, out);
    return 0;
}

/* The pieces before a refused one are copied, as they would have been one
 * by one; then the refusal is returned. */
static int soft_mkey_remote(soft_dev_t *dev, soft_mkey_t *mk, uint64_t off,
                            uint8_t *buf, uint64_t len, int out)
{
    const uint32_t access = out ? DCX_ACCESS_REMOTE_WRITE :
                                  DCX_ACCESS_REMOTE_READ;
    soft_mkey_xfer_t x    = {dev->mvec, buf, out};
    soft_mkey_direct_t d  = {buf, out, NULL, 0};
    soft_mkey_vector_t v;
    int ret, fret;

    if (dev->local_out == soft_mem_copy_plain) {
        (void)soft_mem_local_begin(dev, NULL, 0); /* the mark */
        dev->stats.mkey_batches++;
        if (soft_mkey_vector(dev, mk, off, len, access, &v)) {
            ret = soft_mkey_vector_copy(dev, mk, &v, buf, len, out);
        } else {
            ret = soft_mkey_walk(dev, mk, off, len, access,
                                 soft_mkey_direct_piece, &d);
            dev->stats.mkey_pieces += d.pieces;
        }
        soft_mem_local_end(dev);
        return ret;
    }

    ret = soft_mkey_walk(dev, mk, off, len, access, soft_mkey_remote_piece, &x);
    fret = soft_mkey_vec_flush(dev, &x);
    return (ret != 0) ? ret : fret;
}

int soft_key_write(soft_dev_t *dev, soft_mr_t *mr, uint64_t addr,
                   const void *src, size_t len)
{
    if (mr->mkey == NULL) {
        return soft_mem_write(dev, mr, addr, src, len);
    }
    return soft_mkey_remote(dev, mr->mkey, addr, (uint8_t *)src, len, 1);
}

int soft_key_read(soft_dev_t *dev, soft_mr_t *mr, void *dst, uint64_t addr,
                  size_t len)
{
    if (mr->mkey == NULL) {
        return soft_mem_read(dev, mr, dst, addr, len);
    }
    return soft_mkey_remote(dev, mr->mkey, addr, dst, len, 0);
}

typedef struct soft_mkey_target {
    soft_mr_t *mr;
    uint64_t addr;
    unsigned pieces;
} soft_mkey_target_t;

static int soft_mkey_find_target(soft_dev_t *dev, soft_mr_t *mr, uint64_t addr,
                                 uint64_t len, uint64_t done, void *arg)
{
    soft_mkey_target_t *t = arg;

    t->mr   = mr;
    t->addr = addr;
    t->pieces++;
    return 0;
}

/* An atomic through a key executes on one entry only: a word split between
 * two entries, or whose translated address is not aligned to its size, is
 * an invalid request (EINVAL); refused access is EACCES/ERANGE/EFAULT. */
int soft_key_atomic(soft_dev_t *dev, soft_mr_t *mr, const soft_pkt_t *pkt,
                    uint64_t (*exec)(const soft_pkt_t *), uint64_t *result_p)
{
    soft_mkey_target_t t = {NULL, 0, 0};
    soft_pkt_t tpkt;
    int ret;

    if (mr->mkey == NULL) {
        return soft_mem_atomic(dev, mr, pkt->raddr, pkt->atomic_size, exec, pkt,
                               result_p);
    }
    ret = soft_mkey_walk(dev, mr->mkey, pkt->raddr, pkt->atomic_size,
                         DCX_ACCESS_REMOTE_ATOMIC, soft_mkey_find_target, &t);
    if (ret != 0) {
        return ret;
    }
    if ((t.pieces != 1) || (t.addr % pkt->atomic_size)) {
        dcx_debug("%s: atomic at offset %llu of mkey 0x%x: %s",
                  dev->super.caps.name, (unsigned long long)pkt->raddr,
                  pkt->rkey,
                  (t.pieces != 1) ? "spans two entries" :
                                    "translated address not aligned");
        return EINVAL;
    }
    tpkt       = *pkt;
    tpkt.raddr = t.addr;
    return soft_mem_atomic(dev, t.mr, t.addr, pkt->atomic_size, exec, &tpkt,
                           result_p);
}

/* Whether one local sge (plain MR or strided key) may be used with
 * 'access' (0: read, DCX_ACCESS_LOCAL_WRITE: written) by a queue of 'pd':
 * a key of another PD is a bad lkey, as on an HCA. */
int soft_sge_ok(soft_dev_t *dev, const dcx_sge_t *sge, uint32_t access,
                const dcx_pd_t *pd)
{
    soft_mr_t *mr = soft_key_lookup(dev, sge->lkey);

    if ((mr == NULL) || (mr->super.pd != pd)) {
        return 0;
    }
    if (mr->mkey != NULL) {
        return soft_mkey_walk(dev, mr->mkey, sge->addr, sge->length, access,
                              NULL, NULL) == 0;
    }
    return !(access & ~mr->super.access) && (sge->addr >= mr->start) &&
           (sge->addr <= mr->end) && (sge->length <= mr->end - sge->addr);
}
