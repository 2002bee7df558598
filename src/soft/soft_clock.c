/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the clock of the owner's poll stamps (see soft_clock.h).  An
 * application that polls stamps its port on every progress call, so the
 * stamp must cost next to nothing: with an invariant time-stamp counter
 * (constant and non-stop, so every core and every process of the host reads
 * one clock) it is the counter itself, calibrated once per process against
 * CLOCK_MONOTONIC; otherwise it is CLOCK_MONOTONIC.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define SOFT_CLOCK_CALIB_NS 1000000ull /* 1 ms of counting */

int soft_clock_kind = SOFT_CLOCK_NS;
uint64_t soft_clock_mult;
uint64_t soft_clock_inv;
uint64_t soft_clock_stamp_gran = SOFT_STAMP_NS;
uint64_t soft_clock_idle_gran  = SOFT_APP_IDLE_NS;

static pthread_once_t soft_clock_once = PTHREAD_ONCE_INIT;

/* The counter can stand for the clock only if it is invariant. */
static int soft_clock_tsc_usable(void)
{
#if defined(__x86_64__)
    char line[4096];
    int constant = 0, nonstop = 0;
    FILE *f;

    f = fopen("/proc/cpuinfo", "re");
    if (f == NULL) {
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "flags", 5) == 0) {
            constant = (strstr(line, " constant_tsc") != NULL);
            nonstop  = (strstr(line, " nonstop_tsc") != NULL);
            break;
        }
    }
    fclose(f);
    return constant && nonstop;
#else
    return 0;
#endif
}

#if defined(__x86_64__)
/* A (clock, counter) pair read as close together as we can: the tightest
 * of a few tries, so a preemption between the two reads does not skew the
 * calibration. */
static void soft_clock_pair(uint64_t *t_p, uint64_t *c_p)
{
    uint64_t ca, cb, t, best = UINT64_MAX;
    int i;

    for (i = 0; i < 8; ++i) {
        ca = soft_clock_now();
        t  = soft_now_ns();
        cb = soft_clock_now();
        if (cb - ca < best) {
            best = cb - ca;
            *t_p = t;
            *c_p = ca + (cb - ca) / 2;
        }
    }
}
#endif

static void soft_clock_calibrate(void)
{
#if defined(__x86_64__)
    uint64_t t0, t1, c0, c1;

    if (!soft_clock_tsc_usable()) {
        dcx_debug("soft: no invariant time-stamp counter: poll stamps read "
                  "CLOCK_MONOTONIC");
        return;
    }
    soft_clock_kind = SOFT_CLOCK_TSC;
    soft_clock_pair(&t0, &c0);
    do {
        t1 = soft_now_ns();
    } while (t1 - t0 < SOFT_CLOCK_CALIB_NS);
    soft_clock_pair(&t1, &c1);
    if ((c1 <= c0) || ((c1 - c0) >> 32)) {
        soft_clock_kind = SOFT_CLOCK_NS;
        dcx_debug("soft: time-stamp counter calibration failed: poll stamps "
                  "read CLOCK_MONOTONIC");
        return;
    }
    soft_clock_mult       = ((t1 - t0) << 32) / (c1 - c0);
    soft_clock_stamp_gran = (SOFT_STAMP_NS << 32) / soft_clock_mult;
    soft_clock_idle_gran  = (SOFT_APP_IDLE_NS << 32) / soft_clock_mult;
    /* rounded down: soft_clock_after() comes out early, never late */
    soft_clock_inv        = ((c1 - c0) << 16) / (t1 - t0);
    dcx_debug("soft: poll stamps use the time-stamp counter (%llu ticks/us)",
              (unsigned long long)((c1 - c0) * 1000ull / (t1 - t0)));
#endif
}

/* soft_dev_now()'s rare path (soft_dev.h): a new (counter, ns) pair, taken
 * when the last one is 2^SOFT_CLOCK_REBASE_SHIFT ticks old (or the counter
 * went back: another core's), so that the calibration's error never adds
 * up over more than that.  The counter reading is the middle of the two
 * around the clock read.  During the calibration (no factor yet) it is
 * the clock itself, and the pair is left for the next call. */
uint64_t soft_clock_rebase(soft_dev_t *dev)
{
#if defined(__x86_64__)
    uint64_t a, b, t;

    if (__atomic_load_n(&soft_clock_mult, __ATOMIC_RELAXED) == 0) {
        return soft_now_ns();
    }
    a             = soft_clock_now();
    t             = soft_now_ns();
    b             = soft_clock_now();
    dev->clk_tick = a + (b - a) / 2;
    dev->clk_ns   = t;
    return t;
#else
    (void)dev;
    return soft_now_ns();
#endif
}

void soft_clock_init(void)
{
    pthread_once(&soft_clock_once, soft_clock_calibrate);
}
