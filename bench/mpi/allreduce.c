/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allreduce timing (MPI_SUM on doubles) over all ranks of
 * MPI_COMM_WORLD, for a few message sizes. Reports the mean time per call,
 * taking the slowest rank, in microseconds, and checks the result of the
 * last call.
 *
 *   allreduce [scale]
 * Output, rank 0 only: "RESULT allreduce_us <bytes> <value>".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    static const int counts[] = {1, 16, 128, 1024, 8192, 65536, 262144};
    double scale              = argc > 1 ? atof(argv[1]) : 1.0;
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int maxc    = counts[sizeof(counts) / sizeof(counts[0]) - 1];
    double *in  = malloc(maxc * sizeof(double)),
           *out = malloc(maxc * sizeof(double));

    for (unsigned k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        int n        = counts[k];
        double bytes = (double)n * sizeof(double);
        int iters    = (int)(scale * (bytes <= 8192 ?
                                          500 :
                                          64.0 * 1024 * 1024 / bytes / size));
        if (iters < 5)
            iters = 5;
        for (int i = 0; i < n; i++)
            in[i] = rank + i;
        for (int i = 0; i < 3; i++)
            MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double t = (MPI_Wtime() - t0) / iters, tmax;
        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        double e = (double)size * (size - 1) / 2 + (double)size * (n - 1);
        if (out[n - 1] != e) {
            fprintf(stderr,
                    "FAIL allreduce rank %d count %d: expected %.0f got %.0f\n",
                    rank, n, e, out[n - 1]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (rank == 0) {
            printf("RESULT allreduce_us %.0f %.2f\n", bytes, tmax * 1e6);
            fflush(stdout);
        }
    }
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
