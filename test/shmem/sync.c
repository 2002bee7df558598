/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Point-to-point synchronisation and ordering over spml ucx:
 *  - shmem_wait_until (int, long, long long; EQ, NE, GE, GT, LT, LE)
 *  - shmem_barrier_all (every PE sees every other PE's updates after it)
 *  - shmem_fence: puts to one PE are delivered in order (data, then flag)
 *  - shmem_quiet: puts to one PE are complete before a flag goes to
 *    another PE, which then reads the data from the first PE.
 */
#include "shtest.h"

#define DATA_N (1 << 17) /* longs, 1 MiB */
#define ROUNDS 20

static long data[DATA_N];
static long flag_l;
static int flag_i;
static long long flag_ll;
static long counter;
static long seen_round[64];

static long dv(int pe, int round, long i)
{
    return ((long)pe << 48) + ((long)round << 24) + i;
}

static void test_wait_until(void)
{
    int me = t_me, np = t_npes, right = (me + 1) % np,
        left = (me + np - 1) % np;
    flag_i   = 0;
    flag_l   = 0;
    flag_ll  = 0;
    shmem_barrier_all();
    /* token ring: PE 0 starts, every PE waits for its left, passes right */
    for (int r = 1; r <= ROUNDS; r++) {
        if (me == 0) {
            shmem_int_p(&flag_i, r, right);
            shmem_int_wait_until(&flag_i, SHMEM_CMP_EQ, r);
            CHECK_EQ("wait_until_int_eq", r, flag_i);
        } else {
            shmem_int_wait_until(&flag_i, SHMEM_CMP_EQ, r);
            /* check before passing the token on: once it is passed, PE 0
             * may start round r+1 and write our flag again */
            CHECK_EQ("wait_until_int_eq", r, flag_i);
            shmem_int_p(&flag_i, r, right);
        }
    }
    shmem_barrier_all();

    /* every PE adds to PE 0's long; PE 0 waits until it reaches the total */
    shmem_long_atomic_add(&flag_l, me + 1, 0);
    if (me == 0) {
        long total = (long)np * (np + 1) / 2;
        shmem_long_wait_until(&flag_l, SHMEM_CMP_GE, total);
        CHECK_EQ("wait_until_long_ge", total, flag_l);
    }
    shmem_barrier_all();

    /* NE / GT / LT / LE on long long, driven by the left neighbour */
    shmem_longlong_p(&flag_ll, 5, right);
    shmem_longlong_wait_until(&flag_ll, SHMEM_CMP_NE, 0);
    CHECK_EQ("wait_until_ll_ne", 5, flag_ll);
    shmem_barrier_all();
    shmem_longlong_p(&flag_ll, 1LL << 40, right);
    shmem_longlong_wait_until(&flag_ll, SHMEM_CMP_GT, 5);
    CHECK_EQ("wait_until_ll_gt", 1LL << 40, flag_ll);
    shmem_barrier_all();
    shmem_longlong_p(&flag_ll, -3, right);
    shmem_longlong_wait_until(&flag_ll, SHMEM_CMP_LT, 0);
    CHECK_EQ("wait_until_ll_lt", -3, flag_ll);
    shmem_barrier_all();
    shmem_longlong_p(&flag_ll, -4, right);
    shmem_longlong_wait_until(&flag_ll, SHMEM_CMP_LE, -4);
    CHECK_EQ("wait_until_ll_le", -4, flag_ll);
    (void)left;
    shmem_barrier_all();
}

static void test_barrier(void)
{
    int me = t_me, np = t_npes;
    counter = 0;
    shmem_barrier_all();
    for (int r = 1; r <= ROUNDS; r++) {
        /* tell everyone I've reached round r, then barrier */
        for (int p = 0; p < np; p++) {
            shmem_long_atomic_inc(&counter, p);
            shmem_long_p(&seen_round[me], r, p);
        }
        shmem_barrier_all();
        CHECK_EQ("barrier_all_counter", (long)np * r, counter);
        for (int p = 0; p < np; p++)
            CHECK_EQ("barrier_all_put_visible", r, seen_round[p]);
        shmem_barrier_all();
    }
}

/* fence: data put then flag put to the same PE arrive in that order */
static void test_fence(void)
{
    int me = t_me, np = t_npes, right = (me + 1) % np,
        left           = (me + np - 1) % np;
    long *src          = malloc(DATA_N * sizeof(long));
    const long sizes[] = {1, 100, 8193, DATA_N};
    flag_l             = 0;
    shmem_barrier_all();
    for (int r = 1; r <= (int)(sizeof(sizes) / sizeof(sizes[0])) * 2; r++) {
        long n = sizes[(r - 1) / 2];
        for (long i = 0; i < n; i++)
            src[i] = dv(me, r, i);
        if (r % 2) {
            shmem_long_put(data, src, n, right);
        } else {
            shmem_long_put_nbi(data, src, n, right);
        }
        shmem_fence();
        shmem_long_p(&flag_l, r, right);
        shmem_long_wait_until(&flag_l, SHMEM_CMP_EQ, r);
        for (long i = 0; i < n; i++)
            if (data[i] != dv(left, r, i))
                CHECK_EQ("fence_order", dv(left, r, i), data[i]);
        /* don't overwrite data before the reader is done with it */
        shmem_barrier_all();
    }
    free(src);
}

/*
 * quiet: PE a writes data into PE b, calls shmem_quiet, then raises a flag
 * on PE c; PE c then fetches the data from PE b and must see all of it.
 * With 2 PEs, c == a (a reads back from b after its own quiet).
 */
static void test_quiet(void)
{
    int me = t_me, np = t_npes;
    long *src = malloc(DATA_N * sizeof(long)),
         *chk = malloc(DATA_N * sizeof(long));
    flag_l    = 0;
    shmem_barrier_all();
    for (int r = 1; r <= 6; r++) {
        int a = r % np, b = (a + 1) % np, c = (a + 2) % np;
        long n = (r % 2) ? DATA_N : 1000;
        if (me == a) {
            for (long i = 0; i < n; i++)
                src[i] = dv(a, r, i);
            /* mix of blocking and non-blocking puts, in pieces */
            long half = n / 2;
            shmem_long_put_nbi(data, src, half, b);
            shmem_long_put(data + half, src + half, n - half, b);
            shmem_quiet();
            shmem_long_atomic_set(&flag_l, r, c);
        }
        if (me == c) {
            shmem_long_wait_until(&flag_l, SHMEM_CMP_EQ, r);
            shmem_long_get(chk, data, n, b);
            for (long i = 0; i < n; i++)
                if (chk[i] != dv(a, r, i))
                    CHECK_EQ("quiet_visible", dv(a, r, i), chk[i]);
        }
        shmem_barrier_all();
    }
    /* many nbi puts to all PEs; after quiet + barrier all are visible */
    for (long i = 0; i < 256; i++)
        src[i] = dv(me, 99, i);
    shmem_barrier_all();
    for (int p = 0; p < np; p++)
        for (long i = 0; i < 256; i++)
            shmem_long_put_nbi(&data[me * 256 + i], &src[i], 1, p);
    shmem_quiet();
    shmem_barrier_all();
    for (int p = 0; p < np; p++)
        for (long i = 0; i < 256; i++)
            if (data[p * 256 + i] != dv(p, 99, i))
                CHECK_EQ("quiet_nbi_all", dv(p, 99, i), data[p * 256 + i]);
    free(src);
    free(chk);
}

int main(void)
{
    t_init("sync");
    if (t_npes > 64)
        CHECK_EQ("npes_supported", 64, t_npes);
    test_wait_until();
    test_barrier();
    test_fence();
    test_quiet();
    t_finish();
    return 0;
}
