/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the engine lock's slow side (soft_lock.h): waiting for it,
 * waking a waiter, and its bias towards one thread.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"

#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* the process registered for private fences: 0 not asked yet, 1 yes,
 * -1 no */
static int soft_bias_able;

int soft_membarrier(int cmd)
{
#ifdef __NR_membarrier
    return (int)syscall(__NR_membarrier, cmd, 0, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

int soft_membarrier_registered(int *state, int cmd)
{
    int s = __atomic_load_n(state, __ATOMIC_ACQUIRE);

    if (s == 0) {
        /* (two threads asking at once both register: no harm done) */
        s = (soft_membarrier(cmd) == 0) ? 1 : -1;
        __atomic_store_n(state, s, __ATOMIC_RELEASE);
    }
    return s > 0;
}

int soft_fence_heavy_able(void)
{
    return soft_membarrier_registered(&soft_bias_able,
                                      MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
}

int soft_membarrier_fence(int cmd, const char *who)
{
    if (soft_membarrier(cmd) == 0) {
        return 0;
    }
    /* it worked before and fails now: a plain store on another CPU is
     * visible long before a millisecond has passed */
    dcx_error("%s: membarrier failed (%s): back to locked instructions", who,
              strerror(errno));
    usleep(1000);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return -1;
}

int soft_fence_heavy(void)
{
    return soft_membarrier_fence(MEMBARRIER_CMD_PRIVATE_EXPEDITED,
                                 "engine lock");
}

/* The contended side: spin briefly, as the holder is usually an engine
 * pass that ends within microseconds, then sleep on the word, marked 2 so
 * that the holder's release wakes us. */
void soft_lock_wait(soft_lock_t *l)
{
    unsigned spins;

    __atomic_fetch_add(&l->waits, 1, __ATOMIC_RELAXED);
    /* the helper takes no turn while we wait (soft_trylock_helper) */
    __atomic_fetch_add(&l->queued, 1, __ATOMIC_RELEASE);
    for (spins = 0; spins < 100; ++spins) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
        if ((__atomic_load_n(&l->v, __ATOMIC_RELAXED) == 0) &&
            soft_trylock_plain(l)) {
            goto taken;
        }
    }
    while (__atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE) != 0) {
        syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
    }
taken:
    __atomic_fetch_sub(&l->queued, 1, __ATOMIC_RELEASE);
    /* as every take ends (soft_lock_check_bias) */
    if (soft_lock_bias_foreign(l)) {
        soft_lock_biased_out(l, 0);
    }
}

void soft_lock_wake(soft_lock_t *l)
{
    syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* pauses before soft_lock_biased_out gives up the CPU between looks */
#define SOFT_BIAS_SPINS 128u

void soft_lock_biased_out(soft_lock_t *l, int helper)
{
    uintptr_t bias = __atomic_load_n(&l->bias, __ATOMIC_RELAXED);
    unsigned spins;

    if ((bias == soft_lock_self()) || (bias == SOFT_BIAS_OFF)) {
        return;
    }
    if (!helper && (++l->foreign >= SOFT_BIAS_FOREIGN)) {
        /* a thread of its own uses the device: no bias from now on */
        __atomic_store_n(&l->bias, SOFT_BIAS_OFF, __ATOMIC_RELAXED);
    }
    if (soft_fence_heavy() != 0) {
        __atomic_store_n(&l->bias, SOFT_BIAS_OFF, __ATOMIC_RELAXED); /* ended */
    }
    /* the biased thread's hold is a post or a copy of at most a packet:
     * a short spin, then the CPU given up between looks, for a biased
     * thread preempted on our CPU (a process bound to one core, its
     * helper there too) can only end its hold once it runs again: a
     * spin to the end of our time slice cost milliseconds there */
    for (spins = 0; __atomic_load_n(&l->busy, __ATOMIC_ACQUIRE); ++spins) {
        if (spins < SOFT_BIAS_SPINS) {
#if defined(__x86_64__)
            __builtin_ia32_pause();
#endif
        } else {
            sched_yield();
        }
    }
    if (helper &&
        (__atomic_load_n(&l->bias, __ATOMIC_RELAXED) != SOFT_BIAS_OFF)) {
        /* the next pass fences only if the application took the bias
         * back meanwhile: a helper serving while the application computes
         * interrupts it once, not at every pass */
        __atomic_store_n(&l->bias, 0, __ATOMIC_RELAXED);
    }
}

void soft_lock_bias_here(soft_lock_t *l)
{
    if (__atomic_load_n(&l->bias, __ATOMIC_RELAXED) != 0) {
        return;
    }
    __atomic_store_n(&l->bias,
                     soft_fence_heavy_able() ? soft_lock_self() : SOFT_BIAS_OFF,
                     __ATOMIC_RELAXED);
}
