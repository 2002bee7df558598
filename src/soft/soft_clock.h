/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: its clocks (soft_clock.c): the nanosecond clock, the
 * time-stamp counter of poll stamps, and a port's poll age.  The clock of
 * a post, which reads the device's base, is soft_dev_now() (soft_dev.h).
 * Sits on soft_wire.h (the port's header).
 */
#ifndef DCX_SOFT_CLOCK_H_
#define DCX_SOFT_CLOCK_H_

#include "soft_base.h"
#include "soft_wire.h"

#include <stdint.h>

uint64_t soft_now_ns(void); /* soft_proc.c: CLOCK_MONOTONIC */

/* soft_clock.c: the clock of the owner's poll stamps.  Where the CPU has
 * an invariant time-stamp counter every process of the host reads the same
 * counter, so a stamp costs one instruction; elsewhere it is
 * CLOCK_MONOTONIC nanoseconds.  A port records its kind; a peer whose kind
 * differs treats the owner as polling (its helper naps and looks by itself). */
enum {
    SOFT_CLOCK_NS  = 1,
    SOFT_CLOCK_TSC = 2
};

extern int soft_clock_kind;            /* set by soft_clock_init() */
extern uint64_t soft_clock_mult;       /* TSC: ns per tick, 32.32 fixed */
extern uint64_t soft_clock_inv;        /* TSC: ticks per ns, 48.16, floor */
extern uint64_t soft_clock_stamp_gran; /* SOFT_STAMP_NS in clock units */
extern uint64_t soft_clock_idle_gran;  /* SOFT_APP_IDLE_NS in clock units */

void soft_clock_init(void);

static inline uint64_t soft_clock_now(void)
{
#if defined(__x86_64__)
    if (soft_clock_kind == SOFT_CLOCK_TSC) {
        uint32_t lo, hi;

        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
    }
#endif
    return soft_now_ns();
}

#define SOFT_CLOCK_AFTER_MAX (1ull << 30) /* ~1 s: soft_clock_after() */

/* The soft_clock_now() reading 'ns' nanoseconds after the reading 'clk'
 * (at most ~1 s: a farther time comes back as ~1 s, which is early, never
 * late).  A multiplication: a 64-bit division costs tens of cycles on
 * every light post. */
static inline uint64_t soft_clock_after_at(uint64_t clk, uint64_t ns)
{
    if (ns > SOFT_CLOCK_AFTER_MAX) {
        ns = SOFT_CLOCK_AFTER_MAX;
    }
#if defined(__x86_64__)
    if (soft_clock_kind == SOFT_CLOCK_TSC) {
        if (soft_clock_inv != 0) {
            return clk + ((ns * soft_clock_inv) >> 16);
        }
        /* calibrating: in nanoseconds (the counter, which runs ahead of
         * the nanosecond clock, makes the result early) */
        return soft_now_ns() + ns;
    }
#endif
    return clk + ns;
}

/* The soft_clock_now() reading 'ns' nanoseconds from now */
static inline uint64_t soft_clock_after(uint64_t ns)
{
    return soft_clock_after_at(soft_clock_now(), ns);
}

/* Nanoseconds since the port's owner last polled (0 if it stamped after
 * our look, or if its clock is not ours).  Inline: every packet sent asks
 * it (soft_port_kick). */
static inline uint64_t soft_port_poll_age(const soft_port_hdr_t *hdr)
{
    uint64_t last = __atomic_load_n(&hdr->last_poll, __ATOMIC_RELAXED);
    int64_t delta;

    if (hdr->clock_kind != (uint32_t)soft_clock_kind) {
        return 0;
    }
    delta = (int64_t)(soft_clock_now() - last);
    if (delta <= 0) {
        return 0;
    }
    if (soft_clock_kind == SOFT_CLOCK_NS) {
        return (uint64_t)delta;
    }
    if ((uint64_t)delta >> 31) {
        return UINT64_MAX >> 1; /* a second or more: "long ago" */
    }
    return ((uint64_t)delta * soft_clock_mult) >> 32;
}

/* 1 if the port's owner last polled more than SOFT_APP_IDLE_NS before the
 * soft_clock_now() reading 'clk' (0 if its clock is not ours): as
 * soft_port_poll_age(hdr) > SOFT_APP_IDLE_NS, compared in clock units, so
 * that a sender's kick (soft_port_kick_due_at) converts nothing */
static inline int soft_port_idle_at(const soft_port_hdr_t *hdr, uint64_t clk)
{
    uint64_t last = __atomic_load_n(&hdr->last_poll, __ATOMIC_RELAXED);

    return (hdr->clock_kind == (uint32_t)soft_clock_kind) &&
           ((int64_t)(clk - last) > (int64_t)soft_clock_idle_gran);
}

#endif
