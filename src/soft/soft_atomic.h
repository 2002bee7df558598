/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: executing an atomic request on target memory
 * (soft_atomic.c).
 */
#ifndef DCX_SOFT_ATOMIC_H_
#define DCX_SOFT_ATOMIC_H_

#include "soft_wire.h"

#include <string.h>

/* The size of wr's atomic (a valid atomic opcode): the masked ones name
 * theirs, the standard ones are 8 bytes */
static inline unsigned soft_atomic_size(const dcx_send_wr_t *wr)
{
    return ((wr->opcode == DCX_WR_ATOMIC_MASKED_FADD) ||
            (wr->opcode == DCX_WR_ATOMIC_MASKED_CSWAP)) ?
               wr->atomic_size :
               8u;
}

/* wr's operands as a request carries them and soft_atomic_apply takes
 * them: compare_add, swap, compare_mask, swap_mask */
static inline void soft_atomic_args(const dcx_send_wr_t *wr, uint64_t *args)
{
    args[0] = wr->compare_add;
    args[1] = wr->swap;
    args[2] = wr->compare_mask;
    args[3] = wr->swap_mask;
}

/* The old value an atomic of size (4 or 8) bytes found, stored at dst as
 * a word of that size */
static inline void soft_atomic_result(void *dst, uint64_t old, unsigned size)
{
    uint32_t old32 = (uint32_t)old;

    if (size == sizeof(old32)) {
        memcpy(dst, &old32, sizeof(old32));
    } else {
        memcpy(dst, &old, sizeof(old));
    }
}

/* Executes the atomic of pkt at pkt->raddr (4 or 8 bytes, already checked
 * against its key); returns the value it found there */
uint64_t soft_atomic_exec(const soft_pkt_t *pkt);
/* The standard 64-bit atomics (op DCX_WR_ATOMIC_FADD or _CSWAP) at p, one
 * locked instruction each: what soft_atomic_apply does for them, inline
 * for the initiator's fast path */
static inline uint64_t soft_atomic_apply64(uint64_t *p, uint8_t op,
                                           const uint64_t *args)
{
    uint64_t old;

    if (op == DCX_WR_ATOMIC_FADD) {
        return __atomic_fetch_add(p, args[0], __ATOMIC_SEQ_CST);
    }
    /* a mismatch leaves the word and gives back what it holds */
    old = args[0];
    __atomic_compare_exchange_n(p, &old, args[1], 0, __ATOMIC_SEQ_CST,
                                __ATOMIC_SEQ_CST);
    return old;
}

/* The same at target, in this process's view of the word: op
 * (DCX_WR_ATOMIC_*) on size (4 or 8) bytes with args[0..3] = compare_add,
 * swap, compare_mask, swap_mask */
uint64_t soft_atomic_apply(void *target, uint8_t op, unsigned size,
                           const uint64_t *args);
/* Whether a DCT whose masked atomics go up to ext_max bytes executes op on
 * size bytes (the rest: an invalid request, as a ConnectX answers it) */
static inline int soft_atomic_valid(uint8_t op, unsigned size, unsigned ext_max)
{
    if ((op == DCX_WR_ATOMIC_FADD) || (op == DCX_WR_ATOMIC_CSWAP)) {
        return size == 8;
    }
    return ((size == 4) || (size == 8)) && (size <= ext_max);
}

#endif
