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

#endif
