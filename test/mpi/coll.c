/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collectives (built on point-to-point over pml ucx): barrier, bcast,
 * reduce, allreduce, alltoall, alltoallv, allgather, plus a non-blocking
 * allreduce. Counts range from a single element to a few MiB so the
 * underlying messages use both eager and rendezvous protocols.
 */
#include "mpitest.h"

static const int counts[] = {1, 7, 1024, 65536 + 3, 1 << 19};
#define NCOUNTS (int)(sizeof(counts) / sizeof(counts[0]))

static int val(int rank, int i)
{
    return rank * 1000003 + i * 7 + 1;
}

static void test_barrier(void)
{
    /*
     * Each rank sets a token and then waits in the barrier; after it, every
     * rank reads every other rank's token with a one-byte exchange. A
     * broken barrier shows up as a hang (caught by the runner's timeout);
     * here we just make sure many barriers in a row complete and stay in
     * step with point-to-point traffic.
     */
    for (int i = 0; i < 50; i++) {
        int out = i * 10 + t_rank, in = -1;
        int right = (t_rank + 1) % t_size,
            left  = (t_rank + t_size - 1) % t_size;
        CHECK_MPI("barrier", MPI_Barrier(MPI_COMM_WORLD));
        MPI_Sendrecv(&out, 1, MPI_INT, right, i, &in, 1, MPI_INT, left, i,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK_EQ("barrier_step", i * 10 + left, in);
    }
}

static void test_bcast(int *buf)
{
    for (int c = 0; c < NCOUNTS; c++)
        for (int root = 0; root < t_size; root++) {
            int n = counts[c];
            for (int i = 0; i < n; i++)
                buf[i] = t_rank == root ? val(root, i) : -1;
            CHECK_MPI("bcast",
                      MPI_Bcast(buf, n, MPI_INT, root, MPI_COMM_WORLD));
            for (int i = 0; i < n; i++)
                if (buf[i] != val(root, i))
                    CHECK_EQ("bcast_data", val(root, i), buf[i]);
        }
}

static void test_reduce(int *sbuf, int *rbuf)
{
    for (int c = 0; c < NCOUNTS; c++)
        for (int root = 0; root < t_size; root++) {
            int n = counts[c];
            for (int i = 0; i < n; i++) {
                sbuf[i] = val(t_rank, i);
                rbuf[i] = -1;
            }
            CHECK_MPI("reduce_sum", MPI_Reduce(sbuf, rbuf, n, MPI_INT, MPI_SUM,
                                               root, MPI_COMM_WORLD));
            if (t_rank == root)
                for (int i = 0; i < n; i++) {
                    long long e = 0;
                    for (int r = 0; r < t_size; r++)
                        e += val(r, i);
                    if ((int)e != rbuf[i])
                        CHECK_EQ("reduce_sum_data", (int)e, rbuf[i]);
                }
        }
    /* MAX on doubles with MPI_IN_PLACE at the root */
    double d[16];
    for (int i = 0; i < 16; i++)
        d[i] = (t_rank == i % t_size) ? 100.0 + i : (double)t_rank - i;
    if (t_rank == 0)
        CHECK_MPI("reduce_max", MPI_Reduce(MPI_IN_PLACE, d, 16, MPI_DOUBLE,
                                           MPI_MAX, 0, MPI_COMM_WORLD));
    else
        CHECK_MPI("reduce_max", MPI_Reduce(d, NULL, 16, MPI_DOUBLE, MPI_MAX, 0,
                                           MPI_COMM_WORLD));
    if (t_rank == 0)
        for (int i = 0; i < 16; i++)
            CHECK_EQ("reduce_max_data", 100 + i, (long long)d[i]);
}

static void test_allreduce(int *sbuf, int *rbuf)
{
    for (int c = 0; c < NCOUNTS; c++) {
        int n = counts[c];
        for (int i = 0; i < n; i++) {
            sbuf[i] = val(t_rank, i);
            rbuf[i] = -1;
        }
        CHECK_MPI("allreduce_sum", MPI_Allreduce(sbuf, rbuf, n, MPI_INT,
                                                 MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++) {
            long long e = 0;
            for (int r = 0; r < t_size; r++)
                e += val(r, i);
            if ((int)e != rbuf[i])
                CHECK_EQ("allreduce_sum_data", (int)e, rbuf[i]);
        }
        CHECK_MPI("allreduce_min", MPI_Allreduce(sbuf, rbuf, n, MPI_INT,
                                                 MPI_MIN, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++)
            if (rbuf[i] != val(0, i))
                CHECK_EQ("allreduce_min_data", val(0, i), rbuf[i]);
        /* in place, MAX */
        memcpy(rbuf, sbuf, n * sizeof(int));
        CHECK_MPI("allreduce_max", MPI_Allreduce(MPI_IN_PLACE, rbuf, n, MPI_INT,
                                                 MPI_MAX, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++)
            if (rbuf[i] != val(t_size - 1, i))
                CHECK_EQ("allreduce_max_data", val(t_size - 1, i), rbuf[i]);
    }
    /* 64-bit and double sums */
    long long l = (long long)t_rank << 40, lr = 0;
    CHECK_MPI("allreduce_ll", MPI_Allreduce(&l, &lr, 1, MPI_LONG_LONG, MPI_SUM,
                                            MPI_COMM_WORLD));
    CHECK_EQ("allreduce_ll_data", ((long long)t_size * (t_size - 1) / 2) << 40,
             lr);
    double x = 0.5 * (t_rank + 1), xr = 0;
    CHECK_MPI("allreduce_double",
              MPI_Allreduce(&x, &xr, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ("allreduce_double_data",
             (long long)(0.5 * t_size * (t_size + 1) / 2 * 4),
             (long long)(xr * 4));
    /* non-blocking */
    MPI_Request req;
    int one = 1, tot = 0;
    CHECK_MPI("iallreduce", MPI_Iallreduce(&one, &tot, 1, MPI_INT, MPI_SUM,
                                           MPI_COMM_WORLD, &req));
    CHECK_MPI("iallreduce_wait", MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_EQ("iallreduce_data", t_size, tot);
}

/* element i of the block that rank `from` sends to rank `to` */
static int a2a_val(int from, int to, int i)
{
    return from * 100000 + to * 1000 + i % 1000 + (i / 1000) * 7;
}

static void test_alltoall(int *sbuf, int *rbuf)
{
    const int per[] = {1, 100, 4096, 65536};
    for (unsigned c = 0; c < sizeof(per) / sizeof(per[0]); c++) {
        int n = per[c];
        for (int p = 0; p < t_size; p++)
            for (int i = 0; i < n; i++) {
                sbuf[p * n + i] = a2a_val(t_rank, p, i);
                rbuf[p * n + i] = -1;
            }
        CHECK_MPI("alltoall", MPI_Alltoall(sbuf, n, MPI_INT, rbuf, n, MPI_INT,
                                           MPI_COMM_WORLD));
        for (int p = 0; p < t_size; p++)
            for (int i = 0; i < n; i++)
                if (rbuf[p * n + i] != a2a_val(p, t_rank, i))
                    CHECK_EQ("alltoall_data", a2a_val(p, t_rank, i),
                             rbuf[p * n + i]);
    }
}

/* rank `from` sends (from + 1) * (to + 1) * scale elements to `to` */
static void test_alltoallv(int *sbuf, int *rbuf)
{
    int *sc = malloc(4 * sizeof(int) * t_size), *sd = sc + t_size;
    int *rc = sd + t_size, *rd = rc + t_size;
    const int scales[] = {0, 1, 33, 5000};
    for (unsigned s = 0; s < sizeof(scales) / sizeof(scales[0]); s++) {
        int scale = scales[s], so = 0, ro = 0;
        for (int p = 0; p < t_size; p++) {
            sc[p] = (t_rank + 1) * (p + 1) * scale;
            rc[p] = (p + 1) * (t_rank + 1) * scale;
            /* leave a gap of 3 between blocks to exercise displacements */
            sd[p] = so;
            so += sc[p] + 3;
            rd[p] = ro;
            ro += rc[p] + 3;
            for (int i = 0; i < sc[p]; i++)
                sbuf[sd[p] + i] = a2a_val(t_rank, p, i);
        }
        for (int i = 0; i < ro; i++)
            rbuf[i] = -1;
        CHECK_MPI("alltoallv", MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc,
                                             rd, MPI_INT, MPI_COMM_WORLD));
        for (int p = 0; p < t_size; p++) {
            for (int i = 0; i < rc[p]; i++)
                if (rbuf[rd[p] + i] != a2a_val(p, t_rank, i))
                    CHECK_EQ("alltoallv_data", a2a_val(p, t_rank, i),
                             rbuf[rd[p] + i]);
            for (int i = 0; i < 3; i++)
                CHECK_EQ("alltoallv_gap", -1, rbuf[rd[p] + rc[p] + i]);
        }
    }
    free(sc);
}

static void test_allgather(int *sbuf, int *rbuf)
{
    const int per[] = {1, 333, 65536};
    for (unsigned c = 0; c < sizeof(per) / sizeof(per[0]); c++) {
        int n = per[c];
        for (int i = 0; i < n; i++)
            sbuf[i] = val(t_rank, i);
        for (int i = 0; i < n * t_size; i++)
            rbuf[i] = -1;
        CHECK_MPI("allgather", MPI_Allgather(sbuf, n, MPI_INT, rbuf, n, MPI_INT,
                                             MPI_COMM_WORLD));
        for (int p = 0; p < t_size; p++)
            for (int i = 0; i < n; i++)
                if (rbuf[p * n + i] != val(p, i))
                    CHECK_EQ("allgather_data", val(p, i), rbuf[p * n + i]);
    }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "coll");
    size_t elems = (size_t)(1 << 19) * 2 + (size_t)65536 * t_size +
                   (size_t)5000 * 16 * t_size * t_size + 1024;
    int *sbuf = malloc(elems * sizeof(int)),
        *rbuf = malloc(elems * sizeof(int));
    test_barrier();
    test_bcast(sbuf);
    test_reduce(sbuf, rbuf);
    test_allreduce(sbuf, rbuf);
    test_alltoall(sbuf, rbuf);
    test_alltoallv(sbuf, rbuf);
    test_allgather(sbuf, rbuf);
    free(sbuf);
    free(rbuf);
    t_finish();
    return 0;
}
