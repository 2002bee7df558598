/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Many peers per process (run with 16 and 32 ranks; test/mpi/scale.sh runs
 * it under every DCI pool policy with a pool smaller than the peer count):
 *
 *   - all-to-all: MPI_Alltoall and MPI_Alltoallv with a block size that
 *     differs for every pair, and a point-to-point all-to-all where every
 *     rank sends to every other at once (Isend/Irecv);
 *   - random peers: in each round every rank sends to a few destinations
 *     drawn from a generator every rank can replay, so each receiver knows
 *     whom to expect and how much.
 *
 * Every byte of every message is checked.
 *
 * dcx-test-np: 16 32
 * dcx-test-policies: dcs dcs_quota rand hybrid streams
 * dcx-test-num-dci: 2
 */
#include "mpitest.h"

#define ROUNDS   12 /* random-peer rounds */
#define PICKS    4  /* destinations per rank and round */
#define A2A_ITER 3

/* A small generator every rank replays identically */
static uint32_t rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* The destinations and sizes rank src picks in round r */
static void picks(int src, int r, int *dst, size_t *len)
{
    uint32_t s = 0x9e3779b9u ^ (uint32_t)(src * 7919 + r * 104729);

    for (int j = 0; j < PICKS; j++) {
        dst[j] = (int)(rnd(&s) % (uint32_t)(t_size - 1));
        if (dst[j] >= src) {
            dst[j]++; /* anybody but itself */
        }
        /* eager, and now and then rendezvous sizes */
        len[j] = (rnd(&s) % 8 == 0) ? 20000 + rnd(&s) % 50000 :
                                      1 + rnd(&s) % 4000;
    }
}

static size_t pair_len(int src, int dst, int it)
{
    return 8 + (size_t)((src * 131 + dst * 37 + it * 11) % 3000);
}

static void test_alltoall(void)
{
    int n             = t_size;
    size_t blk        = 1024;
    unsigned char *sb = malloc(blk * n), *rb = malloc(blk * n);

    for (int it = 0; it < A2A_ITER; it++) {
        for (int d = 0; d < n; d++) {
            t_fill(sb + blk * d, blk, t_rank, it * 1000 + d);
        }
        memset(rb, 0, blk * n);
        CHECK_MPI("alltoall", MPI_Alltoall(sb, (int)blk, MPI_BYTE, rb, (int)blk,
                                           MPI_BYTE, MPI_COMM_WORLD));
        for (int s = 0; s < n; s++) {
            t_verify("alltoall", rb + blk * s, blk, s, it * 1000 + t_rank);
        }
    }
    free(sb);
    free(rb);
}

