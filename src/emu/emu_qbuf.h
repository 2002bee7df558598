/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: where a QP's, CQ's or SRQ's queue memory lives, as
 * libmlx5 chooses it from MLX_QP_ALLOC_TYPE, MLX_CQ_ALLOC_TYPE and
 * MLX_SRQ_ALLOC_TYPE, read at each creation (emu_qbuf.c).
 *
 * An object placed on huge pages holds one SysV segment of 2 MiB pages
 * (SHM_HUGETLB) from its creation to its destruction; the queues
 * mlx5dv_init_obj gives out are cut from it (emu_dv_obj.c).  Any other
 * placement is the heap's, and the object holds no segment (NULL).
 */
#ifndef DCX_EMU_QBUF_H_
#define DCX_EMU_QBUF_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    EMU_QBUF_QP,
    EMU_QBUF_CQ,
    EMU_QBUF_SRQ
} emu_qbuf_kind_t;

typedef struct emu_qbuf {
    uint8_t *base; /* the attached segment */
    size_t len;    /* its length, a multiple of 2 MiB */
    size_t used;   /* handed out, from base on */
} emu_qbuf_t;

/* The placement of an object of this kind needing need bytes of queues
 * (qp_type: the QP's, for libmlx5's older HUGE_<type>=y switch): *out a
 * segment, or NULL for the heap; 0, or the errno libmlx5's creation fails
 * with (logged once): ENOSYS for CONTIG, shmget's or shmat's for HUGE
 * without huge pages.  dev and verb name the call in the log line. */
int emu_qbuf_open(const char *dev, const char *verb, emu_qbuf_kind_t kind,
                  int qp_type, size_t need, emu_qbuf_t **out);

/* len zeroed bytes, page-aligned, from qb; NULL when qb is NULL or full */
void *emu_qbuf_take(emu_qbuf_t *qb, size_t len);

/* p lies in qb's segment (a NULL qb holds nothing) */
bool emu_qbuf_owns(const emu_qbuf_t *qb, const void *p);

/* Everything taken from qb is given back (the object's queues freed) */
void emu_qbuf_reset(emu_qbuf_t *qb);

/* Detaches and frees the segment; NULL is a no-op */
void emu_qbuf_close(emu_qbuf_t *qb);

#endif
