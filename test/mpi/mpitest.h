/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Small helpers shared by the dcx MPI test programs.
 *
 * Every check that fails prints exactly one line to stderr:
 *   FAIL rank R test T: expected E got G
 * and aborts the whole job with a non-zero exit code.
 */
#ifndef DCX_MPITEST_H
#define DCX_MPITEST_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

static int t_rank = -1, t_size = 0;
static const char *t_prog = "?";

__attribute__((unused)) static void t_fail(const char *test, long long expected,
                                           long long got, const char *detail)
{
    fprintf(stderr, "FAIL %s rank %d test %s: expected %lld got %lld%s%s\n",
            t_prog, t_rank, test, expected, got, detail ? " " : "",
            detail ? detail : "");
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* Compare two integers; on mismatch report and abort. */
#define CHECK_EQ(test, expected, got)                                \
    do {                                                             \
        long long e_ = (long long)(expected), g_ = (long long)(got); \
        if (e_ != g_)                                                \
            t_fail((test), e_, g_, NULL);                            \
    } while (0)

/* Check an MPI return code. */
#define CHECK_MPI(test, call)                        \
    do {                                             \
        int rc_ = (call);                            \
        if (rc_ != MPI_SUCCESS)                      \
            t_fail((test), MPI_SUCCESS, rc_, #call); \
    } while (0)

__attribute__((unused)) static void t_init(int *argc, char ***argv,
                                           const char *prog)
{
    t_prog = prog;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_size);
    /* Make errors come back as return codes so CHECK_MPI can see them. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

__attribute__((unused)) static void t_finish(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (t_rank == 0) {
        printf("OK %s np=%d\n", t_prog, t_size);
        fflush(stdout);
    }
    MPI_Finalize();
}

/* Deterministic byte pattern depending on sender, tag and offset. */
static inline unsigned char t_pat(int src, int tag, size_t i)
{
    return (unsigned char)((i * 131u) ^ ((unsigned)src * 29u) ^
                           ((unsigned)tag * 7u) ^ (i >> 8));
}

__attribute__((unused)) static void t_fill(unsigned char *buf, size_t n,
                                           int src, int tag)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = t_pat(src, tag, i);
}

/* Verify a buffer filled by t_fill; report the first wrong byte. */
__attribute__((unused)) static void
t_verify(const char *test, const unsigned char *buf, size_t n, int src, int tag)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != t_pat(src, tag, i)) {
            char d[96];
            snprintf(d, sizeof(d), "(byte %zu of %zu from rank %d tag %d)", i,
                     n, src, tag);
            t_fail(test, t_pat(src, tag, i), buf[i], d);
        }
    }
}

#endif
