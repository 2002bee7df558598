/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx memory domain: strided registration (include/uct/dcx/dcx_strided.h).
 *
 * A strided or list layout becomes an indirect mkey of the device
 * (docs/device-semantics.md section 10), configured by a work request on
 * a QP of the type the device names (caps.mkey_qp_type: the soft device takes
 * it on a DCI, mlx5 routes it to its loopback RC QP) and invalidated the
 * same way before it is destroyed.  The MD creates that QP and a CQ for it
 * on the first strided registration; registration is control path, so the
 * call posts one work request and waits (bounded) for its completion.
 *
 * The memory handle given out embeds a dcx_mr_t "view" of the mkey (its
 * keys, zero-based, the layout's length), so that rkey packing and every
 * other user of uct_dcx_memh_mr() see an ordinary MR.
 */
#include "dcx_md.h"
#include "uct/dcx/dcx_strided.h"

#include <ucs/arch/cpu.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/time/time.h>

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* How long a configure or invalidate may take before the call gives up */
#define UCT_DCX_STRIDED_TIMEOUT_SEC 10.0

/* Send queue of the MD's mkey QP: one request at a time is outstanding
 * (the lock serialises them); room for stale ones after a timeout */
#define UCT_DCX_STRIDED_QP_DEPTH 16

/* The accesses a strided key grants peers; none asked for means all */
#define UCT_DCX_STRIDED_REMOTE                                     \
    (UCT_MD_MEM_ACCESS_REMOTE_PUT | UCT_MD_MEM_ACCESS_REMOTE_GET | \
     UCT_MD_MEM_ACCESS_REMOTE_ATOMIC)

struct uct_dcx_md_strided {
    dcx_cq_t *cq;
    dcx_qp_t *qp;
    uint64_t wr_seq; /* wr_id of the last request posted */
};

typedef struct uct_dcx_md_strided_memh {
    uct_dcx_memh_t super; /* flags STRIDED, mr = &view */
    dcx_mr_t view;        /* the mkey's keys, zero-based, length */
    dcx_mkey_t *mkey;
    size_t num_own; /* registrations the call made itself */
    uct_mem_h own[];
} uct_dcx_md_strided_memh_t;

/* A layout ready to post */
typedef struct uct_dcx_md_strided_layout {
    uint8_t opcode; /* DCX_WR_MKEY_INTERLEAVED/LIST */
    uint32_t num_entries;
    uint32_t repeat;
    uint32_t key_entries; /* mkey max_entries needed */
    uint64_t length;      /* bytes of the key's range */
    dcx_mkey_interleaved_t *ient;
    dcx_sge_t *sge;
} uct_dcx_md_strided_layout_t;

/* A list region during validation (sorted copy) */
typedef struct uct_dcx_md_strided_span {
    uintptr_t start;
    uintptr_t end;
    size_t index;
} uct_dcx_md_strided_span_t;


void uct_dcx_md_strided_init(uct_dcx_md_t *md)
{
    pthread_mutex_init(&md->strided_lock, NULL);
    md->strided = NULL;
}

void uct_dcx_md_strided_cleanup(uct_dcx_md_t *md)
{
    uct_dcx_md_strided_t *ctx = md->strided;
    int ret;

    if (ctx != NULL) {
        ret = dcx_qp_destroy(ctx->qp);
        if (ret != 0) {
            ucs_warn("dcx md %s: destroying the mkey QP failed: %s", md->name,
                     strerror(ret));
        }
        ret = dcx_cq_destroy(ctx->cq);
        if (ret != 0) {
            ucs_warn("dcx md %s: destroying the mkey CQ failed: %s", md->name,
                     strerror(ret));
        }
        ucs_free(ctx);
        md->strided = NULL;
    }
    pthread_mutex_destroy(&md->strided_lock);
}

/* Creates the QP and CQ for mkey work requests; called with the lock */
static UCS_F_NOINLINE ucs_status_t
uct_dcx_md_strided_ctx_create(uct_dcx_md_t *md)
{
    const dcx_dev_caps_t *caps = dcx_dev_caps(md->dev);
    uct_dcx_md_strided_t *ctx;
    dcx_qp_attr_t attr;
    ucs_status_t status;
    int ret;

    ctx = ucs_calloc(1, sizeof(*ctx), "dcx strided ctx");
    if (ctx == NULL) {
        ucs_error("dcx md %s: cannot allocate the strided key context",
                  md->name);
        return UCS_ERR_NO_MEMORY;
    }

    ret = dcx_cq_create(md->dev, UCT_DCX_STRIDED_QP_DEPTH, &ctx->cq);
    if (ret != 0) {
        status = uct_dcx_status_from_errno(ret);
        ucs_error("dcx md %s: cannot create the CQ of strided keys: %s",
                  md->name, strerror(ret));
        goto err_free;
    }

    memset(&attr, 0, sizeof(attr));
    attr.type          = (dcx_qp_type_t)caps->mkey_qp_type;
    attr.send_cq       = ctx->cq;
    attr.max_send_wr   = UCT_DCX_STRIDED_QP_DEPTH;
    attr.max_send_sge  = 1;
    attr.max_rd_atomic = 1;
    ret                = dcx_qp_create(md->pd, &attr, &ctx->qp);
    if (ret != 0) {
        status = uct_dcx_status_from_errno(ret);
        ucs_error("dcx md %s: cannot create the QP of strided keys: %s",
                  md->name, strerror(ret));
        goto err_cq;
    }

    md->strided = ctx;
    return UCS_OK;

err_cq:
    dcx_cq_destroy(ctx->cq);
err_free:
    ucs_free(ctx);
    return status;
}

/* Posts one mkey work request and waits for its completion; called with
 * the lock.  Completions of requests that timed out earlier are skipped. */
static ucs_status_t uct_dcx_md_strided_exec(uct_dcx_md_t *md, uint8_t opcode,
                                            dcx_mkey_t *mkey,
                                            const dcx_mkey_layout_t *layout,
                                            const char *what)
{
    uct_dcx_md_strided_t *ctx = md->strided;
    ucs_time_t deadline;
    dcx_send_wr_t wr;
    dcx_wc_t wc;
    int ret;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id       = ++ctx->wr_seq;
    wr.opcode      = opcode;
    wr.flags       = DCX_SEND_SIGNALED;
    wr.mkey        = mkey;
    wr.mkey_layout = layout;

    ret = dcx_qp_post_send(ctx->qp, &wr);
    if (ret != 0) {
        ucs_error("dcx md %s: cannot post the %s of strided key 0x%x: %s",
                  md->name, what, mkey->lkey, strerror(ret));
        return uct_dcx_status_from_errno(ret);
    }

    deadline = ucs_get_time() + ucs_time_from_sec(UCT_DCX_STRIDED_TIMEOUT_SEC);
    for (;;) {
        ret = dcx_cq_poll(ctx->cq, 1, &wc);
        if (ret < 0) {
            ucs_error("dcx md %s: polling the CQ of strided keys failed "
                      "(%d)",
                      md->name, ret);
            return UCS_ERR_IO_ERROR;
        }
        if ((ret == 1) && (wc.wr_id == wr.wr_id)) {
            break;
        }
        if ((ret == 0) && (ucs_get_time() > deadline)) {
            ucs_error("dcx md %s: the %s of strided key 0x%x did not "
                      "complete within %.0f s",
                      md->name, what, mkey->lkey, UCT_DCX_STRIDED_TIMEOUT_SEC);
            return UCS_ERR_TIMED_OUT;
        }
        if (ret == 0) {
            sched_yield();
        }
    }

    if (wc.status != DCX_WC_SUCCESS) {
        ucs_error("dcx md %s: the %s of strided key 0x%x failed: %s "
                  "(vendor error 0x%x)",
                  md->name, what, mkey->lkey,
                  dcx_wc_status_str((dcx_wc_status_t)wc.status), wc.vendor_err);
        if ((ctx->qp->state == DCX_QPS_ERR) && (dcx_qp_recover(ctx->qp) != 0)) {
            ucs_warn("dcx md %s: the QP of strided keys did not recover",
                     md->name);
        }
        return UCS_ERR_IO_ERROR;
    }

    return UCS_OK;
}


/* ------------------------------------------------------------------------
 * Validation and layouts
 * ------------------------------------------------------------------------ */

/* UCT access flags (no remote access = all) as device access of the key */
static uint32_t uct_dcx_md_strided_access(unsigned flags)
{
    uint32_t access = 0;

    if (!(flags & UCT_DCX_STRIDED_REMOTE)) {
        flags |= UCT_DCX_STRIDED_REMOTE;
    }
    if (flags &
        (UCT_MD_MEM_ACCESS_REMOTE_PUT | UCT_MD_MEM_ACCESS_LOCAL_WRITE)) {
        access |= DCX_ACCESS_LOCAL_WRITE;
    }
    if (flags & UCT_MD_MEM_ACCESS_REMOTE_PUT) {
        access |= DCX_ACCESS_REMOTE_WRITE;
    }
    if (flags & UCT_MD_MEM_ACCESS_REMOTE_GET) {
        access |= DCX_ACCESS_REMOTE_READ;
    }
    if (flags & UCT_MD_MEM_ACCESS_REMOTE_ATOMIC) {
        access |= DCX_ACCESS_REMOTE_ATOMIC | DCX_ACCESS_LOCAL_WRITE;
    }
    return access;
}

/* What every strided registration checks first: a dcx md, somewhere to put
 * the handle, and a device with strided keys */
static ucs_status_t uct_dcx_md_strided_check_md(uct_md_h uct_md, void *memh_p,
                                                const char *func,
                                                uct_dcx_md_t **md_p)
{
    uct_dcx_md_t *md;

    if ((uct_md == NULL) || (memh_p == NULL)) {
        ucs_error("dcx: %s: md %p, memh_p %p: neither may be NULL", func,
                  uct_md, memh_p);
        return UCS_ERR_INVALID_PARAM;
    }

    if (uct_md->component != &uct_dcx_component) {
        ucs_error("dcx: %s: md %p is not a dcx memory domain (component "
                  "'%s')",
                  func, uct_md, uct_md->component->name);
        return UCS_ERR_INVALID_PARAM;
    }

    md = ucs_derived_of(uct_md, uct_dcx_md_t);
    if (!(dcx_dev_caps(md->dev)->flags & DCX_CAP_MKEY_STRIDE)) {
        ucs_error("dcx md %s: the device has no strided memory keys", md->name);
        return UCS_ERR_UNSUPPORTED;
    }

    *md_p = md;
    return UCS_OK;
}

/* A base memh given by the caller covers [start, end) with the access */
static ucs_status_t
uct_dcx_md_strided_check_base(uct_dcx_md_t *md, uct_mem_h uct_memh,
                              uintptr_t start, uintptr_t end, uint32_t access,
                              const char *what, size_t index)
{
    uct_dcx_memh_t *memh = uct_memh;
    dcx_mr_t *mr         = memh->mr;
    uintptr_t mr_start;

    if (memh->flags & UCT_DCX_MEMH_FLAG_STRIDED) {
        ucs_error("dcx md %s: %s %zu: memh %p is a strided registration, "
                  "not the registration of the memory",
                  md->name, what, index, uct_memh);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((mr == NULL) || (mr->pd != md->pd)) {
        ucs_error("dcx md %s: %s %zu: memh %p was not registered on this "
                  "md",
                  md->name, what, index, uct_memh);
        return UCS_ERR_INVALID_PARAM;
    }

    mr_start = (uintptr_t)mr->addr;
    if ((start < mr_start) || (end > mr_start + mr->length)) {
        ucs_error("dcx md %s: %s %zu: memory 0x%lx..0x%lx is not covered by "
                  "memh %p (0x%lx..0x%lx)",
                  md->name, what, index, start, end, uct_memh, mr_start,
                  mr_start + mr->length);
        return UCS_ERR_INVALID_ADDR;
    }

    if ((mr->access & access) != access) {
        ucs_error("dcx md %s: %s %zu: memh %p grants access 0x%x, the "
                  "strided key needs 0x%x (register it writable)",
                  md->name, what, index, uct_memh, mr->access, access);
        return UCS_ERR_INVALID_ADDR;
    }

    return UCS_OK;
}

/* Checks a strided description; writes the span of memory it touches */
static ucs_status_t
uct_dcx_md_strided_check_desc(uct_dcx_md_t *md,
                              const uct_dcx_strided_desc_t *desc,
                              size_t *blocks_p, uintptr_t *start_p,
                              uintptr_t *end_p)
{
    size_t blocks = (desc->block_count > 1) ? desc->block_count : 1;
    size_t block_extent, span, off;
    uint64_t total;

    if ((desc->elem_size == 0) || (desc->count == 0)) {
        ucs_error("dcx md %s: strided registration at %p: zero %s", md->name,
                  desc->base,
                  (desc->elem_size == 0) ? "element size" : "elements");
        return UCS_ERR_INVALID_PARAM;
    }

    if ((desc->count > 1) && (desc->stride < desc->elem_size)) {
        ucs_error("dcx md %s: strided registration at %p: elements of %zu "
                  "bytes overlap at stride %zu",
                  md->name, desc->base, desc->elem_size, desc->stride);
        return UCS_ERR_INVALID_PARAM;
    }

    /* bytes from the first byte of a block to the end of its last element,
     * from the first byte to the end of the last block, and in the key */
    span = 0;
    if (__builtin_mul_overflow(desc->count - 1, desc->stride, &off) ||
        __builtin_add_overflow(off, desc->elem_size, &block_extent) ||
        ((blocks > 1) &&
         (__builtin_mul_overflow(blocks - 1, desc->block_stride, &off) ||
          __builtin_add_overflow(off, block_extent, &span))) ||
        __builtin_mul_overflow((uint64_t)blocks, (uint64_t)desc->count,
                               &total) ||
        __builtin_mul_overflow(total, (uint64_t)desc->elem_size, &total)) {
        ucs_error("dcx md %s: strided registration at %p: %zu x %zu "
                  "elements of %zu bytes at strides %zu/%zu overflow",
                  md->name, desc->base, blocks, desc->count, desc->elem_size,
                  desc->stride, desc->block_stride);
        return UCS_ERR_INVALID_PARAM;
    }
    if (blocks == 1) {
        span = block_extent;
    }

    if ((blocks > 1) && (desc->block_stride < block_extent)) {
        ucs_error("dcx md %s: strided registration at %p: blocks of %zu "
                  "bytes overlap at block stride %zu",
                  md->name, desc->base, block_extent, desc->block_stride);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((desc->base == NULL) ||
        ((uintptr_t)desc->base + span < (uintptr_t)desc->base)) {
        ucs_error("dcx md %s: strided registration at %p: %zu bytes do not "
                  "fit the address space",
                  md->name, desc->base, span);
        return UCS_ERR_INVALID_PARAM;
    }

    *blocks_p = blocks;
    *start_p  = (uintptr_t)desc->base;
    *end_p    = (uintptr_t)desc->base + span;
    return UCS_OK;
}

static void uct_dcx_md_strided_layout_free(uct_dcx_md_strided_layout_t *layout)
{
    ucs_free(layout->ient);
    ucs_free(layout->sge);
}

static ucs_status_t
uct_dcx_md_strided_layout_alloc(uct_dcx_md_t *md,
                                uct_dcx_md_strided_layout_t *l, uint8_t opcode,
                                uint32_t num_entries)
{
    l->opcode      = opcode;
    l->num_entries = num_entries;
    l->key_entries = (opcode == DCX_WR_MKEY_INTERLEAVED) ? num_entries + 1 :
                                                           num_entries;
    if (opcode == DCX_WR_MKEY_INTERLEAVED) {
        l->ient = ucs_calloc(num_entries, sizeof(*l->ient), "dcx ient");
    } else {
        l->sge = ucs_calloc(num_entries, sizeof(*l->sge), "dcx sge");
    }
    if ((l->ient == NULL) && (l->sge == NULL)) {
        ucs_error("dcx md %s: cannot allocate %u layout entries", md->name,
                  num_entries);
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

/* The cheapest layout the device takes for a strided description:
 *  - contiguous memory: one list entry;
 *  - a regular pattern within the 16-bit stride limit: interleaved, one
 *    entry per element of a block (one entry without blocks), repeated;
 *  - otherwise one list entry per element. */
static ucs_status_t
uct_dcx_md_strided_layout_desc(uct_dcx_md_t *md,
                               const uct_dcx_strided_desc_t *desc,
                               size_t blocks, uint32_t lkey,
                               uct_dcx_md_strided_layout_t *l)
{
    const dcx_dev_caps_t *caps = dcx_dev_caps(md->dev);
    uint64_t max_stride        = caps->mkey_max_stride;
    uint64_t elements          = (uint64_t)blocks * desc->count;
    uint64_t length            = elements * desc->elem_size;
    uintptr_t base             = (uintptr_t)desc->base;
    ucs_status_t status;
    uint64_t b, i, n;
    int contiguous;

    memset(l, 0, sizeof(*l));
    l->length  = length;
    contiguous = ((desc->count == 1) || (desc->stride == desc->elem_size)) &&
                 ((blocks == 1) ||
                  (desc->block_stride == desc->count * desc->elem_size));

    if (contiguous && (length <= UINT32_MAX)) {
        status = uct_dcx_md_strided_layout_alloc(md, l, DCX_WR_MKEY_LIST, 1);
        if (status != UCS_OK) {
            return status;
        }
        l->sge[0].addr   = base;
        l->sge[0].length = (uint32_t)length;
        l->sge[0].lkey   = lkey;
        return UCS_OK;
    }

    if ((blocks == 1) && (desc->elem_size <= max_stride) &&
        (desc->stride <= max_stride) && (desc->count <= UINT32_MAX) &&
        (caps->mkey_max_entries >= 2)) {
        status = uct_dcx_md_strided_layout_alloc(md, l, DCX_WR_MKEY_INTERLEAVED,
                                                 1);
        if (status != UCS_OK) {
            return status;
        }
        l->repeat              = (uint32_t)desc->count;
        l->ient[0].addr        = base;
        l->ient[0].bytes_count = (uint32_t)desc->elem_size;
        l->ient[0].bytes_skip  = (uint32_t)(desc->stride - desc->elem_size);
        l->ient[0].lkey        = lkey;
        return UCS_OK;
    }

    if ((blocks > 1) && (desc->elem_size <= max_stride) &&
        (desc->block_stride <= max_stride) && (blocks <= UINT32_MAX) &&
        ((uint64_t)desc->count + 1 <= caps->mkey_max_entries)) {
        status = uct_dcx_md_strided_layout_alloc(md, l, DCX_WR_MKEY_INTERLEAVED,
                                                 (uint32_t)desc->count);
        if (status != UCS_OK) {
            return status;
        }
        l->repeat = (uint32_t)blocks;
        for (i = 0; i < desc->count; ++i) {
            l->ient[i].addr        = base + i * desc->stride;
            l->ient[i].bytes_count = (uint32_t)desc->elem_size;
            l->ient[i].bytes_skip  = (uint32_t)(desc->block_stride -
                                               desc->elem_size);
            l->ient[i].lkey        = lkey;
        }
        return UCS_OK;
    }

    if ((elements > caps->mkey_max_entries) || (desc->elem_size > UINT32_MAX)) {
        ucs_error("dcx md %s: strided registration at %p: %" PRIu64
                  " element(s) of %zu bytes at strides %zu/%zu exceed the "
                  "device's strided keys (%u entries; element size and "
                  "strides up to %u bytes for a regular pattern)",
                  md->name, desc->base, elements, desc->elem_size, desc->stride,
                  desc->block_stride, caps->mkey_max_entries,
                  caps->mkey_max_stride);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    status = uct_dcx_md_strided_layout_alloc(md, l, DCX_WR_MKEY_LIST,
                                             (uint32_t)elements);
    if (status != UCS_OK) {
        return status;
    }
    n = 0;
    for (b = 0; b < blocks; ++b) {
        for (i = 0; i < desc->count; ++i, ++n) {
            l->sge[n].addr   = base + b * desc->block_stride + i * desc->stride;
            l->sge[n].length = (uint32_t)desc->elem_size;
            l->sge[n].lkey   = lkey;
        }
    }
    return UCS_OK;
}

static int uct_dcx_md_strided_span_cmp(const void *a, const void *b)
{
    const uct_dcx_md_strided_span_t *x = a, *y = b;

    return (x->start < y->start) ? -1 : (x->start > y->start);
}

/* Checks a list of regions: non-empty, within the limits, no overlap */
static ucs_status_t
uct_dcx_md_strided_check_list(uct_dcx_md_t *md,
                              const uct_dcx_strided_region_t *regions,
                              size_t num_regions)
{
    const dcx_dev_caps_t *caps = dcx_dev_caps(md->dev);
    uct_dcx_md_strided_span_t *spans;
    ucs_status_t status = UCS_OK;
    size_t i;

    if ((regions == NULL) || (num_regions == 0)) {
        ucs_error("dcx md %s: list registration with %zu regions at %p",
                  md->name, num_regions, regions);
        return UCS_ERR_INVALID_PARAM;
    }

    if (num_regions > caps->mkey_max_entries) {
        ucs_error("dcx md %s: list registration of %zu regions exceeds the "
                  "device's strided keys (%u entries)",
                  md->name, num_regions, caps->mkey_max_entries);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    spans = ucs_malloc(num_regions * sizeof(*spans), "dcx spans");
    if (spans == NULL) {
        ucs_error("dcx md %s: cannot allocate %zu list regions", md->name,
                  num_regions);
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < num_regions; ++i) {
        spans[i].start = (uintptr_t)regions[i].address;
        spans[i].end   = spans[i].start + regions[i].length;
        spans[i].index = i;
        if ((regions[i].address == NULL) || (regions[i].length == 0) ||
            (spans[i].end < spans[i].start)) {
            ucs_error("dcx md %s: list region %zu: %p length %zu is empty "
                      "or wraps",
                      md->name, i, regions[i].address, regions[i].length);
            status = UCS_ERR_INVALID_PARAM;
            goto out;
        }
        if (regions[i].length > UINT32_MAX) {
            ucs_error("dcx md %s: list region %zu: %zu bytes exceed the "
                      "device's %u bytes per entry",
                      md->name, i, regions[i].length, UINT32_MAX);
            status = UCS_ERR_EXCEEDS_LIMIT;
            goto out;
        }
    }

    qsort(spans, num_regions, sizeof(*spans), uct_dcx_md_strided_span_cmp);
    for (i = 1; i < num_regions; ++i) {
        if (spans[i].start < spans[i - 1].end) {
            ucs_error("dcx md %s: list regions %zu and %zu overlap", md->name,
                      spans[i - 1].index, spans[i].index);
            status = UCS_ERR_INVALID_PARAM;
            goto out;
        }
    }

out:
    ucs_free(spans);
    return status;
}


/* ------------------------------------------------------------------------
 * Registration
 * ------------------------------------------------------------------------ */

static uct_dcx_md_strided_memh_t *
uct_dcx_md_strided_memh_alloc(uct_dcx_md_t *md, size_t num_own)
{
    uct_dcx_md_strided_memh_t *smemh;

    smemh = ucs_calloc(1, sizeof(*smemh) + num_own * sizeof(uct_mem_h),
                       "dcx strided memh");
    if (smemh == NULL) {
        ucs_error("dcx md %s: cannot allocate a strided memory handle",
                  md->name);
    }
    return smemh;
}

static void uct_dcx_md_strided_release_own(uct_dcx_md_t *md,
                                           uct_dcx_md_strided_memh_t *smemh)
{
    ucs_status_t status;
    size_t i;

    for (i = 0; i < smemh->num_own; ++i) {
        status = uct_md_mem_dereg(&md->super, smemh->own[i]);
        if (status != UCS_OK) {
            ucs_warn("dcx md %s: releasing the registration under a strided "
                     "key failed: %s",
                     md->name, ucs_status_string(status));
        }
    }
    smemh->num_own = 0;
}

/* Registers [start, end) for the call's own use, kept in smemh */
static ucs_status_t uct_dcx_md_strided_reg_own(uct_dcx_md_t *md,
                                               uct_dcx_md_strided_memh_t *smemh,
                                               uintptr_t start, uintptr_t end,
                                               unsigned flags,
                                               uct_mem_h *memh_p)
{
    ucs_status_t status;

    if (!(flags & UCT_DCX_STRIDED_REMOTE)) {
        flags |= UCT_DCX_STRIDED_REMOTE;
    }
    status = uct_md_mem_reg(&md->super, (void *)start, end - start,
                            flags & UCT_MD_MEM_ACCESS_ALL, memh_p);
    if (status != UCS_OK) {
        ucs_error("dcx md %s: cannot register 0x%lx..0x%lx under a strided "
                  "key: %s",
                  md->name, start, end, ucs_status_string(status));
        return status;
    }
    smemh->own[smemh->num_own++] = *memh_p;
    return UCS_OK;
}

/* Creates and configures the key of a layout; completes smemh */
static ucs_status_t
uct_dcx_md_strided_key_create(uct_dcx_md_t *md,
                              uct_dcx_md_strided_memh_t *smemh,
                              const uct_dcx_md_strided_layout_t *l,
                              uint32_t access)
{
    dcx_mkey_layout_t layout;
    ucs_status_t status;
    int ret;

    pthread_mutex_lock(&md->strided_lock);
    if (md->strided == NULL) {
        status = uct_dcx_md_strided_ctx_create(md);
        if (status != UCS_OK) {
            goto out_unlock;
        }
    }

    ret = dcx_mkey_create(md->pd, l->key_entries, &smemh->mkey);
    if (ret != 0) {
        status = uct_dcx_status_from_errno(ret);
        ucs_error("dcx md %s: cannot create a strided key of %u entries: %s",
                  md->name, l->key_entries, strerror(ret));
        goto out_unlock;
    }

    memset(&layout, 0, sizeof(layout));
    layout.access       = access;
    layout.repeat_count = l->repeat;
    layout.num_entries  = l->num_entries;
    layout.interleaved  = l->ient;
    layout.list         = l->sge;
    status = uct_dcx_md_strided_exec(md, l->opcode, smemh->mkey, &layout,
                                     "configuration");
    if (status != UCS_OK) {
        dcx_mkey_destroy(smemh->mkey);
        smemh->mkey = NULL;
        goto out_unlock;
    }

    smemh->super.flags = UCT_DCX_MEMH_FLAG_STRIDED;
    smemh->super.mr    = &smemh->view;
    smemh->view.pd     = md->pd;
    smemh->view.addr   = NULL; /* zero-based */
    smemh->view.length = l->length;
    smemh->view.lkey   = smemh->mkey->lkey;
    smemh->view.rkey   = smemh->mkey->rkey;
    smemh->view.access = access;
    ucs_debug("dcx md %s: strided key 0x%x: %s layout, %u entries x %u, "
              "%" PRIu64 " bytes",
              md->name, smemh->mkey->rkey,
              (l->opcode == DCX_WR_MKEY_LIST) ? "list" : "interleaved",
              l->num_entries, (l->opcode == DCX_WR_MKEY_LIST) ? 1 : l->repeat,
              l->length);

out_unlock:
    pthread_mutex_unlock(&md->strided_lock);
    return status;
}

ucs_status_t uct_dcx_md_mem_reg_strided(uct_md_h uct_md,
                                        const uct_dcx_strided_desc_t *desc,
                                        uct_mem_h memh, unsigned flags,
                                        uct_mem_h *memh_p)
{
    uct_dcx_md_strided_layout_t layout = {0};
    uct_dcx_md_strided_memh_t *smemh;
    uintptr_t start, end;
    uct_dcx_md_t *md;
    uint32_t access;
    ucs_status_t status;
    size_t blocks;

    status = uct_dcx_md_strided_check_md(uct_md, memh_p, __func__, &md);
    if (status != UCS_OK) {
        return status;
    }

    if (desc == NULL) {
        ucs_error("dcx md %s: strided registration without a description",
                  md->name);
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_dcx_md_strided_check_desc(md, desc, &blocks, &start, &end);
    if (status != UCS_OK) {
        return status;
    }

    access = uct_dcx_md_strided_access(flags);
    if (memh != NULL) {
        status = uct_dcx_md_strided_check_base(md, memh, start, end, access,
                                               "strided region", 0);
        if (status != UCS_OK) {
            return status;
        }
    }

    smemh = uct_dcx_md_strided_memh_alloc(md, 1);
    if (smemh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    if (memh == NULL) {
        status = uct_dcx_md_strided_reg_own(md, smemh, start, end, flags,
                                            &memh);
        if (status != UCS_OK) {
            goto err_free;
        }
    }

    status = uct_dcx_md_strided_layout_desc(md, desc, blocks,
                                            uct_dcx_memh_mr(memh)->lkey,
                                            &layout);
    if (status != UCS_OK) {
        goto err_release;
    }

    status = uct_dcx_md_strided_key_create(md, smemh, &layout, access);
    uct_dcx_md_strided_layout_free(&layout);
    if (status != UCS_OK) {
        goto err_release;
    }

    *memh_p = &smemh->super;
    return UCS_OK;

err_release:
    uct_dcx_md_strided_layout_free(&layout);
    uct_dcx_md_strided_release_own(md, smemh);
err_free:
    ucs_free(smemh);
    return status;
}

ucs_status_t uct_dcx_md_mem_reg_list(uct_md_h uct_md,
                                     const uct_dcx_strided_region_t *regions,
                                     size_t num_regions, const uct_mem_h *memhs,
                                     unsigned flags, uct_mem_h *memh_p)
{
    uct_dcx_md_strided_layout_t layout = {0};
    uct_dcx_md_strided_memh_t *smemh;
    uct_dcx_md_t *md;
    uintptr_t start;
    uint32_t access;
    ucs_status_t status;
    uct_mem_h base;
    size_t i;

    status = uct_dcx_md_strided_check_md(uct_md, memh_p, __func__, &md);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_dcx_md_strided_check_list(md, regions, num_regions);
    if (status != UCS_OK) {
        return status;
    }

    access = uct_dcx_md_strided_access(flags);
    for (i = 0; (memhs != NULL) && (i < num_regions); ++i) {
        start = (uintptr_t)regions[i].address;
        if (memhs[i] == NULL) {
            ucs_error("dcx md %s: list region %zu has no memh", md->name, i);
            return UCS_ERR_INVALID_PARAM;
        }
        status = uct_dcx_md_strided_check_base(md, memhs[i], start,
                                               start + regions[i].length,
                                               access, "list region", i);
        if (status != UCS_OK) {
            return status;
        }
    }

    smemh = uct_dcx_md_strided_memh_alloc(md,
                                          (memhs == NULL) ? num_regions : 0);
    if (smemh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_dcx_md_strided_layout_alloc(md, &layout, DCX_WR_MKEY_LIST,
                                             (uint32_t)num_regions);
    if (status != UCS_OK) {
        goto err_free;
    }

    for (i = 0; i < num_regions; ++i) {
        start = (uintptr_t)regions[i].address;
        if (memhs != NULL) {
            base = memhs[i];
        } else {
            status = uct_dcx_md_strided_reg_own(md, smemh, start,
                                                start + regions[i].length,
                                                flags, &base);
            if (status != UCS_OK) {
                goto err_release;
            }
        }
        layout.sge[i].addr   = start;
        layout.sge[i].length = (uint32_t)regions[i].length;
        layout.sge[i].lkey   = uct_dcx_memh_mr(base)->lkey;
        layout.length += regions[i].length;
    }

    status = uct_dcx_md_strided_key_create(md, smemh, &layout, access);
    if (status != UCS_OK) {
        goto err_release;
    }

    uct_dcx_md_strided_layout_free(&layout);
    *memh_p = &smemh->super;
    return UCS_OK;

err_release:
    uct_dcx_md_strided_release_own(md, smemh);
    uct_dcx_md_strided_layout_free(&layout);
err_free:
    ucs_free(smemh);
    return status;
}

/* uct_md_mem_dereg of a strided handle: invalidate (waiting for the
 * device), destroy, release what the registration made itself */
ucs_status_t uct_dcx_md_strided_dereg(uct_dcx_md_t *md, uct_dcx_memh_t *memh)
{
    uct_dcx_md_strided_memh_t *smemh =
        ucs_derived_of(memh, uct_dcx_md_strided_memh_t);
    ucs_status_t status;
    int ret;

    pthread_mutex_lock(&md->strided_lock);
    status = uct_dcx_md_strided_exec(md, DCX_WR_MKEY_INVALIDATE, smemh->mkey,
                                     NULL, "invalidation");
    /* destroying makes the key unusable even if invalidation failed */
    ret    = dcx_mkey_destroy(smemh->mkey);
    pthread_mutex_unlock(&md->strided_lock);
    if (ret != 0) {
        ucs_error("dcx md %s: destroying strided key 0x%x failed: %s", md->name,
                  smemh->view.rkey, strerror(ret));
        if (status == UCS_OK) {
            status = uct_dcx_status_from_errno(ret);
        }
    }

    uct_dcx_md_strided_release_own(md, smemh);
    ucs_free(smemh);
    return status;
}
