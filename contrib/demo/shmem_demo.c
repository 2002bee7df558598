/*
 * OpenSHMEM demo for dcx: every PE adds to a counter on PE 0 with remote
 * atomics, passes a token around a ring with puts, and the PEs agree on a
 * sum reduction.  Prints what it checked and the remote fetch-add latency.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 2000

static long counter;
static long token;
static long psync[SHMEM_REDUCE_SYNC_SIZE];
static long pwork[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long value, total;

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(void)
{
    int me, npes, i, ok = 1;
    double t0, lat;
    long expect;

    shmem_init();
    me   = shmem_my_pe();
    npes = shmem_n_pes();
    for (i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) {
        psync[i] = SHMEM_SYNC_VALUE;
    }
    shmem_barrier_all();

    /* remote atomics: ROUNDS fetch-adds from every PE onto PE 0 */
    t0 = now_us();
    for (i = 0; i < ROUNDS; ++i) {
        shmem_long_atomic_fetch_add(&counter, 1, 0);
    }
    lat = (now_us() - t0) / ROUNDS;
    shmem_barrier_all();
    if (me == 0 && counter != (long)ROUNDS * npes) {
        fprintf(stderr, "shmem_demo: counter is %ld, expected %ld\n",
                counter, (long)ROUNDS * npes);
        ok = 0;
    }

    /* ring: PE i puts i+1 into PE (i+1)'s token */
    shmem_long_p(&token, me + 1, (me + 1) % npes);
    shmem_barrier_all();
    expect = ((me + npes - 1) % npes) + 1;
    if (token != expect) {
        fprintf(stderr, "shmem_demo: PE %d token is %ld, expected %ld\n", me,
                token, expect);
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
        printf("RESULT shmem_atomics %ld\n", counter);
        printf("RESULT shmem_fadd_us %.2f\n", lat);
        printf("RESULT shmem_sum %ld\n", total);
    }
    shmem_barrier_all();
    shmem_finalize();
    return ok ? 0 : 1;
}
