/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the engine lock (its slow side in soft_lock.c), and the
 * two memory-order helpers the engine's lock-free peers lean on (a
 * prefetch for write, the fence after a locked instruction).  Sits on
 * soft_lock_word.h alone (the lock's word and the takes that need nothing
 * of soft_lock.c, which uses them too).
 */
#ifndef SOFT_LOCK_H_
#define SOFT_LOCK_H_

#include "soft_lock_word.h"

#include <stdint.h>

/* The engine lock: a futex mutex (0 free, 1 held, 2 held and someone may
 * wait).  The unlock's xchg is a locked instruction that waits for the
 * pass's pending stores; an unlock by a plain release store alone (a
 * throw-away build, without the waiter check and bounded futex sleep that
 * would have to come with it) measured no faster on the am_lat round trip
 * in the VM's slow placement (0.85 against 0.82 us with the v3 rings,
 * paired), so it stays.  Taking and releasing it uncontended is one
 * atomic each, against a few dozen instructions for a pthread mutex; the
 * engine takes it on every post and on every poll that finds work.
 *
 * Biased for one thread (soft_lock.c).  The lock's two locked
 * instructions are most of a small copy's cost when the copy's last store
 * went to a line the target polls: each waits for that store's line.  The
 * operations that complete within the call (a READ or WRITE under the
 * grant) and the light post may therefore take the lock in its biased
 * form instead
 * (soft_lock_fast): the thread the lock is biased to marks itself busy
 * with a plain store and goes on if the lock is free, with no locked
 * instruction at all.  Every other taker, once it holds the lock, makes
 * the biased thread's pending store visible with an asymmetric fence
 * (membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED) and waits until it is
 * not busy: either the biased thread read the lock after that fence and
 * saw it held (and took the plain way), or its mark is seen.  The helper
 * thread, which passes while the application does not poll, pays the
 * fence once and clears the bias, which the application's next biasing
 * operation (taken the plain way) gives back; any other thread ends the
 * bias for good after SOFT_BIAS_FOREIGN takings (a device shared by
 * workers of several threads).  A lock is biased to a thread that takes
 * it in a biasing operation while it has no bias, and only where the
 * process could register for the fence. */

void soft_lock_wait(soft_lock_t *l); /* soft_lock.c */
void soft_lock_wake(soft_lock_t *l);
/* A taker that holds the lock while a bias exists: waits out the biased
 * thread.  helper: the helper thread, which then clears the bias (the
 * biased thread takes it back at its next biasing take); any other thread
 * counts towards ending it. */
void soft_lock_biased_out(soft_lock_t *l, int helper);
/* Biases the lock to the calling thread if it has no bias yet (held). */
void soft_lock_bias_here(soft_lock_t *l);

/* After a take: waits out a biased holder unless there is no bias (none
 * yet, or ended) or it is ours. */
static inline void soft_lock_check_bias(soft_lock_t *l, int helper)
{
    if (soft_lock_bias_foreign(l)) {
        soft_lock_biased_out(l, helper);
    }
}

static inline int soft_trylock(soft_lock_t *l)
{
    if (!soft_trylock_plain(l)) {
        return 0;
    }
    soft_lock_check_bias(l, 0);
    return 1;
}

/* The helper thread's take.  It never waits for the lock, and it stands
 * aside for a taker that does: a pass the helper starts while a thread
 * waits would take the lock again the moment the last one released it,
 * before the woken thread could run, and a helper that passes on and on
 * (a burst that keeps finding packets, as under a storm of RNR retries)
 * would starve the very application it stands in for. */
static inline int soft_trylock_helper(soft_lock_t *l)
{
    if ((__atomic_load_n(&l->queued, __ATOMIC_ACQUIRE) != 0) ||
        !soft_trylock_plain(l)) {
        return 0;
    }
    soft_lock_check_bias(l, 1);
    return 1;
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

/* The biased take: 1 if the calling thread now holds the lock without a
 * locked instruction (release with soft_unlock_fast), 0 if it must take
 * it as any thread (not biased to it, or held). */
static inline int soft_lock_fast(soft_lock_t *l)
{
    /* (no thread is 0 or SOFT_BIAS_OFF: a lock with no bias is not ours) */
    if (__atomic_load_n(&l->bias, __ATOMIC_RELAXED) != soft_lock_self()) {
        return 0;
    }
    __atomic_store_n(&l->busy, 1, __ATOMIC_RELAXED);
    /* the store is ordered before the load by the other taker's fence */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (__builtin_expect(__atomic_load_n(&l->v, __ATOMIC_RELAXED) == 0, 1)) {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        return 1;
    }
    __atomic_store_n(&l->busy, 0, __ATOMIC_RELEASE);
    return 0;
}

static inline void soft_unlock_fast(soft_lock_t *l)
{
    __atomic_store_n(&l->busy, 0, __ATOMIC_RELEASE);
}

/* In a biasing operation's plain take (held): biases a lock that has no
 * bias yet to the calling thread. */
static inline void soft_lock_bias(soft_lock_t *l)
{
    if (__builtin_expect(__atomic_load_n(&l->bias, __ATOMIC_RELAXED) == 0, 0)) {
        soft_lock_bias_here(l);
    }
}

/* A biasing operation's take: biased where the lock is ours, else plain,
 * biasing a lock that has no bias to us.  Returns how it was taken, for
 * soft_unlock_as. */
static inline int soft_lock_biasing(soft_lock_t *l)
{
    if (soft_lock_fast(l)) {
        return 1;
    }
    soft_lock(l);
    soft_lock_bias(l);
    return 0;
}

/* Releases the lock as soft_lock_biasing took it (fast: biased). */
static inline void soft_unlock_as(soft_lock_t *l, int fast)
{
    if (fast) {
        soft_unlock_fast(l);
    } else {
        soft_unlock(l);
    }
}

/* The heavy side of an asymmetric fence within the process (soft_lock.c:
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)).  soft_fence_heavy_able:
 * 1 if the process could register for it (registers once); a thread's
 * plain store is then ordered before its later loads against any thread
 * that calls soft_fence_heavy after its own store.  soft_fence_heavy: 0,
 * or after a failure (logged) a millisecond's wait, long enough for any
 * store to be visible. */
int soft_fence_heavy_able(void);
int soft_fence_heavy(void);
/* membarrier(2) with command cmd (also soft_dslot.c's); -1 with errno
 * ENOSYS where the system has none */
int soft_membarrier(int cmd);
/* Registers the process for membarrier command cmd (a REGISTER_ one) the
 * first time it is asked, *state remembering the answer (0: not asked
 * yet): 1 if it is registered */
int soft_membarrier_registered(int *state, int cmd);
/* membarrier(cmd) as a fence that worked before: 0, or after a failure
 * (logged, as who's) a millisecond's wait, then -1 (the caller goes back
 * to locked instructions) */
int soft_membarrier_fence(int cmd, const char *who);

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