static void test_alltoallv(void)
{
    int n   = t_size;
    int *sc = malloc(sizeof(int) * n), *sd = malloc(sizeof(int) * n);
    int *rc = malloc(sizeof(int) * n), *rd = malloc(sizeof(int) * n);

    for (int it = 0; it < A2A_ITER; it++) {
        int stot = 0, rtot = 0;
        for (int p = 0; p < n; p++) {
            sc[p] = (int)pair_len(t_rank, p, it);
            sd[p] = stot;
            stot += sc[p];
            rc[p] = (int)pair_len(p, t_rank, it);
            rd[p] = rtot;
            rtot += rc[p];
        }
        unsigned char *sb = malloc(stot), *rb = calloc(1, rtot);
        for (int p = 0; p < n; p++) {
            t_fill(sb + sd[p], sc[p], t_rank, 5000 + it * 100 + p);
        }
        CHECK_MPI("alltoallv", MPI_Alltoallv(sb, sc, sd, MPI_BYTE, rb, rc, rd,
                                             MPI_BYTE, MPI_COMM_WORLD));
        for (int p = 0; p < n; p++) {
            t_verify("alltoallv", rb + rd[p], rc[p], p,
                     5000 + it * 100 + t_rank);
        }
        free(sb);
        free(rb);
    }
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* every rank sends to every other one at once, every pair its own size */
static void test_p2p_all(void)
{
    int n = t_size, k = 0;
    unsigned char **sb = calloc(n, sizeof(*sb)), **rb = calloc(n, sizeof(*rb));
    MPI_Request *req = malloc(sizeof(*req) * 2 * n);

    for (int it = 0; it < A2A_ITER; it++) {
        k = 0;
        for (int p = 0; p < n; p++) {
            if (p == t_rank) {
                continue;
            }
            size_t rl = pair_len(p, t_rank, it + 7) * 3;
            rb[p]     = calloc(1, rl);
            CHECK_MPI("p2p_all irecv",
                      MPI_Irecv(rb[p], (int)rl, MPI_BYTE, p, 100 + it,
                                MPI_COMM_WORLD, &req[k++]));
        }
        for (int d = 1; d < n; d++) {
            int p     = (t_rank + d) % n; /* everybody a different target */
            size_t sl = pair_len(t_rank, p, it + 7) * 3;
            sb[p]     = malloc(sl);
            t_fill(sb[p], sl, t_rank, 100 + it);
            CHECK_MPI("p2p_all isend",
                      MPI_Isend(sb[p], (int)sl, MPI_BYTE, p, 100 + it,
                                MPI_COMM_WORLD, &req[k++]));
        }
        CHECK_MPI("p2p_all wait", MPI_Waitall(k, req, MPI_STATUSES_IGNORE));
        for (int p = 0; p < n; p++) {
            if (p == t_rank) {
                continue;
            }
            t_verify("p2p_all", rb[p], pair_len(p, t_rank, it + 7) * 3, p,
                     100 + it);
            free(rb[p]);
            free(sb[p]);
        }
    }
    free(sb);
    free(rb);
    free(req);
}

static void test_random_peers(void)
{
    int n = t_size;
    int dst[PICKS];
    size_t len[PICKS];
    int nrecv_max      = n * PICKS;
    unsigned char **rb = malloc(sizeof(*rb) * nrecv_max);
    unsigned char *sb[PICKS];
    int *rsrc        = malloc(sizeof(int) * nrecv_max);
    int *rtag        = malloc(sizeof(int) * nrecv_max);
    size_t *rlen     = malloc(sizeof(size_t) * nrecv_max);
    MPI_Request *req = malloc(sizeof(*req) * (nrecv_max + PICKS));
    long long total = 0, expected_total = 0;

    for (int r = 0; r < ROUNDS; r++) {
        int k = 0, nr = 0;
        /* what everybody sends to me this round */
        for (int s = 0; s < n; s++) {
            if (s == t_rank) {
                continue;
            }
            picks(s, r, dst, len);
            for (int j = 0; j < PICKS; j++) {
                if (dst[j] != t_rank) {
                    continue;
                }
                rsrc[nr] = s;
                rtag[nr] = r * PICKS + j;
                rlen[nr] = len[j];
                rb[nr]   = calloc(1, len[j]);
                CHECK_MPI("random irecv",
                          MPI_Irecv(rb[nr], (int)len[j], MPI_BYTE, s, rtag[nr],
                                    MPI_COMM_WORLD, &req[k++]));
                expected_total += len[j];
                nr++;
            }
        }
        picks(t_rank, r, dst, len);
        for (int j = 0; j < PICKS; j++) {
            sb[j] = malloc(len[j]);
            t_fill(sb[j], len[j], t_rank, r * PICKS + j);
            CHECK_MPI("random isend",
                      MPI_Isend(sb[j], (int)len[j], MPI_BYTE, dst[j],
                                r * PICKS + j, MPI_COMM_WORLD, &req[k++]));
        }
        CHECK_MPI("random wait", MPI_Waitall(k, req, MPI_STATUSES_IGNORE));
        for (int i = 0; i < nr; i++) {
            t_verify("random", rb[i], rlen[i], rsrc[i], rtag[i]);
            total += rlen[i];
            free(rb[i]);
        }
        for (int j = 0; j < PICKS; j++) {
            free(sb[j]);
        }
    }
    CHECK_EQ("random bytes", expected_total, total);
    free(rb);
    free(rsrc);
    free(rtag);
    free(rlen);
    free(req);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "scale");
    test_alltoall();
    test_alltoallv();
    test_p2p_all();
    test_random_peers();
    t_finish();
    return 0;
}
