/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: registered memory as the engine reaches it: the key
 * table's inline lookups, the copies to and from sg lists, keys and
 * strided keys (soft_mem.c, soft_mkey.c).  Sits on soft_dev.h (the
 * device's key table and copy functions) and soft_objs.h (keys, send
 * WQEs).
 */
#ifndef DCX_SOFT_MEM_H_
#define DCX_SOFT_MEM_H_

#include "dcx_dev.h"
#include "soft_base.h"
#include "soft_wire.h"
#include "soft_objs.h"
#include "soft_dev.h"

#include <stddef.h>
#include <stdint.h>

/* Copies between a buffer and an sg list from its byte 'off': 0 or EFAULT */
int soft_sge_gather(soft_dev_t *dev, void *buf, const dcx_sge_t *sge,
                    unsigned num_sge, uint64_t off, uint64_t len);
int soft_sge_scatter(soft_dev_t *dev, const void *buf, const dcx_sge_t *sge,
                     unsigned num_sge, uint64_t off, uint64_t len);

/* The table entry of key (MR or strided key), or NULL: none (soft_key_entry),
 * or its memory unmapped too (soft_key_find: soft_key_lookup, inline) */
static inline soft_mr_t *soft_key_entry(soft_dev_t *dev, uint32_t key)
{
    soft_mr_t *mr = ((key >> 8) < dev->num_mrs) ? dev->mrs[key >> 8] : NULL;

    return ((mr != NULL) && (mr->super.lkey == key)) ? mr : NULL;
}

static inline soft_mr_t *soft_key_find(soft_dev_t *dev, uint32_t key)
{
    soft_mr_t *mr = soft_key_entry(dev, key);

    return ((mr != NULL) && !__atomic_load_n(&mr->invalid, __ATOMIC_RELAXED)) ?
               mr :
               NULL;
}

/* soft_mem.c */
/* soft_key_find out of line, below the requester, the responder, strided
 * keys and direct access that look keys up; the entry of an MR's key only
 * (not a strided key's) */
soft_mr_t *soft_key_lookup(soft_dev_t *dev, uint32_t key);
soft_mr_t *soft_mr_lookup(soft_dev_t *dev, uint32_t key);
void soft_mem_init(soft_dev_t *dev);
int soft_mem_local_begin(soft_dev_t *dev, const dcx_sge_t *sge, unsigned n);
void soft_mem_local_end(soft_dev_t *dev);
int soft_mem_copy_plain(soft_dev_t *dev, void *dst, const void *src, size_t n);
void soft_mem_unmaps_reported(dcx_dev_t *dev);
int soft_mem_write(soft_dev_t *dev, soft_mr_t *mr, uint64_t addr,
                   const void *src, size_t len);
int soft_mem_read(soft_dev_t *dev, soft_mr_t *mr, void *dst, uint64_t addr,
                  size_t len);
int soft_mem_vec_write(soft_dev_t *dev, soft_mem_vec_t *v, const void *src);
int soft_mem_vec_read(soft_dev_t *dev, soft_mem_vec_t *v, void *dst);
int soft_mem_atomic(soft_dev_t *dev, soft_mr_t *mr, uint64_t addr,
                    unsigned size, uint64_t (*exec)(const soft_pkt_t *),
                    const soft_pkt_t *pkt, uint64_t *result_p);
void soft_mem_unmapped(dcx_dev_t *dev, const void *addr, size_t len);

/* soft_mkey.c: strided keys */
int soft_mkey_create(dcx_pd_t *pd, uint32_t max_entries, dcx_mkey_t **mkey_p);
int soft_mkey_destroy(dcx_mkey_t *mkey);
int soft_mkey_post_check(soft_qp_t *qp, const dcx_send_wr_t *wr);
void soft_mkey_wr_copy(soft_qp_t *qp, soft_swqe_t *w, const dcx_send_wr_t *wr);
uint8_t soft_mkey_wr_exec(soft_qp_t *qp, soft_swqe_t *w);
void soft_mkey_wr_free(soft_swqe_t *w);
int soft_sge_ok(soft_dev_t *dev, const dcx_sge_t *sge, uint32_t access,
                const dcx_pd_t *pd);
int soft_mkey_check(soft_dev_t *dev, soft_mr_t *key, uint64_t off, uint64_t len,
                    uint32_t access);
int soft_mkey_local_copy(soft_dev_t *dev, soft_mr_t *key, uint64_t off,
                         void *buf, uint64_t len, int to_key);
int soft_key_write(soft_dev_t *dev, soft_mr_t *mr, uint64_t addr,
                   const void *src, size_t len);
int soft_key_read(soft_dev_t *dev, soft_mr_t *mr, void *dst, uint64_t addr,
                  size_t len);
int soft_key_atomic(soft_dev_t *dev, soft_mr_t *mr, const soft_pkt_t *pkt,
                    uint64_t (*exec)(const soft_pkt_t *), uint64_t *result_p);

#endif
