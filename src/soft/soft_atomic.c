/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the responder's atomic operations on target memory, each
 * one CPU atomic (compare-and-swap loops for the masked ones and 32-bit
 * fields), so that atomics of several initiators on one word serialize
 * as an HCA's do.
 */
#include "soft.h"
#include "soft_atomic.h"

/* Masked fetch-and-add: a set bit of 'bounds' ends a field. */
static uint64_t soft_masked_add(uint64_t a, uint64_t b, uint64_t bounds,
                                unsigned bits)
{
    uint64_t r = 0, carry = 0;
    unsigned i;

    for (i = 0; i < bits; ++i) {
        uint64_t s = ((a >> i) & 1) + ((b >> i) & 1) + carry;

        r |= (s & 1) << i;
        carry = s >> 1;
        if ((bounds >> i) & 1) {
            carry = 0;
        }
    }
    return r;
}

static uint64_t soft_atomic_new(uint8_t op, uint64_t old, const uint64_t *a,
                                unsigned bits)
{
    switch (op) {
    case DCX_WR_ATOMIC_FADD:
        return old + a[0];
    case DCX_WR_ATOMIC_CSWAP:
        return (old == a[0]) ? a[1] : old;
    case DCX_WR_ATOMIC_MASKED_FADD:
        return soft_masked_add(old, a[0], a[2], bits);
    default: /* MASKED_CSWAP */
        if (((old ^ a[0]) & a[2]) == 0) {
            return (old & ~a[3]) | (a[1] & a[3]);
        }
        return old;
    }
}

uint64_t soft_atomic_exec(const soft_pkt_t *pkt)
{
    void *target = (void *)(uintptr_t)pkt->raddr;

    if (pkt->atomic_size == 4) {
        uint32_t *p = target, old, nv;

        old = __atomic_load_n(p, __ATOMIC_RELAXED);
        do {
            nv = (uint32_t)soft_atomic_new(pkt->op, old, pkt->args, 32);
        } while (!__atomic_compare_exchange_n(p, &old, nv, 0, __ATOMIC_SEQ_CST,
                                              __ATOMIC_RELAXED));
        return old;
    } else {
        uint64_t *p = target, old, nv;

        if (pkt->op == DCX_WR_ATOMIC_FADD) {
            return __atomic_fetch_add(p, pkt->args[0], __ATOMIC_SEQ_CST);
        }
        old = __atomic_load_n(p, __ATOMIC_RELAXED);
        do {
            nv = soft_atomic_new(pkt->op, old, pkt->args, 64);
        } while (!__atomic_compare_exchange_n(p, &old, nv, 0, __ATOMIC_SEQ_CST,
                                              __ATOMIC_RELAXED));
        return old;
    }
}
