/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided communication on dynamic windows over osc ucx:
 * MPI_Win_create_dynamic, MPI_Win_attach of several regions per rank
 * (256 B, 16 KiB, 256 KiB of malloc'd memory), then under
 * MPI_Win_lock_all: MPI_Put, MPI_Get, MPI_Accumulate, MPI_Get_accumulate,
 * MPI_Fetch_and_op and MPI_Compare_and_swap, completed with MPI_Win_flush
 * and MPI_Win_flush_local, every result checked element by element.
 * Between rounds every rank detaches one region and attaches a fresh one
 * at another address, so later operations go to memory registered after
 * the window was created.
 *
 * Osc ucx looks up the target region (and unpacks its rkey) on every
 * operation, and runs fetch-and-op / compare-and-swap as UCP atomics.
 *
 * Open MPI 4.1.4's osc ucx keeps the attached regions in an array sorted by
 * address, but a region attached above every region already attached is
 * stored one slot too far, leaving a hole; lookups of the regions below it
 * then fail and read an rkey from before the array (usually one without
 * any transport key, which UCP serves with software RMA and atomics; over
 * dcx before the fix that logged "got software atomic request while device
 * atomics are selected"), and MPI_Win_detach/MPI_Win_free may unmap the
 * wrong handle and crash, over any transport (see docs/mpi-rma.md).  This
 * program therefore carves its regions from a pool from the top down, so
 * every attach is below the regions already attached.  The software path
 * itself is tested by gtest ucp_dcx.sw_and_dcx_atomics_mix_without_error.
 *
 * dcx-test-np: 2 3 4
 */
#include "mpitest.h"

#define NREG   3
#define ROUNDS 3
#define NFOP   20 /* fetch-and-op increments per rank and target */

static const int reg_ints[NREG] = {64, 4096, 65536};

#define REG_GAP 64 /* bytes between two regions of the pool */

static char *pool, *pool_top; /* regions are carved downwards */
static int *reg[NREG];        /* my attached regions */
static MPI_Aint *addr;        /* [rank * NREG + r]: everyone's regions */

static char test_name[64];
static const char *tn(const char *what, int r)
{
    snprintf(test_name, sizeof(test_name), "%s_reg%d", what, r);
    return test_name;
}

static int pv(int origin, int i, int round)
{
    return origin * 1000000 + i * 7 + round;
}

static MPI_Aint raddr(int rank, int r, size_t byte_off)
{
    return MPI_Aint_add(addr[rank * NREG + r], (MPI_Aint)byte_off);
}

static void attach(MPI_Win win, int r)
{
    size_t len = reg_ints[r] * sizeof(int);

    /* below everything attached so far (see the header), 64-byte aligned */
    pool_top = (char *)(((uintptr_t)pool_top - len - REG_GAP) & ~(uintptr_t)63);
    if (pool_top < pool)
        t_fail("pool_exhausted", 0, 1, NULL);
    reg[r] = (int *)pool_top;
    for (int i = 0; i < reg_ints[r]; i++)
        reg[r][i] = -1;
    CHECK_MPI(tn("win_attach", r), MPI_Win_attach(win, reg[r], len));
}

static void detach(MPI_Win win, int r)
{
    CHECK_MPI(tn("win_detach", r), MPI_Win_detach(win, reg[r]));
    reg[r] = NULL;
}

static void exchange_addresses(void)
{
    MPI_Aint mine[NREG];

    for (int r = 0; r < NREG; r++)
        MPI_Get_address(reg[r], &mine[r]);
    CHECK_MPI("allgather_addr", MPI_Allgather(mine, NREG, MPI_AINT, addr, NREG,
                                              MPI_AINT, MPI_COMM_WORLD));
}

/* Local stores are done; remote ranks may now access my regions. */
static void publish(MPI_Win win)
{
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Everyone's remote accesses are flushed; my regions may now be read. */
static void settle(MPI_Win win)
{
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
}

/* Put my pattern to my right neighbour, once completed with flush and once
 * with flush_local (the origin buffer is overwritten right after the local
 * completion, which must not change what arrives). */
static void test_put(MPI_Win win, int round)
{
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;

    for (int r = 0; r < NREG; r++) {
        int n    = reg_ints[r];
        int *buf = malloc(n * sizeof(int));

        for (int i = 0; i < n; i++)
            reg[r][i] = -1;
        publish(win);
        /* first half: flush */
        for (int i = 0; i < n; i++)
            buf[i] = pv(t_rank, i, round);
        CHECK_MPI(tn("put", r),
                  MPI_Put(buf, n / 2, MPI_INT, right, raddr(right, r, 0), n / 2,
                          MPI_INT, win));
        CHECK_MPI(tn("flush", r), MPI_Win_flush(right, win));
        /* second half: flush_local, then reuse the buffer, then flush */
        CHECK_MPI(tn("put", r), MPI_Put(buf + n / 2, n - n / 2, MPI_INT, right,
                                        raddr(right, r, (n / 2) * sizeof(int)),
                                        n - n / 2, MPI_INT, win));
        CHECK_MPI(tn("flush_local", r), MPI_Win_flush_local(right, win));
        for (int i = 0; i < n; i++)
            buf[i] = -7;
        CHECK_MPI(tn("flush", r), MPI_Win_flush(right, win));
        settle(win);
        for (int i = 0; i < n; i++)
            if (reg[r][i] != pv(left, i, round))
                CHECK_EQ(tn("put_data", r), pv(left, i, round), reg[r][i]);
        free(buf);
    }
}

/* Get back from my right neighbour what I put there (test_put ran
 * before), completed with flush_local, then a second time with flush. */
static void test_get(MPI_Win win, int round)
{
    int right = (t_rank + 1) % t_size;

    for (int r = 0; r < NREG; r++) {
        int n    = reg_ints[r];
        int *buf = malloc(n * sizeof(int));

        for (int i = 0; i < n; i++)
            buf[i] = -2;
        CHECK_MPI(tn("get", r), MPI_Get(buf, n, MPI_INT, right,
                                        raddr(right, r, 0), n, MPI_INT, win));
        CHECK_MPI(tn("flush_local", r), MPI_Win_flush_local(right, win));
        for (int i = 0; i < n; i++)
            if (buf[i] != pv(t_rank, i, round))
                CHECK_EQ(tn("get_flush_local_data", r), pv(t_rank, i, round),
                         buf[i]);

        /* a small Get from the middle, completed with flush */
        int off = n / 3, m = n / 4 + 1;
        for (int i = 0; i < m; i++)
            buf[i] = -3;
        CHECK_MPI(tn("get", r),
                  MPI_Get(buf, m, MPI_INT, right,
                          raddr(right, r, off * sizeof(int)), m, MPI_INT, win));
        CHECK_MPI(tn("flush", r), MPI_Win_flush(right, win));
        for (int i = 0; i < m; i++)
            if (buf[i] != pv(t_rank, off + i, round))
                CHECK_EQ(tn("get_flush_data", r), pv(t_rank, off + i, round),
                         buf[i]);
        free(buf);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Everyone accumulates (rank + 1) * (i % 100) into everyone's region. */
static void test_accumulate(MPI_Win win)
{
    for (int r = 0; r < NREG; r++) {
        int n    = reg_ints[r];
        int *buf = malloc(n * sizeof(int));

        for (int i = 0; i < n; i++)
            reg[r][i] = 3;
        publish(win);
        for (int i = 0; i < n; i++)
            buf[i] = (t_rank + 1) * (i % 100);
        for (int k = 0; k < t_size; k++) {
            int p = (t_rank + k) % t_size;
            CHECK_MPI(tn("accumulate", r),
                      MPI_Accumulate(buf, n, MPI_INT, p, raddr(p, r, 0), n,
                                     MPI_INT, MPI_SUM, win));
            CHECK_MPI(tn("flush", r), MPI_Win_flush(p, win));
        }
        settle(win);
        int f = t_size * (t_size + 1) / 2;
        for (int i = 0; i < n; i++)
            if (reg[r][i] != 3 + f * (i % 100))
                CHECK_EQ(tn("accumulate_data", r), 3 + f * (i % 100),
                         reg[r][i]);
        free(buf);
    }
}

/* Get_accumulate (SUM) of one int per rank into slot 0 of every target:
 * each fetched value is 100 plus a sum of other ranks' distinct bits. */
static void test_get_accumulate(MPI_Win win)
{
    for (int r = 0; r < NREG; r++) {
        reg[r][0] = 100;
        publish(win);
        int bit = 1 << t_rank;
        for (int k = 0; k < t_size; k++) {
            int p = (t_rank + k) % t_size, old = -1;
            CHECK_MPI(tn("get_accumulate", r),
                      MPI_Get_accumulate(&bit, 1, MPI_INT, &old, 1, MPI_INT, p,
                                         raddr(p, r, 0), 1, MPI_INT, MPI_SUM,
                                         win));
            CHECK_MPI(tn("flush", r), MPI_Win_flush(p, win));
            if (old < 100 || old >= 100 + (1 << t_size) || ((old - 100) & bit))
                CHECK_EQ(tn("get_accumulate_fetched", r), 100, old);
        }
        settle(win);
        CHECK_EQ(tn("get_accumulate_total", r), 100 + (1 << t_size) - 1,
                 reg[r][0]);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* Fetch_and_op on 32- and 64-bit counters in every region of every rank:
 * SUM increments (each rank sees strictly increasing values), then NO_OP
 * reads the total, then REPLACE. */
static void test_fetch_and_op(MPI_Win win)
{
    for (int r = 0; r < NREG; r++) {
        /* slot 4: int counter; slots 6-7: int64 counter (8-byte aligned:
         * malloc'd regions are) */
        reg[r][4] = 0;
        memset(&reg[r][6], 0, sizeof(int64_t));
        publish(win);
        for (int k = 0; k < t_size; k++) {
            int p   = (t_rank + k) % t_size;
            int one = 1, old = -1, seen = -1;
            int64_t one64 = 1, old64 = -1, seen64 = -1;
            for (int j = 0; j < NFOP; j++) {
                CHECK_MPI(tn("fetch_and_op_int", r),
                          MPI_Fetch_and_op(&one, &old, MPI_INT, p,
                                           raddr(p, r, 4 * sizeof(int)),
                                           MPI_SUM, win));
                CHECK_MPI(tn("fetch_and_op_long", r),
                          MPI_Fetch_and_op(&one64, &old64, MPI_INT64_T, p,
                                           raddr(p, r, 6 * sizeof(int)),
                                           MPI_SUM, win));
                /* alternate the completion calls */
                if (j & 1)
                    CHECK_MPI(tn("flush", r), MPI_Win_flush(p, win));
                else
                    CHECK_MPI(tn("flush_local", r),
                              MPI_Win_flush_local(p, win));
                if (old <= seen || old >= NFOP * t_size)
                    CHECK_EQ(tn("fetch_and_op_int_monotonic", r), seen + 1,
                             old);
                if (old64 <= seen64 || old64 >= NFOP * t_size)
                    CHECK_EQ(tn("fetch_and_op_long_monotonic", r), seen64 + 1,
                             old64);
                seen   = old;
                seen64 = old64;
            }
        }
        settle(win);
        CHECK_EQ(tn("fetch_and_op_int_total", r), NFOP * t_size, reg[r][4]);
        int64_t v64;
        memcpy(&v64, &reg[r][6], sizeof(v64));
        CHECK_EQ(tn("fetch_and_op_long_total", r), NFOP * t_size, v64);
        MPI_Barrier(MPI_COMM_WORLD);

        /* NO_OP reads the total remotely; REPLACE swaps in my rank */
        int right = (t_rank + 1) % t_size, dummy = 0, got = -1;
        CHECK_MPI(tn("fetch_and_op_noop", r),
                  MPI_Fetch_and_op(&dummy, &got, MPI_INT, right,
                                   raddr(right, r, 4 * sizeof(int)), MPI_NO_OP,
                                   win));
        CHECK_MPI(tn("flush", r), MPI_Win_flush(right, win));
        CHECK_EQ(tn("fetch_and_op_noop_value", r), NFOP * t_size, got);
        MPI_Barrier(MPI_COMM_WORLD);
        int me = t_rank + 1000;
        got    = -1;
        CHECK_MPI(tn("fetch_and_op_replace", r),
                  MPI_Fetch_and_op(&me, &got, MPI_INT, right,
                                   raddr(right, r, 4 * sizeof(int)),
                                   MPI_REPLACE, win));
        CHECK_MPI(tn("flush", r), MPI_Win_flush(right, win));
        CHECK_EQ(tn("fetch_and_op_replace_old", r), NFOP * t_size, got);
        settle(win);
        int left = (t_rank + t_size - 1) % t_size;
        CHECK_EQ(tn("fetch_and_op_replace_value", r), left + 1000, reg[r][4]);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* Compare_and_swap (-1 -> my rank) by every rank on every target, 32 and
 * 64 bit: exactly one winner per target, whose rank the slot then holds. */
static void test_compare_and_swap(MPI_Win win)
{
    int *wins32 = calloc(t_size, sizeof(int)),
        *tot32  = calloc(t_size, sizeof(int));
    int *wins64 = calloc(t_size, sizeof(int)),
        *tot64  = calloc(t_size, sizeof(int));

    for (int r = 0; r < NREG; r++) {
        int64_t m1 = -1;
        reg[r][10] = -1;
        memcpy(&reg[r][12], &m1, sizeof(m1));
        publish(win);
        for (int k = 0; k < t_size; k++) {
            int p   = (t_rank + k) % t_size;
            int cmp = -1, me = t_rank, res = -5;
            int64_t cmp64 = -1, me64 = t_rank, res64 = -5;
            CHECK_MPI(tn("compare_and_swap_int", r),
                      MPI_Compare_and_swap(&me, &cmp, &res, MPI_INT, p,
                                           raddr(p, r, 10 * sizeof(int)), win));
            CHECK_MPI(tn("compare_and_swap_long", r),
                      MPI_Compare_and_swap(&me64, &cmp64, &res64, MPI_INT64_T,
                                           p, raddr(p, r, 12 * sizeof(int)),
                                           win));
            CHECK_MPI(tn("flush", r), MPI_Win_flush(p, win));
            if (res != -1 && (res < 0 || res >= t_size))
                CHECK_EQ(tn("compare_and_swap_int_old", r), -1, res);
            if (res64 != -1 && (res64 < 0 || res64 >= t_size))
                CHECK_EQ(tn("compare_and_swap_long_old", r), -1, res64);
            wins32[p] = (res == -1);
            wins64[p] = (res64 == -1);
        }
        MPI_Allreduce(wins32, tot32, t_size, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(wins64, tot64, t_size, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK_EQ(tn("compare_and_swap_int_winners", r), 1, tot32[t_rank]);
        CHECK_EQ(tn("compare_and_swap_long_winners", r), 1, tot64[t_rank]);
        settle(win);
        int64_t v64;
        memcpy(&v64, &reg[r][12], sizeof(v64));
        if (reg[r][10] < 0 || reg[r][10] >= t_size)
            CHECK_EQ(tn("compare_and_swap_int_value", r), 0, reg[r][10]);
        if (v64 < 0 || v64 >= t_size)
            CHECK_EQ(tn("compare_and_swap_long_value", r), 0, v64);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(wins32);
    free(tot32);
    free(wins64);
    free(tot64);
}

int main(int argc, char **argv)
{
    MPI_Win win;

    t_init(&argc, &argv, "rma_dynamic");
    addr             = malloc(t_size * NREG * sizeof(MPI_Aint));
    size_t pool_size = 0;
    for (int r = 0; r < NREG; r++)
        pool_size += 2 * (reg_ints[r] * sizeof(int) + REG_GAP + 64);
    pool     = malloc(pool_size);
    pool_top = pool + pool_size;
    if (pool == NULL || addr == NULL)
        t_fail("malloc", 0, 1, NULL);

    CHECK_MPI("win_create_dynamic",
              MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int r = 0; r < NREG; r++)
        attach(win, r);

    for (int round = 0; round < ROUNDS; round++) {
        exchange_addresses();
        CHECK_MPI("lock_all", MPI_Win_lock_all(0, win));
        test_put(win, round);
        test_get(win, round);
        test_fetch_and_op(win);
        test_compare_and_swap(win);
        test_accumulate(win);
        test_get_accumulate(win);
        CHECK_MPI("unlock_all", MPI_Win_unlock_all(win));
        MPI_Barrier(MPI_COMM_WORLD);

        /* move region (round % NREG) to new memory: the old range is no
         * longer accessible, the new one is */
        int r = round % NREG;
        detach(win, r);
        attach(win, r);
    }

    for (int r = 0; r < NREG; r++)
        detach(win, r);
    CHECK_MPI("win_free", MPI_Win_free(&win));
    free(pool);
    free(addr);
    t_finish();
    return 0;
}
