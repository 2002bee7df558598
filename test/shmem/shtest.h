/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the dcx OpenSHMEM test programs. A failed check prints
 * one line, "FAIL <prog> pe P test T: expected E got G", and exits non-zero
 * (shmem_global_exit brings the other PEs down too).
 */
#ifndef DCX_SHTEST_H
#define DCX_SHTEST_H

#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

/*
 * Open MPI up to 4.1.4 writes 8 bytes into a 4-byte local in its UCX
 * compare-and-swap for 32-bit types (open-mpi/ompi#11257, fixed in 4.1.5),
 * so shmem_int_atomic_compare_swap smashes the stack there: programs leave
 * their 32-bit compare_swap checks out on those versions and say so.
 */
#if defined(OSHMEM_MAJOR_VERSION) &&                             \
    (OSHMEM_MAJOR_VERSION * 10000 + OSHMEM_MINOR_VERSION * 100 + \
     OSHMEM_RELEASE_VERSION) < 40105
#define CSWAP32_BROKEN 1
#else
#define CSWAP32_BROKEN 0
#endif

static int t_me = -1, t_npes = 0;
static const char *t_prog = "?";

__attribute__((unused)) static void t_fail(const char *test, long long expected,
                                           long long got)
{
    fprintf(stderr, "FAIL %s pe %d test %s: expected %lld got %lld\n", t_prog,
            t_me, test, expected, got);
    fflush(stderr);
    shmem_global_exit(1);
    exit(1);
}

#define CHECK_EQ(test, expected, got)                                \
    do {                                                             \
        long long e_ = (long long)(expected), g_ = (long long)(got); \
        if (e_ != g_)                                                \
            t_fail((test), e_, g_);                                  \
    } while (0)

__attribute__((unused)) static void t_init(const char *prog)
{
    t_prog = prog;
    shmem_init();
    t_me   = shmem_my_pe();
    t_npes = shmem_n_pes();
}

__attribute__((unused)) static void t_finish(void)
{
    shmem_barrier_all();
    if (t_me == 0) {
        printf("OK %s npes=%d\n", t_prog, t_npes);
        fflush(stdout);
    }
    shmem_finalize();
}

#endif
