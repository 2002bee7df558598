/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the interface's registered memory pools (send bounce
 * buffers, receive buffers, operation records), whose chunks are registered
 * with the device as they are allocated.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.inl"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <ucs/arch/cpu.h>
#include <string.h>
#include <stdlib.h>


#define UCT_DCX_RX_HDR_SPACE 16 /* rx element bytes before the headroom */

typedef struct uct_dcx_chunk {
    ucs_list_link_t list;
    dcx_mr_t *mr;
    void *base;
} uct_dcx_chunk_t;

static ucs_status_t uct_dcx_mp_chunk_alloc(ucs_mpool_t *mp, size_t *size_p,
                                           void **chunk_p)
{
    uct_dcx_iface_t *iface = *(uct_dcx_iface_t **)ucs_mpool_priv(mp);
    size_t size            = ucs_align_up(sizeof(uct_dcx_chunk_t) + *size_p,
                                          ucs_get_page_size());
    uct_dcx_chunk_t *chunk;
    void *base;
    dcx_mr_t *mr;
    int ret;

    ret = posix_memalign(&base, ucs_get_page_size(), size);
    if (ret != 0) {
        ucs_error("dcx: failed to allocate %zu bytes for %s", size,
                  ucs_mpool_name(mp));
        return UCS_ERR_NO_MEMORY;
    }

    ret = dcx_mr_reg(iface->pd, base, size, DCX_ACCESS_LOCAL_WRITE, &mr);
    if (ret != 0) {
        ucs_error("dcx: %s: failed to register %zu bytes for %s: %s",
                  dcx_dev_name(iface->dev), size, ucs_mpool_name(mp),
                  strerror(ret));
        free(base);
        return UCS_ERR_IO_ERROR;
    }

    chunk       = base;
    chunk->mr   = mr;
    chunk->base = base;
    ucs_list_add_tail(&iface->chunks, &chunk->list);
    *chunk_p = chunk + 1;
    *size_p  = size - sizeof(*chunk);
    return UCS_OK;
}

static void uct_dcx_mp_chunk_release(ucs_mpool_t *mp, void *ptr)
{
    uct_dcx_chunk_t *chunk = (uct_dcx_chunk_t *)ptr - 1;

    ucs_list_del(&chunk->list);
    dcx_mr_dereg(chunk->mr);
    free(chunk->base);
}

static void uct_dcx_tx_obj_init(ucs_mpool_t *mp, void *obj, void *ptr)
{
    uct_dcx_chunk_t *chunk    = (uct_dcx_chunk_t *)ptr - 1;
    uct_dcx_send_desc_t *desc = obj;

    desc->lkey = chunk->mr->lkey;
}

static void uct_dcx_rx_obj_init(ucs_mpool_t *mp, void *obj, void *ptr)
{
    uct_dcx_chunk_t *chunk = (uct_dcx_chunk_t *)ptr - 1;

    memcpy(UCS_PTR_BYTE_OFFSET(obj, UCT_DCX_RX_LKEY_OFFSET), &chunk->mr->lkey,
           sizeof(uint32_t));
}

static ucs_mpool_ops_t uct_dcx_tx_mp_ops = {
    .chunk_alloc   = uct_dcx_mp_chunk_alloc,
    .chunk_release = uct_dcx_mp_chunk_release,
    .obj_init      = uct_dcx_tx_obj_init,
    .obj_cleanup   = NULL,
    .obj_str       = NULL};

static ucs_mpool_ops_t uct_dcx_rx_mp_ops = {
    .chunk_alloc   = uct_dcx_mp_chunk_alloc,
    .chunk_release = uct_dcx_mp_chunk_release,
    .obj_init      = uct_dcx_rx_obj_init,
    .obj_cleanup   = NULL,
    .obj_str       = NULL};

static ucs_mpool_ops_t uct_dcx_op_mp_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = NULL,
    .obj_cleanup   = NULL,
    .obj_str       = NULL};


