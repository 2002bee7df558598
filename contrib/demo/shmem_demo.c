/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * OpenSHMEM demo for dcx: every PE adds to a counter on PE 0 with atomic
 * fetch-adds (PE 0's own are local, the others' remote), then PE 1 alone
 * times fetch-adds onto PE 0 -- a remote atomic, PE 1 waiting for each
 * result -- a token goes around a ring with puts, and the PEs agree on a sum
 * reduction.  PE 0 prints what was checked and PE 1's fetch-add latency
 * (median and mean of the calls).
 * The words the atomics and the ring's puts target are in the symmetric
 * heap (shmem_malloc), where OpenSHMEM programs keep their shared data:
 * over dcx on the soft device the heap is one shared allocation that the
 * PEs map, so a fetch-add is a CPU atomic done by the initiator.  Static
 * symmetric data is each process's private memory, which another process
 * reaches only through its owner's CPU (on the soft device: the target's
 * progress, a round trip).
 * Needs at least 2 PEs.  While PE 1 times, PE 0 progresses without a
 * pause (on the soft device its progress serves the atomics) and the other
 * PEs sleep: spinning in a barrier, which yields the CPU, they would take
 * it from PE 0 on a machine with fewer cores than PEs, and the figure would
 * time the scheduler.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 2000
#define WARMUP 100

/* in the symmetric heap */
typedef struct {
    long counter;
    long lat_counter;
    long lat_done;
    long token;
} shared_t;

static shared_t *sh;
static double fadd_mean, fadd_median;
static double fadd_us[ROUNDS];
static long psync[SHMEM_REDUCE_SYNC_SIZE];
static long pwork[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long value, total;

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

/* PE 1's fetch-adds onto lat_counter of PE 0, alone, each timed; the mean
 * and the median time per call go to PE 0.  Returns 0 if a fetched value
 * was wrong. */
static int time_remote_fadd(void)
{
    double t0, t1, sum = 0;
    long old;
    int i, ok = 1;

    for (i = 0; i < WARMUP; ++i) {
        shmem_long_atomic_fetch_add(&sh->lat_counter, 1, 0);
    }
    t0 = now_us();
    for (i = 0; i < ROUNDS; ++i) {
        old         = shmem_long_atomic_fetch_add(&sh->lat_counter, 1, 0);
        t1          = now_us();
        fadd_us[i]  = t1 - t0;
        sum        += t1 - t0;
        t0          = t1;
        if (old != WARMUP + i) {
            ok = 0;
        }
    }
    if (!ok) {
        fprintf(stderr, "shmem_demo: PE 1 fetched wrong values from PE 0\n");
    }
    qsort(fadd_us, ROUNDS, sizeof(fadd_us[0]), cmp_double);
    shmem_double_p(&fadd_mean, sum / ROUNDS, 0);
    shmem_double_p(&fadd_median, fadd_us[ROUNDS / 2], 0);
    return ok;
}

/* Until PE 1 says the timing is over: PE 0 looks at its flag without a
 * pause (each look progresses it, which serves PE 1's atomics), the others
 * sleep between looks */
static void wait_for_timing(int me)
{
    struct timespec nap = {0, 200000};

    while (shmem_long_atomic_fetch(&sh->lat_done, me) == 0) {
        if (me != 0) {
            nanosleep(&nap, NULL);
        }
    }
}

int main(void)
{
    int me, npes, i, ok = 1;
    long expect;

    shmem_init();
    me   = shmem_my_pe();
    npes = shmem_n_pes();
    if (npes < 2) {
        fprintf(stderr, "shmem_demo: needs at least 2 PEs, has %d\n", npes);
        shmem_finalize();
        return 1;
    }
    sh = shmem_calloc(1, sizeof(*sh)); /* collective: on every PE */
    if (sh == NULL) {
        fprintf(stderr, "shmem_demo: PE %d: shmem_calloc failed\n", me);
        shmem_global_exit(1);
    }
    for (i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) {
        psync[i] = SHMEM_SYNC_VALUE;
    }
    shmem_barrier_all();

    /* all at once: ROUNDS fetch-adds from every PE onto PE 0 */
    for (i = 0; i < ROUNDS; ++i) {
        shmem_long_atomic_fetch_add(&sh->counter, 1, 0);
    }
    shmem_barrier_all();
    if (me == 0 && sh->counter != (long)ROUNDS * npes) {
        fprintf(stderr, "shmem_demo: counter is %ld, expected %ld\n",
                sh->counter, (long)ROUNDS * npes);
        ok = 0;
    }

    /* latency: PE 1 alone onto PE 0, the others waiting */
    if (me == 1) {
        ok &= time_remote_fadd();
        for (i = 0; i < npes; ++i) {
            if (i != me) {
                shmem_long_atomic_set(&sh->lat_done, 1, i);
            }
        }
    } else {
        wait_for_timing(me);
    }
    shmem_barrier_all();
    if (me == 0 && sh->lat_counter != WARMUP + ROUNDS) {
        fprintf(stderr, "shmem_demo: PE 1's counter is %ld, expected %d\n",
                sh->lat_counter, WARMUP + ROUNDS);
        ok = 0;
    }

    /* ring: PE i puts i+1 into PE (i+1)'s token */
    shmem_long_p(&sh->token, me + 1, (me + 1) % npes);
    shmem_barrier_all();
    expect = ((me + npes - 1) % npes) + 1;
    if (sh->token != expect) {
        fprintf(stderr, "shmem_demo: PE %d token is %ld, expected %ld\n", me,
                sh->token, expect);
        ok = 0;
    }

    /* reduction: sum of 1..npes */
    value = me + 1;
    shmem_long_sum_to_all(&total, &value, 1, 0, 0, npes, pwork, psync);
    if (total != (long)npes * (npes + 1) / 2) {
        fprintf(stderr, "shmem_demo: PE %d sum is %ld, expected %ld\n", me,
                total, (long)npes * (npes + 1) / 2);
        ok = 0;
    }

    if (me == 0) {
        printf("RESULT shmem_pes %d\n", npes);
        printf("RESULT shmem_atomics %ld\n", sh->counter);
        printf("RESULT shmem_remote_fadd_median_us %.2f\n", fadd_median);
        printf("RESULT shmem_remote_fadd_mean_us %.2f\n", fadd_mean);
        printf("RESULT shmem_sum %ld\n", total);
    }
    shmem_barrier_all();
    shmem_free(sh);
    shmem_finalize();
    return ok ? 0 : 1;
}
