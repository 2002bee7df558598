/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the engine lock's word and what can be done with it
 * without the lock's slow side, for the inline takes (soft_lock.h) and
 * that slow side (soft_lock.c) alike: the lock, the calling thread as its
 * bias names it, the plain take, and whether a bias not ours is set.
 * soft_lock.h describes the lock and its bias.
 */
#ifndef SOFT_LOCK_WORD_H_
#define SOFT_LOCK_WORD_H_

#include <pthread.h>
#include <stdint.h>

#define SOFT_BIAS_FOREIGN 64u
#define SOFT_BIAS_OFF     UINTPTR_MAX

typedef struct soft_lock {
    uint32_t v;
    uint32_t waits;   /* atomic: takers that found it held */
    uint32_t queued;  /* atomic: takers in soft_lock_wait, not yet holding */
    uintptr_t bias;   /* soft_lock_self() of the biased thread; 0: none */
    uint32_t busy;    /* the biased thread holds it without v */
    uint32_t foreign; /* takings by other application threads */
} soft_lock_t;

/* The calling thread, as the bias names it: its thread pointer where the
 * compiler reads it without a call, else pthread_self(). */
static inline uintptr_t soft_lock_self(void)
{
#if defined(__has_builtin)
#if __has_builtin(__builtin_thread_pointer) && defined(__x86_64__)
    return (uintptr_t)__builtin_thread_pointer();
#endif
#endif
    return (uintptr_t)pthread_self();
}

static inline void soft_lock_init(soft_lock_t *l)
{
    l->v       = 0;
    l->waits   = 0;
    l->queued  = 0;
    l->bias    = 0;
    l->busy    = 0;
    l->foreign = 0;
}

static inline int soft_trylock_plain(soft_lock_t *l)
{
    uint32_t c = 0;

    return __atomic_compare_exchange_n(&l->v, &c, 1, 0, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

/* A bias of another thread is set: a taker that holds the lock must wait
 * it out (soft_lock_biased_out) */
static inline int soft_lock_bias_foreign(const soft_lock_t *l)
{
    uintptr_t bias = __atomic_load_n(&l->bias, __ATOMIC_RELAXED);

    return (bias != 0) && (bias != SOFT_BIAS_OFF) && (bias != soft_lock_self());
}

#endif
