/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * OpenSHMEM atomics on the symmetric heap (shmem_calloc), where every PE
 * maps every other PE's memory: over the soft device the initiator
 * executes them itself with CPU atomics, on the same words as the
 * target's own atomics and the other PEs'.  All PEs hammer every PE's
 * counters at once with fetch-add, add, a compare-swap loop and swap, 32
 * and 64 bits, then each PE checks its own: no update may be lost or
 * applied twice, and every swap must hand back a distinct value.
 *
 * The heap is wherever the launcher puts it: dcx's allocation by default
 * (sshmem ucx), a SysV segment with "--mca sshmem sysv".
 *
 * dcx-test-direct: atomics
 */
#include "shtest.h"

#define MAXPES 16
#define ITERS  200

typedef struct {
    long fadd64, add64, cas64, swp64;
    int fadd32, add32, cas32, swp32;
    long seen64[MAXPES * ITERS]; /* swap returns, gathered on each PE */
} heap_t;

/* increments *word on pe by one with a compare-swap loop */
static void cas_inc64(long *word, int pe)
{
    long old = shmem_long_atomic_fetch(word, pe), got;

    while ((got = shmem_long_atomic_compare_swap(word, old, old + 1, pe)) !=
           old) {
        old = got;
    }
}

static void cas_inc32(int *word, int pe)
{
    int old = shmem_int_atomic_fetch(word, pe), got;

    while ((got = shmem_int_atomic_compare_swap(word, old, old + 1, pe)) !=
           old) {
        old = got;
    }
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;

    return (x > y) - (x < y);
}

int main(void)
{
    heap_t *h;
    long *swapped;
    int me, np, p, k, n;

    t_init("heap_atomics");
    me = t_me;
    np = t_npes;
    if (np > MAXPES) {
        CHECK_EQ("npes_supported", MAXPES, np);
    }
    h       = shmem_calloc(1, sizeof(*h));
    swapped = shmem_calloc(MAXPES * ITERS, sizeof(*swapped));
    if ((h == NULL) || (swapped == NULL)) {
        CHECK_EQ("shmem_calloc", 1, 0);
    }
    h->swp64 = -1;
    h->swp32 = -1;
    shmem_barrier_all();

    for (k = 0; k < ITERS; ++k) {
        for (p = 0; p < np; ++p) {
            int q  = (me + p) % np; /* each PE starts at another target */
            long v = (long)me * ITERS + k;

            (void)shmem_long_atomic_fetch_add(&h->fadd64, 3, q);
            shmem_long_atomic_add(&h->add64, 5, q);
            (void)shmem_int_atomic_fetch_add(&h->fadd32, 3, q);
            shmem_int_atomic_add(&h->add32, 5, q);
            cas_inc64(&h->cas64, q);
            if (!CSWAP32_BROKEN) {
                cas_inc32(&h->cas32, q);
            }
            /* the values swapped in are distinct over all PEs: what
             * comes back, gathered on q, must be the same set */
            swapped[k] = shmem_long_atomic_swap(&h->swp64, v, q);
            shmem_long_put(&h->seen64[me * ITERS + k], &swapped[k], 1, q);
            (void)shmem_int_atomic_swap(&h->swp32, (int)v, q);
        }
    }
    shmem_barrier_all();

    n = np * ITERS;
    CHECK_EQ("long_fetch_add", 3L * n, h->fadd64);
    CHECK_EQ("long_add", 5L * n, h->add64);
    CHECK_EQ("int_fetch_add", 3 * n, h->fadd32);
    CHECK_EQ("int_add", 5 * n, h->add32);
    CHECK_EQ("long_compare_swap_loop", n, h->cas64);
    CHECK_EQ("int_compare_swap_loop", CSWAP32_BROKEN ? 0 : n, h->cas32);
    if (CSWAP32_BROKEN && (me == 0)) {
        printf("NOTE int compare_swap skipped (Open MPI < 4.1.5, "
               "open-mpi/ompi#11257)\n");
    }
    /* the swaps into this PE's word (PE p's k-th returned seen64[p *
     * ITERS + k]): with the value left in the word, exactly -1 and every
     * value swapped in, each once */
    {
        long vals[MAXPES * ITERS + 1];
        int m = 0;

        for (p = 0; p < np; ++p) {
            for (k = 0; k < ITERS; ++k) {
                vals[m++] = h->seen64[p * ITERS + k];
            }
        }
        vals[m++] = h->swp64;
        qsort(vals, m, sizeof(vals[0]), cmp_long);
        for (k = 0; k < m; ++k) {
            CHECK_EQ("long_swap_values", k - 1, vals[k]);
        }
    }
    shmem_barrier_all();
    shmem_free(swapped);
    shmem_free(h);
    t_finish();
    return 0;
}
