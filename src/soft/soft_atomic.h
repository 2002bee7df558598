/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: executing an atomic request on target memory
 * (soft_atomic.c).
 */
#ifndef DCX_SOFT_ATOMIC_H_
#define DCX_SOFT_ATOMIC_H_

#include "soft_wire.h"

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
