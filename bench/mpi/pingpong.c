/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI point-to-point benchmark between ranks 0 and 1 (other ranks idle):
 *  - latency: half the round-trip time of a blocking ping-pong, in us
 *  - bandwidth: rank 0 streams a window of MPI_Isend's, rank 1 receives
 *    them and answers with a zero-byte ack per window; MB/s (10^6 B/s)
 * Message sizes: 0 and powers of 4 from 1 B up to the maximum (default
 * 4 MiB). Each size is measured three times and the best run is reported
 * (lowest latency, highest bandwidth) to damp noise on a shared machine. Each received message is spot-checked so a broken transport
 * cannot produce a fast but wrong result.
 *
 *   pingpong [max_bytes] [scale]
 * scale multiplies the iteration counts (default 1; use <1 for a quick run).
 *
 * Output, rank 0 only, one line per measurement:
 *   RESULT latency_us <bytes> <value>
 *   RESULT bandwidth_MBps <bytes> <value>
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 16

static int iters_for(size_t n, double scale, int lo, int hi,
                     double bytes_budget)
{
    double it = n ? bytes_budget / (double)n : hi;
    if (it > hi)
        it = hi;
    if (it < lo)
        it = lo;
    it *= scale;
    return it < 2 ? 2 : (int)it;
}

static void die(int rank, const char *what, size_t n, long exp, long got)
{
    fprintf(stderr, "FAIL pingpong rank %d %s size %zu: expected %ld got %ld\n",
            rank, what, n, exp, got);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
    int rank, size;
    size_t max   = argc > 1 ? strtoull(argv[1], NULL, 0) : (4u << 20);
    double scale = argc > 2 ? atof(argv[2]) : 1.0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (!rank)
            fprintf(stderr, "pingpong needs 2 processes\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char *sbuf = malloc(max ? max : 1), *rbuf = malloc(max ? max : 1);
    memset(sbuf, 0, max);
    memset(rbuf, 0, max);
    int peer = 1 - rank;

    /* warm up: connect, and touch the eager and rendezvous paths once */
    if (rank < 2)
        for (size_t n = 0; n <= max; n = n ? n * 64 : 1) {
            for (int i = 0; i < (n < 65536 ? 200 : 4); i++) {
                if (rank == 0) {
                    MPI_Send(sbuf, (int)n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                    MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, 0, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, 0, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                    MPI_Send(sbuf, (int)n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                }
            }
            if (max == 0)
                break;
        }

    for (size_t n = 0; n <= max; n = n ? n * 4 : 1) {
        if (rank > 1)
            continue;
        int iters = iters_for(n, scale, 20, 2000, 256.0 * 1024 * 1024);
        int warm  = iters / 10 + 2;
        double t0 = 0, lat = 1e30, bw = 0;

        for (int rep = 0; rep < 3; rep++) {
            /* ---- latency ---- */
            for (int i = 0; i < warm + iters; i++) {
                if (i == warm)
                    t0 = MPI_Wtime();
                if (n)
                    sbuf[n - 1] = (unsigned char)i;
                if (rank == 0) {
                    MPI_Send(sbuf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                    MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                    MPI_Send(sbuf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                }
                if (n && rbuf[n - 1] != (unsigned char)i)
                    die(rank, "pingpong data", n, (unsigned char)i,
                        rbuf[n - 1]);
            }
            double l_us = (MPI_Wtime() - t0) / iters / 2 * 1e6;
            if (l_us < lat)
                lat = l_us;

            /* ---- bandwidth (windowed stream, rank 0 -> rank 1) ---- */
            int loops  = iters_for(n * WINDOW, scale, 4, 200,
                                   256.0 * 1024 * 1024);
            int wloops = loops / 10 + 1;
            MPI_Request req[WINDOW];
            for (int l = 0; l < wloops + loops; l++) {
                if (l == wloops)
                    t0 = MPI_Wtime();
                if (rank == 0) {
                    if (n)
                        sbuf[0] = (unsigned char)(l + 7);
                    for (int w = 0; w < WINDOW; w++)
                        MPI_Isend(sbuf, (int)n, MPI_BYTE, peer, 2,
                                  MPI_COMM_WORLD, &req[w]);
                    MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
                    MPI_Recv(NULL, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                } else {
                    for (int w = 0; w < WINDOW; w++)
                        MPI_Irecv(rbuf, (int)n, MPI_BYTE, peer, 2,
                                  MPI_COMM_WORLD, &req[w]);
                    MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
                    if (n && rbuf[0] != (unsigned char)(l + 7))
                        die(rank, "stream data", n, (unsigned char)(l + 7),
                            rbuf[0]);
                    MPI_Send(NULL, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
                }
            }
            double b = (double)n * WINDOW * loops / (MPI_Wtime() - t0) / 1e6;
            if (b > bw)
                bw = b;
        }
        if (rank == 0) {
            printf("RESULT latency_us %zu %.3f\n", n, lat);
            if (n)
                printf("RESULT bandwidth_MBps %zu %.1f\n", n, bw);
            fflush(stdout);
        }
        if (max == 0)
            break;
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
