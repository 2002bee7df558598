/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Point-to-point over pml ucx: blocking (Send/Recv, Ssend, Sendrecv),
 * non-blocking (Isend/Irecv/Waitall), wildcard receives (MPI_ANY_SOURCE,
 * MPI_ANY_TAG) and message ordering, for sizes from 0 B to 16 MiB so both
 * the eager and the rendezvous protocols are exercised.
 *
 * Over dcx the runner requires device tag matching here (UCP offloads the
 * specific-source receives from the larger of UCX_TM_THRESH and the
 * interface's min_recv on; 65536 B and more are above both, whatever the
 * latter is set to):
 * dcx-test-tm: matched
 */
#include "mpitest.h"

static const size_t sizes[] = {0,    1,     8,       1024,    4096,
                               8193, 65536, 1 << 20, 16 << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void check_status(const char *test, MPI_Status *st, int src, int tag,
                         size_t n)
{
    int count;
    CHECK_EQ(test, src, st->MPI_SOURCE);
    CHECK_EQ(test, tag, st->MPI_TAG);
    MPI_Get_count(st, MPI_BYTE, &count);
    CHECK_EQ(test, (long long)n, count);
}

/* Pairs (0,1), (2,3): blocking exchange in both directions. */
static void test_blocking(unsigned char *sbuf, unsigned char *rbuf)
{
    int peer = t_rank ^ 1;
    MPI_Status st;
    if (peer >= t_size)
        return;
    for (unsigned k = 0; k < NSIZES; k++) {
        size_t n = sizes[k];
        int tag  = 10 + (int)k;
        t_fill(sbuf, n, t_rank, tag);
        memset(rbuf, 0xee, n + 1);
        if (t_rank < peer) {
            CHECK_MPI("blocking_send", MPI_Send(sbuf, (int)n, MPI_BYTE, peer,
                                                tag, MPI_COMM_WORLD));
            CHECK_MPI("blocking_recv", MPI_Recv(rbuf, (int)n, MPI_BYTE, peer,
                                                tag, MPI_COMM_WORLD, &st));
        } else {
            CHECK_MPI("blocking_recv", MPI_Recv(rbuf, (int)n, MPI_BYTE, peer,
                                                tag, MPI_COMM_WORLD, &st));
            CHECK_MPI("blocking_send", MPI_Send(sbuf, (int)n, MPI_BYTE, peer,
                                                tag, MPI_COMM_WORLD));
        }
        check_status("blocking_status", &st, peer, tag, n);
        t_verify("blocking_data", rbuf, n, peer, tag);
        CHECK_EQ("blocking_no_overrun", 0xee, rbuf[n]);

        /* synchronous send, other direction first */
        tag += 100;
        t_fill(sbuf, n, t_rank, tag);
        memset(rbuf, 0xee, n);
        if (t_rank > peer) {
            CHECK_MPI("ssend", MPI_Ssend(sbuf, (int)n, MPI_BYTE, peer, tag,
                                         MPI_COMM_WORLD));
            CHECK_MPI("ssend_recv", MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, tag,
                                             MPI_COMM_WORLD, &st));
        } else {
            CHECK_MPI("ssend_recv", MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, tag,
                                             MPI_COMM_WORLD, &st));
            CHECK_MPI("ssend", MPI_Ssend(sbuf, (int)n, MPI_BYTE, peer, tag,
                                         MPI_COMM_WORLD));
        }
        check_status("ssend_status", &st, peer, tag, n);
        t_verify("ssend_data", rbuf, n, peer, tag);
    }
    /* Sendrecv around the ring, all ranks */
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    for (unsigned k = 0; k < NSIZES; k++) {
        size_t n = sizes[k];
        int tag  = 300 + (int)k;
        t_fill(sbuf, n, t_rank, tag);
        memset(rbuf, 0xee, n);
        CHECK_MPI("sendrecv",
                  MPI_Sendrecv(sbuf, (int)n, MPI_BYTE, right, tag, rbuf, (int)n,
                               MPI_BYTE, left, tag, MPI_COMM_WORLD, &st));
        check_status("sendrecv_status", &st, left, tag, n);
        t_verify("sendrecv_data", rbuf, n, left, tag);
    }
}

