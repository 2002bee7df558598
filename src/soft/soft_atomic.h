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
/* The same at target, in this process's view of the word: op
 * (DCX_WR_ATOMIC_*) on size (4 or 8) bytes with args[0..3] = compare_add,
 * swap, compare_mask, swap_mask */
uint64_t soft_atomic_apply(void *target, uint8_t op, unsigned size,
                           const uint64_t *args);
/* Whether a DCT whose masked atomics go up to ext_max bytes executes op on
 * size bytes (the rest: an invalid request, as a ConnectX answers it) */
int soft_atomic_valid(uint8_t op, unsigned size, unsigned ext_max);

#endif
