/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the engine lock, and the two memory-order helpers the
 * engine's lock-free peers lean on (a prefetch for write, the fence after
 * a locked instruction).  Included by soft.h.
 */
#ifndef SOFT_LOCK_H_
#define SOFT_LOCK_H_

#include <stdint.h>

/* The engine lock: a futex mutex (0 free, 1 held, 2 held and someone may
 * wait).  The unlock's xchg is a locked instruction that waits for the
 * pass's pending stores; an unlock by a plain release store alone (a
 * throw-away build, without the waiter check and bounded futex sleep that
 * would have to come with it) measured no faster on the am_lat round trip
 * in the VM's slow placement (0.85 against 0.82 us with the v3 rings,
 * paired), so it stays.  Taking and releasing it uncontended is one
 * atomic each, against a few dozen instructions for a pthread mutex; the
 * engine takes it on every post and on every poll that finds work. */
typedef struct soft_lock {
    uint32_t v;
    uint32_t waits; /* atomic: takers that found it held */
} soft_lock_t;

void soft_lock_wait(soft_lock_t *l); /* soft_engine.c */
void soft_lock_wake(soft_lock_t *l);

static inline void soft_lock_init(soft_lock_t *l)
{
    l->v     = 0;
    l->waits = 0;
}

static inline int soft_trylock(soft_lock_t *l)
{
    uint32_t c = 0;

    return __atomic_compare_exchange_n(&l->v, &c, 1, 0, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

static inline void soft_lock(soft_lock_t *l)
{
    if (!soft_trylock(l)) {
        soft_lock_wait(l);
    }
}

static inline void soft_unlock(soft_lock_t *l)
{
    if (__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) == 2) {
        soft_lock_wake(l);
    }
}

/* Asks for the line at p in the state a store needs (exclusive), ahead
 * of the store: a line another core reads (a peer's ack table entry) then
 * moves while other work goes on, not at the next locked instruction,
 * which would wait for it.  A hint: it never faults.  x86-64 has the
 * instruction on every CPU that can run this (a no-op where unsupported). */
static inline void soft_prefetchw(const void *p)
{
#if defined(__x86_64__)
    __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1);
#endif
}

/* Right after a locked instruction (the unlock's xchg): the seq_cst fence
 * the wake-up handshake wants between a sender's publish and its read of
 * the helper's 'sleeping' (soft_port_kick).  On x86 a locked instruction
 * is a full barrier already, so the fence is only the compiler's. */
static inline void soft_fence_after_locked(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

#endif