/* Every rank sends to every other rank at once, non-blocking. */
static void test_nonblocking(unsigned char *sbuf, unsigned char **rbufs)
{
    int np           = t_size;
    MPI_Request *req = malloc(sizeof(*req) * 2 * np);
    MPI_Status *st   = malloc(sizeof(*st) * 2 * np);
    for (unsigned k = 0; k < NSIZES; k++) {
        size_t n = sizes[k];
        int tag = 500 + (int)k, nr = 0;
        t_fill(sbuf, n, t_rank, tag);
        for (int p = 0; p < np; p++) {
            if (p == t_rank)
                continue;
            memset(rbufs[p], 0xee, n);
            CHECK_MPI("irecv", MPI_Irecv(rbufs[p], (int)n, MPI_BYTE, p, tag,
                                         MPI_COMM_WORLD, &req[nr++]));
        }
        for (int p = 0; p < np; p++) {
            if (p == t_rank)
                continue;
            CHECK_MPI("isend", MPI_Isend(sbuf, (int)n, MPI_BYTE, p, tag,
                                         MPI_COMM_WORLD, &req[nr++]));
        }
        CHECK_MPI("waitall", MPI_Waitall(nr, req, st));
        for (int p = 0, i = 0; p < np; p++) {
            if (p == t_rank)
                continue;
            check_status("irecv_status", &st[i++], p, tag, n);
            t_verify("irecv_data", rbufs[p], n, p, tag);
        }
    }
    /* Test-polling completion instead of Wait */
    {
        size_t n = 65536;
        int tag = 600, nr = 0, done = 0;
        t_fill(sbuf, n, t_rank, tag);
        for (int p = 0; p < np; p++) {
            if (p == t_rank)
                continue;
            MPI_Irecv(rbufs[p], (int)n, MPI_BYTE, p, tag, MPI_COMM_WORLD,
                      &req[nr++]);
            MPI_Isend(sbuf, (int)n, MPI_BYTE, p, tag, MPI_COMM_WORLD,
                      &req[nr++]);
        }
        while (!done)
            CHECK_MPI("testall",
                      MPI_Testall(nr, req, &done, MPI_STATUSES_IGNORE));
        for (int p = 0; p < np; p++)
            if (p != t_rank)
                t_verify("testall_data", rbufs[p], n, p, tag);
    }
    free(req);
    free(st);
}

/*
 * Wildcards: rank 0 collects one message from every other rank with
 * MPI_ANY_SOURCE/MPI_ANY_TAG and checks the status says who sent what.
 */