ucs_status_t uct_dcx_iface_mpools_init(uct_dcx_iface_t *iface,
                                       const uct_iface_params_t *params,
                                       const uct_dcx_iface_config_t *cfg)
{
    size_t align, align_offset, user_offset;
    ucs_status_t status;

    status = uct_dcx_mpool_init(&iface->tx_mp, sizeof(iface),
                                sizeof(uct_dcx_send_desc_t) + DCX_TM_TMH_LEN +
                                    cfg->seg_size,
                                sizeof(uct_dcx_send_desc_t),
                                UCS_SYS_CACHE_LINE_SIZE,
                                ucs_min(128u, cfg->tx_max_bufs),
                                cfg->tx_max_bufs, &uct_dcx_tx_mp_ops,
                                "dcx_tx_desc");
    if (status != UCS_OK) {
        return status;
    }
    *(uct_dcx_iface_t **)ucs_mpool_priv(&iface->tx_mp) = iface;

    status = uct_dcx_mpool_init(&iface->op_mp, 0,
                                ucs_max(sizeof(uct_dcx_op_t),
                                        sizeof(uct_dcx_grant_t)),
                                0, UCS_SYS_CACHE_LINE_SIZE, 256, UINT_MAX,
                                &uct_dcx_op_mp_ops, "dcx_ops");
    if (status != UCS_OK) {
        goto err_tx;
    }

    /* rx element: [lkey .. ][headroom][AM byte][payload], payload aligned */
    iface->rx.headroom = (params->field_mask &
                          UCT_IFACE_PARAM_FIELD_RX_HEADROOM) ?
                             params->rx_headroom :
                             0;
    /* The pool aligns the payload (after the AM byte) plus the user's AM
     * alignment offset, as UCT reads them from params (relative to the
     * payload here: base 0); the element start, where the pool keeps its
     * link word, must stay 8-byte aligned too: the space before the
     * headroom is padded so that payload plus offset is a multiple of 8
     * from it, and an alignment below 8 is raised to 8 (a multiple of 8 is
     * one of any smaller power of two).  A TM SRQ writes the TMH of each
     * message before the header byte. */
    status = uct_iface_param_am_alignment(params, cfg->seg_size, 0, 0, &align,
                                          &user_offset);
    if (status != UCS_OK) {
        goto err_op;
    }
    if (ucs_is_pow2(align) && (align < 8)) {
        align = 8; /* 0 or not a power of two: the pool refuses it */
    }
    iface->rx.payload_offset = UCT_DCX_RX_HDR_SPACE + iface->rx.tmh_len +
                               iface->rx.headroom;
    iface->rx.payload_offset += (8 - ((iface->rx.payload_offset +
                                       UCT_DCX_AM_HDR_LEN + user_offset) %
                                      8)) %
                                8;
    align_offset = iface->rx.payload_offset + UCT_DCX_AM_HDR_LEN + user_offset;

    status = uct_dcx_mpool_init(&iface->rx_mp, sizeof(iface),
                                iface->rx.payload_offset +
                                    iface->config.rx_seg_size,
                                align_offset, align,
                                uct_dcx_rx_init_posted(cfg->rx_queue_len,
                                                       cfg->fc_wnd),
                                UINT_MAX, &uct_dcx_rx_mp_ops, "dcx_rx_desc");
    if (status != UCS_OK) {
        goto err_op;
    }
    *(uct_dcx_iface_t **)ucs_mpool_priv(&iface->rx_mp) = iface;

    iface->tag_bcopy_mp = &iface->tx_mp; /* rx_seg_size is seg_size */
    if (iface->rx.tmh_len != 0) {
        /* an eager tagged message may be as large as a receive buffer: its
         * bcopy buffers too (few at first: most tagged sends are zcopy) */
        status = uct_dcx_mpool_init(&iface->tag_tx_mp, sizeof(iface),
                                    sizeof(uct_dcx_send_desc_t) +
                                        DCX_TM_TMH_LEN +
                                        iface->config.rx_seg_size,
                                    sizeof(uct_dcx_send_desc_t),
                                    UCS_SYS_CACHE_LINE_SIZE,
                                    ucs_min(8u, cfg->tx_max_bufs),
                                    cfg->tx_max_bufs, &uct_dcx_tx_mp_ops,
                                    "dcx_tag_tx_desc");
        if (status != UCS_OK) {
            goto err_rx;
        }
        *(uct_dcx_iface_t **)ucs_mpool_priv(&iface->tag_tx_mp) = iface;
        iface->tag_bcopy_mp = &iface->tag_tx_mp;
    }
    return UCS_OK;

err_rx:
    ucs_mpool_cleanup(&iface->rx_mp, 0);
err_op:
    ucs_mpool_cleanup(&iface->op_mp, 0);
err_tx:
    ucs_mpool_cleanup(&iface->tx_mp, 0);
    return status;
}
