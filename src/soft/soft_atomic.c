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

/* op on the word of type _t at _p where one locked instruction does it,
 * returning the old value from the enclosing function; _all: the word's
 * bits.  A masked fetch-add with no boundary is an add, with every bit a
 * boundary an exclusive or; an unconditional masked compare-and-swap
 * (nothing compared) swaps, sets or clears bits; one comparing and
 * swapping every bit is a compare-and-swap.  The rest falls through to
 * the compare-and-swap loop. */
#define SOFT_ATOMIC_ONE_INSN(_t, _p, _op, _a, _all)                         \
    do {                                                                    \
        _t _v;                                                              \
        if (((_op) == DCX_WR_ATOMIC_MASKED_FADD) &&                         \
            (((_a)[2] & (_all)) == 0)) {                                    \
            return __atomic_fetch_add(_p, (_t)(_a)[0], __ATOMIC_SEQ_CST);   \
        }                                                                   \
        if (((_op) == DCX_WR_ATOMIC_MASKED_FADD) &&                         \
            (((_a)[2] & (_all)) == (_all))) {                               \
            return __atomic_fetch_xor(_p, (_t)(_a)[0], __ATOMIC_SEQ_CST);   \
        }                                                                   \
        if (((_op) != DCX_WR_ATOMIC_MASKED_CSWAP) ||                        \
            (((_a)[2] & (_all)) != 0)) {                                    \
            break;                                                          \
        }                                                                   \
        _v = (_t)((_a)[1] & (_a)[3]);                                       \
        if (((_a)[3] & (_all)) == (_all)) {                                 \
            return __atomic_exchange_n(_p, _v, __ATOMIC_SEQ_CST);           \
        }                                                                   \
        if (_v == (_t)(_a)[3]) {                                            \
            return __atomic_fetch_or(_p, _v, __ATOMIC_SEQ_CST);             \
        }                                                                   \
        if (_v == 0) {                                                      \
            return __atomic_fetch_and(_p, (_t) ~(_a)[3], __ATOMIC_SEQ_CST); \
        }                                                                   \
    } while (0)

/* A masked compare-and-swap of every bit is a compare-and-swap */
static inline int soft_atomic_is_cas(uint8_t op, const uint64_t *a,
                                     uint64_t all)
{
    return (op == DCX_WR_ATOMIC_MASKED_CSWAP) && ((a[2] & all) == all) &&
           ((a[3] & all) == all);
}

uint64_t soft_atomic_apply(void *target, uint8_t op, unsigned size,
                           const uint64_t *args)
{
    if (size == 4) {
        uint32_t *p = target, old, nv;

        SOFT_ATOMIC_ONE_INSN(uint32_t, p, op, args, UINT32_MAX);
        if (soft_atomic_is_cas(op, args, UINT32_MAX)) {
            old = (uint32_t)args[0];
            __atomic_compare_exchange_n(p, &old, (uint32_t)args[1], 0,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return old;
        }
        old = __atomic_load_n(p, __ATOMIC_RELAXED);
        do {
            nv = (uint32_t)soft_atomic_new(op, old, args);
        } while (!__atomic_compare_exchange_n(p, &old, nv, 0, __ATOMIC_SEQ_CST,
                                              __ATOMIC_RELAXED));
        return old;
    } else {
        uint64_t *p = target, old, nv;
        uint64_t cas[2];

        if ((op == DCX_WR_ATOMIC_FADD) || (op == DCX_WR_ATOMIC_CSWAP)) {
            return soft_atomic_apply64(p, op, args);
        }
        SOFT_ATOMIC_ONE_INSN(uint64_t, p, op, args, UINT64_MAX);
        if (soft_atomic_is_cas(op, args, UINT64_MAX)) {
            cas[0] = args[0];
            cas[1] = args[1];
            return soft_atomic_apply64(p, DCX_WR_ATOMIC_CSWAP, cas);
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
