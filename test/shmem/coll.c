/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * OpenSHMEM collectives (1.4 active-set API) over spml ucx: broadcast
 * (32/64-bit, every root), sum reductions (int, long, double) plus min/max,
 * collect (variable sizes) and fcollect, alltoall (32/64-bit). Also the same
 * on an active set of every other PE when there are 4 or more PEs.
 */
#include "shtest.h"

#define MAXN   (1 << 16)
#define MAXPES 16

static long psync[SHMEM_REDUCE_SYNC_SIZE > SHMEM_COLLECT_SYNC_SIZE ?
                      (SHMEM_REDUCE_SYNC_SIZE > SHMEM_ALLTOALL_SYNC_SIZE ?
                           SHMEM_REDUCE_SYNC_SIZE :
                           SHMEM_ALLTOALL_SYNC_SIZE) :
                      (SHMEM_COLLECT_SYNC_SIZE > SHMEM_ALLTOALL_SYNC_SIZE ?
                           SHMEM_COLLECT_SYNC_SIZE :
                           SHMEM_ALLTOALL_SYNC_SIZE)];
static int iwrk[MAXN / 2 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long lwrk[MAXN / 2 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static double dwrk[MAXN / 2 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];

static long src[MAXN * MAXPES], dst[MAXN * MAXPES];

static void reset_psync(void)
{
    for (size_t i = 0; i < sizeof(psync) / sizeof(psync[0]); i++)
        psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
}

static long v(int pe, long i)
{
    return ((long)pe << 32) + i * 3 + 1;
}

static void test_broadcast(void)
{
    const long sizes[] = {1, 33, 4096, MAXN};
    for (int k = 0; k < 4; k++)
        for (int root = 0; root < t_npes; root++) {
            long n = sizes[k];
            for (long i = 0; i < n; i++) {
                src[i] = v(t_me, i);
                dst[i] = -1;
            }
            reset_psync();
            shmem_broadcast64(dst, src, n, root, 0, 0, t_npes, psync);
            if (t_me != root) /* the root's target is not written */
                for (long i = 0; i < n; i++)
                    if (dst[i] != v(root, i))
                        CHECK_EQ("broadcast64", v(root, i), dst[i]);
            /* 32-bit: n ints */
            int *s32 = (int *)src, *d32 = (int *)dst;
            for (long i = 0; i < n; i++) {
                s32[i] = (int)(t_me * 100000 + i);
                d32[i] = -1;
            }
            reset_psync();
            shmem_broadcast32(d32, s32, n, root, 0, 0, t_npes, psync);
            if (t_me != root)
                for (long i = 0; i < n; i++)
                    if (d32[i] != (int)(root * 100000 + i))
                        CHECK_EQ("broadcast32", root * 100000 + i, d32[i]);
        }
}

static void test_reduce(void)
{
    const int sizes[] = {1, 7, 1000, MAXN};
    int np            = t_npes;
    for (int k = 0; k < 4; k++) {
        int n   = sizes[k];
        int *si = (int *)src, *di = (int *)dst;
        for (int i = 0; i < n; i++) {
            si[i] = t_me * 1000 + i;
            di[i] = -1;
        }
        reset_psync();
        shmem_int_sum_to_all(di, si, n, 0, 0, np, iwrk, psync);
        for (int i = 0; i < n; i++) {
            int e = 1000 * np * (np - 1) / 2 + np * i;
            if (di[i] != e)
                CHECK_EQ("int_sum_to_all", e, di[i]);
        }
        for (int i = 0; i < n; i++) {
            src[i] = v(t_me, i);
            dst[i] = -1;
        }
        reset_psync();
        shmem_long_sum_to_all(dst, src, n, 0, 0, np, lwrk, psync);
        for (int i = 0; i < n; i++) {
            long e = 0;
            for (int p = 0; p < np; p++)
                e += v(p, i);
            if (dst[i] != e)
                CHECK_EQ("long_sum_to_all", e, dst[i]);
        }
        reset_psync();
        shmem_long_max_to_all(dst, src, n, 0, 0, np, lwrk, psync);
        for (int i = 0; i < n; i++)
            if (dst[i] != v(np - 1, i))
                CHECK_EQ("long_max_to_all", v(np - 1, i), dst[i]);
        reset_psync();
        shmem_long_min_to_all(dst, src, n, 0, 0, np, lwrk, psync);
        for (int i = 0; i < n; i++)
            if (dst[i] != v(0, i))
                CHECK_EQ("long_min_to_all", v(0, i), dst[i]);
        double *sd = (double *)src, *dd = (double *)dst;
        for (int i = 0; i < n; i++) {
            sd[i] = 0.5 * (t_me + 1) + i;
            dd[i] = -1;
        }
        reset_psync();
        shmem_double_sum_to_all(dd, sd, n, 0, 0, np, dwrk, psync);
        for (int i = 0; i < n; i++) {
            double e = 0.5 * np * (np + 1) / 2 + (double)np * i;
            if (dd[i] != e)
                CHECK_EQ("double_sum_to_all(x4)", (long long)(e * 4),
                         (long long)(dd[i] * 4));
        }
    }
    /* in place */
    src[0] = t_me + 1;
    reset_psync();
    shmem_long_sum_to_all(src, src, 1, 0, 0, np, lwrk, psync);
    CHECK_EQ("long_sum_to_all_inplace", (long)np * (np + 1) / 2, src[0]);
}

static void test_collect(void)
{
    int np           = t_npes;
    /* fcollect: same count everywhere */
    const long fsz[] = {1, 100, 5000};
    for (int k = 0; k < 3; k++) {
        long n = fsz[k];
        for (long i = 0; i < n; i++)
            src[i] = v(t_me, i);
        for (long i = 0; i < n * np; i++)
            dst[i] = -1;
        reset_psync();
        shmem_fcollect64(dst, src, n, 0, 0, np, psync);
        for (int p = 0; p < np; p++)
            for (long i = 0; i < n; i++)
                if (dst[p * n + i] != v(p, i))
                    CHECK_EQ("fcollect64", v(p, i), dst[p * n + i]);
        int *s32 = (int *)src, *d32 = (int *)dst;
        for (long i = 0; i < n; i++)
            s32[i] = (int)(t_me * 100000 + i);
        for (long i = 0; i < n * np; i++)
            d32[i] = -1;
        reset_psync();
        shmem_fcollect32(d32, s32, n, 0, 0, np, psync);
        for (int p = 0; p < np; p++)
            for (long i = 0; i < n; i++)
                if (d32[p * n + i] != (int)(p * 100000 + i))
                    CHECK_EQ("fcollect32", p * 100000 + i, d32[p * n + i]);
    }
    /* collect: PE p contributes (p + 1) * scale elements (scale 0 too) */
    const long scales[] = {0, 1, 777};
    for (int k = 0; k < 3; k++) {
        long mine = (t_me + 1) * scales[k], total = 0;
        for (int p = 0; p < np; p++)
            total += (p + 1) * scales[k];
        for (long i = 0; i < mine; i++)
            src[i] = v(t_me, i);
        for (long i = 0; i < total + 1; i++)
            dst[i] = -1;
        reset_psync();
        shmem_collect64(dst, src, mine, 0, 0, np, psync);
        long off = 0;
        for (int p = 0; p < np; p++) {
            for (long i = 0; i < (p + 1) * scales[k]; i++)
                if (dst[off + i] != v(p, i))
                    CHECK_EQ("collect64", v(p, i), dst[off + i]);
            off += (p + 1) * scales[k];
        }
        CHECK_EQ("collect64_end", -1, dst[total]);
        int *s32 = (int *)src, *d32 = (int *)dst;
        for (long i = 0; i < mine; i++)
            s32[i] = (int)(t_me * 100000 + i);
        for (long i = 0; i < total + 1; i++)
            d32[i] = -1;
        reset_psync();
        shmem_collect32(d32, s32, mine, 0, 0, np, psync);
        off = 0;
        for (int p = 0; p < np; p++) {
            for (long i = 0; i < (p + 1) * scales[k]; i++)
                if (d32[off + i] != (int)(p * 100000 + i))
                    CHECK_EQ("collect32", p * 100000 + i, d32[off + i]);
            off += (p + 1) * scales[k];
        }
    }
}

static long a2a(int from, int to, long i)
{
    return ((long)from << 40) + ((long)to << 20) + i;
}

static void test_alltoall(void)
{
    int np             = t_npes;
    const long sizes[] = {1, 64, 4096};
    for (int k = 0; k < 3; k++) {
        long n = sizes[k];
        for (int p = 0; p < np; p++)
            for (long i = 0; i < n; i++) {
                src[p * n + i] = a2a(t_me, p, i);
                dst[p * n + i] = -1;
            }
        reset_psync();
        shmem_alltoall64(dst, src, n, 0, 0, np, psync);
        for (int p = 0; p < np; p++)
            for (long i = 0; i < n; i++)
                if (dst[p * n + i] != a2a(p, t_me, i))
                    CHECK_EQ("alltoall64", a2a(p, t_me, i), dst[p * n + i]);
        int *s32 = (int *)src, *d32 = (int *)dst;
        for (int p = 0; p < np; p++)
            for (long i = 0; i < n; i++) {
                s32[p * n + i] = (int)(t_me * 1000000 + p * 10000 + i);
                d32[p * n + i] = -1;
            }
        reset_psync();
        shmem_alltoall32(d32, s32, n, 0, 0, np, psync);
        for (int p = 0; p < np; p++)
            for (long i = 0; i < n; i++)
                if (d32[p * n + i] != (int)(p * 1000000 + t_me * 10000 + i))
                    CHECK_EQ("alltoall32", p * 1000000 + t_me * 10000 + i,
                             d32[p * n + i]);
    }
}

/* active set of the even PEs (start 0, log stride 1) */
static void test_active_set(void)
{
    int np = t_npes, members = (np + 1) / 2;
    if (np < 4)
        return;
    reset_psync();
    if (t_me % 2 == 0) {
        for (long i = 0; i < 100; i++) {
            src[i] = v(t_me, i);
            dst[i] = -1;
        }
        shmem_long_sum_to_all(dst, src, 100, 0, 1, members, lwrk, psync);
        for (long i = 0; i < 100; i++) {
            long e = 0;
            for (int p = 0; p < np; p += 2)
                e += v(p, i);
            if (dst[i] != e)
                CHECK_EQ("active_set_sum", e, dst[i]);
        }
    }
    reset_psync();
    if (t_me % 2 == 0) {
        for (long i = 0; i < 100; i++) {
            src[i] = v(t_me, i);
            dst[i] = -1;
        }
        shmem_broadcast64(dst, src, 100, 1, 0, 1, members,
                          psync); /* root = 2nd member = PE 2 */
        if (t_me != 2)
            for (long i = 0; i < 100; i++)
                if (dst[i] != v(2, i))
                    CHECK_EQ("active_set_broadcast", v(2, i), dst[i]);
    }
    shmem_barrier_all();
}

int main(void)
{
    t_init("coll");
    if (t_npes > MAXPES)
        CHECK_EQ("npes_supported", MAXPES, t_npes);
    test_broadcast();
    test_reduce();
    test_collect();
    test_alltoall();
    test_active_set();
    t_finish();
    return 0;
}