static void test_wildcards(unsigned char *sbuf, unsigned char *rbuf)
{
    /*
     * All senders stream all sizes at once; rank 0 takes them in whatever
     * order they come, into a buffer large enough for any of them, and
     * works out from the tag which size it should have got. Messages from
     * one sender must still arrive in the order they were sent.
     */
    if (t_rank == 0) {
        size_t max     = sizes[NSIZES - 1];
        int next_k[64] = {0};
        for (int i = 0; i < (t_size - 1) * (int)NSIZES; i++) {
            MPI_Status st;
            int count, k;
            CHECK_MPI("any_recv",
                      MPI_Recv(rbuf, (int)max, MPI_BYTE, MPI_ANY_SOURCE,
                               MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            if (st.MPI_SOURCE < 1 || st.MPI_SOURCE >= t_size)
                CHECK_EQ("any_source_range", 1, st.MPI_SOURCE);
            k = st.MPI_TAG - 1000 - st.MPI_SOURCE * 10;
            CHECK_EQ("any_tag_order", next_k[st.MPI_SOURCE], k);
            next_k[st.MPI_SOURCE]++;
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK_EQ("any_count", (long long)sizes[k], count);
            t_verify("any_data", rbuf, sizes[k], st.MPI_SOURCE, st.MPI_TAG);
        }
    } else {
        for (unsigned k = 0; k < NSIZES; k++) {
            int tag = 1000 + t_rank * 10 + (int)k;
            t_fill(sbuf, sizes[k], t_rank, tag);
            CHECK_MPI("any_send", MPI_Send(sbuf, (int)sizes[k], MPI_BYTE, 0,
                                           tag, MPI_COMM_WORLD));
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* Non-blocking ANY_SOURCE with a fixed tag, and ANY_TAG from a fixed source */
    if (t_rank == 0) {
        MPI_Request r;
        MPI_Status st;
        for (int i = 1; i < t_size; i++) {
            CHECK_MPI("irecv_any_source",
                      MPI_Irecv(rbuf, 8193, MPI_BYTE, MPI_ANY_SOURCE, 77,
                                MPI_COMM_WORLD, &r));
            CHECK_MPI("wait_any_source", MPI_Wait(&r, &st));
            CHECK_EQ("irecv_any_source_tag", 77, st.MPI_TAG);
            t_verify("irecv_any_source_data", rbuf, 8193, st.MPI_SOURCE, 77);
        }
        for (int i = 1; i < t_size; i++) {
            CHECK_MPI("irecv_any_tag",
                      MPI_Irecv(rbuf, 4096, MPI_BYTE, i, MPI_ANY_TAG,
                                MPI_COMM_WORLD, &r));
            CHECK_MPI("wait_any_tag", MPI_Wait(&r, &st));
            CHECK_EQ("irecv_any_tag_source", i, st.MPI_SOURCE);
            CHECK_EQ("irecv_any_tag_tag", 2000 + i, st.MPI_TAG);
            t_verify("irecv_any_tag_data", rbuf, 4096, i, 2000 + i);
        }
    } else {
        t_fill(sbuf, 8193, t_rank, 77);
        MPI_Send(sbuf, 8193, MPI_BYTE, 0, 77, MPI_COMM_WORLD);
        t_fill(sbuf, 4096, t_rank, 2000 + t_rank);
        MPI_Send(sbuf, 4096, MPI_BYTE, 0, 2000 + t_rank, MPI_COMM_WORLD);
    }
}

/* Messages with the same (source, tag) must not overtake each other. */
static void test_ordering(void)
{
    enum {
        N = 64
    };
    int buf[N];
    if (t_rank == 1) {
        for (int i = 0; i < N; i++) {
            int v = i;
            /* mix eager and rendezvous-sized sends */
            if (i % 16 == 15) {
                int *big = malloc(1 << 20);
                big[0]   = i;
                MPI_Send(big, 1 << 18, MPI_INT, 0, 5, MPI_COMM_WORLD);
                free(big);
            } else {
                MPI_Send(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
            }
        }
    } else if (t_rank == 0) {
        int *big = malloc(1 << 20);
        for (int i = 0; i < N; i++) {
            MPI_Status st;
            MPI_Recv(big, 1 << 18, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD,
                     &st);
            buf[i] = big[0];
            CHECK_EQ("ordering", i, buf[i]);
        }
        free(big);
    }
}

int main(int argc, char **argv)
{
    size_t max = sizes[NSIZES - 1];
    t_init(&argc, &argv, "p2p");
    unsigned char *sbuf = malloc(max + 1), *rbuf = malloc(max + 1);
    unsigned char **rbufs = calloc(t_size, sizeof(*rbufs));
    for (int p = 0; p < t_size; p++)
        if (p != t_rank)
            rbufs[p] = malloc(max);
    test_blocking(sbuf, rbuf);
    MPI_Barrier(MPI_COMM_WORLD);
    test_nonblocking(sbuf, rbufs);
    MPI_Barrier(MPI_COMM_WORLD);
    test_wildcards(sbuf, rbuf);
    MPI_Barrier(MPI_COMM_WORLD);
    test_ordering();
    for (int p = 0; p < t_size; p++)
        free(rbufs[p]);
    free(rbufs);
    free(sbuf);
    free(rbuf);
    t_finish();
    return 0;
}
