/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the responder's atomic operations on target memory, each
 * one CPU atomic (compare-and-swap loops for the masked ones and 32-bit
 * fields), so that atomics of several initiators on one word serialize
 * as an HCA's do.  The initiator's own atomics on a mapping of the
 * target's memory (soft_direct.c) are the same instructions, so the two
 * paths serialize with each other too.
 */
#include "soft.h"
#include "soft_atomic.h"

/* Masked fetch-and-add: a set bit of 'bounds' ends a field (no carry
 * leaves it).  With those bits cleared in both operands a carry reaches a
 * boundary bit at most and stops there; the boundary bits' own sum is
 * then the exclusive or of the operands' bits and that carry.  A carry
 * out of the top bit of the width is dropped by the caller's width. */
static uint64_t soft_masked_add(uint64_t a, uint64_t b, uint64_t bounds)
{
    return ((a & ~bounds) + (b & ~bounds)) ^ ((a ^ b) & bounds);
}

static uint64_t soft_atomic_new(uint8_t op, uint64_t old, const uint64_t *a)
{
    switch (op) {
    case DCX_WR_ATOMIC_FADD:
        return old + a[0];
    case DCX_WR_ATOMIC_CSWAP:
        return (old == a[0]) ? a[1] : old;
    case DCX_WR_ATOMIC_MASKED_FADD:
        return soft_masked_add(old, a[0], a[2]);
    default: /* MASKED_CSWAP */
        if (((old ^ a[0]) & a[2]) == 0) {
            return (old & ~a[3]) | (a[1] & a[3]);
        }
        return old;
    }
}

uint64_t soft_atomic_apply(void *target, uint8_t op, unsigned size,
                           const uint64_t *args)
{
    if (size == 4) {
        uint32_t *p = target, old, nv;

        old = __atomic_load_n(p, __ATOMIC_RELAXED);
        do {
            nv = (uint32_t)soft_atomic_new(op, old, args);
        } while (!__atomic_compare_exchange_n(p, &old, nv, 0, __ATOMIC_SEQ_CST,
                                              __ATOMIC_RELAXED));
        return old;
    } else {
        uint64_t *p = target, old, nv;

        if (op == DCX_WR_ATOMIC_FADD) {
            return __atomic_fetch_add(p, args[0], __ATOMIC_SEQ_CST);
        }
        old = __atomic_load_n(p, __ATOMIC_RELAXED);
        do {
            nv = soft_atomic_new(op, old, args);
        } while (!__atomic_compare_exchange_n(p, &old, nv, 0, __ATOMIC_SEQ_CST,
                                              __ATOMIC_RELAXED));
        return old;
    }
}

uint64_t soft_atomic_exec(const soft_pkt_t *pkt)
{
    return soft_atomic_apply((void *)(uintptr_t)pkt->raddr, pkt->op,
                             pkt->atomic_size, pkt->args);
}

int soft_atomic_valid(uint8_t op, unsigned size, unsigned ext_max)
{
    if ((op == DCX_WR_ATOMIC_FADD) || (op == DCX_WR_ATOMIC_CSWAP)) {
        return size == 8;
    }
    return ((size == 4) || (size == 8)) && (size <= ext_max);
}
